//! The optimistic version latch of optimistic lock coupling (Leis et al., "The ART of Practical
//! Synchronization", 2016), used by every index node.
//!
//! One 64-bit word:
//!
//! | bits  | meaning                                                            |
//! |-------|--------------------------------------------------------------------|
//! | 0     | obsolete: the node was replaced or merged away; readers restart    |
//! | 1     | locked: a writer holds the latch                                   |
//! | 2..64 | version: incremented by every lock/unlock cycle                    |
//!
//! Readers take no lock: they note the word ([`VersionLatch::read_begin`]), read the node with
//! relaxed atomic loads, and check the word is unchanged ([`VersionLatch::read_validate`]).
//! Writers upgrade a noted version to a lock with one compare-and-swap, so a writer can never
//! lock a node that changed since it looked. Unlocking adds 2, which clears the lock bit and
//! carries into the version, so every write leaves a new version behind: this is what a
//! transaction's node set re-checks at commit to see that no key entered or left a leaf it
//! scanned.
//!
//! INVARIANTS
//! - A word with the lock bit set is held by exactly one thread.
//! - The version never repeats: it only grows (wrapping after 2^62 writes to one node).
//! - An obsolete node never becomes live again.

use super::backoff::Backoff;
use super::shim::{AtomicU64, Ordering, fence};

const OBSOLETE: u64 = 0b01;
const LOCKED: u64 = 0b10;

/// How long an optimistic reader waits for a locked node before restarting its operation:
/// about a microsecond of spinning, then a few time slices. A writer holds a node latch for at
/// most one node copy, so waiting longer only helps when the holder was descheduled.
const READ_WAIT_STEPS_MAX: u32 = 12;

/// An optimistic operation must start over because a node it read changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart;

#[derive(Debug)]
pub struct VersionLatch {
    word: AtomicU64,
}

impl Default for VersionLatch {
    fn default() -> Self {
        Self::new()
    }
}

impl VersionLatch {
    pub fn new() -> Self {
        VersionLatch { word: AtomicU64::new(0) }
    }

    /// Notes the version before an optimistic read. Waits (bounded) while a writer holds the
    /// latch; restarts if the node is obsolete.
    #[inline(always)]
    pub fn read_begin(&self) -> Result<u64, Restart> {
        // Acquire pairs with the Release of `unlock`: what the last writer wrote is visible.
        let word = self.word.load(Ordering::Acquire);
        if word & (LOCKED | OBSOLETE) == 0 {
            return Ok(word);
        }
        self.read_begin_slow(word)
    }

    #[cold]
    fn read_begin_slow(&self, mut word: u64) -> Result<u64, Restart> {
        let mut backoff = Backoff::new(READ_WAIT_STEPS_MAX);
        loop {
            if word & LOCKED == 0 {
                return if word & OBSOLETE == 0 { Ok(word) } else { Err(Restart) };
            }
            if !backoff.wait() {
                return Err(Restart);
            }
            word = self.word.load(Ordering::Acquire);
        }
    }

    /// Checks that nothing changed since `read_begin` returned `version`: every relaxed load made
    /// in between read a consistent node.
    #[inline(always)]
    pub fn read_validate(&self, version: u64) -> Result<(), Restart> {
        // The acquire fence keeps the node loads above from moving below the re-load of the
        // word; it pairs with the release fence in `try_upgrade`/`lock` (seqlock reader side).
        fence(Ordering::Acquire);
        if self.word.load(Ordering::Relaxed) == version { Ok(()) } else { Err(Restart) }
    }

    /// The current word, for node-set validation at commit: a locked or changed word differs
    /// from any version a reader noted.
    #[inline]
    pub fn current(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// Turns a noted version into a write lock, failing if the node changed meanwhile.
    #[inline]
    pub fn try_upgrade(&self, version: u64) -> Result<(), Restart> {
        debug_assert_eq!(version & (LOCKED | OBSOLETE), 0);
        match self.word.compare_exchange(
            version,
            version + LOCKED,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                // Orders the lock-bit store before the node stores that follow, so an
                // optimistic reader that sees any of them also sees the word change.
                fence(Ordering::Release);
                Ok(())
            }
            Err(_) => Err(Restart),
        }
    }

    /// Takes the write lock, waiting for the current holder. Fails only if the node is obsolete.
    ///
    /// The wait ends: holders keep a node latch for one bounded node operation and take latches
    /// only top-down (parent before child, left before right), so no holder waits on us.
    pub fn lock(&self) -> Result<(), Restart> {
        self.lock_returning().map(|_| ())
    }

    /// Takes the write lock like [`VersionLatch::lock`] and returns the word it replaced: the
    /// version an optimistic reader would have noted just before.
    pub fn lock_returning(&self) -> Result<u64, Restart> {
        let mut backoff = Backoff::new(u32::MAX);
        loop {
            let word = self.word.load(Ordering::Relaxed);
            if word & OBSOLETE != 0 {
                return Err(Restart);
            }
            if word & LOCKED == 0 && self.try_upgrade(word).is_ok() {
                return Ok(word);
            }
            backoff.wait();
        }
    }

    /// Releases the lock and returns the version it published.
    #[inline]
    pub fn unlock_returning(&self) -> u64 {
        debug_assert!(self.is_locked());
        self.word.fetch_add(LOCKED, Ordering::Release) + LOCKED
    }

    /// Releases the lock and publishes a new version.
    #[inline]
    pub fn unlock(&self) {
        debug_assert!(self.is_locked());
        // Adding LOCKED to a word with the lock bit set clears it and carries into the version.
        // Release pairs with the Acquire in `read_begin`.
        self.word.fetch_add(LOCKED, Ordering::Release);
    }

    /// Releases the lock and marks the node obsolete: readers holding it restart.
    #[inline]
    pub fn unlock_obsolete(&self) {
        debug_assert!(self.is_locked());
        // LOCKED + OBSOLETE: clears the lock bit with a carry into the version, sets obsolete.
        self.word.fetch_add(LOCKED + OBSOLETE, Ordering::Release);
    }

    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) & LOCKED != 0
    }

    pub fn is_obsolete_word(word: u64) -> bool {
        word & OBSOLETE != 0
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn versions_grow_and_locks_exclude() {
        let latch = VersionLatch::new();
        let v0 = latch.read_begin().unwrap();
        latch.try_upgrade(v0).unwrap();
        assert!(latch.try_upgrade(v0).is_err(), "a held latch cannot be upgraded again");
        latch.unlock();
        let v1 = latch.read_begin().unwrap();
        assert!(v1 > v0);
        assert!(latch.read_validate(v0).is_err());
        assert!(latch.read_validate(v1).is_ok());
        assert!(latch.try_upgrade(v0).is_err(), "a stale version cannot be upgraded");
        latch.lock().unwrap();
        latch.unlock_obsolete();
        assert!(latch.read_begin().is_err());
        assert!(latch.lock().is_err());
    }
}
