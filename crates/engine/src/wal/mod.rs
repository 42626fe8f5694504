//! Durability's files: the data directory, epoch group-commit logging, and the formats of
//! everything written (Silo §4.10 and §5). Formats are in `docs/format.md`. Checkpoints
//! (`crate::checkpoint`) and recovery (`crate::recovery`), which run workers of their own,
//! sit above the transaction layer and use these.
//!
//! | file                          | what it holds                                              |
//! |-------------------------------|------------------------------------------------------------|
//! | `LOCK`                        | `flock`ed while a process has the directory open           |
//! | `MANIFEST`                    | run number, newest complete checkpoint, void epoch ranges  |
//! | `catalog.log`                 | table creations and drops, fsynced per DDL call; rows that |
//! |                               | must survive with durability off (`log_catalog_rows`)      |
//! | `wal/rRUN-lLOGGER-SEQ.log`    | log segments: CRC32C-framed blocks of transaction records  |
//! | `checkpoint/EPOCH/tID.ckpt`   | one file per table: its rows as of the checkpoint epoch    |
//!
//! - [`log`]: per-worker buffers, logger threads, the durable epoch, waiting for it.
//! - [`report`]: what checkpoints and recoveries report, and the files they share.
//! - [`format`]: every byte format; [`storage`]: files, or memory with injected faults.

pub mod format;
pub mod log;
pub(crate) mod report;
pub mod storage;

pub use log::{Durability, DurabilityWatcher, DurableFuture};
pub use report::{CheckpointReport, RecoveryReport};
pub use storage::{DirStorage, FaultyStorage, Storage, StorageFile};

use crate::error::{Error, Result};
use crate::storage::table::KeyExtractor;
use format::{BlockKind, CatalogRecord, FileHeader, FileKind, Manifest};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A secondary index as recorded in the catalog, handed to [`IndexKeys`] at recovery.
#[derive(Debug, Clone, Copy)]
pub struct IndexDefinition<'a> {
    pub table: &'a str,
    pub name: &'a str,
    pub unique: bool,
    /// The bytes given with [`crate::IndexSpec::definition`] (a column list, for SQL).
    pub definition: &'a [u8],
}

/// Rebuilds the key extractor of a recovered secondary index from its definition. Key
/// extractors are code, which a log cannot hold; the application that created the index
/// supplies them again at open.
#[derive(Clone)]
pub struct IndexKeys(pub Arc<ResolveKeys>);

/// The function inside [`IndexKeys`].
pub type ResolveKeys = dyn Fn(&IndexDefinition<'_>) -> Option<KeyExtractor> + Send + Sync;

impl IndexKeys {
    pub fn new(
        resolve: impl Fn(&IndexDefinition<'_>) -> Option<KeyExtractor> + Send + Sync + 'static,
    ) -> Self {
        IndexKeys(Arc::new(resolve))
    }
}

impl fmt::Debug for IndexKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IndexKeys(..)")
    }
}

/// An open data directory.
pub(crate) struct DataDir {
    pub storage: Arc<dyn Storage>,
    pub manifest: Mutex<Manifest>,
    /// Whether `manifest` is on disk: the open could not write it (the disk was full), and no
    /// segment of this run may be made before it is (`DataDir::announce_run`).
    pub manifest_unwritten: AtomicBool,
    /// The catalog log and the rows it holds.
    pub catalog: Mutex<CatalogLog>,
    /// Held by the checkpoint under way (one at a time); the key ranges it splits tables into.
    pub checkpointing: Mutex<report::Splits>,
    pub compress_checkpoints: bool,
    pub report: RecoveryReport,
    /// The last checkpoint, asked for or taken in the background, and where the log stood
    /// when it began: what the background checkpointer waits from (`report::LastCheckpoint`).
    pub last_checkpoint: Mutex<report::LastCheckpoint>,
}

/// The catalog log open for appending, and the salt of its blocks (format 7,
/// `format::SALTED_CATALOGS`: a new one at every rewrite).
pub(crate) struct CatalogFile {
    file: Box<dyn StorageFile>,
    salt: u32,
}

/// Per table and key, the newest row the catalog log holds (`CatalogRecord::Rows`): its TID
/// and its value, or `None` for a deletion.
pub(crate) type CatalogRows = BTreeMap<(u32, Vec<u8>), (u64, Option<Vec<u8>>)>;

/// The catalog log: open for appending, or not, and why.
pub(crate) struct CatalogLog {
    pub file: CatalogFileState,
    /// The rows the file holds (`Database::log_catalog_rows`), which a rewrite writes again.
    pub rows: CatalogRows,
}

