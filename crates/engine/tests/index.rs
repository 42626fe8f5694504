//! The B+tree against a `BTreeMap` model (property tests), in bulk, and under concurrent
//! writers and scanners.

use engram_engine::index::{
    BTree, Direction, Finger, GROUP_KEYS, LeafVersion, SCAN_PREFETCH_DISTANCE, ScanBuffer,
    ScanVisitor,
};
use engram_engine::{Config, Database, Worker};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

fn database() -> Database {
    Database::open(Config { epoch_interval_ms: 1, ..Config::default() }).unwrap()
}

#[derive(Default)]
struct Collect {
    entries: Vec<(Vec<u8>, u64)>,
    leaves: Vec<LeafVersion>,
    limit: usize,
    /// Values named by `upcoming` and not yet visited, oldest first.
    announced: std::collections::VecDeque<u64>,
    /// Entries visited that `upcoming` had not named just before.
    unannounced: usize,
}

impl ScanVisitor for Collect {
    fn leaf(&mut self, leaf: LeafVersion) {
        self.leaves.push(leaf);
        self.announced.clear();
    }
    fn entry(&mut self, key: &[u8], value: u64) -> bool {
        if self.announced.pop_front() != Some(value) {
            self.unannounced += 1;
        }
        self.entries.push((key.to_vec(), value));
        self.entries.len() < self.limit
    }
    fn upcoming(&mut self, value: u64) {
        self.announced.push_back(value);
    }
}

fn scan(
    worker: &mut Worker,
    tree: &BTree,
    low: Bound<&[u8]>,
    high: Bound<&[u8]>,
    direction: Direction,
    limit: usize,
    expected: usize,
) -> Vec<(Vec<u8>, u64)> {
    worker
        .pinned(|pin, _| {
            let mut collect = Collect { limit, ..Collect::default() };
            let buffer = &mut ScanBuffer::new();
            if limit > 0 {
                tree.scan_expecting(low, high, direction, expected, pin, buffer, &mut collect);
            }
            collect.entries
        })
        .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, u64),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    GetGroup(Vec<Vec<u8>>),
    Scan {
        low: Option<(Vec<u8>, bool)>,
        high: Option<(Vec<u8>, bool)>,
        reverse: bool,
        limit: usize,
        /// What the scan is told to expect: a first leaf step of at most this many entries.
        expected: usize,
    },
}

/// Keys over a small alphabet, with many shared prefixes and lengths from 0 to 40 bytes, so
/// that head ties, long keys, short and long nodes, splits and merges all happen.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(b'a'), Just(0xFF)], 0..12),
        proptest::collection::vec(prop_oneof![Just(b'k'), Just(b'l')], 6..40),
        any::<u64>().prop_map(|value| (value % 5000).to_be_bytes().to_vec()),
    ]
}

fn bound() -> impl Strategy<Value = Option<(Vec<u8>, bool)>> {
    proptest::option::of((key(), any::<bool>()))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (key(), any::<u64>()).prop_map(|(key, value)| Op::Insert(key, value)),
        3 => key().prop_map(Op::Remove),
        2 => key().prop_map(Op::Get),
        1 => proptest::collection::vec(key(), 0..=GROUP_KEYS).prop_map(Op::GetGroup),
        1 => (bound(), bound(), any::<bool>(), 0usize..50, prop_oneof![Just(usize::MAX), 0usize..8])
            .prop_map(|(low, high, reverse, limit, expected)| {
                Op::Scan { low, high, reverse, limit, expected }
            }),
    ]
}

fn as_bound(bound: &Option<(Vec<u8>, bool)>) -> Bound<&[u8]> {
    match bound {
        None => Bound::Unbounded,
        Some((key, true)) => Bound::Included(key),
        Some((key, false)) => Bound::Excluded(key),
    }
}

