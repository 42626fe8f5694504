//! Transaction behaviour, one feature at a time.

use engram_engine::{
    AbortReason, Config, Database, Direction, Error, IndexSpec, Isolation, KeyBuilder, Protocol,
    TableRef, TableSpec,
};
use std::ops::Bound;

fn manual_epochs() -> Config {
    Config { epoch_interval_ms: 0, snapshot_interval_epochs: 1, ..Config::default() }
}

fn key(i: u64) -> Vec<u8> {
    KeyBuilder::new().u64(i).finish()
}

fn get(db: &Database, table: &TableRef, k: u64) -> Option<Vec<u8>> {
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            Ok(txn.get(table, &key(k))?.map(<[u8]>::to_vec))
        })
        .unwrap()
}

#[test]
fn rows_round_trip_through_commits() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.insert(&table, &key(1), b"one")?;
            txn.insert(&table, &key(2), b"two")?;
            txn.put(&table, &key(3), &[7u8; 3000])?; // longer than a head holds inline
            Ok(())
        })
        .unwrap();
    assert_eq!(get(&db, &table, 1).as_deref(), Some(&b"one"[..]));
    assert_eq!(get(&db, &table, 3).map(|v| v.len()), Some(3000));
    worker
        .transaction(Isolation::Serializable, |txn| {
            assert!(txn.update(&table, &key(1), b"uno, now longer than the first value")?);
            assert!(txn.delete(&table, &key(2))?);
            assert!(!txn.delete(&table, &key(9))?);
            assert!(!txn.update(&table, &key(9), b"x")?);
            txn.put(&table, &key(3), b"small again")?;
            Ok(())
        })
        .unwrap();
    assert_eq!(get(&db, &table, 1).as_deref(), Some(&b"uno, now longer than the first value"[..]));
    assert_eq!(get(&db, &table, 2), None);
    assert_eq!(get(&db, &table, 3).as_deref(), Some(&b"small again"[..]));
    // A deleted key can be inserted again before its head is collected.
    worker
        .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(2), b"deux"))
        .unwrap();
    assert_eq!(get(&db, &table, 2).as_deref(), Some(&b"deux"[..]));
    // Three writing transactions and six reads through `get`.
    assert_eq!(db.stats().commits, 9);
}

#[test]
fn a_transaction_reads_its_own_writes() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"a")).unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.update(&table, &key(1), b"b")?;
            assert_eq!(txn.get(&table, &key(1))?, Some(&b"b"[..]));
            txn.insert(&table, &key(2), b"new")?;
            assert_eq!(txn.get(&table, &key(2))?, Some(&b"new"[..]));
            // Insert, update and delete of the transaction's own insert.
            txn.update(&table, &key(2), b"newer")?;
            assert_eq!(txn.get(&table, &key(2))?, Some(&b"newer"[..]));
            assert!(txn.delete(&table, &key(2))?);
            assert_eq!(txn.get(&table, &key(2))?, None);
            txn.insert(&table, &key(2), b"again")?;
            // Delete then insert of a committed row is an update.
            assert!(txn.delete(&table, &key(1))?);
            assert_eq!(txn.get(&table, &key(1))?, None);
            txn.insert(&table, &key(1), b"c")?;
            let mut seen = Vec::new();
            txn.scan(
                &table,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |k, v| {
                    seen.push((k.to_vec(), v.to_vec()));
                    true
                },
            )?;
            assert_eq!(seen, vec![(key(1), b"c".to_vec()), (key(2), b"again".to_vec())]);
            Ok(())
        })
        .unwrap();
    assert_eq!(get(&db, &table, 1).as_deref(), Some(&b"c"[..]));
    assert_eq!(get(&db, &table, 2).as_deref(), Some(&b"again"[..]));
}

#[test]
fn aborted_inserts_leave_nothing_behind() {
    let db = Database::open(manual_epochs()).unwrap();
    let by_value = IndexSpec::new("by_value", false, |row, out| {
        out.extend_from_slice(row);
        true
    });
    let table = db.create_table(TableSpec::new("t").index(by_value)).unwrap();
    let mut worker = db.worker().unwrap();
    let result: Result<(), Error> = worker.transaction(Isolation::Serializable, |txn| {
        txn.insert(&table, &key(1), b"x")?;
        txn.insert(&table, &key(2), b"y")?;
        Err(Error::InvalidConfig("the caller gives up".into()))
    });
    assert!(result.is_err());
    assert_eq!(get(&db, &table, 1), None);
    worker
        .transaction(Isolation::Serializable, |txn| {
            let found = txn.scan_index(
                &table,
                0,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |_, _| true,
            )?;
            assert_eq!(found, 0, "no secondary entry survives the abort");
            Ok(())
        })
        .unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .pinned(|pin, _| {
            assert_eq!(
                table.primary.get(&key(1), pin).value,
                None,
                "the fresh head left the index"
            );
            assert_eq!(table.secondaries[0].tree.get(b"x", pin).value, None);
        })
        .unwrap();
}

#[test]
fn duplicates_are_errors_not_aborts() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"a")).unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            let duplicate = txn.insert(&table, &key(1), b"b");
            assert!(matches!(duplicate, Err(Error::DuplicateKey { .. })));
            assert_eq!(duplicate.unwrap_err().sqlstate(), "23505");
            assert!(!txn.is_aborted(), "a failed insert changes nothing and can be survived");
            txn.insert(&table, &key(2), b"b")
        })
        .unwrap();
    assert_eq!(get(&db, &table, 2).as_deref(), Some(&b"b"[..]));
}

