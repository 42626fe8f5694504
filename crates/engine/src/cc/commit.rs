//! The commit skeleton (steps numbered as in `cc/mod.rs` and `silo.rs`), abort, and the end
//! of every transaction.

use super::access::{AccessSet, Held, Kind, Span};
use super::conflict;
use super::mv::{self, Mv, READERS_REFRESH_COMMITS};
use super::mvto;
use super::secondary;
use super::silo::{Hooks, Silo};
use super::ssn;
use super::txn::{Keep, pinned, release_locks, unlock};
use crate::cc::cooperative;
use crate::cc::worker::{CommitInfo, Status, TxnState, Worker};
use crate::error::{AbortReason, Error, Result};
use crate::stats::Counters;
use crate::storage::record::Busy;
use crate::storage::{Head, IndexPointers, Table, Tid, TidWord, shared};
use crate::sync::Epoch;
use crate::sync::Retention;
use crate::wal::format;
use crate::wal::log::Log;
use std::sync::atomic::{Ordering, fence};

/// Clean-up tasks run at the end of one transaction at most: enough to keep up with a worker
/// that deletes several rows per transaction, small enough to bound the latency it adds.
const TASKS_PER_TRANSACTION_MAX: usize = 64;

/// Transactions between two looks at the orphaned garbage of departed workers.
const ORPHAN_CHECK_INTERVAL: u64 = 1024;

pub(crate) fn commit(worker: &mut Worker) -> Result<CommitInfo> {
    if worker.txn.begin.is_some() { commit_with::<Mv>(worker) } else { commit_with::<Silo>(worker) }
}

