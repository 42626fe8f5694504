//! Bank transfers on several threads: the total never changes, whether it is read by snapshot
//! transactions, by serializable ones, or at the end.

use engram_engine::{
    Config, Database, Direction, Error, Gc, Isolation, KeyBuilder, Protocol, TableRef, TableSpec,
    VersionStorage,
};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const ACCOUNTS: u64 = 64;
const OPENING_BALANCE: i64 = 1_000;
/// Times a transfer is run again after its transaction gave up (each time after the worker's
/// own `transaction_retries_max` tries), as a client retries a serialization failure. Under
/// the no-wait locking protocols the serializable reader's scan of every account refuses a
/// transfer's lock for as long as it holds its read locks. On a loaded machine the test once
/// hung: the transfer threads were gone and both readers still looped, waiting for a stop
/// that never came, which a transfer's panic on one transaction's 100 refused tries explains.
const TRANSFER_RUNS_MAX: u32 = 1_000;

fn account(id: u64) -> Vec<u8> {
    KeyBuilder::new().u64(id).finish()
}

fn balance(bytes: &[u8]) -> i64 {
    i64::from_le_bytes(bytes.try_into().expect("8-byte balance"))
}

fn total(txn: &mut engram_engine::Txn<'_>, table: &TableRef) -> Result<(i64, usize), Error> {
    let mut sum = 0;
    let rows = txn.scan(
        table,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
        usize::MAX,
        |_, value| {
            sum += balance(value);
            true
        },
    )?;
    Ok((sum, rows))
}

fn run(isolation: Isolation, use_get_for_update: bool) {
    run_with(Protocol::Silo, isolation, use_get_for_update);
}

fn run_with(protocol: Protocol, isolation: Isolation, use_get_for_update: bool) {
    run_in_spaces(protocol, isolation, use_get_for_update, 0);
}

fn run_in_spaces(
    protocol: Protocol,
    isolation: Isolation,
    use_get_for_update: bool,
    memory_spaces: usize,
) {
    run_configured(isolation, use_get_for_update, Config { protocol, memory_spaces, ..bank() });
}

/// The bank's engine settings: 1 ms epochs, snapshots every two.
fn bank() -> Config {
    Config { epoch_interval_ms: 1, snapshot_interval_epochs: 2, ..Config::default() }
}

