//! The database: configuration, the catalog of tables, the epoch ticker, per-worker counters,
//! and what departing workers leave behind.

use crate::cc::conflict::{ConflictStats, RowKeys, RowKeysSlot};
use crate::cc::{Isolation, Protocol};
use crate::config::Config;
use crate::error::{AbortReason, Error, Result};
use crate::gc::tasks::Tasks;
use crate::gc::{VacuumCounters, VacuumStats};
use crate::limits::{SECONDARY_INDEXES_MAX, TABLES_MAX};
use crate::mem::arena::new_space;
use crate::state::{Catalog, Orphans, Shared};
use crate::stats::Counters;
use crate::storage::TableRef;
use crate::storage::shared::{ATTRIBUTES_MAX, NonInline};
use crate::storage::{Table, TableId, TableSpec};
use crate::sync::Epoch;
use crate::sync::EpochManager;
use crate::vacuum;
use crate::wal::format::{CatalogRecord, IndexRecord};
use crate::wal::log::{self, Log, Segment};
use crate::wal::{
    CatalogFileState, CatalogLog, CheckpointReport, DataDir, Durability, DurabilityWatcher,
    RecoveryReport, Storage, WriteFailure, report,
};
use crate::worker::{CommitInfo, Worker};
use crate::{checkpoint, recovery};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// Totals over all workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub commits: u64,
    /// Aborts per reason, in [`AbortReason::ALL`] order.
    pub aborts: Vec<(AbortReason, u64)>,
}

impl Stats {
    pub fn aborts_total(&self) -> u64 {
        self.aborts.iter().map(|(_, count)| count).sum()
    }

    pub fn aborts_for(&self, reason: AbortReason) -> u64 {
        self.aborts.iter().find(|(r, _)| *r == reason).map_or(0, |(_, count)| *count)
    }
}

/// An in-memory database. Cheap to share: clone the `Database` (or keep it in an `Arc`) and
/// take one [`Worker`] per thread.
#[derive(Debug)]
pub struct Database {
    shared: Arc<Shared>,
    ticker: Option<JoinHandle<()>>,
    loggers: Vec<JoinHandle<()>>,
    checkpointer: Option<JoinHandle<()>>,
    vacuum: Option<JoinHandle<()>>,
}

