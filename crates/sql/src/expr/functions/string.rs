//! String functions. Arguments arrive coerced to text and bigint (`Takes::Positions`); a
//! result longer than `expr::TEXT_BYTES_MAX` fails with 54000 before it is built.

use crate::error::{SqlError, SqlResult};
use crate::expr::{Context, check_text_len};
use crate::types::{Text, Type, Value};

/// Argument `at` as text.
fn text(values: &[Value], at: usize) -> String {
    values[at].to_text(Type::Text).unwrap_or_default()
}

pub(super) fn lower(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(text(values, 0).to_lowercase().into()))
}

pub(super) fn upper(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(text(values, 0).to_uppercase().into()))
}

pub(super) fn trim(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(trimmed(values, true, true))
}

pub(super) fn length(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Int(text(values, 0).chars().count() as i64))
}

pub(super) fn substr(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    // Text is read where it is; another value in its text form.
    let owned;
    let source = match values[0].as_str() {
        Some(source) => source,
        None => {
            owned = text(values, 0);
            owned.as_str()
        }
    };
    let start = values[1].as_int().unwrap_or(1);
    let end = match values.get(2) {
        Some(length) => {
            let length = length.as_int().unwrap_or(0);
            if length < 0 {
                return Err(SqlError::new("22011", "negative substring length not allowed"));
            }
            start.saturating_add(length)
        }
        None => i64::MAX,
    };
    // Characters `from..to` (counted from 0), as byte offsets into the source.
    let (from, to) = ((start.max(1) - 1) as usize, (end.max(1) - 1) as usize);
    let ascii = source.is_ascii();
    let byte = |chars: usize| match ascii {
        true => chars.min(source.len()),
        false => source.char_indices().nth(chars).map_or(source.len(), |(at, _)| at),
    };
    Ok(Value::Text(if from >= to {
        Text::default()
    } else {
        Text::from(&source[byte(from)..byte(to)])
    }))
}

/// NULL arguments are skipped.
pub(super) fn concat(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let out: String = values.iter().filter_map(|v| v.to_text(Type::Text)).collect();
    check_text_len(out.len())?;
    Ok(Value::Text(out.into()))
}

pub(super) fn repeat(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let source = text(values, 0);
    let count = values[1].as_int().unwrap_or(0).max(0) as usize;
    check_text_len(source.len().saturating_mul(count))?;
    Ok(Value::Text(source.repeat(count).into()))
}

pub(super) fn replace(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (source, from, to) = (text(values, 0), text(values, 1), text(values, 2));
    if from.is_empty() {
        return Ok(Value::Text(source.into()));
    }
    let matches = source.matches(from.as_str()).count();
    let grown = to.len().saturating_sub(from.len()).saturating_mul(matches);
    check_text_len(source.len().saturating_add(grown))?;
    Ok(Value::Text(source.replace(from.as_str(), &to).into()))
}

pub(super) fn left(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(take_chars(&text(values, 0), values[1].as_int().unwrap_or(0), true).into()))
}

pub(super) fn right(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(take_chars(&text(values, 0), values[1].as_int().unwrap_or(0), false).into()))
}

/// `left` / `right`: the first (last) `n` characters, or all but the last (first) `-n`.
fn take_chars(text: &str, n: i64, from_left: bool) -> String {
    let chars = text.chars().count() as i64;
    let keep = if n >= 0 { n.min(chars) } else { (chars + n).max(0) } as usize;
    if from_left {
        text.chars().take(keep).collect()
    } else {
        text.chars().skip(chars as usize - keep).collect()
    }
}

pub(super) fn lpad(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    padded(values, true)
}

pub(super) fn rpad(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    padded(values, false)
}

fn padded(values: &[Value], left: bool) -> SqlResult<Value> {
    let fill = if values.len() > 2 { text(values, 2) } else { " ".to_string() };
    let len = values[1].as_int().unwrap_or(0);
    Ok(Value::Text(pad(&text(values, 0), len, &fill, left)?.into()))
}

