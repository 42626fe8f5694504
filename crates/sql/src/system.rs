//! System views: the `pg_catalog` and `information_schema` relations clients read to learn
//! what a database holds (drivers' type lookups, `information_schema.columns`, ORMs' checks
//! that a table exists), built from Engram's catalog.
//!
//! A view is a table to the planner and executor: columns, a primary key, rows. Its rows are
//! made from the catalog when a statement is planned (`view`), encoded as the row codec
//! encodes stored rows and keyed as stored keys are, and the executor reads them from memory
//! instead of from the engine (`TableInfo::system`), so every query shape SELECT has (joins,
//! filters, grouping, ORDER BY) works on them. A plan that reads a view is planned again at
//! every execution (`QueryPlan::volatile`), so prepared statements see the catalog and the
//! session's settings as they are. Views cannot be written (42501).
//!
//! Object ids: the schemas and types have PostgreSQL's (`pg_catalog` 11, `public` 2200,
//! `int4` 23, ...); user tables are numbered from 16384 in name order, 64 ids per table: the
//! table, its primary key, then its indexes (`relations`), as psql's describe answers
//! (`engram-server`'s `pg_catalog.rs`) number them. Such ids change when a table whose name
//! sorts earlier is created or dropped.

use crate::catalog::{Catalog, ColumnSchema, SystemRows, TableInfo, TableSchema};
use crate::codec::{KeyFormat, encode_key, encode_row};
use crate::types::{Type, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

mod constraints;
pub use constraints::{Constraint, constraint_definition, constraints};

/// First object id of user tables (PostgreSQL's `FirstNormalObjectId`).
pub const FIRST_USER_OID: i64 = 16_384;
/// Object ids each user table takes: itself, its primary key and up to 62 indexes.
pub const OIDS_PER_TABLE: i64 = 64;
const PG_CATALOG_OID: i64 = 11;
const PUBLIC_OID: i64 = 2_200;
const INFORMATION_SCHEMA_OID: i64 = 13_000;
/// The bootstrap superuser's id, the owner of everything.
const OWNER_OID: i64 = 10;
/// The one database's id and name.
const DATABASE_OID: i64 = 16_383;
pub const DATABASE_NAME: &str = "engram";

/// The engine table every system view names as its own: it never holds a row.
pub const SYSTEM_TABLE: &str = "_engram_system_views";

/// A relation as `pg_class` lists it: a user table or one of its indexes.
#[derive(Debug)]
pub struct Relation {
    pub oid: i64,
    pub name: String,
    /// `'r'` table, `'i'` index.
    pub kind: char,
    pub table: Arc<TableInfo>,
    /// For an index: its columns, whether unique, whether the primary key.
    pub index: Option<(Vec<usize>, bool, bool)>,
}

/// The relations of `tables`, which must be sorted by name (their ids follow that order).
pub fn relations(tables: &[Arc<TableInfo>]) -> Vec<Relation> {
    let mut out = Vec::new();
    for (i, table) in tables.iter().enumerate() {
        let oid = FIRST_USER_OID + OIDS_PER_TABLE * i as i64;
        let schema = &table.schema;
        out.push(Relation {
            oid,
            name: schema.name.clone(),
            kind: 'r',
            table: Arc::clone(table),
            index: None,
        });
        if !schema.primary_key.is_empty() {
            out.push(Relation {
                oid: oid + 1,
                name: schema
                    .primary_name
                    .clone()
                    .unwrap_or_else(|| format!("{}_pkey", schema.name)),
                kind: 'i',
                table: Arc::clone(table),
                index: Some((schema.primary_key.clone(), true, true)),
            });
        }
        for (j, index) in schema.indexes.iter().enumerate() {
            out.push(Relation {
                oid: oid + 2 + j as i64,
                name: index.name.clone(),
                kind: 'i',
                table: Arc::clone(table),
                index: Some((index.columns.clone(), index.unique, false)),
            });
        }
    }
    out
}

/// The catalog's tables as the system views list them: sorted by name (their ids follow
/// that order), sessions' temporary tables left out.
pub fn user_tables(catalog: &Catalog) -> Vec<Arc<TableInfo>> {
    let mut tables: Vec<Arc<TableInfo>> = catalog
        .tables
        .values()
        .filter(|t| !t.schema.name.starts_with(crate::catalog::TEMP_PREFIX))
        .cloned()
        .collect();
    tables.sort_by(|a, b| a.schema.name.cmp(&b.schema.name));
    tables
}

/// `pg_get_indexdef` of an index relation.
pub fn index_definition(relation: &Relation) -> Option<String> {
    let (columns, unique, _) = relation.index.as_ref()?;
    Some(format!(
        "CREATE {}INDEX {} ON public.{} USING btree ({})",
        if *unique { "UNIQUE " } else { "" },
        relation.name,
        relation.table.schema.name,
        column_list(&relation.table, columns)
    ))
}

/// The names of `columns`, comma-separated.
pub fn column_list(table: &TableInfo, columns: &[usize]) -> String {
    columns.iter().map(|&c| table.schema.columns[c].name.as_str()).collect::<Vec<_>>().join(", ")
}

/// What a view's rows are made from.
struct Sources<'a> {
    tables: Vec<Arc<TableInfo>>,
    settings: Option<&'a BTreeMap<String, String>>,
    catalog: &'a Catalog,
    engine: Option<&'a engram_engine::Database>,
}

