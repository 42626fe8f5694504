//! The serial safety net (SSN) on snapshot isolation: protocol `ssn` at SERIALIZABLE (Wang,
//! Johnson, Fekete and Pandis, "Efficiently making (almost) any concurrency control mechanism
//! serializable", VLDB Journal 2017; Wu et al., VLDB 2017, §3.4). Below SERIALIZABLE `ssn`
//! is `si` (`mv.rs`).
//!
//! PAPER
//! A transaction T gets a commit stamp c(T). Its high watermark η(T) is the newest commit
//! stamp of a transaction that must precede it and committed before it; its low watermark π(T)
//! is the oldest π of a transaction that must follow it and committed before it (at most
//! c(T)). T may commit only if π(T) > η(T): otherwise some transaction both precedes and
//! follows it in the dependency order, and a cycle could close (the exclusion window).
//!
//! STATE
//! Per record head (allocated with [`Stamps`] while the database runs `ssn`): a latch, the
//! current version's pstamp (the newest c of a committed reader) and the current version's
//! creator π. Per older version: its creator's π (`Version::creator_pi`), copied from the
//! head when the version is linked into the chain; the sstamp of a version (π of the
//! transaction that overwrote it) is the creator π of the state after it
//! (`Head::successor_pi`). Per index leaf: a pstamp, the newest c of a transaction that
//! scanned it (phantoms, below). Per transaction: every state read (the access set records
//! reads, `ReadMode::Recorded`), and the leaves its own inserts changed (`NodeSet::changed`).
//!
//! READ
//! As snapshot isolation: the newest state at or below the read timestamp `b`, recorded with
//! its TID.
//!
//! WRITE
//! As snapshot isolation (first committer wins on the records written).
//!
//! COMMIT (numbers match `commit.rs`)
//! 1. Lock the write set (first committer wins), then latch every record read or written, in
//!    address order (`latch`). Conflicting commits are thereby serialized on each record they
//!    share, and the clock step below happens inside the latches: whichever latches a
//!    record second has the larger commit stamp and sees the first one's stamps.
//! 3. The serialization point. The pstamps of the leaves T's inserts changed are read
//!    (`inserted_leaves_high`) before c(T) is taken from the clock
//!    (`EpochManager::next_timestamp`, also for read-only transactions): a leaf holds only
//!    the largest stamp published on it, and a scanner that took its stamp after T's could
//!    otherwise hide an earlier scanner's. Then scanned leaves get c(T) as pstamp before node
//!    validation (`publish_scans`).
//! 4. Node validation (Silo's), then the exclusion check (`exclusion_check`):
//!    - η: for each state read, its TID (the writer T read from); for each record written,
//!      the replaced state's TID and the record's pstamp (readers that committed before T);
//!      for each leaf T's inserts changed, the leaf's pstamp (read in step 3), which is below
//!      c(T) (`leaves_high_below`).
//!    - π: c(T), lowered to the creator π of the state after each state read that a
//!      committed transaction overwrote.
//!    - abort (`Exclusion`) unless π > η.
//! 6. Install the writes; each new version's creator π is π(T) and its pstamp is reset. Each
//!    record read whose state is still current gets pstamp max(pstamp, c(T)). Unlatch.
//!
//! PHANTOMS
//! An insert into a range T scanned is an edge from T to the inserter U that no record
//! carries. If U inserted before T validated its leaves, T aborts (node validation, as under
//! Silo). Otherwise T published c(T) on the leaf before validating it, U's insert changed the
//! leaf after that, and U reads the leaf's pstamp at commit after a fence: one of the two sees
//! the other (`LeafVersion::publish_pstamp`). A leaf replaced by a split or merge passes its
//! pstamp on to the leaves that replace it (`BTree`'s `inherit_pstamp`). A scan that meets
//! U's uncommitted head records it as a read like any other (a fresh head's absent state has
//! TID zero, `Head::successor_pi`). A point read (or a write) that finds the key's record
//! absent records the record's leaf too, as for a key the index lacks: that record may leave
//! the index before T commits (U rolls back, or a deleted record is unlinked), and a later
//! insert of the key makes a new record that carries none of the old one's stamps. The
//! removal changes the leaf (T aborts if it came before T's validation), and the new insert
//! changes it after, which the leaf stamps order (`txn::absent_record_leaf`). Before this, a
//! reader of U's rolled-back insert and the key's next inserter could both commit with an
//! anti-dependency each way (the history test found it; the transactions test replays it).
//!
//! DEVIATIONS
//! - The paper's parallel commit avoids latches: readers register in a per-version bitmap
//!   and committers wait for conflicting commits with smaller stamps. Engram serializes
//!   conflicting commits on per-record latches instead, which are held only during commit and
//!   never block reads.
//! - Node validation makes scans stricter than SSN needs: an insert into a scanned leaf
//!   aborts the scanner even without a cycle.
//! - A read whose successor state the chain no longer shows, or of a record unlinked since,
//!   aborts (`Exclusion`) rather than guess its stamp.
//! - `get_for_update` reads are still validated (unchanged since `b`), as at every level.
//!
//! INVARIANTS
//! - c(T) is taken while T holds the latch of every record it touched, so for two
//!   transactions sharing a record, the one that latched it later has the larger stamp and
//!   reads what the other published.
//! - Stamps are read and written only under the record's latch (leaf pstamps: fetch-max and
//!   a fence, see PHANTOMS).
//! - A transaction commits only if π(T) > η(T).

