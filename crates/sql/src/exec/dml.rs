//! INSERT, UPDATE and DELETE: conforming values to their columns, upserts, RETURNING, and
//! the recomputation a READ COMMITTED update applies again at commit.

use super::{
    Env, Interrupt, Lent, PointKey, Produced, Scratch, Target, engine_error, fetch, key_into,
    resolve, run_query, run_subqueries, successor,
};
use crate::catalog::{Sequence, TableInfo, primary_key};
use crate::codec::{Wanted, encode_key, encode_row, row_version};
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::plan::{ConflictAction, InsertPlan, InsertRows, ModifyPlan, Path};
use crate::types::{Type, Value, cast};
use engram_engine::{Direction, Error, Isolation, Recompute, Txn};
use std::ops::Bound;
use std::sync::Arc;

/// Casts every value to its column's type and checks NOT NULL; `conformed[c]` says that
/// column `c`'s value already has the type (`InsertPlan::conformed`): only NULL is checked.
fn conform(table: &TableInfo, values: &mut [Value], conformed: &[bool]) -> SqlResult<()> {
    for (column, value) in values.iter_mut().enumerate() {
        if conformed.get(column) == Some(&true) && !value.is_null() {
            // (A `json` parameter is text checked when it was decoded; a cast of text to
            // json checks it again, so `conforms` does not count text as json.)
            debug_assert!(
                crate::types::conforms(value, table.types[column])
                    || (table.types[column] == Type::Json && matches!(value, Value::Text(_)))
            );
            continue;
        }
        *value = conform_column(table, column, std::mem::replace(value, Value::Null))?;
    }
    Ok(())
}

/// A value for `column`: cast to its type, and not NULL where the column forbids it.
fn conform_column(table: &TableInfo, column: usize, value: Value) -> SqlResult<Value> {
    let schema = &table.schema.columns[column];
    if value.is_null() {
        if schema.not_null || table.schema.primary_key.contains(&column) {
            return Err(SqlError::new(
                "23502",
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    schema.name, table.schema.name
                ),
            ));
        }
        return Ok(Value::Null);
    }
    cast(value, schema.ty, false)
}

/// Fails with 23514 if the row makes a CHECK constraint false (NULL passes).
pub(crate) fn check_row(
    checks: &[(String, BExpr)],
    table: &TableInfo,
    values: &[Value],
    cx: &Context<'_>,
) -> SqlResult<()> {
    for (name, check) in checks {
        if matches!(check.eval(values, cx)?, Value::Bool(false)) {
            let shown: Vec<String> = values
                .iter()
                .zip(&table.types)
                .zip(&table.schema.columns)
                .filter(|(_, column)| !column.dropped)
                .map(|((value, ty), _)| value.to_text(*ty).unwrap_or_else(|| "null".into()))
                .collect();
            let mut error = SqlError::new(
                "23514",
                format!(
                    "new row for relation \"{}\" violates check constraint \"{name}\"",
                    table.schema.name
                ),
            );
            error.detail = Some(format!("Failing row contains ({}).", shown.join(", ")));
            return Err(error);
        }
    }
    Ok(())
}

fn row_key(table: &TableInfo, values: &[Value], key: &mut Vec<u8>) {
    if table.schema.primary_key.is_empty() {
        key.clear();
        encode_key(table.schema.key_format, Type::Int8, &Value::Int(table.next_rowid()), key);
    } else {
        primary_key(table, values, key);
    }
}

