//! What the planner does to a bound query before it runs: drop a sort the scan order already
//! gives, mark the columns each table must decode, and the output columns the executor may
//! move out of the row instead of cloning.

use super::{Aggregate, OuterArg, Path, QueryPlan, WindowFunc};
use crate::codec::Wanted;
use crate::expr::BExpr;

/// Drops the sort when the single table's scan already yields rows in the requested order.
pub(super) fn eliminate_sort(plan: &mut QueryPlan) {
    if plan.sort.is_empty()
        || plan.grouping.is_some()
        || plan.tables.len() != 1
        || plan.distinct
        || !plan.distinct_on.is_empty()
    {
        return;
    }
    let access = &mut plan.tables[0];
    let schema = &access.table.schema;
    let (columns, eq) = match &access.path {
        Path::Point(_) => {
            plan.sort.clear();
            return;
        }
        // In key order, but the ORDER BY is left to the sort.
        Path::Points { .. } => return,
        Path::Range { index: None, eq, .. } => (schema.primary_key.clone(), eq.len()),
        Path::Range { index: Some(i), eq, .. } => (schema.indexes[*i].columns.clone(), eq.len()),
    };
    let descending = plan.sort[0].descending;
    let mut next = eq;
    for key in &plan.sort {
        let BExpr::Column(c) = key.expr else { return };
        if key.descending != descending || key.nulls_first != descending {
            return;
        }
        // Columns fixed by equality may appear anywhere in the ORDER BY.
        if let Some(position) = columns.iter().position(|k| *k == c)
            && position < eq
        {
            continue;
        }
        if columns.get(next) != Some(&c) {
            return;
        }
        next += 1;
    }
    if let Path::Range { descending: d, .. } = &mut access.path {
        *d = descending;
    }
    plan.sort.clear();
}

/// Marks the columns each table must decode.
/// Fills [`QueryPlan::moves`]: output columns of the innermost table read by exactly one
/// output expression. Outer tables' columns stay in the joined row for the next inner row, and
/// grouped plans emit from group rows, so neither moves anything.
pub(super) fn mark_moves(plan: &mut QueryPlan) {
    let Some(last) = plan.tables.last() else { return };
    if plan.grouping.is_some() {
        return;
    }
    let innermost = last.offset..last.offset + last.table.types.len();
    plan.moves = sole_reads(&plan.output, plan.width, innermost);
}

/// Per expression: whether it is a bare column in `movable` that no other expression reads
/// (its value may then be moved out of the row instead of cloned).
pub(crate) fn sole_reads(
    exprs: &[BExpr],
    width: usize,
    movable: std::ops::Range<usize>,
) -> Vec<bool> {
    let mut readers = vec![0usize; width];
    for expr in exprs {
        expr.columns(&mut |at| {
            if at < readers.len() {
                readers[at] += 1;
            }
        });
    }
    exprs
        .iter()
        .map(|expr| matches!(expr, BExpr::Column(at) if movable.contains(at) && readers[*at] == 1))
        .collect()
}

pub(super) fn mark_wanted(plan: &mut QueryPlan) {
    let mut used = vec![false; plan.width];
    // The outer columns correlated subqueries read (they run before the row is filtered).
    for sub in &plan.subqueries {
        for arg in &sub.outer_args {
            if let OuterArg::Column(column) = *arg
                && column < used.len()
            {
                used[column] = true;
            }
        }
    }
    // The columns LATERAL sources read (they are computed before the row is filtered).
    for derived in &plan.derived {
        derived.row_columns(&mut |column| {
            if column < used.len() {
                used[column] = true;
            }
        });
    }
    let mut mark = |expr: &BExpr| {
        expr.columns(&mut |at| {
            if at < used.len() {
                used[at] = true;
            }
        })
    };
    if let Some(filter) = &plan.filter {
        mark(filter);
    }
    for access in &plan.tables {
        if let Some(on) = &access.on {
            mark(on);
        }
        match &access.path {
            Path::Point(key) => key.iter().for_each(&mut mark),
            Path::Points { key, list, .. } => key.iter().chain(list).for_each(&mut mark),
            Path::Range { eq, low, high, .. } => {
                eq.iter().for_each(&mut mark);
                if let Some((e, _)) = low {
                    mark(e);
                }
                if let Some((e, _)) = high {
                    mark(e);
                }
            }
        }
    }
    let mark_aggregate = |aggregate: &Aggregate, mark: &mut dyn FnMut(&BExpr)| {
        for expr in [&aggregate.arg, &aggregate.separator, &aggregate.filter].into_iter().flatten()
        {
            mark(expr);
        }
    };
    match &plan.grouping {
        Some(grouping) => {
            grouping.keys.iter().for_each(&mut mark);
            for aggregate in &grouping.aggregates {
                mark_aggregate(aggregate, &mut mark);
            }
        }
        None => {
            plan.output.iter().chain(&plan.distinct_on).for_each(&mut mark);
            plan.sort.iter().for_each(|k| mark(&k.expr));
            // Windows over the joined rows read them too.
            for window in &plan.windows {
                window.args.iter().chain(&window.partition).for_each(&mut mark);
                window.order.iter().for_each(|k| mark(&k.expr));
                if let WindowFunc::Aggregate(aggregate) = &window.func {
                    mark_aggregate(aggregate, &mut mark);
                }
            }
        }
    }
    for access in &mut plan.tables {
        let width = access.table.types.len();
        access.wanted = Wanted::marked(
            used[access.offset..access.offset + width].to_vec(),
            &access.table.types,
        );
    }
}
