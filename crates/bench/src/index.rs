//! The B+tree against other concurrent ordered maps on 64-bit keys: point lookups, inserts
//! and 100-key scans, at several sizes and thread counts, in one run.
//!
//! | structure        | what it is                                              | pins per   |
//! |------------------|---------------------------------------------------------|------------|
//! | engram           | this crate's OLC B+tree (`engram_engine::index::BTree`) | 64 ops     |
//! | congee           | ART with optimistic lock coupling, 8-byte keys only     | 64 ops     |
//! | scc-tree-index   | `scc::TreeIndex`, a lock-free B+tree                    | 64 ops     |
//! | crossbeam-skiplist | `crossbeam_skiplist::SkipMap`                         | operation  |
//! | rwlock-btreemap  | `std::collections::BTreeMap` behind an `RwLock`         | operation  |
//!
//! Keys are 64-bit values spread over the whole key space (SplitMix64 of 0..n), so no structure
//! benefits from dense keys; lookups and scan starts pick a random existing key. Each figure
//! is operations per second over `seconds` of measurement, after the structure was loaded.

use crate::report::{Machine, format_rate};
use engram_engine::index::{BTree, Direction, LeafVersion, ScanBuffer, ScanVisitor};
use engram_engine::{Config, Database, Worker};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Operations a thread runs between two looks at the stop flag (and, for the structures that
/// allow it, under one epoch pin).
const BATCH: usize = 64;
/// Entries each scan visits.
pub const SCAN_LENGTH: usize = 100;

/// The `index`-th key: SplitMix64, a bijection on u64, so keys are distinct and spread out.
#[inline]
pub fn key_at(index: u64) -> u64 {
    let mut z = index.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn wrapping_sum(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0, u64::wrapping_add)
}

/// A map under test. Each thread has a session (a worker, nothing, ...).
pub trait BenchMap: Sync {
    type Session;
    const NAME: &'static str;
    fn create() -> Self;
    fn session(&self) -> Self::Session;
    fn insert_batch(&self, session: &mut Self::Session, keys: &[u64]);
    /// Sum of the values found, so nothing is optimised away.
    fn get_batch(&self, session: &mut Self::Session, keys: &[u64]) -> u64;
    /// Entries visited by scans of `SCAN_LENGTH` from each start.
    fn scan_batch(&self, session: &mut Self::Session, starts: &[u64]) -> u64;
}

pub struct Engram {
    db: Database,
    tree: BTree,
}

struct CountVisitor {
    seen: u64,
    left: usize,
}

impl ScanVisitor for CountVisitor {
    fn leaf(&mut self, _leaf: LeafVersion) {}
    fn entry(&mut self, _key: &[u8], value: u64) -> bool {
        self.seen = self.seen.wrapping_add(value | 1);
        self.left -= 1;
        self.left > 0
    }
}

impl BenchMap for Engram {
    type Session = (Worker, ScanBuffer);
    const NAME: &'static str = "engram";

    fn create() -> Self {
        Engram { db: Database::open(Config::default()).expect("open"), tree: BTree::new() }
    }

    fn session(&self) -> Self::Session {
        (self.db.worker().expect("worker"), ScanBuffer::new())
    }

    fn insert_batch(&self, (worker, _): &mut Self::Session, keys: &[u64]) {
        worker
            .pinned(|pin, garbage| {
                for &key in keys {
                    let _ = self.tree.insert(&key.to_be_bytes(), key, pin, garbage, &mut ());
                }
            })
            .expect("pinned");
    }

    fn get_batch(&self, (worker, _): &mut Self::Session, keys: &[u64]) -> u64 {
        worker
            .pinned(|pin, _| {
                wrapping_sum(
                    keys.iter()
                        .map(|key| self.tree.get(&key.to_be_bytes(), pin).value.unwrap_or(0)),
                )
            })
            .expect("pinned")
    }

    fn scan_batch(&self, (worker, buffer): &mut Self::Session, starts: &[u64]) -> u64 {
        worker
            .pinned(|pin, _| {
                let mut visitor = CountVisitor { seen: 0, left: SCAN_LENGTH };
                for start in starts {
                    visitor.left = SCAN_LENGTH;
                    let start = start.to_be_bytes();
                    self.tree.scan(
                        Bound::Included(&start),
                        Bound::Unbounded,
                        Direction::Forward,
                        pin,
                        buffer,
                        &mut visitor,
                    );
                }
                visitor.seen
            })
            .expect("pinned")
    }
}

pub struct Congee(congee::U64Congee<usize>);

impl BenchMap for Congee {
    type Session = Vec<([u8; 8], usize)>;
    const NAME: &'static str = "congee";

    fn create() -> Self {
        Congee(congee::U64Congee::new())
    }

    fn session(&self) -> Self::Session {
        vec![([0; 8], 0); SCAN_LENGTH]
    }

    fn insert_batch(&self, _: &mut Self::Session, keys: &[u64]) {
        let guard = congee::epoch::pin();
        for &key in keys {
            self.0.insert(key, key as usize, &guard).expect("congee insert");
        }
    }

    fn get_batch(&self, _: &mut Self::Session, keys: &[u64]) -> u64 {
        let guard = congee::epoch::pin();
        wrapping_sum(keys.iter().map(|&key| self.0.get(key, &guard).unwrap_or(0) as u64))
    }

    fn scan_batch(&self, buffer: &mut Self::Session, starts: &[u64]) -> u64 {
        let guard = congee::epoch::pin();
        starts
            .iter()
            .map(|&start| {
                let found = self.0.range(start, u64::MAX, buffer, &guard);
                buffer[..found]
                    .iter()
                    .fold(0u64, |sum, (_, value)| sum.wrapping_add(*value as u64 | 1))
            })
            .fold(0, u64::wrapping_add)
    }
}

pub struct SccTree(scc::TreeIndex<u64, u64>);

impl BenchMap for SccTree {
    type Session = ();
    const NAME: &'static str = "scc-tree-index";

    fn create() -> Self {
        SccTree(scc::TreeIndex::new())
    }

    fn session(&self) -> Self::Session {}

    fn insert_batch(&self, _: &mut (), keys: &[u64]) {
        for &key in keys {
            let _ = self.0.insert_sync(key, key);
        }
    }

    fn get_batch(&self, _: &mut (), keys: &[u64]) -> u64 {
        let guard = scc::Guard::new();
        wrapping_sum(keys.iter().map(|key| self.0.peek(key, &guard).copied().unwrap_or(0)))
    }

    fn scan_batch(&self, _: &mut (), starts: &[u64]) -> u64 {
        let guard = scc::Guard::new();
        starts
            .iter()
            .map(|start| {
                self.0
                    .range(*start.., &guard)
                    .take(SCAN_LENGTH)
                    .fold(0u64, |sum, (_, value)| sum.wrapping_add(*value | 1))
            })
            .fold(0, u64::wrapping_add)
    }
}

pub struct SkipList(crossbeam_skiplist::SkipMap<u64, u64>);

impl BenchMap for SkipList {
    type Session = ();
    const NAME: &'static str = "crossbeam-skiplist";

    fn create() -> Self {
        SkipList(crossbeam_skiplist::SkipMap::new())
    }

    fn session(&self) -> Self::Session {}

    fn insert_batch(&self, _: &mut (), keys: &[u64]) {
        for &key in keys {
            self.0.insert(key, key);
        }
    }

    fn get_batch(&self, _: &mut (), keys: &[u64]) -> u64 {
        wrapping_sum(keys.iter().map(|key| self.0.get(key).map_or(0, |entry| *entry.value())))
    }

    fn scan_batch(&self, _: &mut (), starts: &[u64]) -> u64 {
        starts
            .iter()
            .map(|start| {
                self.0
                    .range(*start..)
                    .take(SCAN_LENGTH)
                    .fold(0u64, |sum, entry| sum.wrapping_add(*entry.value() | 1))
            })
            .fold(0, u64::wrapping_add)
    }
}

pub struct LockedBTreeMap(RwLock<BTreeMap<u64, u64>>);

impl BenchMap for LockedBTreeMap {
    type Session = ();
    const NAME: &'static str = "rwlock-btreemap";

    fn create() -> Self {
        LockedBTreeMap(RwLock::new(BTreeMap::new()))
    }

    fn session(&self) -> Self::Session {}

    fn insert_batch(&self, _: &mut (), keys: &[u64]) {
        for &key in keys {
            self.0.write().expect("lock").insert(key, key);
        }
    }

    fn get_batch(&self, _: &mut (), keys: &[u64]) -> u64 {
        wrapping_sum(
            keys.iter().map(|key| self.0.read().expect("lock").get(key).copied().unwrap_or(0)),
        )
    }

    fn scan_batch(&self, _: &mut (), starts: &[u64]) -> u64 {
        starts
            .iter()
            .map(|start| {
                let map = self.0.read().expect("lock");
                map.range(*start..)
                    .take(SCAN_LENGTH)
                    .fold(0u64, |sum, (_, value)| sum.wrapping_add(*value | 1))
            })
            .fold(0, u64::wrapping_add)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct IndexResult {
    pub structure: &'static str,
    pub keys: u64,
    pub threads: usize,
    pub operation: &'static str,
    pub ops_per_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    pub benchmark: &'static str,
    /// Measurement time of each structure for each operation and thread count, over all rounds.
    pub seconds_per_measurement: f64,
    pub scan_length: usize,
    pub results: Vec<IndexResult>,
    pub machine: Machine,
}

/// Loads `keys` keys on `threads` threads; returns inserts per second.
fn load<M: BenchMap>(map: &M, keys: u64, threads: usize) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for thread in 0..threads as u64 {
            scope.spawn(move || {
                let mut session = map.session();
                let (start, end) =
                    (keys * thread / threads as u64, keys * (thread + 1) / threads as u64);
                let mut batch = Vec::with_capacity(BATCH);
                for index in start..end {
                    batch.push(key_at(index));
                    if batch.len() == BATCH {
                        map.insert_batch(&mut session, &batch);
                        batch.clear();
                    }
                }
                map.insert_batch(&mut session, &batch);
            });
        }
    });
    keys as f64 / started.elapsed().as_secs_f64()
}

