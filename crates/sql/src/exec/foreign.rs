//! Foreign keys, enforced where each row is written (`plan/foreign.rs` gathers them).
//!
//! - A row written to a referencing table finds its referenced row with a read for update
//!   (`Txn::get_for_update`, or a unique index scanned under `Txn::checked`): checked at commit
//!   at every isolation level, so a concurrent delete of the referenced row that commits
//!   first aborts this transaction (40001) instead of leaving a dangling reference.
//! - A row deleted from a referenced table, or whose referenced columns change, looks for the
//!   rows that reference it through an index whose leading columns are the key's (else by a
//!   scan of the referencing table), under `Txn::checked`: a referencing row that another
//!   transaction inserts before this one commits aborts it. Found rows are refused (NO ACTION,
//!   RESTRICT: 23503), deleted or changed (CASCADE), or set NULL (SET NULL), and what that
//!   writes is enforced in turn.
//!
//! Checks are made row by row, as each row is written (PostgreSQL checks NO ACTION at the end
//! of the statement, and DEFERRABLE keys at commit): a statement that passes through a state
//! where a reference dangles fails here even if its end state keeps the key.

use super::{engine_error, successor};
use crate::ast::FkAction;
use crate::catalog::{TableInfo, primary_key};
use crate::codec::{Wanted, encode_key, encode_row};
use crate::error::{SqlError, SqlResult};
use crate::expr::Context;
use crate::plan::foreign::{ForeignKeys, Incoming, Outgoing};
use crate::types::{Value, cast};
use engram_engine::{Direction, Txn};
use std::cmp::Ordering;
use std::ops::Bound;

/// How many cascades deep a write may go (a chain of tables, or a tree in one table).
const CASCADE_DEPTH_MAX: usize = 1_000;

/// `(a, b)=(1, x)`, as PostgreSQL's DETAIL writes a key.
fn key_text(table: &TableInfo, columns: &[usize], values: &[Value]) -> String {
    let names: Vec<&str> = columns.iter().map(|&c| table.schema.columns[c].name.as_str()).collect();
    let texts: Vec<String> = columns
        .iter()
        .map(|&c| values[c].to_text(table.types[c]).unwrap_or_else(|| "null".into()))
        .collect();
    format!("({})=({})", names.join(", "), texts.join(", "))
}

fn same(a: &Value, b: &Value) -> bool {
    a.compare(b) == Ordering::Equal
}

/// Whether any of `columns` differs between the rows.
fn changed(columns: &[usize], old: &[Value], new: &[Value]) -> bool {
    columns.iter().any(|&c| !same(&old[c], &new[c]) || old[c].is_null() != new[c].is_null())
}

/// Checks each foreign key of `table` for the row `values`: unless one of its columns is NULL
/// (MATCH SIMPLE), the referenced row must exist. With `old` (an update), keys whose columns
/// kept their values are not looked at again.
pub(crate) fn check_references(
    txn: &mut Txn<'_>,
    keys: &ForeignKeys,
    table: &TableInfo,
    values: &[Value],
    old: Option<&[Value]>,
) -> SqlResult<()> {
    let Some(own) = keys.of(&table.schema.name) else { return Ok(()) };
    for fk in &own.outgoing {
        let nulls = fk.columns.iter().filter(|&&c| values[c].is_null()).count();
        if fk.match_full && nulls > 0 && nulls < fk.columns.len() {
            let mut error = SqlError::new(
                "23503",
                format!(
                    "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                    table.schema.name, fk.name
                ),
            );
            error.detail =
                Some("MATCH FULL does not allow mixing of null and nonnull key values.".into());
            return Err(error);
        }
        if nulls > 0 {
            continue;
        }
        if old.is_some_and(|old| !changed(&fk.columns, old, values)) {
            continue;
        }
        if !referenced_exists(txn, fk, values)? {
            let mut error = SqlError::new(
                "23503",
                format!(
                    "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                    table.schema.name, fk.name
                ),
            );
            error.detail = Some(format!(
                "Key {} is not present in table \"{}\".",
                key_text(table, &fk.columns, values),
                fk.parent.schema.name
            ));
            return Err(error);
        }
    }
    Ok(())
}