impl Database {
    /// Opens a database. With a data directory, recovers it first (catalog, newest checkpoint,
    /// log up to the last durable epoch) and starts the loggers and the checkpointer.
    pub fn open(config: Config) -> Result<Database> {
        config.validate()?;
        if config.reserved_memory_bytes > 0 {
            reserve(config.reserved_memory_bytes)?;
        }
        let mut epochs = EpochManager::new(
            config.workers_max,
            config.snapshot_interval_epochs,
            config.idle_transaction_epochs_max,
        );
        if config.protocol.multiversion() {
            epochs.enable_multiversion();
        }
        if config.protocol == Protocol::Mvto {
            // Its transactions commit at their begin timestamps (`cc/mvto.rs`, READ).
            epochs.enable_statement_snapshots();
        }
        let counters =
            (0..config.workers_max).map(|_| CachePadded::new(Counters::default())).collect();
        let mut catalog = Catalog::default();
        let mut data = None;
        let mut log = None;
        let mut segments = Vec::new();
        let mut recovered_garbage = Vec::new();
        if let Some(storage) = config.open_storage()? {
            let mut recovered = recovery::recover(
                &*storage,
                config.index_keys.as_ref(),
                config.recovery_threads(),
                config.head_shape(),
                config.index_pointers,
                checkpoint::sample_every(config.checkpoint_part_rows),
            )?;
            epochs.restart_after(Epoch(recovered.last_epoch));
            for (id, table) in recovered.tables.iter().enumerate() {
                catalog.tables.push(table.clone());
                if let Some(table) = table {
                    catalog.by_name.insert(table.name().to_string(), TableId(id as u32));
                }
            }
            // The run's first writes: the catalog rewritten, the manifest, the loggers' first
            // segments. None needs room the directory cannot give: on a full disk the database
            // opens all the same, serves reads and refuses writes with `DiskFull` until there is
            // room (docs/durability.md, "A full disk").
            let mut start = RunStart::new(&*storage, recovered.spares.clone());
            let records = catalog_state(&catalog);
            let catalog_file = start.attempt("catalog.log", || {
                DataDir::rewrite_catalog(
                    &*storage,
                    &records,
                    &recovered.catalog_rows,
                    epochs.global().0,
                )
            })?;
            let manifest_written = start
                .attempt("MANIFEST", || DataDir::write_manifest(&*storage, &recovered.manifest))?;
            if config.durability == Durability::Epoch {
                let durable = epochs.stable();
                let shared_log = Arc::new(
                    Log::new(
                        Arc::clone(&storage),
                        config.workers_max,
                        config.loggers,
                        durable,
                        recovered.manifest.run,
                        config.log_compression,
                        config.segment_bytes,
                    )
                    .keeping_spares(config.log_spare_bytes, config.log_reserve_bytes),
                );
                *shared_log.closed.lock().unwrap_or_else(|poison| poison.into_inner()) =
                    recovered.segments;
                shared_log.adopt_spares(&start.spares);
                // The reserve only makes logging cheaper: without room for it, the log starts in
                // fresh files. Where the disk had no room for the catalog or the manifest, it
                // has none for it either.
                if start.full.is_none()
                    && let Err(error) = shared_log.prepare_spares(config.log_reserve_bytes)
                {
                    tracing::warn!(
                        "cannot write spare log segments in {}: {error}",
                        storage.describe("wal")
                    );
                }
                for logger in 0..config.loggers {
                    // No segment before the manifest names the run (`DataDir::announce_run`).
                    let made = match manifest_written {
                        Some(()) => {
                            Segment::create(&shared_log, logger, config.loggers, 0, durable.0)
                                .map(Some)
                                .or_else(|failure| start.full_or_error("a log segment", failure))
                        }
                        None => Ok(None),
                    }?;
                    if made.is_none() {
                        let why = start.full.clone().unwrap_or_default();
                        shared_log
                            .full(logger, format!("no room for a log segment at the open: {why}"));
                    }
                    segments.push(made);
                }
                log = Some(shared_log);
            }
            recovered_garbage = recovered.garbage;
            data = Some(DataDir {
                storage,
                manifest: Mutex::new(recovered.manifest),
                manifest_unwritten: AtomicBool::new(manifest_written.is_none()),
                catalog: Mutex::new(CatalogLog {
                    file: match catalog_file {
                        Some(file) => CatalogFileState::Open(file),
                        None => CatalogFileState::Unwritten,
                    },
                    rows: recovered.catalog_rows,
                }),
                checkpointing: Mutex::new(checkpoint::splits_from(
                    std::mem::take(&mut recovered.checkpoint_parts),
                    config.checkpoint_part_rows,
                )),
                compress_checkpoints: config.checkpoint_compression,
                last_checkpoint: Mutex::new(report::LastCheckpoint {
                    report: recovered.report.checkpoint_epoch.map(|epoch| {
                        report::CheckpointReport {
                            epoch,
                            bytes: recovered.report.checkpoint_bytes,
                            leaves: recovered.report.checkpoint_leaves,
                            ..report::CheckpointReport::default()
                        }
                    }),
                    log_position: 0,
                }),
                report: recovered.report,
            });
        }
        let shared = Arc::new(Shared {
            epochs,
            config: config.clone(),
            rules: Isolation::ALL.map(|isolation| config.protocol.rules(isolation)),
            counters,
            catalog: RwLock::new(catalog),
            orphans: Mutex::new(Orphans::default()),
            orphans_waiting: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            checkpoints_paused: AtomicBool::new(false),
            log,
            data,
            spaces: (0..config.memory_spaces).map(|_| new_space()).collect(),
            vacuum: VacuumCounters::default(),
            row_keys: RowKeysSlot::default(),
        });
        for mut garbage in recovered_garbage {
            garbage.seal(&shared.epochs);
            shared.adopt_from(&mut garbage, &mut Tasks::default());
        }
        let interval = Duration::from_millis(config.epoch_interval_ms.max(1));
        let loggers: Vec<JoinHandle<()>> = segments
            .into_iter()
            .enumerate()
            .map(|(index, segment)| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("engram-log-{index}"))
                    .spawn(move || {
                        let log = shared.log.as_ref().expect("loggers run with a log");
                        // A logger that panics (a bug) fails the log, so waiters get an error
                        // and new commits are refused, instead of waiting forever on it.
                        let announce = || match &shared.data {
                            Some(data) => data.announce_run(),
                            None => Ok(()),
                        };
                        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            log::run_logger(
                                log,
                                &shared.epochs,
                                index,
                                segment,
                                interval,
                                &announce,
                            )
                        }));
                        if let Err(panic) = ran {
                            let what = panic
                                .downcast_ref::<&str>()
                                .map(|text| text.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            log.fail(format!("logger {index} stopped by a panic: {what}"), false);
                        }
                    })
                    .expect("spawn a logger")
            })
            .collect();
        let logger_threads: Vec<Thread> =
            loggers.iter().map(|handle| handle.thread().clone()).collect();
        let ticker = (config.epoch_interval_ms > 0).then(|| {
            let ticking = Arc::clone(&shared);
            let logger_threads = logger_threads.clone();
            let shortest = Duration::from_micros(config.epoch_min_us).min(interval);
            let handle = std::thread::Builder::new()
                .name("engram-epoch".into())
                .spawn(move || run_ticker(&ticking, &logger_threads, interval, shortest))
                .expect("spawn the epoch ticker");
            if config.epoch_min_us > 0
                && let Some(log) = &shared.log
            {
                log.end_epochs_on_demand(handle.thread().clone());
            }
            handle
        });
        let checkpointer = (shared.data.is_some() && config.checkpoint_log_bytes > 0).then(|| {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("engram-checkpoint".into())
                .spawn(move || run_checkpointer(&shared))
                .expect("spawn the checkpointer")
        });
        let vacuum = config.vacuum_interval().is_some().then(|| {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("engram-vacuum".into())
                .spawn(move || vacuum::run(shared))
                .expect("spawn the vacuum")
        });
        Ok(Database { shared, ticker, loggers, checkpointer, vacuum })
    }

    /// A new worker for the calling thread.
    pub fn worker(&self) -> Result<Worker> {
        Worker::new(Arc::clone(&self.shared))
    }

    pub fn create_table(&self, spec: TableSpec) -> Result<TableRef> {
        if spec.secondary.len() > SECONDARY_INDEXES_MAX {
            return Err(Error::TooManyIndexes { max: SECONDARY_INDEXES_MAX });
        }
        if let Some(layout) = spec.non_inline {
            self.check_non_inline(&spec, layout)?;
        }
        let mut catalog = self.shared.catalog.write().unwrap_or_else(|poison| poison.into_inner());
        if catalog.by_name.contains_key(&spec.name) {
            return Err(Error::TableExists(spec.name));
        }
        if catalog.tables.len() >= TABLES_MAX {
            return Err(Error::TooManyTables { max: TABLES_MAX });
        }
        let id = TableId(catalog.tables.len() as u32);
        let name = spec.name.clone();
        let table = Arc::new(Table::new(id, spec, self.shared.config.index_pointers));
        if let Some(data) = &self.shared.data {
            let record = CatalogRecord::Create {
                table: id.0,
                name: name.clone(),
                indexes: index_records(&table),
            };
            data.log_catalog(&record, self.shared.epochs.global().0, &|| catalog_state(&catalog))?;
        }
        catalog.tables.push(Some(Arc::clone(&table)));
        catalog.by_name.insert(name, id);
        Ok(table)
    }

    /// Whether a table of non-inline attributes can live in this database, and why not.
    fn check_non_inline(&self, spec: &TableSpec, layout: NonInline) -> Result<()> {
        let config = &self.shared.config;
        let refuse =
            |why: String| Err(Error::InvalidConfig(format!("table {:?}: {why}", spec.name)));
        if !config.version_storage.append_only() {
            return refuse(format!(
                "non-inline attributes need version_storage append-n2o or append-o2n, not {}: \
                 the other storages overwrite or rebuild versions in place, while a version's \
                 values are released only when the version itself is freed",
                config.version_storage
            ));
        }
        if self.shared.data.is_some() {
            return refuse(
                "non-inline attributes are not logged yet (a version holds value addresses, \
                 which mean nothing after a restart): open the database without a data \
                 directory"
                    .into(),
            );
        }
        if !spec.secondary.is_empty() {
            return refuse(
                "a table of non-inline attributes has no secondary indexes (its rows are value \
                 handles, not bytes a key extractor could read)"
                    .into(),
            );
        }
        if layout.attributes == 0 || layout.attributes > ATTRIBUTES_MAX {
            return refuse(format!(
                "{} attributes: a non-inline row has 1 to {ATTRIBUTES_MAX}",
                layout.attributes
            ));
        }
        Ok(())
    }

    pub fn table(&self, name: &str) -> Result<TableRef> {
        let catalog = self.shared.catalog.read().unwrap_or_else(|poison| poison.into_inner());
        catalog
            .by_name
            .get(name)
            .and_then(|id| catalog.tables[id.index()].clone())
            .ok_or_else(|| Error::UnknownTable(name.to_string()))
    }

    /// Removes a table from the catalog. Its memory is freed when the last handle (including
    /// the caches of workers that used it) is gone.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let mut catalog = self.shared.catalog.write().unwrap_or_else(|poison| poison.into_inner());
        let id = *catalog.by_name.get(name).ok_or_else(|| Error::UnknownTable(name.to_string()))?;
        if let Some(data) = &self.shared.data {
            let record = CatalogRecord::Drop { table: id.0 };
            data.log_catalog(&record, self.shared.epochs.global().0, &|| catalog_state(&catalog))?;
        }
        catalog.by_name.remove(name);
        catalog.tables[id.index()] = None;
        Ok(())
    }

    /// Makes rows that a committed transaction (`commit`, its `CommitInfo`) wrote to `table`
    /// durable without the log, for a small table that must survive a crash whatever
    /// `Config::durability` says, such as a catalog kept in a table (the SQL layer's): with
    /// `Durability::Off`, they are appended to `catalog.log` and synced before this returns,
    /// and recovery applies them over the checkpoint by the TID rule, as it applies the log
    /// (format 8, docs/durability.md). `rows` are keys and new values, `None` for a deletion.
    /// With the log on, the log holds them, and this does nothing. Without a data directory,
    /// nothing does.
    pub fn log_catalog_rows(
        &self,
        table: &TableRef,
        commit: &CommitInfo,
        rows: &[(&[u8], Option<&[u8]>)],
    ) -> Result<()> {
        let Some(data) = &self.shared.data else { return Ok(()) };
        if self.shared.log.is_some() || rows.is_empty() {
            return Ok(());
        }
        // Under the catalog's lock, so that no row follows its table's drop in the file.
        let catalog = self.shared.catalog.read().unwrap_or_else(|poison| poison.into_inner());
        if catalog.tables.get(table.id().index()).and_then(Option::as_ref).is_none() {
            return Err(Error::UnknownTable(table.name().to_string()));
        }
        let record = CatalogRecord::Rows {
            table: table.id().0,
            tid: commit.tid.as_u64(),
            rows: rows
                .iter()
                .map(|(key, value)| (key.to_vec(), value.map(<[u8]>::to_vec)))
                .collect(),
        };
        data.log_catalog(&record, self.shared.epochs.global().0, &|| catalog_state(&catalog))
    }

    pub fn table_names(&self) -> Vec<String> {
        let catalog = self.shared.catalog.read().unwrap_or_else(|poison| poison.into_inner());
        let mut names: Vec<String> = catalog.by_name.keys().cloned().collect();
        names.sort();
        names
    }

    /// Advances the epoch once (for tests that run with `epoch_interval_ms = 0`), and wakes
    /// the loggers.
    pub fn advance_epoch(&self) {
        self.shared.epochs.advance();
        for logger in &self.loggers {
            logger.thread().unpark();
        }
    }

    /// Every commit of an epoch at or below this one is durable (`Epoch(u64::MAX)` when
    /// nothing is logged). One load: it does not go through a `DurabilityWatcher`, whose
    /// `Arc` clone and drop would write the log's reference count, on the cache line that
    /// every commit reads the log's buffers from, each time (callers poll this per commit).
    pub fn durable_epoch(&self) -> Epoch {
        self.shared.log.as_ref().map_or(Epoch(u64::MAX), |log| log.durable())
    }

    /// A handle for waiting on durability, blocking or async; cheap to clone.
    pub fn durability_watcher(&self) -> DurabilityWatcher {
        DurabilityWatcher { log: self.shared.log.clone() }
    }

    /// Blocks until `commit` is durable. Returns the log's error if logging failed first.
    pub fn wait_durable(&self, commit: &CommitInfo) -> Result<()> {
        match &self.shared.log {
            Some(log) => log.wait(commit.epoch),
            None => Ok(()),
        }
    }

    /// Log bytes written since the database opened.
    pub fn log_bytes(&self) -> u64 {
        self.shared.log.as_ref().map_or(0, |log| log.bytes_written.load(Ordering::Relaxed))
    }

    /// Whether the database keeps a data directory (a path, or storage given in its config),
    /// so that it logs, checkpoints and recovers.
    pub fn has_data_dir(&self) -> bool {
        self.shared.data.is_some()
    }

    /// Takes a checkpoint now and removes what it supersedes.
    pub fn checkpoint(&self) -> Result<CheckpointReport> {
        let Some(data) = &self.shared.data else {
            return Err(Error::InvalidConfig("checkpoints need a data directory".into()));
        };
        checkpoint::take(&self.shared, data, self.shared.config.checkpoint_threads, false)
    }

    /// Pauses the background checkpointer (`paused`), or lets it go on. While paused it starts
    /// no checkpoint, and one under way waits between its batches of rows, still holding its
    /// snapshot epoch, so that versions it needs are kept: pause for seconds, not hours. A
    /// benchmark that alternates this database with another pauses it during the other's
    /// rounds, so the checkpoint's work is counted where it belongs. Checkpoints asked for
    /// with [`Database::checkpoint`] are not paused.
    pub fn pause_checkpoints(&self, paused: bool) {
        self.shared.checkpoints_paused.store(paused, Ordering::Release);
    }

    /// What recovery did when this database opened (`None` without a data directory).
    pub fn recovery_report(&self) -> Option<&RecoveryReport> {
        self.shared.data.as_ref().map(|data| &data.report)
    }

    /// The epoch manager (epochs, stable and snapshot epochs, kicked transactions).
    pub fn epochs(&self) -> &EpochManager {
        &self.shared.epochs
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Tops the process's reserve of mapped, faulted-in memory up to `bytes` (as
    /// [`Config::reserved_memory_bytes`] does at open), for example after a bulk load.
    /// Returns the bytes now reserved, or `OutOfMemory` (reserving nothing more) when the
    /// top-up exceeds the memory the kernel reports available.
    pub fn reserve_memory(&self, bytes: usize) -> Result<usize> {
        reserve(bytes)
    }

    /// What the background vacuum or the readers' cooperative cleaning has done (all zeros
    /// unless `Config::gc` is `Gc::TupleVacuum` or `Gc::TupleCooperative`).
    pub fn vacuum_stats(&self) -> VacuumStats {
        self.shared.vacuum.stats()
    }

    /// Commit and abort counts summed over all workers, past and present.
    pub fn stats(&self) -> Stats {
        let mut stats = Stats {
            commits: 0,
            aborts: AbortReason::ALL.iter().map(|reason| (*reason, 0)).collect(),
        };
        for counters in self.shared.counters.iter() {
            stats.commits += counters.commits.load(Ordering::Relaxed);
            for (total, count) in stats.aborts.iter_mut().zip(&counters.aborts) {
                total.1 += count.load(Ordering::Relaxed);
            }
        }
        stats
    }

    /// Where aborts happened, summed over all workers, past and present: counts per table,
    /// index and reason, and the most contended keys (`cc/conflict.rs`).
    pub fn conflict_stats(&self) -> ConflictStats {
        ConflictStats::merge(
            self.shared.counters.iter().map(|counters| {
                counters.conflicts.lock().unwrap_or_else(|e| e.into_inner()).clone()
            }),
        )
    }

    /// The name of the table with id `id`, if it still exists.
    pub fn table_name(&self, id: TableId) -> Option<String> {
        self.shared.table_by_id(id).map(|table| table.name().to_string())
    }

    /// Sets how abort diagnostics find the primary key of a row they read, for the records a
    /// transaction read without keeping their keys (`cc/conflict.rs`).
    pub fn set_row_keys(&self, row_keys: RowKeys) {
        self.shared.row_keys.set(row_keys);
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(checkpointer) = self.checkpointer.take() {
            checkpointer.thread().unpark();
            let _ = checkpointer.join();
        }
        if let Some(vacuum) = self.vacuum.take() {
            vacuum.thread().unpark();
            let _ = vacuum.join();
        }
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
        if let Some(log) = &self.shared.log {
            // Make every finished commit stable, then let the loggers write it and stop.
            self.shared.epochs.advance();
            self.shared.epochs.advance();
            log.stop.store(true, Ordering::Release);
            for logger in self.loggers.drain(..) {
                logger.thread().unpark();
                let _ = logger.join();
            }
            log.fail("the database was closed".into(), false);
        }
    }
}