/// Runs an INSERT.
pub fn run_insert(txn: &mut Txn<'_>, plan: &InsertPlan, env: &Env<'_>) -> SqlResult<Produced> {
    let subqueries = run_subqueries(txn, &plan.subqueries, env)?;
    let cx = Context {
        params: env.params,
        subqueries: &subqueries,
        derived: &[],
        correlated: None,
        outer: &[],
        now: env.now,
        reserve: env.reserve,
        interrupt: env.interrupt,
        locks: env.locks,
    };
    let table = &plan.table;
    let width = table.types.len();
    let mut produced = Produced::default();
    let mut scratch = Scratch::take(env.scratch);
    let Scratch { key, bytes, values, .. } = &mut scratch;
    // A source value per column; `None` takes the column's default. Each row is built in the
    // lent `values`.
    let complete = |source: &mut dyn Iterator<Item = Option<Value>>,
                    values: &mut Vec<Value>|
     -> SqlResult<()> {
        values.clear();
        for (i, value) in source.enumerate() {
            values.push(match value {
                Some(value) => value,
                None => match &plan.defaults[i] {
                    Some(default) => default.eval(&[], &cx)?,
                    None => Value::Null,
                },
            });
        }
        Ok(())
    };
    match &plan.rows {
        InsertRows::Values(rows) => {
            for (row, exprs) in rows.iter().enumerate() {
                let conformed = plan.conformed.get(row).map_or(&[][..], Vec::as_slice);
                let mut failure = None;
                let mut source = exprs.iter().map(|expr| match expr {
                    Some(expr) => match expr.eval(&[], &cx) {
                        Ok(value) => Some(value),
                        Err(error) => {
                            failure.get_or_insert(error);
                            Some(Value::Null)
                        }
                    },
                    None => None,
                });
                complete(&mut source, values)?;
                if let Some(error) = failure {
                    return Err(error);
                }
                conform(&plan.table, values, conformed)?;
                insert_row(txn, plan, &cx, values, &mut produced, key, bytes)?;
            }
        }
        InsertRows::Query(query, targets) => {
            for row in run_query(txn, query, &env.unlimited())?.rows {
                let mut source = vec![None; width];
                for (value, &target) in row.into_iter().zip(targets) {
                    source[target] = Some(value);
                }
                complete(&mut source.into_iter(), values)?;
                conform(&plan.table, values, &[])?;
                insert_row(txn, plan, &cx, values, &mut produced, key, bytes)?;
            }
        }
    }
    scratch.give_back(env.scratch);
    Ok(produced)
}

