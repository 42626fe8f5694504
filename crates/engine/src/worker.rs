//! Workers: per-thread engine state (ARCHITECTURE.md decision 6).
//!
//! A [`Worker`] owns an epoch slot, an arena for record memory, a garbage list, a queue of
//! deferred clean-up tasks, the last TID it committed (Silo's per-worker TID generator), the
//! access and node sets of its current transaction, and scratch buffers. Everything on the
//! transaction path is preallocated here and reused, so a transaction allocates nothing in
//! steady state.
//!
//! Two ways to run a transaction:
//!
//! - [`Worker::transaction`] runs a closure and commits it, retrying aborted attempts with
//!   bounded, randomized backoff. The worker stays in one engine call for the whole closure.
//! - [`Worker::begin`], [`Worker::txn`], [`Worker::commit`] and [`Worker::rollback`] keep an
//!   interactive transaction open across calls (a SQL session). Between calls the transaction
//!   is suspended, and if it stays idle longer than `idle_transaction_epochs_max` the ticker
//!   gives up on it; its next call gets `Aborted(IdleTimeout)`.

use crate::cc::{self, Isolation, Rules, Txn};
use crate::error::{AbortReason, Error, Result};
use crate::gc::tasks::Tasks;
use crate::limits::VALUE_BYTES_MAX;
use crate::mem::arena::Arena;
use crate::state::Shared;
use crate::storage::record::Busy;
use crate::storage::{Head, Tid, TidWord};
use crate::sync::Garbage;
use crate::sync::{Epoch, Pin, StatementSnapshot};
use std::sync::Arc;

pub use crate::cc::worker::{CommitInfo, TableRef, Worker};
pub(crate) use crate::cc::worker::{Status, TxnState};

/// Attempts [`Worker::transaction`] makes before returning the abort.
pub const RETRY_BACKOFF_MICROS_MAX: u64 = 1_000;

impl Worker {
    pub(crate) fn new(shared: Arc<Shared>) -> Result<Worker> {
        let slot = shared
            .epochs
            .register()
            .ok_or(Error::TooManyWorkers { max: shared.epochs.slots_max() })?;
        let seed = (slot.index() as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut txn = TxnState::default();
        if shared.config.protocol == cc::Protocol::Mvto {
            // A statement snapshot holds at most one transaction per other slot.
            txn.statement = StatementSnapshot::with_capacity(shared.epochs.slots_max());
        }
        Ok(Worker {
            arena: shared.arena_for(slot),
            shared,
            slot,
            garbage: Garbage::new(),
            tasks: Tasks::default(),
            tables: Vec::new(),
            last_tid: Tid::ZERO,
            txn,
            random: seed | 1,
            transactions_ended: 0,
            last_commit: CommitInfo::NOTHING,
            last_conflict: None,
        })
    }

    /// The commit handle of this worker's last committed transaction (for waiting until it is
    /// durable after [`Worker::transaction`], which returns the body's value).
    pub fn last_commit(&self) -> CommitInfo {
        self.last_commit
    }

    /// Where the worker's last transaction aborted, when it was aborted by the engine (not
    /// rolled back at will) and no transaction has begun since: the table, index and key, and
    /// the commit that caused it, as far as the engine could tell (`cc/conflict.rs`).
    pub fn last_conflict(&self) -> Option<&cc::Conflict> {
        match &self.last_conflict {
            Some((ended, conflict))
                if ended + 1 == self.transactions_ended && self.txn.status == Status::Idle =>
            {
                Some(conflict)
            }
            _ => None,
        }
    }

    /// Blocks until this worker's last commit is durable (see [`CommitInfo::epoch`]).
    pub fn wait_durable(&self) -> Result<()> {
        match &self.shared.log {
            Some(log) => log.wait(self.last_commit.epoch),
            None => Ok(()),
        }
    }

    /// Whether a transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.txn.status != Status::Idle
    }