fn run_configured(isolation: Isolation, use_get_for_update: bool, config: Config) {
    let db = Arc::new(Database::open(config).unwrap());
    let table = db.create_table(TableSpec::new("accounts")).unwrap();
    let mut setup = db.worker().unwrap();
    let opened = setup
        .transaction(Isolation::Serializable, |txn| {
            (0..ACCOUNTS)
                .try_for_each(|id| txn.insert(&table, &account(id), &OPENING_BALANCE.to_le_bytes()))
        })
        .map(|()| db.epochs().global())
        .unwrap();
    // Snapshots read a past epoch boundary: wait until one covers the opening of the accounts.
    for _ in 0..10_000 {
        if db.epochs().snapshot() > opened {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(db.epochs().snapshot() > opened, "the epoch ticker advanced snapshots");
    let expected = ACCOUNTS as i64 * OPENING_BALANCE;
    let stop = Arc::new(AtomicBool::new(false));
    let snapshot_reads = Arc::new(AtomicU64::new(0));
    std::thread::scope(|scope| {
        let transfers: Vec<_> = (0..3u64)
            .map(|thread| {
                let (db, table) = (Arc::clone(&db), Arc::clone(&table));
                scope.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let mut random = SmallRng::seed_from_u64(thread);
                    for _ in 0..4_000 {
                        let from = random.random_range(0..ACCOUNTS);
                        let to = (from + random.random_range(1..ACCOUNTS)) % ACCOUNTS;
                        let amount = random.random_range(1..50i64);
                        let transfer = |txn: &mut engram_engine::Txn<'_>| {
                            let read =
                                |txn: &mut engram_engine::Txn<'_>, id| -> Result<i64, Error> {
                                    let value = if use_get_for_update {
                                        txn.get_for_update(&table, &account(id))?
                                    } else {
                                        txn.get(&table, &account(id))?
                                    };
                                    Ok(balance(value.expect("accounts exist")))
                                };
                            let (a, b) = (read(txn, from)?, read(txn, to)?);
                            txn.update(&table, &account(from), &(a - amount).to_le_bytes())?;
                            txn.update(&table, &account(to), &(b + amount).to_le_bytes())?;
                            Ok(())
                        };
                        let mut runs = 0;
                        loop {
                            runs += 1;
                            match worker.transaction(isolation, transfer) {
                                Ok(()) => break,
                                Err(Error::Aborted(_)) if runs < TRANSFER_RUNS_MAX => {}
                                Err(error) => panic!("a transfer failed {runs} times: {error}"),
                            }
                        }
                    }
                })
            })
            .collect();
        let (db2, table2, stop2, reads2) =
            (Arc::clone(&db), Arc::clone(&table), Arc::clone(&stop), Arc::clone(&snapshot_reads));
        let snapshot_reader = scope.spawn(move || {
            let mut worker = db2.worker().unwrap();
            // On two cores this thread may first run after the transfers: it reads at least once.
            while !stop2.load(Ordering::Acquire) || reads2.load(Ordering::Relaxed) == 0 {
                let (sum, rows) =
                    worker.transaction(Isolation::Snapshot, |txn| total(txn, &table2)).unwrap();
                assert_eq!(
                    (sum, rows),
                    (expected, ACCOUNTS as usize),
                    "a snapshot saw a partial transfer"
                );
                reads2.fetch_add(1, Ordering::Relaxed);
            }
        });
        let (db3, table3, stop3) = (Arc::clone(&db), Arc::clone(&table), Arc::clone(&stop));
        let serializable_reader = scope.spawn(move || {
            let mut worker = db3.worker().unwrap();
            let mut checked = 0;
            // A serializable scan of every account can starve while transfers commit under it
            // (OCC's price for long readers, which snapshots avoid); once they stop it commits,
            // so it keeps going until it has checked the total at least once.
            while !stop3.load(Ordering::Acquire) || checked == 0 {
                if let Ok((sum, _)) =
                    worker.transaction(Isolation::Serializable, |txn| total(txn, &table3))
                {
                    assert_eq!(
                        sum, expected,
                        "a committed serializable read saw a partial transfer"
                    );
                    checked += 1;
                }
            }
            checked
        });
        // Stop the readers even if a transfer panicked, so that the test fails, not hangs.
        let joined: Vec<_> = transfers.into_iter().map(|handle| handle.join()).collect();
        stop.store(true, Ordering::Release);
        for result in joined {
            if let Err(panic) = result {
                std::panic::resume_unwind(panic);
            }
        }
        snapshot_reader.join().unwrap();
        let checked = serializable_reader.join().unwrap();
        assert!(checked > 0, "the serializable reader committed at least once");
    });
    assert!(snapshot_reads.load(Ordering::Relaxed) > 0);
    let mut worker = db.worker().unwrap();
    let (sum, rows) =
        worker.transaction(Isolation::Serializable, |txn| total(txn, &table)).unwrap();
    assert_eq!((sum, rows), (expected, ACCOUNTS as usize));
    let stats = db.stats();
    assert!(stats.commits > 12_000, "3 x 4,000 transfers and the readers: {stats:?}");
}

#[test]
fn transfers_keep_the_total_at_serializable() {
    run(Isolation::Serializable, false);
}

#[test]
fn transfers_keep_the_total_at_repeatable_read() {
    run(Isolation::RepeatableRead, false);
}

#[test]
fn transfers_keep_the_total_at_read_committed_with_get_for_update() {
    run(Isolation::ReadCommitted, true);
}

/// The multi-version protocols at every level where a transfer cannot lose money: snapshot
/// isolation's first committer wins keeps the total at repeatable read (the transfer writes
/// both rows it read), and so does every serializable protocol.
#[test]
fn transfers_keep_the_total_under_the_multi_version_protocols() {
    for protocol in [Protocol::Si, Protocol::Mvocc, Protocol::Ssn, Protocol::Mvto, Protocol::Mv2pl]
    {
        run_with(protocol, Isolation::Serializable, false);
        run_with(protocol, Isolation::RepeatableRead, false);
        run_with(protocol, Isolation::ReadCommitted, true);
    }
}

