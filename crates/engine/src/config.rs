//! [`Config`]: how a database behaves, chosen when it opens.

use crate::error::{Error, Result};
use crate::gc::Gc;
use crate::limits::WORKERS_MAX;
use crate::protocol::Protocol;
use crate::storage::record::HeadShape;
use crate::storage::{IndexPointers, VersionStorage};
use crate::wal::{DirStorage, Durability, IndexKeys, Storage};
use std::path::PathBuf;
use std::sync::Arc;

/// How a database behaves. `Config::default()` is what a server would run with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Interval of the global epoch ticker (Silo: 40 ms). 0 disables the ticker; epochs then
    /// advance only through [`Database::advance_epoch`](crate::Database::advance_epoch) (deterministic tests).
    pub epoch_interval_ms: u64,
    /// Epochs on demand (`wal::log`): while a commit waits for durability, the ticker ends
    /// the epoch once it is this many microseconds old rather than at the interval. 0: epochs
    /// end only at the interval (Silo's behaviour, the default). Settings counted in epochs
    /// (`snapshot_interval_epochs`, `idle_transaction_epochs_max`) then pass sooner under load.
    pub epoch_min_us: u64,
    /// Snapshot transactions read at multiples of this many epochs (Silo: 25, one second).
    /// Smaller gives fresher snapshots and keeps more old versions.
    pub snapshot_interval_epochs: u64,
    /// Epochs an interactive transaction may sit idle between calls before it is aborted so
    /// that it stops holding garbage collection back (250 x 40 ms = 10 s).
    pub idle_transaction_epochs_max: u64,
    /// Worker slots (concurrently open transactions).
    pub workers_max: usize,
    /// Attempts [`Worker::transaction`](crate::Worker::transaction) makes before it returns an abort.
    pub transaction_retries_max: u32,
    /// Memory mapped and faulted in at open for records and index nodes to grow into, so that
    /// a run takes no page faults (`mem::chunks`). The reserve is
    /// shared by every database of the process. 0 reserves nothing.
    pub reserved_memory_bytes: usize,
    /// The data directory (log, checkpoints, catalog). `None`: a purely in-memory database.
    pub data_dir: Option<PathBuf>,
    /// Files for the data directory other than the file system (tests inject faults with
    /// [`crate::wal::FaultyStorage`]). Takes precedence over `data_dir`.
    pub storage: Option<Arc<dyn Storage>>,
    /// When commits are acknowledged (with a data directory).
    pub durability: Durability,
    /// Logger threads; worker slot `i` is logged by logger `i % loggers`.
    pub loggers: usize,
    /// LZ4-compress log blocks.
    pub log_compression: bool,
    /// Log an update that keeps its row's length as the bytes it changed (a patch, format 4)
    /// where that takes at most half the row, instead of the whole new row. Recovery then
    /// applies each row's patches in TID order on top of its newest whole image
    /// (`recovery`). Off by default (Silo's value logging of whole rows): on the
    /// two-core machine TPC-C wrote 2.36 times fewer log bytes with it but ran no faster, the
    /// comparison costing more CPU than the bytes it saves (docs/performance.md, "Patches");
    /// it is for machines whose log device, not their cores, limits commits.
    pub log_patches: bool,
    /// LZ4-compress checkpoint blocks.
    pub checkpoint_compression: bool,
    /// A logger starts a new segment file after this many bytes.
    pub segment_bytes: u64,
    /// Segments that a checkpoint supersedes are kept as spare files, for new segments to take
    /// over, while the spares hold no more than that checkpoint superseded (the log written
    /// since the one before, which the log should write again before the next) and no more
    /// than this many bytes (whole segments); the rest are removed. Writing over a file costs
    /// less than filling fresh space, and renaming one less than removing it (`wal::log`,
    /// SPARE SEGMENTS). Default 8 GiB; 0 removes them all (but the reserve,
    /// `log_reserve_bytes`, is always kept).
    pub log_spare_bytes: u64,
    /// At open, spare segments of zeros are written until the spares hold this many bytes, so
    /// that a new database's log writes over written blocks from the start, as a long-running
    /// one's does. Default 0: a server that expects to log gigabytes soon after start (a
    /// benchmark) sets it, as it reserves memory (`reserved_memory_bytes`).
    pub log_reserve_bytes: u64,
    /// A background checkpoint starts after this many log bytes since the last one began (or
    /// more, see `checkpoint_log_ratio`); 0 takes checkpoints only when
    /// [`Database::checkpoint`](crate::Database::checkpoint) is called.
    pub checkpoint_log_bytes: u64,
    /// ...and only once the log since the last checkpoint began is at least this many times
    /// the size a checkpoint would have now (default 8), estimated from the last one's bytes
    /// per primary-index leaf: a checkpoint costs in proportion to the database and saves
    /// replaying the log since the one before, so checkpoints then write at most 1/ratio of
    /// what the log writes, whatever the database's size, and recovery replays at most about
    /// `ratio` databases' worth of log (plus what was logged while the last checkpoint ran).
    /// A database growing by more than 1/ratio of its log's bytes is therefore not
    /// checkpointed until its growth slows; all the while, the log to replay stays below
    /// `ratio` times its size. 0 leaves `checkpoint_log_bytes` alone to decide.
    pub checkpoint_log_ratio: u64,
    /// Threads a checkpoint copies tables with (its impact on foreground work is bounded by
    /// this).
    pub checkpoint_threads: usize,
    /// Rows per checkpoint file: a checkpoint splits a table that the one before found larger
    /// into key ranges of about this many rows, each its own file, which the checkpoint's
    /// threads write and recovery's threads load in parallel. 0 keeps a file per table.
    pub checkpoint_part_rows: u64,
    /// Threads recovery replays with; 0 uses every core.
    pub recovery_threads: usize,
    /// Rebuilds secondary-index key extractors at recovery.
    pub index_keys: Option<IndexKeys>,
    /// The concurrency-control protocol (`cc::mv`): Silo by default.
    pub protocol: Protocol,
    /// Memory spaces the workers allocate records and versions from. 0 (the default): each
    /// worker has its own and allocates without a lock. `n` > 0: worker slot `i` allocates
    /// from space `i % n` under that space's lock (Wu et al.'s Fig. 16 experiment).
    pub memory_spaces: usize,
    /// How superseded versions are removed (`gc::Gc`): by the writing transactions (the
    /// default), by a background vacuum thread, or not at all. The vacuum takes one of the
    /// `workers_max` slots for itself.
    pub gc: Gc,
    /// Where record versions are kept (`storage::record::VersionStorage`): time-travel (the
    /// default: the newest version in place), append-only chains newest or oldest first, or
    /// delta records behind the newest version in place.
    pub version_storage: VersionStorage,
    /// What secondary index entries name (`storage::table::IndexPointers`): records (the
    /// default) or versions, every new version then added to every secondary index. Physical
    /// pointers need an append-only `version_storage`.
    pub index_pointers: IndexPointers,
    /// Under `Gc::TupleVacuum`, the pause between two passes of the vacuum.
    pub vacuum_interval_ms: u64,
    /// Under `Gc::TupleCooperative`, the pause between two sweeps of the vacuum over the
    /// records readers do not clean (Hekaton's "dusty corners"); 0: no sweep, no thread.
    pub cooperative_sweep_interval_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            epoch_interval_ms: 40,
            epoch_min_us: 0,
            snapshot_interval_epochs: 25,
            idle_transaction_epochs_max: 250,
            workers_max: WORKERS_MAX,
            transaction_retries_max: 100,
            reserved_memory_bytes: 0,
            data_dir: None,
            storage: None,
            durability: Durability::Epoch,
            loggers: 1,
            log_compression: false,
            log_patches: false,
            checkpoint_compression: false,
            segment_bytes: 64 << 20,
            log_spare_bytes: 8 << 30,
            log_reserve_bytes: 0,
            checkpoint_log_bytes: 1 << 30,
            checkpoint_log_ratio: 8,
            checkpoint_threads: 1,
            checkpoint_part_rows: 1 << 20,
            recovery_threads: 0,
            index_keys: None,
            protocol: Protocol::Silo,
            memory_spaces: 0,
            gc: Gc::Transaction,
            version_storage: VersionStorage::TimeTravel,
            index_pointers: IndexPointers::Logical,
            vacuum_interval_ms: 50,
            cooperative_sweep_interval_ms: 1_000,
        }
    }
}

