//! What the database counts about its transactions: each worker slot's commits and aborts by
//! reason ([`Counters`]), where the aborts happened ([`ConflictTally`], merged into
//! [`ConflictStats`]), and the application's hook that gives a row's key ([`RowKeys`]). The
//! diagnosis that finds where an abort happened is `cc::conflict`'s.

use crate::error::AbortReason;
use crate::storage::{TableId, Tid};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

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

/// Commit and abort counts of one worker slot. Written only by the slot's worker (plain
/// load-and-store, no read-modify-write), read by anyone.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub commits: AtomicU64,
    pub aborts: [AtomicU64; AbortReason::ALL.len()],
    /// Where the slot's aborts happened (`cc/conflict.rs`): locked by its worker only when it
    /// aborts, and by readers of the statistics.
    pub conflicts: Mutex<ConflictTally>,
}

impl Counters {
    #[inline]
    pub fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}