fn commit_with<P: Hooks>(worker: &mut Worker) -> Result<CommitInfo> {
    match worker.txn.status {
        Status::Idle => return Err(Error::NoTransaction),
        Status::Poisoned(reason) => {
            abort(worker, Some(reason));
            return Err(Error::Aborted(reason));
        }
        Status::Active => {}
    }
    if worker.txn.snapshot.is_some() {
        // What it read is durable once the newest state it read is (`Worker::wait_durable`
        // waits on the last commit's epoch). That is at or below the snapshot epoch, and
        // usually durable already; after a log failure, readers of durable rows are still
        // acknowledged.
        let epoch = read_epoch(&worker.txn);
        finish(worker);
        bump_commits(worker);
        let info = CommitInfo { tid: Tid::ZERO, epoch };
        worker.last_commit = info;
        return Ok(info);
    }
    // 1. Lock the write set in address order.
    if let Err(reason) = lock_write_set(&mut worker.txn) {
        abort(worker, Some(reason));
        return Err(Error::Aborted(reason));
    }
    // A failed log takes no more writes.
    if !worker.txn.write_order.is_empty()
        && let Some(log) = &worker.shared.log
        && let Err(error) = log.check()
    {
        abort(worker, None);
        return Err(error);
    }
    // 2. Secondary entries of updates that change a secondary key.
    if worker.txn.updates_indexed_rows
        && let Err(error) = secondary::before_validation(worker)
    {
        abort(worker, error.abort_reason());
        return Err(error);
    }
    // 1b. The serial safety net latches everything read or written (`ssn.rs`).
    let ssn = worker.txn.rules.ssn;
    if ssn && let Err(reason) = ssn::latch(&mut worker.txn) {
        abort(worker, Some(reason));
        return Err(Error::Aborted(reason));
    }
    let writes = !worker.txn.write_order.is_empty();
    // 3. The serialization point. Announce the commit first, so the stable epoch waits for
    // its installs (`sync::epoch`); the protocol's fence orders the two.
    let epoch = if writes {
        worker.shared.epochs.enter_commit(worker.slot, worker.txn.pinned_at);
        P::serialization_point(&worker.shared.epochs)
    } else if ssn {
        worker.shared.epochs.global()
    } else {
        Epoch::NEVER
    };
    // SAFETY: commit runs while the worker is pinned and in a call.
    let pin = unsafe { pinned() };
    // Under the serial safety net the commit stamp comes first (read-only transactions too),
    // and scanned leaves carry it before they are validated.
    let stamp = if ssn {
        // Before the stamp: a later scanner's stamp must not hide an earlier one's (`ssn.rs`).
        let leaves_high = ssn::inserted_leaves_high(&worker.txn, &pin);
        let Some(stamp) = worker.shared.epochs.next_timestamp(epoch) else {
            abort(worker, Some(AbortReason::SequenceExhausted));
            return Err(Error::Aborted(AbortReason::SequenceExhausted));
        };
        trace_ev!(crate::trace::Ev::Stamp { c: stamp.as_u64(), leaves_high: leaves_high.as_u64() });
        let leaves_high = ssn::leaves_high_below(leaves_high, stamp);
        ssn::publish_scans(&worker.txn, stamp, &pin);
        Some((stamp, leaves_high))
    } else {
        None
    };
    // 4. Validation. Under MVTO, scanned leaves carry the timestamp first, and leaves our
    // inserts changed must not carry a later one (`mvto.rs`, PHANTOMS).
    let ordered = if worker.txn.rules.commit_at_begin { worker.txn.begin } else { None };
    if let Some(ts) = ordered
        && worker.txn.rules.validate_nodes
    {
        mvto::publish_scans(&worker.txn, ts, &pin);
    }
    let validated = P::validate(&worker.txn, &pin);
    trace_ev!(crate::trace::Ev::Validated { ok: validated.is_ok() });
    if let Err(reason) = validated {
        abort(worker, Some(reason));
        return Err(Error::Aborted(reason));
    }
    if let Some(ts) = ordered
        && let Err(reason) = mvto::check_inserted_leaves(&worker.txn, ts, &pin)
    {
        abort(worker, Some(reason));
        return Err(Error::Aborted(reason));
    }
    let check = stamp.map(|(stamp, leaves)| ssn::exclusion_check(&worker.txn, stamp, leaves));
    let stamp = stamp.map(|(stamp, _)| stamp);
    let low = match check {
        None => None,
        Some(Ok(low)) => Some(low),
        Some(Err(reason)) => {
            abort(worker, Some(reason));
            return Err(Error::Aborted(reason));
        }
    };
    // 5. The commit TID.
    let tid = match (stamp, ordered) {
        _ if !writes => Tid::ZERO,
        (Some(stamp), _) => stamp,
        // MVTO commits at its timestamp.
        (None, Some(ts)) => ts,
        (None, None) => {
            match P::commit_tid(&worker.txn, worker.last_tid, epoch, &worker.shared.epochs) {
                Ok(tid) => tid,
                Err(reason) => {
                    abort(worker, Some(reason));
                    return Err(Error::Aborted(reason));
                }
            }
        }
    };
    // 6. Install and release; log the new images before leaving the commit, so that the
    // stable epoch covers the record (`wal::log`).
    let epoch = if writes {
        if ordered.is_some() {
            // MVTO: every write is locked and the commit cannot fail now. Statements that
            // begin from here on take it whole, waiting on its locked records; before the
            // write locks go, so that nobody reads its writes while statements still leave it
            // out (`mvto.rs`, READ).
            worker.shared.epochs.leave_ordered(worker.slot);
        }
        if worker.txn.begin.is_some()
            && worker.transactions_ended.is_multiple_of(READERS_REFRESH_COMMITS)
        {
            worker.shared.epochs.refresh_readers_low();
        }
        install_write_set(worker, tid, low);
        if worker.shared.config.index_pointers == IndexPointers::Physical {
            // The pending entries, now that each version has its own.
            secondary::undo_entries(worker, 0);
        }
        if ssn {
            ssn::release(&mut worker.txn, stamp);
        }
        release_locks(&mut worker.txn, Keep::UndoneInserts);
        if let Some(log) = &worker.shared.log {
            log_write_set(log, worker, tid);
        }
        worker.last_tid = tid;
        worker.shared.epochs.leave_commit(worker.slot);
        tid.epoch()
    } else {
        if ssn {
            ssn::release(&mut worker.txn, stamp);
        }
        release_locks(&mut worker.txn, Keep::UndoneInserts);
        // Nothing logged means nothing waited for: skip the walk over the reads.
        if worker.shared.log.is_some() { read_epoch(&worker.txn) } else { Epoch::NEVER }
    };
    if worker.txn.undid_inserts {
        give_up_undone_inserts(worker);
    }
    // 7. Finish.
    bump_commits(worker);
    finish(worker);
    let info = CommitInfo { tid, epoch };
    worker.last_commit = info;
    Ok(info)
}

/// The newest epoch among the rows a read-only transaction saw: those its entries record,
/// and those it read without one.
fn read_epoch(state: &TxnState) -> Epoch {
    let recorded = state.access.entries.iter().map(|entry| entry.observed.epoch()).max();
    recorded.unwrap_or(Epoch::NEVER).max(state.access.unrecorded_epoch)
}

