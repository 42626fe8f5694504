//! Row locks: `SELECT ... FOR UPDATE` and `FOR SHARE` (with `NOWAIT` and `SKIP LOCKED`), and
//! the locks UPDATE and DELETE take on the rows they change in tables where such locks are
//! used, as PostgreSQL's row locks behave (docs/isolation.md, "Row locks").
//!
//! The engine's protocols never wait (Silo validates at commit), so these locks live beside
//! them, here: a table of (table, primary key) to the sessions holding the row and in which
//! mode, sharded by key hash, each shard with a condition variable its releases notify. A lock
//! is held until the transaction ends. A session that must wait registers whom it waits for in
//! the wait-for graph and looks for a cycle through itself there; finding one, it gives up with
//! 40P01 (PostgreSQL's deadlock_detected), so the others go on. Waits are also bounded by the
//! statement's timeout and cancel flag (57014) and by `lock_timeout` (55P03).
//!
//! A table is marked as using row locks the first time a locking read runs on it, and from then
//! on every UPDATE and DELETE of it takes the row's lock too (FOR NO KEY UPDATE, or FOR UPDATE
//! when the key changes or the row goes). Tables no locking read ever touched (pgbench's, most
//! OLTP tables) pay nothing. A writer that read a row before its table was marked holds no
//! lock; a locking reader then does not wait for it, and the engine's commit-time check of the
//! reader's FOR UPDATE read turns the race into 40001, never a lost update.

pub use crate::ast::{RowLockMode, WaitPolicy};
use crate::error::{SqlError, SqlResult};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What [`RowLocks::try_lock`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryLock {
    /// Held now (it may have been held already).
    Granted,
    /// Another transaction holds it in a conflicting mode.
    Busy,
}

const SHARDS: usize = 64;
/// How long a waiter sleeps before it looks at its cancel flag and deadline again.
const WAIT_SLICE: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
struct Shard {
    rows: Mutex<HashMap<RowKey, Vec<(u64, RowLockMode)>>>,
    released: Condvar,
}

/// The row-lock table of a database.
#[derive(Debug)]
pub struct RowLocks {
    shards: Box<[Shard]>,
    /// Tables where locking reads ran, one bit per table number modulo 256 (a shared bit only
    /// makes writers of another table lock rows they need not).
    used: [AtomicU64; 4],
    /// Who waits for whom: waiter to the sessions holding the row it waits for.
    graph: Mutex<HashMap<u64, Vec<u64>>>,
    waiting: AtomicUsize,
    hasher: std::collections::hash_map::RandomState,
}

impl Default for RowLocks {
    fn default() -> Self {
        RowLocks {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            used: Default::default(),
            graph: Mutex::new(HashMap::new()),
            waiting: AtomicUsize::new(0),
            hasher: Default::default(),
        }
    }
}

/// The limits a wait runs under.
#[derive(Debug)]
pub struct WaitLimits<'a> {
    pub interrupt: &'a crate::interrupt::Interrupt,
    /// `lock_timeout`: how long one wait may last (`None`: no limit).
    pub lock_timeout: Option<Duration>,
}

impl RowLocks {
    fn shard(&self, table: u64, key: &[u8]) -> &Shard {
        let mut hasher = self.hasher.build_hasher();
        table.hash(&mut hasher);
        key.hash(&mut hasher);
        &self.shards[hasher.finish() as usize % SHARDS]
    }

    fn bit(table: u64) -> (usize, u64) {
        let bit = (table % 256) as usize;
        (bit / 64, 1 << (bit % 64))
    }

    /// Marks `table` as one whose writers lock the rows they change.
    pub fn mark_used(&self, table: u64) {
        let (word, bit) = Self::bit(table);
        self.used[word].fetch_or(bit, Ordering::SeqCst);
    }

    /// Whether writers of `table` lock the rows they change.
    #[inline]
    pub fn used(&self, table: u64) -> bool {
        let (word, bit) = Self::bit(table);
        self.used[word].load(Ordering::SeqCst) & bit != 0
    }

    /// Takes the lock if no other session holds the row in a conflicting mode. `held` gets the
    /// row when the session did not hold it before.
    pub fn try_lock(
        &self,
        session: u64,
        table: u64,
        key: &[u8],
        mode: RowLockMode,
        held: &mut Vec<RowKey>,
    ) -> TryLock {
        let shard = self.shard(table, key);
        let mut rows = shard.rows.lock();
        Self::grant(&mut rows, session, table, key, mode, held)
    }

    fn grant(
        rows: &mut HashMap<RowKey, Vec<(u64, RowLockMode)>>,
        session: u64,
        table: u64,
        key: &[u8],
        mode: RowLockMode,
        held: &mut Vec<RowKey>,
    ) -> TryLock {
        let row = (table, Box::<[u8]>::from(key));
        let holders = rows.entry(row).or_default();
        if holders.iter().any(|&(other, their)| other != session && their.conflicts(mode)) {
            return TryLock::Busy;
        }
        match holders.iter_mut().find(|(other, _)| *other == session) {
            Some((_, mine)) => *mine = (*mine).max(mode),
            None => {
                holders.push((session, mode));
                held.push((table, key.into()));
            }
        }
        TryLock::Granted
    }

