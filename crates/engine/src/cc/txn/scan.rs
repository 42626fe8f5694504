//! Scans: a transaction's walks over a primary or secondary index (`Txn::scan`,
//! `Txn::scan_index`), and the visitors that turn index entries into rows, recording the
//! reads and the leaves the protocol validates.

use super::{Found, Seen, Txn, observe, own_row, pinned, poison_at, read_snapshot};
use crate::cc::access::{AccessSet, Kind, LeafOwner, NodeSet};
use crate::cc::conflict::Site;
use crate::cc::mv::ReadMode;
use crate::cc::secondary;
use crate::cc::worker::{TableRef, TxnState};
use crate::error::{AbortReason, Error, Result};
use crate::index::{Direction, LeafVersion, ScanVisitor};
use crate::storage::table::VERSION_SUFFIX_BYTES;
use crate::storage::{Head, SecondaryIndex, TableId, Tid};
use crate::sync::{Epoch, StatementSnapshot};
use std::ops::Bound;

/// Whether a primary-key scan may pass over `head` without reading or recording it: a deleted
/// record that no insert has claimed and this transaction has not touched holds no row. Only
/// an insert can bring it back, and that changes its leaf (`BTree::touch` in
/// `insert_existing`), which node validation catches at serializable; below serializable a row
/// appearing in a scanned range is a phantom, which those levels allow. Queues (TPC-C's
/// NEW-ORDER) keep many such records until the snapshot horizon lets them be unlinked, and a
/// scan used to record one read per record.
/// Under a multi-version protocol only a delete at or below the read timestamp `bound` counts,
/// and not one the statement's snapshot hides: either hides a row the transaction still reads
/// (or must see as a change).
/// The scan saw the delete all the same: its epoch is noted (`AccessSet::note_unrecorded`), as
/// a point read of the record notes it, so that a read-only commit is acknowledged only once
/// the delete is durable. (The record stays in the index until then: `commit::run_ready_tasks`.)
fn deleted_unclaimed(
    access: &mut AccessSet,
    head: *mut Head,
    bound: Option<Tid>,
    statement: &StatementSnapshot,
) -> bool {
    // SAFETY: reached through an index while pinned.
    let word = unsafe { (*head).word() };
    let skipped = bound.is_none_or(|bound| word.tid() <= bound && !statement.hides(word.tid()))
        && word.is_absent()
        && word.is_latest()
        && !word.is_claimed()
        && !word.is_locked()
        && access.find(head).is_none();
    if skipped {
        access.note_unrecorded(word.tid().epoch());
    }
    skipped
}

