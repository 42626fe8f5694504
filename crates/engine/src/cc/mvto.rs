//! Multi-version timestamp ordering (`mvto`; Wu et al., VLDB 2017, §3.2, after Bernstein and
//! Goodman's MVTO and Hekaton's read timestamps).
//!
//! PAPER
//! A transaction T takes a unique timestamp T_id when it begins; the serial order is timestamp
//! order. Every version carries a write lock (txn-id) and read-ts, the newest T_id that read
//! it. T reads the version visible at T_id, unless a writer holds it (then T aborts), and
//! raises its read-ts to T_id. T may write a record only through its newest version, only if
//! no other writer holds it, and only if no transaction with a later timestamp read it
//! (read-ts <= T_id); the new version begins at T_id.
//!
//! STATE
//! Per record head (allocated with `HeadWords::Timestamps` while the database runs `mvto`):
//! `sync::lockword::TimestampWords`, the owner (the writer's timestamp: the paper's txn-id,
//! 0 when free) and read_ts. Per index leaf: the pstamp word the serial safety net also uses,
//! here the newest timestamp of a SERIALIZABLE transaction that scanned the leaf (phantoms,
//! below). Per transaction: T_id, which is also its read timestamp (`TxnState::begin`) and its
//! commit TID; the records it holds the write lock on (`Access::held`); the leaves its inserts
//! changed (`NodeSet::changed`); at READ COMMITTED, its statement's snapshot
//! (`TxnState::statement`). Per worker slot, beside the epoch manager's other words: `ordered`,
//! T_id from the transaction's begin until its commit has locked its writes (`sync::epoch`).
//!
//! The timestamp is a TID from the clock (`EpochManager::next_timestamp`), in the epoch current
//! when T begins. The log, snapshots and the stable epoch require every commit of an epoch to be
//! installed before that epoch is stable, so a transaction announces its commit when it begins
//! (`EpochManager::enter_commit`) and keeps the stable epoch below its own until it ends. A
//! transaction the ticker kicks stops counting there: it can only abort.
//!
//! READ (REPEATABLE READ and SERIALIZABLE, `ReadMode::Ordered`)
//! If the record's current version is newer than T_id, T reads the older version visible at
//! T_id; such versions can no longer be written, so nothing is recorded. Otherwise T raises the
//! record's read_ts to T_id and checks that no writer holds it (`TimestampWords::read_current`;
//! a writer that does aborts T with `LockConflict`), then reads the version at T_id. A
//! `get_for_update` takes the write lock as a write does.
//!
//! READ (READ COMMITTED, `ReadMode::AsOf` under `Rules::statement_snapshots`)
//! Reads record nothing and raise no read_ts, and each statement reads a snapshot, as under
//! `si`. A timestamp alone is no snapshot here: a transaction W at REPEATABLE READ or
//! SERIALIZABLE commits at T_id, taken when it began, and until its commit locks the TID words
//! that `Head::read_as_of` waits on it holds only owner words, which these reads ignore. A
//! statement at S > T_id that began before W's commit would see W's versions at the records it
//! reaches after W installs and the old ones before: half of W (a sum of balances during a
//! transfer; `tests/bank.rs`, `tests/transactions.rs`). So a statement takes what PostgreSQL's
//! snapshot holds: S and the transactions at or below S still in progress, here those whose
//! commit had not yet locked its writes (`EpochManager::take_statement_snapshot`, which reads
//! every slot's `ordered` word, then again the slots of those it leaves out until a round finds
//! them all still there, so that the set is the one of a single instant: a statement that took
//! a transaction without one whose writes it read would see the second through the first).
//! At each record it reads the newest version at or below S
//! stamped with none of them (`txn::read_visible`: one more read per version passed over;
//! none while the set is empty). W leaves the set (`EpochManager::leave_ordered`, COMMIT 6)
//! only once every record it writes is TID-locked, so a statement that no longer leaves it out
//! waits at those records and sees all of it. The statement's slot publishes, for
//! `readers_low`, a bound below the first transaction it leaves out, which keeps the versions
//! it reads instead (`sync::epoch`, ORDERING). Point reads, batched reads and scans all read
//! this way; a scan's shortcut over deleted records skips only deletes the statement sees.
//!
//! WRITE
//! An update, delete or insert over an existing head takes the write lock at once: refused if
//! another writer holds it (`LockConflict`) or, at REPEATABLE READ and SERIALIZABLE, if read_ts
//! is above T_id (`TimestampOrder`); and the current version must not be newer than T_id
//! (`WriteConflict`). A fresh head is created owned by its inserter, which keeps it until its
//! commit installs the row or its rollback has taken the head out of the index (INVARIANTS).
//!
//! COMMIT (numbers match `commit.rs`)
//! 1. Lock the write set's TID words (uncontended: the owners exclude other writers).
//! 3. The serialization point, as under Silo (the transaction's epoch is already fixed).
//! 4. At SERIALIZABLE, give every scanned leaf T_id as its pstamp, then validate the node set;
//!    then, for every leaf T's inserts changed, abort (`TimestampOrder`) if a scanner with a
//!    later timestamp stamped it (`check_inserted_leaves`).
//! 5. Commit TID = T_id (at READ COMMITTED: the next clock value, after every timestamp).
//! 6. Stop being left out of statement snapshots (`EpochManager::leave_ordered`: every write
//!    has been TID-locked since step 1), install, release the TID words, then give up the
//!    write locks (`txn::release_locks`), but those on inserts deleted again, which go with
//!    their records (`commit::release_insert`).
//!
//! PHANTOMS
//! Timestamp ordering of records says nothing about keys that do not exist yet. A scanner T
//! publishes T_id on its leaves before validating them (fetch-max, then a fence); an inserter U
//! changes the leaf, then fences and reads the stamp at commit. If U's insert came before T's
//! validation, T aborts (node validation); otherwise U sees T's stamp, and aborts if T_id is
//! above U_id (T should have seen the row). Splits and merges pass stamps on, as for `ssn`.
//! A point read that finds the key's record absent records its leaf as well, since a later
//! insert may make a new record for the key (`ssn.rs`, PHANTOMS).
//!
//! DEVIATIONS
//! - read_ts is kept per record, for its current version (the only one that can be written),
//!   and never lowered: a new version inherits its predecessor's read_ts. This can only add
//!   aborts.
//! - Node validation makes scans stricter than timestamp order needs: an insert into a scanned
//!   leaf by a transaction with a later timestamp aborts the scanner too.
//! - A read of a version whose writer still holds the record aborts even when the writer's
//!   timestamp is later than the reader's, as the paper's does.
//! - READ COMMITTED keeps the write locks (so that a later-timestamp commit never slips under
//!   an earlier one) but commits at a fresh clock value, after every transaction that began.
//! - The paper has no READ COMMITTED. Its statements read PostgreSQL-style snapshots that leave
//!   out the transactions still to install (READ). Two alternatives were rejected. Reading at
//!   min(S, oldest such T_id - 1), one number and no list, is consistent but would hide every
//!   commit made after an idle transaction's T_id, a session's own included, for as long as
//!   that transaction stays open. Treating a record held by a writer with owner ts <= S as busy,
//!   waiting only while that writer is inside its commit, is incomplete: an idle writer also
//!   owns records the statement has not reached yet, or will write them later, and only
//!   aborting or blocking the writer's commit while such statements run would keep it from
//!   installing below S there.
//! - Taking a statement's snapshot waits for no one and cannot fail. A transaction it finds
//!   between taking its timestamp and publishing it (`enter_ordered`) is not waited for,
//!   since its thread may be descheduled there: the statement marks its slot, and the
//!   transaction then takes a later timestamp, above the statement's, if the one it took is
//!   not (a wasted clock value, rare). A kicked transaction is not left out: it can only
//!   abort.
//!
//! INVARIANTS
//! - Of a reader raising read_ts and a writer taking the owner word, one sees the other
//!   (`sync::lockword` ORDERING): a version read at T_id is never replaced by a writer with an
//!   earlier timestamp.
//! - A record's TID only grows: a writer installs T_id only over a current version at or below
//!   T_id, and holds the owner word from that check to its install.
//! - The stable epoch stays below T_id's epoch while T runs, so its installs are in every
//!   snapshot and log epoch that claims them.
//! - A record is owned only while it is linked, or by a transaction still in the call that
//!   took it: giving up the write lock never touches freed memory, even once the ticker has
//!   kicked the owner. The clean-up task never unlinks an owned record (`Head::is_lock_held`);
//!   a fresh record that its insert gives up is taken out of the index and marked unlinked
//!   before its inserter lets go of it (`secondary::abandon_fresh`; a poisoned transaction
//!   keeps its inserts' records until its rollback, `txn::Keep`); a transaction that takes a
//!   record and then finds it unlinked lets go in the same call (`read_ordered`,
//!   `write_existing`, `insert_existing`). Debug builds check, when a head's memory is freed,
//!   that nobody owns it (`sync::reclaim`).
//! - A READ COMMITTED statement at S sees a transaction with T_id <= S whole or not at all: it
//!   leaves it out exactly when the transaction's commit had not yet locked its writes at one
//!   instant while the snapshot was taken, and a record it reads is then either not yet
//!   written at T_id or passed over to the version before. So it takes no transaction that saw
//!   the writes of one it leaves out.
//! - `readers_low` stays at or below a running statement's bound (S, or one below the first
//!   T_id it leaves out if that is lower), so the version before one it passes over stays in
//!   the chain.