fn model_scan(
    model: &BTreeMap<Vec<u8>, u64>,
    low: Bound<&[u8]>,
    high: Bound<&[u8]>,
    reverse: bool,
    limit: usize,
) -> Vec<(Vec<u8>, u64)> {
    let valid = match (low, high) {
        (Bound::Included(l), Bound::Included(h)) => l <= h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(h) | Bound::Included(h)) => l < h,
        _ => true,
    };
    if !valid {
        return Vec::new();
    }
    let range = model.range::<[u8], _>((low, high)).map(|(k, v)| (k.clone(), *v));
    if reverse { range.rev().take(limit).collect() } else { range.take(limit).collect() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn tree_matches_a_btreemap(ops in proptest::collection::vec(op(), 1..600)) {
        let db = database();
        let mut worker = db.worker().unwrap();
        let tree = BTree::new();
        let mut model = BTreeMap::new();
        for op in &ops {
            match op {
                Op::Insert(key, value) => {
                    let result = worker.pinned(|pin, garbage| tree.insert(key, *value, pin, garbage, &mut ())).unwrap();
                    match model.get(key) {
                        Some(existing) => prop_assert_eq!(result.err(), Some(*existing)),
                        None => {
                            prop_assert!(result.is_ok());
                            model.insert(key.clone(), *value);
                        }
                    }
                }
                Op::Remove(key) => {
                    let removed = worker.pinned(|pin, garbage| tree.remove(key, None, pin, garbage, &mut ())).unwrap();
                    prop_assert_eq!(removed, model.remove(key));
                }
                Op::Get(key) => {
                    let probe = worker.pinned(|pin, _| tree.get(key, pin).value).unwrap();
                    prop_assert_eq!(probe, model.get(key).copied());
                }
                Op::GetGroup(keys) => {
                    // Alone, every path is probed, and each probe is the one `get` makes.
                    let mut got = vec![None; keys.len()];
                    worker.pinned(|pin, _| tree.get_group(keys, pin, |index, probe| {
                        assert!(got[index].is_none(), "one probe per key");
                        got[index] = Some((probe.value, probe.leaf));
                    })).unwrap();
                    for (key, got) in keys.iter().zip(got) {
                        let single = worker.pinned(|pin, _| tree.get(key, pin)).unwrap();
                        prop_assert_eq!(got, Some((model.get(key).copied(), single.leaf)));
                    }
                }
                Op::Scan { low, high, reverse, limit, expected } => {
                    let direction = if *reverse { Direction::Reverse } else { Direction::Forward };
                    let (low_bound, high_bound) = (as_bound(low), as_bound(high));
                    let got = scan(&mut worker, &tree, low_bound, high_bound, direction, *limit, *expected);
                    let want = model_scan(&model, as_bound(low), as_bound(high), *reverse, *limit);
                    prop_assert_eq!(got, want);
                }
            }
        }
        prop_assert_eq!(checked_entries(&mut worker, &tree), model.into_iter().collect::<Vec<_>>());
    }
}

/// Every entry of `tree`, in order, once its invariants are checked.
fn checked_entries(worker: &mut Worker, tree: &BTree) -> Vec<(Vec<u8>, u64)> {
    tree.check_invariants();
    scan(worker, tree, Bound::Unbounded, Bound::Unbounded, Direction::Forward, usize::MAX, 1)
}

/// A scan names every entry to `ScanVisitor::upcoming` before it visits it, in order, and
/// no more than `SCAN_PREFETCH_DISTANCE` entries beyond the one it visits.
#[test]
fn scans_announce_each_entry_a_few_entries_ahead() {
    let db = database();
    let mut worker = db.worker().unwrap();
    let tree = BTree::new();
    for i in 0..5_000u64 {
        worker
            .pinned(|pin, garbage| tree.insert(&i.to_be_bytes(), i, pin, garbage, &mut ()).unwrap())
            .unwrap();
    }
    let (low, high) = (100u64.to_be_bytes(), 4_000u64.to_be_bytes());
    for direction in [Direction::Forward, Direction::Reverse] {
        for (limit, expected) in [(usize::MAX, 1), (usize::MAX, 64), (700, 700), (3, 3)] {
            let (entries, leaves, unannounced, most_ahead) = worker
                .pinned(|pin, _| {
                    let mut collect = Collect { limit, ..Collect::default() };
                    let mut most_ahead = 0;
                    let buffer = &mut ScanBuffer::new();
                    let bounds = (Bound::Included(&low[..]), Bound::Excluded(&high[..]));
                    let mut watch = Watch { collect: &mut collect, most_ahead: &mut most_ahead };
                    tree.scan_expecting(
                        bounds.0, bounds.1, direction, expected, pin, buffer, &mut watch,
                    );
                    (collect.entries.len(), collect.leaves.len(), collect.unannounced, most_ahead)
                })
                .unwrap();
            assert_eq!(entries, limit.min(3_900), "{direction:?} {limit}");
            assert!(leaves > 1 || limit == 3, "the scan crossed leaves");
            assert_eq!(unannounced, 0, "{direction:?}, limit {limit}");
            assert!(most_ahead <= SCAN_PREFETCH_DISTANCE + 1, "{most_ahead} named, not visited");
        }
    }
}