impl Txn<'_> {
    /// Runs `f` with every scan it makes checked at commit at every isolation level: each row
    /// read is validated, as a read for update is, and each leaf passed over, so a row that
    /// another transaction inserts into, or deletes from, the scanned range before this one
    /// commits aborts it. What constraint checks need whatever the level (a foreign key's
    /// referencing rows, `engram-sql`'s `exec/foreign.rs`).
    pub fn checked<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let before = std::mem::replace(&mut self.worker.txn.checking, true);
        let result = f(self);
        self.worker.txn.checking = before;
        result
    }

    /// A scan that hands the visitor each row's head as well.
    pub(super) fn scan_heads(
        &mut self,
        table: &TableRef,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
        mut visit: impl FnMut(*mut Head, &[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        self.active()?;
        let table_id = self.worker.register_table(table);
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        let state = &mut self.worker.txn;
        let checking = state.checking;
        let mode = ReadMode::of(state, state.rules.validate_reads || checking);
        let TxnState {
            access, nodes, read_buffer, scan_buffer, rules, snapshot, statement, ..
        } = state;
        let watching = access.watching;
        let current = std::cell::Cell::new(std::ptr::null_mut());
        let mut forward = |key: &[u8], row: &[u8]| visit(current.get(), key, row);
        let mut visitor = RowVisitor {
            access,
            nodes,
            buffer: read_buffer,
            table: table_id,
            snapshot: *snapshot,
            mode,
            statement,
            validate_reads: rules.validate_reads || checking,
            validate_nodes: rules.validate_nodes || watching || checking,
            always: checking,
            skip_deleted: true,
            visit: &mut forward,
            count: 0,
            limit,
            error: None,
            failed: std::ptr::null_mut(),
            owner: LeafOwner::primary(table_id),
        };
        let mut with_heads = HeadVisitor { rows: &mut visitor, current: &current };
        if limit > 0 {
            table.primary.scan_expecting(
                low,
                high,
                direction,
                limit,
                &pin,
                scan_buffer,
                &mut with_heads,
            );
        }
        let (count, error, failed) = (visitor.count, visitor.error, visitor.failed);
        match error {
            Some(reason) => Err(poison_at(state, reason, Site::record(table_id, failed), &[])),
            None => Ok(count),
        }
    }

    /// Visits the rows with primary keys in `(low, high)`, in `direction` order, at most
    /// `limit` of them, until `visit` returns `false`. Returns how many rows were visited.
    pub fn scan(
        &mut self,
        table: &TableRef,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        self.scan_heads(table, low, high, direction, limit, |_, key, row| visit(key, row))
    }

    /// Visits the rows whose secondary key in index number `index` (in the table's
    /// [`crate::TableSpec`] order) lies in `(low, high)`, ordered by secondary key and then
    /// primary key, at most `limit` of them, until `visit` returns `false`. `visit` gets each
    /// row's primary key and value. Returns how many rows were visited.
    #[allow(clippy::too_many_arguments)]
    pub fn scan_index(
        &mut self,
        table: &TableRef,
        index: usize,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        self.active()?;
        let Some(secondary_index) = table.secondaries.get(index) else {
            return Err(Error::UnknownIndex { table: table.name().to_string(), index });
        };
        let table_id = self.worker.register_table(table);
        // SAFETY: a `Txn` exists only while its worker is pinned and in a call.
        let pin = unsafe { pinned() };
        let state = &mut self.worker.txn;
        let (low_kind, high_kind) = SecondaryIndex::entry_bounds(
            low,
            high,
            &mut state.scratch_low,
            &mut state.scratch_high,
        );
        if state.snapshot.is_none() {
            secondary::own_candidates(
                state,
                table_id,
                secondary_index,
                low_kind,
                high_kind,
                direction,
            );
        }
        let checking = state.checking;
        let mode = ReadMode::of(state, state.rules.validate_reads || checking);
        let TxnState {
            access,
            nodes,
            read_buffer,
            scan_buffer,
            rules,
            snapshot,
            statement,
            scratch,
            scratch_key,
            scratch_low,
            scratch_high,
            entry_keys,
            candidates,
            ..
        } = state;
        let watching = access.watching;
        let mut visitor = IndexVisitor {
            rows: RowVisitor {
                access,
                nodes,
                buffer: read_buffer,
                table: table_id,
                snapshot: *snapshot,
                mode,
                statement,
                validate_reads: rules.validate_reads || checking,
                validate_nodes: rules.validate_nodes || watching || checking,
                always: checking,
                // A deleted record's old secondary entries stay until it is unlinked, and an
                // insert that brings it back with the same secondary key changes no secondary
                // leaf: secondary scans keep recording what they pass over.
                skip_deleted: false,
                visit: &mut visit,
                count: 0,
                limit,
                error: None,
                failed: std::ptr::null_mut(),
                owner: LeafOwner::secondary(table_id, index),
            },
            index: secondary_index,
            prefix: scratch_key,
            scratch,
            entry_keys,
            candidates,
            next_candidate: 0,
            direction,
            physical: table.physical,
            last_emitted: Vec::new(),
        };
        let mut going = limit > 0;
        if going {
            secondary_index.tree.scan_expecting(
                low_kind.with(scratch_low),
                high_kind.with(scratch_high),
                direction,
                limit,
                &pin,
                scan_buffer,
                &mut visitor,
            );
            going =
                visitor.rows.error.is_none() && visitor.rows.count < limit && !visitor.stopped();
        }
        if going {
            visitor.emit_candidates_before(None);
        }
        let (count, error, failed) = (visitor.rows.count, visitor.rows.error, visitor.rows.failed);
        state.candidates.clear();
        match error {
            Some(reason) => Err(poison_at(state, reason, Site::record(table_id, failed), &[])),
            None => Ok(count),
        }
    }
}

/// Turns index entries into rows for a scan.
struct RowVisitor<'a, F> {
    access: &'a mut AccessSet,
    nodes: &'a mut NodeSet,
    buffer: &'a mut Vec<u8>,
    table: TableId,
    snapshot: Option<Epoch>,
    /// How rows are read under the protocol (`ReadMode`).
    mode: ReadMode,
    /// The statement's snapshot (MVTO at READ COMMITTED; empty otherwise).
    statement: &'a StatementSnapshot,
    validate_reads: bool,
    validate_nodes: bool,
    /// Record the leaves to be validated at every isolation level (`Txn::checked`).
    always: bool,
    /// Pass over unclaimed deleted records without recording them (primary-key scans).
    skip_deleted: bool,
    visit: &'a mut F,
    count: usize,
    limit: usize,
    error: Option<AbortReason>,
    /// The record `error` happened on.
    failed: *mut Head,
    /// The index scanned.
    owner: LeafOwner,
}

