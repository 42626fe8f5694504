//! The server's message decoder on arbitrary bytes, delivered in pieces whose size the first
//! byte chooses: it returns messages or an error, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Once;

static HOOK: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    HOOK.call_once(engram_server::fuzzing::unwind_on_panic);
    let Some((&chunk, bytes)) = data.split_first() else { return };
    engram_server::fuzzing::decode_messages(bytes, usize::from(chunk) + 1);
});
