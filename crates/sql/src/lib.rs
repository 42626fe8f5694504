//! Engram's SQL front end: PostgreSQL-dialect SQL over the engine, in the same process.
//!
//! ```text
//! SQL text --parse.rs (sqlparser, then Engram's ast.rs; unsupported -> 0A000)-->
//!   plan.rs (bind names and types, infer $n types, choose access paths) -->
//!   exec.rs (run inside an engine transaction) --> rows
//! ```
//!
//! [`SqlDb`] owns the engine database and the catalog; a [`Session`] per connection (or
//! thread) holds the transaction state, settings and prepared statements.
//!
//! ```
//! use engram_sql::{SqlDb, Outcome};
//! let db = SqlDb::open(engram_engine::Config::default()).unwrap();
//! let mut session = db.session().unwrap();
//! session.execute_one("CREATE TABLE t (id INT PRIMARY KEY, name TEXT)").unwrap();
//! session.execute_one("INSERT INTO t VALUES (1, 'one'), (2, 'two')").unwrap();
//! let Outcome::Rows { rows, .. } = session.execute_one("SELECT name FROM t WHERE id = 2").unwrap() else { panic!() };
//! assert_eq!(rows[0][0].as_str(), Some("two"));
//! ```

#![warn(missing_debug_implementations)]

pub mod ast;
pub mod catalog;
pub mod check;
pub mod codec;
mod conflicts;
mod ddl;
pub mod depth;
pub mod error;
pub mod exec;
pub mod expr;
pub mod fuzzing;
pub mod interrupt;
pub mod locks;
pub mod parse;
pub mod plan;
pub mod session;
pub mod system;
pub mod types;

pub use error::{Notice, SqlError, SqlResult};
pub use plan::OutputColumn;
/// NUMERIC values are `rust_decimal` decimals ([`Value::Numeric`]).
pub use rust_decimal::Decimal;
pub use session::{Outcome, Prepared, Session, Tag, TransactionStatus, isolation_sql};
pub use types::{Text, Type, Value};

use catalog::{CATALOG_TABLE, Catalog, SchemaLock, Sequence, TableInfo, TableSchema};
use codec::{KeyFormat, decode_compact_int};
use engram_engine::{
    CommitInfo, Config, Database, Direction, Isolation, TableRef, TableSpec, Worker,
};
use parking_lot::{Mutex, RwLock};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::{Arc, Weak};

/// A database with SQL: the engine, the catalog and the schema lock.
pub struct SqlDb {
    db: Arc<Database>,
    catalog: RwLock<Catalog>,
    /// `catalog.version`, readable without the lock: a prepared statement checks it on every
    /// execution (the schema lock a session holds keeps it from changing under a statement).
    catalog_version: AtomicU64,
    schema_lock: SchemaLock,
    /// Taken by the commit of a transaction with ALTER TABLEs made under the shared schema
    /// lock, so that two such commits of one table are checked one after the other.
    alter_commit: Mutex<()>,
    /// Row locks of locking reads, and of writes to the tables they are used on (`locks.rs`).
    pub(crate) row_locks: locks::RowLocks,
    catalog_table: TableRef,
    /// A worker for the database's own small transactions (sequence reservations).
    system: Mutex<Worker>,
    next_session: AtomicU64,
    /// Temporary tables of sessions that have ended, which the next DDL statement drops.
    pub(crate) temp_orphans: Mutex<Vec<String>>,
}

impl std::fmt::Debug for SqlDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlDb").field("tables", &self.catalog.read().tables.len()).finish()
    }
}

impl SqlDb {
    /// Opens (and recovers, with a data directory) a database for SQL.
    pub fn open(mut config: Config) -> SqlResult<Arc<SqlDb>> {
        config.index_keys = Some(catalog::index_keys());
        let db = Database::open(config)?;
        SqlDb::over(Arc::new(db))
    }