/// Runs lookups or scans for `duration` on `threads` threads; returns operations per second.
fn timed<M: BenchMap>(map: &M, keys: u64, threads: usize, duration: Duration, scans: bool) -> f64 {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for thread in 0..threads as u64 {
            let (stop, done) = (&stop, &done);
            scope.spawn(move || {
                let mut session = map.session();
                let mut random = SmallRng::seed_from_u64(thread + 17);
                let mut batch = [0u64; BATCH];
                let mut count = 0u64;
                let mut sink = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for slot in batch.iter_mut() {
                        *slot = key_at(random.random_range(0..keys));
                    }
                    sink = sink.wrapping_add(if scans {
                        map.scan_batch(&mut session, &batch)
                    } else {
                        map.get_batch(&mut session, &batch)
                    });
                    count += BATCH as u64;
                }
                std::hint::black_box(sink);
                done.fetch_add(count, Ordering::Relaxed);
            });
        }
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
    });
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// A loaded structure, with its type erased so that several can be measured in turn.
trait Loaded: Sync {
    fn name(&self) -> &'static str;
    fn timed(&self, keys: u64, threads: usize, duration: Duration, scans: bool) -> f64;
}

struct LoadedMap<M: BenchMap>(M);

impl<M: BenchMap> Loaded for LoadedMap<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn timed(&self, keys: u64, threads: usize, duration: Duration, scans: bool) -> f64 {
        timed(&self.0, keys, threads, duration, scans)
    }
}

