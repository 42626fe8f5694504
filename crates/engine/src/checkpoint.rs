//! Checkpoints: an epoch-consistent copy of every table, written in the background.
//!
//! The checkpoint holds the current snapshot epoch `S` (`EpochManager::hold_snapshot`), so no
//! version a snapshot at `S` reads is pruned, and then `checkpoint_threads` threads copy tables
//! with snapshot reads at `S`, in short transactions of `ROWS_PER_TRANSACTION` rows so that no
//! thread stays pinned for long. A table is written as one file per key range (a *part*) of
//! about `Config::checkpoint_part_rows` rows: the checkpoint before (or the recovery that loaded
//! it) sampled each table's keys, and this one splits the table at them (`Splits`), so a large
//! table's parts are written, and recovered, in parallel. Parts go to the threads largest table
//! first. Every file ends with an end block carrying its row count. Once all files are synced and
//! the log is durable up to `S`, the manifest names the checkpoint; then older checkpoints and
//! the log segments whose records are all at or below `S` are removed. Recovery loads the
//! checkpoint and replays only epochs above `S`.

use crate::cc::{self, Txn};
use crate::error::Result;
use crate::index::Direction;
use crate::state::Shared;
use crate::storage::TableRef;
use crate::sync::Epoch;
use crate::wal::format::{self, BlockKind, FileHeader, FileKind};
use crate::wal::log::SegmentInfo;
use crate::wal::report::{CheckpointReport, LastCheckpoint, Splits};
use crate::wal::{DataDir, WriteFailure, io_error};
use crate::worker::Worker;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Rows copied per snapshot transaction.
const ROWS_PER_TRANSACTION: usize = 2048;
/// Payload bytes per checkpoint block.
const BLOCK_BYTES: usize = 1 << 20;
/// Bytes a checkpoint file is written between two `StorageFile::write_back` calls: at most
/// twice this is waiting for the device at once. Left to the page cache, the 360 MB of
/// TPC-C's ORDER-LINE went to the device at the file's final fsync, in about 250 ms, and a log
/// fsync waited behind it for 107 ms (docs/performance.md).
const WRITE_BACK_BYTES: u64 = 8 << 20;

/// One file of a checkpoint: the rows of `tables[table]` from `low` (included) to `high`
/// (excluded); `None` is the table's end.
struct Part<'a> {
    table: usize,
    number: usize,
    low: Option<&'a [u8]>,
    high: Option<&'a [u8]>,
}

/// Log bytes since the last checkpoint recovery loaded (or since the database was made): the
/// log recovery replayed, which stays on disk until the next checkpoint, and what this process
/// has logged.
pub(crate) fn log_position(shared: &Shared, data: &DataDir) -> u64 {
    data.report.log_bytes
        + shared.log.as_ref().map_or(0, |log| log.bytes_written.load(Ordering::Relaxed))
}

/// How long a paused background checkpoint sleeps before it looks at the pause again.
const PAUSE_POLL: Duration = Duration::from_millis(5);

