//! Abort diagnostics (`cc/conflict.rs`): an abort names the table, the index and the key it
//! happened on and the commit that caused it, under every protocol, and the database counts
//! conflicts per site and keeps the most contended keys.

use engram_engine::{
    AbortReason, Config, ConflictSite, Database, Direction, Error, Isolation, KeyBuilder, Protocol,
    TableRef, TableSpec, Worker,
};
use std::ops::Bound;
use std::sync::Arc;

fn key(i: u64) -> Vec<u8> {
    KeyBuilder::new().u64(i).finish()
}

/// Rows are the key followed by a counter, so that the row-to-key hook can find the key.
fn row(i: u64, n: u8) -> Vec<u8> {
    let mut row = key(i);
    row.push(n);
    row
}

fn open(protocol: Protocol) -> (Database, TableRef) {
    let config = Config { protocol, epoch_interval_ms: 0, ..Config::default() };
    let db = Database::open(config).unwrap();
    let table = db.create_table(TableSpec::new("accounts")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            (1..=4).try_for_each(|i| txn.insert(&table, &key(i), &row(i, 0)))
        })
        .unwrap();
    db.set_row_keys(Arc::new(|_, row: &[u8], out: &mut Vec<u8>| {
        out.extend_from_slice(&row[..row.len() - 1]);
        true
    }));
    (db, table)
}

fn bump(worker: &mut Worker, table: &TableRef, i: u64) -> u64 {
    worker
        .transaction(Isolation::Serializable, |txn| txn.update(table, &key(i), &row(i, 1)))
        .unwrap();
    worker.last_commit().tid.as_u64()
}

fn aborted(result: engram_engine::Result<impl std::fmt::Debug>) -> AbortReason {
    match result {
        Err(Error::Aborted(reason)) => reason,
        other => panic!("expected an abort, got {other:?}"),
    }
}

#[test]
fn a_read_that_changed_names_its_key_and_the_commit_that_changed_it() {
    let (db, table) = open(Protocol::Silo);
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    reader.begin(Isolation::Serializable).unwrap();
    reader.txn().unwrap().get(&table, &key(2)).unwrap();
    reader.txn().unwrap().update(&table, &key(3), &row(3, 9)).unwrap();
    let by = bump(&mut writer, &table, 2);
    assert_eq!(aborted(reader.commit()), AbortReason::ReadValidation);
    let conflict = reader.last_conflict().expect("diagnosed").clone();
    assert_eq!(conflict.reason, AbortReason::ReadValidation);
    assert_eq!(conflict.table, Some(table.id()));
    assert_eq!(conflict.index, None);
    assert_eq!(conflict.key, key(2));
    assert_eq!(conflict.by.map(|tid| tid.as_u64()), Some(by));
    // A new transaction forgets it; a rollback asked for leaves none.
    reader.begin(Isolation::Serializable).unwrap();
    assert!(reader.last_conflict().is_none());
    reader.rollback().unwrap();
    assert!(reader.last_conflict().is_none());
}

#[test]
fn without_a_row_to_key_hook_a_read_conflict_still_names_its_table() {
    let config = Config { epoch_interval_ms: 0, ..Config::default() };
    let db = Database::open(config).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    writer.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"a")).unwrap();
    reader.begin(Isolation::Serializable).unwrap();
    reader.txn().unwrap().get(&table, &key(1)).unwrap();
    writer.transaction(Isolation::Serializable, |txn| txn.update(&table, &key(1), b"b")).unwrap();
    assert_eq!(aborted(reader.commit()), AbortReason::ReadValidation);
    let conflict = reader.last_conflict().unwrap();
    assert_eq!((conflict.table, conflict.key.as_slice()), (Some(table.id()), &[][..]));
    assert!(conflict.by.is_some());
}

#[test]
fn a_written_row_deleted_first_names_its_key() {
    let (db, table) = open(Protocol::Silo);
    let (mut first, mut second) = (db.worker().unwrap(), db.worker().unwrap());
    first.begin(Isolation::ReadCommitted).unwrap();
    first.txn().unwrap().update(&table, &key(4), &row(4, 7)).unwrap();
    second.transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(4))).unwrap();
    assert_eq!(aborted(first.commit()), AbortReason::WriteConflict);
    let conflict = first.last_conflict().unwrap();
    assert_eq!((conflict.table, conflict.key.clone()), (Some(table.id()), key(4)));
}

