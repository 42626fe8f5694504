//! Window functions over the rows a query emits (`plan/window.rs`): each window sorts the
//! rows by its partition and order keys, walks each partition, and appends its value to each
//! row, the last window's first, so that `BExpr::Window(i)` reads `row[len - 1 - i]`.

use super::aggregate::{AggState, accumulate_row, finish, new_states};
use crate::ast::FrameUnits;
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::plan::{Bound, SortKey, WindowFunc, WindowPlan};
use crate::types::Value;
use std::cmp::Ordering;

/// Computes every window of `windows` for `rows` and appends the values to each row.
pub(super) fn compute(
    windows: &[WindowPlan],
    rows: &mut [Vec<Value>],
    cx: &Context<'_>,
) -> SqlResult<()> {
    let mut values: Vec<Vec<Value>> = vec![Vec::with_capacity(windows.len()); rows.len()];
    for window in windows {
        let computed = one_window(window, rows, cx)?;
        for (row_values, value) in values.iter_mut().zip(computed) {
            row_values.push(value);
        }
    }
    for (row, row_values) in rows.iter_mut().zip(values) {
        row.extend(row_values.into_iter().rev());
    }
    Ok(())
}

/// Compares two values as ORDER BY does, NULLs placed by `nulls_first`.
fn compare(a: &Value, b: &Value, descending: bool, nulls_first: bool) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, true) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (false, false) => {
            let ordering = a.compare(b);
            if descending { ordering.reverse() } else { ordering }
        }
    }
}

/// The window's value for each row, in the rows' order.
fn one_window(window: &WindowPlan, rows: &[Vec<Value>], cx: &Context<'_>) -> SqlResult<Vec<Value>> {
    let n = rows.len();
    let mut partition_keys = Vec::with_capacity(n);
    let mut order_keys = Vec::with_capacity(n);
    for row in rows {
        let mut keys = Vec::with_capacity(window.partition.len());
        for expr in &window.partition {
            keys.push(expr.eval(row, cx)?);
        }
        partition_keys.push(keys);
        let mut keys = Vec::with_capacity(window.order.len());
        for key in &window.order {
            keys.push(key.expr.eval(row, cx)?);
        }
        order_keys.push(keys);
    }
    let same_partition = |a: usize, b: usize| {
        partition_keys[a]
            .iter()
            .zip(&partition_keys[b])
            .all(|(x, y)| compare(x, y, false, false).is_eq())
    };
    let order_cmp = |a: usize, b: usize, order: &[SortKey]| {
        order_keys[a]
            .iter()
            .zip(&order_keys[b])
            .zip(order)
            .map(|((x, y), key)| compare(x, y, key.descending, key.nulls_first))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let mut sorted: Vec<usize> = (0..n).collect();
    // Stable: peers keep the order they came in.
    sorted.sort_by(|&a, &b| {
        partition_keys[a]
            .iter()
            .zip(&partition_keys[b])
            .map(|(x, y)| compare(x, y, false, false))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then_with(|| order_cmp(a, b, &window.order))
    });
    let mut result = vec![Value::Null; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && same_partition(sorted[start], sorted[end]) {
            end += 1;
        }
        let members = &sorted[start..end];
        // Each row's peer group (rows equal in the window's ORDER BY), as [first, last].
        let mut peers = Vec::with_capacity(members.len());
        let mut groups = Vec::with_capacity(members.len());
        let mut group = 0;
        let mut first = 0;
        for i in 0..members.len() {
            if i > 0 && order_cmp(members[i - 1], members[i], &window.order).is_ne() {
                first = i;
                group += 1;
            }
            peers.push(first);
            groups.push(group);
        }
        let mut last_of = vec![0; members.len()];
        let mut last = members.len() - 1;
        for i in (0..members.len()).rev() {
            last_of[i] = last;
            if peers[i] == i && i > 0 {
                last = i - 1;
            }
        }
        partition(window, rows, members, &peers, &last_of, &groups, cx, &mut result)?;
        start = end;
    }
    Ok(result)
}

/// An integer argument evaluated for `row`; NULL is `None`.
fn integer(expr: &BExpr, row: &[Value], cx: &Context<'_>) -> SqlResult<Option<i64>> {
    match expr.eval(row, cx)? {
        Value::Null => Ok(None),
        Value::Int(n) => Ok(Some(n)),
        other => Err(SqlError::mismatch(format!("an integer was expected, not {other:?}"))),
    }
}

/// The frame of the row at position `i` of the partition: positions `[start, end]`, empty
/// when `start > end`.
#[allow(clippy::too_many_arguments)]
fn frame(
    window: &WindowPlan,
    i: usize,
    len: usize,
    peers: &[usize],
    last_of: &[usize],
    groups: &[usize],
    row: &[Value],
    cx: &Context<'_>,
) -> SqlResult<(i64, i64)> {
    let offset = |expr: &BExpr| -> SqlResult<i64> {
        match integer(expr, row, cx)? {
            Some(n) if n >= 0 => Ok(n),
            Some(_) => Err(SqlError::new("22013", "frame starting offset must not be negative")),
            None => Err(SqlError::new("22004", "frame starting offset must not be null")),
        }
    };
    // The first position of peer group `g` (clamped to the partition), and the last.
    let group_start = |g: i64| -> i64 {
        if g < 0 {
            return 0;
        }
        groups.iter().position(|x| *x as i64 == g).map_or(len as i64, |p| p as i64)
    };
    let group_end = |g: i64| -> i64 {
        if g < 0 {
            return -1;
        }
        groups.iter().rposition(|x| *x as i64 == g).map_or(len as i64 - 1, |p| p as i64)
    };
    let (i, last) = (i as i64, len as i64 - 1);
    let bound = |bound: &Bound, is_start: bool| -> SqlResult<i64> {
        Ok(match (bound, window.units) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::UnboundedFollowing, _) => last,
            (Bound::CurrentRow, FrameUnits::Rows) => i,
            (Bound::CurrentRow, _) => {
                if is_start {
                    peers[i as usize] as i64
                } else {
                    last_of[i as usize] as i64
                }
            }
            // Offsets up to i64::MAX: the arithmetic saturates (a frame past either end of
            // the partition is cut to it, or empty).
            (Bound::Preceding(e), FrameUnits::Groups) => {
                let g = (groups[i as usize] as i64).saturating_sub(offset(e)?);
                if is_start { group_start(g) } else { group_end(g) }
            }
            (Bound::Following(e), FrameUnits::Groups) => {
                let g = (groups[i as usize] as i64).saturating_add(offset(e)?);
                if is_start { group_start(g) } else { group_end(g) }
            }
            (Bound::Preceding(e), _) => i.saturating_sub(offset(e)?),
            (Bound::Following(e), _) => i.saturating_add(offset(e)?),
        })
    };
    let start = bound(&window.start, true)?.max(0);
    let end = bound(&window.end, false)?.min(last);
    Ok((start, end))
}

