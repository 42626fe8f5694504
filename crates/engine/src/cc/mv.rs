//! The multi-version protocols over Engram's version chains: snapshot isolation (`si`),
//! multi-version optimistic concurrency control (`mvocc`) and snapshot isolation with the
//! serial safety net (`ssn`, whose commit-time check is `ssn.rs`), after Wu et al. (VLDB 2017,
//! §3.1, §3.2 and §3.4) and PostgreSQL's REPEATABLE READ; and the protocol choice itself,
//! including the pessimistic `mvto` (`mvto.rs`) and `mv2pl` (`mv2pl.rs`), whose sections are
//! in their own files. The protocol is chosen when a database opens ([`Protocol`],
//! `Config::protocol`, the CLI's `--protocol`); Silo (`silo.rs`) stays the default.
//!
//! PAPER
//! Wu et al. §2.1 (version header), §3.1 (MVOCC: read, validation and write phases, commit
//! timestamp at validation), §3.3 (snapshot isolation, first committer wins); Silo §4.4 for the
//! commit skeleton these run in (`commit.rs`).
//!
//! STATE
//! A global timestamp clock (`EpochManager::next_timestamp`): the newest commit TID handed
//! out. Commit timestamps are TIDs (the epoch read at the serialization point, or a later one
//! the clock already reached, and a sequence), so the log, recovery and snapshot transactions
//! treat them as Silo's. Per worker slot, a lower bound of the running transaction's read
//! timestamp (`EpochManager::enter_reader`); `readers_low`, the minimum over slots, decides
//! which versions installs keep (`Retention`). The version header is the record head's
//! (`storage::record`), mapped onto the paper's Fig. 1:
//!
//! | paper field | Engram                                                                 |
//! |-------------|------------------------------------------------------------------------|
//! | txn-id (optimistic protocols) | the TID word's LOCK bit: set by the committer that holds the record |
//! | begin-ts    | the version's TID (bits 4..64 of the word)                              |
//! | end-ts      | the TID of the next newer version (the head's word, or the version before it in the chain) |
//! | pointer     | `older`: the next older version (newest-to-oldest chain)                |
//! | txn-id (`mvto`, `mv2pl`) | the writer's lock, held from its write to its end: MVTO's owner word (the writer's timestamp), MV2PL's write bit (`sync::lockword`) |
//! | read-ts (`mvto`) | the newest timestamp that read the current version (per record)   |
//! | read-cnt (`mv2pl`) | the read locks on the current version, beside the write bit       |
//! | pstamp, sstamp (`ssn`) | the head's stamps and each version's creator π (`ssn.rs`)    |
//!
//! READ
//! A transaction takes its read timestamp `b` when it begins (`si` and `mvocc` at READ
//! COMMITTED: again at every statement, `Txn::next_statement`). A read returns the newest
//! version with a TID at or below `b` (`Head::read_as_of`), waiting while a committer holds
//! the record, whose TID may be at or below `b`. (Under `mvto` a READ COMMITTED statement's
//! snapshot also lists the transactions at or below `b` that commit at their begin timestamps
//! and have not yet locked their writes, and passes over their versions: `mvto.rs`, READ.)
//! Where reads are validated (see the table), a
//! read must find the record unchanged since `b` and is recorded for commit-time validation;
//! a record changed since `b` aborts the transaction at once (`ReadValidation`), since its
//! validation could not succeed.
//!
//! WRITE
//! Buffered in the access set until commit, as under Silo. Under first-committer-wins (the
//! table), a write to a record changed since `b` aborts at once (`WriteConflict`), and so does
//! an insert over a row deleted or inserted since `b`.
//!
//! COMMIT (numbers match `commit.rs`)
//! 1. Lock the write set in address order; under first-committer-wins, every updated or
//!    deleted record must still carry a TID at or below `b`.
//! 3. Fence, then read the global epoch E.
//! 4. Validate the read set and the node set where the table says so (Silo's checks).
//! 5. Commit timestamp: the next clock value (in E or the clock's later epoch).
//! 6. Install, keeping the replaced version while a reader at or above `readers_low` or a
//!    snapshot may read it; release.
//!
//! | protocol | level            | reads see         | reads validated | nodes validated | first committer wins |
//! |----------|------------------|-------------------|-----------------|-----------------|----------------------|
//! | si       | READ COMMITTED   | statement's `b`   | no              | no              | no                   |
//! | si       | REPEATABLE READ  | transaction's `b` | no              | no              | yes                  |
//! | si       | SERIALIZABLE     | transaction's `b` | yes             | yes             | yes                  |
//! | mvocc    | READ COMMITTED   | statement's `b`   | no              | no              | no                   |
//! | mvocc    | REPEATABLE READ  | transaction's `b` | yes             | no              | yes                  |
//! | mvocc    | SERIALIZABLE     | transaction's `b` | yes             | yes             | yes                  |
//! | ssn      | READ COMMITTED   | statement's `b`   | no              | no              | no                   |
//! | ssn      | REPEATABLE READ  | transaction's `b` | no              | no              | yes                  |
//! | ssn      | SERIALIZABLE     | transaction's `b` | no (recorded for the exclusion window, `ssn.rs`) | yes | yes |
//!
//! `get_for_update` reads are validated at every level, as under Silo.
//!
//! DEVIATIONS
//! - The paper's MVOCC re-checks read versions only at validation; Engram aborts as soon as a
//!   validated read meets a record changed since `b`, which changes when, not whether, it
//!   aborts.
//! - SERIALIZABLE under `si` is serializable by MVOCC's validation; the serial safety net is
//!   the separate protocol `ssn`, so that the two can be measured side by side.
//! - Versions are kept by a conservative bound (`readers_low`, refreshed by the ticker and by
//!   workers' writing commits, `READERS_REFRESH_COMMITS`), not per-reader intervals.
//! - Snapshot transactions (`Isolation::Snapshot`) keep reading at Silo's epoch boundaries.
//!
//! INVARIANTS
//! - Every committed TID is above every read timestamp taken before its clock step, and a
//!   committer holds all its write locks before it takes that step: a reader at `b` either
//!   finds a committer with TID at or below `b` still holding the record (and waits) or sees
//!   its version. An `mvto` transaction's TID is its begin timestamp, taken long before its
//!   commit: READ COMMITTED statements leave it out until it holds those locks (`mvto.rs`,
//!   READ), and its timestamp-ordered readers meet its owner words instead.
//! - `readers_low` never exceeds a running transaction's `b` (`EpochManager::enter_reader`),
//!   nor an `mvto` statement's bound below the first transaction it leaves out
//!   (`StatementSnapshot::retention_bound`), and an install keeps every version superseded
//!   above it, so a reader finds its version.
//! - A deleted record is unlinked only when its delete is below `readers_low`: every reader
//!   sees the delete.

