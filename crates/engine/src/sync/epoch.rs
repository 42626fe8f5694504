//! Epochs, after Silo (SOSP 2013, §4.1-4.4): one global epoch advanced by a ticker thread
//! (every 40 ms by default) and one slot per worker that says which epoch the worker is in.
//!
//! Epochs drive everything time-like in the engine:
//!
//! - **Commit TIDs** carry the global epoch read during commit (`cc`), so the serial order is
//!   epoch by epoch with no global counter on the commit path.
//! - **Reclamation.** A worker *pins* its slot at the epoch it saw when a transaction begins.
//!   Memory unlinked from a shared structure is tagged with the global epoch read after the
//!   unlink (and a fence); the ticker publishes `reclaim_bound`, the minimum over pinned slots
//!   and the global epoch, and garbage tagged below it can no longer be reached by anyone.
//! - **Stable and snapshot epochs.** A worker about to take its commit's serialization point
//!   publishes a lower bound of its commit epoch (`enter_commit`, before the fence it takes
//!   anyway) and clears it when its writes are installed. Every commit in an epoch below both
//!   the published bounds and the current global epoch is therefore fully installed: that is
//!   the *stable* epoch. Snapshot transactions read at the newest multiple of
//!   `snapshot_interval_epochs` not above it (Silo takes snapshots every k epochs so that
//!   superseded versions are kept only across those boundaries). A long transaction that is
//!   not committing holds nothing back here, except under MVTO, whose transactions commit at
//!   the timestamp they take when they begin and so announce their commit then; a kicked
//!   transaction's announcement no longer counts.
//! - **Snapshot low-water mark.** The oldest snapshot epoch any active or future snapshot
//!   transaction can read at; versions and deleted records older than it are garbage. Beside
//!   it the ticker publishes the same mark without the checkpoint's hold (`snapshot_low_unheld`):
//!   while a checkpoint holds an old epoch, only that epoch and the boundaries from the
//!   unheld mark on are read, and the versions of the boundaries in between are garbage too
//!   (`Retention`).
//! - **Statement snapshots (MVTO).** An MVTO transaction commits at the timestamp it takes when
//!   it begins (`cc/mvto.rs`), so a READ COMMITTED statement whose timestamp is later may meet
//!   its writes installed only after the statement began. Such a transaction publishes its
//!   timestamp in its slot from its begin until its writes are all locked for installing
//!   (`enter_ordered`, `leave_ordered`), and a statement takes, beside its timestamp, the
//!   published timestamps at or below it: the transactions it passes over, whose versions it
//!   reads the one before (`take_statement_snapshot`, PostgreSQL's snapshot of the transactions
//!   in progress).
//!
//! SLOT WORD (`Slot::state`)
//!
//! | bits  | meaning                                                                  |
//! |-------|--------------------------------------------------------------------------|
//! | 0     | ACTIVE: the worker holds a transaction pinned at `epoch`                 |
//! | 1     | IN_CALL: the worker is inside an engine call right now                   |
//! | 2     | KICKED: the ticker gave up on this idle transaction; it can only abort   |
//! | 3..64 | epoch the worker pinned                                                  |
//!
//! An interactive transaction that waits for its client between calls clears IN_CALL. If it
//! lags more than `idle_lag_epochs_max` behind the global epoch while out of a call, the ticker
//! sets KICKED with a compare-and-swap (which fails if the worker re-entered meanwhile) and stops
//! counting the slot: reclamation and snapshots move on, and the transaction's next call finds
//! KICKED and aborts without touching anything it read before (ARCHITECTURE.md, decision 5).
//!
//! ORDERING. Pinning is a sequentially consistent swap of the slot word, and tagging garbage and
//! scanning slots are preceded by sequentially consistent fences; all loads and stores of the
//! global epoch are sequentially consistent. Then for a worker W that can still reach an object
//! X retired with tag `t`: either the scan that computed the bound saw W's pin (and W's pinned
//! epoch is at most `t`, since W read the global epoch before the retirer did), or the scan ran
//! before the retire and the bound is at most the global epoch at scan time, which is at most
//! `t`. Either way the bound does not exceed `t` and X is not freed. The randomized-schedule
//! tests in `tests/shuttle_sync.rs` exercise exactly this.
//!
//! The snapshot low-water mark follows the same pattern the other way round: a snapshot
//! reader stores the published snapshot epoch in its slot and then checks it is still the
//! published one; the ticker stores a new published epoch and only then (after a fence) reads
//! the slots. If the reader's check saw the old epoch, it came before the ticker's store, so
//! its slot store comes before the ticker's loads and the mark counts it; if the check saw the
//! new epoch, the reader reads at that epoch, which the mark does not pass.
//! (`the_snapshot_low_water_mark_never_passes_a_registered_reader` in `tests/shuttle_sync.rs`.)
//!
//! The unheld mark leaves out the readers at the held epoch (a checkpoint's threads), which
//! the mark itself covers, since it is then the held epoch. Installs read the unheld mark
//! first and the mark after, and the ticker stores them the other way round, so an install
//! may pair an older unheld mark with a newer mark but never the reverse. An older unheld mark
//! is lower and keeps more; it was computed before a hold that appeared since, and the held
//! epoch, read after the ticker published it, is at or above it. When the hold goes, readers
//! at its epoch that are not the checkpoint's are covered by the newer mark. Either way every
//! reader keeps what it reads (`a_held_checkpoint_epoch_and_its_readers_keep_what_they_read`
//! in `tests/shuttle_sync.rs`).
//!
//! Statement snapshots. A transaction W that commits at its begin timestamp stores PENDING in
//! its slot's `ordered` word, takes its timestamp t from the clock (a sequentially consistent
//! compare-and-swap, which releases that store) and replaces PENDING with t. A statement R
//! reads the clock (S) and then every slot's `ordered` word. (1) If t <= S, R's clock load read
//! the value W's compare-and-swap wrote or a later one (every later write of the clock is
//! another compare-and-swap, in the same release sequence), so it acquired W's PENDING store
//! and reads PENDING, t, or something W stored later: R never misses a W with t <= S that has
//! not yet cleared the word. R does not wait on PENDING, since W may be descheduled there: it
//! raises the statement timestamp that the word carries beside PENDING to S (a compare-and-swap;
//! another statement may have raised it further), and W, which replaces PENDING by a
//! compare-and-swap too and so reads the newest such timestamp, publishes t only if t is above
//! it. Otherwise W takes another timestamp from the clock, which is above that statement
//! timestamp (W's failed compare-and-swap acquired the statement's, whose clock load came
//! first), and tries again. So a W that R finds on PENDING ends with t > S, and R need not
//! leave it out; each retry of either means that another statement or W went on.
//! (2) W clears the word (`leave_ordered`, sequentially consistent and so a
//! release) only after it has locked every record it writes (commit step 1), or when it ends;
//! a statement that reads the cleared word acquires those locks, so at each record it either
//! waits for W's install or sees it: it takes W whole. One that read t passes over every
//! version stamped t: none of W. (3) No other commit installs at or below S after R read the
//! clock, as the other protocols' invariant says (`cc/mv.rs`).
//!
//! (4) What R leaves out is what was still to install at one instant. The slots are read one
//! after another, and one pass is not enough: with W and U at t < u <= S, R reads W's slot
//! (t), W clears its word and installs, U reads W's write, clears its word and installs, and R
//! reads U's slot cleared. R would take U and leave out W, and so see W's transfer through U's
//! balances but not W's own. So R reads the slots in rounds: the
//! first reads every slot; each later one reads again only the slots of the transactions left
//! out so far, drops those whose word no longer shows their timestamp (or whose transaction
//! was kicked), and R stops after a round that drops none, or as soon as none is left out (then
//! there is nothing to be consistent with). All these loads and every clear are sequentially
//! consistent, so they lie in one total order, and a load follows a store there if it reads the
//! stored value or one after it in the word's modification order, and precedes it if it reads
//! one before. Let P be the point of that order between the last round and the round before
//! it. A transaction with t <= S that R leaves out was read still showing t in the last round,
//! after P, so it clears its word after P. One that R takes (and that can install: not kicked)
//! was read in an earlier round, before P, with its word cleared or holding a later
//! transaction's, so it cleared its word before P. R takes exactly the transactions that had
//! cleared their words at P. Now a U that saw anything of W clears its word after W does: U
//! reads or overwrites W's versions only after W installs them (W's owner words refuse U
//! before), W installs only after clearing its word, and U clears its own word after its reads
//! and writes, at its commit; through other transactions in between too, since every step is a
//! happens-before edge and the total order agrees with happens-before. So if R takes U it takes
//! W. The rounds end: each but the last drops a transaction, so there are at most one more than
//! the first round leaves out, and no later round reads a slot the first found clear.
//! (`a_statement_never_takes_a_transaction_without_one_it_read_from`, in `tests/shuttle_sync.rs`
//! and in `cc/mvto.rs`.)
//!
//! What R reads must be kept: at a record, the version before the first one at a timestamp R
//! passes over, which a reader at t - 1 also reads. R publishes `reader` = min(S, t_min - 1)
//! for the smallest such t (`StatementSnapshot::retention_bound`). Its first statement first
//! swaps in 1, which no bound computation can pass, and only then reads the clock and the
//! slots; later statements only raise the bound. A t that a later statement leaves out is
//! above the earlier one's S, or the earlier one left it out too: if t <= S, the earlier
//! statement's first round read W's word at or after PENDING ((1)), and not PENDING (W would
//! have taken a timestamp above S) nor past t (the later statement could not read t then), so
//! it read t, and it took W only on reading W's slot KICKED. A kicked transaction's
//! `ordered` is cleared before its slot loses KICKED (`repin_kicked`, before the pin that rolls
//! it back), and the later statement leaves W out only if two of its rounds, one after the
//! other, read t and W's slot without KICKED ((4)). The first of those slot loads came after
//! the pin (the earlier statement had already read KICKED), so the next round's load of
//! `ordered` came after the clear and did not read t. (Were the pin to clear KICKED first, a
//! later statement would leave the transaction out and lower its bound to t - 1: harmless, as
//! the transaction installs nothing, but against this argument.) `refresh_readers_low` reads every slot twice, each pass after
//! its own load of `slots_high`, all sequentially consistent. Suppose a computation C's second
//! pass missed R's swap (read R's slot before it, or stopped below it). Then C's first-pass
//! load of W's `reader` came before R's swap, which came before R's load of W's `ordered` that
//! saw t, which came before W cleared `ordered` (sequentially consistent), which W did before
//! it cleared `reader` (`cc::commit` step 6, then `finish`; a load that saw that release store
//! would come after the clear of `ordered`). So C saw W's `reader` bound (below t), or read
//! W's slot before W's `enter_reader` and so started from a clock value at or below W's bound;
//! and C started from a clock value at or below S. Either way C's bound is at most R's. A
//! transaction the ticker kicked never installs, so statements and computations alike may
//! leave it out.
//! (`statement_snapshots_see_a_writer_whole_and_keep_what_they_read`, `tests/shuttle_sync.rs`.)

