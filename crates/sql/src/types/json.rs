//! `json` and `jsonb`. A `jsonb` value is a parsed tree, [`Json`], held as [`Value::Json`]:
//! objects keep one pair per key (the last one written), ordered as PostgreSQL orders them
//! (shorter keys first, then bytewise), and numbers are exact decimals of any size
//! ([`Number`]). A `json` value is its input text, validated and kept as written
//! ([`Value::Text`] under [`Type::Json`]); the json operators read it one level at a time
//! ([`split`]), so that `->` returns a member's text exactly as it was written, as PostgreSQL's
//! does. Both print as PostgreSQL prints them and compare (jsonb) in PostgreSQL's order.

use super::*;
use std::sync::Arc;

/// The deepest nesting of arrays and objects a json text may have; deeper input fails with
/// 54001, as PostgreSQL's stack check does (the parser, printer and comparisons recurse).
pub const JSON_DEPTH_MAX: usize = 1_000;

/// How [`Json`] prints: jsonb's output (`{"a": 1}`), `jsonb_pretty`'s, or the blank-free
/// form of `json`'s generators (`{"a":1}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Spaced,
    Pretty,
    Compact,
}

/// A jsonb value.
#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(Box<str>),
    Array(Vec<Json>),
    /// Pairs with distinct keys in [`key_order`] (for jsonb); a `json` text's object as
    /// written when it is read with duplicates kept.
    Object(Vec<(Box<str>, Json)>),
}

/// An exact decimal number as PostgreSQL's `numeric` prints it: an optional `-`, the integer
/// digits (at least one, no leading zero unless it is the only one), and the fraction digits
/// after a `.` when the number has a scale. Any size (`1e100` is a 1 and 100 zeros).
#[derive(Debug, Clone)]
pub struct Number(Box<str>);

/// The most digits a json number may have before or after its point.
const NUMBER_DIGITS_MAX: i64 = 16_384;