    /// Runs `body` as one transaction and commits it. An attempt aborted by concurrency control
    /// is rolled back and run again after a randomized backoff that grows with each attempt, up
    /// to `transaction_retries_max` attempts; any other error rolls back and is returned.
    pub fn transaction<T>(
        &mut self,
        isolation: Isolation,
        mut body: impl FnMut(&mut Txn<'_>) -> Result<T>,
    ) -> Result<T> {
        let attempts_max = self.shared.config.transaction_retries_max.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.attempt(isolation, &mut body) {
                Err(Error::Aborted(reason)) if attempt < attempts_max => {
                    let _ = reason;
                    self.backoff(attempt);
                }
                result => return result,
            }
        }
    }

    /// Runs `body` as one transaction, once: an abort is returned, not retried. For drivers
    /// that count and retry aborts themselves.
    pub fn transaction_once<T>(
        &mut self,
        isolation: Isolation,
        mut body: impl FnMut(&mut Txn<'_>) -> Result<T>,
    ) -> Result<T> {
        self.attempt(isolation, &mut body)
    }

    fn attempt<T>(
        &mut self,
        isolation: Isolation,
        body: &mut impl FnMut(&mut Txn<'_>) -> Result<T>,
    ) -> Result<T> {
        self.begin_internal(isolation, false)?;
        let outcome = {
            let mut txn = Txn::new(self, false);
            body(&mut txn)
        };
        match outcome {
            Ok(value) => cc::commit(self).map(|_| value),
            Err(error) => {
                cc::abort(self, error.abort_reason());
                Err(error)
            }
        }
    }

    /// Sleeps a random time below an exponentially growing cap (2^attempt microseconds, at
    /// most `RETRY_BACKOFF_MICROS_MAX`), so that transactions that conflicted do not collide
    /// again in lockstep.
    fn backoff(&mut self, attempt: u32) {
        // xorshift64: a cheap per-worker source of jitter.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        let cap = (1u64 << attempt.min(10)).min(RETRY_BACKOFF_MICROS_MAX);
        let micros = self.random % cap;
        if micros < 2 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(micros));
        }
    }

    /// Opens an interactive transaction.
    pub fn begin(&mut self, isolation: Isolation) -> Result<()> {
        self.begin_internal(isolation, true)?;
        self.shared.epochs.suspend(self.slot, self.txn.pinned_at);
        Ok(())
    }

    pub(crate) fn begin_internal(&mut self, isolation: Isolation, interactive: bool) -> Result<()> {
        if self.txn.status != Status::Idle {
            return Err(Error::TransactionOpen);
        }
        // The previous transaction's end (`cc::commit::finish`) reset the state.
        debug_assert!(self.txn.access.entries.is_empty() && self.txn.nodes.entries.is_empty());
        self.txn.isolation = isolation;
        self.txn.interactive = interactive;
        self.txn.pinned_at = self.shared.epochs.pin(self.slot);
        let protocol = self.shared.config.protocol;
        self.txn.rules = self.shared.rules[isolation.index()];
        self.txn.nodes.track_changes = self.txn.rules.tracks_leaf_changes();
        if isolation == Isolation::Snapshot {
            self.txn.snapshot = Some(self.shared.epochs.enter_snapshot(self.slot));
        } else if self.txn.rules.commit_at_begin {
            // MVTO: the timestamp is the commit TID, so the commit is announced now, and
            // published to statement snapshots until it installs (`cc/mvto.rs`).
            let epochs = &self.shared.epochs;
            epochs.enter_commit(self.slot, self.txn.pinned_at);
            epochs.enter_reader(self.slot);
            match epochs.enter_ordered(self.slot, epochs.global()) {
                Some(ts) => self.txn.begin = Some(ts),
                None => {
                    epochs.leave_commit(self.slot);
                    epochs.leave_reader(self.slot);
                    epochs.unpin(self.slot);
                    self.txn.reset();
                    return Err(Error::Aborted(AbortReason::SequenceExhausted));
                }
            }
        } else if self.txn.rules.statement_snapshots {
            // MVTO at READ COMMITTED: the first statement's snapshot (`cc/mvto.rs`, READ).
            self.shared.epochs.take_statement_snapshot(self.slot, &mut self.txn.statement);
            self.txn.begin = Some(self.txn.statement.at());
        } else if protocol.multiversion() {
            self.txn.begin = Some(Tid::from_u64(self.shared.epochs.enter_reader(self.slot)));
        }
        self.txn.status = Status::Active;
        Ok(())
    }

