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
//! This file holds the layouts (the head, its flags, version storage, the protocols' words)
//! and the head's allocation, locking and retirement; [`read`] is the read protocol, [`install`]
//! installs new states and prunes chains, and [`version`] holds the chain's blocks. The TID
//! word itself is `sync::tid`'s.
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

use super::delta;
use crate::mem::arena::Arena;
use crate::sync::lockword::{TimestampWords, TwoPhaseWord};
pub use crate::sync::tid::{Retention, Tid, TidWord};
use crate::sync::{Backoff, Epoch, Garbage, Retired, shim};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

mod install;
mod read;
mod version;

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
        TidWord::from_raw(self.word.load(Ordering::Acquire))
    }

    /// The record's word once no commit holds it (waiting, bounded), without reading its value.
    #[inline]
    pub fn stable_word(&self) -> Result<TidWord, Busy> {
        let mut backoff = Backoff::new(RECORD_WAIT_STEPS_MAX);
        loop {
            let word = TidWord::from_raw(self.word.load(Ordering::Acquire));
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
        Ok(TidWord::from_raw(word))
    }

    /// Releases the lock, leaving `word` (unlocked) as the record's word.
    #[inline]
    pub fn unlock_to(&self, word: TidWord) {
        debug_assert!(TidWord::from_raw(self.word.load(Ordering::Relaxed)).is_locked());
        // Release pairs with the Acquire loads of readers.
        self.word.store(word.without(TidWord::LOCK).raw(), Ordering::Release);
    }

    /// Locks the record if its word is still `seen` (unlocked), without waiting: cooperative
    /// cleaning (`cc::cooperative`) gives way to anyone else.
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
        garbage.retire(Retired::new(head as *mut u8, this.block_bytes(), Head::free_retired));
    }

    /// Frees a retired head's block (`sync::reclaim::Free`); its versions were retired apart.
    ///
    /// # Safety
    /// Nothing can reach the head any more and it was retired once, by [`Head::retire`].
    unsafe fn free_retired(head: *mut u8, bytes: usize, arena: &mut Arena) {
        // Nobody can reach the head to lock it any more, and a protocol lock (`mvto`, `mv2pl`)
        // is never held on a record past its unlink but by a locker still in the call that
        // found it (`cc::secondary::abandon_fresh`, `commit::run_ready_tasks`): one held now
        // would be released into freed memory.
        // SAFETY: the head is intact until the arena hands its block out again.
        let intact = unsafe { &*(head as *mut Head) };
        debug_assert!(!intact.is_lock_held(), "a lock outlived its record");
        // SAFETY: guaranteed by the caller.
        unsafe { arena.free(head, bytes) }
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
mod tests;