impl Number {
    /// Reads JSON's number syntax (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`); `None`
    /// for anything else.
    pub fn parse(text: &str) -> Option<Number> {
        let bytes = text.as_bytes();
        let mut at = 0;
        let negative = bytes.first() == Some(&b'-');
        if negative {
            at += 1;
        }
        let int_start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        let int_digits = &text[int_start..at];
        if int_digits.is_empty() || (int_digits.len() > 1 && int_digits.starts_with('0')) {
            return None;
        }
        let mut frac_digits = "";
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            frac_digits = &text[start..at];
            if frac_digits.is_empty() {
                return None;
            }
        }
        let mut exponent: i64 = 0;
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            let exp_negative = match bytes.get(at) {
                Some(b'-') => {
                    at += 1;
                    true
                }
                Some(b'+') => {
                    at += 1;
                    false
                }
                _ => false,
            };
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                exponent = (exponent * 10 + i64::from(bytes[at] - b'0')).min(1 << 40);
                at += 1;
            }
            if start == at {
                return None;
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        if at != bytes.len() {
            return None;
        }
        Number::from_parts(
            negative,
            &format!("{int_digits}{frac_digits}"),
            frac_digits.len() as i64 - exponent,
        )
    }

    /// The number `digits` × 10^-`scale` (a negative scale appends zeros), printed with
    /// `max(scale, 0)` fraction digits.
    fn from_parts(negative: bool, digits: &str, scale: i64) -> Option<Number> {
        if scale.abs() > NUMBER_DIGITS_MAX {
            return None;
        }
        let mut digits = digits.to_string();
        if scale < 0 {
            digits.extend(std::iter::repeat_n('0', (-scale) as usize));
        }
        let scale = scale.max(0) as usize;
        if digits.len() <= scale {
            let pad = scale + 1 - digits.len();
            digits.insert_str(0, &"0".repeat(pad));
        }
        let point = digits.len() - scale;
        let int = digits[..point].trim_start_matches('0');
        let int = if int.is_empty() { "0" } else { int };
        let frac = &digits[point..];
        let zero = int == "0" && frac.bytes().all(|b| b == b'0');
        let mut out = String::with_capacity(int.len() + frac.len() + 2);
        if negative && !zero {
            out.push('-');
        }
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        Some(Number(out.into()))
    }

    /// The number of a SQL numeric value's text (`12`, `-1.50`, `NaN` is not one).
    pub fn from_sql_text(text: &str) -> Option<Number> {
        Number::parse(text.trim())
            .or_else(|| Number::parse(&text.trim().replacen('+', "", 1)))
            .or_else(|| {
                // Leading zeros and a bare point (`.5`, `007`) are SQL, not JSON.
                let trimmed = text.trim();
                let (negative, body) = match trimmed.strip_prefix('-') {
                    Some(body) => (true, body),
                    None => (false, trimmed),
                };
                let body = body.trim_start_matches('0');
                let body = if body.is_empty() || body.starts_with('.') {
                    format!("0{body}")
                } else {
                    body.to_string()
                };
                Number::parse(&format!("{}{body}", if negative { "-" } else { "" }))
            })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn negative(&self) -> bool {
        self.0.starts_with('-')
    }

    /// The integer and fraction digits, the fraction without trailing zeros.
    fn parts(&self) -> (&str, &str) {
        let body = self.0.trim_start_matches('-');
        match body.split_once('.') {
            Some((int, frac)) => (int, frac.trim_end_matches('0')),
            None => (body, ""),
        }
    }

    /// The value without trailing fraction zeros: equal numbers have the same one.
    pub fn normalized(&self) -> String {
        let (int, frac) = self.parts();
        let sign = if self.negative() { "-" } else { "" };
        if frac.is_empty() { format!("{sign}{int}") } else { format!("{sign}{int}.{frac}") }
    }

    fn magnitude_cmp(&self, other: &Number) -> Ordering {
        let (ai, af) = self.parts();
        let (bi, bf) = other.parts();
        ai.len().cmp(&bi.len()).then_with(|| ai.cmp(bi)).then_with(|| af.cmp(bf))
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Number) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Number {}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Number) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Number {
    fn cmp(&self, other: &Number) -> Ordering {
        match (self.negative(), other.negative()) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.magnitude_cmp(other),
            (true, true) => other.magnitude_cmp(self),
        }
    }
}

/// PostgreSQL's order of a jsonb object's keys: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

fn syntax(kind: &str, text: &str, detail: impl Into<String>) -> SqlError {
    let shown: String = text.chars().take(200).collect();
    SqlError::new("22P02", format!("invalid input syntax for type {kind}: \"{shown}\""))
        .with_detail(detail.into())
}

fn too_deep() -> SqlError {
    SqlError::new("54001", "stack depth limit exceeded")
        .with_detail(format!("json nests deeper than {JSON_DEPTH_MAX} levels"))
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
    /// Whether objects are made jsonb's (sorted, one pair per key).
    normalize: bool,
    kind: &'static str,
}

impl<'a> Parser<'a> {
    fn error(&self, detail: impl Into<String>) -> SqlError {
        syntax(self.kind, self.text, detail)
    }

    fn skip_space(&mut self) {
        while self.at < self.bytes.len()
            && matches!(self.bytes[self.at], b' ' | b'\t' | b'\n' | b'\r')
        {
            self.at += 1;
        }
    }

    fn token_end(&self) -> usize {
        let mut end = self.at;
        while end < self.bytes.len()
            && (self.bytes[end].is_ascii_alphanumeric()
                || matches!(self.bytes[end], b'.' | b'+' | b'-'))
        {
            end += 1;
        }
        // At least one character (a whole one: the text may hold any).
        let mut end = end.max(self.at + 1).min(self.bytes.len());
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        end
    }