use super::shim::{AtomicBool, AtomicU64, Ordering, fence};
use super::tid::{Retention, Tid};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

/// A Silo epoch. Epoch 0 is never current: it stamps records that were never committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Epoch(pub u64);

impl Epoch {
    pub const NEVER: Epoch = Epoch(0);
    pub const FIRST: Epoch = Epoch(1);
}

/// A worker's slot in the epoch table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotId(pub(crate) u32);

impl SlotId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

const ACTIVE: u64 = 0b001;
const IN_CALL: u64 = 0b010;
const KICKED: u64 = 0b100;
const FLAG_BITS: u32 = 3;

/// In `Slot::ordered` while its transaction takes its timestamp (`enter_ordered`); the other
/// bits then hold the newest statement timestamp that found it so (0 when none), which its
/// timestamp must be above (module docs, statement snapshots). No TID has this bit: `Tid::new`
/// keeps TIDs below 2^60, so that a record's TID word has room for its status bits.
const PENDING: u64 = 1 << 63;

#[inline]
fn pack(epoch: u64, flags: u64) -> u64 {
    (epoch << FLAG_BITS) | flags
}

#[inline]
fn epoch_of(word: u64) -> u64 {
    word >> FLAG_BITS
}

#[derive(Debug, Default)]
struct Slot {
    state: AtomicU64,
    /// Snapshot epoch of the slot's active snapshot transaction, 0 when it has none.
    snapshot: AtomicU64,
    /// A lower bound of the epoch of the commit the worker is installing, 0 when none.
    committing: AtomicU64,
    /// A lower bound of the read timestamp of the slot's multi-version transaction (`cc::mv`),
    /// 0 when it has none.
    reader: AtomicU64,
    /// The timestamp of the slot's transaction that commits at its begin timestamp (MVTO), from
    /// its begin until its writes are locked for installing; `PENDING` while it takes it, 0
    /// when none. Statement snapshots leave these transactions out (module docs).
    ordered: AtomicU64,
    used: AtomicBool,
}

