//! The json functions and operators (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`, `?&`,
//! `||`, `-`, `#-` arrive here by name). A function named `json_*` takes `json` (and also
//! `jsonb`), a `jsonb_*` one `jsonb`; a body sees a `jsonb` argument as [`Value::Json`] and a
//! `json` one as its text ([`Value::Text`]), which it reads one level at a time
//! ([`json::split`]) so that what it returns of a `json` value is the text as written.

use super::{Function, Returns, Takes, json_nulls, resolved, strict};
use crate::error::{SqlError, SqlResult};
use crate::expr::Context;
use crate::types::json::{self, Json, Number, Raw};
use crate::types::{Elem, Type, Value};
use std::sync::Arc;

/// The json functions' registry entries (`functions.rs` looks them up with its own).
pub static FUNCTIONS: &[Function] = &[
    resolved(&["json_arrow"], (2, 2), Returns::Of(first_kind), either_key, arrow),
    resolved(&["json_arrow_text"], (2, 2), Returns::Fixed(Type::Text), either_key, arrow_text),
    resolved(&["json_path_op"], (2, 2), Returns::Of(first_kind), either_path, extract_path),
    resolved(
        &["json_path_text_op"],
        (2, 2),
        Returns::Fixed(Type::Text),
        either_path,
        extract_path_text,
    ),
    json_nulls(&["json_extract_path"], Returns::Fixed(Type::Json), json_texts, extract_path),
    json_nulls(&["jsonb_extract_path"], Returns::Fixed(Type::Jsonb), jsonb_texts, extract_path),
    json_nulls(
        &["json_extract_path_text"],
        Returns::Fixed(Type::Text),
        json_texts,
        extract_path_text,
    ),
    json_nulls(
        &["jsonb_extract_path_text"],
        Returns::Fixed(Type::Text),
        jsonb_texts,
        extract_path_text,
    ),
    resolved(&["json_typeof"], (1, 1), Returns::Fixed(Type::Text), json_one, typeof_),
    resolved(&["jsonb_typeof"], (1, 1), Returns::Fixed(Type::Text), jsonb_one, typeof_),
    resolved(&["json_array_length"], (1, 1), Returns::Fixed(Type::Int4), json_one, array_length),
    resolved(&["jsonb_array_length"], (1, 1), Returns::Fixed(Type::Int4), jsonb_one, array_length),
    resolved(&["json_strip_nulls"], (1, 1), Returns::Fixed(Type::Json), json_one, strip_nulls_fn),
    resolved(
        &["jsonb_strip_nulls"],
        (1, 1),
        Returns::Fixed(Type::Jsonb),
        jsonb_one,
        strip_nulls_fn,
    ),
    resolved(&["jsonb_pretty"], (1, 1), Returns::Fixed(Type::Text), jsonb_one, pretty),
    strict(
        &["jsonb_exists"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Positions(JSONB_TEXT),
        exists,
    ),
    strict(
        &["jsonb_exists_any"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Positions(JSONB_TEXTS),
        exists_any,
    ),
    strict(
        &["jsonb_exists_all"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Positions(JSONB_TEXTS),
        exists_all,
    ),
    strict(
        &["jsonb_contains"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Positions(JSONB),
        contains,
    ),
    strict(
        &["jsonb_contained"],
        (2, 2),
        Returns::Fixed(Type::Bool),
        Takes::Positions(JSONB),
        contained,
    ),
    strict(&["jsonb_concat"], (2, 2), Returns::Fixed(Type::Jsonb), Takes::Positions(JSONB), concat),
    resolved(&["jsonb_delete"], (2, 2), Returns::Fixed(Type::Jsonb), jsonb_delete_args, delete),
    strict(
        &["jsonb_delete_path"],
        (2, 2),
        Returns::Fixed(Type::Jsonb),
        Takes::Positions(JSONB_TEXTS),
        delete_path,
    ),
    strict(&["jsonb_set"], (3, 4), Returns::Fixed(Type::Jsonb), Takes::Positions(JSONB_SET), set),
    strict(
        &["jsonb_insert"],
        (3, 4),
        Returns::Fixed(Type::Jsonb),
        Takes::Positions(JSONB_SET),
        insert,
    ),
    resolved(&["to_json"], (1, 1), Returns::Fixed(Type::Json), any_args, to_json),
    resolved(&["to_jsonb"], (1, 1), Returns::Fixed(Type::Jsonb), any_args, to_json),
    resolved(&["array_to_json"], (1, 2), Returns::Fixed(Type::Json), array_args, array_to_json),
    json_nulls(&["json_build_object"], Returns::Fixed(Type::Json), any_args, build_object),
    json_nulls(&["jsonb_build_object"], Returns::Fixed(Type::Jsonb), any_args, build_object),
    json_nulls(&["json_build_array"], Returns::Fixed(Type::Json), any_args, build_array),
    json_nulls(&["jsonb_build_array"], Returns::Fixed(Type::Jsonb), any_args, build_array),
    strict(&["json_object"], (1, 2), Returns::Fixed(Type::Json), Takes::Positions(TEXTS), object),
    strict(&["jsonb_object"], (1, 2), Returns::Fixed(Type::Jsonb), Takes::Positions(TEXTS), object),
    // Set-returning, in a select list (in FROM they are `plan/derived.rs`'s).
    resolved(&["json_array_elements"], (1, 1), Returns::Fixed(Type::Json), json_one, elements)
        .set(),
    resolved(&["jsonb_array_elements"], (1, 1), Returns::Fixed(Type::Jsonb), jsonb_one, elements)
        .set(),
    resolved(
        &["json_array_elements_text"],
        (1, 1),
        Returns::Fixed(Type::Text),
        json_one,
        elements_text,
    )
    .set(),
    resolved(
        &["jsonb_array_elements_text"],
        (1, 1),
        Returns::Fixed(Type::Text),
        jsonb_one,
        elements_text,
    )
    .set(),
    resolved(&["json_object_keys"], (1, 1), Returns::Fixed(Type::Text), json_one, object_keys)
        .set(),
    resolved(&["jsonb_object_keys"], (1, 1), Returns::Fixed(Type::Text), jsonb_one, object_keys)
        .set(),
];

const JSONB: &[Type] = &[Type::Jsonb];
const JSONB_TEXT: &[Type] = &[Type::Jsonb, Type::Text];
const JSONB_TEXTS: &[Type] = &[Type::Jsonb, Type::Array(crate::types::Elem::Text)];
const JSONB_SET: &[Type] =
    &[Type::Jsonb, Type::Array(crate::types::Elem::Text), Type::Jsonb, Type::Bool];
const TEXTS: &[Type] = &[Type::Array(crate::types::Elem::Text)];

fn invalid(message: impl Into<String>) -> SqlError {
    SqlError::new("22023", message)
}

/// How a call's arguments are typed (`Takes::Resolve`): the first a json value of either
/// kind (an untyped literal taking `default`), the others by `rest` (the last repeating).
fn resolve_json(types: &[Type], default: Type, rest: &[Type]) -> Option<Vec<Type>> {
    let mut out = Vec::with_capacity(types.len());
    for (at, ty) in types.iter().enumerate() {
        if at == 0 {
            out.push(match ty {
                Type::Json | Type::Jsonb => *ty,
                Type::Unknown => default,
                _ => return None,
            });
            continue;
        }
        let want = rest[(at - 1).min(rest.len() - 1)];
        let fits = *ty == Type::Unknown
            || *ty == want
            || (want.is_text() && ty.is_text())
            || (want.is_integer() && ty.is_integer())
            || (want == Type::Jsonb && *ty == Type::Json)
            || (matches!(want, Type::Array(Elem::Text))
                && matches!(ty, Type::Array(e) if e.ty().is_text()));
        if !fits {
            return None;
        }
        out.push(want);
    }
    Some(out)
}

const TEXT: &[Type] = &[Type::Text];
const TEXT_ARRAY: &[Type] = &[Type::Array(Elem::Text)];

pub(super) fn json_one(types: &[Type]) -> Option<Vec<Type>> {
    (types.len() == 1).then_some(())?;
    resolve_json(types, Type::Json, TEXT)
}

pub(super) fn jsonb_one(types: &[Type]) -> Option<Vec<Type>> {
    (types.len() == 1).then_some(())?;
    resolve_json(types, Type::Jsonb, TEXT)
}

pub(super) fn json_texts(types: &[Type]) -> Option<Vec<Type>> {
    resolve_json(types, Type::Json, TEXT)
}

pub(super) fn jsonb_texts(types: &[Type]) -> Option<Vec<Type>> {
    resolve_json(types, Type::Jsonb, TEXT)
}

pub(super) fn either_path(types: &[Type]) -> Option<Vec<Type>> {
    resolve_json(types, Type::Jsonb, TEXT_ARRAY)
}

/// `->`'s: a json value and a key (text) or an index (an integer).
pub(super) fn either_key(types: &[Type]) -> Option<Vec<Type>> {
    let key = if types.get(1).is_some_and(|t| t.is_integer()) { Type::Int8 } else { Type::Text };
    resolve_json(types, Type::Jsonb, &[key])
}

/// `jsonb - x`: a key (text), an index (an integer) or keys (`text[]`).
pub(super) fn jsonb_delete_args(types: &[Type]) -> Option<Vec<Type>> {
    let rest = match types.get(1) {
        Some(t) if t.is_integer() => Type::Int8,
        Some(Type::Array(_)) => Type::Array(Elem::Text),
        _ => Type::Text,
    };
    let mut out = resolve_json(types, Type::Jsonb, &[rest])?;
    out[0] = Type::Jsonb;
    Some(out)
}

/// Arguments of any type: json values as jsonb (their content, not their text, is wanted),
/// untyped literals as text.
pub(super) fn any_args(types: &[Type]) -> Option<Vec<Type>> {
    Some(
        types
            .iter()
            .map(|ty| match ty {
                Type::Unknown => Type::Text,
                Type::Json => Type::Jsonb,
                Type::Array(Elem::Json) => Type::Array(Elem::Jsonb),
                other => *other,
            })
            .collect(),
    )
}

/// `array_to_json(anyarray [, pretty])`.
pub(super) fn array_args(types: &[Type]) -> Option<Vec<Type>> {
    let mut out = any_args(types)?;
    match out.first() {
        Some(Type::Array(_)) => {}
        Some(Type::Text) => out[0] = Type::Array(Elem::Text),
        _ => return None,
    }
    if out.len() > 1 {
        out[1] = Type::Bool;
    }
    Some(out)
}

/// The first argument's json kind (`->`, `#>`, `json_strip_nulls`).
pub(super) fn first_kind(types: &[Type]) -> Type {
    types.first().copied().unwrap_or(Type::Jsonb)
}

fn as_jsonb(value: &Value) -> SqlResult<Arc<Json>> {
    match value {
        Value::Json(json) => Ok(Arc::clone(json)),
        Value::Text(text) => Ok(Arc::new(json::parse_jsonb(text)?)),
        other => Err(SqlError::mismatch(format!("{} is not json", other.kind_name()))),
    }
}

fn texts(value: &Value) -> Vec<Option<String>> {
    match value {
        Value::Array(items) => items.iter().map(|item| item.to_text(Type::Text)).collect(),
        Value::Null => Vec::new(),
        other => vec![other.to_text(Type::Text)],
    }
}

/// A member of a json value: `key` in an object, or the element at `key` (an integer, or
/// text that reads as one when `index_text`) in an array.
enum Step<'a> {
    Key(&'a str),
    Index(i64),
}

fn step_of<'a>(key: &'a Value, text: &'a Option<String>) -> Option<Step<'a>> {
    match key {
        Value::Int(index) => Some(Step::Index(*index)),
        _ => text.as_deref().map(Step::Key),
    }
}

fn jsonb_step<'j>(json: &'j Json, step: &Step<'_>) -> Option<&'j Json> {
    match (json, step) {
        (Json::Object(_), Step::Key(key)) => json.get(key),
        (Json::Array(_), Step::Key(key)) => json.at(key.trim().parse().ok()?),
        (Json::Array(_), Step::Index(index)) => json.at(*index),
        _ => None,
    }
}

fn raw_step<'t>(text: &'t str, step: &Step<'_>) -> Option<&'t str> {
    match (json::split(text), step) {
        (Raw::Object(pairs), Step::Key(key)) => {
            pairs.into_iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
        }
        (Raw::Array(items), Step::Key(key)) => index(&items, key.trim().parse().ok()?),
        (Raw::Array(items), Step::Index(at)) => index(&items, *at),
        _ => None,
    }
}

fn index<'t>(items: &[&'t str], at: i64) -> Option<&'t str> {
    let at = if at < 0 { items.len() as i64 + at } else { at };
    usize::try_from(at).ok().and_then(|at| items.get(at).copied())
}

/// Follows `steps` from `value`; the member found, as a value of the same kind.
fn follow(value: &Value, steps: &[Step<'_>]) -> SqlResult<Option<Value>> {
    Ok(match value {
        Value::Json(json) => {
            let mut at: &Json = json;
            for step in steps {
                match jsonb_step(at, step) {
                    Some(next) => at = next,
                    None => return Ok(None),
                }
            }
            Some(json::jsonb(at.clone()))
        }
        Value::Text(text) => {
            let mut at: &str = text;
            for step in steps {
                match raw_step(at, step) {
                    Some(next) => at = next,
                    None => return Ok(None),
                }
            }
            Some(Value::Text(at.into()))
        }
        _ => None,
    })
}

/// A member's value as `->>` gives it: strings unquoted, null as SQL NULL.
fn as_text(value: Option<Value>) -> SqlResult<Value> {
    Ok(match value {
        Some(Value::Json(json)) => {
            json.to_sql_text().map_or(Value::Null, |t| Value::Text(t.into()))
        }
        Some(Value::Text(raw)) => {
            json::raw_to_sql_text(&raw)?.map_or(Value::Null, |t| Value::Text(t.into()))
        }
        _ => Value::Null,
    })
}

pub(super) fn arrow(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let text = values[1].to_text(Type::Text);
    let Some(step) = step_of(&values[1], &text) else { return Ok(Value::Null) };
    Ok(follow(&values[0], &[step])?.unwrap_or(Value::Null))
}

pub(super) fn arrow_text(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let text = values[1].to_text(Type::Text);
    let Some(step) = step_of(&values[1], &text) else { return Ok(Value::Null) };
    as_text(follow(&values[0], &[step])?)
}

fn path_steps(keys: &[Option<String>]) -> Option<Vec<Step<'_>>> {
    keys.iter().map(|key| key.as_deref().map(Step::Key)).collect()
}

/// `#>` and `json_extract_path`: the path as a `text[]` (one argument) or as the arguments.
fn path_of(values: &[Value]) -> Vec<Option<String>> {
    match &values[1..] {
        [Value::Array(_)] => texts(&values[1]),
        rest => rest.iter().map(|v| v.to_text(Type::Text)).collect(),
    }
}

pub(super) fn extract_path(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[1..].iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let keys = path_of(values);
    let Some(steps) = path_steps(&keys) else { return Ok(Value::Null) };
    Ok(follow(&values[0], &steps)?.unwrap_or(Value::Null))
}

pub(super) fn extract_path_text(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    if values[1..].iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let keys = path_of(values);
    let Some(steps) = path_steps(&keys) else { return Ok(Value::Null) };
    as_text(follow(&values[0], &steps)?)
}

pub(super) fn typeof_(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(
        match &values[0] {
            Value::Json(json) => json.type_name(),
            Value::Text(text) => json::raw_type_name(text),
            _ => "null",
        }
        .into(),
    ))
}