    fn unexpected(&self) -> SqlError {
        if self.at >= self.bytes.len() {
            return self.error("The input string ended unexpectedly.");
        }
        let end = self.token_end();
        let token = String::from_utf8_lossy(&self.bytes[self.at..end]);
        self.error(format!("Token \"{token}\" is invalid."))
    }

    /// The error for a token where `what` (as PostgreSQL words it) was expected.
    fn expected(&self, what: &str) -> SqlError {
        if self.at >= self.bytes.len() {
            return self.unexpected();
        }
        let found = &self.text[self.at..self.token_end()];
        self.error(format!("Expected {what}, but found \"{found}\"."))
    }

    fn value(&mut self) -> SqlResult<Json> {
        self.skip_space();
        match self.bytes.get(self.at) {
            None => Err(self.unexpected()),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Json::String(self.string()?.into())),
            Some(b'-' | b'0'..=b'9') => {
                let end = self.token_end();
                let number = Number::parse(&self.text[self.at..end]).ok_or_else(|| {
                    self.error(format!("Token \"{}\" is invalid.", &self.text[self.at..end]))
                })?;
                self.at = end;
                Ok(Json::Number(number))
            }
            Some(_) => {
                let end = self.token_end();
                let word = &self.text[self.at..end];
                let value = match word {
                    "true" => Json::Bool(true),
                    "false" => Json::Bool(false),
                    "null" => Json::Null,
                    _ => return Err(self.error(format!("Token \"{word}\" is invalid."))),
                };
                self.at = end;
                Ok(value)
            }
        }
    }

    fn enter(&mut self) -> SqlResult<()> {
        self.depth += 1;
        if self.depth > JSON_DEPTH_MAX {
            return Err(too_deep());
        }
        self.at += 1;
        Ok(())
    }

    fn array(&mut self) -> SqlResult<Json> {
        self.enter()?;
        let mut items = Vec::new();
        self.skip_space();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_space();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    break;
                }
                _ => {
                    return Err(self.expected("\",\" or \"]\""));
                }
            }
        }
        self.depth -= 1;
        Ok(Json::Array(items))
    }

    fn object(&mut self) -> SqlResult<Json> {
        self.enter()?;
        let mut pairs: Vec<(Box<str>, Json)> = Vec::new();
        self.skip_space();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Json::Object(pairs));
        }
        loop {
            self.skip_space();
            if self.bytes.get(self.at) != Some(&b'"') {
                return Err(self.expected("string"));
            }
            let key = self.string()?;
            self.skip_space();
            if self.bytes.get(self.at) != Some(&b':') {
                return Err(self.expected("\":\""));
            }
            self.at += 1;
            let value = self.value()?;
            pairs.push((key.into(), value));
            self.skip_space();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    break;
                }
                _ => {
                    return Err(self.expected("\",\" or \"}\""));
                }
            }
        }
        self.depth -= 1;
        Ok(Json::Object(if self.normalize { normalize_pairs(pairs) } else { pairs }))
    }

    /// A string at `at` (its opening quote), unescaped.
    fn string(&mut self) -> SqlResult<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self.at < self.bytes.len()
                && !matches!(self.bytes[self.at], b'"' | b'\\')
                && self.bytes[self.at] >= 0x20
            {
                self.at += 1;
            }
            out.push_str(&self.text[start..self.at]);
            match self.bytes.get(self.at) {
                None => return Err(self.error("The input string ended unexpectedly.")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escape = *self
                        .bytes
                        .get(self.at)
                        .ok_or_else(|| self.error("The input string ended unexpectedly."))?;
                    self.at += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        other => {
                            let shown = if other.is_ascii() {
                                (other as char).to_string()
                            } else {
                                String::new()
                            };
                            return Err(
                                self.error(format!("Escape sequence \"\\{shown}\" is invalid."))
                            );
                        }
                    }
                }
                Some(_) => {
                    let ch = self.text[self.at..].chars().next().unwrap_or(' ');
                    return Err(self.error(format!(
                        "Character with value 0x{:02x} must be escaped.",
                        ch as u32
                    )));
                }
            }
        }
    }

    fn hex4(&mut self) -> SqlResult<u32> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(digits) = digits else {
            return Err(self.error("\"\\u\" must be followed by four hexadecimal digits."));
        };
        self.at += 4;
        Ok(u32::from_str_radix(digits, 16).unwrap_or(0))
    }

    fn unicode_escape(&mut self) -> SqlResult<char> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if self.text.get(self.at..self.at + 2) != Some("\\u") {
                return Err(self.error("Unicode high surrogate must not follow a high surrogate."));
            }
            self.at += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.error("Unicode low surrogate must follow a high surrogate."));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00..0xE000).contains(&first) {
            return Err(self.error("Unicode low surrogate must follow a high surrogate."));
        } else {
            first
        };
        if code == 0 {
            return Err(SqlError::new("22P05", "unsupported Unicode escape sequence")
                .with_detail("\\u0000 cannot be converted to text."));
        }
        char::from_u32(code).ok_or_else(|| self.error("invalid Unicode escape"))
    }
}

