//! Recovery: the catalog, then the newest complete checkpoint, then the log up to the durable
//! epoch, in parallel; then deleted rows leave the indexes and secondary indexes are built.
//!
//! Replay is order-free (Silo's value logging): a record is applied only if its TID is above the
//! TID the row has, so threads can replay segments in any order and the newest image of each
//! row wins. They take the newest segments first, so that older images mostly find a newer one
//! and install nothing. Patches (format 4, `Config::log_patches`) are the exception to order-free
//! replay: each holds only the bytes an update changed, so they are set aside and applied after
//! every image, per row in TID order on top of its newest image (`Patches`, `apply_patches`).
//! Only records with `checkpoint epoch < epoch <= durable epoch` that no
//! earlier recovery voided are applied: the checkpoint already holds everything at or below its
//! epoch, and anything above the durable epoch belongs to epochs that were never acknowledged.
//!
//! The durable epoch of the newest run is the minimum, over its loggers, of the last mark in the
//! logger's newest segment. A newest run with no mark at all crashed while opening and logged
//! nothing: its segments go, and the run before it is the newest. After recovery the epochs from there up to the restart epoch are
//! recorded as void in the manifest, so their records are never replayed by a later recovery.

use super::format::{
    self, BlockKind, BlockReader, CatalogRecord, Change, Damage, FileHeader, FileKind, IndexRecord,
    Manifest,
};
use super::log::{SegmentInfo, parse_segment_name, parse_spare_name};
use super::storage::Storage;
use super::{CatalogRows, IndexDefinition, IndexKeys, io_error};
use crate::error::{Error, Result};
use crate::gc::Garbage;
use crate::index::Finger;
use crate::storage::arena::Arena;
use crate::storage::chunks::Prefault;
use crate::storage::record::{Busy, HeadShape, Retention};
use crate::storage::table::push_version;
use crate::storage::{Head, IndexPointers, IndexSpec, Table, TableId, TableSpec, Tid, TidWord};
use crate::sync::{Epoch, Pin, shim};
use crate::worker::TableRef;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(crate) const MANIFEST: &str = "MANIFEST";
pub(crate) const CATALOG: &str = "catalog.log";

/// What a recovery did and how long it took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecoveryReport {
    pub threads: usize,
    pub tables: usize,
    pub checkpoint_epoch: Option<u64>,
    pub checkpoint_files: usize,
    pub checkpoint_rows: u64,
    pub checkpoint_bytes: u64,
    /// Leaves of the tables' primary indexes once the checkpoint was loaded, before the log
    /// (`BTree::leaves`): the background checkpointer's first estimate of the database's size
    /// comes from these and `checkpoint_bytes`.
    pub checkpoint_leaves: u64,
    pub checkpoint_seconds: f64,
    pub log_segments: usize,
    pub log_bytes: u64,
    pub log_transactions: u64,
    /// Row images written to tables (the others were older than what the row had).
    pub log_writes_applied: u64,
    /// Patches read from the log (format 4), applied after the images.
    pub log_patches: u64,
    /// Of `replay_seconds`, the time spent applying patches.
    pub patch_seconds: f64,
    pub replay_seconds: f64,
    /// Removing deleted rows and building secondary indexes.
    pub index_seconds: f64,
    pub durable_epoch: u64,
    /// Epochs written to the log but never durable, now void: `(first, last)`.
    pub discarded_epochs: Option<(u64, u64)>,
    /// `file at offset: reason` of each torn tail found (and, when recovering, truncated).
    pub torn_tails: Vec<String>,
    pub total_seconds: f64,
}

impl RecoveryReport {
    /// Log bytes replayed per second.
    pub fn replay_bytes_per_second(&self) -> f64 {
        if self.replay_seconds > 0.0 { self.log_bytes as f64 / self.replay_seconds } else { 0.0 }
    }
}

/// The recovered state that `Database::open` builds on.
pub(crate) struct Recovered {
    pub tables: Vec<Option<TableRef>>,
    /// The rows the catalog log holds, for its rewrite.
    pub catalog_rows: CatalogRows,
    /// The manifest to write before the new run logs anything.
    pub manifest: Manifest,
    /// Every epoch in the data directory is at or below this one.
    pub last_epoch: u64,
    pub segments: Vec<SegmentInfo>,
    /// Names of the spare segment files in `wal/` (`wal::log`, SPARE SEGMENTS).
    pub spares: Vec<String>,
    pub garbage: Vec<Garbage>,
    pub report: RecoveryReport,
    /// The checkpoint's files as loaded, with sampled keys, for the next checkpoint's splits.
    pub checkpoint_parts: Vec<super::checkpoint::PartSamples>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Recover,
    Check,
}

fn read_optional(storage: &dyn Storage, path: &str) -> Result<Option<Vec<u8>>> {
    match storage.read(path) {
        Ok(data) => Ok(Some(data)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(storage, path, "cannot read", error)),
    }
}

/// The catalog: per table id, its definition, or `None` for a dropped table.
pub(crate) type CatalogState = Vec<Option<(String, Vec<IndexRecord>)>>;

/// What the catalog log holds: the tables, the newest epoch of its blocks, and the newest of
/// the rows it holds (`CatalogRecord::Rows`) of tables not dropped.
struct ReadCatalog {
    tables: CatalogState,
    last_epoch: u64,
    rows: CatalogRows,
}

/// Reads the catalog log. A torn last block (a DDL statement that never returned) is cut off.
fn read_catalog(
    storage: &dyn Storage,
    mode: Mode,
    report: &mut RecoveryReport,
) -> Result<ReadCatalog> {
    let mut catalog: CatalogState = Vec::new();
    let mut rows = CatalogRows::new();
    let mut last_epoch = 0;
    let Some(data) = read_optional(storage, CATALOG)? else {
        return Ok(ReadCatalog { tables: catalog, last_epoch: 0, rows });
    };
    format::decode_file_header(FileKind::Catalog, &data, &storage.describe(CATALOG))?;
    let version = format::file_version(&data);
    let mut reader = BlockReader::new(&data);
    loop {
        match reader.next_block() {
            Ok(None) => break,
            Ok(Some(block)) => {
                let bad = || Error::Corrupt {
                    file: storage.describe(CATALOG),
                    offset: block.offset as u64,
                    reason: "malformed catalog record".into(),
                };
                if block.kind != BlockKind::Catalog {
                    return Err(bad());
                }
                last_epoch = last_epoch.max(block.mark);
                let (table, entry) = match format::decode_catalog(&block.payload).ok_or_else(bad)? {
                    CatalogRecord::Create { table, name, indexes } => {
                        (table, Some((name, indexes)))
                    }
                    CatalogRecord::Drop { table } => {
                        rows.retain(|(row_table, _), _| *row_table != table);
                        (table, None)
                    }
                    CatalogRecord::Rows { table, tid, rows: written } => {
                        // Rows follow their table's creation; none of a dropped table's follow
                        // its drop (both are written under the catalog's lock), but skipping
                        // them is right either way.
                        if version < format::CATALOG_ROWS || table as usize >= catalog.len() {
                            return Err(bad());
                        }
                        if catalog[table as usize].is_some() {
                            for (key, value) in written {
                                let newest = rows.entry((table, key)).or_insert((0, None));
                                if tid >= newest.0 {
                                    *newest = (tid, value);
                                }
                            }
                        }
                        continue;
                    }
                };
                let id = table as usize;
                if catalog.len() <= id {
                    catalog.resize(id + 1, None);
                }
                catalog[id] = entry;
            }
            Err(damage @ Damage::Torn { .. }) => {
                torn_tail(storage, CATALOG, &damage, mode, report)?;
                break;
            }
            Err(damage) => return Err(damage.into_error(&storage.describe(CATALOG))),
        }
    }
    Ok(ReadCatalog { tables: catalog, last_epoch, rows })
}

/// Reports a torn tail and, when recovering, cuts it off; says whether the file was removed.
fn torn_tail(
    storage: &dyn Storage,
    path: &str,
    damage: &Damage,
    mode: Mode,
    report: &mut RecoveryReport,
) -> Result<bool> {
    let line =
        format!("{} at byte {}: {}", storage.describe(path), damage.offset(), damage.reason());
    report.torn_tails.push(line.clone());
    if mode == Mode::Check {
        return Ok(false);
    }
    if damage.offset() == 0 {
        // A segment with no header (the catalog's blocks follow a header already read): it
        // holds nothing, and a later recovery, for which it is no longer its logger's newest
        // segment, would rightly call it corrupt. It goes, and the directory is synced before
        // the next run makes its own segments.
        tracing::warn!("torn segment removed: {line}");
        storage.remove(path).map_err(|error| io_error(storage, path, "cannot remove", error))?;
        storage.sync_dir("wal").map_err(|error| io_error(storage, "wal", "cannot sync", error))?;
        return Ok(true);
    }
    tracing::warn!("torn tail truncated: {line}");
    storage
        .truncate(path, damage.offset() as u64)
        .map_err(|error| io_error(storage, path, "cannot truncate", error))?;
    Ok(false)
}

/// A segment of a run that crashed while opening, before any of its loggers' first pages was
/// durable: it holds no mark and so nothing. Reported like a torn tail; removed unless
/// checking.
fn unborn_segment(
    storage: &dyn Storage,
    path: &str,
    mode: Mode,
    report: &mut RecoveryReport,
) -> Result<()> {
    let line = format!(
        "{} holds no mark: its run crashed while opening, before logging anything",
        storage.describe(path)
    );
    report.torn_tails.push(line.clone());
    if mode == Mode::Check {
        return Ok(());
    }
    tracing::warn!("segment removed: {line}");
    storage.remove(path).map_err(|error| io_error(storage, path, "cannot remove", error))?;
    storage.sync_dir("wal").map_err(|error| io_error(storage, "wal", "cannot sync", error))
}

pub(crate) fn build_tables(
    catalog: &CatalogState,
    keys: Option<&IndexKeys>,
    pointers: IndexPointers,
) -> Result<Vec<Option<TableRef>>> {
    let mut tables = Vec::with_capacity(catalog.len());
    for (id, entry) in catalog.iter().enumerate() {
        let Some((name, indexes)) = entry else {
            tables.push(None);
            continue;
        };
        let mut spec = TableSpec::new(name.clone());
        for index in indexes {
            let definition = IndexDefinition {
                table: name,
                name: &index.name,
                unique: index.unique,
                definition: &index.definition,
            };
            let key_of = keys.and_then(|keys| (keys.0)(&definition)).ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "table \"{name}\" has secondary index \"{}\", which recovery cannot rebuild \
                     without its key extractor: give Config::index_keys",
                    index.name
                ))
            })?;
            let mut index_spec = IndexSpec::new(index.name.clone(), index.unique, |_, _| false);
            index_spec.key_of = key_of;
            index_spec.definition = index.definition.clone();
            spec = spec.index(index_spec);
        }
        tables.push(Some(Arc::new(Table::new(TableId(id as u32), spec, pointers))));
    }
    Ok(tables)
}

