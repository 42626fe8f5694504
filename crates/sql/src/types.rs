//! SQL types and values: comparison with three-valued logic left to the caller, casts, text
//! input and output in PostgreSQL's formats.

use crate::error::{SqlError, SqlResult};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

/// A column or expression type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// `NUMERIC(precision, scale)`; precision 0 is unconstrained `NUMERIC`.
    Numeric {
        precision: u8,
        scale: u8,
    },
    /// `CHAR(n)`: blank-padded on output, trailing blanks insignificant.
    Char(u32),
    /// `VARCHAR(n)`; 0 is unbounded.
    Varchar(u32),
    Text,
    Bytea,
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since 1970-01-01 00:00:00, no time zone.
    Timestamp,
    /// An untyped literal or parameter whose type the context has not decided yet.
    Unknown,
}

/// The largest precision of `NUMERIC` (the decimal type holds 28 digits).
pub const NUMERIC_PRECISION_MAX: u8 = 28;

impl Type {
    /// The name PostgreSQL prints for the type.
    pub fn name(self) -> String {
        match self {
            Type::Bool => "boolean".into(),
            Type::Int2 => "smallint".into(),
            Type::Int4 => "integer".into(),
            Type::Int8 => "bigint".into(),
            Type::Float4 => "real".into(),
            Type::Float8 => "double precision".into(),
            Type::Numeric { precision: 0, .. } => "numeric".into(),
            Type::Numeric { precision, scale } => format!("numeric({precision},{scale})"),
            Type::Char(n) => format!("character({n})"),
            Type::Varchar(0) => "character varying".into(),
            Type::Varchar(n) => format!("character varying({n})"),
            Type::Text => "text".into(),
            Type::Bytea => "bytea".into(),
            Type::Date => "date".into(),
            Type::Timestamp => "timestamp without time zone".into(),
            Type::Unknown => "unknown".into(),
        }
    }

    /// PostgreSQL's type OID (for the wire protocol and `pg_type`).
    pub fn oid(self) -> u32 {
        match self {
            Type::Bool => 16,
            Type::Int2 => 21,
            Type::Int4 => 23,
            Type::Int8 => 20,
            Type::Float4 => 700,
            Type::Float8 => 701,
            Type::Numeric { .. } => 1700,
            Type::Char(_) => 1042,
            Type::Varchar(_) => 1043,
            Type::Text => 25,
            Type::Bytea => 17,
            Type::Date => 1082,
            Type::Timestamp => 1114,
            Type::Unknown => 705,
        }
    }

    /// PostgreSQL's `typlen`: the width of a fixed-width type, -1 for variable widths.
    pub fn pg_length(self) -> i16 {
        match self {
            Type::Bool => 1,
            Type::Int2 => 2,
            Type::Int4 | Type::Float4 | Type::Date => 4,
            Type::Int8 | Type::Float8 | Type::Timestamp => 8,
            _ => -1,
        }
    }

    /// PostgreSQL's `atttypmod`: declared lengths and NUMERIC precision and scale, -1 when
    /// there are none.
    pub fn pg_modifier(self) -> i32 {
        match self {
            Type::Char(n) | Type::Varchar(n) if n > 0 => n as i32 + 4,
            Type::Numeric { precision, scale } if precision > 0 => {
                ((i32::from(precision) << 16) | i32::from(scale)) + 4
            }
            _ => -1,
        }
    }

