//! Array functions. Their arguments arrive as the binder resolved them (`Takes::Array`): the
//! arrays in one array type, the elements in its element type.

use crate::error::{SqlError, SqlResult};
use crate::expr::Context;
use crate::types::{ARRAY_ELEMENTS_MAX, Type, Value, array};
use std::cmp::Ordering;

fn items(value: &Value) -> &[Value] {
    match value {
        Value::Array(items) => items,
        _ => &[],
    }
}

/// Elements equal for the array functions: NULL matches NULL (`IS NOT DISTINCT FROM`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => true,
        (false, false) => a.compare(b) == Ordering::Equal,
        _ => false,
    }
}

fn sized(values: Vec<Value>) -> SqlResult<Value> {
    if values.len() > ARRAY_ELEMENTS_MAX {
        return Err(SqlError::new(
            "54000",
            format!("array size exceeds the maximum allowed ({ARRAY_ELEMENTS_MAX})"),
        ));
    }
    Ok(array(values))
}

/// The length along dimension `dim`: NULL for an empty array or another dimension.
pub(super) fn array_length(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let items = items(&values[0]);
    Ok(match values[1] {
        Value::Int(1) if !items.is_empty() => Value::Int(items.len() as i64),
        _ => Value::Null,
    })
}

pub(super) fn cardinality(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Int(items(&values[0]).len() as i64))
}

pub(super) fn array_lower(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(match values[1] {
        Value::Int(1) if !items(&values[0]).is_empty() => Value::Int(1),
        _ => Value::Null,
    })
}

pub(super) fn array_ndims(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(if items(&values[0]).is_empty() { Value::Null } else { Value::Int(1) })
}

pub(super) fn array_dims(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let items = items(&values[0]);
    Ok(if items.is_empty() {
        Value::Null
    } else {
        Value::Text(format!("[1:{}]", items.len()).into())
    })
}

/// The position of the first element equal to the value (NULL finds NULL), from the optional
/// start; NULL when there is none.
pub(super) fn array_position(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[0].is_null() {
        return Ok(Value::Null);
    }
    let start = match values.get(2) {
        None => 1,
        Some(Value::Null) => {
            return Err(SqlError::new("22004", "initial position must not be null"));
        }
        Some(Value::Int(start)) => (*start).max(1),
        Some(_) => 1,
    };
    let found = items(&values[0])
        .iter()
        .enumerate()
        .skip(start as usize - 1)
        .find(|(_, item)| same(item, &values[1]));
    Ok(found.map_or(Value::Null, |(at, _)| Value::Int(at as i64 + 1)))
}

pub(super) fn array_positions(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[0].is_null() {
        return Ok(Value::Null);
    }
    let found = items(&values[0])
        .iter()
        .enumerate()
        .filter(|(_, item)| same(item, &values[1]))
        .map(|(at, _)| Value::Int(at as i64 + 1))
        .collect();
    Ok(array(found))
}

/// `array_append(array, element)`: a NULL array is an empty one.
pub(super) fn array_append(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let mut out = items(&values[0]).to_vec();
    out.push(values[1].clone());
    sized(out)
}

pub(super) fn array_prepend(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let mut out = vec![values[0].clone()];
    out.extend_from_slice(items(&values[1]));
    sized(out)
}

/// `array_cat(a, b)`: NULL only when both are.
pub(super) fn array_cat(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[0].is_null() && values[1].is_null() {
        return Ok(Value::Null);
    }
    let mut out = items(&values[0]).to_vec();
    out.extend_from_slice(items(&values[1]));
    sized(out)
}

pub(super) fn array_remove(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[0].is_null() {
        return Ok(Value::Null);
    }
    let out = items(&values[0]).iter().filter(|item| !same(item, &values[1])).cloned().collect();
    Ok(array(out))
}

pub(super) fn array_replace(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[0].is_null() {
        return Ok(Value::Null);
    }
    let out = items(&values[0])
        .iter()
        .map(|item| if same(item, &values[1]) { values[2].clone() } else { item.clone() })
        .collect();
    Ok(array(out))
}

/// `array_to_string(array, separator [, null text])`: NULL elements left out unless a text
/// is given for them.
pub(super) fn array_to_string(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (Value::Array(items), Value::Text(separator)) = (&values[0], &values[1]) else {
        return Ok(Value::Null);
    };
    let null = values.get(2).and_then(Value::as_str);
    let mut out = String::new();
    let mut first = true;
    for item in items.iter() {
        let text = match item {
            Value::Null => match null {
                Some(null) => null.to_string(),
                None => continue,
            },
            item => item.to_text(Type::Text).unwrap_or_default(),
        };
        if !first {
            out.push_str(separator);
        }
        first = false;
        out.push_str(&text);
        crate::expr::check_text_len(out.len())?;
    }
    Ok(Value::Text(out.into()))
}

/// `string_to_array(text, separator [, null text])`: a NULL separator splits into
/// characters, an empty one gives the whole text.
pub(super) fn string_to_array(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let Value::Text(text) = &values[0] else { return Ok(Value::Null) };
    let null = values.get(2).and_then(Value::as_str);
    let piece = |part: &str| match null {
        Some(null) if part == null => Value::Null,
        _ => Value::Text(part.into()),
    };
    if text.is_empty() {
        return Ok(array(Vec::new()));
    }
    let parts: Vec<Value> = match &values[1] {
        Value::Null => text.chars().map(|c| piece(c.encode_utf8(&mut [0; 4]))).collect(),
        Value::Text(separator) if separator.is_empty() => vec![piece(text)],
        Value::Text(separator) => text.split(separator.as_str()).map(piece).collect(),
        _ => return Ok(Value::Null),
    };
    sized(parts)
}

fn contains(outer: &[Value], inner: &[Value]) -> bool {
    inner.iter().all(|x| {
        !x.is_null() && outer.iter().any(|y| !y.is_null() && x.compare(y) == Ordering::Equal)
    })
}

/// `a @> b`: every element of `b` is in `a` (NULL elements are in nothing).
pub(super) fn arraycontains(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(contains(items(&values[0]), items(&values[1]))))
}

pub(super) fn arraycontained(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(contains(items(&values[1]), items(&values[0]))))
}

/// `a && b`: an element in both.
pub(super) fn arrayoverlap(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (a, b) = (items(&values[0]), items(&values[1]));
    Ok(Value::Bool(a.iter().any(|x| {
        !x.is_null() && b.iter().any(|y| !y.is_null() && x.compare(y) == Ordering::Equal)
    })))
}

/// `unnest(array)` in a select list: the array itself, which the executor spreads over rows.
pub(super) fn unnest(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(values[0].clone())
}
