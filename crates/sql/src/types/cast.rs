//! Text input of every type, and casts between types: what an implicit cast (an assignment,
//! a comparison) and an explicit one (`CAST`, `::`) accept.

use super::*;

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
            parse_date(text)
                .and_then(|days| i32::try_from(days).ok())
                .ok_or_else(|| datetime_error(text, ty))?,
        ),
        Type::Timestamp => {
            Value::Timestamp(parse_timestamp(text).ok_or_else(|| datetime_error(text, ty))?)
        }
        Type::Timestamptz => {
            Value::Timestamptz(parse_timestamptz(text).ok_or_else(|| datetime_error(text, ty))?)
        }
        Type::Time => Value::Time(parse_time(text).ok_or_else(|| datetime_error(text, ty))?),
        Type::Interval => {
            Value::Interval(parse_interval(text, None).ok_or_else(|| datetime_error(text, ty))?)
        }
        Type::Uuid => Value::Uuid(parse_uuid(text).ok_or_else(invalid)?),
        Type::Array(elem) => parse_array(text, elem)?,
        Type::Json => {
            json::check_json(text)?;
            Value::Text(Text::from(text))
        }
        Type::Jsonb => json::jsonb(json::parse_jsonb(text)?),
        // A relation's name is read with the catalog (`plan/bind.rs`); here only its id.
        Type::Regclass => Value::Int(text.trim().parse().map_err(|_| invalid())?),
    })
}

/// PostgreSQL's error for date/time input: 22008 for a date or time that reads but is out of
/// range (a month 13, `25:00`), 22007 for text that is not one at all.
fn datetime_error(text: &str, ty: Type) -> SqlError {
    let name = match ty {
        Type::Timestamptz => "timestamp with time zone".to_string(),
        other => other.name(),
    };
    // Text made only of numbers and date/time punctuation reads as fields, so what failed was
    // a field's range (`2024-02-30`, `25:00`).
    let numeric_fields = text.trim().bytes().any(|b| b.is_ascii_digit())
        && text.trim().bytes().all(|b| b.is_ascii_digit() || b" -:./+".contains(&b))
        && (text.contains('-') || text.contains(':') || text.contains('/'));
    if numeric_fields && ty != Type::Interval {
        return SqlError::new("22008", format!("date/time field value out of range: \"{text}\""));
    }
    SqlError::new("22007", format!("invalid input syntax for type {name}: \"{text}\""))
}

