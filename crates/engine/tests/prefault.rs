//! Memory faulted in ahead of need on an idle-class thread (`chunks::Prefault`, used by
//! recovery). (Its own test binary: the reserve is process-wide.)

use engram_engine::mem::chunks::{self, CHUNK_BYTES, PREFAULT_AHEAD_MIN, Prefault};
use std::time::{Duration, Instant};

/// The process's resident memory, from `/proc/self/status`.
fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

/// Waits (the thread runs only when a core is idle, so a loaded machine may be slow) until
/// the reserve holds `bytes`.
fn wait_for_reserve(bytes: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while chunks::reserved_bytes() < bytes {
        assert!(Instant::now() < deadline, "reserve at {} of {bytes}", chunks::reserved_bytes());
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn prefault_keeps_pace_with_what_is_carved_and_stops_when_dropped() {
    assert_eq!(chunks::reserved_bytes(), 0, "nothing reserved in this process yet");
    let before = resident_bytes();
    let prefault = Prefault::start(1 << 30);
    // Nothing carved yet: it reserves its least, faulted in, and no more.
    wait_for_reserve(PREFAULT_AHEAD_MIN);
    let grown = resident_bytes() - before;
    assert!(grown >= PREFAULT_AHEAD_MIN, "the reserved chunks are resident: {grown} bytes more");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(chunks::reserved_bytes(), PREFAULT_AHEAD_MIN, "no more than its least");

    // 64 MiB carved (from the reserve first): it keeps as much again ahead.
    let carved = 64 << 20;
    let mut blocks = Vec::new();
    chunks::alloc_blocks(CHUNK_BYTES, carved / CHUNK_BYTES, &mut blocks);
    wait_for_reserve(carved);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(chunks::reserved_bytes(), carved, "as much ahead as was carved");

    // Once dropped (the thread finishing the chunk it may be faulting in), what is taken is
    // not made up.
    drop(prefault);
    std::thread::sleep(Duration::from_millis(50));
    let stopped = chunks::reserved_bytes();
    chunks::alloc_blocks(CHUNK_BYTES, 4, &mut blocks);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(chunks::reserved_bytes(), stopped - 4 * CHUNK_BYTES);
    // SAFETY: the blocks were allocated above with this size, and nothing reaches them.
    unsafe { chunks::free_blocks(CHUNK_BYTES, blocks.into_iter()) };
}
