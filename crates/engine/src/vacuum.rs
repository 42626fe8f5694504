//! The background vacuum of `Gc::TupleVacuum` (Wu et al. §5.1, "background vacuuming").
//!
//! Under this mode writers never prune the version chains they grow. One thread, holding a
//! worker slot of its own, wakes every `Config::vacuum_interval_ms`, takes each table's dirty
//! flag (set by a commit that kept an older version of one of the table's records) and visits
//! the dirty tables' records in primary-key order, in batches of [`BATCH_RECORDS`] read under
//! one pin. A record with older versions is locked (as a committer locks it: a reader waits,
//! a committer that finds it locked for too long aborts with `record_busy`), its chain is
//! pruned exactly as a writer's install would prune it, the secondary entries that only the
//! dropped versions produced are removed, and the record is unlocked to the word it had, so
//! readers that validate it see no change. What is dropped is retired into the vacuum's
//! epoch-tagged garbage list and freed when the epoch expires.
//!
//! A record whose lock the vacuum cannot take in the bounded wait is skipped and its table
//! marked dirty again, so the next pass retries it. So is a table whose records still hold
//! versions after the pass: a reader may have needed them, and when it ends they become garbage
//! without any commit marking the table again. Under steady snapshot or multi-version readers
//! the vacuum therefore visits every table with versions on every pass, as a periodic vacuum
//! does. Deleted records and records an insert
//! has claimed are skipped: the delete's clean-up task retires a deleted record's chain whole.
//!
//! Under `Gc::TupleCooperative` the same thread sweeps every
//! `Config::cooperative_sweep_interval_ms`, for the records that readers never pass again.
//!
//! The regions the vacuum tracks are whole tables: it skips tables nobody updated, and visits
//! every record of the others. That is the cost the paper measures: a vacuum's work grows with
//! the table, not with the garbage.

use crate::cc::cooperative::{PruneBuffers, prune_locked};
use crate::index::{Direction, LeafVersion, ScanBuffer, ScanVisitor};
use crate::state::Shared;
use crate::storage::{Head, Table};
use crate::sync::Retention;
use crate::worker::Worker;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Records visited under one pin: small enough that a pass never holds the epoch back for
/// long, large enough that pinning costs nothing next to the visits.
const BATCH_RECORDS: usize = 256;

/// The vacuum thread's body: a pass after every interval until the database closes.
pub(crate) fn run(shared: Arc<Shared>) {
    let mut worker = match Worker::new(Arc::clone(&shared)) {
        Ok(worker) => worker,
        Err(error) => {
            tracing::error!("the vacuum cannot start, so nothing prunes version chains: {error}");
            return;
        }
    };
    let interval = shared.config.vacuum_interval().expect("a GC mode with a vacuum");
    let mut buffers = Buffers::default();
    while !shared.stopping() {
        std::thread::park_timeout(interval);
        if shared.stopping() {
            break;
        }
        pass(&mut worker, &mut buffers);
    }
}

/// Memory a pass reuses.
#[derive(Debug, Default)]
struct Buffers {
    scan: ScanBuffer,
    keys: Vec<u8>,
    batch: Vec<(u32, u32, u64)>,
    resume: Vec<u8>,
    prune: PruneBuffers,
}

/// One pass: every table whose dirty flag is set, visited whole.
fn pass(worker: &mut Worker, buffers: &mut Buffers) {
    let shared = Arc::clone(&worker.shared);
    for table in shared.tables() {
        if shared.stopping() {
            return;
        }
        if table.take_dirty() {
            vacuum_table(worker, &table, buffers);
            shared.vacuum.tables.fetch_add(1, Ordering::Relaxed);
        }
    }
    shared.vacuum.passes.fetch_add(1, Ordering::Relaxed);
}

/// Collects up to [`BATCH_RECORDS`] entries of a scan.
struct Collect<'a> {
    keys: &'a mut Vec<u8>,
    batch: &'a mut Vec<(u32, u32, u64)>,
}

impl ScanVisitor for Collect<'_> {
    fn leaf(&mut self, _leaf: LeafVersion) {}

    fn entry(&mut self, key: &[u8], value: u64) -> bool {
        let start = self.keys.len() as u32;
        self.keys.extend_from_slice(key);
        self.batch.push((start, key.len() as u32, value));
        self.batch.len() < BATCH_RECORDS
    }
}

fn vacuum_table(worker: &mut Worker, table: &Table, buffers: &mut Buffers) {
    let shared = Arc::clone(&worker.shared);
    buffers.resume.clear();
    let mut first = true;
    loop {
        let Buffers { scan, keys, batch, resume, prune } = &mut *buffers;
        let more = worker
            .pinned_with_arena(|pin, arena, garbage| {
                keys.clear();
                batch.clear();
                let low = if first { Bound::Unbounded } else { Bound::Excluded(&resume[..]) };
                table.primary.scan(
                    low,
                    Bound::Unbounded,
                    Direction::Forward,
                    pin,
                    scan,
                    &mut Collect { keys, batch },
                );
                // Read after the scan: the bounds are at least as new as any version seen.
                let retention = Retention { prune: true, ..shared.epochs.retention() };
                let (mut versions, mut busy, mut remaining) = (0u64, 0u64, false);
                for &(start, len, value) in batch.iter() {
                    let key = &keys[start as usize..(start + len) as usize];
                    let head_ptr = value as *mut Head;
                    // SAFETY: found in the primary index while pinned: allocated until unpin.
                    let head = unsafe { &*head_ptr };
                    let seen = head.word();
                    if !head.has_older() || seen.is_absent() || seen.is_claimed() {
                        continue;
                    }
                    let Ok(word) = head.lock() else {
                        busy += 1;
                        continue;
                    };
                    if word.is_absent() || word.is_claimed() {
                        head.unlock_to(word);
                        continue;
                    }
                    let pruned =
                        prune_locked(table, head_ptr, key, retention, prune, pin, arena, garbage);
                    remaining |= head.has_older();
                    head.unlock_to(word);
                    versions += pruned as u64;
                }
                if busy > 0 || remaining {
                    table.mark_dirty();
                }
                shared.vacuum.records.fetch_add(batch.len() as u64, Ordering::Relaxed);
                shared.vacuum.versions.fetch_add(versions, Ordering::Relaxed);
                shared.vacuum.busy.fetch_add(busy, Ordering::Relaxed);
                if let Some(&(start, len, _)) = batch.last() {
                    resume.clear();
                    resume.extend_from_slice(&keys[start as usize..(start + len) as usize]);
                }
                batch.len() == BATCH_RECORDS
            })
            .unwrap_or(false);
        first = false;
        if !more || shared.stopping() {
            return;
        }
    }
}
