//! Durability: the log, checkpoints and recovery, on an in-memory data directory that fails
//! writes and fsyncs on command and simulates crashes (`wal::FaultyStorage`), and on real
//! directories for locking, `check` and the golden data directory.

use engram_engine::wal::{self, FaultyStorage, Storage};
use engram_engine::{
    Config, Database, Durability, Error, IndexKeys, IndexSpec, Isolation, KeyBuilder, TableSpec,
};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

fn key(value: u64) -> Vec<u8> {
    KeyBuilder::new().u64(value).finish()
}

fn config(storage: &FaultyStorage) -> Config {
    Config {
        epoch_interval_ms: 2,
        snapshot_interval_epochs: 5,
        storage: Some(Arc::new(storage.clone())),
        checkpoint_log_bytes: 0,
        index_keys: Some(index_keys()),
        recovery_threads: 2,
        ..Config::default()
    }
}

/// The secondary index of the `people` table: the row's first byte.
fn by_initial() -> IndexSpec {
    IndexSpec::new("by_initial", false, |row: &[u8], out: &mut Vec<u8>| {
        out.extend_from_slice(&row[..1]);
        true
    })
    .definition(b"first byte".to_vec())
}

fn index_keys() -> IndexKeys {
    IndexKeys::new(|definition| {
        (definition.definition == b"first byte").then(|| by_initial().key_of)
    })
}

fn rows(db: &Database, table: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let table = db.table(table).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            let mut all = Vec::new();
            txn.scan(
                &table,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                engram_engine::Direction::Forward,
                usize::MAX,
                |k, v| {
                    all.push((k.to_vec(), v.to_vec()));
                    true
                },
            )?;
            Ok(all)
        })
        .unwrap()
}

#[test]
fn acknowledged_commits_survive_a_crash_and_secondary_indexes_come_back() {
    let storage = FaultyStorage::new(7);
    {
        let db = Database::open(config(&storage)).unwrap();
        let people = db.create_table(TableSpec::new("people").index(by_initial())).unwrap();
        let mut worker = db.worker().unwrap();
        for id in 0..200u64 {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    txn.insert(
                        &people,
                        &key(id),
                        format!("{}-{id}", ["ann", "bob", "cy"][id as usize % 3]).as_bytes(),
                    )
                })
                .unwrap();
        }
        worker
            .transaction(Isolation::Serializable, |txn| txn.delete(&people, &key(5)).map(|_| ()))
            .unwrap();
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.update(&people, &key(6), b"zed").map(|_| ())
            })
            .unwrap();
        worker.wait_durable().unwrap();
        assert!(db.durable_epoch() >= worker.last_commit().epoch);
        drop(worker);
        // A crash: the database is never closed; only what was synced (and a torn part of the
        // rest) survives.
        let crashed = storage.crash();
        drop(db);
        let db = Database::open(config(&crashed)).unwrap();
        let all = rows(&db, "people");
        assert_eq!(all.len(), 199);
        assert!(!all.iter().any(|(k, _)| *k == key(5)));
        assert!(all.iter().any(|(k, v)| *k == key(6) && v == b"zed"));
        let people = db.table("people").unwrap();
        let mut worker = db.worker().unwrap();
        let bobs = worker
            .transaction(Isolation::Serializable, |txn| {
                let mut count = 0;
                let prefix = [b'b'];
                txn.scan_index(
                    &people,
                    0,
                    std::ops::Bound::Included(&prefix[..]),
                    std::ops::Bound::Included(&prefix[..]),
                    engram_engine::Direction::Forward,
                    usize::MAX,
                    |_, row| {
                        assert_eq!(row[0], b'b');
                        count += 1;
                        true
                    },
                )?;
                Ok(count)
            })
            .unwrap();
        assert_eq!(bobs, 67, "the rebuilt index finds every row starting with b");
        let report = db.recovery_report().unwrap();
        assert!(report.log_transactions >= 202, "{report:?}");
    }
}

#[test]
fn recovery_without_the_key_extractor_is_a_clear_error() {
    let storage = FaultyStorage::new(3);
    let db = Database::open(config(&storage)).unwrap();
    db.create_table(TableSpec::new("people").index(by_initial())).unwrap();
    drop(db);
    let error = Database::open(Config { index_keys: None, ..config(&storage) }).unwrap_err();
    assert!(
        matches!(&error, Error::InvalidConfig(message) if message.contains("by_initial")),
        "{error}"
    );
}

/// Puts keys `0..count`, each in a transaction of its own, with values naming the round and
/// padded by up to `pad_max` bytes, and records them in `model`.
fn put_round(
    worker: &mut engram_engine::Worker,
    table: &engram_engine::TableRef,
    model: &mut std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    round: u64,
    count: u64,
    pad_max: u64,
) {
    for id in 0..count {
        let value = format!("r{round}-{id}-{}", "x".repeat((id % pad_max) as usize));
        worker
            .transaction(Isolation::Serializable, |txn| txn.put(table, &key(id), value.as_bytes()))
            .unwrap();
        model.insert(key(id), value.into_bytes());
    }
}

/// Files of `storage` whose paths start with `prefix`.
fn files_under(storage: &FaultyStorage, prefix: &str) -> usize {
    storage.paths().into_iter().filter(|path| path.starts_with(prefix)).count()
}

/// `rounds` rounds of `put_round` (150 keys) from round `first`, each made durable: a logger
/// moves to a new segment after the round that passes the segment's size. Then a pause, in
/// which the logger starts its next segment (taking a spare) and the snapshot epoch (every 5
/// epochs of 2 ms) passes the writes.
fn durable_rounds(
    worker: &mut engram_engine::Worker,
    table: &engram_engine::TableRef,
    model: &mut std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    first: u64,
    rounds: u64,
) {
    for round in first..first + rounds {
        put_round(worker, table, model, round, 150, 60);
        worker.wait_durable().unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(60));
}

#[test]
fn checkpoints_cover_the_log_and_recovery_combines_them() {
    let storage = FaultyStorage::new(11);
    let db = Database::open(Config { segment_bytes: 8 << 10, ..config(&storage) }).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    for round in 0..3u64 {
        put_round(&mut worker, &items, &mut model, round, 300, 40);
        for id in (round * 10..300).step_by(7) {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    txn.delete(&items, &key(id)).map(|_| ())
                })
                .unwrap();
            model.remove(&key(id));
        }
        worker.wait_durable().unwrap();
        if round == 1 {
            // Let the snapshot epoch (every 5 epochs of 2 ms) pass the writes.
            std::thread::sleep(std::time::Duration::from_millis(60));
            let report = db.checkpoint().unwrap();
            assert!(report.rows > 0 && report.files == 1, "{report:?}");
            assert!(
                report.segments_removed > 0,
                "small segments are covered by the checkpoint: {report:?}"
            );
        }
    }
    worker.wait_durable().unwrap();
    let crashed = storage.crash();
    drop(worker);
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    let report = db.recovery_report().unwrap().clone();
    assert!(report.checkpoint_epoch.is_some() && report.checkpoint_rows > 0, "{report:?}");
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
    // Recovering twice in a row (with a checkpoint of the recovered state in between) gives
    // the same state.
    db.checkpoint().unwrap();
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    let again: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(again, model);
}