impl<F: FnMut(&[u8], &[u8]) -> bool> RowVisitor<'_, F> {
    /// The row `head` holds for this transaction, or `None` (no row, or an error recorded).
    fn row(&mut self, head: *mut Head) -> Option<Found> {
        if let Some(at) = self.snapshot {
            return read_snapshot(self.access, head, at, self.buffer).then_some(Found::Buffer);
        }
        if self.skip_deleted
            && deleted_unclaimed(self.access, head, self.mode.bound(), self.statement)
        {
            trace_ev!(crate::trace::Ev::ScanSkipped { head: head as u64 });
            return None;
        }
        let (validate, mode) = (self.validate_reads, self.mode);
        match observe(self.access, self.buffer, self.table, head, validate, mode, self.statement) {
            Err(reason) => {
                self.error = Some(reason);
                self.failed = head;
                None
            }
            Ok(Seen::Own(index)) => own_row(self.access, index).map(Found::Own),
            Ok(Seen::Current(word)) if word.is_absent() || !word.is_latest() => None,
            Ok(Seen::Current(_)) => Some(Found::Buffer),
            Ok(Seen::AsOf(seen)) if !seen.present || !seen.current.is_latest() => None,
            Ok(Seen::AsOf(_)) => Some(Found::Buffer),
        }
    }

    fn bytes(&self, found: &Found) -> &[u8] {
        match found {
            Found::Own(span) => self.access.slice(*span),
            _ => self.buffer,
        }
    }

    /// Hands a row to the caller; returns whether to go on.
    fn emit(&mut self, key: &[u8], found: Found) -> bool {
        self.count += 1;
        let row = match found {
            Found::Own(span) => self.access.slice(span),
            _ => &self.buffer[..],
        };
        (self.visit)(key, row) && self.count < self.limit
    }
}

impl<F: FnMut(&[u8], &[u8]) -> bool> ScanVisitor for RowVisitor<'_, F> {
    fn leaf(&mut self, leaf: LeafVersion) {
        trace_ev!(crate::trace::Ev::ScanLeaf {
            node: leaf.node_address() as u64,
            ver: leaf.version(),
        });
        if self.validate_nodes {
            self.nodes.push(leaf, self.always, self.owner);
        }
    }

    fn entry(&mut self, key: &[u8], value: u64) -> bool {
        trace_ev!(crate::trace::Ev::ScanHead {
            key: crate::trace::key_u64(key),
            head: value,
            // SAFETY: reached through an index while pinned.
            word: unsafe { (*(value as *mut Head)).word() }.raw(),
        });
        match self.row(value as *mut Head) {
            Some(found) => self.emit(key, found),
            None => self.error.is_none(),
        }
    }

    /// Scans read each entry's head, a cache miss apart from the leaf: the head a few entries
    /// ahead is loaded while this one is read.
    #[inline]
    fn upcoming(&mut self, value: u64) {
        Head::prefetch(value as *const Head);
    }
}

