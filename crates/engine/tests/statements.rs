//! Watched statements (`cc/txn/statement.rs`): a statement that read part of another
//! transaction is told to run again (or its transaction aborts), one that read one state is
//! not, the epoch shortcut spares the check only where nothing read is newer than the last
//! check, and a statement can finish at a snapshot.

use engram_engine::{
    AbortReason, Config, Database, Error, Isolation, KeyBuilder, StatementCheck, TableRef,
    TableSpec, Worker,
};

fn manual_epochs() -> Config {
    Config { epoch_interval_ms: 0, snapshot_interval_epochs: 1, ..Config::default() }
}

fn key(i: u64) -> Vec<u8> {
    KeyBuilder::new().u64(i).finish()
}

fn setup() -> (Database, TableRef) {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.insert(&table, &key(1), b"50")?;
            txn.insert(&table, &key(2), b"50")
        })
        .unwrap();
    (db, table)
}

/// Moves 10 from key 1 to key 2 in its own transaction.
fn transfer(worker: &mut Worker, table: &TableRef) {
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.update(table, &key(1), b"40")?;
            txn.update(table, &key(2), b"60")?;
            Ok(())
        })
        .unwrap();
}

fn read(worker: &mut Worker, table: &TableRef, k: u64) -> Vec<u8> {
    worker.txn().unwrap().get(table, &key(k)).unwrap().unwrap().to_vec()
}

#[test]
fn a_statement_that_read_half_a_transfer_runs_again_at_read_committed() {
    let (db, table) = setup();
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    reader.begin(Isolation::ReadCommitted).unwrap();
    reader.txn().unwrap().watch_statement().unwrap();
    assert_eq!(read(&mut reader, &table, 1), b"50");
    transfer(&mut writer, &table);
    assert_eq!(read(&mut reader, &table, 2), b"60");
    // 50 + 60: the statement must not stand.
    let mut txn = reader.txn().unwrap();
    assert_eq!(txn.check_statement(true).unwrap(), StatementCheck::Retry);
    txn.restart_statement().unwrap();
    drop(txn);
    assert_eq!(read(&mut reader, &table, 1), b"40");
    assert_eq!(read(&mut reader, &table, 2), b"60");
    let mut txn = reader.txn().unwrap();
    assert_eq!(txn.check_statement(true).unwrap(), StatementCheck::Consistent);
    txn.end_statement();
    drop(txn);
    reader.commit().unwrap();
}

#[test]
fn at_serializable_a_later_statement_that_sees_a_change_aborts_at_once() {
    let (db, table) = setup();
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    reader.begin(Isolation::Serializable).unwrap();
    reader.txn().unwrap().watch_statement().unwrap();
    assert_eq!(read(&mut reader, &table, 1), b"50");
    let mut txn = reader.txn().unwrap();
    assert_eq!(txn.check_statement(true).unwrap(), StatementCheck::Consistent);
    txn.end_statement();
    txn.watch_statement().unwrap();
    drop(txn);
    // The writer commits in a later epoch than the first check's, so no shortcut applies.
    db.advance_epoch();
    transfer(&mut writer, &table);
    assert_eq!(read(&mut reader, &table, 2), b"60");
    let mut txn = reader.txn().unwrap();
    let error = txn.check_statement(true).unwrap_err();
    assert_eq!(error, Error::Aborted(AbortReason::ReadValidation));
    drop(txn);
    assert!(reader.rollback().is_ok());
}

#[test]
fn the_epoch_shortcut_spares_only_statements_that_saw_nothing_newer() {
    let (db, table) = setup();
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    db.advance_epoch();
    db.advance_epoch();
    reader.begin(Isolation::Serializable).unwrap();
    reader.txn().unwrap().watch_statement().unwrap();
    assert_eq!(read(&mut reader, &table, 1), b"50");
    // Rows from before the statement's epoch: no pass over the reads is needed, and none
    // could find a change, since a commit that changed key 1 now would be in this epoch.
    let mut txn = reader.txn().unwrap();
    assert_eq!(txn.check_statement(true).unwrap(), StatementCheck::Consistent);
    txn.end_statement();
    txn.watch_statement().unwrap();
    drop(txn);
    // A transfer in the same epoch as the check: its rows are not older, so the next
    // statement, which reads one of them, is checked in full and fails.
    transfer(&mut writer, &table);
    assert_eq!(read(&mut reader, &table, 2), b"60");
    let error = reader.txn().unwrap().check_statement(true).unwrap_err();
    assert_eq!(error, Error::Aborted(AbortReason::ReadValidation));
    assert!(reader.rollback().is_ok());
}

#[test]
fn a_statement_can_finish_at_a_snapshot_when_its_transaction_wrote_nothing() {
    let (db, table) = setup();
    let (mut reader, mut writer) = (db.worker().unwrap(), db.worker().unwrap());
    db.advance_epoch();
    db.advance_epoch();
    reader.begin(Isolation::ReadCommitted).unwrap();
    let mut txn = reader.txn().unwrap();
    txn.watch_statement().unwrap();
    assert!(txn.snapshot_statement().unwrap());
    drop(txn);
    // Nothing committed after the snapshot is seen, the transfer included.
    transfer(&mut writer, &table);
    assert_eq!(read(&mut reader, &table, 1), b"50");
    assert_eq!(read(&mut reader, &table, 2), b"50");
    let mut txn = reader.txn().unwrap();
    assert_eq!(txn.check_statement(false).unwrap(), StatementCheck::Consistent);
    txn.end_statement();
    // The next statement reads current rows again, and can write.
    assert_eq!(txn.get(&table, &key(1)).unwrap().unwrap(), b"40");
    txn.update(&table, &key(1), b"41").unwrap();
    // With a write of its own, a statement may no longer read at a snapshot.
    txn.watch_statement().unwrap();
    assert!(!txn.snapshot_statement().unwrap());
    txn.end_statement();
    drop(txn);
    reader.commit().unwrap();
}
