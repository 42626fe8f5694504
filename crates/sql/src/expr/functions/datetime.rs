//! Date and time functions: the statement's clock (`Context::now`, the transaction's start),
//! fields of dates and timestamps (`EXTRACT`, `date_part`), and truncation (`date_trunc`).

use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::types::{MICROS_PER_DAY, Type, Value, civil_from_days, days_from_civil, decimal_to_f64};
use rust_decimal::Decimal;

pub(super) fn now(_: &[BExpr], _: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Timestamp(cx.now))
}

/// The wall-clock time now, which changes within a statement (PostgreSQL's
/// `clock_timestamp()`; `now()` is the transaction's start).
pub(super) fn clock_timestamp(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    _: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Timestamp(crate::types::now_micros()))
}

pub(super) fn current_date(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    cx: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Date(cx.now.div_euclid(MICROS_PER_DAY) as i32))
}

/// A date or timestamp as days since 1970-01-01 and microseconds into the day; `None` for a
/// date's time of day.
fn split(value: &Value) -> Option<(i64, Option<i64>)> {
    match value {
        Value::Date(days) => Some((i64::from(*days), None)),
        Value::Timestamp(micros) => {
            Some((micros.div_euclid(MICROS_PER_DAY), Some(micros.rem_euclid(MICROS_PER_DAY))))
        }
        _ => None,
    }
}

/// The day of the week, Monday 1 to Sunday 7 (1970-01-01 was a Thursday).
fn iso_weekday(days: i64) -> i64 {
    (days + 3).rem_euclid(7) + 1
}

/// The ISO year and week of a day: the week is the one of its Thursday.
fn iso_week(days: i64) -> (i64, i64) {
    let thursday = days - (iso_weekday(days) - 4);
    let (year, _, _) = civil_from_days(thursday);
    (year, (thursday - days_from_civil(year, 1, 1)) / 7 + 1)
}

/// `field` of a date or timestamp, as `EXTRACT` answers it: a NUMERIC, with six decimals for
/// seconds and the epoch of a timestamp, three for milliseconds.
fn field_of(field: &str, value: &Value) -> SqlResult<Decimal> {
    let type_name = match value {
        Value::Date(_) => "date",
        _ => "timestamp without time zone",
    };
    let (days, time) = split(value).ok_or_else(|| {
        SqlError::undefined_function(format!("EXTRACT of {} is not supported", value.kind_name()))
    })?;
    let (year, month, day) = civil_from_days(days);
    let whole = |n: i64| Ok(Decimal::from(n));
    let clock = |micros: fn(i64) -> Decimal| match time {
        Some(time) => Ok(micros(time)),
        None => Err(SqlError::new(
            "0A000",
            format!("unit \"{field}\" not supported for type {type_name}"),
        )),
    };
    match field {
        "year" | "years" => whole(year),
        "month" | "months" | "mon" | "mons" => whole(i64::from(month)),
        "day" | "days" => whole(i64::from(day)),
        "hour" | "hours" => clock(|t| Decimal::from(t / 3_600_000_000)),
        "minute" | "minutes" | "min" | "mins" => clock(|t| Decimal::from(t / 60_000_000 % 60)),
        "second" | "seconds" | "sec" | "secs" => clock(|t| Decimal::new(t % 60_000_000, 6)),
        "millisecond" | "milliseconds" | "ms" => clock(|t| Decimal::new(t % 60_000_000, 3)),
        "microsecond" | "microseconds" | "us" => clock(|t| Decimal::from(t % 60_000_000)),
        "epoch" => Ok(match time {
            Some(time) => Decimal::new(days * MICROS_PER_DAY + time, 6),
            None => Decimal::from(days * 86_400),
        }),
        "dow" => whole(iso_weekday(days) % 7),
        "isodow" => whole(iso_weekday(days)),
        "doy" => whole(days - days_from_civil(year, 1, 1) + 1),
        "quarter" => whole(i64::from(month - 1) / 3 + 1),
        "week" => whole(iso_week(days).1),
        "isoyear" => whole(iso_week(days).0),
        "decade" => whole(year.div_euclid(10)),
        "century" => whole(if year > 0 { (year + 99) / 100 } else { -((99 - year) / 100) }),
        "millennium" => whole(if year > 0 { (year + 999) / 1000 } else { -((999 - year) / 1000) }),
        other => Err(SqlError::new(
            "22023",
            format!("unit \"{other}\" not recognized for type {type_name}"),
        )),
    }
}

/// `EXTRACT(field FROM source)`: a NUMERIC.
pub(super) fn extract(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let field = values[0].to_text(Type::Text).unwrap_or_default().to_lowercase();
    Ok(Value::Numeric(field_of(&field, &values[1])?))
}

/// `date_part('field', source)`: the same, in double precision.
pub(super) fn date_part(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let field = values[0].to_text(Type::Text).unwrap_or_default().to_lowercase();
    Ok(Value::Float(decimal_to_f64(field_of(&field, &values[1])?)))
}

/// `date_trunc('field', timestamp)`: the timestamp with everything below `field` zeroed (a
/// week starts on Monday).
pub(super) fn date_trunc(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let field = values[0].to_text(Type::Text).unwrap_or_default().to_lowercase();
    let (days, time) = split(&values[1]).ok_or_else(|| {
        SqlError::undefined_function(format!(
            "date_trunc of {} is not supported",
            values[1].kind_name()
        ))
    })?;
    let time = time.unwrap_or(0);
    let (year, month, _) = civil_from_days(days);
    let at = |days: i64, time: i64| Ok(Value::Timestamp(days * MICROS_PER_DAY + time));
    let first_of = |year: i64, month: u32| days_from_civil(year, month, 1);
    match field.as_str() {
        "microsecond" | "microseconds" => at(days, time),
        "millisecond" | "milliseconds" => at(days, time - time % 1_000),
        "second" | "seconds" => at(days, time - time % 1_000_000),
        "minute" | "minutes" => at(days, time - time % 60_000_000),
        "hour" | "hours" => at(days, time - time % 3_600_000_000),
        "day" | "days" => at(days, 0),
        "week" | "weeks" => at(days - (iso_weekday(days) - 1), 0),
        "month" | "months" => at(first_of(year, month), 0),
        "quarter" => at(first_of(year, (month - 1) / 3 * 3 + 1), 0),
        "year" | "years" => at(first_of(year, 1), 0),
        "decade" => at(first_of(year - year.rem_euclid(10), 1), 0),
        "century" => at(first_of((year - 1).div_euclid(100) * 100 + 1, 1), 0),
        "millennium" => at(first_of((year - 1).div_euclid(1000) * 1000 + 1, 1), 0),
        other => Err(SqlError::new(
            "22023",
            format!("unit \"{other}\" not recognized for type timestamp without time zone"),
        )),
    }
}
