//! The per-record lock words of the pessimistic multi-version protocols (Wu et al., VLDB 2017,
//! §3.2 and §3.3), kept after a record head's inline words (`storage::record`) when the
//! database runs `mvto` or `mv2pl`. Both are no-wait: a lock that cannot be had at once is
//! refused and the transaction aborts, so no transaction ever waits for another and there are
//! no deadlocks to detect.
//!
//! TWO-PHASE WORD (`mv2pl`, [`TwoPhaseWord`])
//!
//! | bits   | field   | meaning                                             |
//! |--------|---------|-----------------------------------------------------|
//! | 0..63  | readers | number of transactions holding a read lock          |
//! | 63     | WRITE   | a transaction holds the write lock (then readers = 0) |
//!
//! A read lock is a compare-and-swap that adds one reader while WRITE is clear; the write lock
//! is a compare-and-swap from "no readers" (or "one reader": an upgrade by the only reader) to
//! WRITE alone. The paper's txn-id field is the WRITE bit: who holds it is known to the holder
//! (its access set), and nobody else needs to know.
//!
//! TIMESTAMP WORDS (`mvto`, [`TimestampWords`])
//!
//! | word | field   | meaning                                                          |
//! |------|---------|------------------------------------------------------------------|
//! | 0    | owner   | the timestamp of the transaction holding the write lock, 0 if none (the paper's txn-id) |
//! | 1    | read_ts | the newest timestamp of a transaction that read the current version |
//!
//! ORDERING. A reader raises `read_ts` and then loads `owner`; a writer sets `owner` and then
//! loads `read_ts`. All four accesses are sequentially consistent, so of a reader and a writer
//! that race, at least one sees the other: either the reader sees the owner (and aborts), or
//! the writer sees the reader's timestamp (and aborts if it is newer than its own). The
//! randomized-schedule tests in `tests/shuttle_sync.rs` exercise both words.

use super::shim::{AtomicU64, Ordering};

/// The lock word of MV2PL: a write bit and a reader count.
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct TwoPhaseWord {
    word: AtomicU64,
}

/// Why a lock was refused (no-wait: the caller aborts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Another transaction holds a conflicting lock.
    Held,
    /// A transaction with a later timestamp has read the version (`mvto`).
    ReadLater,
}

impl TwoPhaseWord {
    const WRITE: u64 = 1 << 63;

    pub fn new() -> Self {
        TwoPhaseWord { word: AtomicU64::new(0) }
    }

    /// Adds a read lock, unless a writer holds the record.
    #[inline]
    pub fn read_lock(&self) -> Result<(), Refused> {
        let mut seen = self.word.load(Ordering::Relaxed);
        loop {
            if seen & Self::WRITE != 0 {
                return Err(Refused::Held);
            }
            match self.word.compare_exchange_weak(
                seen,
                seen + 1,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => seen = now,
            }
        }
    }

    /// Drops one read lock.
    #[inline]
    pub fn read_unlock(&self) {
        let before = self.word.fetch_sub(1, Ordering::Release);
        debug_assert!(before & !Self::WRITE != 0 && before & Self::WRITE == 0);
    }

    /// Takes the write lock: the record must have no other reader and no writer. `upgrade`:
    /// the caller holds one of the read locks, which the write lock replaces.
    #[inline]
    pub fn write_lock(&self, upgrade: bool) -> Result<(), Refused> {
        let expected = u64::from(upgrade);
        self.word
            .compare_exchange(expected, Self::WRITE, Ordering::SeqCst, Ordering::Relaxed)
            .map(|_| ())
            .map_err(|_| Refused::Held)
    }

    /// Gives the write lock up; the caller holds it.
    #[inline]
    pub fn write_unlock(&self) {
        debug_assert_eq!(self.word.load(Ordering::Relaxed), Self::WRITE);
        self.word.store(0, Ordering::Release);
    }

    /// Makes a fresh record write-locked by its creator, before anyone else can see it.
    #[inline]
    pub fn set_write_locked(&self) {
        self.word.store(Self::WRITE, Ordering::Relaxed);
    }

    /// Whether anyone holds a lock (for the clean-up task that unlinks deleted records, which
    /// holds the record's TID lock and has fenced: a locker takes its lock with a sequentially
    /// consistent read-modify-write before it reads the TID word, so one sees the other).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.word.load(Ordering::SeqCst) != 0
    }

    /// The number of read locks held (for tests and diagnostics).
    pub fn readers(&self) -> u64 {
        self.word.load(Ordering::Acquire) & !Self::WRITE
    }

    /// Whether the write lock is held (for tests and diagnostics).
    pub fn is_write_locked(&self) -> bool {
        self.word.load(Ordering::Acquire) & Self::WRITE != 0
    }
}

/// MVTO's per-record words: the write lock's owner and the newest read timestamp.
#[derive(Debug, Default)]
#[repr(C)]
pub struct TimestampWords {
    owner: AtomicU64,
    read_ts: AtomicU64,
}

impl TimestampWords {
    pub fn new() -> Self {
        TimestampWords { owner: AtomicU64::new(0), read_ts: AtomicU64::new(0) }
    }

    /// A read at timestamp `ts` of the current version: raises `read_ts` to `ts` and then
    /// checks that no writer holds the record (ORDERING). Refused if one does; the raised
    /// `read_ts` then stays, which can only make a later writer abort, never let one through.
    #[inline]
    pub fn read_current(&self, ts: u64) -> Result<(), Refused> {
        if self.owner.load(Ordering::SeqCst) != 0 {
            return Err(Refused::Held);
        }
        // A sequentially consistent load that finds `ts` or more is as good as raising it: the
        // raise it read from precedes the owner check below in the total order.
        if self.read_ts.load(Ordering::SeqCst) < ts {
            self.read_ts.fetch_max(ts, Ordering::SeqCst);
        }
        if self.owner.load(Ordering::SeqCst) != 0 {
            return Err(Refused::Held);
        }
        Ok(())
    }

    /// Whether a writer holds the record.
    #[inline]
    pub fn is_owned(&self) -> bool {
        self.owner.load(Ordering::SeqCst) != 0
    }

    /// Takes the write lock for the transaction with timestamp `ts` (non-zero). Refused if
    /// another writer holds it. With `check_readers`, also refused (and the lock given back)
    /// when a transaction with a later timestamp has read the current version.
    #[inline]
    pub fn write_lock(&self, ts: u64, check_readers: bool) -> Result<(), Refused> {
        debug_assert_ne!(ts, 0);
        self.owner
            .compare_exchange(0, ts, Ordering::SeqCst, Ordering::Relaxed)
            .map_err(|_| Refused::Held)?;
        if check_readers && self.read_ts.load(Ordering::SeqCst) > ts {
            self.owner.store(0, Ordering::Release);
            return Err(Refused::ReadLater);
        }
        Ok(())
    }

    /// Gives the write lock up; the caller holds it.
    #[inline]
    pub fn write_unlock(&self) {
        debug_assert_ne!(self.owner.load(Ordering::Relaxed), 0);
        self.owner.store(0, Ordering::Release);
    }

    /// Makes a fresh record write-locked by its creator, before anyone else can see it.
    #[inline]
    pub fn set_owner(&self, ts: u64) {
        self.owner.store(ts, Ordering::Relaxed);
    }

    /// The newest read timestamp of the current version.
    pub fn read_ts(&self) -> u64 {
        self.read_ts.load(Ordering::SeqCst)
    }
}