fn customer_table(db: &Database) -> TableRef {
    // Rows are "name:city"; index 0 is non-unique by city, index 1 is unique by name.
    let field = |row: &[u8], which: usize| row.split(|b| *b == b':').nth(which).map(<[u8]>::to_vec);
    let by_city = IndexSpec::new("by_city", false, move |row, out| {
        field(row, 1).map(|city| out.extend_from_slice(&city)).is_some()
    });
    let by_name = IndexSpec::new("by_name", true, move |row, out| {
        field(row, 0).map(|name| out.extend_from_slice(&name)).is_some()
    });
    db.create_table(TableSpec::new("customers").index(by_city).index(by_name)).unwrap()
}

fn by_index(
    db: &Database,
    table: &TableRef,
    index: usize,
    value: &[u8],
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            let mut rows = Vec::new();
            txn.scan_index(
                table,
                index,
                Bound::Included(value),
                Bound::Included(value),
                Direction::Forward,
                usize::MAX,
                |pk, row| {
                    rows.push((pk.to_vec(), row.to_vec()));
                    true
                },
            )?;
            Ok(rows)
        })
        .unwrap()
}

#[test]
fn secondary_indexes_follow_rows() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = customer_table(&db);
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.insert(&table, &key(1), b"ann:oslo")?;
            txn.insert(&table, &key(2), b"bob:oslo")?;
            txn.insert(&table, &key(3), b"cid:rome")
        })
        .unwrap();
    let oslo = by_index(&db, &table, 0, b"oslo");
    assert_eq!(oslo, vec![(key(1), b"ann:oslo".to_vec()), (key(2), b"bob:oslo".to_vec())]);
    // Unique index: a second "ann" fails, and changes nothing.
    let duplicate =
        worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(4), b"ann:rome"));
    assert!(
        matches!(duplicate, Err(Error::DuplicateKey { index: Some(ref name), .. }) if name == "by_name")
    );
    assert_eq!(get(&db, &table, 4), None);
    // Moving a row to another city moves it between index keys, visibly to its own transaction.
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.update(&table, &key(2), b"bob:rome")?;
            let mut rome = Vec::new();
            txn.scan_index(
                &table,
                0,
                Bound::Included(b"rome"),
                Bound::Included(b"rome"),
                Direction::Forward,
                usize::MAX,
                |pk, _| {
                    rome.push(pk.to_vec());
                    true
                },
            )?;
            assert_eq!(rome, vec![key(2), key(3)], "own update merged into the index scan");
            let mut oslo = Vec::new();
            txn.scan_index(
                &table,
                0,
                Bound::Included(b"oslo"),
                Bound::Included(b"oslo"),
                Direction::Forward,
                usize::MAX,
                |pk, _| {
                    oslo.push(pk.to_vec());
                    true
                },
            )?;
            assert_eq!(oslo, vec![key(1)]);
            Ok(())
        })
        .unwrap();
    assert_eq!(by_index(&db, &table, 0, b"oslo").len(), 1);
    assert_eq!(by_index(&db, &table, 0, b"rome").len(), 2);
    // Renaming into a taken unique name fails at commit; swapping two names in one go works.
    let taken = worker.transaction(Isolation::Serializable, |txn| {
        txn.update(&table, &key(3), b"ann:rome").map(|_| ())
    });
    assert!(matches!(taken, Err(Error::DuplicateKey { .. })), "{taken:?}");
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.update(&table, &key(1), b"tmp:oslo")?;
            txn.update(&table, &key(3), b"ann:rome")?;
            Ok(())
        })
        .unwrap();
    assert_eq!(by_index(&db, &table, 1, b"ann"), vec![(key(3), b"ann:rome".to_vec())]);
    // Deleted rows disappear from every index; their entries are unlinked once no snapshot
    // can read them.
    worker
        .transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(3)).map(|_| ()))
        .unwrap();
    assert!(by_index(&db, &table, 1, b"ann").is_empty());
    for _ in 0..4 {
        db.advance_epoch();
    }
    worker
        .transaction(Isolation::Serializable, |txn| txn.get(&table, &key(1)).map(|_| ()))
        .unwrap();
    worker
        .pinned(|pin, _| {
            assert_eq!(
                table.primary.get(&key(3), pin).value,
                None,
                "the deleted head was unlinked"
            );
        })
        .unwrap();
    let mut entries = 0;
    worker
        .pinned(|pin, _| {
            struct Count<'a>(&'a mut usize);
            impl engram_engine::index::ScanVisitor for Count<'_> {
                fn leaf(&mut self, _: engram_engine::index::LeafVersion) {}
                fn entry(&mut self, _: &[u8], _: u64) -> bool {
                    *self.0 += 1;
                    true
                }
            }
            for index in table.secondaries.iter() {
                index.tree.scan(
                    Bound::Unbounded,
                    Bound::Unbounded,
                    Direction::Forward,
                    pin,
                    &mut Default::default(),
                    &mut Count(&mut entries),
                );
            }
        })
        .unwrap();
    assert_eq!(entries, 4, "two rows left, one entry each in two indexes: no stale entries");
}