/// A log segment that a checkpoint covers but cannot remove stays listed: the next checkpoint
/// removes it. Nothing is lost either way.
#[test]
fn segments_a_checkpoint_cannot_remove_are_removed_by_the_next() {
    let storage = FaultyStorage::new(12);
    let no_spares = Config { segment_bytes: 8 << 10, log_spare_bytes: 0, ..config(&storage) };
    let db = Database::open(no_spares).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    let segments = || {
        let mut paths: Vec<String> =
            storage.paths().into_iter().filter(|path| path.starts_with("wal/r")).collect();
        paths.sort();
        paths
    };
    let mut write_round = |round: u64, worker: &mut engram_engine::Worker| {
        put_round(worker, &items, &mut model, round, 200, 50);
        worker.wait_durable().unwrap();
        // Let the snapshot epoch (every 5 epochs of 2 ms) pass the writes.
        std::thread::sleep(std::time::Duration::from_millis(60));
    };
    write_round(0, &mut worker);
    let before = segments();
    storage.refuse_removals(true);
    let report = db.checkpoint().unwrap();
    assert_eq!(report.segments_removed, 0, "{report:?}");
    assert_eq!(segments()[..before.len()], before[..], "every covered segment is still there");
    storage.refuse_removals(false);
    write_round(1, &mut worker);
    let report = db.checkpoint().unwrap();
    let left = segments();
    assert!(report.segments_removed > before.len(), "{report:?}");
    assert!(
        before.iter().all(|path| !left.contains(path)),
        "the segments the first checkpoint could not remove are gone: {left:?}"
    );
    let crashed = storage.crash();
    drop(worker);
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// A checkpoint splits each table where the one before counted each `checkpoint_part_rows`
/// rows (to within an eighth), and writes each key range to its own file, on several threads:
/// rows at the split keys, deleted split keys and rows added past the last split each land in
/// exactly one file; recovery loads the files in parallel into exactly the rows the checkpoint
/// saw, and samples them so that the reopened database's checkpoints are split too.
#[test]
fn large_tables_are_checkpointed_in_key_ranges_and_recovered_whole() {
    let storage = FaultyStorage::new(14);
    let config = |storage: &FaultyStorage| Config {
        checkpoint_part_rows: 96,
        checkpoint_threads: 3,
        recovery_threads: 3,
        ..config(storage)
    };
    let db = Database::open(config(&storage)).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let few = db.create_table(TableSpec::new("few")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut few_model = std::collections::BTreeMap::new();
    put_round(&mut worker, &items, &mut model, 0, 1000, 30);
    put_round(&mut worker, &few, &mut few_model, 0, 50, 30);
    worker.wait_durable().unwrap();
    let settle = || std::thread::sleep(std::time::Duration::from_millis(60));
    settle();
    let first = db.checkpoint().unwrap();
    assert_eq!(first.files, 2, "no splits yet: a file a table: {first:?}");
    // Keys are sampled every 12 rows, so the splits are at keys 96, 192, ..., 960: delete two
    // of them, and add rows past the last one.
    for id in [192u64, 480] {
        worker
            .transaction(Isolation::Serializable, |txn| txn.delete(&items, &key(id)).map(|_| ()))
            .unwrap();
        model.remove(&key(id));
    }
    put_round(&mut worker, &items, &mut model, 1, 1300, 30);
    worker.wait_durable().unwrap();
    settle();
    let second = db.checkpoint().unwrap();
    assert_eq!(second.files, 11 + 1, "items in eleven key ranges, few in one: {second:?}");
    assert_eq!(second.rows as usize, model.len() + few_model.len(), "{second:?}");
    let third = db.checkpoint().unwrap();
    // 1,298 rows of items: a split at or past each of rows 96, 192, ..., 1,248.
    assert_eq!(third.files, 14 + 1, "{third:?}");
    let crashed = storage.crash();
    drop(worker);
    drop(db);
    let checked = engram_engine::recovery::check(&crashed, 2).unwrap();
    assert_eq!(checked.checkpoint_files, third.files);
    let db = Database::open(config(&crashed)).unwrap();
    let report = db.recovery_report().unwrap().clone();
    assert_eq!(report.checkpoint_files, third.files, "{report:?}");
    assert_eq!(report.checkpoint_rows, third.rows, "{report:?}");
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
    let all: std::collections::BTreeMap<_, _> = rows(&db, "few").into_iter().collect();
    assert_eq!(all, few_model);
    // Recovery sampled the files it loaded, so the reopened database's first checkpoint is
    // split as the next one before the crash would have been.
    std::thread::sleep(std::time::Duration::from_millis(60));
    let after = db.checkpoint().unwrap();
    assert_eq!((after.files, after.rows), (third.files, third.rows), "{after:?}");
}

/// `checkpoint_part_rows: 0` keeps a file per table, however large.
#[test]
fn part_rows_zero_keeps_a_file_per_table() {
    let storage = FaultyStorage::new(15);
    let db = Database::open(Config { checkpoint_part_rows: 0, ..config(&storage) }).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    put_round(&mut worker, &items, &mut model, 0, 500, 10);
    worker.wait_durable().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(60));
    for _ in 0..2 {
        let report = db.checkpoint().unwrap();
        assert_eq!((report.files, report.rows), (1, 500), "{report:?}");
    }
}

/// A checkpoint that the disk cannot hold fails with `DiskFull`, saying that it is the disk
/// (not that writes stopped: the log goes on), and leaves none of its files behind, so the
/// space it took is free for the next one. Once space is freed, the next checkpoint is written,
/// and a crash after it recovers every row.
#[test]
fn a_checkpoint_the_disk_cannot_hold_removes_what_it_wrote() {
    let storage = FaultyStorage::new(13);
    let db = Database::open(config(&storage)).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    put_round(&mut worker, &items, &mut model, 0, 3000, 200);
    worker.wait_durable().unwrap();
    // Let the snapshot epoch (every 5 epochs of 2 ms) pass the writes.
    std::thread::sleep(std::time::Duration::from_millis(60));
    let checkpoint_files = || files_under(&storage, "checkpoint/");
    // The idle log writes nothing, so the failures fall on the checkpoint: its file's header
    // is written, its first block is not.
    storage.fail_after(1);
    let error = db.checkpoint().unwrap_err();
    assert!(matches!(error, Error::DiskFull(_)), "{error}");
    let message = error.to_string();
    assert!(message.contains("disk holding the data directory is full"), "{message}");
    assert!(message.contains("cannot write checkpoint"), "{message}");
    assert!(!message.contains("no more writes"), "the log did not stop: {message}");
    assert_eq!(checkpoint_files(), 0, "the failed checkpoint's files are gone");
    storage.heal();
    put_round(&mut worker, &items, &mut model, 1, 3000, 200);
    worker.wait_durable().expect("the log kept taking commits");
    std::thread::sleep(std::time::Duration::from_millis(60));
    let report = db.checkpoint().unwrap();
    assert_eq!(report.rows as usize, model.len(), "{report:?}");
    assert!(checkpoint_files() > 0);
    let crashed = storage.crash();
    drop(worker);
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    let report = db.recovery_report().unwrap().clone();
    assert_eq!(report.checkpoint_rows as usize, model.len(), "{report:?}");
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// The disk fails at each write and sync of an open (torn tails cut, the catalog and the
/// manifest rewritten, each logger's first segment of the new run made), the process crashes
/// there, and the next open still has every acknowledged commit. With one logger and with two
/// (one logger's first page durable, the other's not). Before, a new run whose first page
/// never became durable counted as the newest run with a durable epoch of 0: the next recovery
/// replayed nothing since the checkpoint.
#[test]
fn a_crash_at_any_write_of_an_open_loses_no_acknowledged_commit() {
    for loggers in [1, 2] {
        let config = |storage: &FaultyStorage| Config { loggers, ..config(storage) };
        let storage = FaultyStorage::new(41 + loggers as u64);
        let db = Database::open(config(&storage)).unwrap();
        let items = db.create_table(TableSpec::new("items")).unwrap();
        let mut worker = db.worker().unwrap();
        let mut model = std::collections::BTreeMap::new();
        durable_rounds(&mut worker, &items, &mut model, 0, 3);
        db.checkpoint().unwrap();
        durable_rounds(&mut worker, &items, &mut model, 3, 2);
        // Unsynced writes too: the crash keeps a random part of them (a torn tail). An epoch
        // may end during the round, and its commits then be durable, though not waited for.
        let mut attempted = model.clone();
        put_round(&mut worker, &items, &mut attempted, 5, 150, 60);
        let crashed = storage.crash();
        drop(worker);
        drop(items);
        drop(db);
        let undisturbed = crashed.crash();
        drop(Database::open(config(&undisturbed)).unwrap());
        let expected = rows(&Database::open(config(&undisturbed.crash())).unwrap(), "items");
        let expected: std::collections::BTreeMap<_, _> = expected.into_iter().collect();
        for (key, value) in &model {
            let found = expected.get(key);
            assert!(
                found == Some(value) || found == attempted.get(key),
                "an acknowledged row: found {found:?}, acknowledged {value:?}"
            );
        }
        let operations = undisturbed.operations();
        assert!(operations >= 6, "{operations} operations in an open");
        for failing in 0..operations {
            let opening = crashed.crash();
            opening.fail_after(failing);
            if let Ok(db) = Database::open(config(&opening)) {
                drop(db);
            }
            let reopened = Database::open(config(&opening.crash())).unwrap_or_else(|error| {
                panic!("{loggers} logger(s), failing at {failing}: {error}")
            });
            let found: std::collections::BTreeMap<_, _> =
                rows(&reopened, "items").into_iter().collect();
            assert!(found == expected, "{loggers} logger(s), failing at {failing}: rows differ");
        }
    }
}

/// Two checkpoints within one snapshot interval: the second waits for a snapshot epoch above
/// the first's, so it never writes into (or, failing, removes) the directory the manifest
/// names. Before, it took the same epoch and the same `checkpoint/<epoch>/`: a full disk
/// during it removed the published checkpoint, and the database did not open again.
#[test]
fn a_checkpoint_never_writes_over_the_published_one() {
    // A snapshot epoch every 100 epochs of 2 ms: both checkpoints start inside one interval.
    let config =
        |storage: &FaultyStorage| Config { snapshot_interval_epochs: 100, ..config(storage) };
    let storage = FaultyStorage::new(29);
    let db = Database::open(config(&storage)).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    put_round(&mut worker, &items, &mut model, 0, 500, 40);
    worker.wait_durable().unwrap();
    let first = db.checkpoint().unwrap();
    let second = db.checkpoint().unwrap();
    assert!(second.epoch > first.epoch, "{} then {}", first.epoch, second.epoch);
    put_round(&mut worker, &items, &mut model, 1, 500, 40);
    worker.wait_durable().unwrap();
    let published = db.checkpoint().unwrap();
    // The next one fails after its first file's header; only its own files go.
    storage.fail_after(1);
    let error = db.checkpoint().unwrap_err();
    assert!(matches!(error, Error::DiskFull(_)), "{error}");
    let named = format!("checkpoint/{}/", published.epoch);
    assert_eq!(files_under(&storage, &named), published.files, "{:?}", storage.paths());
    let crashed = storage.crash();
    crashed.heal();
    drop(worker);
    drop(items);
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    let report = db.recovery_report().unwrap().clone();
    assert_eq!(report.checkpoint_epoch, Some(published.epoch), "{report:?}");
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// Workers each own `KEYS` keys and write one version number to all of them per transaction.
/// Writes fail from a random point on; after the crash, every key of a worker has the same
/// version (no partial transaction), at least its last acknowledged one and at most its last
/// attempted one.
#[test]
fn a_failing_log_device_loses_no_acknowledged_commit() {
    const WORKERS: u64 = 3;
    const KEYS: u64 = 4;
    for seed in 1..=12u64 {
        let storage = FaultyStorage::new(seed);
        let db = Arc::new(Database::open(config(&storage)).unwrap());
        let table = db.create_table(TableSpec::new("versions")).unwrap();
        storage.fail_after(20 + seed * 13 % 60);
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (db, table) = (Arc::clone(&db), Arc::clone(&table));
                std::thread::spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let (mut acknowledged, mut attempted) = (0u64, 0u64);
                    for version in 1..=400u64 {
                        attempted = version;
                        let result = worker.transaction(Isolation::Serializable, |txn| {
                            for k in 0..KEYS {
                                txn.put(&table, &key(w * 100 + k), &version.to_le_bytes())?;
                            }
                            Ok(())
                        });
                        if result.is_err() {
                            assert!(matches!(result, Err(Error::DiskFull(_))), "{result:?}");
                            break;
                        }
                        match worker.wait_durable() {
                            Ok(()) => acknowledged = version,
                            Err(error) => {
                                assert!(matches!(error, Error::DiskFull(_)), "{error}");
                                break;
                            }
                        }
                    }
                    (acknowledged, attempted)
                })
            })
            .collect();
        let outcomes: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(storage.failures() > 0, "seed {seed}: the device failed");
        let crashed = storage.crash();
        drop(table);
        drop(db);
        let db = Database::open(config(&crashed)).unwrap();
        let table = db.table("versions").unwrap();
        let mut worker = db.worker().unwrap();
        for (w, (acknowledged, attempted)) in outcomes.iter().enumerate() {
            let versions: Vec<Option<u64>> = worker
                .transaction(Isolation::Serializable, |txn| {
                    (0..KEYS)
                        .map(|k| {
                            Ok(txn
                                .get(&table, &key(w as u64 * 100 + k))?
                                .map(|v| u64::from_le_bytes(v.try_into().unwrap())))
                        })
                        .collect()
                })
                .unwrap();
            let first = versions[0];
            assert!(
                versions.iter().all(|v| *v == first),
                "seed {seed}: a partial transaction is visible: {versions:?}"
            );
            let found = first.unwrap_or(0);
            assert!(
                found >= *acknowledged,
                "seed {seed}: worker {w} lost acknowledged version {acknowledged}, found {found}"
            );
            assert!(
                found <= *attempted,
                "seed {seed}: worker {w} has version {found} it never wrote"
            );
        }
        // The restarted database takes writes again, and a second crash keeps them.
        worker
            .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(999), b"after"))
            .unwrap();
        worker.wait_durable().unwrap();
        let again = crashed.crash();
        drop(worker);
        drop(table);
        drop(db);
        let db = Database::open(config(&again)).unwrap();
        let table = db.table("versions").unwrap();
        let mut worker = db.worker().unwrap();
        let after = worker
            .transaction(Isolation::Serializable, |txn| {
                Ok(txn.get(&table, &key(999))?.map(<[u8]>::to_vec))
            })
            .unwrap();
        assert_eq!(after.as_deref(), Some(&b"after"[..]));
    }
}

/// A read-only transaction is acknowledged only once what it read is durable, at every
/// isolation level and by point reads and scans alike: its commit's epoch is at least the
/// epoch of every row it saw. Here the log fails before a committed row's epoch becomes
/// durable, so the row will not survive a crash, and waiting on a reader that saw it fails.
/// Before, a READ COMMITTED reader (whose reads are not recorded for validation) committed
/// with no epoch to wait for, and `Worker::wait_durable` after a snapshot transaction waited
/// for the transaction before it: both were answered with the row.
#[test]
fn a_reader_of_a_commit_not_yet_durable_waits_for_it() {
    for protocol in engram_engine::Protocol::ALL {
        reader_of_a_lost_commit_waits(protocol);
    }
}

fn reader_of_a_lost_commit_waits(protocol: engram_engine::Protocol) {
    let storage = FaultyStorage::new(61);
    // Snapshots at every epoch, so that a snapshot reader can see the new row soon.
    let config = Config { protocol, snapshot_interval_epochs: 1, ..config(&storage) };
    let db = Database::open(config).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut writer = db.worker().unwrap();
    writer
        .transaction(Isolation::Serializable, |txn| {
            txn.put(&table, &key(1), b"durable")?;
            txn.put(&table, &key(3), b"deleted, but not durably")
        })
        .unwrap();
    writer.wait_durable().unwrap();
    storage.fail_after(0);
    writer
        .transaction(Isolation::Serializable, |txn| {
            txn.put(&table, &key(2), b"lost")?;
            txn.delete(&table, &key(3)).map(|_| ())
        })
        .unwrap();
    let written = writer.last_commit();
    assert!(writer.wait_durable().is_err(), "the log failed");
    // Until every snapshot is past the lost commit.
    while db.epochs().snapshot_low() <= written.epoch {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // The deleting worker's transactions run its clean-up tasks, which unlink a deleted
    // record once no snapshot reads it, if the delete is durable.
    for _ in 0..3 {
        let read =
            writer.transaction(Isolation::Serializable, |txn| txn.get(&table, &key(1)).map(|_| ()));
        read.unwrap();
    }
    let mut reader = db.worker().unwrap();
    for isolation in Isolation::ALL {
        for scan in [false, true] {
            let seen = reader
                .transaction(isolation, |txn| {
                    if scan {
                        let mut rows = 0;
                        txn.scan(
                            &table,
                            std::ops::Bound::Unbounded,
                            std::ops::Bound::Unbounded,
                            engram_engine::Direction::Forward,
                            10,
                            |_, _| {
                                rows += 1;
                                true
                            },
                        )?;
                        Ok(rows == 2)
                    } else {
                        Ok(txn.get(&table, &key(2))?.is_some())
                    }
                })
                .unwrap();
            assert!(seen, "{protocol:?} {isolation:?} (scan {scan}) saw the row");
            let read = reader.last_commit();
            assert!(
                read.epoch >= written.epoch,
                "{protocol:?} {isolation:?} (scan {scan}): {read:?}"
            );
            assert!(reader.wait_durable().is_err(), "{protocol:?} {isolation:?} (scan {scan})");
        }
        // A reader that finds the row deleted saw the lost delete.
        let found = reader.transaction(isolation, |txn| Ok(txn.get(&table, &key(3))?.is_some()));
        assert!(!found.unwrap(), "{protocol:?} {isolation:?}: the delete is seen");
        assert!(reader.wait_durable().is_err(), "{protocol:?} {isolation:?}: the delete");
        // What was durable still is: a reader of the first row alone is acknowledged, a
        // snapshot reader too, though its snapshot epoch is the lost commit's or later (were
        // it to wait for that epoch, every snapshot reader would be refused after a log
        // failure).
        reader.transaction(isolation, |txn| txn.get(&table, &key(1)).map(|_| ())).unwrap();
        let durable = reader.wait_durable();
        assert!(durable.is_ok(), "{protocol:?} {isolation:?}: {durable:?}");
    }
}

/// A scan that passes over a deleted record (which holds no row, so the scan records no read
/// of it) still saw the delete: a read-only transaction that scanned the range is acknowledged
/// only once the delete is durable, as one that looked the key up is. Here the log fails
/// before the delete's epoch becomes durable, so after a crash the row is back; a reader told
/// it was gone must not be acknowledged.
#[test]
fn a_scan_past_a_deleted_row_waits_for_the_delete_to_be_durable() {
    for protocol in engram_engine::Protocol::ALL {
        let storage = FaultyStorage::new(62);
        let config = Config { protocol, snapshot_interval_epochs: 1, ..config(&storage) };
        let db = Database::open(config).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut writer = db.worker().unwrap();
        writer
            .transaction(Isolation::Serializable, |txn| {
                txn.put(&table, &key(1), b"durable")?;
                txn.put(&table, &key(2), b"deleted, but not durably")
            })
            .unwrap();
        writer.wait_durable().unwrap();
        storage.fail_after(0);
        writer.transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(2))).unwrap();
        let deleted = writer.last_commit();
        assert!(writer.wait_durable().is_err(), "the log failed");
        // Until every snapshot is past the lost delete (the record stays in the index: it is
        // unlinked only once its delete is durable).
        while db.epochs().snapshot_low() <= deleted.epoch {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut reader = db.worker().unwrap();
        for isolation in Isolation::ALL {
            let rows = reader
                .transaction(isolation, |txn| {
                    let (low, high) = (key(2), key(3));
                    txn.scan(
                        &table,
                        std::ops::Bound::Included(&low[..]),
                        std::ops::Bound::Excluded(&high[..]),
                        engram_engine::Direction::Forward,
                        10,
                        |_, _| true,
                    )
                })
                .unwrap();
            assert_eq!(rows, 0, "{protocol:?} {isolation:?}: the delete is seen");
            let read = reader.last_commit();
            assert!(read.epoch >= deleted.epoch, "{protocol:?} {isolation:?}: {read:?}");
            assert!(reader.wait_durable().is_err(), "{protocol:?} {isolation:?}");
        }
    }
}

