//! A whole connection of an in-memory server, fed the input as the client's bytes. When the
//! first byte is even a valid startup packet goes first, so that most runs reach the query
//! protocols. Every conversation must end (a panic inside the connection is re-raised here),
//! and every 256 runs a fresh client must still get an answer.
#![no_main]

use engram_server::fuzzing::{ConnectionHarness, startup_packet};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static HARNESS: OnceLock<ConnectionHarness> = OnceLock::new();
static RUNS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    let harness = HARNESS.get_or_init(|| {
        engram_server::fuzzing::unwind_on_panic();
        ConnectionHarness::new().expect("an in-memory server")
    });
    let Some((&first, rest)) = data.split_first() else { return };
    let bytes = if first % 2 == 0 {
        [startup_packet("postgres").as_slice(), rest].concat()
    } else {
        rest.to_vec()
    };
    let _ = harness.converse(&bytes);
    if RUNS.fetch_add(1, Ordering::Relaxed) % 256 == 255 {
        assert!(harness.still_serving(), "the server stopped answering");
    }
});
