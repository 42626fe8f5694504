//! Secondary indexes under both index-pointer schemes (`Config::index_pointers`), with several
//! threads. Writers bump a column no index covers (under physical pointers, a new entry in the
//! index every time), move rows to another group (a new secondary key), and replace rows by
//! others (an insert and a delete); auditors scan the index at every isolation level meanwhile.
//! A set of `ROWS` rows is present at every commit, so a serializable or snapshot scan of the
//! whole index shows exactly `ROWS` rows, each once, in (group, key) order. At the end every entry must be
//! produced by a state of its record and every state must have its entries
//! (`Table::check_entries`).

use engram_engine::{
    Config, Database, Direction, Error, Gc, IndexPointers, IndexSpec, Isolation, KeyBuilder,
    Protocol, TableRef, TableSpec, VersionStorage,
};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const ROWS: u64 = 48;
const GROUPS: u64 = 4;
/// Keys run over twice the rows: a replacement deletes a present key and inserts an absent one.
const KEYS: u64 = 2 * ROWS;

fn key(k: u64) -> Vec<u8> {
    KeyBuilder::new().u64(k).finish()
}

fn key_of(primary_key: &[u8]) -> u64 {
    u64::from_be_bytes(primary_key.try_into().expect("an 8-byte key"))
}

/// A row: its group (the indexed column, big-endian), then a counter no index covers.
fn row(group: u64, counter: u64) -> Vec<u8> {
    let mut row = group.to_be_bytes().to_vec();
    row.extend_from_slice(&counter.to_le_bytes());
    row
}

fn group_of(row: &[u8]) -> u64 {
    u64::from_be_bytes(row[..8].try_into().expect("a group"))
}

fn counter_of(row: &[u8]) -> u64 {
    u64::from_le_bytes(row[8..16].try_into().expect("a counter"))
}

fn open(protocol: Protocol, storage: VersionStorage, gc: Gc, pointers: IndexPointers) -> Database {
    Database::open(Config {
        epoch_interval_ms: 1,
        snapshot_interval_epochs: 2,
        protocol,
        gc,
        version_storage: storage,
        index_pointers: pointers,
        vacuum_interval_ms: 1,
        ..Config::default()
    })
    .unwrap()
}

/// The whole index in one scan: (group, key) of each row it shows, in scan order.
fn scan_all(
    txn: &mut engram_engine::Txn<'_>,
    table: &TableRef,
    direction: Direction,
) -> engram_engine::Result<Vec<(u64, u64)>> {
    let mut seen = Vec::new();
    txn.scan_index(table, 0, Bound::Unbounded, Bound::Unbounded, direction, usize::MAX, |k, v| {
        seen.push((group_of(v), key_of(k)));
        true
    })?;
    Ok(seen)
}

fn check_whole(seen: &[(u64, u64)], direction: Direction, what: &str) {
    let mut sorted = seen.to_vec();
    sorted.sort_unstable();
    if direction == Direction::Reverse {
        sorted.reverse();
    }
    assert_eq!(seen, sorted, "{what}: rows out of index order");
    let keys: BTreeSet<u64> = seen.iter().map(|&(_, k)| k).collect();
    assert_eq!(keys.len(), seen.len(), "{what}: a row shown twice: {seen:?}");
    assert_eq!(seen.len() as u64, ROWS, "{what}: {} rows, not {ROWS}: {seen:?}", seen.len());
}

/// One writer transaction: a counter bump, a move to another group, or a replacement.
fn write(
    txn: &mut engram_engine::Txn<'_>,
    table: &TableRef,
    random: &mut SmallRng,
) -> engram_engine::Result<()> {
    let pick = random.random_range(0..KEYS);
    let Some(current) = txn.get(table, &key(pick))?.map(<[u8]>::to_vec) else {
        return Ok(());
    };
    match random.random_range(0..10) {
        // The row keeps its group: the writer says so (`update_same_keys`), which commit
        // believes where the read was validated (Silo) and checks in debug builds.
        0..6 => {
            let bumped = row(group_of(&current), counter_of(&current) + 1);
            txn.update_same_keys(table, &key(pick), &bumped)?;
        }
        6..8 => {
            let group = random.random_range(0..GROUPS);
            txn.update(table, &key(pick), &row(group, counter_of(&current)))?;
        }
        _ => {
            let other = random.random_range(0..KEYS);
            if txn.get(table, &key(other))?.is_none() {
                txn.delete(table, &key(pick))?;
                txn.insert(table, &key(other), &row(random.random_range(0..GROUPS), 0))?;
            }
        }
    }
    Ok(())
}

