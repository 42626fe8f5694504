//! Single-threaded transactions against a `BTreeMap` model: random operations, committed or
//! rolled back, in every writing isolation level, with a secondary index checked too (its
//! entries against the records they point to, under logical and physical pointers).

use engram_engine::{
    Config, Database, Direction, Error, Gc, IndexPointers, IndexSpec, Isolation, TableSpec,
    VersionStorage,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    Insert(u8, u8),
    Update(u8, u8),
    Put(u8, u8),
    Delete(u8),
    Scan(u8, u8, bool, usize),
    ByValue(u8),
    GetMany(Vec<u8>),
    /// Adds the value to each row's value byte (mod 6), skipping rows whose value is 0.
    UpdateMany(Vec<u8>, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..24;
    let value = 0u8..6;
    prop_oneof![
        key.clone().prop_map(Op::Get),
        (key.clone(), value.clone()).prop_map(|(k, v)| Op::Insert(k, v)),
        (key.clone(), value.clone()).prop_map(|(k, v)| Op::Update(k, v)),
        (key.clone(), value.clone()).prop_map(|(k, v)| Op::Put(k, v)),
        key.clone().prop_map(Op::Delete),
        (key.clone(), key.clone(), any::<bool>(), 0usize..10)
            .prop_map(|(a, b, r, l)| Op::Scan(a, b, r, l)),
        value.clone().prop_map(Op::ByValue),
        proptest::collection::vec(key.clone(), 0..20).prop_map(Op::GetMany),
        (proptest::collection::vec(key, 0..20), value).prop_map(|(k, v)| Op::UpdateMany(k, v)),
    ]
}

fn row(key: u8, value: u8) -> Vec<u8> {
    // The value's first byte is indexed; the key makes rows distinct.
    vec![value, key]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn transactions_match_a_model(
        transactions in proptest::collection::vec((proptest::collection::vec(op(), 0..12), any::<bool>(), 0usize..3), 1..40),
        storage in proptest::sample::select(VersionStorage::ALL.to_vec()),
        readers_clean in any::<bool>(),
        physical in any::<bool>(),
    ) {
        // Oldest-to-newest chains are pruned by their writers or by their readers.
        let gc = if readers_clean && storage.oldest_first() { Gc::TupleCooperative } else { Gc::Transaction };
        // Physical index pointers with the append-only storages, which they need.
        let append = matches!(storage, VersionStorage::AppendN2o | VersionStorage::AppendO2n);
        let index_pointers = if physical && append { IndexPointers::Physical } else { IndexPointers::Logical };
        let config = Config { epoch_interval_ms: 0, snapshot_interval_epochs: 1, version_storage: storage, gc, index_pointers, ..Config::default() };
        let db = Database::open(config).unwrap();
        let by_value = IndexSpec::new("by_value", false, |row: &[u8], out: &mut Vec<u8>| {
            out.push(row[0]);
            true
        });
        let table = db.create_table(TableSpec::new("t").index(by_value)).unwrap();
        let mut worker = db.worker().unwrap();
        let mut committed: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
        for (ops, commit, level) in transactions {
            let isolation = [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable][level];
            let mut model = committed.clone();
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
                    Op::Put(k, v) => {
                        txn.put(&table, &[k], &row(k, v)).unwrap();
                        model.insert(k, row(k, v));
                    }
                    Op::Delete(k) => {
                        let found = txn.delete(&table, &[k]).unwrap();
                        prop_assert_eq!(found, model.remove(&k).is_some());
                    }
                    Op::Scan(a, b, reverse, limit) => {
                        let (low, high) = (a.min(b), a.max(b));
                        let direction = if reverse { Direction::Reverse } else { Direction::Forward };
                        let mut got = Vec::new();
                        txn.scan(&table, Bound::Included(&[low][..]), Bound::Excluded(&[high][..]), direction, limit, |k, v| {
                            got.push((k[0], v.to_vec()));
                            true
                        }).unwrap();
                        let range = model.range(low..high).map(|(k, v)| (*k, v.clone()));
                        let want: Vec<_> = if reverse { range.rev().take(limit).collect() } else { range.take(limit).collect() };
                        prop_assert_eq!(got, want);
                    }
                    Op::GetMany(ref keys) => {
                        let mut got = Vec::new();
                        txn.get_many(&table, &keys.iter().map(|k| [*k]).collect::<Vec<_>>(), |index, row| {
                            got.push((index, row.map(<[u8]>::to_vec)));
                        }).unwrap();
                        let want: Vec<_> = keys.iter().enumerate().map(|(index, k)| (index, model.get(k).cloned())).collect();
                        prop_assert_eq!(got, want);
                    }
                    Op::UpdateMany(ref keys, add) => {
                        let (existing, written) = txn.update_many(&table, &keys.iter().map(|k| [*k]).collect::<Vec<_>>(), |index, row| {
                            assert_eq!(row[1], keys[index], "the row of its key");
                            if row[0] == 0 {
                                return false;
                            }
                            row[0] = (row[0] + add) % 6;
                            true
                        }).unwrap();
                        let (mut want_existing, mut want_written) = (0, 0);
                        for k in keys {
                            if let Some(row) = model.get_mut(k) {
                                want_existing += 1;
                                if row[0] != 0 {
                                    row[0] = (row[0] + add) % 6;
                                    want_written += 1;
                                }
                            }
                        }
                        prop_assert_eq!((existing, written), (want_existing, want_written));
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
                }
            }
            if commit {
                worker.commit().unwrap();
                committed = model;
            } else {
                worker.rollback().unwrap();
            }
            // Epochs move now and then, so deleted rows get unlinked between transactions.
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