/// Counts how far ahead of the visits the announcements run.
struct Watch<'a> {
    collect: &'a mut Collect,
    most_ahead: &'a mut usize,
}

impl ScanVisitor for Watch<'_> {
    fn leaf(&mut self, leaf: LeafVersion) {
        self.collect.leaf(leaf);
    }
    fn entry(&mut self, key: &[u8], value: u64) -> bool {
        self.collect.entry(key, value)
    }
    fn upcoming(&mut self, value: u64) {
        self.collect.upcoming(value);
        *self.most_ahead = (*self.most_ahead).max(self.collect.announced.len());
    }
}

#[test]
fn bulk_inserts_removals_and_merges() {
    let db = database();
    let mut worker = db.worker().unwrap();
    let tree = BTree::new();
    let count = 200_000u64;
    let key_of = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
    for i in 0..count {
        worker
            .pinned(|pin, garbage| tree.insert(&key_of(i), i, pin, garbage, &mut ()).unwrap())
            .unwrap();
    }
    tree.check_invariants();
    let height = tree.height();
    assert!(height >= 3, "200k keys make a tree of several levels, got {height}");
    // Group lookups on the deep tree, with keys present and absent.
    for first in (0..count + GROUP_KEYS as u64).step_by(GROUP_KEYS * 97) {
        let ids: Vec<u64> = (first..first + GROUP_KEYS as u64).collect();
        let keys: Vec<_> = ids.iter().map(|&i| key_of(i)).collect();
        let mut got = vec![None; keys.len()];
        worker
            .pinned(|pin, _| {
                tree.get_group(&keys, pin, |index, probe| got[index] = Some(probe.value))
            })
            .unwrap();
        let want: Vec<_> = ids.iter().map(|&i| Some((i < count).then_some(i))).collect();
        assert_eq!(got, want);
    }
    for i in (0..count).filter(|i| i % 4 != 0) {
        let removed = worker
            .pinned(|pin, garbage| tree.remove(&key_of(i), None, pin, garbage, &mut ()))
            .unwrap();
        assert_eq!(removed, Some(i));
    }
    tree.check_invariants();
    let (_, leaves, _) = tree.node_counts();
    assert!(
        leaves < (count as usize / 4) / 16 * 2,
        "underfull leaves were merged: {leaves} leaves"
    );
    for i in 0..count {
        let value = worker.pinned(|pin, _| tree.get(&key_of(i), pin).value).unwrap();
        assert_eq!(value, (i % 4 == 0).then_some(i));
    }
    for i in (0..count).filter(|i| i % 4 == 0) {
        worker.pinned(|pin, garbage| tree.remove(&key_of(i), None, pin, garbage, &mut ())).unwrap();
    }
    tree.check_invariants();
    assert_eq!(tree.height(), 1, "an empty tree collapses to one leaf");
}

