//! Inserts (MOT's optimistic insert, §3): a fresh head goes into the index at once and is
//! filled at commit; a key whose head is already there (a deleted row's, or a racing
//! insert's) is claimed instead, or the insert reports the duplicate or the conflict.

use super::{
    LOOKUP_ATTEMPTS_MAX, Txn, bytes_writable, check_key, check_value, duplicate, lock_for_write,
    pinned, poison, poison_at, reads_still_valid, unlock,
};
use crate::cc::access::{Access, Held, Kind};
use crate::cc::conflict::Site;
use crate::cc::mv::{self, Locking};
use crate::cc::secondary;
use crate::cc::worker::TableRef;
use crate::error::{AbortReason, Result};
use crate::storage::record::{Busy, HeadShape};
use crate::storage::{Head, Table, TableId, TidWord};
use crate::sync::Pin;

impl Txn<'_> {
    /// Inserts a row; fails with `DuplicateKey` if the key (or a unique secondary key) exists.
    #[inline]
    pub fn insert(&mut self, table: &TableRef, key: &[u8], value: &[u8]) -> Result<()> {
        bytes_writable(table)?;
        self.insert_row(table, key, value)
    }

    /// [`Txn::insert`] of a row's bytes, or of a non-inline table's patch.
    pub(super) fn insert_row(&mut self, table: &TableRef, key: &[u8], value: &[u8]) -> Result<()> {
        self.writable()?;
        check_key(key)?;
        check_value(value)?;
        let table_id = self.worker.register_table(table);
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        for _ in 0..LOOKUP_ATTEMPTS_MAX {
            // Most inserts are of new keys: insert a fresh head at once (one descent), and deal
            // with an existing head only when the index reports one.
            let existing = match self.insert_fresh(table, table_id, key, value, &pin)? {
                None => return Ok(()),
                Some(existing) => existing,
            };
            if self.insert_existing(table, table_id, existing as *mut Head, key, value)? {
                return Ok(());
            }
        }
        let state = &mut self.worker.txn;
        Err(poison_at(state, AbortReason::InsertConflict, Site::key_of(table_id), key))
    }

    /// Insert where the index already has a head for the key. Returns `false` to look again.
    fn insert_existing(
        &mut self,
        table: &Table,
        table_id: TableId,
        head: *mut Head,
        key: &[u8],
        value: &[u8],
    ) -> Result<bool> {
        let worker = &mut *self.worker;
        let own = worker.txn.access.find(head);
        if let Some(index) = own {
            worker.txn.access.before_write(index);
            let entry = worker.txn.access.entries[index];
            match entry.kind {
                Kind::Delete => {
                    // Deleted and inserted again in one transaction: an update, of any keys.
                    let span = worker.txn.access.store(value);
                    let entry = &mut worker.txn.access.entries[index];
                    entry.kind = Kind::Update;
                    entry.value = span;
                    entry.keys_unchanged = false;
                    worker.txn.updates_indexed_rows |= table.has_secondaries();
                    return Ok(true);
                }
                Kind::Nothing => {
                    let mark = worker.txn.inserted_entries.len();
                    if let Err(error) = secondary::insert_entries(worker, table, head, key, value) {
                        secondary::undo_entries(worker, mark);
                        return Err(error);
                    }
                    let span = worker.txn.access.store(value);
                    let entry = &mut worker.txn.access.entries[index];
                    entry.kind = Kind::Insert;
                    entry.value = span;
                    return Ok(true);
                }
                Kind::Insert | Kind::Update => return Err(duplicate(table, None)),
                Kind::Read => {}
            }
        }
        // SAFETY: reached through the index while pinned.
        let head_ref = unsafe { &*head };
        let state = &mut worker.txn;
        let site = Site::record(table_id, head);
        let own = match state.rules.locking {
            Locking::None => own,
            _ => Some(
                lock_for_write(state, head, table_id, own)
                    .map_err(|r| poison_at(state, r, site, key))?,
            ),
        };
        let word = head_ref
            .stable_word()
            .map_err(|Busy| poison_at(state, AbortReason::RecordBusy, site, key))?;
        if !word.is_latest() {
            if let Some(index) = own {
                // An unlinked record's memory may be reclaimed once this transaction is kicked.
                unlock(state, index);
            }
            return Ok(false);
        }
        if mv::write_conflicts(state, word) {
            // Inserted or deleted since the read timestamp: first committer wins.
            return Err(poison_at(state, AbortReason::WriteConflict, site, key));
        }
        if let Some(index) = own {
            let entry = state.access.entries[index];
            if entry.validate && entry.observed != word {
                return Err(poison_at(state, AbortReason::ReadValidation, site, key));
            }
        }
        if !word.is_absent() {
            // A transaction whose earlier reads are already stale did not see the state it
            // inserts into: the duplicate is a symptom of a conflict, reported as an abort so
            // the caller retries (as PostgreSQL reports 40001, not 23505, at SERIALIZABLE).
            if state.rules.validate_reads && !reads_still_valid(state) {
                return Err(poison(state, AbortReason::ReadValidation));
            }
            // The caller learns that the row exists: that must still hold at commit.
            if own.is_none() && (state.rules.validate_reads || state.rules.ssn) {
                let validate = state.rules.validate_reads;
                state.access.push(Access::read(head, table_id, word, validate));
            }
            return Err(duplicate(table, None));
        }
        if word.is_claimed() {
            return Err(poison_at(state, AbortReason::InsertConflict, site, key));
        }
        if !head_ref.claim(word) {
            return Ok(false);
        }
        trace_ev!(crate::trace::Ev::InsertExisting {
            key: crate::trace::key_u64(key),
            head: head as u64,
            word: word.raw(),
        });
        // Primary-key scans pass over deleted records without recording them (they hold no
        // row). Bringing one back must therefore change its leaf, as a fresh insert does, so
        // that serializable scans that passed over it fail node validation; the transaction's
        // own node set follows the change.
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        table.primary.touch(key, &pin, &mut state.nodes);
        let mark = state.inserted_entries.len();
        if let Err(error) = secondary::insert_entries(worker, table, head, key, value) {
            secondary::undo_entries(worker, mark);
            head_ref.set_owned_word(word);
            return Err(error);
        }
        let state = &mut worker.txn;
        let key_span = state.access.store(key);
        let value_span = state.access.store(value);
        let access = Access {
            head,
            table: table_id,
            kind: Kind::Insert,
            observed: word,
            prior: word,
            validate: false,
            fresh: false,
            locked: false,
            latched: false,
            held: if state.rules.locking == Locking::None { Held::Nothing } else { Held::Write },
            value: value_span,
            key: key_span,
            keys_unchanged: false,
            recompute: false,
        };
        match own {
            Some(index) => state.access.entries[index] = access,
            None => {
                state.access.push(access);
            }
        }
        Ok(true)
    }

    /// Insert of a key with a fresh head. Returns the key's existing head instead if the
    /// index has one.
    fn insert_fresh(
        &mut self,
        table: &Table,
        table_id: TableId,
        key: &[u8],
        value: &[u8],
        pin: &Pin<'_>,
    ) -> Result<Option<u64>> {
        let worker = &mut *self.worker;
        let shape = HeadShape {
            shared_values: table.non_inline.is_some(),
            ..worker.shared.config.head_shape()
        };
        let head = Head::alloc_with(&mut worker.arena, value.len(), TidWord::FRESH, shape);
        // A fresh head is write-locked by its inserter from the start (`mvto`, `mv2pl`).
        let locking = worker.txn.rules.locking;
        // SAFETY: the head is ours alone until the index publishes it.
        let head_ref = unsafe { &*head };
        match locking {
            Locking::None => {}
            Locking::TwoPhase => head_ref.two_phase().expect("mv2pl heads").set_write_locked(),
            Locking::Timestamps => {
                let ts = worker.txn.begin.expect("multi-version transactions have a timestamp");
                head_ref.timestamps().expect("mvto heads").set_owner(ts.as_u64());
            }
        }
        let inserted =
            table.primary.insert(key, head as u64, pin, &mut worker.garbage, &mut worker.txn.nodes);
        trace_ev!(crate::trace::Ev::InsertFresh {
            key: crate::trace::key_u64(key),
            head: head as u64,
            existing: *inserted.as_ref().err().unwrap_or(&0),
        });
        if let Err(existing) = inserted {
            // SAFETY: the head was never published.
            unsafe { Head::free_now(head, &mut worker.arena) };
            return Ok(Some(existing));
        }
        let mark = worker.txn.inserted_entries.len();
        if let Err(error) = secondary::insert_entries(worker, table, head, key, value) {
            secondary::undo_entries(worker, mark);
            table.primary.remove(
                key,
                Some(head as u64),
                pin,
                &mut worker.garbage,
                &mut worker.txn.nodes,
            );
            secondary::abandon_fresh(head, locking, &mut worker.garbage);
            return Err(error);
        }
        let state = &mut worker.txn;
        let key_span = state.access.store(key);
        let value_span = state.access.store(value);
        state.access.push(Access {
            head,
            table: table_id,
            kind: Kind::Insert,
            observed: TidWord::FRESH,
            prior: TidWord::FRESH,
            validate: false,
            fresh: true,
            locked: false,
            latched: false,
            held: if locking == Locking::None { Held::Nothing } else { Held::Write },
            value: value_span,
            key: key_span,
            keys_unchanged: false,
            recompute: false,
        });
        Ok(None)
    }
}