/// A view's shape: its name, columns, how many leading columns form its key, its rows.
struct ViewDefinition {
    schema: &'static str,
    name: &'static str,
    columns: &'static [(&'static str, Type)],
    key_columns: usize,
    rows: fn(&Sources<'_>) -> Vec<Vec<Value>>,
}

const TEXT: Type = Type::Text;
const INT: Type = Type::Int4;
const SMALL: Type = Type::Int2;
const BIG: Type = Type::Int8;
const BOOL: Type = Type::Bool;

const VIEWS: &[ViewDefinition] = &[
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_description",
        columns: &[("objoid", BIG), ("classoid", BIG), ("objsubid", INT), ("description", TEXT)],
        key_columns: 3,
        rows: pg_description,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_namespace",
        columns: &[("oid", BIG), ("nspname", TEXT), ("nspowner", BIG)],
        key_columns: 1,
        rows: namespaces,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_database",
        columns: &[
            ("oid", BIG),
            ("datname", TEXT),
            ("datdba", BIG),
            ("encoding", INT),
            ("datcollate", TEXT),
            ("datctype", TEXT),
            ("datistemplate", BOOL),
            ("datallowconn", BOOL),
            ("datconnlimit", INT),
        ],
        key_columns: 1,
        rows: databases,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_type",
        columns: &[
            ("oid", BIG),
            ("typname", TEXT),
            ("typnamespace", BIG),
            ("typowner", BIG),
            ("typlen", SMALL),
            ("typbyval", BOOL),
            ("typtype", TEXT),
            ("typcategory", TEXT),
            ("typisdefined", BOOL),
            ("typdelim", TEXT),
            ("typrelid", BIG),
            ("typelem", BIG),
            ("typarray", BIG),
            ("typbasetype", BIG),
            ("typtypmod", INT),
            ("typnotnull", BOOL),
        ],
        key_columns: 1,
        rows: types,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_class",
        columns: &[
            ("oid", BIG),
            ("relname", TEXT),
            ("relnamespace", BIG),
            ("reltype", BIG),
            ("relowner", BIG),
            ("relam", BIG),
            ("relpages", INT),
            ("reltuples", Type::Float4),
            ("relhasindex", BOOL),
            ("relpersistence", TEXT),
            ("relkind", TEXT),
            ("relnatts", SMALL),
            ("relchecks", SMALL),
            ("relispartition", BOOL),
        ],
        key_columns: 1,
        rows: classes,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_attribute",
        columns: &[
            ("attrelid", BIG),
            ("attnum", SMALL),
            ("attname", TEXT),
            ("atttypid", BIG),
            ("attlen", SMALL),
            ("atttypmod", INT),
            ("attnotnull", BOOL),
            ("atthasdef", BOOL),
            ("attidentity", TEXT),
            ("attgenerated", TEXT),
            ("attisdropped", BOOL),
        ],
        key_columns: 2,
        rows: attributes,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_index",
        columns: &[
            ("indexrelid", BIG),
            ("indrelid", BIG),
            ("indnatts", SMALL),
            ("indnkeyatts", SMALL),
            ("indisunique", BOOL),
            ("indisprimary", BOOL),
            ("indisvalid", BOOL),
            ("indkey", TEXT),
        ],
        key_columns: 1,
        rows: indexes,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_tables",
        columns: &[
            ("schemaname", TEXT),
            ("tablename", TEXT),
            ("tableowner", TEXT),
            ("tablespace", TEXT),
            ("hasindexes", BOOL),
            ("hasrules", BOOL),
            ("hastriggers", BOOL),
            ("rowsecurity", BOOL),
        ],
        key_columns: 2,
        rows: pg_tables,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_views",
        columns: &[
            ("schemaname", TEXT),
            ("viewname", TEXT),
            ("viewowner", TEXT),
            ("definition", TEXT),
        ],
        key_columns: 2,
        rows: pg_views,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_sequences",
        columns: &[
            ("schemaname", TEXT),
            ("sequencename", TEXT),
            ("sequenceowner", TEXT),
            ("data_type", TEXT),
            ("start_value", BIG),
            ("min_value", BIG),
            ("max_value", BIG),
            ("increment_by", BIG),
            ("cycle", BOOL),
            ("cache_size", BIG),
            ("last_value", BIG),
        ],
        key_columns: 2,
        rows: pg_sequences,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "sequences",
        columns: &[
            ("sequence_catalog", TEXT),
            ("sequence_schema", TEXT),
            ("sequence_name", TEXT),
            ("data_type", TEXT),
            ("numeric_precision", INT),
            ("numeric_precision_radix", INT),
            ("numeric_scale", INT),
            ("start_value", TEXT),
            ("minimum_value", TEXT),
            ("maximum_value", TEXT),
            ("increment", TEXT),
            ("cycle_option", TEXT),
        ],
        key_columns: 3,
        rows: information_sequences,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "views",
        columns: &[
            ("table_catalog", TEXT),
            ("table_schema", TEXT),
            ("table_name", TEXT),
            ("view_definition", TEXT),
            ("check_option", TEXT),
            ("is_updatable", TEXT),
            ("is_insertable_into", TEXT),
        ],
        key_columns: 3,
        rows: information_views,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_indexes",
        columns: &[
            ("schemaname", TEXT),
            ("tablename", TEXT),
            ("indexname", TEXT),
            ("tablespace", TEXT),
            ("indexdef", TEXT),
        ],
        key_columns: 3,
        rows: pg_indexes,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_settings",
        columns: &[
            ("name", TEXT),
            ("setting", TEXT),
            ("unit", TEXT),
            ("category", TEXT),
            ("short_desc", TEXT),
            ("context", TEXT),
            ("vartype", TEXT),
            ("source", TEXT),
        ],
        key_columns: 1,
        rows: settings,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "engram_stat_conflicts",
        columns: &[
            ("rank", INT),
            ("relation", TEXT),
            ("index", TEXT),
            ("reason", TEXT),
            ("conflicts", BIG),
            ("hottest_key", TEXT),
            ("hottest_key_conflicts", BIG),
        ],
        key_columns: 1,
        rows: conflict_sites,
    },
    ViewDefinition {
        schema: "pg_catalog",
        name: "engram_stat_conflict_keys",
        columns: &[
            ("rank", INT),
            ("relation", TEXT),
            ("index", TEXT),
            ("reason", TEXT),
            ("key", TEXT),
            ("conflicts", BIG),
        ],
        key_columns: 1,
        rows: conflict_keys,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "schemata",
        columns: &[("catalog_name", TEXT), ("schema_name", TEXT), ("schema_owner", TEXT)],
        key_columns: 2,
        rows: schemata,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "tables",
        columns: &[
            ("table_catalog", TEXT),
            ("table_schema", TEXT),
            ("table_name", TEXT),
            ("table_type", TEXT),
            ("is_insertable_into", TEXT),
        ],
        key_columns: 3,
        rows: information_tables,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "columns",
        columns: &[
            ("table_catalog", TEXT),
            ("table_schema", TEXT),
            ("table_name", TEXT),
            ("ordinal_position", INT),
            ("column_name", TEXT),
            ("column_default", TEXT),
            ("is_nullable", TEXT),
            ("data_type", TEXT),
            ("character_maximum_length", INT),
            ("numeric_precision", INT),
            ("numeric_scale", INT),
            ("udt_name", TEXT),
        ],
        key_columns: 4,
        rows: information_columns,
    },
];

