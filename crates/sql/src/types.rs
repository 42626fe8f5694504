//! SQL types and values: comparison with three-valued logic left to the caller, casts, text
//! input and output in PostgreSQL's formats.
//!
//! Each family of types keeps its arithmetic and formats in a module of its own: [`numeric`]
//! (integers' ranges, NUMERIC's precision and binary format), [`datetime`] (dates and
//! timestamps), [`zone`] (time zones and the session's), [`interval`], [`uuid`], and [`cast`]
//! (text input of every type, and the casts between them), [`array`], [`json`] (`json` and
//! `jsonb`). A new family gets its own module beside them.

use crate::error::{SqlError, SqlResult};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

mod array;
mod cast;
mod datetime;
mod interval;
pub mod json;
mod numeric;
mod uuid;
pub mod zone;

pub use array::*;
pub use cast::*;
pub use datetime::*;
pub use interval::*;
pub use numeric::*;
pub use uuid::*;
pub use zone::Zone;

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
    /// An instant: microseconds since 1970-01-01 00:00:00 UTC, shown in the session's zone.
    Timestamptz,
    /// Microseconds since midnight.
    Time,
    Interval,
    Uuid,
    /// An untyped literal or parameter whose type the context has not decided yet.
    Unknown,
    /// A one-dimensional array (`types/array.rs`).
    Array(Elem),
    /// A relation's object id (`'t'::regclass`): an integer whose casts from and to text
    /// name the relation (bound with the catalog: `plan/bind.rs`).
    Regclass,
    /// `json`: validated text, kept as written (`types/json.rs`).
    Json,
    /// `jsonb`: a parsed tree (`types/json.rs`).
    Jsonb,
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
            Type::Timestamptz => "timestamp with time zone".into(),
            Type::Time => "time without time zone".into(),
            Type::Interval => "interval".into(),
            Type::Uuid => "uuid".into(),
            Type::Unknown => "unknown".into(),
            Type::Array(elem) => format!("{}[]", elem.ty().name()),
            Type::Regclass => "regclass".into(),
            Type::Json => "json".into(),
            Type::Jsonb => "jsonb".into(),
        }
    }

    /// PostgreSQL's internal name (`pg_type.typname`), which names a cast's result column.
    pub fn typname(self) -> &'static str {
        match self {
            Type::Bool => "bool",
            Type::Int2 => "int2",
            Type::Int4 => "int4",
            Type::Int8 => "int8",
            Type::Float4 => "float4",
            Type::Float8 => "float8",
            Type::Numeric { .. } => "numeric",
            Type::Char(_) => "bpchar",
            Type::Varchar(_) => "varchar",
            Type::Text => "text",
            Type::Bytea => "bytea",
            Type::Date => "date",
            Type::Timestamp => "timestamp",
            Type::Timestamptz => "timestamptz",
            Type::Time => "time",
            Type::Interval => "interval",
            Type::Uuid => "uuid",
            Type::Unknown => "unknown",
            Type::Array(elem) => array_typname(elem),
            Type::Regclass => "regclass",
            Type::Json => "json",
            Type::Jsonb => "jsonb",
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
            Type::Timestamptz => 1184,
            Type::Time => 1083,
            Type::Interval => 1186,
            Type::Uuid => 2950,
            Type::Unknown => 705,
            Type::Array(elem) => elem.array_oid(),
            Type::Regclass => 2205,
            Type::Json => 114,
            Type::Jsonb => 3802,
        }
    }

    /// PostgreSQL's `typlen`: the width of a fixed-width type, -1 for variable widths.
    pub fn pg_length(self) -> i16 {
        match self {
            Type::Bool => 1,
            Type::Int2 => 2,
            Type::Int4 | Type::Float4 | Type::Date => 4,
            Type::Int8 | Type::Float8 | Type::Timestamp | Type::Timestamptz | Type::Time => 8,
            Type::Interval | Type::Uuid => 16,
            Type::Regclass => 4,
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
            1184 => Type::Timestamptz,
            1083 => Type::Time,
            1186 => Type::Interval,
            2950 => Type::Uuid,
            2205 => Type::Regclass,
            114 => Type::Json,
            3802 => Type::Jsonb,
            0 | 705 => Type::Unknown,
            oid => Type::Array(Elem::from_array_oid(oid)?),
        })
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Type::Int2 | Type::Int4 | Type::Int8)
    }

    /// An integer or an object id (which compares and converts as one).
    fn is_integral(self) -> bool {
        self.is_integer() || self == Type::Regclass
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
            (a, b) if a.is_integral() && b.is_integral() => Some(Type::Int8),
            (Type::Array(a), Type::Array(b)) => {
                Some(Type::Array(Elem::of(Type::common(a.ty(), b.ty())?)?))
            }
            (a, b) if a.is_datetime() && b.is_datetime() => {
                Some(if a == Type::Timestamptz || b == Type::Timestamptz {
                    Type::Timestamptz
                } else {
                    Type::Timestamp
                })
            }
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
            || (self.is_datetime() && from.is_datetime())
            || (self == Type::Time && matches!(from, Type::Timestamp | Type::Timestamptz))
            || matches!((self, from), (Type::Array(to), Type::Array(from))
                if to.ty().assignable_from(from.ty()))
    }

    /// Dates and the timestamp types, which compare and convert among themselves.
    pub fn is_datetime(self) -> bool {
        matches!(self, Type::Date | Type::Timestamp | Type::Timestamptz)
    }

    /// Bytes of a value of this type in a row, when fixed.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            Type::Bool => Some(1),
            Type::Int2 => Some(2),
            Type::Int4 | Type::Float4 | Type::Date => Some(4),
            Type::Int8
            | Type::Float8
            | Type::Timestamp
            | Type::Timestamptz
            | Type::Time
            | Type::Regclass => Some(8),
            Type::Numeric { .. } | Type::Interval | Type::Uuid => Some(16),
            _ => None,
        }
    }
}

