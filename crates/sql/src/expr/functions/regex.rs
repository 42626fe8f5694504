//! Regular expressions: the `~`, `~*`, `!~`, `!~*` operators (as `regexp_like`),
//! `regexp_like`, `regexp_count`, `regexp_substr` and `regexp_replace`, over the `regex`
//! crate. PostgreSQL's flavour (its "advanced" expressions) and the crate's agree on the
//! common syntax; back references and lookaround, which the crate does not take, are 2201B.
//! As in PostgreSQL, `.` matches a newline and `^`/`$` match at the text's ends unless the
//! `n` flag (newline-sensitive) is given. Compiled expressions are kept per thread.

use crate::error::{SqlError, SqlResult};
use crate::expr::{Context, check_text_len};
use crate::types::{Type, Value};
use regex::{Regex, RegexBuilder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// How many compiled expressions a thread keeps (all are dropped when it is full).
const CACHED_MAX: usize = 64;

thread_local! {
    static COMPILED: RefCell<HashMap<(String, String), Arc<Regex>>> = RefCell::new(HashMap::new());
}

fn text(values: &[Value], at: usize) -> String {
    values.get(at).and_then(|v| v.to_text(Type::Text)).unwrap_or_default()
}

/// `pattern` compiled under PostgreSQL's `flags`: whether `g` was among them too.
fn compiled(pattern: &str, flags: &str) -> SqlResult<(Arc<Regex>, bool)> {
    let global = flags.contains('g');
    let key = (pattern.to_string(), flags.to_string());
    if let Some(regex) = COMPILED.with(|cache| cache.borrow().get(&key).cloned()) {
        return Ok((regex, global));
    }
    // `q`: the pattern is a literal string.
    let quoted;
    let pattern = if flags.contains('q') {
        quoted = regex::escape(pattern);
        quoted.as_str()
    } else {
        pattern
    };
    let mut builder = RegexBuilder::new(pattern);
    builder.dot_matches_new_line(true).size_limit(1 << 20);
    for flag in flags.chars() {
        match flag {
            'i' => builder.case_insensitive(true),
            'c' => builder.case_insensitive(false),
            'n' | 'm' => builder.multi_line(true).dot_matches_new_line(false),
            's' => builder.multi_line(false).dot_matches_new_line(true),
            // Partially newline-sensitive: `.` stops at newlines, or `^`/`$` match at them.
            'p' => builder.multi_line(false).dot_matches_new_line(false),
            'w' => builder.multi_line(true).dot_matches_new_line(true),
            'x' => builder.ignore_whitespace(true),
            // Global (for replace), quoted (above), tight and extended syntax (the default).
            'g' | 'q' | 't' | 'e' => &mut builder,
            other => {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid regular expression option: \"{other}\""),
                ));
            }
        };
    }
    let regex = Arc::new(builder.build().map_err(|error| {
        let reason = error.to_string();
        let reason = reason.lines().last().unwrap_or("").trim_start_matches("error: ");
        SqlError::new("2201B", format!("invalid regular expression: {reason}"))
    })?);
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHED_MAX {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&regex));
    });
    Ok((regex, global))
}

/// `regexp_like(text, pattern [, flags])`: whether the pattern matches anywhere.
pub(super) fn regexp_like(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (regex, _) = compiled(&text(values, 1), &text(values, 2))?;
    Ok(Value::Bool(regex.is_match(&text(values, 0))))
}

/// The text from character `start` (1-based) on, and the byte it starts at.
fn from_start(subject: &str, values: &[Value], at: usize) -> SqlResult<usize> {
    let start = match values.get(at) {
        Some(Value::Int(n)) => *n,
        _ => 1,
    };
    if start < 1 {
        return Err(SqlError::new(
            "22023",
            format!("invalid value for parameter \"start\": {start}"),
        ));
    }
    Ok(subject.char_indices().nth(start as usize - 1).map_or(subject.len(), |(at, _)| at))
}

/// `regexp_count(text, pattern [, start [, flags]])`: how many times the pattern matches.
pub(super) fn regexp_count(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let subject = text(values, 0);
    let (regex, _) = compiled(&text(values, 1), &text(values, 3))?;
    let from = from_start(&subject, values, 2)?;
    Ok(Value::Int(regex.find_iter(&subject[from..]).count() as i64))
}

/// `regexp_substr(text, pattern [, start [, n [, flags]]])`: the `n`th match, or NULL.
pub(super) fn regexp_substr(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let subject = text(values, 0);
    let (regex, _) = compiled(&text(values, 1), &text(values, 4))?;
    let from = from_start(&subject, values, 2)?;
    let n = match values.get(3) {
        Some(Value::Int(n)) if *n < 1 => {
            return Err(SqlError::new("22023", format!("invalid value for parameter \"n\": {n}")));
        }
        Some(Value::Int(n)) => *n as usize,
        _ => 1,
    };
    Ok(regex
        .find_iter(&subject[from..])
        .nth(n - 1)
        .map_or(Value::Null, |found| Value::Text(found.as_str().into())))
}

/// PostgreSQL's replacement text (`\1`..`\9` for groups, `\&` for the match) in the crate's
/// form (`${1}`, `${0}`; a literal `$` doubled).
fn replacement(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(d @ '1'..='9') => {
                    out.push_str("${");
                    out.push(d);
                    out.push('}');
                }
                Some('&') => out.push_str("${0}"),
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            '$' => out.push_str("$$"),
            other => out.push(other),
        }
    }
    out
}

/// `regexp_replace(text, pattern, replacement [, flags])`: the first match replaced, or
/// every one with the `g` flag.
pub(super) fn regexp_replace(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let subject = text(values, 0);
    let (regex, global) = compiled(&text(values, 1), &text(values, 3))?;
    let with = replacement(&text(values, 2));
    let replaced = if global {
        regex.replace_all(&subject, with.as_str())
    } else {
        regex.replace(&subject, with.as_str())
    };
    check_text_len(replaced.len())?;
    Ok(Value::Text(replaced.as_ref().into()))
}
