//! Keeping secondary indexes in step with rows.
//!
//! The invariant (see `storage::table`): every entry pointing at a head is produced by the
//! head's current state, by a version in its chain, or by an in-flight insert that owns the
//! head. So:
//!
//! - an insert adds its row's entries at once (after a uniqueness check), on the head it owns;
//! - an update that changes a secondary key adds the new entry at commit, after locking and
//!   before validation (`before_validation`), so concurrent checks and scans see it in time;
//! - after an install, entries produced only by states that were dropped (the replaced state
//!   when no snapshot needs it, versions pruned from the chain) are removed (`after_install`);
//! - the clean-up task of a delete removes the entries of the chain when it unlinks the head
//!   (`unlink_entries`).
//!
//! A uniqueness check scans the entries with the new key's prefix, reads each other row it
//! finds (validated at commit at every isolation level), and records the leaves it scanned in
//! the node set with `always`, so a concurrent insert of the same key is caught at commit.

use super::access::{Access, Kind, LeafOwner};
use super::conflict::Site;
use super::mv::Locking;
use super::silo::{Hooks, Silo};
use super::txn::{duplicate, pinned, poison_at};
use crate::cc::worker::{TxnState, Worker};
use crate::error::{AbortReason, Result};
use crate::index::{Direction, LeafVersion, ScanVisitor};
use crate::storage::record::Dropped;
use crate::storage::table::{BoundKind, PENDING_VERSION, push_version};
use crate::storage::{Head, SecondaryIndex, Table, TableId, Tid, TidWord};
use crate::sync::Garbage;
use crate::sync::Pin;
use std::ops::Bound;

/// An entry this transaction added to a secondary index; removed again if it aborts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InsertedEntry {
    pub table: TableId,
    pub index: u16,
    pub key: super::Span,
    pub head: *mut Head,
}

/// Buffers for comparing entry keys when an install drops versions.
#[derive(Debug, Default)]
pub(crate) struct EntryScratch {
    keys: Vec<u8>,
    /// (index number, start, length) in `keys`: entries of dropped states.
    dropped: Vec<(u16, u32, u32)>,
    /// Entries of the states that remain.
    remaining: Vec<(u16, u32, u32)>,
    scratch: Vec<u8>,
    /// Rows rebuilt from `delta` storage's chains.
    rebuilt: Vec<u8>,
}

/// Gives up a fresh head that never got a committed row, once it is out of its indexes: marks
/// it unlinked, lets go of the inserter's lock (`locking`: under `mvto` and `mv2pl` a fresh head
/// is write-locked by its inserter from the start, `Txn::insert_fresh`), and retires it.
///
/// The lock goes only after the mark. Until then nobody else can lock the head; whoever locks
/// it after finds it unlinked (not LATEST) and lets go within the same call (`read_locked`,
/// `read_ordered`, `write_existing`, `insert_existing`), while still pinned, so no lock
/// outlives the head. The unlock's release store follows the mark's, and a locker's
/// compare-and-swap that takes the lock reads it, so the locker's read of the word that
/// follows sees the mark.
pub(crate) fn abandon_fresh(head: *mut Head, locking: Locking, garbage: &mut Garbage) {
    // SAFETY: the head is owned by this transaction and was removed from its indexes.
    let head_ref = unsafe { &*head };
    head_ref.set_owned_word(TidWord::from_raw(TidWord::ABSENT));
    match locking {
        Locking::None => {}
        Locking::TwoPhase => head_ref.two_phase().expect("mv2pl heads").write_unlock(),
        Locking::Timestamps => head_ref.timestamps().expect("mvto heads").write_unlock(),
    }
    // SAFETY: as above; only its inserter retires a fresh head.
    unsafe { Head::retire(head, garbage) };
}

/// Adds the entries of `row` (primary key `primary_key`) on `head`, which the transaction owns.
pub(crate) fn insert_entries(
    worker: &mut Worker,
    table: &Table,
    head: *mut Head,
    primary_key: &[u8],
    row: &[u8],
) -> Result<()> {
    for (number, index) in table.secondaries.iter().enumerate() {
        let mut entry = std::mem::take(&mut worker.txn.scratch_entry);
        entry.clear();
        let has_entry = index.entry_of(row, primary_key, &mut entry, &mut worker.txn.scratch);
        let result = if has_entry {
            let prefix_len = entry.len() - primary_key.len();
            if table.physical {
                push_version(&mut entry, PENDING_VERSION);
            }
            let checked = if index.unique {
                unique_check(worker, table, number, &entry[..prefix_len], head)
            } else {
                Ok(())
            };
            checked.and_then(|()| insert_entry(worker, table, number, &entry, head))
        } else {
            Ok(())
        };
        worker.txn.scratch_entry = entry;
        result?;
    }
    Ok(())
}