/// `lpad` / `rpad`: `text` cut or filled with `fill` to `len` characters.
fn pad(text: &str, len: i64, fill: &str, left: bool) -> SqlResult<String> {
    let len = len.max(0) as usize;
    let chars = text.chars().count();
    if chars >= len {
        return Ok(text.chars().take(len).collect());
    }
    if fill.is_empty() {
        return Ok(text.to_string());
    }
    let missing = len - chars;
    let fill_bytes = fill.len().div_ceil(fill.chars().count()) * missing;
    check_text_len(text.len().saturating_add(fill_bytes))?;
    let filler: String = fill.chars().cycle().take(missing).collect();
    Ok(if left { filler + text } else { text.to_string() + &filler })
}

pub(super) fn strpos(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (haystack, needle) = (text(values, 0), text(values, 1));
    Ok(Value::Int(match haystack.find(needle.as_str()) {
        Some(byte) => haystack[..byte].chars().count() as i64 + 1,
        None => 0,
    }))
}

/// `btrim`, `ltrim`, `rtrim`: the characters of the second argument (a space without one)
/// taken off the start, the end or both.
fn trimmed(values: &[Value], start: bool, end: bool) -> Value {
    let source = text(values, 0);
    let set: Vec<char> = match values.get(1) {
        Some(_) => text(values, 1).chars().collect(),
        None => vec![' '],
    };
    let mut out = source.as_str();
    if start {
        out = out.trim_start_matches(set.as_slice());
    }
    if end {
        out = out.trim_end_matches(set.as_slice());
    }
    Value::Text(out.into())
}

pub(super) fn ltrim(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(trimmed(values, true, false))
}

pub(super) fn rtrim(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(trimmed(values, false, true))
}

/// The first letter of each word upper case, the others lower; words are runs of letters and
/// digits.
pub(super) fn initcap(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let mut out = String::new();
    let mut in_word = false;
    for c in text(values, 0).chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    Ok(Value::Text(out.into()))
}

pub(super) fn reverse(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(text(values, 0).chars().rev().collect::<String>().into()))
}

/// Field `n` of the text split at the delimiter, counted from 1, or from the end when `n` is
/// negative; empty past the last field.
pub(super) fn split_part(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (source, delimiter) = (text(values, 0), text(values, 1));
    let n = values[2].as_int().unwrap_or(0);
    if n == 0 {
        return Err(SqlError::new("22023", "field position must not be zero"));
    }
    let fields: Vec<&str> = if delimiter.is_empty() {
        vec![source.as_str()]
    } else {
        source.split(delimiter.as_str()).collect()
    };
    let at = if n > 0 { n - 1 } else { fields.len() as i64 + n };
    let field = usize::try_from(at).ok().and_then(|at| fields.get(at)).copied().unwrap_or("");
    Ok(Value::Text(field.into()))
}

pub(super) fn starts_with(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(text(values, 0).starts_with(text(values, 1).as_str())))
}

/// The code point of the first character (0 for the empty string).
pub(super) fn ascii(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Int(text(values, 0).chars().next().map_or(0, |c| i64::from(u32::from(c)))))
}

/// The character of a code point.
pub(super) fn chr(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let code = values[0].as_int().unwrap_or(0);
    if code == 0 {
        return Err(SqlError::new("54000", "null character not permitted"));
    }
    if code < 0 {
        return Err(SqlError::new("54000", "character number must be positive"));
    }
    let c = u32::try_from(code).ok().and_then(char::from_u32).ok_or_else(|| {
        SqlError::new("54000", format!("requested character too large for encoding: {code}"))
    })?;
    Ok(Value::Text(c.to_string().into()))
}

pub(super) fn octet_length(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Int(text(values, 0).len() as i64))
}

/// Each character of `from` replaced by the one at its place in `to`, or removed when `to` is
/// shorter.
pub(super) fn translate(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (source, from, to) = (text(values, 0), text(values, 1), text(values, 2));
    let (from, to): (Vec<char>, Vec<char>) = (from.chars().collect(), to.chars().collect());
    let out: String = source
        .chars()
        .filter_map(|c| match from.iter().position(|&f| f == c) {
            Some(at) => to.get(at).copied(),
            None => Some(c),
        })
        .collect();
    Ok(Value::Text(out.into()))
}