/// The view a table name in a query names: `pg_catalog.NAME` or `NAME` for the `pg_catalog`
/// ones (that schema comes first in PostgreSQL's search path), `information_schema.NAME` for
/// the others.
fn definition(name: &str) -> Option<&'static ViewDefinition> {
    // Most names are user tables: those are passed over without a comparison per view.
    if !name.starts_with("pg_") && !name.starts_with("engram_") && !name.contains('.') {
        return None;
    }
    let (schema, bare) = match name.split_once('.') {
        Some((schema, bare)) => (Some(schema), bare),
        None => (None, name),
    };
    VIEWS.iter().chain(constraints::VIEWS).find(|view| {
        view.name == bare
            && match schema {
                Some(schema) => schema == view.schema,
                None => view.schema == "pg_catalog",
            }
    })
}

/// Whether `name` names a system view (so that DML and DDL on it can be refused clearly).
pub fn is_view(name: &str) -> bool {
    definition(name).is_some()
}

/// The system view `name` as a table whose rows are made now from `catalog` (and the
/// session's `settings`, for `pg_settings`); `None` when `name` is no system view.
pub fn view(
    name: &str,
    catalog: &Catalog,
    settings: Option<&BTreeMap<String, String>>,
    database: Option<&engram_engine::Database>,
) -> Option<Arc<TableInfo>> {
    let definition = definition(name)?;
    let engine = catalog.system_table.clone()?;
    // Sessions' temporary tables are theirs alone: catalog views list the permanent ones.
    let tables = user_tables(catalog);
    let sources = Sources { tables, settings, catalog, engine: database };
    let columns: Vec<ColumnSchema> = definition
        .columns
        .iter()
        .map(|(name, ty)| ColumnSchema::new((*name).to_string(), *ty))
        .collect();
    let schema = TableSchema {
        name: format!("{}.{}", definition.schema, definition.name),
        engine_name: engine.name().to_string(),
        version: 1,
        columns,
        primary_key: (0..definition.key_columns).collect(),
        indexes: Vec::new(),
        primary_name: None,
        key_format: KeyFormat::Compact,
        layouts: Vec::new(),
        types_from: 0,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
    };
    Some(rows_table(schema, engine, definition.key_columns, (definition.rows)(&sources)))
}

