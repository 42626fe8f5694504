//! SQL errors: a PostgreSQL SQLSTATE and a message that says what was wrong.

use std::fmt;

/// An error of a SQL statement, as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    /// The five-character SQLSTATE PostgreSQL gives for the same mistake.
    pub code: &'static str,
    pub message: String,
    /// Why concurrency control aborted the transaction, when it did (SQLSTATE 40001 from the
    /// engine).
    pub abort: Option<engram_engine::AbortReason>,
    /// PostgreSQL's DETAIL: more on what happened (the rows of a deadlock, ...).
    pub detail: Option<String>,
}

pub type SqlResult<T> = Result<T, SqlError>;

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError { code, message: message.into(), abort: None, detail: None }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn syntax(message: impl Into<String>) -> Self {
        SqlError::new("42601", message)
    }

    /// Something the parser accepts that Engram does not do.
    pub fn unsupported(feature: impl fmt::Display) -> Self {
        SqlError::new("0A000", format!("{feature} is not supported"))
    }

    pub fn undefined_table(name: &str) -> Self {
        SqlError::new("42P01", format!("relation \"{name}\" does not exist"))
    }

    pub fn undefined_column(name: &str) -> Self {
        SqlError::new("42703", format!("column \"{name}\" does not exist"))
    }

    pub fn mismatch(message: impl Into<String>) -> Self {
        SqlError::new("42804", message)
    }

    pub fn invalid_text(type_name: &str, text: &str) -> Self {
        SqlError::new("22P02", format!("invalid input syntax for type {type_name}: \"{text}\""))
    }

    pub fn out_of_range(type_name: &str) -> Self {
        SqlError::new("22003", format!("{type_name} out of range"))
    }

    pub fn division_by_zero() -> Self {
        SqlError::new("22012", "division by zero")
    }

    pub fn undefined_function(message: impl Into<String>) -> Self {
        SqlError::new("42883", message)
    }

    /// A write (`command`: PostgreSQL's name of it) in a read-only transaction.
    pub fn read_only_transaction(command: &str) -> Self {
        SqlError::new("25006", format!("cannot execute {command} in a read-only transaction"))
    }

    pub fn in_failed_transaction() -> Self {
        SqlError::new(
            "25P02",
            "current transaction is aborted, commands ignored until end of transaction block",
        )
    }

    /// Whether the client should run the transaction again (serialization failure).
    pub fn is_retryable(&self) -> bool {
        self.code == "40001"
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for SqlError {}

impl From<engram_engine::Error> for SqlError {
    fn from(error: engram_engine::Error) -> Self {
        let abort = match error {
            engram_engine::Error::Aborted(reason) => Some(reason),
            _ => None,
        };
        let detail = abort.map(|reason| format!("{} ({reason})", reason.explain()));
        SqlError { abort, detail, ..SqlError::new(error.sqlstate(), error.to_string()) }
    }
}

/// A message for the client that is not an error: PostgreSQL's NoticeResponse, with its
/// severity (`NOTICE`, `WARNING`) and SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
}

impl Notice {
    pub fn info(message: impl Into<String>) -> Notice {
        Notice { severity: "NOTICE", code: "00000", message: message.into() }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Notice {
        Notice { severity: "WARNING", code, message: message.into() }
    }

    /// COMMIT, ROLLBACK or SET TRANSACTION outside a transaction block (25P01).
    pub fn no_transaction(message: impl Into<String>) -> Notice {
        Notice::warning("25P01", message)
    }
}
