//! One-dimensional arrays: `integer[]`, `text[]`, ... of every scalar type. An array type is
//! [`Type::Array`] of an [`Elem`], the element type without its modifiers (PostgreSQL keeps
//! `varchar(10)[]`'s limit in the column only, and so does Engram: elements are not checked
//! against it). Values are [`Value::Array`]: the elements, NULLs among them. Arrays compare
//! element by element, then by length, as PostgreSQL's do; their text form is PostgreSQL's
//! (`{1,2,NULL}`, `{"a b","c\"d"}`), with its quoting rules both ways.

use super::*;
use std::sync::Arc;

/// The element type of an array type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Elem {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Varchar,
    Text,
    Bytea,
    Date,
    Timestamp,
    Timestamptz,
    Time,
    Interval,
    Uuid,
    Json,
    Jsonb,
}

impl Elem {
    /// The element type as a column type.
    pub fn ty(self) -> Type {
        match self {
            Elem::Bool => Type::Bool,
            Elem::Int2 => Type::Int2,
            Elem::Int4 => Type::Int4,
            Elem::Int8 => Type::Int8,
            Elem::Float4 => Type::Float4,
            Elem::Float8 => Type::Float8,
            Elem::Numeric => Type::Numeric { precision: 0, scale: 0 },
            Elem::Varchar => Type::Varchar(0),
            Elem::Text => Type::Text,
            Elem::Bytea => Type::Bytea,
            Elem::Date => Type::Date,
            Elem::Timestamp => Type::Timestamp,
            Elem::Timestamptz => Type::Timestamptz,
            Elem::Time => Type::Time,
            Elem::Interval => Type::Interval,
            Elem::Uuid => Type::Uuid,
            Elem::Json => Type::Json,
            Elem::Jsonb => Type::Jsonb,
        }
    }

    /// The element type of arrays of `ty` (an untyped value's arrays are `text[]`); `None`
    /// for an array type (arrays have one dimension here).
    pub fn of(ty: Type) -> Option<Elem> {
        Some(match ty {
            Type::Bool => Elem::Bool,
            Type::Int2 => Elem::Int2,
            Type::Int4 => Elem::Int4,
            Type::Int8 => Elem::Int8,
            Type::Float4 => Elem::Float4,
            Type::Float8 => Elem::Float8,
            Type::Numeric { .. } => Elem::Numeric,
            Type::Varchar(_) => Elem::Varchar,
            // `character(n)[]` is held as `text[]`.
            Type::Char(_) | Type::Text | Type::Unknown => Elem::Text,
            Type::Bytea => Elem::Bytea,
            Type::Date => Elem::Date,
            Type::Timestamp => Elem::Timestamp,
            Type::Timestamptz => Elem::Timestamptz,
            Type::Time => Elem::Time,
            Type::Interval => Elem::Interval,
            Type::Uuid => Elem::Uuid,
            Type::Json => Elem::Json,
            Type::Jsonb => Elem::Jsonb,
            // Object ids are held as `bigint[]`.
            Type::Regclass => Elem::Int8,
            Type::Array(_) => return None,
        })
    }

    /// The array type's OID (`_int4` is 1007, ...).
    pub fn array_oid(self) -> u32 {
        match self {
            Elem::Bool => 1000,
            Elem::Int2 => 1005,
            Elem::Int4 => 1007,
            Elem::Int8 => 1016,
            Elem::Float4 => 1021,
            Elem::Float8 => 1022,
            Elem::Numeric => 1231,
            Elem::Varchar => 1015,
            Elem::Text => 1009,
            Elem::Bytea => 1001,
            Elem::Date => 1182,
            Elem::Timestamp => 1115,
            Elem::Timestamptz => 1185,
            Elem::Time => 1183,
            Elem::Interval => 1187,
            Elem::Uuid => 2951,
            Elem::Json => 199,
            Elem::Jsonb => 3807,
        }
    }

    /// The element type of the array type with OID `oid`.
    pub fn from_array_oid(oid: u32) -> Option<Elem> {
        const ALL: [Elem; 18] = [
            Elem::Bool,
            Elem::Int2,
            Elem::Int4,
            Elem::Int8,
            Elem::Float4,
            Elem::Float8,
            Elem::Numeric,
            Elem::Varchar,
            Elem::Text,
            Elem::Bytea,
            Elem::Date,
            Elem::Timestamp,
            Elem::Timestamptz,
            Elem::Time,
            Elem::Interval,
            Elem::Uuid,
            Elem::Json,
            Elem::Jsonb,
        ];
        ALL.into_iter().find(|elem| elem.array_oid() == oid)
    }
}

