//! Conditional expressions written as functions. Their arguments arrive in the result type,
//! the common type of them all.

use crate::error::SqlResult;
use crate::expr::{BExpr, Context};
use crate::types::{Type, Value, cast};
use std::cmp::Ordering;

/// The first argument that is not NULL; the ones after it are not evaluated.
pub(super) fn coalesce(
    args: &[BExpr],
    row: &[Value],
    ty: Type,
    cx: &Context<'_>,
) -> SqlResult<Value> {
    for arg in args {
        let value = arg.eval(row, cx)?;
        if !value.is_null() {
            return cast(value, ty, false);
        }
    }
    Ok(Value::Null)
}

/// NULL if the two are equal, else the first (NULL when the first is).
pub(super) fn nullif(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if !values[1].is_null() && values[0].compare(&values[1]) == Ordering::Equal {
        Ok(Value::Null)
    } else {
        Ok(values[0].clone())
    }
}

pub(super) fn greatest(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    extreme(values, ty, Ordering::Greater)
}

pub(super) fn least(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    extreme(values, ty, Ordering::Less)
}

/// The value that compares `wanted` to every other, NULLs left out (NULL if all are).
fn extreme(values: &[Value], ty: Type, wanted: Ordering) -> SqlResult<Value> {
    let mut best: Option<&Value> = None;
    for value in values.iter().filter(|v| !v.is_null()) {
        if best.is_none_or(|best| value.compare(best) == wanted) {
            best = Some(value);
        }
    }
    cast(best.cloned().unwrap_or(Value::Null), ty, false)
}
