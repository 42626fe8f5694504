//! The operations of a transaction: reads, writes, inserts, deletes and scans, on primary keys
//! and on secondary indexes.
//!
//! Every operation first consults the access set, so a transaction reads its own writes and
//! recognises its own inserts (their heads are in the index, ABSENT and CLAIMED by it). Writes
//! are buffered; inserts put their record into the indexes at once (optimistic inserts), so a
//! concurrent insert of the same key finds the claimed head and aborts instead of creating a
//! duplicate, and a row inserted into several indexes is visible through none of them until
//! its head is installed at commit.
//!
//! Here: point reads and writes, and what every operation shares (`observe`, the protocol
//! locks, poisoning). Inserts are in `txn/insert.rs`, scans and their visitors in
//! `txn/scan.rs`, watched statements in `txn/statement.rs`, non-inline attributes in
//! `txn/attributes.rs`.

use super::Isolation;
use super::access::{Access, AccessSet, Held, Kind, LeafOwner, Span};
use super::conflict::Site;
use super::mv::{self, Locking, ReadMode};
use super::secondary;
use super::silo::{Hooks, Silo};
use super::{mv2pl, mvto};
use crate::cc::cooperative;
use crate::cc::worker::{Status, TableRef, TxnState, Worker};
use crate::error::{AbortReason, Error, Result};
use crate::index::{Direction, GROUP_KEYS, Probe};
use crate::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use crate::storage::record::{AsOf, Busy};
use crate::storage::{Head, SecondaryIndex, Table, TableId, Tid, TidWord};
use crate::sync::{Epoch, Pin, StatementSnapshot};
use std::ops::Bound;

/// Times an operation looks a key up again when the head it found was unlinked or claimed
/// between the lookup and the read: such races need a concurrent delete collection or insert
/// to interleave each time, so a few attempts always suffice in practice.
const LOOKUP_ATTEMPTS_MAX: u32 = 4;

/// A running transaction. Obtained from [`Worker::transaction`] or [`Worker::txn`].
#[derive(Debug)]
pub struct Txn<'w> {
    worker: &'w mut Worker,
    interactive: bool,
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if self.interactive {
            self.worker.suspend();
        }
    }
}

mod attributes;
mod insert;
mod savepoint;
mod scan;
mod statement;

pub use savepoint::Savepoint;
pub use statement::StatementCheck;

/// Refuses a write of row bytes to a table of non-inline attributes, whose rows only
/// `Txn::insert_attributes` and `Txn::update_attribute` make.
pub(crate) fn bytes_writable(table: &Table) -> Result<()> {
    match table.non_inline {
        None => Ok(()),
        Some(_) => Err(non_inline_only(table)),
    }
}

#[cold]
fn non_inline_only(table: &Table) -> Error {
    Error::InvalidConfig(format!(
        "table \"{}\" holds non-inline attributes: write its rows with insert_attributes and \
         update_attribute",
        table.name()
    ))
}

/// Where the row an operation found lives.
enum Found {
    None,
    /// In the transaction's read buffer.
    Buffer,
    /// In the transaction's own write.
    Own(Span),
}

/// What the transaction saw of a record.
pub(crate) enum Seen {
    /// Its own write, at this access position.
    Own(usize),
    /// The committed state with this word, copied to the read buffer.
    Current(TidWord),
    /// The state as of a multi-version read timestamp (copied to the read buffer when it
    /// holds a row), and the record's current word.
    AsOf(AsOf),
}

#[inline]
fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > KEY_BYTES_MAX {
        return Err(Error::KeyTooLong { len: key.len(), max: KEY_BYTES_MAX });
    }
    Ok(())
}

#[inline]
fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > VALUE_BYTES_MAX {
        return Err(Error::ValueTooLong { len: value.len(), max: VALUE_BYTES_MAX });
    }
    Ok(())
}

pub(crate) fn poison(state: &mut TxnState, reason: AbortReason) -> Error {
    state.status = Status::Poisoned(reason);
    // No-wait locking (`mvto`, `mv2pl`): a transaction that can only roll back lets go of its
    // locks now, not when its client gets round to the rollback; but not of its inserts',
    // whose records are still in the index until the rollback gives them up (`Keep`).
    release_locks(state, Keep::Inserts);
    Error::Aborted(reason)
}

/// [`poison`], leaving where the abort happened for the diagnostics (`cc/conflict.rs`): the
/// site and the record's primary key (empty when not at hand).
#[cold]
#[inline(never)]
pub(crate) fn poison_at(
    state: &mut TxnState,
    reason: AbortReason,
    site: Site,
    key: &[u8],
) -> Error {
    state.site = Some(site);
    state.site_key.clear();
    state.site_key.extend_from_slice(key);
    poison(state, reason)
}

/// The locks [`release_locks`] leaves held: those on the records of the transaction's own
/// inserts that are still to be given up, which `commit::release_insert` lets go of only once
/// the record is out of the index and marked dead (a fresh head) or has its old word back (a
/// claimed one). Let go of before, another transaction could lock a record about to be
/// retired, and its lock would outlive the record: a reader's lock would no longer keep the key
/// as it read it, and a holder the ticker kicked would release it into freed memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Every insert's: an abort, or a poisoned transaction waiting for its rollback.
    Inserts,
    /// Those of inserts deleted again (`Kind::Nothing`): a commit, whose other inserts are
    /// installed by now.
    UndoneInserts,
}

