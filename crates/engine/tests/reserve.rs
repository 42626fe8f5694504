//! Reserved memory: mapped and faulted in at open, then used by the tables that grow into it.
//! (Its own test binary: the reserve is process-wide.)

use engram_engine::{Config, Database, Error, Isolation, KeyBuilder, TableSpec};

#[test]
fn tables_grow_into_the_reserve() {
    let reserve = 16 << 20;
    let db =
        Database::open(Config { reserved_memory_bytes: reserve, ..Config::default() }).unwrap();
    // Topping up to nothing changes nothing and reports what is reserved.
    assert_eq!(db.reserve_memory(0), Ok(reserve));
    let table = db.create_table(TableSpec::new("t")).unwrap();
    let mut worker = db.worker().unwrap();
    for batch in 0..20u64 {
        worker
            .transaction(Isolation::Serializable, |txn| {
                (0..1_000u64).try_for_each(|i| {
                    txn.insert(
                        &table,
                        &KeyBuilder::new().u64(batch * 1_000 + i).finish(),
                        &[7; 200],
                    )
                })
            })
            .unwrap();
    }
    let left = db.reserve_memory(0).unwrap();
    assert!(left < reserve, "20,000 rows of 200 bytes took reserved chunks: {left} left");
    assert_eq!(db.reserve_memory(reserve), Ok(reserve), "topped up again");
    // More than the machine has is refused with an error, not an abort or the OOM killer.
    let error = db.reserve_memory(usize::MAX / 2).unwrap_err();
    assert!(matches!(error, Error::OutOfMemory { .. }), "{error}");
    assert_eq!(error.sqlstate(), "53200");
    assert_eq!(db.reserve_memory(0), Ok(reserve), "a refusal reserves nothing");
    let refused =
        Database::open(Config { reserved_memory_bytes: usize::MAX / 2, ..Config::default() });
    assert!(matches!(refused, Err(Error::OutOfMemory { .. })));
}