/// Whether the row `values` references through `fk` exists, read so that the commit checks it
/// still does.
fn referenced_exists(txn: &mut Txn<'_>, fk: &Outgoing, values: &[Value]) -> SqlResult<bool> {
    let parent = &fk.parent;
    // The referenced values, in the parent's columns and types.
    let mut row = vec![Value::Null; parent.types.len()];
    for (&column, &referenced) in fk.columns.iter().zip(&fk.ref_columns) {
        row[referenced] = cast(values[column].clone(), parent.types[referenced], false)?;
    }
    match fk.index {
        None => {
            let mut key = Vec::new();
            primary_key(parent, &row, &mut key);
            let found =
                txn.get_for_update(&parent.engine, &key).map_err(|e| engine_error(e, parent))?;
            Ok(found.is_some())
        }
        Some(index) => {
            let mut prefix = Vec::new();
            for &column in &parent.schema.indexes[index].columns {
                prefix.push(1);
                encode_key(
                    parent.schema.key_format,
                    parent.types[column],
                    &row[column],
                    &mut prefix,
                );
            }
            let high = successor(prefix.clone());
            let mut found = false;
            txn.checked(|txn| {
                txn.scan_index(
                    &parent.engine,
                    index,
                    Bound::Included(&prefix),
                    high.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                    Direction::Forward,
                    1,
                    |_, _| {
                        found = true;
                        false
                    },
                )
            })
            .map_err(|e| engine_error(e, parent))?;
            Ok(found)
        }
    }
}

/// Keeps the foreign keys that reference `table` after its row `old` was deleted (`new`
/// `None`) or changed to `new`.
pub(super) fn on_referenced_write(
    txn: &mut Txn<'_>,
    keys: &ForeignKeys,
    table: &TableInfo,
    old: &[Value],
    new: Option<&[Value]>,
    cx: &Context<'_>,
    depth: usize,
) -> SqlResult<()> {
    let Some(own) = keys.of(&table.schema.name) else { return Ok(()) };
    if own.incoming.is_empty() {
        return Ok(());
    }
    if depth >= CASCADE_DEPTH_MAX {
        return Err(SqlError::new(
            "54001",
            format!("foreign key cascades go deeper than {CASCADE_DEPTH_MAX} levels"),
        ));
    }
    for fk in &own.incoming {
        if fk.ref_columns.iter().any(|&c| old[c].is_null()) {
            continue;
        }
        if new.is_some_and(|new| !changed(&fk.ref_columns, old, new)) {
            continue;
        }
        let children = referencing_rows(txn, fk, old)?;
        if children.is_empty() {
            continue;
        }
        let action = if new.is_some() { fk.on_update } else { fk.on_delete };
        match action {
            FkAction::NoAction | FkAction::Restrict | FkAction::SetDefault => {
                let mut error = SqlError::new(
                    "23503",
                    format!(
                        "update or delete on table \"{}\" violates foreign key constraint \"{}\" \
                         on table \"{}\"",
                        table.schema.name, fk.name, fk.child.schema.name
                    ),
                );
                error.detail = Some(format!(
                    "Key {} is still referenced from table \"{}\".",
                    key_text(table, &fk.ref_columns, old),
                    fk.child.schema.name
                ));
                return Err(error);
            }
            FkAction::Cascade | FkAction::SetNull => {
                for (key, child_old) in children {
                    cascade(txn, keys, fk, action, &key, child_old, new, cx, depth)?;
                }
            }
        }
    }
    Ok(())
}

