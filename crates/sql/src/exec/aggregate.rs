//! Aggregates' running states: what each aggregate holds while its group's rows arrive
//! (counts, sums, the extremes, text and arrays built up, DISTINCT values, an aggregate's
//! ORDER BY rows), and its value when the group ends. Grouping (`exec.rs`) and window frames
//! (`exec/window.rs`) both feed rows through them.

use crate::ast::BinaryOp;
use crate::error::{SqlError, SqlResult};
use crate::expr::{Context, check_text_len};
use crate::plan::{AggFunc, Aggregate};
use crate::types::{DistinctValue, GroupHasher, Type, Value, cast};
use std::cmp::Ordering;
use std::collections::HashSet;

#[derive(Debug, Clone)]
pub(super) enum AggState {
    Count(i64),
    Sum(Value),
    MinMax(Value),
    Avg(Value, i64),
    /// `string_agg`'s text so far (`None`: no value yet).
    Text(Option<String>),
    /// `array_agg`'s values so far (`None`: no row yet).
    Array(Option<Vec<Value>>),
    /// `json_object_agg`'s pairs so far (`None`: no row yet).
    Pairs(Option<Vec<(Value, Value)>>),
    /// `bool_and` / `bool_or`'s answer so far (`None`: no value yet).
    Bool(Option<bool>),
    /// The distinct values so far, each with the separator of the row it first came in.
    Distinct(Vec<(Value, Value)>, HashSet<DistinctValue, GroupHasher>),
    /// An aggregate with ORDER BY: each row's sort keys, value and separator, aggregated in
    /// order when the group ends.
    Ordered(Vec<(Vec<Value>, Value, Value)>),
}

pub(super) fn new_states(aggregates: &[Aggregate]) -> Vec<AggState> {
    aggregates
        .iter()
        .map(|a| {
            if !a.order.is_empty() {
                return AggState::Ordered(Vec::new());
            }
            if a.distinct {
                return AggState::Distinct(Vec::new(), HashSet::default());
            }
            match a.func {
                AggFunc::Count | AggFunc::CountStar => AggState::Count(0),
                AggFunc::Sum => AggState::Sum(Value::Null),
                AggFunc::Min | AggFunc::Max => AggState::MinMax(Value::Null),
                AggFunc::Avg => AggState::Avg(Value::Null, 0),
                AggFunc::StringAgg => AggState::Text(None),
                AggFunc::ArrayAgg | AggFunc::JsonAgg => AggState::Array(None),
                AggFunc::JsonObjectAgg => AggState::Pairs(None),
                AggFunc::BoolAnd | AggFunc::BoolOr => AggState::Bool(None),
            }
        })
        .collect()
}

fn add(sum: Value, value: Value, ty: Type) -> SqlResult<Value> {
    if sum.is_null() {
        return cast(value, ty, false);
    }
    crate::expr::arith(BinaryOp::Add, sum, value, ty)
}

/// Adds `value` (and, for `string_agg`, the row's separator) to an aggregate's state.
fn accumulate(
    state: &mut AggState,
    aggregate: &Aggregate,
    value: Value,
    separator: Value,
) -> SqlResult<()> {
    match state {
        AggState::Count(n) => {
            if aggregate.func == AggFunc::CountStar || !value.is_null() {
                *n += 1;
            }
        }
        AggState::Array(values) => {
            let values = values.get_or_insert_with(Vec::new);
            if values.len() >= crate::types::ARRAY_ELEMENTS_MAX {
                return Err(SqlError::new(
                    "54000",
                    format!(
                        "array size exceeds the maximum allowed ({})",
                        crate::types::ARRAY_ELEMENTS_MAX
                    ),
                ));
            }
            values.push(value);
        }
        AggState::Pairs(pairs) => {
            if value.is_null() {
                return Err(SqlError::new("22023", "field name must not be null"));
            }
            pairs.get_or_insert_with(Vec::new).push((value, separator));
        }
        // `array_agg` and `json_agg` keep NULLs, with DISTINCT too.
        _ if value.is_null() && !matches!(aggregate.func, AggFunc::ArrayAgg | AggFunc::JsonAgg) => {
        }
        AggState::Bool(answer) => {
            let value = value.truth()?.unwrap_or(true);
            *answer = Some(match (aggregate.func, *answer) {
                (AggFunc::BoolAnd, Some(so_far)) => so_far && value,
                (_, Some(so_far)) => so_far || value,
                (_, None) => value,
            });
        }
        AggState::Sum(sum) => *sum = add(std::mem::replace(sum, Value::Null), value, aggregate.ty)?,
        AggState::MinMax(best) => {
            let replace = best.is_null() || {
                let ordering = value.compare(best);
                if aggregate.func == AggFunc::Min {
                    ordering == Ordering::Less
                } else {
                    ordering == Ordering::Greater
                }
            };
            if replace {
                *best = value;
            }
        }
        AggState::Avg(sum, count) => {
            *sum = add(std::mem::replace(sum, Value::Null), value, aggregate.ty)?;
            *count += 1;
        }
        AggState::Text(text) => {
            let value = value.to_text(Type::Text).unwrap_or_default();
            match text {
                None => *text = Some(value),
                Some(text) => {
                    let separator = separator.to_text(Type::Text).unwrap_or_default();
                    check_text_len(text.len() + separator.len() + value.len())?;
                    text.push_str(&separator);
                    text.push_str(&value);
                }
            }
        }
        AggState::Distinct(values, seen) => {
            if seen.insert(DistinctValue(value.clone())) {
                values.push((value, separator));
            }
        }
        AggState::Ordered(rows) => rows.push((Vec::new(), value, separator)),
    }
    Ok(())
}