#[test]
fn insert_reports_leaf_versions_for_node_sets() {
    let db = database();
    let mut worker = db.worker().unwrap();
    let tree = BTree::new();
    struct Patch(Vec<LeafVersion>);
    impl engram_engine::index::LeafObserver for Patch {
        fn leaf_changed(&mut self, node: usize, before: u64, after: &[LeafVersion]) {
            if let Some(position) = self
                .0
                .iter()
                .position(|leaf| leaf.node_address() == node && leaf.version() == before)
            {
                self.0.remove(position);
                self.0.extend_from_slice(after);
            }
        }
    }
    for i in 0..100u64 {
        worker
            .pinned(|pin, garbage| tree.insert(&i.to_be_bytes(), i, pin, garbage, &mut ()).unwrap())
            .unwrap();
    }
    // A scan records its leaves; our own inserts keep them valid through splits; another
    // writer's insert does not.
    let mut node_set = worker
        .pinned(|pin, _| {
            let mut collect = Collect { limit: usize::MAX, ..Collect::default() };
            tree.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                pin,
                &mut ScanBuffer::new(),
                &mut collect,
            );
            Patch(collect.leaves)
        })
        .unwrap();
    for i in 1000..1200u64 {
        worker
            .pinned(|pin, garbage| {
                tree.insert(&i.to_be_bytes(), i, pin, garbage, &mut node_set).unwrap()
            })
            .unwrap();
    }
    let all_current =
        worker.pinned(|pin, _| node_set.0.iter().all(|leaf| leaf.is_current(pin))).unwrap();
    assert!(all_current, "own inserts, splits included, keep the node set valid");
    worker
        .pinned(|pin, garbage| {
            tree.insert(&5000u64.to_be_bytes(), 1, pin, garbage, &mut ()).unwrap()
        })
        .unwrap();
    let still = worker.pinned(|pin, _| node_set.0.iter().all(|leaf| leaf.is_current(pin))).unwrap();
    assert!(!still, "a foreign insert into a scanned range is detected");
}