use super::access::Kind;
use crate::cc::worker::TxnState;
use crate::error::AbortReason;
use crate::storage::record::{Busy, Stamps};
use crate::storage::{Head, Tid};
use crate::sync::Pin;

/// The stamps of a head in the access set.
#[inline]
fn stamps<'a>(head: *mut Head) -> Option<&'a Stamps> {
    // SAFETY: heads in the access set were reached while pinned (or are owned), and the worker
    // stays pinned until the transaction ends; the reference does not outlive that.
    unsafe { (*head).stamps() }
}

/// Step 1b: latches every record the transaction read or wrote, in address order.
pub(crate) fn latch(state: &mut TxnState) -> Result<(), AbortReason> {
    let TxnState { access, latch_order, .. } = state;
    latch_order.clear();
    for (position, entry) in access.entries.iter().enumerate() {
        if entry.kind != Kind::Nothing {
            latch_order.push(position as u32);
        }
    }
    latch_order.sort_unstable_by_key(|&position| access.entries[position as usize].head as usize);
    for &position in latch_order.iter() {
        let entry = &mut access.entries[position as usize];
        // A head without stamps was made before the database ran `ssn`: nothing to go by.
        let stamps = stamps(entry.head).ok_or(AbortReason::Exclusion)?;
        stamps.latch().map_err(|Busy| AbortReason::RecordBusy)?;
        entry.latched = true;
    }
    Ok(())
}

/// Step 3b: gives every scanned leaf the commit stamp, before node validation.
pub(crate) fn publish_scans(state: &TxnState, commit: Tid, pin: &Pin<'_>) {
    state.nodes.publish_pstamps(commit.as_u64(), pin);
}

/// Step 3a, before the commit stamp is taken: the newest pstamp on a leaf our inserts changed,
/// which bounds the stamps of the scans that saw such a leaf before our inserts changed it
/// (PHANTOMS). A leaf keeps only the largest stamp published on it, so it must be read before
/// any transaction with a stamp above ours can publish: read after our stamp, a later
/// scanner's stamp could hide an earlier one's, which then never reached η (the stress test
/// in `tests/history.rs` found such cycles, docs/isolation.md). A scan that publishes after
/// this read fails its own validation (the handshake) or saw our head.
pub(crate) fn inserted_leaves_high(state: &TxnState, pin: &Pin<'_>) -> Tid {
    Tid::from_u64(state.nodes.changed_pstamp_high(pin))
}

/// η's share of [`inserted_leaves_high`] once the commit stamp is known. A leaf stamp at or
/// above `commit` cannot have been published before the read that found it (the stamp was
/// taken before the publish, and the read before our stamp); if one is seen all the same, the
/// stamps below it that it may hide are assumed as high as they can be, so that T commits only
/// if nothing lowered π(T).
pub(crate) fn leaves_high_below(leaves_high: Tid, commit: Tid) -> Tid {
    if leaves_high < commit { leaves_high } else { Tid::from_u64(commit.as_u64() - 1) }
}

