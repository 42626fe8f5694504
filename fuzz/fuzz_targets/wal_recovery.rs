//! A small data directory damaged where the input says (`engram_engine::fuzzing`): bits
//! flipped or files cut, then `check` and recovery. They must agree, never panic, and a
//! database that opens must hold a state the directory went through.
#![no_main]

use engram_engine::wal::FaultyStorage;
use engram_engine::fuzzing::{open_damaged, sample_directory};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static PRISTINE: OnceLock<FaultyStorage> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let pristine = PRISTINE.get_or_init(sample_directory);
    let _ = open_damaged(pristine, data);
});
