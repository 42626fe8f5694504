//! Statements that read one state under Silo (docs/isolation.md, "One state per statement").
//!
//! Silo's reads see the newest committed value of each record, so a statement that reads
//! several records can see part of another transaction: the old value of one record and the
//! new value of another. The commit check catches that at REPEATABLE READ and SERIALIZABLE,
//! but only after the client has seen the rows (or an error computed from them), and READ
//! COMMITTED checks nothing. A *watched* statement applies Silo's own validation to itself:
//!
//! - While it runs, the reads no entry records (READ COMMITTED) are kept in
//!   `AccessSet::statement_reads`, and scans and failed lookups record their leaves at every
//!   level (`AccessSet::watching`).
//! - When it ends, [`Txn::check_statement`] checks that nothing it depends on has changed: at
//!   READ COMMITTED what the statement read, at the other levels everything the transaction
//!   read so far too. If nothing has, every value read is the one the database held at the
//!   moment of the check, so the statement saw one committed state (Silo's serialization
//!   argument, applied at the statement's end instead of the transaction's).
//! - If something has and the statement only read, its reads are dropped and it runs again
//!   ([`Txn::restart_statement`]). Otherwise (it wrote, or a read of an earlier statement has
//!   changed at REPEATABLE READ or SERIALIZABLE) the transaction aborts with the validation
//!   reason, SQLSTATE 40001, before anything the statement computed reaches the client.
//!
//! The epoch shortcut. Most statements need no pass over the reads at all. Before anything is
//! read (and before each full check) the transaction reads the global epoch E and then fences
//! (`AccessSet::checked_at`). A commit W that changes a record afterwards locks it after our
//! read of it, fences and reads its epoch: the seq_cst fences order our fence before W's (else
//! our read would have seen W's lock), so W's epoch is at least E. A transaction that depends on
//! W, directly or through anti-dependencies, takes an epoch at least W's (Silo orders every edge
//! by epoch: a later writer of a record W read locks it after W's validation, the same
//! argument). So if everything the statement observed is from epochs below E, it reflects no
//! commit that changed what the transaction read since E: the reads are one state, no check
//! needed. Only a statement that saw something committed in or after E's epoch (40 ms by
//! default) walks its reads. The shortcut serves repeatable-read and serializable, whose checks
//! walk every read of the transaction; a read-committed check walks only its own statement's
//! reads, and reads no epoch (a fence per statement would cost more than it saves there).
//!
//! A statement that keeps meeting changes (a long scan of a table being updated) may read its
//! rest at the newest stable snapshot epoch instead ([`Txn::snapshot_statement`]), when the
//! transaction has written nothing it would then fail to see: one consistent state, at most
//! a snapshot interval old.
//!
//! The multi-version protocols need none of this: their statements read a snapshot, a
//! timestamp or under locks. Watching applies only where reads see the newest committed
//! value (Silo), and changes nothing when no statement is watched.

use super::{Txn, pinned};
use crate::cc::Isolation;
use crate::cc::access::{Held, Kind};
use crate::cc::mv::Locking;
use crate::cc::worker::Status;
use crate::error::{AbortReason, Result};
use crate::storage::{Head, TidWord};
use crate::sync::Epoch;
use std::sync::atomic::{Ordering, fence};

/// What [`Txn::check_statement`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementCheck {
    /// Everything the statement depends on still holds: it read one state.
    Consistent,
    /// Something the statement read has changed, and it only read: drop its reads
    /// ([`Txn::restart_statement`]) and run it again.
    Retry,
}

/// How often a record locked by a committer is looked at again before it counts as changed.
const LOCKED_LOOKS_MAX: u32 = 4_096;

