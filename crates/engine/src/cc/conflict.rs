//! Abort diagnostics: where a transaction's abort happened (the table, the index, the key,
//! the commit that caused it) and, per worker, a tally of conflicts by table, index and reason
//! with the keys that conflict most.
//!
//! Nothing here runs unless a transaction aborts. The places that abort with a record in hand
//! (an insert racing another, a write finding its record changed) leave a [`Site`] in the
//! transaction's state; the others (commit-time validation, the statement check) leave
//! nothing, and [`diagnose`] looks again at what the transaction read for the first record
//! or leaf that changed. Either way the work happens in [`super::abort`], after the commit's
//! own record locks are let go (so that two aborting committers never wait for each other)
//! and while the worker is still pinned (so every head the transaction reached is still
//! memory it may read). A transaction the ticker kicked is not diagnosed: the records it read
//! may be freed by then.
//!
//! A read entry does not keep its key (keeping it would cost every read a copy): its key is
//! taken from the record's current row through the application's [`RowKeys`] hook, when one
//! is set (`Database::set_row_keys`).

use super::access::Kind;
use crate::cc::worker::Worker;
use crate::error::AbortReason;
use crate::storage::{Head, TableId, TidWord};

pub(crate) use crate::stats::RowKeysSlot;
pub use crate::stats::{
    Conflict, ConflictSite, ConflictStats, HOT_KEYS_PER_WORKER, HotKey, RowKeys,
};

/// What an aborting operation knew, left in the transaction's state for [`diagnose`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Site {
    pub table: TableId,
    pub head: *mut Head,
    /// The word the transaction expected (`None` when it had not read the record).
    pub observed: Option<TidWord>,
    pub index: Option<u32>,
}

impl Site {
    /// A record of `table`.
    pub fn record(table: TableId, head: *mut Head) -> Site {
        Site { table, head, observed: None, index: None }
    }

    /// A key of `table` whose record the operation did not have in hand.
    pub fn key_of(table: TableId) -> Site {
        Site::record(table, std::ptr::null_mut())
    }

    /// A record met in secondary index `number` of `table`.
    pub fn in_index(table: TableId, head: *mut Head, number: usize) -> Site {
        Site { table, head, observed: None, index: Some(number as u32) }
    }
}

/// Works out where the transaction's abort for `reason` happened. Called by `abort` while the
/// worker is pinned, the transaction's entries still in place and its commit locks let go.
#[cold]
#[inline(never)]
pub(crate) fn diagnose(worker: &mut Worker, reason: AbortReason) -> Conflict {
    let mut conflict = Conflict { reason, table: None, index: None, key: Vec::new(), by: None };
    if matches!(reason, AbortReason::IdleTimeout | AbortReason::SequenceExhausted) {
        return conflict;
    }
    let state = &worker.txn;
    let site = state.site.or_else(|| match reason {
        AbortReason::NodeValidation => {
            // SAFETY: called while pinned.
            let pin = unsafe { super::txn::pinned() };
            let node = state.nodes.entries.iter().find(|node| !node.leaf.is_current(&pin))?;
            let (table, index) = (node.owner.table(), node.owner.index());
            Some(Site { table, head: std::ptr::null_mut(), observed: None, index })
        }
        _ => changed_record(worker),
    });
    let Some(site) = site else { return conflict };
    conflict.table = Some(site.table);
    conflict.index = site.index;
    if state.site.is_some() && !state.site_key.is_empty() {
        conflict.key.extend_from_slice(&state.site_key);
    }
    if site.head.is_null() {
        return conflict;
    }
    // SAFETY: the head was reached through an index while pinned, and the worker has stayed
    // pinned (a kicked transaction is never diagnosed).
    let head = unsafe { &*site.head };
    let entry = state.access.entries.iter().find(|entry| entry.head == site.head);
    if let Some(observed) = site.observed.or(entry.map(|entry| entry.observed)) {
        let current = head.word().without(TidWord::LOCK);
        if current.tid() > observed.tid() {
            conflict.by = Some(current.tid());
        }
    }
    if !conflict.key.is_empty() {
        return conflict;
    }
    if let Some(entry) = entry
        && entry.key.len > 0
    {
        conflict.key.extend_from_slice(state.access.slice(entry.key));
    } else if let Some(row_keys) = worker.shared.row_keys.get() {
        let mut row = Vec::new();
        if head.read(&mut row).is_ok_and(|word| !word.is_absent()) {
            let mut key = Vec::new();
            if row_keys(site.table, &row, &mut key) {
                conflict.key = key;
            }
        }
    }
    conflict
}

/// The first record the transaction read or wrote whose word is no longer the one it saw.
fn changed_record(worker: &Worker) -> Option<Site> {
    let state = &worker.txn;
    let changed = |head: *mut Head, observed: TidWord| {
        // SAFETY: as in `diagnose`.
        let current = unsafe { (*head).word() };
        current.is_locked() || current != observed
    };
    // Records it wrote without reading them may have changed harmlessly.
    let entries = state.access.entries.iter().filter(|entry| {
        !entry.fresh && (entry.validate || matches!(entry.kind, Kind::Update | Kind::Delete))
    });
    for entry in entries {
        if changed(entry.head, entry.observed) {
            return Some(Site {
                table: entry.table,
                head: entry.head,
                observed: Some(entry.observed),
                index: None,
            });
        }
    }
    let reads = state.access.statement_reads.iter();
    reads
        .filter(|(head, seen, _)| changed(*head, *seen))
        .map(|&(head, seen, table)| Site { table, head, observed: Some(seen), index: None })
        .next()
}