/// A table of `rows` made now (keyed by its first `key_columns` columns), read through the
/// system table's engine table.
fn rows_table(
    schema: TableSchema,
    engine: engram_engine::TableRef,
    key_columns: usize,
    made: Vec<Vec<Value>>,
) -> Arc<TableInfo> {
    let types = schema.types();
    let mut rows = SystemRows::new();
    let mut key = Vec::new();
    for row in made {
        debug_assert_eq!(row.len(), types.len(), "{}", schema.name);
        key.clear();
        for (column, ty) in types.iter().enumerate().take(key_columns) {
            encode_key(KeyFormat::Compact, *ty, &row[column], &mut key);
        }
        let mut bytes = Vec::new();
        encode_row(1, &types, &row, &mut bytes);
        rows.insert(key.clone(), bytes);
    }
    let width = schema.columns.len();
    Arc::new(TableInfo::new(
        schema,
        engine,
        Arc::new(AtomicI64::new(1)),
        vec![None; width],
        Some(Arc::new(rows)),
    ))
}

/// A column's default as PostgreSQL shows it: a SERIAL column's is `nextval` of its
/// sequence (an identity column shows none: its values come from its identity).
fn column_default(catalog: &Catalog, column: &ColumnSchema) -> Option<String> {
    if column.default.is_some() || column.identity.is_some() {
        return column.default.clone();
    }
    let key = column.sequence.as_ref()?;
    let def = catalog.sequence_defs.values().find(|def| &def.key == key)?;
    Some(format!("nextval('{}'::regclass)", def.name))
}

