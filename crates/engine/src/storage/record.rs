//! Records: the head that an index entry points to (MOT's sentinel), its TID word, the newest
//! version stored inline, and older versions for snapshot readers.
//!
//! A head is allocated when its key is first inserted and never moves while the key is in the
//! primary index, so indexes point at it (logical pointers, ARCHITECTURE.md decision 2) and an
//! update never touches an index. The newest version lives inline in the head and is
//! overwritten in place under the TID word's lock bit, exactly as in Silo; readers use the TID
//! word as a sequence lock. Older versions form an immutable newest-to-oldest chain, kept only
//! while some snapshot may still read them. A value longer than the head's inline capacity is
//! stored in an immutable overflow version that the head points to.
//!
//! VERSION STORAGE (Wu et al. §4, [`VersionStorage`], chosen when the database opens)
//!
//! - `time-travel` (the default) is the layout above: the master version in the head, each
//!   replaced version copied into the chain, newest first.
//! - `append-n2o`: heads have no inline room, so every version is its own immutable block
//!   (an overflow version). The head points to the newest, which an update links into the
//!   chain as it is, without a copy; readers follow one pointer more than under time-travel.
//! - `append-o2n`: as `append-n2o`, but the chain runs from the oldest version kept to the
//!   newest, and the current row, when there is one, is the chain's last version. `older`
//!   points to the oldest; `overflow` is unused. Every read of the current row and every
//!   update walks the whole chain, which is what the paper measures against N2O (its Fig. 12).
//!   The head's `len` is 0 or [`OVERFLOW`]; its bit 29 of `capacity_words` marks the order.
//! - Under either append-only storage a table may hold non-inline attributes
//!   (`storage::shared`): each version's data is then one handle per attribute, bit 31 of the
//!   version's `len` says so, and freeing the version (never before epoch-based reclamation
//!   says no reader can reach it) releases the values it names.
//! - `delta`: as `time-travel`, but a replaced version is kept as a delta record
//!   (`storage::delta`): the bytes in which it differs from the state that replaced it. A
//!   reader of an older state copies the master version and applies the deltas along the chain
//!   down to its state, checking (as a sequence lock) that the master and the chain's first
//!   delta belong together. Dropping a version from the middle of the chain makes the next
//!   one kept anew, as a delta against the version above the gap; an install that keeps
//!   nothing makes the chain's first delta anew against the new master. Bit 28 of
//!   `capacity_words` marks the layout.
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
//! HEAD LAYOUT
//!
//! | offset | field            | meaning                                                   |
//! |--------|------------------|-----------------------------------------------------------|
//! | 0      | word             | TID word                                                  |
//! | 8      | len              | value length; bit 31 set: the value is in `overflow`      |
//! | 12     | capacity_words   | inline capacity in 8-byte words (immutable); bit 29: O2N, |
//! |        |                  | bit 28: delta chain, bit 27: a non-inline table's head    |
//! |        |                  | (its versions hold value handles, `storage::shared`)      |
//! | 16     | older            | newest older version (oldest version under `append-o2n`) |
//! | 24     | overflow         | the current value when it does not fit inline, or null    |
//! | 32     | inline words     | the current value, little-endian words                    |
//! | 32+8c  | protocol words   | two words, under `ssn`, `mvto` and `mv2pl` only (bits 30-31 |
//! |        |                  | of `capacity_words`, [`HeadWords`]): the serial safety net's |
//! |        |                  | latch and stamps ([`Stamps`]), MVTO's owner and read timestamp, |
//! |        |                  | or MV2PL's lock word (`sync::lockword`)                    |
//!
//! INVARIANTS
//! - `word`, `len`, `overflow`, `older` and the inline words change only while LOCK is held
//!   by the changing thread, and every change ends with a release store of a new `word`.
//! - Versions in the chain are immutable except their `link`, which only the lock holder
//!   changes: to drop versions no reader at or above the retention bounds can read, or (under
//!   `append-o2n`) to append a newer version to the chain's last one. A dropped version's `link`
//!   never changes again, so a reader standing on it still reaches the rest of the chain.
//! - Under `delta` storage each delta applies to the state above it on the path a reader
//!   takes (the master version, or the version that links to it). A version made anew against
//!   another state is linked in only once complete, and the one it replaces is retired like a
//!   dropped version, its `link` unchanged: whichever path a reader is on, each delta it meets
//!   applies to the row it has rebuilt so far. A prune (the vacuum's, cooperative cleaning's)
//!   that changes `older` but not the master restores the word it found, and the old and the
//!   new chain both fit that master.
//! - A CLAIMED head is changed only by the transaction that claimed it.

use super::arena::Arena;
use super::delta;
use crate::gc::{Garbage, Retired};
use crate::sync::lockword::{TimestampWords, TwoPhaseWord};
use crate::sync::{Backoff, Epoch, shim};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

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

/// A record stayed locked longer than a reader is willing to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// Waits a reader or committer makes for a locked record: about a microsecond of spinning and
/// then a few dozen yields, enough for any holder that is running; a holder that was
/// descheduled costs the waiter an abort and a retry instead of a stall.
const RECORD_WAIT_STEPS_MAX: u32 = 40;

/// Bytes of a head [`Head::prefetch`] loads: the header and the first 224 bytes of the row.
const HEAD_PREFETCH_BYTES: usize = 256;

/// Values up to this size are stored inline in the head; longer ones in an overflow version.
pub const INLINE_BYTES_MAX: usize = 2048;

const OVERFLOW: u32 = 1 << 31;

/// The bit of a version's `len` that marks data made of value handles (`storage::shared`),
/// released when the version is freed.
const HANDLES: u32 = 1 << 31;

/// Versions a multi-version chain may grow by beyond twice what its last prune left before it
/// is pruned again (`Head::install`).
const PRUNE_SLACK: u32 = 4;

/// An immutable older (or overflow) version.
#[repr(C)]
#[derive(Debug)]
pub struct Version {
    word: u64,
    /// The next version along the chain: the next older one, or under `append-o2n` the next
    /// newer one. Null at the chain's end.
    link: AtomicPtr<Version>,
    len: u32,
    /// Chain bookkeeping, read and written only by the head's lock holder, and only on the
    /// newest version of a chain (`Head::prune_due`). Under a multi-version protocol: how many
    /// versions the chain held when this one was linked (low 16 bits), and how many the last
    /// prune left (high 16 bits). Otherwise: the lowest snapshot low-water mark (an epoch,
    /// saturated at `u32::MAX`) at which a prune can drop anything from the chain
    /// (`prunable_from`).
    depth: AtomicU32,
    /// Under `ssn`: the low watermark (π) of the transaction that created this version, copied
    /// from the head's [`Stamps`] when the version is linked into the chain; 0 otherwise.
    creator_pi: AtomicU64,
}

impl Version {
    fn bytes_for(len: usize) -> usize {
        size_of::<Version>() + len
    }

    /// Bytes of data.
    fn data_len(&self) -> usize {
        (self.len & !HANDLES) as usize
    }

    /// Marks a version of a non-inline table, before it is published: its data are handles
    /// whose values it holds.
    fn mark_handles(version: *mut Version) {
        // SAFETY: the caller's fresh, unpublished version.
        unsafe { (*version).len |= HANDLES };
    }

    /// A new, unlinked version with `word` and room for `len` bytes of data, which the caller
    /// writes before publishing it.
    fn alloc_header(arena: &mut Arena, word: TidWord, len: usize) -> *mut Version {
        let block = arena.alloc(Self::bytes_for(len)) as *mut Version;
        // SAFETY: a fresh block large enough for the header and the data, suitably aligned.
        unsafe {
            block.write(Version {
                word: word.without(TidWord::LOCK).raw(),
                link: AtomicPtr::new(std::ptr::null_mut()),
                len: len as u32,
                depth: AtomicU32::new(0),
                creator_pi: AtomicU64::new(0),
            });
        }
        block
    }

    fn alloc(arena: &mut Arena, word: TidWord, data: &[u8]) -> *mut Version {
        let block = Self::alloc_header(arena, word, data.len());
        // SAFETY: the block has room for `data` after its header, and is not yet published.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), Self::data_ptr(block), data.len()) };
        block
    }

    /// A delta version (`delta` storage) with `word`, holding what turns `newer`, the state
    /// that replaced it, into `older`, its own row.
    fn alloc_delta(arena: &mut Arena, word: TidWord, newer: &[u8], older: &[u8]) -> *mut Version {
        let plan = delta::plan(newer, older);
        let len = plan.len();
        let block = Self::alloc_header(arena, word, len);
        // SAFETY: the delta is written into the block's `len` bytes of data before the
        // version is published.
        unsafe {
            let data = std::slice::from_raw_parts_mut(Self::data_ptr(block), len);
            delta::write(&plan, newer, older, data);
        }
        block
    }

    fn data_ptr(version: *mut Version) -> *mut u8 {
        // SAFETY: the data follows the header in the same block.
        unsafe { (version as *mut u8).add(size_of::<Version>()) }
    }

    /// The version's bytes: its row, or under `delta` storage the delta to its row. Versions
    /// are immutable once published.
    pub fn data(&self) -> &[u8] {
        // SAFETY: `len` bytes were written after the header before the version was published.
        unsafe {
            std::slice::from_raw_parts(Self::data_ptr(self as *const _ as *mut _), self.data_len())
        }
    }

    pub fn word(&self) -> TidWord {
        TidWord(self.word)
    }

    fn retire(version: *mut Version, garbage: &mut Garbage) {
        // SAFETY: the caller unlinked `version`; its length is immutable.
        let raw = unsafe { (*version).len };
        garbage.retire(if raw & HANDLES != 0 {
            Retired::Handles(version as *mut u8)
        } else {
            Retired::Block(version as *mut u8, Self::bytes_for(raw as usize))
        });
    }

    /// Frees a version, releasing the values it holds (non-inline tables).
    ///
    /// # Safety
    /// Nothing can reach `version` any more, and it was allocated from `arena`'s spaces.
    pub(crate) unsafe fn free(version: *mut Version, arena: &mut Arena) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let this = &*version;
            if this.len & HANDLES != 0 {
                super::shared::release_row(this.data());
            }
            arena.free(version as *mut u8, Self::bytes_for(this.data_len()));
        }
    }

    /// Retires `first` and every version older than it.
    fn retire_chain(mut version: *mut Version, garbage: &mut Garbage) {
        while !version.is_null() {
            // SAFETY: the chain was unlinked by the caller and is still allocated.
            let link = unsafe { (*version).link.load(Ordering::Relaxed) };
            Self::retire(version, garbage);
            version = link;
        }
    }

    /// # Safety
    /// Exclusive access to the chain.
    unsafe fn free_chain(mut version: *mut Version, arena: &mut Arena) {
        while !version.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe {
                let link = (*version).link.load(Ordering::Relaxed);
                Self::free(version, arena);
                version = link;
            }
        }
    }
}

/// The versions an install or a prune dropped from a chain (retired, and readable while the
/// caller stays pinned), with the rows they held when the caller wants them (to find the
/// secondary entries only they produced). Under `delta` storage a version's bytes are a delta,
/// so its row is rebuilt while the chain is still whole. Also the scratch rows of `delta`
/// storage's installs, so that the commit path does not allocate.
#[derive(Debug, Default)]
pub struct Dropped {
    versions: Vec<*const Version>,
    rows_wanted: bool,
    /// Under `delta` storage, when rows are wanted: `spans[i]` is the row of `versions[i]` in
    /// `rows`.
    rows: Vec<u8>,
    spans: Vec<(u32, u32)>,
    /// A `delta` install's copy of the replaced row.
    replaced: Vec<u8>,
    /// A row being rebuilt from deltas.
    rebuilt: Vec<u8>,
}

// SAFETY: the version pointers are only dereferenced by the thread that owns the `Dropped`,
// while it is pinned; between uses they are cleared.
unsafe impl Send for Dropped {}

impl Dropped {
    /// Forgets what was dropped; `rows_wanted`: whether the next drop records rows.
    pub fn reset(&mut self, rows_wanted: bool) {
        self.versions.clear();
        self.rows.clear();
        self.spans.clear();
        self.rows_wanted = rows_wanted;
    }

    pub fn len(&self) -> usize {
        self.versions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.versions.is_empty()
    }

    fn push(&mut self, version: *const Version) {
        self.versions.push(version);
    }