    /// The type with a PostgreSQL OID (parameter types given by a client).
    pub fn from_oid(oid: u32) -> Option<Type> {
        Some(match oid {
            16 => Type::Bool,
            21 => Type::Int2,
            23 => Type::Int4,
            20 => Type::Int8,
            700 => Type::Float4,
            701 => Type::Float8,
            1700 => Type::Numeric { precision: 0, scale: 0 },
            1042 => Type::Char(1),
            1043 => Type::Varchar(0),
            25 => Type::Text,
            17 => Type::Bytea,
            1082 => Type::Date,
            1114 => Type::Timestamp,
            0 | 705 => Type::Unknown,
            _ => return None,
        })
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Type::Int2 | Type::Int4 | Type::Int8)
    }

    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Type::Int2
                | Type::Int4
                | Type::Int8
                | Type::Float4
                | Type::Float8
                | Type::Numeric { .. }
        )
    }

    pub fn is_text(self) -> bool {
        matches!(self, Type::Char(_) | Type::Varchar(_) | Type::Text)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Type::Float4 | Type::Float8)
    }

    /// Rank in the numeric promotion order: integers < numeric < floats.
    fn numeric_rank(self) -> u8 {
        match self {
            Type::Int2 => 1,
            Type::Int4 => 2,
            Type::Int8 => 3,
            Type::Numeric { .. } => 4,
            Type::Float4 => 5,
            Type::Float8 => 6,
            _ => 0,
        }
    }

    /// The common type two operands are compared or combined in, if any.
    pub fn common(a: Type, b: Type) -> Option<Type> {
        if a == b {
            return Some(a);
        }
        match (a, b) {
            (Type::Unknown, other) | (other, Type::Unknown) => Some(other),
            (a, b) if a.is_numeric() && b.is_numeric() => {
                let wider = if a.numeric_rank() >= b.numeric_rank() { a } else { b };
                Some(match wider {
                    Type::Numeric { .. } => Type::Numeric { precision: 0, scale: 0 },
                    other => other,
                })
            }
            (a, b) if a.is_text() && b.is_text() => Some(Type::Text),
            (Type::Date, Type::Timestamp) | (Type::Timestamp, Type::Date) => Some(Type::Timestamp),
            _ => None,
        }
    }

    /// A type whose values can be stored in this column type by assignment.
    pub fn assignable_from(self, from: Type) -> bool {
        from == Type::Unknown
            || self == from
            || (self.is_numeric() && from.is_numeric())
            // Every type but bytea has a text form to store.
            || (self.is_text() && from != Type::Bytea)
            || (matches!(self, Type::Date | Type::Timestamp)
                && matches!(from, Type::Date | Type::Timestamp))
    }

    /// Bytes of a value of this type in a row, when fixed.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            Type::Bool => Some(1),
            Type::Int2 => Some(2),
            Type::Int4 | Type::Float4 | Type::Date => Some(4),
            Type::Int8 | Type::Float8 | Type::Timestamp => Some(8),
            Type::Numeric { .. } => Some(16),
            _ => None,
        }
    }
}

/// A text value: a string that holds up to 24 bytes without a heap allocation.
pub type Text = compact_str::CompactString;