/// One referencing row's CASCADE or SET NULL.
#[allow(clippy::too_many_arguments)]
fn cascade(
    txn: &mut Txn<'_>,
    keys: &ForeignKeys,
    fk: &Incoming,
    action: FkAction,
    key: &[u8],
    child_old: Vec<Value>,
    parent_new: Option<&[Value]>,
    cx: &Context<'_>,
    depth: usize,
) -> SqlResult<()> {
    let child = &fk.child;
    if let Some(locker) = cx.locks {
        let mode = match (action, parent_new) {
            (FkAction::Cascade, None) => crate::ast::RowLockMode::Update,
            _ => crate::ast::RowLockMode::NoKeyUpdate,
        };
        locker.lock_write(txn, child, key, mode)?;
    }
    if action == FkAction::Cascade && parent_new.is_none() {
        txn.delete(&child.engine, key).map_err(|e| engine_error(e, child))?;
        return crate::depth::grow(|| {
            on_referenced_write(txn, keys, child, &child_old, None, cx, depth + 1)
        });
    }
    let mut child_new = child_old.clone();
    for (&column, &referenced) in fk.columns.iter().zip(&fk.ref_columns) {
        child_new[column] = match (action, parent_new) {
            (FkAction::Cascade, Some(parent)) => {
                cast(parent[referenced].clone(), child.types[column], false)?
            }
            _ => {
                let schema = &child.schema.columns[column];
                if schema.not_null || child.schema.primary_key.contains(&column) {
                    return Err(SqlError::new(
                        "23502",
                        format!(
                            "null value in column \"{}\" of relation \"{}\" violates not-null \
                             constraint",
                            schema.name, child.schema.name
                        ),
                    ));
                }
                Value::Null
            }
        };
    }
    let mut bytes = Vec::new();
    encode_row(child.schema.version, &child.types, &child_new, &mut bytes);
    let mut new_key = Vec::new();
    if !child.schema.primary_key.is_empty() {
        primary_key(child, &child_new, &mut new_key);
    }
    if !new_key.is_empty() && new_key != key {
        txn.delete(&child.engine, key).map_err(|e| engine_error(e, child))?;
        txn.insert(&child.engine, &new_key, &bytes).map_err(|e| engine_error(e, child))?;
    } else {
        txn.update(&child.engine, key, &bytes).map_err(|e| engine_error(e, child))?;
    }
    crate::depth::grow(|| {
        on_referenced_write(txn, keys, child, &child_old, Some(&child_new), cx, depth + 1)
    })
}

/// The rows of `fk`'s referencing table that reference the row `parent`: primary keys and
/// values. Scanned under `Txn::checked`.
fn referencing_rows(
    txn: &mut Txn<'_>,
    fk: &Incoming,
    parent: &[Value],
) -> SqlResult<Vec<(Vec<u8>, Vec<Value>)>> {
    let child = &fk.child;
    // The referenced values in the referencing columns' types.
    let mut wanted = Vec::with_capacity(fk.columns.len());
    for (&column, &referenced) in fk.columns.iter().zip(&fk.ref_columns) {
        wanted.push((column, cast(parent[referenced].clone(), child.types[column], false)?));
    }
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let scanned = match fk.index {
        Some(index) => {
            let mut prefix = Vec::new();
            for (column, value) in &wanted {
                prefix.push(1);
                encode_key(child.schema.key_format, child.types[*column], value, &mut prefix);
            }
            let high = successor(prefix.clone());
            txn.checked(|txn| {
                txn.scan_index(
                    &child.engine,
                    index,
                    Bound::Included(&prefix),
                    high.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                    Direction::Forward,
                    usize::MAX,
                    |key, row| {
                        found.push((key.to_vec(), row.to_vec()));
                        true
                    },
                )
            })
        }
        None => txn.checked(|txn| {
            txn.scan(
                &child.engine,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                usize::MAX,
                |key, row| {
                    found.push((key.to_vec(), row.to_vec()));
                    true
                },
            )
        }),
    };
    scanned.map_err(|e| engine_error(e, child))?;
    let mut rows = Vec::with_capacity(found.len());
    for (key, row) in found {
        let mut values = Vec::new();
        child.decode(&row, &Wanted::ALL, &mut values)?;
        let matches = wanted
            .iter()
            .all(|(column, value)| !values[*column].is_null() && same(&values[*column], value));
        if matches {
            rows.push((key, values));
        }
    }
    Ok(rows)
}