pub(super) fn parse_bytea(text: &str) -> Option<Vec<u8>> {
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
        (Value::Int(_), Type::Int8 | Type::Regclass) => true,
        (Value::Float(_), Type::Float8) => true,
        // A `real` is held as the double of the same value.
        (Value::Float(v), Type::Float4) => v.is_nan() || f64::from(*v as f32) == *v,
        (Value::Numeric(d), Type::Numeric { precision, scale }) => {
            precision == 0
                || (d.scale() == u32::from(scale) && integer_digits_fit(d, precision - scale))
        }
        (Value::Text(_), Type::Text) => true,
        (Value::Text(text), Type::Varchar(n)) => n == 0 || text.len() <= n as usize,
        (Value::Text(text), Type::Char(n)) => text.len() <= n as usize && !text.ends_with(' '),
        (Value::Bytes(_), Type::Bytea) => true,
        (Value::Date(_), Type::Date)
        | (Value::Timestamp(_), Type::Timestamp)
        | (Value::Timestamptz(_), Type::Timestamptz)
        | (Value::Time(_), Type::Time)
        | (Value::Interval(_), Type::Interval)
        | (Value::Uuid(_), Type::Uuid) => true,
        // Elements are checked by the cast that made the array.
        (Value::Array(_), Type::Array(_)) => true,
        (Value::Json(_), Type::Jsonb) => true,
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
pub(super) fn convert(value: Value, to: Type, explicit: bool) -> SqlResult<Value> {
    if matches!(value, Value::Null) || to == Type::Unknown {
        return Ok(value);
    }
    let mismatch = |value: &Value| {
        SqlError::new("42846", format!("cannot cast type {} to {}", value.kind_name(), to.name()))
    };
    Ok(match (value, to) {
        (Value::Json(json), to) => json_to(&json, to, &mismatch)?,
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
        (Value::Int(value), Type::Regclass) => Value::Int(value),
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
        (Value::Timestamp(micros), Type::Timestamp) => Value::Timestamp(micros),
        (Value::Timestamptz(micros), Type::Timestamptz) => Value::Timestamptz(micros),
        (Value::Time(micros), Type::Time) => Value::Time(micros),
        (Value::Interval(interval), Type::Interval) => Value::Interval(interval),
        (Value::Uuid(bytes), Type::Uuid) => Value::Uuid(bytes),
        (Value::Array(items), Type::Array(elem)) => cast_elements(&items, elem, explicit)?,
        (Value::Date(days), Type::Timestamp) => Value::Timestamp(date_to_local(days)),
        (Value::Date(days), Type::Timestamptz) => {
            Value::Timestamptz(local_to_instant(date_to_local(days)))
        }
        (Value::Timestamp(micros), Type::Timestamptz) => {
            Value::Timestamptz(local_to_instant(micros))
        }
        (Value::Timestamptz(micros), Type::Timestamp) => Value::Timestamp(instant_to_local(micros)),
        (Value::Timestamp(micros), Type::Date) => Value::Date(local_to_date(micros)?),
        (Value::Timestamptz(micros), Type::Date) => {
            Value::Date(local_to_date(instant_to_local(micros))?)
        }
        (Value::Timestamp(micros), Type::Time) if !is_infinite(micros) => {
            Value::Time(micros.rem_euclid(MICROS_PER_DAY))
        }
        (Value::Timestamptz(micros), Type::Time) if !is_infinite(micros) => {
            Value::Time(instant_to_local(micros).rem_euclid(MICROS_PER_DAY))
        }
        (Value::Time(micros), Type::Interval) => Value::Interval(Interval::new(0, 0, micros)),
        (Value::Interval(interval), Type::Time) => {
            Value::Time(interval.micros.rem_euclid(MICROS_PER_DAY))
        }
        (value, _) => return Err(mismatch(&value)),
    })
}

/// A jsonb value cast to `to`: to text and json as printed, to a number or a boolean when it
/// is one (22023 otherwise, as PostgreSQL's casts from jsonb).
fn json_to(
    value: &json::Json,
    to: Type,
    mismatch: &dyn Fn(&Value) -> SqlError,
) -> SqlResult<Value> {
    use json::Json;
    let wrong = |name: &str| {
        SqlError::new("22023", format!("cannot cast jsonb {} to type {name}", value.type_name()))
    };
    Ok(match to {
        Type::Jsonb => Value::Json(std::sync::Arc::new(value.clone())),
        Type::Json => Value::Text(value.to_text().into()),
        to if to.is_text() => fit_text(value.to_text().into(), to, true)?,
        Type::Bool => match value {
            Json::Bool(b) => Value::Bool(*b),
            _ => return Err(wrong("boolean")),
        },
        to if to.is_numeric() => match value {
            Json::Number(number) => {
                let text = number.as_str();
                match to {
                    Type::Numeric { .. } if Decimal::from_str_exact(text).is_err() => {
                        return Err(SqlError::out_of_range("numeric"));
                    }
                    // Integers round as PostgreSQL's numeric-to-integer cast does.
                    to if to.is_integer() => {
                        let decimal = Decimal::from_str_exact(text)
                            .map_err(|_| SqlError::out_of_range(&to.name()))?;
                        convert(Value::Numeric(decimal), to, true)?
                    }
                    to => parse_text(text, to)?,
                }
            }
            _ => return Err(wrong(&to.name())),
        },
        _ => return Err(mismatch(&Value::Json(std::sync::Arc::new(value.clone())))),
    })
}

/// A date's midnight on the wall clock (infinities kept).
pub fn date_to_local(days: i32) -> i64 {
    match days {
        DATE_INFINITY => TIMESTAMP_INFINITY,
        DATE_NEG_INFINITY => TIMESTAMP_NEG_INFINITY,
        days => i64::from(days) * MICROS_PER_DAY,
    }
}

/// A wall-clock time read in the thread's zone (infinities kept).
pub fn local_to_instant(local: i64) -> i64 {
    if is_infinite(local) { local } else { zone::with_current(|zone| zone.to_utc(local)) }
}

/// An instant on the thread's zone's wall clock (infinities kept).
pub fn instant_to_local(micros: i64) -> i64 {
    if is_infinite(micros) { micros } else { zone::with_current(|zone| zone.to_local(micros)) }
}

/// The date of a wall-clock time (infinities kept).
pub fn local_to_date(local: i64) -> SqlResult<i32> {
    match local {
        TIMESTAMP_INFINITY => Ok(DATE_INFINITY),
        TIMESTAMP_NEG_INFINITY => Ok(DATE_NEG_INFINITY),
        local => i32::try_from(local.div_euclid(MICROS_PER_DAY))
            .map_err(|_| SqlError::new("22008", "date out of range")),
    }
}