/// `SELECT * FROM seq`: a sequence's one row (`last_value`, `log_cnt`, `is_called`), as
/// PostgreSQL shows it; `None` when `name` is no sequence.
pub fn sequence_view(name: &str, catalog: &Catalog) -> Option<Arc<TableInfo>> {
    let (_, sequence) = catalog.named_sequence(name).ok()?;
    let engine = catalog.system_table.clone()?;
    let state = *sequence.state.lock();
    let columns = [("last_value", BIG), ("log_cnt", BIG), ("is_called", BOOL)];
    let schema = TableSchema {
        name: name.to_string(),
        engine_name: engine.name().to_string(),
        version: 1,
        columns: columns.iter().map(|(n, t)| ColumnSchema::new((*n).to_string(), *t)).collect(),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        primary_name: None,
        key_format: KeyFormat::Compact,
        layouts: Vec::new(),
        types_from: 0,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
    };
    // Values handed out from memory between reservations: PostgreSQL's log_cnt counts the
    // values logged ahead the same way.
    let ahead = (state.reserved - state.next + i128::from(state.options.increment))
        / i128::from(state.options.increment);
    let row = vec![int(state.last_value()), int(ahead.max(0) as i64), Value::Bool(state.called)];
    Some(rows_table(schema, engine, 0, vec![row]))
}

/// The named sequences, by name.
fn sequence_rows(
    sources: &Sources<'_>,
) -> Vec<(Arc<crate::catalog::SequenceDef>, crate::catalog::SequenceState)> {
    let temporary = |def: &crate::catalog::SequenceDef| {
        def.owned_by
            .as_ref()
            .is_some_and(|(table, _)| table.starts_with(crate::catalog::TEMP_PREFIX))
    };
    let mut defs: Vec<_> =
        sources.catalog.sequence_defs.values().filter(|def| !temporary(def)).cloned().collect();
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    defs.into_iter()
        .filter_map(|def| {
            let state = *sources.catalog.sequences.get(&def.key)?.state.lock();
            Some((def, state))
        })
        .collect()
}

fn pg_sequences(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    sequence_rows(sources)
        .into_iter()
        .map(|(def, state)| {
            let o = def.options;
            vec![
                text("public"),
                text(def.name.as_str()),
                text("engram"),
                text(def.ty.name()),
                int(o.start),
                int(o.min),
                int(o.max),
                int(o.increment),
                Value::Bool(o.cycle),
                int(1),
                if state.called { int(state.last_value()) } else { Value::Null },
            ]
        })
        .collect()
}

fn information_sequences(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    sequence_rows(sources)
        .into_iter()
        .map(|(def, _)| {
            let o = def.options;
            let bits = match def.ty {
                Type::Int2 => 16,
                Type::Int4 => 32,
                _ => 64,
            };
            vec![
                text(DATABASE_NAME),
                text("public"),
                text(def.name.as_str()),
                text(def.ty.name()),
                int(bits),
                int(2),
                int(0),
                text(o.start.to_string()),
                text(o.min.to_string()),
                text(o.max.to_string()),
                text(o.increment.to_string()),
                text(if o.cycle { "YES" } else { "NO" }),
            ]
        })
        .collect()
}

