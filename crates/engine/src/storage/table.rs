//! Tables: a primary index from primary key to record head, and secondary indexes from a
//! secondary key to the same heads.
//!
//! The engine has no schema: a secondary index is defined by a key extractor, a function from
//! a row's bytes to its secondary key (or to no key, for rows the index leaves out, such as SQL
//! NULLs). Every secondary entry is the order-preserving, self-delimiting encoding of the
//! secondary key followed by the primary key (MOT suffixes non-unique keys with the row; we do
//! it for unique indexes too, so that an entry never changes its value and a row being replaced
//! never has to take over another row's entry). Uniqueness is a check at write time whose reads
//! are validated at commit regardless of isolation level.
//!
//! Entries are maintained under this invariant: every entry pointing at a head is produced by
//! the head's current state, by a version in its chain, or by an in-flight insert that owns the
//! head. Readers therefore re-derive the key from the version they read and skip entries that do
//! not match it (an entry of an older or newer version).

use super::record::Head;
use crate::index::BTree;
use crate::index::key::encode_bytes;
use crate::storage::arena::Arena;
use crate::sync::Pin;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// Dense table identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub u32);

impl TableId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Derives a secondary key from a row. Writes the key to `out` and returns `true`, or returns
/// `false` when the row has no entry in this index.
pub type KeyExtractor = Arc<dyn Fn(&[u8], &mut Vec<u8>) -> bool + Send + Sync>;

/// How to build a secondary index.
#[derive(Clone)]
pub struct IndexSpec {
    pub name: String,
    pub unique: bool,
    pub key_of: KeyExtractor,
    /// Opaque bytes recorded in the catalog with the index, from which the application
    /// rebuilds `key_of` at recovery (`crate::wal::IndexKeys`).
    pub definition: Vec<u8>,
}

impl IndexSpec {
    pub fn new(
        name: impl Into<String>,
        unique: bool,
        key_of: impl Fn(&[u8], &mut Vec<u8>) -> bool + Send + Sync + 'static,
    ) -> Self {
        IndexSpec { name: name.into(), unique, key_of: Arc::new(key_of), definition: Vec::new() }
    }

    /// Records `definition` with the index (see the field).
    pub fn definition(mut self, definition: impl Into<Vec<u8>>) -> Self {
        self.definition = definition.into();
        self
    }
}

impl fmt::Debug for IndexSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexSpec").field("name", &self.name).field("unique", &self.unique).finish()
    }
}

/// How to build a table.
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub name: String,
    pub secondary: Vec<IndexSpec>,
}

impl TableSpec {
    pub fn new(name: impl Into<String>) -> Self {
        TableSpec { name: name.into(), secondary: Vec::new() }
    }

    pub fn index(mut self, spec: IndexSpec) -> Self {
        self.secondary.push(spec);
        self
    }
}

pub struct SecondaryIndex {
    pub name: String,
    pub unique: bool,
    pub tree: BTree,
    key_of: KeyExtractor,
    pub definition: Vec<u8>,
}

impl fmt::Debug for SecondaryIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecondaryIndex")
            .field("name", &self.name)
            .field("unique", &self.unique)
            .finish()
    }
}