pub(crate) enum CatalogFileState {
    Open(CatalogFile),
    /// To be rewritten whole (a new file, renamed over it) before the next change: the open
    /// could not rewrite it, or an append found the disk full and may have left part of a
    /// block at its end. The file on disk is whole up to its last synced change.
    Unwritten,
    /// An append's sync failed: what reached the disk is unknown, so every later change fails
    /// with this error until a restart (a full disk stays `DiskFull`).
    Failed(Error),
}

impl fmt::Debug for DataDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataDir").field("storage", &self.storage).finish()
    }
}

pub(crate) fn io_error(
    storage: &dyn Storage,
    path: &str,
    what: &str,
    error: std::io::Error,
) -> Error {
    if error.kind() == std::io::ErrorKind::WouldBlock {
        return Error::DataDirInUse(error.to_string());
    }
    if error.raw_os_error() == Some(libc::ENOSPC) {
        return Error::DiskFull(format!("{what} {}: {error}", storage.describe(path)));
    }
    Error::Io(format!("{what} {}: {error}", storage.describe(path)))
}

/// A write to the data directory that failed, and whether it may be tried again
/// (docs/durability.md, "A full disk"). The line between the two is the fsync: a write that
/// the file system refused for want of room wrote nothing the caller relies on, while after a
/// failed fsync what reached the disk is unknown (the kernel may have marked the pages clean
/// and dropped them), so trying again could report as durable what is not.
#[derive(Debug)]
pub(crate) enum WriteFailure {
    /// Creating, growing or writing a file found the disk full (ENOSPC before any sync of
    /// what it wrote). The caller cuts off or abandons what it wrote, and tries again once
    /// there is room.
    Full(Error),
    /// Anything else, a failed fsync above all, even one that failed for want of room.
    Failed(Error),
}

impl WriteFailure {
    /// A failed create, allocation or write: `Full` for ENOSPC, otherwise `Failed`.
    pub fn written(storage: &dyn Storage, path: &str, what: &str, error: std::io::Error) -> Self {
        let full = error.raw_os_error() == Some(libc::ENOSPC);
        let error = io_error(storage, path, what, error);
        if full { WriteFailure::Full(error) } else { WriteFailure::Failed(error) }
    }

    /// A failed fsync (of a file or a directory, or of a rename): always `Failed`.
    pub fn synced(storage: &dyn Storage, path: &str, what: &str, error: std::io::Error) -> Self {
        WriteFailure::Failed(io_error(storage, path, what, error))
    }

    pub fn error(self) -> Error {
        match self {
            WriteFailure::Full(error) | WriteFailure::Failed(error) => error,
        }
    }
}

impl DataDir {
    /// Writes the manifest atomically (a new file, synced, renamed over the old one). A
    /// failure before the rename leaves the old manifest whole.
    pub fn write_manifest(
        storage: &dyn Storage,
        manifest: &Manifest,
    ) -> std::result::Result<(), WriteFailure> {
        let temporary = "MANIFEST.tmp";
        let what = "cannot write";
        let written = |error| WriteFailure::written(storage, report::MANIFEST, what, error);
        let synced = |error| WriteFailure::synced(storage, report::MANIFEST, what, error);
        let mut file = storage.create(temporary).map_err(written)?;
        if let Err(error) = file.append(manifest.encode().as_bytes()) {
            let _ = storage.remove(temporary);
            return Err(written(error));
        }
        file.sync().map_err(synced)?;
        storage.rename(temporary, report::MANIFEST).map_err(synced)
    }

    /// Writes the manifest now if the open could not (`manifest_unwritten`): before a run's
    /// first segment is made, the manifest must name the run and void the epochs the last
    /// crash left undecided, or a later recovery would replay them (`recovery`).
    pub fn announce_run(&self) -> std::result::Result<(), WriteFailure> {
        if !self.manifest_unwritten.load(Ordering::Acquire) {
            return Ok(());
        }
        let manifest = self.manifest.lock().unwrap_or_else(|poison| poison.into_inner());
        if self.manifest_unwritten.load(Ordering::Acquire) {
            DataDir::write_manifest(&*self.storage, &manifest)?;
            self.manifest_unwritten.store(false, Ordering::Release);
        }
        Ok(())
    }