/// Appends the committed write set (new row images or the patches install chose, deletions)
/// to the worker's log buffer.
fn log_write_set(log: &Log, worker: &Worker, tid: Tid) {
    let txn = &worker.txn;
    log.append(worker.slot.index(), |out| {
        format::encode_txn_head(out, tid.as_u64(), txn.write_order.len() as u32);
        for (order, &position) in txn.write_order.iter().enumerate() {
            let entry = &txn.access.entries[position as usize];
            let (table, key) = (entry.table.0, txn.access.slice(entry.key));
            match entry.kind {
                Kind::Update | Kind::Insert => {
                    let row = txn.access.slice(entry.value);
                    match txn.patches.get(order).copied().flatten() {
                        Some((start, count, body)) => {
                            let edits = &txn.patch_edits[start as usize..][..count as usize];
                            format::encode_patch(out, table, key, row, edits, body as usize);
                        }
                        None => format::encode_write(out, table, key, Some(row)),
                    }
                }
                _ => format::encode_write(out, table, key, None),
            }
        }
    });
}

fn bump_commits(worker: &Worker) {
    Counters::bump(&worker.shared.counters(worker.slot).commits);
}

/// Step 1. Locks every written record in address order and checks each under its lock.
fn lock_write_set(state: &mut TxnState) -> Result<(), AbortReason> {
    // Multi-version first committer wins: written records must be unchanged since then.
    let unchanged_since = mv::unchanged_since(state);
    let TxnState { access, write_order, recomputes, scratch, scratch_entry, .. } = state;
    write_order.clear();
    for (position, entry) in access.entries.iter().enumerate() {
        if matches!(entry.kind, Kind::Update | Kind::Delete | Kind::Insert) {
            write_order.push(position as u32);
        }
    }
    write_order.sort_unstable_by_key(|&position| access.entries[position as usize].head as usize);
    for &position in write_order.iter() {
        let entry = &mut access.entries[position as usize];
        // SAFETY: written heads are reachable (updated, deleted) or owned (inserted) while pinned.
        let head = unsafe { &*entry.head };
        let word = head.lock().map_err(|Busy| AbortReason::RecordBusy)?;
        entry.locked = true;
        entry.prior = word;
        match entry.kind {
            Kind::Update | Kind::Delete => {
                if word.is_absent() || !word.is_latest() {
                    return Err(AbortReason::WriteConflict);
                }
                if unchanged_since.is_some_and(|begin| word.tid() > begin) {
                    return Err(AbortReason::WriteConflict);
                }
                if entry.validate && word != entry.observed {
                    let recomputed = entry.recompute
                        && recompute(head, recomputes, position, scratch, scratch_entry);
                    if !recomputed {
                        return Err(AbortReason::ReadValidation);
                    }
                    let span = access.store(scratch_entry);
                    let entry = &mut access.entries[position as usize];
                    entry.value = span;
                    entry.observed = word;
                }
            }
            Kind::Insert => {
                debug_assert!(word.is_claimed() && word.is_absent(), "inserts own their heads");
            }
            Kind::Read | Kind::Nothing => unreachable!("only writes are locked"),
        }
    }
    Ok(())
}