/// Adds one entry; an existing entry for the same head is fine (a chain version made it).
fn insert_entry(
    worker: &mut Worker,
    table: &Table,
    number: usize,
    entry: &[u8],
    head: *mut Head,
) -> Result<()> {
    // SAFETY: called from transaction operations and commit, while pinned.
    let pin = unsafe { pinned() };
    let state = &mut worker.txn;
    match table.secondaries[number].tree.insert(
        entry,
        head as u64,
        &pin,
        &mut worker.garbage,
        &mut state.nodes,
    ) {
        Ok(_) => {
            let key = state.access.store(entry);
            state.inserted_entries.push(InsertedEntry {
                table: table.id(),
                index: number as u16,
                key,
                head,
            });
            Ok(())
        }
        Err(existing) if existing == head as u64 => Ok(()),
        // An entry with this key and primary key for another head: the key's previous head is
        // being unlinked right now.
        Err(_) => {
            let site = Site::in_index(table.id(), head, number);
            Err(poison_at(state, AbortReason::InsertConflict, site, &[]))
        }
    }
}

/// Removes the entries inserted since `mark`: an operation that failed part-way, an abort, or
/// (mark 0, physical pointers) a commit whose installs have added their versions' entries in
/// place of the pending ones.
pub(crate) fn undo_entries(worker: &mut Worker, mark: usize) {
    // SAFETY: called while pinned.
    let pin = unsafe { pinned() };
    let Worker { tables, txn, garbage, .. } = worker;
    let TxnState { inserted_entries, access, nodes, .. } = txn;
    for inserted in inserted_entries.drain(mark..) {
        let table = tables[inserted.table.index()].as_deref().expect("registered table");
        table.secondaries[inserted.index as usize].tree.remove(
            access.slice(inserted.key),
            Some(inserted.head as u64),
            &pin,
            garbage,
            nodes,
        );
    }
}

/// Removes every entry this transaction inserted for one of `heads` (inserts undone by a
/// rollback to a savepoint), in one pass over the inserted entries.
pub(crate) fn remove_entries_of(worker: &mut Worker, heads: &[*mut Head]) {
    let heads: std::collections::HashSet<*mut Head> = heads.iter().copied().collect();
    remove_entries_where(worker, |head| heads.contains(&head));
}

/// Removes every entry this transaction inserted for `head` (its own insert changed or went).
pub(crate) fn remove_own_entries(worker: &mut Worker, head: *mut Head) {
    remove_entries_where(worker, |of| of == head);
}

/// Removes the entries this transaction inserted for the heads `remove` picks.
fn remove_entries_where(worker: &mut Worker, remove: impl Fn(*mut Head) -> bool) {
    // SAFETY: called while pinned.
    let pin = unsafe { pinned() };
    let Worker { tables, txn, garbage, .. } = worker;
    let TxnState { inserted_entries, access, nodes, .. } = txn;
    inserted_entries.retain(|inserted| {
        if !remove(inserted.head) {
            return true;
        }
        let table = tables[inserted.table.index()].as_deref().expect("registered table");
        table.secondaries[inserted.index as usize].tree.remove(
            access.slice(inserted.key),
            Some(inserted.head as u64),
            &pin,
            garbage,
            nodes,
        );
        false
    });
}

/// Fails with `DuplicateKey` if a row other than `own` has secondary key `prefix` in index
/// `number`. Its reads and leaves are validated at commit at every isolation level.
fn unique_check(
    worker: &mut Worker,
    table: &Table,
    number: usize,
    prefix: &[u8],
    own: *mut Head,
) -> Result<()> {
    // SAFETY: called while pinned.
    let pin = unsafe { pinned() };
    let index = &table.secondaries[number];
    let state = &mut worker.txn;
    let mut high = std::mem::take(&mut state.scratch_high);
    high.clear();
    high.extend_from_slice(prefix);
    *high.last_mut().expect("encoded keys are never empty") += 1;
    let TxnState { access, nodes, read_buffer, scan_buffer, scratch, scratch_low, .. } = state;
    let mut visitor = UniqueVisitor {
        access,
        nodes,
        buffer: read_buffer,
        scratch,
        other_prefix: scratch_low,
        index,
        prefix,
        own,
        table: table.id(),
        conflict: false,
        error: None,
        failed: std::ptr::null_mut(),
        owner: LeafOwner::secondary(table.id(), number),
    };
    index.tree.scan(
        Bound::Included(prefix),
        Bound::Excluded(&high),
        Direction::Forward,
        &pin,
        scan_buffer,
        &mut visitor,
    );
    let (conflict, error, failed) = (visitor.conflict, visitor.error, visitor.failed);
    state.scratch_high = high;
    if let Some(reason) = error {
        return Err(poison_at(state, reason, Site::in_index(table.id(), failed, number), &[]));
    }
    if conflict {
        return Err(duplicate(table, Some(index)));
    }
    Ok(())
}

