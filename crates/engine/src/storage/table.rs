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
//!
//! INDEX POINTERS (Wu et al. §6, [`IndexPointers`], chosen when the database opens)
//!
//! - `logical` (the default): one entry per distinct secondary key a record's states hold, as
//!   above. An update that leaves every secondary key as it was touches no index.
//! - `physical`: one entry per version. The entry key ends with [`VERSION_SUFFIX_BYTES`] bytes
//!   naming the version that produced it: its TID, big-endian, or [`PENDING_VERSION`] for the
//!   entry an uncommitted insert or key change adds before validation (its TID is not known
//!   yet). Every install adds the new version's entry to every secondary index, under the
//!   record's lock, and drops the pending one; every version dropped from a chain takes its
//!   entries with it. The value is still the head: a reader resolves an entry through the
//!   record and the version it may read there, and takes one row from the run of entries a
//!   record has under one key. Only the append-only storages may use it (`Config::validate`).

use super::record::Head;
use super::shared::NonInline;
use crate::index::BTree;
use crate::index::key::encode_bytes;
use crate::mem::arena::Arena;
use crate::sync::Pin;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// A handle on a table, as returned by `Database::create_table`.
pub type TableRef = std::sync::Arc<Table>;

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
    /// Rows of non-inline attributes (`storage::shared`), written with `Txn::insert_attributes`
    /// and `Txn::update_attribute` and read with `Txn::get_attribute`. The other reads (`get`,
    /// scans) return a version's value handles, 8 bytes per attribute, which only the engine
    /// can resolve.
    pub non_inline: Option<NonInline>,
}

impl TableSpec {
    pub fn new(name: impl Into<String>) -> Self {
        TableSpec { name: name.into(), secondary: Vec::new(), non_inline: None }
    }

    /// Rows of `layout.attributes` non-inline attributes.
    pub fn non_inline(mut self, layout: NonInline) -> Self {
        self.non_inline = Some(layout);
        self
    }

    pub fn index(mut self, spec: IndexSpec) -> Self {
        self.secondary.push(spec);
        self
    }
}

/// What secondary index entries name (`--index-pointers`, Wu et al. §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IndexPointers {
    /// An entry per record and secondary key, pointing at the record's head.
    #[default]
    Logical,
    /// An entry per version: every new version is added to every secondary index.
    Physical,
}

impl IndexPointers {
    pub const ALL: [IndexPointers; 2] = [IndexPointers::Logical, IndexPointers::Physical];

    pub fn name(self) -> &'static str {
        match self {
            IndexPointers::Logical => "logical",
            IndexPointers::Physical => "physical",
        }
    }
}

impl fmt::Display for IndexPointers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for IndexPointers {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "logical" => Ok(IndexPointers::Logical),
            "physical" => Ok(IndexPointers::Physical),
            other => Err(format!("unknown index pointers \"{other}\": use logical or physical")),
        }
    }
}

pub use crate::limits::VERSION_SUFFIX_BYTES;

/// The version suffix of an entry added before its version has a TID (no TID is this high:
/// epochs have 38 bits).
pub const PENDING_VERSION: u64 = u64::MAX;