#[test]
fn snapshots_see_a_fixed_past() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut writer = db.worker().unwrap();
    writer.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"v1")).unwrap();
    for _ in 0..3 {
        db.advance_epoch();
    }
    let mut reader = db.worker().unwrap();
    reader.begin(Isolation::Snapshot).unwrap();
    let seen_first = reader.txn().unwrap().get(&table, &key(1)).unwrap().map(<[u8]>::to_vec);
    assert_eq!(seen_first.as_deref(), Some(&b"v1"[..]));
    for round in 2..6u8 {
        writer
            .transaction(Isolation::Serializable, |txn| {
                txn.update(&table, &key(1), format!("v{round}").as_bytes())?;
                txn.insert(&table, &key(round as u64 + 10), b"later")
            })
            .unwrap();
        db.advance_epoch();
    }
    {
        let mut txn = reader.txn().unwrap();
        assert_eq!(
            txn.get(&table, &key(1)).unwrap(),
            Some(&b"v1"[..]),
            "the snapshot does not move"
        );
        let rows = txn
            .scan(
                &table,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |_, _| true,
            )
            .unwrap();
        assert_eq!(rows, 1, "rows inserted after the snapshot are invisible");
        assert_eq!(txn.insert(&table, &key(99), b"x"), Err(Error::ReadOnly));
    }
    reader.commit().unwrap();
    let now = reader
        .transaction(Isolation::Snapshot, |txn| Ok(txn.get(&table, &key(1))?.map(<[u8]>::to_vec)))
        .unwrap();
    assert_eq!(now.as_deref(), Some(&b"v5"[..]), "a new snapshot sees the stable past");
}

#[test]
fn sessions_report_misuse_as_errors() {
    let db = Database::open(Config {
        epoch_interval_ms: 0,
        idle_transaction_epochs_max: 3,
        ..manual_epochs()
    })
    .unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    assert!(matches!(worker.txn(), Err(Error::NoTransaction)));
    assert_eq!(worker.commit(), Err(Error::NoTransaction));
    worker.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(worker.begin(Isolation::ReadCommitted), Err(Error::TransactionOpen));
    {
        let mut txn = worker.txn().unwrap();
        assert!(matches!(txn.insert(&table, &[0u8; 300], b"v"), Err(Error::KeyTooLong { .. })));
        assert!(matches!(
            txn.insert(&table, b"k", &vec![0u8; 2 << 20]),
            Err(Error::ValueTooLong { .. })
        ));
        txn.insert(&table, b"k", b"v").unwrap();
    }
    worker.rollback().unwrap();
    assert!(matches!(worker.txn(), Err(Error::NoTransaction)));
    // An interactive transaction left idle is given up by the ticker; its insert is undone.
    worker.begin(Isolation::Serializable).unwrap();
    worker.txn().unwrap().insert(&table, b"idle", b"v").unwrap();
    for _ in 0..10 {
        db.advance_epoch();
    }
    assert_eq!(db.epochs().kicked_total(), 1);
    assert_eq!(worker.txn().err(), Some(Error::Aborted(AbortReason::IdleTimeout)));
    assert!(!worker.in_transaction());
    assert_eq!(db.stats().aborts_for(AbortReason::IdleTimeout), 1);
    let left = worker
        .transaction(Isolation::Serializable, |txn| Ok(txn.get(&table, b"idle")?.is_some()))
        .unwrap();
    assert!(!left, "the kicked transaction's insert is gone");
    // The key is free for others.
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, b"idle", b"w")).unwrap();
}

#[test]
fn concurrent_inserts_of_one_key_commit_once() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut first = db.worker().unwrap();
    let mut second = db.worker().unwrap();
    first.begin(Isolation::ReadCommitted).unwrap();
    second.begin(Isolation::ReadCommitted).unwrap();
    first.txn().unwrap().insert(&table, b"k", b"first").unwrap();
    let clash = second.txn().unwrap().insert(&table, b"k", b"second");
    assert_eq!(clash, Err(Error::Aborted(AbortReason::InsertConflict)));
    assert!(second.commit().is_err(), "a poisoned transaction can only roll back");
    first.commit().unwrap();
    assert_eq!(get_raw(&db, &table, b"k").as_deref(), Some(&b"first"[..]));
}

fn get_raw(db: &Database, table: &TableRef, k: &[u8]) -> Option<Vec<u8>> {
    db.worker()
        .unwrap()
        .transaction(Isolation::Serializable, |txn| Ok(txn.get(table, k)?.map(<[u8]>::to_vec)))
        .unwrap()
}

#[test]
fn a_duplicate_caused_by_a_stale_read_is_a_serialization_failure() {
    // Both transactions read the next id, the first inserts it and commits; the second's insert
    // of the same id meets a committed row. At repeatable-read and serializable the second's
    // read is already stale, so it aborts (PostgreSQL's 40001); at read-committed nothing it read
    // is re-checked and the duplicate is the answer (23505).
    for (isolation, expected) in [
        (Isolation::Serializable, Error::Aborted(AbortReason::ReadValidation)),
        (Isolation::RepeatableRead, Error::Aborted(AbortReason::ReadValidation)),
    ] {
        let db = Database::open(manual_epochs()).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut setup = db.worker().unwrap();
        setup
            .transaction(Isolation::Serializable, |txn| txn.insert(&table, b"next", b"7"))
            .unwrap();
        let (mut first, mut second) = (db.worker().unwrap(), db.worker().unwrap());
        first.begin(isolation).unwrap();
        second.begin(isolation).unwrap();
        for worker in [&mut first, &mut second] {
            let mut txn = worker.txn().unwrap();
            let next = txn.get(&table, b"next").unwrap().unwrap().to_vec();
            txn.update(&table, b"next", b"8").unwrap();
            drop(txn);
            let _ = next;
        }
        first.txn().unwrap().insert(&table, b"order-7", b"x").unwrap();
        first.commit().unwrap();
        let clash = second.txn().unwrap().insert(&table, b"order-7", b"y");
        assert_eq!(clash, Err(expected.clone()), "{isolation:?}");
        assert!(second.commit().is_err());
    }
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| txn.insert(&table, b"order-7", b"x"))
        .unwrap();
    worker.begin(Isolation::ReadCommitted).unwrap();
    let clash = worker.txn().unwrap().insert(&table, b"order-7", b"y");
    assert!(matches!(clash, Err(Error::DuplicateKey { .. })));
    worker.rollback().unwrap();
}