/// Applies the statement of the update at `position` again to the row of `head`, which this
/// commit locked after another transaction changed it: the new row goes to `out`. Whether the
/// statement could make one.
fn recompute(
    head: &Head,
    recomputes: &mut super::Recomputes,
    position: u32,
    current: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> bool {
    let Some((_, statement)) = recomputes.0.iter_mut().rev().find(|(at, _)| *at == position) else {
        return false;
    };
    out.clear();
    head.value_locked(current)
        && statement.recompute(current, out)
        && out.len() <= crate::limits::VALUE_BYTES_MAX
}

/// Step 6. Installs every write with `tid`, fixes secondary entries, and releases the locks.
/// `low`: the transaction's π under the serial safety net, the new versions' creator stamp.
fn install_write_set(worker: &mut Worker, tid: Tid, low: Option<Tid>) {
    // SAFETY: commit runs while pinned.
    let pin = unsafe { pinned() };
    let epochs = &worker.shared.epochs;
    let gc = worker.shared.config.gc;
    let retention = Retention { prune: gc.writers_prune(), ..epochs.retention() };
    let patching = worker.shared.config.log_patches && worker.shared.log.is_some();
    let Worker { tables, txn, arena, garbage, tasks, .. } = worker;
    txn.patches.clear();
    txn.patch_edits.clear();
    for order in 0..txn.write_order.len() {
        let entry = txn.access.entries[txn.write_order[order] as usize];
        let table = tables[entry.table.index()].as_deref().expect("registered table");
        // SAFETY: the head is locked by this commit.
        let head = unsafe { &*entry.head };
        let (value, new_word) = match entry.kind {
            Kind::Update | Kind::Insert => (Some(entry.value), TidWord::new(tid, TidWord::LATEST)),
            Kind::Delete => (None, TidWord::new(tid, TidWord::LATEST | TidWord::ABSENT)),
            Kind::Read | Kind::Nothing => unreachable!("only writes are installed"),
        };
        let secondaries = table.has_secondaries();
        // The replaced row, needed to find the secondary entries it alone produced (none, if
        // commit step 2 found the update leaves every key as it was; under physical pointers
        // its version's own entries, always).
        let mut old_row = std::mem::take(&mut txn.scratch);
        let old_tid = head.word().tid();
        let had_row = secondaries
            && (table.physical || !entry.keys_unchanged)
            && head.value_locked(&mut old_row);
        // The log's patch: the words the update changes in the row it replaces. (A table
        // with non-inline values stores references where the log has the row's bytes.)
        if patching {
            let patch = match value {
                Some(span) if entry.kind == Kind::Update && table.non_inline.is_none() => {
                    let start = txn.patch_edits.len();
                    let new_row = txn.access.slice(span);
                    let old_row = head.value_in_place_locked(new_row.len());
                    old_row
                        .and_then(|old| format::diff_rows(old, new_row, &mut txn.patch_edits))
                        .map(|body| {
                            let count = txn.patch_edits.len() - start;
                            (start as u32, count as u32, body as u32)
                        })
                }
                _ => None,
            };
            txn.patches.push(patch);
        }
        txn.dropped.reset(secondaries);
        let kept = {
            let row = match value {
                Some(span) if table.non_inline.is_some() => Some(handles_of(
                    &txn.access,
                    &mut txn.retained,
                    &mut txn.scratch_entry,
                    table,
                    span,
                )),
                span => span.map(|span| txn.access.slice(span)),
            };
            head.install(row, new_word, retention, arena, garbage, &mut txn.dropped)
        };
        if kept && gc.marks_dirty() {
            table.mark_dirty();
        }
        if secondaries
            && table.physical
            && let Some(span) = value
        {
            let TxnState { access, entry_scratch, .. } = &mut *txn;
            secondary::add_version_entries(
                table,
                entry_scratch,
                entry.head,
                access.slice(entry.key),
                access.slice(span),
                tid,
                &pin,
                garbage,
            );
        }
        if secondaries && (had_row || !txn.dropped.is_empty()) {
            let TxnState { access, entry_scratch, dropped, .. } = &mut *txn;
            secondary::after_install(
                table,
                entry_scratch,
                entry.head,
                access.slice(entry.key),
                (had_row && !kept).then_some((old_tid, old_row.as_slice())),
                value.map(|span| access.slice(span)),
                dropped,
                &pin,
                garbage,
            );
        }
        txn.scratch = old_row;
        if let Some(low) = low {
            ssn::stamp_install(head, low);
        }
        head.unlock_to(new_word);
        txn.access.entries[txn.write_order[order] as usize].locked = false;
        if entry.kind == Kind::Delete {
            tasks.push_unlink(entry.table, entry.head, new_word, txn.access.slice(entry.key));
        }
    }
}

/// The value handles of the version a non-inline table's patch at `span` makes (in the
/// transaction's scratch row, which nothing uses during commit).
#[cold]
#[inline(never)]
fn handles_of<'t>(
    access: &AccessSet,
    retained: &mut [u64],
    out: &'t mut Vec<u8>,
    table: &Table,
    span: Span,
) -> &'t [u8] {
    let layout = table.non_inline.expect("a non-inline table");
    shared::materialize(access.slice(span), layout.attributes, retained, out);
    out
}

/// Heads this transaction inserted and then deleted again: give them up as an abort would.
fn give_up_undone_inserts(worker: &mut Worker) {
    for position in 0..worker.txn.access.entries.len() {
        let entry = worker.txn.access.entries[position];
        if entry.kind == Kind::Nothing {
            release_insert(worker, position);
        }
    }
}

