//! `interval`: months, days and microseconds kept apart, as PostgreSQL keeps them (a month is
//! not a fixed number of days, nor a day a fixed number of hours across a change to daylight
//! time), with its text forms, ordering and arithmetic.

use super::*;

pub const MICROS_PER_HOUR: i64 = 3_600_000_000;
const DAYS_PER_MONTH: i64 = 30;

/// An interval: each field may have its own sign.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// PostgreSQL's error for an interval beyond its fields' range.
pub fn interval_overflow() -> SqlError {
    SqlError::new("22008", "interval out of range")
}

impl Interval {
    pub const fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    /// The length PostgreSQL orders intervals by: a month as 30 days, a day as 24 hours (so
    /// `'1 mon'` equals `'30 days'`).
    pub fn span(self) -> i128 {
        (i128::from(self.months) * DAYS_PER_MONTH as i128 + i128::from(self.days))
            * i128::from(MICROS_PER_DAY)
            + i128::from(self.micros)
    }

    pub fn checked_add(self, other: Interval) -> SqlResult<Interval> {
        Ok(Interval {
            months: self.months.checked_add(other.months).ok_or_else(interval_overflow)?,
            days: self.days.checked_add(other.days).ok_or_else(interval_overflow)?,
            micros: self.micros.checked_add(other.micros).ok_or_else(interval_overflow)?,
        })
    }

    pub fn checked_neg(self) -> SqlResult<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(interval_overflow)?,
            days: self.days.checked_neg().ok_or_else(interval_overflow)?,
            micros: self.micros.checked_neg().ok_or_else(interval_overflow)?,
        })
    }

    pub fn checked_sub(self, other: Interval) -> SqlResult<Interval> {
        self.checked_add(other.checked_neg()?)
    }

    /// `interval * factor`: whole months and days stay in their fields, and what a fraction
    /// leaves of a month goes to days (30 to a month), of a day to time, as PostgreSQL does.
    pub fn scaled(self, factor: f64) -> SqlResult<Interval> {
        self.scaled_by(factor, |x| x * factor)
    }

    /// `interval / divisor`, each field divided (not multiplied by the reciprocal, which
    /// rounds differently).
    pub fn divided(self, divisor: f64) -> SqlResult<Interval> {
        if divisor == 0.0 {
            return Err(SqlError::division_by_zero());
        }
        self.scaled_by(divisor, |x| x / divisor)
    }

    fn scaled_by(self, factor: f64, apply: impl Fn(f64) -> f64) -> SqlResult<Interval> {
        if factor.is_nan() {
            return Err(interval_overflow());
        }
        let round = |x: f64| (x * 1e6).round_ties_even() / 1e6;
        let months_exact = apply(f64::from(self.months));
        let months = checked_i32(months_exact.trunc())?;
        let month_remainder_days =
            round((months_exact - f64::from(months)) * DAYS_PER_MONTH as f64);
        let days_exact = apply(f64::from(self.days));
        let mut days = checked_i32(days_exact.trunc())?;
        let mut seconds_remainder = round(
            (days_exact - f64::from(days) + month_remainder_days - month_remainder_days.trunc())
                * 86_400.0,
        );
        if seconds_remainder.abs() >= 86_400.0 {
            days = days
                .checked_add((seconds_remainder / 86_400.0).trunc() as i32)
                .ok_or_else(interval_overflow)?;
            seconds_remainder -= (seconds_remainder / 86_400.0).trunc() * 86_400.0;
        }
        days =
            days.checked_add(month_remainder_days.trunc() as i32).ok_or_else(interval_overflow)?;
        let micros = (apply(self.micros as f64) + seconds_remainder * 1e6).round_ties_even();
        if !micros.is_finite() || micros.abs() >= 9.2e18 {
            return Err(interval_overflow());
        }
        Ok(Interval { months, days, micros: micros as i64 })
    }

    /// Whole days moved out of the time field (`justify_hours`), signs made to agree.
    pub fn justify_hours(self) -> SqlResult<Interval> {
        let mut days = i64::from(self.days) + self.micros / MICROS_PER_DAY;
        let mut micros = self.micros % MICROS_PER_DAY;
        let sign = micros.signum();
        agree(&mut days, &mut micros, sign, MICROS_PER_DAY);
        Ok(Interval { months: self.months, days: narrow(days)?, micros })
    }

    /// Whole months of 30 days moved out of the days field (`justify_days`).
    pub fn justify_days(self) -> SqlResult<Interval> {
        let mut months = i64::from(self.months) + i64::from(self.days) / DAYS_PER_MONTH;
        let mut days = i64::from(self.days) % DAYS_PER_MONTH;
        let sign = days.signum();
        agree(&mut months, &mut days, sign, DAYS_PER_MONTH);
        Ok(Interval { months: narrow(months)?, days: days as i32, micros: self.micros })
    }

    /// Both justifications, signs made to agree across all three fields
    /// (`justify_interval`).
    pub fn justify(self) -> SqlResult<Interval> {
        let mut days = i64::from(self.days) + self.micros / MICROS_PER_DAY;
        let mut micros = self.micros % MICROS_PER_DAY;
        let mut months = i64::from(self.months) + days / DAYS_PER_MONTH;
        days %= DAYS_PER_MONTH;
        let below = if days != 0 { days.signum() } else { micros.signum() };
        agree(&mut months, &mut days, below, DAYS_PER_MONTH);
        let sign = micros.signum();
        agree(&mut days, &mut micros, sign, MICROS_PER_DAY);
        Ok(Interval { months: narrow(months)?, days: narrow(days)?, micros })
    }
}