/// Releases the locks a locking protocol (`mvto`, `mv2pl`) took before commit (step 6c, and
/// aborts), except those `keep` says.
#[inline(always)]
pub(crate) fn release_locks(state: &mut TxnState, keep: Keep) {
    // Silo's commit pays for the check alone, inlined.
    if state.rules.locking != Locking::None {
        release_held_locks(state, keep);
    }
}

#[inline(never)]
fn release_held_locks(state: &mut TxnState, keep: Keep) {
    for index in 0..state.access.entries.len() {
        let entry = &state.access.entries[index];
        let kept = match entry.kind {
            Kind::Nothing => true,
            Kind::Insert => keep == Keep::Inserts,
            Kind::Read | Kind::Update | Kind::Delete => false,
        };
        if entry.held != Held::Nothing && !kept {
            unlock(state, index);
        }
    }
}

/// Gives back the lock the access at `index` holds.
pub(crate) fn unlock(state: &mut TxnState, index: usize) {
    match state.rules.locking {
        Locking::TwoPhase => mv2pl::unlock(&mut state.access, index),
        Locking::Timestamps => mvto::unlock(&mut state.access, index),
        Locking::None => {}
    }
}

pub(crate) fn duplicate(table: &Table, index: Option<&SecondaryIndex>) -> Error {
    Error::DuplicateKey {
        table: table.name().to_string(),
        index: index.map(|index| index.name.clone()),
    }
}

/// A pin for a transaction operation.
///
/// # Safety
/// The worker's slot is pinned and in a call: true whenever a `Txn` exists and for the whole
/// of `cc::commit` and `cc::abort`.
#[inline]
pub(crate) unsafe fn pinned<'a>() -> Pin<'a> {
    // SAFETY: guaranteed by the caller.
    unsafe { Pin::assume_pinned() }
}

/// Reads `head` as of snapshot epoch `at`, noting the epoch of the state read in `access`, so
/// that the transaction's commit waits for what it read to be durable (`commit::read_epoch`),
/// not for its whole snapshot epoch. Snapshot transactions
/// never abort: a record locked by a committer is waited for (the committer's epoch is above
/// `at`, and it releases the lock at the end of its commit).
pub(crate) fn read_snapshot(
    access: &mut AccessSet,
    head: *mut Head,
    at: Epoch,
    out: &mut Vec<u8>,
) -> bool {
    // SAFETY: the head was reached through an index while pinned.
    let head = unsafe { &*head };
    loop {
        match head.read_at_noting(at, out) {
            Ok((present, epoch)) => {
                access.note_unrecorded(epoch);
                return present;
            }
            Err(Busy) => std::thread::yield_now(),
        }
    }
}

/// Reads `head` as of `at`, passing over the versions `statement` hides (MVTO at READ
/// COMMITTED: those of transactions still to install when the statement began; nothing
/// otherwise). Each version passed over is an MVTO transaction's, and the version before it is
/// final: nobody installs at or below a timestamp under a later version of the same record.
#[inline]
fn read_visible(
    head: &Head,
    at: Tid,
    statement: &StatementSnapshot,
    buffer: &mut Vec<u8>,
) -> Result<AsOf, Busy> {
    let mut seen = head.read_as_of(at, buffer)?;
    while statement.hides(seen.tid) {
        seen = head.read_as_of(Tid::from_u64(seen.tid.as_u64() - 1), buffer)?;
    }
    Ok(seen)
}

