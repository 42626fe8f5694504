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

/// The locks and condition variable of the log's group commit (`wal::log`): `std`'s, or
/// shuttle's, so that its hand-off between workers, loggers and waiters runs under the
/// randomized scheduler too.
#[cfg(not(feature = "shuttle"))]
pub use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(feature = "shuttle")]
pub use shuttle::sync::{Condvar, Mutex, MutexGuard};

/// Sleeps until unparked or for `timeout`. Under shuttle a timed wait is a scheduling point:
/// the thread gives way and runs again later, as if its timeout had passed.
#[inline]
pub fn park_timeout(timeout: std::time::Duration) {
    #[cfg(not(feature = "shuttle"))]
    std::thread::park_timeout(timeout);
    #[cfg(feature = "shuttle")]
    {
        let _ = timeout;
        shuttle::thread::yield_now();
    }
}

/// Sleeps for `duration`; under shuttle, a scheduling point as `park_timeout` is.
#[inline]
pub fn sleep(duration: std::time::Duration) {
    #[cfg(not(feature = "shuttle"))]
    std::thread::sleep(duration);
    #[cfg(feature = "shuttle")]
    {
        let _ = duration;
        shuttle::thread::yield_now();
    }
}