    /// SQL over an open engine database (opened with [`catalog::index_keys`] if it has a data
    /// directory with SQL tables).
    pub fn over(db: Arc<Database>) -> SqlResult<Arc<SqlDb>> {
        let catalog_table = match db.table(CATALOG_TABLE) {
            Ok(table) => table,
            Err(_) => db.create_table(TableSpec::new(CATALOG_TABLE))?,
        };
        let system_table = match db.table(system::SYSTEM_TABLE) {
            Ok(table) => table,
            Err(_) => db.create_table(TableSpec::new(system::SYSTEM_TABLE))?,
        };
        let mut system = db.worker()?;
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        system.transaction(Isolation::Serializable, |txn| {
            entries.clear();
            txn.scan(
                &catalog_table,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |key, value| {
                    entries.push((String::from_utf8_lossy(key).into_owned(), value.to_vec()));
                    true
                },
            )?;
            Ok(())
        })?;
        let mut catalog = Catalog { system_table: Some(system_table), ..Catalog::default() };
        let mut reserved = std::collections::HashMap::new();
        let mut schemas = Vec::new();
        let mut views = std::collections::HashMap::new();
        for (key, value) in entries {
            if let Some(name) = key.strip_prefix("table:") {
                let schema: TableSchema = serde_json::from_slice(&value).map_err(|error| {
                    SqlError::new(
                        "XX001",
                        format!("catalog entry for table \"{name}\" does not parse: {error}"),
                    )
                })?;
                schemas.push(schema);
            } else if let Some(name) = key.strip_prefix("view:") {
                let view: catalog::ViewDef = serde_json::from_slice(&value).map_err(|error| {
                    SqlError::new(
                        "XX001",
                        format!("catalog entry for view \"{name}\" does not parse: {error}"),
                    )
                })?;
                views.insert(view.name.clone(), Arc::new(view));
            } else if let Some(name) = key.strip_prefix("sequence:") {
                let def: catalog::SequenceDef =
                    serde_json::from_slice(&value).map_err(|error| {
                        SqlError::new(
                            "XX001",
                            format!(
                                "catalog entry for sequence \"{name}\" does not parse: {error}"
                            ),
                        )
                    })?;
                catalog.sequence_defs.insert(def.name.clone(), Arc::new(def));
            } else if let Some(object) = key.strip_prefix("comment:") {
                let text: String = serde_json::from_slice(&value).map_err(|error| {
                    SqlError::new(
                        "XX001",
                        format!(
                            "catalog entry for the comment on {object} does not parse: {error}"
                        ),
                    )
                })?;
                catalog.comments.insert(object.to_string(), text);
            } else if let Some(sequence) = key.strip_prefix("seq:") {
                let limit: i64 = String::from_utf8_lossy(&value).parse().unwrap_or(0);
                reserved.insert(sequence.to_string(), limit);
            }
        }
        catalog.views = views;
        let defs: Vec<_> = catalog.sequence_defs.values().cloned().collect();
        for def in defs {
            // Keys carry a generation (`@name#7`): later objects take later ones.
            if let Some(generation) = def.key.rsplit_once('#').and_then(|(_, g)| g.parse().ok()) {
                catalog.generation = catalog.generation.max(generation);
            }
            let sequence = catalog.sequence(&def.key, def.options);
            if let Some(limit) = reserved.get(&def.key) {
                *sequence.state.lock() = catalog::SequenceState::recovered(def.options, *limit);
            }
        }
        let mut referenced = std::collections::HashSet::new();
        // Temporary tables a crash left: their sessions are gone. Their catalog rows go, and
        // their engine tables with the unnamed ones below.
        let (temporary, schemas): (Vec<TableSchema>, Vec<TableSchema>) =
            schemas.into_iter().partition(|schema| schema.name.starts_with(catalog::TEMP_PREFIX));
        if !temporary.is_empty() {
            let owned: Vec<String> = catalog
                .sequence_defs
                .values()
                .filter(|def| {
                    def.owned_by
                        .as_ref()
                        .is_some_and(|(table, _)| table.starts_with(catalog::TEMP_PREFIX))
                })
                .map(|def| def.name.clone())
                .collect();
            system.transaction(Isolation::Serializable, |txn| {
                for schema in &temporary {
                    txn.delete(&catalog_table, format!("table:{}", schema.name).as_bytes())?;
                }
                for name in &owned {
                    txn.delete(&catalog_table, format!("sequence:{name}").as_bytes())?;
                }
                Ok(())
            })?;
            for name in &owned {
                catalog.sequence_defs.remove(name);
            }
        }
        for schema in schemas {
            let engine = db.table(&schema.engine_name).map_err(|_| {
                SqlError::new(
                    "XX001",
                    format!(
                        "table \"{}\" has no engine table \"{}\"",
                        schema.name, schema.engine_name
                    ),
                )
            })?;
            referenced.insert(schema.engine_name.clone());
            let mut sequences = Vec::new();
            for column in &schema.columns {
                sequences.push(column.sequence.as_ref().map(|key| {
                    // A named sequence was recovered above with its own options; a SERIAL
                    // column's from before sequences were objects has the defaults.
                    if let Some(sequence) = catalog.sequences.get(key) {
                        return Arc::clone(sequence);
                    }
                    let options = catalog::SequenceOptions::default();
                    let sequence = catalog.sequence(key, options);
                    if let Some(limit) = reserved.get(key) {
                        *sequence.state.lock() = catalog::SequenceState::recovered(options, *limit);
                    }
                    sequence
                }));
            }
            let rowid = if schema.primary_key.is_empty() {
                max_rowid(&mut system, &engine, schema.key_format)? + 1
            } else {
                1
            };
            let info =
                TableInfo::new(schema, engine, Arc::new(AtomicI64::new(rowid)), sequences, None);
            catalog.tables.insert(info.schema.name.clone(), Arc::new(info));
        }
        // Engine tables of SQL tables that no catalog row names: left by a crash during DDL.
        // On a full disk they stay, unused, until an open with room drops them: the database
        // opens to serve reads all the same (docs/durability.md, "A full disk").
        for name in db.table_names() {
            if let Some((_, generation)) = name.rsplit_once('#')
                && let Ok(generation) = generation.parse::<u64>()
            {
                catalog.generation = catalog.generation.max(generation);
                if !referenced.contains(&name) {
                    match db.drop_table(&name) {
                        Ok(()) | Err(engram_engine::Error::DiskFull(_)) => {}
                        Err(error) => return Err(error.into()),
                    }
                }
            }
        }
        let sql = Arc::new(SqlDb {
            db,
            catalog_version: AtomicU64::new(catalog.version),
            catalog: RwLock::new(catalog),
            schema_lock: SchemaLock::default(),
            alter_commit: Mutex::new(()),
            row_locks: locks::RowLocks::default(),
            catalog_table,
            system: Mutex::new(system),
            next_session: AtomicU64::new(1),
            temp_orphans: Mutex::new(Vec::new()),
        });
        sql.db.set_row_keys(row_keys(Arc::downgrade(&sql)));
        Ok(sql)
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// How many rows row locks hold now (`locks.rs`).
    pub fn locked_rows(&self) -> usize {
        self.row_locks.locked_rows()
    }

    /// The engine level a SQL transaction at `level` runs at. PostgreSQL's REPEATABLE READ is
    /// snapshot isolation: no phantoms, and an absent key read stays absent. Silo's and
    /// MV2PL's repeatable-read re-check records but not ranges, so there it runs as
    /// serializable, which is stronger (docs/isolation.md, "Through SQL").
    pub fn engine_isolation(&self, level: Isolation) -> Isolation {
        let protocol = self.db.config().protocol;
        match level {
            Isolation::RepeatableRead
                if matches!(
                    protocol,
                    engram_engine::Protocol::Silo | engram_engine::Protocol::Mv2pl
                ) =>
            {
                Isolation::Serializable
            }
            level => level,
        }
    }

    /// The committed catalog's tables, sorted by name (what catalog views show).
    pub fn tables(&self) -> Vec<Arc<TableInfo>> {
        let mut tables: Vec<Arc<TableInfo>> =
            self.catalog.read().tables.values().cloned().collect();
        tables.sort_by(|a, b| a.schema.name.cmp(&b.schema.name));
        tables
    }

    /// The committed `COMMENT ON` text of `object` (`table:t`, `column:t.c`, `index:i`, ...).
    pub fn comment(&self, object: &str) -> Option<String> {
        self.catalog.read().comments.get(object).cloned()
    }

    /// Whether a DDL transaction is running (see [`SchemaLock::ddl_active`]).
    pub fn ddl_active(&self) -> bool {
        self.schema_lock.ddl_active()
    }

    pub fn session(self: &Arc<Self>) -> SqlResult<Session> {
        let worker = self.db.worker()?;
        let id = self.next_session.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Session::new(Arc::clone(self), worker, id))
    }

