//! Savepoints (`cc/txn/savepoint.rs`): random transactions that take savepoints, roll back to
//! them and release them, against a model that keeps a copy of the rows at each savepoint,
//! under every protocol and writing isolation level, with a secondary index whose entries are
//! checked against the rows; and transfers between accounts under every protocol, on several
//! threads, each transaction undoing a bogus transfer through a savepoint, whose total must
//! hold.

use engram_engine::{
    Config, Database, Direction, Error, IndexSpec, Isolation, KeyBuilder, Protocol, TableSpec,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    Insert(u8, u8),
    Update(u8, u8),
    Delete(u8),
    Scan,
    ByValue(u8),
    UpdateMany(Vec<u8>, u8),
    Savepoint,
    /// Rolls back to the savepoint this far from the newest (if there is one).
    RollbackTo(usize),
    Release(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..12;
    let value = 0u8..4;
    prop_oneof![
        1 => key.clone().prop_map(Op::Get),
        2 => (key.clone(), value.clone()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (key.clone(), value.clone()).prop_map(|(k, v)| Op::Update(k, v)),
        1 => key.clone().prop_map(Op::Delete),
        1 => Just(Op::Scan),
        1 => value.clone().prop_map(Op::ByValue),
        1 => (proptest::collection::vec(key, 0..6), value).prop_map(|(k, v)| Op::UpdateMany(k, v)),
        2 => Just(Op::Savepoint),
        2 => (0usize..3).prop_map(Op::RollbackTo),
        1 => (0usize..3).prop_map(Op::Release),
    ]
}

fn row(key: u8, value: u8) -> Vec<u8> {
    vec![value, key]
}

fn by_value() -> IndexSpec {
    IndexSpec::new("by_value", false, |row: &[u8], out: &mut Vec<u8>| {
        out.push(row[0]);
        true
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn savepoints_match_a_model(
        transactions in proptest::collection::vec((proptest::collection::vec(op(), 0..24), any::<bool>(), 0usize..3), 1..16),
        protocol in proptest::sample::select(Protocol::ALL.to_vec()),
    ) {
        let config = Config { epoch_interval_ms: 0, snapshot_interval_epochs: 1, protocol, ..Config::default() };
        let db = Database::open(config).unwrap();
        let table = db.create_table(TableSpec::new("t").index(by_value())).unwrap();
        let mut worker = db.worker().unwrap();
        let mut committed: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
        for (ops, commit, level) in transactions {
            let isolation = [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable][level];
            let mut model = committed.clone();
            // The engine's savepoints and the model's rows at each.
            let mut savepoints = Vec::new();
            worker.begin(isolation).unwrap();
            for op in &ops {
                let mut txn = worker.txn().unwrap();
                match *op {
                    Op::Get(k) => {
                        let got = txn.get(&table, &[k]).unwrap().map(<[u8]>::to_vec);
                        prop_assert_eq!(got, model.get(&k).cloned());
                    }
                    Op::Insert(k, v) => {
                        let result = txn.insert(&table, &[k], &row(k, v));
                        match model.entry(k) {
                            std::collections::btree_map::Entry::Occupied(_) => {
                                prop_assert!(matches!(result, Err(Error::DuplicateKey { .. })), "{:?}", result);
                            }
                            std::collections::btree_map::Entry::Vacant(slot) => {
                                prop_assert_eq!(result, Ok(()));
                                slot.insert(row(k, v));
                            }
                        }
                    }
                    Op::Update(k, v) => {
                        let found = txn.update(&table, &[k], &row(k, v)).unwrap();
                        prop_assert_eq!(found, model.contains_key(&k));
                        if found {
                            model.insert(k, row(k, v));
                        }
                    }
                    Op::Delete(k) => {
                        let found = txn.delete(&table, &[k]).unwrap();
                        prop_assert_eq!(found, model.remove(&k).is_some());
                    }
                    Op::Scan => {
                        let mut got = BTreeMap::new();
                        txn.scan(&table, Bound::Unbounded, Bound::Unbounded, Direction::Forward, usize::MAX, |k, v| {
                            got.insert(k[0], v.to_vec());
                            true
                        }).unwrap();
                        prop_assert_eq!(&got, &model);
                    }
                    Op::ByValue(v) => {
                        let mut got = Vec::new();
                        txn.scan_index(&table, 0, Bound::Included(&[v][..]), Bound::Included(&[v][..]), Direction::Forward, usize::MAX, |pk, value| {
                            got.push((pk[0], value.to_vec()));
                            true
                        }).unwrap();
                        let want: Vec<_> = model.iter().filter(|(_, row)| row[0] == v).map(|(k, row)| (*k, row.clone())).collect();
                        prop_assert_eq!(got, want);
                    }
                    Op::UpdateMany(ref keys, add) => {
                        let keys: Vec<[u8; 1]> = keys.iter().map(|k| [*k]).collect();
                        txn.update_many(&table, &keys, |_, row| {
                            row[0] = (row[0] + add) % 4;
                            true
                        }).unwrap();
                        for k in &keys {
                            if let Some(row) = model.get_mut(&k[0]) {
                                row[0] = (row[0] + add) % 4;
                            }
                        }
                    }
                    Op::Savepoint => {
                        savepoints.push((txn.savepoint().unwrap(), model.clone()));
                    }
                    Op::RollbackTo(back) => {
                        if back < savepoints.len() {
                            let at = savepoints.len() - 1 - back;
                            savepoints.truncate(at + 1);
                            txn.rollback_to_savepoint(savepoints[at].0).unwrap();
                            model = savepoints[at].1.clone();
                        }
                    }
                    Op::Release(back) => {
                        if back < savepoints.len() {
                            let at = savepoints.len() - 1 - back;
                            txn.release_savepoint(savepoints[at].0).unwrap();
                            savepoints.truncate(at);
                        }
                    }
                }
            }
            if commit {
                worker.commit().unwrap();
                committed = model;
            } else {
                worker.rollback().unwrap();
            }
            db.advance_epoch();
        }
        let everything = worker.transaction(Isolation::Snapshot, |txn| {
            let mut rows = BTreeMap::new();
            txn.scan(&table, Bound::Unbounded, Bound::Unbounded, Direction::Forward, usize::MAX, |k, v| {
                rows.insert(k[0], v.to_vec());
                true
            })?;
            Ok(rows)
        }).unwrap();
        prop_assert_eq!(everything, committed);
        let entries = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
        prop_assert!(entries.is_ok(), "{:?}", entries);
        table.primary.check_invariants();
        table.secondaries[0].tree.check_invariants();
    }
}

const ACCOUNTS: u64 = 16;
const BALANCE: i64 = 1_000;

fn account(k: u64) -> Vec<u8> {
    KeyBuilder::new().u64(k).finish()
}

fn balance(row: &[u8]) -> i64 {
    i64::from_le_bytes(row[..8].try_into().unwrap())
}

/// Transfers on four threads: each moves an amount between two accounts, takes a savepoint,
/// moves bogus amounts (one to an account it had not touched), inserts and deletes a scratch account, and rolls the bogus work back
/// (or, one time in four, releases the savepoint and rolls back the whole transaction). The
/// balances must still add up, and no scratch account may remain, under every protocol at
/// every writing isolation level.
#[test]
fn transfers_undone_through_savepoints_keep_the_total() {
    for protocol in Protocol::ALL {
        for isolation in
            [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable]
        {
            let config = Config { protocol, ..Config::default() };
            let db = Arc::new(Database::open(config).unwrap());
            let table = db.create_table(TableSpec::new("accounts").index(by_value())).unwrap();
            let mut worker = db.worker().unwrap();
            worker
                .transaction(Isolation::Serializable, |txn| {
                    for k in 0..ACCOUNTS {
                        let mut row = BALANCE.to_le_bytes().to_vec();
                        row.push(0);
                        txn.insert(&table, &account(k), &row)?;
                    }
                    Ok(())
                })
                .unwrap();
            let threads: Vec<_> = (0..4u64)
                .map(|thread| {
                    let db = Arc::clone(&db);
                    let table = table.clone();
                    std::thread::spawn(move || {
                        let mut worker = db.worker().unwrap();
                        let mut committed = 0;
                        for round in 0..300u64 {
                            let from = (thread * 7 + round * 3) % ACCOUNTS;
                            let to = (from + 1 + round % (ACCOUNTS - 1)) % ACCOUNTS;
                            let result: Result<(), Error> = (|| {
                                worker.begin(isolation)?;
                                let mut txn = worker.txn()?;
                                let add = |txn: &mut engram_engine::Txn<'_>,
                                           k: u64,
                                           amount: i64| {
                                    let row = txn
                                        .get_for_update(&table, &account(k))?
                                        .expect("account")
                                        .to_vec();
                                    let mut new = (balance(&row) + amount).to_le_bytes().to_vec();
                                    new.push(row[8].wrapping_add(1) % 4);
                                    txn.update(&table, &account(k), &new).map(|_| ())
                                };
                                add(&mut txn, from, -5)?;
                                add(&mut txn, to, 5)?;
                                let savepoint = txn.savepoint()?;
                                add(&mut txn, to, -1_000_000)?;
                                add(&mut txn, from, 77)?;
                                add(&mut txn, (to + 3) % ACCOUNTS, 33)?;
                                let scratch = account(1_000 + thread);
                                txn.insert(&table, &scratch, &[0; 9])?;
                                if round % 2 == 0 {
                                    txn.delete(&table, &scratch)?;
                                }
                                if round % 4 == 3 {
                                    txn.release_savepoint(savepoint)?;
                                    drop(txn);
                                    worker.rollback()?;
                                    return Ok(());
                                }
                                txn.rollback_to_savepoint(savepoint)?;
                                drop(txn);
                                worker.commit().map(|_| ())
                            })();
                            match result {
                                Ok(()) => committed += 1,
                                Err(Error::Aborted(_)) => {
                                    let _ = worker.rollback();
                                }
                                Err(error) => panic!("{protocol:?} {isolation:?}: {error}"),
                            }
                        }
                        committed
                    })
                })
                .collect();
            let committed: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
            assert!(committed > 0, "{protocol:?} {isolation:?}: nothing committed");
            let (total, count) = worker
                .transaction(Isolation::Serializable, |txn| {
                    let (mut total, mut count) = (0, 0);
                    txn.scan(
                        &table,
                        Bound::Unbounded,
                        Bound::Unbounded,
                        Direction::Forward,
                        usize::MAX,
                        |_, row| {
                            total += balance(row);
                            count += 1;
                            true
                        },
                    )?;
                    Ok((total, count))
                })
                .unwrap();
            assert_eq!(count, ACCOUNTS, "{protocol:?} {isolation:?}: scratch accounts remain");
            assert_eq!(total, BALANCE * ACCOUNTS as i64, "{protocol:?} {isolation:?}");
            let entries = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
            assert!(entries.is_ok(), "{protocol:?} {isolation:?}: {entries:?}");
        }
    }
}