/// A SQL value. Integers of every width are `Int`, both float widths `Float`; the column or
/// expression type says which.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Numeric(Decimal),
    /// `CHAR(n)` values are held without their trailing blanks. Up to 24 bytes are held
    /// inline (most names, addresses and codes), longer text on the heap.
    Text(Text),
    Bytes(Vec<u8>),
    Date(i32),
    Timestamp(i64),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The SQL truth value: `None` is unknown (NULL).
    pub fn truth(&self) -> SqlResult<Option<bool>> {
        match self {
            Value::Null => Ok(None),
            Value::Bool(value) => Ok(Some(*value)),
            other => Err(SqlError::mismatch(format!(
                "argument of a condition must be boolean, not {}",
                other.kind_name()
            ))),
        }
    }

    fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "double precision",
            Value::Numeric(_) => "numeric",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytea",
            Value::Date(_) => "date",
            Value::Timestamp(_) => "timestamp",
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(value) => Some(*value),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(value) => Some(value),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(value) => Some(*value as f64),
            Value::Float(value) => Some(*value),
            Value::Numeric(value) => Some(decimal_to_f64(*value)),
            _ => None,
        }
    }

    /// Orders two non-null values of comparable types (NULLs sort last).
    pub fn compare(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Greater,
            (_, Value::Null) => Ordering::Less,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Numeric(a), Value::Numeric(b)) => a.cmp(b),
            (Value::Int(a), Value::Numeric(b)) => Decimal::from(*a).cmp(b),
            (Value::Numeric(a), Value::Int(b)) => a.cmp(&Decimal::from(*b)),
            (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Date(a), Value::Date(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b)) => a.cmp(b),
            (Value::Date(a), Value::Timestamp(b)) => (i64::from(*a) * MICROS_PER_DAY).cmp(b),
            (Value::Timestamp(a), Value::Date(b)) => a.cmp(&(i64::from(*b) * MICROS_PER_DAY)),
            (a, b) => match (a.as_f64(), b.as_f64()) {
                // PostgreSQL orders NaN above every other float.
                (Some(x), Some(y)) => {
                    x.partial_cmp(&y).unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()))
                }
                _ => a.kind_rank().cmp(&b.kind_rank()),
            },
        }
    }

    fn kind_rank(&self) -> u8 {
        match self {
            Value::Null => 9,
            Value::Bool(_) => 0,
            Value::Int(_) | Value::Float(_) | Value::Numeric(_) => 1,
            Value::Text(_) => 2,
            Value::Bytes(_) => 3,
            Value::Date(_) | Value::Timestamp(_) => 4,
        }
    }

    /// The value as text the way PostgreSQL prints it for a column of type `ty`; `None` for
    /// NULL.
    pub fn to_text(&self, ty: Type) -> Option<String> {
        let mut out = String::new();
        self.write_text(ty, &mut out).then_some(out)
    }

    /// Appends the text form to `out`; returns false for NULL.
    pub fn write_text(&self, ty: Type, out: &mut String) -> bool {
        match self {
            Value::Null => return false,
            Value::Bool(value) => out.push(if *value { 't' } else { 'f' }),
            Value::Int(value) => {
                let _ = write!(out, "{value}");
            }
            Value::Float(value) => write_float(*value, ty == Type::Float4, out),
            Value::Numeric(value) => {
                let _ = write!(out, "{value}");
            }
            Value::Text(value) => {
                out.push_str(value);
                if let Type::Char(n) = ty {
                    let chars = value.chars().count();
                    for _ in chars..n as usize {
                        out.push(' ');
                    }
                }
            }
            Value::Bytes(bytes) => {
                out.push_str("\\x");
                for byte in bytes {
                    let _ = write!(out, "{byte:02x}");
                }
            }
            Value::Date(days) => write_date(*days, out),
            Value::Timestamp(micros) => write_timestamp(*micros, out),
        }
        true
    }
}

/// Equality and hashing for grouping and DISTINCT: NULLs are equal to each other there.
#[derive(Debug, Clone)]
pub struct GroupKey(pub Vec<Value>);

impl PartialEq for GroupKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| a.compare(b) == Ordering::Equal)
    }
}

impl Eq for GroupKey {}

impl Hash for GroupKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for value in &self.0 {
            hash_grouped(value, state);
        }
    }
}

/// One value as a [`GroupKey`] of one column sees it, without the vector: the argument of an
/// aggregate's DISTINCT.
#[derive(Debug, Clone)]
pub struct DistinctValue(pub Value);

impl PartialEq for DistinctValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.compare(&other.0) == Ordering::Equal
    }
}

impl Eq for DistinctValue {}

impl Hash for DistinctValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_grouped(&self.0, state);
    }
}

/// Hashes a value so that values equal for grouping (NULLs among them) hash equally.
fn hash_grouped<H: Hasher>(value: &Value, state: &mut H) {
    match value {
        Value::Null => 0u8.hash(state),
        Value::Bool(value) => value.hash(state),
        // Integers, numerics and floats that compare equal must hash equally.
        Value::Int(value) => (*value as f64).to_bits().hash(state),
        Value::Float(value) => {
            if *value == 0.0 { 0.0f64.to_bits() } else { value.to_bits() }.hash(state)
        }
        Value::Numeric(value) => decimal_to_f64(*value).to_bits().hash(state),
        Value::Text(value) => value.hash(state),
        Value::Bytes(value) => value.hash(state),
        Value::Date(days) => (i64::from(*days) * MICROS_PER_DAY).hash(state),
        Value::Timestamp(micros) => micros.hash(state),
    }
}

/// The hasher of grouping and DISTINCT tables: foldhash, seeded per process, a few
/// instructions per integer where the standard library's SipHash takes a hundred.
pub type GroupHasher = foldhash::fast::RandomState;

pub fn decimal_to_f64(value: Decimal) -> f64 {
    use rust_decimal::prelude::ToPrimitive;
    value.to_f64().unwrap_or(f64::NAN)
}