/// Reads `head` for a non-snapshot transaction: its own write if it has one, else the
/// committed state `mode` asks for (recorded in the access set when `validate`), as the
/// statement's snapshot shows it. A committed
/// state read without an entry that records it has its epoch noted instead
/// (`AccessSet::unrecorded_epoch`), so that a read-only commit is acknowledged only once
/// everything it saw is durable.
pub(crate) fn observe(
    access: &mut AccessSet,
    buffer: &mut Vec<u8>,
    table: TableId,
    head: *mut Head,
    validate: bool,
    mode: ReadMode,
    statement: &StatementSnapshot,
) -> Result<Seen, AbortReason> {
    let own = access.find(head);
    if let Some(index) = own
        && access.entries[index].kind != Kind::Read
    {
        // The transaction sees its own row now: commit may no longer apply the statement
        // that wrote it to another row (`Txn::update_recomputable`).
        access.entries[index].recompute = false;
        return Ok(Seen::Own(index));
    }
    if let ReadMode::Locked { .. } | ReadMode::Ordered { .. } = mode {
        return observe_locking(access, buffer, table, head, own, mode);
    }
    if let ReadMode::AsOf(at) | ReadMode::Recorded(at) = mode {
        // SAFETY: reached through an index while pinned.
        let seen = read_visible(unsafe { &*head }, at, statement, buffer)
            .map_err(|Busy| AbortReason::RecordBusy)?;
        let recorded =
            matches!(mode, ReadMode::Recorded(_)) && own.is_none() && seen.current.is_latest();
        trace_ev!(crate::trace::Ev::Seen {
            head: head as u64,
            tid: seen.tid.as_u64(),
            present: seen.present,
            word: seen.current.raw(),
            recorded,
        });
        if recorded {
            // The serial safety net needs the state read: its TID, and whether it held a row.
            let flags =
                if seen.present { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
            access.push(Access::read(head, table, TidWord::new(seen.tid, flags), false));
        } else {
            access.note_unrecorded(seen.tid.epoch());
        }
        return Ok(Seen::AsOf(seen));
    }
    // SAFETY: reached through an index while pinned.
    let word = Silo::read(unsafe { &*head }, buffer)?;
    if let ReadMode::CurrentSince(at) = mode
        && word.tid() > at
    {
        // Changed since the read timestamp: validation could not succeed.
        return Err(AbortReason::ReadValidation);
    }
    if let Some(index) = own {
        let entry = access.entries[index];
        if entry.validate && word != entry.observed {
            return Err(AbortReason::ReadValidation);
        }
        if validate && !entry.validate {
            if access.watching {
                // A new observation kept in an entry older than the watched statement.
                access.statement_high = access.statement_high.max(word.tid().epoch());
            }
            let entry = &mut access.entries[index];
            entry.validate = true;
            entry.observed = word;
            entry.prior = word;
        } else if !entry.validate {
            access.note_unrecorded(word.tid().epoch());
            access.note_statement_read(head, word, table);
        }
        return Ok(Seen::Current(word));
    }
    if validate && word.is_latest() {
        access.push(Access::read(head, table, word, true));
    } else {
        access.note_unrecorded(word.tid().epoch());
        if word.is_latest() {
            access.note_statement_read(head, word, table);
        }
    }
    Ok(Seen::Current(word))
}

/// [`observe`] under MV2PL and MVTO, whose reads lock or stamp the record.
#[inline(never)]
fn observe_locking(
    access: &mut AccessSet,
    buffer: &mut Vec<u8>,
    table: TableId,
    head: *mut Head,
    own: Option<usize>,
    mode: ReadMode,
) -> Result<Seen, AbortReason> {
    let seen = match mode {
        ReadMode::Locked { exclusive } => read_locked(access, buffer, table, head, own, exclusive)?,
        ReadMode::Ordered { at, exclusive } => {
            read_ordered(access, buffer, table, head, own, at, exclusive)?
        }
        _ => unreachable!("only the locking modes"),
    };
    let epoch = match seen {
        Seen::Own(_) => Epoch::NEVER,
        Seen::Current(word) => word.tid().epoch(),
        Seen::AsOf(state) => state.tid.epoch(),
    };
    access.note_unrecorded(epoch);
    Ok(seen)
}

/// An MV2PL read (`mv2pl.rs`): the current state under the transaction's lock on `head`.
fn read_locked(
    access: &mut AccessSet,
    buffer: &mut Vec<u8>,
    table: TableId,
    head: *mut Head,
    own: Option<usize>,
    exclusive: bool,
) -> Result<Seen, AbortReason> {
    let index = mv2pl::lock(access, head, table, own, exclusive)?;
    // SAFETY: reached through an index while pinned.
    let word = Silo::read(unsafe { &*head }, buffer)?;
    if !word.is_latest() {
        // Unlinked before we locked it: the caller looks again, and the lock goes now, since
        // an unlinked record's memory may be reclaimed once this transaction is kicked.
        mv2pl::unlock(access, index);
    }
    Ok(Seen::Current(word))
}

/// An MVTO read at `at` (`mvto.rs`): the version visible at `at`, after raising the current
/// version's read timestamp when that is the one read; under the write lock when `exclusive`.
fn read_ordered(
    access: &mut AccessSet,
    buffer: &mut Vec<u8>,
    table: TableId,
    head: *mut Head,
    own: Option<usize>,
    at: Tid,
    exclusive: bool,
) -> Result<Seen, AbortReason> {
    let owned = own.is_some_and(|index| access.entries[index].held == Held::Write);
    // SAFETY: reached through an index while pinned.
    let head_ref = unsafe { &*head };
    if exclusive || owned {
        let index = mvto::lock(access, head, table, own, at, true)?;
        let word = Silo::read(head_ref, buffer)?;
        if !word.is_latest() {
            // Unlinked (or an insert given up) before we locked it: the caller looks again,
            // and the lock goes now, as in `read_locked`.
            mvto::unlock(access, index);
            return Ok(Seen::Current(word));
        }
        if word.tid() > at {
            // A version newer than our timestamp: we may not write over it.
            return Err(AbortReason::WriteConflict);
        }
        return Ok(Seen::Current(word));
    }
    // A current version newer than `at` stays newer: what we read is then an older version,
    // which nobody can write any more.
    if head_ref.word().tid() <= at {
        mvto::read_current(head, at)?;
    }
    let seen = head_ref.read_as_of(at, buffer).map_err(|Busy| AbortReason::RecordBusy)?;
    Ok(Seen::AsOf(seen))
}

/// The write lock of a locking protocol (`mvto`, `mv2pl`) on `head`, taken before a write;
/// returns the access position that records it.
fn lock_for_write(
    state: &mut TxnState,
    head: *mut Head,
    table: TableId,
    own: Option<usize>,
) -> Result<usize, AbortReason> {
    match state.rules.locking {
        Locking::TwoPhase => mv2pl::lock(&mut state.access, head, table, own, true),
        Locking::Timestamps => {
            let ts = state.begin.expect("multi-version transactions have a timestamp");
            mvto::lock(&mut state.access, head, table, own, ts, state.rules.commit_at_begin)
        }
        Locking::None => unreachable!("only locking protocols lock before commit"),
    }
}

/// The trace event of an index probe for `key` (`why`: 0 a lookup, 1 a write).
#[cfg(feature = "ssn-trace")]
fn trace_probe(key: &[u8], probe: &Probe, why: u8) -> crate::trace::Ev {
    crate::trace::Ev::Probe {
        key: crate::trace::key_u64(key),
        head: probe.value.unwrap_or(0),
        node: probe.leaf.node_address() as u64,
        ver: probe.leaf.version(),
        why,
    }
}

/// After a point read or write found the key's record absent (an uncommitted insert, or a
/// deleted row): records the leaf that holds it, as for a key the index does not have. The
/// record may leave the index before the transaction commits (the insert rolls back, or the
/// deleted record is unlinked), and a later insert of the key then makes a new record: the
/// stamps or versions left on the old one no longer reach it. The leaf does: the removal
/// changes it (node validation), and the new insert changes it after, which the serial safety
/// net's leaf stamps and MVTO's leaf timestamps order (`ssn.rs`, `mvto.rs`, PHANTOMS). Where
/// nodes are not validated, neither are phantoms; a validated read (`get_for_update`) of the
/// record sees its word change when it leaves.
#[inline]
fn absent_record_leaf(state: &mut TxnState, probe: Probe, table: TableId) {
    if state.rules.validate_nodes || state.access.watching {
        state.nodes.push(probe.leaf, false, LeafOwner::primary(table));
    }
}

/// Whether every validated observation (a read, or the read before an update or delete) still
/// holds: the commit-time check, made early. A record some committer has locked counts as
/// changed.
fn reads_still_valid(state: &TxnState) -> bool {
    state.access.entries.iter().all(|entry| {
        // SAFETY: heads in the access set were reached while pinned; the worker stays pinned.
        !entry.validate || unsafe { (*entry.head).word() } == entry.observed
    })
}

/// A READ COMMITTED statement's change of one row, which commit applies again to the row it
/// locks when another transaction changed it in between ([`Txn::update_recomputable`]).
pub trait Recompute: Send {
    /// Writes into `out` the row the statement makes of `current`; `false` if it cannot (a
    /// value out of range, a constraint), and the commit then aborts as it would without it.
    fn recompute(&mut self, current: &[u8], out: &mut Vec<u8>) -> bool;
}

/// The transaction's [`Recompute`]s, by access-set position.
#[derive(Default)]
pub(crate) struct Recomputes(pub Vec<(u32, Box<dyn Recompute>)>);

impl std::fmt::Debug for Recomputes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recomputes({})", self.0.len())
    }
}