#[test]
fn update_range_rewrites_the_rows_a_scan_finds() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            (0..10u64).try_for_each(|i| txn.insert(&table, &key(i), &[i as u8]))
        })
        .unwrap();
    let changed = worker
        .transaction(Isolation::Serializable, |txn| {
            txn.update(&table, &key(3), &[33])?; // an own write inside the range
            txn.update_range(
                &table,
                Bound::Included(&key(2)),
                Bound::Excluded(&key(8)),
                Direction::Forward,
                usize::MAX,
                |_, row, out| {
                    if row[0] % 2 == 1 {
                        out.push(row[0] + 100);
                        true
                    } else {
                        false
                    }
                },
            )
        })
        .unwrap();
    assert_eq!(changed, 3, "rows 3 (own value 33), 5 and 7");
    let rows: Vec<u8> = (0..10).map(|i| get(&db, &table, i).unwrap()[0]).collect();
    assert_eq!(rows, vec![0, 1, 2, 133, 4, 105, 6, 107, 8, 9]);
}

#[test]
fn update_with_never_loses_an_update() {
    // Two read-modify-writes of one counter interleave: the second to commit read a value the
    // first replaced, so it aborts at every isolation level, even read committed (where a get
    // followed by an update would lose the first increment).
    for isolation in [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable]
    {
        let db = Database::open(manual_epochs()).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut setup = db.worker().unwrap();
        setup.transaction(Isolation::Serializable, |txn| txn.insert(&table, b"n", &[0])).unwrap();
        let (mut first, mut second) = (db.worker().unwrap(), db.worker().unwrap());
        first.begin(isolation).unwrap();
        second.begin(isolation).unwrap();
        for worker in [&mut first, &mut second] {
            let found = worker
                .txn()
                .unwrap()
                .update_with(&table, b"n", |row| {
                    row[0] += 1;
                    true
                })
                .unwrap();
            assert!(found);
        }
        first.commit().unwrap();
        assert_eq!(
            second.commit(),
            Err(Error::Aborted(AbortReason::ReadValidation)),
            "{isolation:?}"
        );
        assert_eq!(get_raw(&db, &table, b"n"), Some(vec![1]), "{isolation:?}");
    }
}

#[test]
fn update_with_reports_whether_the_row_exists() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, b"n", &[7])).unwrap();
    let (exists, missing, counted) = worker
        .transaction(Isolation::Serializable, |txn| {
            // A closure that declines to write still finds the row, and writes nothing.
            let exists = txn.update_with(&table, b"n", |row| row[0] == 0)?;
            let missing = txn.update_with(&table, b"absent", |_| panic!("no row to change"))?;
            let counted = txn.update_many(&table, &[b"n", b"x"], |_, row| {
                row[0] += 1;
                true
            })?;
            Ok((exists, missing, counted))
        })
        .unwrap();
    assert!(exists);
    assert!(!missing);
    assert_eq!(counted, (1, 1), "one row existed and was written");
    assert_eq!(get_raw(&db, &table, b"n"), Some(vec![8]));
}

#[test]
fn get_many_reads_like_gets_and_guards_absent_keys() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            (0..100u64)
                .filter(|i| i % 3 != 0)
                .try_for_each(|i| txn.insert(&table, &key(i), &[i as u8]))
        })
        .unwrap();
    let keys: Vec<Vec<u8>> = (0..30u64).map(|i| key(i * 3 + 1)).chain([key(3)]).collect();
    let mut reader = db.worker().unwrap();
    reader.begin(Isolation::Serializable).unwrap();
    {
        let mut txn = reader.txn().unwrap();
        txn.update(&table, &key(4), &[44]).unwrap(); // an own write among the keys
        let mut seen = Vec::new();
        txn.get_many(&table, &keys, |index, row| seen.push((index, row.map(<[u8]>::to_vec))))
            .unwrap();
        let want: Vec<_> = (0..30u64)
            .map(|i| i * 3 + 1)
            .chain([3])
            .enumerate()
            .map(|(index, k)| match k {
                4 => (index, Some(vec![44])),
                3 => (index, None),
                k => (index, Some(vec![k as u8])),
            })
            .collect();
        assert_eq!(seen, want);
    }
    // Another transaction inserts the key found absent: a phantom for the reader, which aborts.
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(3), &[3])).unwrap();
    assert_eq!(reader.commit(), Err(Error::Aborted(AbortReason::NodeValidation)));
}

#[test]
fn scans_pass_over_deleted_records_and_an_own_insert_of_one_does_not_abort() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            (0..100).try_for_each(|i| txn.insert(&table, &key(i), b"row"))
        })
        .unwrap();
    // Epochs stand still, so the deleted records stay in the index, absent.
    worker
        .transaction(Isolation::Serializable, |txn| {
            (0..90).try_for_each(|i| txn.delete(&table, &key(i)).map(|_| ()))
        })
        .unwrap();
    let mut scanner = db.worker().unwrap();
    scanner.begin(Isolation::Serializable).unwrap();
    let (first, reads) = scanner
        .txn()
        .map(|mut txn| {
            let mut first = None;
            let count = txn
                .scan(&table, Bound::Unbounded, Bound::Unbounded, Direction::Forward, 1, |k, _| {
                    first = Some(k.to_vec());
                    true
                })
                .unwrap();
            assert_eq!(count, 1);
            (first, txn.recorded())
        })
        .unwrap();
    assert_eq!(first, Some(key(90)), "the oldest live row, past 90 deleted records");
    assert_eq!(reads, 1, "only the row read is recorded, not the deleted records passed over");
    // The scanning transaction brings one of the deleted records back itself: its own change
    // of the leaf does not fail its node validation.
    scanner.txn().unwrap().insert(&table, &key(5), b"again").unwrap();
    scanner.commit().unwrap();
    assert_eq!(get(&db, &table, 5), Some(b"again".to_vec()));
}

