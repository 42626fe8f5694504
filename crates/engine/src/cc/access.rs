//! A transaction's local state: the access set (MOT §3: one entry per record, whose kind moves
//! between read, update, insert and delete as the transaction works) and the node set (Silo
//! §4.6: the leaves its scans and failed lookups saw, with their versions).
//!
//! Everything here is preallocated per worker and cleared between transactions; lookups of a
//! record in the access set scan linearly while the set is small and use an open-addressing
//! table keyed by the head's address once it grows. The table's slots carry a generation, so
//! clearing it between transactions costs nothing.

use crate::index::{LeafObserver, LeafVersion};
use crate::storage::{Head, TableId, TidWord};
use crate::sync::{Epoch, Pin};
use std::sync::atomic::{Ordering, fence};

/// What the transaction did to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Read it (the observed word is validated at commit when `validate` is set).
    Read,
    /// Will replace its row.
    Update,
    /// Will create its row (on a head this transaction created or claimed).
    Insert,
    /// Will delete its row.
    Delete,
    /// Inserted and then deleted its own insert: nothing to install, the head is given up.
    Nothing,
}

/// Which of the protocol's no-wait locks (`mvto`, `mv2pl`) the transaction holds on a record
/// until it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    Nothing,
    /// MV2PL's read lock.
    Read,
    /// The write lock (MV2PL's write bit, MVTO's owner).
    Write,
}

impl Access {
    /// A read of `head` that saw `observed`.
    pub fn read(head: *mut Head, table: TableId, observed: TidWord, validate: bool) -> Access {
        Access {
            head,
            table,
            kind: Kind::Read,
            observed,
            prior: observed,
            validate,
            fresh: false,
            locked: false,
            latched: false,
            held: Held::Nothing,
            value: Span::default(),
            key: Span::default(),
            keys_unchanged: false,
            recompute: false,
        }
    }
}

/// Bytes in the transaction's byte buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub len: u32,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Access {
    pub head: *mut Head,
    pub table: TableId,
    pub kind: Kind,
    /// The word when the transaction first looked (for a claimed insert: the word before the
    /// claim, restored on abort).
    pub observed: TidWord,
    /// The word the record had when commit locked it (restored if the commit fails).
    pub prior: TidWord,
    /// Validate `observed` at commit.
    pub validate: bool,
    /// The head was created by this transaction.
    pub fresh: bool,
    /// Commit holds the record's lock.
    pub locked: bool,
    /// Commit holds the record's serial-safety-net latch (`cc/ssn.rs`).
    pub latched: bool,
    /// The transaction holds the protocol's lock on the record (`cc/mvto.rs`, `cc/mv2pl.rs`).
    pub held: Held,
    /// The new row (`Update`, `Insert`).
    pub value: Span,
    /// The primary key (writes only).
    pub key: Span,
    /// This update leaves every secondary key as it was: declared by the writer for the row it
    /// read (`Txn::update_same_keys`), or found by commit step 2 for the row it replaces.
    pub keys_unchanged: bool,
    /// A READ COMMITTED update whose statement commit may apply again to the row it locks
    /// (`TxnState::recomputes`); cleared once the transaction sees the row it wrote.
    pub recompute: bool,
}

/// Below this many entries a linear scan beats hashing.
const LINEAR_ENTRIES_MAX: usize = 16;

#[derive(Debug, Default)]
struct Lookup {
    slots: Vec<(u32, u32)>,
    generation: u32,
    indexed: usize,
}

