//! The SQL catalog: tables with columns, types, defaults, keys and indexes; sequences; the
//! schema lock that keeps DDL apart from running transactions.
//!
//! The catalog is stored in the engine table `_engram_catalog` (key `table:<name>`, value the
//! schema as JSON), written in the same engine transaction as the DDL, so a DDL statement
//! commits or rolls back with its transaction and is logged and recovered like data. Each SQL
//! table is an engine table named `<name>#<generation>`; DDL that changes keys or indexes
//! (CREATE INDEX, TRUNCATE, ADD PRIMARY KEY) builds a new generation and drops the old one at
//! commit. Engine tables no catalog row names (left by a crash between the two) are dropped
//! at open.

use crate::codec::{KeyFormat, Wanted, decode_row, encode_index_key, encode_key};
use crate::error::{SqlError, SqlResult};
use crate::types::{Type, Value};
use engram_engine::storage::KeyExtractor;
use engram_engine::{IndexDefinition, IndexKeys, IndexSpec, TableRef, TableSpec};
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

pub const CATALOG_TABLE: &str = "_engram_catalog";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnSchema {
    pub name: String,
    pub ty: Type,
    pub not_null: bool,
    /// The default expression as SQL text.
    pub default: Option<String>,
    /// For SERIAL columns: the catalog key of the sequence.
    pub sequence: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexSchema {
    pub name: String,
    pub columns: Vec<usize>,
    pub unique: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableSchema {
    pub name: String,
    /// The engine table holding the rows.
    pub engine_name: String,
    /// Written into each row; bumped when columns change.
    pub version: u16,
    pub columns: Vec<ColumnSchema>,
    /// Primary-key columns; empty: a hidden 64-bit row id is the key.
    pub primary_key: Vec<usize>,
    pub indexes: Vec<IndexSchema>,
    /// The primary key's constraint name (`<table>_pkey`).
    pub primary_name: Option<String>,
    /// How the table's primary and secondary keys encode integers; absent (`Fixed`) in
    /// catalogs written before compact keys.
    #[serde(default)]
    pub key_format: KeyFormat,
}

/// What an index definition in the engine's catalog holds, so that recovery can rebuild its
/// key extractor without the SQL catalog.
#[derive(Debug, Serialize, Deserialize)]
struct IndexDefinitionJson {
    types: Vec<Type>,
    columns: Vec<usize>,
    unique: bool,
    #[serde(default)]
    key_format: KeyFormat,
}

impl TableSchema {
    pub fn types(&self) -> Vec<Type> {
        self.columns.iter().map(|c| c.ty).collect()
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The engine's table specification: one secondary index per SQL index.
    pub fn engine_spec(&self) -> TableSpec {
        let types = self.types();
        let mut spec = TableSpec::new(self.engine_name.clone());
        for index in &self.indexes {
            let definition = IndexDefinitionJson {
                types: types.clone(),
                columns: index.columns.clone(),
                unique: index.unique,
                key_format: self.key_format,
            };
            let key_of =
                key_extractor(self.key_format, types.clone(), index.columns.clone(), index.unique);
            let mut index_spec = IndexSpec::new(index.name.clone(), index.unique, |_, _| false);
            index_spec.key_of = key_of;
            spec = spec
                .index(index_spec.definition(serde_json::to_vec(&definition).unwrap_or_default()));
        }
        spec
    }
}

/// Secondary keys: per column a marker (1 value, 2 NULL, so NULLs sort last) then the value's
/// key encoding. A unique index leaves out rows with a NULL key column (NULLs are distinct in
/// PostgreSQL's unique indexes).
fn key_extractor(
    format: KeyFormat,
    types: Vec<Type>,
    columns: Vec<usize>,
    unique: bool,
) -> KeyExtractor {
    let mut marks = vec![false; types.len()];
    for &column in &columns {
        if column < marks.len() {
            marks[column] = true;
        }
    }
    let wanted = Wanted::marked(marks, &types);
    Arc::new(move |row: &[u8], out: &mut Vec<u8>| {
        match encode_index_key(format, row, &types, &columns, unique, out) {
            Ok(Some(keyed)) => return keyed,
            Err(_) => return false,
            // Too many columns for one walk: decoded, below.
            Ok(None) => {}
        }
        let mut values = Vec::new();
        if decode_row(row, &types, &wanted, &mut values).is_err() {
            return false;
        }
        for &column in &columns {
            match values.get(column) {
                Some(Value::Null) | None => {
                    if unique {
                        return false;
                    }
                    out.push(2);
                }
                Some(value) => {
                    out.push(1);
                    encode_key(format, types[column], value, out);
                }
            }
        }
        true
    })
}

/// Key extractors for recovery (`engram_engine::Config::index_keys`).
pub fn index_keys() -> IndexKeys {
    IndexKeys::new(|definition: &IndexDefinition<'_>| {
        let parsed: IndexDefinitionJson = serde_json::from_slice(definition.definition).ok()?;
        Some(key_extractor(parsed.key_format, parsed.types, parsed.columns, parsed.unique))
    })
}

/// A sequence: values are handed out from memory and reserved in blocks in the catalog table,
/// so a value is never handed out twice, even after a crash (values may be skipped, as in
/// PostgreSQL).
#[derive(Debug)]
pub struct Sequence {
    pub key: String,
    /// (next value, last reserved value).
    pub state: Mutex<(i64, i64)>,
}

pub const SEQUENCE_BLOCK: i64 = 1000;

/// A table as the planner and executor use it.
#[derive(Debug)]
pub struct TableInfo {
    pub schema: TableSchema,
    pub engine: TableRef,
    pub types: Vec<Type>,
    /// Next hidden row id (tables without a primary key).
    pub rowid: Arc<AtomicI64>,
    /// Per column, the sequence of a SERIAL column.
    pub sequences: Vec<Option<Arc<Sequence>>>,
    /// A system view's rows (`system.rs`): the executor reads these instead of `engine`,
    /// which is then an engine table that stays empty.
    pub system: Option<Arc<SystemRows>>,
}

impl TableInfo {
    pub fn next_rowid(&self) -> i64 {
        self.rowid.fetch_add(1, Ordering::Relaxed)
    }
}

/// The tables by name, and a version bumped by every DDL (prepared plans re-plan when it
/// moved).
#[derive(Debug, Default)]
pub struct Catalog {
    pub tables: HashMap<String, Arc<TableInfo>>,
    /// The empty engine table system views name as theirs (`system::SYSTEM_TABLE`).
    pub system_table: Option<TableRef>,
    pub version: u64,
    pub generation: u64,
    pub sequences: HashMap<String, Arc<Sequence>>,
}

impl Catalog {
    pub fn table(&self, name: &str) -> SqlResult<Arc<TableInfo>> {
        self.tables.get(name).cloned().ok_or_else(|| SqlError::undefined_table(name))
    }

    /// The table owning index `name`.
    pub fn index_table(&self, name: &str) -> Option<Arc<TableInfo>> {
        self.tables
            .values()
            .find(|table| {
                table.schema.indexes.iter().any(|index| index.name == name)
                    || table.schema.primary_name.as_deref() == Some(name)
            })
            .cloned()
    }

    pub fn next_engine_name(&mut self, table: &str) -> String {
        self.generation += 1;
        format!("{table}#{}", self.generation)
    }

    pub fn sequence(&mut self, key: &str) -> Arc<Sequence> {
        Arc::clone(self.sequences.entry(key.to_string()).or_insert_with(|| {
            Arc::new(Sequence { key: key.to_string(), state: Mutex::new((1, 0)) })
        }))
    }
}

/// Keeps DDL apart from transactions: every transaction holds the lock shared; DDL takes it
/// exclusively (waiting for other transactions to end) until its transaction ends.
#[derive(Debug, Default)]
pub struct SchemaLock {
    state: Mutex<LockState>,
    changed: Condvar,
    /// `state.writer.is_some()`, readable without the mutex (a server asks per statement).
    writer_present: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct LockState {
    readers: usize,
    writer: Option<u64>,
}

/// How long DDL waits for other transactions before giving up (PostgreSQL's `lock_timeout`
/// is off by default, but a deadlock between two DDL transactions must end).
pub const SCHEMA_LOCK_WAIT: Duration = Duration::from_secs(10);

impl SchemaLock {
    /// Takes the lock shared for session `session` (a no-op for its own writer).
    pub fn lock_shared(&self, session: u64) -> SqlResult<()> {
        let mut state = self.state.lock();
        let deadline = Instant::now() + SCHEMA_LOCK_WAIT;
        while state.writer.is_some() && state.writer != Some(session) {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return Err(SqlError::new(
                    "55P03",
                    "could not obtain the schema lock: another transaction is running DDL",
                ));
            }
        }
        state.readers += 1;
        Ok(())
    }

    pub fn unlock_shared(&self) {
        let mut state = self.state.lock();
        state.readers -= 1;
        self.changed.notify_all();
    }

    /// Upgrades to exclusive for `session`, which holds the lock shared.
    pub fn lock_exclusive(&self, session: u64) -> SqlResult<()> {
        let mut state = self.state.lock();
        if state.writer == Some(session) {
            return Ok(());
        }
        let deadline = Instant::now() + SCHEMA_LOCK_WAIT;
        while state.writer.is_some() || state.readers > 1 {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return Err(SqlError::new(
                    "55P03",
                    "could not obtain the schema lock for DDL: other transactions stayed open",
                ));
            }
        }
        state.writer = Some(session);
        self.writer_present.store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Whether a DDL transaction holds (or is about to hold) the lock: taking it shared may
    /// then wait, and a server runs the statement where waiting blocks no event loop.
    pub fn ddl_active(&self) -> bool {
        self.writer_present.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn unlock_exclusive(&self, session: u64) {
        let mut state = self.state.lock();
        if state.writer == Some(session) {
            state.writer = None;
            self.writer_present.store(false, std::sync::atomic::Ordering::Release);
            self.changed.notify_all();
        }
    }
}

/// A system view's rows: primary key to encoded row, in key order.
pub type SystemRows = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;

/// Encodes the primary key of a full row.
pub fn primary_key(table: &TableInfo, values: &[Value], out: &mut Vec<u8>) {
    out.clear();
    for &column in &table.schema.primary_key {
        encode_key(table.schema.key_format, table.types[column], &values[column], out);
    }
}
