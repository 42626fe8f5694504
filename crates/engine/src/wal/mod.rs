//! Durability: the data directory, epoch group-commit logging, checkpoints and recovery
//! (Silo §4.10 and §5; MOT's parallel recovery). Formats are in `docs/format.md`.
//!
//! | file                          | what it holds                                              |
//! |-------------------------------|------------------------------------------------------------|
//! | `LOCK`                        | `flock`ed while a process has the directory open           |
//! | `MANIFEST`                    | run number, newest complete checkpoint, void epoch ranges  |
//! | `catalog.log`                 | table creations and drops, fsynced per DDL call            |
//! | `wal/rRUN-lLOGGER-SEQ.log`    | log segments: CRC32C-framed blocks of transaction records  |
//! | `checkpoint/EPOCH/tID.ckpt`   | one file per table: its rows as of the checkpoint epoch    |
//!
//! - [`log`]: per-worker buffers, logger threads, the durable epoch, waiting for it.
//! - [`checkpoint`]: epoch-consistent snapshots written in the background.
//! - [`recovery`]: catalog, checkpoint and parallel log replay; `check`.
//! - [`format`]: every byte format; [`storage`]: files, or memory with injected faults.

pub mod checkpoint;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod log;
pub mod recovery;
pub mod storage;

pub use checkpoint::CheckpointReport;
pub use log::{Durability, DurabilityWatcher, DurableFuture};
pub use recovery::{RecoveryReport, check};
pub use storage::{DirStorage, FaultyStorage, Storage, StorageFile};

use crate::error::{Error, Result};
use crate::storage::table::KeyExtractor;
use format::{BlockKind, CatalogRecord, FileHeader, FileKind, Manifest};
use std::fmt;
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
    /// The catalog log, or the error its last append failed with: a later append after a torn
    /// block would read as corruption, so every later change fails with the same error (a
    /// full disk stays `DiskFull`).
    pub catalog: Mutex<std::result::Result<CatalogFile, Error>>,
    /// Held by the checkpoint under way (one at a time); the key ranges it splits tables into.
    pub checkpointing: Mutex<checkpoint::Splits>,
    pub compress_checkpoints: bool,
    pub report: RecoveryReport,
    /// The last checkpoint, asked for or taken in the background, and where the log stood
    /// when it began: what the background checkpointer waits from (`checkpoint::LastCheckpoint`).
    pub last_checkpoint: Mutex<checkpoint::LastCheckpoint>,
}

/// The catalog log open for appending, and the salt of its blocks (format 7,
/// `format::SALTED_CATALOGS`: a new one at every rewrite).
pub(crate) struct CatalogFile {
    file: Box<dyn StorageFile>,
    salt: u32,
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

impl DataDir {
    /// Writes the manifest atomically (a new file, synced, renamed over the old one).
    pub fn write_manifest(storage: &dyn Storage, manifest: &Manifest) -> Result<()> {
        let temporary = "MANIFEST.tmp";
        let fail = |error| io_error(storage, recovery::MANIFEST, "cannot write", error);
        let mut file = storage.create(temporary).map_err(fail)?;
        file.append(manifest.encode().as_bytes()).map_err(fail)?;
        file.sync().map_err(fail)?;
        storage.rename(temporary, recovery::MANIFEST).map_err(fail)
    }

    /// Rewrites the catalog log with the live tables (and a drop record holding each dropped
    /// table's id, so ids are never reused) and returns it open for appending.
    pub fn rewrite_catalog(
        storage: &dyn Storage,
        catalog: &[Option<(String, Vec<format::IndexRecord>)>],
        epoch: u64,
    ) -> Result<CatalogFile> {
        let temporary = "catalog.tmp";
        let fail = |error| io_error(storage, recovery::CATALOG, "cannot write", error);
        let salt = format::fresh_salt(epoch);
        let header = FileHeader { a: 0, b: 0, c: 0 };
        let mut bytes = format::encode_salted_file_header(FileKind::Catalog, header, salt).to_vec();
        for (id, entry) in catalog.iter().enumerate() {
            let record = match entry {
                Some((name, indexes)) => CatalogRecord::Create {
                    table: id as u32,
                    name: name.clone(),
                    indexes: indexes.clone(),
                },
                None => CatalogRecord::Drop { table: id as u32 },
            };
            let payload = format::encode_catalog(&record);
            format::encode_salted_block(&mut bytes, BlockKind::Catalog, epoch, &payload, salt);
        }
        let mut file = storage.create(temporary).map_err(fail)?;
        file.append(&bytes).map_err(fail)?;
        file.sync().map_err(fail)?;
        storage.rename(temporary, recovery::CATALOG).map_err(fail)?;
        Ok(CatalogFile { file, salt })
    }

    /// Appends one catalog change and syncs it.
    pub fn log_catalog(&self, record: &CatalogRecord, epoch: u64) -> Result<()> {
        let mut guard = self.catalog.lock().unwrap_or_else(|poison| poison.into_inner());
        let CatalogFile { file, salt } = match guard.as_mut() {
            Ok(catalog) => catalog,
            Err(failed) => return Err(failed.clone()),
        };
        let mut bytes = Vec::new();
        let payload = format::encode_catalog(record);
        format::encode_salted_block(&mut bytes, BlockKind::Catalog, epoch, &payload, *salt);
        let written = file.append(&bytes).and_then(|()| file.sync());
        if let Err(error) = written {
            let error = io_error(&*self.storage, recovery::CATALOG, "cannot write", error);
            *guard = Err(match &error {
                Error::DiskFull(message) => Error::DiskFull(format!(
                    "an earlier catalog change could not be written (free space and \
                     restart): {message}"
                )),
                other => Error::LogFailed(format!(
                    "an earlier catalog change could not be written; restart: {other}"
                )),
            });
            return Err(error);
        }
        Ok(())
    }
}