use super::access::{Access, AccessSet, Held};
use super::mv2pl::refused;
use crate::cc::worker::TxnState;
use crate::error::AbortReason;
use crate::storage::{Head, TableId, Tid};
use crate::sync::Pin;
use crate::sync::lockword::TimestampWords;

/// The timestamp words of a head in the access set or reached through an index while pinned.
#[inline]
fn words<'a>(head: *mut Head) -> Result<&'a TimestampWords, AbortReason> {
    // SAFETY: heads are reached while pinned (or owned), and the worker stays pinned until the
    // transaction ends; the reference does not outlive that.
    unsafe { (*head).timestamps() }.ok_or(AbortReason::LockConflict)
}

/// A read at `at` of the current version of `head`: raises its read timestamp, refused if a
/// writer holds the record.
#[inline]
pub(crate) fn read_current(head: *mut Head, at: Tid) -> Result<(), AbortReason> {
    words(head)?.read_current(at.as_u64()).map_err(refused)
}

/// Takes the write lock on `head` for the transaction with timestamp `ts` unless it holds it
/// already; `check_readers`: refused if a later timestamp read the current version. Returns
/// the access position that records the lock (`own`, or a new read).
pub(crate) fn lock(
    access: &mut AccessSet,
    head: *mut Head,
    table: TableId,
    own: Option<usize>,
    ts: Tid,
    check_readers: bool,
) -> Result<usize, AbortReason> {
    if let Some(index) = own
        && access.entries[index].held == Held::Write
    {
        return Ok(index);
    }
    words(head)?.write_lock(ts.as_u64(), check_readers).map_err(refused)?;
    let index = match own {
        Some(index) => index,
        None => {
            // SAFETY: as in `words`.
            let observed = unsafe { (*head).word() };
            access.push(Access::read(head, table, observed, false))
        }
    };
    access.entries[index].held = Held::Write;
    Ok(index)
}

