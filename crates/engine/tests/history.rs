//! Multi-threaded random histories, checked for serializability.
//!
//! Transactions read keys, append their id to keys' lists, and scan ranges of a small key
//! universe (a scan also reads every absent key in its range, as the empty list, so inserts
//! into a scanned range are anti-dependencies like any other). The checker in
//! `engram_testkit::history` rebuilds the dependency graph from the committed transactions and
//! the final lists and looks for cycles.

use engram_engine::{
    AbortReason, Config, Database, Direction, Gc, Isolation, KeyBuilder, Protocol, Stats, TableRef,
    TableSpec, Tid, VersionStorage,
};
use engram_testkit::history::{self, Committed, Violation};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs a test may make to see what needs overlapping transactions (a write skew, an
/// exclusion-window abort): the first few show one on an idle machine, a loaded one needs
/// more; each run is checked all the same.
const SKEW_RUNS_MAX: u64 = 40;

/// Operations work near a frontier that moves up as transactions start, so new keys keep being
/// inserted right where other transactions read and scan: phantoms stay possible all run long.
const NEAR_FRONTIER: u64 = 16;
const SCAN_WIDTH_MAX: u64 = 12;

/// A database with 2 ms epochs and snapshots every `snapshot_interval_epochs` epochs (deleted
/// records leave the index once the snapshot horizon passes them).
fn database(snapshot_interval_epochs: u64, protocol: Protocol) -> Arc<Database> {
    database_with_gc(snapshot_interval_epochs, protocol, Versions::default())
}

/// [`database`] under GC mode `gc` (the vacuum, if any, passes every millisecond).
/// How versions are kept and collected.
#[derive(Debug, Clone, Copy, Default)]
struct Versions {
    gc: Gc,
    storage: VersionStorage,
}

impl std::fmt::Display for Versions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gc {}, {} storage", self.gc, self.storage)
    }
}

fn database_with_gc(
    snapshot_interval_epochs: u64,
    protocol: Protocol,
    versions: Versions,
) -> Arc<Database> {
    Arc::new(
        Database::open(Config {
            epoch_interval_ms: 2,
            snapshot_interval_epochs,
            protocol,
            gc: versions.gc,
            version_storage: versions.storage,
            vacuum_interval_ms: 1,
            ..Config::default()
        })
        .unwrap(),
    )
}

fn key(k: u64) -> Vec<u8> {
    KeyBuilder::new().u64(k).finish()
}

fn run(
    protocol: Protocol,
    isolation: Isolation,
    threads: usize,
    per_thread: usize,
    seed: u64,
) -> (Vec<Committed>, BTreeMap<u64, Vec<u64>>) {
    let run = run_with_stats(protocol, Versions::default(), isolation, threads, per_thread, seed);
    (run.committed, run.finals)
}

/// A finished [`run_with_stats`].
struct Run {
    committed: Vec<Committed>,
    finals: BTreeMap<u64, Vec<u64>>,
    /// The database's commit and abort counts.
    stats: Stats,
    /// Each committed transaction's commit TID, for reports.
    tids: HashMap<u64, Tid>,
}