#[test]
fn a_phantom_names_the_index_scanned() {
    let (db, table) = open(Protocol::Silo);
    let (mut scanner, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    scanner.begin(Isolation::Serializable).unwrap();
    let low = key(10);
    let seen = scanner
        .txn()
        .unwrap()
        .scan(
            &table,
            Bound::Included(&low[..]),
            Bound::Unbounded,
            Direction::Forward,
            10,
            |_, _| true,
        )
        .unwrap();
    assert_eq!(seen, 0);
    scanner.txn().unwrap().update(&table, &key(1), &row(1, 5)).unwrap();
    writer
        .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(11), &row(11, 0)))
        .unwrap();
    assert_eq!(aborted(scanner.commit()), AbortReason::NodeValidation);
    let conflict = scanner.last_conflict().unwrap();
    assert_eq!((conflict.table, conflict.index), (Some(table.id()), None));
    assert!(conflict.key.is_empty(), "a range has no one key");
}

#[test]
fn an_insert_racing_another_names_the_key_and_a_poisoned_rollback_is_counted() {
    let (db, table) = open(Protocol::Silo);
    let (mut first, mut second) = (db.worker().unwrap(), db.worker().unwrap());
    first.begin(Isolation::Serializable).unwrap();
    first.txn().unwrap().insert(&table, &key(20), &row(20, 0)).unwrap();
    second.begin(Isolation::Serializable).unwrap();
    let racing = second.txn().unwrap().insert(&table, &key(20), &row(20, 0));
    assert_eq!(aborted(racing), AbortReason::InsertConflict);
    let before = db.stats().aborts_for(AbortReason::InsertConflict);
    second.rollback().unwrap();
    assert_eq!(db.stats().aborts_for(AbortReason::InsertConflict), before + 1);
    let conflict = second.last_conflict().unwrap();
    assert_eq!((conflict.table, conflict.key.clone()), (Some(table.id()), key(20)));
    first.commit().unwrap();
}

/// The locking protocols abort on the record they could not lock.
#[test]
fn under_every_protocol_a_write_write_conflict_names_its_key() {
    for protocol in Protocol::ALL {
        let (db, table) = open(protocol);
        let (mut first, mut second) = (db.worker().unwrap(), db.worker().unwrap());
        first.begin(Isolation::Serializable).unwrap();
        second.begin(Isolation::Serializable).unwrap();
        first.txn().unwrap().get(&table, &key(3)).unwrap();
        second.txn().unwrap().get(&table, &key(3)).unwrap();
        let a = first.txn().unwrap().update(&table, &key(3), &row(3, 1)).map(|_| ());
        let b = second.txn().unwrap().update(&table, &key(3), &row(3, 2)).map(|_| ());
        let (a, b) = (a.and_then(|()| first.commit().map(|_| ())), b);
        let b = b.and_then(|()| second.commit().map(|_| ()));
        let (loser, result) = match (&a, &b) {
            (Ok(()), Err(_)) => (&mut second, b),
            (Err(_), Ok(())) => (&mut first, a),
            other => panic!("{protocol:?}: one must lose, got {other:?}"),
        };
        if let Err(Error::Aborted(_)) = result {
            if loser.txn().is_ok() {
                loser.rollback().unwrap();
            }
            let conflict = loser.last_conflict().unwrap_or_else(|| panic!("{protocol:?}"));
            assert_eq!(conflict.table, Some(table.id()), "{protocol:?}");
            assert_eq!(conflict.key, key(3), "{protocol:?} {conflict:?}");
        } else {
            panic!("{protocol:?}: {result:?}");
        }
    }
}

#[test]
fn conflicts_are_counted_per_site_and_the_hottest_key_comes_first() {
    let (db, table) = open(Protocol::Silo);
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    for round in 0..6 {
        let i = if round < 4 { 1 } else { 2 };
        reader.begin(Isolation::Serializable).unwrap();
        reader.txn().unwrap().get(&table, &key(i)).unwrap();
        reader.txn().unwrap().update(&table, &key(3), &row(3, 9)).unwrap();
        bump(&mut writer, &table, i);
        aborted(reader.commit());
    }
    let stats = db.conflict_stats();
    let site =
        ConflictSite { table: Some(table.id()), index: None, reason: AbortReason::ReadValidation };
    assert_eq!(stats.counts, vec![(site, 6)]);
    let keys: Vec<_> = stats.hot_keys.iter().map(|hot| (hot.key.clone(), hot.count)).collect();
    assert_eq!(keys, vec![(key(1), 4), (key(2), 2)]);
    assert_eq!(stats.hottest_at(site).unwrap().key, key(1));
}