fn text(value: impl Into<crate::types::Text>) -> Value {
    Value::Text(value.into())
}

fn int(value: i64) -> Value {
    Value::Int(value)
}

fn namespaces(_: &Sources<'_>) -> Vec<Vec<Value>> {
    [
        (PG_CATALOG_OID, "pg_catalog"),
        (PUBLIC_OID, "public"),
        (INFORMATION_SCHEMA_OID, "information_schema"),
    ]
    .into_iter()
    .map(|(oid, name)| vec![int(oid), text(name), int(OWNER_OID)])
    .collect()
}

fn databases(_: &Sources<'_>) -> Vec<Vec<Value>> {
    vec![vec![
        int(DATABASE_OID),
        text(DATABASE_NAME),
        int(OWNER_OID),
        int(6), // UTF8
        text("C.UTF-8"),
        text("C.UTF-8"),
        Value::Bool(false),
        Value::Bool(true),
        int(-1),
    ]]
}

/// `pg_description`'s rows: (objoid, classoid, objsubid, description) of each comment on a
/// table, an index or a column (views and sequences have no `pg_class` id here).
fn pg_description(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    const PG_CLASS: i64 = 1259;
    let (relations, catalog) = (relations(&sources.tables), sources.catalog);
    let mut rows = Vec::new();
    for relation in &relations {
        let own = match relation.kind {
            'i' => format!("index:{}", relation.name),
            _ => format!("table:{}", relation.name),
        };
        if let Some(comment) = catalog.comments.get(&own) {
            rows.push(vec![
                Value::Int(relation.oid),
                Value::Int(PG_CLASS),
                Value::Int(0),
                text(comment.as_str()),
            ]);
        }
        if relation.kind != 'r' {
            continue;
        }
        for (at, column) in relation.table.schema.columns.iter().enumerate() {
            if let Some(comment) =
                catalog.comments.get(&format!("column:{}.{}", relation.name, column.name))
            {
                rows.push(vec![
                    Value::Int(relation.oid),
                    Value::Int(PG_CLASS),
                    Value::Int(at as i64 + 1),
                    text(comment.as_str()),
                ]);
            }
        }
    }
    rows
}

/// The types Engram has: (oid, name, length, by value, category, array type oid).
const TYPES: &[(i64, &str, i64, bool, &str, i64)] = &[
    (16, "bool", 1, true, "B", 1000),
    (17, "bytea", -1, false, "U", 1001),
    (20, "int8", 8, true, "N", 1016),
    (21, "int2", 2, true, "N", 1005),
    (23, "int4", 4, true, "N", 1007),
    (25, "text", -1, false, "S", 1009),
    (700, "float4", 4, true, "N", 1021),
    (701, "float8", 8, true, "N", 1022),
    (1042, "bpchar", -1, false, "S", 1014),
    (1043, "varchar", -1, false, "S", 1015),
    (1082, "date", 4, true, "D", 1182),
    (1083, "time", 8, true, "D", 1183),
    (1114, "timestamp", 8, true, "D", 1115),
    (1184, "timestamptz", 8, true, "D", 1185),
    (1186, "interval", 16, false, "T", 1187),
    (2950, "uuid", 16, false, "U", 2951),
    (114, "json", -1, false, "U", 199),
    (3802, "jsonb", -1, false, "U", 3807),
    (1700, "numeric", -1, false, "N", 1231),
];

