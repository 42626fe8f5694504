//! Date and time functions: the statement's clock (`Context::now`, the transaction's start),
//! fields of dates, times, timestamps and intervals (`EXTRACT`, `date_part`), truncation
//! (`date_trunc`), zones (`AT TIME ZONE`), `age`, the `make_*` constructors and the
//! interval justifications.

use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::types::{
    DATE_INFINITY, DATE_NEG_INFINITY, Interval, MICROS_PER_DAY, MICROS_PER_HOUR, Type, Value, Zone,
    civil_from_days, date_to_local, days_from_civil, days_in_month, decimal_to_f64,
    instant_to_local, is_infinite, local_to_instant, zone,
};
use rust_decimal::Decimal;

pub(super) fn now(_: &[BExpr], _: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Timestamptz(cx.now))
}

/// The transaction's start on the session zone's wall clock (`localtimestamp`).
pub(super) fn local_timestamp(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    cx: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Timestamp(instant_to_local(cx.now)))
}

/// The transaction's start as a time of day in the session's zone (`localtime`).
pub(super) fn local_time(_: &[BExpr], _: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Time(instant_to_local(cx.now).rem_euclid(MICROS_PER_DAY)))
}

/// The wall-clock time now, which changes within a statement (PostgreSQL's
/// `clock_timestamp()`; `now()` is the transaction's start).
pub(super) fn clock_timestamp(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    _: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Timestamptz(crate::types::now_micros()))
}

pub(super) fn current_date(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    cx: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Date(instant_to_local(cx.now).div_euclid(MICROS_PER_DAY) as i32))
}