/// An object's pairs as jsonb keeps them: sorted by [`key_order`], the last of equal keys.
fn normalize_pairs(mut pairs: Vec<(Box<str>, Json)>) -> Vec<(Box<str>, Json)> {
    // A stable sort keeps equal keys in input order; the last one wins.
    pairs.sort_by(|a, b| key_order(&a.0, &b.0));
    let mut out: Vec<(Box<str>, Json)> = Vec::with_capacity(pairs.len());
    for pair in pairs {
        match out.last_mut() {
            Some(last) if last.0 == pair.0 => *last = pair,
            _ => out.push(pair),
        }
    }
    out
}

/// Parses jsonb input text.
pub fn parse_jsonb(text: &str) -> SqlResult<Json> {
    parse(text, true, "json")
}

/// A json text as a tree, its objects' pairs as written (duplicates kept).
pub fn parse_json_tree(text: &str) -> SqlResult<Json> {
    parse(text, false, "json")
}

/// Checks json input text (a `json` value is its text).
pub fn check_json(text: &str) -> SqlResult<()> {
    parse(text, false, "json").map(|_| ())
}

fn parse(text: &str, normalize: bool, kind: &'static str) -> SqlResult<Json> {
    let mut parser = Parser { text, bytes: text.as_bytes(), at: 0, depth: 0, normalize, kind };
    let value = parser.value()?;
    parser.skip_space();
    if parser.at != parser.bytes.len() {
        return Err(parser.expected("end of input"));
    }
    Ok(value)
}

impl Json {
    /// Builds an object from pairs in any order (the last of equal keys kept).
    pub fn object(pairs: Vec<(Box<str>, Json)>) -> Json {
        Json::Object(normalize_pairs(pairs))
    }