/// `TxnState::last_written` after a write of a row the transaction had written already.
const NOT_RECOMPUTABLE: u32 = u32::MAX;

/// The row of an own access, if it has one.
fn own_row(access: &AccessSet, index: usize) -> Option<Span> {
    let entry = &access.entries[index];
    matches!(entry.kind, Kind::Update | Kind::Insert).then_some(entry.value)
}

impl<'w> Txn<'w> {
    pub(crate) fn new(worker: &'w mut Worker, interactive: bool) -> Self {
        Txn { worker, interactive }
    }

    pub fn isolation(&self) -> Isolation {
        self.worker.txn.isolation
    }

    /// The epoch a snapshot transaction reads at.
    pub fn snapshot_epoch(&self) -> Option<Epoch> {
        self.worker.txn.snapshot
    }

    /// The read timestamp under a multi-version protocol (`None` under Silo and for snapshot
    /// transactions).
    pub fn read_timestamp(&self) -> Option<Tid> {
        self.worker.txn.begin
    }

    /// Starts a new statement. Under a multi-version protocol at READ COMMITTED, the reads
    /// that follow see every commit made before this call and nothing of one made after (a
    /// snapshot per statement, as in PostgreSQL); otherwise nothing changes.
    pub fn next_statement(&mut self) -> Result<()> {
        self.active()?;
        let worker = &mut *self.worker;
        if worker.txn.begin.is_none() || worker.txn.isolation != Isolation::ReadCommitted {
            return Ok(());
        }
        let epochs = &worker.shared.epochs;
        if worker.txn.rules.statement_snapshots {
            // MVTO: leave out the transactions that took earlier timestamps and have not yet
            // begun to install (`mvto.rs`, READ).
            epochs.take_statement_snapshot(worker.slot, &mut worker.txn.statement);
            worker.txn.begin = Some(worker.txn.statement.at());
        } else {
            worker.txn.begin = Some(Tid::from_u64(epochs.renew_reader(worker.slot)));
        }
        Ok(())
    }

    /// Runs `wait` with the transaction suspended, as between two calls of an interactive
    /// transaction: the ticker may give up on it if the wait outlasts
    /// `Config::idle_transaction_epochs_max`, and it then fails with `IdleTimeout` here, so a
    /// long wait never holds back reclamation. For waits outside the engine (row locks).
    pub fn pause<R>(&mut self, wait: impl FnOnce() -> R) -> Result<R> {
        self.active()?;
        if !self.interactive {
            return Ok(wait());
        }
        self.worker.suspend();
        let waited = wait();
        self.worker.resume()?;
        Ok(waited)
    }

    /// How many records the transaction has recorded so far: each read it will validate and
    /// each write (its access set; what commit locks and checks).
    pub fn recorded(&self) -> usize {
        self.worker.txn.access.entries.len()
    }

