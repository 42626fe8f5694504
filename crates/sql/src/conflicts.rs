//! Abort diagnostics in SQL terms: the engine says where an abort happened by engine table,
//! index number and key bytes (`engram_engine::cc::conflict`); this module names the relation
//! and the index, and writes the key as PostgreSQL writes one in a DETAIL, `(id)=(7)`. It
//! also gives the engine the primary key of a row (for the records a transaction read, whose
//! keys the engine does not keep), and makes the rows of the `engram_stat_conflicts` and
//! `engram_stat_conflict_keys` views.
//!
//! Everything here runs only after an abort, or when a view is read.

use crate::catalog::{Catalog, TableInfo};
use crate::codec::decode_key;
use crate::types::{Type, Value};
use engram_engine::storage::TableId;
use engram_engine::{Conflict, ConflictSite, ConflictStats};
use std::sync::Arc;

/// The SQL table whose rows engine table `table` holds.
pub(crate) fn table_of(catalog: &Catalog, table: TableId) -> Option<Arc<TableInfo>> {
    catalog.tables.values().find(|info| info.engine.id() == table).cloned()
}

/// The name of the index at `index` of `info` (`None`: the primary key).
fn index_name(info: &TableInfo, index: Option<u32>) -> Option<String> {
    match index {
        Some(number) => info.schema.indexes.get(number as usize).map(|index| index.name.clone()),
        None if info.schema.primary_key.is_empty() => None,
        None => Some(
            info.schema
                .primary_name
                .clone()
                .unwrap_or_else(|| format!("{}_pkey", info.schema.name)),
        ),
    }
}

/// A primary key as PostgreSQL's DETAIL writes one: `(a, b)=(1, x)`; `None` when the bytes
/// are not a key of the table.
pub(crate) fn key_text(info: &TableInfo, key: &[u8]) -> Option<String> {
    let columns = &info.schema.primary_key;
    if columns.is_empty() || key.is_empty() {
        return None;
    }
    let types: Vec<Type> = columns.iter().map(|&column| info.types[column]).collect();
    let values = decode_key(info.schema.key_format, &types, key)?;
    let names: Vec<&str> =
        columns.iter().map(|&column| info.schema.columns[column].name.as_str()).collect();
    let texts: Vec<String> = values
        .iter()
        .zip(&types)
        .map(|(value, ty)| value.to_text(*ty).unwrap_or_else(|| "null".into()))
        .collect();
    Some(format!("({})=({})", names.join(", "), texts.join(", ")))
}

/// Where the abort happened, in a sentence for a DETAIL: `On relation "t", key (id)=(7); the
/// change committed as TID 12.5.` Empty when the engine could not tell the table.
pub(crate) fn describe(catalog: &Catalog, conflict: &Conflict) -> String {
    let Some(table) = conflict.table else { return String::new() };
    let Some(info) = table_of(catalog, table) else { return String::new() };
    let mut out = format!("On relation \"{}\"", info.schema.name);
    let key = key_text(&info, &conflict.key);
    match (conflict.index, &key) {
        (Some(_), _) | (None, None) => {
            if let Some(index) = index_name(&info, conflict.index) {
                out.push_str(&format!(", index \"{index}\""));
            }
        }
        _ => {}
    }
    if let Some(key) = key {
        out.push_str(&format!(", key {key}"));
    }
    if let Some(by) = conflict.by {
        out.push_str(&format!("; the change committed as TID {}.{}", by.epoch().0, by.sequence()));
    }
    out.push('.');
    out
}

/// The names a view shows for a site: the relation and the index (`None`s when unknown).
fn site_names(catalog: &Catalog, site: ConflictSite) -> (Option<Arc<TableInfo>>, Option<String>) {
    let info = site.table.and_then(|table| table_of(catalog, table));
    let index = info.as_ref().and_then(|info| index_name(info, site.index));
    (info, index)
}

fn text_or_null(text: Option<String>) -> Value {
    text.map_or(Value::Null, |text| Value::Text(text.into()))
}

/// `engram_stat_conflicts`: per relation, index and reason, the aborts counted since the
/// database opened, most first, with the key that caused most of them.
pub(crate) fn site_rows(catalog: &Catalog, stats: &ConflictStats) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for (rank, (site, count)) in stats.counts.iter().enumerate() {
        let (info, index) = site_names(catalog, *site);
        let hottest = stats.hottest_at(*site);
        let key = hottest.and_then(|hot| info.as_ref().and_then(|info| key_text(info, &hot.key)));
        rows.push(vec![
            Value::Int(rank as i64 + 1),
            text_or_null(info.map(|info| info.schema.name.clone())),
            text_or_null(index),
            Value::Text(site.reason.name().into()),
            Value::Int(*count as i64),
            text_or_null(key),
            hottest.map_or(Value::Null, |hot| Value::Int(hot.count as i64)),
        ]);
    }
    rows
}

/// `engram_stat_conflict_keys`: the most contended keys (each worker keeps its
/// `HOT_KEYS_PER_WORKER` most counted), most first.
pub(crate) fn key_rows(catalog: &Catalog, stats: &ConflictStats) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for (rank, hot) in stats.hot_keys.iter().enumerate() {
        let (info, index) = site_names(catalog, hot.site);
        let key = info.as_ref().and_then(|info| key_text(info, &hot.key));
        rows.push(vec![
            Value::Int(rank as i64 + 1),
            text_or_null(info.map(|info| info.schema.name.clone())),
            text_or_null(index),
            Value::Text(hot.site.reason.name().into()),
            text_or_null(key),
            Value::Int(hot.count as i64),
        ]);
    }
    rows
}