/// [`run`], with the database's counts and the commit TIDs.
fn run_with_stats(
    protocol: Protocol,
    versions: Versions,
    isolation: Isolation,
    threads: usize,
    per_thread: usize,
    seed: u64,
) -> Run {
    let db = database_with_gc(1, protocol, versions);
    let table = db.create_table(TableSpec::new("lists")).unwrap();
    let next_id = Arc::new(AtomicU64::new(1));
    let frontier = Arc::new(AtomicU64::new(0));
    let committed: Vec<(Committed, Tid)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (db, table, next_id) =
                    (Arc::clone(&db), Arc::clone(&table), Arc::clone(&next_id));
                let frontier = Arc::clone(&frontier);
                scope.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let mut random = SmallRng::seed_from_u64(seed * 1000 + thread as u64);
                    let mut done = Vec::new();
                    for _ in 0..per_thread {
                        let frontier = frontier.fetch_add(1, Ordering::Relaxed) / 8;
                        let plan: Vec<(u8, u64, u64)> = (0..random.random_range(1..6))
                            .map(|_| {
                                let low = frontier + random.random_range(0..NEAR_FRONTIER);
                                let high = low + random.random_range(0..SCAN_WIDTH_MAX);
                                (random.random_range(0..3), low, high)
                            })
                            .collect();
                        let outcome = worker.transaction(isolation, |txn| {
                            let id = next_id.fetch_add(1, Ordering::Relaxed);
                            #[cfg(feature = "ssn-trace")]
                            engram_engine::trace::record(engram_engine::trace::Ev::Begin { id });
                            let mut record = Committed { id, ..Committed::default() };
                            for &(kind, low, high) in &plan {
                                match kind {
                                    0 => {
                                        let list = txn
                                            .get(&table, &key(low))?
                                            .map(history::decode)
                                            .unwrap_or_default();
                                        record.reads.push((low, list));
                                    }
                                    1 => {
                                        let mut list = txn
                                            .get(&table, &key(low))?
                                            .map(history::decode)
                                            .unwrap_or_default();
                                        if record.appends.contains(&low) {
                                            continue;
                                        }
                                        record.reads.push((low, list.clone()));
                                        list.push(id);
                                        txn.put(&table, &key(low), &history::encode(&list))?;
                                        record.appends.push(low);
                                    }
                                    _ => {
                                        let mut seen = BTreeMap::new();
                                        txn.scan(
                                            &table,
                                            Bound::Included(&key(low)),
                                            Bound::Included(&key(high)),
                                            Direction::Forward,
                                            usize::MAX,
                                            |k, v| {
                                                seen.insert(
                                                    u64::from_be_bytes(k.try_into().unwrap()),
                                                    history::decode(v),
                                                );
                                                true
                                            },
                                        )?;
                                        for k in low..=high {
                                            if !record.appends.contains(&k) {
                                                record
                                                    .reads
                                                    .push((k, seen.remove(&k).unwrap_or_default()));
                                            }
                                        }
                                    }
                                }
                            }
                            Ok(record)
                        });
                        if let Ok(record) = outcome {
                            done.push((record, worker.last_commit().tid));
                        }
                    }
                    #[cfg(feature = "ssn-trace")]
                    engram_engine::trace::flush();
                    done
                })
            })
            .collect();
        handles.into_iter().flat_map(|handle| handle.join().unwrap()).collect()
    });
    let mut worker = db.worker().unwrap();
    let finals = worker
        .transaction(Isolation::Serializable, |txn| {
            let mut finals = BTreeMap::new();
            txn.scan(
                &table,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |k, v| {
                    finals.insert(u64::from_be_bytes(k.try_into().unwrap()), history::decode(v));
                    true
                },
            )?;
            Ok(finals)
        })
        .unwrap();
    let _ = &table as &TableRef;
    let tids = committed.iter().map(|(record, tid)| (record.id, *tid)).collect();
    let committed = committed.into_iter().map(|(record, _)| record).collect();
    Run { committed, finals, stats: db.stats(), tids }
}

/// What a cycle's transactions did, for the failure message: each one's commit TID, the lists
/// it read, the keys it appended to, and the final lists of those keys.
fn describe_cycle(
    committed: &[Committed],
    finals: &BTreeMap<u64, Vec<u64>>,
    tids: &HashMap<u64, Tid>,
    violation: &Violation,
) -> String {
    let Violation::Cycle(edges) = violation else { return String::new() };
    let mut out = String::new();
    for &(id, _, _) in edges {
        let Some(txn) = committed.iter().find(|txn| txn.id == id) else { continue };
        let _ = writeln!(out, "txn {id} committed at {:?}", tids.get(&id));
        for (key, list) in &txn.reads {
            let _ = writeln!(out, "  read {key}: {list:?} (final {:?})", finals.get(key));
        }
        for key in &txn.appends {
            let _ = writeln!(out, "  appended to {key} (final {:?})", finals.get(key));
        }
    }
    out
}