#[test]
fn a_damaged_block_before_the_tail_is_corruption_naming_file_and_offset() {
    let storage = FaultyStorage::new(5);
    let db = Database::open(config(&storage)).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    for round in 0..5u64 {
        worker
            .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(round), &[1u8; 500]))
            .unwrap();
        worker.wait_durable().unwrap();
    }
    drop(worker);
    drop(table);
    drop(db);
    let segment = storage.list("wal").unwrap().into_iter().last().unwrap();
    let path = format!("wal/{segment}");
    // Inside the second block (on the page after the segment header and its initial, empty
    // block): several blocks follow it.
    let page = wal::format::PAGE_BYTES;
    let pristine = storage.crash();
    storage.corrupt(&path, page + wal::format::BLOCK_HEADER_BYTES + 10);
    let error = engram_engine::recovery::check(&storage, 1).unwrap_err();
    assert!(matches!(&error, Error::Corrupt { file, .. } if file.contains(&segment)), "{error}");
    let error = Database::open(config(&storage)).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { file, offset, reason } if file.contains(&segment) && *offset == page as u64 && reason.contains("checksum")),
        "{error}"
    );
    assert_eq!(error.sqlstate(), "XX001");
    // A byte that is not zero in the padding after the first block is corruption as well.
    let first_end = wal::format::FILE_HEADER_BYTES + wal::format::BLOCK_HEADER_BYTES;
    pristine.corrupt(&path, first_end + 10);
    let error = Database::open(config(&pristine)).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { offset, .. } if *offset == first_end as u64),
        "{error}"
    );
}

#[test]
fn torn_tails_are_truncated_and_reported() {
    let mut torn_seen = 0;
    for seed in 1..=20u64 {
        let storage = FaultyStorage::new(seed);
        let db = Database::open(config(&storage)).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut worker = db.worker().unwrap();
        for round in 0..30u64 {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    txn.put(&table, &key(round), &[7u8; 300])
                })
                .unwrap();
        }
        worker.wait_durable().unwrap();
        let durable_rows = 30;
        // The next write succeeds and every operation after it fails, so that write stays
        // unsynced and the crash keeps a random part of it.
        storage.fail_after(1);
        for round in 30..60u64 {
            let _ = worker.transaction(Isolation::Serializable, |txn| {
                txn.put(&table, &key(round), &[7u8; 300])
            });
        }
        let _ = worker.wait_durable();
        let crashed = storage.crash();
        drop(worker);
        drop(table);
        drop(db);
        let before = engram_engine::recovery::check(&crashed, 1).unwrap();
        let db = Database::open(config(&crashed)).unwrap();
        let report = db.recovery_report().unwrap().clone();
        assert_eq!(before.torn_tails, report.torn_tails, "check reports what recovery truncates");
        torn_seen += report.torn_tails.len();
        assert!(rows(&db, "t").len() >= durable_rows);
        drop(db);
        let after = engram_engine::recovery::check(&crashed, 1).unwrap();
        assert!(after.torn_tails.is_empty(), "recovery truncated the tails: {after:?}");
    }
    assert!(torn_seen > 0, "some crash tore a write");
}

#[test]
fn durable_waits_are_async_too_and_off_logs_nothing() {
    struct Flag(std::sync::atomic::AtomicBool, std::thread::Thread);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::Release);
            self.1.unpark();
        }
    }
    let storage = FaultyStorage::new(9);
    let db = Database::open(config(&storage)).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(1), b"v")).unwrap();
    let commit = worker.last_commit();
    let mut future = std::pin::pin!(db.durability_watcher().durable_future(commit.epoch));
    let flag = Arc::new(Flag(false.into(), std::thread::current()));
    let waker = Waker::from(Arc::clone(&flag));
    let mut context = Context::from_waker(&waker);
    let mut polls = 0;
    loop {
        polls += 1;
        match future.as_mut().poll(&mut context) {
            Poll::Ready(result) => break result.unwrap(),
            Poll::Pending => {
                while !flag.0.swap(false, std::sync::atomic::Ordering::AcqRel) {
                    std::thread::park();
                }
            }
        }
    }
    assert!(polls <= 3, "woken, not polled in a loop: {polls} polls");
    assert!(db.durable_epoch() >= commit.epoch);
    drop(worker);
    drop(table);
    drop(db);

    let off = FaultyStorage::new(10);
    let db = Database::open(Config { durability: Durability::Off, ..config(&off) }).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(1), b"v")).unwrap();
    assert_eq!(db.log_bytes(), 0);
    assert!(off.list("wal").unwrap().is_empty());
    worker.wait_durable().unwrap();
}

/// Epochs on demand (`Config::epoch_min_us`): with a ten-minute interval, durable waits,
/// blocking and async, from several threads at once return because the ticker ends their
/// epochs early; with nobody waiting the epoch stays where it is.
#[test]
fn waited_commits_end_their_epoch_early_and_an_idle_epoch_waits_for_the_interval() {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let storage = FaultyStorage::new(11);
    let db = Arc::new(
        Database::open(Config {
            epoch_interval_ms: 600_000,
            epoch_min_us: 1000,
            ..config(&storage)
        })
        .unwrap(),
    );
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let commits_per_thread = 20u64;
    let (done, finished) = std::sync::mpsc::channel();
    for thread in 0..3u64 {
        let (db, table, done) = (Arc::clone(&db), table.clone(), done.clone());
        std::thread::spawn(move || {
            let mut worker = db.worker().unwrap();
            for n in 0..commits_per_thread {
                let id = thread * 1000 + n;
                worker
                    .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(id), b"v"))
                    .unwrap();
                let epoch = worker.last_commit().epoch;
                if n % 2 == 0 {
                    worker.wait_durable().unwrap();
                } else {
                    // The async wait, polled by hand.
                    let mut future = std::pin::pin!(db.durability_watcher().durable_future(epoch));
                    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
                    let mut context = Context::from_waker(&waker);
                    while future.as_mut().poll(&mut context).is_pending() {
                        std::thread::park();
                    }
                }
                assert!(db.durable_epoch() >= epoch);
            }
            done.send(()).unwrap();
        });
    }
    for _ in 0..3 {
        finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("durable waits end their epochs long before the ten-minute interval");
    }
    let settled = db.epochs().global();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(db.epochs().global(), settled, "no waiter, no early epoch");
    assert_eq!(rows(&db, "t").len(), 3 * commits_per_thread as usize);
}

/// The background checkpointer runs behind the workers (nice 10), so that on a busy machine
/// a checkpoint does not hold commits back (docs/durability.md).
#[test]
fn the_background_checkpointer_runs_at_a_lower_priority() {
    let nice_of = |name: &str| -> Option<i64> {
        for task in std::fs::read_dir("/proc/self/task").ok()? {
            let path = task.ok()?.path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if comm.trim_end() == name {
                let stat = std::fs::read_to_string(path.join("stat")).ok()?;
                // Fields after the command's closing parenthesis; nice is field 19.
                let after = &stat[stat.rfind(')')? + 2..];
                return after.split(' ').nth(16)?.parse().ok();
            }
        }
        None
    };
    let storage = FaultyStorage::new(12);
    let db = Database::open(Config { checkpoint_log_bytes: 1 << 30, ..config(&storage) }).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut nice = nice_of("engram-checkpoi");
    while nice != Some(10) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        nice = nice_of("engram-checkpoi");
    }
    assert_eq!(nice, Some(10), "the checkpointer's nice value");
    drop(db);
}