    /// Takes the lock, waiting while other sessions hold the row in a conflicting mode.
    /// `relation` names the table in errors.
    #[allow(clippy::too_many_arguments)]
    pub fn lock(
        &self,
        session: u64,
        table: u64,
        key: &[u8],
        mode: RowLockMode,
        held: &mut Vec<RowKey>,
        limits: &WaitLimits<'_>,
        relation: &str,
    ) -> SqlResult<()> {
        let shard = self.shard(table, key);
        let mut rows = shard.rows.lock();
        let started = Instant::now();
        let mut registered = false;
        let result = loop {
            if Self::grant(&mut rows, session, table, key, mode, held) == TryLock::Granted {
                break Ok(());
            }
            let holders: Vec<u64> = rows
                .get(&(table, Box::<[u8]>::from(key)))
                .map(|holders| {
                    holders
                        .iter()
                        .filter(|&&(other, their)| other != session && their.conflicts(mode))
                        .map(|&(other, _)| other)
                        .collect()
                })
                .unwrap_or_default();
            if !registered {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                registered = true;
            }
            if let Some(cycle) = self.wait_for(session, holders) {
                break Err(SqlError::new("40P01", "deadlock detected").with_detail(format!(
                    "Session {session} waits for {} on a row of relation \"{relation}\"; \
                     blocked by session {}, which waits for it through {} session(s).",
                    mode.sql(),
                    cycle[0],
                    cycle.len()
                )));
            }
            if let Err(error) = limits.interrupt.check() {
                break Err(error);
            }
            let mut slice = WAIT_SLICE;
            if let Some(limit) = limits.lock_timeout {
                let left = limit.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break Err(SqlError::new(
                        "55P03",
                        format!(
                            "canceling statement due to lock timeout on a row of relation \"{relation}\""
                        ),
                    ));
                }
                slice = slice.min(left);
            }
            shard.released.wait_for(&mut rows, slice);
        };
        drop(rows);
        if registered {
            self.graph.lock().remove(&session);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        result
    }

    /// Records that `session` waits for `holders`, and returns the cycle through it in the
    /// wait-for graph if there is one (the sessions after it, in order).
    fn wait_for(&self, session: u64, holders: Vec<u64>) -> Option<Vec<u64>> {
        let mut graph = self.graph.lock();
        graph.insert(session, holders);
        // Depth-first from the session's holders, looking for the session.
        let mut stack: Vec<(u64, Vec<u64>)> =
            graph[&session].iter().map(|&next| (next, vec![next])).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some((at, path)) = stack.pop() {
            if at == session {
                // The session gives up: its edge goes now, under the graph's lock, so that
                // another waiter of the cycle checking next finds no cycle through it, and
                // one transaction of a deadlock is chosen, not two.
                graph.remove(&session);
                return Some(path);
            }
            if !seen.insert(at) {
                continue;
            }
            if let Some(next) = graph.get(&at) {
                for &next in next {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push((next, longer));
                }
            }
        }
        None
    }

    /// Releases every row lock in `held` (the transaction ended) and wakes their waiters.
    pub fn release_all(&self, session: u64, held: &mut Vec<RowKey>) {
        for (table, key) in held.drain(..) {
            let shard = self.shard(table, &key);
            let mut rows = shard.rows.lock();
            let row = (table, key);
            if let Some(holders) = rows.get_mut(&row) {
                holders.retain(|&(other, _)| other != session);
                if holders.is_empty() {
                    rows.remove(&row);
                }
            }
            drop(rows);
            shard.released.notify_all();
        }
        if self.waiting.load(Ordering::SeqCst) > 0 {
            // Waiters that still list this session would see a cycle that is gone.
            for holders in self.graph.lock().values_mut() {
                holders.retain(|&other| other != session);
            }
        }
    }

    /// How many rows are locked (tests, views).
    pub fn locked_rows(&self) -> usize {
        self.shards.iter().map(|shard| shard.rows.lock().len()).sum()
    }
}

/// A locked row: (table number, primary key).
pub type RowKey = (u64, Box<[u8]>);

/// A row lock a scan met held: (table number, primary key, mode).
pub type Deferred = (u64, Box<[u8]>, RowLockMode);

/// How a statement takes row locks: its session's, held until the transaction ends.
#[derive(Debug)]
pub struct Locker<'a> {
    pub locks: &'a RowLocks,
    pub session: u64,
    pub held: &'a std::cell::RefCell<Vec<RowKey>>,
    pub lock_timeout: Option<Duration>,
    /// The statement's timeout and cancel flag, which bound a wait.
    pub interrupt: &'a crate::interrupt::Interrupt,
    /// Runs a wait where blocking the thread is allowed (a server's runtime thread hands its
    /// other work away first: `Session::set_blocking`).
    pub block: fn(&mut dyn FnMut()),
    /// A held row a locking scan met: the statement waits for it once the scan is over, then
    /// runs again (nothing can wait inside an engine scan).
    pub deferred: std::cell::RefCell<Option<Deferred>>,
    /// The running query's lock clause (`FOR UPDATE NOWAIT`, ...).
    pub query_lock: std::cell::Cell<(RowLockMode, WaitPolicy)>,
    /// Engine scans running (a join's inner lookups run inside its outer scan).
    pub scanning: std::cell::Cell<u32>,
}