    /// jsonb's name of the value's kind (`jsonb_typeof`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => {
                pairs.binary_search_by(|(k, _)| key_order(k, key)).ok().map(|at| &pairs[at].1)
            }
            _ => None,
        }
    }

    /// The element `index` of an array (negative counts from the end).
    pub fn at(&self, index: i64) -> Option<&Json> {
        match self {
            Json::Array(items) => {
                let at = if index < 0 { items.len() as i64 + index } else { index };
                usize::try_from(at).ok().and_then(|at| items.get(at))
            }
            _ => None,
        }
    }

    /// The value as jsonb prints it (`{"a": 1, "b": [1, 2]}`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Layout::Spaced, 0);
        out
    }

    /// `jsonb_pretty`'s form: four spaces per level, one member per line.
    pub fn to_pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Layout::Pretty, 0);
        out
    }

    /// Appends the value as `json`'s generators print it: no blanks (`[1,2]`, `{"a":1}`).
    pub fn write_compact(&self, out: &mut String) {
        self.write(out, Layout::Compact, 0);
    }

    fn write(&self, out: &mut String, layout: Layout, level: usize) {
        let newline = |out: &mut String, level: usize| {
            if layout == Layout::Pretty {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', 4 * level));
            }
        };
        let (between, colon) = match layout {
            Layout::Spaced => (", ", ": "),
            Layout::Pretty => (",", ": "),
            Layout::Compact => (",", ":"),
        };
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n.as_str()),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (at, item) in items.iter().enumerate() {
                    if at > 0 {
                        out.push_str(between);
                    }
                    newline(out, level + 1);
                    item.write(out, layout, level + 1);
                }
                // (Pretty-printed, an empty container too breaks its line, as PostgreSQL's.)
                if !items.is_empty() || layout == Layout::Pretty {
                    newline(out, level);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (at, (key, value)) in pairs.iter().enumerate() {
                    if at > 0 {
                        out.push_str(between);
                    }
                    newline(out, level + 1);
                    write_string(key, out);
                    out.push_str(colon);
                    value.write(out, layout, level + 1);
                }
                if !pairs.is_empty() || layout == Layout::Pretty {
                    newline(out, level);
                }
                out.push('}');
            }
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Json::Null => 0,
            Json::String(_) => 1,
            Json::Number(_) => 2,
            Json::Bool(_) => 3,
            Json::Array(_) => 4,
            Json::Object(_) => 5,
        }
    }

    /// PostgreSQL's jsonb order: objects above arrays above booleans above numbers above
    /// strings above null; arrays by length then element by element, objects by pair count
    /// then key by key and value by value; an empty top-level array sorts below everything.
    pub fn compare(&self, other: &Json) -> Ordering {
        let empty = |json: &Json| matches!(json, Json::Array(items) if items.is_empty());
        match (empty(self), empty(other)) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        self.compare_inner(other)
    }

    fn compare_inner(&self, other: &Json) -> Ordering {
        match (self, other) {
            (Json::Null, Json::Null) => Ordering::Equal,
            (Json::Bool(a), Json::Bool(b)) => a.cmp(b),
            (Json::Number(a), Json::Number(b)) => a.cmp(b),
            // Strings and keys compare in the text order (bytewise, Engram's collation).
            (Json::String(a), Json::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Json::Array(a), Json::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.compare_inner(y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (Json::Object(a), Json::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|((ka, va), (kb, vb))| {
                        ka.as_bytes().cmp(kb.as_bytes()).then_with(|| va.compare_inner(vb))
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    /// Feeds a hash of the value: equal values (`1.0` and `1`) hash equally.
    pub fn hash_into<H: std::hash::Hasher>(&self, state: &mut H) {
        use std::hash::Hash;
        self.rank().hash(state);
        match self {
            Json::Null => {}
            Json::Bool(b) => b.hash(state),
            Json::Number(n) => n.normalized().hash(state),
            Json::String(s) => s.hash(state),
            Json::Array(items) => {
                items.len().hash(state);
                for item in items {
                    item.hash_into(state);
                }
            }
            Json::Object(pairs) => {
                pairs.len().hash(state);
                for (key, value) in pairs {
                    key.hash(state);
                    value.hash_into(state);
                }
            }
        }
    }

    /// jsonb's `@>`: whether `self` contains `other` (objects: every pair of `other` is
    /// contained in the same key's value; arrays: every element of `other` is contained in
    /// some element; a top-level array contains a scalar it holds).
    pub fn contains(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Array(items), scalar) if !matches!(scalar, Json::Array(_) | Json::Object(_)) => {
                items.iter().any(|item| item == scalar)
            }
            _ => self.contains_inner(other),
        }
    }

    fn contains_inner(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Object(_), Json::Object(wanted)) => wanted
                .iter()
                .all(|(key, value)| self.get(key).is_some_and(|have| have.contains_inner(value))),
            (Json::Array(items), Json::Array(wanted)) => wanted.iter().all(|value| {
                items.iter().any(|item| match (item, value) {
                    (Json::Array(_) | Json::Object(_), Json::Array(_) | Json::Object(_)) => {
                        item.contains_inner(value)
                    }
                    (a, b) => a == b,
                })
            }),
            (a, b) => a == b,
        }
    }

    /// jsonb's `?`: a key of an object, an element string of an array, the string itself.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Json::Object(_) => self.get(key).is_some(),
            Json::Array(items) => {
                items.iter().any(|item| matches!(item, Json::String(s) if &**s == key))
            }
            Json::String(s) => &**s == key,
            _ => false,
        }
    }

    /// The text `->>` gives: a string unquoted, null as SQL NULL, anything else as printed.
    pub fn to_sql_text(&self) -> Option<String> {
        match self {
            Json::Null => None,
            Json::String(s) => Some(s.to_string()),
            other => Some(other.to_text()),
        }
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

/// Appends a string as a JSON string literal, escaped as PostgreSQL escapes it.
pub fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ch if (ch as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", ch as u32);
            }
            ch => out.push(ch),
        }
    }
    out.push('"');
}

