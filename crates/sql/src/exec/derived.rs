//! The rows of FROM items that are not stored tables (`plan/derived.rs`): computed once per
//! run of the query that reads them, before its joins.

use super::{Env, run_query};
use crate::ast::SetOp;
use crate::error::{SqlError, SqlResult};
use crate::expr::Context;
use crate::plan::{Derived, OuterArg, QueryPlan};
use crate::types::{GroupHasher, GroupKey, Value};
use engram_engine::Txn;
use std::collections::{HashMap, HashSet};

type Rows = Vec<Vec<Value>>;

/// The rows of each derived source of `plan`, in `QueryPlan::derived` order.
pub(super) fn materialize(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    env: &Env<'_>,
    cx: &Context<'_>,
) -> SqlResult<Vec<Rows>> {
    plan.derived
        .iter()
        .map(|derived| match derived {
            // Computed at its place in the join, for each row before it (`lateral`).
            Derived::Lateral { .. } => Ok(Vec::new()),
            derived => rows(txn, derived, env, cx, &[]),
        })
        .collect()
}

/// The rows of a LATERAL source for the joined row `row` before it: a subquery's outer values
/// taken from the row, a function's arguments evaluated over it.
pub(super) fn lateral(
    txn: &mut Txn<'_>,
    source: &Derived,
    outer: &[OuterArg],
    env: &Env<'_>,
    cx: &Context<'_>,
    row: &[Value],
) -> SqlResult<Rows> {
    let values: Vec<Value> = outer
        .iter()
        .map(|arg| match *arg {
            OuterArg::Column(column) => row[column].clone(),
            OuterArg::Outer(at) => cx.outer[at].clone(),
        })
        .collect();
    let inner = Env { outer: &values, ..*env };
    rows(txn, source, if outer.is_empty() { env } else { &inner }, cx, row)
}

fn run(txn: &mut Txn<'_>, plan: &QueryPlan, env: &Env<'_>) -> SqlResult<Rows> {
    crate::depth::grow(|| run_query(txn, plan, &env.unlimited())).map(|produced| produced.rows)
}

/// A source's rows; `row`: the joined row before it, which a LATERAL source reads (empty for
/// the others).
fn rows(
    txn: &mut Txn<'_>,
    derived: &Derived,
    env: &Env<'_>,
    cx: &Context<'_>,
    row: &[Value],
) -> SqlResult<Rows> {
    match derived {
        Derived::Query(plan) => run(txn, plan, env),
        Derived::Lateral { source, outer } => lateral(txn, source, outer, env, cx, row),
        Derived::SetOp { op, all, left, right } => {
            let left = run(txn, left, env)?;
            let right = run(txn, right, env)?;
            Ok(set_operation(*op, *all, left, right))
        }
        Derived::Series { start, stop, step } => series(start, stop, step.as_ref(), cx, row),
        Derived::Unnest(arrays) => {
            let mut columns = Vec::with_capacity(arrays.len());
            for array in arrays {
                columns.push(match array.eval(row, cx)? {
                    Value::Array(items) => items,
                    _ => std::sync::Arc::from(Vec::new()),
                });
            }
            let count = columns.iter().map(|items| items.len()).max().unwrap_or(0);
            Ok((0..count)
                .map(|at| {
                    columns
                        .iter()
                        .map(|items| items.get(at).cloned().unwrap_or(Value::Null))
                        .collect()
                })
                .collect())
        }
        Derived::Json { name, arg } => {
            crate::expr::functions::json::set_rows(name, &arg.eval(row, cx)?)
        }
        Derived::Numbered(inner) => {
            let mut rows = rows(txn, inner, env, cx, row)?;
            for (at, row) in rows.iter_mut().enumerate() {
                row.push(Value::Int(at as i64 + 1));
            }
            Ok(rows)
        }
        Derived::Work(work) => Ok(work.lock().clone()),
        Derived::Recursive { anchor, step, all, work } => {
            let mut result = run(txn, anchor, env)?;
            let mut seen = HashSet::<GroupKey, GroupHasher>::default();
            if !all {
                result.retain(|row| seen.insert(GroupKey(row.clone())));
            }
            let mut added = result.clone();
            while !added.is_empty() {
                env.interrupt.check()?;
                *work.lock() = std::mem::take(&mut added);
                let mut next = run(txn, step, env)?;
                if !all {
                    next.retain(|row| seen.insert(GroupKey(row.clone())));
                }
                result.extend(next.iter().cloned());
                added = next;
            }
            work.lock().clear();
            Ok(result)
        }
    }
}

/// UNION, INTERSECT and EXCEPT over two multisets of rows, NULLs equal to NULLs.
fn set_operation(op: SetOp, all: bool, left: Rows, right: Rows) -> Rows {
    match (op, all) {
        (SetOp::Union, true) => {
            let mut rows = left;
            rows.extend(right);
            rows
        }
        (SetOp::Union, false) => {
            let mut seen = HashSet::<GroupKey, GroupHasher>::default();
            left.into_iter().chain(right).filter(|row| seen.insert(GroupKey(row.clone()))).collect()
        }
        (SetOp::Intersect | SetOp::Except, _) => {
            // How many times each row of the right side is there to match.
            let mut counts = HashMap::<GroupKey, usize, GroupHasher>::default();
            for row in right {
                *counts.entry(GroupKey(row)).or_default() += 1;
            }
            let mut done = HashSet::<GroupKey, GroupHasher>::default();
            let mut rows = Vec::new();
            for row in left {
                let key = GroupKey(row);
                if !all && done.contains(&key) {
                    continue;
                }
                let count = counts.get_mut(&key);
                let matched = match count {
                    Some(n) if *n > 0 => {
                        if all {
                            *n -= 1;
                        }
                        true
                    }
                    _ => false,
                };
                if matched == (op == SetOp::Intersect) {
                    if !all {
                        done.insert(GroupKey(key.0.clone()));
                    }
                    rows.push(key.0);
                } else if !all {
                    done.insert(key);
                }
            }
            rows
        }
    }
}

fn series(
    start: &crate::expr::BExpr,
    stop: &crate::expr::BExpr,
    step: Option<&crate::expr::BExpr>,
    cx: &Context<'_>,
    row: &[Value],
) -> SqlResult<Rows> {
    let int = |value: Value| match value {
        Value::Null => Ok(None),
        Value::Int(n) => Ok(Some(n)),
        other => Err(SqlError::mismatch(format!("generate_series of {other:?}"))),
    };
    let (Some(start), Some(stop)) = (int(start.eval(row, cx)?)?, int(stop.eval(row, cx)?)?) else {
        return Ok(Vec::new());
    };
    let step = match step {
        None => 1,
        Some(step) => match int(step.eval(row, cx)?)? {
            None => return Ok(Vec::new()),
            Some(0) => return Err(SqlError::new("22023", "step size cannot equal zero")),
            Some(step) => step,
        },
    };
    let mut rows = Vec::new();
    let mut value = start;
    while (step > 0 && value <= stop) || (step < 0 && value >= stop) {
        cx.interrupt.tick()?;
        rows.push(vec![Value::Int(value)]);
        match value.checked_add(step) {
            Some(next) => value = next,
            None => break,
        }
    }
    Ok(rows)
}