/// Appends the version suffix `version` (a TID, or [`PENDING_VERSION`]) to an entry key.
#[inline]
pub fn push_version(entry: &mut Vec<u8>, version: u64) {
    entry.extend_from_slice(&version.to_be_bytes());
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

/// How long [`Table::check_entries`] waits for a locked record before reporting it.
const LOCKED_RECORD_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// The states of `head` that hold a row, current and older, as (TID, row): for
/// [`Table::check_entries`].
fn present_states(
    head: &Head,
    row: &mut Vec<u8>,
    chain_row: &mut Vec<u8>,
) -> Result<Vec<(u64, Vec<u8>)>, String> {
    // A lock is normally held for a moment (an install, a vacuum prune), but a thread holding
    // one may be descheduled for longer than `read` waits: wait, and report only a record
    // that stays locked.
    let started = std::time::Instant::now();
    let word = loop {
        match head.read(row) {
            Ok(word) => break word,
            Err(_) if started.elapsed() < LOCKED_RECORD_WAIT_MAX => std::thread::yield_now(),
            Err(_) => {
                return Err(format!("a record stayed locked for {LOCKED_RECORD_WAIT_MAX:?}"));
            }
        }
    };
    let mut states = Vec::new();
    if !word.is_absent() {
        states.push((word.tid().as_u64(), row.clone()));
    }
    head.for_each_older(chain_row, |word, data| {
        if !word.is_absent() {
            states.push((word.tid().as_u64(), data.to_vec()));
        }
    });
    Ok(states)
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
    /// Entries name versions (`IndexPointers::Physical`), not records.
    pub physical: bool,
    /// Rows of non-inline attributes (`storage::shared`).
    pub non_inline: Option<NonInline>,
    /// Some record gained an older version since the vacuum last took this flag
    /// (`vacuum`; set only when the vacuum runs).
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
    pub(crate) fn new(id: TableId, spec: TableSpec, pointers: IndexPointers) -> Table {
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
            physical: pointers == IndexPointers::Physical,
            non_inline: spec.non_inline,
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

    /// Checks every secondary entry against the record it points to, for tests and integrity
    /// checks of a table no transaction writes (a vacuum may still prune: a finding is
    /// counted only if it holds when looked at again): each entry must be produced by a
    /// present state of its head, the current row or a version in its chain, and under
    /// physical pointers name exactly that state's TID; and every present state must have
    /// its entries. Returns how many entries there are.
    pub fn check_entries(&self, pin: &Pin<'_>) -> Result<usize, String> {
        struct Collect(Vec<(Vec<u8>, u64)>);
        impl crate::index::ScanVisitor for Collect {
            fn leaf(&mut self, _leaf: crate::index::LeafVersion) {}
            fn entry(&mut self, key: &[u8], value: u64) -> bool {
                self.0.push((key.to_vec(), value));
                true
            }
        }
        let every_entry = |tree: &BTree| {
            let mut entries = Collect(Vec::new());
            tree.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                crate::index::Direction::Forward,
                pin,
                &mut crate::index::ScanBuffer::new(),
                &mut entries,
            );
            entries.0
        };
        let (mut row, mut chain_row, mut produced, mut scratch) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut count = 0;
        for index in self.secondaries.iter() {
            let entries = every_entry(&index.tree);
            count += entries.len();
            for (entry, value) in entries {
                // SAFETY: reached through the index while pinned.
                let head = unsafe { &*(value as *const Head) };
                let (key, version) = if self.physical {
                    let (key, suffix) = entry.split_at(entry.len() - VERSION_SUFFIX_BYTES);
                    (key, Some(u64::from_be_bytes(suffix.try_into().expect("8 bytes"))))
                } else {
                    (&entry[..], None)
                };
                let states = present_states(head, &mut row, &mut chain_row)?;
                let found = states.iter().any(|(tid, state)| {
                    produced.clear();
                    index.prefix_of(state, &mut produced, &mut scratch)
                        && key.starts_with(&produced)
                        && version.is_none_or(|version| version == *tid)
                });
                // Pruned since the scan collected it: the prune removed the entry too.
                let still_there = || index.tree.get(&entry, pin).value == Some(value);
                if !found && still_there() {
                    return Err(format!(
                        "index {} of table {}: entry {entry:02x?} (version {version:?}) is \
                         produced by no state of its record (states: {:?})",
                        index.name,
                        self.name,
                        states.iter().map(|(tid, _)| tid).collect::<Vec<_>>()
                    ));
                }
            }
        }
        // And the converse: every present state of every record has its entries.
        for (primary_key, value) in every_entry(&self.primary) {
            // SAFETY: reached through the index while pinned.
            let head = unsafe { &*(value as *const Head) };
            let states = present_states(head, &mut row, &mut chain_row)?;
            for index in self.secondaries.iter() {
                for (tid, state) in &states {
                    produced.clear();
                    if !index.entry_of(state, &primary_key, &mut produced, &mut scratch) {
                        continue;
                    }
                    if self.physical {
                        push_version(&mut produced, *tid);
                    }
                    // Unless a vacuum pruned the state (and its entry) meanwhile.
                    let mut state_kept = || {
                        let mut kept = head.word().tid().as_u64() == *tid;
                        head.for_each_older(&mut chain_row, |word, _| {
                            kept |= word.tid().as_u64() == *tid;
                        });
                        kept
                    };
                    if index.tree.get(&produced, pin).value != Some(value) && state_kept() {
                        return Err(format!(
                            "index {} of table {}: the state {tid} of record {primary_key:02x?} \
                             has no entry {produced:02x?}",
                            index.name, self.name
                        ));
                    }
                }
            }
        }
        Ok(count)
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
