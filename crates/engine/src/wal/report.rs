//! What a data directory's checkpoints and recoveries report, and the names and state of the
//! files they share with the rest of `wal`. Beneath `checkpoint` and `recovery`, which run
//! workers: the data directory (`DataDir`) holds these while the database runs.

use super::format::IndexRecord;
use std::collections::HashMap;

pub(crate) const MANIFEST: &str = "MANIFEST";
pub(crate) const CATALOG: &str = "catalog.log";

/// The catalog: per table id, its definition, or `None` for a dropped table.
pub(crate) type CatalogState = Vec<Option<(String, Vec<IndexRecord>)>>;

/// Where each table's parts begin, by table id, in key order (`splits_from`). A table with none
/// is one part.
pub(crate) type Splits = HashMap<u32, Vec<Vec<u8>>>;

/// What a checkpoint wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckpointReport {
    pub epoch: u64,
    pub files: usize,
    pub rows: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// Log segments removed because the checkpoint covers them.
    pub segments_removed: usize,
    /// Leaves of the tables' primary indexes when the checkpoint began (`BTree::leaves`): with
    /// `bytes`, what the background checkpointer estimates the next checkpoint's size from.
    pub leaves: u64,
}

/// The last checkpoint of a data directory, for the background checkpointer to decide when
/// the next is due.
#[derive(Debug, Clone, Default)]
pub(crate) struct LastCheckpoint {
    /// What it wrote (`None`: none yet). After recovery, the loaded checkpoint's bytes and
    /// leaves.
    pub report: Option<CheckpointReport>,
    /// The log bytes written before it began, counting those recovery replayed
    /// (`log_position`); 0 for the checkpoint recovery loaded, older than all of them.
    pub log_position: u64,
}

/// What a recovery did and how long it took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecoveryReport {
    pub threads: usize,
    pub tables: usize,
    pub checkpoint_epoch: Option<u64>,
    pub checkpoint_files: usize,
    pub checkpoint_rows: u64,
    pub checkpoint_bytes: u64,
    /// Leaves of the tables' primary indexes once the checkpoint was loaded, before the log
    /// (`BTree::leaves`): the background checkpointer's first estimate of the database's size
    /// comes from these and `checkpoint_bytes`.
    pub checkpoint_leaves: u64,
    pub checkpoint_seconds: f64,
    pub log_segments: usize,
    pub log_bytes: u64,
    pub log_transactions: u64,
    /// Row images written to tables (the others were older than what the row had).
    pub log_writes_applied: u64,
    /// Patches read from the log (format 4), applied after the images.
    pub log_patches: u64,
    /// Of `replay_seconds`, the time spent applying patches.
    pub patch_seconds: f64,
    pub replay_seconds: f64,
    /// Removing deleted rows and building secondary indexes.
    pub index_seconds: f64,
    pub durable_epoch: u64,
    /// Epochs written to the log but never durable, now void: `(first, last)`.
    pub discarded_epochs: Option<(u64, u64)>,
    /// `file at offset: reason` of each torn tail found (and, when recovering, truncated).
    pub torn_tails: Vec<String>,
    pub total_seconds: f64,
}

impl RecoveryReport {
    /// Log bytes replayed per second.
    pub fn replay_bytes_per_second(&self) -> f64 {
        if self.replay_seconds > 0.0 { self.log_bytes as f64 / self.replay_seconds } else { 0.0 }
    }
}