/// The most elements an array may hold: 8,388,608 (PostgreSQL allows 134,217,727 but holds
/// an element in 8 bytes where Engram holds it in 32; 54000 beyond, as there).
pub const ARRAY_ELEMENTS_MAX: usize = 1 << 23;

/// An array value from its elements.
pub fn array(items: Vec<Value>) -> Value {
    Value::Array(Arc::from(items))
}

fn malformed(text: &str, detail: &str) -> SqlError {
    let mut error = SqlError::new("22P02", format!("malformed array literal: \"{text}\""));
    error.detail = Some(detail.to_string());
    error
}

/// Reads PostgreSQL's text form of a one-dimensional array of `elem`.
pub fn parse_array(text: &str, elem: Elem) -> SqlResult<Value> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return Err(SqlError::unsupported("array bounds in an array literal"));
    }
    let Some(body) = trimmed.strip_prefix('{') else {
        return Err(malformed(text, "Array value must start with \"{\" or dimension information."));
    };
    let mut items = Vec::new();
    let mut chars = body.chars().peekable();
    let skip_blanks = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
    };
    skip_blanks(&mut chars);
    if chars.peek() == Some(&'}') {
        chars.next();
    } else {
        loop {
            skip_blanks(&mut chars);
            let mut item = String::new();
            let mut quoted = false;
            match chars.peek() {
                Some('{') => return Err(SqlError::unsupported("multidimensional arrays")),
                Some('"') => {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(c) => item.push(c),
                                None => return Err(malformed(text, "Unexpected end of input.")),
                            },
                            Some(c) => item.push(c),
                            None => return Err(malformed(text, "Unexpected end of input.")),
                        }
                    }
                    skip_blanks(&mut chars);
                }
                _ => {
                    // Unquoted: up to a delimiter, blanks at the end not counted.
                    let mut kept = 0;
                    loop {
                        match chars.peek() {
                            Some(',' | '}') | None => break,
                            Some('"' | '{') => {
                                return Err(malformed(text, "Unexpected array element."));
                            }
                            Some('\\') => {
                                chars.next();
                                match chars.next() {
                                    Some(c) => item.push(c),
                                    None => {
                                        return Err(malformed(text, "Unexpected end of input."));
                                    }
                                }
                                kept = item.len();
                            }
                            Some(&c) => {
                                chars.next();
                                item.push(c);
                                if !c.is_ascii_whitespace() {
                                    kept = item.len();
                                }
                            }
                        }
                    }
                    item.truncate(kept);
                    if item.is_empty() {
                        return Err(malformed(text, "Unexpected \",\" character."));
                    }
                }
            }
            items.push(if !quoted && item.eq_ignore_ascii_case("null") {
                Value::Null
            } else {
                parse_text(&item, elem.ty())?
            });
            match chars.next() {
                Some(',') => continue,
                Some('}') => break,
                _ => return Err(malformed(text, "Unexpected end of input.")),
            }
        }
    }
    if chars.any(|c| !c.is_ascii_whitespace()) {
        return Err(malformed(text, "Junk after closing right brace."));
    }
    Ok(array(items))
}

/// Appends PostgreSQL's text form of an array whose elements are of type `elem`.
pub fn write_array(items: &[Value], elem: Type, out: &mut String) {
    out.push('{');
    let mut text = String::new();
    for (at, item) in items.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        text.clear();
        if !item.write_text(elem, &mut text) {
            out.push_str("NULL");
            continue;
        }
        let quote = text.is_empty()
            || text.eq_ignore_ascii_case("null")
            || text.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
        if !quote {
            out.push_str(&text);
            continue;
        }
        out.push('"');
        for c in text.chars() {
            if matches!(c, '"' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push('}');
}

/// Orders two arrays: element by element (NULL elements last), then the shorter first.
pub fn compare_arrays(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = x.compare(y);
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// Converts each element of `items` to `elem` (a cast between array types).
pub fn cast_elements(items: &[Value], elem: Elem, explicit: bool) -> SqlResult<Value> {
    let items = items
        .iter()
        .map(|item| cast(item.clone(), elem.ty(), explicit))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok(array(items))
}
