//! The database: configuration, the catalog of tables, the epoch ticker, per-worker counters,
//! and what departing workers leave behind.

use crate::error::{AbortReason, Error, Result};
use crate::gc::Garbage;
use crate::gc::tasks::Tasks;
use crate::limits::{SECONDARY_INDEXES_MAX, TABLES_MAX, WORKERS_MAX};
use crate::storage::arena::Arena;
use crate::storage::{Table, TableId, TableSpec};
use crate::sync::EpochManager;
use crate::worker::{TableRef, Worker};
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// How a database behaves. `Config::default()` is what a server would run with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Interval of the global epoch ticker (Silo: 40 ms). 0 disables the ticker; epochs then
    /// advance only through [`Database::advance_epoch`] (deterministic tests).
    pub epoch_interval_ms: u64,
    /// Snapshot transactions read at multiples of this many epochs (Silo: 25, one second).
    /// Smaller gives fresher snapshots and keeps more old versions.
    pub snapshot_interval_epochs: u64,
    /// Epochs an interactive transaction may sit idle between calls before it is aborted so
    /// that it stops holding garbage collection back (250 x 40 ms = 10 s).
    pub idle_transaction_epochs_max: u64,
    /// Worker slots (concurrently open transactions).
    pub workers_max: usize,
    /// Attempts [`Worker::transaction`] makes before it returns an abort.
    pub transaction_retries_max: u32,
    /// Memory mapped and faulted in at open for records and index nodes to grow into, so that
    /// a run takes no page faults (`storage::chunks`). The reserve is
    /// shared by every database of the process. 0 reserves nothing.
    pub reserved_memory_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            epoch_interval_ms: 40,
            snapshot_interval_epochs: 25,
            idle_transaction_epochs_max: 250,
            workers_max: WORKERS_MAX,
            transaction_retries_max: 100,
            reserved_memory_bytes: 0,
        }
    }
}

impl Config {
    fn validate(&self) -> Result<()> {
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
        Ok(())
    }
}

/// Commit and abort counts of one worker slot. Written only by the slot's worker (plain
/// load-and-store, no read-modify-write), read by anyone.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub commits: AtomicU64,
    pub aborts: [AtomicU64; AbortReason::ALL.len()],
}

impl Counters {
    #[inline]
    pub fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

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

#[derive(Debug, Default)]
struct Catalog {
    tables: Vec<Option<TableRef>>,
    by_name: HashMap<String, TableId>,
}

#[derive(Debug, Default)]
struct Orphans {
    garbage: Garbage,
    tasks: Tasks,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub epochs: EpochManager,
    pub config: Config,
    pub counters: Box<[CachePadded<Counters>]>,
    catalog: RwLock<Catalog>,
    orphans: Mutex<Orphans>,
    orphans_waiting: AtomicBool,
    stop: AtomicBool,
}

impl Shared {
    /// Takes a departing worker's garbage and tasks.
    pub fn adopt_from(&self, garbage: &mut Garbage, tasks: &mut Tasks) {
        if garbage.is_empty() && tasks.is_empty() {
            return;
        }
        let mut orphans = self.orphans.lock().unwrap_or_else(|poison| poison.into_inner());
        garbage.append_to(&mut orphans.garbage, &self.epochs);
        tasks.append_to(&mut orphans.tasks);
        self.orphans_waiting.store(true, Ordering::Release);
    }

    /// Hands orphaned garbage and tasks to a live worker, if any are waiting.
    pub fn hand_over(&self, garbage: &mut Garbage, tasks: &mut Tasks) {
        if !self.orphans_waiting.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut orphans) = self.orphans.try_lock() {
            orphans.garbage.append_to(garbage, &self.epochs);
            orphans.tasks.append_to(tasks);
            self.orphans_waiting.store(false, Ordering::Release);
        }
    }

    /// A table by id, if it is still in the catalog.
    pub fn table_by_id(&self, id: TableId) -> Option<TableRef> {
        let catalog = self.catalog.read().unwrap_or_else(|poison| poison.into_inner());
        catalog.tables.get(id.index()).cloned().flatten()
    }

    pub fn counters(&self, slot: crate::sync::SlotId) -> &Counters {
        &self.counters[slot.index()]
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let orphans = self.orphans.get_mut().unwrap_or_else(|poison| poison.into_inner());
        let mut arena = Arena::new();
        // SAFETY: the last reference to the database is going away: no worker exists, so
        // nothing can reach retired memory. Tasks only refer to memory the tables own.
        unsafe { orphans.garbage.free_all(&mut arena) };
    }
}

/// An in-memory database. Cheap to share: clone the `Database` (or keep it in an `Arc`) and
/// take one [`Worker`] per thread.
#[derive(Debug)]
pub struct Database {
    shared: Arc<Shared>,
    ticker: Option<JoinHandle<()>>,
}

impl Database {
    pub fn open(config: Config) -> Result<Database> {
        config.validate()?;
        if config.reserved_memory_bytes > 0 {
            reserve(config.reserved_memory_bytes)?;
        }
        let epochs = EpochManager::new(
            config.workers_max,
            config.snapshot_interval_epochs,
            config.idle_transaction_epochs_max,
        );
        let counters =
            (0..config.workers_max).map(|_| CachePadded::new(Counters::default())).collect();
        let shared = Arc::new(Shared {
            epochs,
            config: config.clone(),
            counters,
            catalog: RwLock::new(Catalog::default()),
            orphans: Mutex::new(Orphans::default()),
            orphans_waiting: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let ticker = (config.epoch_interval_ms > 0).then(|| {
            let shared = Arc::clone(&shared);
            let interval = Duration::from_millis(config.epoch_interval_ms);
            std::thread::Builder::new()
                .name("engram-epoch".into())
                .spawn(move || {
                    while !shared.stop.load(Ordering::Acquire) {
                        std::thread::park_timeout(interval);
                        shared.epochs.advance();
                    }
                })
                .expect("spawn the epoch ticker")
        });
        Ok(Database { shared, ticker })
    }

    /// A new worker for the calling thread.
    pub fn worker(&self) -> Result<Worker> {
        Worker::new(Arc::clone(&self.shared))
    }

    pub fn create_table(&self, spec: TableSpec) -> Result<TableRef> {
        if spec.secondary.len() > SECONDARY_INDEXES_MAX {
            return Err(Error::TooManyIndexes { max: SECONDARY_INDEXES_MAX });
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
        let table = Arc::new(Table::new(id, spec));
        catalog.tables.push(Some(Arc::clone(&table)));
        catalog.by_name.insert(name, id);
        Ok(table)
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
        let id =
            catalog.by_name.remove(name).ok_or_else(|| Error::UnknownTable(name.to_string()))?;
        catalog.tables[id.index()] = None;
        Ok(())
    }

    pub fn table_names(&self) -> Vec<String> {
        let catalog = self.shared.catalog.read().unwrap_or_else(|poison| poison.into_inner());
        let mut names: Vec<String> = catalog.by_name.keys().cloned().collect();
        names.sort();
        names
    }

    /// Advances the epoch once (for tests that run with `epoch_interval_ms = 0`).
    pub fn advance_epoch(&self) {
        self.shared.epochs.advance();
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
}

impl Drop for Database {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
    }
}

fn reserve(bytes: usize) -> Result<usize> {
    crate::storage::chunks::reserve(bytes).map_err(|failed| Error::OutOfMemory {
        requested: failed.requested,
        available: failed.available,
    })
}
