//! Tables of non-inline attributes (`storage::shared`, Wu et al.'s Fig. 11): each attribute a
//! value of its own, shared between versions by reference count or copied. Checked under every
//! protocol, both append-only storages, both sharings and every GC: what transactions read
//! (their own writes, snapshots of older versions, rows after aborts), concurrent updates
//! against a model, and that every value is freed exactly once (the debug build counts live
//! values; a double free trips the count's assertions or the allocator).

use engram_engine::storage::shared::{self, NonInline, Sharing};
use engram_engine::wal::FaultyStorage;
use engram_engine::{
    Config, Database, Direction, Error, Gc, IndexSpec, Isolation, Protocol, Result, TableRef,
    TableSpec, Txn, VersionStorage,
};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

/// The live-value count is process-wide: the tests of this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn live() -> i64 {
    shared::live_values().expect("tests run in debug builds, which count values")
}

const ATTRIBUTES: usize = 4;

fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// Attribute `a` of row `id` after `n` updates of it: the row, the attribute and the count,
/// padded to 100 bytes as the paper's VARCHAR(100) attributes are.
fn attribute(id: u64, a: usize, n: u64) -> Vec<u8> {
    let mut bytes = format!("{id}:{a}:{n}:").into_bytes();
    bytes.resize(100, b'.');
    bytes
}

fn count_of(bytes: &[u8]) -> u64 {
    let text = std::str::from_utf8(bytes).unwrap();
    text.split(':').nth(2).unwrap().parse().unwrap()
}

fn config(protocol: Protocol, storage: VersionStorage, gc: Gc) -> Config {
    Config {
        protocol,
        version_storage: storage,
        gc,
        epoch_interval_ms: 1,
        snapshot_interval_epochs: 2,
        vacuum_interval_ms: 1,
        cooperative_sweep_interval_ms: 1,
        ..Config::default()
    }
}

/// Every configuration a non-inline table can live in.
fn configurations() -> Vec<(Config, Sharing)> {
    let mut all = Vec::new();
    for protocol in Protocol::ALL {
        for storage in [VersionStorage::AppendN2o, VersionStorage::AppendO2n] {
            for sharing in [Sharing::RefCount, Sharing::Copy] {
                all.push((config(protocol, storage, Gc::Transaction), sharing));
            }
        }
    }
    for gc in [Gc::TupleVacuum, Gc::None] {
        all.push((config(Protocol::Silo, VersionStorage::AppendN2o, gc), Sharing::RefCount));
    }
    all.push((
        config(Protocol::Mvto, VersionStorage::AppendO2n, Gc::TupleCooperative),
        Sharing::RefCount,
    ));
    all
}

fn spec(sharing: Sharing) -> TableSpec {
    TableSpec::new("wide").non_inline(NonInline { attributes: ATTRIBUTES, sharing })
}

/// A configuration's name, for assertion messages.
fn name(config: &Config, sharing: Sharing) -> String {
    let (protocol, storage, gc) = (config.protocol, config.version_storage, config.gc);
    format!("{protocol} {storage} {gc} {}", sharing.name())
}

/// Inserts rows `ids`, every attribute at count 0.
fn insert_rows(txn: &mut Txn<'_>, table: &TableRef, ids: std::ops::Range<u64>) -> Result<()> {
    for id in ids {
        let values: Vec<Vec<u8>> = (0..ATTRIBUTES).map(|a| attribute(id, a, 0)).collect();
        let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        txn.insert_attributes(table, &key(id), &values)?;
    }
    Ok(())
}