#[test]
fn concurrent_writers_and_scanners_agree_with_the_final_state() {
    let db = Arc::new(database());
    let tree = Arc::new(BTree::new());
    let threads = 4u64;
    let per_thread = 20_000u64;
    let writers_done = &std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for thread in 0..threads {
            let (db, tree) = (Arc::clone(&db), Arc::clone(&tree));
            scope.spawn(move || {
                let mut worker = db.worker().unwrap();
                // Interleaved key ranges, so threads split and merge the same leaves.
                for round in 0..3u64 {
                    for i in 0..per_thread {
                        let key = (i * threads + thread).to_be_bytes();
                        let inserted = worker
                            .pinned(|pin, garbage| tree.insert(&key, round, pin, garbage, &mut ()))
                            .unwrap();
                        assert!(inserted.is_ok(), "each thread owns its keys");
                    }
                    for i in (0..per_thread).filter(|i| round == 2 || i % 3 != 0) {
                        let key = (i * threads + thread).to_be_bytes();
                        if round < 2 {
                            let removed = worker
                                .pinned(|pin, garbage| {
                                    tree.remove(&key, None, pin, garbage, &mut ())
                                })
                                .unwrap();
                            assert_eq!(removed, Some(round));
                        }
                    }
                    if round < 2 {
                        for i in (0..per_thread).filter(|i| i % 3 == 0) {
                            let key = (i * threads + thread).to_be_bytes();
                            worker
                                .pinned(|pin, garbage| {
                                    tree.remove(&key, None, pin, garbage, &mut ())
                                })
                                .unwrap();
                        }
                    }
                }
                writers_done.fetch_add(1, std::sync::atomic::Ordering::Release);
            });
        }
        // A group reader: 9-byte keys, each just after a writer's key, are inserted once and
        // not removed until the end, so every probe of them (most are made; a few may meet a
        // split and be left to the caller) finds its value while writers split and merge the
        // leaves around them.
        let (db_ref, tree_ref) = (Arc::clone(&db), Arc::clone(&tree));
        scope.spawn(move || {
            let mut worker = db_ref.worker().unwrap();
            let keys: Vec<Vec<u8>> = (0..64u64)
                .map(|i| {
                    let mut key = (i * 1_250).to_be_bytes().to_vec();
                    key.push(1);
                    key
                })
                .collect();
            for (i, key) in keys.iter().enumerate() {
                worker
                    .pinned(|pin, garbage| {
                        tree_ref.insert(key, 7 + i as u64, pin, garbage, &mut ())
                    })
                    .unwrap()
                    .unwrap();
            }
            let (mut probed, mut round) = (0, 0);
            while round < 2_000 || writers_done.load(std::sync::atomic::Ordering::Acquire) < threads
            {
                round += 1;
                let group = &keys[(round % 8) * GROUP_KEYS..][..GROUP_KEYS];
                worker
                    .pinned(|pin, _| {
                        tree_ref.get_group(group, pin, |index, probe| {
                            let want = 7 + ((round % 8) * GROUP_KEYS + index) as u64;
                            assert_eq!(probe.value, Some(want));
                            probed += 1;
                        })
                    })
                    .unwrap();
            }
            assert!(probed > round * GROUP_KEYS / 2, "most probes complete: {probed}");
            for key in &keys {
                worker
                    .pinned(|pin, garbage| tree_ref.remove(key, None, pin, garbage, &mut ()))
                    .unwrap();
            }
        });
        // A scanner checks that every scan is sorted and duplicate-free while writers run.
        let (db, tree) = (Arc::clone(&db), Arc::clone(&tree));
        scope.spawn(move || {
            let mut worker = db.worker().unwrap();
            for round in 0..200 {
                let direction =
                    if round % 2 == 0 { Direction::Forward } else { Direction::Reverse };
                // Some scans start with a short first step and go on past its last entry.
                let expected = if round % 4 < 2 { 1 + round % 3 } else { usize::MAX };
                let entries = scan(
                    &mut worker,
                    &tree,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    direction,
                    usize::MAX,
                    expected,
                );
                let sorted = entries.windows(2).all(|pair| match direction {
                    Direction::Forward => pair[0].0 < pair[1].0,
                    Direction::Reverse => pair[0].0 > pair[1].0,
                });
                assert!(sorted, "scan {round} out of order");
            }
        });
    });
    tree.check_invariants();
    let mut worker = db.worker().unwrap();
    let entries = scan(
        &mut worker,
        &tree,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
        usize::MAX,
        usize::MAX,
    );
    assert_eq!(entries.len() as u64, threads * per_thread);
    assert!(entries.iter().all(|(_, value)| *value == 2));
}

#[test]
fn ascending_inserts_at_several_points_leave_leaves_seven_eighths_full() {
    let db = database();
    let mut worker = db.worker().unwrap();
    // Ten "districts", each taking ascending order numbers, interleaved: every insert lands
    // after the last key of its district, in the middle of the tree (and long keys, so the
    // leaves have heaps too).
    for long in [false, true] {
        let tree = BTree::new();
        let per_district = 20_000u32;
        let key_of = |district: u8, order: u32| {
            let mut key = vec![district];
            key.extend_from_slice(&order.to_be_bytes());
            if long {
                key.extend_from_slice(b"-a longer key tail");
            }
            key
        };
        for order in 0..per_district {
            for district in 0..10u8 {
                let value = u64::from(district) << 32 | u64::from(order);
                worker
                    .pinned(|pin, garbage| {
                        tree.insert(&key_of(district, order), value, pin, garbage, &mut ()).unwrap()
                    })
                    .unwrap();
            }
        }
        tree.check_invariants();
        let (_, leaves, _) = tree.node_counts();
        let keys = 10 * per_district as usize;
        let fill = keys as f64 / (leaves * 64) as f64;
        assert!(fill > 0.8, "long keys {long}: {leaves} leaves for {keys} keys, fill {fill:.2}");
        for district in 0..10u8 {
            for order in (0..per_district).step_by(997) {
                let value = worker.pinned(|pin, _| tree.get(&key_of(district, order), pin).value);
                assert_eq!(value.unwrap(), Some(u64::from(district) << 32 | u64::from(order)));
            }
        }
    }
}

// ----- inserts that start at a remembered leaf (`BTree::insert_near`) -----------------------

