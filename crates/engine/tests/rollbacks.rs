//! Randomized histories of transactions that end badly: interactive transactions that the
//! ticker kicks while they sit idle (under every GC mode and the version storages it takes),
//! and transactions that an operation poisons part-way and that roll back late (under every
//! protocol), among threads that insert, update and delete the same few keys, so that records
//! a kicked or poisoned transaction touched are deleted, unlinked, freed and reused meanwhile.
//!
//! Each thread's choices come from a fixed seed; the interleaving does not, so a run checks
//! invariants, not an expected history: the newest committed write of each key (by commit TID,
//! which grows along every record's history) is its row, or its absence; a scan shows each key
//! once; the secondary index holds exactly the rows' entries (`Table::check_entries`). Debug
//! builds also check, whenever a record head's memory is freed, that no protocol lock is held
//! on it (`sync::reclaim`).
//!
//! Epochs advance only when the threads advance them, so a transaction that means to be kicked
//! is: it advances the epoch past the idle limit while it is suspended, and its next call must
//! report `IdleTimeout`. Other transactions are kicked when another thread's advances catch
//! them idle.
//!
//! `ROLLBACK_STRESS_ROUNDS` (default 1) runs each configuration with that many seeds.

use engram_engine::{
    AbortReason, Config, Database, Direction, Error, Gc, IndexSpec, Isolation, KeyBuilder,
    Protocol, TableRef, TableSpec, Tid, Txn, VersionStorage, Worker,
};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Epochs a transaction may lag while suspended before the ticker kicks it.
const IDLE_LAG_EPOCHS_MAX: u64 = 4;
const THREADS: usize = 4;
/// Transactions (and epochs) a thread runs on its helper worker while its kicked transaction
/// waits: enough for a delete among them to become unlinkable (snapshots at every second
/// epoch), be unlinked, and have its record freed and reused.
const AFTER_KICK_TRANSACTIONS: usize = 8;

fn rounds() -> u64 {
    std::env::var("ROLLBACK_STRESS_ROUNDS").ok().and_then(|rounds| rounds.parse().ok()).unwrap_or(1)
}

fn key(k: u64) -> Vec<u8> {
    KeyBuilder::new().u64(k).finish()
}

/// A row: its group (the secondary key), the writing thread, the thread's write number.
fn row(group: u8, thread: usize, write: u32) -> Vec<u8> {
    let mut row = vec![group, thread as u8];
    row.extend_from_slice(&write.to_le_bytes());
    row
}

/// What a history varies.
#[derive(Debug, Clone, Copy)]
struct Mix {
    /// Keys 0..keys are written.
    keys: u64,
    /// Transactions per thread.
    transactions: usize,
    /// Percent of transactions that are interactive (the rest run in `Worker::transaction`).
    interactive_percent: u32,
    /// Percent of interactive transactions that sit idle until they are kicked.
    kick_percent: u32,
    /// A thread advances the epoch after one transaction in this many.
    advance_one_in: u32,
}

/// The net writes of one transaction attempt, by key: what its commit installs.
#[derive(Debug, Default)]
struct Writes(BTreeMap<u64, Net>);

#[derive(Debug)]
enum Net {
    Inserted(Vec<u8>),
    Updated(Vec<u8>),
    Deleted,
}

impl Writes {
    fn inserted(&mut self, k: u64, row: Vec<u8>) {
        let net = match self.0.get(&k) {
            // Deleted and inserted again: an update.
            Some(Net::Deleted) => Net::Updated(row),
            _ => Net::Inserted(row),
        };
        self.0.insert(k, net);
    }

    fn updated(&mut self, k: u64, row: Vec<u8>) {
        let net = match self.0.get(&k) {
            Some(Net::Inserted(_)) => Net::Inserted(row),
            _ => Net::Updated(row),
        };
        self.0.insert(k, net);
    }

    fn deleted(&mut self, k: u64) {
        match self.0.get(&k) {
            // Inserted and deleted again: nothing is installed.
            Some(Net::Inserted(_)) => {
                self.0.remove(&k);
            }
            _ => {
                self.0.insert(k, Net::Deleted);
            }
        }
    }
}

/// Committed writes: (commit TID, key, row or deletion).
type Ledger = Vec<(Tid, u64, Option<Vec<u8>>)>;