#[test]
fn reads_see_own_writes_old_versions_and_nothing_of_aborts() {
    let _serial = serial();
    for (config, sharing) in configurations() {
        let what = name(&config, sharing);
        let before = live();
        {
            let db = Database::open(config).unwrap();
            let table = db.create_table(spec(sharing)).unwrap();
            let mut worker = db.worker().unwrap();
            worker
                .transaction(Isolation::Serializable, |txn| insert_rows(txn, &table, 0..20))
                .unwrap();
            // A snapshot that holds the first state of every row.
            db.advance_epoch();
            db.advance_epoch();
            let mut reader = db.worker().unwrap();
            reader.begin(Isolation::Snapshot).unwrap();
            let mut out = Vec::new();
            // Written twice in one transaction, read back in it, kept and new attributes alike.
            worker
                .transaction(Isolation::Serializable, |txn| {
                    assert!(txn.update_attribute(&table, &key(3), 1, &attribute(3, 1, 1))?);
                    assert!(txn.update_attribute(&table, &key(3), 2, &attribute(3, 2, 1))?);
                    assert!(txn.update_attribute(&table, &key(3), 1, &attribute(3, 1, 2))?);
                    for (a, n) in [(0, 0), (1, 2), (2, 1), (3, 0)] {
                        assert!(txn.get_attribute(&table, &key(3), a, &mut out)?);
                        assert_eq!(out, attribute(3, a, n), "{what}: own write, attribute {a}");
                    }
                    // Inserted and updated in the same transaction.
                    let values: Vec<Vec<u8>> =
                        (0..ATTRIBUTES).map(|a| attribute(100, a, 0)).collect();
                    let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                    txn.insert_attributes(&table, &key(100), &values)?;
                    assert!(txn.update_attribute(&table, &key(100), 3, &attribute(100, 3, 1))?);
                    // Updated, then deleted.
                    assert!(txn.update_attribute(&table, &key(4), 0, &attribute(4, 0, 1))?);
                    assert!(txn.delete(&table, &key(4))?);
                    assert!(!txn.get_attribute(&table, &key(4), 0, &mut out)?);
                    assert!(!txn.update_attribute(&table, &key(4), 0, b"gone")?);
                    Ok(())
                })
                .unwrap();
            // Rolled back: nothing of it stays, and what it held is released.
            worker.begin(Isolation::Serializable).unwrap();
            {
                let mut txn = worker.txn().unwrap();
                assert!(txn.update_attribute(&table, &key(5), 2, b"never").unwrap());
                txn.insert_attributes(&table, &key(200), &[b"x", b"y", b"z", b"w"]).unwrap();
            }
            worker.rollback().unwrap();
            worker
                .transaction(Isolation::Serializable, |txn| {
                    for (id, a, n) in
                        [(3, 0, 0), (3, 1, 2), (3, 2, 1), (100, 3, 1), (100, 0, 0), (5, 2, 0)]
                    {
                        assert!(txn.get_attribute(&table, &key(id), a, &mut out)?);
                        assert_eq!(out, attribute(id, a, n), "{what}: committed {id}.{a}");
                    }
                    assert!(!txn.get_attribute(&table, &key(4), 0, &mut out)?);
                    assert!(!txn.get_attribute(&table, &key(200), 0, &mut out)?);
                    Ok(())
                })
                .unwrap();
            // The snapshot still reads every row as it was first written.
            {
                let mut txn = reader.txn().unwrap();
                for (id, a) in [(3, 1), (3, 2), (4, 0), (5, 2)] {
                    assert!(txn.get_attribute(&table, &key(id), a, &mut out).unwrap());
                    assert_eq!(out, attribute(id, a, 0), "{what}: snapshot {id}.{a}");
                }
                assert!(!txn.get_attribute(&table, &key(100), 0, &mut out).unwrap());
            }
            reader.commit().unwrap();
            // Many more updates of a few rows, so that every GC prunes.
            for round in 0..200u64 {
                worker
                    .transaction(Isolation::Serializable, |txn| {
                        let id = round % 3;
                        txn.update_attribute(&table, &key(id), (round % 4) as usize, b"churn")
                    })
                    .unwrap();
            }
            assert!(live() > before, "{what}: the table holds values");
        }
        assert_eq!(live(), before, "{what}: every value is freed once the database is gone");
    }
}