/// Each type of `TYPES`, then its array type (`_int4`, category `A`, `typelem` the type).
fn types(_: &Sources<'_>) -> Vec<Vec<Value>> {
    let row = |oid: i64, name: &str, length: i64, by_value: bool, category: &str, elem, array| {
        vec![
            int(oid),
            text(name),
            int(PG_CATALOG_OID),
            int(OWNER_OID),
            int(length),
            Value::Bool(by_value),
            text("b"),
            text(category),
            Value::Bool(true),
            text(","),
            int(0),
            int(elem),
            int(array),
            int(0),
            int(-1),
            Value::Bool(false),
        ]
    };
    let mut rows: Vec<Vec<Value>> = TYPES
        .iter()
        .map(|&(oid, name, length, by_value, category, array)| {
            row(oid, name, length, by_value, category, 0, array)
        })
        .collect();
    for &(oid, name, _, _, _, array) in TYPES {
        rows.push(row(array, &format!("_{name}"), -1, false, "A", oid, 0));
    }
    rows
}

/// Indexes of `table`, the primary key counted.
fn index_count(table: &TableInfo) -> usize {
    table.schema.indexes.len() + usize::from(!table.schema.primary_key.is_empty())
}

fn classes(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    relations(&sources.tables)
        .into_iter()
        .map(|relation| {
            let table = relation.kind == 'r';
            let attributes = match &relation.index {
                Some((columns, ..)) => columns.len(),
                None => relation.table.schema.columns.len(),
            };
            vec![
                int(relation.oid),
                text(relation.name),
                int(PUBLIC_OID),
                int(0),
                int(OWNER_OID),
                int(if table { 2 } else { 403 }), // heap, btree
                int(0),
                Value::Float(-1.0),
                Value::Bool(table && index_count(&relation.table) > 0),
                text("p"),
                text(relation.kind.to_string()),
                int(attributes as i64),
                int(0),
                Value::Bool(false),
            ]
        })
        .collect()
}

fn attributes(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for relation in relations(&sources.tables) {
        let schema = &relation.table.schema;
        let columns: Vec<usize> = match &relation.index {
            Some((columns, ..)) => columns.clone(),
            None => (0..schema.columns.len()).collect(),
        };
        for (position, column) in columns.into_iter().enumerate() {
            let column = &schema.columns[column];
            out.push(vec![
                int(relation.oid),
                int(position as i64 + 1),
                text(column.name.clone()),
                int(i64::from(column.ty.oid())),
                int(i64::from(column.ty.pg_length())),
                int(i64::from(column.ty.pg_modifier())),
                Value::Bool(column.not_null),
                Value::Bool(
                    relation.index.is_none() && column_default(sources.catalog, column).is_some(),
                ),
                text(""),
                text(""),
                Value::Bool(column.dropped),
            ]);
        }
    }
    out
}

fn indexes(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let relations = relations(&sources.tables);
    let table_oid: HashMap<&str, i64> = relations
        .iter()
        .filter(|r| r.kind == 'r')
        .map(|r| (r.table.schema.name.as_str(), r.oid))
        .collect();
    relations
        .iter()
        .filter_map(|relation| {
            let (columns, unique, primary) = relation.index.as_ref()?;
            let keys: Vec<String> = columns.iter().map(|c| (c + 1).to_string()).collect();
            Some(vec![
                int(relation.oid),
                int(table_oid[relation.table.schema.name.as_str()]),
                int(columns.len() as i64),
                int(columns.len() as i64),
                Value::Bool(*unique),
                Value::Bool(*primary),
                Value::Bool(true),
                text(keys.join(" ")),
            ])
        })
        .collect()
}

fn pg_tables(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    sources
        .tables
        .iter()
        .map(|table| {
            vec![
                text("public"),
                text(table.schema.name.clone()),
                text("postgres"),
                Value::Null,
                Value::Bool(index_count(table) > 0),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(false),
            ]
        })
        .collect()
}

/// The user's views, by name.
fn user_views(sources: &Sources<'_>) -> Vec<Arc<crate::catalog::ViewDef>> {
    let mut views: Vec<_> = sources.catalog.views.values().cloned().collect();
    views.sort_by(|a, b| a.name.cmp(&b.name));
    views
}

fn pg_views(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    user_views(sources)
        .into_iter()
        .map(|view| {
            vec![
                text("public"),
                text(view.name.clone()),
                text("postgres"),
                text(view.query.clone()),
            ]
        })
        .collect()
}

