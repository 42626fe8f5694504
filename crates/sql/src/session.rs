//! Sessions: transaction state (idle, in a block, failed), isolation levels, autocommit,
//! and prepared statements with cached plans. `session/settings.rs` holds SET, RESET and
//! SHOW; `session/outcome.rs` what a statement returns.

use crate::SqlDb;
use crate::ast::Statement;
use crate::catalog::TableInfo;
use crate::error::{Notice, SqlError, SqlResult};
use crate::exec::{Env, Produced, run_insert, run_modify, run_query};
use crate::parse::parse;
use crate::plan::{Binder, OutputColumn, Plan, explain};
use crate::types::{Type, Value, cast, conforms};
use copy::{CopyFrom, CopyIn};
use engram_engine::{CommitInfo, Isolation, StatementCheck, Worker};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub mod copy;
mod outcome;
mod savepoint;
mod schema;
pub(crate) mod sequences;
mod settings;
pub(crate) mod temp;
mod transaction;

pub use outcome::{Outcome, Tag};
use settings::default_settings;
pub use settings::isolation_sql;

/// The transaction state a client sees (PostgreSQL's ReadyForQuery status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    Idle,
    InBlock,
    /// A statement failed in the block: everything but ROLLBACK gets 25P02.
    Failed,
}

/// A prepared statement: parsed once, planned once per catalog version.
#[derive(Debug)]
pub struct Prepared {
    pub sql: String,
    statement: Statement,
    /// Parameter types, given or inferred (`$n` compared to a column takes its type).
    pub param_types: Vec<Type>,
    /// Result columns (empty for statements without rows).
    pub columns: Vec<OutputColumn>,
    plan: Mutex<Option<CachedPlan>>,
}

impl Prepared {
    /// The parsed statement.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }
}

/// A plan, the catalog version it was made for, and its result columns as every execution
/// returns them (shared, not copied).
#[derive(Debug, Clone)]
struct CachedPlan {
    version: u64,
    plan: Arc<Plan>,
    columns: Arc<[OutputColumn]>,
    /// The plan read a system view, whose rows it holds: never reused.
    volatile: bool,
}

impl CachedPlan {
    fn new(version: u64, plan: Plan, volatile: bool) -> Self {
        let columns = plan.columns().into();
        CachedPlan { version, plan: Arc::new(plan), columns, volatile }
    }
}

/// DDL to undo if the transaction rolls back.
#[derive(Debug)]
pub(crate) enum Undo {
    /// A table was created (or replaced): put back `previous` (or remove `name`), drop the
    /// new engine table.
    Table { name: String, previous: Option<Arc<TableInfo>>, created_engine: Option<String> },
    /// A view was created, replaced or dropped: put back `previous` (or remove `name`).
    View { name: String, previous: Option<Arc<crate::catalog::ViewDef>> },
    /// A sequence was created, altered or dropped: put back `previous` (or remove `name`).
    Sequence { name: String, previous: Option<Arc<crate::catalog::SequenceDef>> },
    /// A comment was set or removed: put back `previous` (or remove `key`).
    Comment { key: String, previous: Option<String> },
}