/// Gives up the head of an insert (or an insert deleted again): a fresh head leaves the index
/// and is retired, a claimed head gets its old word back. Only then does the protocol lock on
/// it go (`mvto`, `mv2pl`; `release_locks` kept it, `txn::Keep`).
fn release_insert(worker: &mut Worker, position: usize) {
    // SAFETY: called while pinned.
    let pin = unsafe { pinned() };
    let entry = worker.txn.access.entries[position];
    secondary::remove_own_entries(worker, entry.head);
    let Worker { tables, txn, garbage, .. } = worker;
    if entry.fresh {
        let table = tables[entry.table.index()].as_deref().expect("registered table");
        trace_ev!(crate::trace::Ev::Unlink { head: entry.head as u64, node: 1 });
        // After validation (or in an abort): no node set to keep valid.
        table.primary.remove(
            txn.access.slice(entry.key),
            Some(entry.head as u64),
            &pin,
            garbage,
            &mut (),
        );
        // Marks the head unlinked, then lets go of the lock, then retires it.
        secondary::abandon_fresh(entry.head, txn.rules.locking, garbage);
        txn.access.entries[position].held = Held::Nothing;
    } else {
        // SAFETY: the claimed head is owned by this transaction.
        unsafe { (*entry.head).set_owned_word(entry.observed) };
        if entry.held != Held::Nothing {
            unlock(txn, position);
        }
    }
}

/// Rolls the transaction back: removes its secondary entries, releases its locks, gives up its
/// inserts (and then their locks). `reason` is counted when the abort was not asked for.
pub(crate) fn abort(worker: &mut Worker, reason: Option<AbortReason>) {
    if worker.txn.status == Status::Idle {
        return;
    }
    trace_ev!(crate::trace::Ev::Abort { reason: reason.map_or(255, |r| r as u8) });
    // A transaction poisoned by an operation and then rolled back aborted for that reason.
    let reason = match (reason, worker.txn.status) {
        (None, Status::Poisoned(reason)) => Some(reason),
        _ => reason,
    };
    if worker.txn.rules.ssn {
        ssn::release(&mut worker.txn, None);
    }
    release_locks(&mut worker.txn, Keep::Inserts);
    if worker.txn.snapshot.is_none() {
        let mark = 0;
        secondary::undo_entries(worker, mark);
        // First every record lock the commit took, then the inserts: giving a head back waits
        // for anyone else holding its lock (`Head::set_owned_word`), who may be another
        // committer waiting to give back a head this one holds.
        for entry in worker.txn.access.entries.iter_mut().filter(|entry| entry.locked) {
            // SAFETY: locked by this commit.
            unsafe { (*entry.head).unlock_to(entry.prior) };
            entry.locked = false;
        }
        if let Some(reason) = reason {
            note_conflict(worker, reason);
        }
        for position in 0..worker.txn.access.entries.len() {
            if matches!(worker.txn.access.entries[position].kind, Kind::Insert | Kind::Nothing) {
                release_insert(worker, position);
            }
        }
    }
    if let Some(reason) = reason {
        Counters::bump(&worker.shared.counters(worker.slot).aborts[reason.index()]);
    }
    worker.shared.epochs.leave_commit(worker.slot);
    finish(worker);
}

/// Works out and counts where the abort happened (`cc/conflict.rs`).
#[cold]
#[inline(never)]
fn note_conflict(worker: &mut Worker, reason: AbortReason) {
    let conflict = conflict::diagnose(worker, reason);
    let counters = worker.shared.counters(worker.slot);
    counters.conflicts.lock().unwrap_or_else(|e| e.into_inner()).note(&conflict);
    worker.last_conflict = Some((worker.transactions_ended, conflict));
}

/// Rolls back a transaction the ticker gave up on. Its reads may point at freed memory, so only
/// what it owns is touched: its secondary entries (removed by key), its fresh and claimed heads,
/// the protocol locks it holds (`mvto`, `mv2pl`: a record some transaction holds one on stays
/// linked), the non-inline values it retained. The records it read are not: the ones it noted
/// for cooperative cleaning are forgotten, since a reclaim bound that no longer waited for it
/// may have freed them, their memory holding other records by now. It holds no TID locks or
/// SSN latches: it was suspended between calls, never inside a commit.
pub(crate) fn abort_kicked(worker: &mut Worker) {
    debug_assert!(worker.txn.access.entries.iter().all(|entry| !entry.locked && !entry.latched));
    worker.txn.noted.clear();
    abort(worker, Some(AbortReason::IdleTimeout));
}