fn record(ledger: &mut Ledger, tid: Tid, writes: &mut Writes) {
    if writes.0.is_empty() {
        return;
    }
    assert_ne!(tid, Tid::ZERO, "a commit that installs writes has a TID: {writes:?}");
    for (k, net) in std::mem::take(&mut writes.0) {
        let row = match net {
            Net::Inserted(row) | Net::Updated(row) => Some(row),
            Net::Deleted => None,
        };
        ledger.push((tid, k, row));
    }
}

/// One thread's state.
struct Thread {
    index: usize,
    random: SmallRng,
    writes_made: u32,
    /// The key of the last insert, which the next operation may delete again.
    last_insert: Option<u64>,
}

impl Thread {
    fn next_row(&mut self) -> Vec<u8> {
        self.writes_made += 1;
        row(self.random.random_range(0..4), self.index, self.writes_made)
    }

    /// One random operation of a transaction. A duplicate key is an answer, not a failure;
    /// an abort (the transaction is poisoned) is returned.
    fn operation(
        &mut self,
        txn: &mut Txn<'_>,
        table: &TableRef,
        mix: Mix,
        writes: &mut Writes,
    ) -> Result<(), Error> {
        let writable = txn.snapshot_epoch().is_none();
        let k = match self.last_insert.take() {
            // An insert deleted again in the same transaction (its head is given up at commit).
            Some(inserted) if writable && self.random.random_ratio(1, 3) => {
                if txn.delete(table, &key(inserted))? {
                    writes.deleted(inserted);
                }
                return Ok(());
            }
            _ => self.random.random_range(0..mix.keys),
        };
        let choice = if writable {
            self.random.random_range(0..100)
        } else {
            60 + self.random.random_range(0..40)
        };
        match choice {
            0..35 => {
                let row = self.next_row();
                match txn.insert(table, &key(k), &row) {
                    Ok(()) => {
                        writes.inserted(k, row);
                        self.last_insert = Some(k);
                    }
                    Err(Error::DuplicateKey { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
            35..48 => {
                let row = self.next_row();
                if txn.update(table, &key(k), &row)? {
                    writes.updated(k, row);
                }
            }
            48..60 => {
                if txn.delete(table, &key(k))? {
                    writes.deleted(k);
                }
            }
            60..75 => {
                txn.get(table, &key(k))?;
            }
            75..85 if writable => {
                txn.get_for_update(table, &key(k))?;
            }
            _ => {
                let (low, high) = (key(k), key(k + 4));
                txn.scan(
                    table,
                    Bound::Included(&low[..]),
                    Bound::Excluded(&high[..]),
                    Direction::Forward,
                    8,
                    |_, _| true,
                )?;
            }
        }
        Ok(())
    }

    fn level(&mut self, read_only: bool) -> Isolation {
        let levels: &[Isolation] = if read_only {
            &Isolation::ALL
        } else {
            &[Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable]
        };
        levels[self.random.random_range(0..levels.len())]
    }
}

/// Advances the epoch `epochs` times (an advance that meets another thread's is skipped, so
/// it is tried again).
fn advance(db: &Database, epochs: u64) {
    let mut advanced = 0;
    while advanced < epochs {
        if db.epochs().advance().is_some() {
            advanced += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// A transaction run by `Worker::transaction` (retried on aborts).
fn closure_transaction(
    worker: &mut Worker,
    thread: &mut Thread,
    table: &TableRef,
    mix: Mix,
    ledger: &mut Ledger,
) {
    let level = thread.level(false);
    let operations = thread.random.random_range(1..4);
    let mut writes = Writes::default();
    let result = worker.transaction(level, |txn| {
        writes.0.clear();
        thread.last_insert = None;
        (0..operations).try_for_each(|_| thread.operation(txn, table, mix, &mut writes))
    });
    match result {
        Ok(()) => record(ledger, worker.last_commit().tid, &mut writes),
        Err(Error::Aborted(_)) => {}
        Err(error) => panic!("{error}"),
    }
}

/// An interactive transaction: a few operations, each in its own call, then a commit, a
/// rollback, a kick while idle, or the worker dropped with the transaction open; a poisoned
/// one often lingers (more calls, idle epochs) before it ends. `helper` runs the thread's
/// transactions while a kicked one waits.
fn interactive_transaction(
    db: &Database,
    worker: &mut Worker,
    helper: &mut Worker,
    thread: &mut Thread,
    table: &TableRef,
    mix: Mix,
    ledger: &mut Ledger,
) {
    let read_only = thread.random.random_ratio(1, 5);
    let level = thread.level(read_only);
    worker.begin(level).unwrap();
    thread.last_insert = None;
    let mut writes = Writes::default();
    // Whether the transaction ended (kicked by another thread's advances) and whether an
    // operation poisoned it.
    let (mut ended, mut poisoned) = (false, false);
    let operations = thread.random.random_range(1..5);
    for _ in 0..operations {
        let mut txn = match worker.txn() {
            Ok(txn) => txn,
            Err(Error::Aborted(AbortReason::IdleTimeout)) => {
                ended = true;
                break;
            }
            Err(error) => panic!("{error}"),
        };
        match thread.operation(&mut txn, table, mix, &mut writes) {
            Ok(()) => assert!(!poisoned, "a poisoned transaction runs no operation"),
            Err(Error::Aborted(_)) => poisoned = true,
            Err(error) => panic!("{error}"),
        }
        drop(txn);
        // Suspended between calls: other threads' transactions interleave.
        std::thread::yield_now();
        if poisoned && thread.random.random_ratio(1, 3) {
            // Rolled back late: other threads go on meanwhile.
            advance(db, thread.random.random_range(0..IDLE_LAG_EPOCHS_MAX));
        }
    }
    if ended {
        assert!(!worker.in_transaction());
        return;
    }
    if thread.random.random_ratio(mix.kick_percent, 100) {
        // Idle past the limit: the ticker kicks the transaction.
        advance(db, IDLE_LAG_EPOCHS_MAX + 1);
        if thread.random.random_ratio(1, 2) {
            // Meanwhile the rows it read are deleted, their records unlinked and freed (the
            // kicked transaction no longer holds reclamation back), and their memory taken by
            // new records.
            for _ in 0..AFTER_KICK_TRANSACTIONS {
                closure_transaction(helper, thread, table, mix, ledger);
                advance(db, 1);
            }
        }
        let idle_timeout = Error::Aborted(AbortReason::IdleTimeout);
        match thread.random.random_range(0..4) {
            0 => assert_eq!(worker.commit(), Err(idle_timeout)),
            1 => worker.rollback().unwrap(),
            2 => assert_eq!(worker.txn().err(), Some(idle_timeout)),
            // `Drop for Worker` rolls the kicked transaction back.
            _ => *worker = db.worker().unwrap(),
        }
    } else if thread.random.random_ratio(2, 3) {
        match worker.commit() {
            Ok(info) => {
                assert!(!poisoned, "a poisoned transaction committed");
                record(ledger, info.tid, &mut writes);
            }
            Err(Error::Aborted(_)) => {}
            Err(error) => panic!("{error}"),
        }
    } else {
        worker.rollback().unwrap();
    }
    assert!(!worker.in_transaction());
}

fn open(config: Config) -> (Database, TableRef) {
    let db = Database::open(Config {
        epoch_interval_ms: 0,
        snapshot_interval_epochs: 2,
        idle_transaction_epochs_max: IDLE_LAG_EPOCHS_MAX,
        vacuum_interval_ms: 1,
        cooperative_sweep_interval_ms: 1,
        ..config
    })
    .unwrap();
    let by_group = IndexSpec::new("by_group", false, |row: &[u8], out: &mut Vec<u8>| {
        out.push(row[0]);
        true
    });
    let table = db.create_table(TableSpec::new("t").index(by_group)).unwrap();
    (db, table)
}

/// Runs `THREADS` threads of `mix` against a database opened with `config` and checks the
/// outcome. `what` names the run in failures.
fn history(config: Config, mix: Mix, seed: u64, what: &str) {
    let (db, table) = open(config);
    let start = std::sync::Barrier::new(THREADS);
    let ledgers: Vec<Ledger> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..THREADS)
            .map(|index| {
                let (db, table, start) = (&db, &table, &start);
                scope.spawn(move || {
                    let (mut worker, mut helper) = (db.worker().unwrap(), db.worker().unwrap());
                    start.wait();
                    let random = SmallRng::seed_from_u64(seed * 1_000 + index as u64);
                    let mut thread = Thread { index, random, writes_made: 0, last_insert: None };
                    let mut ledger = Ledger::new();
                    for _ in 0..mix.transactions {
                        if thread.random.random_ratio(mix.interactive_percent, 100) {
                            interactive_transaction(
                                db,
                                &mut worker,
                                &mut helper,
                                &mut thread,
                                table,
                                mix,
                                &mut ledger,
                            );
                        } else {
                            closure_transaction(&mut worker, &mut thread, table, mix, &mut ledger);
                        }
                        if thread.random.random_ratio(1, mix.advance_one_in) {
                            advance(db, 1);
                        }
                    }
                    ledger
                })
            })
            .collect();
        threads.into_iter().map(|thread| thread.join().unwrap()).collect()
    });
    let ledger: Ledger = ledgers.into_iter().flatten().collect();
    check(&db, &table, ledger, what);
}

/// The table holds the newest committed write of every key, once, with its secondary entries.
fn check(db: &Database, table: &TableRef, ledger: Ledger, what: &str) {
    let mut newest: BTreeMap<u64, (Tid, Option<Vec<u8>>)> = BTreeMap::new();
    for (tid, k, row) in ledger {
        match newest.get(&k) {
            Some((seen, _)) if *seen > tid => {}
            Some((seen, _)) if *seen == tid => panic!("{what}: two writes of key {k} at {tid:?}"),
            _ => {
                newest.insert(k, (tid, row));
            }
        }
    }
    // Encoded keys sort as the numbers do.
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        newest.into_iter().filter_map(|(k, (_, row))| row.map(|row| (key(k), row))).collect();
    let mut worker = db.worker().unwrap();
    let (rows, indexed) = worker
        .transaction(Isolation::Serializable, |txn| {
            let mut rows = Vec::new();
            txn.scan(
                table,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |k, row| {
                    rows.push((k.to_vec(), row.to_vec()));
                    true
                },
            )?;
            let mut indexed = Vec::new();
            txn.scan_index(
                table,
                0,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |k, row| {
                    indexed.push((k.to_vec(), row.to_vec()));
                    true
                },
            )?;
            Ok((rows, indexed))
        })
        .unwrap();
    assert!(rows.windows(2).all(|pair| pair[0].0 < pair[1].0), "{what}: a key twice: {rows:?}");
    assert_eq!(rows, expected, "{what}: the rows are not the newest committed writes");
    let mut indexed = indexed;
    indexed.sort();
    assert_eq!(indexed, rows, "{what}: the secondary index disagrees with the rows");
    let entries = worker.pinned(|pin, _| table.check_entries(pin)).unwrap();
    assert!(entries.is_ok(), "{what}: {entries:?}");
}

/// Kicked transactions under every GC mode, with each version storage it takes, while
/// other threads delete and insert the keys the kicked ones read, so that the records a kicked
/// transaction noted or locked are unlinked and freed before it rolls back. The protocol
/// changes from one configuration to the next.
#[test]
fn kicked_transactions_under_every_gc_mode_touch_only_what_they_own() {
    let mix = Mix {
        keys: 24,
        transactions: 4000,
        interactive_percent: 60,
        kick_percent: 30,
        advance_one_in: 8,
    };
    let mut configuration = 0;
    for gc in Gc::ALL {
        for storage in VersionStorage::ALL {
            if gc == Gc::TupleCooperative && !storage.oldest_first() {
                continue;
            }
            let protocol = Protocol::ALL[configuration % Protocol::ALL.len()];
            configuration += 1;
            for round in 0..rounds() {
                let config = Config { gc, version_storage: storage, protocol, ..Config::default() };
                history(config, mix, round, &format!("{gc} {storage} {protocol} round {round}"));
            }
        }
    }
}

/// Poisoned transactions with fresh inserts under every protocol: many threads insert
/// the same few keys, lock conflicts and claimed records poison some of them part-way, and
/// those roll back late (after more calls, idle epochs, a kick, or the worker's drop), while
/// others read, lock, delete and insert the same keys.
#[test]
fn poisoned_inserts_rolled_back_late_under_every_protocol_leave_exact_rows() {
    let mix = Mix {
        keys: 6,
        transactions: 6000,
        interactive_percent: 80,
        kick_percent: 5,
        advance_one_in: 16,
    };
    for protocol in Protocol::ALL {
        for round in 0..rounds() {
            let config = Config { protocol, ..Config::default() };
            history(config, mix, 100 + round, &format!("{protocol} round {round}"));
        }
    }
}