struct UniqueVisitor<'a> {
    access: &'a mut super::AccessSet,
    nodes: &'a mut super::NodeSet,
    buffer: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
    other_prefix: &'a mut Vec<u8>,
    index: &'a SecondaryIndex,
    prefix: &'a [u8],
    own: *mut Head,
    table: TableId,
    conflict: bool,
    error: Option<AbortReason>,
    /// The record `error` happened on.
    failed: *mut Head,
    owner: LeafOwner,
}

/// Whether `row` has secondary key `prefix` (encoded) in `index`.
fn has_key(
    index: &SecondaryIndex,
    prefix: &[u8],
    row: &[u8],
    other_prefix: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> bool {
    other_prefix.clear();
    index.prefix_of(row, other_prefix, scratch) && other_prefix.as_slice() == prefix
}

impl ScanVisitor for UniqueVisitor<'_> {
    fn leaf(&mut self, leaf: LeafVersion) {
        self.nodes.push(leaf, true, self.owner);
    }

    fn entry(&mut self, _entry: &[u8], value: u64) -> bool {
        let head = value as *mut Head;
        if head == self.own {
            return true;
        }
        if let Some(position) = self.access.find(head) {
            let access = self.access.entries[position];
            match access.kind {
                Kind::Insert | Kind::Update => {
                    let row = self.access.slice(access.value);
                    self.conflict =
                        has_key(self.index, self.prefix, row, self.other_prefix, self.scratch);
                    return !self.conflict;
                }
                Kind::Delete | Kind::Nothing => return true,
                Kind::Read => {}
            }
        }
        // SAFETY: reached through the index while pinned.
        let word = match Silo::read(unsafe { &*head }, self.buffer) {
            Ok(word) => word,
            Err(reason) => {
                self.error = Some(reason);
                self.failed = head;
                return false;
            }
        };
        match self.access.find(head) {
            Some(position) => {
                let access = &mut self.access.entries[position];
                if access.validate && access.observed != word {
                    self.error = Some(AbortReason::ReadValidation);
                    self.failed = head;
                    return false;
                }
                access.validate = true;
                access.observed = word;
                access.prior = word;
            }
            None => {
                self.access.push(Access::read(head, self.table, word, true));
            }
        }
        if word.is_absent() || !word.is_latest() {
            return true;
        }
        self.conflict =
            has_key(self.index, self.prefix, self.buffer, self.other_prefix, self.scratch);
        !self.conflict
    }
}

/// Collects the transaction's own updates of `table` whose new entry in `index` lies within
/// the scan bounds (in `scratch_low` / `scratch_high`), sorted in scan order.
pub(crate) fn own_candidates(
    state: &mut TxnState,
    table: TableId,
    index: &SecondaryIndex,
    low: BoundKind,
    high: BoundKind,
    direction: Direction,
) {
    state.candidates.clear();
    state.entry_keys.clear();
    for (position, access) in state.access.entries.iter().enumerate() {
        if access.kind != Kind::Update || access.table != table {
            continue;
        }
        let start = state.entry_keys.len();
        let row = state.access.slice(access.value);
        let primary_key = state.access.slice(access.key);
        if !index.entry_of(row, primary_key, &mut state.entry_keys, &mut state.scratch) {
            continue;
        }
        let entry = &state.entry_keys[start..];
        let above_low = match low {
            BoundKind::Unbounded => true,
            BoundKind::Included => entry >= state.scratch_low.as_slice(),
            BoundKind::Excluded => entry > state.scratch_low.as_slice(),
        };
        let below_high = match high {
            BoundKind::Unbounded => true,
            BoundKind::Included => entry <= state.scratch_high.as_slice(),
            BoundKind::Excluded => entry < state.scratch_high.as_slice(),
        };
        if above_low && below_high {
            let len = (state.entry_keys.len() - start) as u32;
            state.candidates.push((start as u32, len, position as u32));
        } else {
            state.entry_keys.truncate(start);
        }
    }
    // The scan shows these rows: commit may no longer recompute them (`Txn::update_recomputable`).
    for &(_, _, position) in &state.candidates {
        state.access.entries[position as usize].recompute = false;
    }
    let keys = &state.entry_keys;
    let key_of = |&(start, len, _): &(u32, u32, u32)| &keys[start as usize..(start + len) as usize];
    match direction {
        Direction::Forward => state.candidates.sort_by(|a, b| key_of(a).cmp(key_of(b))),
        Direction::Reverse => state.candidates.sort_by(|a, b| key_of(b).cmp(key_of(a))),
    }
}