/// A serializable run under `protocol` (4 threads, 1,500 transactions each) whose history has
/// no cycle, more than `commits_min` commits and anti-dependencies to check; its counts.
fn serializable_run(protocol: Protocol, seed: u64, commits_min: usize) -> Stats {
    serializable_run_gc(protocol, Versions::default(), seed, commits_min)
}

/// [`serializable_run`] with `versions`' GC mode and version storage.
fn serializable_run_gc(
    protocol: Protocol,
    versions: Versions,
    seed: u64,
    commits_min: usize,
) -> Stats {
    let Run { committed, finals, stats, tids } =
        run_with_stats(protocol, versions, Isolation::Serializable, 4, 1500, seed);
    let summary = history::check(&committed, &finals).unwrap_or_else(|violation| {
        let cycle = describe_cycle(&committed, &finals, &tids, &violation);
        panic!("{protocol} {versions} seed {seed}: {violation}\n{cycle}")
    });
    assert!(summary.transactions > commits_min, "{protocol}: {} commit", summary.transactions);
    assert!(summary.read_write_edges > 100, "{protocol}: anti-dependencies to check");
    stats
}

#[test]
fn serializable_histories_have_no_cycles() {
    for seed in 0..3 {
        serializable_run(Protocol::Silo, seed, 3000);
    }
}

/// A vacuum pruning every millisecond beside the transactions, or no pruning at all, leaves
/// every serializable history acyclic.
#[test]
fn serializable_histories_have_no_cycles_under_every_gc_mode() {
    for gc in [Gc::TupleVacuum, Gc::None] {
        for protocol in [Protocol::Mvto, Protocol::Ssn, Protocol::Silo] {
            let versions = Versions { gc, ..Versions::default() };
            serializable_run_gc(protocol, versions, 7, 2000);
        }
    }
}

/// Append-only chains, newest or oldest first, and delta records, under every protocol, with
/// writers, a vacuum or (oldest first) the readers pruning them: every serializable history is
/// acyclic.
#[test]
fn serializable_histories_have_no_cycles_under_every_version_storage() {
    for storage in [VersionStorage::AppendN2o, VersionStorage::AppendO2n, VersionStorage::Delta] {
        for protocol in Protocol::ALL {
            let versions = Versions { storage, ..Versions::default() };
            serializable_run_gc(protocol, versions, 11, 1500);
        }
        for protocol in [Protocol::Mvto, Protocol::Ssn] {
            let versions = Versions { gc: Gc::TupleVacuum, storage };
            serializable_run_gc(protocol, versions, 12, 1500);
        }
    }
    for protocol in [Protocol::Mvto, Protocol::Ssn, Protocol::Mv2pl, Protocol::Silo] {
        let versions = Versions { gc: Gc::TupleCooperative, storage: VersionStorage::AppendO2n };
        serializable_run_gc(protocol, versions, 13, 1500);
    }
}

#[test]
fn the_checker_catches_read_committed_anomalies() {
    // Read committed validates nothing: under contention some history has a lost append or a
    // cycle. Several short runs make a miss vanishingly unlikely.
    let found = (0..20).any(|seed| {
        let (committed, finals) =
            run(Protocol::Silo, Isolation::ReadCommitted, 4, 1000, 100 + seed);
        matches!(
            history::check(&committed, &finals),
            Err(Violation::LostAppend { .. } | Violation::Cycle(_) | Violation::NotAPrefix { .. })
        )
    });
    assert!(found, "read committed produced no detectable anomaly in 20 runs");
}

#[test]
fn multi_version_serializable_histories_have_no_cycles() {
    for protocol in [Protocol::Si, Protocol::Mvocc, Protocol::Ssn] {
        for seed in 0..2 {
            serializable_run(protocol, seed, 2000);
        }
    }
}