/// Threads bump random attributes of random rows (read, then write the count plus one); at the
/// end every attribute's count equals the bumps that committed, and no value is lost or leaked.
#[test]
fn concurrent_updates_match_the_model_and_free_every_value() {
    let _serial = serial();
    const ROWS: u64 = 8;
    const THREADS: usize = 3;
    const TRANSACTIONS: usize = 300;
    for (config, sharing) in configurations() {
        let what = name(&config, sharing);
        let before = live();
        {
            let db = Arc::new(Database::open(config).unwrap());
            let table = db.create_table(spec(sharing)).unwrap();
            let mut setup = db.worker().unwrap();
            setup
                .transaction(Isolation::Serializable, |txn| insert_rows(txn, &table, 0..ROWS))
                .unwrap();
            let bumps: Vec<Vec<u64>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|thread| {
                        let (db, table) = (Arc::clone(&db), Arc::clone(&table));
                        scope.spawn(move || {
                            let mut worker = db.worker().unwrap();
                            let mut done = vec![0u64; ROWS as usize * ATTRIBUTES];
                            let mut random = thread as u64 * 7919 + 17;
                            let mut out = Vec::new();
                            for _ in 0..TRANSACTIONS {
                                let mut picks = Vec::new();
                                for _ in 0..2 {
                                    random = random
                                        .wrapping_mul(6_364_136_223_846_793_005)
                                        .wrapping_add(1_442_695_040_888_963_407);
                                    let id = (random >> 33) % ROWS;
                                    let a = ((random >> 20) % ATTRIBUTES as u64) as usize;
                                    picks.push((id, a));
                                }
                                let result =
                                    worker.transaction_once(Isolation::Serializable, |txn| {
                                        for &(id, a) in &picks {
                                            assert!(txn.get_attribute(
                                                &table,
                                                &key(id),
                                                a,
                                                &mut out
                                            )?);
                                            let n = count_of(&out);
                                            assert!(txn.update_attribute(
                                                &table,
                                                &key(id),
                                                a,
                                                &attribute(id, a, n + 1)
                                            )?);
                                        }
                                        Ok(())
                                    });
                                match result {
                                    Ok(()) => {
                                        for &(id, a) in &picks {
                                            done[id as usize * ATTRIBUTES + a] += 1;
                                        }
                                    }
                                    Err(Error::Aborted(_)) => {}
                                    Err(error) => panic!("{error}"),
                                }
                            }
                            done
                        })
                    })
                    .collect();
                handles.into_iter().map(|handle| handle.join().unwrap()).collect()
            });
            let committed: u64 = bumps.iter().flatten().sum();
            assert!(committed > TRANSACTIONS as u64, "{what}: {committed} bumps committed");
            let mut out = Vec::new();
            setup
                .transaction(Isolation::Serializable, |txn| {
                    for id in 0..ROWS {
                        for a in 0..ATTRIBUTES {
                            let expected: u64 =
                                bumps.iter().map(|done| done[id as usize * ATTRIBUTES + a]).sum();
                            assert!(txn.get_attribute(&table, &key(id), a, &mut out)?);
                            assert_eq!(out, attribute(id, a, expected), "{what}: {id}.{a}");
                        }
                    }
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(live(), before, "{what}: every value is freed once the database is gone");
    }
}

#[test]
fn non_inline_tables_are_refused_where_they_cannot_work() {
    let _serial = serial();
    let layout = NonInline { attributes: 2, sharing: Sharing::RefCount };
    let refused = |config: Config, spec: TableSpec, why: &str| {
        let db = Database::open(config).unwrap();
        match db.create_table(spec) {
            Err(Error::InvalidConfig(message)) => assert!(message.contains(why), "{message}"),
            other => panic!("expected a refusal naming {why:?}, got {other:?}"),
        }
    };
    for storage in [VersionStorage::TimeTravel, VersionStorage::Delta] {
        let config = Config { version_storage: storage, ..Config::default() };
        refused(config, TableSpec::new("t").non_inline(layout), "append-n2o or append-o2n");
    }
    let append = || Config { version_storage: VersionStorage::AppendN2o, ..Config::default() };
    let storage = FaultyStorage::new(1);
    let logged = Config { storage: Some(Arc::new(storage)), ..append() };
    refused(logged, TableSpec::new("t").non_inline(layout), "not logged");
    let indexed = TableSpec::new("t").non_inline(layout).index(IndexSpec::new(
        "i",
        false,
        |_: &[u8], _: &mut Vec<u8>| false,
    ));
    refused(append(), indexed, "secondary indexes");
    let empty = NonInline { attributes: 0, ..layout };
    refused(append(), TableSpec::new("t").non_inline(empty), "attributes");

    // Row bytes cannot be written to such a table, nor attributes to another.
    let db = Database::open(append()).unwrap();
    let wide = db.create_table(TableSpec::new("wide").non_inline(layout)).unwrap();
    let plain = db.create_table(TableSpec::new("plain")).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.insert_attributes(&wide, &key(1), &[b"a", b"b"])
        })
        .unwrap();
    let result = worker.transaction(Isolation::Serializable, |txn| {
        let mut out = Vec::new();
        let refusals = [
            txn.insert(&wide, &key(2), b"bytes").err(),
            txn.update(&wide, &key(1), b"bytes").err(),
            txn.update_with(&wide, &key(1), |_| true).err(),
            txn.put(&wide, &key(1), b"bytes").err(),
            txn.update_range(
                &wide,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                9,
                |_, _, _| true,
            )
            .err(),
            txn.insert_attributes(&wide, &key(3), &[b"one"]).err(),
            txn.update_attribute(&wide, &key(1), 2, b"x").err(),
            txn.get_attribute(&wide, &key(1), 5, &mut out).err(),
            txn.insert_attributes(&plain, &key(1), &[b"a", b"b"]).err(),
            txn.get_attribute(&plain, &key(1), 0, &mut out).err(),
        ];
        for (at, refusal) in refusals.iter().enumerate() {
            assert!(matches!(refusal, Some(Error::InvalidConfig(_))), "{at}: {refusal:?}");
        }
        Ok(())
    });
    result.unwrap();
    let raw = worker.raw(|raw| raw.update(&wide, &key(1), b"bytes")).unwrap();
    assert!(matches!(raw, Err(Error::InvalidConfig(_))));
}