/// Gives up the write lock the access at `index` holds (at the transaction's end, or for a
/// record found unlinked after locking it).
pub(crate) fn unlock(access: &mut AccessSet, index: usize) {
    let entry = &mut access.entries[index];
    if entry.held == Held::Write
        && let Ok(words) = words(entry.head)
    {
        words.write_unlock();
    }
    entry.held = Held::Nothing;
}

/// Step 4a, at SERIALIZABLE: every scanned leaf carries the transaction's timestamp before the
/// node set is validated (PHANTOMS).
pub(crate) fn publish_scans(state: &TxnState, ts: Tid, pin: &Pin<'_>) {
    state.nodes.publish_pstamps(ts.as_u64(), pin);
}

/// Step 4c: aborts if a transaction with a later timestamp scanned a leaf this transaction's
/// inserts changed (PHANTOMS).
pub(crate) fn check_inserted_leaves(
    state: &TxnState,
    ts: Tid,
    pin: &Pin<'_>,
) -> Result<(), AbortReason> {
    if state.nodes.changed_pstamp_high(pin) > ts.as_u64() {
        return Err(AbortReason::TimestampOrder);
    }
    Ok(())
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use crate::sync::epoch::scan_pause;
    use crate::{Config, Database, Isolation, KeyBuilder, Protocol, TableRef, TableSpec, Txn};
    use std::sync::mpsc;

    fn key(account: u64) -> Vec<u8> {
        KeyBuilder::new().u64(account).finish()
    }

    fn balance(txn: &mut Txn<'_>, table: &TableRef, account: u64) -> i64 {
        let value = txn.get(table, &key(account)).unwrap().expect("every account exists");
        i64::from_le_bytes(value.try_into().unwrap())
    }

    fn transfer(txn: &mut Txn<'_>, table: &TableRef, from: u64, to: u64) {
        let (a, b) = (balance(txn, table, from), balance(txn, table, to));
        assert!(txn.update(table, &key(from), &(a - 10).to_le_bytes()).unwrap());
        assert!(txn.update(table, &key(to), &(b + 10).to_le_bytes()).unwrap());
    }

    /// A statement that leaves out a transaction W leaves out every transaction that read W's
    /// writes. W (slot 0) moves 10 from account 1 to 2 and U (slot 1), which began after it,
    /// moves 10 from 2 to 3, both at REPEATABLE READ; a READ COMMITTED statement (slot 2) that
    /// began after both reads every balance. Its snapshot's first round stops after W's slot,
    /// which shows W still to install, while W commits and U, which reads W's write, commits
    /// too (or, in the second case, while only W commits). Reading the slots once, the
    /// statement then found U's slot cleared and took U without W: balances 100, 100, 110, a
    /// total of 310. Its rounds find W's slot cleared in turn.
    #[test]
    fn a_statement_never_takes_a_transaction_without_one_it_read_from() {
        for u_commits in [true, false] {
            let config = Config {
                protocol: Protocol::Mvto,
                epoch_interval_ms: 0,
                snapshot_interval_epochs: 1,
                ..Config::default()
            };
            let db = Database::open(config).unwrap();
            let table = db.create_table(TableSpec::new("accounts")).unwrap();
            let mut w = db.worker().unwrap();
            w.transaction(Isolation::Serializable, |txn| {
                (1..=3).try_for_each(|account| {
                    txn.insert(&table, &key(account), &100i64.to_le_bytes())
                })
            })
            .unwrap();
            let mut u = db.worker().unwrap();
            w.begin(Isolation::RepeatableRead).unwrap();
            u.begin(Isolation::RepeatableRead).unwrap();
            transfer(&mut w.txn().unwrap(), &table, 1, 2);
            let (paused, paused_seen) = mpsc::channel();
            let (resume, resumed) = mpsc::channel::<()>();
            let balances = std::thread::scope(|scope| {
                let reader = scope.spawn(|| {
                    let mut r = db.worker().unwrap();
                    let mut first = true;
                    scan_pause::set(move |index| {
                        if index == 0 && std::mem::take(&mut first) {
                            paused.send(()).unwrap();
                            resumed.recv().unwrap();
                        }
                    });
                    let balances = r
                        .transaction_once(Isolation::ReadCommitted, |txn| {
                            Ok([1, 2, 3].map(|account| balance(txn, &table, account)))
                        })
                        .unwrap();
                    scan_pause::clear();
                    balances
                });
                paused_seen.recv().unwrap();
                w.commit().unwrap();
                if u_commits {
                    let mut txn = u.txn().unwrap();
                    assert_eq!(balance(&mut txn, &table, 2), 110, "U reads W's write");
                    transfer(&mut txn, &table, 2, 3);
                    drop(txn);
                    u.commit().unwrap();
                }
                resume.send(()).unwrap();
                reader.join().unwrap()
            });
            let expected = if u_commits { [90, 100, 110] } else { [90, 110, 100] };
            assert_eq!(balances, expected, "U committed during the snapshot: {u_commits}");
            if !u_commits {
                u.rollback().unwrap();
            }
        }
    }
}