/// The serial safety net: serializable histories without read validation. Reads are never
/// re-checked (no `read_validation` abort: the workload has no `get_for_update`), the
/// exclusion window is what aborts, and no history has a cycle. The same workload at `ssn`'s
/// repeatable read (snapshot isolation) shows write skews, so the net has cycles to stop.
#[test]
fn ssn_serializable_histories_have_no_cycles_without_read_validation() {
    // At least 8 runs; more, each checked, until the window has closed once: a loaded machine
    // overlaps fewer transactions (3 of 44 loaded runs of the suite saw none in 8).
    let mut exclusions = 0;
    for seed in 0..SKEW_RUNS_MAX {
        if seed >= 8 && exclusions > 0 {
            break;
        }
        let stats = serializable_run(Protocol::Ssn, 500 + seed, 2000);
        assert_eq!(stats.aborts_for(AbortReason::ReadValidation), 0, "reads are not validated");
        exclusions += stats.aborts_for(AbortReason::Exclusion);
    }
    assert!(
        exclusions > 0,
        "the exclusion window never closed in {SKEW_RUNS_MAX} runs under contention"
    );
    let skews = (0..SKEW_RUNS_MAX).any(|seed| {
        let (committed, finals) =
            run(Protocol::Ssn, Isolation::RepeatableRead, 4, 1500, 600 + seed);
        history::check_snapshot_isolation(&committed, &finals)
            .unwrap_or_else(|violation| panic!("ssn repeatable read, seed {seed}: {violation}"));
        matches!(history::check(&committed, &finals), Err(Violation::Cycle(_)))
    });
    assert!(
        skews,
        "ssn repeatable read (snapshot isolation) showed no write skew in {SKEW_RUNS_MAX} runs"
    );
}

/// The pessimistic protocols: serializable histories without read validation, where what
/// aborts is a refused lock (and, under MVTO, timestamp order), and no history has a cycle.
#[test]
fn locking_serializable_histories_have_no_cycles_without_read_validation() {
    for protocol in [Protocol::Mvto, Protocol::Mv2pl] {
        let mut refused = 0;
        let mut out_of_order = 0;
        for seed in 0..4 {
            let stats = serializable_run(protocol, 700 + seed, 1000);
            assert_eq!(stats.aborts_for(AbortReason::ReadValidation), 0, "{protocol}");
            refused += stats.aborts_for(AbortReason::LockConflict);
            out_of_order += stats.aborts_for(AbortReason::TimestampOrder);
        }
        assert!(refused > 0, "{protocol}: no lock was ever refused under contention");
        if protocol == Protocol::Mvto {
            assert!(out_of_order > 0, "mvto: timestamp order never refused a write");
        } else {
            assert_eq!(out_of_order, 0, "mv2pl has no timestamps");
        }
    }
}

#[test]
fn mvocc_repeatable_read_histories_lose_no_update() {
    // Validated reads and first committer wins: no lost append, no dirty read. (Phantoms are
    // allowed, so the graph may have cycles through scans.)
    for seed in 0..2 {
        let (committed, finals) =
            run(Protocol::Mvocc, Isolation::RepeatableRead, 4, 1500, 300 + seed);
        if let Err(violation) = history::check(&committed, &finals) {
            assert!(
                matches!(violation, Violation::Cycle(_)),
                "seed {seed}: {violation} (only a cycle may appear)"
            );
        }
    }
}

/// Snapshot isolation under contention: every history passes the snapshot-isolation check
/// (no lost append, no cycle with fewer than two anti-dependencies), and some history has a
/// write skew that the serializability check catches: the SI check is not vacuous, and the
/// protocol really reads snapshots rather than validating.
#[test]
fn snapshot_isolation_histories_keep_si_and_show_write_skew() {
    // A write skew needs two transactions to overlap, which a loaded machine makes rarer: runs
    // go on (each checked) until one shows it, up to SKEW_RUNS_MAX.
    let mut skews = 0;
    for seed in 0..SKEW_RUNS_MAX {
        let (committed, finals) = run(Protocol::Si, Isolation::RepeatableRead, 4, 1500, 200 + seed);
        let summary = history::check_snapshot_isolation(&committed, &finals)
            .unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
        assert!(summary.transactions > 3000, "most commit: {}", summary.transactions);
        if matches!(history::check(&committed, &finals), Err(Violation::Cycle(_))) {
            skews += 1;
        }
        if skews > 0 && seed >= 5 {
            break;
        }
    }
    assert!(
        skews > 0,
        "no write skew in {SKEW_RUNS_MAX} runs of snapshot isolation under contention"
    );
    // Read committed has no first-committer-wins: it loses appends, and the check sees it.
    let caught = (0..10).any(|seed| {
        let (committed, finals) = run(Protocol::Si, Isolation::ReadCommitted, 4, 1000, 400 + seed);
        history::check_snapshot_isolation(&committed, &finals).is_err()
    });
    assert!(caught, "si read committed passed the snapshot-isolation check 10 times");
}

