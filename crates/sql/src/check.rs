//! `engram check --rows`: every stored row of every SQL table read under the schema version
//! it was written in and checked against the table's current definition.

use crate::catalog::TableInfo;
use crate::codec::{Wanted, row_version};
use crate::error::SqlResult;
use crate::types::{Type, Value, conforms};
use engram_engine::{Database, Direction, Isolation};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

/// What the check read: per table, its rows by the schema version they were written in.
#[derive(Debug, Default)]
pub struct RowCheck {
    pub tables: BTreeMap<String, BTreeMap<u16, u64>>,
    /// One line per row that does not hold: the table, the key and what is wrong.
    pub problems: Vec<String>,
}

impl RowCheck {
    pub fn rows(&self) -> u64 {
        self.tables.values().flat_map(|versions| versions.values()).sum()
    }
}

/// At most this many problems are listed.
const PROBLEMS_MAX: usize = 100;

/// Reads every row of `tables` in one snapshot: each must be of a version the table has had,
/// decode under it, hold values of the current column types, no NULL in a NOT NULL column,
/// and sit under the key its values make.
pub fn check_rows(db: &Database, tables: &[Arc<TableInfo>]) -> SqlResult<RowCheck> {
    let mut check = RowCheck::default();
    let mut worker = db.worker()?;
    for table in tables.iter().filter(|table| table.system.is_none()) {
        let name = &table.schema.name;
        let versions = check.tables.entry(name.clone()).or_default();
        let problems = &mut check.problems;
        let mut note = |key: &[u8], what: String| {
            if problems.len() < PROBLEMS_MAX {
                problems.push(format!("table {name}, key {key:02x?}: {what}"));
            }
        };
        let (mut values, mut rebuilt) = (Vec::new(), Vec::new());
        worker.transaction(Isolation::Snapshot, |txn| {
            versions.clear();
            txn.scan(
                &table.engine,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |key, row| {
                    let version = row_version(row);
                    *versions.entry(version).or_default() += 1;
                    if version == 0 || version > table.schema.version {
                        note(key, format!("schema version {version} the table never had"));
                        return true;
                    }
                    if let Err(error) = table.decode(row, &Wanted::ALL, &mut values) {
                        note(key, format!("does not decode under version {version}: {error}"));
                        return true;
                    }
                    for (column, value) in table.schema.columns.iter().zip(&values) {
                        if column.dropped {
                            continue;
                        }
                        if column.not_null && value.is_null() {
                            note(key, format!("NULL in NOT NULL column {}", column.name));
                        } else if !conforms(value, column.ty)
                            && !matches!((value, column.ty), (Value::Text(text), Type::Json)
                                if crate::types::json::check_json(text).is_ok())
                        {
                            note(
                                key,
                                format!(
                                    "column {} holds {value:?}, not a {}",
                                    column.name,
                                    column.ty.name()
                                ),
                            );
                        }
                    }
                    if !table.schema.primary_key.is_empty() {
                        crate::catalog::primary_key(table, &values, &mut rebuilt);
                        if rebuilt != key {
                            note(key, format!("its values make the key {rebuilt:02x?}"));
                        }
                    }
                    true
                },
            )?;
            Ok(())
        })?;
    }
    Ok(check)
}