/// Commit step 2: for each locked update that changes a secondary key, check uniqueness and add
/// the new entry.
pub(crate) fn before_validation(worker: &mut Worker) -> Result<()> {
    for order in 0..worker.txn.write_order.len() {
        let position = worker.txn.write_order[order] as usize;
        let access = worker.txn.access.entries[position];
        if access.kind != Kind::Update {
            continue;
        }
        // SAFETY: see `Worker::table_ptr`.
        let table = unsafe { &*worker.table_ptr(access.table) };
        if !table.has_secondaries() {
            continue;
        }
        // The writer declared the keys of the row it read (`Txn::update_same_keys`), and that
        // is the row this commit replaces: nothing to compare (debug builds compare anyway).
        let declared = access.keys_unchanged && access.prior == access.observed;
        if declared && !cfg!(debug_assertions) {
            continue;
        }
        let mut old_row = std::mem::take(&mut worker.txn.scratch);
        // SAFETY: the head is locked by this commit.
        let present = unsafe { (*access.head).value_locked(&mut old_row) };
        debug_assert!(present, "updated heads were checked present when locked");
        let result = add_changed_entries(worker, table, &access, &old_row);
        worker.txn.scratch = old_row;
        let unchanged = result?;
        assert!(
            unchanged || !declared,
            "an update declared to keep its secondary keys changed one"
        );
        worker.txn.access.entries[position].keys_unchanged = unchanged;
    }
    Ok(())
}

/// Adds the entries of an update's new row that its old row lacks. Returns whether every
/// secondary key is unchanged.
fn add_changed_entries(
    worker: &mut Worker,
    table: &Table,
    access: &Access,
    old_row: &[u8],
) -> Result<bool> {
    let mut unchanged = true;
    for (number, index) in table.secondaries.iter().enumerate() {
        let TxnState {
            access: set,
            scratch_low: old_entry,
            scratch_entry: new_entry,
            scratch_key,
            ..
        } = &mut worker.txn;
        old_entry.clear();
        new_entry.clear();
        let primary_key = set.slice(access.key);
        let primary_key_len = primary_key.len();
        let had = index.entry_of(old_row, primary_key, old_entry, scratch_key);
        let has = index.entry_of(set.slice(access.value), primary_key, new_entry, scratch_key);
        if had != has || old_entry != new_entry {
            unchanged = false;
        }
        if !has || (had && old_entry == new_entry) {
            continue;
        }
        let mut new_entry = std::mem::take(new_entry);
        let prefix_len = new_entry.len() - primary_key_len;
        if table.physical {
            push_version(&mut new_entry, PENDING_VERSION);
        }
        let result = if index.unique {
            unique_check(worker, table, number, &new_entry[..prefix_len], access.head)
        } else {
            Ok(())
        };
        let result =
            result.and_then(|()| insert_entry(worker, table, number, &new_entry, access.head));
        worker.txn.scratch_entry = new_entry;
        result?;
    }
    Ok(unchanged)
}

/// Appends the entries of `row` to `keys`, recording (index, start, len) in `spans`; under
/// physical pointers, the entries of the version `tid` that holds it.
fn collect_entries(
    table: &Table,
    row: &[u8],
    primary_key: &[u8],
    tid: Option<Tid>,
    keys: &mut Vec<u8>,
    spans: &mut Vec<(u16, u32, u32)>,
    scratch: &mut Vec<u8>,
) {
    for (number, index) in table.secondaries.iter().enumerate() {
        let start = keys.len();
        if index.entry_of(row, primary_key, keys, scratch) {
            if let Some(tid) = tid {
                push_version(keys, tid.as_u64());
            }
            spans.push((number as u16, start as u32, (keys.len() - start) as u32));
        }
    }
}

/// Removes the entries `spans` names in `keys` (all of them `head`'s). After validation: no
/// node set to keep valid.
fn remove_spans(
    table: &Table,
    head: *const Head,
    keys: &[u8],
    spans: &[(u16, u32, u32)],
    pin: &Pin<'_>,
    garbage: &mut Garbage,
) {
    for &(number, start, len) in spans {
        let key = &keys[start as usize..(start + len) as usize];
        table.secondaries[number as usize].tree.remove(
            key,
            Some(head as u64),
            pin,
            garbage,
            &mut (),
        );
    }
}