/// A predicate constraint kept only by serializability: "at most `LIMIT` rows in the range".
/// Each transaction counts the range and inserts a row when there is room, or deletes one
/// when it is full. Keys are few, so inserts mostly bring back deleted records still in the
/// index (scans pass over those without recording them; bringing one back changes its leaf):
/// two transactions that each see room and each insert would make a write skew over the
/// predicate. Every count any transaction sees, and the final count, must stay within the
/// limit.
#[test]
fn a_predicate_limit_holds_while_deleted_rows_come_back() {
    predicate_limit_holds(Protocol::Silo);
}

/// The same under the serial safety net, where the scan's snapshot may be stale and what stops
/// the predicate write skew is node validation together with the leaf stamps that inserters
/// read (`cc/ssn.rs`, PHANTOMS).
#[test]
fn ssn_keeps_a_predicate_limit_while_deleted_rows_come_back() {
    predicate_limit_holds(Protocol::Ssn);
}

/// MVTO: scans read at the transaction's timestamp, and inserters check the leaf stamps of
/// later-timestamped scanners; MV2PL: node validation, as under Silo.
#[test]
fn locking_protocols_keep_a_predicate_limit_while_deleted_rows_come_back() {
    predicate_limit_holds(Protocol::Mvto);
    predicate_limit_holds(Protocol::Mv2pl);
}

fn predicate_limit_holds(protocol: Protocol) {
    const KEYS: u64 = 12;
    const LIMIT: usize = 4;
    // Deleted records stay in the index for 50 epochs or more: inserts claim them.
    let db = database(50, protocol);
    let table = db.create_table(TableSpec::new("limited")).unwrap();
    let count = |txn: &mut engram_engine::Txn<'_>, present: &mut Vec<u64>| {
        present.clear();
        txn.scan(
            &table,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            usize::MAX,
            |k, _| {
                present.push(u64::from_be_bytes(k.try_into().unwrap()));
                true
            },
        )
    };
    let (claims, worst) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3u64)
            .map(|thread| {
                let (db, table) = (Arc::clone(&db), Arc::clone(&table));
                scope.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let mut random = SmallRng::seed_from_u64(thread);
                    let (mut inserts, mut worst) = (0u64, 0usize);
                    let mut present = Vec::new();
                    for _ in 0..4000 {
                        let pick = random.random_range(0..KEYS);
                        let outcome = worker.transaction(Isolation::Serializable, |txn| {
                            count(txn, &mut present)?;
                            let seen = present.len();
                            if seen < LIMIT {
                                if !present.contains(&pick) {
                                    txn.insert(&table, &key(pick), b"row")?;
                                    return Ok((seen, 1));
                                }
                            } else {
                                let victim = present[pick as usize % seen];
                                txn.delete(&table, &key(victim))?;
                            }
                            Ok((seen, 0))
                        });
                        if let Ok((seen, inserted)) = outcome {
                            worst = worst.max(seen);
                            inserts += inserted;
                        }
                    }
                    (inserts, worst)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .fold((0, 0), |(a, b), (inserts, worst)| (a + inserts, b.max(worst)))
    });
    let mut worker = db.worker().unwrap();
    let mut present = Vec::new();
    worker.transaction(Isolation::Serializable, |txn| count(txn, &mut present)).unwrap();
    assert!(worst <= LIMIT, "{protocol}: a transaction saw {worst} rows, over {LIMIT}");
    assert!(present.len() <= LIMIT, "{protocol}: {} rows at the end", present.len());
    assert!(claims > 1000, "{protocol}: the workload inserted rows again and again: {claims}");
}