/// What a READ COMMITTED statement under MVTO reads (`EpochManager::take_statement_snapshot`):
/// at each record the newest version at or below `at` whose TID is none of `in_progress`, the
/// timestamps of MVTO transactions that had not yet started installing when the statement
/// began. PostgreSQL's statement snapshot, with `at` as its upper bound and `in_progress` as
/// its list of transactions in progress. Its buffer is reused from statement to statement.
#[derive(Debug, Clone)]
pub struct StatementSnapshot {
    at: Tid,
    /// Sorted; each at or below `at`.
    in_progress: Vec<Tid>,
    /// The first of `in_progress`; [`Tid::MAX`] when it is empty.
    in_progress_low: Tid,
    /// While the snapshot is taken: the transactions it leaves out so far, with their slots,
    /// which it reads again until none has gone (module docs, statement snapshots).
    rounds: Vec<(SlotId, Tid)>,
}

impl Default for StatementSnapshot {
    fn default() -> Self {
        StatementSnapshot {
            at: Tid::ZERO,
            in_progress: Vec::new(),
            in_progress_low: Tid::MAX,
            rounds: Vec::new(),
        }
    }
}

impl StatementSnapshot {
    /// Room for `slots_max` transactions in progress, so that taking a snapshot allocates
    /// nothing.
    pub fn with_capacity(slots_max: usize) -> Self {
        StatementSnapshot {
            in_progress: Vec::with_capacity(slots_max),
            rounds: Vec::with_capacity(slots_max),
            ..Self::default()
        }
    }

    /// The statement's timestamp.
    pub fn at(&self) -> Tid {
        self.at
    }

    /// Whether the statement passes over the versions committed at `tid`: one compare when no
    /// transaction was left out.
    #[inline]
    pub fn hides(&self, tid: Tid) -> bool {
        tid >= self.in_progress_low && self.in_progress.binary_search(&tid).is_ok()
    }

    /// Every version the statement reads was superseded, if at all, above this bound: what its
    /// slot publishes for `readers_low`.
    pub fn retention_bound(&self) -> Tid {
        match self.in_progress.first() {
            Some(low) => self.at.min(Tid::from_u64(low.as_u64() - 1)),
            None => self.at,
        }
    }

    /// The transactions the statement leaves out.
    pub fn in_progress(&self) -> &[Tid] {
        &self.in_progress
    }

    /// No statement: nothing hidden.
    pub fn clear(&mut self) {
        self.at = Tid::ZERO;
        self.in_progress.clear();
        self.in_progress_low = Tid::MAX;
        self.rounds.clear();
    }
}

/// A transaction's pin was given up by the ticker after it sat idle too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kicked;

/// Proof that the calling worker is pinned, so that shared nodes and records it reaches stay
/// allocated. Index and record operations take a `&Pin`.
#[derive(Debug)]
pub struct Pin<'a> {
    _not_send: PhantomData<*const &'a ()>,
}

impl Pin<'_> {
    /// # Safety
    /// The calling thread's slot must be pinned (ACTIVE and IN_CALL) for as long as the `Pin`
    /// and anything reached through it live.
    #[inline]
    pub unsafe fn assume_pinned() -> Self {
        Pin { _not_send: PhantomData }
    }
}

/// What one tick observed; returned for tests and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub global: Epoch,
    pub reclaim_bound: Epoch,
    pub stable: Epoch,
    pub snapshot: Epoch,
    pub snapshot_low: Epoch,
    pub snapshot_low_unheld: Epoch,
    pub kicked: u32,
}

