//! Sequence functions: `nextval`, `currval`, `setval`, `lastval`. A sequence is named by text
//! as PostgreSQL's `regclass` reads it: `'name'` folds to lower case, `'"Name"'` keeps its
//! case, and `public.` may precede it.

use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::types::{Type, Value};

/// The sequence name a `regclass` text names.
pub fn sequence_name(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix("public.").unwrap_or(text);
    match text.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => text.to_lowercase(),
    }
}

fn name_arg(value: &Value) -> String {
    sequence_name(&value.to_text(Type::Text).unwrap_or_default())
}

pub(super) fn nextval(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let name = name_arg(&values[0]);
    let (_, sequence) = cx.reserve.find(&name)?;
    let value =
        sequence.next_value(&name, |sequence, limit| cx.reserve.reserve(sequence, limit))?;
    cx.reserve.note(&sequence, value);
    Ok(Value::Int(value))
}

pub(super) fn currval(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let name = name_arg(&values[0]);
    let (_, sequence) = cx.reserve.find(&name)?;
    cx.reserve.current(&sequence).map(Value::Int).ok_or_else(|| {
        SqlError::new(
            "55000",
            format!("currval of sequence \"{name}\" is not yet defined in this session"),
        )
    })
}

/// `setval(name, value [, is_called])`: the next `nextval` gives the value after `value`, or
/// `value` itself when `is_called` is false.
pub(super) fn setval(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let name = name_arg(&values[0]);
    let (_, sequence) = cx.reserve.find(&name)?;
    let Value::Int(value) = values[1] else {
        return Err(SqlError::mismatch("setval's value must be a bigint"));
    };
    let called = !matches!(values.get(2), Some(Value::Bool(false)));
    sequence
        .set_value(&name, value, called, |sequence, limit| cx.reserve.reserve(sequence, limit))?;
    if called {
        cx.reserve.note(&sequence, value);
    }
    Ok(Value::Int(value))
}

pub(super) fn lastval(_: &[BExpr], _: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    cx.reserve
        .last()
        .map(Value::Int)
        .ok_or_else(|| SqlError::new("55000", "lastval is not yet defined in this session"))
}