pub(super) fn array_length(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (kind, length) = match &values[0] {
        Value::Json(json) => match &**json {
            Json::Array(items) => ("array", items.len()),
            other => (other.type_name(), 0),
        },
        Value::Text(text) => match json::split(text) {
            Raw::Array(items) => ("array", items.len()),
            Raw::Object(_) => ("object", 0),
            Raw::Scalar(_) => ("scalar", 0),
        },
        _ => return Ok(Value::Null),
    };
    match kind {
        "array" => Ok(Value::Int(length as i64)),
        "object" => Err(invalid("cannot get array length of a non-array")),
        _ => Err(invalid("cannot get array length of a scalar")),
    }
}

pub(super) fn exists(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let json = as_jsonb(&values[0])?;
    Ok(Value::Bool(json.has_key(&values[1].to_text(Type::Text).unwrap_or_default())))
}

pub(super) fn exists_any(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let json = as_jsonb(&values[0])?;
    Ok(Value::Bool(texts(&values[1]).iter().flatten().any(|key| json.has_key(key))))
}

pub(super) fn exists_all(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let json = as_jsonb(&values[0])?;
    Ok(Value::Bool(texts(&values[1]).iter().flatten().all(|key| json.has_key(key))))
}

pub(super) fn contains(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(as_jsonb(&values[0])?.contains(&*as_jsonb(&values[1])?)))
}