/// Makes a field (`high`) and the one below it (`low`, of which `unit` make one `high`) not
/// of opposite signs, borrowing one `high`; `low_sign` is the sign the fields below count with.
fn agree(high: &mut i64, low: &mut i64, low_sign: i64, unit: i64) {
    if *high > 0 && low_sign < 0 {
        *low += unit;
        *high -= 1;
    } else if *high < 0 && low_sign > 0 {
        *low -= unit;
        *high += 1;
    }
}

fn narrow(value: i64) -> SqlResult<i32> {
    i32::try_from(value).map_err(|_| interval_overflow())
}

fn checked_i32(value: f64) -> SqlResult<i32> {
    if value.is_finite() && value >= f64::from(i32::MIN) && value <= f64::from(i32::MAX) {
        Ok(value as i32)
    } else {
        Err(interval_overflow())
    }
}

/// A local time (microseconds since 1970-01-01 on the wall clock) moved by `months`,
/// keeping the day of the month where the month has it, else its last day.
pub fn add_months(local: i64, months: i32) -> SqlResult<i64> {
    if months == 0 {
        return Ok(local);
    }
    let days = local.div_euclid(MICROS_PER_DAY);
    let time = local.rem_euclid(MICROS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let index = year * 12 + i64::from(month) - 1 + i64::from(months);
    let (year, month) = (index.div_euclid(12), index.rem_euclid(12) as u32 + 1);
    let day = day.min(days_in_month(year, month));
    days_from_civil(year, month, day)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|micros| micros.checked_add(time))
        .ok_or_else(|| SqlError::out_of_range("timestamp"))
}

/// How intervals are written: PostgreSQL's `IntervalStyle` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IntervalStyle {
    /// `1 year 2 mons 3 days 04:05:06`, the default.
    #[default]
    Postgres,
    /// `@ 1 year 2 mons 3 days 4 hours 5 mins 6 secs`.
    PostgresVerbose,
    /// `1-2 3 4:05:06`.
    SqlStandard,
    /// `P1Y2M3DT4H5M6S`.
    Iso8601,
}

impl IntervalStyle {
    pub fn named(name: &str) -> Option<IntervalStyle> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "postgres" => IntervalStyle::Postgres,
            "postgres_verbose" => IntervalStyle::PostgresVerbose,
            "sql_standard" => IntervalStyle::SqlStandard,
            "iso_8601" => IntervalStyle::Iso8601,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            IntervalStyle::Postgres => "postgres",
            IntervalStyle::PostgresVerbose => "postgres_verbose",
            IntervalStyle::SqlStandard => "sql_standard",
            IntervalStyle::Iso8601 => "iso_8601",
        }
    }
}

thread_local! {
    static STYLE: std::cell::Cell<IntervalStyle> = const { std::cell::Cell::new(IntervalStyle::Postgres) };
}

/// Sets how intervals are written on this thread (a session does at each entry).
pub fn set_interval_style(style: IntervalStyle) {
    STYLE.with(|cell| cell.set(style));
}

/// An interval's fields as PostgreSQL's output routines see them: years, months, days,
/// hours, minutes, seconds and microseconds, each with the sign of the field it comes from.
struct Fields {
    years: i64,
    months: i64,
    days: i64,
    hours: i64,
    minutes: i64,
    seconds: i64,
    micros: i64,
}