/// The record's word once no commit holds it locked (`None`: still locked after many looks,
/// which counts as changed). Silo holds record locks only while a commit installs.
fn settled_word(head: *mut Head) -> Option<TidWord> {
    for look in 0..LOCKED_LOOKS_MAX {
        // SAFETY: the head was reached while pinned and the worker has stayed pinned.
        let word = unsafe { (*head).word() };
        if !word.is_locked() {
            return Some(word);
        }
        if look < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    None
}

impl Txn<'_> {
    /// Starts watching the next statement. Does nothing (and the checks below always pass)
    /// under the multi-version protocols and in snapshot transactions, whose statements read
    /// one state by construction.
    #[inline]
    pub fn watch_statement(&mut self) -> Result<()> {
        self.active()?;
        let state = &mut self.worker.txn;
        // MV2PL reads the current rows under read locks, which keep what was read from
        // changing but not a gap from filling: its statements at repeatable-read and
        // serializable are watched for phantoms (its read-committed ones read a snapshot).
        let two_phase =
            state.rules.locking == Locking::TwoPhase && state.isolation != Isolation::ReadCommitted;
        if state.snapshot.is_some() || (state.begin.is_some() && !two_phase) {
            return Ok(());
        }
        let fresh = state.access.entries.is_empty() && state.nodes.entries.is_empty();
        if state.begin.is_some() || state.isolation == Isolation::ReadCommitted {
            // The epoch shortcut holds for Silo's epochs only, and is not taken at
            // read-committed, where a check walks only the statement's own reads (which it
            // recorded anyway): no epoch read and fence on every statement.
            state.access.checked_at = None;
        } else if fresh {
            // Every read of the transaction comes after this epoch and fence.
            state.access.checked_at = Some(self.worker.shared.epochs.global());
            fence(Ordering::SeqCst);
        }
        let state = &mut self.worker.txn;
        state.access.watching = true;
        state.access.statement_reads.clear();
        state.access.statement_high = Epoch::NEVER;
        state.access.statement_mark = state.access.entries.len();
        state.nodes.statement_mark = state.nodes.entries.len();
        Ok(())
    }

    /// Whether the watched statement read one state. On a change it cannot run again from
    /// (it wrote, an earlier statement's read changed where the level re-checks reads, or
    /// `may_retry` is false), the transaction is aborted and the error returned.
    #[inline]
    pub fn check_statement(&mut self, may_retry: bool) -> Result<StatementCheck> {
        self.active()?;
        let state = &mut self.worker.txn;
        if !state.access.watching {
            return Ok(StatementCheck::Consistent);
        }
        let access = &mut state.access;
        if state.isolation == Isolation::ReadCommitted
            && access.statement_reads.len() <= 1
            && access.entries.len() == access.statement_mark
            && state.nodes.entries.len() == state.nodes.statement_mark
        {
            // One record read (or none): one state by Silo's read protocol, and nothing to
            // settle but the flag.
            access.watching = false;
            access.statement_reads.clear();
            return Ok(StatementCheck::Consistent);
        }
        self.check_statement_reads(may_retry)
    }

    /// [`Txn::check_statement`] past its one-read case.
    #[inline(never)]
    fn check_statement_reads(&mut self, may_retry: bool) -> Result<StatementCheck> {
        let state = &mut self.worker.txn;
        let whole = state.isolation != Isolation::ReadCommitted;
        let (mark, node_mark) = (state.access.statement_mark, state.nodes.statement_mark);
        let access = &state.access;
        let high = access.entries[mark..]
            .iter()
            .map(|entry| entry.observed.tid().epoch())
            .fold(access.statement_high, Epoch::max);
        if state.begin.is_none() && access.checked_at.is_some_and(|at| high < at) {
            // The epoch shortcut (module docs).
            self.settle_statement();
            return Ok(StatementCheck::Consistent);
        }
        let now = self.worker.shared.epochs.global();
        fence(Ordering::SeqCst);
        let state = &mut self.worker.txn;
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        let mut changed_here = None;
        let mut changed_before = None;
        for &(head, seen, _) in &state.access.statement_reads {
            if settled_word(head) != Some(seen) {
                changed_here = Some(AbortReason::ReadValidation);
                break;
            }
        }
        let first = if whole { 0 } else { mark };
        for (index, entry) in state.access.entries.iter().enumerate().skip(first) {
            // Inserts are of records this transaction made or claimed; a recomputed update
            // is applied to whatever row its commit finds (`Txn::update_recomputable`).
            // A record under an MV2PL lock cannot change.
            if !entry.validate
                || entry.recompute
                || entry.fresh
                || entry.held != Held::Nothing
                || matches!(entry.kind, Kind::Insert | Kind::Nothing)
            {
                continue;
            }
            if settled_word(entry.head) != Some(entry.observed) {
                let slot = if index >= mark { &mut changed_here } else { &mut changed_before };
                *slot = Some(AbortReason::ReadValidation);
                if index < mark {
                    break;
                }
            }
        }
        let first = if whole { 0 } else { node_mark };
        for (index, node) in state.nodes.entries.iter().enumerate().skip(first) {
            if !node.leaf.is_current(&pin) {
                let slot = if index >= node_mark { &mut changed_here } else { &mut changed_before };
                *slot = Some(AbortReason::NodeValidation);
                if index < node_mark {
                    break;
                }
            }
        }
        let reason = match (changed_before, changed_here) {
            (None, None) => {
                if whole {
                    // Everything read so far was unchanged after `now` was read.
                    self.worker.txn.access.checked_at = Some(now);
                }
                self.settle_statement();
                return Ok(StatementCheck::Consistent);
            }
            (Some(reason), _) => reason,
            (None, Some(reason)) => {
                let state = &self.worker.txn;
                let only_read = state.access.entries[mark..]
                    .iter()
                    .all(|entry| entry.kind == Kind::Read && entry.held == Held::Nothing);
                if only_read && may_retry {
                    return Ok(StatementCheck::Retry);
                }
                reason
            }
        };
        Err(super::poison(&mut self.worker.txn, reason))
    }

    /// Drops what the watched statement's attempt recorded (it only read), so that it can
    /// run again and be checked afresh.
    pub fn restart_statement(&mut self) -> Result<()> {
        self.active()?;
        let state = &mut self.worker.txn;
        if !state.access.watching {
            return Ok(());
        }
        let mark = state.access.statement_mark;
        debug_assert!(state.access.entries[mark..].iter().all(|entry| entry.kind == Kind::Read));
        // Entries that hold an MV2PL read lock stay, so that the lock is released at the end;
        // the statement finds them again as its own.
        if state.access.entries[mark..].iter().all(|entry| entry.held == Held::Nothing) {
            state.access.truncate(mark);
        }
        state.access.statement_reads.clear();
        state.nodes.truncate(state.nodes.statement_mark);
        state.last_lookup.forget();
        Ok(())
    }

    /// Makes the rest of the watched statement read at the newest stable snapshot epoch (a
    /// consistent state that never needs checking), if the transaction has written nothing
    /// (its own writes would be invisible there). Returns whether it does. Undone by
    /// [`Txn::end_statement`].
    pub fn snapshot_statement(&mut self) -> Result<bool> {
        self.active()?;
        let state = &mut self.worker.txn;
        if !state.access.watching
            || state.begin.is_some()
            || state.access.entries.iter().any(|e| e.kind != Kind::Read)
        {
            return Ok(false);
        }
        self.restart_statement()?;
        let state = &mut self.worker.txn;
        state.access.watching = false;
        state.snapshot = Some(self.worker.shared.epochs.enter_snapshot(self.worker.slot));
        Ok(true)
    }

    /// Ends the watched statement (after its check, or when it failed): a statement read at
    /// a snapshot goes back to reading current values.
    #[inline]
    pub fn end_statement(&mut self) {
        let state = &self.worker.txn;
        if state.status == Status::Idle || !(state.access.watching || state.snapshot.is_some()) {
            return;
        }
        self.end_watched_statement();
    }

    #[inline(never)]
    fn end_watched_statement(&mut self) {
        let state = &mut self.worker.txn;
        if state.begin.is_none()
            && state.snapshot.is_some()
            && state.isolation != Isolation::Snapshot
        {
            self.worker.shared.epochs.leave_snapshot(self.worker.slot);
            self.worker.txn.snapshot = None;
        }
        self.settle_statement();
    }

    /// Stops watching. At READ COMMITTED what the statement recorded only for itself goes:
    /// later statements do not depend on it.
    fn settle_statement(&mut self) {
        let state = &mut self.worker.txn;
        if !state.access.watching {
            return;
        }
        state.access.watching = false;
        state.access.statement_reads.clear();
        if state.isolation == Isolation::ReadCommitted && !state.rules.validate_nodes {
            let mark = state.nodes.statement_mark;
            state.nodes.keep_always_from(mark);
        }
    }
}