/// The epoch ticker: ends an epoch every `interval`, or once it is `shortest` old while a
/// commit waits for it to become durable (`wal::log`, epochs on demand), and wakes the loggers.
fn run_ticker(shared: &Shared, loggers: &[Thread], interval: Duration, shortest: Duration) {
    let mut last = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        let waited_for =
            shared.log.as_ref().is_some_and(|log| log.demand() > shared.epochs.stable());
        let due = if waited_for { shortest } else { interval };
        let age = last.elapsed();
        if age < due {
            // Woken early by a waiter (or spuriously): look again.
            std::thread::park_timeout(due - age);
            continue;
        }
        shared.epochs.advance();
        last = Instant::now();
        for thread in loggers {
            thread.unpark();
        }
    }
}

/// Log bytes after which the background checkpointer takes the next checkpoint:
/// `Config::checkpoint_log_bytes`, or `checkpoint_log_ratio` times the size a checkpoint would
/// have now, if that is more. The size is estimated from the last checkpoint (`last`): its
/// bytes per leaf of the primary indexes, times `leaves_now`, the leaves they have now. The
/// last checkpoint's own size would be too small for a growing database: TPC-C's doubled
/// between checkpoints, which then wrote a quarter of the log's bytes rather
/// than an eighth (bench/results/history.md, "Checkpoints at the database's size").
fn checkpoint_due_after(
    config: &Config,
    last: Option<&report::CheckpointReport>,
    leaves_now: u64,
) -> u64 {
    let estimate = last.map_or(0, |last| estimated_checkpoint_bytes(last, leaves_now));
    config.checkpoint_log_bytes.max(estimate.saturating_mul(config.checkpoint_log_ratio))
}