#[derive(Debug)]
pub struct EpochManager {
    global: CachePadded<AtomicU64>,
    reclaim_bound: CachePadded<AtomicU64>,
    stable: AtomicU64,
    snapshot: AtomicU64,
    snapshot_low: AtomicU64,
    /// `snapshot_low` without the held epoch and its readers (module docs).
    snapshot_low_unheld: AtomicU64,
    advancing: AtomicBool,
    kicked_total: AtomicU64,
    /// A snapshot epoch held outside any slot (a checkpoint in progress), 0 when none.
    held: AtomicU64,
    snapshot_interval_epochs: u64,
    idle_lag_epochs_max: u64,
    slots: Box<[CachePadded<Slot>]>,
    /// The timestamp clock of the multi-version protocols: the newest commit TID handed out.
    /// Unused (0) under Silo, whose TIDs need no global counter.
    clock: CachePadded<AtomicU64>,
    /// No multi-version transaction reads below this TID (`u64::MAX` under Silo).
    readers_low: CachePadded<AtomicU64>,
    multiversion: bool,
    /// One past the highest slot ever registered: `refresh_readers_low` scans no further.
    slots_high: AtomicU64,
    /// READ COMMITTED statements take statement snapshots (MVTO): `refresh_readers_low` reads
    /// the slots twice (module docs).
    statement_snapshots: bool,
}

impl EpochManager {
    /// `slots_max` workers can be registered at once. Snapshots are taken every
    /// `snapshot_interval_epochs`; an idle interactive transaction is given up after lagging
    /// `idle_lag_epochs_max` epochs.
    pub fn new(slots_max: usize, snapshot_interval_epochs: u64, idle_lag_epochs_max: u64) -> Self {
        assert!(snapshot_interval_epochs >= 1);
        assert!(idle_lag_epochs_max >= 2);
        let slots = (0..slots_max).map(|_| CachePadded::new(Slot::default())).collect();
        EpochManager {
            global: CachePadded::new(AtomicU64::new(Epoch::FIRST.0)),
            reclaim_bound: CachePadded::new(AtomicU64::new(Epoch::FIRST.0)),
            stable: AtomicU64::new(0),
            snapshot: AtomicU64::new(0),
            snapshot_low: AtomicU64::new(0),
            snapshot_low_unheld: AtomicU64::new(0),
            advancing: AtomicBool::new(false),
            kicked_total: AtomicU64::new(0),
            held: AtomicU64::new(0),
            snapshot_interval_epochs,
            idle_lag_epochs_max,
            slots,
            clock: CachePadded::new(AtomicU64::new(0)),
            readers_low: CachePadded::new(AtomicU64::new(u64::MAX)),
            multiversion: false,
            slots_high: AtomicU64::new(0),
            statement_snapshots: false,
        }
    }

    /// Turns on the timestamp clock and reader tracking of the multi-version protocols.
    /// Called once, before any worker exists.
    pub fn enable_multiversion(&mut self) {
        self.multiversion = true;
        self.readers_low = CachePadded::new(AtomicU64::new(0));
    }

    pub fn is_multiversion(&self) -> bool {
        self.multiversion
    }

    /// Turns on statement snapshots (MVTO, whose transactions commit at their begin
    /// timestamps). Called once, after `enable_multiversion` and before any worker exists.
    pub fn enable_statement_snapshots(&mut self) {
        assert!(self.multiversion, "statement snapshots read versions by timestamp");
        self.statement_snapshots = true;
    }

    /// Registers a multi-version transaction on a pinned slot and returns its read timestamp:
    /// every commit with a TID at or below it is installed or holds its records locked, and
    /// every commit above it comes later.
    ///
    /// ORDERING. The slot is published (sequentially consistent swap) with a clock value read
    /// before, and the timestamp is the clock read after: it is at least the published value.
    /// A bound computation (`refresh_readers_low`, the ticker) reads the clock and then scans
    /// the slots; if its scan missed this slot, the swap came after the scan, so the timestamp
    /// read after the swap is at least the clock value the computation started from. Either
    /// way the published `readers_low` never exceeds the timestamp.
    pub fn enter_reader(&self, slot: SlotId) -> u64 {
        let published = self.clock.load(Ordering::SeqCst).max(1);
        self.slots[slot.index()].reader.swap(published, Ordering::SeqCst);
        self.clock.load(Ordering::SeqCst).max(published)
    }

    /// Moves the slot's read timestamp forward to a new one (a statement under READ
    /// COMMITTED); returns it. The new timestamp is at least the old, so the slot's published
    /// bound stays valid while it is raised.
    pub fn renew_reader(&self, slot: SlotId) -> u64 {
        self.enter_reader(slot)
    }

    pub fn leave_reader(&self, slot: SlotId) {
        self.slots[slot.index()].reader.store(0, Ordering::Release);
    }

    /// Takes the timestamp of a transaction on a pinned slot that commits at it (MVTO,
    /// `cc/mvto.rs`), in `epoch` or later, and publishes it to statement snapshots until
    /// `leave_ordered`. `None` when the epoch's sequence space is exhausted.
    pub fn enter_ordered(&self, slot: SlotId, epoch: Epoch) -> Option<Tid> {
        // Relaxed: the clock's compare-and-swap below releases it, and a statement whose clock
        // load reads the new timestamp (or a later one) acquires it (ORDERING, statement
        // snapshots).
        self.slots[slot.index()].ordered.store(PENDING, Ordering::Relaxed);
        let first = self.next_timestamp(epoch);
        self.publish_ordered(slot, epoch, first)
    }

