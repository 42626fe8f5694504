//! Errors. An abort is an expected outcome of optimistic concurrency, not a failure: it carries
//! a `Copy` reason that is counted per worker, costs no allocation, and is retried by
//! [`crate::Worker::transaction`]. Everything else is a user error with a PostgreSQL SQLSTATE
//! and a message that says what was wrong and what to do.

use std::fmt;

/// Why a transaction was aborted. Each reason has a counter (`crate::Stats::aborts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AbortReason {
    /// A record the transaction read changed before it committed.
    ReadValidation,
    /// A record the transaction read was locked by another committer during validation.
    ReadLocked,
    /// A key entered or left a range the transaction scanned (a phantom), or a leaf it
    /// scanned was restructured.
    NodeValidation,
    /// A record the transaction updates or deletes was deleted before it committed.
    WriteConflict,
    /// Another in-flight transaction is inserting the same key.
    InsertConflict,
    /// A record stayed locked longer than the transaction would wait.
    RecordBusy,
    /// The epoch's TID sequence space ran out (4 million dependent commits in one epoch; under
    /// the multi-version protocols, 4 million timestamps in one epoch).
    SequenceExhausted,
    /// The transaction sat idle between calls for longer than the idle limit, so the engine
    /// stopped waiting for it (garbage collection and snapshots moved on).
    IdleTimeout,
    /// The serial safety net (`ssn`) found the transaction's exclusion window violated: a
    /// transaction it must follow committed after one it must precede, so committing could
    /// close a dependency cycle.
    Exclusion,
    /// Another transaction held a lock the transaction needed, and the protocol does not wait
    /// (`mvto`, `mv2pl`: no-wait deadlock prevention).
    LockConflict,
    /// Timestamp order forbids the operation (`mvto`): a transaction with a later timestamp
    /// already read what this one would write, or scanned the range it inserts into.
    TimestampOrder,
}

impl AbortReason {
    pub const ALL: [AbortReason; 11] = [
        AbortReason::ReadValidation,
        AbortReason::ReadLocked,
        AbortReason::NodeValidation,
        AbortReason::WriteConflict,
        AbortReason::InsertConflict,
        AbortReason::RecordBusy,
        AbortReason::SequenceExhausted,
        AbortReason::IdleTimeout,
        AbortReason::Exclusion,
        AbortReason::LockConflict,
        AbortReason::TimestampOrder,
    ];

    /// Dense index for counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// A stable snake_case name for reports and metrics.
    pub fn name(self) -> &'static str {
        match self {
            AbortReason::ReadValidation => "read_validation",
            AbortReason::ReadLocked => "read_locked",
            AbortReason::NodeValidation => "node_validation",
            AbortReason::WriteConflict => "write_conflict",
            AbortReason::InsertConflict => "insert_conflict",
            AbortReason::RecordBusy => "record_busy",
            AbortReason::SequenceExhausted => "sequence_exhausted",
            AbortReason::IdleTimeout => "idle_timeout",
            AbortReason::Exclusion => "ssn_exclusion",
            AbortReason::LockConflict => "lock_conflict",
            AbortReason::TimestampOrder => "timestamp_order",
        }
    }
}

impl AbortReason {
    /// What happened, in a sentence for a client (PostgreSQL's DETAIL of a 40001).
    pub fn explain(self) -> &'static str {
        match self {
            AbortReason::ReadValidation => {
                "A row this transaction read was changed by a transaction that committed after the read."
            }
            AbortReason::ReadLocked => {
                "A row this transaction read was being changed by a committing transaction."
            }
            AbortReason::NodeValidation => {
                "A range this transaction scanned, or a key it found absent, gained or lost a row (a phantom)."
            }
            AbortReason::WriteConflict => {
                "A row this transaction writes was changed or deleted by a transaction that committed first."
            }
            AbortReason::InsertConflict => "Another transaction is inserting the same key.",
            AbortReason::RecordBusy => {
                "A row stayed locked by a committing transaction longer than this one waits."
            }
            AbortReason::SequenceExhausted => {
                "Too many dependent commits in one epoch: the epoch's commit numbers ran out."
            }
            AbortReason::IdleTimeout => {
                "The transaction stayed idle (or waited) longer than the idle transaction limit and was given up."
            }
            AbortReason::Exclusion => {
                "A transaction this one must follow committed after one it must precede (the serial safety net)."
            }
            AbortReason::LockConflict => {
                "Another transaction holds a lock on a row this one needs, and the protocol does not wait."
            }
            AbortReason::TimestampOrder => {
                "A transaction with a later timestamp already read or scanned what this one would write."
            }
        }
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The transaction was aborted by concurrency control; retry it.
    Aborted(AbortReason),
    /// An insert or update would duplicate a primary or unique key.
    DuplicateKey {
        table: String,
        index: Option<String>,
    },
    /// A row the caller required does not exist.
    NotFound,
    /// The transaction's body asked to roll back (its own logic, not a conflict): the work is
    /// undone and, unlike an abort, not retried.
    Rollback,
    KeyTooLong {
        len: usize,
        max: usize,
    },
    ValueTooLong {
        len: usize,
        max: usize,
    },
    /// A transaction operation was called with no transaction open.
    NoTransaction,
    /// `begin` was called while a transaction is open.
    TransactionOpen,
    /// A write was attempted in a read-only snapshot transaction.
    ReadOnly,
    /// Every worker slot is taken.
    TooManyWorkers {
        max: usize,
    },
    TooManyTables {
        max: usize,
    },
    TooManyIndexes {
        max: usize,
    },
    TableExists(String),
    UnknownTable(String),
    UnknownIndex {
        table: String,
        index: usize,
    },
    InvalidConfig(String),
    /// Memory could not be reserved: more was asked for than the machine has available.
    OutOfMemory {
        requested: usize,
        available: usize,
    },
    /// A file of the data directory fails its checksum or does not parse: `offset` is where.
    Corrupt {
        file: String,
        offset: u64,
        reason: String,
    },
    /// Writing or syncing the log failed; the database accepts no more writes until it is
    /// restarted. Commits acknowledged before the failure stay durable.
    LogFailed(String),
    /// The disk holding the data directory is full. From the log or the catalog: writes are
    /// refused until there is room, and then resume by themselves, unless an fsync failed
    /// (then until a restart, as `LogFailed`; the message says which). From a checkpoint, only
    /// that checkpoint failed.
    DiskFull(String),
    /// An input/output error outside the log (opening the data directory, a checkpoint).
    Io(String),
    /// Another process has the data directory open.
    DataDirInUse(String),
}