#[test]
fn a_data_directory_is_locked_against_a_second_open() {
    let dir = std::env::temp_dir().join(format!("engram-lock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first =
        Database::open(Config { data_dir: Some(dir.clone()), ..Config::default() }).unwrap();
    let error =
        Database::open(Config { data_dir: Some(dir.clone()), ..Config::default() }).unwrap_err();
    assert!(matches!(error, Error::DataDirInUse(_)), "{error}");
    assert_eq!(error.sqlstate(), "55006");
    drop(first);
    let again = Database::open(Config { data_dir: Some(dir.clone()), ..Config::default() });
    assert!(again.is_ok());
    drop(again);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_clean_close_gives_back_the_preallocated_end_of_the_segment() {
    let dir = std::env::temp_dir().join(format!("engram-prealloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let open = || {
        Database::open(Config {
            data_dir: Some(dir.clone()),
            epoch_interval_ms: 2,
            index_keys: Some(index_keys()),
            ..Config::default()
        })
        .unwrap()
    };
    let segment_sizes = || -> Vec<u64> {
        let mut sizes: Vec<u64> = std::fs::read_dir(dir.join("wal"))
            .unwrap()
            .map(|entry| entry.unwrap().metadata().unwrap().len())
            .collect();
        sizes.sort();
        sizes
    };
    for round in 0..3u64 {
        let db = open();
        let people = match db.table("people") {
            Ok(table) => table,
            Err(_) => db.create_table(TableSpec::new("people").index(by_initial())).unwrap(),
        };
        let mut worker = db.worker().unwrap();
        for id in 0..100u64 {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    txn.insert(&people, &key(round * 1000 + id), b"a row")
                })
                .unwrap();
        }
        worker.wait_durable().unwrap();
        drop(worker);
        // While open, the segment is preallocated (where the file system can).
        drop(db);
        let sizes = segment_sizes();
        assert_eq!(sizes.len() as u64, round + 1, "one segment per run: {sizes:?}");
        assert!(
            sizes.iter().all(|&size| size < 1 << 20),
            "closed segments hold only their log, not the preallocated zeros: {sizes:?}"
        );
    }
    let db = open();
    assert_eq!(rows(&db, "people").len(), 300);
    let report = db.recovery_report().unwrap();
    assert_eq!(report.log_transactions, 300, "{report:?}");
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn log_segments_read_whole_whatever_their_length() {
    let dir = std::env::temp_dir().join(format!("engram-read-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let storage = wal::DirStorage::open(&dir).unwrap();
    // Lengths around the direct-I/O page and request sizes (8 MiB), none of them aligned to
    // the buffer's memory: the reader aligns its own start within `out`.
    let mut out = vec![7u8; 3];
    for len in [0usize, 1, 4095, 4096, 4097, (8 << 20) + 123, (17 << 20) - 1] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::create_dir_all(dir.join("wal")).unwrap();
        std::fs::write(dir.join("wal/segment"), &bytes).unwrap();
        let range = storage.read_log("wal/segment", &mut out).unwrap();
        assert_eq!(range.len(), len);
        assert!(out[range] == bytes[..], "a file of {len} bytes reads back whole");
    }
    drop(storage);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every protocol logs and recovers the same way, and recovered heads carry the protocol's
/// words: under MVTO a commit's TID is the timestamp it took when it began (an epoch that may
/// have passed by the time it commits), so the stable epoch must wait for it, or the log would
/// call a commit durable before writing it.
#[test]
fn every_protocol_recovers_what_it_acknowledged() {
    for protocol in engram_engine::Protocol::ALL {
        let storage = FaultyStorage::new(11);
        let db = Database::open(Config { protocol, ..config(&storage) }).unwrap();
        let table = db.create_table(TableSpec::new("counters")).unwrap();
        let mut worker = db.worker().unwrap();
        for round in 0..60u64 {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    // Every tenth, and the last, spans several epochs (2 ms each) between
                    // begin and commit.
                    let pause = if round % 10 == 9 { 8_000 } else { 100 };
                    std::thread::sleep(std::time::Duration::from_micros(pause));
                    for id in 0..4u64 {
                        txn.put(&table, &key(id), &round.to_le_bytes())?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        worker.wait_durable().unwrap();
        drop(worker);
        let crashed = storage.crash();
        drop(db);
        let db = Database::open(Config { protocol, ..config(&crashed) }).unwrap();
        let all = rows(&db, "counters");
        assert_eq!(all.len(), 4, "{protocol}");
        assert!(all.iter().all(|(_, v)| v == &59u64.to_le_bytes()), "{protocol}: {all:?}");
        // The recovered heads take the protocol's locks.
        let table = db.table("counters").unwrap();
        let mut worker = db.worker().unwrap();
        worker
            .transaction(Isolation::Serializable, |txn| {
                let now = txn.get(&table, &key(0))?.map(<[u8]>::to_vec);
                txn.put(&table, &key(0), &now.unwrap())
            })
            .unwrap();
    }
}

/// Recovery rebuilds heads in the database's version storage: updates and deletes replayed
/// onto append-only chains, newest or oldest first, leave the last state of every row, and the
/// recovered rows take further updates.
#[test]
fn every_version_storage_recovers_what_it_acknowledged() {
    for version_storage in engram_engine::VersionStorage::ALL {
        let storage = FaultyStorage::new(12);
        let configured = |from: &FaultyStorage| Config {
            protocol: engram_engine::Protocol::Mvto,
            version_storage,
            ..config(from)
        };
        let db = Database::open(configured(&storage)).unwrap();
        let table = db.create_table(TableSpec::new("counters")).unwrap();
        let mut worker = db.worker().unwrap();
        for round in 0..30u64 {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    for id in 0..6u64 {
                        txn.put(&table, &key(id), &round.to_le_bytes())?;
                    }
                    if round == 29 {
                        txn.delete(&table, &key(2))?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        worker.wait_durable().unwrap();
        drop(worker);
        let crashed = storage.crash();
        drop(db);
        let db = Database::open(configured(&crashed)).unwrap();
        let all = rows(&db, "counters");
        let ids: Vec<Vec<u8>> = all.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(ids, [0, 1, 3, 4, 5].map(key), "{version_storage}");
        assert!(all.iter().all(|(_, v)| v == &29u64.to_le_bytes()), "{version_storage}");
        let table = db.table("counters").unwrap();
        let mut worker = db.worker().unwrap();
        for round in 30..33u64 {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    txn.put(&table, &key(0), &round.to_le_bytes())
                })
                .unwrap();
        }
        let now = worker
            .transaction(Isolation::Serializable, |txn| {
                Ok(txn.get(&table, &key(0))?.map(<[u8]>::to_vec))
            })
            .unwrap();
        assert_eq!(now, Some(32u64.to_le_bytes().to_vec()), "{version_storage}");
    }
}

/// Under physical index pointers recovery builds each recovered row's entry under the TID it
/// recovered with, so that the next update removes exactly that entry: the entries match the
/// records before and after updates that follow the restart.
#[test]
fn physical_index_pointers_recover_entries_that_name_their_versions() {
    let storage = FaultyStorage::new(13);
    let configured = |from: &FaultyStorage| Config {
        version_storage: engram_engine::VersionStorage::AppendN2o,
        index_pointers: engram_engine::IndexPointers::Physical,
        ..config(from)
    };
    // Round `round` gives row `id` the initial 'a' + (id + round) mod 3; durable on return.
    let put_rounds = |db: &Database, rounds: std::ops::Range<u8>| {
        let table = db.table("people").unwrap();
        let mut worker = db.worker().unwrap();
        for round in rounds {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    for id in 0..8u64 {
                        txn.put(&table, &key(id), &[b'a' + (id as u8 + round) % 3, round])?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        worker.wait_durable().unwrap();
    };
    let db = Database::open(configured(&storage)).unwrap();
    db.create_table(TableSpec::new("people").index(by_initial())).unwrap();
    put_rounds(&db, 0..5);
    let crashed = storage.crash();
    drop(db);
    let db = Database::open(configured(&crashed)).unwrap();
    let table = db.table("people").unwrap();
    let mut worker = db.worker().unwrap();
    let checked = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
    assert_eq!(checked, Ok(8), "one entry per recovered row");
    put_rounds(&db, 5..8);
    let checked = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
    assert!(checked.is_ok(), "{checked:?}");
    let by_c = worker
        .transaction(Isolation::Serializable, |txn| {
            let mut ids = Vec::new();
            txn.scan_index(
                &table,
                0,
                std::ops::Bound::Included(&b"c"[..]),
                std::ops::Bound::Included(&b"c"[..]),
                engram_engine::Direction::Forward,
                usize::MAX,
                |k, _| {
                    ids.push(k.to_vec());
                    true
                },
            )?;
            Ok(ids)
        })
        .unwrap();
    // Round 7: id + 7 = 2 mod 3, so ids 1, 4 and 7 have initial 'c'.
    assert_eq!(by_c, [1, 4, 7].map(key));
}

/// Damage anywhere in a data directory (bits flipped, files cut, one to four places at a
/// time): `check` and recovery end in a report or an error, never a panic, agree on whether
/// the directory opens, and a database that opens reads in full (`fuzzing`, also the
/// fuzz target `wal_recovery`). Every outcome must occur: refused, read in full, and read as
/// an earlier state (a log cut short is a torn tail, and loses its last transactions).
#[test]
fn damaged_directories_are_refused_or_read_never_misread() {
    use engram_engine::fuzzing::{DAMAGE_BYTES, Opened, open_damaged, sample_directory};
    use rand::{RngExt, SeedableRng};
    let pristine = sample_directory();
    let last = engram_engine::fuzzing::sample_states().len() - 1;
    assert_eq!(open_damaged(&pristine, &[]), Opened::Readable { state: last });
    let mut random = rand::rngs::SmallRng::seed_from_u64(17);
    let (mut readable, mut earlier, mut refused) = (0, 0, 0);
    for _ in 0..300 {
        let steps = random.random_range(1..=4);
        let mut damage = vec![0u8; steps * DAMAGE_BYTES];
        random.fill(&mut damage[..]);
        match open_damaged(&pristine, &damage) {
            Opened::Readable { state } if state == last => readable += 1,
            Opened::Readable { .. } => earlier += 1,
            Opened::Refused => refused += 1,
        }
    }
    assert!(
        readable > 0 && earlier > 0 && refused > 0,
        "readable {readable}, an earlier state {earlier}, refused {refused}"
    );
}

/// A catalog that lost records (cut after its header) while the checkpoint and the log hold
/// rows of its tables is corruption naming the catalog, for `check` and for recovery alike;
/// before, recovery skipped those rows as if of dropped tables and opened an empty database.
#[test]
fn rows_of_tables_the_catalog_never_created_are_corruption() {
    let storage = engram_engine::fuzzing::sample_directory();
    storage.damage("catalog.log", 0, 0, Some(wal::format::FILE_HEADER_BYTES));
    let error = engram_engine::recovery::check(&storage, 1).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { file, reason, .. }
        if file.contains("catalog.log") && reason.contains("never created")),
        "{error}"
    );
    let error = Database::open(config(&storage)).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { file, .. } if file.contains("catalog.log")),
        "{error}"
    );
}

/// A catalog change written but lost in a crash never comes back. Run 1 creates `t`, then
/// writes its drop to `catalog.log` and fails the sync: the crash keeps the file short of the
/// drop, whose bytes may still be on the device beyond the file's end. Run 2 opens with `t`,
/// rewrites the catalog (freeing the old file and those bytes), commits rows to `t`, and
/// writes a new table to the catalog at the offset the drop had, failing its sync. A crash
/// that leaves the new bytes' place holding the freed ones (a file system without a journal
/// may write a file's size before its data) must not revive the drop: `t` and its
/// acknowledged rows stay. Before the catalog was salted afresh at each rewrite (format 7),
/// the old drop passed its checksum and recovery applied it.
#[test]
fn a_catalog_change_lost_in_a_crash_never_comes_back_from_freed_blocks() {
    let mut revived_chances = 0;
    for seed in 1..=24u64 {
        let storage = FaultyStorage::new(seed);
        let db = Database::open(config(&storage)).unwrap();
        db.create_table(TableSpec::new("t")).unwrap();
        // The drop's write succeeds and its sync fails.
        storage.fail_after(1);
        assert!(db.drop_table("t").is_err());
        let run_two = storage.crash();
        drop(db);
        let Ok(db) = Database::open(config(&run_two)) else { continue };
        let Ok(table) = db.table("t") else { continue };
        let mut worker = db.worker().unwrap();
        for id in 0..20u64 {
            worker
                .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(id), b"row"))
                .unwrap();
        }
        worker.wait_durable().unwrap();
        drop(worker);
        run_two.fail_after(1);
        assert!(db.create_table(TableSpec::new("u")).is_err());
        revived_chances += 1;
        let run_three = run_two.crash_onto_freed_blocks();
        drop(db);
        let db = Database::open(config(&run_three))
            .unwrap_or_else(|error| panic!("seed {seed}: the third run does not open: {error}"));
        assert!(db.table("t").is_ok(), "seed {seed}: the lost drop of t came back");
        assert_eq!(rows(&db, "t").len(), 20, "seed {seed}: acknowledged rows of t lost");
    }
    assert!(revived_chances >= 12, "only {revived_chances} seeds reached the third run");
}

/// An idle database writes and syncs nothing: once its commits are durable the loggers stop
/// writing (they used to write an empty block and fsync at every epoch). Commits still become
/// durable without anyone waiting (a benchmark or the crash harness polls the durable epoch),
/// with two loggers too, where the one without data must follow the other; and a waiter for
/// a newer epoch gets its answer: the wait raises the log's demand and a mark is written.
#[test]
fn an_idle_database_does_no_io_and_waiters_are_still_answered() {
    for loggers in [1, 2] {
        let storage = FaultyStorage::new(11);
        let db = Database::open(Config { loggers, ..config(&storage) }).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut worker = db.worker().unwrap();
        for round in 0..20u64 {
            worker
                .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(round), b"v"))
                .unwrap();
        }
        // Polled, not waited for: the durable epoch reaches the last commit by itself.
        let last = worker.last_commit().epoch;
        let polled = std::time::Instant::now();
        while db.durable_epoch() < last {
            assert!(polled.elapsed().as_secs() < 5, "{loggers} loggers: never durable");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Settle: a mark may still be written once for the last records.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let settled = storage.operations();
        // 100 ms is 50 epochs of 2 ms.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(storage.operations(), settled, "{loggers} loggers: an idle database wrote");
        let newer = db.epochs().global();
        assert!(db.durable_epoch() < newer, "the durable epoch stays at the last mark while idle");
        db.durability_watcher().wait(newer).unwrap();
        assert!(db.durable_epoch() >= newer);
        assert!(storage.operations() > settled, "the waiter's mark was written and synced");
        // And a commit after the idle time is durable as before.
        worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(99), b"w")).unwrap();
        worker.wait_durable().unwrap();
        drop(worker);
        drop(table);
        drop(db);
        let db = Database::open(Config { loggers, ..config(&storage) }).unwrap();
        assert_eq!(rows(&db, "t").len(), 21);
    }
}

/// Replay sorts each segment's row images by table and key and applies only the newest of
/// each row (`ReplayBatch`). Four workers write the same rows concurrently, so one segment
/// holds a row's images out of TID order; the keys include short keys that are prefixes of one
/// another (`a`, `a\0`, `a\0\0`), keys of exactly 16 bytes, and long keys that share their
/// first 16 bytes and differ after them; values cross the inline size; rows are deleted and
/// written again. After a crash, the database must read exactly as it did, with and without
/// LZ4 (whose images are copied out of the segment), one and two loggers, and small segments.
/// A last round writes 3,000 integer keys into large segments, whose thousands of images of
/// one table, differing in two key bytes, take the radix sort (the others take the comparison
/// sort: too few images, or keys that differ in too many bytes).
#[test]
fn sorted_replay_keeps_the_newest_image_of_every_row() {
    use rand::{RngExt, SeedableRng};
    let mut keys: Vec<Vec<u8>> = vec![b"a".to_vec(), b"a\0".to_vec(), b"a\0\0".to_vec()];
    for tail in 0..6u8 {
        keys.push([[7u8; 15].as_slice(), &[tail]].concat());
        keys.push([[9u8; 16].as_slice(), &[tail]].concat());
        keys.push([[9u8; 16].as_slice(), &[1, 2, 3, tail]].concat());
        keys.push([[9u8; 16].as_slice(), &[1, 2, 3, tail, 0]].concat());
    }
    keys.extend((0..40u64).map(key));
    let integers: Vec<Vec<u8>> = (0..3000u64).map(key).collect();
    let small = 64 << 10;
    for (compression, loggers, segment_bytes, keys) in [
        (false, 1, small, &keys),
        (true, 1, small, &keys),
        (false, 2, small, &keys),
        (false, 1, 64 << 20, &integers),
    ] {
        let storage = FaultyStorage::new(23);
        let config =
            || Config { log_compression: compression, loggers, segment_bytes, ..config(&storage) };
        let db = Database::open(config()).unwrap();
        let table = db.create_table(TableSpec::new("rows")).unwrap();
        std::thread::scope(|scope| {
            for thread in 0..4u64 {
                let (db, table) = (&db, &table);
                scope.spawn(move || {
                    let mut random = rand::rngs::SmallRng::seed_from_u64(thread);
                    let mut worker = db.worker().unwrap();
                    for round in 0..1500u64 {
                        let at = random.random_range(0..keys.len());
                        let len = random.random_range(0..300usize);
                        let value: Vec<u8> =
                            (0..len).map(|i| (i as u64 ^ round ^ thread) as u8).collect();
                        let delete = random.random_range(0..8) == 0;
                        let _ = worker.transaction(Isolation::Serializable, |txn| {
                            if delete {
                                txn.delete(table, &keys[at]).map(|_| ())
                            } else {
                                txn.put(table, &keys[at], &value)
                            }
                        });
                    }
                    worker.wait_durable().unwrap();
                });
            }
        });
        let before = rows(&db, "rows");
        assert!(before.len() > keys.len() / 2, "{} rows", before.len());
        let crashed = storage.crash();
        drop(table);
        drop(db);
        let db = Database::open(Config { storage: Some(Arc::new(crashed)), ..config() }).unwrap();
        let report = db.recovery_report().unwrap().clone();
        assert!(segment_bytes > small || report.log_segments >= 2, "{report:?}");
        assert_eq!(
            rows(&db, "rows"),
            before,
            "compression {compression}, {loggers} logger(s), {segment_bytes}-byte segments: \
             the recovered rows differ"
        );
    }
}

