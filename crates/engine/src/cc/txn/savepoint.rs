//! Savepoints: undoing the writes a transaction made since a point, keeping everything else.
//!
//! A savepoint is a mark in the access set: the number of entries when it was taken, and the
//! length of the log of saved entries (`AccessSet::saved`). Entries made after the mark are the
//! savepoint's own; an entry made before it that a later write changes (a row read and then
//! updated, an update written again, an own insert deleted) has its old state saved first
//! (`AccessSet::before_write`), once per write, only while a savepoint is taken.
//!
//! Rolling back to a savepoint puts every write back as it was at the mark:
//!
//! - An entry made after the mark keeps what it read and forgets what it wrote: an update or a
//!   delete becomes a read of the row (still validated at commit: the rolled-back work saw it,
//!   and a client may have too), an insert becomes `Kind::Nothing`, whose head commit gives up
//!   as it gives up an insert deleted again (a fresh head leaves the index, a claimed one gets
//!   its old word back); its secondary entries go now.
//! - An entry made before the mark takes back the kind, row and key it had at the mark, from
//!   the oldest state saved for it since. An own insert is put back with its row's secondary
//!   entries; a head the transaction claimed or created after the mark stays its own until
//!   commit gives it up (`Kind::Nothing`): nobody else could have used it meanwhile.
//!
//! What the transaction read stays in its read and node sets, and locks taken by the locking
//! protocols (`mvto`, `mv2pl`) stay held until it ends: more than it needs, never less, so
//! every isolation level keeps its guarantees for what the whole transaction saw. A
//! transaction that concurrency control aborted cannot go back to a savepoint: its locks are
//! gone (`poison`), and it can only roll back.

use super::{Txn, poison};
use crate::cc::access::{Access, Kind, Span};
use crate::cc::secondary;
use crate::error::{AbortReason, Error, Result};
use crate::storage::Head;
use std::collections::HashMap;

/// A savepoint taken with [`Txn::savepoint`]: its depth in the transaction's stack of
/// savepoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint(usize);

impl Txn<'_> {
    /// Takes a savepoint after everything the transaction has done so far.
    pub fn savepoint(&mut self) -> Result<Savepoint> {
        self.active()?;
        let access = &mut self.worker.txn.access;
        let mark = (access.entries.len() as u32, access.saved.len() as u32);
        access.savepoints.push(mark);
        Ok(Savepoint(access.savepoints.len() - 1))
    }

    /// Forgets `savepoint` and those taken after it; their writes stay (SQL's RELEASE).
    pub fn release_savepoint(&mut self, savepoint: Savepoint) -> Result<()> {
        self.active()?;
        let access = &mut self.worker.txn.access;
        if savepoint.0 >= access.savepoints.len() {
            return Err(unknown_savepoint());
        }
        access.savepoints.truncate(savepoint.0);
        if access.savepoints.is_empty() {
            access.saved.clear();
        }
        Ok(())
    }

    /// Undoes every write made since `savepoint`, which stays taken; those taken after it
    /// are forgotten (SQL's ROLLBACK TO SAVEPOINT). Fails with the abort if the transaction
    /// was aborted (it can then only roll back).
    pub fn rollback_to_savepoint(&mut self, savepoint: Savepoint) -> Result<()> {
        self.active()?;
        let state = &mut self.worker.txn;
        let Some(&(mark, saved_mark)) = state.access.savepoints.get(savepoint.0) else {
            return Err(unknown_savepoint());
        };
        state.access.savepoints.truncate(savepoint.0 + 1);
        let (mark, saved_mark) = (mark as usize, saved_mark as usize);
        // Heads whose own secondary entries go.
        let mut unindexed: Vec<*mut Head> = Vec::new();
        // Entries after the mark: keep the reads, forget the writes.
        for entry in &mut state.access.entries[mark..] {
            match entry.kind {
                Kind::Read | Kind::Nothing => {}
                Kind::Update | Kind::Delete => forget_write(entry),
                Kind::Insert => {
                    entry.kind = Kind::Nothing;
                    state.undid_inserts = true;
                    unindexed.push(entry.head);
                }
            }
        }
        // Entries before it: the oldest state saved for each since the savepoint.
        let mut oldest: HashMap<u32, Access> = HashMap::new();
        for &(index, saved) in &state.access.saved[saved_mark..] {
            if (index as usize) < mark {
                oldest.entry(index).or_insert(saved);
            }
        }
        state.access.saved.truncate(saved_mark);
        let mut reindexed: Vec<usize> = Vec::new();
        for (index, saved) in oldest {
            let index = index as usize;
            let entry = &mut state.access.entries[index];
            match (entry.kind, saved.kind) {
                (Kind::Insert | Kind::Nothing, Kind::Insert) => {
                    if entry.kind == Kind::Insert {
                        unindexed.push(entry.head);
                    }
                    entry.kind = Kind::Insert;
                    entry.value = saved.value;
                    entry.key = saved.key;
                    reindexed.push(index);
                }
                (Kind::Insert | Kind::Nothing, _) => {
                    // Claimed (or made) after the mark: given up at commit.
                    if entry.kind == Kind::Insert {
                        unindexed.push(entry.head);
                    }
                    entry.kind = Kind::Nothing;
                    state.undid_inserts = true;
                }
                (_, Kind::Read) => forget_write(entry),
                (_, _) => {
                    entry.kind = saved.kind;
                    entry.value = saved.value;
                    entry.key = saved.key;
                    entry.keys_unchanged = saved.keys_unchanged;
                    // A statement whose result the transaction has seen is not applied again.
                    entry.recompute &= saved.recompute;
                }
            }
        }
        let entries = &state.access.entries;
        state.recomputes.0.retain(|&(at, _)| {
            let entry = &entries[at as usize];
            entry.kind == Kind::Update && entry.recompute
        });
        state.last_written = super::NOT_RECOMPUTABLE;
        state.last_lookup.forget();
        if !unindexed.is_empty() {
            secondary::remove_entries_of(self.worker, &unindexed);
        }
        reindexed.sort_unstable();
        for index in reindexed {
            let entry = self.worker.txn.access.entries[index];
            let table = std::sync::Arc::clone(
                self.worker.tables[entry.table.index()].as_ref().expect("registered table"),
            );
            if !table.has_secondaries() {
                continue;
            }
            let key = self.worker.txn.access.slice(entry.key).to_vec();
            let row = self.worker.txn.access.slice(entry.value).to_vec();
            let mark = self.worker.txn.inserted_entries.len();
            if let Err(error) =
                secondary::insert_entries(self.worker, &table, entry.head, &key, &row)
            {
                // Another transaction took a unique key the row had: the transaction cannot
                // return to the savepoint's state, and can only roll back.
                secondary::undo_entries(self.worker, mark);
                let reason = error.abort_reason().unwrap_or(AbortReason::InsertConflict);
                return Err(poison(&mut self.worker.txn, reason));
            }
        }
        Ok(())
    }
}

/// An update or delete undone: the entry records the read of the row it replaced.
fn forget_write(entry: &mut Access) {
    entry.kind = Kind::Read;
    entry.value = Span::default();
    entry.key = Span::default();
    entry.keys_unchanged = false;
    entry.recompute = false;
}

#[cold]
fn unknown_savepoint() -> Error {
    Error::InvalidConfig("no such savepoint in this transaction".into())
}