/// A jsonb value held by a SQL value.
pub fn jsonb(json: Json) -> Value {
    Value::Json(Arc::new(json))
}

/// One level of a `json` text: its members' texts as written (`split`).
#[derive(Debug)]
pub enum Raw<'a> {
    Object(Vec<(String, &'a str)>),
    Array(Vec<&'a str>),
    /// A string, number, boolean or null, trimmed.
    Scalar(&'a str),
}

/// Splits a valid json text into its top level: an object's keys (unescaped) and values'
/// texts, an array's elements' texts, or the scalar's text.
pub fn split(text: &str) -> Raw<'_> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    match bytes.get(at) {
        Some(b'[') => {
            at += 1;
            let mut items = Vec::new();
            loop {
                at = skip_space(bytes, at);
                if bytes.get(at) == Some(&b']') || at >= bytes.len() {
                    break;
                }
                let end = value_end(bytes, at);
                items.push(&text[at..end]);
                at = skip_space(bytes, end);
                if bytes.get(at) == Some(&b',') {
                    at += 1;
                }
            }
            Raw::Array(items)
        }
        Some(b'{') => {
            at += 1;
            let mut pairs = Vec::new();
            loop {
                at = skip_space(bytes, at);
                if bytes.get(at) != Some(&b'"') {
                    break;
                }
                let key_end = value_end(bytes, at);
                let key = match parse(&text[at..key_end], false, "json") {
                    Ok(Json::String(key)) => key.into_string(),
                    _ => String::new(),
                };
                at = skip_space(bytes, key_end) + 1;
                at = skip_space(bytes, at);
                let end = value_end(bytes, at);
                pairs.push((key, &text[at..end]));
                at = skip_space(bytes, end);
                if bytes.get(at) == Some(&b',') {
                    at += 1;
                }
            }
            Raw::Object(pairs)
        }
        _ => Raw::Scalar(text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))),
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// Where the valid json value starting at `at` ends.
fn value_end(bytes: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    loop {
        match bytes.get(at) {
            None => return at,
            Some(b'"') => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
                if depth == 0 {
                    return at.min(bytes.len());
                }
            }
            Some(b'[' | b'{') => {
                depth += 1;
                at += 1;
            }
            // A scalar ends before its container's closing bracket.
            Some(b']' | b'}') if depth == 0 => return at,
            Some(b']' | b'}') => {
                at += 1;
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            Some(b',' | b' ' | b'\t' | b'\n' | b'\r' | b':') if depth == 0 => return at,
            Some(_) => at += 1,
        }
    }
}

/// A json text's kind (`json_typeof`).
pub fn raw_type_name(text: &str) -> &'static str {
    match text.trim_start().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// The text `->>` gives of a json member's text: a string unescaped, null as SQL NULL.
pub fn raw_to_sql_text(raw: &str) -> SqlResult<Option<String>> {
    let trimmed = raw.trim();
    if trimmed.starts_with('"') {
        return match parse(trimmed, false, "json")? {
            Json::String(s) => Ok(Some(s.into_string())),
            _ => Ok(Some(trimmed.to_string())),
        };
    }
    Ok(if trimmed == "null" { None } else { Some(trimmed.to_string()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(input: &str) -> String {
        parse_jsonb(input).map(|json| json.to_text()).unwrap_or_else(|error| error.code.into())
    }

    #[test]
    fn numbers_print_as_postgresql_numerics() {
        for (input, printed) in [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0.0"),
            ("1.50", "1.50"),
            ("1e2", "100"),
            ("1E+2", "100"),
            ("1.5e-3", "0.0015"),
            ("-12.5e1", "-125"),
            ("123e-1", "12.3"),
            ("1e-2", "0.01"),
            ("9223372036854775808", "9223372036854775808"),
        ] {
            assert_eq!(Number::parse(input).expect(input).as_str(), printed, "{input}");
        }
        for bad in ["01", "1.", ".5", "+1", "1e", "1f2", "0x10", "--1", "1.3ex100"] {
            assert!(Number::parse(bad).is_none(), "{bad}");
        }
        let n = |t: &str| Number::parse(t).unwrap();
        assert_eq!(n("1.0"), n("1"));
        assert!(n("-2") < n("-1.5") && n("-1.5") < n("0") && n("0.5") < n("1") && n("9") < n("10"));
        assert_eq!(n("100").normalized(), n("1e2").normalized());
        assert_eq!(n("2.50").normalized(), "2.5");
    }

    #[test]
    fn input_is_checked_and_objects_are_normalized() {
        assert_eq!(
            text(r#"{"bb":1,"a":2,"a":3,"ccc":{"y":1,"x":2}}"#),
            r#"{"a": 3, "bb": 1, "ccc": {"x": 2, "y": 1}}"#
        );
        assert_eq!(
            text(r#" [1, "x\u0041\n", null, true, false, {}] "#),
            r#"[1, "xA\n", null, true, false, {}]"#
        );
        assert_eq!(text(r#""\ud83d\ude00""#), "\"\u{1F600}\"");
        for bad in [
            "",
            " ",
            "[1,2,]",
            "[1,2",
            "{\"a\"}",
            "{1:2}",
            "{\"a\":1,}",
            "'a'",
            "\"a",
            "\"\\v\"",
            "tru",
            "true false",
            "[1] x",
            "\"a\nb\"",
            "{\"a\" 1}",
            "\"\\ud83d\"",
            // Characters of more than one byte where a token was expected.
            "é",
            "[é]",
            "{\"a\":é}",
            "{é:1}",
            "1é",
            "[1 é]",
            "\u{1F600}",
        ] {
            assert_eq!(text(bad), "22P02", "{bad:?}");
        }
        assert_eq!(text(r#""\u0000""#), "22P05");
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_jsonb(&deep(JSON_DEPTH_MAX)).is_ok());
        assert_eq!(text(&deep(JSON_DEPTH_MAX + 1)), "54001");
        assert_eq!(text(&"{\"a\":".repeat(10_000)), "54001");
        assert!(check_json(r#"{"a": 1, "a": 2}"#).is_ok());
    }

    #[test]
    fn order_and_containment_follow_postgresql() {
        let j = |t: &str| parse_jsonb(t).unwrap();
        // Objects > arrays > booleans > numbers > strings > null; the empty array lowest.
        let ascending = [
            "[]",
            "null",
            "\"a\"",
            "\"b\"",
            "1",
            "2.5",
            "false",
            "true",
            "[1]",
            "[0, 0]",
            "{}",
            "{\"a\": 1}",
            "{\"a\": 2}",
            "{\"b\": 0}",
            "{\"a\": 1, \"b\": 1}",
        ];
        for pair in ascending.windows(2) {
            assert_eq!(
                j(pair[0]).compare(&j(pair[1])),
                Ordering::Less,
                "{} < {}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(j("{\"a\": 1.0}"), j("{\"a\": 1}"));
        assert!(j(r#"{"a":1,"b":{"c":[1,2]}}"#).contains(&j(r#"{"b":{"c":[2]}}"#)));
        assert!(!j(r#"{"a":1}"#).contains(&j(r#"{"a":1,"b":2}"#)));
        assert!(j("[1,[2,3]]").contains(&j("[[3]]")));
        assert!(!j("[1,[2,3]]").contains(&j("[3]")));
        assert!(j("[1,2]").contains(&j("2")) && !j("[[2]]").contains(&j("2")));
        assert!(
            j(r#"["a"]"#).has_key("a") && j(r#"{"a":null}"#).has_key("a") && !j("[1]").has_key("1")
        );
    }

    #[test]
    fn split_returns_members_as_written() {
        let text = r#" {"a": "x]}\"," , "b" : [1, {"c": "]"}], "a":  2 } "#;
        match split(text) {
            Raw::Object(pairs) => {
                let pairs: Vec<(&str, &str)> =
                    pairs.iter().map(|(k, v)| (k.as_str(), *v)).collect();
                assert_eq!(pairs, [("a", r#""x]}\",""#), ("b", r#"[1, {"c": "]"}]"#), ("a", "2")]);
            }
            other => panic!("{other:?}"),
        }
        match split("[1,[2,3] , \"s\",null]") {
            Raw::Array(items) => assert_eq!(items, ["1", "[2,3]", "\"s\"", "null"]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(split(" 12 "), Raw::Scalar("12")));
        assert_eq!(raw_to_sql_text(r#""a\"b""#).unwrap().as_deref(), Some("a\"b"));
        assert_eq!(raw_to_sql_text("null").unwrap(), None);
    }

    fn json_tree() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            (any::<i32>(), 0u32..4).prop_map(|(v, scale)| {
                let text = format!("{v}e-{scale}");
                Json::Number(Number::parse(&text).unwrap())
            }),
            "[a-c\"\\\\\n\u{e9}]{0,4}".prop_map(|s| Json::String(s.into())),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Json::Array),
                prop::collection::vec(("[a-d]{0,3}", inner), 0..5).prop_map(|pairs| {
                    Json::object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
                }),
            ]
        })
    }

    proptest! {
        /// Printing and parsing again gives the same value and the same text; the compact
        /// and pretty forms parse to it too; order is a total order consistent with equality
        /// and hashing.
        #[test]
        fn printed_values_parse_back(a in json_tree(), b in json_tree()) {
            let printed = a.to_text();
            let again = parse_jsonb(&printed).unwrap();
            prop_assert_eq!(&again, &a);
            prop_assert_eq!(again.to_text(), printed);
            prop_assert_eq!(parse_jsonb(&a.to_pretty()).unwrap(), a.clone());
            prop_assert_eq!(a.compare(&b), b.compare(&a).reverse());
            // The same value with its numbers written with one more fraction digit.
            fn widened(json: &Json) -> Json {
                match json {
                    Json::Number(n) => {
                        let text = n.as_str();
                        let wider = if text.contains('.') { format!("{text}0") } else { format!("{text}.0") };
                        Json::Number(Number::parse(&wider).unwrap())
                    }
                    Json::Array(items) => Json::Array(items.iter().map(widened).collect()),
                    Json::Object(pairs) => {
                        Json::Object(pairs.iter().map(|(k, v)| (k.clone(), widened(v))).collect())
                    }
                    other => other.clone(),
                }
            }
            let hash = |json: &Json| {
                use std::hash::{BuildHasher, Hasher};
                let mut hasher =
                    std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                        .build_hasher();
                json.hash_into(&mut hasher);
                hasher.finish()
            };
            let wide = widened(&a);
            prop_assert_eq!(&wide, &a);
            prop_assert_eq!(hash(&wide), hash(&a));
            prop_assert!(a.contains(&a));
        }
    }
}