/// The bytes a checkpoint of tables with `leaves_now` primary-index leaves would write, at
/// `last`'s bytes per leaf.
fn estimated_checkpoint_bytes(last: &report::CheckpointReport, leaves_now: u64) -> u64 {
    if last.leaves == 0 {
        return last.bytes;
    }
    let estimate = u128::from(last.bytes) * u128::from(leaves_now) / u128::from(last.leaves);
    u64::try_from(estimate).unwrap_or(u64::MAX)
}

/// The background checkpointer: a checkpoint once the log since the last one began has grown
/// by `checkpoint_due_after`. A checkpoint that started every `checkpoint_log_bytes` alone
/// ran almost without a break under a write-heavy load (TPC-C's 2 warehouses: 250 to 750 MB
/// a checkpoint, 1 GiB of log every 4 s), and took the cores from the workers
/// (docs/performance.md).
fn run_checkpointer(shared: &Arc<Shared>) {
    let Some(data) = &shared.data else { return };
    // Behind the workers and the logger: a checkpoint may take its time, commits may not.
    crate::wal::log::set_thread_nice(10);
    // After a failed checkpoint, the log position before which none is tried again: as much
    // log again as made it due (a full disk is not retried five times a second).
    let mut not_before = 0;
    while !shared.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(Duration::from_millis(200));
        // From the last checkpoint, asked for or not; a reopened database's is the one
        // recovery loaded, with the log it replayed counted as logged since (starting from
        // nothing, it took a whole checkpoint after `checkpoint_log_bytes` of new log,
        // whatever its size).
        let last = data.last_checkpoint.lock().unwrap_or_else(|poison| poison.into_inner()).clone();
        let position = checkpoint::log_position(shared, data);
        let since = position - last.log_position;
        let leaves_now = shared.tables().iter().map(|table| table.primary.leaves()).sum();
        let due = checkpoint_due_after(&shared.config, last.report.as_ref(), leaves_now);
        if since < due
            || position < not_before
            || shared.stop.load(Ordering::Acquire)
            || shared.checkpoints_paused.load(Ordering::Acquire)
        {
            continue;
        }
        match checkpoint::take(shared, data, shared.config.checkpoint_threads, true) {
            Ok(report) => tracing::info!(
                epoch = report.epoch,
                rows = report.rows,
                bytes = report.bytes,
                seconds = report.seconds,
                log_since_last = since,
                estimated_bytes = last
                    .report
                    .as_ref()
                    .map(|last| estimated_checkpoint_bytes(last, report.leaves)),
                "checkpoint written"
            ),
            Err(error) => {
                tracing::error!("checkpoint failed: {error}");
                not_before = position.saturating_add(due);
            }
        }
    }
}