use super::silo::{Hooks, Silo};
use crate::cc::worker::TxnState;
use crate::error::AbortReason;
pub(crate) use crate::protocol::Locking;
use crate::storage::{Head, Tid, TidWord};
use crate::sync::{Epoch, EpochManager, Pin};

/// A worker recomputes `readers_low` at a writing commit whenever its count of ended
/// transactions is a multiple of this (besides the ticker's recomputation every epoch), so that
/// hot records' chains are pruned within a few hundred commits rather than an epoch's worth.
pub(crate) const READERS_REFRESH_COMMITS: u64 = 16;

/// How one read meets the record's versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// The current committed state (Silo, and `get_for_update` at READ COMMITTED).
    Current,
    /// The newest state at or below the timestamp.
    AsOf(Tid),
    /// The current state, which must not be newer than the timestamp.
    CurrentSince(Tid),
    /// As [`ReadMode::AsOf`], and the state read is recorded for the serial safety net.
    Recorded(Tid),
    /// MV2PL: the current state under a read lock (the write lock when `exclusive`).
    Locked { exclusive: bool },
    /// MVTO: the state at the timestamp, raising the read timestamp of the current version
    /// (or under the write lock when `exclusive`).
    Ordered { at: Tid, exclusive: bool },
}

impl ReadMode {
    /// The mode of a read by `state`, validated or not.
    #[inline]
    pub fn of(state: &TxnState, validate: bool) -> ReadMode {
        match state.begin {
            None => ReadMode::Current,
            Some(at) if state.rules.lock_reads => match state.rules.locking {
                Locking::TwoPhase => ReadMode::Locked { exclusive: validate },
                Locking::Timestamps => ReadMode::Ordered { at, exclusive: validate },
                Locking::None => unreachable!("reads lock only under a locking protocol"),
            },
            Some(begin) if !validate && state.rules.ssn => ReadMode::Recorded(begin),
            Some(begin) if !validate => ReadMode::AsOf(begin),
            Some(begin) if state.rules.first_committer_wins => ReadMode::CurrentSince(begin),
            Some(_) => ReadMode::Current,
        }
    }

    /// The timestamp reads are taken at, if any.
    #[inline]
    pub fn bound(self) -> Option<Tid> {
        match self {
            ReadMode::Current | ReadMode::Locked { .. } => None,
            ReadMode::AsOf(at)
            | ReadMode::CurrentSince(at)
            | ReadMode::Recorded(at)
            | ReadMode::Ordered { at, .. } => Some(at),
        }
    }
}

/// The timestamp written records must not have changed since (first committer wins), if the
/// transaction has one.
#[inline]
pub(crate) fn unchanged_since(state: &TxnState) -> Option<Tid> {
    if state.rules.first_committer_wins { state.begin } else { None }
}

/// Whether a write by `state` to a record whose current word is `word` loses to a commit
/// made since the transaction's read timestamp.
#[inline]
pub(crate) fn write_conflicts(state: &TxnState, word: TidWord) -> bool {
    unchanged_since(state).is_some_and(|begin| word.tid() > begin)
}

/// The commit hooks of the multi-version protocols.
#[derive(Debug)]
pub(crate) struct Mv;

impl Hooks for Mv {
    #[inline]
    fn read(head: &Head, out: &mut Vec<u8>) -> Result<TidWord, AbortReason> {
        Silo::read(head, out)
    }

    #[inline]
    fn serialization_point(epochs: &EpochManager) -> Epoch {
        Silo::serialization_point(epochs)
    }

    fn validate(state: &TxnState, pin: &Pin<'_>) -> Result<(), AbortReason> {
        // The same checks as Silo's: a validated read found the record unchanged since the
        // read timestamp, so "unchanged now" means no commit touched it in between.
        Silo::validate(state, pin)
    }

    fn commit_tid(
        _state: &TxnState,
        _last: Tid,
        epoch: Epoch,
        epochs: &EpochManager,
    ) -> Result<Tid, AbortReason> {
        epochs.next_timestamp(epoch).ok_or(AbortReason::SequenceExhausted)
    }
}
