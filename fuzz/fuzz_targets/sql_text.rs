//! SQL text through a session of an in-memory database, as a simple query runs it
//! (`engram_sql::fuzzing`, which also says how an input stands for a deep statement; the seeds
//! `deep-*` are such inputs). `crates/sql/tests/depth.rs` runs the seeds and generated deep
//! inputs through the same code on the stable toolchain.
#![no_main]

use engram_sql::fuzzing::SqlTextHarness;
use libfuzzer_sys::fuzz_target;
use std::sync::{Mutex, OnceLock};

static HARNESS: OnceLock<Mutex<SqlTextHarness>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let harness = HARNESS.get_or_init(|| Mutex::new(SqlTextHarness::new()));
    harness.lock().unwrap_or_else(|poison| poison.into_inner()).run(data);
});