/// The catalog as its log records it: per table id, the live table's name and indexes, or
/// `None` for a dropped one.
fn catalog_state(catalog: &Catalog) -> report::CatalogState {
    catalog
        .tables
        .iter()
        .map(|table| table.as_ref().map(|table| (table.name().to_string(), index_records(table))))
        .collect()
}

/// The first writes of a run (`Database::open`), on a disk that may be full: each is tried,
/// and where the disk has no room, a spare segment file is given back (the spares only make
/// logging cheaper) and it is tried again; with no spare left, the write waits for later.
struct RunStart<'a> {
    storage: &'a dyn Storage,
    /// Spare segment files not given back, for the loggers to take over.
    spares: Vec<String>,
    /// Why a write had to wait, if one did.
    full: Option<String>,
}

impl<'a> RunStart<'a> {
    fn new(storage: &'a dyn Storage, spares: Vec<String>) -> Self {
        RunStart { storage, spares, full: None }
    }

    /// Runs `write` until it succeeds (`Some`), or finds the disk full with no spare left to
    /// give back (`None`); any other failure is the open's.
    fn attempt<T>(
        &mut self,
        what: &str,
        mut write: impl FnMut() -> std::result::Result<T, WriteFailure>,
    ) -> Result<Option<T>> {
        loop {
            match write() {
                Ok(done) => return Ok(Some(done)),
                Err(WriteFailure::Full(error)) if self.give_back_a_spare() => {
                    tracing::warn!("{error}: gave a spare log segment back for {what}");
                }
                Err(failure) => return self.full_or_error(what, failure),
            }
        }
    }