/// Locks a head another recovery thread may hold for a moment (while it installs a row).
fn lock_waiting(head: &Head) -> TidWord {
    loop {
        match head.lock() {
            Ok(word) => return word,
            Err(Busy) => std::hint::spin_loop(),
        }
    }
}

/// Per-thread state for applying rows.
struct Applier {
    arena: Arena,
    garbage: Garbage,
    dropped: crate::storage::record::Dropped,
    applied: u64,
    /// The protocol words and version storage of new heads (`Config::head_shape`).
    shape: HeadShape,
    /// This thread's place in its phase's `Quiescence`.
    slot: usize,
    /// What files already finished retired, with their `Quiescence` tags, oldest first.
    limbo: std::collections::VecDeque<(u64, Garbage)>,
}

/// Reclamation while the checkpoint loads and the log replays, by quiescent states (QSBR):
/// a thread reaches index nodes only while it works on a file, and starts every file from the
/// trees' roots, so once every other thread has begun a file after a node was unlinked, or is
/// between files, none can reach it. The nodes that splits replace are then freed and made
/// again into new nodes, and the values that newer images replace into new values.
///
/// Before this, nothing was freed until recovery ended: a 10-warehouse TPC-C replay left about
/// 238 thousand replaced nodes (385 MiB), more than half the nodes it made, and every byte of
/// them was memory the kernel had to zero on first touch (docs/performance.md).
///
/// Its atomics come from `sync::shim`, so that `quiescence_schedules` runs it under shuttle.
struct Quiescence {
    /// Counts the files begun.
    clock: shim::AtomicU64,
    /// Per thread, the clock when it began its current file, or `Quiescence::IDLE`.
    working: Box<[shim::AtomicU64]>,
}

impl Quiescence {
    const IDLE: u64 = u64::MAX;

    fn new(threads: usize) -> Quiescence {
        Quiescence {
            clock: shim::AtomicU64::new(0),
            working: (0..threads).map(|_| shim::AtomicU64::new(Quiescence::IDLE)).collect(),
        }
    }

    /// Thread `slot` begins a file: it reaches no node before this.
    fn begin(&self, slot: usize) {
        let now = self.clock.fetch_add(1, Ordering::SeqCst) + 1;
        self.working[slot].store(now, Ordering::SeqCst);
        // Orders the store before the thread's reads of the trees: a thread that then sees
        // this slot idle (or begun after its tag) also sees every unlink made before its tag.
        shim::fence(Ordering::SeqCst);
    }

    /// Thread `slot` has finished a file and reaches no node until it begins another; returns
    /// the tag of what it unlinked so far.
    fn end(&self, slot: usize) -> u64 {
        // Orders the unlinks before the tag is read.
        shim::fence(Ordering::SeqCst);
        let tag = self.clock.load(Ordering::SeqCst);
        self.working[slot].store(Quiescence::IDLE, Ordering::SeqCst);
        tag
    }

    /// Whether no thread can reach what was unlinked before `tag` was read: each is between
    /// files, or began its file after.
    fn passed(&self, tag: u64) -> bool {
        shim::fence(Ordering::SeqCst);
        self.working.iter().all(|working| {
            let began = working.load(Ordering::SeqCst);
            began == Quiescence::IDLE || began > tag
        })
    }
}

const KEEP_NOTHING: Retention = Retention::NOTHING;

impl Applier {
    fn new(shape: HeadShape, slot: usize) -> Applier {
        Applier {
            arena: Arena::new(),
            garbage: Garbage::new(),
            dropped: Default::default(),
            applied: 0,
            shape,
            slot,
            limbo: Default::default(),
        }
    }

    /// Makes appliers numbered from 0, one per call, for a phase's `Quiescence`.
    fn maker(shape: HeadShape) -> impl FnMut() -> Applier {
        let mut slot = 0;
        move || {
            slot += 1;
            Applier::new(shape, slot - 1)
        }
    }

    /// Begins a file (`Quiescence`).
    fn begin_file(&self, quiescence: &Quiescence) {
        quiescence.begin(self.slot);
    }

    /// Ends a file: what it retired waits until no other thread can reach it, and what has
    /// waited long enough is freed, for this thread's next nodes and values.
    fn end_file(&mut self, quiescence: &Quiescence) {
        let tag = quiescence.end(self.slot);
        if !self.garbage.is_empty() {
            self.limbo.push_back((tag, std::mem::take(&mut self.garbage)));
        }
        while self.limbo.front().is_some_and(|(tag, _)| quiescence.passed(*tag)) {
            let (_, mut garbage) = self.limbo.pop_front().expect("a front");
            // SAFETY: every other thread began a file after these items were unlinked, or is
            // between files (`Quiescence::passed`), and this one is between files.
            unsafe { garbage.free_all(&mut self.arena) };
        }
    }

    /// Frees what still waits, once the phase's threads have all stopped.
    fn end_phase(&mut self) {
        for (_, mut garbage) in self.limbo.drain(..) {
            // SAFETY: the phase's threads have been joined: nothing reaches these items.
            unsafe { garbage.free_all(&mut self.arena) };
        }
    }

    /// Installs `value` (or a deletion) with `new_word` on a head this thread has locked, and
    /// unlocks it.
    fn install(&mut self, head: &Head, value: Option<&[u8]>, new_word: TidWord) {
        self.dropped.reset(false);
        head.install(
            value,
            new_word,
            KEEP_NOTHING,
            &mut self.arena,
            &mut self.garbage,
            &mut self.dropped,
        );
        head.unlock_to(new_word);
    }

    /// Makes `value` (or a deletion) the row's state if `tid` is newer than what it has, in two
    /// halves: this one, the index search, installs the image when the key is new; a key the
    /// index has gives back the row's head, for `apply_found`, which the caller may leave for
    /// a few more images while the head's line is fetched (`ReplayBatch::apply`).
    ///
    /// Callers that apply rows in key order (a checkpoint file, a sorted batch) pass the same
    /// `finger` each time, so that the rows of one leaf descend the tree once.
    ///
    /// One index search per image: the index is asked to insert the key, and makes a fresh
    /// locked head for it only when the key is absent; when the key is there it hands back
    /// the row's head. (A lookup followed by an insert cost two descents for every new row;
    /// a head made before the insert was freed again for every row already there.)
    #[inline]
    fn locate<'a>(
        &mut self,
        table: &'a Table,
        key: &[u8],
        tid: Tid,
        value: Option<&[u8]>,
        finger: &mut Finger<'a>,
        pin: &Pin<'_>,
    ) -> Option<&'a Head> {
        let (arena, shape) = (&mut self.arena, self.shape);
        let mut fresh = std::ptr::null_mut();
        let make = || {
            fresh = Head::alloc_with(
                arena,
                value.map_or(0, <[u8]>::len),
                TidWord::new(Tid::ZERO, TidWord::LOCK | TidWord::LATEST | TidWord::ABSENT),
                shape,
            );
            fresh as u64
        };
        match table.primary.insert_near(finger, key, make, pin, &mut self.garbage, &mut ()) {
            Ok(_) => {
                // SAFETY: `fresh` was made by the insert and is locked by this thread; other
                // recovery threads that find it wait for the unlock in `install`.
                self.install(unsafe { &*fresh }, value, Applier::word(tid, value));
                self.applied += 1;
                None
            }
            // SAFETY: reached through the index of a table that outlives the replay; heads are
            // not freed during replay (deleted rows leave the index after it, `finish_table`).
            Err(found) => Some(unsafe { &*(found as *const Head) }),
        }
    }

    /// The second half of `locate`, for a row already in the index.
    #[inline]
    fn apply_found(&mut self, head: &Head, tid: Tid, value: Option<&[u8]>) {
        // A row's TID only grows during replay, so an image no newer than what the row shows,
        // locked or not, is done with: no lock taken, no line written (the older images of
        // rows, most of those replayed newest segments first).
        if tid <= head.word().tid() {
            return;
        }
        let word = lock_waiting(head);
        if tid > word.tid() {
            self.install(head, value, Applier::word(tid, value));
            self.applied += 1;
        } else {
            head.unlock_to(word);
        }
    }

    fn word(tid: Tid, value: Option<&[u8]>) -> TidWord {
        let flags =
            if value.is_some() { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
        TidWord::new(tid, flags)
    }
}

/// The row images of a segment, applied sorted by row (see `ReplayBatch::apply`).
///
/// Batches of two and four segments were measured too (docs/performance.md): they took 5 to
/// 7% less CPU but no less time, as the last batches left a thread idle.
#[derive(Default)]
struct ReplayBatch {
    /// The segment's buffer and the part of it that holds the file.
    segment: Vec<u8>,
    range: std::ops::Range<usize>,
    images: Images,
    /// The images in the order they are applied: an entry per image (`RunSort::entry`),
    /// grouped by table, each table's entries then sorted.
    order: Vec<u128>,
    /// The radix sort's second buffer, as long as the longest batch so far.
    scratch: Vec<u128>,
}

/// A segment's row images in log order, and per table what grouping and sorting them needs,
/// gathered as they are added, so that no pass over the images is spent on it.
#[derive(Default)]
struct Images {
    list: Vec<Image>,
    /// Keys and values that do not lie in the segment's buffer (decompressed blocks), laid
    /// out as the log lays them out: a key, four length bytes, a value.
    spill: Vec<u8>,
    /// The segment's tables, in order of first appearance.
    runs: Vec<TableRun>,
    /// Per table id, its index in `runs` (`NO_RUN`: none yet).
    run_of: Vec<u32>,
}

const NO_RUN: u32 = u32::MAX;

/// The images of one table in a segment.
struct TableRun {
    table: u32,
    count: usize,
    /// The OR and the AND of the images' key prefixes: their XOR has the bits that differ.
    ones: u128,
    all: u128,
}

/// One row image: the sort key (the first 16 key bytes, the key's length, the TID) and where
/// the key and value lie, so that the sort and the apply read no other memory for the image.
/// The images stay in log order: the sort moves 16-byte entries that name them (`RunSort`).
#[derive(Clone, Copy, Default)]
struct Image {
    high: u64,
    low: u64,
    tid: u64,
    /// Where the key starts, in the segment's bytes or in the spill (the low `AT_BITS` bits),
    /// the key's length (the 16 bits above them), and the `SPILLED` and `DELETE` flags.
    place: u64,
    /// The table's index in `Images::runs`.
    run: u32,
    value_len: u32,
}