/// The statement `x = x + by` over 8-byte little-endian rows, as SQL's READ COMMITTED UPDATE
/// hands it to `Txn::update_recomputable`.
struct Add(u64);

impl engram_engine::Recompute for Add {
    fn recompute(&mut self, current: &[u8], out: &mut Vec<u8>) -> bool {
        let Ok(bytes) = <[u8; 8]>::try_from(current) else { return false };
        out.extend_from_slice(&(u64::from_le_bytes(bytes) + self.0).to_le_bytes());
        true
    }
}

/// One interactive `x = x + by` on `k` at `isolation`, left open.
fn add_open(
    worker: &mut engram_engine::Worker,
    table: &TableRef,
    k: u64,
    by: u64,
    isolation: Isolation,
) {
    try_add_open(worker, table, k, by, isolation).unwrap();
}

fn try_add_open(
    worker: &mut engram_engine::Worker,
    table: &TableRef,
    k: u64,
    by: u64,
    isolation: Isolation,
) -> engram_engine::Result<()> {
    worker.begin(isolation)?;
    let mut txn = worker.txn()?;
    let current = txn.get_for_update(table, &key(k))?.unwrap().to_vec();
    let value = u64::from_le_bytes(current.try_into().unwrap()) + by;
    assert!(txn.update_recomputable(
        table,
        &key(k),
        &value.to_le_bytes(),
        false,
        Box::new(Add(by))
    )?);
    Ok(())
}

fn value_of(db: &Database, table: &TableRef, k: u64) -> u64 {
    u64::from_le_bytes(get(db, table, k).unwrap().try_into().unwrap())
}

/// READ COMMITTED updates made with `update_recomputable` are applied again, at commit, to
/// the row another transaction committed in between (PostgreSQL's READ COMMITTED UPDATE);
/// once the transaction has read its own row, or at a level above READ COMMITTED, the later
/// committer aborts as before.
#[test]
fn read_committed_updates_are_recomputed_on_the_row_commit_locks() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut other = db.worker().unwrap();
    other
        .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(1), &0u64.to_le_bytes()))
        .unwrap();
    let mut worker = db.worker().unwrap();
    let commit_other = |other: &mut engram_engine::Worker, by: u64| {
        other
            .transaction(Isolation::ReadCommitted, |txn| {
                let v = u64::from_le_bytes(
                    txn.get_for_update(&table, &key(1))?.unwrap().try_into().unwrap(),
                );
                txn.update(&table, &key(1), &(v + by).to_le_bytes()).map(|_| ())
            })
            .unwrap();
    };

    add_open(&mut worker, &table, 1, 1, Isolation::ReadCommitted);
    commit_other(&mut other, 10);
    worker.commit().unwrap();
    assert_eq!(value_of(&db, &table, 1), 11, "both increments count");

    // Read back: the client saw 12, so commit may not make it 111.
    add_open(&mut worker, &table, 1, 1, Isolation::ReadCommitted);
    let seen = worker.txn().unwrap().get(&table, &key(1)).unwrap().unwrap().to_vec();
    assert_eq!(seen, 12u64.to_le_bytes());
    commit_other(&mut other, 100);
    assert_eq!(worker.commit(), Err(Error::Aborted(AbortReason::ReadValidation)));
    assert_eq!(value_of(&db, &table, 1), 111);

    // Written twice: only the last statement's row was computed from the first's.
    add_open(&mut worker, &table, 1, 1, Isolation::ReadCommitted);
    {
        let mut txn = worker.txn().unwrap();
        assert!(txn.update(&table, &key(1), &500u64.to_le_bytes()).unwrap());
    }
    commit_other(&mut other, 1);
    assert_eq!(worker.commit(), Err(Error::Aborted(AbortReason::ReadValidation)));

    // Two statements on the row: the second was computed from the first's row, so neither
    // can be applied again alone.
    add_open(&mut worker, &table, 1, 1, Isolation::ReadCommitted);
    {
        let mut txn = worker.txn().unwrap();
        let mine = u64::from_le_bytes(
            txn.get_for_update(&table, &key(1)).unwrap().unwrap().try_into().unwrap(),
        );
        let next = (mine + 1).to_le_bytes();
        assert!(txn.update_recomputable(&table, &key(1), &next, false, Box::new(Add(1))).unwrap());
    }
    commit_other(&mut other, 1);
    assert_eq!(worker.commit(), Err(Error::Aborted(AbortReason::ReadValidation)));

    // Above READ COMMITTED the statement is not applied again.
    for isolation in [Isolation::RepeatableRead, Isolation::Serializable] {
        add_open(&mut worker, &table, 1, 1, isolation);
        commit_other(&mut other, 1);
        assert_eq!(
            worker.commit(),
            Err(Error::Aborted(AbortReason::ReadValidation)),
            "{isolation:?}"
        );
    }
    assert_eq!(value_of(&db, &table, 1), 115);

    // A statement that cannot be applied to the new row aborts the commit.
    other
        .transaction(Isolation::Serializable, |txn| txn.put(&table, &key(2), &0u64.to_le_bytes()))
        .unwrap();
    add_open(&mut worker, &table, 2, 1, Isolation::ReadCommitted);
    other
        .transaction(Isolation::Serializable, |txn| {
            txn.update(&table, &key(2), b"short").map(|_| ())
        })
        .unwrap();
    assert_eq!(worker.commit(), Err(Error::Aborted(AbortReason::ReadValidation)));

    // A row deleted in between is a conflict, not a row made again.
    add_open(&mut worker, &table, 1, 1, Isolation::ReadCommitted);
    other
        .transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(1)).map(|_| ()))
        .unwrap();
    assert!(worker.commit().is_err());
    assert_eq!(get(&db, &table, 1), None);
}