/// The code of the internal error that makes a statement run again after a lock wait; it never
/// reaches a client.
pub const RESTART: &str = "XXRST";

pub fn restart() -> SqlError {
    SqlError::new(RESTART, "the statement runs again after waiting for a row lock")
}

/// 55P03 for a locking read with NOWAIT that met a held row.
pub fn not_available(relation: &str) -> SqlError {
    SqlError::new("55P03", format!("could not obtain lock on row in relation \"{relation}\""))
}

/// The number row locks know `table` by.
#[inline]
pub fn table_number(table: &crate::catalog::TableInfo) -> u64 {
    u64::from(table.engine.id().0)
}

impl Locker<'_> {
    /// A locking read of the row `key` of `table` (the query's lock clause): marks the table,
    /// takes the row's lock, and returns whether to go on with the row (`false`: SKIP LOCKED
    /// leaves it out). Inside an engine scan (`txn` is `None` there, or a scan is running)
    /// nothing may wait: a read that must is deferred, and the statement waits and runs again
    /// (`RESTART`).
    pub(crate) fn lock_read(
        &self,
        txn: Option<&mut engram_engine::Txn<'_>>,
        table: &crate::catalog::TableInfo,
        key: &[u8],
    ) -> SqlResult<bool> {
        let number = table_number(table);
        if !self.locks.used(number) {
            self.locks.mark_used(number);
        }
        let (mode, policy) = self.query_lock.get();
        if self.try_lock(number, key, mode) {
            return Ok(true);
        }
        match (policy, txn.filter(|_| self.scanning.get() == 0)) {
            (WaitPolicy::NoWait, _) => Err(not_available(&table.schema.name)),
            (WaitPolicy::SkipLocked, _) => Ok(false),
            (WaitPolicy::Block, Some(txn)) => {
                self.wait(txn, number, key, mode, table).map(|_| true)
            }
            (WaitPolicy::Block, None) => {
                *self.deferred.borrow_mut() = Some((number, key.into(), mode));
                Err(restart())
            }
        }
    }

    /// The lock an UPDATE, DELETE or upsert takes on the row it changes, in `mode`, in tables
    /// where locking reads ran; waited for. Inside an engine scan the write goes on unlocked
    /// (its read for update is checked at commit).
    pub(crate) fn lock_write(
        &self,
        txn: &mut engram_engine::Txn<'_>,
        table: &crate::catalog::TableInfo,
        key: &[u8],
        mode: RowLockMode,
    ) -> SqlResult<()> {
        let number = table_number(table);
        if !self.locks.used(number) || self.try_lock(number, key, mode) || self.scanning.get() > 0 {
            return Ok(());
        }
        self.wait(txn, number, key, mode, table)
    }

    /// Takes the lock if no other session holds the row in a conflicting mode.
    fn try_lock(&self, number: u64, key: &[u8], mode: RowLockMode) -> bool {
        let mut held = self.held.borrow_mut();
        self.locks.try_lock(self.session, number, key, mode, &mut held) == TryLock::Granted
    }

    /// Waits for the row lock a locking scan deferred, if it deferred one.
    pub(crate) fn wait_deferred(
        &self,
        txn: &mut engram_engine::Txn<'_>,
        table: &crate::catalog::TableInfo,
    ) -> SqlResult<()> {
        let deferred = self.deferred.borrow_mut().take();
        match deferred {
            Some((number, key, mode)) => self.wait(txn, number, &key, mode, table),
            None => Ok(()),
        }
    }

    /// Waits for the lock with the transaction suspended (`Txn::pause`), on a thread where
    /// blocking is allowed. A deadlock's DETAIL names the row's key.
    fn wait(
        &self,
        txn: &mut engram_engine::Txn<'_>,
        number: u64,
        key: &[u8],
        mode: RowLockMode,
        table: &crate::catalog::TableInfo,
    ) -> SqlResult<()> {
        let relation = table.schema.name.as_str();
        let limits = WaitLimits { interrupt: self.interrupt, lock_timeout: self.lock_timeout };
        let mut result = Ok(());
        txn.pause(|| {
            (self.block)(&mut || {
                let mut held = self.held.borrow_mut();
                result =
                    self.locks.lock(self.session, number, key, mode, &mut held, &limits, relation);
            })
        })?;
        result.map_err(|mut error| {
            if error.code == "40P01"
                && let Some(key) = crate::conflicts::key_text(table, key)
            {
                let detail = error.detail.take().unwrap_or_default();
                error.detail = Some(format!("{detail} The row's key: {key}."));
            }
            error
        })
    }
}