/// Takes a checkpoint now (one at a time; a second caller waits for the first). A
/// `background` checkpoint waits between its batches while background checkpoints are paused
/// (`Database::pause_checkpoints`); one asked for (`Database::checkpoint`) never does.
pub(crate) fn take(
    shared: &Arc<Shared>,
    data: &DataDir,
    threads: usize,
    background: bool,
) -> Result<CheckpointReport> {
    let mut splits = data.checkpointing.lock().unwrap_or_else(|poison| poison.into_inner());
    let started = Instant::now();
    let epochs = &shared.epochs;
    // A fresh database has no snapshot epoch until the first boundary becomes stable. And a
    // checkpoint needs a snapshot epoch above the published one's: it writes into
    // `checkpoint/<epoch>/`, so at the same epoch (two checkpoints within a snapshot interval)
    // it would write over the files the manifest names, and a crash or a full disk meanwhile
    // would leave the manifest naming torn or removed files (the SQL crate's
    // tests/crash_points.rs). The snapshot epoch passes it within a snapshot interval.
    let published = data.manifest.lock().unwrap_or_else(|poison| poison.into_inner()).checkpoint;
    let published = published.map_or(0, |(epoch, _)| epoch);
    while epochs.snapshot() == Epoch::NEVER || epochs.snapshot().0 <= published {
        if shared.config.epoch_interval_ms == 0 {
            epochs.advance();
        } else {
            std::thread::sleep(std::time::Duration::from_millis(shared.config.epoch_interval_ms));
        }
    }
    let log_position = log_position(shared, data);
    let at = epochs.hold_snapshot();
    assert!(at.0 > published, "the snapshot epoch went back below the published checkpoint's");
    let result = write_files(shared, data, at, threads, background, &mut splits);
    let unwritten = result.is_err();
    let result = result.and_then(|report| publish(shared, data, at, report));
    epochs.release_snapshot_hold();
    if unwritten {
        // No manifest names it: give its space back now (a full disk is the usual cause), not
        // at the next checkpoint, which would need that space to get so far. The spare log
        // files go too: they hold up to a checkpoint interval of log, which the next try may
        // need, and the log writes fresh files without them.
        remove_directory(data, &format!("checkpoint/{}", at.0), Duration::ZERO);
        if let Some(log) = &shared.log {
            let released = log.release_spares();
            if released > 0 {
                tracing::warn!(
                    "checkpoint not written: removed {released} spare log segment file(s) in {}",
                    data.storage.describe("wal")
                );
            }
        }
    }
    let (mut report, superseded) = result?;
    *data.last_checkpoint.lock().unwrap_or_else(|poison| poison.into_inner()) =
        LastCheckpoint { report: Some(report.clone()), log_position };
    report.segments_removed = remove_superseded(shared, data, superseded);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn write_files(
    shared: &Arc<Shared>,
    data: &DataDir,
    at: Epoch,
    threads: usize,
    background: bool,
    splits: &mut Splits,
) -> Result<CheckpointReport> {
    let storage = &*data.storage;
    // Listed after the epoch is chosen: a table created later has no rows at or below it.
    let mut tables: Vec<TableRef> = shared.tables();
    tables.sort_by_key(|table| std::cmp::Reverse(table.primary.leaves()));
    let leaves = tables.iter().map(|table| table.primary.leaves()).sum();
    let mut parts = Vec::new();
    for (index, table) in tables.iter().enumerate() {
        let keys = splits.get(&table.id().0).map_or(&[][..], Vec::as_slice);
        let lows = std::iter::once(None).chain(keys.iter().map(|key| Some(&key[..])));
        let highs = keys.iter().map(|key| Some(&key[..])).chain(std::iter::once(None));
        for (number, (low, high)) in lows.zip(highs).enumerate() {
            parts.push(Part { table: index, number, low, high });
        }
    }
    let part_rows = shared.config.checkpoint_part_rows;
    let dir = format!("checkpoint/{}", at.0);
    let next = AtomicUsize::new(0);
    let rows = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let failure = Mutex::new(None);
    let sampled: Mutex<Vec<PartSamples>> =
        Mutex::new(parts.iter().map(|_| PartSamples::default()).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, parts.len().max(1)) {
            scope.spawn(|| {
                let mut worker = match Worker::new(Arc::clone(shared)) {
                    Ok(worker) => worker,
                    Err(error) => {
                        failure.lock().unwrap().get_or_insert(error);
                        return;
                    }
                };
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= parts.len() || failure.lock().unwrap().is_some() {
                        break;
                    }
                    let part = &parts[index];
                    let table = &tables[part.table];
                    let path = format!("{dir}/t{:05}-{:05}.ckpt", table.id().0, part.number);
                    let file = FileHeader { a: table.id().0, b: at.0, c: part.number as u64 };
                    let copy =
                        PartCopy { table, part, file, path: &path, at, part_rows, background };
                    match write_part(&mut worker, data, copy) {
                        Ok((part_bytes, samples)) => {
                            rows.fetch_add(samples.rows, Ordering::Relaxed);
                            bytes.fetch_add(part_bytes, Ordering::Relaxed);
                            sampled.lock().unwrap()[index] = samples;
                        }
                        Err(error) => {
                            failure.lock().unwrap().get_or_insert(error);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(error) = failure.into_inner().unwrap() {
        return Err(error);
    }
    // The files' entries; the directory's own entry was synced when `create` made it.
    storage.sync_dir(&dir).map_err(|error| io_error(storage, &dir, "cannot sync", error))?;
    let next_splits = splits_from(sampled.into_inner().unwrap(), part_rows);
    let files = parts.len();
    drop(parts);
    *splits = next_splits;
    Ok(CheckpointReport {
        epoch: at.0,
        files,
        rows: rows.into_inner(),
        bytes: bytes.into_inner(),
        leaves,
        ..CheckpointReport::default()
    })
}

/// A checkpoint file's row count and sampled keys, as the checkpoint that wrote it or the
/// recovery that read it saw them.
#[derive(Debug, Default)]
pub(crate) struct PartSamples {
    pub table: u32,
    /// The part's place among its table's (the file header's third field).
    pub number: u64,
    pub rows: u64,
    /// The part's first key and every `sample_every`-th after it, with their places in the part.
    pub samples: Vec<(u64, Vec<u8>)>,
}

/// How often a part's keys are sampled: an eighth of `part_rows`, so that parts come out
/// within an eighth of it; 0 (never) when `part_rows` is 0, which keeps a file per table.
pub(crate) fn sample_every(part_rows: u64) -> u64 {
    if part_rows == 0 { 0 } else { (part_rows / 8).max(1) }
}

/// Picks the keys a part samples as its rows go by, in order: its first and every
/// `every`-th after it (`sample_every`; 0 picks none). The checkpoint that writes a part and
/// the recovery that reads one both use it.
pub(crate) struct Sampler {
    every: u64,
    next: u64,
}

impl Sampler {
    pub(crate) fn new(every: u64) -> Sampler {
        Sampler { every, next: if every == 0 { u64::MAX } else { 0 } }
    }

    /// Row `row` of the part (0 the first) has `key`: adds it to `samples` if it is due. A
    /// compare, not a modulo, per row (docs/performance.md, "Checkpoints in key ranges").
    #[inline]
    pub(crate) fn offer(&mut self, row: u64, key: &[u8], samples: &mut Vec<(u64, Vec<u8>)>) {
        if row == self.next {
            samples.push((row, key.to_vec()));
            self.next += self.every;
        }
    }
}

/// Where the next checkpoint splits each table: at the first sampled key at or past each
/// `part_rows`-th row, counting over the table's parts in their order.
pub(crate) fn splits_from(parts: impl IntoIterator<Item = PartSamples>, part_rows: u64) -> Splits {
    let mut splits = Splits::new();
    if part_rows == 0 {
        return splits;
    }
    let mut parts: Vec<PartSamples> = parts.into_iter().collect();
    parts.sort_by_key(|part| (part.table, part.number));
    let mut table = None;
    let (mut before, mut next_split) = (0, part_rows);
    for part in parts {
        if table != Some(part.table) {
            table = Some(part.table);
            (before, next_split) = (0, part_rows);
        }
        for (index, key) in part.samples {
            if before + index >= next_split {
                splits.entry(part.table).or_default().push(key);
                while next_split <= before + index {
                    next_split += part_rows;
                }
            }
        }
        before += part.rows;
    }
    splits
}

/// What `write_part` copies, and where.
struct PartCopy<'a> {
    table: &'a TableRef,
    part: &'a Part<'a>,
    file: FileHeader,
    path: &'a str,
    at: Epoch,
    /// Keys are sampled every `sample_every(part_rows)` rows.
    part_rows: u64,
    background: bool,
}

/// Copies one part of a table as of `at` into its file; returns its bytes, and its rows and
/// sampled keys.
fn write_part(
    worker: &mut Worker,
    data: &DataDir,
    copy: PartCopy<'_>,
) -> Result<(u64, PartSamples)> {
    let mut sampler = Sampler::new(sample_every(copy.part_rows));
    let storage = &*data.storage;
    let path = copy.path;
    let fail = |error| io_error(storage, path, "cannot write checkpoint", error);
    let mut file = storage.create(path).map_err(fail)?;
    let header = format::encode_file_header(FileKind::Checkpoint, copy.file);
    file.append(&header).map_err(fail)?;
    let mut written = header.len() as u64;
    let mut written_back = 0;
    let mut payload = Vec::with_capacity(BLOCK_BYTES + 4096);
    let mut frame = Vec::new();
    let mut rows = 0u64;
    let mut sampled = Vec::new();
    let high = copy.part.high.map_or(Bound::Unbounded, Bound::Excluded);
    let mut resume: Option<Vec<u8>> = None;
    loop {
        if copy.background {
            wait_while_paused(&worker.shared);
        }
        worker.begin_snapshot_at(copy.at)?;
        // Where the batch's last key lies in `payload` (after its 4-byte length): copied once
        // to resume from, instead of once a row.
        let mut last = 0..0;
        let mut seen = rows;
        let visited = {
            let mut txn = Txn::new(worker, false);
            let low = match (&resume, copy.part.low) {
                (Some(last), _) => Bound::Excluded(&last[..]),
                (None, Some(low)) => Bound::Included(low),
                (None, None) => Bound::Unbounded,
            };
            let visited = txn.scan(
                copy.table,
                low,
                high,
                Direction::Forward,
                ROWS_PER_TRANSACTION,
                |key, row| {
                    let at = payload.len() + 4;
                    last = at..at + key.len();
                    format::encode_row(&mut payload, key, row);
                    debug_assert_eq!(&payload[last.clone()], key, "encode_row's layout");
                    sampler.offer(seen, key, &mut sampled);
                    seen += 1;
                    true
                },
            );
            drop(txn);
            visited
        };
        cc::commit(worker)?;
        let visited = visited?;
        rows += visited as u64;
        if visited == ROWS_PER_TRANSACTION {
            let mut key = resume.take().unwrap_or_default();
            key.clear();
            key.extend_from_slice(&payload[last]);
            resume = Some(key);
        }
        if (payload.len() >= BLOCK_BYTES || visited < ROWS_PER_TRANSACTION) && !payload.is_empty() {
            frame.clear();
            format::encode_block(
                &mut frame,
                BlockKind::Rows,
                copy.at.0,
                &payload,
                data.compress_checkpoints,
            );
            file.append(&frame).map_err(fail)?;
            written += frame.len() as u64;
            payload.clear();
            if written - written_back >= WRITE_BACK_BYTES {
                file.write_back().map_err(fail)?;
                written_back = written;
            }
        }
        if visited < ROWS_PER_TRANSACTION {
            break;
        }
    }
    frame.clear();
    let mut end = rows.to_le_bytes().to_vec();
    end.extend_from_slice(&written.to_le_bytes());
    format::encode_block(&mut frame, BlockKind::End, copy.at.0, &end, false);
    file.append(&frame).map_err(fail)?;
    file.sync().map_err(fail)?;
    let samples = PartSamples { table: copy.file.a, number: copy.file.c, rows, samples: sampled };
    Ok((written + frame.len() as u64, samples))
}

/// Sleeps while background checkpoints are paused, between two of a checkpoint's snapshot
/// transactions (so pinned by none, though the checkpoint's snapshot hold stays).
fn wait_while_paused(shared: &Shared) {
    while shared.checkpoints_paused.load(Ordering::Acquire) && !shared.stopping() {
        std::thread::sleep(PAUSE_POLL);
    }
}

/// What a published checkpoint makes unnecessary: older checkpoints' directories and the log
/// segments whose records are all at or below its epoch.
#[derive(Default)]
struct Superseded {
    checkpoints: Vec<String>,
    segments: Vec<SegmentInfo>,
}

/// Waits for the log to cover `at`, names the checkpoint in the manifest, and returns what it
/// supersedes (taken off the log's list of closed segments).
fn publish(
    shared: &Arc<Shared>,
    data: &DataDir,
    at: Epoch,
    report: CheckpointReport,
) -> Result<(CheckpointReport, Superseded)> {
    let storage = &*data.storage;
    if let Some(log) = &shared.log {
        log.wait(at)?;
    }
    {
        let mut manifest = data.manifest.lock().unwrap_or_else(|poison| poison.into_inner());
        let mut updated = manifest.clone();
        updated.checkpoint = Some((at.0, report.files as u64));
        DataDir::write_manifest(storage, &updated).map_err(WriteFailure::error)?;
        *manifest = updated;
        // It names this run too, if the open could not write it (`DataDir::announce_run`).
        data.manifest_unwritten.store(false, std::sync::atomic::Ordering::Release);
    }
    let mut superseded = Superseded::default();
    if let Ok(names) = storage.list("checkpoint") {
        superseded.checkpoints = names
            .into_iter()
            .filter(|name| *name != at.0.to_string())
            .map(|name| format!("checkpoint/{name}"))
            .collect();
    }
    if let Some(log) = &shared.log {
        // Only the list is changed under the lock: the logger takes it to add a segment it
        // closes, and must not wait for file removals.
        let mut closed = log.closed.lock().unwrap_or_else(|poison| poison.into_inner());
        let (covered, kept) = closed.drain(..).partition(|segment| segment.max_epoch <= at.0);
        *closed = kept;
        superseded.segments = covered;
    }
    Ok((report, superseded))
}

/// Bytes of files `remove_superseded` removes per pause.
const REMOVED_BYTES_PER_PAUSE: u64 = 64 << 20;
/// The longest pause between removals (the epoch interval's when shorter).
const REMOVAL_PAUSE_MAX: Duration = Duration::from_millis(50);

/// Removes what a checkpoint superseded, a file at a time, pausing before each file after the
/// first: about an epoch interval per 64 MiB of segment (from `Config::segment_bytes`), and an
/// epoch interval before each file of an older checkpoint, whatever its size. A segment the
/// log keeps as a spare is renamed instead, with no pause. Returns how many segments it
/// removed or kept. On this machine's
/// ext4 (mounted with `discard`) removing a 64 MiB segment takes about 20 ms. The checkpoint
/// after 2 GiB of log removed 33 segments back to back while holding the list's lock, the
/// logger made no `fdatasync` for 228 ms, and durable commit latency's p99 reached 6.8 to 17.4
/// epochs in 9 of 16 TPC-C runs (docs/performance.md). Off the lock and paced, it stayed at
/// 2.25 to 2.35; how much of that the pauses did, as opposed to leaving the lock, was not
/// measured apart. Failing to remove a file wastes space but loses nothing; a segment that
/// could not be removed goes back on the log's list, for the next checkpoint to try again.
fn remove_superseded(shared: &Arc<Shared>, data: &DataDir, superseded: Superseded) -> usize {
    let storage = &*data.storage;
    let config = &shared.config;
    let pause = Duration::from_millis(config.epoch_interval_ms).min(REMOVAL_PAUSE_MAX);
    let segment_pause =
        pause.mul_f64((config.segment_bytes as f64 / REMOVED_BYTES_PER_PAUSE as f64).min(1.0));
    let mut removed_any = false;
    let mut remove = |path: &str, pause: Duration| {
        if removed_any {
            std::thread::sleep(pause);
        }
        removed_any = true;
        storage.remove(path).is_ok()
    };
    let mut segments_removed = 0;
    let spare_limit = shared.log.as_ref().map(|log| log.spare_limit(superseded.segments.len()));
    for segment in superseded.segments {
        // Kept as a spare for a new segment to take over (`wal::log`, SPARE SEGMENTS), if
        // the spares have room: a rename, which costs no pause.
        if let (Some(log), Some(limit)) = (&shared.log, spare_limit)
            && log.keep_as_spare(&segment.path, limit)
        {
            segments_removed += 1;
            continue;
        }
        if remove(&segment.path, segment_pause) {
            segments_removed += 1;
        } else if let Some(log) = &shared.log {
            log.closed.lock().unwrap_or_else(|poison| poison.into_inner()).push(segment);
        }
    }
    if segments_removed > 0 {
        let _ = storage.sync_dir("wal");
    }
    for dir in superseded.checkpoints {
        if removed_any {
            std::thread::sleep(pause);
        }
        removed_any |= remove_directory(data, &dir, pause);
    }
    segments_removed
}

/// Removes a checkpoint directory, a file at a time with `pause` between files; returns
/// whether it removed any file.
fn remove_directory(data: &DataDir, dir: &str, pause: Duration) -> bool {
    let storage = &*data.storage;
    let mut removed_any = false;
    for file in storage.list(dir).unwrap_or_default() {
        if removed_any {
            std::thread::sleep(pause);
        }
        removed_any |= storage.remove(&format!("{dir}/{file}")).is_ok();
    }
    let _ = storage.remove_dir(dir);
    removed_any
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of one table as a checkpoint or recovery would report them: the table's rows
    /// numbered 0.. in key order (the key is the row's number, big-endian), cut into parts of
    /// the given sizes, each sampled at its first row and every `every`-th after it.
    fn sampled_parts(sizes: &[u64], every: u64) -> Vec<PartSamples> {
        let mut start = 0;
        let mut parts = Vec::new();
        for (number, &rows) in sizes.iter().enumerate() {
            let samples = (0..rows)
                .step_by(every as usize)
                .map(|index| (index, (start + index).to_be_bytes().to_vec()))
                .collect();
            parts.push(PartSamples { table: 3, number: number as u64, rows, samples });
            start += rows;
        }
        // Threads finish in any order.
        parts.reverse();
        parts
    }

    proptest::proptest! {
        /// However the last checkpoint's parts fell, the next one's splits are increasing, one
        /// for each `part_rows`-th row of the table (none when it has fewer; the last such row
        /// may have none when no sample follows it), each at most an eighth of `part_rows` past
        /// it: every part but the last is within an eighth of `part_rows` rows, and the last
        /// is below `part_rows` and an eighth.
        #[test]
        fn splits_fall_within_an_eighth_of_every_part_rows_th_row(
            sizes in proptest::collection::vec(0u64..400, 1..12),
            part_rows in 8u64..200,
        ) {
            let every = sample_every(part_rows);
            let splits = splits_from(sampled_parts(&sizes, every), part_rows);
            let total: u64 = sizes.iter().sum();
            let rows_at: Vec<u64> = splits
                .get(&3)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|key| u64::from_be_bytes(key[..].try_into().unwrap()))
                .collect();
            let thresholds = (1..).map(|k| k * part_rows).take_while(|&row| row < total);
            let sure = thresholds.clone().filter(|&row| row + every <= total).count();
            proptest::prop_assert!(
                (sure..=thresholds.clone().count()).contains(&rows_at.len()),
                "{:?}",
                rows_at
            );
            let last = rows_at.last().copied().unwrap_or(0);
            proptest::prop_assert!(total - last < part_rows + every, "{:?}", rows_at);
            for (row, threshold) in rows_at.iter().zip(thresholds) {
                proptest::prop_assert!(
                    (threshold..threshold + every).contains(row),
                    "split at row {} for row {}: {:?}",
                    row,
                    threshold,
                    rows_at
                );
            }
        }
    }

    #[test]
    fn part_rows_zero_splits_nothing() {
        assert_eq!(sample_every(0), 0);
        assert!(splits_from(sampled_parts(&[500, 500], 10), 0).is_empty());
    }
}