/// Adds one row to each aggregate of its group.
pub(super) fn accumulate_row(
    states: &mut [AggState],
    aggregates: &[Aggregate],
    row: &[Value],
    cx: &Context<'_>,
) -> SqlResult<()> {
    for (state, aggregate) in states.iter_mut().zip(aggregates) {
        if let Some(filter) = &aggregate.filter
            && !filter.test(row, cx)?
        {
            continue;
        }
        let value = match &aggregate.arg {
            Some(arg) => arg.eval(row, cx)?,
            None => Value::Null,
        };
        let separator = match &aggregate.separator {
            Some(separator) => separator.eval(row, cx)?,
            None => Value::Null,
        };
        if let AggState::Ordered(rows) = state {
            let mut keys = Vec::with_capacity(aggregate.order.len());
            for key in &aggregate.order {
                keys.push(key.expr.eval(row, cx)?);
            }
            rows.push((keys, value, separator));
            continue;
        }
        accumulate(state, aggregate, value, separator)?;
    }
    Ok(())
}

pub(super) fn finish(state: AggState, aggregate: &Aggregate) -> SqlResult<Value> {
    Ok(match state {
        AggState::Count(n) => Value::Int(n),
        AggState::Sum(sum) | AggState::MinMax(sum) => sum,
        AggState::Text(text) => text.map_or(Value::Null, |text| Value::Text(text.into())),
        AggState::Array(Some(values)) if aggregate.func == AggFunc::JsonAgg => {
            crate::expr::functions::json::aggregate_array(&values, aggregate.ty)?
        }
        AggState::Pairs(pairs) => match pairs {
            Some(pairs) => crate::expr::functions::json::aggregate_object(&pairs, aggregate.ty)?,
            None => Value::Null,
        },
        AggState::Array(values) => values.map_or(Value::Null, crate::types::array),
        AggState::Bool(answer) => answer.map_or(Value::Null, Value::Bool),
        AggState::Avg(sum, count) => {
            if count == 0 {
                Value::Null
            } else {
                crate::expr::arith(BinaryOp::Divide, sum, Value::Int(count), aggregate.ty)?
            }
        }
        AggState::Distinct(values, _) => {
            let plain = Aggregate { distinct: false, ..aggregate.clone() };
            let mut inner = new_states(std::slice::from_ref(&plain)).remove(0);
            for (value, separator) in values {
                accumulate(&mut inner, &plain, value, separator)?;
            }
            finish(inner, &plain)?
        }
        AggState::Ordered(mut rows) => {
            let order = &aggregate.order;
            rows.sort_by(|(a, ..), (b, ..)| {
                for ((x, y), key) in a.iter().zip(b).zip(order) {
                    let ordering = match (x.is_null(), y.is_null()) {
                        (true, true) => Ordering::Equal,
                        (true, false) if key.nulls_first => Ordering::Less,
                        (true, false) => Ordering::Greater,
                        (false, true) if key.nulls_first => Ordering::Greater,
                        (false, true) => Ordering::Less,
                        (false, false) if key.descending => y.compare(x),
                        (false, false) => x.compare(y),
                    };
                    if ordering != Ordering::Equal {
                        return ordering;
                    }
                }
                Ordering::Equal
            });
            let plain = Aggregate { order: Vec::new(), ..aggregate.clone() };
            let mut inner = new_states(std::slice::from_ref(&plain)).remove(0);
            for (_, value, separator) in rows {
                accumulate(&mut inner, &plain, value, separator)?;
            }
            finish(inner, &plain)?
        }
    })
}