/// One run; `snapshots`: whether the auditor also reads in snapshot transactions.
fn run_with(
    protocol: Protocol,
    storage: VersionStorage,
    gc: Gc,
    pointers: IndexPointers,
    snapshots: bool,
) {
    let what = format!("{protocol}, {storage}, gc {gc}, {pointers} pointers");
    let db = Arc::new(open(protocol, storage, gc, pointers));
    let table = grouped_table(&db);
    let mut loader = db.worker().unwrap();
    loader
        .transaction(Isolation::Serializable, |txn| {
            for k in 0..ROWS {
                txn.insert(&table, &key(k * 2), &row(k % GROUPS, 0))?;
            }
            Ok(())
        })
        .unwrap();
    // Snapshots read at an epoch boundary: wait until theirs covers the load.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while loader
        .transaction(Isolation::Snapshot, |txn| scan_all(txn, &table, Direction::Forward))
        .unwrap()
        .len()
        < ROWS as usize
    {
        assert!(std::time::Instant::now() < deadline, "{what}: the load never became visible");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    let audits = AtomicU64::new(0);
    std::thread::scope(|scope| {
        let writers: Vec<_> = (0..2u64)
            .map(|thread| {
                let (db, table, stop, commits) = (&db, &table, &stop, &commits);
                scope.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let mut random = SmallRng::seed_from_u64(thread);
                    while !stop.load(Ordering::Relaxed) {
                        let result = worker.transaction(Isolation::Serializable, |txn| {
                            write(txn, table, &mut random)
                        });
                        match result {
                            Ok(()) => {
                                commits.fetch_add(1, Ordering::Relaxed);
                            }
                            // An insert can meet a row committed since the transaction looked.
                            Err(Error::Aborted(_) | Error::DuplicateKey { .. }) => {}
                            Err(error) => panic!("{error}"),
                        }
                    }
                })
            })
            .collect();
        let auditor = {
            let (db, table, stop, audits, what) = (&db, &table, &stop, &audits, &what);
            scope.spawn(move || {
                let mut worker = db.worker().unwrap();
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let direction = if round.is_multiple_of(2) {
                        Direction::Forward
                    } else {
                        Direction::Reverse
                    };
                    // Consistent reads of the whole index: exactly the rows, each once.
                    let levels: &[Isolation] = if snapshots {
                        &[Isolation::Serializable, Isolation::Snapshot]
                    } else {
                        &[Isolation::Serializable]
                    };
                    for &isolation in levels {
                        match worker.transaction(isolation, |txn| scan_all(txn, table, direction)) {
                            Ok(seen) => {
                                check_whole(&seen, direction, &format!("{what}, {isolation:?}"));
                                audits.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Error::Aborted(_)) => {}
                            Err(error) => panic!("{error}"),
                        }
                    }
                    // READ COMMITTED, one group: each row at most once, and in that group.
                    let group = round % GROUPS;
                    let low = group.to_be_bytes();
                    let seen = worker.transaction(Isolation::ReadCommitted, |txn| {
                        let mut seen = Vec::new();
                        txn.scan_index(
                            table,
                            0,
                            Bound::Included(&low[..]),
                            Bound::Included(&low[..]),
                            direction,
                            usize::MAX,
                            |k, v| {
                                seen.push((group_of(v), key_of(k)));
                                true
                            },
                        )?;
                        Ok(seen)
                    });
                    if let Ok(seen) = seen {
                        assert!(seen.iter().all(|&(g, _)| g == group), "{what}: {seen:?}");
                        let keys: BTreeSet<u64> = seen.iter().map(|&(_, k)| k).collect();
                        assert_eq!(keys.len(), seen.len(), "{what}: a row twice: {seen:?}");
                    }
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(400));
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.join().unwrap();
        }
        auditor.join().unwrap();
    });
    let (commits, audits) = (commits.into_inner(), audits.into_inner());
    assert!(commits > 200, "{what}: only {commits} writes committed");
    assert!(audits >= 2, "{what}: only {audits} audits succeeded");
    let mut worker = db.worker().unwrap();
    let seen = worker
        .transaction(Isolation::Serializable, |txn| scan_all(txn, &table, Direction::Forward))
        .unwrap();
    check_whole(&seen, Direction::Forward, &what);
    let entries = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
    let entries = entries.unwrap_or_else(|error| panic!("{what}: {error}"));
    assert!(entries >= ROWS as usize, "{what}: {entries} entries");
    // The trees' own invariants, once the vacuum has stopped with the database.
    drop((worker, loader));
    drop(Arc::into_inner(db).expect("no other handle"));
    table.primary.check_invariants();
    table.secondaries[0].tree.check_invariants();
}