/// Loads a fresh `M` with `keys` keys on each thread count in turn (each load is timed on a
/// new structure); keeps the last one loaded.
fn load_all<M: BenchMap + 'static>(
    keys: u64,
    threads: &[usize],
    results: &mut Vec<IndexResult>,
    verbose: bool,
) -> Box<dyn Loaded> {
    let mut last = None;
    for &thread_count in threads {
        let map = M::create();
        let inserts = load(&map, keys, thread_count);
        record(results, M::NAME, keys, thread_count, "insert", inserts, verbose);
        last = Some(map);
    }
    Box::new(LoadedMap(last.expect("at least one thread count")))
}

fn record(
    results: &mut Vec<IndexResult>,
    structure: &'static str,
    keys: u64,
    threads: usize,
    operation: &'static str,
    ops_per_s: f64,
    verbose: bool,
) {
    if verbose {
        eprintln!(
            "{structure:>20} {:>11} keys {threads:>2} threads {operation:>8} {:>14} ops/s",
            format_rate(keys as f64),
            format_rate(ops_per_s)
        );
    }
    results.push(IndexResult { structure, keys, threads, operation, ops_per_s });
}

/// Measures every structure at every size and thread count. All structures of one size are
/// loaded together and measured in `rounds` alternating rounds (a, b, c, a, b, c, ...), so a
/// change in the shared machine's speed during the run touches them all alike; each figure is
/// the mean over its rounds.
pub fn run(
    sizes: &[u64],
    threads: &[usize],
    duration: Duration,
    rounds: u32,
    only: Option<&str>,
    verbose: bool,
) -> IndexReport {
    let mut results = Vec::new();
    let wanted = |name: &str| only.is_none_or(|only| only.split(',').any(|one| one == name));
    let rounds = rounds.max(1);
    for &keys in sizes {
        let mut loaded: Vec<Box<dyn Loaded>> = Vec::new();
        if wanted(Engram::NAME) {
            loaded.push(load_all::<Engram>(keys, threads, &mut results, verbose));
        }
        if wanted(Congee::NAME) {
            loaded.push(load_all::<Congee>(keys, threads, &mut results, verbose));
        }
        if wanted(SccTree::NAME) {
            loaded.push(load_all::<SccTree>(keys, threads, &mut results, verbose));
        }
        if wanted(SkipList::NAME) {
            loaded.push(load_all::<SkipList>(keys, threads, &mut results, verbose));
        }
        if wanted(LockedBTreeMap::NAME) {
            loaded.push(load_all::<LockedBTreeMap>(keys, threads, &mut results, verbose));
        }
        for (operation, scans) in [("get", false), ("scan", true)] {
            for &thread_count in threads {
                let mut sums = vec![0.0; loaded.len()];
                for round in 0..rounds {
                    for index in crate::report::round_order(round, loaded.len()) {
                        let map = &loaded[index];
                        sums[index] += map.timed(keys, thread_count, duration / rounds, scans);
                    }
                }
                for (map, sum) in loaded.iter().zip(sums) {
                    record(
                        &mut results,
                        map.name(),
                        keys,
                        thread_count,
                        operation,
                        sum / rounds as f64,
                        verbose,
                    );
                }
            }
        }
    }
    IndexReport {
        benchmark: "index",
        seconds_per_measurement: duration.as_secs_f64(),
        scan_length: SCAN_LENGTH,
        results,
        machine: Machine::describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agrees<M: BenchMap>() {
        let map = M::create();
        let mut session = map.session();
        let keys: Vec<u64> = (0..5_000).map(key_at).collect();
        for chunk in keys.chunks(BATCH) {
            map.insert_batch(&mut session, chunk);
        }
        let found = map.get_batch(&mut session, &keys[..BATCH]);
        assert_eq!(found, wrapping_sum(keys[..BATCH].iter().copied()), "{}", M::NAME);
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let want: u64 =
            sorted[100..100 + SCAN_LENGTH].iter().fold(0u64, |sum, key| sum.wrapping_add(*key | 1));
        assert_eq!(map.scan_batch(&mut session, &[sorted[100]]), want, "{}", M::NAME);
    }

    #[test]
    fn every_structure_stores_and_scans_the_same_keys() {
        agrees::<Engram>();
        agrees::<Congee>();
        agrees::<SccTree>();
        agrees::<SkipList>();
        agrees::<LockedBTreeMap>();
    }
}
