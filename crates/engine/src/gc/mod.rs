//! Garbage collection: what may be freed, and when.
//!
//! Memory unlinked from a shared structure (an index node replaced by a split, a superseded
//! record version, the head of a deleted record) is freed by epoch-based reclamation
//! (`sync::reclaim`), beneath this module. Here:
//!
//! - [`tasks`]: deferred logical clean-up. A deleted record must stay in its indexes while a
//!   snapshot may still read its older versions, and while its delete is not durable (a
//!   reader must find the delete's epoch to wait for it); the deleting worker queues a task
//!   that runs once the snapshot low-water mark and the durable epoch pass the delete's epoch,
//!   then unlinks the record and retires its head.
//!
//! - `crate::vacuum`: the background vacuum of `Gc::TupleVacuum` (it runs a worker of its own,
//!   so it sits above the transaction layer).
//! - `cc::cooperative`: the readers' cleaning of `Gc::TupleCooperative` (it runs inside a
//!   reader's transaction, so it lives with the protocols).
//!
//! A version is kept only while a reader may need it: a snapshot boundary at or above the
//! snapshot low-water mark, or a multi-version reader's timestamp, falls between its epoch and
//! its successor's. Who removes the versions that stop being needed is the [`Gc`] mode
//! (Wu et al. §5): the writing transactions (`transaction`, the default), a background vacuum
//! (`tuple-vacuum`), the readers that pass them (`tuple-cooperative`, oldest-to-newest chains
//! only), or nobody (`none`, an experiment's baseline).

pub(crate) mod tasks;

use std::sync::atomic::{AtomicU64, Ordering};

/// How superseded versions are found and removed (`--gc`, Wu et al. §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gc {
    /// Transaction-level: a committing transaction, holding the locks of the records it
    /// writes, unlinks the versions of those records that no reader can read any more (when a
    /// record's chain has doubled since its last pruning, so the walks cost a constant per
    /// update), and retires them in its epoch-tagged garbage list; they are freed in batches
    /// when their epoch expires. No thread scans for garbage.
    #[default]
    Transaction,
    /// Tuple-level background vacuum: writers never prune; a vacuum thread visits the tables
    /// whose records gained versions since its last pass and prunes every record's chain.
    TupleVacuum,
    /// Tuple-level cooperative cleaning: writers never prune; a transaction that reads a
    /// record whose oldest-to-newest chain holds an expired version prunes it
    /// (`cc::cooperative`), and the vacuum sweeps the records nobody reads, every
    /// `Config::cooperative_sweep_interval_ms`. Needs `VersionStorage::AppendO2n`.
    TupleCooperative,
    /// Nothing is pruned: versions a reader might need are kept until their record is
    /// deleted. Memory grows with every update; for experiments (Wu et al.'s GC-off runs).
    None,
}

impl Gc {
    pub const ALL: [Gc; 4] = [Gc::Transaction, Gc::TupleVacuum, Gc::TupleCooperative, Gc::None];

    pub fn name(self) -> &'static str {
        match self {
            Gc::Transaction => "transaction",
            Gc::TupleVacuum => "tuple-vacuum",
            Gc::TupleCooperative => "tuple-cooperative",
            Gc::None => "none",
        }
    }

    /// Whether writers prune the chains of the records they write.
    pub(crate) fn writers_prune(self) -> bool {
        self == Gc::Transaction
    }

    /// Whether commits mark the tables whose records keep versions, for a vacuum to visit.
    pub(crate) fn marks_dirty(self) -> bool {
        matches!(self, Gc::TupleVacuum | Gc::TupleCooperative)
    }
}

impl std::fmt::Display for Gc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Gc {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "transaction" => Ok(Gc::Transaction),
            "tuple-vacuum" | "vacuum" => Ok(Gc::TupleVacuum),
            "none" | "off" => Ok(Gc::None),
            "tuple-cooperative" | "cooperative" => Ok(Gc::TupleCooperative),
            other => Err(format!(
                "unknown gc \"{other}\": use transaction, tuple-vacuum, tuple-cooperative or none"
            )),
        }
    }
}

/// What the tuple-level GC has done since the database opened: the vacuum
/// (`Gc::TupleVacuum`), or the readers' cooperative cleaning (`Gc::TupleCooperative`, which
/// makes no passes and visits no tables).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VacuumStats {
    /// Completed passes over the dirty tables.
    pub passes: u64,
    /// Tables visited (dirty when a pass came).
    pub tables: u64,
    /// Records visited (cooperative: records a reader locked to prune).
    pub records: u64,
    /// Versions pruned from chains.
    pub versions: u64,
    /// Records skipped because their lock could not be taken.
    pub busy: u64,
}

#[derive(Debug, Default)]
pub(crate) struct VacuumCounters {
    pub(crate) passes: AtomicU64,
    pub(crate) tables: AtomicU64,
    pub(crate) records: AtomicU64,
    pub(crate) versions: AtomicU64,
    pub(crate) busy: AtomicU64,
}

impl VacuumCounters {
    pub fn stats(&self) -> VacuumStats {
        VacuumStats {
            passes: self.passes.load(Ordering::Relaxed),
            tables: self.tables.load(Ordering::Relaxed),
            records: self.records.load(Ordering::Relaxed),
            versions: self.versions.load(Ordering::Relaxed),
            busy: self.busy.load(Ordering::Relaxed),
        }
    }
}