/// Replay reads the newest segments first, so an older image of a row finds the newer one
/// already there and installs nothing: with one replaying thread, each row is written once,
/// however many segments hold it, deleted rows included. (Read oldest first, every segment's
/// image of a row would be installed over the last one: here about 60 per row.)
#[test]
fn replay_installs_the_newest_image_of_each_row_only() {
    let storage = FaultyStorage::new(31);
    let config = || Config { segment_bytes: 8 << 10, recovery_threads: 1, ..config(&storage) };
    let db = Database::open(config()).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    for round in 0..60u64 {
        put_round(&mut worker, &items, &mut model, round, 20, 200);
        // Each round in its own flush, so that the rounds spread over many segments.
        worker.wait_durable().unwrap();
    }
    for id in [3u64, 11] {
        worker
            .transaction(Isolation::Serializable, |txn| txn.delete(&items, &key(id)).map(|_| ()))
            .unwrap();
        model.remove(&key(id));
    }
    worker.wait_durable().unwrap();
    let crashed = storage.crash();
    drop(worker);
    drop(items);
    drop(db);
    let db = Database::open(Config { storage: Some(Arc::new(crashed)), ..config() }).unwrap();
    let report = db.recovery_report().unwrap().clone();
    assert!(report.log_segments >= 20, "{report:?}");
    assert_eq!(report.log_writes_applied, 20, "one image of each of the 20 rows: {report:?}");
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// A crash while a logger makes its next segment can leave that segment without its header:
/// the file's creation reached the disk, its first write did not. That logger's durable mark
/// is then the last one of its segment before, and every acknowledged commit is recovered.
/// (Recovery used to find no mark in the newest segment and take 0 for the durable epoch,
/// voiding every epoch of the run.) The headerless segment, empty or preallocated zeros, is
/// reported as a torn tail and removed, and the directory opens again afterwards.
#[test]
fn a_newest_segment_cut_inside_its_header_keeps_the_mark_before_it() {
    for (loggers, zeros) in [(1, 0), (2, 0), (1, 8192)] {
        let storage = FaultyStorage::new(37);
        let config = || Config { segment_bytes: 8 << 10, loggers, ..config(&storage) };
        let db = Database::open(config()).unwrap();
        let items = db.create_table(TableSpec::new("items")).unwrap();
        let mut worker = db.worker().unwrap();
        let mut model = std::collections::BTreeMap::new();
        for round in 0..10u64 {
            put_round(&mut worker, &items, &mut model, round, 20, 200);
            worker.wait_durable().unwrap();
        }
        // Closed before the state is taken: the loggers go on rotating after the last commit,
        // and a crash inside one's `Segment::create` would make the very case below on its
        // own, leaving two headerless segments where a real crash leaves at most one (a logger
        // makes the next segment only once this one's header is synced).
        drop(worker);
        drop(items);
        drop(db);
        let crashed = storage.crash();
        // Logger 0's next segment, as a crash inside `Segment::create` can leave it.
        let newest =
            crashed.list("wal").unwrap().into_iter().filter(|name| name.contains("-l000-")).max();
        let newest = newest.expect("a segment of logger 0");
        let (stem, sequence) = newest.strip_suffix(".log").unwrap().rsplit_once('-').unwrap();
        let next = format!("wal/{stem}-{:08}.log", sequence.parse::<u64>().unwrap() + 1);
        let mut file = crashed.create(&next).unwrap();
        file.append(&vec![0; zeros]).unwrap();
        file.sync().unwrap();
        drop(file);
        let reopen = |what: &str| {
            Database::open(Config { storage: Some(Arc::new(crashed.clone())), ..config() })
                .unwrap_or_else(|error| panic!("{loggers} logger(s), {what}: {error}"))
        };
        let db = reopen("recovering");
        let report = db.recovery_report().unwrap().clone();
        assert_eq!(report.torn_tails.len(), 1, "{loggers} logger(s): {report:?}");
        assert!(report.torn_tails[0].contains(&next), "{report:?}");
        assert!(!crashed.paths().contains(&next), "the headerless segment is removed");
        let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
        assert_eq!(all, model, "{loggers} logger(s): {report:?}");
        drop(db);
        let db = reopen("opening again");
        let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
        assert_eq!(all, model, "{loggers} logger(s), opened again");
    }
}

/// A record larger than a worker's log chunk grows the chunk, which keeps the records'
/// running checksum (the block would otherwise read as corrupt); small records follow it.
#[test]
fn records_larger_than_a_log_chunk_are_logged_and_recovered() {
    let storage = FaultyStorage::new(29);
    let db = Database::open(config(&storage)).unwrap();
    let table = db.create_table(TableSpec::new("big")).unwrap();
    let mut worker = db.worker().unwrap();
    let large: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    // A small record first, so the chunk that grows already holds records (the logger may
    // take the chunk between the two commits now and then; five rounds make that moot).
    for id in 0..5u64 {
        worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(id), b"x")).unwrap();
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.put(&table, &key(100 + id), &large[..large.len() - id as usize])
            })
            .unwrap();
    }
    worker.wait_durable().unwrap();
    let before = rows(&db, "big");
    drop(worker);
    let crashed = storage.crash();
    drop(table);
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    assert_eq!(rows(&db, "big"), before);
}

/// A log device whose segment writes panic once armed, standing in for a bug in a logger.
#[derive(Debug, Clone)]
struct PanickingLog {
    inner: FaultyStorage,
    armed: Arc<std::sync::atomic::AtomicBool>,
}

struct PanickingFile {
    inner: Box<dyn wal::StorageFile>,
    armed: Arc<std::sync::atomic::AtomicBool>,
}

impl wal::StorageFile for PanickingFile {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        assert!(!self.armed.load(std::sync::atomic::Ordering::SeqCst), "injected logger bug");
        self.inner.append(bytes)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.inner.sync()
    }
}

impl Storage for PanickingLog {
    fn list(&self, dir: &str) -> std::io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn create(&self, path: &str) -> std::io::Result<Box<dyn wal::StorageFile>> {
        self.inner.create(path)
    }
    fn create_log(&self, path: &str, bytes: u64) -> std::io::Result<Box<dyn wal::StorageFile>> {
        let inner = self.inner.create_log(path, bytes)?;
        Ok(Box::new(PanickingFile { inner, armed: Arc::clone(&self.armed) }))
    }
    fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &str) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn remove_dir(&self, dir: &str) -> std::io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn truncate(&self, path: &str, len: u64) -> std::io::Result<()> {
        self.inner.truncate(path, len)
    }
    fn describe(&self, path: &str) -> String {
        self.inner.describe(path)
    }
}

/// A logger thread that panics fails the log: the commit waiting on it gets an error instead
/// of waiting forever, later commits are refused, and what was durable before survives.
#[test]
fn a_panicking_logger_fails_the_log_instead_of_hanging_its_waiters() {
    let faulty = FaultyStorage::new(31);
    let storage = PanickingLog {
        inner: faulty.clone(),
        armed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    let db = Database::open(Config { storage: Some(Arc::new(storage.clone())), ..config(&faulty) })
        .unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(1), b"kept")).unwrap();
    worker.wait_durable().unwrap();
    storage.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(2), b"lost")).unwrap();
    let error = worker.wait_durable().unwrap_err();
    assert!(matches!(&error, Error::LogFailed(message) if message.contains("panic")), "{error}");
    let refused =
        worker.transaction(Isolation::Serializable, |txn| txn.put(&table, &key(3), b"no"));
    assert!(refused.is_err(), "a commit after the logger stopped was accepted");
    drop(worker);
    drop(table);
    let crashed = faulty.crash();
    drop(db);
    let db = Database::open(config(&crashed)).unwrap();
    let all = rows(&db, "t");
    assert!(all.contains(&(key(1), b"kept".to_vec())), "{all:?}");
}

/// Every commit a durable wait acknowledged survives a crash, with and without LZ4: the round
/// that makes a commit durable often takes no records (they went out in the round before,
/// under an older mark) and must still write its mark, which is what recovery reads as
/// durable. The LZ4 path once skipped such marks while publishing them.
#[test]
fn acknowledged_commits_survive_a_crash_with_and_without_compression() {
    for compression in [false, true] {
        let storage = FaultyStorage::new(37);
        let db =
            Database::open(Config { log_compression: compression, ..config(&storage) }).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut worker = db.worker().unwrap();
        for id in 0..30u64 {
            worker
                .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(id), &[7u8; 200]))
                .unwrap();
            worker.wait_durable().unwrap();
        }
        drop(worker);
        let crashed = storage.crash();
        drop(table);
        drop(db);
        let db =
            Database::open(Config { log_compression: compression, ..config(&crashed) }).unwrap();
        assert_eq!(
            rows(&db, "t").len(),
            30,
            "compression {compression}: acknowledged commits lost"
        );
    }
}

/// The epochs of the checkpoint directories `storage` holds now.
fn checkpoint_epochs(storage: &FaultyStorage) -> std::collections::BTreeSet<String> {
    storage
        .paths()
        .iter()
        .filter_map(|path| path.strip_prefix("checkpoint/")?.split('/').next())
        .map(str::to_string)
        .collect()
}

/// Inserts rows `0..2000` of 1,000 bytes into `table`, 100 a transaction, and waits until the
/// snapshot a checkpoint reads at (a boundary 5 epochs of 2 ms apart) holds them all.
fn insert_two_thousand_rows(worker: &mut engram_engine::Worker, table: &engram_engine::TableRef) {
    let value = vec![7u8; 1000];
    for start in (0..2000).step_by(100) {
        worker
            .transaction(Isolation::Serializable, |txn| {
                (start..start + 100).try_for_each(|i| txn.insert(table, &key(i), &value))
            })
            .unwrap();
    }
    worker.wait_durable().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
}

/// Rewrites 40 of the first 2,000 rows of `table` (which 40, by `round`), and waits until
/// they are durable: about 40 KB of log.
fn update_forty_rows(
    worker: &mut engram_engine::Worker,
    table: &engram_engine::TableRef,
    round: u64,
) {
    let value = vec![7u8; 1000];
    worker
        .transaction(Isolation::Serializable, |txn| {
            (0..40).try_for_each(|i| txn.put(table, &key((round * 40 + i) % 2000), &value))
        })
        .unwrap();
    worker.wait_durable().unwrap();
}

/// Rewrites rows of `table` at about 3 MB of log a second (under 1 MB between two looks of
/// the checkpointer, every 200 ms) until `storage` holds other checkpoints than `before`;
/// returns the bytes `db` had logged by then. Fails after 30 s.
fn update_until_a_new_checkpoint(
    db: &Database,
    storage: &FaultyStorage,
    table: &engram_engine::TableRef,
    before: &std::collections::BTreeSet<String>,
) -> u64 {
    let mut worker = db.worker().unwrap();
    let started = std::time::Instant::now();
    for round in 1.. {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no new checkpoint after {} bytes of log",
            db.log_bytes()
        );
        update_forty_rows(&mut worker, table, round);
        std::thread::sleep(std::time::Duration::from_millis(10));
        if checkpoint_epochs(storage) != *before {
            return db.log_bytes();
        }
    }
    unreachable!("the rounds do not run out")
}

/// Background checkpoints wait for the log to grow by `checkpoint_log_ratio` times the last
/// checkpoint's size, not only by `checkpoint_log_bytes`: under the same write load over a
/// database of about 2 MB, a 64 KiB threshold alone checkpoints at nearly every poll of the
/// checkpointer, and with the ratio at 4 the log must grow by about 8 MB between them.
#[test]
fn background_checkpoints_wait_for_the_log_to_outgrow_the_last_one() {
    let checkpoints_taken = |ratio: u64| {
        let storage = FaultyStorage::new(31);
        let db = Database::open(Config {
            checkpoint_log_bytes: 64 << 10,
            checkpoint_log_ratio: ratio,
            ..config(&storage)
        })
        .unwrap();
        let table = db.create_table(TableSpec::new("rows")).unwrap();
        let mut worker = db.worker().unwrap();
        let value = vec![7u8; 1000];
        for start in (0..2000).step_by(100) {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    (start..start + 100).try_for_each(|i| txn.put(&table, &key(i), &value))
                })
                .unwrap();
        }
        let mut epochs = std::collections::BTreeSet::new();
        let started = std::time::Instant::now();
        let mut round = 0u64;
        // About 4 MB of log a second for three seconds: 15 polls of the checkpointer.
        while started.elapsed() < std::time::Duration::from_secs(3) {
            round += 1;
            worker
                .transaction(Isolation::Serializable, |txn| {
                    (0..40).try_for_each(|i| txn.put(&table, &key((round * 40 + i) % 2000), &value))
                })
                .unwrap();
            worker.wait_durable().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(10));
            epochs.extend(checkpoint_epochs(&storage));
        }
        let logged = db.log_bytes();
        drop(db);
        (epochs.len(), logged)
    };
    let (without_ratio, logged) = checkpoints_taken(0);
    assert!(logged > 2 << 20, "the load logged {logged} bytes");
    assert!(without_ratio >= 5, "{without_ratio} checkpoints with 64 KiB between them");
    let (with_ratio, logged) = checkpoints_taken(4);
    // The first after 64 KiB, then one for every ~8 MB of log.
    let most = 1 + (logged / (8 << 20)) as usize + 1;
    assert!(
        with_ratio <= most,
        "{with_ratio} checkpoints over {logged} bytes of log with the ratio at 4 (at most {most})"
    );
}

/// A database that grows as fast as its log is not checkpointed again: the next checkpoint
/// waits for `checkpoint_log_ratio` times the size a checkpoint would have now (estimated from
/// the last one's bytes per index leaf), which such a log never reaches. Measured against the
/// last checkpoint's size instead, the 200 rows here doubling at each
/// checkpoint took one about every doubling of the table (four in the run, when tried), each
/// writing about half as much as the log had since the one before.
#[test]
fn background_checkpoints_wait_for_the_log_to_outgrow_the_present_database() {
    let storage = FaultyStorage::new(41);
    let db = Database::open(Config {
        checkpoint_log_bytes: 64 << 10,
        checkpoint_log_ratio: 2,
        ..config(&storage)
    })
    .unwrap();
    let table = db.create_table(TableSpec::new("rows")).unwrap();
    let mut worker = db.worker().unwrap();
    let value = vec![7u8; 1000];
    let mut next = 0u64;
    let mut insert = |worker: &mut engram_engine::Worker, rows: u64| {
        worker
            .transaction(Isolation::Serializable, |txn| {
                (next..next + rows).try_for_each(|i| txn.insert(&table, &key(i), &value))
            })
            .unwrap();
        next += rows;
    };
    insert(&mut worker, 200);
    worker.wait_durable().unwrap();
    let waited = std::time::Instant::now();
    while checkpoint_epochs(&storage).is_empty() {
        assert!(waited.elapsed() < std::time::Duration::from_secs(20), "no first checkpoint");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let logged_before = db.log_bytes();
    let mut epochs = checkpoint_epochs(&storage);
    // About 4 MB of new rows a second for three seconds: 15 polls of the checkpointer, while
    // the table grows from 200 to about 12,000 rows.
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(3) {
        insert(&mut worker, 40);
        worker.wait_durable().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        epochs.extend(checkpoint_epochs(&storage));
    }
    let logged = db.log_bytes() - logged_before;
    assert!(next > 4_000 && logged > 4 << 20, "{next} rows, {logged} bytes of log");
    assert_eq!(epochs.len(), 1, "checkpoints {epochs:?} of a table that grew to {next} rows");
    // The same estimate lets a table that stopped growing be checkpointed again.
    let rows = next;
    let started = std::time::Instant::now();
    let mut round = 0u64;
    while epochs.len() < 2 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no second checkpoint of a table that stopped growing at {rows} rows"
        );
        round += 1;
        worker
            .transaction(Isolation::Serializable, |txn| {
                (0..40).try_for_each(|i| txn.put(&table, &key((round * 40 + i) % rows), &value))
            })
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        epochs.extend(checkpoint_epochs(&storage));
    }
}