fn write_float(value: f64, single: bool, out: &mut String) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "Infinity" } else { "-Infinity" });
    } else if single {
        let _ = write!(out, "{}", value as f32);
    } else {
        let _ = write!(out, "{value}");
    }
}

pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = if year >= 0 { year } else { year - 399 } / 400;
    let year_of_era = year - era * 400;
    let month_index = (i64::from(month) + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn write_date(days: i32, out: &mut String) {
    let (year, month, day) = civil_from_days(i64::from(days));
    let _ = write!(out, "{year:04}-{month:02}-{day:02}");
}

fn write_timestamp(micros: i64, out: &mut String) {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let rest = micros.rem_euclid(MICROS_PER_DAY);
    write_date(days as i32, out);
    let seconds = rest / 1_000_000;
    let fraction = rest % 1_000_000;
    let _ = write!(out, " {:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

fn parse_date(text: &str) -> Option<i64> {
    let mut parts = text.trim().splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, time) = match text.find([' ', 'T']) {
        Some(at) => (&text[..at], text[at + 1..].trim()),
        None => (text, ""),
    };
    let days = parse_date(date)?;
    let mut micros = 0i64;
    if !time.is_empty() {
        let (clock, fraction) = match time.find('.') {
            Some(at) => (&time[..at], &time[at + 1..]),
            None => (time, ""),
        };
        let mut fields = clock.split(':');
        let hours: i64 = fields.next()?.parse().ok()?;
        let minutes: i64 = fields.next()?.parse().ok()?;
        let seconds: i64 = fields.next().map_or(Some(0), |s| s.parse().ok())?;
        if fields.next().is_some() || hours > 24 || minutes > 59 || seconds > 60 {
            return None;
        }
        let mut fraction_micros = 0i64;
        if !fraction.is_empty() {
            if !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let digits: String = fraction.chars().chain("000000".chars()).take(6).collect();
            fraction_micros = digits.parse().ok()?;
        }
        micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + fraction_micros;
    }
    days.checked_mul(MICROS_PER_DAY)?.checked_add(micros)
}

/// Parses text input for a value of type `ty` (a literal, a parameter in text format).
pub fn parse_text(text: &str, ty: Type) -> SqlResult<Value> {
    let invalid = || SqlError::invalid_text(&ty.name(), text);
    Ok(match ty {
        Type::Bool => match text.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "y" | "on" | "1" => Value::Bool(true),
            "f" | "false" | "no" | "n" | "off" | "0" => Value::Bool(false),
            _ => return Err(invalid()),
        },
        Type::Int2 | Type::Int4 | Type::Int8 => {
            let value: i64 = text.trim().parse().map_err(|error: std::num::ParseIntError| {
                if matches!(
                    error.kind(),
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
                ) {
                    SqlError::new(
                        "22003",
                        format!("value \"{text}\" is out of range for type {}", ty.name()),
                    )
                } else {
                    invalid()
                }
            })?;
            check_int(value, ty)?
        }
        Type::Float4 | Type::Float8 => {
            let trimmed = text.trim();
            let value = match trimmed.to_ascii_lowercase().as_str() {
                "nan" => f64::NAN,
                "infinity" | "inf" | "+infinity" => f64::INFINITY,
                "-infinity" | "-inf" => f64::NEG_INFINITY,
                _ => trimmed.parse().map_err(|_| invalid())?,
            };
            Value::Float(if ty == Type::Float4 { f64::from(value as f32) } else { value })
        }
        Type::Numeric { .. } => {
            let trimmed = text.trim();
            let value = Decimal::from_str_exact(trimmed)
                .or_else(|_| Decimal::from_scientific(trimmed))
                .map_err(|error| match error {
                    rust_decimal::Error::ExceedsMaximumPossibleValue
                    | rust_decimal::Error::LessThanMinimumPossibleValue => {
                        SqlError::out_of_range("numeric value")
                    }
                    _ => invalid(),
                })?;
            fit_numeric(value, ty)?
        }
        Type::Char(_) | Type::Varchar(_) | Type::Text | Type::Unknown => {
            fit_text(Text::from(text), ty, false)?
        }
        Type::Bytea => Value::Bytes(parse_bytea(text).ok_or_else(invalid)?),
        Type::Date => Value::Date(
            parse_date(text).and_then(|days| i32::try_from(days).ok()).ok_or_else(invalid)?,
        ),
        Type::Timestamp => Value::Timestamp(parse_timestamp(text).ok_or_else(invalid)?),
    })
}

fn parse_bytea(text: &str) -> Option<Vec<u8>> {
    if let Some(hex) = text.strip_prefix("\\x") {
        if hex.len() % 2 != 0 {
            return None;
        }
        return (0..hex.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
            .collect();
    }
    Some(text.as_bytes().to_vec())
}

/// Checks that an integer fits `ty`.
pub fn check_int(value: i64, ty: Type) -> SqlResult<Value> {
    let fits = match ty {
        Type::Int2 => i16::try_from(value).is_ok(),
        Type::Int4 => i32::try_from(value).is_ok(),
        _ => true,
    };
    if fits { Ok(Value::Int(value)) } else { Err(SqlError::out_of_range(&ty.name())) }
}

/// Rounds a decimal to the column's scale and checks its precision.
pub fn fit_numeric(value: Decimal, ty: Type) -> SqlResult<Value> {
    let Type::Numeric { precision, scale } = ty else {
        return Ok(Value::Numeric(value));
    };
    if precision == 0 {
        return Ok(Value::Numeric(value));
    }
    let mut rounded = value.round_dp_with_strategy(
        u32::from(scale),
        rust_decimal::RoundingStrategy::MidpointAwayFromZero,
    );
    rounded.rescale(u32::from(scale));
    if !integer_digits_fit(&rounded, precision - scale) || rounded.scale() != u32::from(scale) {
        return Err(SqlError::new(
            "22003",
            format!(
                "numeric field overflow: a field with precision {precision}, scale {scale} \
                 must round to an absolute value less than 10^{}",
                precision - scale
            ),
        ));
    }
    Ok(Value::Numeric(rounded))
}

/// Whether `value`'s integer part has at most `digits` digits.
fn integer_digits_fit(value: &Decimal, digits: u8) -> bool {
    // |value| < 10^digits exactly when |mantissa| < 10^(digits + scale), and a mantissa is
    // below 2^96 < 10^29: no decimal arithmetic needed.
    let exponent = u32::from(digits) + value.scale();
    exponent >= 29 || value.mantissa().unsigned_abs() < 10u128.pow(exponent)
}

/// Whether a cast of `value` to `ty` (implicit or explicit) returns it unchanged, so that a
/// caller may use it as it is (no clone, no conversion). Never true where the cast would fail;
/// `cast` itself starts with it.
#[inline]
pub fn conforms(value: &Value, ty: Type) -> bool {
    match (value, ty) {
        (Value::Null, _) | (_, Type::Unknown) => true,
        (Value::Bool(_), Type::Bool) => true,
        (Value::Int(v), Type::Int2) => i16::try_from(*v).is_ok(),
        (Value::Int(v), Type::Int4) => i32::try_from(*v).is_ok(),
        (Value::Int(_), Type::Int8) => true,
        (Value::Float(_), Type::Float8) => true,
        (Value::Numeric(d), Type::Numeric { precision, scale }) => {
            precision == 0
                || (d.scale() == u32::from(scale) && integer_digits_fit(d, precision - scale))
        }
        (Value::Text(_), Type::Text) => true,
        (Value::Text(text), Type::Varchar(n)) => n == 0 || text.len() <= n as usize,
        (Value::Text(text), Type::Char(n)) => text.len() <= n as usize && !text.ends_with(' '),
        (Value::Bytes(_), Type::Bytea) => true,
        (Value::Date(_), Type::Date) | (Value::Timestamp(_), Type::Timestamp) => true,
        _ => false,
    }
}

/// Fits text to a character type: checks (or, for an explicit cast, applies) the length limit.
pub fn fit_text(mut text: Text, ty: Type, explicit: bool) -> SqlResult<Value> {
    let limit = match ty {
        Type::Char(n) => n,
        Type::Varchar(n) => n,
        _ => 0,
    };
    if let Type::Char(_) = ty {
        let trimmed = text.trim_end_matches(' ').len();
        text.truncate(trimmed);
    }
    // A string of at most `limit` bytes has at most `limit` characters: no need to count.
    if limit > 0 && text.len() > limit as usize {
        let chars = text.chars().count();
        if chars > limit as usize {
            let keep: usize =
                text.char_indices().nth(limit as usize).map_or(text.len(), |(at, _)| at);
            // PostgreSQL accepts an over-long value whose excess is all blanks.
            if explicit || text[keep..].bytes().all(|b| b == b' ') {
                text.truncate(keep);
                if let Type::Char(_) = ty {
                    let trimmed = text.trim_end_matches(' ').len();
                    text.truncate(trimmed);
                }
            } else {
                return Err(SqlError::new(
                    "22001",
                    format!("value too long for type {}", ty.name()),
                ));
            }
        }
    }
    Ok(Value::Text(text))
}

/// Converts a value to type `to`. `explicit` is a CAST written in the query (which may
/// truncate strings); otherwise an assignment or an implicit coercion.
#[inline]
pub fn cast(value: Value, to: Type, explicit: bool) -> SqlResult<Value> {
    if conforms(&value, to) {
        return Ok(value);
    }
    convert(value, to, explicit)
}

/// [`cast`] after its fast path.
fn convert(value: Value, to: Type, explicit: bool) -> SqlResult<Value> {
    if matches!(value, Value::Null) || to == Type::Unknown {
        return Ok(value);
    }
    let mismatch = |value: &Value| {
        SqlError::new("42846", format!("cannot cast type {} to {}", value.kind_name(), to.name()))
    };
    Ok(match (value, to) {
        (Value::Text(text), to) if !to.is_text() => parse_text(&text, to)?,
        (Value::Text(text), to) => fit_text(text, to, explicit)?,
        (value, to) if to.is_text() => {
            let text = value.to_text(Type::Text).unwrap_or_default();
            fit_text(text.into(), to, explicit)?
        }
        (Value::Bool(value), Type::Bool) => Value::Bool(value),
        (Value::Bool(value), to) if to.is_integer() && explicit => Value::Int(i64::from(value)),
        (Value::Int(value), Type::Bool) if explicit => Value::Bool(value != 0),
        (Value::Int(value), to) if to.is_integer() => check_int(value, to)?,
        (Value::Int(value), Type::Float4) => Value::Float(f64::from(value as f32)),
        (Value::Int(value), Type::Float8) => Value::Float(value as f64),
        (Value::Int(value), to @ Type::Numeric { .. }) => fit_numeric(Decimal::from(value), to)?,
        (Value::Float(value), to) if to.is_integer() => {
            let rounded = value.round_ties_even();
            if !rounded.is_finite() || rounded < i64::MIN as f64 || rounded >= i64::MAX as f64 {
                return Err(SqlError::out_of_range(&to.name()));
            }
            check_int(rounded as i64, to)?
        }
        (Value::Float(value), Type::Float4) => {
            let single = value as f32;
            if single.is_infinite() && value.is_finite() {
                return Err(SqlError::out_of_range("real"));
            }
            Value::Float(f64::from(single))
        }
        (Value::Float(value), Type::Float8) => Value::Float(value),
        (Value::Float(value), to @ Type::Numeric { .. }) => {
            let decimal =
                Decimal::from_f64_retain(value).ok_or_else(|| SqlError::out_of_range("numeric"))?;
            // Floats carry about 15 significant digits; do not invent more.
            fit_numeric(decimal.round_sf(15).unwrap_or(decimal).normalize(), to)?
        }
        (Value::Numeric(value), to) if to.is_integer() => {
            use rust_decimal::prelude::ToPrimitive;
            let rounded = value
                .round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
            let integer = rounded.to_i64().ok_or_else(|| SqlError::out_of_range(&to.name()))?;
            check_int(integer, to)?
        }
        (Value::Numeric(value), Type::Float4) => {
            Value::Float(f64::from(decimal_to_f64(value) as f32))
        }
        (Value::Numeric(value), Type::Float8) => Value::Float(decimal_to_f64(value)),
        (Value::Numeric(value), to @ Type::Numeric { .. }) => fit_numeric(value, to)?,
        (Value::Bytes(bytes), Type::Bytea) => Value::Bytes(bytes),
        (Value::Date(days), Type::Date) => Value::Date(days),
        (Value::Date(days), Type::Timestamp) => Value::Timestamp(i64::from(days) * MICROS_PER_DAY),
        (Value::Timestamp(micros), Type::Timestamp) => Value::Timestamp(micros),
        (Value::Timestamp(micros), Type::Date) => {
            Value::Date(micros.div_euclid(MICROS_PER_DAY) as i32)
        }
        (value, _) => return Err(mismatch(&value)),
    })
}

/// The current time as a timestamp.
pub fn now_micros() -> i64 {
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    since.as_micros() as i64
}

/// NUMERIC in PostgreSQL's binary format (the wire protocol's): digit count, weight (in
/// base-10000 digits), sign, display scale, then the base-10000 digits.
pub fn numeric_to_binary(value: Decimal, out: &mut Vec<u8>) {
    let scale = value.scale() as usize;
    let digits = value.mantissa().unsigned_abs().to_string();
    let (int_part, frac_part) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let frac = format!("{}{}", "0".repeat(scale - frac_part.len()), frac_part);
    let int = format!("{}{}", "0".repeat((4 - int_part.len() % 4) % 4), int_part);
    let frac = format!("{}{}", frac, "0".repeat((4 - frac.len() % 4) % 4));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|chunk| chunk.iter().fold(0i16, |n, d| n * 10 + i16::from(d - b'0')))
            .collect()
    };
    let mut groups = group(&int);
    let mut weight = groups.len() as i16 - 1;
    groups.extend(group(&frac));
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let negative = value.is_sign_negative() && !groups.is_empty();
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&(if negative { 0x4000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

/// Reads [`numeric_to_binary`]'s format; `None` for NaN, digits out of range, or a value the
/// decimal type cannot hold.
pub fn numeric_from_binary(bytes: &[u8]) -> Option<Decimal> {
    let read = |at: usize| bytes.get(at..at + 2).map(|b| i16::from_be_bytes([b[0], b[1]]));
    let count = read(0)? as usize;
    let weight = i64::from(read(2)?);
    let sign = read(4)? as u16;
    let scale = read(6)? as u16 as u32;
    if sign != 0 && sign != 0x4000 {
        return None;
    }
    let mut value = Decimal::ZERO;
    for i in 0..count {
        let digit = read(8 + 2 * i)?;
        if !(0..10_000).contains(&digit) {
            return None;
        }
        let power = weight - i as i64;
        let term = if power >= 0 {
            let scaled = i128::from(digit).checked_mul(10i128.checked_pow(4 * power as u32)?)?;
            Decimal::try_from_i128_with_scale(scaled, 0).ok()?
        } else {
            Decimal::try_from_i128_with_scale(i128::from(digit), (4 * -power) as u32).ok()?
        };
        value = value.checked_add(term)?;
    }
    if sign == 0x4000 {
        value.set_sign_negative(true);
    }
    if scale > 28 {
        return None;
    }
    value.rescale(scale);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        for days in [-800_000i64, -1, 0, 1, 10_957, 19_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(2000, 1, 1), 10_957);
        let value = parse_text("2024-02-29 13:45:01.5", Type::Timestamp).unwrap();
        assert_eq!(value.to_text(Type::Timestamp).unwrap(), "2024-02-29 13:45:01.5");
        assert!(parse_text("2023-02-29", Type::Date).is_err());
    }

    #[test]
    fn numeric_fits_precision() {
        let ty = Type::Numeric { precision: 5, scale: 2 };
        let value = parse_text("123.456", ty).unwrap();
        assert_eq!(value.to_text(ty).unwrap(), "123.46");
        assert_eq!(parse_text("1234.5", ty).unwrap_err().code, "22003");
        assert_eq!(parse_text("1.5x", ty).unwrap_err().code, "22P02");
    }

    /// The mantissa test of `integer_digits_fit` agrees with comparing the truncated value
    /// against 10^digits in decimal arithmetic, at the powers of ten and around them.
    #[test]
    fn integer_digits_by_mantissa() {
        use rand::{RngExt, SeedableRng, rngs::SmallRng};
        let by_arithmetic = |value: &Decimal, digits: u8| {
            digits > 28
                || value.trunc().abs() < Decimal::from_i128_with_scale(10i128.pow(digits.into()), 0)
        };
        let mut random = SmallRng::seed_from_u64(5);
        let mut values = vec![Decimal::MAX, Decimal::MIN, Decimal::ZERO];
        for exponent in 0..29u32 {
            for scale in 0..=28u32 {
                let power = 10i128.pow(exponent);
                for mantissa in [power - 1, power, power + 1, -power, 1 - power] {
                    if let Ok(value) = Decimal::try_from_i128_with_scale(mantissa, scale) {
                        values.push(value);
                    }
                }
            }
        }
        for _ in 0..20_000 {
            let mantissa =
                random.random_range(-(1i128 << 95)..(1i128 << 95)) >> random.random_range(0..95);
            values.push(Decimal::from_i128_with_scale(mantissa, random.random_range(0..=28)));
        }
        for value in &values {
            for digits in 0..=40u8 {
                assert_eq!(
                    integer_digits_fit(value, digits),
                    by_arithmetic(value, digits),
                    "{value} in {digits} digits"
                );
            }
        }
    }

    /// `conforms` is true only where the implicit cast gives back the same value.
    #[test]
    fn conforming_values_cast_to_themselves() {
        use rand::{RngExt, SeedableRng, rngs::SmallRng};
        let types = [
            Type::Bool,
            Type::Int2,
            Type::Int4,
            Type::Int8,
            Type::Float4,
            Type::Float8,
            Type::Numeric { precision: 0, scale: 0 },
            Type::Numeric { precision: 4, scale: 4 },
            Type::Numeric { precision: 6, scale: 2 },
            Type::Numeric { precision: 28, scale: 0 },
            Type::Char(2),
            Type::Varchar(3),
            Type::Varchar(0),
            Type::Text,
            Type::Bytea,
            Type::Date,
            Type::Timestamp,
            Type::Unknown,
        ];
        let mut random = SmallRng::seed_from_u64(11);
        let (mut conforming, mut converted) = (0, 0);
        for _ in 0..20_000 {
            let value = match random.random_range(0..8) {
                0 => Value::Null,
                1 => Value::Bool(random.random_bool(0.5)),
                2 => Value::Int(match random.random_range(0..3) {
                    0 => random.random_range(-300..300),
                    1 => random.random_range(-70_000..70_000),
                    _ => random.random(),
                }),
                3 => Value::Float(random.random_range(-1e6..1e6)),
                4 => Value::Numeric(Decimal::new(
                    random.random_range(-10_000_000..10_000_000),
                    random.random_range(0..6),
                )),
                5 => Value::Text(
                    ["", "a", "ab", "ab ", "abc", "abcd", "é", "éé", "x  "]
                        [random.random_range(0..9)]
                    .into(),
                ),
                6 => Value::Date(random.random_range(-1000..1000)),
                _ => Value::Timestamp(random.random_range(-1 << 40..1 << 40)),
            };
            let ty = types[random.random_range(0..types.len())];
            // The cast without its fast path: the match on every pair of value and type.
            let slow = |explicit: bool| convert(value.clone(), ty, explicit);
            if conforms(&value, ty) {
                conforming += 1;
                for explicit in [false, true] {
                    let cast = slow(explicit);
                    assert!(
                        matches!(&cast, Ok(c) if format!("{c:?}") == format!("{value:?}")),
                        "{value:?} as {ty:?} conforms, but the cast gave {cast:?}"
                    );
                }
            } else {
                converted += 1;
            }
        }
        assert!(conforming > 2_000 && converted > 2_000, "{conforming} / {converted}");
    }

    #[test]
    fn text_limits() {
        assert_eq!(parse_text("abcd", Type::Varchar(3)).unwrap_err().code, "22001");
        assert!(
            matches!(cast(Value::Text("abcd".into()), Type::Varchar(3), true), Ok(Value::Text(t)) if t == "abc")
        );
        assert_eq!(Value::Text("ab".into()).to_text(Type::Char(4)).unwrap(), "ab  ");
    }
}