    /// Whether an earlier operation aborted the transaction (it can only roll back).
    pub fn is_aborted(&self) -> bool {
        matches!(self.worker.txn.status, Status::Poisoned(_))
    }

    #[inline]
    fn active(&self) -> Result<()> {
        match self.worker.txn.status {
            Status::Active => Ok(()),
            Status::Poisoned(reason) => Err(Error::Aborted(reason)),
            Status::Idle => Err(Error::NoTransaction),
        }
    }

    #[inline]
    fn writable(&self) -> Result<()> {
        self.active()?;
        if self.worker.txn.snapshot.is_some() {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }

    fn found(&self, found: Found) -> Option<&[u8]> {
        let state = &self.worker.txn;
        match found {
            Found::None => None,
            Found::Buffer => Some(&state.read_buffer),
            Found::Own(span) => Some(state.access.slice(span)),
        }
    }

    /// The row with primary key `key`.
    pub fn get(&mut self, table: &TableRef, key: &[u8]) -> Result<Option<&[u8]>> {
        let found = self.lookup(table, key, false)?;
        Ok(self.found(found))
    }

    /// The row with primary key `key`, re-checked at commit at every isolation level (like
    /// `SELECT ... FOR UPDATE`: a read-modify-write through it cannot lose an update).
    pub fn get_for_update(&mut self, table: &TableRef, key: &[u8]) -> Result<Option<&[u8]>> {
        self.writable()?;
        let found = self.lookup(table, key, true)?;
        Ok(self.found(found))
    }

    fn lookup(&mut self, table: &TableRef, key: &[u8], for_update: bool) -> Result<Found> {
        self.active()?;
        check_key(key)?;
        let table_id = self.worker.register_table(table);
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        let probe = table.primary.get(key, &pin);
        self.lookup_probed(table, table_id, key, probe, for_update)
    }

    /// A lookup whose first index probe was made (by `get` or `get_group`).
    fn lookup_probed(
        &mut self,
        table: &Table,
        table_id: TableId,
        key: &[u8],
        mut probe: Probe,
        for_update: bool,
    ) -> Result<Found> {
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        let state = &mut self.worker.txn;
        if let Some(at) = state.snapshot {
            let Some(head) = probe.value else {
                return Ok(Found::None);
            };
            let present =
                read_snapshot(&mut state.access, head as *mut Head, at, &mut state.read_buffer);
            if present {
                cooperative::after_read(self.worker, table_id, key, head as *mut Head);
            }
            return Ok(if present { Found::Buffer } else { Found::None });
        }
        let validate = for_update || state.rules.validate_reads;
        let mode = ReadMode::of(state, validate);
        for attempt in 0..LOOKUP_ATTEMPTS_MAX {
            if attempt > 0 {
                probe = table.primary.get(key, &pin);
            }
            trace_ev!(trace_probe(key, &probe, 0));
            let Some(raw) = probe.value else {
                if for_update || state.rules.validate_nodes || state.access.watching {
                    state.nodes.push(probe.leaf, for_update, LeafOwner::primary(table_id));
                }
                return Ok(Found::None);
            };
            let seen = observe(
                &mut state.access,
                &mut state.read_buffer,
                table_id,
                raw as *mut Head,
                validate,
                mode,
                &state.statement,
            )
            .map_err(|reason| {
                poison_at(state, reason, Site::record(table_id, raw as *mut Head), key)
            })?;
            match seen {
                Seen::Own(index) => {
                    return Ok(own_row(&state.access, index).map_or(Found::None, Found::Own));
                }
                Seen::Current(word) if !word.is_latest() => continue,
                Seen::AsOf(seen) if !seen.current.is_latest() => continue,
                Seen::Current(word) if word.is_absent() => {
                    absent_record_leaf(state, probe, table_id);
                    return Ok(Found::None);
                }
                Seen::AsOf(seen) if !seen.present => {
                    absent_record_leaf(state, probe, table_id);
                    return Ok(Found::None);
                }
                Seen::Current(_) | Seen::AsOf(_) => {
                    state.last_lookup.remember(table_id, key, raw as *mut Head);
                    cooperative::after_read(self.worker, table_id, key, raw as *mut Head);
                    return Ok(Found::Buffer);
                }
            }
        }
        Err(poison_at(state, AbortReason::ReadValidation, Site::key_of(table_id), key))
    }

    /// Looks `keys` up a group at a time (`BTree::get_group`, which overlaps their cache
    /// misses) and calls `each(self, i, found)` for every `keys[i]` in order, exactly as
    /// one lookup after another would.
    fn lookup_many<K: AsRef<[u8]>>(
        &mut self,
        table: &TableRef,
        keys: &[K],
        for_update: bool,
        mut each: impl FnMut(&mut Self, usize, &[u8], Found) -> Result<()>,
    ) -> Result<()> {
        self.active()?;
        for key in keys {
            check_key(key.as_ref())?;
        }
        let table_id = self.worker.register_table(table);
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        for (group_index, group) in keys.chunks(GROUP_KEYS).enumerate() {
            let mut probes: [Option<Probe>; GROUP_KEYS] = [None; GROUP_KEYS];
            table.primary.get_group(group, &pin, |index, probe| {
                if let Some(head) = probe.value {
                    Head::prefetch(head as *const Head);
                }
                probes[index] = Some(probe);
            });
            for (index, key) in group.iter().enumerate() {
                let key = key.as_ref();
                let probe = probes[index].unwrap_or_else(|| table.primary.get(key, &pin));
                let found = self.lookup_probed(table, table_id, key, probe, for_update)?;
                each(self, group_index * GROUP_KEYS + index, key, found)?;
            }
        }
        Ok(())
    }

    /// Reads the rows with primary keys `keys`, calling `visit(i, row)` for each `keys[i]` in
    /// order: the same reads as [`Txn::get`] of each key in turn, but the index is searched
    /// for several keys at once so that their cache misses overlap (a batched point lookup,
    /// for joins and `IN` lists).
    pub fn get_many<K: AsRef<[u8]>>(
        &mut self,
        table: &TableRef,
        keys: &[K],
        mut visit: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        self.lookup_many(table, keys, false, |txn, index, _, found| {
            visit(index, txn.found(found));
            Ok(())
        })
    }

    /// Read-modify-write of the row with primary key `key`: `change` edits a copy of the row
    /// and returns whether to write it back. The read is re-checked at commit at every
    /// isolation level (as by [`Txn::get_for_update`]), so such an update is never lost.
    /// Returns whether the row exists.
    pub fn update_with(
        &mut self,
        table: &TableRef,
        key: &[u8],
        change: impl FnOnce(&mut Vec<u8>) -> bool,
    ) -> Result<bool> {
        let mut change = Some(change);
        let updated = self
            .update_many(table, &[key], |_, row| change.take().is_some_and(|change| change(row)))?;
        Ok(updated.0 == 1)
    }

    /// [`Txn::update_with`] for each of `keys`, with the batched index search of
    /// [`Txn::get_many`]: `change(i, row)` edits a copy of the row of `keys[i]`. Returns how
    /// many rows existed and how many were written.
    pub fn update_many<K: AsRef<[u8]>>(
        &mut self,
        table: &TableRef,
        keys: &[K],
        mut change: impl FnMut(usize, &mut Vec<u8>) -> bool,
    ) -> Result<(usize, usize)> {
        self.writable()?;
        bytes_writable(table)?;
        let (mut existing, mut written) = (0, 0);
        let mut row = std::mem::take(&mut self.worker.txn.scratch_entry);
        let result = self.lookup_many(table, keys, true, |txn, index, key, found| {
            let Some(current) = txn.found(found) else {
                return Ok(());
            };
            existing += 1;
            row.clear();
            row.extend_from_slice(current);
            if change(index, &mut row) {
                check_value(&row)?;
                // The lookup left the head in the last-lookup cache: no second search.
                txn.write(table, key, Some(&row), false)?;
                written += 1;
            }
            Ok(())
        });
        self.worker.txn.scratch_entry = row;
        result.map(|()| (existing, written))
    }

    /// Replaces the row with primary key `key`. Returns whether there was a row.
    pub fn update(&mut self, table: &TableRef, key: &[u8], value: &[u8]) -> Result<bool> {
        self.update_declared(table, key, value, false)
    }

    /// As [`Txn::update`], for a new row whose secondary-index keys are those of the row the
    /// transaction read for it (a SQL UPDATE that assigns no indexed column). The claim is
    /// taken only over a validated read of the row in this transaction ([`Txn::get_for_update`],
    /// or any read where reads are validated), and only when commit finds that read row is the
    /// one it replaces; commit then neither extracts nor compares the keys. Otherwise (after a
    /// READ COMMITTED read, which records nothing) it compares them as for any update. Debug
    /// builds compare them anyway and panic on a false claim.
    pub fn update_same_keys(&mut self, table: &TableRef, key: &[u8], value: &[u8]) -> Result<bool> {
        self.update_declared(table, key, value, true)
    }

    fn update_declared(
        &mut self,
        table: &TableRef,
        key: &[u8],
        value: &[u8],
        same_keys: bool,
    ) -> Result<bool> {
        bytes_writable(table)?;
        check_value(value)?;
        self.write(table, key, Some(value), same_keys)
    }

    /// Whether [`Txn::update_recomputable`] takes its `recompute` here: Silo at READ
    /// COMMITTED, where nothing the transaction read is validated but the rows it updated.
    pub fn recomputes_updates(&self) -> bool {
        let state = &self.worker.txn;
        state.begin.is_none()
            && state.snapshot.is_none()
            && state.isolation == Isolation::ReadCommitted
    }

    /// As [`Txn::update`], for an update that a statement computed from the row it read with
    /// [`Txn::get_for_update`] in this transaction (SQL's `UPDATE ... SET x = x + 1 WHERE key =
    /// ...` at READ COMMITTED). If another transaction commits a change to the row before this
    /// one commits, commit asks `recompute` for the row the statement makes of the row it then
    /// locks, instead of aborting: PostgreSQL's READ COMMITTED applies an UPDATE to the newest
    /// committed row the same way. `recompute` is dropped, and a concurrent change aborts the
    /// commit as before, once the transaction reads the row it wrote or writes it again (it
    /// has seen the statement's result), and where [`Txn::recomputes_updates`] is false.
    /// `same_keys` is [`Txn::update_same_keys`]'s claim, for the recomputed row too.
    pub fn update_recomputable(
        &mut self,
        table: &TableRef,
        key: &[u8],
        value: &[u8],
        same_keys: bool,
        recompute: Box<dyn Recompute>,
    ) -> Result<bool> {
        let recomputes = self.recomputes_updates();
        // A change since the read is what commit recomputes: not a reason to abort now.
        self.worker.txn.recomputing = recomputes;
        let updated = self.update_declared(table, key, value, same_keys);
        self.worker.txn.recomputing = false;
        let updated = updated?;
        let position = self.worker.txn.last_written;
        if updated && recomputes && position != NOT_RECOMPUTABLE {
            let state = &mut self.worker.txn;
            let entry = &mut state.access.entries[position as usize];
            if entry.kind == Kind::Update && entry.validate && !entry.fresh {
                entry.recompute = true;
                state.recomputes.0.retain(|(at, _)| *at != position);
                state.recomputes.0.push((position, recompute));
            }
        }
        Ok(updated)
    }

    /// Deletes the row with primary key `key`. Returns whether there was a row.
    pub fn delete(&mut self, table: &TableRef, key: &[u8]) -> Result<bool> {
        self.write(table, key, None, false)
    }

    /// Inserts the row, or replaces it if the key exists.
    pub fn put(&mut self, table: &TableRef, key: &[u8], value: &[u8]) -> Result<()> {
        for _ in 0..LOOKUP_ATTEMPTS_MAX {
            if self.update(table, key, value)? {
                return Ok(());
            }
            match self.insert(table, key, value) {
                Err(Error::DuplicateKey { index: None, .. }) => continue,
                other => return other,
            }
        }
        let state = &mut self.worker.txn;
        Err(poison_at(state, AbortReason::InsertConflict, Site::key_of(table.id()), key))
    }

    /// `same_keys`: see [`Txn::update_same_keys`].
    fn write(
        &mut self,
        table: &TableRef,
        key: &[u8],
        value: Option<&[u8]>,
        same_keys: bool,
    ) -> Result<bool> {
        self.writable()?;
        check_key(key)?;
        let table_id = self.worker.register_table(table);
        // A read of this key just before (read-modify-write) found its head: a head stays the
        // key's while it is LATEST, which `write_existing` checks, so the index need not be
        // searched again.
        if let Some(head) = self.worker.txn.last_lookup.recall(table_id, key)
            && let Some(found) =
                self.write_existing(table, table_id, head, key, value, same_keys)?
        {
            return Ok(found);
        }
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        for _ in 0..LOOKUP_ATTEMPTS_MAX {
            let probe = table.primary.get(key, &pin);
            trace_ev!(trace_probe(key, &probe, 1));
            let Some(raw) = probe.value else {
                let state = &mut self.worker.txn;
                if state.rules.validate_nodes {
                    state.nodes.push(probe.leaf, false, LeafOwner::primary(table_id));
                }
                return Ok(false);
            };
            if let Some(found) =
                self.write_existing(table, table_id, raw as *mut Head, key, value, same_keys)?
            {
                if !found {
                    absent_record_leaf(&mut self.worker.txn, probe, table_id);
                }
                return Ok(found);
            }
        }
        let state = &mut self.worker.txn;
        Err(poison_at(state, AbortReason::ReadValidation, Site::key_of(table_id), key))
    }

    /// Update or delete of a key the index has. `None` means look again.
    fn write_existing(
        &mut self,
        table: &Table,
        table_id: TableId,
        head: *mut Head,
        key: &[u8],
        value: Option<&[u8]>,
        same_keys: bool,
    ) -> Result<Option<bool>> {
        let worker = &mut *self.worker;
        let own = worker.txn.access.find(head);
        // The caller's claim of the same secondary keys is about the row it read: known only
        // from a validated read (`get_for_update`), which commit checks is the row it replaces.
        let same_keys =
            same_keys && own.is_some_and(|index| worker.txn.access.entries[index].validate);
        if let Some(index) = own {
            worker.txn.access.before_write(index);
            let entry = worker.txn.access.entries[index];
            worker.txn.access.entries[index].recompute = false;
            // Written before by this transaction: the new row is made from its own, which no
            // commit may make again from another (`update_recomputable`).
            worker.txn.last_written = NOT_RECOMPUTABLE;
            match (entry.kind, value) {
                (Kind::Update, Some(value)) => {
                    let span = worker.txn.access.store(value);
                    let entry = &mut worker.txn.access.entries[index];
                    entry.value = span;
                    // Both rows keep the keys of the row read only if both writers said so.
                    entry.keys_unchanged &= same_keys;
                    return Ok(Some(true));
                }
                (Kind::Update, None) => {
                    let entry = &mut worker.txn.access.entries[index];
                    entry.kind = Kind::Delete;
                    entry.keys_unchanged = false;
                    return Ok(Some(true));
                }
                (Kind::Insert, Some(value)) => {
                    if table.has_secondaries() {
                        secondary::remove_own_entries(worker, head);
                        let mark = worker.txn.inserted_entries.len();
                        if let Err(error) =
                            secondary::insert_entries(worker, table, head, key, value)
                        {
                            // The old entries are gone and the new ones cannot all be made: the
                            // transaction failed half-way and can only roll back.
                            secondary::undo_entries(worker, mark);
                            let reason = error.abort_reason().unwrap_or(AbortReason::WriteConflict);
                            poison(&mut worker.txn, reason);
                            return Err(error);
                        }
                    }
                    let span = worker.txn.access.store(value);
                    worker.txn.access.entries[index].value = span;
                    return Ok(Some(true));
                }
                (Kind::Insert, None) => {
                    secondary::remove_own_entries(worker, head);
                    worker.txn.access.entries[index].kind = Kind::Nothing;
                    worker.txn.undid_inserts = true;
                    return Ok(Some(true));
                }
                (Kind::Delete | Kind::Nothing, _) => return Ok(Some(false)),
                (Kind::Read, _) => {}
            }
        }
        let state = &mut worker.txn;
        let site = Site::record(table_id, head);
        let own = match state.rules.locking {
            Locking::None => own,
            _ => Some(
                lock_for_write(state, head, table_id, own)
                    .map_err(|r| poison_at(state, r, site, key))?,
            ),
        };
        // SAFETY: reached through the index while pinned.
        let word = unsafe { &*head }
            .stable_word()
            .map_err(|Busy| poison_at(state, AbortReason::RecordBusy, site, key))?;
        if !word.is_latest() {
            if let Some(index) = own {
                // An unlinked record's memory may be reclaimed once this transaction is kicked.
                unlock(state, index);
            }
            return Ok(None);
        }
        if mv::write_conflicts(state, word) {
            // Changed (or deleted) since the read timestamp: first committer wins.
            return Err(poison_at(state, AbortReason::WriteConflict, site, key));
        }
        if let Some(index) = own {
            let entry = state.access.entries[index];
            if entry.validate && entry.observed != word && !state.recomputing {
                return Err(poison_at(state, AbortReason::ReadValidation, site, key));
            }
        }
        if word.is_absent() {
            if own.is_none() && (state.rules.validate_reads || state.rules.ssn) {
                let validate = state.rules.validate_reads;
                state.access.push(Access::read(head, table_id, word, validate));
            }
            return Ok(Some(false));
        }
        let key_span = state.access.store(key);
        let value_span = value.map(|value| state.access.store(value)).unwrap_or_default();
        let kind = if value.is_some() { Kind::Update } else { Kind::Delete };
        state.updates_indexed_rows |= kind == Kind::Update && table.has_secondaries();
        match own {
            Some(index) => {
                let entry = &mut state.access.entries[index];
                entry.kind = kind;
                entry.key = key_span;
                entry.value = value_span;
                entry.keys_unchanged = same_keys && kind == Kind::Update;
                state.last_written = index as u32;
            }
            None => {
                state.last_written = state.access.entries.len() as u32;
                let validate = state.rules.validate_reads;
                state.access.push(Access {
                    head,
                    table: table_id,
                    kind,
                    observed: word,
                    prior: word,
                    validate,
                    fresh: false,
                    locked: false,
                    latched: false,
                    held: Held::Nothing,
                    value: value_span,
                    key: key_span,
                    // No read of the row before: nothing the claim could be about.
                    keys_unchanged: false,
                    recompute: false,
                });
            }
        }
        Ok(Some(true))
    }

    /// Visits the rows with primary keys in `(low, high)` in `direction` order, at most `limit`
    /// of them, and replaces each row for which `change` writes a new one (returning `true`).
    /// Returns how many rows were replaced. The rows are written through the records the scan
    /// found, without searching the index again (a SQL `UPDATE ... WHERE key BETWEEN`).
    pub fn update_range(
        &mut self,
        table: &TableRef,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
        mut change: impl FnMut(&[u8], &[u8], &mut Vec<u8>) -> bool,
    ) -> Result<usize> {
        self.writable()?;
        bytes_writable(table)?;
        // Scan first, collecting (head, key, new row); write afterwards, since writes change
        // the transaction's sets that the scan is reading through.
        let mut pending = std::mem::take(&mut self.worker.txn.pending_updates);
        let mut bytes = std::mem::take(&mut self.worker.txn.pending_bytes);
        pending.clear();
        bytes.clear();
        let mut row = Vec::new();
        std::mem::swap(&mut row, &mut self.worker.txn.scratch_entry);
        let scanned = self.scan_heads(table, low, high, direction, limit, |head, key, value| {
            row.clear();
            if change(key, value, &mut row) {
                let start = bytes.len();
                bytes.extend_from_slice(key);
                bytes.extend_from_slice(&row);
                pending.push((head, start as u32, key.len() as u32, row.len() as u32));
            }
            true
        });
        std::mem::swap(&mut row, &mut self.worker.txn.scratch_entry);
        let result = scanned.and_then(|_| {
            let table_id = self.worker.register_table(table);
            let mut updated = 0;
            for &(head, start, key_len, row_len) in &pending {
                let (start, key_len, row_len) =
                    (start as usize, key_len as usize, row_len as usize);
                let key = &bytes[start..start + key_len];
                let value = &bytes[start + key_len..start + key_len + row_len];
                check_value(value)?;
                match self.write_existing(table, table_id, head, key, Some(value), false)? {
                    Some(true) => updated += 1,
                    Some(false) => {}
                    // Unlinked since the scan: the key has a new head now.
                    None => updated += usize::from(self.write(table, key, Some(value), false)?),
                }
            }
            Ok(updated)
        });
        self.worker.txn.pending_updates = pending;
        self.worker.txn.pending_bytes = bytes;
        result
    }
}