/// One client's state. Not shared between threads; each holds its own engine worker.
pub struct Session {
    pub(crate) db: Arc<SqlDb>,
    pub(crate) worker: Worker,
    pub(crate) id: u64,
    status: TransactionStatus,
    /// An engine transaction is open (begun lazily at the first statement that needs one).
    engine_open: bool,
    holds_shared: bool,
    pub(crate) holds_exclusive: bool,
    default_isolation: Isolation,
    txn_isolation: Option<Isolation>,
    /// This transaction's access mode (`BEGIN READ ONLY`, `SET TRANSACTION READ WRITE`);
    /// `None`: `default_transaction_read_only`.
    read_only: Option<bool>,
    /// `default_transaction_read_only`.
    default_read_only: bool,
    /// A string of several statements is running ([`Session::begin_string`]): a statement
    /// that finds no transaction opens an implicit one for the rest of the string.
    in_string: bool,
    /// The open transaction is such an implicit one: it commits when the string ends, and
    /// an error rolls the string's statements back (PostgreSQL's implicit transaction block).
    implicit: bool,
    /// The transaction has read rows `FOR UPDATE` or `FOR SHARE` (`exec::Env::reapply`).
    locking_read: bool,
    prepared: HashMap<String, Arc<Prepared>>,
    settings: BTreeMap<String, String>,
    /// The `TimeZone` setting, installed on the thread at each entry ([`Session::enter`]).
    zone: crate::types::Zone,
    interval_style: crate::types::IntervalStyle,
    /// Counts changes of the settings [`Session::enter`] installs.
    settings_changes: u64,
    /// The sequence values handed to the session (`currval`, `lastval`).
    pub(crate) sequence_values: sequences::SessionValues,
    /// The session's temporary tables: name to catalog name (`session/temp.rs`).
    pub(crate) temp_tables: HashMap<String, String>,
    /// Ended sessions' temporary tables the open transaction dropped (`session/temp.rs`).
    orphans_taken: Vec<String>,
    pub(crate) undo: Vec<Undo>,
    pub(crate) drop_at_commit: Vec<String>,
    /// Engine tables of DDL a rollback to a savepoint undid, dropped when the transaction
    /// ends (`session/savepoint.rs`).
    pub(crate) drop_at_end: Vec<String>,
    /// The open block's savepoints, oldest first (`session/savepoint.rs`).
    savepoints: Vec<savepoint::SavepointState>,
    /// The catalog rows the transaction wrote (keys and values, `None` for a deletion), for
    /// the catalog log at commit (`SqlDb::log_catalog_rows`).
    pub(crate) catalog_rows: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The transaction's ALTER TABLEs made without the exclusive schema lock, installed in
    /// the catalog when it commits (`session/schema.rs`).
    pub(crate) pending: Vec<crate::catalog::Pending>,
    /// The catalog version the open transaction began at (`u64::MAX`: the newest, as under
    /// the exclusive schema lock).
    pub(crate) as_of: u64,
    pub(crate) notices: Vec<Notice>,
    /// Wait for the commit's epoch to be durable before COMMIT returns: the embedder's choice
    /// (`set_wait_durable`; a server waits asynchronously instead).
    wait_durable: bool,
    /// The `synchronous_commit` setting: with it off, COMMIT does not wait at all.
    synchronous_commit: bool,
    last_commit: CommitInfo,
    /// When the open transaction began: `now()` (PostgreSQL's transaction timestamp).
    pub(crate) txn_started: i64,
    /// `statement_timeout` (None: off).
    statement_timeout: Option<std::time::Duration>,
    /// `lock_timeout`: how long one row-lock wait may last (None: off).
    lock_timeout: Option<std::time::Duration>,
    /// The row locks the transaction holds (`locks.rs`), released when it ends.
    row_locks_held: std::cell::RefCell<Vec<crate::locks::RowKey>>,
    /// Runs a row-lock wait (`set_blocking`).
    blocking: fn(&mut dyn FnMut()),
    /// The running statement's deadline and the client's cancel flag.
    interrupt: crate::interrupt::Interrupt,
    /// The current statement's parameters converted to their types; its memory is reused.
    converted: Vec<Value>,
    /// Buffers lent to each statement's execution (`exec::Scratch`).
    scratch: std::cell::RefCell<crate::exec::Scratch>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).field("status", &self.status).finish()
    }
}

/// Autocommit statements aborted by concurrency control are run again this many times.
const AUTOCOMMIT_RETRIES: u32 = 10;

/// How many times a statement that read a changing state runs (the last attempt reads at a
/// snapshot when the transaction has written nothing), before its transaction aborts (40001).
const STATEMENT_ATTEMPTS: u32 = 16;

impl Session {
    pub(crate) fn new(db: Arc<SqlDb>, worker: Worker, id: u64) -> Self {
        Session {
            db,
            worker,
            id,
            status: TransactionStatus::Idle,
            engine_open: false,
            holds_shared: false,
            holds_exclusive: false,
            default_isolation: Isolation::ReadCommitted,
            txn_isolation: None,
            read_only: None,
            default_read_only: false,
            in_string: false,
            implicit: false,
            locking_read: false,
            prepared: HashMap::new(),
            settings: default_settings(),
            zone: crate::types::Zone::utc(),
            interval_style: crate::types::IntervalStyle::Postgres,
            settings_changes: 0,
            sequence_values: Default::default(),
            temp_tables: HashMap::new(),
            orphans_taken: Vec::new(),
            undo: Vec::new(),
            drop_at_commit: Vec::new(),
            drop_at_end: Vec::new(),
            savepoints: Vec::new(),
            catalog_rows: Vec::new(),
            pending: Vec::new(),
            as_of: u64::MAX,
            notices: Vec::new(),
            wait_durable: true,
            synchronous_commit: true,
            last_commit: CommitInfo::NOTHING,
            txn_started: 0,
            statement_timeout: None,
            lock_timeout: None,
            row_locks_held: Default::default(),
            blocking: |wait| wait(),
            interrupt: crate::interrupt::Interrupt::default(),
            converted: Vec::new(),
            scratch: Default::default(),
        }
    }

    pub fn status(&self) -> TransactionStatus {
        self.status
    }

    /// The last commit, whose epoch a server waits for before answering COMMIT.
    pub fn last_commit(&self) -> CommitInfo {
        self.last_commit
    }

    /// Whether COMMIT blocks until durable (on by default; a server that waits
    /// asynchronously turns it off).
    pub fn set_wait_durable(&mut self, wait: bool) {
        self.wait_durable = wait;
    }