/// Step 7, for commits and aborts alike.
fn finish(worker: &mut Worker) {
    if worker.txn.snapshot.is_some() {
        worker.shared.epochs.leave_snapshot(worker.slot);
    }
    if worker.txn.rules.commit_at_begin {
        // MVTO announced its commit when it began (`mvto.rs`, STATE). Statement snapshots
        // stop leaving it out before its reader bound goes (`sync::epoch`, ORDERING).
        worker.shared.epochs.leave_ordered(worker.slot);
        worker.shared.epochs.leave_commit(worker.slot);
    }
    if worker.txn.begin.is_some() {
        worker.shared.epochs.leave_reader(worker.slot);
    }
    if !worker.tasks.is_empty() {
        run_ready_tasks(worker);
    }
    if !worker.txn.noted.is_empty() {
        // SAFETY: called before unpinning.
        cooperative::clean_noted(worker, &unsafe { pinned() });
    }
    if !worker.txn.retained.is_empty() {
        shared::release_retained(&mut worker.txn.retained);
    }
    worker.garbage.seal(&worker.shared.epochs);
    worker.shared.epochs.unpin(worker.slot);
    worker.txn.reset();
    worker.garbage.collect(&worker.shared.epochs, &mut worker.arena);
    worker.transactions_ended += 1;
    if worker.transactions_ended.is_multiple_of(ORPHAN_CHECK_INTERVAL) {
        let Worker { shared, garbage, tasks, .. } = worker;
        shared.hand_over(garbage, tasks);
    }
}

/// Unlinks deleted records that no snapshot can read any more (`gc::tasks`), and whose
/// delete is durable: until then a reader finds the record and its delete's epoch, which it
/// waits for like any epoch it read (`read_epoch`). Unlinked earlier, the key would simply be
/// gone, and a reader acknowledged before the delete could still be taken back by a crash.
fn run_ready_tasks(worker: &mut Worker) {
    // SAFETY: called from `finish`, before unpinning.
    let pin = unsafe { pinned() };
    let low = worker.shared.epochs.snapshot_low();
    let low = worker.shared.log.as_ref().map_or(low, |log| low.min(log.durable()));
    let readers_low = worker.shared.epochs.readers_low();
    for _ in 0..TASKS_PER_TRANSACTION_MAX {
        let Some(task) = worker.tasks.pop_ready(low, readers_low) else { break };
        let cached = worker.tables.get(task.table.index()).is_some_and(Option::is_some);
        if !cached {
            match worker.shared.table_by_id(task.table) {
                Some(table) => {
                    worker.register_table(&table);
                }
                None => {
                    // The table was dropped: its memory goes with it.
                    worker.tasks.recycle(task.key);
                    continue;
                }
            }
        }
        // SAFETY: see `Worker::table_ptr`; the table is in the worker's cache.
        let table = unsafe { &*worker.table_ptr(task.table) };
        if table.primary.get(&task.key, &pin).value != Some(task.head as u64) {
            // Someone else unlinked the head, or the key has a new one.
            worker.tasks.recycle(task.key);
            continue;
        }
        // SAFETY: the head is in the primary index, found while pinned.
        let head = unsafe { &*task.head };
        let Ok(word) = head.lock() else {
            worker.tasks.requeue(task);
            continue;
        };
        fence(Ordering::SeqCst);
        if head.is_lock_held() {
            // A transaction holds the protocol's lock (`mvto`, `mv2pl`): the record must stay
            // reachable until it lets go.
            head.unlock_to(word);
            worker.tasks.requeue(task);
            continue;
        }
        if word != task.word {
            head.unlock_to(word);
            if word.is_claimed() {
                // An insert is reusing the key; if it aborts the row is still to be unlinked.
                worker.tasks.requeue(task);
            } else {
                worker.tasks.recycle(task.key);
            }
            continue;
        }
        if table.has_secondaries() {
            secondary::unlink_entries(
                table,
                head,
                &task.key,
                &mut worker.txn.entry_scratch,
                &pin,
                &mut worker.garbage,
            );
        }
        trace_ev!(crate::trace::Ev::Unlink { head: task.head as u64, node: 0 });
        table.primary.remove(&task.key, Some(task.head as u64), &pin, &mut worker.garbage, &mut ());
        head.unlock_to(word.without(TidWord::LATEST));
        // SAFETY: the head was just removed from the primary index (its entries went
        // first) and only the task that unlinks it retires it.
        unsafe { Head::retire(task.head, &mut worker.garbage) };
        worker.tasks.recycle(task.key);
    }
}