    /// A full disk is waited out (`None`); anything else fails the open.
    fn full_or_error<T>(&mut self, what: &str, failure: WriteFailure) -> Result<Option<T>> {
        match failure {
            WriteFailure::Full(error) => {
                tracing::warn!(
                    "no room for {what} at the open: serving reads, refusing writes until \
                     there is room: {error}"
                );
                self.full = Some(match error {
                    Error::DiskFull(message) => message,
                    other => other.to_string(),
                });
                Ok(None)
            }
            WriteFailure::Failed(error) => Err(error),
        }
    }

    /// Removes one spare segment file; whether there was one.
    fn give_back_a_spare(&mut self) -> bool {
        while let Some(spare) = self.spares.pop() {
            let path = format!("wal/{spare}");
            if self.storage.remove(&path).is_ok() {
                let _ = self.storage.sync_dir("wal");
                return true;
            }
        }
        false
    }
}

/// The catalog's record of a table's secondary indexes.
fn index_records(table: &Table) -> Vec<IndexRecord> {
    table
        .secondaries
        .iter()
        .map(|index| IndexRecord {
            name: index.name.clone(),
            unique: index.unique,
            definition: index.definition.clone(),
        })
        .collect()
}

fn reserve(bytes: usize) -> Result<usize> {
    crate::mem::chunks::reserve(bytes).map_err(|failed| Error::OutOfMemory {
        requested: failed.requested,
        available: failed.available,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(bytes: u64, leaves: u64) -> report::CheckpointReport {
        report::CheckpointReport { bytes, leaves, ..report::CheckpointReport::default() }
    }

    /// The next checkpoint is due at `ratio` times the last one's bytes per leaf times the
    /// leaves now, or at `checkpoint_log_bytes` if that is more; a first one at the latter.
    #[test]
    fn checkpoints_are_due_at_ratio_times_the_estimated_present_size() {
        let config =
            Config { checkpoint_log_bytes: 1 << 30, checkpoint_log_ratio: 8, ..Config::default() };
        // Nothing to estimate from: the threshold alone.
        assert_eq!(checkpoint_due_after(&config, None, 1_000_000), 1 << 30);
        // 250 MB over 10,000 leaves, now 40,000 leaves: 1 GB, due at 8 GB.
        let last = report(250_000_000, 10_000);
        assert_eq!(estimated_checkpoint_bytes(&last, 40_000), 1_000_000_000);
        assert_eq!(checkpoint_due_after(&config, Some(&last), 40_000), 8_000_000_000);
        // A database that shrank below the threshold's worth: the threshold.
        assert_eq!(checkpoint_due_after(&config, Some(&last), 100), 1 << 30);
        // No leaves recorded (an empty database): its bytes stand.
        assert_eq!(estimated_checkpoint_bytes(&report(4096, 0), 7), 4096);
        // Huge numbers saturate rather than wrap.
        let huge = report(u64::MAX / 2, 1);
        assert_eq!(estimated_checkpoint_bytes(&huge, 4), u64::MAX);
        assert_eq!(checkpoint_due_after(&config, Some(&huge), 4), u64::MAX);
        // Ratio 0: the threshold alone, whatever the size.
        let alone = Config { checkpoint_log_ratio: 0, ..config };
        assert_eq!(checkpoint_due_after(&alone, Some(&last), 40_000), 1 << 30);
    }
}