    fn push_rebuilt(&mut self, version: *const Version, row: &[u8]) {
        self.spans.push((self.rows.len() as u32, row.len() as u32));
        self.rows.extend_from_slice(row);
        self.versions.push(version);
    }

    /// Each dropped state's word and row (empty for an absent state), if rows were wanted.
    pub fn states(&self) -> impl Iterator<Item = (TidWord, &[u8])> + '_ {
        assert!(self.rows_wanted, "rows are recorded only when wanted");
        debug_assert!(self.spans.is_empty() || self.spans.len() == self.versions.len());
        self.versions.iter().enumerate().map(move |(index, &version)| {
            // SAFETY: dropped versions are retired and stay allocated while the owner is
            // pinned, which it is from the drop until it is done with them.
            let version = unsafe { &*version };
            let row = match self.spans.get(index) {
                Some(&(start, len)) => &self.rows[start as usize..(start + len) as usize],
                None => version.data(),
            };
            (version.word(), row)
        })
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
    fn visible_to_all(&self, tid: Tid) -> bool {
        tid.epoch() <= self.low && tid <= self.readers_low
    }

    /// Whether multi-version readers may exist (chains then grow with every update).
    #[inline]
    fn multiversion(&self) -> bool {
        self.readers_low != Tid::MAX
    }
}

/// The lowest snapshot low-water mark (`Retention::low_unheld`) at which a prune under a
/// single-version protocol (no `readers_low`) can drop anything from a newest-first chain
/// whose oldest version was superseded at `successor`, saturated at `u32::MAX`. (The version
/// a held `low` reads is kept besides, which only keeps more: the bound stays a bound.) Only
/// the work depends on it: a prune that comes early drops nothing, and one that comes late
/// keeps garbage a little longer, never less than a reader needs.
///
/// Let B be the last snapshot boundary before `successor`'s epoch. A prune drops a version v
/// only if no reader needs it, or if a version newer than v is visible to every reader:
/// - v was kept because a boundary at or above v's epoch lay below its successor, so it is
///   needed while the low-water mark is at most the last such boundary, which is at least B
///   (v's successor is at least the oldest version's);
/// - a version newer than the oldest one is at least `successor`, so it is visible to every
///   reader only once the low-water mark reaches `successor`'s epoch, which is above B.
///
/// So nothing goes while the mark is at most B, and the bound is B + 1. Linking a newer
/// version leaves it as it was, and so does replacing a state without keeping it (the chain's
/// newest version's successor grows, which can only raise the bound).
fn prunable_from(successor: Tid, retention: Retention) -> u32 {
    let epoch = successor.epoch().0;
    if epoch == 0 {
        return 0;
    }
    let last_boundary = (epoch - 1) / retention.interval * retention.interval;
    (last_boundary + 1).min(u64::from(u32::MAX)) as u32
}

#[repr(C)]
#[derive(Debug)]
pub struct Head {
    word: AtomicU64,
    len: AtomicU32,
    capacity_words: u32,
    older: AtomicPtr<Version>,
    overflow: AtomicPtr<Version>,
}

const _: () = assert!(size_of::<Head>() == 32);

/// Sets `bit` in `word` once no one else holds it (waiting, bounded); returns the word it
/// replaced. The record lock and the serial safety net's latch.
#[inline]
fn set_bit_waiting(word: &AtomicU64, bit: u64) -> Result<u64, Busy> {
    set_bit_waiting_for(word, bit, RECORD_WAIT_STEPS_MAX)
}

/// Steps of the two longer waits, 25 times the record lock's: a committer waiting for a serial
/// safety net latch, and a multi-version read (`Head::read_as_of`) waiting for a locked record.
/// Neither can close a cycle of waits:
/// - a commit takes its latches in address order after all its record locks, and while
///   holding latches it waits only for latches at higher addresses;
/// - a multi-version reader holds no record lock or latch while it reads (MVTO's owner words
///   are not waited for by committers, who own what they write), and the committer it waits
///   for finishes without waiting for it.
///
/// So a longer wait trades an abort (the whole transaction run again) for a few more yields:
/// with the record lock's bound, these two timeouts were most of `ssn`'s `record_busy` aborts on
/// YCSB update-intensive at theta 0.8 (docs/performance.md). Still bounded: a holder that stops
/// running (a descheduled thread) costs its waiters an abort, not a hang.
const LONG_WAIT_STEPS_MAX: u32 = 1_000;

fn set_bit_waiting_for(word: &AtomicU64, bit: u64, steps_max: u32) -> Result<u64, Busy> {
    let mut backoff = Backoff::new(steps_max);
    loop {
        let seen = word.load(Ordering::Relaxed);
        if seen & bit == 0
            && word
                .compare_exchange_weak(seen, seen | bit, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return Ok(seen);
        }
        if !backoff.wait() {
            return Err(Busy);
        }
    }
}

/// Bits of `capacity_words` that say which protocol words follow the inline words.
const WORDS_SHIFT: u32 = 30;
const WORDS_MASK: u32 = 0b11 << WORDS_SHIFT;
/// The bit of `capacity_words` that marks an oldest-to-newest chain (`append-o2n`).
const OLDEST_FIRST: u32 = 1 << 29;
/// The bit of `capacity_words` that marks a chain of delta records (`delta`).
const DELTAS: u32 = 1 << 28;
/// The bit of `capacity_words` that marks a head of a non-inline table (`storage::shared`):
/// its versions hold handles of values.
const SHARED_VALUES: u32 = 1 << 27;
/// The bits of `capacity_words` that are not the inline capacity.
const FLAGS_MASK: u32 = WORDS_MASK | OLDEST_FIRST | DELTAS | SHARED_VALUES;
const _: () = assert!(INLINE_BYTES_MAX / 8 < SHARED_VALUES as usize);

/// Where a record's versions are kept (`--version-storage`; Wu et al. §4). See the module
/// comment for the layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionStorage {
    /// The newest version in place in the head, replaced versions copied into a
    /// newest-to-oldest chain.
    #[default]
    TimeTravel,
    /// Every version its own block, chained newest to oldest; the head points to the newest.
    AppendN2o,
    /// Every version its own block, chained oldest to newest; the head points to the oldest.
    AppendO2n,
    /// The newest version in place in the head, replaced versions kept as delta records of
    /// the bytes that changed, newest to oldest.
    Delta,
}

impl VersionStorage {
    pub const ALL: [VersionStorage; 4] = [
        VersionStorage::TimeTravel,
        VersionStorage::AppendN2o,
        VersionStorage::AppendO2n,
        VersionStorage::Delta,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VersionStorage::TimeTravel => "time-travel",
            VersionStorage::AppendN2o => "append-n2o",
            VersionStorage::AppendO2n => "append-o2n",
            VersionStorage::Delta => "delta",
        }
    }

    /// Whether readers meet the oldest versions first.
    pub fn oldest_first(self) -> bool {
        self == VersionStorage::AppendO2n
    }

    /// Whether every version is its own immutable block (`append-n2o`, `append-o2n`).
    pub fn append_only(self) -> bool {
        matches!(self, VersionStorage::AppendN2o | VersionStorage::AppendO2n)
    }
}

impl std::fmt::Display for VersionStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for VersionStorage {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "time-travel" => Ok(VersionStorage::TimeTravel),
            "append-n2o" => Ok(VersionStorage::AppendN2o),
            "append-o2n" => Ok(VersionStorage::AppendO2n),
            "delta" => Ok(VersionStorage::Delta),
            other => Err(format!(
                "unknown version storage \"{other}\": use time-travel, append-n2o, append-o2n \
                 or delta"
            )),
        }
    }
}

/// What a new head is made of: the protocol's words and the version storage's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeadShape {
    pub words: HeadWords,
    pub storage: VersionStorage,
    /// A head of a non-inline table (`storage::shared`; append-only storage only).
    pub shared_values: bool,
}

/// The two protocol words a head carries after its inline words, chosen by the database's
/// protocol (`cc::Protocol::head_words`) when the head is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeadWords {
    /// None (Silo, `si`, `mvocc`): the head is 32 bytes plus its inline words.
    #[default]
    None = 0,
    /// The serial safety net's [`Stamps`] (`ssn`).
    Stamps = 1,
    /// MVTO's [`TimestampWords`] (`mvto`).
    Timestamps = 2,
    /// MV2PL's [`TwoPhaseWord`] and a spare word (`mv2pl`).
    TwoPhase = 3,
}

impl HeadWords {
    fn from_bits(bits: u32) -> HeadWords {
        match (bits & WORDS_MASK) >> WORDS_SHIFT {
            0 => HeadWords::None,
            1 => HeadWords::Stamps,
            2 => HeadWords::Timestamps,
            _ => HeadWords::TwoPhase,
        }
    }

    /// Bytes the words take after the inline words.
    fn bytes(self) -> usize {
        match self {
            HeadWords::None => 0,
            _ => 16,
        }
    }
}

const _: () = assert!(size_of::<Stamps>() == 16);
#[cfg(not(feature = "shuttle"))]
const _: () = assert!(size_of::<TimestampWords>() == 16 && size_of::<TwoPhaseWord>() == 8);

/// The serial safety net's per-record state (`cc/ssn.rs`), present in heads allocated while
/// the `ssn` protocol runs. Read and written only by a committer that holds the latch.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Stamps {
    /// Bit 0: the latch; bits 1..64: the current version's pstamp (the newest commit
    /// timestamp of a transaction that read it), as a raw TID.
    latch_pstamp: AtomicU64,
    /// The low watermark (π) of the transaction that created the current version.
    creator_pi: AtomicU64,
}

impl Stamps {
    const LATCHED: u64 = 1;

    /// Takes the latch, waiting (bounded) for a holder.
    pub fn latch(&self) -> Result<(), Busy> {
        set_bit_waiting_for(&self.latch_pstamp, Self::LATCHED, LONG_WAIT_STEPS_MAX).map(|_| ())
    }

    /// Releases the latch, leaving `pstamp`.
    pub fn unlatch(&self, pstamp: Tid) {
        debug_assert!(self.latch_pstamp.load(Ordering::Relaxed) & Self::LATCHED != 0);
        self.latch_pstamp.store(pstamp.as_u64() << 1, Ordering::Release);
    }

    /// The current version's pstamp. Latched.
    pub fn pstamp(&self) -> Tid {
        Tid::from_u64(self.latch_pstamp.load(Ordering::Relaxed) >> 1)
    }

    /// The creator's low watermark for the current version. Latched.
    pub fn creator_pi(&self) -> Tid {
        Tid::from_u64(self.creator_pi.load(Ordering::Relaxed))
    }

    /// Records the creator of a new current version. Latched and locked.
    pub fn set_creator_pi(&self, pi: Tid) {
        self.creator_pi.store(pi.as_u64(), Ordering::Relaxed);
    }
}

/// What a stable read saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    pub word: TidWord,
}

/// What [`Head::read_as_of`] found: the record's current word, and whether the state it read
/// holds a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsOf {
    pub current: TidWord,
    pub present: bool,
    /// The TID of the state read ([`Tid::ZERO`]: the record had no state at the bound).
    pub tid: Tid,
}

impl Head {
    /// Block size of a head with inline room for `capacity_words` words and `words`.
    fn bytes_for(capacity_words: usize, words: HeadWords) -> usize {
        size_of::<Head>() + capacity_words * 8 + words.bytes()
    }

    /// Inline words for a value of `len` bytes.
    pub fn capacity_for(len: usize) -> usize {
        if len > INLINE_BYTES_MAX { 0 } else { len.div_ceil(8) }
    }

    /// A new head with `word`, inline room for values of `capacity_len` bytes, and no value.
    pub fn alloc(arena: &mut Arena, capacity_len: usize, word: TidWord) -> *mut Head {
        Self::alloc_with(arena, capacity_len, word, HeadShape::default())
    }

