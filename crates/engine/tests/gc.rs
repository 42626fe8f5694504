//! The GC modes (`Config::gc`): who prunes version chains, and what each leaves behind.
//!
//! A reader that began before a run of updates keeps every version of the run needed; once it
//! ends, the versions are garbage. `transaction` bounds a chain while it grows (its writers
//! prune), `tuple-vacuum` prunes it in the background once the reader is gone, `none` keeps it.
//! Pruning also removes the secondary entries that only the pruned versions produced. Every
//! mode is run with each version storage (`Config::version_storage`).

use engram_engine::index::{LeafVersion, ScanVisitor};
use engram_engine::storage::Head;
use engram_engine::{
    Config, Database, Direction, Gc, IndexSpec, Isolation, KeyBuilder, Protocol, TableRef,
    TableSpec, VersionStorage, Worker,
};
use std::ops::Bound;
use std::time::{Duration, Instant};

const UPDATES: u64 = 300;

fn key(i: u64) -> Vec<u8> {
    KeyBuilder::new().u64(i).finish()
}

/// A row whose first eight bytes are its secondary key.
fn row_of(group: u64) -> Vec<u8> {
    let mut row = group.to_be_bytes().to_vec();
    row.extend_from_slice(&[7u8; 24]);
    row
}

fn open(gc: Gc, storage: VersionStorage) -> (Database, TableRef) {
    open_sweeping(gc, storage, 0)
}

/// [`open`], with cooperative cleaning's sweep every `sweep_ms` (0: none).
fn open_sweeping(gc: Gc, storage: VersionStorage, sweep_ms: u64) -> (Database, TableRef) {
    let db = Database::open(Config {
        epoch_interval_ms: 1,
        snapshot_interval_epochs: 2,
        protocol: Protocol::Mvto,
        gc,
        version_storage: storage,
        vacuum_interval_ms: 1,
        cooperative_sweep_interval_ms: sweep_ms,
        ..Config::default()
    })
    .unwrap();
    let by_group = IndexSpec::new("by_group", false, |row: &[u8], out: &mut Vec<u8>| {
        out.extend_from_slice(&row[..8]);
        true
    });
    let table = db.create_table(TableSpec::new("t").index(by_group)).unwrap();
    (db, table)
}

/// Older versions of row 0, and entries in the secondary index.
fn chain_and_entries(db: &Database, table: &TableRef) -> (usize, usize) {
    let mut worker = db.worker().unwrap();
    worker
        .pinned(|pin, _| {
            let head = table.primary.get(&key(0), pin).value.expect("row 0");
            // SAFETY: found in the index while pinned.
            let chain = unsafe { &*(head as *const Head) }.chain_len();
            struct Count(usize);
            impl ScanVisitor for Count {
                fn leaf(&mut self, _leaf: LeafVersion) {}
                fn entry(&mut self, _key: &[u8], _value: u64) -> bool {
                    self.0 += 1;
                    true
                }
            }
            let mut entries = Count(0);
            table.secondaries[0].tree.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                pin,
                &mut Default::default(),
                &mut entries,
            );
            (chain, entries.0)
        })
        .unwrap()
}

/// Inserts row 0 and updates it `UPDATES` times while a reader that began before holds the
/// versions; returns the writer and the reader, still open.
fn updates_under_a_reader(db: &Database, table: &TableRef) -> (Worker, Worker) {
    let mut writer = db.worker().unwrap();
    writer
        .transaction(Isolation::Serializable, |txn| txn.insert(table, &key(0), &row_of(0)))
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut reader = db.worker().unwrap();
    reader.begin(Isolation::Serializable).unwrap();
    assert_eq!(reader.txn().unwrap().get(table, &key(1)).unwrap(), None);
    for update in 1..=UPDATES {
        writer
            .transaction(Isolation::Serializable, |txn| txn.update(table, &key(0), &row_of(update)))
            .unwrap();
    }
    (writer, reader)
}