    /// Rewrites the catalog log with the live tables (and a drop record holding each dropped
    /// table's id, so ids are never reused) and the rows it holds, and returns it open for
    /// appending. A failure before the rename leaves the old catalog whole.
    pub fn rewrite_catalog(
        storage: &dyn Storage,
        catalog: &report::CatalogState,
        rows: &CatalogRows,
        epoch: u64,
    ) -> std::result::Result<CatalogFile, WriteFailure> {
        let temporary = "catalog.tmp";
        let what = "cannot write";
        let written = |error| WriteFailure::written(storage, report::CATALOG, what, error);
        let synced = |error| WriteFailure::synced(storage, report::CATALOG, what, error);
        let salt = format::fresh_salt(epoch);
        let header = FileHeader { a: 0, b: 0, c: 0 };
        let mut bytes = format::encode_salted_file_header(FileKind::Catalog, header, salt).to_vec();
        let mut append = |record: &CatalogRecord| {
            let payload = format::encode_catalog(record);
            format::encode_salted_block(&mut bytes, BlockKind::Catalog, epoch, &payload, salt);
        };
        for (id, entry) in catalog.iter().enumerate() {
            append(&match entry {
                Some((name, indexes)) => CatalogRecord::Create {
                    table: id as u32,
                    name: name.clone(),
                    indexes: indexes.clone(),
                },
                None => CatalogRecord::Drop { table: id as u32 },
            });
        }
        for ((table, key), (tid, value)) in rows {
            let live = catalog.get(*table as usize).is_some_and(Option::is_some);
            if live {
                let rows = vec![(key.clone(), value.clone())];
                append(&CatalogRecord::Rows { table: *table, tid: *tid, rows });
            }
        }
        let mut file = storage.create(temporary).map_err(written)?;
        if let Err(error) = file.append(&bytes) {
            let _ = storage.remove(temporary);
            return Err(written(error));
        }
        file.sync().map_err(synced)?;
        storage.rename(temporary, report::CATALOG).map_err(synced)?;
        Ok(CatalogFile { file, salt })
    }

    /// Appends one catalog change and syncs it. A catalog that must be rewritten first is
    /// rewritten from `live` (the tables as they are, before this change). An append that
    /// finds the disk full leaves the catalog to be rewritten at the next change (the
    /// change fails with `DiskFull`, and the next one succeeds once there is room); a failed
    /// sync fails this change and every later one until a restart.
    pub fn log_catalog(
        &self,
        record: &CatalogRecord,
        epoch: u64,
        live: &dyn Fn() -> report::CatalogState,
    ) -> Result<()> {
        let mut guard = self.catalog.lock().unwrap_or_else(|poison| poison.into_inner());
        let CatalogLog { file: state, rows } = &mut *guard;
        if let CatalogFileState::Failed(failed) = state {
            return Err(failed.clone());
        }
        if let CatalogFileState::Unwritten = state {
            match DataDir::rewrite_catalog(&*self.storage, &live(), rows, epoch) {
                Ok(file) => *state = CatalogFileState::Open(file),
                Err(WriteFailure::Full(error)) => return Err(error),
                Err(WriteFailure::Failed(error)) => {
                    *state = CatalogFileState::Failed(catalog_failed(&error));
                    return Err(error);
                }
            }
        }
        let CatalogFileState::Open(CatalogFile { file, salt }) = state else {
            unreachable!("the catalog is open here");
        };
        let mut bytes = Vec::new();
        let payload = format::encode_catalog(record);
        format::encode_salted_block(&mut bytes, BlockKind::Catalog, epoch, &payload, *salt);
        let what = "cannot write";
        if let Err(error) = file.append(&bytes) {
            let failure = WriteFailure::written(&*self.storage, report::CATALOG, what, error);
            *state = match &failure {
                // Part of the block may be in the file: the next change rewrites it whole.
                WriteFailure::Full(_) => CatalogFileState::Unwritten,
                WriteFailure::Failed(error) => CatalogFileState::Failed(catalog_failed(error)),
            };
            return Err(failure.error());
        }
        if let Err(error) = file.sync() {
            let error = WriteFailure::synced(&*self.storage, report::CATALOG, what, error).error();
            *state = CatalogFileState::Failed(catalog_failed(&error));
            return Err(error);
        }
        if let CatalogRecord::Rows { table, tid, rows: written } = record {
            for (key, value) in written {
                let newest = rows.entry((*table, key.clone())).or_insert((0, None));
                if *tid >= newest.0 {
                    *newest = (*tid, value.clone());
                }
            }
        }
        if let CatalogRecord::Drop { table } = record {
            rows.retain(|(row_table, _), _| row_table != table);
        }
        Ok(())
    }
}

/// The error every catalog change after a failed sync gets: a restart is the way out.
fn catalog_failed(error: &Error) -> Error {
    match error {
        Error::DiskFull(message) => Error::DiskFull(format!(
            "an earlier catalog change could not be synced (free space and restart): {message}"
        )),
        other => Error::LogFailed(format!(
            "an earlier catalog change could not be synced; restart: {other}"
        )),
    }
}
