//! Silo's optimistic concurrency control (Tu et al., SOSP 2013), the default protocol.
//!
//! PAPER
//! Silo §4.4 (commit protocol), §4.5 (database operations), §4.6 (range queries and phantoms),
//! §4.2 (epochs and TIDs), §4.9 (snapshot transactions); MOT (VLDB 2020) §3 for optimistic
//! inserts with sentinels and READ COMMITTED.
//!
//! STATE (per record: the TID word in `storage::record`)
//!
//! | bits   | field    |
//! |--------|----------|
//! | 0      | LOCK     |
//! | 1      | LATEST   |
//! | 2      | ABSENT   |
//! | 3      | CLAIMED  |
//! | 4..28  | sequence |
//! | 28..64 | epoch    |
//!
//! READ
//! Read the word (wait while locked), copy the value, fence, re-read the word; retry if it
//! changed (`Head::read`). The word goes into the access set with the value's identity.
//!
//! WRITE
//! Writes are buffered in the access set until commit. Inserts are optimistic (MOT): a new key
//! gets a fresh head that is ABSENT and CLAIMED, put into the index at once; a key whose head
//! is absent but unclaimed (a delete not yet collected) is claimed with a compare-and-swap.
//! Another transaction meeting a claimed head aborts (`InsertConflict`) instead of waiting.
//!
//! COMMIT (numbers match `commit.rs`)
//! 1. Lock every written record in address order; check that updated and deleted records are
//!    still present and LATEST, and that records also read have not changed.
//! 3. Fence, then read the global epoch E: the serialization point.
//! 4. For every validated read: the word is unchanged (ignoring our own lock bit) and not
//!    locked by another; for every validated node: the leaf version is unchanged.
//! 5. TID = the smallest TID in epoch E above every TID read or written and above the worker's
//!    previous TID.
//! 6. Install each write with the TID (keeping the replaced version if a snapshot may read it)
//!    and release its lock with the same store.
//!
//! DEVIATIONS
//! - Silo keeps the newest version inline and allocates a new record when a value outgrows
//!   it; Engram's heads never move, so a value that outgrows the inline room goes to an
//!   immutable overflow version the head points to.
//! - READ COMMITTED and REPEATABLE READ follow MOT: they skip node-set validation, and READ
//!   COMMITTED also skips read-set validation. Uniqueness checks are validated at every level.
//! - A reader waits a bounded time for a locked record and then aborts (`RecordBusy`), so a
//!   descheduled committer costs a retry rather than an unbounded spin.
//!
//! INVARIANTS
//! - A committed TID is greater than every TID its transaction observed, so TID order per
//!   record is the commit order, and conflicting transactions in one epoch are ordered by TID.
//! - A transaction never sees uncommitted data: values are installed only under the record
//!   lock, and readers retry until the word is unlocked and unchanged around their copy.

use super::access::{Kind, NodeEntry};
use crate::cc::worker::TxnState;
use crate::error::AbortReason;
use crate::storage::record::Busy;
use crate::storage::{Head, Tid, TidWord};
use crate::sync::{Epoch, EpochManager, Pin};
use std::sync::atomic::{Ordering, fence};

/// The hooks a concurrency-control protocol supplies to the commit skeleton.
pub(crate) trait Hooks {
    /// READ: a consistent copy of a record's current state and the word it belongs to.
    fn read(head: &Head, out: &mut Vec<u8>) -> Result<TidWord, AbortReason>;
    /// Commit step 3, after the write set is locked: the epoch the commit belongs to.
    fn serialization_point(epochs: &EpochManager) -> Epoch;
    /// Commit step 4.
    fn validate(state: &TxnState, pin: &Pin<'_>) -> Result<(), AbortReason>;
    /// Commit step 5.
    fn commit_tid(
        state: &TxnState,
        last: Tid,
        epoch: Epoch,
        epochs: &EpochManager,
    ) -> Result<Tid, AbortReason>;
}

#[derive(Debug)]
pub(crate) struct Silo;

impl Hooks for Silo {
    #[inline]
    fn read(head: &Head, out: &mut Vec<u8>) -> Result<TidWord, AbortReason> {
        head.read(out).map_err(|Busy| AbortReason::RecordBusy)
    }

    #[inline]
    fn serialization_point(epochs: &EpochManager) -> Epoch {
        // The fence orders the lock acquisitions before the epoch read: a transaction that
        // reads a record after we locked it sees our epoch or a later one (Silo §4.4).
        fence(Ordering::SeqCst);
        epochs.global()
    }

    fn validate(state: &TxnState, pin: &Pin<'_>) -> Result<(), AbortReason> {
        for access in &state.access.entries {
            if !access.validate || access.kind != Kind::Read {
                // Written records were checked against `observed` when they were locked.
                continue;
            }
            // SAFETY: the head was reachable when read and the worker has stayed pinned.
            let current = unsafe { (*access.head).word() };
            if current.is_locked() {
                return Err(AbortReason::ReadLocked);
            }
            if current != access.observed {
                return Err(AbortReason::ReadValidation);
            }
        }
        let nodes_too = state.rules.validate_nodes;
        for &NodeEntry { leaf, always, .. } in &state.nodes.entries {
            if (nodes_too || always) && !leaf.is_current(pin) {
                return Err(AbortReason::NodeValidation);
            }
        }
        Ok(())
    }

    fn commit_tid(
        state: &TxnState,
        last: Tid,
        epoch: Epoch,
        _epochs: &EpochManager,
    ) -> Result<Tid, AbortReason> {
        let mut floor = last;
        for access in &state.access.entries {
            floor = floor.max(access.observed.tid()).max(access.prior.tid());
        }
        Tid::commit_after(floor, epoch).ok_or(AbortReason::SequenceExhausted)
    }
}