/// A reopened database's checkpointer goes on from the checkpoint recovery loaded, with the
/// log recovery replayed counted as logged since: 2 MB of rows with about 6 MB of log kept
/// after their checkpoint, reopened with the ratio at 8, takes its next checkpoint after
/// about 16 MB of log in all: not after the 64 KiB threshold of new log (as it did, knowing
/// nothing of its size), nor after 16 MB of new log (with the replayed log left out).
#[test]
fn a_reopened_database_checkpoints_at_its_size_counting_the_log_it_replayed() {
    let storage = FaultyStorage::new(43);
    {
        let db = Database::open(config(&storage)).unwrap();
        let table = db.create_table(TableSpec::new("rows")).unwrap();
        let mut worker = db.worker().unwrap();
        insert_two_thousand_rows(&mut worker, &table);
        let taken = db.checkpoint().unwrap();
        assert_eq!(taken.rows, 2000);
        assert!(taken.bytes > 2_000_000, "a checkpoint of {} bytes", taken.bytes);
        for round in 0..100 {
            update_forty_rows(&mut worker, &table, round);
        }
    }
    let db = Database::open(Config {
        checkpoint_log_bytes: 64 << 10,
        checkpoint_log_ratio: 8,
        ..config(&storage)
    })
    .unwrap();
    let replayed = db.recovery_report().map_or(0, |report| report.log_bytes);
    assert!(replayed > 3_500_000, "{replayed} bytes of log replayed");
    let recovered = checkpoint_epochs(&storage);
    assert_eq!(recovered.len(), 1);
    let table = db.table("rows").unwrap();
    let logged_at_next = update_until_a_new_checkpoint(&db, &storage, &table, &recovered);
    // Due at about 16 MB of log since the checkpoint, 4 MB or more of it replayed; the
    // checkpointer looks every 200 ms, so it may start somewhat later.
    let logged = replayed + logged_at_next;
    assert!(
        logged > 12_000_000 && logged < 19_500_000,
        "the next checkpoint after {logged} bytes of log in all, {replayed} of them replayed"
    );
}

/// A checkpoint asked for (`Database::checkpoint`, SQL's CHECKPOINT) is where the background
/// checkpointer counts from, as from its own: 2 MB of rows checkpointed by hand, with the ratio
/// at 8, are checkpointed in the background after about 16 MB more of log, not at once (with
/// nothing taken in the background yet, the 64 KiB threshold alone was due).
#[test]
fn a_checkpoint_asked_for_restarts_the_background_count() {
    let storage = FaultyStorage::new(47);
    let db = Database::open(Config {
        checkpoint_log_bytes: 64 << 10,
        checkpoint_log_ratio: 8,
        ..config(&storage)
    })
    .unwrap();
    db.pause_checkpoints(true);
    let table = db.create_table(TableSpec::new("rows")).unwrap();
    let mut worker = db.worker().unwrap();
    insert_two_thousand_rows(&mut worker, &table);
    let asked = db.checkpoint().unwrap();
    assert_eq!(asked.rows, 2000);
    let logged_at_asked = db.log_bytes();
    let after_asked = checkpoint_epochs(&storage);
    assert_eq!(after_asked.len(), 1);
    db.pause_checkpoints(false);
    let since =
        update_until_a_new_checkpoint(&db, &storage, &table, &after_asked) - logged_at_asked;
    assert!(
        since > 12_000_000 && since < 19_500_000,
        "the background checkpoint after {since} bytes of log since the one asked for"
    );
}

/// While background checkpoints are paused (a benchmark alternating two databases pauses
/// one during the other's rounds) none starts, however far the log has grown; a checkpoint
/// asked for still runs, and restarts the count; once let go, the background checkpointer
/// takes the next when the log has grown by the threshold again.
#[test]
fn paused_background_checkpoints_start_none_until_let_go() {
    let storage = FaultyStorage::new(37);
    let db = Database::open(Config {
        checkpoint_log_bytes: 64 << 10,
        checkpoint_log_ratio: 0,
        ..config(&storage)
    })
    .unwrap();
    let checkpoints = || checkpoint_epochs(&storage);
    db.pause_checkpoints(true);
    let table = db.create_table(TableSpec::new("rows")).unwrap();
    let mut worker = db.worker().unwrap();
    let value = vec![7u8; 1000];
    // Over a second (five polls of the checkpointer), 1 MB of log: sixteen times the threshold.
    let started = std::time::Instant::now();
    let mut round = 0u64;
    while started.elapsed() < std::time::Duration::from_secs(1) || db.log_bytes() < 1 << 20 {
        round += 1;
        worker
            .transaction(Isolation::Serializable, |txn| {
                (0..20).try_for_each(|i| txn.put(&table, &key((round * 20 + i) % 500), &value))
            })
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    worker.wait_durable().unwrap();
    assert!(checkpoints().is_empty(), "paused, yet checkpoints {:?}", checkpoints());
    let asked = db.checkpoint().unwrap();
    assert_eq!(checkpoints().len(), 1, "the checkpoint asked for while paused");
    assert_eq!(asked.rows, 500);
    // Let go: the checkpoint asked for restarted the count, so one follows once the log has
    // grown by the threshold again.
    db.pause_checkpoints(false);
    let waited = std::time::Instant::now();
    while !checkpoints().iter().any(|epoch| *epoch != asked.epoch.to_string()) {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(20),
            "no background checkpoint within 20 s of letting it go"
        );
        round += 1;
        worker
            .transaction(Isolation::Serializable, |txn| {
                (0..20).try_for_each(|i| txn.put(&table, &key((round * 20 + i) % 500), &value))
            })
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Checkpoint files on a real directory are pushed to the device as they grow
/// (`StorageFile::write_back` every 8 MiB), not all at the final fsync: a file appended to in
/// pieces of every size, with write-backs between them, reads back whole, and a checkpoint of
/// about 24 MB is what the database comes back with.
#[test]
fn checkpoint_files_written_back_as_they_grow_read_back_whole() {
    let dir = std::env::temp_dir().join(format!("engram-write-back-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let storage = wal::DirStorage::open(&dir).unwrap();
        let mut file = storage.create("pieces").unwrap();
        let mut expected = Vec::new();
        for (index, len) in [0usize, 1, 4095, 3 << 20, 9 << 20, 5, 8 << 20].into_iter().enumerate()
        {
            let piece: Vec<u8> = (0..len).map(|i| (i * 7 + index) as u8).collect();
            file.append(&piece).unwrap();
            expected.extend_from_slice(&piece);
            file.write_back().unwrap();
        }
        file.sync().unwrap();
        assert!(storage.read("pieces").unwrap() == expected, "the file reads back whole");
    }
    let open = || {
        Database::open(Config {
            data_dir: Some(dir.join("db")),
            checkpoint_log_bytes: 0,
            epoch_interval_ms: 2,
            snapshot_interval_epochs: 5,
            ..Config::default()
        })
        .unwrap()
    };
    let value = |i: u64| vec![(i % 251) as u8; 1000];
    {
        let db = open();
        let table = db.create_table(TableSpec::new("rows")).unwrap();
        let mut worker = db.worker().unwrap();
        for start in (0..24_000u64).step_by(1000) {
            worker
                .transaction(Isolation::Serializable, |txn| {
                    (start..start + 1000).try_for_each(|i| txn.put(&table, &key(i), &value(i)))
                })
                .unwrap();
        }
        // The rows are below the snapshot epoch the checkpoint reads at.
        worker.wait_durable().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let report = db.checkpoint().unwrap();
        assert!(report.bytes > 2 * (8 << 20), "{} bytes", report.bytes);
    }
    let db = open();
    let table = db.table("rows").unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            for i in (0..24_000u64).step_by(997) {
                assert_eq!(txn.get(&table, &key(i))?, Some(&value(i)[..]), "row {i}");
            }
            Ok(())
        })
        .unwrap();
    drop(worker);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Rows of the patch tests: `width` bytes, a fill byte, and a counter in the 8 bytes at `at`.
fn patched_row(width: usize, fill: u8, at: usize, counter: u64) -> Vec<u8> {
    let mut row = vec![fill; width];
    row[at..at + 8].copy_from_slice(&counter.to_le_bytes());
    row
}

/// Patches (an update's changed bytes, format 4) apply in TID order on top of each row's
/// newest whole image, whichever logger and segment holds each. Two workers, logged by two
/// loggers into small segments, write the same rows: counter changes (patches), changes of
/// the whole row (images), deletes and inserts again, with a checkpoint in the middle; the
/// recovered tables equal the model of the acknowledged commits, with one thread and four.
#[test]
fn patches_and_images_of_one_row_from_two_loggers_replay_in_order() {
    replay_patched_history(41, |_| (0..40).map(key).collect(), 500);
}

/// Rows whose hashes tie share a bucket of patches and a group in recovery's patch step,
/// which must still apply each row's own patches, in TID order: the history above, on three
/// pairs of keys that hash alike.
#[test]
fn rows_whose_hashes_tie_get_their_own_patches_in_order() {
    let keys = |table: u32| {
        (0..3u64)
            .flat_map(|pair| {
                let (a, b) = engram_engine::fuzzing::keys_of_one_row_hash(table, 1000 * pair);
                [a, b]
            })
            .collect()
    };
    replay_patched_history(47, keys, 1000);
}

/// The history of the two patch tests above, on the rows of `keys` (given the table's id),
/// with `seed`; recovery must read more than `patches_min` patches.
fn replay_patched_history(seed: u64, keys: impl FnOnce(u32) -> Vec<Vec<u8>>, patches_min: u64) {
    let storage = FaultyStorage::new(seed);
    let config =
        || Config { segment_bytes: 16 << 10, loggers: 2, log_patches: true, ..config(&storage) };
    let db = Database::open(config()).unwrap();
    let table = db.create_table(TableSpec::new("wide")).unwrap();
    let keys = keys(table.id().0);
    let mut workers = [db.worker().unwrap(), db.worker().unwrap()];
    let mut model: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = Default::default();
    use rand::{RngExt, SeedableRng};
    let mut random = rand::rngs::SmallRng::seed_from_u64(seed);
    for step in 0..4000u64 {
        if step == 2000 {
            workers[0].wait_durable().unwrap();
            workers[1].wait_durable().unwrap();
            db.checkpoint().unwrap();
        }
        let index = random.random_range(0..keys.len());
        let key = &keys[index];
        let width = 128 + (index % 4) * 64;
        let worker = &mut workers[random.random_range(0..2usize)];
        let choice = random.random_range(0..10u32);
        let old = model.get(key).cloned();
        let new = match (&old, choice) {
            (Some(_), 0) => None,
            (Some(old), 1..=2) => Some(patched_row(width, old[0].wrapping_add(1), 8, step)),
            (Some(old), _) => {
                let mut row = old.clone();
                // A different word each time: every patch since the image counts.
                let at = 8 * (1 + (step as usize % 5));
                row[at..at + 8].copy_from_slice(&step.to_le_bytes());
                Some(row)
            }
            (None, _) => Some(patched_row(width, b'a', 8, step)),
        };
        worker
            .transaction(Isolation::Serializable, |txn| match &new {
                Some(row) => txn.put(&table, key, row),
                None => txn.delete(&table, key).map(|_| ()),
            })
            .unwrap();
        match new {
            Some(row) => model.insert(key.clone(), row),
            None => model.remove(key),
        };
    }
    workers[0].wait_durable().unwrap();
    workers[1].wait_durable().unwrap();
    let crashed = storage.crash();
    drop(workers);
    drop(table);
    drop(db);
    for threads in [1, 4] {
        let copy = crashed.crash();
        let config =
            Config { storage: Some(Arc::new(copy)), recovery_threads: threads, ..config() };
        let db = Database::open(config).unwrap();
        let report = db.recovery_report().unwrap().clone();
        // (How many segments the checkpoint leaves depends on where its epoch falls.)
        assert!(report.log_segments >= 2 && report.log_patches > patches_min, "{report:?}");
        assert!(report.checkpoint_epoch.is_some(), "{report:?}");
        let all: std::collections::BTreeMap<_, _> = rows(&db, "wide").into_iter().collect();
        assert_eq!(all, model, "recovered with {threads} threads");
    }
}

/// A patch needs the row as the write before it left it. If the log lost that write (here
/// the segment holding the rows' inserts, with no checkpoint to stand in), recovery says so
/// with `Corrupt` instead of skipping the patch or applying it to nothing.
#[test]
fn a_patch_whose_row_the_log_lost_is_corruption() {
    let storage = FaultyStorage::new(43);
    let config = || Config { segment_bytes: 8 << 10, log_patches: true, ..config(&storage) };
    let db = Database::open(config()).unwrap();
    let table = db.create_table(TableSpec::new("wide")).unwrap();
    let mut worker = db.worker().unwrap();
    for id in 0..20u64 {
        let row = patched_row(128, b'a', 0, 0);
        worker
            .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(id), &row))
            .unwrap();
    }
    worker.wait_durable().unwrap();
    for round in 1..=200u64 {
        let row = patched_row(128, b'a', 0, round);
        worker
            .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(round % 20), &row))
            .unwrap();
    }
    worker.wait_durable().unwrap();
    let crashed = storage.crash();
    drop(worker);
    drop(table);
    drop(db);
    let mut segments: Vec<String> =
        crashed.paths().into_iter().filter(|path| path.starts_with("wal/")).collect();
    segments.sort();
    assert!(segments.len() >= 2, "{segments:?}");
    crashed.remove(&segments[0]).unwrap();
    match Database::open(Config { storage: Some(Arc::new(crashed)), ..config() }) {
        Err(Error::Corrupt { reason, .. }) => {
            assert!(reason.contains("has no row to apply to"), "{reason}");
        }
        other => panic!("a patch of a lost row must be corruption: {:?}", other.map(|_| ())),
    }
}