/// Under every GC mode (a vacuum every millisecond pruning beside the transfers, or nothing
/// pruned at all) the totals hold.
#[test]
fn transfers_keep_the_total_under_every_gc_mode() {
    for gc in [Gc::TupleVacuum, Gc::None] {
        for (protocol, isolation) in [
            (Protocol::Mvto, Isolation::Serializable),
            (Protocol::Si, Isolation::RepeatableRead),
            (Protocol::Ssn, Isolation::Serializable),
            (Protocol::Silo, Isolation::Serializable),
        ] {
            let config = Config { protocol, gc, vacuum_interval_ms: 1, ..bank() };
            run_configured(isolation, false, config);
        }
    }
}

/// Append-only chains, newest or oldest first, and delta records, under each kind of protocol
/// and with writers, a vacuum, readers or nobody pruning them: the totals hold.
#[test]
fn transfers_keep_the_total_under_every_version_storage() {
    for storage in [VersionStorage::AppendN2o, VersionStorage::AppendO2n, VersionStorage::Delta] {
        for (protocol, isolation, gc) in [
            (Protocol::Mvto, Isolation::Serializable, Gc::Transaction),
            (Protocol::Mv2pl, Isolation::Serializable, Gc::TupleVacuum),
            (Protocol::Si, Isolation::RepeatableRead, Gc::None),
            (Protocol::Ssn, Isolation::Serializable, Gc::Transaction),
            (Protocol::Mvocc, Isolation::Serializable, Gc::TupleVacuum),
            (Protocol::Silo, Isolation::Serializable, Gc::Transaction),
        ] {
            let config =
                Config { protocol, gc, version_storage: storage, vacuum_interval_ms: 1, ..bank() };
            run_configured(isolation, false, config);
        }
    }
    // Readers cleaning the oldest-to-newest chains they pass.
    for (protocol, isolation) in [
        (Protocol::Mvto, Isolation::Serializable),
        (Protocol::Si, Isolation::RepeatableRead),
        (Protocol::Ssn, Isolation::Serializable),
        (Protocol::Silo, Isolation::Serializable),
    ] {
        let config = Config {
            protocol,
            gc: Gc::TupleCooperative,
            version_storage: VersionStorage::AppendO2n,
            ..bank()
        };
        run_configured(isolation, false, config);
    }
}

/// Workers sharing memory spaces (`Config::memory_spaces`: one space for all, or two for the
/// transfer threads, the readers and the checker) allocate and free versions under the
/// space's lock; the totals hold as with a space per worker.
#[test]
fn transfers_keep_the_total_when_workers_share_memory_spaces() {
    for spaces in [1, 2] {
        run_in_spaces(Protocol::Mvto, Isolation::Serializable, false, spaces);
        run_in_spaces(Protocol::Si, Isolation::RepeatableRead, false, spaces);
        run_in_spaces(Protocol::Silo, Isolation::Serializable, false, spaces);
    }
    for (spaces, shared) in [(0, false), (1, true)] {
        let db = Database::open(Config { memory_spaces: spaces, ..Config::default() }).unwrap();
        assert_eq!(db.worker().unwrap().memory_stats().shared_space, shared);
    }
    let too_many = Config { memory_spaces: usize::MAX, ..Config::default() };
    assert!(Database::open(too_many).unwrap_err().to_string().contains("memory_spaces"));
}

/// Transfers per thread in `read_committed_statements_never_see_part_of_a_transfer`
/// (`STRESS_TRANSFERS` overrides it for longer runs).
const STATEMENT_TRANSFERS: u64 = 1_500;

