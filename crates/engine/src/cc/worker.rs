//! The state a worker's transactions run on: the [`Worker`] itself (its epoch slot, arena,
//! garbage list, deferred tasks, table cache), the current transaction's state
//! ([`TxnState`]: status, isolation, access and node sets, buffers reused from one
//! transaction to the next), and the calls every protocol makes on it. `crate::worker` adds
//! the public API: running, retrying, committing and rolling back transactions.

use crate::cc::{self, AccessSet, Isolation, NodeSet, Rules};
use crate::error::{AbortReason, Error, Result};
use crate::gc::tasks::Tasks;
use crate::index::ScanBuffer;
use crate::mem::arena::Arena;
use crate::state::Shared;
pub use crate::storage::TableRef;
use crate::storage::record::Dropped;
use crate::storage::{Table, TableId, Tid};
use crate::sync::{Epoch, Garbage, SlotId, StatementSnapshot};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Idle,
    Active,
    /// Aborted part-way: every call fails with this reason until the transaction ends.
    Poisoned(AbortReason),
}

/// Information about a committed transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    /// The commit TID (zero for read-only transactions, which install nothing).
    pub tid: Tid,
    /// The epoch that must be durable before the commit is acknowledged: the TID's epoch for
    /// a writer, the newest epoch among the rows it read for a reader (so that a reader never
    /// reports data a crash could still take back; `Epoch::NEVER` when nothing is logged), the
    /// snapshot epoch for a snapshot.
    /// Wait with [`crate::Database::wait_durable`] or a [`crate::DurabilityWatcher`].
    pub epoch: Epoch,
}

impl CommitInfo {
    pub const NOTHING: CommitInfo = CommitInfo { tid: Tid::ZERO, epoch: Epoch::NEVER };
}

/// The last key a read found, and its head: a read-modify-write of the same key skips the
/// second index search.
#[derive(Debug)]
pub(crate) struct LastLookup {
    table: TableId,
    key: Vec<u8>,
    head: *mut crate::storage::Head,
}

impl Default for LastLookup {
    fn default() -> Self {
        LastLookup { table: TableId(u32::MAX), key: Vec::new(), head: std::ptr::null_mut() }
    }
}

impl LastLookup {
    #[inline]
    pub fn remember(&mut self, table: TableId, key: &[u8], head: *mut crate::storage::Head) {
        self.table = table;
        self.key.clear();
        self.key.extend_from_slice(key);
        self.head = head;
    }

    #[inline]
    pub fn recall(&self, table: TableId, key: &[u8]) -> Option<*mut crate::storage::Head> {
        (!self.head.is_null() && self.table == table && self.key == key).then_some(self.head)
    }

    pub fn forget(&mut self) {
        self.head = std::ptr::null_mut();
    }
}