const _: () = assert!(size_of::<Image>() == 40);
const _: () = assert!(crate::limits::INDEX_KEY_BYTES_MAX < 1 << Image::KEY_LEN_BITS);

impl Image {
    /// Keys longer than this compare their remaining bytes where they lie.
    const SHORT: usize = 16;
    /// Offsets in a buffer of up to 64 TiB.
    const AT_BITS: u32 = 46;
    const KEY_LEN_BITS: u32 = 16;
    const SPILLED: u64 = 1 << 62;
    const DELETE: u64 = 1 << 63;

    #[inline]
    fn key_at(&self) -> usize {
        (self.place & ((1 << Image::AT_BITS) - 1)) as usize
    }

    #[inline]
    fn key_len(&self) -> usize {
        ((self.place >> Image::AT_BITS) & ((1 << Image::KEY_LEN_BITS) - 1)) as usize
    }

    /// In the log a value follows its key and its own four length bytes; the spill keeps
    /// that layout.
    #[inline]
    fn value_at(&self) -> usize {
        self.key_at() + self.key_len() + 4
    }

    #[inline]
    fn spilled(&self) -> bool {
        self.place & Image::SPILLED != 0
    }

    #[inline]
    fn delete(&self) -> bool {
        self.place & Image::DELETE != 0
    }

    /// The first 16 key bytes as one number (zeros after a shorter key), which orders keys as
    /// their bytes do up to keys that share those bytes (one a zero-padded prefix of the other,
    /// or long keys): one comparison in the sort instead of three.
    #[inline]
    fn prefix(&self) -> u128 {
        (u128::from(self.high) << 64) | u128::from(self.low)
    }

    /// A short key, rebuilt from its prefix.
    #[inline]
    fn short_key<'b>(&self, buffer: &'b mut [u8; 16]) -> &'b [u8] {
        *buffer = self.prefix().to_be_bytes();
        &buffer[..self.key_len()]
    }
}

/// The first 16 bytes of the `len`-byte key at `at` in `bytes`, as `Image::prefix` holds them.
/// Sixteen bytes are loaded at once where the buffer has them (it nearly always does: a value
/// follows the key), and the bytes after a shorter key masked off: copying just the key's
/// bytes into a zeroed buffer and loading that back stalled on the copy's narrower stores.
#[inline]
fn prefix_of(bytes: &[u8], at: usize, len: usize) -> u128 {
    let keep = len.min(16);
    // The masks that keep the first 0 to 16 bytes of 16 (a variable shift of a `u128` costs
    // a dozen instructions).
    const KEEP: [u128; 17] = {
        let mut masks = [0u128; 17];
        let mut keep = 1;
        while keep <= 16 {
            masks[keep] = u128::MAX << (8 * (16 - keep));
            keep += 1;
        }
        masks
    };
    let word = match bytes.get(at..at + 16) {
        Some(sixteen) => u128::from_be_bytes(sixteen.try_into().expect("16 bytes")),
        None => {
            let mut buffer = [0u8; 16];
            buffer[..keep].copy_from_slice(&bytes[at..at + keep]);
            u128::from_be_bytes(buffer)
        }
    };
    word & KEEP[keep]
}

impl Images {
    /// Adds a write of a transaction of the segment, whose bytes are `data`.
    fn push(
        &mut self,
        data: &[u8],
        tid: u64,
        write: &format::LoggedWrite<'_>,
        value: Option<&[u8]>,
    ) {
        let table = write.table as usize;
        if table >= self.run_of.len() {
            self.run_of.resize(table + 1, NO_RUN);
        }
        if self.run_of[table] == NO_RUN {
            self.run_of[table] = self.runs.len() as u32;
            self.runs.push(TableRun { table: write.table, count: 0, ones: 0, all: u128::MAX });
        }
        let run = self.run_of[table];
        let delete = if value.is_none() { Image::DELETE } else { 0 };
        let value = value.unwrap_or(&[]);
        let base = data.as_ptr() as usize;
        let key_at = (write.key.as_ptr() as usize).wrapping_sub(base);
        let in_place = key_at < data.len()
            && (value.is_empty() || value.as_ptr() as usize == base + key_at + write.key.len() + 4);
        let (bytes, key_at, spilled) = if in_place {
            (data, key_at, 0)
        } else {
            let at = self.spill.len();
            self.spill.extend_from_slice(write.key);
            self.spill.extend_from_slice(&(value.len() as u32).to_le_bytes());
            self.spill.extend_from_slice(value);
            (&self.spill[..], at, Image::SPILLED)
        };
        assert!(key_at < 1 << Image::AT_BITS, "a replay buffer of 64 TiB");
        let prefix = prefix_of(bytes, key_at, write.key.len());
        let entry = &mut self.runs[run as usize];
        entry.count += 1;
        entry.ones |= prefix;
        entry.all &= prefix;
        self.list.push(Image {
            high: (prefix >> 64) as u64,
            low: prefix as u64,
            tid,
            place: key_at as u64 | ((write.key.len() as u64) << Image::AT_BITS) | spilled | delete,
            run,
            value_len: value.len() as u32,
        });
    }

    fn clear(&mut self) {
        for run in self.runs.drain(..) {
            self.run_of[run.table as usize] = NO_RUN;
        }
        self.list.clear();
        self.spill.clear();
    }
}

impl ReplayBatch {
    /// Applies the batch: by table, in key order, and of each row only the newest image.
    /// Consecutive descents of a tree in key order meet the nodes the last one loaded, rows
    /// inserted in key order go to the leaf the last insert used, and a row written many times
    /// in the segment costs one descent. Order-free replay (module comment) makes any order
    /// correct.
    ///
    /// The images themselves stay where they are; what moves is a 16-byte entry per image
    /// (`RunSort`). One pass puts each image's entry in its table's run and counts the radix
    /// sort's digits, the radix passes (or a comparison sort) order each run, and the apply
    /// walks the entries, reading each image a few entries ahead and putting the images of
    /// equal prefixes in key and TID order as it meets them.
    fn apply<'t>(
        &mut self,
        applier: &mut Applier,
        table_of: impl Fn(u32) -> Option<&'t Table>,
        pin: &Pin<'_>,
    ) {
        let ReplayBatch { segment, range, images, order, scratch } = self;
        let data = &segment[range.clone()];
        let Images { list, spill, runs, .. } = images;
        let list = &list[..];
        let bytes = |image: &Image| -> &[u8] { if image.spilled() { spill } else { data } };
        let key = |image: &Image| &bytes(image)[image.key_at()..image.key_at() + image.key_len()];
        let image_of = |entry: u128| &list[RunSort::index(entry)];
        assert!(list.len() <= 1 << 32, "an entry holds an image's index in 32 bits");
        let mut plans: Vec<(usize, RunSort)> = Vec::with_capacity(runs.len());
        let mut start = 0;
        for run in runs.iter() {
            plans.push((start, RunSort::plan(run.count, run.ones ^ run.all)));
            start += run.count;
        }
        let mut next: Vec<usize> = plans.iter().map(|(start, _)| *start).collect();
        order.clear();
        order.reserve(list.len());
        let slots = &mut order.spare_capacity_mut()[..list.len()];
        for (index, image) in list.iter().enumerate() {
            let run = image.run as usize;
            slots[next[run]].write(plans[run].1.entry(image, index));
            next[run] += 1;
        }
        // SAFETY: the runs' slots tile `0..list.len()` (each run's count of them, from its
        // start), and every image's entry was written to the next slot of its run, so each
        // slot was written once.
        unsafe { order.set_len(list.len()) };
        if scratch.len() < list.len() {
            scratch.resize(list.len(), 0);
        }
        for ((start, plan), end) in plans.iter().zip(next) {
            plan.sort(&mut order[*start..end], &mut scratch[*start..end], list);
        }
        // The images, and the row bytes in the segment's buffer, lie out of the order they
        // are now visited in: they are fetched some entries ahead so that the misses overlap,
        // an image twice as far ahead as its value (which the image says where to find).
        const AHEAD: usize = 8;
        let prefetch_image = |entry: u128| {
            let at = image_of(entry) as *const Image as *const u8;
            prefetch(at, 1);
            prefetch(at.wrapping_add(size_of::<Image>() - 1), 1);
        };
        for &entry in order.iter().take(2 * AHEAD) {
            prefetch_image(entry);
        }
        for &entry in order.iter().take(AHEAD) {
            let image = image_of(entry);
            prefetch_value(bytes(image), image);
        }
        let mut buffer = [0u8; 16];
        let mut finger = Finger::new(pin);
        // Rows already in the index wait here for `FOUND_LAG` more found rows before their
        // heads are read: the head is a line nothing else brings into the cache (a third of
        // the apply's time went to reading its TID), fetched meanwhile. Deferring is
        // safe as any order is: a row appears once here (its newest image in the batch), and
        // heads stay where they are during replay.
        const FOUND_LAG: usize = 8;
        let mut found: [Option<FoundRow<'_>>; FOUND_LAG] = [None; FOUND_LAG];
        let mut found_count = 0usize;
        let mut at = 0;
        while at < order.len() {
            // A group of one table's images with one prefix: one row's (a row written many
            // times), or those of keys that are zero-padded prefixes of each other or long
            // keys that share their first 16 bytes. In key and TID order, the newest image
            // of a row is the last of its own.
            let first = *image_of(order[at]);
            let end = at
                + 1
                + order[at + 1..]
                    .iter()
                    .take_while(|&&entry| {
                        let image = image_of(entry);
                        image.run == first.run && image.prefix() == first.prefix()
                    })
                    .count();
            let group = &mut order[at..end];
            if group.len() > 1 {
                if first.key_len() <= Image::SHORT
                    && group.iter().all(|&entry| image_of(entry).key_len() == first.key_len())
                {
                    group.sort_unstable_by_key(|&entry| image_of(entry).tid);
                } else {
                    group.sort_unstable_by(|&a, &b| {
                        let (a, b) = (image_of(a), image_of(b));
                        key(a).cmp(key(b)).then(a.tid.cmp(&b.tid))
                    });
                }
            }
            let table = table_of(runs[first.run as usize].table);
            let group = &order[at..end];
            for (offset, &entry) in group.iter().enumerate() {
                if let Some(&ahead) = order.get(at + offset + 2 * AHEAD) {
                    prefetch_image(ahead);
                }
                if let Some(&ahead) = order.get(at + offset + AHEAD) {
                    let ahead = image_of(ahead);
                    prefetch_value(bytes(ahead), ahead);
                }
                let Some(table) = table else { continue };
                let image = image_of(entry);
                if let Some(&next) = group.get(offset + 1) {
                    let next = image_of(next);
                    if next.key_len() == image.key_len()
                        && (image.key_len() <= Image::SHORT || key(next) == key(image))
                    {
                        continue;
                    }
                }
                let key = if image.key_len() <= Image::SHORT {
                    image.short_key(&mut buffer)
                } else {
                    key(image)
                };
                let value = (!image.delete()).then(|| {
                    &bytes(image)[image.value_at()..image.value_at() + image.value_len as usize]
                });
                let tid = Tid::from_u64(image.tid);
                if let Some(head) = applier.locate(table, key, tid, value, &mut finger, pin) {
                    prefetch(head as *const Head as *const u8, 1);
                    let slot = &mut found[found_count % FOUND_LAG];
                    if let Some(due) = slot.replace(FoundRow { head, tid, value }) {
                        applier.apply_found(due.head, due.tid, due.value);
                    }
                    found_count += 1;
                }
            }
            at = end;
        }
        for due in found.iter_mut().filter_map(Option::take) {
            applier.apply_found(due.head, due.tid, due.value);
        }
        images.clear();
    }
}