/// Under `mvto`, transfers at REPEATABLE READ and SERIALIZABLE commit at the timestamp they
/// took when they began, while READ COMMITTED readers sum every balance in one statement, by
/// a scan and by point reads, again and again: no statement sees part of a transfer
/// (`cc/mvto.rs`, READ). Under `mv2pl` writers commit at a fresh clock value instead, and the
/// same must hold. A transfer yields between its begin and its writes, so that statements
/// begin inside it.
#[test]
fn read_committed_statements_never_see_part_of_a_transfer() {
    let transfers = std::env::var("STRESS_TRANSFERS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(STATEMENT_TRANSFERS);
    for protocol in [Protocol::Mvto, Protocol::Mv2pl] {
        statements_see_whole_transfers(protocol, transfers);
    }
}

fn statements_see_whole_transfers(protocol: Protocol, transfers: u64) {
    let db = Arc::new(Database::open(Config { protocol, ..bank() }).unwrap());
    let table = db.create_table(TableSpec::new("accounts")).unwrap();
    let mut setup = db.worker().unwrap();
    setup
        .transaction(Isolation::Serializable, |txn| {
            (0..ACCOUNTS)
                .try_for_each(|id| txn.insert(&table, &account(id), &OPENING_BALANCE.to_le_bytes()))
        })
        .unwrap();
    let expected = ACCOUNTS as i64 * OPENING_BALANCE;
    let keys: Vec<Vec<u8>> = (0..ACCOUNTS).map(account).collect();
    let stop = AtomicBool::new(false);
    // Per reader, by point reads and by scan: statements read, and those with a wrong total.
    let statements = [AtomicU64::new(0), AtomicU64::new(0)];
    let wrong = [AtomicU64::new(0), AtomicU64::new(0)];
    std::thread::scope(|scope| {
        let writers: Vec<_> = [Isolation::RepeatableRead, Isolation::Serializable]
            .into_iter()
            .enumerate()
            .map(|(thread, isolation)| {
                let (db, table) = (&db, &table);
                scope.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let mut random = SmallRng::seed_from_u64(thread as u64);
                    for _ in 0..transfers {
                        let from = random.random_range(0..ACCOUNTS);
                        let to = (from + random.random_range(1..ACCOUNTS)) % ACCOUNTS;
                        let amount = random.random_range(1..50i64);
                        let transfer = |txn: &mut engram_engine::Txn<'_>| {
                            std::thread::yield_now();
                            let a = balance(txn.get(table, &account(from))?.expect("an account"));
                            let b = balance(txn.get(table, &account(to))?.expect("an account"));
                            txn.update(table, &account(from), &(a - amount).to_le_bytes())?;
                            txn.update(table, &account(to), &(b + amount).to_le_bytes())?;
                            Ok(())
                        };
                        let mut runs = 0;
                        loop {
                            runs += 1;
                            match worker.transaction(isolation, transfer) {
                                Ok(()) => break,
                                Err(Error::Aborted(_)) if runs < TRANSFER_RUNS_MAX => {}
                                Err(error) => panic!("a transfer failed {runs} times: {error}"),
                            }
                        }
                    }
                })
            })
            .collect();
        let readers: Vec<_> = [false, true]
            .into_iter()
            .map(|by_scan| {
                let (db, table, keys, stop) = (&db, &table, &keys, &stop);
                let (statements, wrong) = (&statements, &wrong);
                scope.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    while !stop.load(Ordering::Acquire) {
                        // Several statements in one transaction: each reads its own snapshot.
                        let sums = worker.transaction(Isolation::ReadCommitted, |txn| {
                            let mut sums = [0i64; 4];
                            for sum in sums.iter_mut() {
                                txn.next_statement()?;
                                *sum = if by_scan {
                                    total(txn, table)?.0
                                } else {
                                    let mut sum = 0;
                                    txn.get_many(table, keys, |_, row| {
                                        sum += balance(row.expect("an account"));
                                    })?;
                                    sum
                                };
                            }
                            Ok(sums)
                        });
                        let reader = usize::from(by_scan);
                        for sum in sums.expect("read committed readers of a bank do not abort") {
                            statements[reader].fetch_add(1, Ordering::Relaxed);
                            if sum != expected {
                                wrong[reader].fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        let joined: Vec<_> = writers.into_iter().map(|handle| handle.join()).collect();
        stop.store(true, Ordering::Release);
        for result in joined.into_iter().chain(readers.into_iter().map(|handle| handle.join())) {
            if let Err(panic) = result {
                std::panic::resume_unwind(panic);
            }
        }
    });
    let [gets, scans] = statements.map(AtomicU64::into_inner);
    let [wrong_gets, wrong_scans] = wrong.map(AtomicU64::into_inner);
    assert!(gets > 0 && scans > 0, "{protocol}: the readers ran");
    assert_eq!(
        (wrong_gets, wrong_scans),
        (0, 0),
        "{protocol}: statements that saw part of a transfer, of {gets} by point reads and \
         {scans} by scan"
    );
}
