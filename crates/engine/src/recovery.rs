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
//!
//! This file runs the phases (`run`); [`scan`] finds the checkpoint's files, the log's segments
//! and the durable epoch, [`merge`] sorts a segment's images and inserts them table by table,
//! [`patches`] sets patches aside and applies them last, and [`apply`] installs rows, keeps the
//! threads' reclamation safe, and rebuilds the indexes at the end (`finish_table`).

use crate::error::{Error, Result};
use crate::index::Finger;
use crate::mem::arena::Arena;
use crate::mem::chunks::Prefault;
use crate::storage::TableRef;
use crate::storage::record::{Busy, HeadShape};
use crate::storage::table::push_version;
use crate::storage::{Head, IndexPointers, IndexSpec, Table, TableId, TableSpec, Tid, TidWord};
use crate::sync::Garbage;
use crate::sync::Retention;
use crate::sync::{Epoch, Pin, shim};
use crate::wal::format::{
    self, BlockKind, BlockReader, CatalogRecord, Change, Damage, FileHeader, FileKind, Manifest,
};
use crate::wal::log::{SegmentInfo, parse_segment_name, parse_spare_name};
use crate::wal::report::{CATALOG, CatalogState, MANIFEST, RecoveryReport};
use crate::wal::storage::Storage;
use crate::wal::{CatalogRows, IndexDefinition, IndexKeys, io_error};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

mod apply;
mod merge;
mod patches;
mod scan;

use apply::*;
use merge::*;
pub(crate) use patches::row_hash;
use patches::*;
use scan::*;

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
    pub checkpoint_parts: Vec<crate::checkpoint::PartSamples>,
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

/// The most memory recovery faults in ahead of its threads' need (`Prefault`: no more than they
/// took so far). Alternated with none on a 10-warehouse TPC-C log, it replayed about 5% faster
/// (bench/results/history.md, "Found rows wait for their heads").
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
            let mut part = crate::checkpoint::PartSamples::default();
            let mut sampler = crate::checkpoint::Sampler::new(sample_every);
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