/// Threads adding to two hot rows at READ COMMITTED through `update_recomputable`, with a
/// pause between the read and the commit so that commits overlap: no increment is lost, and
/// none of them aborts on the rows' changes.
#[test]
fn concurrent_read_committed_increments_are_neither_lost_nor_aborted() {
    let db = std::sync::Arc::new(Database::open(Config::default()).unwrap());
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut setup = db.worker().unwrap();
    setup
        .transaction(Isolation::Serializable, |txn| {
            txn.put(&table, &key(0), &0u64.to_le_bytes())?;
            txn.put(&table, &key(1), &0u64.to_le_bytes())
        })
        .unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|thread| {
            let (db, table) = (db.clone(), table.clone());
            std::thread::spawn(move || {
                let mut worker = db.worker().unwrap();
                let mut conflicts = 0;
                for n in 0..300u64 {
                    loop {
                        let k = (thread + n) % 2;
                        if let Err(error) =
                            try_add_open(&mut worker, &table, k, 1, Isolation::ReadCommitted)
                        {
                            // A record a committer held locked too long (`record_busy`).
                            assert!(matches!(error, Error::Aborted(_)), "{error}");
                            let _ = worker.rollback();
                            continue;
                        }
                        if n % 8 == 0 {
                            std::thread::yield_now();
                        }
                        match worker.commit() {
                            Ok(_) => break,
                            Err(Error::Aborted(AbortReason::ReadValidation)) => conflicts += 1,
                            Err(Error::Aborted(_)) => {}
                            Err(error) => panic!("{error}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(value_of(&db, &table, 0) + value_of(&db, &table, 1), 4 * 300);
    assert_eq!(conflicts, 0, "changes in between are recomputed, not aborted");
}

/// How the record that R finds absent leaves the index before I inserts its key again.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Leaves {
    /// It is another transaction's uncommitted insert, which rolls back.
    RolledBack,
    /// It is a deleted row, which the deleter's clean-up unlinks.
    Unlinked,
}

/// R reads key k and finds its record absent, and writes x; I reads x before R commits. The
/// record leaves the index (`leaves`) after R's commit, and I inserts k, which makes a new
/// record. R before I (R missed k) and I before R (I missed R's x) is a cycle. Returns whether
/// both reads happened as described, and the two commits.
fn read_absent_then_insert_anew(
    protocol: Protocol,
    leaves: Leaves,
) -> (bool, Result<engram_engine::CommitInfo, Error>, Result<engram_engine::CommitInfo, Error>) {
    let db = Database::open(Config { protocol, ..manual_epochs() }).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let (x, k, y) = (key(1), key(2), key(3));
    let mut owner = db.worker().unwrap();
    owner.transaction(Isolation::Serializable, |txn| txn.insert(&table, &x, b"1")).unwrap();
    match leaves {
        Leaves::RolledBack => {
            owner.begin(Isolation::Serializable).unwrap();
            owner.txn().unwrap().insert(&table, &k, b"a").unwrap();
        }
        Leaves::Unlinked => {
            owner.transaction(Isolation::Serializable, |txn| txn.insert(&table, &k, b"a")).unwrap();
            owner.transaction(Isolation::Serializable, |txn| txn.delete(&table, &k)).unwrap();
            // A commit after the delete, so that readers that begin now read above it.
            let mut other = db.worker().unwrap();
            other.transaction(Isolation::Serializable, |txn| txn.insert(&table, &y, b"y")).unwrap();
        }
    }
    let (mut r, mut i) = (db.worker().unwrap(), db.worker().unwrap());
    r.begin(Isolation::Serializable).unwrap();
    // A protocol that locks may refuse these steps: the transaction is then over.
    let r_read = r.txn().unwrap().get(&table, &k).map(|found| found.map(<[u8]>::to_vec));
    let _ = r.txn().and_then(|mut txn| txn.put(&table, &x, b"r"));
    i.begin(Isolation::Serializable).unwrap();
    let i_read = i.txn().unwrap().get(&table, &x).map(|found| found.map(<[u8]>::to_vec));
    let r_commit = r.commit();
    match leaves {
        Leaves::RolledBack => owner.rollback().unwrap(),
        Leaves::Unlinked => {
            let mut unlinked = false;
            for _ in 0..20 {
                db.advance_epoch();
                // The deleter runs its ready clean-up tasks when a transaction of its ends.
                owner.transaction(Isolation::Serializable, |_| Ok(())).unwrap();
                unlinked =
                    owner.pinned(|pin, _| table.primary.get(&k, pin).value.is_none()).unwrap();
                if unlinked {
                    break;
                }
            }
            if !unlinked {
                // MVTO announces I's commit when I begins, which holds the stable epoch, and
                // the record with it, until I ends: the case cannot arise.
                assert_eq!(protocol, Protocol::Mvto, "the deleted record was never unlinked");
                let _ = i.rollback();
                return (false, r_commit, Err(Error::NoTransaction));
            }
        }
    }
    let _ = i.txn().and_then(|mut txn| txn.insert(&table, &k, b"i"));
    let i_commit = i.commit();
    let as_described = r_read.is_ok_and(|found| found.is_none())
        && i_read.is_ok_and(|found| found.as_deref() == Some(&b"1"[..]));
    (as_described, r_commit, i_commit)
}

/// [`read_absent_then_insert_anew`] at SERIALIZABLE under every protocol: R and I never both
/// commit. Under `ssn` the record R read is gone, so the edge from R to I can only come from
/// the leaf, which R's read records: I aborts in the exclusion window. Before that, both
/// committed (the history test's rare cycle under `ssn`).
#[test]
fn a_key_whose_absent_record_leaves_the_index_still_orders_its_next_insert() {
    for leaves in [Leaves::RolledBack, Leaves::Unlinked] {
        for protocol in Protocol::ALL {
            let (as_described, r_commit, i_commit) = read_absent_then_insert_anew(protocol, leaves);
            assert!(
                !as_described || r_commit.is_err() || i_commit.is_err(),
                "{protocol}, {leaves:?}: both committed, a cycle"
            );
            if protocol == Protocol::Ssn {
                assert!(as_described && r_commit.is_ok(), "ssn, {leaves:?}: {r_commit:?}");
                assert!(
                    matches!(i_commit, Err(Error::Aborted(AbortReason::Exclusion))),
                    "ssn, {leaves:?}: {i_commit:?}"
                );
            }
        }
    }
}

/// Under the locking protocols an insert's fresh record stays write-locked by its inserter
/// until the inserter has taken it out of the index, even once a failed operation has poisoned
/// the inserter and its other locks are gone. Before, poisoning released that lock at once: a
/// reader could lock the doomed record (and see no row), the rollback retired it under the
/// reader's lock, and a row inserted after that appeared to the reader, whose lock was meant to
/// keep the key's state fixed (and whose release, were it kicked, wrote freed memory).
#[test]
fn a_poisoned_insert_keeps_its_record_locked_until_it_is_gone() {
    for protocol in [Protocol::Mv2pl, Protocol::Mvto] {
        let db = Database::open(Config { protocol, ..manual_epochs() }).unwrap();
        let table = db.create_table(TableSpec::new("t")).unwrap();
        let mut setup = db.worker().unwrap();
        setup
            .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"j"))
            .unwrap();
        let level = Isolation::RepeatableRead;
        // The holder keeps row 1 write-locked; the inserter inserts row 2, then fails on row 1.
        let mut holder = db.worker().unwrap();
        holder.begin(level).unwrap();
        holder.txn().unwrap().update(&table, &key(1), b"holder").unwrap();
        let mut inserter = db.worker().unwrap();
        inserter.begin(level).unwrap();
        inserter.txn().unwrap().insert(&table, &key(2), b"rolled back").unwrap();
        let refused = inserter.txn().unwrap().update(&table, &key(1), b"inserter");
        assert_eq!(refused, Err(Error::Aborted(AbortReason::LockConflict)), "{protocol:?}");
        // Under MVTO the later insert must have the earlier timestamp to be read.
        let mut later = db.worker().unwrap();
        later.begin(level).unwrap();
        let mut reader = db.worker().unwrap();
        reader.begin(level).unwrap();
        // The read that locks the record under each protocol (MVTO: only a write lock).
        let first = {
            let mut txn = reader.txn().unwrap();
            let read = match protocol {
                Protocol::Mvto => txn.get_for_update(&table, &key(2)),
                _ => txn.get(&table, &key(2)),
            };
            read.map(|row| row.map(<[u8]>::to_vec))
        };
        inserter.rollback().unwrap();
        later.txn().unwrap().insert(&table, &key(2), b"later").unwrap();
        later.commit().unwrap();
        if first == Ok(None) {
            let again =
                reader.txn().unwrap().get(&table, &key(2)).map(|row| row.map(<[u8]>::to_vec));
            assert_eq!(again, Ok(None), "{protocol:?}: the row appeared under the reader's lock");
        }
        assert_eq!(first, Err(Error::Aborted(AbortReason::LockConflict)), "{protocol:?}");
        reader.rollback().unwrap();
        holder.rollback().unwrap();
    }
}

/// An insert that claimed a deleted row's record gives it back under the record's lock: a
/// clean-up task, the vacuum or a committer may hold that lock for a moment when the insert
/// rolls back, and lets go by storing back the word it locked. Before, the rollback stored the
/// old word over the holder's lock bit, the holder's unlock put the claimed word back, and the
/// record stayed claimed by nobody: every later insert of the key aborted.
#[test]
fn a_claimed_record_given_back_while_another_thread_holds_its_lock_is_free_again() {
    let db = Database::open(manual_epochs()).unwrap();
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"a")).unwrap();
    // The deleted row's record stays in the index until its clean-up task runs.
    worker.transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(1))).unwrap();
    let mut inserter = db.worker().unwrap();
    inserter.begin(Isolation::Serializable).unwrap();
    inserter.txn().unwrap().insert(&table, &key(1), b"rolled back").unwrap();
    let mut holder = db.worker().unwrap();
    holder
        .pinned(|pin, _| {
            let found = table.primary.get(&key(1), pin).value.expect("the deleted row's record");
            // SAFETY: found in the index while pinned.
            let head = unsafe { &*(found as *const engram_engine::storage::Head) };
            // What a clean-up task does with a record it finds claimed: lock, look, let go.
            let seen = head.lock().unwrap();
            assert!(seen.is_claimed());
            std::thread::scope(|scope| {
                let rollback = scope.spawn(|| inserter.rollback());
                // Give the rollback every chance to run while the lock is held (it waits for
                // the lock, so it finishes only once the lock goes).
                for _ in 0..1_000 {
                    if rollback.is_finished() {
                        break;
                    }
                    std::thread::yield_now();
                }
                head.unlock_to(seen);
                rollback.join().unwrap().unwrap();
            });
            assert!(!head.word().is_claimed(), "the record is claimed by nobody");
        })
        .unwrap();
    worker.transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(1), b"b")).unwrap();
    assert_eq!(get(&db, &table, 1).as_deref(), Some(&b"b"[..]));
}