/// A patch is the difference from the row the record holds when its update commits; under
/// every protocol and every version storage that is the row as the last commit left it, so
/// the patches replay to exactly the rows the model holds (append-only storages log whole
/// rows, and must recover the same).
#[test]
fn patches_replay_exactly_under_every_protocol_and_version_storage() {
    let protocols = engram_engine::Protocol::ALL.map(|protocol| (protocol, None));
    let storages = engram_engine::VersionStorage::ALL
        .map(|storage| (engram_engine::Protocol::Mvto, Some(storage)));
    for (protocol, version_storage) in protocols.into_iter().chain(storages) {
        let storage = FaultyStorage::new(44);
        let configured = |from: &FaultyStorage| {
            let config = Config { protocol, log_patches: true, ..config(from) };
            match version_storage {
                Some(version_storage) => Config { version_storage, ..config },
                None => config,
            }
        };
        let db = Database::open(configured(&storage)).unwrap();
        let table = db.create_table(TableSpec::new("wide")).unwrap();
        let mut worker = db.worker().unwrap();
        let mut model: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = Default::default();
        for round in 0..40u64 {
            let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..6u64)
                .map(|id| {
                    let mut row = model
                        .get(&key(id))
                        .cloned()
                        .unwrap_or_else(|| patched_row(200, b'r', 0, id));
                    // A different word each round, so that every patch counts.
                    let at = 8 * (1 + (round as usize + id as usize) % 20);
                    row[at..at + 8].copy_from_slice(&round.to_le_bytes());
                    (key(id), row)
                })
                .collect();
            worker
                .transaction(Isolation::Serializable, |txn| {
                    for (key, row) in &rows {
                        txn.put(&table, key, row)?;
                    }
                    if round == 39 {
                        txn.delete(&table, &key(2))?;
                    }
                    Ok(())
                })
                .unwrap();
            model.extend(rows);
        }
        model.remove(&key(2));
        worker.wait_durable().unwrap();
        drop(worker);
        let crashed = storage.crash();
        drop(table);
        drop(db);
        let db = Database::open(configured(&crashed)).unwrap();
        let report = db.recovery_report().unwrap().clone();
        let what = format!("{protocol} {version_storage:?}");
        // Append-only storages keep the current row in a version, not in the record head,
        // and log whole rows (`Head::value_in_place_locked` gives only inline rows).
        if version_storage.is_none_or(|storage| !storage.append_only()) {
            assert!(report.log_patches >= 6 * 38, "{what}: {report:?}");
        }
        let all: std::collections::BTreeMap<_, _> = rows(&db, "wide").into_iter().collect();
        assert_eq!(all, model, "{what}");
    }
}