/// A stress run, not part of the test suite: `STRESS_ROUNDS` serializable histories (100) of
/// `STRESS_THREADS` threads (6), each with its own seed, the first from `STRESS_SEED` (13),
/// under `STRESS_PROTOCOL` (`ssn`), `STRESS_GC` (`tuple-cooperative`) and `STRESS_STORAGE`
/// (`append-o2n`): by default the configuration in which the `ssn` cycles of
/// docs/isolation.md were seen. `cargo test --release -p engram-engine --test history --
/// --ignored stress_serializable_histories`; on a many-core machine, several at once with
/// different seeds. With `--features ssn-trace`, a failing round writes the traced events
/// around its cycle to `$STRESS_TRACE_DIR/trace-SEED.txt`.
#[test]
#[ignore]
fn stress_serializable_histories() {
    let setting = |name: &str, default: u64| {
        std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
    };
    let named = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let (threads, rounds) = (setting("STRESS_THREADS", 6) as usize, setting("STRESS_ROUNDS", 100));
    let first_seed = setting("STRESS_SEED", 13);
    let protocol = named("STRESS_PROTOCOL", "ssn");
    let protocol = Protocol::ALL
        .into_iter()
        .find(|known| known.name() == protocol)
        .unwrap_or_else(|| panic!("STRESS_PROTOCOL: no protocol {protocol}"));
    let versions = Versions {
        gc: named("STRESS_GC", "tuple-cooperative").parse().expect("STRESS_GC"),
        storage: named("STRESS_STORAGE", "append-o2n").parse().expect("STRESS_STORAGE"),
    };
    for round in 0..rounds {
        let seed = first_seed + round * 7919;
        #[cfg(feature = "ssn-trace")]
        drop(engram_engine::trace::collect());
        let Run { committed, finals, tids, .. } =
            run_with_stats(protocol, versions, Isolation::Serializable, threads, 1500, seed);
        if let Err(violation) = history::check(&committed, &finals) {
            let cycle = describe_cycle(&committed, &finals, &tids, &violation);
            #[cfg(feature = "ssn-trace")]
            dump_trace(&violation, seed);
            panic!("{protocol} {versions} round {round} seed {seed}: {violation}\n{cycle}");
        }
    }
}

/// Events of other attempts kept on each side of a cycle's own in a trace file.
#[cfg(feature = "ssn-trace")]
const TRACE_CONTEXT_EVENTS: usize = 3000;

/// Writes the traced events around a cycle's transactions to `$STRESS_TRACE_DIR/trace-SEED.txt`
/// (the temporary directory by default).
#[cfg(feature = "ssn-trace")]
fn dump_trace(violation: &Violation, seed: u64) {
    use engram_engine::trace::{self, Ev};
    let Violation::Cycle(edges) = violation else { return };
    let ids: Vec<u64> = edges.iter().map(|&(id, _, _)| id).collect();
    let events = trace::collect();
    let mut spans = Vec::new();
    for (index, event) in events.iter().enumerate() {
        if let Ev::Begin { id } = event.ev
            && ids.contains(&id)
        {
            let end = events[index + 1..]
                .iter()
                .position(|later| {
                    later.thread == event.thread && matches!(later.ev, Ev::Begin { .. })
                })
                .map_or(events.len(), |at| index + 1 + at);
            spans.push((index, end));
        }
    }
    let first = spans.iter().map(|s| s.0).min().unwrap_or(0).saturating_sub(TRACE_CONTEXT_EVENTS);
    let last =
        (spans.iter().map(|s| s.1).max().unwrap_or(0) + TRACE_CONTEXT_EVENTS).min(events.len());
    let dir = std::env::var_os("STRESS_TRACE_DIR").map_or_else(std::env::temp_dir, Into::into);
    let mut out = String::new();
    let _ = writeln!(out, "cycle ids {ids:?}; {} events in all", events.len());
    for event in &events[first..last] {
        let _ = writeln!(out, "{} t{} {:?}", event.time, event.thread, event.ev);
    }
    let path = dir.join(format!("trace-{seed}.txt"));
    std::fs::write(&path, out).unwrap();
    eprintln!("trace written to {}", path.display());
}
