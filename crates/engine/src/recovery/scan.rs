//! Finding what to recover: the checkpoint's files, the log's segments and torn tails, the
//! durable epoch of the newest run, and each segment's transactions.

use super::*;
use crate::wal::format;

pub(super) struct CheckpointFile {
    pub(super) path: String,
}

pub(super) fn checkpoint_files(
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
pub(super) fn read_checkpoint_file(
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

pub(super) struct SegmentFile {
    pub(super) path: String,
    pub(super) run: u64,
    pub(super) logger: usize,
    pub(super) sequence: u64,
    /// The newest segment of its logger in the newest run: may end in a torn write.
    pub(super) tail: bool,
}

/// The log's segments, oldest first, and the names of its spare segment files: one listing.
pub(super) fn wal_files(storage: &dyn Storage) -> Result<(Vec<SegmentFile>, Vec<String>)> {
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
pub(super) fn mark_tails(files: &mut [SegmentFile]) {
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
pub(super) type Preloaded = HashMap<usize, (Vec<u8>, std::ops::Range<usize>)>;

/// The durable epoch of the newest run in `files`: the minimum over its loggers of the last
/// mark in the logger's newest segment that has one. `None` if no segment of the run holds a
/// mark: the run crashed while opening, before its loggers' first pages were durable.
pub(super) fn durable_epoch(
    storage: &dyn Storage,
    files: &[SegmentFile],
) -> Result<(Option<u64>, Preloaded)> {
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
pub(super) struct SegmentScan {
    /// The last valid mark and the first one.
    pub(super) first_mark: Option<u64>,
    pub(super) last_mark: Option<u64>,
    pub(super) max_epoch: u64,
    pub(super) transactions: u64,
    pub(super) bytes: u64,
    pub(super) torn: Option<Damage>,
    pub(super) loggers: usize,
}

/// Reads a segment's blocks; `record(tid, writes)` sees every transaction.
pub(super) fn scan_segment(
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