/// Updates row 0 `UPDATES` times, each to a new secondary key, while a reader that began
/// before holds the versions; returns the chain and entry counts with the reader still open,
/// then a second after it ended.
fn run(gc: Gc, storage: VersionStorage) -> ((usize, usize), (usize, usize)) {
    let (db, table) = open(gc, storage);
    let (mut writer, mut reader) = updates_under_a_reader(&db, &table);
    let held = chain_and_entries(&db, &table);
    reader.commit().unwrap();
    // Updates spread over 100 ms after the reader is gone: with no reader, an update keeps a
    // version (and a pruning writer then prunes) only when a snapshot boundary passes.
    for update in UPDATES + 1..=UPDATES + 20 {
        writer
            .transaction(Isolation::Serializable, |txn| {
                txn.update(&table, &key(0), &row_of(update))
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut after = chain_and_entries(&db, &table);
    let tuple_level = matches!(gc, Gc::TupleVacuum | Gc::TupleCooperative);
    while Instant::now() < deadline && tuple_level && after.0 > 1 {
        std::thread::sleep(Duration::from_millis(10));
        if gc == Gc::TupleCooperative {
            // A reader passing the chain cleans it.
            let row = writer.transaction(Isolation::Serializable, |txn| {
                Ok(txn.get(&table, &key(0))?.map(<[u8]>::to_vec))
            });
            assert_eq!(row.unwrap(), Some(row_of(UPDATES + 20)));
        }
        after = chain_and_entries(&db, &table);
    }
    if tuple_level {
        let stats = db.vacuum_stats();
        assert!(stats.versions > 0, "{stats:?}");
        assert_eq!(stats.passes > 0, gc == Gc::TupleVacuum, "{stats:?}");
    } else {
        assert_eq!(db.vacuum_stats(), Default::default());
    }
    (held, after)
}

#[test]
fn transaction_gc_prunes_as_writers_write() {
    for storage in VersionStorage::ALL {
        let ((held, _), (after, entries)) = run(Gc::Transaction, storage);
        // While a multi-version reader is open every version above its timestamp is kept (the
        // retention rule is conservative: `Retention::needed`); once it ends, the next update
        // that keeps a version prunes the chain, to the few versions that snapshot boundaries
        // (every two 1 ms epochs here) may still need.
        assert!(held >= UPDATES as usize / 2, "{storage}: chain of {held} with the reader open");
        assert!(after < 16, "{storage}: chain of {after} after the reader ended");
        assert!(entries <= after + 2, "{storage}: {entries} entries for {after} older versions");
    }
}

#[test]
fn tuple_vacuum_prunes_in_the_background() {
    for storage in VersionStorage::ALL {
        let ((held, held_entries), (after, entries)) = run(Gc::TupleVacuum, storage);
        assert!(held >= UPDATES as usize / 2, "{storage}: chain of {held}: writers pruned");
        assert!(held_entries > UPDATES as usize / 2, "{storage}: {held_entries} entries");
        assert!(after <= 1, "{storage}: chain of {after} a second after the reader ended");
        assert!(entries <= 2, "{storage}: {entries} secondary entries left after the vacuum");
    }
}

#[test]
fn tuple_cooperative_readers_prune_what_they_pass() {
    let storage = VersionStorage::AppendO2n;
    let ((held, held_entries), (after, entries)) = run(Gc::TupleCooperative, storage);
    assert!(held >= UPDATES as usize / 2, "chain of {held}: writers pruned");
    assert!(held_entries > UPDATES as usize / 2, "{held_entries} entries with the reader open");
    assert!(after <= 1, "chain of {after} after readers passed it");
    assert!(entries <= 2, "{entries} secondary entries left after the readers' cleaning");
}

/// Records that no reader passes again (Hekaton's dusty corners) are swept by the vacuum under
/// cooperative cleaning; without the sweep they keep their versions.
#[test]
fn the_cooperative_sweep_cleans_what_no_reader_passes() {
    for sweep_ms in [0, 1] {
        let (db, table) = open_sweeping(Gc::TupleCooperative, VersionStorage::AppendO2n, sweep_ms);
        let (mut writer, mut reader) = updates_under_a_reader(&db, &table);
        reader.commit().unwrap();
        // Updates only, no reads of row 0 from here on.
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut after = chain_and_entries(&db, &table);
        while Instant::now() < deadline && after.0 > 1 {
            writer
                .transaction(Isolation::Serializable, |txn| {
                    txn.update(&table, &key(0), &row_of(UPDATES + 1))
                })
                .unwrap();
            std::thread::sleep(Duration::from_millis(10));
            after = chain_and_entries(&db, &table);
        }
        let stats = db.vacuum_stats();
        if sweep_ms == 0 {
            assert!(after.0 >= UPDATES as usize / 2, "chain of {} with no sweep", after.0);
            assert_eq!(stats, Default::default());
        } else {
            assert!(after.0 <= 1, "chain of {} after the sweeps", after.0);
            assert!(stats.passes > 0 && stats.versions > 0, "{stats:?}");
        }
    }
}

#[test]
fn no_gc_keeps_every_version() {
    for storage in VersionStorage::ALL {
        let ((held, _), (after, entries)) = run(Gc::None, storage);
        assert!(held >= UPDATES as usize / 2, "{storage}: chain of {held}: something pruned");
        assert!(after >= held, "{storage}: chain fell from {held} to {after}, nothing pruning");
        assert!(entries > UPDATES as usize / 2, "{storage}: {entries} secondary entries");
    }
}

#[test]
fn version_storages_parse_and_unknown_ones_are_refused_with_the_choices() {
    for storage in VersionStorage::ALL {
        assert_eq!(storage.name().parse::<VersionStorage>(), Ok(storage));
    }
    let refused = "n2o".parse::<VersionStorage>().unwrap_err();
    assert!(refused.contains("append-n2o") && refused.contains("delta"), "{refused}");
}

#[test]
fn cooperative_cleaning_needs_oldest_to_newest_chains() {
    for gc in Gc::ALL {
        assert_eq!(gc.name().parse::<Gc>(), Ok(gc));
    }
    for storage in [VersionStorage::TimeTravel, VersionStorage::AppendN2o, VersionStorage::Delta] {
        let config =
            Config { gc: Gc::TupleCooperative, version_storage: storage, ..Config::default() };
        let refused = Database::open(config).unwrap_err().to_string();
        assert!(
            refused.contains("append-o2n") && refused.contains("oldest-to-newest"),
            "{refused}"
        );
    }
    let o2n = VersionStorage::AppendO2n;
    assert!(
        Database::open(Config {
            gc: Gc::TupleCooperative,
            version_storage: o2n,
            ..Config::default()
        })
        .is_ok()
    );
    // The vacuum takes a worker slot of its own.
    let alone = Config { gc: Gc::TupleVacuum, workers_max: 1, ..Config::default() };
    assert!(Database::open(alone).unwrap_err().to_string().contains("vacuum"));
}

/// The head of row `k`, as an address (0 when the index has no entry for it).
fn head_of(db: &Database, table: &TableRef, k: u64) -> u64 {
    let mut worker = db.worker().unwrap();
    worker.pinned(|pin, _| table.primary.get(&key(k), pin).value.unwrap_or(0)).unwrap()
}

/// A transaction the ticker kicked cleans none of the records it read: once it is kicked,
/// reclamation no longer waits for it, and a record it read may have been deleted, unlinked
/// and freed, its memory holding another record by the time the transaction rolls back.
/// Here the head of a row the kicked transaction read (and noted, its chain holding an expired
/// version) is unlinked, freed and taken by a new row; the rollback must leave that row alone.
#[test]
fn a_kicked_transaction_cleans_none_of_the_records_it_read() {
    let db = Database::open(Config {
        epoch_interval_ms: 0,
        snapshot_interval_epochs: 1,
        idle_transaction_epochs_max: 2,
        gc: Gc::TupleCooperative,
        version_storage: VersionStorage::AppendO2n,
        cooperative_sweep_interval_ms: 0,
        ..Config::default()
    })
    .unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let advance = |epochs: usize| (0..epochs).for_each(|_| db.advance_epoch());
    let row = |fill: u8| [fill; 16];
    let mut writer = db.worker().unwrap();
    writer
        .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), &row(1)))
        .unwrap();
    advance(1);
    writer
        .transaction(Isolation::Serializable, |txn| txn.update(&table, &key(1), &row(2)))
        .unwrap();
    // No snapshot reads the first version any more: a reader passing it notes the record.
    advance(3);
    let noted = head_of(&db, &table, 1);
    let mut reader = db.worker().unwrap();
    reader.begin(Isolation::Serializable).unwrap();
    assert_eq!(reader.txn().unwrap().get(&table, &key(1)).unwrap(), Some(&row(2)[..]));
    // The reader sits idle while the row is deleted; the ticker kicks it.
    writer.transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(1))).unwrap();
    advance(5);
    assert_eq!(db.epochs().kicked_total(), 1);
    // The deleter's next transaction unlinks the record and retires its head; once the
    // reclaim bound passes, the one after frees it into the deleter's arena, whose next head
    // of that size it becomes.
    let nothing = |txn: &mut engram_engine::Txn<'_>| txn.get(&table, &key(99)).map(|_| ());
    writer.transaction(Isolation::Serializable, nothing).unwrap();
    assert_eq!(head_of(&db, &table, 1), 0, "the deleted record is unlinked");
    advance(2);
    writer.transaction(Isolation::Serializable, nothing).unwrap();
    writer
        .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(2), &row(3)))
        .unwrap();
    assert_eq!(head_of(&db, &table, 2), noted, "the new row took the freed head");
    let before = db.vacuum_stats();
    reader.rollback().unwrap();
    assert_eq!(db.vacuum_stats(), before, "the kicked transaction's rollback cleaned a record");
    let now = writer.transaction(Isolation::Serializable, |txn| {
        Ok(txn.get(&table, &key(2))?.map(<[u8]>::to_vec))
    });
    assert_eq!(now.unwrap(), Some(row(3).to_vec()));
}