#[allow(clippy::too_many_arguments)]
fn partition(
    window: &WindowPlan,
    rows: &[Vec<Value>],
    members: &[usize],
    peers: &[usize],
    last_of: &[usize],
    groups: &[usize],
    cx: &Context<'_>,
    result: &mut [Value],
) -> SqlResult<()> {
    let len = members.len();
    // A running aggregate (the frame starts at the partition's first row): its state grows
    // with the frame's end instead of starting again for each row.
    let mut running: Option<(Vec<AggState>, i64)> = None;
    for i in 0..len {
        let row = &rows[members[i]];
        let value = match &window.func {
            WindowFunc::RowNumber => Value::Int(i as i64 + 1),
            WindowFunc::Rank => Value::Int(peers[i] as i64 + 1),
            WindowFunc::DenseRank => Value::Int(groups[i] as i64 + 1),
            WindowFunc::PercentRank => {
                Value::Float(if len > 1 { peers[i] as f64 / (len - 1) as f64 } else { 0.0 })
            }
            WindowFunc::CumeDist => Value::Float((last_of[i] + 1) as f64 / len as f64),
            WindowFunc::Ntile => match integer(&window.args[0], row, cx)? {
                None => Value::Null,
                Some(buckets) if buckets <= 0 => {
                    return Err(SqlError::new(
                        "22014",
                        "argument of ntile must be greater than zero",
                    ));
                }
                Some(buckets) => {
                    // The first `len % buckets` buckets hold one row more.
                    let (len, i, buckets) = (len as i64, i as i64, buckets);
                    let size = len / buckets;
                    let extra = len % buckets;
                    let big = extra * (size + 1);
                    let bucket =
                        if i < big { i / (size + 1) } else { extra + (i - big) / size.max(1) };
                    Value::Int(bucket + 1)
                }
            },
            WindowFunc::Lag | WindowFunc::Lead => {
                let offset = match window.args.get(1) {
                    Some(expr) => integer(expr, row, cx)?,
                    None => Some(1),
                };
                match offset {
                    None => Value::Null,
                    Some(offset) => {
                        let offset = if matches!(window.func, WindowFunc::Lag) {
                            offset.saturating_neg()
                        } else {
                            offset
                        };
                        let at = (i as i64).saturating_add(offset);
                        if (0..len as i64).contains(&at) {
                            window.args[0].eval(&rows[members[at as usize]], cx)?
                        } else {
                            match window.args.get(2) {
                                Some(default) => default.eval(row, cx)?,
                                None => Value::Null,
                            }
                        }
                    }
                }
            }
            WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
                let (start, end) = frame(window, i, len, peers, last_of, groups, row, cx)?;
                let at = match window.func {
                    WindowFunc::FirstValue => Some(start),
                    WindowFunc::LastValue => Some(end),
                    _ => match integer(&window.args[1], row, cx)? {
                        Some(n) if n > 0 => Some(start.saturating_add(n - 1)),
                        Some(_) => {
                            return Err(SqlError::new(
                                "22016",
                                "argument of nth_value must be greater than zero",
                            ));
                        }
                        None => None,
                    },
                };
                match at {
                    Some(at) if start <= end && at >= start && at <= end => {
                        window.args[0].eval(&rows[members[at as usize]], cx)?
                    }
                    _ => Value::Null,
                }
            }
            WindowFunc::Aggregate(aggregate) => {
                let aggregates = std::slice::from_ref(aggregate);
                let (start, end) = frame(window, i, len, peers, last_of, groups, row, cx)?;
                if matches!(window.start, Bound::UnboundedPreceding) {
                    let (states, done) =
                        running.get_or_insert_with(|| (new_states(aggregates), -1));
                    while *done < end {
                        *done += 1;
                        accumulate_row(states, aggregates, &rows[members[*done as usize]], cx)?;
                    }
                    finish(states[0].clone(), aggregate)?
                } else {
                    let mut states = new_states(aggregates);
                    let mut at = start;
                    while at <= end {
                        accumulate_row(&mut states, aggregates, &rows[members[at as usize]], cx)?;
                        at += 1;
                    }
                    finish(states.remove(0), aggregate)?
                }
            }
        };
        result[members[i]] = value;
    }
    Ok(())
}