    /// The names of the SQL tables.
    pub fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.catalog.read().tables.keys().cloned().collect();
        names.sort();
        names
    }

    /// Reads every row of every table and checks it against its schema version
    /// (`check.rs`, `engram check --rows`).
    pub fn check_rows(&self) -> SqlResult<check::RowCheck> {
        check::check_rows(&self.db, &self.tables())
    }

    /// A table's schema.
    pub fn table_schema(&self, name: &str) -> Option<TableSchema> {
        self.catalog.read().tables.get(name).map(|t| t.schema.clone())
    }

    /// Records that sequence values up to `limit` may be handed out.
    fn reserve(&self, sequence: &Sequence, limit: i64) -> SqlResult<()> {
        let key = format!("seq:{}", sequence.key).into_bytes();
        let value = limit.to_string().into_bytes();
        let mut worker = self.system.lock();
        worker.transaction(Isolation::Serializable, |txn| {
            txn.put(&self.catalog_table, &key, &value)
        })?;
        self.log_catalog_rows(&worker.last_commit(), &[(key, Some(value))])?;
        // Values are handed out once this returns, even by a statement that commits nothing
        // to wait on: the reservation must be durable first (once per block of values).
        worker.wait_durable()?;
        Ok(())
    }

    /// Makes the catalog rows that a committed transaction wrote durable whatever the
    /// durability: with `off`, only checkpoints keep other rows, but a table created must
    /// survive a crash, and a sequence must not hand a value out twice
    /// (`Database::log_catalog_rows`; with the log on, the log holds them).
    pub(crate) fn log_catalog_rows(
        &self,
        commit: &CommitInfo,
        rows: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> SqlResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let rows: Vec<(&[u8], Option<&[u8]>)> =
            rows.iter().map(|(key, value)| (&key[..], value.as_deref())).collect();
        self.db.log_catalog_rows(&self.catalog_table, commit, &rows)?;
        Ok(())
    }
}