fn grouped_table(db: &Database) -> TableRef {
    let by_group = IndexSpec::new("by_group", false, |row: &[u8], out: &mut Vec<u8>| {
        out.extend_from_slice(&row[..8]);
        true
    });
    db.create_table(TableSpec::new("t").index(by_group)).unwrap()
}

/// The keys of the rows in `group`, through the index.
fn in_group(db: &Database, table: &TableRef, group: u64) -> Vec<u64> {
    let mut worker = db.worker().unwrap();
    let low = group.to_be_bytes();
    worker
        .transaction(Isolation::Serializable, |txn| {
            let mut keys = Vec::new();
            let (low, high) = (Bound::Included(&low[..]), Bound::Included(&low[..]));
            txn.scan_index(table, 0, low, high, Direction::Forward, usize::MAX, |k, _| {
                keys.push(key_of(k));
                true
            })?;
            Ok(keys)
        })
        .unwrap()
}

/// A Silo database whose grouped table holds key 1 in group 0.
fn one_row_in_group_zero() -> (Database, TableRef) {
    let db =
        open(Protocol::Silo, VersionStorage::TimeTravel, Gc::Transaction, IndexPointers::Logical);
    let table = grouped_table(&db);
    db.worker()
        .unwrap()
        .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), &row(0, 0)))
        .unwrap();
    (db, table)
}

/// The index holds exactly one entry, and every entry is produced by a state of its record.
fn assert_one_entry(db: &Database, table: &TableRef, what: &str) {
    let mut worker = db.worker().unwrap();
    let entries = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
    assert_eq!(entries, Ok(1), "{what}");
}

/// A claim of unchanged keys is about the row the transaction read. A READ COMMITTED
/// transaction reads without recording the row, and another one moves it to another group
/// before the first writes it back in its old group, claiming the keys it read: commit must
/// compare the keys with the row it replaces, not take the claim, or the index would keep the
/// other transaction's entry for a row no longer in that group.
#[test]
fn a_claim_of_the_same_keys_is_compared_when_the_row_replaced_was_not_read() {
    for isolation in [Isolation::ReadCommitted, Isolation::Serializable] {
        let (db, table) = one_row_in_group_zero();
        let (mut first, mut second) = (db.worker().unwrap(), db.worker().unwrap());
        first.begin(isolation).unwrap();
        let read = first.txn().unwrap().get(&table, &key(1)).unwrap().unwrap().to_vec();
        second
            .transaction(Isolation::Serializable, |txn| {
                txn.update(&table, &key(1), &row(1, 0)).map(|_| ())
            })
            .unwrap();
        let written = first
            .txn()
            .and_then(|mut txn| txn.update_same_keys(&table, &key(1), &row(group_of(&read), 5)))
            .and_then(|_| first.commit());
        match isolation {
            // Nothing validates the read: the write lands over the other commit.
            Isolation::ReadCommitted => {
                written.unwrap();
                assert_eq!(in_group(&db, &table, 0), [1]);
                assert!(in_group(&db, &table, 1).is_empty());
            }
            // The read is validated: the change since aborts the transaction.
            _ => {
                assert!(matches!(written, Err(Error::Aborted(_))), "{written:?}");
                assert!(in_group(&db, &table, 0).is_empty());
                assert_eq!(in_group(&db, &table, 1), [1]);
            }
        }
        assert_one_entry(&db, &table, &format!("{isolation:?}"));
    }
}