/// `pg_type.typname` of an array type: its element's, after an underscore.
fn array_typname(elem: Elem) -> &'static str {
    match elem {
        Elem::Bool => "_bool",
        Elem::Int2 => "_int2",
        Elem::Int4 => "_int4",
        Elem::Int8 => "_int8",
        Elem::Float4 => "_float4",
        Elem::Float8 => "_float8",
        Elem::Numeric => "_numeric",
        Elem::Varchar => "_varchar",
        Elem::Text => "_text",
        Elem::Bytea => "_bytea",
        Elem::Date => "_date",
        Elem::Timestamp => "_timestamp",
        Elem::Timestamptz => "_timestamptz",
        Elem::Time => "_time",
        Elem::Interval => "_interval",
        Elem::Uuid => "_uuid",
        Elem::Json => "_json",
        Elem::Jsonb => "_jsonb",
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
    Timestamptz(i64),
    Time(i64),
    Interval(Interval),
    Uuid([u8; 16]),
    /// A one-dimensional array's elements (`types/array.rs`).
    Array(std::sync::Arc<[Value]>),
    /// A `jsonb` value (`types/json.rs`); a `json` value is `Text`.
    Json(std::sync::Arc<json::Json>),
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

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "double precision",
            Value::Numeric(_) => "numeric",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytea",
            Value::Date(_) => "date",
            Value::Timestamp(_) => "timestamp without time zone",
            Value::Timestamptz(_) => "timestamp with time zone",
            Value::Time(_) => "time without time zone",
            Value::Interval(_) => "interval",
            Value::Uuid(_) => "uuid",
            Value::Array(_) => "array",
            Value::Json(_) => "jsonb",
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(value) => Some(*value),
            _ => None,
        }
    }

    /// The microseconds of a `timestamp` or `timestamptz`.
    pub fn as_timestamp(&self) -> Option<i64> {
        match self {
            Value::Timestamp(micros) | Value::Timestamptz(micros) => Some(*micros),
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
            (Value::Timestamptz(a), Value::Timestamptz(b)) => a.cmp(b),
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            (Value::Interval(a), Value::Interval(b)) => a.span().cmp(&b.span()),
            (Value::Uuid(a), Value::Uuid(b)) => a.cmp(b),
            (Value::Array(a), Value::Array(b)) => compare_arrays(a, b),
            (Value::Json(a), Value::Json(b)) => a.compare(b),
            (a, b) if a.kind_rank() == 4 && b.kind_rank() == 4 => {
                a.instant().unwrap_or(0).cmp(&b.instant().unwrap_or(0))
            }
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
            Value::Date(_) | Value::Timestamp(_) | Value::Timestamptz(_) => 4,
            Value::Time(_) => 5,
            Value::Interval(_) => 6,
            Value::Uuid(_) => 7,
            Value::Array(_) => 8,
            Value::Json(_) => 10,
        }
    }

    /// A date or timestamp as an instant in UTC microseconds, for comparing one kind with
    /// another: a date or a `timestamp` is read in the thread's zone, as PostgreSQL compares a
    /// `timestamp` with a `timestamptz` (dates and timestamps alone compare on the wall clock,
    /// where the zone cancels out).
    fn instant(&self) -> Option<i64> {
        let local = match self {
            Value::Timestamptz(micros) => return Some(*micros),
            Value::Timestamp(micros) => *micros,
            Value::Date(DATE_INFINITY) => TIMESTAMP_INFINITY,
            Value::Date(DATE_NEG_INFINITY) => TIMESTAMP_NEG_INFINITY,
            Value::Date(days) => i64::from(*days) * MICROS_PER_DAY,
            _ => return None,
        };
        Some(if is_infinite(local) { local } else { zone::with_current(|zone| zone.to_utc(local)) })
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
            Value::Timestamptz(micros) => write_timestamptz(*micros, out),
            Value::Time(micros) => write_clock(*micros, out),
            Value::Interval(interval) => write_interval(*interval, out),
            Value::Uuid(bytes) => write_uuid(bytes, out),
            Value::Array(items) => {
                let elem = match ty {
                    Type::Array(elem) => elem.ty(),
                    _ => Type::Text,
                };
                write_array(items, elem, out);
            }
            Value::Json(json) => out.push_str(&json.to_text()),
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
        // A date hashes as its midnight. (A grouped column holds one type, so a `timestamp`
        // never meets a `timestamptz` here: the planner casts both sides to one.)
        Value::Date(days) => (i64::from(*days) * MICROS_PER_DAY).hash(state),
        Value::Timestamp(micros) | Value::Timestamptz(micros) => micros.hash(state),
        Value::Time(micros) => micros.hash(state),
        Value::Interval(interval) => interval.span().hash(state),
        Value::Uuid(bytes) => bytes.hash(state),
        Value::Array(items) => {
            items.len().hash(state);
            for item in items.iter() {
                hash_grouped(item, state);
            }
        }
        Value::Json(json) => json.hash_into(state),
    }
}

/// The hasher of grouping and DISTINCT tables: foldhash, seeded per process, a few
/// instructions per integer where the standard library's SipHash takes a hundred.
pub type GroupHasher = foldhash::fast::RandomState;

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

#[cfg(test)]
mod tests;