    /// [`Head::alloc`], with the protocol words after the inline words and the layout of
    /// `shape`'s version storage (no inline room under the append-only ones).
    pub fn alloc_with(
        arena: &mut Arena,
        capacity_len: usize,
        word: TidWord,
        shape: HeadShape,
    ) -> *mut Head {
        let HeadShape { words, storage, shared_values } = shape;
        debug_assert!(!shared_values || storage.append_only());
        let capacity_words = match storage {
            VersionStorage::TimeTravel | VersionStorage::Delta => Self::capacity_for(capacity_len),
            VersionStorage::AppendN2o | VersionStorage::AppendO2n => 0,
        };
        let order = match storage {
            VersionStorage::AppendO2n => OLDEST_FIRST,
            VersionStorage::Delta => DELTAS,
            VersionStorage::TimeTravel | VersionStorage::AppendN2o => 0,
        };
        let block = arena.alloc(Self::bytes_for(capacity_words, words)) as *mut Head;
        // SAFETY: a fresh block large enough for the header, the inline words and the protocol
        // words; all are initialised here (inline words to zero).
        unsafe {
            block.write(Head {
                word: AtomicU64::new(word.raw()),
                len: AtomicU32::new(0),
                capacity_words: capacity_words as u32
                    | (words as u32) << WORDS_SHIFT
                    | order
                    | if shared_values { SHARED_VALUES } else { 0 },
                older: AtomicPtr::new(std::ptr::null_mut()),
                overflow: AtomicPtr::new(std::ptr::null_mut()),
            });
            let inline = Self::inline_ptr(block);
            for index in 0..capacity_words {
                inline.add(index).write(AtomicU64::new(0));
            }
            let extra = inline.add(capacity_words) as *mut u8;
            match words {
                HeadWords::None => {}
                HeadWords::Stamps => (extra as *mut Stamps).write(Stamps::default()),
                HeadWords::Timestamps => {
                    (extra as *mut TimestampWords).write(TimestampWords::new())
                }
                HeadWords::TwoPhase => {
                    (extra as *mut TwoPhaseWord).write(TwoPhaseWord::new());
                    (extra.add(8) as *mut AtomicU64).write(AtomicU64::new(0));
                }
            }
        }
        block
    }

    /// Inline capacity in words.
    #[inline]
    fn capacity_words(&self) -> usize {
        (self.capacity_words & !FLAGS_MASK) as usize
    }

    /// Whether the chain runs oldest to newest (`append-o2n`), the current row last.
    #[inline]
    fn oldest_first(&self) -> bool {
        self.capacity_words & OLDEST_FIRST != 0
    }

    /// Whether older versions are delta records (`delta`).
    #[inline]
    fn deltas(&self) -> bool {
        self.capacity_words & DELTAS != 0
    }

    /// A version of this head's new row: value handles under a non-inline table's head.
    fn new_version(&self, arena: &mut Arena, word: TidWord, bytes: &[u8]) -> *mut Version {
        let version = Version::alloc(arena, word, bytes);
        if self.capacity_words & SHARED_VALUES != 0 {
            Version::mark_handles(version);
        }
        version
    }

    /// Which protocol words follow the inline words.
    #[inline]
    pub fn words(&self) -> HeadWords {
        HeadWords::from_bits(self.capacity_words & WORDS_MASK)
    }

    /// The protocol words, if the head has `kind`.
    #[inline]
    fn extra<T>(&self, kind: HeadWords) -> Option<&T> {
        if self.capacity_words & WORDS_MASK != (kind as u32) << WORDS_SHIFT {
            return None;
        }
        // SAFETY: `alloc_with` wrote a `T` of this kind after the inline words, and the kind
        // never changes.
        Some(unsafe { &*(Self::inline_ptr(self).add(self.capacity_words()) as *const T) })
    }

    /// The serial safety net's stamps, if the head was allocated under `ssn`.
    #[inline]
    pub fn stamps(&self) -> Option<&Stamps> {
        self.extra(HeadWords::Stamps)
    }

    /// MVTO's owner and read timestamp, if the head was allocated under `mvto`.
    #[inline]
    pub fn timestamps(&self) -> Option<&TimestampWords> {
        self.extra(HeadWords::Timestamps)
    }

    /// MV2PL's lock word, if the head was allocated under `mv2pl`.
    #[inline]
    pub fn two_phase(&self) -> Option<&TwoPhaseWord> {
        self.extra(HeadWords::TwoPhase)
    }

    /// Whether a transaction holds one of the protocol's no-wait locks on the record (`mvto`,
    /// `mv2pl`): the record must then stay linked.
    #[inline]
    pub fn is_lock_held(&self) -> bool {
        self.timestamps().is_some_and(TimestampWords::is_owned)
            || self.two_phase().is_some_and(TwoPhaseWord::is_held)
    }