/// The current transaction's state, kept in the worker so its buffers are reused.
#[derive(Debug)]
pub(crate) struct TxnState {
    pub status: Status,
    pub isolation: Isolation,
    pub pinned_at: Epoch,
    pub snapshot: Option<Epoch>,
    /// The read timestamp under a multi-version protocol (`cc::mv`); `None` under Silo and
    /// for snapshot transactions.
    pub begin: Option<Tid>,
    /// Under `Rules::statement_snapshots` (MVTO at READ COMMITTED), the current statement's
    /// snapshot, whose timestamp is `begin`; empty otherwise.
    pub statement: StatementSnapshot,
    /// What the protocol re-checks at this transaction's level.
    pub rules: Rules,
    pub interactive: bool,
    /// Some update touches a table with secondary indexes (commit step 2 has work).
    pub updates_indexed_rows: bool,
    /// Some insert of this transaction was deleted again (its head must be given up).
    pub undid_inserts: bool,
    pub access: AccessSet,
    pub nodes: NodeSet,
    /// Secondary entries this transaction inserted (removed again if it aborts).
    pub inserted_entries: Vec<cc::InsertedEntry>,
    /// Own updates whose new secondary entry falls in a running index scan:
    /// (entry key start and length in `entry_keys`, access position).
    pub candidates: Vec<(u32, u32, u32)>,
    /// Secondary entry keys compared when an install drops versions.
    pub entry_scratch: cc::EntryScratch,
    /// Write-set positions in lock order, built at commit.
    pub write_order: Vec<u32>,
    /// Per write of `write_order`, filled at install when the log takes patches: `Some` for
    /// an update logged as a patch (its edits' start and count in `patch_edits`, and the
    /// patch's body length, `wal::format::diff_rows`), `None` for a whole row.
    pub patches: Vec<Option<(u32, u32, u32)>>,
    pub patch_edits: Vec<(u32, u32)>,
    /// Access-set positions in latch order (`cc/ssn.rs`), built at commit.
    pub latch_order: Vec<u32>,
    /// Versions dropped by installs, examined for secondary entries.
    pub dropped: Dropped,
    /// What cooperative cleaning (`cc::cooperative`) reuses, and the records it noted.
    pub prune: crate::cc::cooperative::PruneBuffers,
    pub noted: crate::cc::cooperative::Noted,
    pub last_lookup: LastLookup,
    /// Rows `update_range` will write: (head, start, key length, row length) in `pending_bytes`.
    pub pending_updates: Vec<(*mut crate::storage::Head, u32, u32, u32)>,
    pub pending_bytes: Vec<u8>,
    pub read_buffer: Vec<u8>,
    pub scratch: Vec<u8>,
    pub scratch_key: Vec<u8>,
    pub scratch_entry: Vec<u8>,
    pub scratch_low: Vec<u8>,
    pub scratch_high: Vec<u8>,
    pub entry_keys: Vec<u8>,
    pub scan_buffer: ScanBuffer,
    /// READ COMMITTED updates commit may apply again (`Txn::update_recomputable`).
    pub recomputes: cc::Recomputes,
    /// The access-set position of the last row written.
    pub last_written: u32,
    /// An `update_recomputable` is running.
    pub recomputing: bool,
    /// References to non-inline values that this transaction's patches keep
    /// (`storage::shared`): handed to versions at install (the entry becomes 0), the rest
    /// released when the transaction ends.
    pub retained: Vec<u64>,
    /// The record an abort happened on, left for the diagnostics (`cc/conflict.rs`), and its
    /// key (empty when not at hand).
    pub site: Option<cc::conflict::Site>,
    pub site_key: Vec<u8>,
    /// Scans are checked at commit at every level (`Txn::checked`).
    pub checking: bool,
}

impl Default for TxnState {
    fn default() -> Self {
        TxnState {
            status: Status::Idle,
            isolation: Isolation::Serializable,
            pinned_at: Epoch::NEVER,
            snapshot: None,
            begin: None,
            statement: StatementSnapshot::default(),
            rules: Rules::default(),
            interactive: false,
            updates_indexed_rows: false,
            undid_inserts: false,
            access: AccessSet::default(),
            nodes: NodeSet::default(),
            inserted_entries: Vec::new(),
            candidates: Vec::new(),
            entry_scratch: cc::EntryScratch::default(),
            write_order: Vec::new(),
            patches: Vec::new(),
            patch_edits: Vec::new(),
            latch_order: Vec::new(),
            dropped: Dropped::default(),
            prune: Default::default(),
            noted: Default::default(),
            last_lookup: LastLookup::default(),
            pending_updates: Vec::new(),
            pending_bytes: Vec::new(),
            read_buffer: Vec::new(),
            scratch: Vec::new(),
            scratch_key: Vec::new(),
            scratch_entry: Vec::new(),
            scratch_low: Vec::new(),
            scratch_high: Vec::new(),
            entry_keys: Vec::new(),
            scan_buffer: ScanBuffer::new(),
            recomputes: cc::Recomputes::default(),
            last_written: 0,
            recomputing: false,
            retained: Vec::new(),
            site: None,
            site_key: Vec::new(),
            checking: false,
        }
    }
}