pub(super) fn contained(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(as_jsonb(&values[1])?.contains(&*as_jsonb(&values[0])?)))
}

/// jsonb's `||`: objects merge (the right side's keys win), arrays concatenate, and anything
/// else is an element of an array.
pub(super) fn concat(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (left, right) = (as_jsonb(&values[0])?, as_jsonb(&values[1])?);
    let elements = |json: &Json| match json {
        Json::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    Ok(json::jsonb(match (&*left, &*right) {
        (Json::Object(a), Json::Object(b)) => {
            Json::object(a.iter().chain(b.iter()).cloned().collect())
        }
        (a, b) => {
            let mut items = elements(a);
            items.extend(elements(b));
            Json::Array(items)
        }
    }))
}

/// `jsonb - key`, `jsonb - index`, `jsonb - keys`.
pub(super) fn delete(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let json = as_jsonb(&values[0])?;
    let keys: Vec<String> = match &values[1] {
        Value::Int(at) => {
            return match &*json {
                Json::Array(items) => {
                    let at = if *at < 0 { items.len() as i64 + at } else { *at };
                    let mut items = items.clone();
                    if let Ok(at) = usize::try_from(at)
                        && at < items.len()
                    {
                        items.remove(at);
                    }
                    Ok(json::jsonb(Json::Array(items)))
                }
                Json::Object(_) => Err(invalid("cannot delete from object using integer index")),
                _ => Err(invalid("cannot delete from scalar")),
            };
        }
        other => texts(other).into_iter().flatten().collect(),
    };
    Ok(json::jsonb(match &*json {
        Json::Object(pairs) => Json::Object(
            pairs.iter().filter(|(k, _)| !keys.iter().any(|key| **k == **key)).cloned().collect(),
        ),
        Json::Array(items) => Json::Array(
            items
                .iter()
                .filter(|item| !matches!(item, Json::String(s) if keys.iter().any(|k| **s == **k)))
                .cloned()
                .collect(),
        ),
        _ => return Err(invalid("cannot delete from scalar")),
    }))
}

/// The position a path element names in an array of `len` elements, for a change:
/// `None` when it is not an integer (22P02 for `jsonb_set`).
fn array_position(key: &str, position: usize) -> SqlResult<i64> {
    key.trim().parse::<i64>().map_err(|_| {
        SqlError::new(
            "22P02",
            format!("path element at position {position} is not an integer: \"{key}\""),
        )
    })
}

/// What a path change does at its last element.
#[derive(Clone, Copy, PartialEq)]
enum Change {
    Set { create: bool },
    Insert { after: bool },
    Delete,
}

fn change_at(
    json: &mut Json,
    path: &[String],
    depth: usize,
    change: Change,
    new: &Json,
) -> SqlResult<()> {
    let Some(key) = path.get(depth) else { return Ok(()) };
    let last = depth + 1 == path.len();
    match json {
        Json::Object(pairs) => {
            let found = pairs.binary_search_by(|(k, _)| json::key_order(k, key));
            match (found, last) {
                (Ok(at), false) => change_at(&mut pairs[at].1, path, depth + 1, change, new)?,
                (Ok(at), true) => match change {
                    Change::Set { .. } => pairs[at].1 = new.clone(),
                    Change::Insert { .. } => {
                        return Err(invalid("cannot replace existing key").with_detail(
                            "Try using the function jsonb_set to replace key value.",
                        ));
                    }
                    Change::Delete => {
                        pairs.remove(at);
                    }
                },
                (Err(at), true) => match change {
                    Change::Set { create: true } | Change::Insert { .. } => {
                        pairs.insert(at, (key.as_str().into(), new.clone()))
                    }
                    _ => {}
                },
                (Err(_), false) => {}
            }
        }
        Json::Array(items) => {
            let index = array_position(key, depth + 1)?;
            let len = items.len() as i64;
            let at = if index < 0 { len + index } else { index };
            if !last {
                if (0..len).contains(&at) {
                    change_at(&mut items[at as usize], path, depth + 1, change, new)?;
                }
                return Ok(());
            }
            match change {
                Change::Set { create } => {
                    if (0..len).contains(&at) {
                        items[at as usize] = new.clone();
                    } else if create {
                        if at < 0 { items.insert(0, new.clone()) } else { items.push(new.clone()) }
                    }
                }
                Change::Insert { after } => {
                    let position = if at < 0 {
                        0
                    } else if at >= len {
                        len as usize
                    } else {
                        at as usize + usize::from(after)
                    };
                    items.insert(position, new.clone());
                }
                Change::Delete => {
                    if (0..len).contains(&at) {
                        items.remove(at as usize);
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn change_path(values: &[Value], change: Change, new: &Json) -> SqlResult<Value> {
    let mut json = (*as_jsonb(&values[0])?).clone();
    let path: Vec<String> = texts(&values[1]).into_iter().map(Option::unwrap_or_default).collect();
    if texts(&values[1]).iter().any(Option::is_none) {
        return Err(invalid("path element at position 1 is null"));
    }
    if !matches!(json, Json::Array(_) | Json::Object(_)) {
        return Err(invalid(if change == Change::Delete {
            "cannot delete path in scalar"
        } else {
            "cannot set path in scalar"
        }));
    }
    change_at(&mut json, &path, 0, change, new)?;
    Ok(json::jsonb(json))
}

pub(super) fn set(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let create = !matches!(values.get(3), Some(Value::Bool(false)));
    change_path(values, Change::Set { create }, &*as_jsonb(&values[2])?)
}

pub(super) fn insert(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let after = matches!(values.get(3), Some(Value::Bool(true)));
    change_path(values, Change::Insert { after }, &*as_jsonb(&values[2])?)
}

pub(super) fn delete_path(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    change_path(values, Change::Delete, &Json::Null)
}

pub(super) fn pretty(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(as_jsonb(&values[0])?.to_pretty().into()))
}

fn strip_nulls(json: &Json) -> Json {
    match json {
        Json::Object(pairs) => Json::Object(
            pairs
                .iter()
                .filter(|(_, v)| !matches!(v, Json::Null))
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

pub(super) fn strip_nulls_fn(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(match &values[0] {
        Value::Json(json) => json::jsonb(strip_nulls(json)),
        Value::Text(text) => {
            let mut out = String::new();
            strip_nulls(&json::parse_json_tree(text)?).write_compact(&mut out);
            Value::Text(out.into())
        }
        _ => Value::Null,
    })
}

/// A SQL value as json: numbers, booleans and strings as themselves, arrays element by
/// element, date/time values in ISO 8601 (`2014-05-28T12:22:35.614298+00:00`), anything
/// else as its text.
pub fn to_json_tree(value: &Value) -> SqlResult<Json> {
    Ok(match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(v) => Json::Number(Number::from_sql_text(&v.to_string()).expect("an integer")),
        Value::Float(v) if v.is_finite() => {
            let text = value.to_text(Type::Float8).unwrap_or_default();
            match Number::from_sql_text(&text) {
                Some(number) => Json::Number(number),
                None => Json::String(text.into()),
            }
        }
        Value::Numeric(d) => Json::Number(
            Number::from_sql_text(&d.to_string()).ok_or_else(|| invalid("numeric out of range"))?,
        ),
        Value::Json(json) => (**json).clone(),
        Value::Array(items) => {
            Json::Array(items.iter().map(to_json_tree).collect::<SqlResult<_>>()?)
        }
        Value::Timestamp(_) | Value::Timestamptz(_) => {
            let mut text = value.to_text(Type::Text).unwrap_or_default();
            if text.as_bytes().get(10) == Some(&b' ') {
                text.replace_range(10..11, "T");
            }
            if matches!(value, Value::Timestamptz(_)) {
                let bytes = text.as_bytes();
                let n = bytes.len();
                if n > 3 && matches!(bytes[n - 3], b'+' | b'-') {
                    text.push_str(":00");
                }
            }
            Json::String(text.into())
        }
        other => Json::String(other.to_text(Type::Text).unwrap_or_default().into()),
    })
}

/// A SQL value as an element of a `json` text: a jsonb value as it prints, an array
/// compactly, anything else as [`to_json_tree`] makes it.
pub fn write_json_value(value: &Value, out: &mut String) -> SqlResult<()> {
    match value {
        Value::Json(json) => out.push_str(&json.to_text()),
        Value::Array(items) => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_json_value(item, out)?;
            }
            out.push(']');
        }
        other => to_json_tree(other)?.write_compact(out),
    }
    Ok(())
}

pub(super) fn to_json(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    make(ty, || to_json_tree(&values[0]), |out| write_json_value(&values[0], out))
}

/// A result of the json kind `ty`: the tree for jsonb, the text for json.
fn make(
    ty: Type,
    tree: impl FnOnce() -> SqlResult<Json>,
    text: impl FnOnce(&mut String) -> SqlResult<()>,
) -> SqlResult<Value> {
    if ty == Type::Jsonb {
        return Ok(json::jsonb(tree()?));
    }
    let mut out = String::new();
    text(&mut out)?;
    Ok(Value::Text(out.into()))
}

pub(super) fn array_to_json(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let mut out = String::new();
    let pretty = matches!(values.get(1), Some(Value::Bool(true)));
    match &values[0] {
        Value::Array(items) if pretty => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push_str(",\n ");
                }
                write_json_value(item, &mut out)?;
            }
            out.push(']');
        }
        other => write_json_value(other, &mut out)?,
    }
    Ok(Value::Text(out.into()))
}

fn object_key(value: &Value, position: usize) -> SqlResult<String> {
    if value.is_null() {
        return Err(invalid(format!("argument {position}: key must not be null")));
    }
    if matches!(value, Value::Array(_) | Value::Json(_)) {
        return Err(invalid("key value must be scalar, not array, composite, or json"));
    }
    Ok(match value {
        Value::Json(json) => json.to_text(),
        other => other.to_text(Type::Text).unwrap_or_default(),
    })
}

pub(super) fn build_object(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    if !values.len().is_multiple_of(2) {
        return Err(invalid("argument list must have even number of elements").with_detail(
            format!(
                "The arguments of {}_build_object() must consist of alternating keys and values.",
                if ty == Type::Jsonb { "jsonb" } else { "json" }
            ),
        ));
    }
    let pairs = values.chunks(2);
    make(
        ty,
        || {
            let mut out = Vec::with_capacity(values.len() / 2);
            for (at, pair) in pairs.clone().enumerate() {
                out.push((object_key(&pair[0], at * 2 + 1)?.into(), to_json_tree(&pair[1])?));
            }
            Ok(Json::object(out))
        },
        |out| {
            out.push('{');
            for (at, pair) in pairs.clone().enumerate() {
                if at > 0 {
                    out.push_str(", ");
                }
                json::write_string(&object_key(&pair[0], at * 2 + 1)?, out);
                out.push_str(" : ");
                write_json_value(&pair[1], out)?;
            }
            out.push('}');
            Ok(())
        },
    )
}

pub(super) fn build_array(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    make(
        ty,
        || Ok(Json::Array(values.iter().map(to_json_tree).collect::<SqlResult<_>>()?)),
        |out| {
            out.push('[');
            for (at, value) in values.iter().enumerate() {
                if at > 0 {
                    out.push_str(", ");
                }
                write_json_value(value, out)?;
            }
            out.push(']');
            Ok(())
        },
    )
}

/// `json_object(text[])` (keys and values alternating) and `json_object(keys, values)`.
pub(super) fn object(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    let pairs: Vec<(String, Option<String>)> = match values {
        [all] => {
            let items = texts(all);
            if !items.len().is_multiple_of(2) {
                return Err(SqlError::new("2202E", "array must have even number of elements"));
            }
            items
                .chunks(2)
                .map(|pair| {
                    let key = pair[0].clone().ok_or_else(|| {
                        SqlError::new("22004", "null value not allowed for object key")
                    })?;
                    Ok((key, pair[1].clone()))
                })
                .collect::<SqlResult<_>>()?
        }
        [keys, vals] => {
            let (keys, vals) = (texts(keys), texts(vals));
            if keys.len() != vals.len() {
                return Err(SqlError::new("2202E", "mismatched array dimensions"));
            }
            keys.into_iter()
                .zip(vals)
                .map(|(key, value)| {
                    let key = key.ok_or_else(|| {
                        SqlError::new("22004", "null value not allowed for object key")
                    })?;
                    Ok((key, value))
                })
                .collect::<SqlResult<_>>()?
        }
        _ => Vec::new(),
    };
    let leaf = |value: &Option<String>| {
        value.as_ref().map_or(Json::Null, |v| Json::String(v.as_str().into()))
    };
    make(
        ty,
        || Ok(Json::object(pairs.iter().map(|(k, v)| (k.as_str().into(), leaf(v))).collect())),
        |out| {
            out.push('{');
            for (at, (key, value)) in pairs.iter().enumerate() {
                if at > 0 {
                    out.push_str(", ");
                }
                json::write_string(key, out);
                out.push_str(" : ");
                out.push_str(&leaf(value).to_text());
            }
            out.push('}');
            Ok(())
        },
    )
}

/// The rows of the json set-returning functions (`plan/derived.rs`): `json_each` (key,
/// value), `json_each_text`, `json_array_elements`, `json_array_elements_text`,
/// `json_object_keys`, and their `jsonb_` forms.
pub fn set_rows(name: &str, value: &Value) -> SqlResult<Vec<Vec<Value>>> {
    let base = name.strip_prefix("jsonb_").or_else(|| name.strip_prefix("json_")).unwrap_or(name);
    let text_values = base.ends_with("_text");
    let leaf = |member: Value| -> SqlResult<Value> {
        if text_values { as_text(Some(member)) } else { Ok(member) }
    };
    let kind = match value {
        Value::Json(json) => json.type_name(),
        Value::Text(text) => json::raw_type_name(text),
        _ => return Ok(Vec::new()),
    };
    let members: Vec<(String, Value)> = match value {
        Value::Json(json) => match &**json {
            Json::Object(pairs) => {
                pairs.iter().map(|(k, v)| (k.to_string(), json::jsonb(v.clone()))).collect()
            }
            Json::Array(items) => {
                items.iter().map(|v| (String::new(), json::jsonb(v.clone()))).collect()
            }
            _ => Vec::new(),
        },
        Value::Text(text) => match json::split(text) {
            Raw::Object(pairs) => {
                pairs.into_iter().map(|(k, v)| (k, Value::Text(v.into()))).collect()
            }
            Raw::Array(items) => {
                items.into_iter().map(|v| (String::new(), Value::Text(v.into()))).collect()
            }
            Raw::Scalar(_) => Vec::new(),
        },
        _ => Vec::new(),
    };
    match base {
        "each" | "each_text" => {
            if kind != "object" {
                return Err(invalid(format!(
                    "cannot call {name} on {}",
                    if kind == "array" { "an array".to_string() } else { "a non-object".into() }
                )));
            }
            members
                .into_iter()
                .map(|(key, member)| Ok(vec![Value::Text(key.into()), leaf(member)?]))
                .collect()
        }
        "array_elements" | "array_elements_text" => {
            if kind != "array" {
                return Err(invalid(format!(
                    "cannot extract elements from {}",
                    if kind == "object" { "an object" } else { "a scalar" }
                )));
            }
            members.into_iter().map(|(_, member)| Ok(vec![leaf(member)?])).collect()
        }
        "object_keys" => {
            if kind != "object" {
                return Err(invalid(format!(
                    "cannot call {name} on {}",
                    if kind == "array" { "an array" } else { "a scalar" }
                )));
            }
            Ok(members.into_iter().map(|(key, _)| vec![Value::Text(key.into())]).collect())
        }
        _ => Err(SqlError::undefined_function(format!("function {name} does not exist"))),
    }
}

/// The columns of [`set_rows`]'s function `name` over a value of json kind `kind`; `None`
/// when `name` is not one of them.
pub fn set_columns(name: &str, kind: Type) -> Option<Vec<(&'static str, Type)>> {
    let base = name.strip_prefix("jsonb_").or_else(|| name.strip_prefix("json_"))?;
    Some(match base {
        "each" => vec![("key", Type::Text), ("value", kind)],
        "each_text" => vec![("key", Type::Text), ("value", Type::Text)],
        "array_elements" => vec![("value", kind)],
        "array_elements_text" => vec![("value", Type::Text)],
        "object_keys" => vec![(
            if kind == Type::Jsonb { "jsonb_object_keys" } else { "json_object_keys" },
            Type::Text,
        )],
        _ => return None,
    })
}

/// `json_agg` / `jsonb_agg`'s result (`ty`) of the values aggregated.
pub fn aggregate_array(values: &[Value], ty: Type) -> SqlResult<Value> {
    make(
        ty,
        || Ok(Json::Array(values.iter().map(to_json_tree).collect::<SqlResult<_>>()?)),
        |out| {
            out.push('[');
            for (at, value) in values.iter().enumerate() {
                if at > 0 {
                    out.push_str(", ");
                }
                write_json_value(value, out)?;
            }
            out.push(']');
            Ok(())
        },
    )
}

/// `json_object_agg` / `jsonb_object_agg`'s result (`ty`) of the pairs aggregated.
pub fn aggregate_object(pairs: &[(Value, Value)], ty: Type) -> SqlResult<Value> {
    make(
        ty,
        || {
            let mut out = Vec::with_capacity(pairs.len());
            for (key, value) in pairs {
                out.push((object_key(key, 1)?.into(), to_json_tree(value)?));
            }
            Ok(Json::object(out))
        },
        |out| {
            out.push_str("{ ");
            for (at, (key, value)) in pairs.iter().enumerate() {
                if at > 0 {
                    out.push_str(", ");
                }
                json::write_string(&object_key(key, 1)?, out);
                out.push_str(" : ");
                write_json_value(value, out)?;
            }
            out.push_str(" }");
            Ok(())
        },
    )
}

/// The rows of [`set_rows`] for `name` as one array of their (single) column, for a select
/// list.
fn set_array(name: &str, value: &Value) -> SqlResult<Value> {
    let rows = set_rows(name, value)?;
    Ok(crate::types::array(rows.into_iter().filter_map(|row| row.into_iter().next()).collect()))
}

/// The name of a json set function for a value's kind (`jsonb_` for a jsonb value).
fn kind_name(value: &Value, base: &str) -> String {
    match value {
        Value::Json(_) => format!("jsonb_{base}"),
        _ => format!("json_{base}"),
    }
}

pub(super) fn elements(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    set_array(&kind_name(&values[0], "array_elements"), &values[0])
}

pub(super) fn elements_text(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    set_array(&kind_name(&values[0], "array_elements_text"), &values[0])
}

pub(super) fn object_keys(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    set_array(&kind_name(&values[0], "object_keys"), &values[0])
}