    /// A flag another thread sets to cancel the running statement (a server's cancel key).
    pub fn set_cancel_flag(&mut self, flag: Arc<std::sync::atomic::AtomicBool>) {
        self.interrupt.cancel = Some(flag);
    }

    /// How a row-lock wait runs: `block(wait)` must call `wait`, on a thread where blocking is
    /// allowed (a server on a tokio runtime hands the thread's other work away first).
    pub fn set_blocking(&mut self, block: fn(&mut dyn FnMut())) {
        self.blocking = block;
    }

    /// Calls `hook` once in a statement that has run for `after` (checked as scans go).
    pub fn set_long_statement_hook(&mut self, after: std::time::Duration, hook: fn()) {
        self.interrupt.long_after = after;
        self.interrupt.on_long = Some(hook);
    }

    /// Notices raised since the last call (e.g. "there is no transaction in progress").
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings.get(name).map(String::as_str)
    }

    pub fn database(&self) -> &Arc<SqlDb> {
        &self.db
    }

    /// Runs every statement of `sql`, stopping at the first error (whose result is last).
    /// Several statements outside an explicit block are one transaction, as a PostgreSQL
    /// simple query runs them: an error rolls back the string's statements before it.
    pub fn execute(&mut self, sql: &str) -> Vec<SqlResult<Outcome>> {
        let statements = match self.parse(sql) {
            Ok(statements) => statements,
            Err(error) => return vec![Err(error)],
        };
        let mut results = Vec::new();
        self.begin_string(statements.len());
        for statement in statements {
            let result = self.execute_statement(&statement);
            let failed = result.is_err();
            results.push(result);
            if failed {
                break;
            }
        }
        if let Err(error) = self.end_string() {
            results.push(Err(error));
        }
        results
    }

    /// Parses a string of statements (a syntax error fails the open block, as running it
    /// would).
    pub fn parse(&mut self, sql: &str) -> SqlResult<Vec<Statement>> {
        parse(sql).inspect_err(|_| self.fail_block())
    }

    /// Runs one parsed statement (a server runs a simple-query string statement by
    /// statement, because `COPY FROM STDIN` needs the client's data before the next one).
    pub fn execute_statement(&mut self, statement: &Statement) -> SqlResult<Outcome> {
        self.run(statement, &[], 0, None)
    }

    /// Starts `COPY ... FROM STDIN`: feed the data to the returned [`CopyIn`], then finish it.
    pub fn copy_in(&mut self, copy: &CopyFrom) -> SqlResult<CopyIn> {
        self.enter();
        if self.status == TransactionStatus::Failed {
            return Err(SqlError::in_failed_transaction());
        }
        CopyIn::begin(self, copy).inspect_err(|_| self.fail_block())
    }

    /// Prepares a statement built in the crate (COPY's INSERT).
    pub(crate) fn prepare_parsed(
        &mut self,
        sql: &str,
        statement: Statement,
    ) -> SqlResult<Arc<Prepared>> {
        self.prepare_statement(sql, statement, &[])
    }

    /// Opens the transaction a COPY inserts in; `true` when it is the COPY's own (the session
    /// was idle) and COPY commits it.
    pub(crate) fn begin_copy_transaction(&mut self) -> SqlResult<bool> {
        if self.read_only() {
            return Err(SqlError::read_only_transaction("COPY FROM"));
        }
        let own = self.status == TransactionStatus::Idle;
        self.ensure_transaction()?;
        Ok(own)
    }

    /// Inserts one COPY record inside the COPY's transaction.
    pub(crate) fn copy_row(&mut self, insert: &Prepared, values: &[Value]) -> SqlResult<()> {
        self.data_attempt(&insert.statement, values, 0, Some(insert), false).map(|_| ())
    }

    /// Ends a COPY: commits or rolls back its own transaction; a failed COPY inside a block
    /// fails the block.
    pub(crate) fn end_copy(&mut self, own_transaction: bool, commit: bool) -> SqlResult<()> {
        if own_transaction {
            self.finish(commit)
        } else {
            if !commit {
                self.fail_block();
            }
            Ok(())
        }
    }

    /// Runs a string that holds one statement (or several: the last one's outcome).
    pub fn execute_one(&mut self, sql: &str) -> SqlResult<Outcome> {
        let mut results = self.execute(sql);
        results.pop().unwrap_or_else(|| Ok(Outcome::Command { tag: "EMPTY".into() }))
    }

    /// Prepares one statement. `param_types` may name types for some parameters (the rest
    /// are inferred).
    pub fn prepare(&mut self, sql: &str, param_types: &[Type]) -> SqlResult<Arc<Prepared>> {
        let mut statements = parse(sql)?;
        let statement = match statements.len() {
            0 => Statement::Utility { tag: "EMPTY".into(), checkpoint: false },
            1 => statements.remove(0),
            _ => {
                return Err(SqlError::syntax(
                    "cannot insert multiple commands into a prepared statement",
                ));
            }
        };
        self.prepare_statement(sql, statement, param_types)
    }

    fn prepare_statement(
        &mut self,
        sql: &str,
        statement: Statement,
        param_types: &[Type],
    ) -> SqlResult<Arc<Prepared>> {
        self.enter();
        let plannable = matches!(
            statement,
            Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
        );
        let (param_types, columns, plan) = if plannable {
            let (version, plan, params, volatile) = self.with_catalog(|catalog| {
                let binder = Binder::new(catalog, param_types)
                    .with_settings(&self.settings)
                    .with_engine(self.db.database())
                    .with_view(self.view());
                let (plan, params, volatile) = binder.statement_volatile(&statement)?;
                // A plan made in a view of this session's own is not for other executions.
                let version = if self.viewing() { 0 } else { catalog.version };
                Ok((version, plan, params, volatile))
            })?;
            let columns = plan.columns().to_vec();
            (params, columns, Some(CachedPlan::new(version, plan, volatile)))
        } else {
            // Statements that return rows without a plan describe their columns too.
            let text = |name: &str| OutputColumn { name: name.into(), ty: Type::Text };
            let columns = match &statement {
                Statement::Show { name } if name.eq_ignore_ascii_case("all") => {
                    vec![text("name"), text("setting")]
                }
                Statement::Show { name } => {
                    vec![text(&name.to_ascii_lowercase().replace(' ', "_"))]
                }
                Statement::Explain(_) => vec![text("QUERY PLAN")],
                _ => Vec::new(),
            };
            (param_types.to_vec(), columns, None)
        };
        Ok(Arc::new(Prepared {
            sql: sql.to_string(),
            statement,
            param_types,
            columns,
            plan: Mutex::new(plan),
        }))
    }

    /// Runs `body` with the catalog read under the schema lock (shared), as planning does.
    fn with_catalog<T>(
        &self,
        body: impl FnOnce(&crate::catalog::Catalog) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let take = !self.holds_shared;
        if take {
            self.db.schema_lock.lock_shared(self.id)?;
        }
        let result = body(&self.db.catalog.read());
        if take {
            self.db.schema_lock.unlock_shared();
        }
        result
    }

    /// Runs a prepared statement with parameter values (converted to the parameter types).
    /// `max_rows` > 0 stops after that many rows.
    pub fn execute_prepared(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
        max_rows: usize,
    ) -> SqlResult<Outcome> {
        if params.len() != prepared.param_types.len() {
            return Err(SqlError::new(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement requires {}",
                    params.len(),
                    prepared.param_types.len()
                ),
            ));
        }
        self.run(&prepared.statement, params, max_rows, Some(prepared))
    }

    /// Names a prepared statement (SQL PREPARE, or the wire protocol's Parse).
    pub fn store_prepared(&mut self, name: &str, prepared: Arc<Prepared>) {
        self.prepared.insert(name.to_string(), prepared);
    }

    pub fn prepared(&self, name: &str) -> Option<Arc<Prepared>> {
        self.prepared.get(name).cloned()
    }

    /// Forgets a named prepared statement (the wire protocol's Close); whether it existed.
    pub fn drop_prepared(&mut self, name: &str) -> bool {
        self.prepared.remove(name).is_some()
    }

    fn isolation(&self) -> Isolation {
        self.txn_isolation.unwrap_or(self.default_isolation)
    }

    /// Whether the transaction (open, or the next one) may only read.
    fn read_only(&self) -> bool {
        self.read_only.unwrap_or(self.default_read_only) || self.isolation() == Isolation::Snapshot
    }

    /// `SET TRANSACTION READ ONLY | READ WRITE` inside a block: read-write only before the
    /// transaction's first query, as PostgreSQL has it.
    fn set_transaction_read_only(&mut self, read_only: bool) -> SqlResult<()> {
        if !read_only && self.read_only() && self.engine_open {
            return self.fail(SqlError::new(
                "25001",
                "transaction read-write mode must be set before any query",
            ));
        }
        self.read_only = Some(read_only);
        Ok(())
    }

    /// Starts running a string of `statements` statements (a simple query): when there are
    /// several, the ones outside an explicit block run in one implicit transaction that
    /// [`Session::end_string`] ends, as PostgreSQL runs them.
    pub fn begin_string(&mut self, statements: usize) {
        self.in_string = statements > 1;
    }

    /// Starts an extended-protocol pipeline whose statements, up to its Sync, run in one
    /// implicit transaction as a string's do; [`Session::end_string`] ends it at the Sync.
    pub fn begin_pipeline(&mut self) {
        self.in_string = true;
    }

    /// Ends a string begun with [`Session::begin_string`]: commits its implicit transaction,
    /// or rolls it back if a statement failed (the string stops at its first error).
    pub fn end_string(&mut self) -> SqlResult<()> {
        self.in_string = false;
        if !self.implicit {
            return Ok(());
        }
        self.implicit = false;
        let commit = self.status == TransactionStatus::InBlock;
        self.status = TransactionStatus::Idle;
        self.finish(commit).map_err(|error| self.located(error))
    }

    fn run(
        &mut self,
        statement: &Statement,
        params: &[Value],
        max_rows: usize,
        prepared: Option<&Prepared>,
    ) -> SqlResult<Outcome> {
        self.enter();
        self.run_statement(statement, params, max_rows, prepared).map_err(|e| self.located(e))
    }

    /// Adds to an abort's DETAIL where it happened: the relation, the key, the commit that
    /// caused it (`conflicts.rs`), once the engine transaction has ended.
    #[cold]
    fn located(&self, mut error: SqlError) -> SqlError {
        let Some(reason) = error.abort else { return error };
        let Some(conflict) = self.worker.last_conflict() else { return error };
        if conflict.reason != reason {
            return error;
        }
        let place = crate::conflicts::describe(&self.db.catalog.read(), conflict);
        if !place.is_empty() {
            error.detail = Some(match error.detail.take() {
                Some(detail) => format!("{detail} {place}"),
                None => place,
            });
        }
        error
    }

    fn run_statement(
        &mut self,
        statement: &Statement,
        params: &[Value],
        max_rows: usize,
        prepared: Option<&Prepared>,
    ) -> SqlResult<Outcome> {
        if self.status == TransactionStatus::Failed
            && !matches!(
                statement,
                Statement::Rollback | Statement::Commit | Statement::RollbackTo { .. }
            )
        {
            return Err(SqlError::in_failed_transaction());
        }
        let control =
            matches!(statement, Statement::Begin { .. } | Statement::Commit | Statement::Rollback);
        if self.in_string && !control && self.status == TransactionStatus::Idle {
            self.status = TransactionStatus::InBlock;
            self.implicit = true;
        }
        match statement {
            Statement::Begin { isolation, read_only } => {
                if self.implicit {
                    // BEGIN turns the string's implicit transaction into an explicit one.
                    self.implicit = false;
                    if !self.engine_open {
                        self.txn_isolation = *isolation;
                    }
                    self.read_only = read_only.or(self.read_only);
                } else if self.status != TransactionStatus::Idle {
                    self.notices.push(Notice::warning(
                        "25001",
                        "there is already a transaction in progress",
                    ));
                } else {
                    self.status = TransactionStatus::InBlock;
                    self.txn_isolation = *isolation;
                    self.read_only = *read_only;
                }
                Ok(Outcome::Command { tag: "BEGIN".into() })
            }
            Statement::Commit | Statement::Rollback if self.implicit => {
                // As PostgreSQL: the string's statements so far end, with a warning; the
                // statements after open another implicit transaction.
                self.implicit = false;
                self.notices.push(Notice::no_transaction("there is no transaction in progress"));
                let commit = matches!(statement, Statement::Commit)
                    && self.status == TransactionStatus::InBlock;
                self.status = TransactionStatus::Idle;
                self.finish(commit)?;
                let tag =
                    if matches!(statement, Statement::Commit) { "COMMIT" } else { "ROLLBACK" };
                Ok(Outcome::Command { tag: tag.into() })
            }
            Statement::Commit => {
                let status = self.status;
                self.status = TransactionStatus::Idle;
                match status {
                    TransactionStatus::Idle => {
                        self.notices
                            .push(Notice::no_transaction("there is no transaction in progress"));
                        Ok(Outcome::Command { tag: "COMMIT".into() })
                    }
                    TransactionStatus::Failed => {
                        self.finish(false)?;
                        Ok(Outcome::Command { tag: "ROLLBACK".into() })
                    }
                    TransactionStatus::InBlock => {
                        self.finish(true)?;
                        Ok(Outcome::Command { tag: "COMMIT".into() })
                    }
                }
            }
            Statement::Rollback => {
                if self.status == TransactionStatus::Idle {
                    self.notices
                        .push(Notice::no_transaction("there is no transaction in progress"));
                }
                self.status = TransactionStatus::Idle;
                self.finish(false)?;
                Ok(Outcome::Command { tag: "ROLLBACK".into() })
            }
            Statement::Savepoint { name } => self.savepoint(name).or_else(|error| self.fail(error)),
            Statement::Release { name } => {
                self.release_savepoint(name).or_else(|error| self.fail(error))
            }
            Statement::RollbackTo { name } => {
                self.rollback_to_savepoint(name).or_else(|error| self.fail(error))
            }
            Statement::SetTransaction { isolation, read_only, session } => {
                if *session {
                    if let Some(level) = isolation {
                        self.default_isolation = *level;
                    }
                    if let Some(read_only) = read_only {
                        self.default_read_only = *read_only;
                    }
                    return Ok(Outcome::Command { tag: "SET".into() });
                }
                if self.status == TransactionStatus::Idle {
                    self.notices.push(Notice::no_transaction(
                        "SET TRANSACTION can only be used in transaction blocks",
                    ));
                    return Ok(Outcome::Command { tag: "SET".into() });
                }
                if let Some(level) = isolation {
                    if self.engine_open && *level != self.isolation() {
                        return self.fail(SqlError::new(
                            "25001",
                            "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                        ));
                    }
                    self.txn_isolation = Some(*level);
                }
                if let Some(read_only) = read_only {
                    self.set_transaction_read_only(*read_only)?;
                }
                Ok(Outcome::Command { tag: "SET".into() })
            }
            Statement::Reset { name } => {
                self.set(name, None)?;
                Ok(Outcome::Command { tag: "RESET".into() })
            }
            Statement::Set { name, value } => {
                self.set(name, value.as_deref())?;
                Ok(Outcome::Command { tag: "SET".into() })
            }
            Statement::Show { name } => self.show(name),
            Statement::Prepare { name, types, statement } => {
                if self.prepared.contains_key(name) {
                    return self.fail(SqlError::new(
                        "42P05",
                        format!("prepared statement \"{name}\" already exists"),
                    ));
                }
                let prepared = match self.prepare_statement(
                    &format!("PREPARE {name}"),
                    (**statement).clone(),
                    types,
                ) {
                    Ok(prepared) => prepared,
                    Err(error) => return self.fail(error),
                };
                self.prepared.insert(name.clone(), prepared);
                Ok(Outcome::Command { tag: "PREPARE".into() })
            }
            Statement::Execute { name, params: exprs } => {
                let Some(prepared) = self.prepared.get(name).cloned() else {
                    return self.fail(SqlError::new(
                        "26000",
                        format!("prepared statement \"{name}\" does not exist"),
                    ));
                };
                let mut values = Vec::new();
                for expr in exprs {
                    let value = match expr {
                        crate::ast::Expr::Literal(crate::ast::Literal::Number(n)) => {
                            match n.parse::<i64>() {
                                Ok(integer) => Ok(Value::Int(integer)),
                                Err(_) => crate::types::parse_text(
                                    n,
                                    Type::Numeric { precision: 0, scale: 0 },
                                ),
                            }
                        }
                        crate::ast::Expr::Literal(crate::ast::Literal::String(s)) => {
                            Ok(Value::Text(s.clone().into()))
                        }
                        crate::ast::Expr::Literal(crate::ast::Literal::Null) => Ok(Value::Null),
                        crate::ast::Expr::Literal(crate::ast::Literal::Bool(b)) => {
                            Ok(Value::Bool(*b))
                        }
                        _ => Err(SqlError::unsupported("EXECUTE arguments other than constants")),
                    };
                    match value {
                        Ok(value) => values.push(value),
                        Err(error) => return self.fail(error),
                    }
                }
                self.execute_prepared(&prepared, &values, 0)
            }
            Statement::Discard { all } => match self.discard(*all) {
                Ok(outcome) => Ok(outcome),
                Err(error) => self.fail(error),
            },
            Statement::Deallocate { name } => {
                match name {
                    Some(name) => {
                        if self.prepared.remove(name).is_none() {
                            return self.fail(SqlError::new(
                                "26000",
                                format!("prepared statement \"{name}\" does not exist"),
                            ));
                        }
                    }
                    None => self.prepared.clear(),
                }
                Ok(Outcome::Command { tag: "DEALLOCATE".into() })
            }
            Statement::Copy(_) => self.fail(SqlError::unsupported(
                "COPY FROM STDIN outside the wire protocol (use Session::copy_in)",
            )),
            Statement::Explain(inner) => {
                let lines = match self.with_catalog(|catalog| {
                    let (plan, _) = Binder::new(catalog, &[])
                        .with_settings(&self.settings)
                        .with_engine(self.db.database())
                        .with_view(self.view())
                        .statement(inner)?;
                    Ok(explain(&plan))
                }) {
                    Ok(lines) => lines,
                    Err(error) => return self.fail(error),
                };
                Ok(Outcome::Rows {
                    columns: Arc::new([OutputColumn { name: "QUERY PLAN".into(), ty: Type::Text }]),
                    rows: lines.into_iter().map(|l| vec![Value::Text(l.into())]).collect(),
                    tag: "EXPLAIN".into(),
                })
            }
            Statement::Utility { tag, checkpoint } => {
                if *checkpoint
                    && self.db.db.has_data_dir()
                    && let Err(error) = self.db.db.checkpoint()
                {
                    return self.fail(error.into());
                }
                Ok(Outcome::Command { tag: Tag::from(tag.as_str()) })
            }
            Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_) => self.data_statement(statement, params, max_rows, prepared),
            Statement::CreateTable(create) if create.query.is_some() => {
                self.create_table_as(create)
            }
            Statement::CreateTable(_)
            | Statement::DropTable { .. }
            | Statement::CreateView(_)
            | Statement::DropView { .. }
            | Statement::CreateSequence(_)
            | Statement::AlterSequence { .. }
            | Statement::DropSequence { .. }
            | Statement::CreateIndex(_)
            | Statement::DropIndex { .. }
            | Statement::Truncate { .. }
            | Statement::AlterTable(_)
            | Statement::Comment { .. } => self.ddl_statement(statement),
        }
    }

    /// Marks a block failed (if in one) and returns the error.
    fn fail<T>(&mut self, error: SqlError) -> SqlResult<T> {
        self.fail_block();
        Err(error)
    }

    /// The plan of a statement: a prepared statement's cached one while the catalog has not
    /// changed, else a new one. Also the parameter types, when not the prepared statement's.
    fn plan_for(
        &mut self,
        statement: &Statement,
        params: &[Value],
        prepared: Option<&Prepared>,
    ) -> SqlResult<(CachedPlan, Option<Vec<Type>>)> {
        let version = self.db.catalog_version.load(std::sync::atomic::Ordering::Acquire);
        let viewing = self.viewing_at(version);
        if let Some(prepared) = prepared
            && !viewing
        {
            let cached = prepared.plan.lock();
            if let Some(cached) = cached.as_ref()
                && cached.version == version
                && !cached.volatile
            {
                return Ok((cached.clone(), None));
            }
        }
        let given: Vec<Type> = prepared.map_or_else(
            || params.iter().map(|_| Type::Unknown).collect(),
            |p| p.param_types.clone(),
        );
        let catalog = self.db.catalog.read();
        let binder = Binder::new(&catalog, &given)
            .with_settings(&self.settings)
            .with_engine(self.db.database())
            .with_view(self.view());
        let (plan, types, volatile) = binder.statement_volatile(statement)?;
        // A client described the statement's rows already: a table altered since must not
        // change them (PostgreSQL's check).
        if let Some(prepared) = prepared
            && !same_row_types(&prepared.columns, plan.columns())
        {
            return Err(SqlError::new("0A000", "cached plan must not change result type"));
        }
        let cached = CachedPlan::new(catalog.version, plan, volatile);
        if let Some(prepared) = prepared
            && !viewing
        {
            *prepared.plan.lock() = Some(cached.clone());
        }
        Ok((cached, Some(types)))
    }

    fn data_statement(
        &mut self,
        statement: &Statement,
        params: &[Value],
        max_rows: usize,
        prepared: Option<&Prepared>,
    ) -> SqlResult<Outcome> {
        let autocommit = self.status == TransactionStatus::Idle;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self.data_attempt(statement, params, max_rows, prepared, autocommit);
            match result {
                Ok(outcome) => {
                    if autocommit {
                        match self.finish(true) {
                            Ok(()) => return Ok(outcome),
                            Err(error) if error.is_retryable() && attempt < AUTOCOMMIT_RETRIES => {
                                continue;
                            }
                            Err(error) => return Err(error),
                        }
                    }
                    return Ok(outcome);
                }
                Err(error) => {
                    if autocommit {
                        let _ = self.finish(false);
                        if error.is_retryable() && attempt < AUTOCOMMIT_RETRIES {
                            continue;
                        }
                        return Err(error);
                    }
                    return self.fail(error);
                }
            }
        }
    }

    fn data_attempt(
        &mut self,
        statement: &Statement,
        params: &[Value],
        max_rows: usize,
        prepared: Option<&Prepared>,
        autocommit: bool,
    ) -> SqlResult<Outcome> {
        self.ensure_transaction()?;
        let (CachedPlan { plan, columns, .. }, inferred) =
            self.plan_for(statement, params, prepared)?;
        let types = match (&inferred, prepared) {
            (Some(types), _) => types.as_slice(),
            (None, Some(prepared)) => prepared.param_types.as_slice(),
            (None, None) => &[],
        };
        // Parameters take their types (used as they are when they have them already).
        let mut converted = std::mem::take(&mut self.converted);
        converted.clear();
        let typed = || types.iter().chain(std::iter::repeat(&Type::Unknown));
        let as_given = params.iter().zip(typed()).all(|(value, ty)| conforms(value, *ty));
        if !as_given {
            for (value, ty) in params.iter().zip(typed()) {
                converted.push(cast(value.clone(), *ty, false)?);
            }
        }
        let writes = !matches!(plan.as_ref(), Plan::Query(q) if !q.for_update);
        if writes && self.read_only() {
            return Err(SqlError::read_only_transaction(statement.command_name()));
        }
        let reserve = sequences::SessionSequences { db: &self.db, values: &self.sequence_values };
        if self.statement_timeout.is_some() || self.interrupt.on_long.is_some() {
            let now = std::time::Instant::now();
            self.interrupt.deadline = self.statement_timeout.map(|limit| now + limit);
            self.interrupt.started = Some(now);
            self.interrupt.reported_long.set(false);
        } else {
            self.interrupt.deadline = None;
        }
        // Row locks: taken by locking reads, and by writes in tables where those ran; a plain
        // query takes none.
        let locker;
        let locks = match plan.as_ref() {
            Plan::Query(query) if !query.for_update => None,
            plan => {
                locker = crate::locks::Locker {
                    locks: &self.db.row_locks,
                    session: self.id,
                    held: &self.row_locks_held,
                    lock_timeout: self.lock_timeout,
                    interrupt: &self.interrupt,
                    block: self.blocking,
                    deferred: Default::default(),
                    query_lock: std::cell::Cell::new(match plan {
                        Plan::Query(query) => query.lock,
                        _ => Default::default(),
                    }),
                    scanning: Default::default(),
                };
                Some(&locker)
            }
        };
        let env = Env {
            params: if as_given { params } else { &converted },
            now: self.txn_started,
            reserve: &reserve,
            max_rows,
            interrupt: &self.interrupt,
            scratch: &self.scratch,
            reapply: !self.locking_read,
            locks,
            outer: &[],
        };
        if matches!(plan.as_ref(), Plan::Query(q) if q.for_update) {
            self.locking_read = true;
        }
        let mut txn = self.worker.txn()?;
        // A snapshot per statement at READ COMMITTED under a multi-version protocol.
        txn.next_statement()?;
        // Under Silo a statement is checked to have read one state (`cc/txn/statement.rs`):
        // queries at every level, and everything at REPEATABLE READ and SERIALIZABLE. A READ
        // COMMITTED UPDATE or DELETE reads each row it changes again for update and tests it
        // there, as PostgreSQL's re-evaluates the newest version of a row it waited for.
        let isolation = txn.isolation();
        let watch =
            matches!(plan.as_ref(), Plan::Query(_)) || isolation != Isolation::ReadCommitted;
        // An autocommit statement at REPEATABLE READ or SERIALIZABLE that succeeds is checked
        // by its commit, which comes next, before any of its rows leave.
        let commit_checks = autocommit && isolation != Isolation::ReadCommitted;
        let mut attempts = 0;
        let produced: Produced = loop {
            if watch {
                txn.watch_statement()?;
            }
            let result = match plan.as_ref() {
                Plan::Query(query) => run_query(&mut txn, query, &env),
                Plan::Insert(insert) => run_insert(&mut txn, insert, &env),
                Plan::Modify(modify) => run_modify(&mut txn, modify, &env),
            };
            if let Err(error) = &result
                && error.code == crate::locks::RESTART
                && !txn.is_aborted()
            {
                // A locking scan waited for a row: what it read before may be stale, so it
                // runs again, holding the locks it has.
                txn.restart_statement()?;
                continue;
            }
            if !watch || txn.is_aborted() || (commit_checks && result.is_ok()) {
                txn.end_statement();
                break result?;
            }
            // A statement that failed may have failed on what it should never have seen (a
            // division by zero over half a transfer): the check decides which error it gets.
            attempts += 1;
            match txn.check_statement(attempts < STATEMENT_ATTEMPTS) {
                Ok(StatementCheck::Consistent) => {
                    txn.end_statement();
                    break result?;
                }
                Ok(StatementCheck::Retry) => {
                    // A locking read reads for update, which a snapshot cannot.
                    let locking = matches!(plan.as_ref(), Plan::Query(q) if q.for_update);
                    if attempts + 1 == STATEMENT_ATTEMPTS && !locking && txn.snapshot_statement()? {
                        continue;
                    }
                    txn.restart_statement()?;
                    if attempts > 2 {
                        std::thread::yield_now();
                    }
                }
                Err(error) => {
                    txn.end_statement();
                    let error = SqlError::from(error);
                    let detail = format!(
                        "{} Found when the statement ended, before its result was returned \
                         (each statement reads one state).",
                        error.detail.as_deref().unwrap_or_default()
                    );
                    return Err(error.with_detail(detail));
                }
            }
        };
        drop(txn);
        converted.clear();
        self.converted = converted;
        let (tag, returns_rows) = match plan.as_ref() {
            Plan::Query(_) => (Tag::counted("SELECT ", produced.rows.len() as u64), true),
            Plan::Insert(insert) => {
                (Tag::counted("INSERT 0 ", produced.affected), !insert.returning.is_empty())
            }
            Plan::Modify(modify) => (
                Tag::counted(if modify.delete { "DELETE " } else { "UPDATE " }, produced.affected),
                !modify.returning.is_empty(),
            ),
        };
        Ok(if returns_rows {
            Outcome::Rows { columns, rows: produced.rows, tag }
        } else {
            Outcome::Command { tag }
        })
    }
}

/// Whether two row descriptions have the same column types.
fn same_row_types(a: &[crate::plan::OutputColumn], b: &[crate::plan::OutputColumn]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.ty == b.ty)
}

impl Drop for Session {
    fn drop(&mut self) {
        // A client that goes away mid-transaction is rolled back.
        self.abandon();
        self.leave_temp_tables();
    }
}