/// Inserts one row of an INSERT (its values complete and conformed to their columns), or
/// resolves its conflict.
fn insert_row(
    txn: &mut Txn<'_>,
    plan: &InsertPlan,
    cx: &Context<'_>,
    values: &mut [Value],
    produced: &mut Produced,
    key: &mut Vec<u8>,
    bytes: &mut Vec<u8>,
) -> SqlResult<()> {
    let table = &plan.table;
    check_row(&plan.checks, table, values, cx)?;
    row_key(table, values, key);
    encode_row(table.schema.version, &table.types, values, bytes);
    match txn.insert(&table.engine, key, bytes) {
        Ok(()) => {
            if let Some(keys) = &plan.foreign {
                super::foreign::check_references(txn, keys, table, values, None)?;
            }
            produced.affected += 1;
            returning(&plan.returning, &plan.returning_moves, values, cx, &mut produced.rows)?;
        }
        Err(Error::DuplicateKey { index, .. })
            if plan.on_conflict.as_ref().is_some_and(|c| {
                c.index.map(|i| &table.schema.indexes[i].name) == index.as_ref()
            }) =>
        {
            let Some(conflict) = &plan.on_conflict else { unreachable!("checked by the guard") };
            let ConflictAction::Update { assignments, filter } = &conflict.action else {
                return Ok(());
            };
            // Find the existing row: by primary key, or through the unique index.
            let existing_key = match conflict.index {
                None => key.clone(),
                Some(i) => {
                    let mut prefix = Vec::new();
                    let format = table.schema.key_format;
                    for &column in &table.schema.indexes[i].columns {
                        prefix.push(1);
                        encode_key(format, table.types[column], &values[column], &mut prefix);
                    }
                    let mut found = None;
                    let high = successor(prefix.clone());
                    txn.scan_index(
                        &table.engine,
                        i,
                        Bound::Included(&prefix),
                        high.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                        Direction::Forward,
                        1,
                        |pk, _| {
                            found = Some(pk.to_vec());
                            false
                        },
                    )
                    .map_err(|e| engine_error(e, table))?;
                    found.ok_or_else(|| {
                        SqlError::new(
                            "40001",
                            "could not serialize access: the conflicting row changed",
                        )
                    })?
                }
            };
            if let Some(locker) = cx.locks {
                // ON CONFLICT DO UPDATE changes the row: its lock, where row locks are used.
                let mode = crate::ast::RowLockMode::NoKeyUpdate;
                locker.lock_write(txn, table, &existing_key, mode)?;
            }
            let Some(old) = txn
                .get_for_update(&table.engine, &existing_key)
                .map_err(|e| engine_error(e, table))?
            else {
                return Err(SqlError::new(
                    "40001",
                    "could not serialize access: the conflicting row was deleted concurrently",
                ));
            };
            let mut old_values = Vec::new();
            table.check_not_newer(old)?;
            table.decode(old, &Wanted::ALL, &mut old_values)?;
            let old_width = old_values.len();
            let mut both = old_values.clone();
            both.extend(values.iter().cloned());
            if let Some(filter) = filter
                && !filter.test(&both, cx)?
            {
                return Ok(());
            }
            let mut new_values = old_values;
            for (column, expr) in assignments {
                new_values[*column] = expr.eval(&both, cx)?;
            }
            conform(table, &mut new_values, &[])?;
            check_row(&plan.checks, table, &new_values, cx)?;
            let mut new_key = Vec::new();
            primary_key(table, &new_values, &mut new_key);
            encode_row(table.schema.version, &table.types, &new_values, bytes);
            if new_key != existing_key && !table.schema.primary_key.is_empty() {
                txn.delete(&table.engine, &existing_key).map_err(|e| engine_error(e, table))?;
                txn.insert(&table.engine, &new_key, bytes).map_err(|e| engine_error(e, table))?;
            } else {
                txn.update(&table.engine, &existing_key, bytes)
                    .map_err(|e| engine_error(e, table))?;
            }
            if let Some(keys) = &plan.foreign {
                let old = &both[..old_width];
                super::foreign::check_references(txn, keys, table, &new_values, Some(old))?;
                super::foreign::on_referenced_write(
                    txn,
                    keys,
                    table,
                    old,
                    Some(&new_values),
                    cx,
                    0,
                )?;
            }
            produced.affected += 1;
            returning(
                &plan.returning,
                &plan.returning_moves,
                &mut new_values,
                cx,
                &mut produced.rows,
            )?;
        }
        Err(error) => return Err(engine_error(error, table)),
    }
    Ok(())
}

fn returning(
    exprs: &[BExpr],
    moves: &[bool],
    row: &mut [Value],
    cx: &Context<'_>,
    out: &mut Vec<Vec<Value>>,
) -> SqlResult<()> {
    if exprs.is_empty() {
        return Ok(());
    }
    let mut output = Vec::with_capacity(exprs.len());
    for (index, expr) in exprs.iter().enumerate() {
        output.push(match expr {
            // The row is not read again: a column only this expression reads is moved.
            BExpr::Column(at) if moves.get(index) == Some(&true) => {
                std::mem::replace(&mut row[*at], Value::Null)
            }
            _ => expr.eval(row, cx)?,
        });
    }
    out.push(output);
    Ok(())
}

