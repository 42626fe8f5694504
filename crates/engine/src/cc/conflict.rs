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
use crate::error::AbortReason;
use crate::storage::{Head, TableId, Tid, TidWord};
use crate::worker::Worker;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Gives the primary key of a row of a table: `false` when it cannot. Called only when a
/// transaction aborts on a record whose key it did not keep (a read).
pub type RowKeys = Arc<dyn Fn(TableId, &[u8], &mut Vec<u8>) -> bool + Send + Sync>;

/// Where the database keeps the application's [`RowKeys`].
#[derive(Default)]
pub(crate) struct RowKeysSlot(RwLock<Option<RowKeys>>);

impl RowKeysSlot {
    pub fn get(&self) -> Option<RowKeys> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set(&self, row_keys: RowKeys) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(row_keys);
    }
}

impl std::fmt::Debug for RowKeysSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() { "RowKeysSlot(set)" } else { "RowKeysSlot(unset)" })
    }
}

/// Where an abort happened, as far as the engine can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub reason: AbortReason,
    /// The table of the record or range; `None` when unknown.
    pub table: Option<TableId>,
    /// `None`: the record (its primary key); `Some(n)`: the table's secondary index `n` (a
    /// unique check or a scan of it).
    pub index: Option<u32>,
    /// The primary key of the record (empty when unknown, or for a range).
    pub key: Vec<u8>,
    /// The commit that changed the record after this transaction read it, when one did.
    pub by: Option<Tid>,
}

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

/// Keys each worker remembers as the most contended (the Space-Saving sketch: a new key
/// replaces the least counted one and inherits its count, so a count may be too high by at
/// most the replaced count, and a key conflicting often is never lost).
pub const HOT_KEYS_PER_WORKER: usize = 32;

/// Conflicts at one place: a table (`None`: unknown), an index (`None`: the record, by its
/// primary key), a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConflictSite {
    pub table: Option<TableId>,
    pub index: Option<u32>,
    pub reason: AbortReason,
}

/// A key and how many aborts it caused at a site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotKey {
    pub site: ConflictSite,
    pub key: Vec<u8>,
    pub count: u64,
}

/// One worker's tally of the conflicts that aborted its transactions.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConflictTally {
    pub counts: HashMap<ConflictSite, u64>,
    /// At most [`HOT_KEYS_PER_WORKER`].
    pub hot: Vec<HotKey>,
}

impl ConflictTally {
    pub fn note(&mut self, conflict: &Conflict) {
        let site =
            ConflictSite { table: conflict.table, index: conflict.index, reason: conflict.reason };
        *self.counts.entry(site).or_default() += 1;
        if conflict.key.is_empty() {
            return;
        }
        if let Some(hot) =
            self.hot.iter_mut().find(|hot| hot.site == site && hot.key == conflict.key)
        {
            hot.count += 1;
        } else if self.hot.len() < HOT_KEYS_PER_WORKER {
            self.hot.push(HotKey { site, key: conflict.key.clone(), count: 1 });
        } else if let Some(least) = self.hot.iter_mut().min_by_key(|hot| hot.count) {
            *least = HotKey { site, key: conflict.key.clone(), count: least.count + 1 };
        }
    }
}

/// Conflicts counted over all workers (`Database::conflict_stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConflictStats {
    /// Aborts per site, most first.
    pub counts: Vec<(ConflictSite, u64)>,
    /// The most contended keys, most first.
    pub hot_keys: Vec<HotKey>,
}

impl ConflictStats {
    pub(crate) fn merge(tallies: impl Iterator<Item = ConflictTally>) -> ConflictStats {
        let mut counts: HashMap<ConflictSite, u64> = HashMap::new();
        let mut hot: HashMap<(ConflictSite, Vec<u8>), u64> = HashMap::new();
        for tally in tallies {
            for (site, count) in tally.counts {
                *counts.entry(site).or_default() += count;
            }
            for key in tally.hot {
                *hot.entry((key.site, key.key)).or_default() += key.count;
            }
        }
        let mut counts: Vec<_> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut hot_keys: Vec<_> =
            hot.into_iter().map(|((site, key), count)| HotKey { site, key, count }).collect();
        hot_keys.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| (a.site, &a.key).cmp(&(b.site, &b.key)))
        });
        ConflictStats { counts, hot_keys }
    }

    /// What was counted after `earlier`, a look at the same database's statistics before
    /// (a key's count is its count now less its count then; a key that entered the sketches
    /// since counts whole, so it may count some conflicts from before).
    pub fn since(&self, earlier: &ConflictStats) -> ConflictStats {
        let before: HashMap<ConflictSite, u64> = earlier.counts.iter().copied().collect();
        let mut counts: Vec<_> = self
            .counts
            .iter()
            .map(|(site, count)| {
                (*site, count - before.get(site).copied().unwrap_or(0).min(*count))
            })
            .filter(|(_, count)| *count > 0)
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let hot_before: HashMap<(ConflictSite, &[u8]), u64> = earlier
            .hot_keys
            .iter()
            .map(|hot| ((hot.site, hot.key.as_slice()), hot.count))
            .collect();
        let mut hot_keys: Vec<_> = self
            .hot_keys
            .iter()
            .map(|hot| {
                let then = hot_before.get(&(hot.site, hot.key.as_slice())).copied().unwrap_or(0);
                HotKey { count: hot.count - then.min(hot.count), ..hot.clone() }
            })
            .filter(|hot| hot.count > 0)
            .collect();
        hot_keys.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| (a.site, &a.key).cmp(&(b.site, &b.key)))
        });
        ConflictStats { counts, hot_keys }
    }

    /// The most contended key at `site`, if any key there is known.
    pub fn hottest_at(&self, site: ConflictSite) -> Option<&HotKey> {
        self.hot_keys.iter().find(|hot| hot.site == site)
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
