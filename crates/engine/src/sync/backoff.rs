//! Bounded waiting. Every loop that waits for another thread (a locked latch, a locked record)
//! uses a [`Backoff`]: it spins with an exponentially growing pause, then yields its time
//! slice, and after `steps_max` steps it tells the caller to stop waiting. What the caller does
//! then (restart pessimistically, abort the transaction) is the caller's decision; the loop
//! itself never runs forever.

use super::shim;

/// Spins before the first yield: 2^0 + 2^1 + ... + 2^6 pause instructions, about a microsecond.
const SPIN_ROUNDS_MAX: u32 = 6;

#[derive(Debug)]
pub struct Backoff {
    step: u32,
    steps_max: u32,
}

impl Backoff {
    /// A backoff that reports exhaustion after `steps_max` waits.
    pub fn new(steps_max: u32) -> Self {
        Backoff { step: 0, steps_max }
    }

    /// Waits once. Returns `false` when the wait budget is spent.
    #[inline]
    pub fn wait(&mut self) -> bool {
        if self.step >= self.steps_max {
            return false;
        }
        if self.step <= SPIN_ROUNDS_MAX {
            for _ in 0..(1u32 << self.step) {
                shim::spin_hint();
            }
        } else {
            shim::yield_now();
        }
        self.step += 1;
        true
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u32 {
        self.step
    }
}
