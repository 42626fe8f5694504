//! Engram's transaction engine: an in-memory, multi-core OLTP kernel after Silo (SOSP 2013)
//! and openGauss MOT (VLDB 2020). No SQL, no sockets, no async: those live in other crates.
//!
//! THE MAP
//!
//! Top-down, each module using only those below it (docs/architecture.md, "Layers"):
//!
//! | module        | what lives there                                                      |
//! |---------------|-----------------------------------------------------------------------|
//! | `db`          | [`Database`]: open, recover, catalog DDL, ticker, background threads  |
//! | `checkpoint`, `recovery`, `vacuum` | background work that runs workers of its own     |
//! | `worker`      | [`Worker`]'s API: running, retrying, committing transactions          |
//! | `cc`          | [`Txn`] operations, the commit skeleton and the protocols; the worker |
//! |               | state they run on (`cc::worker`)                                      |
//! | `state`, `stats` | what all workers share; commit, abort and conflict counters        |
//! | `protocol`, `config` | protocols, isolation levels and their rules; [`Config`]        |
//! | `wal`         | data directory, log formats, the epoch group-commit log               |
//! | `gc`          | GC modes and deferred unlinking of deleted records                    |
//! | `storage`     | record heads and version chains, tables                               |
//! | `index`       | the OLC B+tree and memcomparable key encoding                         |
//! | `sync`        | latches, epochs, TIDs, epoch-based reclamation, the std/shuttle shim  |
//! | `limits`, `mem`, `error` | every limit, named; huge-page chunks and arenas; errors    |
//!
//! THE LIFE OF A TRANSACTION (the functions named are the real ones)
//!
//! 1. [`Worker::transaction`] (or [`Worker::begin`]) pins the worker's epoch slot
//!    (`EpochManager::pin`): nothing the transaction can reach is freed until it ends.
//! 2. Reads go through the primary index (`BTree::get`) to a record head and copy its value
//!    with Silo's TID-word protocol (`Head::read`), recording the word in the access set;
//!    failed lookups and scans record leaf versions in the node set.
//! 3. Writes are buffered in the access set; inserts put a fresh, claimed head into the
//!    indexes at once (`Txn::insert`).
//! 4. `cc::commit` locks the write set in address order, adds secondary entries of changed
//!    keys, fences and reads the global epoch, validates reads and leaves, picks a TID above
//!    everything observed (`Tid::commit_after`), installs each write (`Head::install`, which
//!    keeps the old version if a snapshot may need it) and releases each lock with the new word.
//!    With a data directory it then appends the new images to the worker's log buffer
//!    (`Log::append`) before leaving the commit; the commit is durable once a logger has
//!    fsynced its epoch (`wal::log`), which `Worker::wait_durable` waits for.
//! 5. The transaction ends (`cc::commit::finish`): ready unlink tasks of earlier deletes run,
//!    unlinked memory is tagged with the epoch (`Garbage::seal`), the slot is unpinned, and
//!    memory whose tag is below the reclaim bound goes back to the worker's arena.
//!
//! An aborted attempt (`cc::abort`) removes its secondary entries, releases its locks and gives
//! its claimed heads back; the closure API retries it with backoff.
//!
//! ```
//! use engram_engine::{Config, Database, Isolation, KeyBuilder, TableSpec};
//!
//! let db = Database::open(Config::default())?;
//! let accounts = db.create_table(TableSpec::new("accounts"))?;
//! let mut worker = db.worker()?; // one per thread
//!
//! worker.transaction(Isolation::Serializable, |txn| {
//!     let key = KeyBuilder::new().u64(42).finish();
//!     let balance =
//!         txn.get(&accounts, &key)?.map_or(0, |v| i64::from_le_bytes(v.try_into().unwrap()));
//!     txn.put(&accounts, &key, &(balance + 10).to_le_bytes())
//! })?; // aborted attempts are retried with backoff
//! # Ok::<(), engram_engine::Error>(())
//! ```

#![warn(missing_debug_implementations)]

/// Records a debug event (feature `ssn-trace`); nothing otherwise.
macro_rules! trace_ev {
    ($ev:expr) => {
        #[cfg(feature = "ssn-trace")]
        $crate::trace::record($ev);
    };
}

pub mod cc;
pub mod checkpoint;
pub mod config;
pub mod db;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod gc;
pub mod index;
pub mod limits;
pub mod mem;
pub mod protocol;
pub mod recovery;
pub mod state;
pub mod stats;
pub mod storage;
pub mod sync;
#[cfg(feature = "ssn-trace")]
pub mod trace;
pub mod vacuum;
pub mod wal;
pub mod worker;

pub use cc::{
    Conflict, ConflictSite, ConflictStats, HotKey, Isolation, Protocol, Recompute, RowKeys,
    Savepoint, StatementCheck, Txn,
};
pub use config::Config;
pub use db::{Database, Stats};
pub use error::{AbortReason, Error, Result};
pub use gc::Gc;
pub use gc::VacuumStats;
pub use index::Direction;
pub use index::key::KeyBuilder;
pub use storage::{
    IndexPointers, IndexSpec, NonInline, Sharing, Table, TableId, TableSpec, Tid, VersionStorage,
};
pub use sync::Epoch;
pub use wal::{
    CheckpointReport, Durability, DurabilityWatcher, DurableFuture, IndexDefinition, IndexKeys,
    RecoveryReport,
};
pub use worker::{CommitInfo, Raw, TableRef, Worker, WorkerMemory};
