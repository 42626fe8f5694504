//! What every worker of a database shares ([`Shared`]): the configuration, the epochs, the
//! catalog of tables, each slot's commit and abort counters, the log and the data directory,
//! and the garbage and tasks departed workers left. `Database` owns it and its background
//! threads; each `Worker` holds it.

use crate::config::Config;
use crate::gc::VacuumCounters;
use crate::gc::tasks::Tasks;
use crate::mem::arena::{Arena, Space};
use crate::protocol::Rules;
use crate::stats::{Counters, RowKeysSlot};
use crate::storage::TableId;
use crate::storage::TableRef;
use crate::sync::{EpochManager, Garbage};
use crate::wal::DataDir;
use crate::wal::log::Log;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub tables: Vec<Option<TableRef>>,
    pub by_name: HashMap<String, TableId>,
}

#[derive(Debug, Default)]
pub(crate) struct Orphans {
    garbage: Garbage,
    tasks: Tasks,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub epochs: EpochManager,
    pub config: Config,
    /// The protocol's rules at each isolation level (`Isolation::index`), worked out once.
    pub rules: [Rules; 4],
    pub counters: Box<[CachePadded<Counters>]>,
    pub catalog: RwLock<Catalog>,
    pub orphans: Mutex<Orphans>,
    pub orphans_waiting: AtomicBool,
    pub stop: AtomicBool,
    /// Background checkpoints wait while set (`Database::pause_checkpoints`).
    pub checkpoints_paused: AtomicBool,
    pub log: Option<Arc<Log>>,
    pub data: Option<DataDir>,
    /// Shared memory spaces (`Config::memory_spaces`); empty: one arena per worker.
    pub spaces: Vec<Space>,
    /// What the vacuum (`Gc::TupleVacuum`) or the readers' cleaning (`Gc::TupleCooperative`)
    /// did.
    pub vacuum: VacuumCounters,
    /// The application's row-to-key function for abort diagnostics (`Database::set_row_keys`).
    pub row_keys: RowKeysSlot,
}

impl Shared {
    /// Whether the database is closing (background threads end).
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// The arena of a worker in `slot`: its own, or one drawing from its memory space.
    pub fn arena_for(&self, slot: crate::sync::SlotId) -> Arena {
        match self.spaces.len() {
            0 => Arena::new(),
            spaces => Arena::in_space(Arc::clone(&self.spaces[slot.index() % spaces])),
        }
    }

    /// Every table in the catalog.
    pub fn tables(&self) -> Vec<TableRef> {
        let catalog = self.catalog.read().unwrap_or_else(|poison| poison.into_inner());
        catalog.tables.iter().flatten().cloned().collect()
    }

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