/// Passes each entry's head on to a `RowVisitor`'s callback through `current`.
struct HeadVisitor<'a, 'b, F> {
    rows: &'a mut RowVisitor<'b, F>,
    current: &'a std::cell::Cell<*mut Head>,
}

impl<F: FnMut(&[u8], &[u8]) -> bool> ScanVisitor for HeadVisitor<'_, '_, F> {
    fn leaf(&mut self, leaf: LeafVersion) {
        self.rows.leaf(leaf);
    }

    fn entry(&mut self, key: &[u8], value: u64) -> bool {
        self.current.set(value as *mut Head);
        self.rows.entry(key, value)
    }

    #[inline]
    fn upcoming(&mut self, value: u64) {
        self.rows.upcoming(value);
    }
}

/// Turns secondary entries into rows: checks that the row still has the entry's key and merges
/// in the transaction's own updates whose new key falls in the range.
struct IndexVisitor<'a, F> {
    rows: RowVisitor<'a, F>,
    index: &'a SecondaryIndex,
    prefix: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
    entry_keys: &'a mut Vec<u8>,
    candidates: &'a mut Vec<(u32, u32, u32)>,
    next_candidate: usize,
    direction: Direction,
    /// Entries end with the version they name (`IndexPointers::Physical`): a record has a run
    /// of adjacent entries under one key, of which the scan shows one row.
    physical: bool,
    /// Under physical pointers, the entry (without its version) of the last row shown.
    last_emitted: Vec<u8>,
}

impl<F: FnMut(&[u8], &[u8]) -> bool> IndexVisitor<'_, F> {
    fn stopped(&self) -> bool {
        self.rows.count >= self.rows.limit
    }

    /// Emits own-update candidates ordered before `entry` (all of them for `None`).
    fn emit_candidates_before(&mut self, entry: Option<&[u8]>) -> bool {
        while let Some(&(start, len, position)) = self.candidates.get(self.next_candidate) {
            let candidate = &self.entry_keys[start as usize..(start + len) as usize];
            let before = match (entry, self.direction) {
                (None, _) => true,
                (Some(entry), Direction::Forward) => candidate < entry,
                (Some(entry), Direction::Reverse) => candidate > entry,
            };
            if !before {
                return true;
            }
            self.next_candidate += 1;
            let access = self.rows.access.entries[position as usize];
            self.rows.count += 1;
            let row = self.rows.access.slice(access.value);
            let primary_key = self.rows.access.slice(access.key);
            if !(self.rows.visit)(primary_key, row) || self.rows.count >= self.rows.limit {
                return false;
            }
        }
        true
    }
}

impl<F: FnMut(&[u8], &[u8]) -> bool> ScanVisitor for IndexVisitor<'_, F> {
    fn leaf(&mut self, leaf: LeafVersion) {
        self.rows.leaf(leaf);
    }

    fn entry(&mut self, entry: &[u8], value: u64) -> bool {
        let entry = if self.physical {
            let entry = &entry[..entry.len() - VERSION_SUFFIX_BYTES];
            if entry == self.last_emitted.as_slice() {
                // Another version's entry of the row just shown under this key.
                return true;
            }
            entry
        } else {
            entry
        };
        if !self.emit_candidates_before(Some(entry)) {
            return false;
        }
        let head = value as *mut Head;
        if self.rows.snapshot.is_none()
            && let Some(position) = self.rows.access.find(head)
            && self.rows.access.entries[position].kind == Kind::Update
        {
            // Emitted from the candidates, under its new key.
            return true;
        }
        let Some(found) = self.rows.row(head) else {
            return self.rows.error.is_none();
        };
        self.prefix.clear();
        let row = self.rows.bytes(&found);
        if !self.index.prefix_of(row, self.prefix, self.scratch) || !entry.starts_with(self.prefix)
        {
            // An entry of another version of this row.
            return true;
        }
        let primary_key_start = self.prefix.len();
        if self.physical {
            self.last_emitted.clear();
            self.last_emitted.extend_from_slice(entry);
        }
        self.rows.emit(&entry[primary_key_start..], found)
    }
}