/// Runs an UPDATE or DELETE: finds the rows through the access path, then writes each one
/// through a read that is checked again at commit (so a concurrent change aborts this
/// transaction instead of being lost), re-testing the WHERE clause on the row it writes.
pub fn run_modify(txn: &mut Txn<'_>, plan: &ModifyPlan, env: &Env<'_>) -> SqlResult<Produced> {
    let subqueries = run_subqueries(txn, &plan.subqueries, env)?;
    let cx = Context {
        params: env.params,
        subqueries: &subqueries,
        derived: &[],
        correlated: None,
        outer: &[],
        now: env.now,
        reserve: env.reserve,
        interrupt: env.interrupt,
        locks: env.locks,
    };
    let table = &plan.access.table;
    if let Some(produced) = update_in_one_pass(txn, plan, &cx)? {
        return Ok(produced);
    }
    let mut scratch = Scratch::take(env.scratch);
    let Scratch { values, changes, starts, bytes, key: point, .. } = &mut scratch;
    let found = match &plan.access.path {
        // One row by its primary key, built in the lent buffer: read once, for update, below.
        Path::Point(exprs) => key_into(table, exprs, None, &[], &cx, point)?,
        // Rows through the access path and the filter, below.
        Path::Points { .. } | Path::Range { .. } => PointKey::Unconvertible,
    };
    let mut targets: Vec<Vec<u8>> = Vec::new();
    match found {
        PointKey::Key | PointKey::NoRow => {}
        PointKey::Unconvertible => {
            fetch(txn, &plan.access, &[], &cx, false, &mut |key, columns| {
                if plan.filter.as_ref().map_or(Ok(true), |f| f.test(columns, &cx))? {
                    targets.push(key.to_vec());
                }
                Ok(true)
            })?;
        }
    }
    let single = matches!(found, PointKey::Key).then_some(point.as_slice());
    let mut produced = Produced::default();
    let recheck = plan.recheck.as_ref().or(plan.filter.as_ref());
    let emit = |values: &mut Vec<Value>, rows: &mut Vec<Vec<Value>>| {
        returning(&plan.returning, &plan.returning_moves, values, &cx, rows)
    };
    for key in single.into_iter().chain(targets.iter().map(Vec::as_slice)) {
        if let Some(locker) = cx.locks {
            // The row's lock, where row locks are used: taken before the row is read for
            // update, so that after a wait the newest row is the one tested and changed.
            let mode = if plan.delete || plan.changes_key {
                crate::ast::RowLockMode::Update
            } else {
                crate::ast::RowLockMode::NoKeyUpdate
            };
            locker.lock_write(txn, table, key, mode)?;
        }
        let Some(current) =
            txn.get_for_update(&table.engine, key).map_err(|e| engine_error(e, table))?
        else {
            continue;
        };
        // Only the columns the statement reads; the others are copied as bytes.
        table.decode_noting(current, &plan.decode, values, starts)?;
        if !recheck.map_or(Ok(true), |f| f.test(values, &cx))? {
            continue;
        }
        if plan.delete {
            txn.delete(&table.engine, key).map_err(|e| engine_error(e, table))?;
            if let Some(keys) = &plan.foreign {
                super::foreign::on_referenced_write(txn, keys, table, values, None, &cx, 0)?;
            }
            produced.affected += 1;
            emit(values, &mut produced.rows)?;
            continue;
        }
        let old = plan.foreign.as_ref().map(|_| values.clone());
        assign(table, &plan.assignments, current, starts, &cx, values, changes, bytes)?;
        check_row(&plan.checks, table, values, &cx)?;
        if let (Some(keys), Some(old)) = (&plan.foreign, &old) {
            super::foreign::check_references(txn, keys, table, values, Some(old))?;
        }
        if plan.changes_key {
            let mut new_key = Vec::new();
            primary_key(table, values, &mut new_key);
            if new_key != key {
                txn.delete(&table.engine, key).map_err(|e| engine_error(e, table))?;
                txn.insert(&table.engine, &new_key, bytes).map_err(|e| engine_error(e, table))?;
                if let (Some(keys), Some(old)) = (&plan.foreign, &old) {
                    super::foreign::on_referenced_write(
                        txn,
                        keys,
                        table,
                        old,
                        Some(values),
                        &cx,
                        0,
                    )?;
                }
                produced.affected += 1;
                emit(values, &mut produced.rows)?;
                continue;
            }
        }
        let updated = if plan.reapplies && env.reapply && txn.recomputes_updates() {
            let statement = Box::new(Reapply {
                table: Arc::clone(table),
                assignments: Arc::clone(&plan.assignments),
                decode: Arc::clone(&plan.decode),
                params: env.params.to_vec(),
                now: env.now,
            });
            txn.update_recomputable(&table.engine, key, bytes, plan.keeps_index_keys, statement)
        } else if plan.keeps_index_keys {
            txn.update_same_keys(&table.engine, key, bytes)
        } else {
            txn.update(&table.engine, key, bytes)
        };
        updated.map_err(|e| engine_error(e, table))?;
        if let (Some(keys), Some(old)) = (&plan.foreign, &old) {
            super::foreign::on_referenced_write(txn, keys, table, old, Some(values), &cx, 0)?;
        }
        produced.affected += 1;
        emit(values, &mut produced.rows)?;
    }
    scratch.give_back(env.scratch);
    Ok(produced)
}

