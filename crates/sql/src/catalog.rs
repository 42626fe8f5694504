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

use crate::codec::{
    KeyFormat, Wanted, decode_row, decode_row_noting, encode_index_key, encode_key, encode_row,
    patch_row, row_version, row_width, widen_row,
};
use crate::error::{SqlError, SqlResult};
use crate::types::{Type, Value};
use engram_engine::storage::KeyExtractor;
use engram_engine::{IndexDefinition, IndexKeys, IndexSpec, TableRef, TableSpec};
use parking_lot::{Condvar, Mutex, RwLock};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const CATALOG_TABLE: &str = "_engram_catalog";

/// The prefix of temporary tables' catalog names (`session/temp.rs`), which no user table may
/// take.
pub const TEMP_PREFIX: &str = "_engram_temp";

/// PostgreSQL's limit on a table's columns (dropped ones count).
pub const MAX_COLUMNS: usize = 1600;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnSchema {
    pub name: String,
    pub ty: Type,
    pub not_null: bool,
    /// The default expression as SQL text.
    pub default: Option<String>,
    /// For SERIAL columns: the catalog key of the sequence.
    pub sequence: Option<String>,
    /// Dropped by `ALTER TABLE ... DROP COLUMN`: the column keeps its place in rows (NULL in
    /// rows written since) and no statement can name it (`name` is PostgreSQL's
    /// `........pg.dropped.N........`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped: bool,
    /// What rows written before the column was added read in it (`ADD COLUMN ... DEFAULT`),
    /// encoded as a one-column row (`codec::encode_row`); absent: NULL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<u8>>,
    /// An identity column (`GENERATED ... AS IDENTITY`): its values come from `sequence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<crate::ast::Identity>,
}

impl ColumnSchema {
    pub fn new(name: String, ty: Type) -> ColumnSchema {
        ColumnSchema {
            name,
            ty,
            not_null: false,
            default: None,
            sequence: None,
            dropped: false,
            missing: None,
            identity: None,
        }
    }
}

/// The name a dropped column takes, as PostgreSQL names it: no identifier an application
/// writes is spelled so.
pub fn dropped_name(position: usize) -> String {
    format!("........pg.dropped.{}........", position + 1)
}

/// Whether `name` is a dropped column's (`dropped_name`).
pub fn is_dropped_name(name: &str) -> bool {
    name.starts_with("........pg.dropped.")
}

/// The column types rows were written with from schema version `from` on, up to the next
/// layout's `from` (`TableSchema::layouts`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Layout {
    pub from: u16,
    pub types: Vec<Type>,
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
    /// The layouts of rows written before the column types last changed, oldest first: a
    /// row of version `v` below `types_from` decodes with the types of the last layout whose
    /// `from` is at most `v` (a row holds as many columns as its layout had when it was
    /// written). Rows of `types_from` and later decode with the current types; a row written
    /// before a column was added reads that column's `missing` value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layouts: Vec<Layout>,
    /// The first schema version whose rows have the current column types (0: every one).
    #[serde(default)]
    pub types_from: u16,
    /// The table's foreign keys (`exec/foreign.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeySchema>,
    /// The table's CHECK constraints: each row written must not make one false.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSchema>,
}

/// A CHECK constraint: its name and its expression as SQL text over the table's columns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckSchema {
    pub name: String,
    pub expr: String,
}