/// Segments that checkpoints supersede become spares (up to `log_spare_bytes`), with spares of
/// zeros written at open (`log_reserve_bytes`); new segments take them over with the old
/// blocks still in them. Through four crashes, each after segments took spares over, recovery
/// reads every segment to its own end and never into the blocks of the file's earlier life:
/// every acknowledged commit is there and nothing else.
#[test]
fn superseded_segments_are_spares_that_new_segments_take_over_across_crashes() {
    const SEGMENT: u64 = 8 << 10;
    let spares = |storage: &FaultyStorage| files_under(storage, "wal/spare-");
    let with_spares = |storage: &FaultyStorage| Config {
        segment_bytes: SEGMENT,
        log_spare_bytes: 6 * SEGMENT,
        log_reserve_bytes: 3 * SEGMENT,
        ..config(storage)
    };
    let mut storage = FaultyStorage::new(21);
    let mut model = std::collections::BTreeMap::new();
    let (mut kept, mut taken) = (0, 0);
    for life in 0..4u64 {
        let db = Database::open(with_spares(&storage)).unwrap();
        // The first segment took a spare; the rest of the reserve waits.
        assert!(spares(&storage) >= 2, "life {life}: {:?}", storage.paths());
        if life > 0 {
            let report = db.recovery_report().unwrap();
            assert_eq!(
                rows(&db, "items").into_iter().collect::<std::collections::BTreeMap<_, _>>(),
                model
            );
            assert!(report.log_transactions > 0, "{report:?}");
        }
        let items = match db.table("items") {
            Ok(items) => items,
            Err(_) => db.create_table(TableSpec::new("items")).unwrap(),
        };
        let mut worker = db.worker().unwrap();
        for round in 0..4u64 {
            let before = spares(&storage);
            put_round(&mut worker, &items, &mut model, life * 10 + round, 150, 60);
            worker.wait_durable().unwrap();
            taken += before.saturating_sub(spares(&storage));
            // Let the snapshot epoch (every 5 epochs of 2 ms) pass the writes.
            std::thread::sleep(std::time::Duration::from_millis(60));
            let before = spares(&storage);
            db.checkpoint().unwrap();
            kept += spares(&storage).saturating_sub(before);
            assert!(spares(&storage) <= 6, "at most log_spare_bytes of spares");
        }
        put_round(&mut worker, &items, &mut model, life * 10 + 9, 150, 60);
        worker.wait_durable().unwrap();
        let crashed = storage.crash();
        drop(worker);
        drop(items);
        drop(db);
        storage = crashed;
    }
    assert!(kept > 0 && taken > 0, "segments were kept as spares ({kept}) and taken ({taken})");
    let db = Database::open(with_spares(&storage)).unwrap();
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// A checkpoint keeps as spares as many segments as it superseded (the log written since the
/// checkpoint before, what the log should write again before the next), within
/// `log_spare_bytes`: after a burst every superseded segment is kept, and a later checkpoint
/// that superseded fewer segments than the spares already hold keeps none of its own (rather
/// than keeping spares up to `log_spare_bytes` whatever a checkpoint superseded).
#[test]
fn a_checkpoint_keeps_as_many_spares_as_it_superseded() {
    const SEGMENT: u64 = 8 << 10;
    let storage = FaultyStorage::new(34);
    let count = |prefix: &str| files_under(&storage, prefix);
    let db = Database::open(Config { segment_bytes: SEGMENT, ..config(&storage) }).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    let checkpoint = || db.checkpoint().unwrap().segments_removed;
    let write = |worker: &mut engram_engine::Worker, model: &mut _, first, rounds| {
        durable_rounds(worker, &items, model, first, rounds)
    };
    // Files in `wal/`: a logger taking a spare over renames one, so only a fresh segment file
    // (+1) or a removal (-1) changes the count. A checkpoint waits for the log to cover its
    // epoch, and the round that writes that mark (a page) may start one new segment, fresh
    // while there is no spare.
    let files = || count("wal/");
    // A burst: tens of segments, every one kept as a spare (the default limit is 8 GiB).
    write(&mut worker, &mut model, 0, 20);
    let before = files();
    let superseded = checkpoint();
    assert!(superseded >= 10, "{superseded} segments superseded: {:?}", storage.paths());
    assert!((before..=before + 1).contains(&files()), "all kept: {:?}", storage.paths());
    assert!(count("wal/spare-") > 0);
    // A quiet interval takes a few spares over; its checkpoint supersedes fewer segments than
    // the spares left, so it keeps none and removes what it superseded.
    write(&mut worker, &mut model, 100, 3);
    let (before, spares) = (files(), count("wal/spare-"));
    let quiet = checkpoint();
    assert!(quiet > 0 && quiet < spares, "{quiet} superseded, {spares} spares");
    assert_eq!(files(), before - quiet, "all removed: {:?}", storage.paths());
    // Another burst, until the spares are used up and past them: its checkpoint keeps what it
    // superseded again.
    let mut round = 200;
    while count("wal/spare-") > 0 {
        assert!(round < 400, "segments take the spares over: {:?}", storage.paths());
        write(&mut worker, &mut model, round, 1);
        round += 1;
    }
    write(&mut worker, &mut model, round, 3);
    let before = files();
    let superseded = checkpoint();
    assert!(superseded > spares, "{superseded} segments superseded, {spares} spares before");
    assert!((before..=before + 1).contains(&files()), "all kept: {:?}", storage.paths());
    drop(worker);
    drop(items);
    drop(db);
    let db = Database::open(Config { segment_bytes: SEGMENT, ..config(&storage) }).unwrap();
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// A checkpoint that finds the disk full gives the spare segment files back, so that the next
/// try has their room; no commit is lost, and the log goes on in its own segments.
#[test]
fn a_checkpoint_that_finds_the_disk_full_gives_the_spares_back() {
    const SEGMENT: u64 = 8 << 10;
    let storage = FaultyStorage::new(35);
    let spares = || files_under(&storage, "wal/spare-");
    let db = Database::open(Config { segment_bytes: SEGMENT, ..config(&storage) }).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    durable_rounds(&mut worker, &items, &mut model, 0, 20);
    db.checkpoint().unwrap();
    // The logger may still cut the segment it leaves for a spare (the checkpoint's mark).
    std::thread::sleep(std::time::Duration::from_millis(60));
    let kept = spares();
    assert!(kept >= 10, "{kept} spares: {:?}", storage.paths());
    let checkpoint_files = || files_under(&storage, "checkpoint/");
    assert_eq!(checkpoint_files(), 1);
    // Room for less than the next checkpoint's file.
    storage.limit_space(Some(storage.used_bytes() + 1024));
    let error = db.checkpoint().unwrap_err();
    assert!(matches!(error, Error::DiskFull(_)), "{error}");
    assert_eq!(spares(), 0, "the spares were given back: {:?}", storage.paths());
    assert_eq!(checkpoint_files(), 1, "the unfinished checkpoint's file was removed");
    // Their room takes the next checkpoint and more commits.
    db.checkpoint().unwrap();
    durable_rounds(&mut worker, &items, &mut model, 100, 3);
    drop(worker);
    drop(items);
    drop(db);
    storage.limit_space(None);
    let db = Database::open(Config { segment_bytes: SEGMENT, ..config(&storage) }).unwrap();
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
}

/// On a real directory (`O_DIRECT` files): the spares written at open are full-size files of
/// zeros; segments take them over and later checkpoints hand theirs back; a clean close cuts
/// the newest segment, and every closed segment that took a spare over was cut to its blocks,
/// so reopening reads exactly the log, with no torn tail reported.
#[test]
fn spare_segment_files_on_disk_are_taken_over_cut_and_read_back() {
    const SEGMENT: u64 = 16 << 10;
    let dir = std::env::temp_dir().join(format!("engram-spares-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let open = || {
        Database::open(Config {
            data_dir: Some(dir.clone()),
            epoch_interval_ms: 2,
            snapshot_interval_epochs: 5,
            checkpoint_log_bytes: 0,
            segment_bytes: SEGMENT,
            log_spare_bytes: 8 * SEGMENT,
            log_reserve_bytes: 4 * SEGMENT,
            index_keys: Some(index_keys()),
            ..Config::default()
        })
        .unwrap()
    };
    let files = |prefix: &str| -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(dir.join("wal"))
            .unwrap()
            .map(|entry| entry.unwrap())
            // A file the logger renames meanwhile is gone: listed under its new name next time.
            .filter_map(|entry| {
                let len = entry.metadata().ok()?.len();
                Some((entry.file_name().to_string_lossy().into_owned(), len))
            })
            .filter(|(name, _)| name.starts_with(prefix))
            .collect();
        files.sort();
        files
    };
    let db = open();
    // The reserve: four spare files of a segment and a quarter each, less the one the first
    // segment took.
    assert_eq!(files("spare-").len(), 3, "{:?}", files(""));
    assert!(files("spare-").iter().all(|(_, len)| *len == SEGMENT + SEGMENT / 4));
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    let mut model = std::collections::BTreeMap::new();
    // Checkpoints in the first three rounds hand segments back; the last three keep theirs.
    let mut kept = 0;
    for round in 0..6u64 {
        put_round(&mut worker, &items, &mut model, round, 200, 80);
        worker.wait_durable().unwrap();
        if round < 3 {
            std::thread::sleep(std::time::Duration::from_millis(60));
            let before = files("spare-").len();
            db.checkpoint().unwrap();
            kept += files("spare-").len().saturating_sub(before);
        }
    }
    assert!(kept > 0, "checkpoints handed segments back: {:?}", files(""));
    let segments = files("r");
    assert!(segments.len() > 2, "closed segments stay for recovery to read: {segments:?}");
    drop(worker);
    drop(items);
    drop(db);
    let db = open();
    let report = db.recovery_report().unwrap().clone();
    assert!(report.torn_tails.is_empty(), "a clean close leaves no old bytes: {report:?}");
    let all: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
    assert_eq!(all, model);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Small segments, spares and checkpoints, with the disk failing at each of the run's writes
/// and syncs in turn (segments made and taken over from spares, spares kept and removed,
/// checkpoint files, the manifest), then a crash: the database opens with the rows of every
/// acknowledged commit and nothing newer than the one the failure interrupted. At every
/// sixteenth point the recovery is failed at each of its own writes and crashed too, and the
/// recovery after it must find the same rows.
#[test]
fn a_crash_at_every_write_of_a_log_with_spares_and_checkpoints_keeps_what_it_acknowledged() {
    const SEGMENT: u64 = 8 << 10;
    const STEPS: u64 = 30;
    let config = |storage: &FaultyStorage| Config {
        segment_bytes: SEGMENT,
        log_spare_bytes: 6 * SEGMENT,
        log_reserve_bytes: 2 * SEGMENT,
        epoch_interval_ms: 1,
        ..config(storage)
    };
    type Rows = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;
    // Step `step` writes one row of about 1 KiB (a segment holds about seven); every 10th step
    // is followed by a checkpoint. Returns the rows after each step that was acknowledged.
    let run = |db: &Database| -> Vec<Rows> {
        let mut states = vec![Rows::new()];
        let items = match db.create_table(TableSpec::new("items")) {
            Ok(items) => items,
            Err(error) => {
                assert!(matches!(error, Error::DiskFull(_)), "create: {error}");
                return states;
            }
        };
        let mut worker = db.worker().unwrap();
        for step in 0..STEPS {
            let (row, value) = (key(step % 11), format!("{step}-{}", "v".repeat(1000)));
            let written = worker
                .transaction(Isolation::Serializable, |txn| txn.put(&items, &row, value.as_bytes()))
                .and_then(|()| worker.wait_durable());
            if let Err(error) = written {
                assert!(matches!(error, Error::DiskFull(_)), "step {step}: {error}");
                return states;
            }
            let mut now = states.last().unwrap().clone();
            now.insert(row, value.into_bytes());
            states.push(now);
            if step % 10 == 9
                && let Err(error) = db.checkpoint()
            {
                assert!(matches!(error, Error::DiskFull(_)), "checkpoint: {error}");
            }
        }
        states
    };
    let found = |storage: &FaultyStorage| -> Rows {
        let db = Database::open(config(storage)).unwrap();
        if db.table("items").is_err() {
            return Rows::new();
        }
        rows(&db, "items").into_iter().collect()
    };
    let clean = FaultyStorage::new(7);
    let db = Database::open(config(&clean)).unwrap();
    let opened = clean.operations();
    let expected = run(&db);
    assert_eq!(expected.len() as u64, STEPS + 1);
    let operations = clean.operations() - opened;
    drop(db);
    assert!(files_under(&clean, "wal/spare-") > 0, "spares: {:?}", clean.paths());
    let mut interrupted_recovered = 0;
    for point in 0..operations {
        let storage = FaultyStorage::new(100 + point);
        let db = Database::open(config(&storage)).unwrap();
        storage.fail_after(point);
        let states = run(&db);
        let acknowledged = states.len() - 1;
        drop(db);
        let crashed = storage.crash();
        let rows = found(&crashed.crash());
        let at = (acknowledged..=(acknowledged + 1).min(STEPS as usize))
            .find(|&step| expected[step] == rows)
            .unwrap_or_else(|| panic!("point {point}: {acknowledged} acknowledged, rows differ"));
        interrupted_recovered += usize::from(at > acknowledged);
        if point % 16 == 0 {
            let undisturbed = crashed.crash();
            drop(Database::open(config(&undisturbed)).unwrap());
            for failing in 0..undisturbed.operations() {
                let opening = crashed.crash();
                opening.fail_after(failing);
                drop(Database::open(config(&opening)));
                assert!(
                    found(&opening.crash()) == rows,
                    "point {point}, recovery failing at {failing}: rows differ"
                );
            }
        }
    }
    assert!(interrupted_recovered > 0, "no interrupted commit was found durable");
}

/// Commits the row `key(id)` = `value` and waits for it to be durable; the error, if either
/// step failed.
fn put_durably(
    worker: &mut engram_engine::Worker,
    table: &engram_engine::TableRef,
    id: u64,
    value: &[u8],
) -> Result<(), Error> {
    worker.transaction(Isolation::Serializable, |txn| txn.put(table, &key(id), value))?;
    worker.wait_durable()
}

/// How many times a write is tried, a few milliseconds apart, before a test gives up on
/// the log taking writes again: a bound, not a timing (the logger tries again at each epoch).
const WRITE_RETRIES_MAX: u32 = 5_000;

/// Tries `put_durably` until it succeeds (after `WRITE_RETRIES_MAX` tries: the last error);
/// every failure before must be a full disk.
fn put_durably_once_there_is_room(
    worker: &mut engram_engine::Worker,
    table: &engram_engine::TableRef,
    id: u64,
    value: &[u8],
) -> Result<(), Error> {
    let mut tries = 0;
    loop {
        match put_durably(worker, table, id, value) {
            Ok(()) => return Ok(()),
            Err(error) if tries < WRITE_RETRIES_MAX && matches!(error, Error::DiskFull(_)) => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(error) => return Err(error),
        }
    }
}

/// Fills the disk under a running log (small segments, so that loggers also fail to start
/// their next one) and then gives it room again, with one logger and with two: while the disk
/// is full, the commit in doubt and every later write get `DiskFull`, and so does a table's
/// creation; once there is room, commits and catalog changes resume by themselves, with no
/// restart, and a crash after that keeps every acknowledged commit, the ones before the disk
/// filled and after it. Before, the log stopped for good at the first ENOSPC ("free space
/// and restart").
#[test]
fn commits_resume_by_themselves_once_a_full_disk_has_room_again() {
    const SEGMENT: u64 = 8 << 10;
    for loggers in [1, 2] {
        let config =
            |storage: &FaultyStorage| Config { loggers, segment_bytes: SEGMENT, ..config(storage) };
        let storage = FaultyStorage::new(60 + loggers as u64);
        let db = Database::open(config(&storage)).unwrap();
        let items = db.create_table(TableSpec::new("items")).unwrap();
        let mut worker = db.worker().unwrap();
        let mut acknowledged = std::collections::BTreeMap::new();
        let value = |id: u64| format!("{id}-{}", "v".repeat(300)).into_bytes();
        for id in 0..40 {
            put_durably(&mut worker, &items, id, &value(id)).unwrap();
            acknowledged.insert(key(id), value(id));
        }
        // Room for a few more rounds of the log, not for the next segments.
        storage.limit_space(Some(storage.used_bytes() + 3 * 1024));
        let mut in_doubt = std::collections::BTreeMap::new();
        let mut id = 40;
        let full = loop {
            assert!(id < 40 + 1_000, "{loggers} logger(s): the disk never filled");
            match put_durably(&mut worker, &items, id, &value(id)) {
                Ok(()) => {
                    acknowledged.insert(key(id), value(id));
                }
                Err(error) => {
                    in_doubt.insert(key(id), value(id));
                    break error;
                }
            }
            id += 1;
        };
        assert!(matches!(full, Error::DiskFull(_)), "{loggers} logger(s): {full}");
        // Full to the last byte: writes and catalog changes are refused, with a message that
        // says so.
        storage.limit_space(Some(storage.used_bytes()));
        let refused = put_durably(&mut worker, &items, 5_000, b"refused").unwrap_err();
        assert!(matches!(refused, Error::DiskFull(_)), "{refused}");
        let message = refused.to_string();
        assert!(message.contains("full") && message.contains("resume"), "{message}");
        let error = db.create_table(TableSpec::new("while_full")).unwrap_err();
        assert!(matches!(error, Error::DiskFull(_)), "{error}");
        // Room again: the same process takes writes and DDL.
        storage.limit_space(None);
        let resumed = id + 1;
        put_durably_once_there_is_room(&mut worker, &items, resumed, &value(resumed))
            .unwrap_or_else(|error| panic!("{loggers} logger(s): never resumed: {error}"));
        acknowledged.insert(key(resumed), value(resumed));
        for id in resumed + 1..resumed + 40 {
            put_durably(&mut worker, &items, id, &value(id)).unwrap();
            acknowledged.insert(key(id), value(id));
        }
        let later = db.create_table(TableSpec::new("after_full")).unwrap();
        put_durably(&mut worker, &later, 1, b"after").unwrap();
        let crashed = storage.crash();
        drop((worker, items, later, db));
        let db = Database::open(config(&crashed)).unwrap();
        let found: std::collections::BTreeMap<_, _> = rows(&db, "items").into_iter().collect();
        for (row, value) in &acknowledged {
            assert_eq!(found.get(row), Some(value), "{loggers} logger(s): an acknowledged row");
        }
        for (row, value) in &found {
            assert!(
                acknowledged.get(row) == Some(value) || in_doubt.get(row) == Some(value),
                "{loggers} logger(s): a row never acknowledged nor in doubt"
            );
        }
        assert_eq!(rows(&db, "after_full"), vec![(key(1), b"after".to_vec())]);
        assert!(db.table("while_full").is_err());
    }
}

/// A failed fsync is not a full disk to wait out: after it the state of what was written is
/// unknown (the kernel may have dropped the pages), so the log stops for good, even when the
/// fsync failed with ENOSPC and the disk has room again; a restart recovers every acknowledged
/// commit and takes writes.
#[test]
fn a_failed_fsync_stops_the_log_until_a_restart_even_once_there_is_room() {
    let storage = FaultyStorage::new(64);
    let db = Database::open(config(&storage)).unwrap();
    let items = db.create_table(TableSpec::new("items")).unwrap();
    let mut worker = db.worker().unwrap();
    for id in 0..20 {
        put_durably(&mut worker, &items, id, b"acknowledged").unwrap();
    }
    storage.fail_syncs(true);
    let error = put_durably(&mut worker, &items, 20, b"in doubt").unwrap_err();
    assert!(matches!(error, Error::DiskFull(_)), "{error}");
    assert!(error.to_string().contains("restart"), "{error}");
    storage.fail_syncs(false);
    for attempt in 0..50 {
        let error = put_durably(&mut worker, &items, 100 + attempt, b"refused").unwrap_err();
        assert!(error.to_string().contains("restart"), "{error}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let crashed = storage.crash();
    drop((worker, items, db));
    let db = Database::open(config(&crashed)).unwrap();
    let found = rows(&db, "items");
    let acknowledged = found.iter().filter(|(_, value)| value == b"acknowledged").count();
    assert_eq!(acknowledged, 20);
    assert!(found.iter().all(|(_, value)| value != b"refused"));
    let items = db.table("items").unwrap();
    put_durably(&mut db.worker().unwrap(), &items, 200, b"after").unwrap();
}

/// A process killed while the disk was full, restarted on the disk still full: recovery
/// needs no room (it reads, and cuts torn tails), so the database opens, serves reads of
/// every acknowledged commit and refuses writes and catalog changes with `DiskFull`; a crash
/// then changes nothing; and once there is room it writes its manifest, catalog and first
/// segments and takes writes, with no restart. With one logger and with two, and with spare
/// segments to take over (the log then starts at once, as the spares need no new room).
/// Before, the open failed: "cannot write catalog.log" or "cannot create a log segment".
#[test]
fn a_database_killed_on_a_full_disk_opens_on_it_and_writes_once_there_is_room() {
    const SEGMENT: u64 = 8 << 10;
    for (loggers, spares) in [(1, false), (2, false), (1, true)] {
        let case = format!("{loggers} logger(s), spares {spares}");
        let config = |storage: &FaultyStorage| Config {
            loggers,
            segment_bytes: SEGMENT,
            log_reserve_bytes: if spares { 4 * SEGMENT } else { 0 },
            ..config(storage)
        };
        let storage = FaultyStorage::new(70 + loggers as u64);
        let db = Database::open(config(&storage)).unwrap();
        let items = db.create_table(TableSpec::new("items")).unwrap();
        let mut worker = db.worker().unwrap();
        let mut acknowledged = std::collections::BTreeMap::new();
        for id in 0..30 {
            let value = format!("{id}-{}", "v".repeat(200)).into_bytes();
            put_durably(&mut worker, &items, id, &value).unwrap();
            acknowledged.insert(key(id), value);
        }
        if spares {
            // It keeps the segments it supersedes as spares.
            db.checkpoint().unwrap();
            assert!(files_under(&storage, "wal/spare-") > 1, "{case}: {:?}", storage.paths());
        }
        // The disk fills: a commit is in doubt, then the process is killed and restarted on
        // the disk as full as it was.
        storage.limit_space(Some(storage.used_bytes()));
        let in_doubt = format!("30-{}", "v".repeat(200)).into_bytes();
        assert!(put_durably(&mut worker, &items, 30, &in_doubt).is_err(), "{case}");
        let killed = storage.crash();
        drop((worker, items, db));
        killed.limit_space(Some(killed.used_bytes()));
        type Rows = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;
        // Every acknowledged row, and no row but those and the one in doubt.
        let check = |db: &Database, acknowledged: &Rows| {
            let found: Rows = rows(db, "items").into_iter().collect();
            for (row, value) in acknowledged {
                assert_eq!(found.get(row), Some(value), "{case}: an acknowledged row");
            }
            for (row, value) in &found {
                let expected = acknowledged.get(row).or((row == &key(30)).then_some(&in_doubt));
                assert_eq!(expected, Some(value), "{case}: a row never written");
            }
        };
        // Opens on the full disk and reads. Without spares it refuses writes and DDL; with
        // them it gives one back for its catalog and manifest, and its loggers take others
        // over, so it writes at once. A crash loses nothing.
        let db = Database::open(config(&killed))
            .unwrap_or_else(|error| panic!("{case}: no open on a full disk: {error}"));
        check(&db, &acknowledged);
        let items = db.table("items").unwrap();
        let mut worker = db.worker().unwrap();
        if spares {
            let value = b"on the full disk".to_vec();
            put_durably(&mut worker, &items, 31, &value).unwrap();
            acknowledged.insert(key(31), value);
            drop(db.create_table(TableSpec::new("on_spares")).unwrap());
        } else {
            let error = put_durably(&mut worker, &items, 31, b"refused").unwrap_err();
            assert!(matches!(error, Error::DiskFull(_)), "{case}: {error}");
            assert!(error.to_string().contains("resume"), "{case}: {error}");
            let error = db.create_table(TableSpec::new("while_full")).unwrap_err();
            assert!(matches!(error, Error::DiskFull(_)), "{case}: {error}");
        }
        let again = killed.crash();
        drop((worker, items, db));
        again.limit_space(Some(again.used_bytes()));
        let db = Database::open(config(&again))
            .unwrap_or_else(|error| panic!("{case}: no second open on a full disk: {error}"));
        check(&db, &acknowledged);
        // Room again: the same process takes writes and DDL.
        again.limit_space(None);
        let items = db.table("items").unwrap();
        let mut worker = db.worker().unwrap();
        put_durably_once_there_is_room(&mut worker, &items, 32, b"after")
            .unwrap_or_else(|error| panic!("{case}: never resumed: {error}"));
        acknowledged.insert(key(32), b"after".to_vec());
        let later = db.create_table(TableSpec::new("after_full")).unwrap();
        put_durably(&mut worker, &later, 1, b"after").unwrap();
        let crashed = again.crash();
        drop((worker, items, later, db));
        let db = Database::open(config(&crashed)).unwrap();
        check(&db, &acknowledged);
        assert_eq!(rows(&db, "after_full"), vec![(key(1), b"after".to_vec())]);
    }
}