/// Commit step 6 under physical pointers, on a head locked for its install of `row` with
/// `tid`: adds the new version's entry to every secondary index. After validation, so no node
/// set records the leaves: a scan that passed them sees the change when it validates.
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_version_entries(
    table: &Table,
    buffers: &mut EntryScratch,
    head: *mut Head,
    primary_key: &[u8],
    row: &[u8],
    tid: Tid,
    pin: &Pin<'_>,
    garbage: &mut Garbage,
) {
    let EntryScratch { keys, scratch, .. } = buffers;
    for index in table.secondaries.iter() {
        keys.clear();
        if index.entry_of(row, primary_key, keys, scratch) {
            push_version(keys, tid.as_u64());
            let added = index.tree.insert(keys, head as u64, pin, garbage, &mut ());
            debug_assert!(added.is_ok(), "a version's TID is new to its record");
        }
    }
}

/// Commit step 6, on a head still locked after its install: removes the entries that only
/// dropped states produced. `old` is the replaced state (its TID and row) if it was dropped
/// rather than kept; `dropped` holds the versions the install pruned from the chain. Under
/// physical pointers each dropped state takes exactly its own entries.
#[allow(clippy::too_many_arguments)]
pub(crate) fn after_install(
    table: &Table,
    buffers: &mut EntryScratch,
    head: *mut Head,
    primary_key: &[u8],
    old: Option<(Tid, &[u8])>,
    new_row: Option<&[u8]>,
    dropped: &Dropped,
    pin: &Pin<'_>,
    garbage: &mut Garbage,
) {
    let EntryScratch { keys, dropped: dropped_spans, remaining, scratch, rebuilt } = buffers;
    keys.clear();
    dropped_spans.clear();
    remaining.clear();
    if table.physical {
        let states = old.into_iter().chain(
            dropped
                .states()
                .filter(|(word, _)| !word.is_absent())
                .map(|(word, row)| (word.tid(), row)),
        );
        for (tid, row) in states {
            collect_entries(table, row, primary_key, Some(tid), keys, dropped_spans, scratch);
        }
        remove_spans(table, head, keys, dropped_spans, pin, garbage);
        return;
    }
    if let Some((_, row)) = old {
        collect_entries(table, row, primary_key, None, keys, dropped_spans, scratch);
    }
    for (word, row) in dropped.states() {
        if !word.is_absent() {
            collect_entries(table, row, primary_key, None, keys, dropped_spans, scratch);
        }
    }
    if dropped_spans.is_empty() {
        return;
    }
    if let Some(row) = new_row {
        collect_entries(table, row, primary_key, None, keys, remaining, scratch);
    }
    // SAFETY: the head is locked by this commit, so its chain is stable.
    // The head's word is still the replaced state's during a commit's install: the new
    // state's presence comes from `new_row` (under `append-o2n`, whether the chain's last
    // version is the current row or a kept one, which a delete leaves last).
    unsafe { &*head }.for_each_older_than(new_row.is_some(), rebuilt, |word, data| {
        if !word.is_absent() {
            collect_entries(table, data, primary_key, None, keys, remaining, scratch);
        }
    });
    let key = |&(_, start, len): &(u16, u32, u32)| &keys[start as usize..(start + len) as usize];
    for candidate in dropped_spans.iter() {
        let still_produced =
            remaining.iter().any(|other| other.0 == candidate.0 && key(other) == key(candidate));
        if !still_produced {
            // After validation: no node set to keep valid.
            table.secondaries[candidate.0 as usize].tree.remove(
                key(candidate),
                Some(head as u64),
                pin,
                garbage,
                &mut (),
            );
        }
    }
}

/// The clean-up of a deleted head, which is locked: removes the entries of its chain.
pub(crate) fn unlink_entries(
    table: &Table,
    head: &Head,
    primary_key: &[u8],
    buffers: &mut EntryScratch,
    pin: &Pin<'_>,
    garbage: &mut Garbage,
) {
    let EntryScratch { keys, dropped, scratch, rebuilt, .. } = buffers;
    keys.clear();
    dropped.clear();
    let physical = table.physical;
    head.for_each_older(rebuilt, |word, data| {
        if !word.is_absent() {
            let tid = physical.then(|| word.tid());
            collect_entries(table, data, primary_key, tid, keys, dropped, scratch);
        }
    });
    remove_spans(table, head, keys, dropped, pin, garbage);
}