impl TxnState {
    pub fn reset(&mut self) {
        self.status = Status::Idle;
        self.snapshot = None;
        self.begin = None;
        self.statement.clear();
        self.interactive = false;
        self.updates_indexed_rows = false;
        self.undid_inserts = false;
        self.access.clear();
        self.nodes.clear();
        self.last_lookup.forget();
        self.inserted_entries.clear();
        self.write_order.clear();
        self.latch_order.clear();
        self.dropped.reset(false);
        self.noted.clear();
        self.recomputes.0.clear();
        self.site = None;
        self.checking = false;
    }
}

/// Per-thread engine state. Not `Sync`: one thread uses a worker at a time (it may be moved
/// between threads while no transaction call is running).
#[derive(Debug)]
pub struct Worker {
    pub(crate) shared: Arc<Shared>,
    pub(crate) slot: SlotId,
    pub(crate) arena: Arena,
    pub(crate) garbage: Garbage,
    pub(crate) tasks: Tasks,
    pub(crate) tables: Vec<Option<TableRef>>,
    pub(crate) last_tid: Tid,
    pub(crate) txn: TxnState,
    pub(crate) random: u64,
    pub(crate) transactions_ended: u64,
    pub(crate) last_commit: CommitInfo,
    /// Where the last transaction that aborted for a reason did (`cc/conflict.rs`), with the
    /// number of transactions that had ended before it.
    pub(crate) last_conflict: Option<(u64, cc::Conflict)>,
}

// SAFETY: the raw pointers in the worker's sets point into shared, epoch-protected memory and
// are only used by the thread currently holding `&mut Worker`.
unsafe impl Send for Worker {}

impl Worker {
    /// The worker's slot number (stable while it lives).
    pub fn id(&self) -> usize {
        self.slot.index()
    }

    /// Re-enters the suspended interactive transaction.
    #[inline]
    pub(crate) fn resume(&mut self) -> Result<()> {
        match self.txn.status {
            Status::Idle => return Err(Error::NoTransaction),
            _ if !self.txn.interactive => return Ok(()),
            _ => {}
        }
        if self.shared.epochs.resume(self.slot, self.txn.pinned_at).is_err() {
            self.abort_kicked();
            return Err(Error::Aborted(AbortReason::IdleTimeout));
        }
        Ok(())
    }

    /// Rolls back the transaction the ticker gave up on: what it read may have been freed, so
    /// it pins afresh for the clean-up, which touches only heads the transaction owns. Out of
    /// line, so that `resume` stays small enough to inline into every call.
    #[cold]
    #[inline(never)]
    fn abort_kicked(&mut self) {
        self.txn.pinned_at = self.shared.epochs.repin_kicked(self.slot);
        self.txn.interactive = false;
        cc::abort_kicked(self);
    }

    pub(crate) fn suspend(&mut self) {
        if self.txn.interactive && self.txn.status != Status::Idle {
            self.shared.epochs.suspend(self.slot, self.txn.pinned_at);
        }
    }

    /// The table's id, caching the table so that the transaction can reach it by id.
    #[inline]
    pub(crate) fn register_table(&mut self, table: &TableRef) -> TableId {
        let id = table.id();
        let index = id.index();
        if self.tables.len() <= index {
            self.tables.resize(index + 1, None);
        }
        if self.tables[index].is_none() {
            self.tables[index] = Some(Arc::clone(table));
        }
        id
    }

    #[inline]
    pub(crate) fn table(&self, id: TableId) -> &Table {
        self.tables[id.index()].as_deref().expect("tables in a transaction are registered")
    }

    /// A table the current transaction touched, detached from the worker's borrow.
    ///
    /// The worker's table cache holds an `Arc` to every table any of its transactions touched,
    /// and entries are never removed while the worker lives, so the table outlives any use
    /// within a call on this worker.
    pub(crate) fn table_ptr(&self, id: TableId) -> *const Table {
        self.table(id)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.txn.status != Status::Idle {
            if self.txn.interactive
                && self.shared.epochs.resume(self.slot, self.txn.pinned_at).is_err()
            {
                self.abort_kicked();
            } else {
                cc::abort(self, None);
            }
        }
        self.shared.adopt_from(&mut self.garbage, &mut self.tasks);
        self.shared.epochs.unregister(self.slot);
    }
}