/// The rows of keys 1 to 4 a scan in `txn` shows, as `(key, value)`.
fn scan_all(txn: &mut engram_engine::Txn<'_>, table: &TableRef) -> Vec<(u64, u64)> {
    let mut rows = Vec::new();
    txn.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward, usize::MAX, |k, v| {
        let k = u64::from_be_bytes(k.try_into().unwrap());
        rows.push((k, u64::from_le_bytes(v.try_into().unwrap())));
        true
    })
    .unwrap();
    rows
}

/// A READ COMMITTED statement sees a writer whole or not at all, even under `mvto`, whose
/// writers at REPEATABLE READ and SERIALIZABLE commit at the timestamp they took when they
/// began: W begins, the reader's statement begins after it (so its timestamp is above W's),
/// reads x, W moves 10 from x to y, deletes key 3, inserts key 4 and commits, and the same
/// statement goes on to read y and scan. It must see none of W (PostgreSQL's statement
/// snapshot leaves out what was in progress when it was taken); the next statement sees all
/// of it. Under `mv2pl` writers commit at a fresh clock value, after the statement's
/// timestamp: the same outcome. Before `mvto`'s statement snapshots, the statement read
/// x = 100 and y = 110 (`cc/mvto.rs`, READ).
#[test]
fn a_read_committed_statement_sees_an_earlier_timestamped_writer_whole_or_not_at_all() {
    for protocol in [Protocol::Mvto, Protocol::Mv2pl] {
        for writer_level in [Isolation::RepeatableRead, Isolation::Serializable] {
            let db = Database::open(Config { protocol, ..manual_epochs() }).unwrap();
            let table = db.create_table(TableSpec::new("t")).unwrap();
            let mut writer = db.worker().unwrap();
            writer
                .transaction(Isolation::Serializable, |txn| {
                    (1..=3).try_for_each(|k| txn.insert(&table, &key(k), &100u64.to_le_bytes()))
                })
                .unwrap();
            let read = |txn: &mut engram_engine::Txn<'_>, k: u64| {
                txn.get(&table, &key(k)).unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()))
            };
            let case = format!("{protocol}, writer at {}", writer_level.name());

            writer.begin(writer_level).unwrap();
            let mut reader = db.worker().unwrap();
            reader.begin(Isolation::ReadCommitted).unwrap();
            assert_eq!(read(&mut reader.txn().unwrap(), 1), Some(100), "{case}");
            {
                let mut txn = writer.txn().unwrap();
                assert!(txn.update(&table, &key(1), &90u64.to_le_bytes()).unwrap());
                assert!(txn.update(&table, &key(2), &110u64.to_le_bytes()).unwrap());
                assert!(txn.delete(&table, &key(3)).unwrap());
                txn.insert(&table, &key(4), &10u64.to_le_bytes()).unwrap();
            }
            // The writer is idle between calls: the statement neither waits for it nor aborts.
            assert_eq!(read(&mut reader.txn().unwrap(), 1), Some(100), "{case}");
            writer.commit().unwrap();
            // The same statement: none of W.
            {
                let mut txn = reader.txn().unwrap();
                assert_eq!(read(&mut txn, 2), Some(100), "{case}: y after x, one statement");
                assert_eq!(read(&mut txn, 3), Some(100), "{case}: a deleted row");
                assert_eq!(read(&mut txn, 4), None, "{case}: an inserted row");
                assert_eq!(
                    scan_all(&mut txn, &table),
                    [(1, 100), (2, 100), (3, 100)],
                    "{case}: a scan in the same statement"
                );
            }
            // The next statement: all of W.
            {
                let mut txn = reader.txn().unwrap();
                txn.next_statement().unwrap();
                assert_eq!(scan_all(&mut txn, &table), [(1, 90), (2, 110), (4, 10)], "{case}");
                assert_eq!((read(&mut txn, 1), read(&mut txn, 3)), (Some(90), None), "{case}");
            }
            reader.commit().unwrap();
        }
    }
}