/// A row the index already had, waiting in `ReplayBatch::apply` for `Applier::apply_found`.
#[derive(Clone, Copy)]
struct FoundRow<'a> {
    head: &'a Head,
    tid: Tid,
    value: Option<&'a [u8]>,
}

/// Runs of more images than this may be radix sorted.
const RADIX_SORT_IMAGES_MIN: usize = 512;
/// Byte passes beyond which the comparison sort is used instead: each pass moves every
/// entry once, against about log2(n) comparisons an entry for the comparison sort (a bound
/// chosen from that count, not tuned by measurement).
const RADIX_SORT_PASSES_MAX: usize = 6;
/// The most differing prefix bytes an entry holds (with the image's index, 32 bits, below).
const ENTRY_KEY_BYTES_MAX: usize = 12;

/// How one table's images of a segment are put in prefix order. Each image gets an entry, a
/// `u128` holding the prefix bytes that differ among them, the most significant first (up to
/// `ENTRY_KEY_BYTES_MAX`), above the image's index in the segment's list; the entries are
/// sorted, not the 40-byte images. A table's keys in one segment differ in a few of their 16
/// prefix bytes (TPC-C's: a warehouse's low byte, a district, two or three bytes of an order
/// or item number), so the sort is mostly a least-significant-digit radix sort over those
/// bytes, which moves each entry a few times with no comparisons; the comparison sort it
/// replaced made about log2(n) comparisons an image and took about a quarter of recovery's
/// instructions (docs/performance.md).
struct RunSort {
    /// The prefix bytes that differ, as indexes into `Image::prefix`'s little-endian bytes,
    /// the most significant first.
    bytes: [u8; ENTRY_KEY_BYTES_MAX],
    len: usize,
    /// More bytes differ than an entry holds: entries whose keys tie are ordered by their
    /// images' prefixes.
    truncated: bool,
    /// The radix sort's digit counts per pass (the entry key's least significant byte
    /// first), when the radix sort is the one used.
    radix: Option<Box<[[usize; 256]; RADIX_SORT_PASSES_MAX]>>,
}

impl RunSort {
    /// The sort for `count` images whose prefixes differ in the bits of `differ`.
    fn plan(count: usize, differ: u128) -> RunSort {
        let mut bytes = [0; ENTRY_KEY_BYTES_MAX];
        let mut len = 0;
        let mut truncated = false;
        for (byte, bits) in differ.to_le_bytes().into_iter().enumerate().rev() {
            if bits != 0 {
                if len == ENTRY_KEY_BYTES_MAX {
                    truncated = true;
                    break;
                }
                bytes[len] = byte as u8;
                len += 1;
            }
        }
        let radix = (count >= RADIX_SORT_IMAGES_MIN && len <= RADIX_SORT_PASSES_MAX)
            .then(|| Box::new([[0; 256]; RADIX_SORT_PASSES_MAX]));
        RunSort { bytes, len, truncated, radix }
    }

    /// The entry of the image at `index` of the segment's list, counted for the radix sort.
    #[inline]
    fn entry(&mut self, image: &Image, index: usize) -> u128 {
        let prefix = image.prefix().to_le_bytes();
        let mut key = 0u128;
        for &byte in &self.bytes[..self.len] {
            key = (key << 8) | u128::from(prefix[usize::from(byte)]);
        }
        let entry = (key << 32) | index as u128;
        if let Some(counts) = &mut self.radix {
            for (pass, counts) in counts.iter_mut().enumerate().take(self.len) {
                counts[usize::from(RunSort::digit(entry, pass))] += 1;
            }
        }
        entry
    }

    /// The index in the segment's list of the image an entry stands for.
    #[inline]
    fn index(entry: u128) -> usize {
        entry as u32 as usize
    }

    /// The entry key's byte that radix pass `pass` orders by (its least significant first).
    #[inline(always)]
    fn digit(entry: u128, pass: usize) -> u8 {
        // Shifts of one 64-bit word: a variable shift of a `u128` costs a dozen
        // instructions.
        let bit = 32 + 8 * pass;
        if bit < 64 {
            (entry as u64 >> bit) as u8
        } else {
            ((entry >> 64) as u64 >> (bit - 64)) as u8
        }
    }

    /// Sorts `run`, the entries of this table (each made by `entry`), using `scratch` (as
    /// long); `list` holds the images.
    fn sort(&self, run: &mut [u128], scratch: &mut [u128], list: &[Image]) {
        debug_assert_eq!(run.len(), scratch.len());
        match &self.radix {
            Some(counts) => {
                let (mut from, mut to) = (run, scratch);
                for (pass, counts) in counts.iter().enumerate().take(self.len) {
                    let mut next = [0usize; 256];
                    let mut start = 0;
                    for (slot, count) in next.iter_mut().zip(counts) {
                        *slot = start;
                        start += count;
                    }
                    // The pass's word and the byte's place in it, fixed for the pass.
                    let bit = 32 + 8 * pass;
                    if bit < 64 {
                        RunSort::scatter(from, to, &mut next, |entry| (entry as u64 >> bit) as u8);
                    } else {
                        let shift = bit - 64;
                        RunSort::scatter(from, to, &mut next, |entry| {
                            ((entry >> 64) as u64 >> shift) as u8
                        });
                    }
                    std::mem::swap(&mut from, &mut to);
                }
                if self.len % 2 == 1 {
                    // The sorted entries are in `scratch`.
                    to.copy_from_slice(from);
                }
            }
            // Distinct indexes make the entries distinct, and equal keys are equal prefixes.
            None if !self.truncated => run.sort_unstable(),
            None => run.sort_unstable_by(|&a, &b| {
                (a >> 32).cmp(&(b >> 32)).then_with(|| {
                    list[RunSort::index(a)].prefix().cmp(&list[RunSort::index(b)].prefix())
                })
            }),
        }
    }

    #[inline(always)]
    fn scatter(
        from: &[u128],
        to: &mut [u128],
        next: &mut [usize; 256],
        digit: impl Fn(u128) -> u8,
    ) {
        for &entry in from {
            let slot = &mut next[usize::from(digit(entry))];
            to[*slot] = entry;
            *slot += 1;
        }
    }
}

/// Asks the processor to load the `lines` cache lines from `at`. Never faults.
#[inline(always)]
fn prefetch(at: *const u8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..lines {
        // SAFETY: a prefetch is a hint that never faults, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                at.wrapping_add(line * 64) as *const i8,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, lines);
}

/// Prefetches the start of an image's value (long keys are read where they lie as well).
#[inline(always)]
fn prefetch_value(bytes: &[u8], image: &Image) {
    let source = bytes.as_ptr();
    if image.key_len() > Image::SHORT {
        prefetch(source.wrapping_add(image.key_at()), 1);
    }
    prefetch(source.wrapping_add(image.value_at()), (image.value_len as usize).div_ceil(64).min(4));
}

/// The patches of the log (format 4), copied out of the segments as they are read, and
/// applied once every segment's images are in (step 3b of `run`).
///
/// A patch holds the bytes an update changed, so it applies only to the row as the write
/// before it left it: unlike an image, its place in the row's history matters. After the
/// images, each row holds its newest image (or the checkpoint's row), with that image's TID;
/// the patches newer than it are exactly those written since, and applying them in TID order
/// rebuilds the row. Older patches are skipped, as older images are.
///
/// Each patch is copied into one of `PATCH_BUCKETS` buckets by its row's hash, so that a
/// row's patches from every replay thread meet in one bucket, and the apply step sorts and
/// reads one bucket at a time, a few megabytes that stay in the cache. (A single list sorted
/// whole, then read in row order all over its gigabyte, spent most of its time in cache and
/// TLB misses: docs/performance.md, "Patches replayed by bucket".)
struct Patches {
    /// Per bucket, its patches one after another: a `PatchHead`'s bytes, the key, the body
    /// (`format::Patch::write_body_into`).
    buckets: Vec<Vec<u8>>,
    count: u64,
}

/// Buckets of `Patches`: enough that a bucket of a large log fits in the cache.
const PATCH_BUCKETS: usize = 1024;

/// A bucketed patch's head, as its bytes lie in the bucket.
#[derive(Clone, Copy)]
struct PatchHead {
    /// Of the table and key (`row_hash`): it groups a row's patches, and its top bits choose
    /// the bucket.
    hash: u64,
    tid: u64,
    table: u32,
    key_len: u32,
    body_len: u32,
}

impl PatchHead {
    const BYTES: usize = 28;

    fn write(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.hash.to_le_bytes());
        out[8..16].copy_from_slice(&self.tid.to_le_bytes());
        out[16..20].copy_from_slice(&self.table.to_le_bytes());
        out[20..24].copy_from_slice(&self.key_len.to_le_bytes());
        out[24..28].copy_from_slice(&self.body_len.to_le_bytes());
    }

    fn read(bytes: &[u8]) -> PatchHead {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        PatchHead {
            hash: u64_at(0),
            tid: u64_at(8),
            table: u32_at(16),
            key_len: u32_at(20),
            body_len: u32_at(24),
        }
    }

    /// The bytes of the patch this head starts, head included.
    fn len(&self) -> usize {
        PatchHead::BYTES + self.key_len as usize + self.body_len as usize
    }
}

impl Default for Patches {
    fn default() -> Patches {
        Patches { buckets: (0..PATCH_BUCKETS).map(|_| Vec::new()).collect(), count: 0 }
    }
}