    /// The second half of `enter_ordered`: replaces PENDING with `ts`, or with a later
    /// timestamp if a statement at or above `ts` found the slot PENDING meanwhile (ORDERING,
    /// statement snapshots). A retry means that such a statement went on.
    fn publish_ordered(&self, slot: SlotId, epoch: Epoch, mut ts: Option<Tid>) -> Option<Tid> {
        let ordered = &self.slots[slot.index()].ordered;
        let mut word = PENDING;
        loop {
            let Some(next) = ts else {
                // Relaxed: it publishes nothing; a statement that reads it takes no transaction
                // from this slot (and a statement's compare-and-swap on PENDING then fails).
                ordered.store(0, Ordering::Relaxed);
                return None;
            };
            // Sequentially consistent, and so a release (pairs with the statements' loads
            // that see the timestamp) and, failing, an acquire (pairs with their
            // compare-and-swaps that raised the statement timestamp, whose clock loads came
            // before: the clock now reads at least that timestamp).
            match ordered.compare_exchange(word, next.as_u64(), Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Some(next),
                Err(now) => {
                    debug_assert!(now & PENDING != 0, "only statements change a PENDING word");
                    word = now;
                    if now & !PENDING >= next.as_u64() {
                        ts = self.next_timestamp(epoch);
                    }
                }
            }
        }
    }

    /// The timestamp in a slot's `ordered` word as a statement at `at` reads it, 0 for none. A
    /// transaction still taking its timestamp is made to take one above `at` (ORDERING,
    /// statement snapshots): none. A retry means that another statement raised the word's
    /// statement timestamp or the transaction published its timestamp.
    fn ordered_for_statement(ordered: &AtomicU64, at: u64) -> u64 {
        // Sequentially consistent: see ORDERING (the release stores of `enter_ordered` and
        // `leave_ordered` pair with it).
        let mut word = ordered.load(Ordering::SeqCst);
        loop {
            if word & PENDING == 0 {
                return word;
            }
            if word & !PENDING >= at {
                return 0;
            }
            // Sequentially consistent, and so a release: pairs with the failed
            // compare-and-swap of `publish_ordered` that reads it.
            match ordered.compare_exchange(word, at | PENDING, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return 0,
                Err(now) => word = now,
            }
        }
    }

    /// The slot's ordered transaction has locked every record it writes (commit step 1), or
    /// it ends: statements that begin from now on take it whole, waiting on its locked records
    /// as on any committer's. Before the transaction lets go of its MVTO write locks, so that a
    /// transaction that reads its writes is taken after it, and before `leave_reader`
    /// (ORDERING, statement snapshots).
    pub fn leave_ordered(&self, slot: SlotId) {
        let ordered = &self.slots[slot.index()].ordered;
        // Relaxed: only this slot's worker stores anything but 0 here. A commit clears the
        // word at install (`cc::commit` step 6), and its end need not clear it again.
        if ordered.load(Ordering::Relaxed) != 0 {
            // Sequentially consistent, and so a release: pairs with the loads of
            // `take_statement_snapshot` (visibility) and orders against those of
            // `refresh_readers_low` (retention).
            ordered.store(0, Ordering::SeqCst);
        }
    }

    /// Takes a READ COMMITTED statement's snapshot for the transaction on a pinned slot (MVTO):
    /// its timestamp, the ordered transactions at or below it still to install, and the slot's
    /// new bound for `readers_low` (ORDERING, statement snapshots). The slots are read in
    /// rounds: every slot first, then the slots of the transactions left out, again until a
    /// round finds every one of them still there, so that what is left out is what had not
    /// locked its writes at one instant. Waits for nobody: a transaction taking its timestamp
    /// meanwhile is made to take one above the statement's.
    pub fn take_statement_snapshot(&self, slot: SlotId, snapshot: &mut StatementSnapshot) {
        debug_assert!(self.statement_snapshots);
        let reader = &self.slots[slot.index()].reader;
        if reader.load(Ordering::Relaxed) == 0 {
            // The transaction's first statement: a bound no computation passes, published
            // (sequentially consistent) before the clock and the slots are read.
            reader.swap(1, Ordering::SeqCst);
        }
        let at = self.clock.load(Ordering::SeqCst).max(1);
        snapshot.clear();
        let high = self.slots_high.load(Ordering::SeqCst) as usize;
        for (index, other) in self.slots[..high].iter().enumerate() {
            let ts = Self::ordered_for_statement(&other.ordered, at);
            #[cfg(all(test, not(feature = "shuttle")))]
            scan_pause::after_slot(index);
            if ts == 0 || ts > at {
                continue;
            }
            // A kicked transaction can only abort: it installs nothing to leave out.
            if other.state.load(Ordering::SeqCst) & KICKED != 0 {
                continue;
            }
            snapshot.rounds.push((SlotId(index as u32), Tid::from_u64(ts)));
        }
        // The later rounds, over the transactions left out so far. Each round but the last drops
        // at least one, so there are at most one more than the first round left out.
        loop {
            let left_out = snapshot.rounds.len();
            if left_out == 0 {
                break;
            }
            // Sequentially consistent loads, as in the first round.
            snapshot.rounds.retain(|&(other, ts)| {
                let other = &self.slots[other.index()];
                other.ordered.load(Ordering::SeqCst) == ts.as_u64()
                    && other.state.load(Ordering::SeqCst) & KICKED == 0
            });
            if snapshot.rounds.len() == left_out {
                break;
            }
        }
        snapshot.in_progress.extend(snapshot.rounds.iter().map(|&(_, ts)| ts));
        snapshot.rounds.clear();
        snapshot.in_progress.sort_unstable();
        snapshot.at = Tid::from_u64(at);
        snapshot.in_progress_low = snapshot.in_progress.first().copied().unwrap_or(Tid::MAX);
        // Release: only raises the bound (or replaces the 1 swapped in above).
        reader.store(snapshot.retention_bound().as_u64(), Ordering::Release);
    }