fn fields(interval: Interval) -> Fields {
    let time = interval.micros;
    Fields {
        years: i64::from(interval.months / 12),
        months: i64::from(interval.months % 12),
        days: i64::from(interval.days),
        hours: time / MICROS_PER_HOUR,
        minutes: time / 60_000_000 % 60,
        seconds: time / 1_000_000 % 60,
        micros: time % 1_000_000,
    }
}

/// Writes an interval in the thread's `IntervalStyle`.
pub fn write_interval(interval: Interval, out: &mut String) {
    match STYLE.with(std::cell::Cell::get) {
        IntervalStyle::Postgres => write_postgres(interval, out),
        IntervalStyle::PostgresVerbose => write_verbose(fields(interval), out),
        IntervalStyle::SqlStandard => write_sql_standard(fields(interval), out),
        IntervalStyle::Iso8601 => write_iso(fields(interval), out),
    }
}

/// `1 year 2 mons 3 days 04:05:06.5`, `-1 days +02:00:00`, `00:00:00`.
fn write_postgres(interval: Interval, out: &mut String) {
    let start = out.len();
    let mut before_negative = false;
    let mut zero = true;
    let years = interval.months / 12;
    let months = interval.months % 12;
    for (value, unit, units) in [
        (i64::from(years), "year", "years"),
        (i64::from(months), "mon", "mons"),
        (i64::from(interval.days), "day", "days"),
    ] {
        if value == 0 {
            continue;
        }
        if out.len() > start {
            out.push(' ');
        }
        let sign = if before_negative && value > 0 { "+" } else { "" };
        let _ = write!(out, "{sign}{value} {}", if value == 1 { unit } else { units });
        before_negative |= value < 0;
        zero = false;
    }
    if zero || interval.micros != 0 {
        if !zero {
            out.push(' ');
        }
        let micros = interval.micros;
        if micros < 0 {
            out.push('-');
        } else if before_negative {
            out.push('+');
        }
        write_clock_magnitude(micros.unsigned_abs(), out);
    }
}

/// `HH:MM:SS[.f]` of a magnitude in microseconds (hours beyond 24 kept).
fn write_clock_magnitude(magnitude: u64, out: &mut String) {
    let hours = magnitude / MICROS_PER_HOUR as u64;
    let minutes = magnitude / 60_000_000 % 60;
    let seconds = magnitude / 1_000_000 % 60;
    let _ = write!(out, "{hours:02}:{minutes:02}:{seconds:02}");
    write_fraction(magnitude % 1_000_000, out);
}

/// `@ 1 year 2 mons -3 days 4 hours 5 mins 6.5 secs ago`: the first non-zero field's sign
/// becomes `ago`, and the others are written relative to it.
fn write_verbose(f: Fields, out: &mut String) {
    out.push('@');
    let (mut zero, mut before) = (true, false);
    for (value, unit) in [
        (f.years, "year"),
        (f.months, "mon"),
        (f.days, "day"),
        (f.hours, "hour"),
        (f.minutes, "min"),
    ] {
        if value == 0 {
            continue;
        }
        let value = if zero {
            before = value < 0;
            value.abs()
        } else if before {
            -value
        } else {
            value
        };
        let _ = write!(out, " {value} {unit}{}", if value == 1 { "" } else { "s" });
        zero = false;
    }
    if f.seconds != 0 || f.micros != 0 {
        out.push(' ');
        if f.seconds < 0 || (f.seconds == 0 && f.micros < 0) {
            if zero {
                before = true;
            } else if !before {
                out.push('-');
            }
        } else if before {
            out.push('-');
        }
        let _ = write!(out, "{}", f.seconds.abs());
        write_fraction(f.micros.unsigned_abs(), out);
        let plural = f.seconds.abs() != 1 || f.micros != 0;
        out.push_str(if plural { " secs" } else { " sec" });
        zero = false;
    }
    if zero {
        out.push_str(" 0");
    }
    if before {
        out.push_str(" ago");
    }
}

