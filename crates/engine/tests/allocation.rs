//! The transaction path, commit included, allocates nothing once its buffers have grown.

use engram_engine::{
    Config, Database, Direction, IndexSpec, Isolation, KeyBuilder, TableRef, TableSpec, Worker,
};
use engram_testkit::alloc::{CountingAllocator, allocations_this_thread};
use std::ops::Bound;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const ROWS: u64 = 1_000;

fn key(i: u64) -> Vec<u8> {
    KeyBuilder::new().u64(i).finish()
}

fn row(i: u64, round: u64) -> [u8; 100] {
    let mut row = [0u8; 100];
    row[..8].copy_from_slice(&(i % 10).to_le_bytes()); // indexed: never changes
    row[8..16].copy_from_slice(&round.to_le_bytes());
    row
}

fn setup() -> (Database, TableRef) {
    let db = Database::open(Config {
        epoch_interval_ms: 0,
        snapshot_interval_epochs: 1,
        ..Config::default()
    })
    .unwrap();
    let by_group = IndexSpec::new("by_group", false, |row: &[u8], out: &mut Vec<u8>| {
        out.extend_from_slice(&row[..8]);
        true
    });
    let table = db.create_table(TableSpec::new("t").index(by_group)).unwrap();
    let mut worker = db.worker().unwrap();
    worker
        .transaction(Isolation::Serializable, |txn| {
            (0..ROWS).try_for_each(|i| txn.insert(&table, &key(i), &row(i, 0)))
        })
        .unwrap();
    (db, table)
}

/// Reads, updates and a short scan: a typical small transaction. Keys are built into reused
/// buffers so that the workload itself does not allocate.
struct Keys {
    a: Vec<u8>,
    b: Vec<u8>,
}

fn run(
    db: &Database,
    worker: &mut Worker,
    table: &TableRef,
    keys: &mut Keys,
    rounds: u64,
    advance_every: u64,
) {
    let Keys { a, b } = keys;
    for round in 0..rounds {
        let (i, j) = ((round * 7) % ROWS, (round * 13 + 1) % ROWS);
        a.clear();
        a.extend_from_slice(&i.to_be_bytes());
        b.clear();
        b.extend_from_slice(&j.to_be_bytes());
        worker
            .transaction(Isolation::Serializable, |txn| {
                let first = txn.get(table, a)?.map_or(0, |v| v[9]);
                let second = txn.get(table, b)?.map_or(0, |v| v[9]);
                txn.update(table, a, &row(i, round + first as u64))?;
                txn.update(table, b, &row(j, round + second as u64))?;
                txn.scan(
                    table,
                    Bound::Included(&a[..]),
                    Bound::Unbounded,
                    Direction::Forward,
                    10,
                    |_, _| true,
                )?;
                Ok(())
            })
            .unwrap();
        if advance_every > 0 && round % advance_every == 0 {
            db.advance_epoch();
        }
    }
}

#[test]
fn steady_state_transactions_do_not_allocate() {
    let (db, table) = setup();
    let mut worker = db.worker().unwrap();
    let mut keys = Keys { a: Vec::with_capacity(8), b: Vec::with_capacity(8) };
    run(&db, &mut worker, &table, &mut keys, 20_000, 0);
    let before = allocations_this_thread();
    run(&db, &mut worker, &table, &mut keys, 20_000, 0);
    assert_eq!(allocations_this_thread() - before, 0, "allocations on the transaction path");
}

#[test]
fn steady_state_with_epochs_and_kept_versions_does_not_allocate() {
    // Epochs advance every 50 transactions, so updates keep old versions for snapshots and
    // garbage is reclaimed continuously: versions come from and go back to the worker's arena.
    let (db, table) = setup();
    let mut worker = db.worker().unwrap();
    let mut keys = Keys { a: Vec::with_capacity(8), b: Vec::with_capacity(8) };
    run(&db, &mut worker, &table, &mut keys, 40_000, 50);
    let before = allocations_this_thread();
    run(&db, &mut worker, &table, &mut keys, 20_000, 50);
    assert_eq!(allocations_this_thread() - before, 0, "allocations on the transaction path");
    let memory = worker.memory_stats();
    assert!(memory.garbage_freed > 1_000, "versions were kept and reclaimed: {memory:?}");
}