impl Lookup {
    fn clear(&mut self) {
        self.indexed = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.iter_mut().for_each(|slot| *slot = (0, 0));
            self.generation = 1;
        }
    }

    #[inline]
    fn hash(head: *mut Head, mask: usize) -> usize {
        ((head as usize >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & mask
    }

    fn insert(&mut self, head: *mut Head, index: u32) {
        let mask = self.slots.len() - 1;
        let mut slot = Self::hash(head, mask);
        while self.slots[slot].0 == self.generation {
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = (self.generation, index);
    }

    /// Indexes entries up to `entries.len()`, growing the table to twice that.
    fn catch_up(&mut self, entries: &[Access]) {
        if self.slots.len() < entries.len() * 2 {
            let size = (entries.len() * 4).next_power_of_two();
            self.slots = vec![(0, 0); size];
            self.generation = 1;
            self.indexed = 0;
        }
        while self.indexed < entries.len() {
            self.insert(entries[self.indexed].head, self.indexed as u32);
            self.indexed += 1;
        }
    }

    #[inline]
    fn find(&mut self, head: *mut Head, entries: &[Access]) -> Option<usize> {
        if entries.len() <= LINEAR_ENTRIES_MAX {
            return entries.iter().position(|entry| entry.head == head);
        }
        self.find_hashed(head, entries)
    }

    fn find_hashed(&mut self, head: *mut Head, entries: &[Access]) -> Option<usize> {
        self.catch_up(entries);
        let mask = self.slots.len() - 1;
        let mut slot = Self::hash(head, mask);
        loop {
            let (generation, index) = self.slots[slot];
            if generation != self.generation {
                return None;
            }
            if entries[index as usize].head == head {
                return Some(index as usize);
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// Bits in the filter in front of the hashed lookup: with the few dozen records of a large
/// OLTP transaction, a record it has not touched is ruled out by one bit test almost always.
const FILTER_WORDS: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct AccessSet {
    pub entries: Vec<Access>,
    pub bytes: Vec<u8>,
    lookup: Lookup,
    filter: [u64; FILTER_WORDS],
    /// The newest epoch of the committed states read without an entry (reads nothing
    /// validates: READ COMMITTED, multi-version reads at a timestamp). A read-only commit
    /// waits for it to be durable, as for its entries' epochs (`commit::read_epoch`).
    pub unrecorded_epoch: Epoch,
    /// A statement is watched (`cc/txn/statement.rs`): reads nothing else records are kept
    /// in `statement_reads`, and scans and failed lookups record their leaves.
    pub watching: bool,
    /// The watched statement's reads that no entry records: (record, word read).
    pub statement_reads: Vec<(*mut Head, TidWord, TableId)>,
    /// The number of entries when the watched statement began.
    pub statement_mark: usize,
    /// The newest epoch among the committed states the watched statement observed without
    /// adding an entry (its entries' words are read at the check).
    pub statement_high: Epoch,
    /// A global epoch read (then a fence) before every record the transaction has read was
    /// last known unchanged: a commit that changed one of them since has an epoch at or
    /// above it (`cc/txn/statement.rs`, the epoch shortcut). `None`: not known.
    pub checked_at: Option<Epoch>,
    /// The transaction's savepoints (`cc/txn/savepoint.rs`), oldest first: the number of
    /// entries and the length of `saved` when each was taken.
    pub savepoints: Vec<(u32, u32)>,
    /// Entries as they were before a write changed them, while a savepoint is taken:
    /// (position, old entry). Only entries older than the newest savepoint are saved.
    pub saved: Vec<(u32, Access)>,
}

#[inline]
fn filter_bit(head: *mut Head) -> (usize, u64) {
    let hash = (head as usize >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let bit = hash >> (usize::BITS - (FILTER_WORDS * 64).trailing_zeros());
    (bit / 64, 1 << (bit % 64))
}

impl AccessSet {
    pub fn clear(&mut self) {
        if self.entries.len() > LINEAR_ENTRIES_MAX {
            self.filter = [0; FILTER_WORDS];
        }
        self.entries.clear();
        self.bytes.clear();
        self.lookup.clear();
        self.unrecorded_epoch = Epoch::NEVER;
        self.watching = false;
        self.statement_reads.clear();
        self.statement_mark = 0;
        self.statement_high = Epoch::NEVER;
        self.checked_at = None;
        self.savepoints.clear();
        self.saved.clear();
    }

    /// Saves the entry at `index` before a write changes it, if it is older than the newest
    /// savepoint (`cc/txn/savepoint.rs`). One comparison when no savepoint is taken.
    #[inline]
    pub fn before_write(&mut self, index: usize) {
        if let Some(&(mark, _)) = self.savepoints.last()
            && index < mark as usize
        {
            self.saved.push((index as u32, self.entries[index]));
        }
    }

    /// Forgets the entries from `len` on (reads of a statement that runs again).
    pub fn truncate(&mut self, len: usize) {
        if len < self.entries.len() {
            self.entries.truncate(len);
            // The filter keeps its bits (false positives only cost a lookup).
            self.lookup.clear();
        }
    }

    /// Keeps `(head, word)` as a read of the watched statement.
    #[inline]
    pub fn note_statement_read(&mut self, head: *mut Head, word: TidWord, table: TableId) {
        if self.watching {
            self.statement_reads.push((head, word, table));
        }
    }

    /// Notes the epoch of a committed state read without an entry that records it.
    #[inline]
    pub fn note_unrecorded(&mut self, epoch: Epoch) {
        self.unrecorded_epoch = self.unrecorded_epoch.max(epoch);
        if self.watching {
            self.statement_high = self.statement_high.max(epoch);
        }
    }

    #[inline]
    pub fn find(&mut self, head: *mut Head) -> Option<usize> {
        if self.entries.len() > LINEAR_ENTRIES_MAX {
            let (word, bit) = filter_bit(head);
            if self.filter[word] & bit == 0 {
                return None;
            }
        }
        self.lookup.find(head, &self.entries)
    }

    #[inline]
    pub fn push(&mut self, access: Access) -> usize {
        let (word, bit) = filter_bit(access.head);
        self.filter[word] |= bit;
        self.entries.push(access);
        self.entries.len() - 1
    }

    pub fn store(&mut self, bytes: &[u8]) -> Span {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(bytes);
        Span { start, len: bytes.len() as u32 }
    }

    #[inline]
    pub fn slice(&self, span: Span) -> &[u8] {
        &self.bytes[span.start as usize..(span.start + span.len) as usize]
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeEntry {
    pub leaf: LeafVersion,
    /// Validated at every isolation level (a uniqueness check's scan).
    pub always: bool,
    /// The index the leaf belongs to (abort diagnostics only).
    pub owner: LeafOwner,
}

/// The table and index a recorded leaf belongs to, packed into the node entry's padding: abort
/// diagnostics name them when the leaf fails validation (`cc/conflict.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeafOwner {
    table: u32,
    /// 0 the primary index, `n + 1` secondary index `n`.
    index: u16,
}

impl LeafOwner {
    #[inline]
    pub fn primary(table: TableId) -> LeafOwner {
        LeafOwner { table: table.0, index: 0 }
    }

    #[inline]
    pub fn secondary(table: TableId, index: usize) -> LeafOwner {
        LeafOwner { table: table.0, index: u16::try_from(index + 1).unwrap_or(u16::MAX) }
    }

    pub fn table(self) -> TableId {
        TableId(self.table)
    }

    /// `None` for the primary index, else the secondary index's number.
    pub fn index(self) -> Option<u32> {
        (self.index > 0).then(|| u32::from(self.index) - 1)
    }
}

/// Above this many entries, [`NodeSet`] finds a changed leaf's entries through its index by
/// node address instead of looking at every entry: a transaction inserting n rows (a bulk
/// load, a table rewrite, a unique index build) would otherwise take time quadratic in n.
const INDEXED_FROM: usize = 64;

/// The node set, which also keeps itself valid across the transaction's own inserts.
#[derive(Debug, Default)]
pub(crate) struct NodeSet {
    /// Read anywhere; entries are added with [`NodeSet::push`] and removed only through
    /// [`NodeSet::truncate`] and [`NodeSet::keep_always_from`], which keep `by_node` true.
    pub entries: Vec<NodeEntry>,
    /// The positions of the entries by leaf node address, once the set has grown past
    /// [`INDEXED_FROM`]; `None` until needed, and after a removal (rebuilt on use).
    by_node: Option<std::collections::HashMap<usize, Vec<u32>>>,
    /// The flag new entries get while a uniqueness check runs.
    pub recording_always: bool,
    /// Remember every leaf the transaction's own index changes produce (`changed`): the
    /// serial safety net reads their pstamps at commit (`cc/ssn.rs`).
    pub track_changes: bool,
    pub changed: Vec<LeafVersion>,
    /// The number of entries when the watched statement began (`cc/statement.rs`).
    pub statement_mark: usize,
}

impl NodeSet {
    pub fn clear(&mut self) {
        self.statement_mark = 0;
        self.entries.clear();
        self.by_node = None;
        self.recording_always = false;
        self.changed.clear();
    }

    #[inline]
    pub fn push(&mut self, leaf: LeafVersion, always: bool, owner: LeafOwner) {
        // The same leaf at the same version, recorded again by the same statement (a run of
        // inserts into one leaf, each checking its key absent), adds nothing to validate.
        if self.entries.len() > self.statement_mark
            && let Some(last) = self.entries.last()
            && last.leaf.node_address() == leaf.node_address()
            && last.leaf.version() == leaf.version()
            && last.always == always
            && last.owner == owner
        {
            return;
        }
        if let Some(by_node) = &mut self.by_node {
            by_node.entry(leaf.node_address()).or_default().push(self.entries.len() as u32);
        }
        self.entries.push(NodeEntry { leaf, always, owner });
    }

    /// Drops the entries from `len` on.
    pub fn truncate(&mut self, len: usize) {
        if len < self.entries.len() {
            self.entries.truncate(len);
            self.by_node = None;
        }
    }

    /// Drops the entries from `from` on that are not validated at every isolation level.
    pub fn keep_always_from(&mut self, from: usize) {
        let before = self.entries.len();
        let mut index = from;
        while index < self.entries.len() {
            if self.entries[index].always {
                index += 1;
            } else {
                self.entries.swap_remove(index);
            }
        }
        if self.entries.len() != before {
            self.by_node = None;
        }
    }

    /// [`LeafObserver::leaf_changed`] on a large set, through `by_node`.
    fn leaf_changed_indexed(&mut self, node: usize, before: u64, after: &[LeafVersion]) {
        let entries = &mut self.entries;
        let by_node = self.by_node.get_or_insert_with(|| {
            let mut by_node = std::collections::HashMap::<usize, Vec<u32>>::new();
            for (position, entry) in entries.iter().enumerate() {
                by_node.entry(entry.leaf.node_address()).or_default().push(position as u32);
            }
            by_node
        });
        let Some(positions) = by_node.get(&node).cloned() else { return };
        for position in positions {
            let index = position as usize;
            let entry = entries[index];
            if entry.leaf.node_address() != node || entry.leaf.version() != before {
                continue;
            }
            entries[index].leaf = after[0];
            let moved = after[0].node_address();
            if moved != node {
                if let Some(at) = by_node.get_mut(&node) {
                    at.retain(|&p| p != position);
                }
                by_node.entry(moved).or_default().push(position);
            }
            for extra in &after[1..] {
                by_node.entry(extra.node_address()).or_default().push(entries.len() as u32);
                entries.push(NodeEntry { leaf: *extra, ..entry });
            }
        }
    }

    /// Gives every leaf in the set `stamp` as its pstamp (fetch-max, then a fence), before the
    /// set is validated: the scanner's half of the leaf-stamp handshake (`ssn.rs`, `mvto.rs`).
    pub fn publish_pstamps(&self, stamp: u64, pin: &Pin<'_>) {
        for entry in &self.entries {
            #[cfg(feature = "ssn-trace")]
            let prev = entry.leaf.pstamp(pin);
            entry.leaf.publish_pstamp(stamp, pin);
            trace_ev!(crate::trace::Ev::Publish {
                node: entry.leaf.node_address() as u64,
                ver: entry.leaf.version(),
                prev,
            });
        }
    }

    /// The newest pstamp of the leaves the transaction's inserts changed, read after a fence:
    /// the inserter's half of the handshake. 0 when there is none.
    pub fn changed_pstamp_high(&self, pin: &Pin<'_>) -> u64 {
        if self.changed.is_empty() {
            return 0;
        }
        // Pairs with the fence in `publish_pstamp`.
        fence(Ordering::SeqCst);
        self.changed
            .iter()
            .map(|leaf| {
                let stamp = leaf.pstamp(pin);
                trace_ev!(crate::trace::Ev::ChangedPstamp {
                    node: leaf.node_address() as u64,
                    ver: leaf.version(),
                    pstamp: stamp,
                });
                stamp
            })
            .max()
            .unwrap_or(0)
    }
}

impl LeafObserver for NodeSet {
    fn leaf_changed(&mut self, node: usize, before: u64, after: &[LeafVersion]) {
        if self.track_changes {
            self.changed.extend_from_slice(after);
        }
        #[cfg(feature = "ssn-trace")]
        {
            let mut ids = [0u64; 4];
            for (slot, leaf) in ids.iter_mut().zip(after) {
                *slot = leaf.node_address() as u64;
            }
            let named = self.entries.iter().filter(|entry| entry.leaf.node_address() == node);
            crate::trace::record(crate::trace::Ev::LeafChanged {
                node: node as u64,
                before,
                after: ids,
                n: after.len(),
                entries: named.clone().count(),
                at_before: named.filter(|entry| entry.leaf.version() == before).count(),
            });
        }
        if self.entries.len() >= INDEXED_FROM {
            self.leaf_changed_indexed(node, before, after);
            return;
        }
        let mut index = 0;
        while index < self.entries.len() {
            let entry = self.entries[index];
            if entry.leaf.node_address() == node && entry.leaf.version() == before {
                // The transaction saw exactly what the leaf held before its own change, and its
                // own change is the only one: the successors now stand for what it saw.
                self.entries[index].leaf = after[0];
                for extra in &after[1..] {
                    self.entries.push(NodeEntry { leaf: *extra, ..entry });
                }
            }
            index += 1;
        }
    }
}