/// SQL's `Y-M D H:MM:SS`, with a sign per part when the parts' signs differ.
fn write_sql_standard(f: Fields, out: &mut String) {
    let parts = [f.years, f.months, f.days, f.hours, f.minutes, f.seconds, f.micros];
    let negative = parts.iter().any(|p| *p < 0);
    let positive = parts.iter().any(|p| *p > 0);
    let year_month = f.years != 0 || f.months != 0;
    let day_time = parts[2..].iter().any(|p| *p != 0);
    let seconds = |out: &mut String, s: i64, micros: i64| {
        let _ = write!(out, "{:02}", s.abs());
        write_fraction(micros.unsigned_abs(), out);
    };
    if !negative && !positive {
        out.push('0');
    } else if (negative && positive) || (year_month && day_time) {
        let year_sign = if f.years < 0 || f.months < 0 { '-' } else { '+' };
        let day_sign = if f.days < 0 { '-' } else { '+' };
        let time_negative = f.hours < 0 || f.minutes < 0 || f.seconds < 0 || f.micros < 0;
        let _ = write!(
            out,
            "{year_sign}{}-{} {day_sign}{} {}{}:{:02}:",
            f.years.abs(),
            f.months.abs(),
            f.days.abs(),
            if time_negative { '-' } else { '+' },
            f.hours.abs(),
            f.minutes.abs()
        );
        seconds(out, f.seconds, f.micros);
    } else {
        if negative {
            out.push('-');
        }
        if year_month {
            let _ = write!(out, "{}-{}", f.years.abs(), f.months.abs());
        } else {
            if f.days != 0 {
                let _ = write!(out, "{} ", f.days.abs());
            }
            let _ = write!(out, "{}:{:02}:", f.hours.abs(), f.minutes.abs());
            seconds(out, f.seconds, f.micros);
        }
    }
}

/// ISO 8601's `P1Y2M3DT4H5M6.5S` (`PT0S` for zero).
fn write_iso(f: Fields, out: &mut String) {
    let time = f.hours != 0 || f.minutes != 0 || f.seconds != 0 || f.micros != 0;
    if f.years == 0 && f.months == 0 && f.days == 0 && !time {
        out.push_str("PT0S");
        return;
    }
    out.push('P');
    for (value, unit) in [(f.years, 'Y'), (f.months, 'M'), (f.days, 'D')] {
        if value != 0 {
            let _ = write!(out, "{value}{unit}");
        }
    }
    if time {
        out.push('T');
    }
    for (value, unit) in [(f.hours, 'H'), (f.minutes, 'M')] {
        if value != 0 {
            let _ = write!(out, "{value}{unit}");
        }
    }
    if f.seconds != 0 || f.micros != 0 {
        if f.seconds < 0 || f.micros < 0 {
            out.push('-');
        }
        let _ = write!(out, "{}", f.seconds.abs());
        write_fraction(f.micros.unsigned_abs(), out);
        out.push('S');
    }
}