/// A claim of unchanged keys covers only the writes that make it: a later update without it,
/// or a delete and insert of the row in the same transaction (sysbench's oltp_read_write
/// sends both after an UPDATE of an unindexed column), changes the keys and commit must see
/// it (debug builds panicked here before the claim was dropped on those paths).
#[test]
fn a_claim_of_the_same_keys_ends_with_a_write_that_does_not_make_it() {
    type Step = fn(&mut engram_engine::Txn<'_>, &TableRef) -> engram_engine::Result<()>;
    let moves: [(&str, Step); 2] = [
        ("update", |txn, table| txn.update(table, &key(1), &row(1, 2)).map(|_| ())),
        ("delete, insert", |txn, table| {
            txn.delete(table, &key(1))?;
            txn.insert(table, &key(1), &row(1, 2))
        }),
    ];
    for (what, then) in moves {
        let (db, table) = one_row_in_group_zero();
        db.worker()
            .unwrap()
            .transaction(Isolation::Serializable, |txn| {
                txn.get_for_update(&table, &key(1))?;
                txn.update_same_keys(&table, &key(1), &row(0, 1))?;
                then(txn, &table)
            })
            .unwrap();
        assert!(in_group(&db, &table, 0).is_empty(), "{what}");
        assert_eq!(in_group(&db, &table, 1), [1], "{what}");
        assert_one_entry(&db, &table, what);
    }
}

/// Debug builds check a claim of unchanged keys that commit believes: a wrong one panics.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "declared to keep its secondary keys")]
fn a_wrong_claim_of_the_same_keys_fails_in_debug_builds() {
    let (db, table) = one_row_in_group_zero();
    let _ = db.worker().unwrap().transaction(Isolation::Serializable, |txn| {
        txn.get_for_update(&table, &key(1))?;
        txn.update_same_keys(&table, &key(1), &row(1, 0)).map(|_| ())
    });
}

/// [`run_with`], the auditor reading in snapshot transactions too. Those found a race in the
/// epoch ticker (`EpochManager::advance` read the slots' snapshot epochs before it published a
/// new one, so a reader registering in between was not counted and installs dropped versions
/// it was reading): under `mv2pl` one snapshot transaction saw 46 of 48 rows through the index
/// and then 35 through the primary key.
fn run(protocol: Protocol, storage: VersionStorage, gc: Gc, pointers: IndexPointers) {
    run_with(protocol, storage, gc, pointers, true);
}

#[test]
fn scans_stay_consistent_under_both_pointer_schemes() {
    run(Protocol::Silo, VersionStorage::TimeTravel, Gc::Transaction, IndexPointers::Logical);
    for pointers in IndexPointers::ALL {
        for storage in [VersionStorage::AppendN2o, VersionStorage::AppendO2n] {
            run(Protocol::Silo, storage, Gc::Transaction, pointers);
        }
    }
}

#[test]
fn multi_version_protocols_keep_scans_consistent_under_physical_pointers() {
    for protocol in [Protocol::Mvto, Protocol::Ssn, Protocol::Mv2pl, Protocol::Si] {
        for pointers in IndexPointers::ALL {
            run(protocol, VersionStorage::AppendN2o, Gc::Transaction, pointers);
        }
    }
}

#[test]
fn tuple_level_gc_removes_the_entries_of_the_versions_it_prunes() {
    run(Protocol::Mvto, VersionStorage::AppendN2o, Gc::TupleVacuum, IndexPointers::Physical);
    run(Protocol::Mvto, VersionStorage::AppendO2n, Gc::TupleCooperative, IndexPointers::Physical);
}

#[test]
fn physical_pointers_need_append_only_storage() {
    for storage in [VersionStorage::TimeTravel, VersionStorage::Delta] {
        let config = Config {
            version_storage: storage,
            index_pointers: IndexPointers::Physical,
            ..Config::default()
        };
        let error = Database::open(config).unwrap_err().to_string();
        assert!(error.contains("append-n2o or append-o2n"), "{storage}: {error}");
    }
    assert_eq!("physical".parse::<IndexPointers>(), Ok(IndexPointers::Physical));
    let unknown = "direct".parse::<IndexPointers>().unwrap_err();
    assert!(unknown.contains("logical or physical"), "{unknown}");
}