impl Error {
    /// The PostgreSQL SQLSTATE a client would expect for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Error::Aborted(_) => "40001",
            Error::DuplicateKey { .. } => "23505",
            Error::NotFound => "02000",
            Error::Rollback => "40000",
            Error::KeyTooLong { .. } | Error::ValueTooLong { .. } => "54000",
            Error::NoTransaction => "25P01",
            Error::TransactionOpen => "25001",
            Error::ReadOnly => "25006",
            Error::TooManyWorkers { .. } => "53300",
            Error::TooManyTables { .. } | Error::TooManyIndexes { .. } => "54000",
            Error::TableExists(_) => "42P07",
            Error::UnknownTable(_) => "42P01",
            Error::UnknownIndex { .. } => "42704",
            Error::InvalidConfig(_) => "22023",
            Error::OutOfMemory { .. } => "53200",
            Error::Corrupt { .. } => "XX001",
            Error::LogFailed(_) | Error::Io(_) => "58030",
            Error::DiskFull(_) => "53100",
            Error::DataDirInUse(_) => "55006",
        }
    }

    /// Whether running the same transaction again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Aborted(_))
    }

    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self {
            Error::Aborted(reason) => Some(*reason),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Aborted(reason) => write!(
                f,
                "could not serialize access: transaction aborted ({reason}); retry the transaction"
            ),
            Error::DuplicateKey { table, index: None } => {
                write!(f, "duplicate key in table \"{table}\": a row with this primary key exists")
            }
            Error::DuplicateKey { table, index: Some(index) } => write!(
                f,
                "duplicate key in table \"{table}\": unique index \"{index}\" already has this key"
            ),
            Error::NotFound => write!(f, "no row with this key"),
            Error::Rollback => write!(f, "the transaction rolled itself back"),
            Error::KeyTooLong { len, max } => {
                write!(f, "key of {len} bytes exceeds the maximum of {max} bytes")
            }
            Error::ValueTooLong { len, max } => {
                write!(f, "value of {len} bytes exceeds the maximum of {max} bytes")
            }
            Error::NoTransaction => write!(f, "no transaction is open; call begin first"),
            Error::TransactionOpen => {
                write!(f, "a transaction is already open; commit or roll it back first")
            }
            Error::ReadOnly => write!(
                f,
                "cannot write in a read-only snapshot transaction; use another isolation level"
            ),
            Error::TooManyWorkers { max } => write!(
                f,
                "all {max} worker slots are in use; drop idle workers or raise workers_max"
            ),
            Error::TooManyTables { max } => write!(f, "the database already has {max} tables"),
            Error::TooManyIndexes { max } => {
                write!(f, "a table can have at most {max} secondary indexes")
            }
            Error::TableExists(name) => write!(f, "table \"{name}\" already exists"),
            Error::UnknownTable(name) => write!(f, "table \"{name}\" does not exist"),
            Error::UnknownIndex { table, index } => {
                write!(f, "table \"{table}\" has no secondary index number {index}")
            }
            Error::InvalidConfig(message) => write!(f, "invalid configuration: {message}"),
            Error::OutOfMemory { requested, available } => write!(
                f,
                "out of memory: cannot reserve {} MiB more, {} MiB available",
                requested >> 20,
                available >> 20
            ),
            Error::Corrupt { file, offset, reason } => {
                write!(f, "data directory corrupt: {file} at byte {offset}: {reason}")
            }
            Error::LogFailed(message) => write!(
                f,
                "the write-ahead log failed, so no more writes are accepted (restart to recover; \
                 acknowledged commits are safe): {message}"
            ),
            Error::DiskFull(message) => {
                write!(f, "the disk holding the data directory is full: {message}")
            }
            Error::Io(message) => write!(f, "input/output error: {message}"),
            Error::DataDirInUse(message) => write!(f, "data directory in use: {message}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