    /// The low watermark of the creator of the state right after `tid` (the oldest state newer
    /// than `tid`): the `sstamp` of the version at `tid` in SSN's terms. `None` if the state at
    /// `tid` is still current, or if the chain no longer shows what followed it. The caller
    /// holds the head's SSN latch, so no creator's stamp is being written.
    pub fn successor_pi(&self, tid: Tid) -> Option<Tid> {
        let stamps = self.stamps()?;
        let current = self.word();
        if current.tid() <= tid {
            return None;
        }
        if self.oldest_first() {
            return self.successor_pi_oldest_first(stamps, current, tid);
        }
        let mut successor = stamps.creator_pi();
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin.
            let older = unsafe { &*version };
            if older.word().tid() <= tid {
                return Some(successor);
            }
            successor = Tid::from_u64(older.creator_pi.load(Ordering::Relaxed));
            version = older.link.load(Ordering::Acquire);
        }
        // The chain ended above `tid`: only a state that never had a version (a fresh head's
        // absent state, TID zero) has its successor at the chain's end.
        (tid == Tid::ZERO).then_some(successor)
    }

    /// [`Head::successor_pi`] on an oldest-to-newest chain: the first version above `tid` is
    /// the successor, its creator's stamp kept in the version, or in `stamps` while it is the
    /// current row.
    #[cold]
    fn successor_pi_oldest_first(
        &self,
        stamps: &Stamps,
        current: TidWord,
        tid: Tid,
    ) -> Option<Tid> {
        // A state at `tid` is shown by a version at or below it (or is the fresh head's).
        let mut shown = tid == Tid::ZERO;
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin.
            let newer = unsafe { &*version };
            let newer_tid = newer.word().tid();
            if newer_tid > tid {
                return shown.then(|| {
                    if newer_tid == current.tid() {
                        stamps.creator_pi()
                    } else {
                        Tid::from_u64(newer.creator_pi.load(Ordering::Relaxed))
                    }
                });
            }
            shown = true;
            version = newer.link.load(Ordering::Acquire);
        }
        // Every version is at or below `tid`: the current state, which has none (a delete),
        // followed it.
        shown.then(|| stamps.creator_pi())
    }

    fn inline_ptr(head: *const Head) -> *mut AtomicU64 {
        // SAFETY: the inline words follow the header in the same block.
        unsafe { (head as *mut u8).add(size_of::<Head>()) as *mut AtomicU64 }
    }

    #[inline]
    fn inline(&self) -> &[AtomicU64] {
        // SAFETY: `alloc` initialised `capacity_words` words, which never change in number.
        unsafe { std::slice::from_raw_parts(Self::inline_ptr(self), self.capacity_words()) }
    }

    /// Asks the processor to load the head and the start of its value into the cache. Never
    /// faults, whatever `head` is.
    #[inline]
    pub fn prefetch(head: *const Head) {
        #[cfg(target_arch = "x86_64")]
        for offset in (0..HEAD_PREFETCH_BYTES).step_by(64) {
            // SAFETY: a prefetch is a hint that never faults.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    (head as *const i8).wrapping_add(offset),
                );
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = head;
    }

    /// The block size this head was allocated with.
    pub fn block_bytes(&self) -> usize {
        Self::bytes_for(self.capacity_words(), self.words())
    }

    #[inline]
    pub fn word(&self) -> TidWord {
        TidWord(self.word.load(Ordering::Acquire))
    }

    /// Silo's read protocol: a consistent copy of the current value (if any) into `out`, and
    /// the TID word it belongs to. Waits, bounded, while the record is locked.
    #[inline]
    pub fn read(&self, out: &mut Vec<u8>) -> Result<TidWord, Busy> {
        let mut backoff = Backoff::new(RECORD_WAIT_STEPS_MAX);
        loop {
            // Acquire pairs with the release store that ended the last install.
            let before = TidWord(self.word.load(Ordering::Acquire));
            if before.is_locked() {
                if !backoff.wait() {
                    return Err(Busy);
                }
                continue;
            }
            out.clear();
            let consistent = before.is_absent() || self.copy_value(out);
            // Keeps the copy above the re-check (seqlock reader; pairs with the fence after
            // `lock`, which orders the lock bit before an installer's stores).
            fence(Ordering::Acquire);
            if consistent && self.word.load(Ordering::Relaxed) == before.0 {
                return Ok(before);
            }
            shim::spin_hint();
        }
    }

    /// Copies the current value; `false` if a torn read made it unreadable.
    #[inline]
    fn copy_value(&self, out: &mut Vec<u8>) -> bool {
        let len = self.len.load(Ordering::Relaxed);
        if len & OVERFLOW != 0 {
            if self.oldest_first() {
                return self.copy_last(out);
            }
            let version = self.overflow.load(Ordering::Acquire);
            if version.is_null() {
                return false;
            }
            // SAFETY: a non-null overflow pointer read while pinned points to a published,
            // immutable version that is freed only after the reader unpins.
            out.extend_from_slice(unsafe { (*version).data() });
            return true;
        }
        let len = len as usize;
        let inline = self.inline();
        let words = len.div_ceil(8);
        if words > inline.len() {
            return false;
        }
        out.reserve(words * 8);
        let start = out.len();
        let target = out.spare_capacity_mut().as_mut_ptr() as *mut u8;
        for (index, word) in inline[..words].iter().enumerate() {
            let bytes = word.load(Ordering::Relaxed).to_le_bytes();
            // SAFETY: `reserve` made room for `words * 8` bytes past `start`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), target.add(index * 8), 8) };
        }
        // SAFETY: the first `len <= words * 8` spare bytes were just written.
        unsafe { out.set_len(start + len) };
        true
    }

    /// Copies the value of an oldest-to-newest chain's last version, walking the chain to it;
    /// `false` if the chain was empty (a torn read).
    #[cold]
    fn copy_last(&self, out: &mut Vec<u8>) -> bool {
        let mut last: *const Version = std::ptr::null();
        // Acquire pairs with the release stores that link versions in `install_oldest_first`.
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            last = version;
            // SAFETY: chain versions reached while pinned stay allocated until we unpin, and a
            // dropped version's link still leads along the chain.
            version = unsafe { (*version).link.load(Ordering::Acquire) };
        }
        if last.is_null() {
            return false;
        }
        // SAFETY: as above; versions are immutable once linked.
        out.extend_from_slice(unsafe { (*last).data() });
        true
    }

    /// The value as of snapshot epoch `at`, copied into `out`. Returns whether a row existed,
    /// and the epoch of the state read (the row's, or its deletion's), which a snapshot
    /// transaction waits to be durable (`txn::read_snapshot`).
    #[inline]
    pub fn read_at_noting(&self, at: Epoch, out: &mut Vec<u8>) -> Result<(bool, Epoch), Busy> {
        self.read_as_of(Tid::last_of(at), out).map(|seen| (seen.present, seen.tid.epoch()))
    }

    /// [`Head::read_at_noting`] without the epoch (the tests' reads).
    #[cfg(test)]
    pub fn read_at(&self, at: Epoch, out: &mut Vec<u8>) -> Result<bool, Busy> {
        self.read_at_noting(at, out).map(|(present, _)| present)
    }

    /// The newest committed state with a TID at or below `bound`, copied into `out` when it
    /// holds a row, and the record's current word. Waits, bounded ([`LONG_WAIT_STEPS_MAX`]),
    /// while the record is locked: the holder's TID may be at or below `bound`.
    pub fn read_as_of(&self, bound: Tid, out: &mut Vec<u8>) -> Result<AsOf, Busy> {
        let mut backoff = Backoff::new(LONG_WAIT_STEPS_MAX);
        loop {
            let before = TidWord(self.word.load(Ordering::Acquire));
            if before.is_locked() {
                if !backoff.wait() {
                    return Err(Busy);
                }
                continue;
            }
            if before.tid() <= bound {
                out.clear();
                let consistent = before.is_absent() || self.copy_value(out);
                fence(Ordering::Acquire);
                if consistent && self.word.load(Ordering::Relaxed) == before.0 {
                    return Ok(AsOf {
                        current: before,
                        present: !before.is_absent(),
                        tid: before.tid(),
                    });
                }
                continue;
            }
            if self.deltas() {
                match self.read_deltas_as_of(before, bound, out) {
                    Some(found) => return Ok(found),
                    None => continue,
                }
            }
            let mut version = self.older.load(Ordering::Acquire);
            fence(Ordering::Acquire);
            if self.word.load(Ordering::Relaxed) != before.0 {
                continue;
            }
            // The chain belongs to `before`. Its versions are immutable, and pruning removes
            // only versions that no reader at or above the retention bounds reads.
            let mut present = false;
            let mut tid = Tid::ZERO;
            if self.oldest_first() {
                // Oldest first: the last version at or below `bound`. Versions appended since
                // `before` are newer than it, so above `bound`.
                let mut found: *const Version = std::ptr::null();
                while !version.is_null() {
                    // SAFETY: chain versions reached while pinned stay allocated until we
                    // unpin, and a dropped version's link still leads along the chain.
                    let current = unsafe { &*version };
                    if current.word().tid() > bound {
                        break;
                    }
                    found = version;
                    version = current.link.load(Ordering::Acquire);
                }
                if !found.is_null() {
                    // SAFETY: as above.
                    let found = unsafe { &*found };
                    out.clear();
                    tid = found.word().tid();
                    present = !found.word().is_absent();
                    if present {
                        out.extend_from_slice(found.data());
                    }
                }
                return Ok(AsOf { current: before, present, tid });
            }
            while !version.is_null() {
                // SAFETY: chain versions reached while pinned stay allocated until we unpin.
                let current = unsafe { &*version };
                if current.word().tid() <= bound {
                    out.clear();
                    tid = current.word().tid();
                    present = !current.word().is_absent();
                    if present {
                        out.extend_from_slice(current.data());
                    }
                    break;
                }
                version = current.link.load(Ordering::Acquire);
            }
            return Ok(AsOf { current: before, present, tid });
        }
    }

    /// [`Head::read_as_of`] of a state older than `before`, the unlocked current word, under
    /// `delta` storage: copies the master version and applies the chain's deltas down to the
    /// newest state at or below `bound`. `None` if the head changed while it read (the caller
    /// retries).
    fn read_deltas_as_of(&self, before: TidWord, bound: Tid, out: &mut Vec<u8>) -> Option<AsOf> {
        out.clear();
        // The master version and the chain's first delta (made against it) must belong to the
        // same state: both are read between two loads of the same unlocked word.
        let consistent = before.is_absent() || self.copy_value(out);
        let mut version = self.older.load(Ordering::Acquire);
        fence(Ordering::Acquire);
        if !consistent || self.word.load(Ordering::Relaxed) != before.0 {
            return None;
        }
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin. Each
            // is immutable, and a dropped one's link still leads along the chain, so each delta
            // reached applies to the row rebuilt so far.
            let current = unsafe { &*version };
            let word = current.word();
            if word.is_absent() {
                out.clear();
            } else {
                delta::apply(current.data(), out);
            }
            if word.tid() <= bound {
                return Some(AsOf { current: before, present: !word.is_absent(), tid: word.tid() });
            }
            version = current.link.load(Ordering::Acquire);
        }
        out.clear();
        Some(AsOf { current: before, present: false, tid: Tid::ZERO })
    }

    /// The record's word once no commit holds it (waiting, bounded), without reading its value.
    #[inline]
    pub fn stable_word(&self) -> Result<TidWord, Busy> {
        let mut backoff = Backoff::new(RECORD_WAIT_STEPS_MAX);
        loop {
            let word = TidWord(self.word.load(Ordering::Acquire));
            if !word.is_locked() {
                return Ok(word);
            }
            if !backoff.wait() {
                return Err(Busy);
            }
        }
    }

    /// Sets the word of a head this transaction owns (claimed or fresh; the owner holds no lock
    /// on it): used to give a claimed head back or to abandon a fresh one.
    ///
    /// Another thread may hold the record's lock for a moment even so: the clean-up task or the
    /// vacuum looking at the record, or a committer that read the row before the claim and
    /// locks its write set. Each lets go as soon as it sees the record claimed, storing back the
    /// word it locked, so the new word is stored under the lock, after that holder: stored
    /// over its lock bit, it would be undone by that holder's unlock, leaving the record
    /// claimed by nobody (every later insert of its key would abort). No holder waits for
    /// anything before it lets go (a committer unlocks what it locked before it gives its own
    /// inserts back, `commit::abort`), so the wait ends; a holder that is not running for
    /// longer than one bounded wait (`Busy`) is waited for again, since the head must be given
    /// back.
    pub fn set_owned_word(&self, word: TidWord) {
        let seen = loop {
            match self.lock() {
                Ok(seen) => break seen,
                Err(Busy) => shim::yield_now(),
            }
        };
        debug_assert!(seen.is_claimed());
        self.unlock_to(word);
    }

    /// Locks the record for commit; returns the word it held. Waits, bounded, for a holder.
    #[inline]
    pub fn lock(&self) -> Result<TidWord, Busy> {
        let word = set_bit_waiting(&self.word, TidWord::LOCK)?;
        // Orders the lock bit before the install's stores (seqlock writer side).
        fence(Ordering::Release);
        Ok(TidWord(word))
    }

    /// Releases the lock, leaving `word` (unlocked) as the record's word.
    #[inline]
    pub fn unlock_to(&self, word: TidWord) {
        debug_assert!(TidWord(self.word.load(Ordering::Relaxed)).is_locked());
        // Release pairs with the Acquire loads of readers.
        self.word.store(word.without(TidWord::LOCK).raw(), Ordering::Release);
    }

    /// Locks the record if its word is still `seen` (unlocked), without waiting: cooperative
    /// cleaning (`gc::cooperative`) gives way to anyone else.
    pub fn try_lock(&self, seen: TidWord) -> bool {
        debug_assert!(!seen.is_locked());
        let locked = self
            .word
            .compare_exchange(
                seen.raw(),
                seen.with(TidWord::LOCK).raw(),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok();
        // Orders the lock bit before the pruning's stores, as `lock` does.
        fence(Ordering::Release);
        locked
    }

    /// Whether an oldest-to-newest chain (`append-o2n`) holds a version that no reader at or
    /// above `retention` can read: what a reader walking to the row has passed, and cooperative
    /// cleaning's cue. Always false for newest-first chains. Pinned (a racy hint).
    pub fn has_expired(&self, retention: Retention) -> bool {
        if !self.oldest_first() {
            return false;
        }
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin, and a
            // dropped version's link still leads along the chain.
            let current = unsafe { &*version };
            let next = current.link.load(Ordering::Acquire);
            if next.is_null() {
                // The row's own version (a deleted record's chain is its clean-up task's).
                return false;
            }
            // SAFETY: as above.
            if !retention.needed(current.word().tid(), unsafe { (*next).word().tid() }) {
                return true;
            }
            version = next;
        }
        false
    }

    /// Claims an absent, unclaimed head for an insert, if its word is still `seen`.
    pub fn claim(&self, seen: TidWord) -> bool {
        debug_assert!(seen.is_absent() && !seen.is_claimed() && !seen.is_locked());
        self.word
            .compare_exchange(
                seen.raw(),
                seen.with(TidWord::CLAIMED).raw(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Gives a claimed head back unchanged (the claiming insert aborted).
    pub fn unclaim(&self, seen: TidWord) {
        let claimed = seen.with(TidWord::CLAIMED).raw();
        let restored =
            self.word.compare_exchange(claimed, seen.raw(), Ordering::AcqRel, Ordering::Relaxed);
        debug_assert!(restored.is_ok(), "only the claimer changes a claimed head");
    }

    /// Installs a new state on a head this thread has locked; the caller unlocks it with
    /// `new_word` afterwards (after fixing secondary entries). `value` is the new row, or `None`
    /// for a delete. The state being replaced is kept as an older version if `retention` says a
    /// snapshot may read it, and then older versions no snapshot can read any more are pruned.
    /// Versions dropped from the chain are retired and appended to `dropped` (still readable
    /// while the caller is pinned). Returns whether the replaced state was kept.
    pub fn install(
        &self,
        value: Option<&[u8]>,
        new_word: TidWord,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> bool {
        if self.oldest_first() {
            return self.install_oldest_first(value, new_word, retention, arena, garbage, dropped);
        }
        let old_word = TidWord(self.word.load(Ordering::Relaxed));
        debug_assert!(old_word.is_locked());
        let new_tid = new_word.tid();
        let old_overflow = self.overflow.load(Ordering::Relaxed);
        let keep = retention.needed(old_word.tid(), new_tid);
        if self.deltas() {
            let kept = keep.then_some((new_tid, retention));
            self.chain_delta(old_word, value.unwrap_or(&[]), kept, arena, garbage, dropped);
        } else if keep {
            let kept = if !old_overflow.is_null() && !old_word.is_absent() {
                old_overflow
            } else if old_word.is_absent() {
                Version::alloc(arena, old_word, &[])
            } else {
                self.inline_to_version(old_word, arena)
            };
            if kept == old_overflow {
                self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
            } else if !old_overflow.is_null() {
                self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
                Version::retire(old_overflow, garbage);
            }
            self.link_newest(kept, new_tid, retention);
        } else if !old_overflow.is_null() {
            self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
            Version::retire(old_overflow, garbage);
        }
        match value {
            None => self.len.store(0, Ordering::Relaxed),
            Some(bytes) if bytes.len().div_ceil(8) <= self.capacity_words() => {
                let inline = self.inline();
                let mut chunks = bytes.chunks_exact(8);
                for (word, chunk) in inline.iter().zip(&mut chunks) {
                    word.store(
                        u64::from_le_bytes(chunk.try_into().expect("8 bytes")),
                        Ordering::Relaxed,
                    );
                }
                let tail = chunks.remainder();
                if !tail.is_empty() {
                    let mut buffer = [0u8; 8];
                    buffer[..tail.len()].copy_from_slice(tail);
                    inline[bytes.len() / 8].store(u64::from_le_bytes(buffer), Ordering::Relaxed);
                }
                self.len.store(bytes.len() as u32, Ordering::Relaxed);
            }
            Some(bytes) => {
                let version = self.new_version(arena, new_word, bytes);
                self.overflow.store(version, Ordering::Release);
                self.len.store(bytes.len() as u32 | OVERFLOW, Ordering::Relaxed);
            }
        }
        // The chain grows only when a state is kept, so pruning then keeps it bounded; pruning
        // at every install would also read the older versions, which are cold, on every
        // update of the record (measured in docs/performance.md). Under a multi-version
        // protocol almost every update keeps a version, and a hot record's chain may hold
        // hundreds that readers still need: pruning walks the chain only when it has doubled
        // since the last prune, so the walks cost a constant per update.
        if keep && retention.prune && self.prune_due(retention) {
            self.prune(new_tid, retention, arena, garbage, dropped);
        }
        keep
    }

    /// Links `kept`, the replaced state's new version, at the front of a newest-first chain;
    /// `successor` is the TID of the state that replaced it. Locked head.
    fn link_newest(&self, kept: *mut Version, successor: Tid, retention: Retention) {
        let older = self.older.load(Ordering::Relaxed);
        // SAFETY: `kept` is ours until published by the store below; `older`, if any, is
        // allocated while linked, and we hold the lock.
        unsafe {
            if let Some(stamps) = self.stamps() {
                (*kept).creator_pi.store(stamps.creator_pi().as_u64(), Ordering::Relaxed);
            }
            (*kept).link.store(older, Ordering::Relaxed);
            let depth = if older.is_null() { 0 } else { (*older).depth.load(Ordering::Relaxed) };
            let depth = if retention.multiversion() {
                let (length, pruned) = (depth & 0xffff, depth >> 16);
                ((length + 1).min(0xffff)) | (pruned << 16)
            } else if older.is_null() {
                // `kept` is the chain's oldest version.
                prunable_from(successor, retention)
            } else {
                // The oldest version, which the bound follows from, is the same.
                depth
            };
            (*kept).depth.store(depth, Ordering::Relaxed);
        }
        // Release pairs with the Acquire loads of chain walkers.
        self.older.store(kept, Ordering::Release);
    }

    /// Under `delta` storage, before the master version becomes `newer` (empty for a delete):
    /// keeps the replaced state as a delta against `newer` at the chain's front if `kept` is
    /// given (the new state's TID and the install's retention), and otherwise makes the
    /// chain's first delta, which was made against the replaced state, a delta against
    /// `newer`. Retires a replaced overflow version. Locked head.
    fn chain_delta(
        &self,
        old_word: TidWord,
        newer: &[u8],
        kept: Option<(Tid, Retention)>,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        let first = self.older.load(Ordering::Relaxed);
        if kept.is_some() || !first.is_null() {
            let replaced = &mut dropped.replaced;
            replaced.clear();
            if !old_word.is_absent() {
                let consistent = self.copy_value(replaced);
                debug_assert!(consistent, "a locked head is never torn");
            }
            if let Some((successor, retention)) = kept {
                let kept = Version::alloc_delta(arena, old_word, newer, replaced);
                self.link_newest(kept, successor, retention);
            } else {
                // SAFETY: linked, and we hold the lock.
                let first_ref = unsafe { &*first };
                let row = &mut dropped.rebuilt;
                row.clear();
                if !first_ref.word().is_absent() {
                    row.extend_from_slice(replaced);
                    delta::apply(first_ref.data(), row);
                }
                let again = Version::alloc_delta(arena, first_ref.word(), newer, row);
                // SAFETY: ours until published by the store below.
                unsafe {
                    let again = &*again;
                    again.link.store(first_ref.link.load(Ordering::Relaxed), Ordering::Relaxed);
                    again.depth.store(first_ref.depth.load(Ordering::Relaxed), Ordering::Relaxed);
                    again
                        .creator_pi
                        .store(first_ref.creator_pi.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                // Release pairs with the Acquire loads of chain walkers. A reader that holds
                // the replaced delta read it with the replaced master, so it still applies.
                self.older.store(again, Ordering::Release);
                Version::retire(first, garbage);
            }
        }
        let old_overflow = self.overflow.load(Ordering::Relaxed);
        if !old_overflow.is_null() {
            self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
            Version::retire(old_overflow, garbage);
        }
    }

    /// [`Head::install`] on an oldest-to-newest chain (`append-o2n`). The current row, if any,
    /// is the chain's last version: the install walks the whole chain to it, drops it if no
    /// reader needs it, and links the new row after it. Writers prune (when `retention` says
    /// so) at every install that keeps a state, since the walk is paid anyway.
    #[cold]
    fn install_oldest_first(
        &self,
        value: Option<&[u8]>,
        new_word: TidWord,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> bool {
        let old_word = TidWord(self.word.load(Ordering::Relaxed));
        debug_assert!(old_word.is_locked());
        let keep = retention.needed(old_word.tid(), new_word.tid());
        // The link that ends the chain, and the one that points to its last version.
        let (mut end, mut to_last) = (&self.older, &self.older);
        let mut last: *mut Version = std::ptr::null_mut();
        let mut version = self.older.load(Ordering::Relaxed);
        while !version.is_null() {
            (to_last, last) = (end, version);
            // SAFETY: chain versions are allocated while linked, and we hold the lock.
            end = unsafe { &(*version).link };
            version = end.load(Ordering::Relaxed);
        }
        let creator_pi = self.stamps().map_or(0, |stamps| stamps.creator_pi().as_u64());
        if !old_word.is_absent() {
            // SAFETY: a present row is the chain's last version (module invariant).
            let current = unsafe { &*last };
            assert_eq!(current.word().tid(), old_word.tid(), "the row is the chain's last version");
            if keep {
                current.creator_pi.store(creator_pi, Ordering::Relaxed);
            } else {
                to_last.store(std::ptr::null_mut(), Ordering::Release);
                Version::retire(last, garbage);
                end = to_last;
            }
        } else if keep {
            let marker = Version::alloc(arena, old_word, &[]);
            // SAFETY: ours until the release store below publishes it.
            unsafe { (*marker).creator_pi.store(creator_pi, Ordering::Relaxed) };
            // Release pairs with the Acquire loads of chain walkers.
            end.store(marker, Ordering::Release);
            // SAFETY: just linked, and we hold the lock.
            end = unsafe { &(*marker).link };
        }
        match value {
            Some(bytes) => {
                let version = self.new_version(arena, new_word, bytes);
                // Release pairs with the Acquire loads of chain walkers.
                end.store(version, Ordering::Release);
                self.len.store(OVERFLOW, Ordering::Relaxed);
            }
            None => self.len.store(0, Ordering::Relaxed),
        }
        if keep && retention.prune {
            self.prune_oldest_first(new_word.tid(), value.is_some(), retention, garbage, dropped);
        }
        keep
    }

    /// Drops the versions of an oldest-to-newest chain that no reader at or above the
    /// retention bounds can read: each version's successor is the next along the chain, or
    /// the current state (at `newest`) for the last version when `row_last` is false. The
    /// current row (the last version when `row_last`) always stays. Locked head.
    fn prune_oldest_first(
        &self,
        newest: Tid,
        row_last: bool,
        retention: Retention,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        let mut link = &self.older;
        let mut version = link.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked; we hold the lock.
            let current = unsafe { &*version };
            let next = current.link.load(Ordering::Relaxed);
            if next.is_null() && row_last {
                break;
            }
            // SAFETY: as above.
            let successor = if next.is_null() { newest } else { unsafe { (*next).word().tid() } };
            if retention.needed(current.word().tid(), successor) {
                link = &current.link;
            } else {
                // Release pairs with the Acquire loads of chain walkers.
                link.store(next, Ordering::Release);
                dropped.push(version);
                Version::retire(version, garbage);
            }
            version = next;
        }
    }

    /// Copies the current value of a head this thread has locked into `out`; returns whether
    /// a row is present.
    pub fn value_locked(&self, out: &mut Vec<u8>) -> bool {
        let word = TidWord(self.word.load(Ordering::Relaxed));
        debug_assert!(word.is_locked());
        out.clear();
        if word.is_absent() {
            return false;
        }
        let consistent = self.copy_value(out);
        debug_assert!(consistent, "a locked head is never torn");
        true
    }

    /// The log's patch of an update of this locked head's value to `new`
    /// (`wal::format::diff_rows`), compared where the value lies, with no copy. `None`
    /// (nothing appended) where the row is absent or not inline, its length differs, or the
    /// patch would not be small enough (and on big-endian targets, whose words do not lie as
    /// the value's bytes).
    pub fn diff_locked(&self, new: &[u8], edits: &mut Vec<(u32, u32)>) -> Option<usize> {
        let word = TidWord(self.word.load(Ordering::Relaxed));
        debug_assert!(word.is_locked());
        let len = self.len.load(Ordering::Relaxed);
        if cfg!(target_endian = "big")
            || word.is_absent()
            || len & OVERFLOW != 0
            || len as usize != new.len()
        {
            return None;
        }
        if new.len().div_ceil(8) > self.capacity_words() {
            return None;
        }
        // SAFETY: the value's words were initialised at `alloc`, and this thread holds the
        // lock, so no one writes them while they are read (readers only read); as bytes they
        // are the value in order, since values are stored little-endian (`copy_value`).
        let old =
            unsafe { std::slice::from_raw_parts(Self::inline_ptr(self) as *const u8, new.len()) };
        crate::wal::format::diff_rows(old, new, edits)
    }

    /// Calls `visit` with each older version's word and row, newest first. The caller holds
    /// the lock, or is pinned and tolerates a chain that changes while it walks (and, under
    /// `delta` storage, rows rebuilt from a master version that changed under it).
    /// (Oldest first under `append-o2n`, where the current row's version is not visited.)
    /// `row` is scratch space for `delta` storage's rebuilt rows.
    pub fn for_each_older(&self, row: &mut Vec<u8>, visit: impl FnMut(TidWord, &[u8])) {
        self.for_each_older_than(!self.word().is_absent(), row, visit);
    }

    /// [`Head::for_each_older`] for a locked head whose word does not show its state yet (an
    /// install's, before the unlock): `present` says whether the state it now holds is a row,
    /// which under `append-o2n` is the chain's last version and not visited.
    pub(crate) fn for_each_older_than(
        &self,
        present: bool,
        row: &mut Vec<u8>,
        mut visit: impl FnMut(TidWord, &[u8]),
    ) {
        if self.deltas() {
            // The master version is copied as it is now: under the lock, the row just
            // installed (a delete leaves it empty), which the chain's first delta is made
            // against.
            row.clear();
            if !self.copy_value(row) {
                return;
            }
            let mut version = self.older.load(Ordering::Acquire);
            while !version.is_null() {
                // SAFETY: chain versions reached while pinned stay allocated until we unpin.
                let current = unsafe { &*version };
                if current.word().is_absent() {
                    row.clear();
                } else {
                    delta::apply(current.data(), row);
                }
                visit(current.word(), row);
                version = current.link.load(Ordering::Acquire);
            }
            return;
        }
        // Under `append-o2n` the last version is the row's own when a row is present.
        let row_last = self.oldest_first() && present;
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin.
            let current = unsafe { &*version };
            let next = current.link.load(Ordering::Acquire);
            if next.is_null() && row_last {
                break;
            }
            visit(current.word(), current.data());
            version = next;
        }
    }

    /// A new version holding the inline value of a locked head, with `word`.
    fn inline_to_version(&self, word: TidWord, arena: &mut Arena) -> *mut Version {
        let len = self.len.load(Ordering::Relaxed) as usize;
        debug_assert!(len <= self.capacity_words() * 8);
        let version = Version::alloc_header(arena, word, len);
        // SAFETY: a fresh block with room for `len` bytes; the inline words hold `len` bytes,
        // little-endian, and we hold the lock so they do not change.
        unsafe {
            let data = Version::data_ptr(version);
            for (index, word) in self.inline()[..len / 8].iter().enumerate() {
                let bytes = word.load(Ordering::Relaxed).to_le_bytes();
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(index * 8), 8);
            }
            let tail = len % 8;
            if tail > 0 {
                let bytes = self.inline()[len / 8].load(Ordering::Relaxed).to_le_bytes();
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(len - tail), tail);
            }
        }
        version
    }

    /// Whether the chain (just grown by one) should be pruned now. Locked head.
    ///
    /// Under a multi-version protocol, when it has more than doubled since its last prune.
    /// Otherwise, when the snapshot low-water mark has reached the bound `prunable_from`
    /// recorded for it: below that bound a prune walks the chain and drops nothing. That is
    /// the case of every chain written while a checkpoint holds its snapshot epoch (the
    /// low-water mark stays put, and each row keeps one version per snapshot interval), where
    /// the walks were 4.8% of the workers' time in TPC-C (docs/performance.md).
    fn prune_due(&self, retention: Retention) -> bool {
        let newest = self.older.load(Ordering::Relaxed);
        // SAFETY: the newest version was just linked by the lock holder.
        let depth = unsafe { (*newest).depth.load(Ordering::Relaxed) };
        if !retention.multiversion() {
            return retention.low_unheld.0 >= u64::from(depth);
        }
        let (length, pruned) = (depth & 0xffff, depth >> 16);
        length > 2 * pruned + PRUNE_SLACK
    }

    /// Drops chain versions no reader at or above the retention bounds can read. Locked head.
    fn prune(
        &self,
        newest: Tid,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        if self.deltas() {
            return self.prune_deltas(newest, retention, arena, garbage, dropped);
        }
        let mut successor = newest;
        let mut link = &self.older;
        let mut version = link.load(Ordering::Relaxed);
        let mut remaining = 0u32;
        // The TID of the last state kept (the head's first), and the successor of the last
        // version kept in the pruned chain, the oldest when the walk ends.
        let (mut last_kept, mut oldest_successor) = (newest, newest);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked; we hold the lock.
            let current = unsafe { &*version };
            let tid = current.word().tid();
            let next = current.link.load(Ordering::Relaxed);
            if retention.needed(tid, successor) {
                remaining += 1;
                (oldest_successor, last_kept) = (last_kept, tid);
                if retention.visible_to_all(tid) {
                    // Visible to every reader: nothing older is readable.
                    Self::drop_tail(&current.link, garbage, dropped);
                    break;
                }
                link = &current.link;
            } else {
                link.store(next, Ordering::Release);
                dropped.push(version);
                Version::retire(version, garbage);
            }
            successor = tid;
            version = next;
        }
        self.pruned_to(remaining, oldest_successor, retention);
    }

    /// [`Head::prune`] under `delta` storage. Each delta turns the state above it into its own,
    /// so dropping a version in the middle of the chain means making the next version kept a
    /// delta against the last one kept above it: a new block, linked in place of the old one
    /// only when it is complete, so a reader sees either the old path (the dropped version
    /// and the old delta, whose links do not change) or the new one. The walk rebuilds each
    /// version's row from the master version, and gives the dropped versions' rows to
    /// `dropped` if it wants them. Locked head.
    fn prune_deltas(
        &self,
        newest: Tid,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        if !dropped.rows_wanted && self.prune_delta_tail(newest, retention, garbage, dropped) {
            return;
        }
        // `row`: the state of the version visited; `kept_row`: of the last one kept above it
        // (the master version first).
        let mut kept_row = std::mem::take(&mut dropped.replaced);
        let mut row = std::mem::take(&mut dropped.rebuilt);
        kept_row.clear();
        let consistent = self.copy_value(&mut kept_row);
        debug_assert!(consistent, "a locked head is never torn");
        row.clear();
        row.extend_from_slice(&kept_row);
        let mut successor = newest;
        // The link of the last version kept, and whether versions were dropped below it.
        let (mut link, mut gap) = (&self.older, false);
        let mut remaining = 0u32;
        // As in `prune`.
        let (mut last_kept, mut oldest_successor) = (newest, newest);
        let mut version = self.older.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked (a dropped one until the
            // caller unpins); we hold the lock.
            let current = unsafe { &*version };
            let (word, next) = (current.word(), current.link.load(Ordering::Relaxed));
            if word.is_absent() {
                row.clear();
            } else {
                delta::apply(current.data(), &mut row);
            }
            if !retention.needed(word.tid(), successor) {
                if dropped.rows_wanted {
                    dropped.push_rebuilt(version, &row);
                } else {
                    dropped.push(version);
                }
                Version::retire(version, garbage);
                gap = true;
                successor = word.tid();
                version = next;
                continue;
            }
            remaining += 1;
            (oldest_successor, last_kept) = (last_kept, word.tid());
            // Visible to every reader: nothing older is readable, and the chain ends here.
            let last = retention.visible_to_all(word.tid());
            let kept = if gap {
                let again = Version::alloc_delta(arena, word, &kept_row, &row);
                // SAFETY: ours until published by the store below.
                unsafe {
                    let again = &*again;
                    again
                        .link
                        .store(if last { std::ptr::null_mut() } else { next }, Ordering::Relaxed);
                    again
                        .creator_pi
                        .store(current.creator_pi.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                // Release pairs with the Acquire loads of chain walkers.
                link.store(again, Ordering::Release);
                Version::retire(version, garbage);
                again
            } else {
                if last {
                    current.link.store(std::ptr::null_mut(), Ordering::Release);
                }
                version
            };
            // SAFETY: linked, and we hold the lock.
            link = unsafe { &(*kept).link };
            gap = false;
            kept_row.clear();
            kept_row.extend_from_slice(&row);
            successor = word.tid();
            version = next;
            if last {
                // The tail: every version below goes.
                while !version.is_null() {
                    // SAFETY: as above.
                    let current = unsafe { &*version };
                    if current.word().is_absent() {
                        row.clear();
                    } else if dropped.rows_wanted {
                        delta::apply(current.data(), &mut row);
                    }
                    if dropped.rows_wanted {
                        dropped.push_rebuilt(version, &row);
                    } else {
                        dropped.push(version);
                    }
                    let next = current.link.load(Ordering::Relaxed);
                    Version::retire(version, garbage);
                    version = next;
                }
                break;
            }
        }
        if gap {
            // The chain ended in dropped versions.
            link.store(std::ptr::null_mut(), Ordering::Release);
        }
        dropped.replaced = kept_row;
        dropped.rebuilt = row;
        self.pruned_to(remaining, oldest_successor, retention);
    }

    /// [`Head::prune_deltas`] without rebuilding any row, when that is enough: if every
    /// version to drop lies below the last one kept (the chain's tail), cuts the chain there
    /// and returns true; otherwise changes nothing and returns false. A walk over the words
    /// alone. Locked head.
    fn prune_delta_tail(
        &self,
        newest: Tid,
        retention: Retention,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> bool {
        let mut successor = newest;
        let (mut cut, mut gap, mut remaining) = (&self.older, false, 0u32);
        // The successor of the last version kept (no version above it is dropped).
        let mut oldest_successor = newest;
        let mut version = self.older.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked; we hold the lock.
            let current = unsafe { &*version };
            let tid = current.word().tid();
            if retention.needed(tid, successor) {
                if gap {
                    // A kept version below a dropped one must be made anew.
                    return false;
                }
                remaining += 1;
                oldest_successor = successor;
                cut = &current.link;
                if retention.visible_to_all(tid) {
                    break;
                }
            } else {
                gap = true;
            }
            successor = tid;
            version = current.link.load(Ordering::Relaxed);
        }
        Self::drop_tail(cut, garbage, dropped);
        self.pruned_to(remaining, oldest_successor, retention);
        true
    }

    /// Ends a chain at `cut`, a link of a locked head's chain: retires every version below it
    /// and adds them to `dropped`.
    fn drop_tail(cut: &AtomicPtr<Version>, garbage: &mut Garbage, dropped: &mut Dropped) {
        let tail = cut.load(Ordering::Relaxed);
        if tail.is_null() {
            return;
        }
        // Release pairs with the Acquire loads of chain walkers; a reader already in the tail
        // still walks it, its links unchanged.
        cut.store(std::ptr::null_mut(), Ordering::Release);
        let mut version = tail;
        while !version.is_null() {
            dropped.push(version);
            // SAFETY: unlinked above, still allocated until the caller unpins.
            version = unsafe { (*version).link.load(Ordering::Relaxed) };
        }
        Version::retire_chain(tail, garbage);
    }

    /// Records on a locked head's newest version what `Head::prune_due` needs after a prune
    /// under `retention` that left `remaining` versions, the oldest superseded at
    /// `oldest_successor`.
    fn pruned_to(&self, remaining: u32, oldest_successor: Tid, retention: Retention) {
        let newest_version = self.older.load(Ordering::Relaxed);
        if !newest_version.is_null() {
            let depth = if retention.multiversion() {
                let remaining = remaining.min(0xffff);
                remaining | (remaining << 16)
            } else {
                prunable_from(oldest_successor, retention)
            };
            // SAFETY: linked, and we hold the lock.
            unsafe { (*newest_version).depth.store(depth, Ordering::Relaxed) };
        }
    }

    /// Whether the record has versions other than its current row (racy: a hint for the
    /// vacuum). Pinned.
    #[inline]
    pub fn has_older(&self) -> bool {
        let first = self.older.load(Ordering::Acquire);
        if first.is_null() || !self.oldest_first() || self.word().is_absent() {
            return !first.is_null();
        }
        // Oldest first with a row: more than the row's own version. SAFETY: the caller is
        // pinned, so a version reached through the chain stays allocated.
        !unsafe { (*first).link.load(Ordering::Relaxed) }.is_null()
    }

    /// The pruning of the vacuum and of cooperative cleaning (`gc::vacuum`,
    /// `gc::cooperative`) of a head the caller has locked: drops the chain versions no reader
    /// at or above `retention` can read, retiring them and appending them to `dropped`.
    /// Returns how many it dropped.
    pub(crate) fn vacuum_locked(
        &self,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> usize {
        debug_assert!(self.word().is_locked());
        let before = dropped.len();
        let word = self.word();
        if self.oldest_first() {
            self.prune_oldest_first(word.tid(), !word.is_absent(), retention, garbage, dropped);
        } else {
            self.prune(word.tid(), retention, arena, garbage, dropped);
        }
        dropped.len() - before
    }

    /// Number of older versions (tests and statistics; racy but memory-safe while pinned).
    pub fn chain_len(&self) -> usize {
        let mut count = 0;
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            count += 1;
            // SAFETY: chain versions reached while pinned stay allocated until we unpin.
            version = unsafe { (*version).link.load(Ordering::Acquire) };
        }
        // Under `append-o2n` the last version is the row's own when a row is present.
        if self.oldest_first() && !self.word().is_absent() && count > 0 {
            count -= 1;
        }
        count
    }

    /// Retires a head unlinked from every index, with its versions.
    ///
    /// # Safety
    /// `head` points to a live head that the caller has unlinked from every
    /// index and that nobody else retires.
    pub unsafe fn retire(head: *mut Head, garbage: &mut Garbage) {
        // SAFETY: guaranteed by the caller.
        let this = unsafe { &*head };
        let older = this.older.swap(std::ptr::null_mut(), Ordering::Relaxed);
        Version::retire_chain(older, garbage);
        let overflow = this.overflow.swap(std::ptr::null_mut(), Ordering::Relaxed);
        if !overflow.is_null() {
            Version::retire(overflow, garbage);
        }
        garbage.retire(Retired::Head(head, this.block_bytes()));
    }

    /// Frees a head and its versions at once.
    ///
    /// # Safety
    /// No other thread can reach the head (its table is being dropped).
    pub unsafe fn free_now(head: *mut Head, arena: &mut Arena) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let this = &*head;
            Version::free_chain(this.older.load(Ordering::Relaxed), arena);
            let overflow = this.overflow.load(Ordering::Relaxed);
            if !overflow.is_null() {
                Version::free_chain(overflow, arena);
            }
            let bytes = this.block_bytes();
            arena.free(head as *mut u8, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retention(low: u64, interval: u64) -> Retention {
        Retention {
            low: Epoch(low),
            low_unheld: Epoch(low),
            interval,
            readers_low: Tid::MAX,
            prune: true,
        }
    }

    fn tid(epoch: u64) -> Tid {
        Tid::new(Epoch(epoch), 1)
    }

    #[test]
    fn commit_tids_grow_within_and_across_epochs() {
        let first = Tid::commit_after(Tid::ZERO, Epoch(5)).unwrap();
        assert_eq!((first.epoch(), first.sequence()), (Epoch(5), 1));
        let second = Tid::commit_after(first, Epoch(5)).unwrap();
        assert!(second > first && second.epoch() == Epoch(5));
        let next_epoch = Tid::commit_after(second, Epoch(6)).unwrap();
        assert!(next_epoch > second);
        assert_eq!(Tid::commit_after(Tid::new(Epoch(7), SEQUENCE_MAX), Epoch(7)), None);
        let word = TidWord::new(second, TidWord::LATEST | TidWord::ABSENT);
        assert_eq!(word.tid(), second);
        assert!(word.is_latest() && word.is_absent() && !word.is_locked() && !word.is_claimed());
    }

    #[test]
    fn versions_are_kept_only_across_snapshot_boundaries() {
        // interval 1: every epoch is a snapshot boundary.
        assert!(retention(0, 1).needed(tid(3), tid(4)));
        assert!(!retention(0, 1).needed(tid(4), tid(4)));
        assert!(!retention(5, 1).needed(tid(3), tid(5)), "superseded before the low mark");
        assert!(retention(5, 1).needed(tid(3), tid(6)));
        // interval 10: boundaries at 10, 20, ...
        assert!(!retention(0, 10).needed(tid(11), tid(19)));
        assert!(retention(0, 10).needed(tid(11), tid(21)));
        assert!(retention(0, 10).needed(tid(10), tid(11)));
        assert!(!retention(0, 10).needed(Tid::ZERO, tid(11)));
    }

    fn alloc(arena: &mut Arena, storage: VersionStorage) -> *mut Head {
        Head::alloc_with(
            arena,
            8,
            TidWord::FRESH,
            HeadShape { words: HeadWords::None, storage, shared_values: false },
        )
    }

    #[test]
    fn snapshot_reads_walk_back_and_pruning_keeps_what_they_need() {
        for storage in VersionStorage::ALL {
            snapshot_reads_walk_back_and_pruning_keeps_what_they_need_in(storage);
        }
    }

    fn snapshot_reads_walk_back_and_pruning_keeps_what_they_need_in(storage: VersionStorage) {
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, storage);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let keep_all = retention(0, 1);
        let write = |value: Option<&[u8]>,
                     epoch: u64,
                     arena: &mut Arena,
                     garbage: &mut Garbage,
                     keep| {
            head.lock().unwrap();
            let flags =
                if value.is_some() { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
            let word = TidWord::new(Tid::new(Epoch(epoch), 1), flags);
            head.install(value, word, keep, arena, garbage, &mut Dropped::default());
            head.unlock_to(word);
        };
        write(Some(b"one"), 2, &mut arena, &mut garbage, keep_all);
        write(Some(b"two, longer than eight bytes"), 4, &mut arena, &mut garbage, keep_all);
        write(None, 6, &mut arena, &mut garbage, keep_all);
        write(Some(b"three"), 8, &mut arena, &mut garbage, keep_all);
        let mut out = Vec::new();
        let at = |epoch, out: &mut Vec<u8>| {
            head.read_at(Epoch(epoch), out).unwrap().then(|| out.clone())
        };
        assert_eq!(at(1, &mut out), None);
        assert_eq!(at(2, &mut out).as_deref(), Some(&b"one"[..]));
        assert_eq!(at(5, &mut out).as_deref(), Some(&b"two, longer than eight bytes"[..]));
        assert_eq!(at(7, &mut out), None, "deleted at 6");
        assert_eq!(at(9, &mut out).as_deref(), Some(&b"three"[..]));
        assert_eq!(head.read(&mut out).unwrap().epoch(), Epoch(8));
        assert_eq!(out, b"three");
        assert_eq!(head.chain_len(), 3);
        // Snapshots at 7 and later only: versions below are pruned on the next write.
        write(Some(b"four"), 10, &mut arena, &mut garbage, retention(7, 1));
        assert_eq!(at(7, &mut out), None);
        assert_eq!(at(9, &mut out).as_deref(), Some(&b"three"[..]));
        assert_eq!(head.chain_len(), 2, "the delete (visible at 7) and 'three' remain");
        assert!(garbage.len() >= 2);
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    /// Installs `row` at `tid` on an unpublished head, as a commit would; whether the replaced
    /// state was kept.
    fn install_row(
        head: &Head,
        tid: Tid,
        row: &[u8],
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
    ) -> bool {
        head.lock().unwrap();
        let word = TidWord::new(tid, TidWord::LATEST);
        let kept =
            head.install(Some(row), word, retention, arena, garbage, &mut Dropped::default());
        head.unlock_to(word);
        kept
    }

    /// A checkpoint holding an old snapshot epoch (`low` below `low_unheld`) keeps the state
    /// it reads and the newest boundary's, and none of the boundaries in between, under every
    /// version storage: a row updated in every epoch of a long checkpoint keeps a short chain,
    /// where the mark alone (`low` for both) keeps a version per epoch.
    #[test]
    fn a_held_epoch_keeps_its_state_and_not_the_boundaries_after_it() {
        for storage in VersionStorage::ALL {
            assert!(held_epoch_chain_len(storage, true) <= 3, "{storage}");
            assert!(held_epoch_chain_len(storage, false) >= 30, "{storage}");
        }
    }

    /// Writes epochs 2 and 4 to 40 of a row while epoch 3 is held and snapshots read at the
    /// newest boundary; checks both readers' states after every write and returns the final
    /// chain length. `unheld`: whether the retention tells the held epoch apart.
    fn held_epoch_chain_len(storage: VersionStorage, unheld: bool) -> usize {
        const HELD: u64 = 3;
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, storage);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let value = |epoch: u64| format!("the row as of epoch {epoch}").into_bytes();
        let mut out = Vec::new();
        for epoch in std::iter::once(2).chain(4..=40) {
            // Snapshots start at the newest boundary below this epoch.
            let newest = epoch - 1;
            let retention = Retention {
                low_unheld: Epoch(if unheld { newest.max(HELD) } else { HELD }),
                ..retention(HELD.min(newest), 1)
            };
            let tid = Tid::new(Epoch(epoch), 1);
            install_row(head, tid, &value(epoch), retention, &mut arena, &mut garbage);
            if epoch > HELD {
                assert!(head.read_at(Epoch(HELD), &mut out).unwrap(), "{storage}: epoch {epoch}");
                assert_eq!(out, value(2), "{storage}: the held epoch, after epoch {epoch}");
            }
            assert!(head.read_at(Epoch(newest), &mut out).unwrap() || newest < 2);
            if newest >= 2 {
                let expected = if newest == HELD { 2 } else { newest };
                assert_eq!(out, value(expected), "{storage}: the newest boundary, after {epoch}");
            }
        }
        let len = head.chain_len();
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
        len
    }

    /// Under `delta` storage every kept state is rebuilt from the master version and the
    /// deltas above it: after installs that keep nothing (the chain's first delta is made again
    /// against the new master), across deletes and re-inserts, and after pruning drops versions
    /// from the top, the middle or the tail of the chain (whose rows it rebuilds for the
    /// secondary entries).
    #[test]
    fn delta_chains_rebuild_every_kept_state_whatever_is_pruned() {
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        // Inline room for 8 bytes: the longer rows below are overflow versions.
        let head_ptr = alloc(&mut arena, VersionStorage::Delta);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let row = |fill: u8, len: usize| {
            let mut row: Vec<u8> = (0..len).map(|byte| byte as u8).collect();
            row[len / 2] = fill;
            row
        };
        let (a, b, c, e, f) = (row(1, 100), row(2, 100), row(3, 60), row(5, 3000), row(6, 8));
        let snapshots = retention(0, 10);
        let write = |value: Option<&[u8]>, epoch: u64, arena: &mut Arena, garbage: &mut Garbage| {
            head.lock().unwrap();
            let flags =
                if value.is_some() { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
            let word = TidWord::new(Tid::new(Epoch(epoch), 1), flags);
            let kept =
                head.install(value, word, snapshots, arena, garbage, &mut Dropped::default());
            head.unlock_to(word);
            kept
        };
        let mut out = Vec::new();
        let at = |epoch, out: &mut Vec<u8>| {
            head.read_at(Epoch(epoch), out).unwrap().then(|| out.clone())
        };
        // Snapshot boundaries at 10, 20, 30 and 40.
        assert!(!write(Some(&a), 5, &mut arena, &mut garbage));
        assert!(write(Some(&b), 15, &mut arena, &mut garbage), "a is visible at 10");
        assert!(!write(Some(&c), 16, &mut arena, &mut garbage), "b is visible at no boundary");
        assert_eq!(at(10, &mut out), Some(a.clone()), "a's delta was made again against c");
        assert!(write(Some(&b), 25, &mut arena, &mut garbage));
        assert!(!write(Some(&e), 26, &mut arena, &mut garbage));
        assert!(write(None, 35, &mut arena, &mut garbage), "e is visible at 30");
        assert!(write(Some(&f), 45, &mut arena, &mut garbage), "the delete is visible at 40");
        let expected = [(10, Some(&a)), (20, Some(&c)), (30, Some(&e)), (40, None), (50, Some(&f))];
        for (epoch, row) in expected {
            assert_eq!(at(epoch, &mut out).as_ref(), row, "as of {epoch}");
        }
        assert_eq!(head.chain_len(), 4);
        let mut states = Vec::new();
        head.for_each_older(&mut out, |word, row| states.push((word.epoch().0, row.to_vec())));
        assert_eq!(states, [(35, vec![]), (26, e.clone()), (16, c.clone()), (5, a.clone())]);
        // Snapshots at 30 and later: a and c are no longer read, and as the tail they go.
        let gone = vacuum_rows(head, retention(25, 10), &mut arena, &mut garbage);
        assert_eq!(gone, [(16, c.clone()), (5, a.clone())]);
        assert_eq!(head.chain_len(), 2);
        assert_eq!(at(30, &mut out), Some(e.clone()));
        assert_eq!(at(40, &mut out), None);
        // Versions at epochs 1 to 5 under a master at 6, every one kept; then snapshots only at
        // even epochs: 5, 3 and 1 go, and 4 and 2 are made anew against the versions above.
        let second_ptr = alloc(&mut arena, VersionStorage::Delta);
        // SAFETY: owned by the test.
        let second = unsafe { &*second_ptr };
        let rows: Vec<Vec<u8>> = (0..=6).map(|epoch| row(epoch as u8, 40 + 8 * epoch)).collect();
        for epoch in 1..=6u64 {
            second.lock().unwrap();
            let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
            let value = Some(&rows[epoch as usize][..]);
            let dropped = &mut Dropped::default();
            second.install(value, word, retention(0, 1), &mut arena, &mut garbage, dropped);
            second.unlock_to(word);
        }
        assert_eq!(second.chain_len(), 5);
        let gone = vacuum_rows(second, retention(0, 2), &mut arena, &mut garbage);
        assert_eq!(gone, [(5, rows[5].clone()), (3, rows[3].clone()), (1, rows[1].clone())]);
        assert_eq!(second.chain_len(), 2);
        for epoch in [2, 4, 6] {
            assert_eq!(second.read_at(Epoch(epoch), &mut out), Ok(true));
            assert_eq!(out, rows[epoch as usize], "as of {epoch}");
        }
        // SAFETY: the heads were never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            Head::retire(second_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    /// Prunes `head` as the vacuum does; returns the epochs and rows of the states it dropped.
    fn vacuum_rows(
        head: &Head,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
    ) -> Vec<(u64, Vec<u8>)> {
        let mut dropped = Dropped::default();
        dropped.reset(true);
        head.lock().unwrap();
        let count = head.vacuum_locked(retention, arena, garbage, &mut dropped);
        head.unlock_to(head.word().without(TidWord::LOCK));
        let gone: Vec<_> =
            dropped.states().map(|(word, row)| (word.epoch().0, row.to_vec())).collect();
        assert_eq!(gone.len(), count);
        gone
    }

    /// Readers racing a writer under `delta` storage (the writer keeping, making again and
    /// pruning deltas from the chain's middle and tail, rows moving between inline and
    /// overflow) always rebuild the whole state
    /// at their snapshot: a master version and a first delta that do not belong together
    /// would show as a row that is not the one its TID wrote.
    #[test]
    fn delta_reads_racing_installs_rebuild_whole_states() {
        const WRITES: u64 = 4_000;
        const PER_EPOCH: u64 = 4;
        // Snapshot boundaries every 3 epochs from `LOW` on; the state at each is kept.
        const LOW: u64 = 60;
        let tid_of = |write: u64| Tid::new(Epoch(write / PER_EPOCH + 1), write % PER_EPOCH + 1);
        // Rows of 16 to 136 bytes (inline up to 64): the first word is the TID, one other word
        // changes, the rest stay.
        let row_of = |tid: Tid| {
            let words = 2 + (tid.as_u64() % 16) as usize;
            let mut row: Vec<u8> = (0..words * 8).map(|byte| byte as u8).collect();
            row[..8].copy_from_slice(&tid.as_u64().to_le_bytes());
            let changed = 1 + (tid.as_u64() as usize % (words - 1));
            row[changed * 8..changed * 8 + 8].copy_from_slice(&(!tid.as_u64()).to_le_bytes());
            row
        };
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = Head::alloc_with(
            &mut arena,
            64,
            TidWord::FRESH,
            HeadShape {
                words: HeadWords::None,
                storage: VersionStorage::Delta,
                shared_values: false,
            },
        );
        // SAFETY: owned by the test; nothing retired is freed before the threads end.
        let head = unsafe { &*head_ptr };
        let done = std::sync::atomic::AtomicBool::new(false);
        // Installs keep every epoch's last state from `LOW` on; every 16th write a vacuum pass
        // keeps only the readers' (every third epoch's), dropping versions in the middle.
        let installs = retention(LOW, 1);
        let readers = Retention { interval: 3, ..installs };
        std::thread::scope(|scope| {
            for reader in 0..2u64 {
                let done = &done;
                scope.spawn(move || {
                    let mut out = Vec::new();
                    let mut boundary = LOW.div_ceil(3) * 3 + 3 * reader;
                    let mut checked = 0;
                    while !done.load(Ordering::Acquire) || checked < 2_000 {
                        let bound = Tid::last_of(Epoch(boundary));
                        // A writer descheduled while it holds the lock makes a reader give
                        // up (bounded waits); it tries again.
                        let Ok(seen) = head.read_as_of(bound, &mut out) else { continue };
                        if seen.present {
                            assert_eq!(out, row_of(seen.tid), "the row its TID wrote");
                        }
                        if seen.current.tid() > bound {
                            let last = Tid::new(Epoch(boundary), PER_EPOCH);
                            assert_eq!(seen.tid, last, "the state at the boundary");
                            assert!(seen.present);
                        }
                        checked += 1;
                        boundary += 3;
                        if boundary > WRITES / PER_EPOCH {
                            boundary = LOW.div_ceil(3) * 3;
                        }
                    }
                });
            }
            let mut dropped = Dropped::default();
            for write in 0..WRITES {
                let tid = tid_of(write);
                head.lock().unwrap();
                let word = TidWord::new(tid, TidWord::LATEST);
                let rows_wanted = write % 2 == 0;
                dropped.reset(rows_wanted);
                head.install(
                    Some(&row_of(tid)),
                    word,
                    installs,
                    &mut arena,
                    &mut garbage,
                    &mut dropped,
                );
                if write % 16 == 15 {
                    head.vacuum_locked(readers, &mut arena, &mut garbage, &mut dropped);
                }
                if rows_wanted {
                    for (word, row) in dropped.states() {
                        assert_eq!(row, row_of(word.tid()), "a dropped state's rebuilt row");
                    }
                }
                head.unlock_to(word);
            }
            done.store(true, Ordering::Release);
        });
        // SAFETY: the threads are gone; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    /// Cooperative cleaning's cue sees an expired version behind one a snapshot still needs.
    #[test]
    fn an_expired_version_behind_a_needed_one_is_seen() {
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, VersionStorage::AppendO2n);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let keep_all = retention(0, 1);
        for epoch in [9, 11, 12, 14] {
            head.lock().unwrap();
            let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
            head.install(
                Some(b"row"),
                word,
                keep_all,
                &mut arena,
                &mut garbage,
                &mut Dropped::default(),
            );
            head.unlock_to(word);
        }
        assert_eq!(head.chain_len(), 3);
        // Snapshots at 10, 20, ...: 9 is visible at 10 and needed; 11 and 12 are not.
        assert!(retention(0, 10).needed(tid(9), tid(11)));
        assert!(head.has_expired(retention(0, 10)));
        assert!(!head.has_expired(keep_all), "every version is visible at some boundary");
        head.lock().unwrap();
        assert_eq!(
            head.vacuum_locked(retention(0, 10), &mut arena, &mut garbage, &mut Dropped::default()),
            2
        );
        head.unlock_to(head.word().without(TidWord::LOCK));
        assert!(!head.has_expired(retention(0, 10)));
        assert!(!alloc_time_travel_has_expired(&mut arena));
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    /// Newest-first chains never give the cue.
    fn alloc_time_travel_has_expired(arena: &mut Arena) -> bool {
        let head_ptr = alloc(arena, VersionStorage::TimeTravel);
        // SAFETY: owned by the test.
        let expired = unsafe { &*head_ptr }.has_expired(retention(0, 10));
        // SAFETY: never published, no versions.
        unsafe { Head::free_now(head_ptr, arena) };
        expired
    }

    #[test]
    fn the_chain_is_pruned_whenever_it_grows() {
        for storage in VersionStorage::ALL {
            the_chain_is_pruned_whenever_it_grows_in(storage);
        }
    }

    fn the_chain_is_pruned_whenever_it_grows_in(storage: VersionStorage) {
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, storage);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let write =
            |value: &[u8], epoch: u64, low: u64, arena: &mut Arena, garbage: &mut Garbage| {
                head.lock().unwrap();
                let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
                let kept = head.install(
                    Some(value),
                    word,
                    retention(low, 10),
                    arena,
                    garbage,
                    &mut Dropped::default(),
                );
                head.unlock_to(word);
                kept
            };
        let mut out = Vec::new();
        // Snapshot boundaries at 10, 20, 30.
        assert!(!write(b"a", 11, 0, &mut arena, &mut garbage));
        assert!(write(b"b", 21, 0, &mut arena, &mut garbage), "'a' is visible at 20");
        assert_eq!(head.chain_len(), 1);
        // Snapshots from 25 on only: 'a' is no longer needed, and 'b' (superseded at 23) never
        // was. The chain did not grow, so it is left as it is.
        assert!(!write(b"c", 23, 25, &mut arena, &mut garbage));
        assert_eq!(head.chain_len(), 1);
        // 'c' is visible at 30 and kept; the install that grows the chain drops 'a'.
        assert!(write(b"d", 31, 25, &mut arena, &mut garbage));
        assert_eq!(head.chain_len(), 1);
        assert!(head.read_at(Epoch(30), &mut out).unwrap());
        assert_eq!(out, b"c");
        assert!(head.read_at(Epoch(31), &mut out).unwrap());
        assert_eq!(out, b"d");
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    /// Whether a prune of `head`'s newest-first chain under `retention` would drop anything
    /// (the walk of `Head::prune`, dropping nothing).
    fn prune_would_drop(head: &Head, retention: Retention) -> bool {
        let mut successor = head.word().tid();
        let mut version = head.older.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: the test owns the head; nothing is retired while it looks.
            let current = unsafe { &*version };
            let (tid, next) = (current.word().tid(), current.link.load(Ordering::Relaxed));
            if !retention.needed(tid, successor)
                || (retention.visible_to_all(tid) && !next.is_null())
            {
                return true;
            }
            successor = tid;
            version = next;
        }
        false
    }

    /// While the snapshot low-water mark stays put (a checkpoint holding its epoch), the
    /// chain grows by a version per snapshot interval and installs do not walk it; once the
    /// mark passes the last boundary before the oldest version's successor, the next install
    /// that keeps a version prunes.
    #[test]
    fn a_held_low_water_mark_stops_the_walks() {
        for storage in
            [VersionStorage::TimeTravel, VersionStorage::AppendN2o, VersionStorage::Delta]
        {
            a_held_low_water_mark_stops_the_walks_in(storage);
        }
    }

    fn a_held_low_water_mark_stops_the_walks_in(storage: VersionStorage) {
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, storage);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let write = |epoch: u64, low: u64, arena: &mut Arena, garbage: &mut Garbage| {
            head.lock().unwrap();
            let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
            let retention = retention(low, 5);
            let due = !head.older.load(Ordering::Relaxed).is_null() && {
                // What the install would decide if it kept a version now.
                head.prune_due(retention)
            };
            let value = epoch.to_le_bytes();
            head.install(Some(&value), word, retention, arena, garbage, &mut Dropped::default());
            head.unlock_to(word);
            due
        };
        // Boundaries every 5 epochs; the mark is held at 10 while the record is written at
        // 11, 16, 21, ...: each write keeps the state before it.
        write(11, 10, &mut arena, &mut garbage);
        for (written, epoch) in (16..=51).step_by(5).enumerate() {
            let due = write(epoch, 10, &mut arena, &mut garbage);
            assert!(!due, "a held mark drops nothing, so nothing is walked (epoch {epoch})");
            assert_eq!(head.chain_len(), written + 1);
        }
        let mut out = Vec::new();
        for boundary in (15..=50).step_by(5) {
            assert!(head.read_at(Epoch(boundary), &mut out).unwrap());
            assert_eq!(out, (boundary - 4).to_le_bytes(), "the state at boundary {boundary}");
        }
        // The oldest version (11) was superseded at 16: once the mark passes 15 a prune can
        // drop it. The mark moves to 40: the install prunes everything below 36.
        assert!(write(56, 40, &mut arena, &mut garbage));
        assert_eq!(head.chain_len(), 4, "36 (visible at 40), 41, 46 and 51 are left");
        assert!(head.read_at(Epoch(40), &mut out).unwrap());
        assert_eq!(out, 36u64.to_le_bytes());
        // The bound follows the new oldest version (superseded at 41): not due at 40.
        assert!(!write(61, 40, &mut arena, &mut garbage));
        assert!(write(66, 41, &mut arena, &mut garbage));
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    /// Random writes under a snapshot low-water mark that is sometimes held and sometimes
    /// moves: after every install that keeps a version, a full prune under the same bounds
    /// would drop nothing (the installs that skipped the walk were right to), and every
    /// snapshot boundary at or above the mark reads the state the model says.
    #[test]
    fn skipped_prunes_never_leave_garbage_a_prune_would_drop() {
        for storage in
            [VersionStorage::TimeTravel, VersionStorage::AppendN2o, VersionStorage::Delta]
        {
            for seed in 0..24u64 {
                skipped_prunes_never_leave_garbage_in(storage, seed, 1 + seed % 6);
            }
        }
    }

    fn skipped_prunes_never_leave_garbage_in(storage: VersionStorage, seed: u64, interval: u64) {
        use rand::{RngExt, SeedableRng, rngs::SmallRng};
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, storage);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        // The model: every write, (TID, row).
        let mut history: Vec<(Tid, Vec<u8>)> = Vec::new();
        let (mut epoch, mut low, mut sequence) = (1u64, 0u64, 0u64);
        let mut out = Vec::new();
        for write in 0..600u32 {
            let step = rng.random_range(0..4u64);
            if step > 0 {
                (epoch, sequence) = (epoch + step, 0);
            }
            sequence += 1;
            // The mark is held for a while (a checkpoint) or moves up to a boundary the
            // epoch has passed.
            if rng.random_bool(0.1) {
                low = low.max(epoch.saturating_sub(rng.random_range(0..3 * interval)));
            }
            let tid = Tid::new(Epoch(epoch), sequence);
            let row = format!("{write} written at {epoch}").into_bytes();
            let retention = retention(low, interval);
            let kept = install_row(head, tid, &row, retention, &mut arena, &mut garbage);
            history.push((tid, row));
            if kept {
                assert!(!prune_would_drop(head, retention), "seed {seed}, write {write}");
            }
            let first = low.div_ceil(interval) * interval;
            for boundary in (first..epoch).step_by(interval as usize) {
                let bound = Tid::last_of(Epoch(boundary));
                let Some((_, expected)) = history.iter().rev().find(|(tid, _)| *tid <= bound)
                else {
                    continue;
                };
                assert!(head.read_at(Epoch(boundary), &mut out).unwrap());
                assert_eq!(&out, expected, "seed {seed}, boundary {boundary}");
            }
        }
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }

    #[test]
    fn timestamp_reads_find_their_version_and_long_chains_are_pruned_in_batches() {
        for storage in VersionStorage::ALL {
            timestamp_reads_find_their_version_in(storage);
        }
    }

    /// Newest-first chains are pruned when they have doubled; oldest-first ones, whose
    /// installs walk the chain anyway, at every install that keeps a version.
    fn timestamp_reads_find_their_version_in(storage: VersionStorage) {
        let mut arena = Arena::new();
        let mut garbage = Garbage::new();
        let head_ptr = alloc(&mut arena, storage);
        // SAFETY: owned by the test.
        let head = unsafe { &*head_ptr };
        let at = |sequence: u64| Tid::new(Epoch(3), sequence);
        // Returns whether the install dropped versions (pruned).
        let mut write = |sequence: u64, readers_low: Tid, garbage: &mut Garbage| {
            head.lock().unwrap();
            let word = TidWord::new(at(sequence), TidWord::LATEST);
            let retention = Retention { readers_low, ..Retention::NOTHING };
            let mut dropped = Dropped::default();
            head.install(
                Some(&sequence.to_le_bytes()),
                word,
                retention,
                &mut arena,
                garbage,
                &mut dropped,
            );
            head.unlock_to(word);
            !dropped.is_empty()
        };
        // A reader at sequence 1 holds every later version: the chain grows with each update.
        for sequence in 1..=40 {
            write(sequence, at(1), &mut garbage);
        }
        assert_eq!(head.chain_len(), 39);
        let mut out = Vec::new();
        for sequence in [1, 17, 39] {
            let seen = head.read_as_of(at(sequence), &mut out).unwrap();
            assert!(seen.present && seen.current.tid() == at(40));
            assert_eq!(out, sequence.to_le_bytes());
        }
        assert!(!head.read_as_of(Tid::new(Epoch(2), 1), &mut out).unwrap().present);
        // Readers now trail the writer by five versions, so each update makes one more version
        // garbage. The chain is pruned only when it has doubled since its last prune (which
        // left 35 versions): it never exceeds twice that, it is walked every few updates
        // rather than at each one, and once pruned it stays near the five readers need.
        let mut walks = 0;
        for sequence in 41..=120 {
            walks += usize::from(write(sequence, at(sequence - 5), &mut garbage));
            assert!(head.chain_len() <= 2 * 35 + PRUNE_SLACK as usize + 1, "{}", head.chain_len());
            if storage.oldest_first() {
                assert!(head.chain_len() <= 5, "{storage}: {}", head.chain_len());
            }
        }
        if !storage.oldest_first() {
            assert!(walks <= 10, "pruned {walks} times in 80 updates");
        }
        assert!(head.chain_len() <= 2 * 5 + PRUNE_SLACK as usize + 1, "{}", head.chain_len());
        let seen = head.read_as_of(at(115), &mut out).unwrap();
        assert!(seen.present);
        assert_eq!(out, 115u64.to_le_bytes());
        // SAFETY: the head was never published; nothing else can reach what is retired.
        unsafe {
            Head::retire(head_ptr, &mut garbage);
            garbage.free_all(&mut arena);
        }
    }
}