    /// Hands out a commit timestamp above every one handed out before, in `epoch` or later
    /// (`Tid::next_timestamp`). `None` when the epoch's sequence space is exhausted.
    pub fn next_timestamp(&self, epoch: Epoch) -> Option<Tid> {
        let mut last = self.clock.load(Ordering::SeqCst);
        loop {
            let next = Tid::next_timestamp(Tid::from_u64(last), epoch)?;
            match self.clock.compare_exchange_weak(
                last,
                next.as_u64(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(next),
                Err(now) => last = now,
            }
        }
    }

    /// What an install must keep for the readers that exist now or may come.
    #[inline]
    pub fn retention(&self) -> Retention {
        // The unheld mark first: the ticker stores it after the mark (ORDERING above).
        let low_unheld = Epoch(self.snapshot_low_unheld.load(Ordering::Acquire));
        Retention {
            low: self.snapshot_low(),
            low_unheld,
            interval: self.snapshot_interval_epochs,
            readers_low: self.readers_low(),
            prune: true,
        }
    }

    /// No multi-version transaction reads below this TID; [`Tid::MAX`] under Silo.
    #[inline]
    pub fn readers_low(&self) -> Tid {
        Tid::from_u64(self.readers_low.load(Ordering::Acquire))
    }

    /// Recomputes `readers_low` from the clock and the slots (see `enter_reader`). Workers call
    /// it every few commits, so that chains are pruned sooner than the ticker alone would let
    /// them be.
    pub fn refresh_readers_low(&self) {
        if !self.multiversion {
            return;
        }
        let mut low = self.clock.load(Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // Statement snapshots need each slot read twice, the second pass after the first
        // (ORDERING, statement snapshots).
        let passes = if self.statement_snapshots { 2 } else { 1 };
        for _ in 0..passes {
            let high = self.slots_high.load(Ordering::SeqCst) as usize;
            for slot in self.slots[..high].iter() {
                let reader = slot.reader.load(Ordering::SeqCst);
                if reader == 0 {
                    continue;
                }
                // A transaction the ticker kicked reads nothing more (it can only abort).
                let word = slot.state.load(Ordering::SeqCst);
                if word & ACTIVE != 0 && word & KICKED == 0 {
                    low = low.min(reader);
                }
            }
        }
        // Every computed bound holds for the readers active after it was computed, so the
        // larger of two is as good as either.
        self.readers_low.fetch_max(low, Ordering::AcqRel);
    }

    /// The global epoch. Sequentially consistent: see ORDERING above.
    #[inline]
    pub fn global(&self) -> Epoch {
        Epoch(self.global.load(Ordering::SeqCst))
    }

    /// Garbage tagged with an epoch below this bound is unreachable.
    #[inline]
    pub fn reclaim_bound(&self) -> Epoch {
        Epoch(self.reclaim_bound.load(Ordering::Acquire))
    }

    /// Every commit with an epoch at or below this one is installed.
    pub fn stable(&self) -> Epoch {
        Epoch(self.stable.load(Ordering::Acquire))
    }

    /// The epoch a snapshot transaction starting now reads at.
    pub fn snapshot(&self) -> Epoch {
        Epoch(self.snapshot.load(Ordering::SeqCst))
    }

    /// No active or future snapshot reads at an epoch below this one.
    #[inline]
    pub fn snapshot_low(&self) -> Epoch {
        Epoch(self.snapshot_low.load(Ordering::Acquire))
    }

    pub fn snapshot_interval_epochs(&self) -> u64 {
        self.snapshot_interval_epochs
    }

    pub fn kicked_total(&self) -> u64 {
        self.kicked_total.load(Ordering::Relaxed)
    }

    pub fn slots_max(&self) -> usize {
        self.slots.len()
    }

    /// Claims a free slot, or `None` when all `slots_max` are taken.
    pub fn register(&self) -> Option<SlotId> {
        self.slots
            .iter()
            .position(|slot| {
                !slot.used.load(Ordering::Relaxed)
                    && slot
                        .used
                        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
            })
            .map(|index| {
                self.slots_high.fetch_max(index as u64 + 1, Ordering::SeqCst);
                SlotId(index as u32)
            })
    }

    /// Returns a slot. The worker must not be pinned.
    pub fn unregister(&self, slot: SlotId) {
        let slot = &self.slots[slot.index()];
        slot.state.store(0, Ordering::Release);
        slot.snapshot.store(0, Ordering::Release);
        slot.committing.store(0, Ordering::Release);
        slot.reader.store(0, Ordering::Release);
        slot.ordered.store(0, Ordering::Release);
        slot.used.store(false, Ordering::Release);
    }

    /// Pins the slot for a transaction and enters a call. Returns the pinned epoch.
    #[inline]
    pub fn pin(&self, slot: SlotId) -> Epoch {
        let epoch = self.global.load(Ordering::SeqCst);
        // A sequentially consistent swap is a full fence (one xchg on x86): the pin is visible
        // to the ticker's scan before this worker loads any shared pointer.
        self.slots[slot.index()].state.swap(pack(epoch, ACTIVE | IN_CALL), Ordering::SeqCst);
        Epoch(epoch)
    }

    /// Ends the transaction: the slot no longer holds anything back.
    #[inline]
    pub fn unpin(&self, slot: SlotId) {
        // Release: every access to shared memory made while pinned happens before the ticker
        // sees the slot idle.
        self.slots[slot.index()].state.store(0, Ordering::Release);
    }

    /// Leaves a call but keeps the transaction pinned at `epoch` (an interactive transaction
    /// waiting for its client). The ticker may now kick it.
    #[inline]
    pub fn suspend(&self, slot: SlotId, epoch: Epoch) {
        self.slots[slot.index()].state.store(pack(epoch.0, ACTIVE), Ordering::Release);
    }

    /// Pins the slot again for the roll-back of its transaction, which the ticker kicked
    /// (`resume` said so). Statement snapshots first stop leaving the transaction out, while the
    /// slot still shows it kicked: the pin clears KICKED, and a statement that then found its
    /// timestamp would leave out a transaction that an earlier statement of its own transaction
    /// had taken, and lower its bound for `readers_low` (ORDERING, statement snapshots).
    pub fn repin_kicked(&self, slot: SlotId) -> Epoch {
        debug_assert!(self.slots[slot.index()].state.load(Ordering::Relaxed) & KICKED != 0);
        if self.statement_snapshots {
            // Sequentially consistent (`leave_ordered`), and before the pin's swap: a statement
            // whose load of `state` reads the swap (no KICKED) reads this clear at its next load
            // of `ordered` (ORDERING, statement snapshots).
            self.leave_ordered(slot);
        }
        self.pin(slot)
    }

    /// Re-enters a call for a suspended transaction, unless the ticker kicked it.
    #[inline]
    pub fn resume(&self, slot: SlotId, epoch: Epoch) -> Result<(), Kicked> {
        self.slots[slot.index()]
            .state
            .compare_exchange(
                pack(epoch.0, ACTIVE),
                pack(epoch.0, ACTIVE | IN_CALL),
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .map(|_| ())
            .map_err(|word| {
                debug_assert!(word & KICKED != 0, "only the ticker changes a suspended slot");
                Kicked
            })
    }

    /// Announces that the worker is about to take a commit's serialization point: its commit
    /// epoch will be at least `epoch` (its pinned epoch). The caller must issue a sequentially
    /// consistent fence before it reads the global epoch for the commit (Silo does anyway).
    #[inline]
    pub fn enter_commit(&self, slot: SlotId, epoch: Epoch) {
        self.slots[slot.index()].committing.store(epoch.0, Ordering::Relaxed);
    }

    /// The commit's writes are installed (or it aborted).
    #[inline]
    pub fn leave_commit(&self, slot: SlotId) {
        // Release: the installs happen before the ticker stops counting this commit.
        self.slots[slot.index()].committing.store(0, Ordering::Release);
    }

    /// Registers a snapshot transaction on a pinned slot and returns its snapshot epoch.
    ///
    /// The epoch is re-read after the slot store until it is stable, so the ticker either sees
    /// the slot's snapshot epoch or has not yet published a newer one (ORDERING above).
    pub fn enter_snapshot(&self, slot: SlotId) -> Epoch {
        let slot = &self.slots[slot.index()];
        let mut seen = self.snapshot.load(Ordering::SeqCst);
        loop {
            slot.snapshot.swap(seen, Ordering::SeqCst);
            let again = self.snapshot.load(Ordering::SeqCst);
            if again == seen {
                return Epoch(seen);
            }
            seen = again;
        }
    }

    /// Registers a snapshot at `at` on a pinned slot. `at` must be held (`hold_snapshot`) so
    /// that the low-water mark cannot have passed it.
    pub fn enter_snapshot_at(&self, slot: SlotId, at: Epoch) {
        debug_assert!(
            self.held.load(Ordering::SeqCst) != 0 && self.held.load(Ordering::SeqCst) <= at.0
        );
        self.slots[slot.index()].snapshot.swap(at.0, Ordering::SeqCst);
    }

    /// Holds the current snapshot epoch for a reader outside any slot (a checkpoint whose
    /// threads each read at it in many short transactions). One hold at a time.
    pub fn hold_snapshot(&self) -> Epoch {
        let mut seen = self.snapshot.load(Ordering::SeqCst);
        loop {
            self.held.swap(seen, Ordering::SeqCst);
            let again = self.snapshot.load(Ordering::SeqCst);
            if again == seen {
                return Epoch(seen);
            }
            seen = again;
        }
    }

    pub fn release_snapshot_hold(&self) {
        self.held.store(0, Ordering::Release);
    }

    /// Starts the epochs of a recovered database above `last`, the newest epoch in its data
    /// directory: the stable and snapshot epochs start at a snapshot boundary at or above it,
    /// so every recovered row is visible to snapshots. Called before any worker exists.
    pub fn restart_after(&self, last: Epoch) {
        let interval = self.snapshot_interval_epochs;
        let base = (last.0 + 1).div_ceil(interval) * interval;
        self.global.store(base + 1, Ordering::SeqCst);
        self.reclaim_bound.store(base + 1, Ordering::SeqCst);
        self.stable.store(base, Ordering::SeqCst);
        self.snapshot.store(base, Ordering::SeqCst);
        self.snapshot_low.store(base, Ordering::SeqCst);
        self.snapshot_low_unheld.store(base, Ordering::SeqCst);
        // Every recovered TID is in an epoch at or below `base`: readers see them all.
        self.clock.store(Tid::last_of(Epoch(base)).as_u64(), Ordering::SeqCst);
    }

    pub fn leave_snapshot(&self, slot: SlotId) {
        self.slots[slot.index()].snapshot.store(0, Ordering::Release);
    }

    /// The tag for garbage unlinked before this call: the global epoch read after a fence.
    #[inline]
    pub fn retire_tag(&self) -> Epoch {
        fence(Ordering::SeqCst);
        Epoch(self.global.load(Ordering::SeqCst))
    }

    /// Advances the global epoch and recomputes the published bounds. Called by the ticker
    /// thread (or by tests, for determinism). Concurrent calls are skipped, not queued.
    pub fn advance(&self) -> Option<Tick> {
        if self
            .advancing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        let global = self.global.fetch_add(1, Ordering::SeqCst) + 1;
        fence(Ordering::SeqCst);
        let mut pin_min = global;
        let mut committing_min = global;
        let mut snapshot_min = u64::MAX;
        let mut kicked = 0;
        for slot in self.slots.iter() {
            let committing = slot.committing.load(Ordering::SeqCst);
            let word = slot.state.load(Ordering::SeqCst);
            // A kicked transaction can only abort: a commit it announced (MVTO announces at
            // begin, `cc/mvto.rs`) will never install anything.
            if committing != 0 && word & KICKED == 0 {
                committing_min = committing_min.min(committing);
            }
            if word & ACTIVE == 0 || word & KICKED != 0 {
                continue;
            }
            let epoch = epoch_of(word);
            if word & IN_CALL == 0
                && epoch + self.idle_lag_epochs_max < global
                && slot
                    .state
                    .compare_exchange(word, word | KICKED, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
            {
                kicked += 1;
                continue;
            }
            pin_min = pin_min.min(epoch);
        }
        self.reclaim_bound.store(pin_min, Ordering::Release);
        let stable = committing_min - 1;
        self.stable.store(stable, Ordering::Release);
        let boundary = stable / self.snapshot_interval_epochs * self.snapshot_interval_epochs;
        let snapshot = self.snapshot.load(Ordering::Relaxed).max(boundary);
        self.snapshot.store(snapshot, Ordering::SeqCst);
        // The snapshots in use are read only after the new one is published. A reader that
        // registered an older epoch (`enter_snapshot`: store the epoch in its slot, then check
        // that it is still the published one) checked before this store, so its slot store
        // comes before the loads below and is counted; one that checks after it reads
        // `snapshot` or a later value. Reading the slots before the store (as the loop above
        // once did) missed a reader registering in between: the low-water mark passed it and
        // installs dropped versions it was reading (tests/pointers.rs found it).
        fence(Ordering::SeqCst);
        // The two oldest epochs read, for the mark without the held epoch.
        let mut snapshot_next = u64::MAX;
        for slot in self.slots.iter() {
            let word = slot.state.load(Ordering::SeqCst);
            if word & ACTIVE == 0 || word & KICKED != 0 {
                continue;
            }
            let reading = slot.snapshot.load(Ordering::SeqCst);
            if reading == 0 || reading == snapshot_min {
                continue;
            }
            if reading < snapshot_min {
                snapshot_next = snapshot_min;
                snapshot_min = reading;
            } else {
                snapshot_next = snapshot_next.min(reading);
            }
        }
        let held = self.held.load(Ordering::SeqCst);
        let unheld_min =
            if held != 0 && held == snapshot_min { snapshot_next } else { snapshot_min };
        if held != 0 {
            snapshot_min = snapshot_min.min(held);
        }
        let snapshot_low = snapshot.min(snapshot_min);
        let snapshot_low_unheld = snapshot.min(unheld_min);
        // The mark first, then the unheld mark (ORDERING above).
        self.snapshot_low.store(snapshot_low, Ordering::Release);
        self.snapshot_low_unheld.store(snapshot_low_unheld, Ordering::Release);
        if kicked > 0 {
            self.kicked_total.fetch_add(kicked as u64, Ordering::Relaxed);
        }
        self.refresh_readers_low();
        self.advancing.store(false, Ordering::Release);
        Some(Tick {
            global: Epoch(global),
            reclaim_bound: Epoch(pin_min),
            stable: Epoch(stable),
            snapshot: Epoch(snapshot),
            snapshot_low: Epoch(snapshot_low),
            snapshot_low_unheld: Epoch(snapshot_low_unheld),
            kicked,
        })
    }
}

/// A pause inside `take_statement_snapshot`'s first round, for tests that stop a statement
/// there while other transactions commit (`cc::mvto`'s tests). Per thread, so that the
/// crate's other tests, on other threads, never meet it; compiled only into the crate's tests.
#[cfg(all(test, not(feature = "shuttle")))]
pub(crate) mod scan_pause {
    use std::cell::RefCell;

    type Pause = Box<dyn FnMut(usize)>;

    thread_local! {
        static AFTER_SLOT: RefCell<Option<Pause>> = const { RefCell::new(None) };
    }

    /// From now on this thread's statement snapshots call `pause` with each slot's index after
    /// reading the slot in their first round.
    pub(crate) fn set(pause: impl FnMut(usize) + 'static) {
        AFTER_SLOT.set(Some(Box::new(pause)));
    }

    pub(crate) fn clear() {
        AFTER_SLOT.set(None);
    }

    pub(super) fn after_slot(index: usize) {
        AFTER_SLOT.with_borrow_mut(|pause| {
            if let Some(pause) = pause {
                pause(index);
            }
        });
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests;