    /// Opens a snapshot transaction reading at `at`, which the caller holds
    /// (`EpochManager::hold_snapshot`). For checkpoints.
    pub(crate) fn begin_snapshot_at(&mut self, at: Epoch) -> Result<()> {
        if self.txn.status != Status::Idle {
            return Err(Error::TransactionOpen);
        }
        self.txn.isolation = Isolation::Snapshot;
        self.txn.rules = Rules::default();
        self.txn.nodes.track_changes = false;
        self.txn.interactive = false;
        self.txn.pinned_at = self.shared.epochs.pin(self.slot);
        self.shared.epochs.enter_snapshot_at(self.slot, at);
        self.txn.snapshot = Some(at);
        self.txn.status = Status::Active;
        Ok(())
    }

    /// A handle for running operations in the open interactive transaction.
    pub fn txn(&mut self) -> Result<Txn<'_>> {
        self.resume()?;
        Ok(Txn::new(self, true))
    }

    /// Commits the open interactive transaction.
    pub fn commit(&mut self) -> Result<CommitInfo> {
        self.resume()?;
        cc::commit(self)
    }

    /// Rolls the open interactive transaction back.
    pub fn rollback(&mut self) -> Result<()> {
        match self.resume() {
            Ok(()) => {
                cc::abort(self, None);
                Ok(())
            }
            // Already rolled back by the resume.
            Err(Error::Aborted(AbortReason::IdleTimeout)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Runs `body` pinned, with this worker's garbage list: direct access to indexes and
    /// records outside any transaction (benchmarks of the bare index, maintenance). Fails if a
    /// transaction is open.
    pub fn pinned<T>(&mut self, body: impl FnOnce(&Pin<'_>, &mut Garbage) -> T) -> Result<T> {
        self.pinned_with_arena(|pin, _, garbage| body(pin, garbage))
    }

    /// [`Worker::pinned`], with the worker's arena for blocks `body` allocates.
    pub(crate) fn pinned_with_arena<T>(
        &mut self,
        body: impl FnOnce(&Pin<'_>, &mut Arena, &mut Garbage) -> T,
    ) -> Result<T> {
        if self.txn.status != Status::Idle {
            return Err(Error::TransactionOpen);
        }
        self.shared.epochs.pin(self.slot);
        // SAFETY: the slot was pinned above and stays pinned until after `body` returns.
        let pin = unsafe { Pin::assume_pinned() };
        let result = body(&pin, &mut self.arena, &mut self.garbage);
        self.garbage.seal(&self.shared.epochs);
        self.shared.epochs.unpin(self.slot);
        self.garbage.collect(&self.shared.epochs, &mut self.arena);
        Ok(result)
    }

    /// Runs `body` with non-transactional access to records (Silo's "key-value" baseline):
    /// each read is a consistent copy of one record and each update replaces one record
    /// atomically, with no read set, no validation and no isolation between operations. The
    /// worker is pinned once for the whole body. Fails if a transaction is open.
    pub fn raw<T>(&mut self, body: impl FnOnce(&mut Raw<'_>) -> T) -> Result<T> {
        if self.txn.status != Status::Idle {
            return Err(Error::TransactionOpen);
        }
        self.shared.epochs.pin(self.slot);
        let result = body(&mut Raw { worker: self });
        self.garbage.seal(&self.shared.epochs);
        self.shared.epochs.unpin(self.slot);
        self.garbage.collect(&self.shared.epochs, &mut self.arena);
        Ok(result)
    }

    /// Statistics of this worker's arena and garbage.
    pub fn memory_stats(&self) -> WorkerMemory {
        WorkerMemory {
            garbage_pending: self.garbage.len(),
            garbage_freed: self.garbage.freed_total(),
            tasks_pending: self.tasks.len(),
            system_allocations: self.arena.stats().system_allocations,
            shared_space: self.arena.is_shared(),
        }
    }
}

/// Non-transactional record access; see [`Worker::raw`].
#[derive(Debug)]
pub struct Raw<'w> {
    worker: &'w mut Worker,
}

impl Raw<'_> {
    /// A consistent copy of the row with primary key `key`.
    pub fn get(&mut self, table: &TableRef, key: &[u8]) -> Option<&[u8]> {
        // SAFETY: `Worker::raw` pinned the slot for the lifetime of this handle.
        let pin = unsafe { Pin::assume_pinned() };
        let head = table.primary.get(key, &pin).value? as *mut Head;
        let buffer = &mut self.worker.txn.read_buffer;
        // SAFETY: reached through the index while pinned.
        let head = unsafe { &*head };
        loop {
            match head.read(buffer) {
                Ok(word) if word.is_absent() => return None,
                Ok(_) => return Some(buffer),
                // No transaction to abort: wait for the writer.
                Err(Busy) => std::thread::yield_now(),
            }
        }
    }

    /// Replaces the row with primary key `key`; returns whether there was one. Only for tables
    /// without secondary indexes, which raw updates do not maintain.
    pub fn update(&mut self, table: &TableRef, key: &[u8], value: &[u8]) -> Result<bool> {
        crate::cc::bytes_writable(table)?;
        if table.has_secondaries() {
            return Err(Error::InvalidConfig(format!(
                "raw updates do not maintain secondary indexes; table \"{}\" has some",
                table.name()
            )));
        }
        if value.len() > VALUE_BYTES_MAX {
            return Err(Error::ValueTooLong { len: value.len(), max: VALUE_BYTES_MAX });
        }
        // SAFETY: `Worker::raw` pinned the slot for the lifetime of this handle.
        let pin = unsafe { Pin::assume_pinned() };
        let Some(head) = table.primary.get(key, &pin).value else { return Ok(false) };
        // SAFETY: reached through the index while pinned.
        let head = unsafe { &*(head as *mut Head) };
        let word = loop {
            match head.lock() {
                Ok(word) => break word,
                Err(Busy) => std::thread::yield_now(),
            }
        };
        if word.is_absent() || !word.is_latest() {
            head.unlock_to(word);
            return Ok(false);
        }
        let worker = &mut *self.worker;
        let epochs = &worker.shared.epochs;
        let logging = worker.shared.log.is_some();
        if let Some(log) = &worker.shared.log {
            if let Err(error) = log.check() {
                head.unlock_to(word);
                return Err(error);
            }
            // Announced like a commit, so the stable epoch covers the log record. Without a
            // log nothing waits for the stable epoch, and the raw path stays fence-free.
            epochs.enter_commit(worker.slot, epochs.global());
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        }
        let tid = if epochs.is_multiversion() {
            epochs.next_timestamp(epochs.global())
        } else {
            Tid::commit_after(word.tid().max(worker.last_tid), epochs.global())
        };
        let Some(tid) = tid else {
            head.unlock_to(word);
            if logging {
                epochs.leave_commit(worker.slot);
            }
            return Err(Error::Aborted(AbortReason::SequenceExhausted));
        };
        worker.last_tid = tid;
        let gc = worker.shared.config.gc;
        let retention = crate::sync::Retention { prune: gc.writers_prune(), ..epochs.retention() };
        let new_word = TidWord::new(tid, TidWord::LATEST);
        worker.txn.dropped.reset(false);
        let kept = head.install(
            Some(value),
            new_word,
            retention,
            &mut worker.arena,
            &mut worker.garbage,
            &mut worker.txn.dropped,
        );
        head.unlock_to(new_word);
        if kept && gc.marks_dirty() {
            table.mark_dirty();
        }
        if let Some(log) = &worker.shared.log {
            log.append(worker.slot.index(), |out| {
                crate::wal::format::encode_txn_head(out, tid.as_u64(), 1);
                crate::wal::format::encode_write(out, table.id().0, key, Some(value));
            });
            epochs.leave_commit(worker.slot);
        }
        worker.last_commit = CommitInfo { tid, epoch: tid.epoch() };
        Ok(true)
    }
}

/// Memory-related counters of one worker.
#[derive(Debug, Clone, Copy)]
pub struct WorkerMemory {
    pub garbage_pending: usize,
    pub garbage_freed: u64,
    pub tasks_pending: usize,
    /// Batches taken from the shared chunks by the worker's own arena (0 when it draws from a
    /// shared memory space).
    pub system_allocations: u64,
    /// Whether the worker allocates from a memory space it shares (`Config::memory_spaces`).
    pub shared_space: bool,
}
