//! Transaction identifiers (Silo §4.2): a TID orders commits, epoch by epoch, with no global
//! counter on the commit path; the TID word is a TID with four status bits, the word a record
//! head is locked and read by (`storage::record`); [`Retention`] says which superseded versions
//! a reader may still need.
//!
//! TID WORD (one `AtomicU64`; the bit table is also in docs/format.md)
//!
//! | bits   | field    | meaning                                                          |
//! |--------|----------|------------------------------------------------------------------|
//! | 0      | LOCK     | a committing transaction holds the record                        |
//! | 1      | LATEST   | the head is in its primary index; cleared when it is unlinked     |
//! | 2      | ABSENT   | no row: never committed, or deleted                              |
//! | 3      | CLAIMED  | an in-flight insert owns this absent head                        |
//! | 4..26  | sequence | orders TIDs within an epoch (22 bits)                            |
//! | 26..64 | epoch    | the commit epoch (38 bits: 8.7 years of 1 ms epochs)             |
//!

use super::Epoch;

/// Bits of the sequence field (24 in data format 1: `wal::format::tid_from_file`).
const SEQUENCE_BITS: u32 = 22;
const STATUS_BITS: u32 = 4;
const SEQUENCE_MAX: u64 = (1 << SEQUENCE_BITS) - 1;

/// A version identity: epoch and sequence. Ordered as Silo's TIDs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Tid(u64);

impl Tid {
    pub const ZERO: Tid = Tid(0);
    /// Above every real TID (a bound meaning "no such reader").
    pub const MAX: Tid = Tid(u64::MAX);
    /// The largest sequence number within an epoch.
    pub const SEQUENCE_MAX: u64 = SEQUENCE_MAX;

    pub fn new(epoch: Epoch, sequence: u64) -> Tid {
        assert!(sequence <= SEQUENCE_MAX);
        assert!(epoch.0 < (1 << (64 - SEQUENCE_BITS - STATUS_BITS)), "epoch out of range");
        Tid((epoch.0 << SEQUENCE_BITS) | sequence)
    }

    pub fn epoch(self) -> Epoch {
        Epoch(self.0 >> SEQUENCE_BITS)
    }

    pub fn sequence(self) -> u64 {
        self.0 & SEQUENCE_MAX
    }

    pub fn as_u64(self) -> u64 {
        self.0
    }

    pub fn from_u64(raw: u64) -> Tid {
        Tid(raw)
    }

    /// The newest TID of `epoch`: a read "as of the end of `epoch`" sees every commit of it.
    pub fn last_of(epoch: Epoch) -> Tid {
        Tid::new(epoch, SEQUENCE_MAX)
    }

    /// The commit timestamp of a multi-version protocol (`cc::mv`): above `last`, the newest
    /// timestamp handed out, and in `epoch` or, when `last` is already in a later epoch, in
    /// that one. `None` when that epoch's sequence space is used up.
    pub fn next_timestamp(last: Tid, epoch: Epoch) -> Option<Tid> {
        Tid::commit_after(last, epoch.max(last.epoch()))
    }

    /// Silo's commit TID: greater than `floor` (every TID the transaction read or wrote, and
    /// the worker's previous commit), and in `epoch`. `None` when the epoch's sequence space is
    /// used up (4 million commits in one dependency chain in one epoch).
    pub fn commit_after(floor: Tid, epoch: Epoch) -> Option<Tid> {
        debug_assert!(floor.epoch() <= epoch, "nothing committed in a future epoch");
        if floor.epoch() < epoch {
            return Some(Tid::new(epoch, 1));
        }
        (floor.sequence() < SEQUENCE_MAX).then_some(Tid(floor.0 + 1))
    }
}

/// A TID with its status bits, as stored in a record head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TidWord(u64);

impl TidWord {
    pub const LOCK: u64 = 0b0001;
    pub const LATEST: u64 = 0b0010;
    pub const ABSENT: u64 = 0b0100;
    pub const CLAIMED: u64 = 0b1000;

    /// The word of a head created by an insert: no committed row, owned by the inserter.
    pub const FRESH: TidWord = TidWord(Self::LATEST | Self::ABSENT | Self::CLAIMED);