#[derive(Debug, Clone)]
enum NearOp {
    /// Keys inserted in ascending order through the finger of tree 0 or 1.
    Run(usize, Vec<(Vec<u8>, u64)>),
    Remove(usize, Vec<u8>),
    Insert(usize, Vec<u8>, u64),
}

fn near_op() -> impl Strategy<Value = NearOp> {
    prop_oneof![
        4 => (0usize..2, proptest::collection::vec((key(), any::<u64>()), 1..60)).prop_map(
            |(tree, mut run)| {
                run.sort_by(|a, b| a.0.cmp(&b.0));
                NearOp::Run(tree, run)
            }
        ),
        3 => (0usize..2, key()).prop_map(|(tree, key)| NearOp::Remove(tree, key)),
        1 => (0usize..2, key(), any::<u64>()).prop_map(|(tree, key, value)| NearOp::Insert(tree, key, value)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Two trees, each with a finger kept across every operation (so it meets leaves that
    /// other inserts split and removals merged away, and the other tree's leaves): each
    /// insert answers as `insert` would, makes its value only when it inserts, and the trees
    /// end equal to their models.
    #[test]
    fn insert_near_matches_a_btreemap(ops in proptest::collection::vec(near_op(), 1..120)) {
        let db = database();
        let mut worker = db.worker().unwrap();
        let trees = [BTree::new(), BTree::new()];
        let mut models = [BTreeMap::new(), BTreeMap::new()];
        worker.pinned(|pin, garbage| -> Result<(), TestCaseError> {
            let mut fingers = [Finger::new(pin), Finger::new(pin)];
            for op in &ops {
                match op {
                    NearOp::Run(which, run) => {
                        for (key, value) in run {
                            // One finger for both trees now and then: it must notice.
                            let finger = &mut fingers[if value % 7 == 0 { 0 } else { *which }];
                            let mut made = false;
                            let make = || { made = true; *value };
                            let result = trees[*which].insert_near(finger, key, make, pin, garbage, &mut ());
                            match models[*which].get(key) {
                                Some(existing) => {
                                    prop_assert_eq!(result.err(), Some(*existing));
                                    prop_assert!(!made, "a present key makes no value");
                                }
                                None => {
                                    prop_assert!(result.is_ok() && made);
                                    models[*which].insert(key.clone(), *value);
                                }
                            }
                        }
                    }
                    NearOp::Remove(which, key) => {
                        let removed = trees[*which].remove(key, None, pin, garbage, &mut ());
                        prop_assert_eq!(removed, models[*which].remove(key));
                    }
                    NearOp::Insert(which, key, value) => {
                        let result = trees[*which].insert(key, *value, pin, garbage, &mut ());
                        prop_assert_eq!(result.is_ok(), !models[*which].contains_key(key));
                        models[*which].entry(key.clone()).or_insert(*value);
                    }
                }
            }
            Ok(())
        }).unwrap()?;
        for (tree, model) in trees.iter().zip(models) {
            prop_assert_eq!(checked_entries(&mut worker, tree), model.into_iter().collect::<Vec<_>>());
        }
    }
}

#[test]
fn ascending_inserts_near_a_finger_descend_once_per_leaf() {
    let db = database();
    let mut worker = db.worker().unwrap();
    let tree = BTree::new();
    let count = 100_000u64;
    // Composite keys of 12 bytes (two words to compare), ascending.
    let key_of = |i: u64| {
        let mut key = (i / 1000).to_be_bytes().to_vec();
        key.extend_from_slice(&((i % 1000) as u32).to_be_bytes());
        key
    };
    let hits = worker
        .pinned(|pin, garbage| {
            let mut finger = Finger::new(pin);
            for i in 0..count {
                tree.insert_near(&mut finger, &key_of(i), || i, pin, garbage, &mut ()).unwrap();
            }
            finger.hits()
        })
        .unwrap();
    tree.check_invariants();
    let (_, leaves, _) = tree.node_counts();
    assert!(tree.height() >= 3, "a tree of several levels");
    // A descent per leaf (its first key) and per split (the insert that found the leaf full).
    assert!(
        count - hits <= 2 * leaves as u64 + 1,
        "{hits} of {count} at the finger, {leaves} leaves"
    );
    // Again, every key present: found at the finger, nothing made.
    let hits = worker
        .pinned(|pin, garbage| {
            let mut finger = Finger::new(pin);
            for i in 0..count {
                let found = tree.insert_near(
                    &mut finger,
                    &key_of(i),
                    || panic!("key {i} is present"),
                    pin,
                    garbage,
                    &mut (),
                );
                assert_eq!(found.err(), Some(i));
            }
            finger.hits()
        })
        .unwrap();
    assert!(count - hits <= leaves as u64 + 1, "{hits} of {count} at the finger");
    // Descending keys leave the finger's range at once every time: each still lands right.
    let tree = BTree::new();
    worker
        .pinned(|pin, garbage| {
            let mut finger = Finger::new(pin);
            for i in (0..10_000).rev() {
                tree.insert_near(&mut finger, &key_of(i), || i, pin, garbage, &mut ()).unwrap();
            }
        })
        .unwrap();
    tree.check_invariants();
    for i in (0..10_000).step_by(37) {
        assert_eq!(worker.pinned(|pin, _| tree.get(&key_of(i), pin).value).unwrap(), Some(i));
    }
}

#[test]
fn concurrent_inserts_near_fingers_split_and_merge_shared_leaves() {
    let db = Arc::new(database());
    let tree = Arc::new(BTree::new());
    let threads = 4u64;
    let per_thread = 30_000u64;
    let batch = 500u64;
    std::thread::scope(|scope| {
        for thread in 0..threads {
            let (db, tree) = (Arc::clone(&db), Arc::clone(&tree));
            scope.spawn(move || {
                let mut worker = db.worker().unwrap();
                // Interleaved keys: every leaf holds keys of every thread, so fingers meet
                // leaves that other threads split, fill and (after removals) merge away.
                let key_of = |i: u64| (i * threads + thread).to_be_bytes();
                for round in 0..3u64 {
                    for start in (0..per_thread).step_by(batch as usize) {
                        worker
                            .pinned(|pin, garbage| {
                                let mut finger = Finger::new(pin);
                                for i in start..start + batch {
                                    let result = tree.insert_near(
                                        &mut finger,
                                        &key_of(i),
                                        || round,
                                        pin,
                                        garbage,
                                        &mut (),
                                    );
                                    // Keys kept from the round before are found, not made.
                                    match result {
                                        Ok(_) => assert!(round == 0 || !i.is_multiple_of(3)),
                                        Err(found) => {
                                            assert!(
                                                round > 0
                                                    && i.is_multiple_of(3)
                                                    && found == round - 1
                                            )
                                        }
                                    }
                                }
                            })
                            .unwrap();
                    }
                    if round < 2 {
                        for i in (0..per_thread).filter(|i| !i.is_multiple_of(3)) {
                            worker
                                .pinned(|pin, garbage| {
                                    tree.remove(&key_of(i), None, pin, garbage, &mut ())
                                })
                                .unwrap()
                                .unwrap();
                        }
                        // What stays gets this round's value, so the next round finds it.
                        for i in (0..per_thread).filter(|i| i.is_multiple_of(3)) {
                            worker
                                .pinned(|pin, garbage| {
                                    tree.remove(&key_of(i), None, pin, garbage, &mut ()).unwrap();
                                    tree.insert(&key_of(i), round, pin, garbage, &mut ()).unwrap()
                                })
                                .unwrap();
                        }
                    }
                }
            });
        }
    });
    tree.check_invariants();
    let mut worker = db.worker().unwrap();
    let entries = scan(
        &mut worker,
        &tree,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
        usize::MAX,
        1,
    );
    assert_eq!(entries.len() as u64, threads * per_thread);
    for (key, value) in entries {
        let i = u64::from_be_bytes(key.try_into().unwrap()) / threads;
        assert_eq!(value, if i.is_multiple_of(3) { 1 } else { 2 }, "key {i}");
    }
}
