//! The atomics and threads the engine synchronises with: `std`'s in normal builds, shuttle's
//! under `--features shuttle`, so that the latch and epoch logic can run under a randomized
//! scheduler without a second copy of the code.
//!
//! Only code whose interleavings we want to explore uses these types. Plain data that is read
//! optimistically (index node slots, record words) uses `std` atomics directly: those accesses
//! are validated by a latch or TID word, which is what the model checker exercises.

#[cfg(not(feature = "shuttle"))]
pub use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

#[cfg(feature = "shuttle")]
pub use shuttle::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

/// One step of a spin loop. Under shuttle this is a scheduling point, so a spinning thread lets
/// the thread it waits for run.
#[inline]
pub fn spin_hint() {
    #[cfg(not(feature = "shuttle"))]
    std::hint::spin_loop();
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
}

/// Give up the rest of this thread's time slice.
#[inline]
pub fn yield_now() {
    #[cfg(not(feature = "shuttle"))]
    std::thread::yield_now();
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
}