/// An UPDATE over a range of the primary key in one pass (`Txn::update_range`): each row is
/// read, tested, changed and written through the record the scan found, where the general
/// path finds the keys first and then looks each one up again to read it for update. Only in
/// a SERIALIZABLE transaction, whose reads the commit checks under every protocol (a READ
/// COMMITTED scan records nothing, so a row changed between the scan and the write would
/// lose that change), and only when the key does not change. `None`: not this case.
fn update_in_one_pass(
    txn: &mut Txn<'_>,
    plan: &ModifyPlan,
    cx: &Context<'_>,
) -> SqlResult<Option<Produced>> {
    let table = &plan.access.table;
    if plan.delete
        || plan.changes_key
        || plan.foreign.is_some()
        || !plan.checks.is_empty()
        || !matches!(plan.access.path, Path::Range { index: None, .. })
        || txn.isolation() != Isolation::Serializable
        || cx.locks.is_some_and(|locker| locker.locks.used(crate::locks::table_number(table)))
    {
        return Ok(None);
    }
    let (low, high) = match resolve(&plan.access, &[], cx, &mut Lent::default())? {
        Target::Empty => return Ok(Some(Produced::default())),
        Target::Range { low, high } => (low, high),
        // A bound that does not convert: the general path scans and filters.
        _ => return Ok(None),
    };
    let low = low.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let high = high.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let mut produced = Produced::default();
    let (mut values, mut starts) = (Vec::new(), Vec::new());
    let mut changes: Vec<(usize, Value)> = Vec::with_capacity(plan.assignments.len());
    let mut failure = None;
    let mut change = |current: &[u8], out: &mut Vec<u8>| -> SqlResult<bool> {
        cx.interrupt.tick()?;
        table.decode_noting(current, &plan.decode, &mut values, &mut starts)?;
        if !plan.filter.as_ref().map_or(Ok(true), |f| f.test(&values, cx))? {
            return Ok(false);
        }
        assign(table, &plan.assignments, current, &starts, cx, &mut values, &mut changes, out)?;
        returning(&plan.returning, &plan.returning_moves, &mut values, cx, &mut produced.rows)?;
        Ok(true)
    };
    let written = txn.update_range(
        &table.engine,
        low,
        high,
        Direction::Forward,
        usize::MAX,
        |_, current, out| {
            // After an error the rest of the range is left alone; the statement fails.
            failure.is_none()
                && change(current, out).unwrap_or_else(|error| {
                    failure = Some(error);
                    false
                })
        },
    );
    // The statement's own error first: the rows changed before it were still written, and
    // whatever that raised is a consequence.
    if let Some(error) = failure {
        return Err(error);
    }
    produced.affected = written.map_err(|e| engine_error(e, table))? as u64;
    Ok(Some(produced))
}

/// Writes into `bytes` the row an UPDATE's `assignments` make of `current`, whose columns the
/// statement reads are decoded in `values` (the decode noting `starts`); `values` then holds
/// the changed columns too.
#[allow(clippy::too_many_arguments)]
fn assign(
    table: &TableInfo,
    assignments: &[(usize, BExpr)],
    current: &[u8],
    starts: &[u32],
    cx: &Context<'_>,
    values: &mut Vec<Value>,
    changes: &mut Vec<(usize, Value)>,
    bytes: &mut Vec<u8>,
) -> SqlResult<()> {
    // Every assignment reads the old row.
    changes.clear();
    for (column, expr) in assignments {
        let value = conform_column(table, *column, expr.eval(values, cx)?)?;
        changes.push((*column, value));
    }
    // Evaluated in the statement's order; patched in the row's.
    if !changes.is_sorted_by_key(|(column, _)| *column) {
        changes.sort_unstable_by_key(|(column, _)| *column);
    }
    if !table.patch(current, changes, starts, bytes)? {
        // Written under another schema version: decode and encode it whole, in this one.
        table.decode(current, &Wanted::ALL, values)?;
        for (column, value) in changes.iter() {
            values[*column] = value.clone();
        }
        encode_row(table.schema.version, &table.types, values, bytes);
    }
    for (column, value) in changes.drain(..) {
        values[column] = value;
    }
    Ok(())
}