/// A transaction that inserts thousands of rows keeps its node set valid across its own
/// changes (through the set's index by node once it is large) and still sees another
/// transaction's insert into a range it scanned, under every protocol that validates nodes.
#[test]
fn large_transactions_keep_their_node_set_valid() {
    for protocol in [Protocol::Silo, Protocol::Mvocc] {
        for racing in [false, true] {
            let db = Database::open(Config { protocol, ..manual_epochs() }).unwrap();
            let table = db.create_table(TableSpec::new("t")).unwrap();
            let (mut big, mut other) = (db.worker().unwrap(), db.worker().unwrap());
            big.begin(Isolation::Serializable).unwrap();
            let (low, high) = (key(0), key(1_000_000));
            let seen = big
                .txn()
                .unwrap()
                .scan(
                    &table,
                    Bound::Included(&low[..]),
                    Bound::Excluded(&high[..]),
                    Direction::Forward,
                    usize::MAX,
                    |_, _| true,
                )
                .unwrap();
            assert_eq!(seen, 0);
            // Each insert checks its key absent (a node entry), then splits and changes leaves.
            for i in 0..5_000u64 {
                big.txn().unwrap().insert(&table, &key(i * 7 % 5_000 * 2), b"v").unwrap();
            }
            if racing {
                other
                    .transaction(Isolation::Serializable, |txn| txn.insert(&table, &key(3), b"w"))
                    .unwrap();
            }
            let result = big.commit();
            if racing {
                assert!(matches!(result, Err(Error::Aborted(_))), "{protocol:?}: {result:?}");
            } else {
                result.unwrap_or_else(|e| panic!("{protocol:?}: {e:?}"));
                assert_eq!(get(&db, &table, 9_998), Some(b"v".to_vec()));
            }
        }
    }
}