impl Patches {
    fn bucket_of(hash: u64) -> usize {
        const _: () = assert!(PATCH_BUCKETS.is_power_of_two());
        (hash >> (64 - PATCH_BUCKETS.trailing_zeros())) as usize
    }

    fn push(&mut self, tid: u64, table: u32, key: &[u8], patch: &format::Patch<'_>) {
        let hash = row_hash(table, key);
        let body_len = patch.body_len();
        let head =
            PatchHead { hash, tid, table, key_len: key.len() as u32, body_len: body_len as u32 };
        let bucket = &mut self.buckets[Patches::bucket_of(hash)];
        let at = bucket.len();
        if bucket.capacity() < at + head.len() {
            // At least 64 KiB at once: a bucket that holds anything soon holds much more.
            bucket.reserve((at + head.len()).max(2 * bucket.capacity()).max(64 << 10) - at);
        }
        bucket.resize(at + head.len(), 0);
        let out = &mut bucket[at..];
        head.write(out);
        out[PatchHead::BYTES..PatchHead::BYTES + key.len()].copy_from_slice(key);
        patch.write_body_into(&mut out[PatchHead::BYTES + key.len()..]);
        self.count += 1;
    }
}

/// A 64-bit hash of a row's table and key (FxHash's multiply-rotate over 8-byte words: rows
/// only need spreading and grouping, equal keys are compared where hashes tie). Its top bits,
/// the best mixed by the last multiply, choose a row's bucket.
pub(crate) fn row_hash(table: u32, key: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let word = |at: usize| u64::from_le_bytes(key[at..at + 8].try_into().expect("8 bytes"));
    let mut hash = mix(0, u64::from(table) | (key.len() as u64) << 32);
    let len = key.len();
    let mut at = 0;
    while at + 8 <= len {
        hash = mix(hash, word(at));
        at += 8;
    }
    // The last bytes: the key's last word again if it has one (a copy into a zeroed word
    // called `memcpy` and stalled the load after it), else up to 7 bytes by 4-byte halves.
    let last = if at == len {
        return hash;
    } else if len >= 8 {
        word(len - 8)
    } else if len >= 4 {
        let half =
            |at: usize| u64::from(u32::from_le_bytes(key[at..at + 4].try_into().expect("4")));
        half(0) | half(len - 4) << 32
    } else {
        u64::from(key[0]) | u64::from(key[len / 2]) << 8 | u64::from(key[len - 1]) << 16
    };
    mix(hash, last)
}

/// One patch of a bucket being applied: where it lies, and what it is sorted by.
#[derive(Clone, Copy)]
struct PatchAt {
    hash: u64,
    tid: u64,
    /// Which replay thread's bucket holds it, and where in that bucket it starts.
    list: u32,
    at: usize,
}

/// Applies the patches of bucket `bucket`: each row's in TID order, those newer than the
/// row's TID, to a copy of the row installed once at the end.
fn apply_patches<'t>(
    lists: &[&Patches],
    bucket: usize,
    applier: &mut Applier,
    table_of: impl Fn(u32) -> Option<&'t Table>,
    storage: &dyn Storage,
) -> Result<()> {
    let mut mine: Vec<PatchAt> = Vec::new();
    for (list, patches) in lists.iter().enumerate() {
        let bytes = &patches.buckets[bucket];
        let mut at = 0;
        while at < bytes.len() {
            let head = PatchHead::read(&bytes[at..]);
            mine.push(PatchAt { hash: head.hash, tid: head.tid, list: list as u32, at });
            at += head.len();
        }
    }
    mine.sort_unstable_by_key(|patch| (patch.hash, patch.tid));
    // The head, the key and the body of a patch.
    let parts = |patch: &PatchAt| {
        let bytes = &lists[patch.list as usize].buckets[bucket][patch.at..];
        let head = PatchHead::read(bytes);
        let key = &bytes[PatchHead::BYTES..PatchHead::BYTES + head.key_len as usize];
        let body = &bytes[PatchHead::BYTES + key.len()..head.len()];
        (head, key, body)
    };
    let row_of = |patch: &PatchAt| {
        let (head, key, _) = parts(patch);
        (head.table, key)
    };
    let corrupt = |table: u32, key: &[u8], tid: u64, reason: &str| Error::Corrupt {
        file: storage.describe("wal"),
        offset: 0,
        reason: format!(
            "the patch of table {table} key {key:02x?} at TID {tid:#x} {reason}: the log lost the \
             write before it"
        ),
    };
    let pin = recovery_pin();
    let mut row = Vec::new();
    let mut start = 0;
    while start < mine.len() {
        let hash = mine[start].hash;
        let mut end = start + 1;
        while end < mine.len() && mine[end].hash == hash {
            end += 1;
        }
        let group = &mut mine[start..end];
        // Rows whose hashes tie: each row's patches together, still in TID order.
        let first = row_of(&group[0]);
        if group.iter().any(|patch| row_of(patch) != first) {
            group.sort_by(|a, b| row_of(a).cmp(&row_of(b)).then(a.tid.cmp(&b.tid)));
        }
        let mut row_start = 0;
        while row_start < group.len() {
            let (table_id, key) = row_of(&group[row_start]);
            let mut row_end = row_start + 1;
            while row_end < group.len() && row_of(&group[row_end]) == (table_id, key) {
                row_end += 1;
            }
            let patches = &group[row_start..row_end];
            row_start = row_end;
            let Some(table) = table_of(table_id) else { continue };
            let Some(found) = table.primary.get(key, &pin).value else {
                return Err(corrupt(table_id, key, patches[0].tid, "has no row to apply to"));
            };
            // SAFETY: reached through the index; heads are not freed during replay.
            let head = unsafe { &*(found as *mut Head) };
            let word = lock_waiting(head);
            let mut tid = word.tid();
            let present = head.value_locked(&mut row);
            for entry in patches {
                if entry.tid <= tid.as_u64() {
                    continue;
                }
                let (_, _, body) = parts(entry);
                let patch =
                    format::Patch::decode(body).expect("a patch body copied from a decoded one");
                if !present || patch.row_len() != row.len() {
                    head.unlock_to(word);
                    let reason = if present {
                        format!("is for a row of {} bytes, not {}", patch.row_len(), row.len())
                    } else {
                        "applies to a deleted row".to_owned()
                    };
                    return Err(corrupt(table_id, key, entry.tid, &reason));
                }
                patch.apply(&mut row);
                tid = Tid::from_u64(entry.tid);
                applier.applied += 1;
            }
            if tid == word.tid() {
                head.unlock_to(word);
            } else {
                applier.install(head, Some(&row), TidWord::new(tid, TidWord::LATEST));
            }
        }
        start = end;
    }
    Ok(())
}