/// Step 4b: the exclusion-window check, `leaves_high` from [`leaves_high_below`]. Returns
/// π(T).
pub(crate) fn exclusion_check(
    state: &TxnState,
    commit: Tid,
    leaves_high: Tid,
) -> Result<Tid, AbortReason> {
    let mut high = leaves_high; // η(T)
    let mut low = commit; // π(T)
    for entry in &state.access.entries {
        if !entry.latched {
            continue;
        }
        // SAFETY: see `stamps`.
        let head = unsafe { &*entry.head };
        match entry.kind {
            Kind::Read => {
                let read = entry.observed.tid();
                high = high.max(read);
                let current = head.word();
                trace_ev!(crate::trace::Ev::Excl {
                    head: entry.head as u64,
                    kind: 0,
                    observed: entry.observed.raw(),
                    prior: 0,
                    pstamp: stamps(entry.head).map_or(0, |s| s.pstamp().as_u64()),
                    cur: current.raw(),
                    succ: if current.tid() > read {
                        head.successor_pi(read).map_or(u64::MAX, Tid::as_u64)
                    } else {
                        0
                    },
                });
                if !current.is_latest() {
                    return Err(AbortReason::Exclusion);
                }
                if current.tid() > read {
                    // Overwritten by a committed transaction, which must follow us.
                    low = low.min(head.successor_pi(read).ok_or(AbortReason::Exclusion)?);
                }
            }
            Kind::Update | Kind::Delete | Kind::Insert => {
                // Latched, so it has stamps (`latch`).
                let pstamp = stamps(entry.head).map_or(Tid::ZERO, Stamps::pstamp);
                trace_ev!(crate::trace::Ev::Excl {
                    head: entry.head as u64,
                    kind: entry.kind as u8,
                    observed: entry.observed.raw(),
                    prior: entry.prior.raw(),
                    pstamp: pstamp.as_u64(),
                    cur: head.word().raw(),
                    succ: 0,
                });
                high = high.max(entry.prior.tid()).max(pstamp);
            }
            Kind::Nothing => {}
        }
    }
    trace_ev!(crate::trace::Ev::Check { pi: low.as_u64(), eta: high.as_u64(), ok: low > high });
    if low <= high {
        return Err(AbortReason::Exclusion);
    }
    Ok(low)
}

/// Step 6b, for a record this transaction wrote, after its install and before its unlock:
/// the new version's creator is us, and nobody has read it yet.
#[inline]
pub(crate) fn stamp_install(head: &Head, low: Tid) {
    if let Some(stamps) = head.stamps() {
        stamps.set_creator_pi(low);
    }
}

/// Step 6c: publishes the reads' pstamps and releases every latch (also on abort, with
/// `commit` `None`: nothing is published).
pub(crate) fn release(state: &mut TxnState, commit: Option<Tid>) {
    for entry in state.access.entries.iter_mut() {
        if !entry.latched {
            continue;
        }
        entry.latched = false;
        // SAFETY: see `stamps`.
        let head = unsafe { &*entry.head };
        let Some(stamps) = stamps(entry.head) else { continue };
        let pstamp = match (commit, entry.kind) {
            // A new version: nobody has read it.
            (Some(_), Kind::Update | Kind::Delete | Kind::Insert) => Tid::ZERO,
            // We read the current version: its overwriters must follow us.
            (Some(commit), Kind::Read) if head.word().tid() == entry.observed.tid() => {
                stamps.pstamp().max(commit)
            }
            _ => stamps.pstamp(),
        };
        trace_ev!(crate::trace::Ev::Release {
            head: entry.head as u64,
            kind: entry.kind as u8 + if commit.is_some() { 10 } else { 0 },
            pstamp: pstamp.as_u64(),
            cur: head.word().raw(),
        });
        stamps.unlatch(pstamp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_stamp_at_or_above_the_commit_stamp_counts_as_the_one_just_below() {
        let commit = Tid::from_u64(1_000);
        assert_eq!(leaves_high_below(Tid::ZERO, commit), Tid::ZERO);
        assert_eq!(leaves_high_below(Tid::from_u64(998), commit), Tid::from_u64(998));
        for seen in [1_000, 1_001, u64::MAX] {
            let high = leaves_high_below(Tid::from_u64(seen), commit);
            assert_eq!(high, Tid::from_u64(999));
            // Only a transaction whose π nothing lowered (π = c) passes the exclusion check.
            assert!(commit > high);
        }
    }
}