    pub fn new(tid: Tid, flags: u64) -> TidWord {
        debug_assert!(flags < (1 << STATUS_BITS));
        TidWord((tid.0 << STATUS_BITS) | flags)
    }

    pub fn tid(self) -> Tid {
        Tid(self.0 >> STATUS_BITS)
    }
    pub fn epoch(self) -> Epoch {
        self.tid().epoch()
    }
    pub fn is_locked(self) -> bool {
        self.0 & Self::LOCK != 0
    }
    pub fn is_latest(self) -> bool {
        self.0 & Self::LATEST != 0
    }
    pub fn is_absent(self) -> bool {
        self.0 & Self::ABSENT != 0
    }
    pub fn is_claimed(self) -> bool {
        self.0 & Self::CLAIMED != 0
    }
    pub fn raw(self) -> u64 {
        self.0
    }
    pub fn from_raw(raw: u64) -> TidWord {
        TidWord(raw)
    }
    pub fn without(self, flags: u64) -> TidWord {
        TidWord(self.0 & !flags)
    }
    pub fn with(self, flags: u64) -> TidWord {
        TidWord(self.0 | flags)
    }
}

/// What readers need kept. Snapshot transactions read at snapshot boundaries (multiples of
/// `interval`): at `low`, the oldest one read, and at any boundary at or above `low_unheld`;
/// transactions of a multi-version protocol (`cc::mv`) read as of a timestamp at or above
/// `readers_low` ([`Tid::MAX`] when there are none). A version is kept while one of them may
/// read it.
///
/// `low_unheld` is above `low` while a checkpoint holds an old snapshot epoch
/// (`EpochManager::hold_snapshot`) and no other reader is that old: the boundaries between
/// the two have no reader and never will (new snapshots read at the newest boundary), so a
/// row updated all through a long checkpoint keeps the version the checkpoint reads and those
/// of recent boundaries, not one per boundary since. Otherwise the two are equal.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub low: Epoch,
    pub low_unheld: Epoch,
    pub interval: u64,
    pub readers_low: Tid,
    /// Whether an install prunes the chain it grows (`gc::Gc::writers_prune`).
    pub prune: bool,
}

impl Retention {
    /// Keeps nothing for anyone (recovery, before any reader exists).
    pub const NOTHING: Retention = Retention {
        low: Epoch(u64::MAX),
        low_unheld: Epoch(u64::MAX),
        interval: 1,
        readers_low: Tid::MAX,
        prune: true,
    };

    /// Whether a version committed at `tid` and superseded at `successor` may be read.
    #[inline]
    pub fn needed(&self, tid: Tid, successor: Tid) -> bool {
        if tid == Tid::ZERO || tid >= successor {
            return false;
        }
        // A multi-version reader at `b` reads it when tid <= b < successor, and every such
        // reader has b >= readers_low.
        if successor > self.readers_low {
            return true;
        }
        let (epoch, successor) = (tid.epoch(), successor.epoch());
        if epoch >= successor {
            return false;
        }
        // The first boundary from `low` on that shows it (none: no snapshot reads it).
        let from = epoch.max(self.low).0;
        if from.div_ceil(self.interval) * self.interval >= successor.0 {
            return false;
        }
        // That boundary is read: it is `low`'s, or every boundary from `low` on is.
        if epoch <= self.low || self.low_unheld <= self.low {
            return true;
        }
        // A held `low` reads an older state; the others read from `low_unheld` on.
        let from = epoch.max(self.low_unheld).0;
        from.div_ceil(self.interval) * self.interval < successor.0
    }

    /// Whether every reader that may still come sees a version committed at `tid` or a newer
    /// one, so that versions older than it are garbage.
    #[inline]
    pub(crate) fn visible_to_all(&self, tid: Tid) -> bool {
        tid.epoch() <= self.low && tid <= self.readers_low
    }

    /// Whether multi-version readers may exist (chains then grow with every update).
    #[inline]
    pub(crate) fn multiversion(&self) -> bool {
        self.readers_low != Tid::MAX
    }
}