/// A foreign key: `columns` of this table reference `ref_columns` of table `table` (its
/// primary key or a unique index's columns, in the key's order or another).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForeignKeySchema {
    pub name: String,
    pub columns: Vec<usize>,
    pub table: String,
    pub ref_columns: Vec<usize>,
    pub on_delete: crate::ast::FkAction,
    pub on_update: crate::ast::FkAction,
    #[serde(default)]
    pub deferrable: bool,
    /// `MATCH FULL` (else MATCH SIMPLE).
    #[serde(default)]
    pub match_full: bool,
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

    /// The column named `name`; never a dropped one.
    /// Refuses a key or index over a json column: `json` has no equality (42704, as in
    /// PostgreSQL), and `jsonb` keys are not built yet (equal values may print differently:
    /// `1.0` and `1`), so a probe could miss a row (0A000).
    pub fn check_key_types(&self) -> SqlResult<()> {
        let keyed = self.primary_key.iter().chain(self.indexes.iter().flat_map(|i| &i.columns));
        for &at in keyed {
            match self.columns[at].ty {
                Type::Json => {
                    return Err(SqlError::new(
                        "42704",
                        "data type json has no default operator class for access method \"btree\"",
                    ));
                }
                Type::Jsonb => {
                    return Err(SqlError::unsupported("a key or index over a jsonb column"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name && !c.dropped)
    }

    /// The positions of the columns statements see (every one but the dropped), in order.
    pub fn visible(&self) -> impl Iterator<Item = usize> + '_ {
        self.columns.iter().enumerate().filter(|(_, c)| !c.dropped).map(|(at, _)| at)
    }

    /// The column types of rows of version `version`, when they differ from the current
    /// ones (`None`: decode with the current types).
    pub fn past_types(&self, version: u16) -> Option<&[Type]> {
        if version >= self.types_from {
            return None;
        }
        self.layouts.iter().rev().find(|layout| layout.from <= version).map(|l| &l.types[..])
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
/// PostgreSQL). Values are not transactional: a rolled-back transaction's values stay used.
#[derive(Debug)]
pub struct Sequence {
    /// The key of its reservation row (`seq:KEY`): `@name#generation` for a sequence made by
    /// CREATE SEQUENCE or for a SERIAL or identity column (unique to the object: a sequence made
    /// later under the same name never takes an older one's values), `engine_table.column` for
    /// a SERIAL column of a table created before sequences were objects.
    pub key: String,
    pub state: Mutex<SequenceState>,
}

/// A sequence's options, as CREATE SEQUENCE gives them (PostgreSQL's defaults otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceOptions {
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub start: i64,
    pub cycle: bool,
}

impl Default for SequenceOptions {
    fn default() -> Self {
        SequenceOptions { increment: 1, min: 1, max: i64::MAX, start: 1, cycle: false }
    }
}

/// Where a sequence stands.
#[derive(Debug, Clone, Copy)]
pub struct SequenceState {
    pub options: SequenceOptions,
    /// The value `nextval` hands out next (wide, so that one step past a bound does not
    /// overflow).
    pub next: i128,
    /// Values up to here, in the increment's direction, are reserved in the catalog table
    /// (wide, so that "nothing reserved" below `i64::MIN` or above `i64::MAX` is one).
    pub reserved: i128,
    /// Whether `next` follows a value handed out (PostgreSQL's `is_called`).
    pub called: bool,
}

impl SequenceState {
    /// A sequence that has handed nothing out.
    pub fn new(options: SequenceOptions) -> SequenceState {
        SequenceState {
            options,
            next: i128::from(options.start),
            reserved: i128::from(options.start) - i128::from(options.increment),
            called: false,
        }
    }

    /// After a restart: values up to `reserved` may have been handed out, so it goes on
    /// after them.
    pub fn recovered(options: SequenceOptions, reserved: i64) -> SequenceState {
        SequenceState {
            options,
            next: i128::from(reserved) + i128::from(options.increment),
            reserved: i128::from(reserved),
            called: true,
        }
    }

    /// The value a `SELECT last_value FROM seq` shows.
    pub fn last_value(&self) -> i64 {
        let last =
            if self.called { self.next - i128::from(self.options.increment) } else { self.next };
        last.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

impl Sequence {
    pub fn new(key: String, state: SequenceState) -> Sequence {
        Sequence { key, state: Mutex::new(state) }
    }

    /// The name errors give the sequence: its name where its key holds one (`@name#7`).
    pub fn display_name(&self) -> &str {
        match self.key.strip_prefix('@') {
            Some(named) => named.rsplit_once('#').map_or(named, |(name, _)| name),
            None => &self.key,
        }
    }

    /// Hands out the next value. `reserve(limit)` makes values up to `limit` durable before
    /// any of them is returned; `name` names the sequence in errors.
    pub fn next_value(
        &self,
        name: &str,
        reserve: impl FnOnce(&Sequence, i64) -> SqlResult<()>,
    ) -> SqlResult<i64> {
        let mut state = self.state.lock();
        let options = state.options;
        let increment = i128::from(options.increment);
        let (min, max) = (i128::from(options.min), i128::from(options.max));
        if state.next > max || state.next < min {
            if !options.cycle {
                let (which, bound) =
                    if increment > 0 { ("maximum", options.max) } else { ("minimum", options.min) };
                return Err(SqlError::new(
                    "2200H",
                    format!("nextval: reached {which} value of sequence \"{name}\" ({bound})"),
                ));
            }
            state.next = if increment > 0 { min } else { max };
            state.reserved = state.next - increment;
        }
        let value = state.next as i64;
        let unreserved =
            if increment > 0 { state.next > state.reserved } else { state.next < state.reserved };
        if unreserved {
            let limit = (state.next + increment * i128::from(SEQUENCE_BLOCK - 1)).clamp(min, max);
            reserve(self, limit as i64)?;
            state.reserved = limit;
        }
        state.next += increment;
        state.called = true;
        Ok(value)
    }

    /// `setval`: the sequence goes on after `value` (`called`) or at it. Reserves `value`
    /// durably so that a restart goes on after it.
    pub fn set_value(
        &self,
        name: &str,
        value: i64,
        called: bool,
        reserve: impl FnOnce(&Sequence, i64) -> SqlResult<()>,
    ) -> SqlResult<()> {
        let mut state = self.state.lock();
        let options = state.options;
        if value < options.min || value > options.max {
            return Err(SqlError::new(
                "22003",
                format!(
                    "setval: value {value} is out of bounds for sequence \"{name}\" ({}..{})",
                    options.min, options.max
                ),
            ));
        }
        let increment = i128::from(options.increment);
        let next = if called { i128::from(value) + increment } else { i128::from(value) };
        // What a restart goes on after (`SequenceState::recovered`): the value before `next`
        // (at the type's end, the end itself: one value skipped, none repeated).
        let reserved = next - increment;
        reserve(self, reserved.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)?;
        *state = SequenceState { options, next, reserved, called };
        Ok(())
    }
}

/// A sequence as a named object of the catalog (`sequence:NAME`): CREATE SEQUENCE, or the one a
/// SERIAL or identity column owns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SequenceDef {
    pub name: String,
    /// Its reservation key ([`Sequence::key`]).
    pub key: String,
    /// SMALLINT, INTEGER or BIGINT: what its values must fit.
    pub ty: Type,
    pub options: SequenceOptions,
    /// The table and column that own it (dropped with them).
    pub owned_by: Option<(String, String)>,
}

pub const SEQUENCE_BLOCK: i64 = 1000;

/// A table as the planner and executor use it: one version of its definition. An ALTER
/// TABLE makes a new one; transactions that began before it committed keep theirs
/// (`Catalog::table_as_of`).
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
    /// Per column, what a row written before the column was added reads there.
    pub missing: Box<[Value]>,
    /// Whether any of `missing` is not NULL.
    has_missing: bool,
    /// The layouts of every version of this table committed so far, shared by all its
    /// versions: a transaction still reading an older version meets rows written since.
    pub layouts: Arc<RwLock<Vec<Layout>>>,
    /// The catalog version at which this version was installed (`u64::MAX` while the DDL
    /// that made it has not committed).
    pub since: AtomicU64,
    /// The version this one replaced, for transactions that began before it.
    pub previous: Option<Arc<TableInfo>>,
}

/// Drops a long chain of older versions one link at a time, not by recursion.
impl Drop for TableInfo {
    fn drop(&mut self) {
        let mut previous = self.previous.take();
        while let Some(info) = previous {
            previous = match Arc::try_unwrap(info) {
                Ok(mut info) => info.previous.take(),
                Err(_) => None,
            };
        }
    }
}

impl TableInfo {
    pub fn new(
        schema: TableSchema,
        engine: TableRef,
        rowid: Arc<AtomicI64>,
        sequences: Vec<Option<Arc<Sequence>>>,
        system: Option<Arc<SystemRows>>,
    ) -> TableInfo {
        let types = schema.types();
        let missing: Box<[Value]> = schema
            .columns
            .iter()
            .map(|column| {
                column.missing.as_ref().map_or(Value::Null, |bytes| {
                    let mut values = Vec::new();
                    match decode_row(bytes, &[column.ty], &Wanted::ALL, &mut values) {
                        Ok(()) => values.pop().unwrap_or(Value::Null),
                        Err(_) => Value::Null,
                    }
                })
            })
            .collect();
        let has_missing = missing.iter().any(|v| !v.is_null());
        let mut layouts = schema.layouts.clone();
        layouts.push(Layout { from: schema.types_from, types: types.clone() });
        TableInfo {
            types,
            engine,
            rowid,
            sequences,
            system,
            missing,
            has_missing,
            layouts: Arc::new(RwLock::new(layouts)),
            since: AtomicU64::new(0),
            previous: None,
            schema,
        }
    }

    /// A new version of this table with `schema` (same engine table), not yet installed.
    pub fn altered(
        self: &Arc<TableInfo>,
        schema: TableSchema,
        sequences: Vec<Option<Arc<Sequence>>>,
    ) -> TableInfo {
        let mut info =
            TableInfo::new(schema, self.engine.clone(), Arc::clone(&self.rowid), sequences, None);
        info.layouts = Arc::clone(&self.layouts);
        info.since = AtomicU64::new(u64::MAX);
        // Every older version stays reachable, so that a transaction however old reads the
        // version it began with; a rewrite or a drop of the table lets them go.
        info.previous = Some(Arc::clone(self));
        info
    }

    /// Records this version's layout in the table's shared list, when it commits.
    pub fn publish_layout(&self) {
        let mut layouts = self.layouts.write();
        let current = Layout { from: self.schema.types_from, types: self.types.clone() };
        // Layouts of versions a rollback took back are replaced.
        layouts.retain(|layout| layout.from <= current.from);
        match layouts.last_mut() {
            Some(last) if last.from == current.from => *last = current,
            _ => layouts.push(current),
        }
    }

    pub fn next_rowid(&self) -> i64 {
        self.rowid.fetch_add(1, Ordering::Relaxed)
    }

    /// Decodes the `wanted` columns of a stored row of this table, written under any schema
    /// version, into `out` as this version's columns (`codec::decode_row`).
    #[inline(always)]
    pub fn decode(&self, row: &[u8], wanted: &Wanted, out: &mut Vec<Value>) -> SqlResult<()> {
        if row_version(row) == self.schema.version {
            decode_row(row, &self.types, wanted, out)
        } else {
            self.decode_other(row, wanted, out)
        }
    }

    /// [`TableInfo::decode`], noting where columns start (`codec::decode_row_noting`); a
    /// row of another version notes nothing, so an UPDATE re-encodes it whole.
    #[inline(always)]
    pub fn decode_noting(
        &self,
        row: &[u8],
        wanted: &Wanted,
        out: &mut Vec<Value>,
        starts: &mut Vec<u32>,
    ) -> SqlResult<()> {
        if row_version(row) == self.schema.version {
            decode_row_noting(row, &self.types, wanted, out, starts)
        } else {
            starts.clear();
            self.decode_other(row, wanted, out)
        }
    }

    /// Whether `row` was written under this version's layout (its bytes can be patched).
    #[inline(always)]
    pub fn current_layout(&self, row: &[u8]) -> bool {
        row_version(row) == self.schema.version
    }

    /// Fails with 40001 when `row` was written under a later version than this one: a
    /// statement of this version that rewrote it would drop what that version added.
    pub fn check_not_newer(&self, row: &[u8]) -> SqlResult<()> {
        if row_version(row) <= self.schema.version {
            return Ok(());
        }
        Err(SqlError::new(
            "40001",
            format!(
                "could not serialize access: a row of table \"{}\" was written under a newer \
                 definition of the table (ALTER TABLE) during this statement; retry the \
                 transaction",
                self.schema.name
            ),
        ))
    }

    /// [`codec::patch_row`] for a row of any version of this table's current column types
    /// (older rows with fewer columns are widened first, `codec::widen_row`): `false` when
    /// the row must be decoded and encoded whole (its columns had other types). A row of a
    /// version after this one is an error: the statement would drop what that version added.
    pub fn patch(
        &self,
        row: &[u8],
        changes: &[(usize, Value)],
        starts: &[u32],
        out: &mut Vec<u8>,
    ) -> SqlResult<bool> {
        let version = row_version(row);
        if version == self.schema.version {
            return patch_row(row, version, &self.types, changes, starts, out);
        }
        self.check_not_newer(row)?;
        if version < self.schema.types_from {
            return Ok(false);
        }
        if row_width(row) == self.types.len() {
            return patch_row(row, self.schema.version, &self.types, changes, starts, out);
        }
        let mut widened = Vec::with_capacity(row.len() + 16);
        widen_row(row, self.schema.version, &self.types, &self.missing, &mut widened)?;
        patch_row(&widened, self.schema.version, &self.types, changes, &[], out)
    }

    #[cold]
    fn decode_other(&self, row: &[u8], wanted: &Wanted, out: &mut Vec<Value>) -> SqlResult<()> {
        let version = row_version(row);
        let past = if version > self.schema.version {
            // Written under a later version (this transaction began before an ALTER).
            let layouts = self.layouts.read();
            layouts
                .iter()
                .rev()
                .find(|layout| layout.from <= version)
                .filter(|layout| layout.from > self.schema.types_from)
                .map(|layout| layout.types.clone())
        } else {
            self.schema.past_types(version).map(<[Type]>::to_vec)
        };
        match past {
            None => decode_row(row, &self.types, wanted, out)?,
            Some(types) => {
                let mut all = Vec::new();
                decode_row(row, &types, &Wanted::ALL, &mut all)?;
                out.clear();
                out.resize_with(self.types.len(), || Value::Null);
                for (column, value) in all.into_iter().enumerate().take(self.types.len()) {
                    if wanted.wants(column) {
                        out[column] = value;
                    }
                }
            }
        }
        if self.has_missing {
            let stored = row_width(row);
            for (column, missing) in self.missing.iter().enumerate().skip(stored) {
                if wanted.wants(column) && !missing.is_null() {
                    out[column] = missing.clone();
                }
            }
        }
        Ok(())
    }

    /// `row` in this version's layout (the row itself when it already is).
    pub fn upgrade<'r>(&self, row: &'r [u8], out: &'r mut Vec<u8>) -> SqlResult<&'r [u8]> {
        if self.current_layout(row) {
            return Ok(row);
        }
        let mut values = Vec::new();
        self.decode(row, &Wanted::ALL, &mut values)?;
        encode_row(self.schema.version, &self.types, &values, out);
        Ok(out)
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
    /// Every sequence by its key ([`Sequence::key`]).
    pub sequences: HashMap<String, Arc<Sequence>>,
    /// The named sequences, by name.
    pub sequence_defs: HashMap<String, Arc<SequenceDef>>,
    pub views: HashMap<String, Arc<ViewDef>>,
    /// `COMMENT ON` texts by object (`table:t`, `column:t.c`, `view:v`, ...; `ddl/comment.rs`).
    pub comments: HashMap<String, String>,
}

/// A view: a query kept as its SQL text (catalog row `view:name`, JSON), bound again where
/// it is read (`plan/derived.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewDef {
    pub name: String,
    pub query: String,
    /// The view's column names (the query's own where `CREATE VIEW` names none).
    pub columns: Vec<String>,
    /// The tables and views the query names: dropping one of them needs CASCADE.
    pub depends: Vec<String>,
}

/// A table version an uncommitted ALTER TABLE made: its session sees it, others the
/// committed one, until the ALTER commits (`session/schema.rs`).
#[derive(Debug, Clone)]
pub struct Pending {
    /// The table's committed name, and the committed version the ALTER started from.
    pub old_name: String,
    pub base: Arc<TableInfo>,
    /// The name and version after the transaction's ALTERs so far.
    pub name: String,
    pub info: Arc<TableInfo>,
}

/// What one session sees of the catalog beyond its committed state: its own uncommitted
/// ALTERs, and the catalog version its transaction began at (tables altered since read as
/// they were then).
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    pub pending: &'a [Pending],
    pub as_of: u64,
    /// The session's temporary tables: name to catalog name (`session/temp.rs`).
    pub temp: Option<&'a HashMap<String, String>>,
}

impl View<'_> {
    /// The committed catalog as it is now.
    pub const CURRENT: View<'static> = View { pending: &[], as_of: u64::MAX, temp: None };
}

impl Catalog {
    pub fn table(&self, name: &str) -> SqlResult<Arc<TableInfo>> {
        self.tables.get(name).cloned().ok_or_else(|| SqlError::undefined_table(name))
    }

    /// The table `name` as `view` sees it, and whether that is the version writes go to (a
    /// transaction that began before an ALTER TABLE of the table committed reads the version
    /// it began with, and may not write it).
    pub fn table_in(&self, name: &str, view: View<'_>) -> SqlResult<(Arc<TableInfo>, bool)> {
        // A temporary table of the session shadows a table of the same name; another
        // session's cannot be reached by its catalog name.
        let name = match view.temp.and_then(|temp| temp.get(name)) {
            Some(internal) if self.tables.contains_key(internal) => internal.as_str(),
            _ if name.starts_with(TEMP_PREFIX)
                && !view.temp.is_some_and(|temp| temp.values().any(|own| own == name)) =>
            {
                return Err(SqlError::undefined_table(name));
            }
            _ => name,
        };
        for pending in view.pending.iter().rev() {
            if pending.name == name {
                return Ok((Arc::clone(&pending.info), true));
            }
            if pending.old_name == name {
                return Err(SqlError::undefined_table(name));
            }
        }
        let info = self.table(name)?;
        if info.since.load(Ordering::Acquire) <= view.as_of {
            return Ok((info, true));
        }
        let mut older = &info;
        while let Some(previous) = &older.previous {
            older = previous;
            if older.since.load(Ordering::Acquire) <= view.as_of {
                break;
            }
        }
        if Arc::ptr_eq(older, &info) {
            // Created since the transaction began: there is no older version.
            return Ok((info, true));
        }
        Ok((Arc::clone(older), false))
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

    /// The sequence of reservation key `key`, made with `options` if there is none.
    pub fn sequence(&mut self, key: &str, options: SequenceOptions) -> Arc<Sequence> {
        Arc::clone(self.sequences.entry(key.to_string()).or_insert_with(|| {
            Arc::new(Sequence::new(key.to_string(), SequenceState::new(options)))
        }))
    }

    /// The sequence of reservation key `key`, made with its definition's options if there is
    /// none (a SERIAL column's sequence from before sequences were objects has the defaults).
    pub fn sequence_of_key(&mut self, key: &str) -> Arc<Sequence> {
        let options = self
            .sequence_defs
            .values()
            .find(|def| def.key == key)
            .map_or_else(SequenceOptions::default, |def| def.options);
        self.sequence(key, options)
    }

    /// The named sequence `name` and its state.
    pub fn named_sequence(&self, name: &str) -> SqlResult<(Arc<SequenceDef>, Arc<Sequence>)> {
        let undefined = || SqlError::new("42P01", format!("relation \"{name}\" does not exist"));
        let def = self.sequence_defs.get(name).ok_or_else(undefined)?;
        let sequence = self.sequences.get(&def.key).ok_or_else(undefined)?;
        Ok((Arc::clone(def), Arc::clone(sequence)))
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