/// `.fff` of a microsecond fraction, trailing zeros dropped (nothing for zero).
pub(super) fn write_fraction(fraction: u64, out: &mut String) {
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

/// One unit of interval input, as a multiple of what it adds.
enum Unit {
    Months(f64),
    Days(f64),
    Micros(f64),
}

/// The unit a word of interval input names, and the field it sets (a bit of its own, so that
/// input naming one field twice, `1 second 2 seconds`, is refused as PostgreSQL refuses it).
fn unit(word: &str) -> Option<(Unit, u16)> {
    Some(match word {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => {
            (Unit::Micros(1.0), 1 << 0)
        }
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => {
            (Unit::Micros(1e3), 1 << 1)
        }
        "second" | "seconds" | "s" | "sec" | "secs" => (Unit::Micros(1e6), 1 << 2),
        "minute" | "minutes" | "m" | "min" | "mins" => (Unit::Micros(6e7), 1 << 3),
        "hour" | "hours" | "h" | "hr" | "hrs" => (Unit::Micros(3.6e9), 1 << 4),
        "day" | "days" | "d" => (Unit::Days(1.0), 1 << 5),
        "week" | "weeks" | "w" => (Unit::Days(7.0), 1 << 6),
        "month" | "months" | "mon" | "mons" => (Unit::Months(1.0), 1 << 7),
        "year" | "years" | "y" | "yr" | "yrs" => (Unit::Months(12.0), 1 << 8),
        "decade" | "decades" | "dec" | "decs" => (Unit::Months(120.0), 1 << 9),
        "century" | "centuries" | "centurys" | "c" | "cent" => (Unit::Months(1200.0), 1 << 10),
        "millennium" | "millennia" | "millenniums" | "mil" | "mils" => {
            (Unit::Months(12000.0), 1 << 11)
        }
        _ => return None,
    })
}

/// Accumulates interval input: whole parts in their fields, fractions carried down.
#[derive(Default)]
struct Parts {
    /// The fields named so far ([`unit`]'s bits).
    seen: u16,
    months: f64,
    days: f64,
    micros: f64,
}

impl Parts {
    fn add(&mut self, amount: f64, unit: Unit) {
        match unit {
            Unit::Months(n) => {
                let months = amount * n;
                self.months += months.trunc();
                let days = months.fract() * DAYS_PER_MONTH as f64;
                self.days += days.trunc();
                self.micros += (days.fract() * MICROS_PER_DAY as f64).round();
            }
            Unit::Days(n) => {
                let days = amount * n;
                self.days += days.trunc();
                self.micros += (days.fract() * MICROS_PER_DAY as f64).round();
            }
            Unit::Micros(n) => self.micros += (amount * n).round(),
        }
    }

    fn finish(self, negate: bool) -> Option<Interval> {
        let sign = if negate { -1.0 } else { 1.0 };
        let (months, days, micros) = (self.months * sign, self.days * sign, self.micros * sign);
        let fits32 = |x: f64| x >= f64::from(i32::MIN) && x <= f64::from(i32::MAX);
        if !fits32(months) || !fits32(days) || micros.abs() >= 9.2e18 {
            return None;
        }
        Some(Interval { months: months as i32, days: days as i32, micros: micros as i64 })
    }
}

/// A clock `[-]h:mm[:ss[.ffffff]]` (or `mm:ss.f` when it has a fraction and two fields) in
/// microseconds.
pub(super) fn parse_clock(text: &str) -> Option<f64> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let fields: Vec<&str> = text.split(':').collect();
    if fields.len() < 2 || fields.len() > 3 {
        return None;
    }
    let number = |field: &str| -> Option<f64> {
        if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return None;
        }
        field.parse().ok()
    };
    let micros = if fields.len() == 2 && fields[1].contains('.') {
        (number(fields[0])? * 60.0 + number(fields[1])?) * 1e6
    } else {
        if fields[..fields.len() - 1].iter().any(|f| f.contains('.')) {
            return None;
        }
        let hours = number(fields[0])?;
        let minutes = number(fields[1])?;
        let seconds = fields.get(2).map_or(Some(0.0), |f| number(f))?;
        if minutes >= 60.0 || seconds >= 60.0 {
            return None;
        }
        ((hours * 60.0 + minutes) * 60.0 + seconds) * 1e6
    };
    Some(if negative { -micros.round() } else { micros.round() })
}

/// Parses interval input: `1 day 2 hours`, `@ 1 minute ago`, `1:30:00`, `-1 2:03:04`,
/// `1-2` (years-months), `P1Y2M3DT4H5M6S`, a bare number of seconds. `leading` is the unit
/// of a bare number written `INTERVAL '3' DAY`.
pub fn parse_interval(text: &str, leading: Option<&str>) -> Option<Interval> {
    let lower = text.trim().to_ascii_lowercase();
    if let Some(iso) = lower.strip_prefix('p') {
        return parse_iso_interval(iso);
    }
    let lower = lower.strip_prefix('@').unwrap_or(&lower).trim().to_string();
    let mut tokens: Vec<&str> = lower.split_whitespace().collect();
    let mut negate = false;
    if tokens.last() == Some(&"ago") {
        negate = true;
        tokens.pop();
    }
    if tokens.is_empty() {
        return None;
    }
    let mut parts = Parts::default();
    let mut at = 0;
    let mut seen_unitless = false;
    while at < tokens.len() {
        let token = tokens[at];
        if token.contains(':') {
            parts.micros += parse_clock(token)?;
            at += 1;
            continue;
        }
        // `Y-M`: years and months, SQL standard.
        if let Some(dash) = token.get(1..).and_then(|rest| rest.find('-')).map(|at| at + 1)
            && token[..dash].bytes().any(|b| b.is_ascii_digit())
        {
            let years: f64 = token[..dash].parse().ok()?;
            let months: f64 = token[dash + 1..].parse().ok()?;
            let sign = if token.starts_with('-') { -1.0 } else { 1.0 };
            parts.months += years * 12.0 + sign * months;
            at += 1;
            continue;
        }
        // A number and the unit after it (or run into it: `10min`).
        let split = token
            .find(|c: char| c.is_ascii_alphabetic())
            .filter(|&at| at > 0)
            .unwrap_or(token.len());
        let amount: f64 = token[..split].parse().ok()?;
        if !amount.is_finite() {
            return None;
        }
        let word = if split < token.len() {
            Some(&token[split..])
        } else if let Some(next) = tokens.get(at + 1).filter(|t| unit(t).is_some()) {
            at += 1;
            Some(*next)
        } else {
            None
        };
        at += 1;
        match word {
            Some(word) => {
                let (unit, bit) = unit(word)?;
                if parts.seen & bit != 0 {
                    return None;
                }
                parts.seen |= bit;
                parts.add(amount, unit);
            }
            None => {
                // A bare number: days when a clock follows (`1 2:03:04`), else the leading
                // field's unit, else seconds.
                if seen_unitless {
                    return None;
                }
                seen_unitless = true;
                let following_clock = tokens.get(at).is_some_and(|t| t.contains(':'));
                let unit = match leading {
                    _ if following_clock => Unit::Days(1.0),
                    Some(word) => unit(word)?.0,
                    None => Unit::Micros(1e6),
                };
                parts.add(amount, unit);
            }
        }
    }
    parts.finish(negate)
}