impl Config {
    /// What new record heads are made of: the protocol's words and the storage's layout.
    pub(crate) fn head_shape(&self) -> HeadShape {
        HeadShape {
            words: self.protocol.head_words(),
            storage: self.version_storage,
            shared_values: false,
        }
    }

    /// The pause between the vacuum's passes, if the GC mode runs a vacuum thread.
    pub(crate) fn vacuum_interval(&self) -> Option<std::time::Duration> {
        let ms = match self.gc {
            Gc::TupleVacuum => self.vacuum_interval_ms,
            Gc::TupleCooperative if self.cooperative_sweep_interval_ms > 0 => {
                self.cooperative_sweep_interval_ms
            }
            _ => return None,
        };
        Some(std::time::Duration::from_millis(ms.max(1)))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.snapshot_interval_epochs == 0 {
            return Err(Error::InvalidConfig("snapshot_interval_epochs must be at least 1".into()));
        }
        if self.idle_transaction_epochs_max < 2 {
            return Err(Error::InvalidConfig(
                "idle_transaction_epochs_max must be at least 2".into(),
            ));
        }
        if self.workers_max == 0 || self.workers_max > WORKERS_MAX {
            return Err(Error::InvalidConfig(format!("workers_max must be in 1..={WORKERS_MAX}")));
        }
        if self.vacuum_interval().is_some() && self.workers_max < 2 {
            return Err(Error::InvalidConfig(format!(
                "gc {} needs workers_max of at least 2: the vacuum takes a worker slot",
                self.gc
            )));
        }
        if self.gc == Gc::TupleCooperative && !self.version_storage.oldest_first() {
            return Err(Error::InvalidConfig(format!(
                "gc tuple-cooperative needs version_storage append-o2n, not {}: cooperative \
                 cleaning removes the expired versions a reader passes on its way along a \
                 chain, and only an oldest-to-newest chain puts them in its way (readers of a \
                 newest-to-oldest chain stop before its expired tail); use tuple-vacuum or \
                 transaction with {}",
                self.version_storage, self.version_storage
            )));
        }
        if self.index_pointers == IndexPointers::Physical && !self.version_storage.append_only() {
            return Err(Error::InvalidConfig(format!(
                "index_pointers physical needs version_storage append-n2o or append-o2n, not {}: \
                 a physical pointer names one version, and only append-only storage keeps every \
                 version as its own block; {} overwrites the newest version in place",
                self.version_storage, self.version_storage
            )));
        }
        if self.memory_spaces > WORKERS_MAX {
            return Err(Error::InvalidConfig(format!(
                "memory_spaces must be in 0..={WORKERS_MAX} (0: one per worker)"
            )));
        }
        if self.loggers == 0 || self.loggers > 64 {
            return Err(Error::InvalidConfig("loggers must be in 1..=64".into()));
        }
        if self.segment_bytes < 4096 {
            return Err(Error::InvalidConfig("segment_bytes must be at least 4096".into()));
        }
        Ok(())
    }

    /// The data directory's files, if the configuration has any.
    pub(crate) fn open_storage(&self) -> Result<Option<Arc<dyn Storage>>> {
        if let Some(storage) = &self.storage {
            return Ok(Some(Arc::clone(storage)));
        }
        let Some(dir) = &self.data_dir else { return Ok(None) };
        match DirStorage::open(dir) {
            Ok(storage) => Ok(Some(Arc::new(storage))),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                Err(Error::DataDirInUse(error.to_string()))
            }
            Err(error) => {
                Err(Error::Io(format!("cannot open data directory {}: {error}", dir.display())))
            }
        }
    }

    pub(crate) fn recovery_threads(&self) -> usize {
        if self.recovery_threads > 0 {
            return self.recovery_threads;
        }
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}