impl SecondaryIndex {
    /// The encoded secondary key of `row` (the entry prefix), appended to `out`.
    pub fn prefix_of(&self, row: &[u8], out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> bool {
        scratch.clear();
        if !(self.key_of)(row, scratch) {
            return false;
        }
        encode_bytes(scratch, out);
        true
    }

    /// The entry key of `row` with primary key `primary_key`, appended to `out`.
    pub fn entry_of(
        &self,
        row: &[u8],
        primary_key: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> bool {
        if !self.prefix_of(row, out, scratch) {
            return false;
        }
        out.extend_from_slice(primary_key);
        true
    }

    /// The entry-key bounds that hold the secondary keys in `(low, high)`.
    pub fn entry_bounds(
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        low_out: &mut Vec<u8>,
        high_out: &mut Vec<u8>,
    ) -> (BoundKind, BoundKind) {
        low_out.clear();
        high_out.clear();
        let low_kind = match low {
            Bound::Unbounded => BoundKind::Unbounded,
            Bound::Included(key) => {
                encode_bytes(key, low_out);
                BoundKind::Included
            }
            Bound::Excluded(key) => {
                // Past every entry whose key starts with the encoding of `key`.
                encode_bytes(key, low_out);
                increment_last(low_out);
                BoundKind::Included
            }
        };
        let high_kind = match high {
            Bound::Unbounded => BoundKind::Unbounded,
            Bound::Included(key) => {
                encode_bytes(key, high_out);
                increment_last(high_out);
                BoundKind::Excluded
            }
            Bound::Excluded(key) => {
                encode_bytes(key, high_out);
                BoundKind::Excluded
            }
        };
        (low_kind, high_kind)
    }
}

/// The encoding ends with a marker byte below 0xFF, so adding one to it gives the smallest key
/// above every entry with this prefix.
fn increment_last(encoded: &mut [u8]) {
    let last = encoded.last_mut().expect("encodings are never empty");
    debug_assert!(*last < u8::MAX);
    *last += 1;
}

/// A bound over owned key bytes kept elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundKind {
    Unbounded,
    Included,
    Excluded,
}

impl BoundKind {
    pub fn with(self, key: &[u8]) -> Bound<&[u8]> {
        match self {
            BoundKind::Unbounded => Bound::Unbounded,
            BoundKind::Included => Bound::Included(key),
            BoundKind::Excluded => Bound::Excluded(key),
        }
    }
}

pub struct Table {
    id: TableId,
    name: String,
    pub primary: BTree,
    pub secondaries: Box<[SecondaryIndex]>,
    /// Some record gained an older version since the vacuum last took this flag
    /// (`gc::vacuum`; set only when the vacuum runs).
    dirty: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("secondaries", &self.secondaries)
            .finish()
    }
}

impl Table {
    pub(crate) fn new(id: TableId, spec: TableSpec) -> Table {
        let secondaries = spec
            .secondary
            .into_iter()
            .map(|index| SecondaryIndex {
                name: index.name,
                unique: index.unique,
                tree: BTree::new(),
                key_of: index.key_of,
                definition: index.definition,
            })
            .collect();
        Table {
            id,
            name: spec.name,
            primary: BTree::new(),
            secondaries,
            dirty: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn id(&self) -> TableId {
        self.id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn has_secondaries(&self) -> bool {
        !self.secondaries.is_empty()
    }

    /// Notes that a record of this table gained an older version (for the vacuum). A load
    /// first, so that a table already marked costs no write to a shared line.
    #[inline]
    pub(crate) fn mark_dirty(&self) {
        use std::sync::atomic::Ordering;
        if !self.dirty.load(Ordering::Relaxed) {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Takes the dirty flag: whether a record gained a version since the last call.
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, std::sync::atomic::Ordering::AcqRel)
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // Nothing else can reach the table: free every head still in the primary index (heads
        // unlinked earlier were retired to garbage lists, which free them).
        struct Collect(Vec<u64>);
        impl crate::index::ScanVisitor for Collect {
            fn leaf(&mut self, _leaf: crate::index::LeafVersion) {}
            fn entry(&mut self, _key: &[u8], value: u64) -> bool {
                self.0.push(value);
                true
            }
        }
        let mut heads = Collect(Vec::new());
        // SAFETY: `&mut self` gives exclusive access; no node or head can be freed meanwhile.
        let pin = unsafe { Pin::assume_pinned() };
        self.primary.scan(
            Bound::Unbounded,
            Bound::Unbounded,
            crate::index::Direction::Forward,
            &pin,
            &mut crate::index::ScanBuffer::new(),
            &mut heads,
        );
        let mut arena = Arena::new();
        for head in heads.0 {
            // SAFETY: exclusive access, and each head is in the primary index exactly once.
            unsafe { Head::free_now(head as *mut Head, &mut arena) };
        }
    }
}