/// A date or timestamp as days since 1970-01-01 and microseconds into the day; `None` for a
/// date's time of day.
fn split(value: &Value) -> Option<(i64, Option<i64>)> {
    match value {
        Value::Date(days) => Some((i64::from(*days), None)),
        Value::Timestamp(micros) => {
            Some((micros.div_euclid(MICROS_PER_DAY), Some(micros.rem_euclid(MICROS_PER_DAY))))
        }
        Value::Timestamptz(micros) => split(&Value::Timestamp(instant_to_local(*micros))),
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
    match value {
        Value::Interval(interval) => return interval_field(field, *interval),
        Value::Time(micros) => return time_field(field, *micros),
        Value::Timestamptz(micros) => match field {
            "epoch" => return Ok(Decimal::new(*micros, 6)),
            "timezone" | "timezone_hour" | "timezone_minute" => {
                let offset = i64::from(zone::with_current(|zone| zone.offset_at(*micros)));
                return Ok(Decimal::from(match field {
                    "timezone" => offset,
                    "timezone_hour" => offset / 3600,
                    _ => offset / 60 % 60,
                }));
            }
            _ => {}
        },
        _ => {}
    }
    let type_name = value.kind_name();
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

/// Whether a date or timestamp is `infinity` (`Some(true)`) or `-infinity`.
fn infinite(value: &Value) -> Option<bool> {
    match value {
        Value::Timestamp(m) | Value::Timestamptz(m) if is_infinite(*m) => Some(*m > 0),
        Value::Date(days @ (DATE_INFINITY | DATE_NEG_INFINITY)) => Some(*days > 0),
        _ => None,
    }
}

/// A field of an infinite date or timestamp: the fields that grow with time (years, the
/// epoch) are infinite with it (`Some(positive)`), the others have no value (`None`).
fn infinite_field(field: &str) -> Option<()> {
    matches!(
        field,
        "year" | "years" | "isoyear" | "decade" | "century" | "millennium" | "julian" | "epoch"
    )
    .then_some(())
}

/// `field` of a time of day.
fn time_field(field: &str, t: i64) -> SqlResult<Decimal> {
    Ok(match field {
        "hour" | "hours" => Decimal::from(t / MICROS_PER_HOUR),
        "minute" | "minutes" | "min" | "mins" => Decimal::from(t / 60_000_000 % 60),
        "second" | "seconds" | "sec" | "secs" => Decimal::new(t % 60_000_000, 6),
        "millisecond" | "milliseconds" | "ms" => Decimal::new(t % 60_000_000, 3),
        "microsecond" | "microseconds" | "us" => Decimal::from(t % 60_000_000),
        "epoch" => Decimal::new(t, 6),
        other => {
            return Err(SqlError::new(
                "22023",
                format!("unit \"{other}\" not supported for type time without time zone"),
            ));
        }
    })
}

/// `field` of an interval: each from its own part (a month is not 30 days here), but the
/// epoch counts a year as 365.25 days and a month as 30.
fn interval_field(field: &str, i: Interval) -> SqlResult<Decimal> {
    let whole = |n: i64| Ok(Decimal::from(n));
    let years = i64::from(i.months / 12);
    match field {
        "year" | "years" => whole(years),
        "month" | "months" | "mon" | "mons" => whole(i64::from(i.months % 12)),
        "day" | "days" => whole(i64::from(i.days)),
        "hour" | "hours" => whole(i.micros / MICROS_PER_HOUR),
        "minute" | "minutes" | "min" | "mins" => whole(i.micros / 60_000_000 % 60),
        "second" | "seconds" | "sec" | "secs" => Ok(Decimal::new(i.micros % 60_000_000, 6)),
        "millisecond" | "milliseconds" | "ms" => Ok(Decimal::new(i.micros % 60_000_000, 3)),
        "microsecond" | "microseconds" | "us" => whole(i.micros % 60_000_000),
        "quarter" => whole(i64::from(i.months % 12) / 3 + 1),
        "decade" => whole(years / 10),
        "century" => whole(years / 100),
        "millennium" => whole(years / 1000),
        "epoch" => {
            let seconds = Decimal::from(years) * Decimal::new(3_155_760_000, 2)
                + Decimal::from(i64::from(i.months % 12) * 30 * 86_400)
                + Decimal::from(i64::from(i.days) * 86_400)
                + Decimal::new(i.micros, 6);
            let mut seconds = seconds;
            seconds.rescale(6);
            Ok(seconds)
        }
        other => {
            Err(SqlError::new("22023", format!("unit \"{other}\" not supported for type interval")))
        }
    }
}

/// `EXTRACT(field FROM source)`: a NUMERIC.
pub(super) fn extract(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let field = values[0].to_text(Type::Text).unwrap_or_default().to_lowercase();
    if infinite(&values[1]).is_some() {
        // PostgreSQL answers an infinite NUMERIC, which Engram's NUMERIC does not hold.
        return match infinite_field(&field) {
            Some(()) => Err(SqlError::new(
                "0A000",
                format!("EXTRACT({field}) of an infinite value (an infinite numeric)"),
            )),
            None => Ok(Value::Null),
        };
    }
    Ok(Value::Numeric(field_of(&field, &values[1])?))
}

/// `date_part('field', source)`: the same, in double precision.
pub(super) fn date_part(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let field = values[0].to_text(Type::Text).unwrap_or_default().to_lowercase();
    if let Some(positive) = infinite(&values[1]) {
        let infinity = if positive { f64::INFINITY } else { f64::NEG_INFINITY };
        return Ok(infinite_field(&field).map_or(Value::Null, |()| Value::Float(infinity)));
    }
    Ok(Value::Float(decimal_to_f64(field_of(&field, &values[1])?)))
}

/// `date_trunc('field', timestamp)`: the timestamp with everything below `field` zeroed (a
/// week starts on Monday).
pub(super) fn date_trunc(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    truncate(values, ty)
}

fn truncate(values: &[Value], ty: Type) -> SqlResult<Value> {
    let field = values[0].to_text(Type::Text).unwrap_or_default().to_lowercase();
    match (&values[1], ty) {
        (Value::Interval(interval), _) => return trunc_interval(&field, *interval),
        (Value::Timestamp(m) | Value::Timestamptz(m), _) if is_infinite(*m) => {
            return Ok(values[1].clone());
        }
        (Value::Date(days), Type::Timestamptz) => {
            let instant = local_to_instant(date_to_local(*days));
            let mut values = values.to_vec();
            values[1] = Value::Timestamptz(instant);
            return truncate(&values, ty);
        }
        (Value::Timestamptz(micros), _) => {
            // On the wall clock of the zone given, else the session's.
            let zone = values.get(2).map(zone_argument).transpose()?;
            let local = match &zone {
                Some(zone) => zone.to_local(*micros),
                None => instant_to_local(*micros),
            };
            let Value::Timestamp(truncated) =
                truncate(&[values[0].clone(), Value::Timestamp(local)], Type::Timestamp)?
            else {
                unreachable!("date_trunc of a timestamp is a timestamp")
            };
            return Ok(Value::Timestamptz(match &zone {
                Some(zone) => zone.to_utc(truncated),
                None => local_to_instant(truncated),
            }));
        }
        _ => {}
    }
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

/// `date_trunc` of an interval: the fields below `field` zeroed.
fn trunc_interval(field: &str, i: Interval) -> SqlResult<Value> {
    let micros = |unit: i64| Interval::new(i.months, i.days, i.micros - i.micros % unit);
    let years = |n: i32| Interval::new(i.months - i.months % (12 * n), 0, 0);
    Ok(Value::Interval(match field {
        "microsecond" | "microseconds" => i,
        "millisecond" | "milliseconds" => micros(1_000),
        "second" | "seconds" => micros(1_000_000),
        "minute" | "minutes" => micros(60_000_000),
        "hour" | "hours" => micros(MICROS_PER_HOUR),
        "day" | "days" => Interval::new(i.months, i.days, 0),
        "month" | "months" => Interval::new(i.months, 0, 0),
        "quarter" => Interval::new(i.months - i.months % 3, 0, 0),
        "year" | "years" => years(1),
        "decade" => years(10),
        "century" => years(100),
        "millennium" => years(1000),
        other => {
            return Err(SqlError::new(
                "22023",
                format!("unit \"{other}\" not supported for type interval"),
            ));
        }
    }))
}

/// The zone an `AT TIME ZONE` names: a zone's name, or an interval (its hours east).
fn zone_argument(value: &Value) -> SqlResult<Zone> {
    match value {
        Value::Interval(interval) => {
            let seconds = i32::try_from(interval.micros / 1_000_000)
                .ok()
                .filter(|_| interval.months == 0 && interval.days == 0);
            seconds.and_then(|s| Zone::fixed(s, "interval")).ok_or_else(|| {
                SqlError::new("22023", "interval time zone must not include months or days")
            })
        }
        other => {
            let name = other.to_text(Type::Text).unwrap_or_default();
            Zone::named(&name).ok_or_else(|| {
                SqlError::new("22023", format!("time zone \"{name}\" not recognized"))
            })
        }
    }
}

/// `timestamp AT TIME ZONE zone` (`timezone(zone, timestamp)`): a `timestamp` read as the
/// wall clock in `zone` gives an instant; an instant gives the wall clock in `zone`.
pub(super) fn timezone(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let zone = zone_argument(&values[0])?;
    Ok(match &values[1] {
        Value::Timestamp(m) if is_infinite(*m) => Value::Timestamptz(*m),
        Value::Timestamptz(m) if is_infinite(*m) => Value::Timestamp(*m),
        Value::Timestamp(local) => Value::Timestamptz(zone.to_utc(*local)),
        Value::Timestamptz(instant) => Value::Timestamp(zone.to_local(*instant)),
        Value::Date(days) => {
            Value::Timestamp(zone.to_local(local_to_instant(date_to_local(*days))))
        }
        other => {
            return Err(SqlError::undefined_function(format!(
                "function timezone(text, {}) does not exist",
                other.kind_name()
            )));
        }
    })
}

/// The wall-clock fields of a date or timestamp argument, and whether it was an instant.
fn wall_clock(value: &Value) -> SqlResult<i64> {
    Ok(match value {
        Value::Date(days) => date_to_local(*days),
        Value::Timestamp(micros) => *micros,
        Value::Timestamptz(micros) => instant_to_local(*micros),
        other => {
            return Err(SqlError::undefined_function(format!(
                "function age({}) does not exist",
                other.kind_name()
            )));
        }
    })
}

/// `age(a, b)`: `a - b` in years, months and days on the calendar, then time (PostgreSQL's
/// borrowing from the month before `a`); `age(a)` is from today's midnight.
pub(super) fn age(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let (a, b) = match values {
        [b] => {
            (instant_to_local(cx.now).div_euclid(MICROS_PER_DAY) * MICROS_PER_DAY, wall_clock(b)?)
        }
        [a, b, ..] => (wall_clock(a)?, wall_clock(b)?),
        [] => unreachable!("arity checked"),
    };
    if is_infinite(a) || is_infinite(b) {
        return Err(SqlError::new("22008", "interval out of range"));
    }
    let fields = |local: i64| {
        let (y, m, d) = civil_from_days(local.div_euclid(MICROS_PER_DAY));
        (y, i64::from(m), i64::from(d), local.rem_euclid(MICROS_PER_DAY))
    };
    let (negative, (y1, m1, d1, t1), (y2, m2, d2, t2)) =
        if a >= b { (false, fields(a), fields(b)) } else { (true, fields(b), fields(a)) };
    let (mut years, mut months, mut days, mut micros) = (y1 - y2, m1 - m2, d1 - d2, t1 - t2);
    if micros < 0 {
        micros += MICROS_PER_DAY;
        days -= 1;
    }
    if days < 0 {
        // Borrow the length of the earlier date's month, as PostgreSQL does.
        days += i64::from(days_in_month(y2, m2 as u32));
        months -= 1;
    }
    if months < 0 {
        months += 12;
        years -= 1;
    }
    let mut interval =
        Interval::new((years * 12 + months).try_into().unwrap_or(i32::MAX), days as i32, micros);
    if negative {
        interval = interval.checked_neg()?;
    }
    Ok(Value::Interval(interval))
}

fn int_arg(value: &Value) -> SqlResult<i64> {
    match value {
        Value::Int(v) => Ok(*v),
        other => Err(SqlError::mismatch(format!("expected an integer, not {}", other.kind_name()))),
    }
}

fn float_arg(value: &Value) -> SqlResult<f64> {
    match value {
        Value::Int(v) => Ok(*v as f64),
        Value::Float(v) => Ok(*v),
        Value::Numeric(v) => Ok(decimal_to_f64(*v)),
        other => Err(SqlError::mismatch(format!("expected a number, not {}", other.kind_name()))),
    }
}

fn date_of(year: i64, month: i64, day: i64) -> SqlResult<i64> {
    let invalid = || {
        SqlError::new("22008", format!("date field value out of range: {year}-{month:02}-{day:02}"))
    };
    if year == 0 || !(1..=12).contains(&month) || day < 1 {
        return Err(invalid());
    }
    // Negative years are BC: -1 is 1 BC, year 0 of the proleptic calendar.
    let year = if year < 0 { year + 1 } else { year };
    if day > i64::from(days_in_month(year, month as u32)) {
        return Err(invalid());
    }
    Ok(days_from_civil(year, month as u32, day as u32))
}

fn time_of(hour: i64, minute: i64, second: f64) -> SqlResult<i64> {
    let micros = (second * 1e6).round() as i64;
    if !(0..=24).contains(&hour) || !(0..60).contains(&minute) || !(0.0..=60.0).contains(&second) {
        return Err(SqlError::new(
            "22008",
            format!("time field value out of range: {hour}:{minute:02}:{second:02}"),
        ));
    }
    Ok(hour * MICROS_PER_HOUR + minute * 60_000_000 + micros)
}

pub(super) fn make_date(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let days = date_of(int_arg(&values[0])?, int_arg(&values[1])?, int_arg(&values[2])?)?;
    Ok(Value::Date(days as i32))
}

pub(super) fn make_time(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Time(time_of(int_arg(&values[0])?, int_arg(&values[1])?, float_arg(&values[2])?)?))
}

pub(super) fn make_timestamp(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    let days = date_of(int_arg(&values[0])?, int_arg(&values[1])?, int_arg(&values[2])?)?;
    let time = time_of(int_arg(&values[3])?, int_arg(&values[4])?, float_arg(&values[5])?)?;
    let local = days * MICROS_PER_DAY + time;
    Ok(match ty {
        Type::Timestamptz => Value::Timestamptz(match values.get(6) {
            Some(zone) => zone_argument(zone)?.to_utc(local),
            None => local_to_instant(local),
        }),
        _ => Value::Timestamp(local),
    })
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`, each defaulting to 0.
pub(super) fn make_interval(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let int = |at: usize| values.get(at).map_or(Ok(0), int_arg);
    let (years, months, weeks, days) = (int(0)?, int(1)?, int(2)?, int(3)?);
    let months = years.checked_mul(12).and_then(|m| m.checked_add(months));
    let days = weeks.checked_mul(7).and_then(|d| d.checked_add(days));
    let seconds = values.get(6).map_or(Ok(0.0), float_arg)?;
    let micros = (int(4)? as f64 * 3.6e9 + int(5)? as f64 * 6e7 + seconds * 1e6).round();
    let overflow = || SqlError::new("22008", "interval out of range");
    let months = months.and_then(|m| i32::try_from(m).ok()).ok_or_else(overflow)?;
    let days = days.and_then(|d| i32::try_from(d).ok()).ok_or_else(overflow)?;
    if !micros.is_finite() || micros.abs() >= 9.2e18 {
        return Err(overflow());
    }
    Ok(Value::Interval(Interval::new(months, days, micros as i64)))
}

/// `to_timestamp(seconds since the epoch)`.
pub(super) fn to_timestamp(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let seconds = float_arg(&values[0])?;
    if seconds.is_infinite() {
        return Ok(Value::Timestamptz(if seconds > 0.0 { i64::MAX } else { i64::MIN }));
    }
    let micros = (seconds * 1e6).round();
    if !micros.is_finite() || micros.abs() >= 9.2e18 {
        return Err(SqlError::new("22008", "timestamp out of range"));
    }
    Ok(Value::Timestamptz(micros as i64))
}

fn interval_arg(value: &Value) -> SqlResult<Interval> {
    match value {
        Value::Interval(interval) => Ok(*interval),
        other => {
            Err(SqlError::mismatch(format!("expected an interval, not {}", other.kind_name())))
        }
    }
}

pub(super) fn justify_hours(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Interval(interval_arg(&values[0])?.justify_hours()?))
}

pub(super) fn justify_days(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Interval(interval_arg(&values[0])?.justify_days()?))
}

pub(super) fn justify_interval(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Interval(interval_arg(&values[0])?.justify()?))
}

/// `isfinite(date | timestamp | timestamptz | interval)`.
pub(super) fn isfinite(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(match &values[0] {
        Value::Date(days) => !matches!(*days, DATE_INFINITY | DATE_NEG_INFINITY),
        Value::Timestamp(micros) | Value::Timestamptz(micros) => !is_infinite(*micros),
        _ => true,
    }))
}

pub(super) fn gen_random_uuid(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    _: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Uuid(crate::types::random_uuid()))
}

/// `date_bin(stride, source, origin)`: the start of the stride-long bin, counted from
/// `origin`, that holds `source`.
pub(super) fn date_bin(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let stride = interval_arg(&values[0])?;
    if stride.months != 0 {
        return Err(SqlError::new(
            "0A000",
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    let stride = i64::from(stride.days)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|days| days.checked_add(stride.micros))
        .filter(|stride| *stride > 0)
        .ok_or_else(|| SqlError::new("22023", "stride must be greater than zero"))?;
    let instant = |value: &Value| match value {
        Value::Timestamp(m) | Value::Timestamptz(m) => Ok(*m),
        Value::Date(days) => Ok(date_to_local(*days)),
        other => Err(SqlError::mismatch(format!("date_bin of {}", other.kind_name()))),
    };
    let (source, origin) = (instant(&values[1])?, instant(&values[2])?);
    if is_infinite(source) || is_infinite(origin) {
        return Err(SqlError::new("22008", "timestamp out of range"));
    }
    let difference = source
        .checked_sub(origin)
        .ok_or_else(|| SqlError::new("22008", "interval out of range"))?;
    let binned = origin + difference.div_euclid(stride) * stride;
    Ok(match &values[1] {
        Value::Timestamp(_) => Value::Timestamp(binned),
        _ => Value::Timestamptz(binned),
    })
}