fn information_views(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    user_views(sources)
        .into_iter()
        .map(|view| {
            vec![
                text(DATABASE_NAME),
                text("public"),
                text(view.name.clone()),
                text(view.query.clone()),
                text("NONE"),
                text("NO"),
                text("NO"),
            ]
        })
        .collect()
}

fn pg_indexes(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    relations(&sources.tables)
        .iter()
        .filter_map(|relation| {
            let definition = index_definition(relation)?;
            Some(vec![
                text("public"),
                text(relation.table.schema.name.clone()),
                text(relation.name.clone()),
                Value::Null,
                text(definition),
            ])
        })
        .collect()
}

fn settings(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let Some(settings) = sources.settings else { return Vec::new() };
    settings
        .iter()
        .map(|(name, value)| {
            vec![
                text(name.clone()),
                text(value.clone()),
                Value::Null,
                text("Engram"),
                Value::Null,
                text("user"),
                text("string"),
                text("session"),
            ]
        })
        .collect()
}

fn conflict_sites(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let Some(engine) = sources.engine else { return Vec::new() };
    crate::conflicts::site_rows(sources.catalog, &engine.conflict_stats())
}

fn conflict_keys(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let Some(engine) = sources.engine else { return Vec::new() };
    crate::conflicts::key_rows(sources.catalog, &engine.conflict_stats())
}

fn schemata(_: &Sources<'_>) -> Vec<Vec<Value>> {
    ["information_schema", "pg_catalog", "public"]
        .into_iter()
        .map(|schema| vec![text(DATABASE_NAME), text(schema), text("postgres")])
        .collect()
}

fn information_tables(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let user = sources.tables.iter().map(|table| {
        vec![
            text(DATABASE_NAME),
            text("public"),
            text(table.schema.name.clone()),
            text("BASE TABLE"),
            text("YES"),
        ]
    });
    let views = user_views(sources).into_iter().map(|view| {
        vec![text(DATABASE_NAME), text("public"), text(view.name.clone()), text("VIEW"), text("NO")]
    });
    let system = VIEWS.iter().chain(constraints::VIEWS).map(|view| {
        vec![text(DATABASE_NAME), text(view.schema), text(view.name), text("VIEW"), text("NO")]
    });
    user.chain(views).chain(system).collect()
}

fn information_columns(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for table in &sources.tables {
        for (position, column) in table.schema.columns.iter().enumerate() {
            if column.dropped {
                continue;
            }
            let ty = column.ty;
            let (length, precision, scale) = match ty {
                Type::Char(n) | Type::Varchar(n) if n > 0 => {
                    (int(i64::from(n)), Value::Null, Value::Null)
                }
                Type::Int2 => (Value::Null, int(16), int(0)),
                Type::Int4 => (Value::Null, int(32), int(0)),
                Type::Int8 => (Value::Null, int(64), int(0)),
                Type::Numeric { precision, scale } if precision > 0 => {
                    (Value::Null, int(i64::from(precision)), int(i64::from(scale)))
                }
                _ => (Value::Null, Value::Null, Value::Null),
            };
            let data_type = match ty {
                Type::Char(_) => "character".to_string(),
                Type::Varchar(_) => "character varying".to_string(),
                Type::Numeric { .. } => "numeric".to_string(),
                other => other.name(),
            };
            let udt = TYPES.iter().find(|t| t.0 == i64::from(ty.oid())).map_or("unknown", |t| t.1);
            out.push(vec![
                text(DATABASE_NAME),
                text("public"),
                text(table.schema.name.clone()),
                int(position as i64 + 1),
                text(column.name.clone()),
                column_default(sources.catalog, column).map_or(Value::Null, text),
                text(if column.not_null { "NO" } else { "YES" }),
                text(data_type),
                length,
                precision,
                scale,
                text(udt),
            ]);
        }
    }
    out
}