/// Runs `work(index, state)` for every index in `0..count` on `threads` threads.
fn parallel<S: Send>(
    threads: usize,
    count: usize,
    mut make: impl FnMut() -> S,
    work: impl Fn(usize, &mut S) -> Result<()> + Sync,
) -> Result<Vec<S>> {
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let states: Vec<S> = (0..threads.clamp(1, count.max(1))).map(|_| make()).collect();
    let states = std::thread::scope(|scope| {
        let handles: Vec<_> = states
            .into_iter()
            .map(|mut state| {
                let (next, failure, work) = (&next, &failure, &work);
                scope.spawn(move || {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= count || failure.lock().unwrap().is_some() {
                            break;
                        }
                        if let Err(error) = work(index, &mut state) {
                            failure.lock().unwrap().get_or_insert(error);
                            break;
                        }
                    }
                    state
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().expect("recovery thread panicked")).collect()
    });
    match failure.into_inner().unwrap() {
        Some(error) => Err(error),
        None => Ok(states),
    }
}

struct CheckpointFile {
    path: String,
}

fn checkpoint_files(
    storage: &dyn Storage,
    epoch: u64,
    expected: u64,
) -> Result<Vec<CheckpointFile>> {
    let dir = format!("checkpoint/{epoch}");
    let names =
        storage.list(&dir).map_err(|error| io_error(storage, &dir, "cannot list", error))?;
    let files: Vec<CheckpointFile> = names
        .into_iter()
        .filter(|name| name.ends_with(".ckpt"))
        .map(|name| CheckpointFile { path: format!("{dir}/{name}") })
        .collect();
    if files.len() as u64 != expected {
        return Err(Error::Corrupt {
            file: storage.describe(&dir),
            offset: 0,
            reason: format!(
                "the manifest names {expected} checkpoint files, the directory has {}",
                files.len()
            ),
        });
    }
    Ok(files)
}

/// Reads one checkpoint file, calling `row(table, key, value)`; returns (rows, bytes, its
/// header).
fn read_checkpoint_file(
    storage: &dyn Storage,
    path: &str,
    epoch: u64,
    mut row: impl FnMut(u32, &[u8], &[u8]),
) -> Result<(u64, u64, FileHeader)> {
    let file = storage.describe(path);
    let data = storage.read(path).map_err(|error| io_error(storage, path, "cannot read", error))?;
    let header = format::decode_file_header(FileKind::Checkpoint, &data, &file)?;
    let corrupt = |offset: usize, reason: &str| Error::Corrupt {
        file: file.clone(),
        offset: offset as u64,
        reason: reason.into(),
    };
    if header.b != epoch {
        return Err(corrupt(0, "checkpoint file of another epoch"));
    }
    let mut reader = BlockReader::new(&data);
    let mut rows = 0u64;
    loop {
        let block = match reader.next_block() {
            Ok(Some(block)) => block,
            Ok(None) => return Err(corrupt(reader.position(), "checkpoint file has no end block")),
            // Checkpoint files are complete and synced before the manifest names them: any
            // damage is corruption.
            Err(damage) => return Err(damage.into_error(&file)),
        };
        match block.kind {
            BlockKind::Rows => {
                let mut cursor = format::Cursor::new(&block.payload);
                while !cursor.is_empty() {
                    let (Some(key), Some(value)) =
                        (cursor.sized().filter(|key| format::key_fits(key)), cursor.sized())
                    else {
                        return Err(corrupt(block.offset, "malformed row"));
                    };
                    row(header.a, key, value);
                    rows += 1;
                }
            }
            BlockKind::End => {
                let mut cursor = format::Cursor::new(&block.payload);
                if cursor.u64() != Some(rows) {
                    return Err(corrupt(block.offset, "row count in the end block does not match"));
                }
                if reader.position() != data.len() {
                    return Err(corrupt(reader.position(), "data after the end block"));
                }
                return Ok((rows, data.len() as u64, header));
            }
            _ => return Err(corrupt(block.offset, "unexpected block kind in a checkpoint")),
        }
    }
}

struct SegmentFile {
    path: String,
    run: u64,
    logger: usize,
    sequence: u64,
    /// The newest segment of its logger in the newest run: may end in a torn write.
    tail: bool,
}

/// The log's segments, oldest first, and the names of its spare segment files: one listing.
fn wal_files(storage: &dyn Storage) -> Result<(Vec<SegmentFile>, Vec<String>)> {
    let names =
        storage.list("wal").map_err(|error| io_error(storage, "wal", "cannot list", error))?;
    let spares = names.iter().filter(|name| parse_spare_name(name).is_some()).cloned().collect();
    let mut files: Vec<SegmentFile> = names
        .iter()
        .filter_map(|name| {
            let (run, logger, sequence) = parse_segment_name(name)?;
            Some(SegmentFile { path: format!("wal/{name}"), run, logger, sequence, tail: false })
        })
        .collect();
    files.sort_by_key(|file| (file.run, file.logger, file.sequence));
    mark_tails(&mut files);
    Ok((files, spares))
}

/// Marks the newest segment of each logger of the newest run in `files` (sorted) as a tail.
fn mark_tails(files: &mut [SegmentFile]) {
    let Some(newest) = files.last().map(|file| file.run) else { return };
    let mut last: BTreeMap<usize, usize> = BTreeMap::new();
    for (position, file) in files.iter_mut().enumerate() {
        file.tail = false;
        if file.run == newest {
            last.insert(file.logger, position);
        }
    }
    for position in last.into_values() {
        files[position].tail = true;
    }
}

/// The segments read while looking for the durable epoch, by their index in the list, kept
/// for replay.
type Preloaded = HashMap<usize, (Vec<u8>, std::ops::Range<usize>)>;

/// The durable epoch of the newest run in `files`: the minimum over its loggers of the last
/// mark in the logger's newest segment that has one. `None` if no segment of the run holds a
/// mark: the run crashed while opening, before its loggers' first pages were durable.
fn durable_epoch(storage: &dyn Storage, files: &[SegmentFile]) -> Result<(Option<u64>, Preloaded)> {
    let mut preloaded = Preloaded::new();
    if files.is_empty() {
        return Ok((Some(0), preloaded));
    }
    let mut durable = u64::MAX;
    let mut first_marks = u64::MAX;
    let mut loggers_seen = 0;
    let mut loggers_expected = 0;
    for position in files.iter().enumerate().filter_map(|(at, file)| file.tail.then_some(at)) {
        // A logger's newest segment holds no mark only if the crash came while the logger was
        // making it (`Segment::create` syncs the header and a first mark before the logger
        // writes there): then the logger's durable mark is the last of its segment before.
        let mut at = position;
        let scan = loop {
            let file = &files[at];
            let mut data = Vec::new();
            let range = storage
                .read_log(&file.path, &mut data)
                .map_err(|error| io_error(storage, &file.path, "cannot read", error))?;
            let scan = scan_segment(storage, file, &data[range.clone()], |_, _| {})?;
            preloaded.insert(at, (data, range));
            let before = at.checked_sub(1).filter(|&before| {
                (files[before].run, files[before].logger) == (file.run, file.logger)
            });
            match before {
                Some(before) if scan.last_mark.is_none() => at = before,
                _ => break scan,
            }
        };
        if let Some(mark) = scan.last_mark {
            durable = durable.min(mark);
            loggers_seen += 1;
        }
        if let Some(mark) = scan.first_mark {
            first_marks = first_marks.min(mark);
        }
        loggers_expected = loggers_expected.max(scan.loggers);
    }
    if loggers_seen == 0 {
        return Ok((None, preloaded));
    }
    if loggers_seen < loggers_expected {
        // A logger of the newest run never wrote its first block: the run crashed while
        // opening, before any commit could be logged. Every first block carries the durable
        // epoch the run started from.
        durable = first_marks;
    }
    Ok((Some(durable), preloaded))
}

/// What reading one segment found.
#[derive(Default)]
struct SegmentScan {
    /// The last valid mark and the first one.
    first_mark: Option<u64>,
    last_mark: Option<u64>,
    max_epoch: u64,
    transactions: u64,
    bytes: u64,
    torn: Option<Damage>,
    loggers: usize,
}

/// Reads a segment's blocks; `record(tid, writes)` sees every transaction.
fn scan_segment(
    storage: &dyn Storage,
    file: &SegmentFile,
    data: &[u8],
    mut record: impl FnMut(u64, &[format::LoggedWrite<'_>]),
) -> Result<SegmentScan> {
    let name = storage.describe(&file.path);
    let mut scan = SegmentScan::default();
    let header = match format::decode_file_header(FileKind::Segment, data, &name) {
        Ok(header) => header,
        // A crash while the logger was making the segment (`Segment::create`): the file
        // exists, its header never reached the disk (preallocated segments read as zeros).
        Err(_) if file.tail && data.len() < format::FILE_HEADER_BYTES => {
            scan.torn =
                Some(Damage::Torn { offset: 0, reason: "the file ends inside its header".into() });
            return Ok(scan);
        }
        Err(_) if file.tail && data[..format::FILE_HEADER_BYTES].iter().all(|&byte| byte == 0) => {
            scan.torn =
                Some(Damage::Torn { offset: 0, reason: "the header was never written".into() });
            return Ok(scan);
        }
        Err(error) => return Err(error),
    };
    scan.loggers = (header.a & 0xFFFF) as usize;
    let version = format::file_version(data);
    let mut reader = BlockReader::segment(data);
    loop {
        match reader.next_block() {
            Ok(None) => break,
            Ok(Some(block)) => {
                if block.kind != BlockKind::Log {
                    return Err(Error::Corrupt {
                        file: name,
                        offset: block.offset as u64,
                        reason: "not a log block".into(),
                    });
                }
                let mut max_epoch = scan.max_epoch.max(block.mark);
                let mut transactions = 0;
                format::decode_log_payload(&block.payload, version, |tid, writes| {
                    max_epoch = max_epoch.max(Tid::from_u64(tid).epoch().0);
                    transactions += 1;
                    record(tid, writes);
                })
                .map_err(|reason| Error::Corrupt {
                    file: name.clone(),
                    offset: block.offset as u64,
                    reason,
                })?;
                scan.max_epoch = max_epoch;
                scan.transactions += transactions;
                scan.first_mark.get_or_insert(block.mark);
                scan.last_mark = Some(block.mark);
            }
            Err(damage @ Damage::Torn { .. }) if file.tail => {
                scan.torn = Some(damage);
                break;
            }
            Err(damage) => return Err(damage.into_error(&name)),
        }
    }
    // The log's bytes, not the preallocated zeros after them.
    scan.bytes = reader.position() as u64;
    Ok(scan)
}

/// The most memory recovery faults in ahead of its threads' need (`Prefault`: no more than they
/// took so far). Alternated with none on a 10-warehouse TPC-C log, it replayed about 5% faster
/// (docs/performance.md, "Found rows wait for their heads").
const RECOVERY_PREFAULT_BYTES_MAX: usize = 1 << 30;

/// Recovers the data directory in `storage` (or only checks it, changing nothing).
/// `sample_every`: how often to sample the checkpoint's keys for the next checkpoint's splits
/// (`checkpoint::sample_every`; 0 samples nothing).
fn run(
    storage: &dyn Storage,
    keys: Option<&IndexKeys>,
    threads: usize,
    mode: Mode,
    shape: HeadShape,
    pointers: IndexPointers,
    sample_every: u64,
) -> Result<Recovered> {
    let started = Instant::now();
    let threads = threads.max(1);
    // Memory for the rebuilt database is faulted in ahead while a core would idle.
    let _prefault = (mode == Mode::Recover).then(|| Prefault::start(RECOVERY_PREFAULT_BYTES_MAX));
    let mut report = RecoveryReport { threads, ..RecoveryReport::default() };
    let mut manifest = match read_optional(storage, MANIFEST)? {
        Some(text) => Manifest::decode(&text, &storage.describe(MANIFEST))?,
        None => Manifest::default(),
    };
    let ReadCatalog { tables: catalog, last_epoch: catalog_epoch, rows: catalog_rows } =
        read_catalog(storage, mode, &mut report)?;
    let tables =
        if mode == Mode::Recover { build_tables(&catalog, keys, pointers)? } else { Vec::new() };
    report.tables = catalog.iter().flatten().count();
    let table_of =
        |id: u32| -> Option<&Table> { tables.get(id as usize).and_then(|t| t.as_deref()) };
    // Every write to a table follows its synced creation in the catalog, so a row of a table
    // the catalog never created means the catalog lost records: corruption, in both modes
    // (the smallest such table id is kept; `u64::MAX`: none).
    let never_created = AtomicU64::new(u64::MAX);
    let note_table = |id: u32| {
        if id as usize >= catalog.len() {
            never_created.fetch_min(u64::from(id), Ordering::Relaxed);
        }
    };
    let catalog_damaged = |seen_in: &str| -> Result<()> {
        match never_created.load(Ordering::Relaxed) {
            u64::MAX => Ok(()),
            id => Err(Error::Corrupt {
                file: storage.describe(CATALOG),
                offset: 0,
                reason: format!(
                    "the {seen_in} holds rows of table {id}, which the catalog never created: \
                     the catalog has lost records"
                ),
            }),
        }
    };

    // 1. The checkpoint.
    let checkpoint_started = Instant::now();
    let checkpoint_epoch = manifest.checkpoint.map_or(0, |(epoch, _)| epoch);
    let mut appliers = Vec::new();
    let mut checkpoint_parts = Vec::new();
    if let Some((epoch, count)) = manifest.checkpoint {
        let files = checkpoint_files(storage, epoch, count)?;
        let rows = AtomicU64::new(0);
        let bytes = AtomicU64::new(0);
        let parts = Mutex::new(Vec::with_capacity(files.len()));
        let tid = Tid::new(Epoch(epoch.max(1)), 0);
        let quiescence = Quiescence::new(threads);
        appliers = parallel(threads, files.len(), Applier::maker(shape), |index, applier| {
            applier.begin_file(&quiescence);
            let pin = recovery_pin();
            let mut finger = Finger::new(&pin);
            let mut part = super::checkpoint::PartSamples::default();
            let mut sampler = super::checkpoint::Sampler::new(sample_every);
            let (file_rows, file_bytes, header) =
                read_checkpoint_file(storage, &files[index].path, epoch, |table, key, value| {
                    note_table(table);
                    sampler.offer(part.rows, key, &mut part.samples);
                    part.rows += 1;
                    let Some(table) = table_of(table) else { return };
                    if let Some(head) =
                        applier.locate(table, key, tid, Some(value), &mut finger, &pin)
                    {
                        applier.apply_found(head, tid, Some(value));
                    }
                })?;
            applier.end_file(&quiescence);
            (part.table, part.number) = (header.a, header.c);
            parts.lock().unwrap_or_else(|poison| poison.into_inner()).push(part);
            rows.fetch_add(file_rows, Ordering::Relaxed);
            bytes.fetch_add(file_bytes, Ordering::Relaxed);
            Ok(())
        })?;
        appliers.iter_mut().for_each(Applier::end_phase);
        checkpoint_parts = parts.into_inner().unwrap_or_else(|poison| poison.into_inner());
        catalog_damaged("checkpoint")?;
        report.checkpoint_epoch = Some(epoch);
        report.checkpoint_files = files.len();
        report.checkpoint_rows = rows.into_inner();
        report.checkpoint_bytes = bytes.into_inner();
        report.checkpoint_leaves =
            tables.iter().flatten().map(|table| table.primary.leaves()).sum();
    }
    report.checkpoint_seconds = checkpoint_started.elapsed().as_secs_f64();

    // 2. The durable epoch of the newest run, from the last segment of each of its loggers.
    let replay_started = Instant::now();
    let (mut files, spares) = wal_files(storage)?;
    let newest_run = files.last().map_or(0, |file| file.run);
    let (durable, preloaded) = loop {
        match durable_epoch(storage, &files)? {
            (Some(durable), preloaded) => break (durable, preloaded),
            (None, _) => {
                // The newest run crashed while opening, before any of its loggers' first pages
                // (header and first mark) was durable, so it logged nothing: its segments go,
                // and the run before it is the newest. Counted as that run's durable epoch
                // (0, all lost) it had voided every commit since the checkpoint.
                let run = files.last().map_or(0, |file| file.run);
                let first = files.partition_point(|file| file.run < run);
                for file in files.drain(first..) {
                    unborn_segment(storage, &file.path, mode, &mut report)?;
                }
                mark_tails(&mut files);
            }
        }
    };
    let replay_low = checkpoint_epoch;
    let replay_high = durable;

    // 3. Replay every segment in parallel. One more thread reads the segments ahead, newest
    // first, into a pool of buffers (one per replaying thread and one spare), so the device
    // works while the cores replay; it waits in I/O and takes almost no CPU. Newest first, an
    // older image of a row mostly finds a newer one already installed and only compares TIDs:
    // no value is allocated and copied, and none is left behind as garbage (a 10-warehouse
    // TPC-C log installed 12.1 million images that way against 22.2 million oldest first).
    struct ReplayState {
        applier: Applier,
        batch: ReplayBatch,
        transactions: u64,
        bytes: u64,
        max_epoch: u64,
        infos: Vec<(usize, SegmentInfo, Option<Damage>)>,
        patches: Patches,
    }
    type Read = (usize, std::io::Result<(Vec<u8>, std::ops::Range<usize>)>);
    let replay_threads = threads.clamp(1, files.len().max(1));
    let quiescence = Quiescence::new(replay_threads);
    let mut states = std::thread::scope(|scope| {
        let (read_tx, read_rx) = std::sync::mpsc::sync_channel::<Read>(replay_threads);
        let (free_tx, free_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        // The segments read to find the durable epoch join the pool once replayed: one buffer
        // per replaying thread and one spare in all, each touched for the first time when it
        // is first read into (the kernel zeroes its pages).
        for _ in preloaded.len()..=replay_threads {
            let _ = free_tx.send(Vec::new());
        }
        let files = &files;
        scope.spawn(move || {
            let mut preloaded = preloaded;
            for (index, file) in files.iter().enumerate().rev() {
                let read = match preloaded.remove(&index) {
                    Some(data) => Ok(data),
                    None => {
                        // Every buffer is out: wait for one (or for the replay to stop).
                        let Ok(mut data) = free_rx.recv() else { return };
                        storage.read_log(&file.path, &mut data).map(|range| (data, range))
                    }
                };
                if read_tx.send((index, read)).is_err() {
                    return;
                }
            }
        });
        let read_rx = Mutex::new(read_rx);
        let mut next_applier = Applier::maker(shape);
        let replayed = parallel(
            replay_threads,
            files.len(),
            || ReplayState {
                applier: next_applier(),
                batch: ReplayBatch::default(),
                transactions: 0,
                bytes: 0,
                max_epoch: 0,
                infos: Vec::new(),
                patches: Patches::default(),
            },
            |_, state| {
                let pin = recovery_pin();
                let received = read_rx.lock().unwrap().recv();
                let Ok((index, read)) = received else {
                    return Err(Error::Corrupt {
                        file: storage.describe("wal"),
                        offset: 0,
                        reason: "the segment reader stopped".into(),
                    });
                };
                let file = &files[index];
                let (buffer, range) =
                    read.map_err(|error| io_error(storage, &file.path, "cannot read", error))?;
                let batch = &mut state.batch;
                (batch.segment, batch.range) = (buffer, range);
                let ReplayBatch { segment, range, images, .. } = batch;
                let patches = &mut state.patches;
                let data = &segment[range.clone()];
                let scan = scan_segment(storage, file, data, |tid, writes| {
                    for write in writes {
                        note_table(write.table);
                    }
                    let epoch = Tid::from_u64(tid).epoch().0;
                    if epoch <= replay_low
                        || epoch > replay_high
                        || manifest.is_void(epoch)
                        || mode == Mode::Check
                    {
                        return;
                    }
                    for write in writes {
                        if table_of(write.table).is_none() {
                            continue;
                        }
                        match write.change {
                            Change::Put(value) => images.push(data, tid, write, Some(value)),
                            Change::Delete => images.push(data, tid, write, None),
                            Change::Patch(patch) => {
                                patches.push(tid, write.table, write.key, &patch)
                            }
                        }
                    }
                })?;
                state.applier.begin_file(&quiescence);
                batch.apply(&mut state.applier, table_of, &pin);
                state.applier.end_file(&quiescence);
                let _ = free_tx.send(std::mem::take(&mut batch.segment));
                state.transactions += scan.transactions;
                state.bytes += scan.bytes;
                state.max_epoch = state.max_epoch.max(scan.max_epoch);
                state.infos.push((
                    index,
                    SegmentInfo { path: file.path.clone(), max_epoch: scan.max_epoch },
                    scan.torn,
                ));
                Ok(())
            },
        );
        // The reader, if still waiting for a buffer or a taker, stops.
        drop(read_rx);
        drop(free_tx);
        replayed
    })?;
    states.iter_mut().for_each(|state| state.applier.end_phase());
    catalog_damaged("log")?;
    // 3b. Patches, on top of the newest images (`apply_patches`).
    let patches_started = Instant::now();
    let patch_lists: Vec<&Patches> = states.iter().map(|state| &state.patches).collect();
    report.log_patches = patch_lists.iter().map(|list| list.count).sum();
    if report.log_patches > 0 {
        let patched =
            parallel(threads, PATCH_BUCKETS, Applier::maker(shape), |bucket, applier| {
                apply_patches(&patch_lists, bucket, applier, table_of, storage)
            })?;
        report.log_writes_applied += patched.iter().map(|applier| applier.applied).sum::<u64>();
        appliers.extend(patched);
    }
    drop(patch_lists);
    report.patch_seconds = patches_started.elapsed().as_secs_f64();
    // 3c. The rows the catalog holds (`Database::log_catalog_rows`: the SQL catalog's, with
    // durability off), by the same TID rule: the newest of them, the checkpoint's and the
    // log's is the row.
    if mode == Mode::Recover && !catalog_rows.is_empty() {
        let mut applier = Applier::maker(shape)();
        let pin = recovery_pin();
        for ((table, key), (tid, value)) in &catalog_rows {
            let Some(table) = table_of(*table) else { continue };
            let (tid, value) = (Tid::from_u64(*tid), value.as_deref());
            let mut finger = Finger::new(&pin);
            if let Some(head) = applier.locate(table, key, tid, value, &mut finger, &pin) {
                applier.apply_found(head, tid, value);
            }
        }
        report.log_writes_applied += applier.applied;
        appliers.push(applier);
    }
    let mut segments: Vec<(usize, SegmentInfo)> = Vec::new();
    let mut max_epoch = checkpoint_epoch.max(catalog_epoch).max(durable);
    let mut torn = Vec::new();
    for state in states {
        report.log_transactions += state.transactions;
        report.log_bytes += state.bytes;
        report.log_writes_applied += state.applier.applied;
        max_epoch = max_epoch.max(state.max_epoch);
        for (index, info, damage) in state.infos {
            if let Some(damage) = damage {
                torn.push((info.path.clone(), damage));
            }
            segments.push((index, info));
        }
        appliers.push(state.applier);
    }
    torn.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, damage) in torn {
        if torn_tail(storage, &path, &damage, mode, &mut report)? {
            segments.retain(|(_, info)| info.path != path);
        }
    }
    segments.sort_by_key(|(index, _)| *index);
    report.log_segments = files.len();
    report.replay_seconds = replay_started.elapsed().as_secs_f64();
    report.durable_epoch = durable;
    if newest_run > 0 && max_epoch > durable {
        report.discarded_epochs = Some((durable + 1, max_epoch));
    }

    // 4. Deleted rows leave the primary index; secondary indexes are built.
    let index_started = Instant::now();
    if mode == Mode::Recover {
        let live: Vec<&TableRef> = tables.iter().flatten().collect();
        let more = parallel(threads, live.len(), Applier::maker(shape), |index, applier| {
            finish_table(live[index], applier, &recovery_pin());
            Ok(())
        })?;
        appliers.extend(more);
    }
    report.index_seconds = index_started.elapsed().as_secs_f64();

    // The next run: its epochs start above everything here, and nothing between the durable
    // epoch and the restart is ever replayed.
    manifest.run = manifest.run.max(newest_run) + 1;
    if let Some((low, high)) = report.discarded_epochs {
        manifest.voids.push((low, high));
    }
    report.total_seconds = started.elapsed().as_secs_f64();
    Ok(Recovered {
        tables,
        catalog_rows,
        manifest,
        last_epoch: max_epoch,
        segments: segments.into_iter().map(|(_, info)| info).collect(),
        spares,
        garbage: appliers.into_iter().map(|applier| applier.garbage).collect(),
        report,
        checkpoint_parts,
    })
}

/// A `Pin` for recovery threads. No epoch protects them: during the checkpoint load and the
/// replay, what they retire is freed only once no thread working on a file can reach it
/// (`Quiescence`), and they reach nodes only while working on a file; in the other phases it
/// is freed after every recovery thread has finished.
fn recovery_pin() -> Pin<'static> {
    // SAFETY: no worker exists during recovery, and recovery frees nothing a recovery thread
    // can still reach (above).
    unsafe { Pin::assume_pinned() }
}

/// Removes deleted rows from a table's primary index and builds its secondary indexes.
fn finish_table(table: &Table, applier: &mut Applier, pin: &Pin<'_>) {
    /// Builds the secondary entries of live rows as the scan passes them (other trees than
    /// the one scanned), and keeps only the deleted rows, which leave the primary index after
    /// the scan: copying every key first cost one allocation per row.
    struct Finish<'a> {
        table: &'a Table,
        applier: &'a mut Applier,
        pin: &'a Pin<'a>,
        deleted: Vec<(Vec<u8>, u64)>,
        value: Vec<u8>,
        entry: Vec<u8>,
        scratch: Vec<u8>,
    }
    impl crate::index::ScanVisitor for Finish<'_> {
        fn leaf(&mut self, _leaf: crate::index::LeafVersion) {}
        fn entry(&mut self, key: &[u8], head: u64) -> bool {
            // SAFETY: in the index; recovery is the only user.
            let head_ref = unsafe { &*(head as *mut Head) };
            if head_ref.word().is_absent() {
                self.deleted.push((key.to_vec(), head));
                return true;
            }
            if !self.table.has_secondaries() {
                return true;
            }
            self.value.clear();
            let Ok(word) = head_ref.read(&mut self.value) else {
                unreachable!("nothing holds a lock during recovery");
            };
            for index in self.table.secondaries.iter() {
                self.entry.clear();
                if index.entry_of(&self.value, key, &mut self.entry, &mut self.scratch) {
                    if self.table.physical {
                        push_version(&mut self.entry, word.tid().as_u64());
                    }
                    let garbage = &mut self.applier.garbage;
                    let _ = index.tree.insert(&self.entry, head, self.pin, garbage, &mut ());
                }
            }
            true
        }
    }
    let mut finish = Finish {
        table,
        applier,
        pin,
        deleted: Vec::new(),
        value: Vec::new(),
        entry: Vec::new(),
        scratch: Vec::new(),
    };
    table.primary.scan(
        Bound::Unbounded,
        Bound::Unbounded,
        crate::index::Direction::Forward,
        pin,
        &mut crate::index::ScanBuffer::new(),
        &mut finish,
    );
    let Finish { deleted, applier, .. } = finish;
    for (key, head) in deleted {
        table.primary.remove(&key, Some(head), pin, &mut applier.garbage, &mut ());
        // SAFETY: just unlinked; no other thread can reach it during recovery.
        unsafe { Head::free_now(head as *mut Head, &mut applier.arena) };
    }
}

/// Recovers the tables; `shape`: what their heads are made of.
pub(crate) fn recover(
    storage: &dyn Storage,
    keys: Option<&IndexKeys>,
    threads: usize,
    shape: HeadShape,
    pointers: IndexPointers,
    sample_every: u64,
) -> Result<Recovered> {
    run(storage, keys, threads, Mode::Recover, shape, pointers, sample_every)
}

/// Verifies a data directory without changing it: every checkpoint and log block's checksum,
/// every record's structure, and the catalog. Torn tails are reported, not truncated.
pub fn check(storage: &dyn Storage, threads: usize) -> Result<RecoveryReport> {
    run(storage, None, threads, Mode::Check, HeadShape::default(), IndexPointers::Logical, 0)
        .map(|recovered| recovered.report)
}

/// The catalog as a list of live tables `(id, name, index names)`, for reports.
pub fn catalog_tables(storage: &dyn Storage) -> Result<Vec<(u32, String, Vec<String>)>> {
    let catalog = read_catalog(storage, Mode::Check, &mut RecoveryReport::default())?.tables;
    Ok(catalog
        .iter()
        .enumerate()
        .filter_map(|(id, entry)| {
            entry.as_ref().map(|(name, indexes)| {
                (id as u32, name.clone(), indexes.iter().map(|i| i.name.clone()).collect())
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Images whose prefixes vary only in the bytes `mask` has set, each with a distinct TID.
    fn images(seeds: &[(u64, u64)], mask: (u64, u64)) -> Vec<Image> {
        seeds
            .iter()
            .enumerate()
            .map(|(tid, &(high, low))| Image {
                high: (high & mask.0) | 0x0102_0300_0000_0000,
                low: low & mask.1,
                tid: tid as u64,
                place: 16 << Image::AT_BITS,
                ..Image::default()
            })
            .collect()
    }

    /// Sorts as replay does (`RunSort`): the images' entries, by the radix sort where the
    /// plan chooses it, else by the comparison sort; gives the images in the entries' order.
    fn sort_by_prefix(run: &[Image]) -> Vec<Image> {
        let (ones, all) = run.iter().fold((0, u128::MAX), |(ones, all), image| {
            (ones | image.prefix(), all & image.prefix())
        });
        let mut plan = RunSort::plan(run.len(), ones ^ all);
        let mut order: Vec<u128> =
            run.iter().enumerate().map(|(index, image)| plan.entry(image, index)).collect();
        let mut scratch = vec![0; run.len()];
        plan.sort(&mut order, &mut scratch, run);
        order.into_iter().map(|entry| run[RunSort::index(entry)]).collect()
    }

    proptest! {
        /// `prefix_of` gives a key's first 16 bytes followed by zeros, whether the buffer has
        /// 16 bytes from the key's start or not.
        #[test]
        fn prefix_of_reads_only_the_key(
            buffer in proptest::collection::vec(any::<u8>(), 0..48),
            at in 0usize..48,
            len in 0usize..40,
        ) {
            let at = at.min(buffer.len());
            let len = len.min(buffer.len() - at);
            let mut want = [0u8; 16];
            let keep = len.min(16);
            want[..keep].copy_from_slice(&buffer[at..at + keep]);
            prop_assert_eq!(prefix_of(&buffer, at, len), u128::from_be_bytes(want));
        }

        /// The radix sort (and the comparison sort it falls back to for short runs and for
        /// prefixes that differ in many bytes) orders by prefix and keeps every image.
        #[test]
        fn images_sort_by_prefix(
            seeds in proptest::collection::vec(any::<(u64, u64)>(), 0..3000),
            mask in prop_oneof![
                Just((0x0000_0000_00FF_FF0F, 0)),
                Just((0xFF00_0000_0000_00FF, 0xFF00_0000_0000_0001)),
                Just((0x0000_0000_0000_0003, 0)),
                Just((0, 0)),
                Just((u64::MAX, 0)),
                Just((u64::MAX, u64::MAX)),
                any::<(u64, u64)>(),
            ],
        ) {
            let images = images(&seeds, mask);
            let mut want = images.clone();
            want.sort_unstable_by_key(|image| (image.prefix(), image.tid));
            let mut run = sort_by_prefix(&images);
            prop_assert!(run.windows(2).all(|pair| pair[0].prefix() <= pair[1].prefix()));
            run.sort_by_key(|image| (image.prefix(), image.tid));
            let tids = |images: &[Image]| images.iter().map(|image| image.tid).collect::<Vec<_>>();
            prop_assert_eq!(tids(&run), tids(&want));
        }

        /// Prefixes that differ in more bytes than an entry holds, most of them agreeing in
        /// the twelve most significant of those: entries whose keys tie are ordered by their
        /// prefixes.
        #[test]
        fn entries_that_tie_sort_by_prefix(
            seeds in proptest::collection::vec((0u8..2, 0u8..2, any::<u8>()), 0..2000),
        ) {
            let seeds: Vec<(u64, u64)> = seeds
                .iter()
                .map(|&(high, low, last)| {
                    (
                        u64::from(high) * 0xFEFE_FEFE_FEFE_FEFE,
                        (u64::from(low) * 0x0101_0101_0100_0000) | u64::from(last),
                    )
                })
                .collect();
            let images = images(&seeds, (u64::MAX, u64::MAX));
            let run = sort_by_prefix(&images);
            prop_assert_eq!(run.len(), images.len());
            prop_assert!(run.windows(2).all(|pair| pair[0].prefix() <= pair[1].prefix()));
        }
    }
}

/// Randomized schedules (shuttle) of `Quiescence`: threads that each work on files, reading
/// the current node while they work and now and then replacing it, retiring the old one and
/// freeing what has passed, as `Applier::end_file` does. No node a thread reads while it works
/// may be freed before it ends its file.
#[cfg(all(test, feature = "shuttle"))]
mod quiescence_schedules {
    use super::Quiescence;
    use crate::sync::shim::{AtomicBool, AtomicU64, Ordering};
    use shuttle::thread;
    use std::sync::Arc;

    const THREADS: usize = 3;
    const FILES: usize = 3;
    const NODES: usize = THREADS * FILES + 1;

    struct Shared {
        quiescence: Quiescence,
        /// The node the tree links now (an index into `freed`).
        current: AtomicU64,
        /// The next node index to link.
        next: AtomicU64,
        freed: Vec<AtomicBool>,
    }

    fn run() {
        let shared = Arc::new(Shared {
            quiescence: Quiescence::new(THREADS),
            current: AtomicU64::new(0),
            next: AtomicU64::new(1),
            freed: (0..NODES).map(|_| AtomicBool::new(false)).collect(),
        });
        let threads: Vec<_> = (0..THREADS)
            .map(|slot| {
                let shared = shared.clone();
                thread::spawn(move || {
                    let mut limbo: Vec<(u64, Vec<u64>)> = Vec::new();
                    for file in 0..FILES {
                        shared.quiescence.begin(slot);
                        let seen = shared.current.load(Ordering::SeqCst);
                        let mut retired = Vec::new();
                        if (slot + file) % 2 == 0 {
                            // Unlink the node for a new one, as a split does.
                            let new = shared.next.fetch_add(1, Ordering::SeqCst);
                            if shared
                                .current
                                .compare_exchange(seen, new, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                            {
                                retired.push(seen);
                            }
                        }
                        thread::yield_now();
                        assert!(
                            !shared.freed[seen as usize].load(Ordering::SeqCst),
                            "node {seen} freed while thread {slot} works on a file that read it"
                        );
                        let tag = shared.quiescence.end(slot);
                        limbo.push((tag, retired));
                        limbo.retain(|(tag, nodes)| {
                            let passed = shared.quiescence.passed(*tag);
                            if passed {
                                for &node in nodes {
                                    shared.freed[node as usize].store(true, Ordering::SeqCst);
                                }
                            }
                            !passed
                        });
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    #[test]
    fn no_node_is_freed_while_a_file_may_reach_it() {
        shuttle::check_random(run, 2000);
        shuttle::check_pct(run, 2000, 3);
    }
}