/// An UPDATE's change of one row (`ModifyPlan::reapplies`), which a READ COMMITTED commit
/// applies again to the row it locks when another transaction changed it after the statement
/// read it (`Txn::update_recomputable`): the statement then updates the newest committed row,
/// as PostgreSQL's READ COMMITTED UPDATE does after waiting for the other writer. An error the
/// statement would now raise (a value out of range, NOT NULL) aborts the commit with 40001;
/// run again, the statement reports it.
struct Reapply {
    table: Arc<TableInfo>,
    assignments: Arc<[(usize, BExpr)]>,
    decode: Arc<Wanted>,
    params: Vec<Value>,
    now: i64,
}

impl Recompute for Reapply {
    fn recompute(&mut self, current: &[u8], out: &mut Vec<u8>) -> bool {
        if row_version(current) > self.table.schema.version {
            // Written under a schema this statement does not know (a column added since, once
            // ALTER TABLE ... ADD COLUMN exists): re-encoding it with the statement's schema
            // would drop the new column. The commit aborts instead.
            return false;
        }
        let interrupt = Interrupt::default();
        let no_sequences = |_: &Sequence, _: i64| -> SqlResult<()> {
            Err(SqlError::new("XX000", "no sequence is used at commit"))
        };
        let cx = Context {
            params: &self.params,
            subqueries: &[],
            derived: &[],
            correlated: None,
            outer: &[],
            now: self.now,
            reserve: &no_sequences,
            interrupt: &interrupt,
            locks: None,
        };
        let (mut values, mut starts) = (Vec::new(), Vec::new());
        self.table.decode_noting(current, &self.decode, &mut values, &mut starts).is_ok()
            && assign(
                &self.table,
                &self.assignments,
                current,
                &starts,
                &cx,
                &mut values,
                &mut Vec::new(),
                out,
            )
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::BinaryOp;
    use crate::codec::decode_row;

    /// `SET n = n + 1` applied again at commit: to a row of the statement's schema it makes
    /// the new row; to a row of a newer schema it refuses (re-encoding would drop columns).
    #[test]
    fn reapply_makes_the_row_again_only_under_its_own_schema() {
        let db = crate::SqlDb::open(engram_engine::Config::default()).unwrap();
        let mut session = db.session().unwrap();
        session.execute_one("CREATE TABLE c (id INT PRIMARY KEY, n BIGINT NOT NULL)").unwrap();
        let table = db.catalog.read().table("c").unwrap();
        let plus_one = BExpr::Arith {
            op: BinaryOp::Add,
            left: Box::new(BExpr::Column(1)),
            right: Box::new(BExpr::Const(Value::Int(1))),
            ty: Type::Int8,
        };
        let mut statement = Reapply {
            table: Arc::clone(&table),
            assignments: Arc::from(vec![(1, plus_one)]),
            decode: Arc::new(Wanted::marked(vec![false, true], &table.types)),
            params: Vec::new(),
            now: 0,
        };
        let mut row = Vec::new();
        encode_row(table.schema.version, &table.types, &[Value::Int(1), Value::Int(41)], &mut row);
        let mut out = Vec::new();
        assert!(statement.recompute(&row, &mut out));
        let mut values = Vec::new();
        decode_row(&out, &table.types, &Wanted::ALL, &mut values).unwrap();
        assert!(matches!(values[..], [Value::Int(1), Value::Int(42)]), "{values:?}");

        let newer = (table.schema.version + 1).to_le_bytes();
        row[..2].copy_from_slice(&newer);
        out.clear();
        assert!(!statement.recompute(&row, &mut out));
    }
}
