//! The abstract database a benchmark drives, after Silo's `abstract_db`.
//!
//! A database under test is a [`Db`]: it has a name, states its settings (printed with every
//! result, so a figure always says what it measured), and hands out one connection per driver
//! thread. Each workload is a trait of its own over `Db` (`ycsb::YcsbDb`, and TPC-C's with its
//! issue) whose methods are whole transactions, run once: the engine adapter runs each as one
//! closure on a worker (stored-procedure style), and SQL or wire adapters run each as the
//! statements a client would send. The driver, not the adapter, retries aborted attempts, so
//! every abort is counted with its reason.

/// How one attempt of a benchmark transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// Rolled back on purpose by the transaction's own logic (TPC-C's 1% of NewOrders).
    RolledBack,
    /// Aborted by concurrency control; the reason names it in reports. Retried.
    Aborted(&'static str),
}

pub trait Db: Send + Sync {
    /// Per-thread connection (a worker, a database handle, a socket).
    type Conn: Send;

    /// A short name for reports and plots: "engram", "sqlite".
    fn name(&self) -> String;

    /// How the database is configured for this run, in words.
    fn settings(&self) -> String;

    fn connect(&self) -> Result<Self::Conn, String>;

    /// With durability on: every commit of an epoch at or below this one is durable.
    fn durable_epoch(&self) -> Option<u64> {
        None
    }

    /// With durability on: the epoch the connection's last commit waits for.
    fn last_commit_epoch(&self, _conn: &Self::Conn) -> Option<u64> {
        None
    }

    /// Pauses the database's background work that belongs to its own rounds (Engram's
    /// checkpointer), or lets it go on: a run that alternates databases pauses each during
    /// the others' rounds, so that work is not counted against them.
    fn pause_background(&self, _paused: bool) {}
}

/// One of two databases, so that different adapters can be measured in alternating rounds
/// of one run (`--db engram,engram-sql`). A connection belongs to the database that made it.
#[derive(Debug)]
pub enum Either<A, B> {
    First(A),
    Second(B),
}

impl<A: Db, B: Db> Db for Either<A, B> {
    type Conn = Either<A::Conn, B::Conn>;

    fn name(&self) -> String {
        match self {
            Either::First(db) => db.name(),
            Either::Second(db) => db.name(),
        }
    }

    fn settings(&self) -> String {
        match self {
            Either::First(db) => db.settings(),
            Either::Second(db) => db.settings(),
        }
    }

    fn connect(&self) -> Result<Self::Conn, String> {
        Ok(match self {
            Either::First(db) => Either::First(db.connect()?),
            Either::Second(db) => Either::Second(db.connect()?),
        })
    }

    fn durable_epoch(&self) -> Option<u64> {
        match self {
            Either::First(db) => db.durable_epoch(),
            Either::Second(db) => db.durable_epoch(),
        }
    }

    fn last_commit_epoch(&self, conn: &Self::Conn) -> Option<u64> {
        match (self, conn) {
            (Either::First(db), Either::First(conn)) => db.last_commit_epoch(conn),
            (Either::Second(db), Either::Second(conn)) => db.last_commit_epoch(conn),
            _ => panic!("a connection used with another database"),
        }
    }

    fn pause_background(&self, paused: bool) {
        match self {
            Either::First(db) => db.pause_background(paused),
            Either::Second(db) => db.pause_background(paused),
        }
    }
}
