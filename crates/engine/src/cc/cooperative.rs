//! Cooperative cleaning of `Gc::TupleCooperative` (Wu et al. §5.1, Hekaton's "cooperative
//! cleaning").
//!
//! Under this mode writers never prune and no thread scans for garbage: the transactions that
//! read a record clean it. A reader of an oldest-to-newest chain (`append-o2n`, the only
//! storage this mode opens with) passes every older version on its way to the row, so it is
//! the first to see that they expired. After a point read (`Txn::get` and the reads of
//! `get_many`, `update_many` and the like) the reader checks the versions it passed
//! (`Head::has_expired`) and, if no reader at or above the retention bounds can read one of
//! them, notes the record (at most [`NOTED_RECORDS_MAX`] per transaction). When the transaction ends,
//! committed or not and still pinned (commit step 7, `finish`), its worker cleans what it
//! noted: it tries each record's lock without waiting (`Head::try_lock`), prunes the chain as
//! the vacuum does (`prune_locked`: every expired version, and the secondary entries
//! only they produced), and unlocks the record to the word it had. A record someone else holds
//! is left for the next reader. A transaction the ticker kicked cleans nothing: it stopped
//! holding reclamation back while it sat idle, so a record it noted may have been unlinked and
//! freed since, its memory another record's; its rollback forgets what it noted
//! (`cc::abort_kicked`).
//!
//! Why at the end and not during the read: removing a secondary entry changes the version of
//! the index leaf that held it, and a transaction that had scanned that leaf would fail its own
//! node validation at commit (the model test found this). At the end, the cleaner's own
//! validation is behind it; other transactions may still see such a leaf change, as they may
//! under the vacuum or a committer's pruning, and abort with `node_validation`.
//!
//! DEVIATIONS
//! - Hekaton's readers unlink expired versions without a lock; here a reader takes the record
//!   lock for the few instructions of the prune, because a committer appending at the chain's
//!   end and a reader cutting its start would otherwise race on a one-version chain.
//! - Only point reads clean. Records that only scans read, or that nobody reads again (the
//!   paper's "dusty corners"), are left to the vacuum thread, which under this mode sweeps the
//!   dirty tables every `Config::cooperative_sweep_interval_ms` (1 s by default), as Hekaton
//!   and the paper pair cooperative cleaning with a periodic full pass.
//! - The cue looks at every version the reader passed, not only the oldest: a snapshot
//!   boundary keeps the version visible at it needed for up to a second, and the versions
//!   after it expire long before. (A first version used as the only cue let chains grow
//!   between boundaries: a 1-second sawtooth in Fig. 19.)

use crate::cc::secondary::{self, EntryScratch};
use crate::cc::worker::Worker;
use crate::gc::Gc;
use crate::mem::arena::Arena;
use crate::storage::record::Dropped;
use crate::storage::{Head, Table, TableId};
use crate::sync::{Garbage, Pin, Retention};
use std::sync::atomic::Ordering;

/// Records one transaction notes for cleaning: bounds the work its end does.
pub(crate) const NOTED_RECORDS_MAX: usize = 64;

/// Records a transaction read whose chains hold expired versions: (table, key start and length
/// in `keys`, head).
#[derive(Debug, Default)]
pub(crate) struct Noted {
    records: Vec<(TableId, u32, u32, *mut Head)>,
    keys: Vec<u8>,
}

impl Noted {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Forgets what was noted (its heads may be freed once the transaction unpins).
    pub fn clear(&mut self) {
        self.records.clear();
        self.keys.clear();
    }
}

/// After `worker`'s transaction read the row `key` of table `table` at `head`: under
/// `Gc::TupleCooperative`, notes the record if its chain holds an expired version.
/// Nothing under the other modes.
#[inline]
pub(crate) fn after_read(worker: &mut Worker, table: TableId, key: &[u8], head: *mut Head) {
    if worker.shared.config.gc != Gc::TupleCooperative {
        return;
    }
    let noted = &mut worker.txn.noted;
    if noted.records.len() >= NOTED_RECORDS_MAX {
        return;
    }
    // SAFETY: reached through an index while pinned.
    if unsafe { &*head }.has_expired(worker.shared.epochs.retention()) {
        let start = noted.keys.len() as u32;
        noted.keys.extend_from_slice(key);
        noted.records.push((table, start, key.len() as u32, head));
    }
}

/// Cleans the records the ending transaction noted. Called from commit step 7 while pinned,
/// after the transaction left the readers (so its own timestamp no longer holds versions); never
/// for a transaction the ticker kicked.
pub(crate) fn clean_noted(worker: &mut Worker, pin: &Pin<'_>) {
    let retention = worker.shared.epochs.retention();
    let Worker { shared, txn, arena, garbage, tables, .. } = &mut *worker;
    let mut noted = std::mem::take(&mut txn.noted);
    for &(table, start, len, head) in &noted.records {
        let table = tables[table.index()].as_deref().expect("the read registered the table");
        let key = &noted.keys[start as usize..(start + len) as usize];
        // SAFETY: read through an index by this transaction, which has stayed pinned since (a
        // kicked transaction, whose pin lapsed, forgets what it noted: `cc::abort_kicked`).
        let head_ref = unsafe { &*head };
        let seen = head_ref.word();
        if seen.is_locked() || seen.is_absent() || seen.is_claimed() || !seen.is_latest() {
            continue;
        }
        if !head_ref.try_lock(seen) {
            shared.vacuum.busy.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        // A LATEST head stays its key's, so the secondary entries of the versions pruned are
        // found with `key`. (Checked under the lock, which goes before a failure is reported.)
        let keyed =
            !cfg!(debug_assertions) || table.primary.get(key, pin).value == Some(head as u64);
        if !keyed {
            head_ref.unlock_to(seen);
        }
        debug_assert!(keyed, "a noted head is no longer its key's");
        let pruned = prune_locked(table, head, key, retention, &mut txn.prune, pin, arena, garbage);
        head_ref.unlock_to(seen);
        shared.vacuum.records.fetch_add(1, Ordering::Relaxed);
        shared.vacuum.versions.fetch_add(pruned as u64, Ordering::Relaxed);
    }
    noted.clear();
    txn.noted = noted;
}

/// What pruning a record reuses: the versions dropped, the record's row, and the secondary
/// entry keys compared.
#[derive(Debug, Default)]
pub(crate) struct PruneBuffers {
    dropped: Dropped,
    row: Vec<u8>,
    entries: EntryScratch,
}

/// Prunes the chain of `head`, which this thread has locked (record `key` of `table`), as a
/// writer's install would, and removes the secondary entries that only the dropped versions
/// produced. Returns how many versions it dropped. The vacuum and cooperative cleaning
/// (`cc::cooperative`) share it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prune_locked(
    table: &Table,
    head: *mut Head,
    key: &[u8],
    retention: Retention,
    buffers: &mut PruneBuffers,
    pin: &Pin<'_>,
    arena: &mut Arena,
    garbage: &mut Garbage,
) -> usize {
    let PruneBuffers { dropped, row, entries } = buffers;
    // SAFETY: the caller holds the record's lock, so the head is linked and allocated.
    let head_ref = unsafe { &*head };
    let secondaries = table.has_secondaries();
    dropped.reset(secondaries);
    let pruned = head_ref.vacuum_locked(retention, arena, garbage, dropped);
    if pruned > 0 && secondaries {
        let has_row = head_ref.value_locked(row);
        secondary::after_install(
            table,
            entries,
            head,
            key,
            None,
            has_row.then_some(&row[..]),
            dropped,
            pin,
            garbage,
        );
    }
    pruned
}
