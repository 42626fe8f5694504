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
//! changed (`NodeSet::changed`).
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
//! `get_for_update` takes the write lock as a write does. At READ COMMITTED reads see the
//! statement's snapshot and record nothing, as under `si`.
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
//! 6. Install, release the TID words, then give up the write locks (`txn::release_locks`), but
//!    those on inserts deleted again, which go with their records (`commit::release_insert`).
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
//!   that nobody owns it (`gc::reclaim`).

use super::access::{Access, AccessSet, Held};
use super::mv2pl::refused;
use crate::error::AbortReason;
use crate::storage::{Head, TableId, Tid};
use crate::sync::Pin;
use crate::sync::lockword::TimestampWords;
use crate::worker::TxnState;

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
