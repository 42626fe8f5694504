//! Multi-version two-phase locking, no-wait (`mv2pl`; Wu et al., VLDB 2017, §3.3, after
//! Hekaton's pessimistic variant and Bernstein and Goodman's MV2PL).
//!
//! PAPER
//! Every version header carries a write lock (txn-id) and a read count (read-cnt). A reader
//! increments read-cnt of the version it reads unless a writer holds it; a writer takes the
//! version only when read-cnt is zero and nobody else writes it; all locks are held until the
//! transaction ends. The paper's implementation, like this one, uses no-wait deadlock
//! prevention: a refused lock aborts the requester.
//!
//! STATE
//! Per record head (allocated with `HeadWords::TwoPhase` while the database runs `mv2pl`):
//! the lock word of `sync::lockword::TwoPhaseWord`, a WRITE bit and a reader count in one
//! atomic word. Only the current version is ever locked: older versions are immutable and
//! read only by snapshot readers. Per transaction: the access set marks the records it holds a
//! lock on (`Access::held`).
//!
//! READ
//! At REPEATABLE READ and SERIALIZABLE (`ReadMode::Locked`): take a read lock on the record
//! (refused, and the transaction aborts with `LockConflict`, if a writer holds it), then read
//! the current committed state. `get_for_update` takes the write lock instead. At READ
//! COMMITTED reads take no lock and see the statement's snapshot, as under `si`.
//!
//! WRITE
//! At every level, an update, delete or insert over an existing head takes the write lock at
//! once (an upgrade when the transaction is the record's only reader); a fresh head is created
//! write-locked by its inserter, which keeps the lock until its commit installs the row or its
//! rollback has taken the head out of the index (INVARIANTS). The new row is buffered until
//! commit, as under Silo.
//!
//! COMMIT (numbers match `commit.rs`)
//! 1. Lock the write set's TID words (never contended by another writer: the write locks
//!    exclude them; the clean-up task that unlinks deleted records is the only other taker).
//! 3. The serialization point, as under Silo.
//! 4. Node validation at SERIALIZABLE (phantoms, below); reads need no validation.
//! 5. Commit TID: the next clock value, taken while every lock is held, so the TID order of
//!    conflicting transactions is their lock order.
//! 6. Install, release the TID words, then release every read and write lock
//!    (`txn::release_locks`), but those on inserts deleted again, which go with their records
//!    (`commit::release_insert`).
//!
//! PHANTOMS
//! Two-phase locking of records does not lock the gaps between them. At SERIALIZABLE a
//! transaction validates the index leaves it scanned (Silo's node set), so an insert into a
//! scanned range before it commits aborts it; an insert after it commits serializes after it.
//!
//! DEVIATIONS
//! - The paper keeps txn-id (the writer's identity) in the header; the write bit suffices,
//!   since only the holder needs to know it holds the lock (its access set says so).
//! - Phantoms are stopped by node validation, not by index-range locks.
//! - READ COMMITTED reads take no read locks and see a snapshot per statement, so that
//!   every MV protocol's READ COMMITTED is PostgreSQL's.
//!
//! INVARIANTS
//! - A record's current version changes only while its writer holds the write lock, so a read
//!   lock holder sees the same state until it ends (no fuzzy reads at REPEATABLE READ).
//! - Locks are released only after the transaction's installs (strict 2PL), and every lock a
//!   transaction takes is recorded in its access set, so commit and abort release exactly
//!   those.
//! - A lock is held on a record only while the record is linked, or by a transaction still in
//!   the call that locked it: releasing a lock never touches freed memory, even once the ticker
//!   has kicked the holder. The clean-up task never unlinks a record someone holds a lock on
//!   (`Head::is_lock_held`). A fresh record that its insert gives up (a rollback, or a delete in
//!   the same transaction) is taken out of the index and marked unlinked while its inserter
//!   still holds the write lock, which goes only then (`secondary::abandon_fresh`); a poisoned
//!   transaction releases its other locks at once but keeps its inserts' until its rollback
//!   (`txn::Keep`). A transaction that locks a record and then finds it unlinked lets go in the
//!   same call (`read_locked`, `write_existing`, `insert_existing`). Debug builds check, when a
//!   head's memory is freed, that no lock is held on it (`sync::reclaim`).

use super::access::{Access, AccessSet, Held};
use crate::error::AbortReason;
use crate::storage::{Head, TableId};
use crate::sync::lockword::{Refused, TwoPhaseWord};

/// The lock word of a head in the access set or reached through an index while pinned.
#[inline]
fn lock_word<'a>(head: *mut Head) -> Result<&'a TwoPhaseWord, AbortReason> {
    // SAFETY: heads are reached while pinned (or owned), and the worker stays pinned until the
    // transaction ends; the reference does not outlive that.
    unsafe { (*head).two_phase() }.ok_or(AbortReason::LockConflict)
}

/// The abort for a refused lock.
#[inline]
pub(crate) fn refused(refusal: Refused) -> AbortReason {
    match refusal {
        Refused::Held => AbortReason::LockConflict,
        Refused::ReadLater => AbortReason::TimestampOrder,
    }
}

/// Takes the read lock (the write lock when `exclusive`) on `head` unless the transaction
/// holds it already, and returns the access position that records it (`own`, or a new read).
pub(crate) fn lock(
    access: &mut AccessSet,
    head: *mut Head,
    table: TableId,
    own: Option<usize>,
    exclusive: bool,
) -> Result<usize, AbortReason> {
    let held = own.map_or(Held::Nothing, |index| access.entries[index].held);
    let word = lock_word(head)?;
    let now = match (held, exclusive) {
        (Held::Write, _) => Held::Write,
        (Held::Read, false) => Held::Read,
        (Held::Read, true) => {
            word.write_lock(true).map_err(refused)?;
            Held::Write
        }
        (Held::Nothing, true) => {
            word.write_lock(false).map_err(refused)?;
            Held::Write
        }
        (Held::Nothing, false) => {
            word.read_lock().map_err(refused)?;
            Held::Read
        }
    };
    let index = match own {
        Some(index) => index,
        None => {
            // SAFETY: as in `lock_word`.
            let observed = unsafe { (*head).word() };
            access.push(Access::read(head, table, observed, false))
        }
    };
    access.entries[index].held = now;
    Ok(index)
}

/// Gives up the lock the access at `index` holds (at the transaction's end, or for a record
/// found unlinked after locking it).
pub(crate) fn unlock(access: &mut AccessSet, index: usize) {
    let entry = &mut access.entries[index];
    if let Ok(word) = lock_word(entry.head) {
        match entry.held {
            Held::Read => word.read_unlock(),
            Held::Write => word.write_unlock(),
            Held::Nothing => {}
        }
    }
    entry.held = Held::Nothing;
}