/// The largest hidden row id of a table without a primary key: its last key, decoded.
fn max_rowid(worker: &mut Worker, table: &TableRef, format: KeyFormat) -> SqlResult<i64> {
    let mut max = 0;
    worker.transaction(Isolation::Serializable, |txn| {
        txn.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Reverse, 1, |key, _| {
            match format {
                KeyFormat::Fixed if key.len() == 8 => {
                    let raw = u64::from_be_bytes(key.try_into().unwrap_or_default()) ^ (1 << 63);
                    max = raw as i64;
                }
                KeyFormat::Compact => {
                    if let Some((rowid, length)) = decode_compact_int(key)
                        && length == key.len()
                    {
                        max = rowid;
                    }
                }
                KeyFormat::Fixed => {}
            }
            false
        })?;
        Ok(())
    })?;
    Ok(max)
}

/// The engine's row-to-key hook for the tables of `db`. It gives up (the key stays unknown)
/// rather than wait for the catalog, which the aborting session may be changing.
fn row_keys(db: Weak<SqlDb>) -> engram_engine::RowKeys {
    Arc::new(move |table: engram_engine::TableId, row: &[u8], out: &mut Vec<u8>| {
        let Some(db) = db.upgrade() else { return false };
        let Some(catalog) = db.catalog.try_read() else { return false };
        let Some(info) = conflicts::table_of(&catalog, table) else { return false };
        if info.schema.primary_key.is_empty() {
            return false;
        }
        let mut values = Vec::new();
        if info.decode(row, &codec::Wanted::ALL, &mut values).is_err() {
            return false;
        }
        catalog::primary_key(&info, &values, out);
        true
    })
}