/// ISO 8601's `P[nY][nM][nW][nD][T[nH][nM][nS]]` (after the `P`).
fn parse_iso_interval(text: &str) -> Option<Interval> {
    let mut parts = Parts::default();
    let mut in_time = false;
    let mut number = String::new();
    let mut any = false;
    for c in text.chars() {
        match c {
            't' if number.is_empty() => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            unit_char => {
                let amount: f64 = number.parse().ok()?;
                number.clear();
                let unit = match (unit_char, in_time) {
                    ('y', false) => Unit::Months(12.0),
                    ('m', false) => Unit::Months(1.0),
                    ('w', false) => Unit::Days(7.0),
                    ('d', false) => Unit::Days(1.0),
                    ('h', true) => Unit::Micros(3.6e9),
                    ('m', true) => Unit::Micros(6e7),
                    ('s', true) => Unit::Micros(1e6),
                    _ => return None,
                };
                parts.add(amount, unit);
                any = true;
            }
        }
    }
    (number.is_empty() && any).then_some(())?;
    parts.finish(false)
}

/// A wall-clock time moved by an interval: months on the calendar, then days, then time.
pub fn local_plus(local: i64, interval: Interval) -> SqlResult<i64> {
    if is_infinite(local) {
        return Ok(local);
    }
    let moved = add_months(local, interval.months)?
        .checked_add(i64::from(interval.days) * MICROS_PER_DAY)
        .and_then(|micros| micros.checked_add(interval.micros))
        .ok_or_else(|| SqlError::new("22008", "timestamp out of range"))?;
    check_range(moved)
}

/// An instant moved by an interval: months and days on the thread's zone's calendar (so a
/// day across a change to daylight time is 23 or 25 hours), then the time.
pub fn instant_plus(instant: i64, interval: Interval) -> SqlResult<i64> {
    if is_infinite(instant) {
        return Ok(instant);
    }
    let mut moved = instant;
    if interval.months != 0 || interval.days != 0 {
        let local = instant_to_local(instant);
        let local = add_months(local, interval.months)?
            .checked_add(i64::from(interval.days) * MICROS_PER_DAY)
            .ok_or_else(|| SqlError::new("22008", "timestamp out of range"))?;
        moved = local_to_instant(check_range(local)?);
    }
    let moved = moved
        .checked_add(interval.micros)
        .ok_or_else(|| SqlError::new("22008", "timestamp out of range"))?;
    check_range(moved)
}

/// A timestamp within PostgreSQL's range, or 22008.
pub fn check_range(micros: i64) -> SqlResult<i64> {
    let day = micros.div_euclid(MICROS_PER_DAY);
    if (FIRST_DAY..=LAST_TIMESTAMP_DAY).contains(&day) {
        Ok(micros)
    } else {
        Err(SqlError::new("22008", "timestamp out of range"))
    }
}

/// The difference of two timestamps as an interval of days and time (`justify_hours`'d).
pub fn timestamp_difference(a: i64, b: i64) -> SqlResult<Interval> {
    if is_infinite(a) || is_infinite(b) {
        return Err(SqlError::new("22008", "cannot subtract infinite timestamps"));
    }
    let micros = a.checked_sub(b).ok_or_else(interval_overflow)?;
    Interval::new(0, 0, micros).justify_hours()
}
