//! Dates, times and timestamps: days since the Unix epoch, microseconds since midnight, and
//! microseconds since the epoch (a `timestamp` on the wall clock, a `timestamptz` in UTC);
//! their civil calendar, the text forms PostgreSQL reads (ISO 8601, month names, `1/8/1999`
//! as month/day/year, time zones, `epoch`, `infinity`, `today`) and writes (its ISO style).

use super::*;

pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `infinity` and `-infinity` of the timestamp types, and of `date`.
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;
pub const TIMESTAMP_NEG_INFINITY: i64 = i64::MIN;
pub const DATE_INFINITY: i32 = i32::MAX;
pub const DATE_NEG_INFINITY: i32 = i32::MIN;

/// The first day PostgreSQL's dates and timestamps hold (4714-11-24 BC, Julian day 0), and
/// the last day of timestamps (294276-12-31) and of dates (5874897-12-31), in days since
/// 1970-01-01. (Microseconds since 1970 in an `i64` end at 294247-01-10, where PostgreSQL's,
/// counted from 2000, end 30 years later: timestamps past it are out of range here.)
pub const FIRST_DAY: i64 = -2_440_588;
pub const LAST_TIMESTAMP_DAY: i64 = 106_762_939;
pub const LAST_DATE_DAY: i64 = 2_145_042_905;

/// Days since 1970-01-01 of a proleptic Gregorian date (year 0 is 1 BC).
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

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Writes the date part; returns whether the year is BC (the caller appends ` BC` last).
fn write_civil_date(days: i64, out: &mut String) -> bool {
    let (year, month, day) = civil_from_days(days);
    let (year, bc) = if year <= 0 { (1 - year, true) } else { (year, false) };
    let _ = write!(out, "{year:04}-{month:02}-{day:02}");
    bc
}

pub(super) fn write_date(days: i32, out: &mut String) {
    match days {
        DATE_INFINITY => out.push_str("infinity"),
        DATE_NEG_INFINITY => out.push_str("-infinity"),
        days => {
            if write_civil_date(i64::from(days), out) {
                out.push_str(" BC");
            }
        }
    }
}

/// `HH:MM:SS[.ffffff]` of microseconds since midnight.
pub(super) fn write_clock(micros: i64, out: &mut String) {
    let seconds = micros / 1_000_000;
    let _ = write!(out, "{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    write_fraction((micros % 1_000_000) as u64, out);
}

/// A wall-clock timestamp, then `suffix` (a zone's offset) before any ` BC`.
fn write_local(micros: i64, suffix: impl FnOnce(&mut String), out: &mut String) {
    match micros {
        TIMESTAMP_INFINITY => out.push_str("infinity"),
        TIMESTAMP_NEG_INFINITY => out.push_str("-infinity"),
        micros => {
            let bc = write_civil_date(micros.div_euclid(MICROS_PER_DAY), out);
            out.push(' ');
            write_clock(micros.rem_euclid(MICROS_PER_DAY), out);
            suffix(out);
            if bc {
                out.push_str(" BC");
            }
        }
    }
}

pub(super) fn write_timestamp(micros: i64, out: &mut String) {
    write_local(micros, |_| {}, out);
}

/// A `timestamptz` in the thread's zone, with its offset there: `2024-03-01 12:00:00+01`.
pub(super) fn write_timestamptz(micros: i64, out: &mut String) {
    zone::with_current(|zone| {
        let offset = zone.offset_at(micros);
        let local = micros.saturating_add(i64::from(offset) * 1_000_000);
        write_local(
            if is_infinite(micros) { micros } else { local },
            |out| zone::write_offset(offset, out),
            out,
        );
    });
}

pub fn is_infinite(micros: i64) -> bool {
    micros == TIMESTAMP_INFINITY || micros == TIMESTAMP_NEG_INFINITY
}

/// What a date/time string says.
#[derive(Debug, Default)]
struct Parsed {
    days: Option<i64>,
    /// Microseconds since midnight.
    time: Option<i64>,
    /// Seconds east of UTC, when the text names an offset or a zone (`zone` then holds it).
    offset: Option<i32>,
    zone: Option<Zone>,
    /// `infinity`, `-infinity`, `epoch`, `now`: the whole value, as UTC microseconds.
    special: Option<Special>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Special {
    Infinity,
    NegInfinity,
    Epoch,
    Now,
    /// Midnight of today plus this many days, on the local calendar.
    Today(i64),
}

const MONTHS: [&str; 12] =
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn month_name(word: &str) -> Option<u32> {
    let word = word.trim_end_matches('.');
    if word.len() < 3 {
        return None;
    }
    let at = MONTHS.iter().position(|m| word.starts_with(m))?;
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ][at];
    (full.starts_with(word) || word == "sept").then_some(at as u32 + 1)
}

fn weekday_name(word: &str) -> bool {
    let word = word.trim_end_matches('.');
    word.len() >= 3
        && WEEKDAYS.iter().any(|d| word.starts_with(d))
        && [
            "sunday",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "tues",
            "wednes",
            "thur",
            "thurs",
        ]
        .iter()
        .any(|full| full.starts_with(word) || word.starts_with(full))
}

/// Splits a time token from a zone run into it: `10:00:00+02`, `10:00Z`.
fn split_time_zone(token: &str) -> (&str, Option<&str>) {
    let bytes = token.as_bytes();
    for (at, &b) in bytes.iter().enumerate().skip(1) {
        if matches!(b, b'+' | b'-') || b.is_ascii_alphabetic() {
            return (&token[..at], Some(&token[at..]));
        }
    }
    (token, None)
}

/// The civil date of a `y-m-d`, `m/d/y` (or `y/m/d` with a four-digit first field), or
/// `d-mon-y` / `y-mon-d` field.
fn parse_date_field(token: &str, parsed: &mut Parsed) -> Option<()> {
    let separator = if token.contains('-') {
        '-'
    } else if token.contains('/') {
        '/'
    } else {
        '.'
    };
    let fields: Vec<&str> = token.split(separator).collect();
    if fields.len() != 3 || fields.iter().any(|f| f.is_empty()) {
        return None;
    }
    let numeric = |field: &str| field.bytes().all(|b| b.is_ascii_digit());
    let (year, month, day) = if let Some(month) = month_name(fields[1]) {
        // `08-Jan-1999` or `1999-Jan-08`.
        if fields[0].len() > 2 {
            (fields[0], month, fields[2])
        } else {
            (fields[2], month, fields[0])
        }
    } else if let Some(month) = month_name(fields[0]) {
        // `Jan-08-1999`.
        (fields[2], month, fields[1])
    } else if fields.iter().all(|f| numeric(f)) {
        if fields[0].len() > 2 {
            (fields[0], fields[1].parse().ok()?, fields[2])
        } else {
            // Month/day/year, PostgreSQL's default DateStyle order (MDY).
            (fields[2], fields[0].parse().ok()?, fields[1])
        }
    } else {
        return None;
    };
    if !numeric(year) || !numeric(day) || year.len() > 7 {
        return None;
    }
    let mut year: i64 = year.parse().ok()?;
    if fields[0].len() <= 2 && fields[2].len() <= 2 {
        // Two-digit years: 70..99 are 19xx, 00..69 are 20xx.
        year += if year < 70 { 2000 } else { 1900 };
    }
    set_date(parsed, year, month, day.parse().ok()?)
}

fn set_date(parsed: &mut Parsed, year: i64, month: u32, day: u32) -> Option<()> {
    if parsed.days.is_some()
        || !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
    {
        return None;
    }
    parsed.days = Some(days_from_civil(year, month, day));
    Some(())
}

/// A clock `h:mm[:ss[.f]]`, with `24:00:00` allowed.
fn parse_time_field(text: &str) -> Option<i64> {
    let (clock, fraction) = match text.find('.') {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, ""),
    };
    let mut fields = clock.split(':');
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    let hours = fields.next().filter(|s| digits(s))?.parse::<i64>().ok()?;
    let minutes = fields.next().filter(|s| digits(s))?.parse::<i64>().ok()?;
    let seconds = match fields.next() {
        Some(s) if digits(s) => s.parse::<i64>().ok()?,
        Some(_) => return None,
        None if fraction.is_empty() => 0,
        None => return None,
    };
    if fields.next().is_some() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Fractions beyond microseconds round.
    let mut micros_fraction = 0i64;
    if !fraction.is_empty() {
        let padded: String = fraction.chars().chain("0000000".chars()).take(7).collect();
        let tenths: i64 = padded.parse().ok()?;
        micros_fraction = (tenths + 5) / 10;
    }
    let micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + micros_fraction;
    if minutes > 59 || seconds > 60 || micros > MICROS_PER_DAY {
        return None;
    }
    Some(micros)
}

fn set_zone(parsed: &mut Parsed, text: &str) -> Option<()> {
    if parsed.offset.is_some() || text.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let zone = match zone::parse_offset(text) {
        Some(seconds) => Zone::fixed(seconds, text)?,
        None => Zone::named(text)?,
    };
    parsed.offset = Some(0);
    parsed.zone = Some(zone);
    Some(())
}

/// Reads a date/time string into its parts; `None` when it is not one.
fn parse_datetime(text: &str) -> Option<Parsed> {
    let lower = text.trim().to_ascii_lowercase();
    let mut parsed = Parsed::default();
    match lower.as_str() {
        "infinity" | "+infinity" => parsed.special = Some(Special::Infinity),
        "-infinity" => parsed.special = Some(Special::NegInfinity),
        _ => {}
    }
    if parsed.special.is_some() {
        return Some(parsed);
    }
    // ISO 8601's `T` between the date and the time.
    let spaced: String;
    let lower = match lower.find('t') {
        Some(at)
            if at > 0
                && lower.as_bytes()[at - 1].is_ascii_digit()
                && lower.as_bytes().get(at + 1).is_some_and(u8::is_ascii_digit) =>
        {
            spaced = format!("{} {}", &lower[..at], &lower[at + 1..]);
            &spaced
        }
        _ => &lower,
    };
    let tokens: Vec<&str> =
        lower.split(|c: char| c.is_whitespace() || c == ',').filter(|t| !t.is_empty()).collect();
    let mut month: Option<u32> = None;
    let mut numbers: Vec<&str> = Vec::new();
    let mut bc = false;
    let mut pm: Option<bool> = None;
    let mut at = 0;
    while at < tokens.len() {
        let token = tokens[at];
        at += 1;
        let first = token.as_bytes()[0];
        if token.contains(':') && (first.is_ascii_digit()) {
            let (clock, zone_text) = split_time_zone(token);
            if parsed.time.is_some() {
                return None;
            }
            parsed.time = Some(parse_time_field(clock)?);
            match zone_text {
                Some("am") => pm = Some(false),
                Some("pm") => pm = Some(true),
                Some(zone_text) => set_zone(&mut parsed, zone_text)?,
                None => {}
            }
        } else if (first.is_ascii_digit()
            && (token.contains('-') || token.contains('/') || token.matches('.').count() == 2))
            || (first.is_ascii_alphabetic()
                && (token.matches('-').count() == 2 || token.matches('/').count() == 2))
        {
            parse_date_field(token, &mut parsed)?;
        } else if first.is_ascii_digit() && token.bytes().all(|b| b.is_ascii_digit()) {
            if token.len() == 8 && parsed.days.is_none() && month.is_none() && numbers.is_empty() {
                // `19990108`.
                set_date(
                    &mut parsed,
                    token[..4].parse().ok()?,
                    token[4..6].parse().ok()?,
                    token[6..].parse().ok()?,
                )?;
            } else if token.len() == 6 && parsed.days.is_some() && parsed.time.is_none() {
                // `040506`: a time without colons after a date.
                let n: i64 = token.parse().ok()?;
                parsed.time = Some(parse_time_field(&format!(
                    "{}:{}:{}",
                    n / 10_000,
                    n / 100 % 100,
                    n % 100
                ))?);
            } else {
                numbers.push(token);
            }
        } else if matches!(first, b'+' | b'-') || token == "z" {
            set_zone(&mut parsed, token)?;
        } else if let Some(m) = month_name(token) {
            if month.is_some() {
                return None;
            }
            month = Some(m);
        } else if weekday_name(token) {
        } else if matches!(token, "bc" | "b.c.") {
            bc = true;
        } else if matches!(token, "ad" | "a.d.") {
        } else if matches!(token, "am" | "a.m.") {
            pm = Some(false);
        } else if matches!(token, "pm" | "p.m.") {
            pm = Some(true);
        } else if matches!(token, "at" | "on") {
        } else if let Some(special) = match token {
            "epoch" => Some(Special::Epoch),
            "now" => Some(Special::Now),
            "today" => Some(Special::Today(0)),
            "tomorrow" => Some(Special::Today(1)),
            "yesterday" => Some(Special::Today(-1)),
            _ => None,
        } {
            if parsed.special.is_some() {
                return None;
            }
            parsed.special = Some(special);
        } else {
            // A zone's name: `UTC`, `PST`, `America/New_York` (as typed: names are cased).
            let original = text
                .split(|c: char| c.is_whitespace() || c == ',')
                .find(|t| t.eq_ignore_ascii_case(token))
                .unwrap_or(token);
            set_zone(&mut parsed, original)?;
        }
    }
    if parsed.special.is_some() && (parsed.days.is_some() || month.is_some() || !numbers.is_empty())
    {
        return None;
    }
    // Month names with loose numbers: `January 8, 1999`, `8 Jan 1999`, `Jan 8 99`.
    if let Some(month) = month {
        let [a, b] = numbers[..] else { return None };
        let (day, year) = if a.len() > 2 { (b, a) } else { (a, b) };
        let mut year: i64 = year.parse().ok()?;
        if numbers.iter().all(|n| n.len() <= 2) {
            year += if year < 70 { 2000 } else { 1900 };
        }
        set_date(&mut parsed, year, month, day.parse().ok()?)?;
    } else if !numbers.is_empty() {
        return None;
    }
    if bc {
        let days = parsed.days?;
        let (year, month, day) = civil_from_days(days);
        parsed.days = Some(days_from_civil(1 - year, month, day));
    }
    if let Some(pm) = pm {
        let time = parsed.time?;
        let hours = time / 3_600_000_000;
        if !(1..=12).contains(&hours) && (hours != 0 || pm) {
            return None;
        }
        let rest = time % 3_600_000_000;
        let hours = hours % 12 + if pm { 12 } else { 0 };
        parsed.time = Some(hours * 3_600_000_000 + rest);
    }
    Some(parsed)
}

thread_local! {
    /// The session whose transaction runs on this thread, and its start, which `'now'` and
    /// `'today'` read as `now()` does (`None` outside one: the clock).
    static TRANSACTION_START: std::cell::Cell<(u64, Option<i64>)> =
        const { std::cell::Cell::new((u64::MAX, None)) };
}

/// Sets the start of session `session`'s transaction that `'now'` reads on this thread (a
/// session does when it enters the thread and when a transaction begins and ends).
pub fn set_transaction_start(session: u64, start: Option<i64>) {
    TRANSACTION_START.with(|cell| cell.set((session, start)));
}

/// What `'now'` means: the start of the transaction of the session the thread runs, else the
/// clock.
fn input_now() -> i64 {
    match TRANSACTION_START.with(std::cell::Cell::get) {
        (session, Some(start)) if session == zone::entered_session() => start,
        _ => now_micros(),
    }
}

/// The local day of "today" in the thread's zone.
fn today() -> i64 {
    zone::with_current(|zone| zone.to_local(input_now())).div_euclid(MICROS_PER_DAY)
}

fn check_timestamp(micros: i64) -> Option<i64> {
    let day = micros.div_euclid(MICROS_PER_DAY);
    ((FIRST_DAY..=LAST_TIMESTAMP_DAY).contains(&day)).then_some(micros)
}

pub(super) fn parse_date(text: &str) -> Option<i64> {
    let parsed = parse_datetime(text)?;
    match parsed.special {
        Some(Special::Infinity) => return Some(i64::from(DATE_INFINITY)),
        Some(Special::NegInfinity) => return Some(i64::from(DATE_NEG_INFINITY)),
        Some(Special::Epoch) => return Some(0),
        Some(Special::Now) => return Some(today()),
        Some(Special::Today(n)) => return Some(today() + n),
        None => {}
    }
    let days = parsed.days?;
    (FIRST_DAY..=LAST_DATE_DAY).contains(&days).then_some(days)
}

/// A wall-clock timestamp (`timestamp`): any zone in the text is ignored, as PostgreSQL does.
pub(super) fn parse_timestamp(text: &str) -> Option<i64> {
    let parsed = parse_datetime(text)?;
    let local_now = || zone::with_current(|zone| zone.to_local(input_now()));
    match parsed.special {
        Some(Special::Infinity) => return Some(TIMESTAMP_INFINITY),
        Some(Special::NegInfinity) => return Some(TIMESTAMP_NEG_INFINITY),
        Some(Special::Epoch) => return Some(0),
        Some(Special::Now) => return Some(local_now()),
        Some(Special::Today(n)) => {
            return Some((today() + n) * MICROS_PER_DAY + parsed.time.unwrap_or(0));
        }
        None => {}
    }
    let days = parsed.days?;
    check_timestamp(days.checked_mul(MICROS_PER_DAY)?.checked_add(parsed.time.unwrap_or(0))?)
}

/// An instant (`timestamptz`): read in the zone the text names, else the thread's zone.
pub(super) fn parse_timestamptz(text: &str) -> Option<i64> {
    let parsed = parse_datetime(text)?;
    match parsed.special {
        Some(Special::Infinity) => return Some(TIMESTAMP_INFINITY),
        Some(Special::NegInfinity) => return Some(TIMESTAMP_NEG_INFINITY),
        Some(Special::Epoch) => return Some(0),
        Some(Special::Now) => return Some(input_now()),
        Some(Special::Today(n)) => {
            // Midnight (or the time given) of the day, in the zone named or the session's.
            let zone = parsed.zone.unwrap_or_else(zone::current);
            let day = zone.to_local(input_now()).div_euclid(MICROS_PER_DAY) + n;
            return Some(zone.to_utc(day * MICROS_PER_DAY + parsed.time.unwrap_or(0)));
        }
        None => {}
    }
    let days = parsed.days?;
    let local = days.checked_mul(MICROS_PER_DAY)?.checked_add(parsed.time.unwrap_or(0))?;
    let utc = match &parsed.zone {
        Some(zone) => zone.to_utc(local),
        None => zone::with_current(|zone| zone.to_utc(local)),
    };
    check_timestamp(utc)
}

/// A time of day (`time`): any date in the text is ignored.
pub(super) fn parse_time(text: &str) -> Option<i64> {
    let lower = text.trim().to_ascii_lowercase();
    match lower.as_str() {
        "allballs" => return Some(0),
        "now" => {
            return Some(
                zone::with_current(|zone| zone.to_local(input_now())).rem_euclid(MICROS_PER_DAY),
            );
        }
        _ => {}
    }
    let parsed = parse_datetime(text)?;
    if parsed.special.is_some() {
        return None;
    }
    parsed.time
}

/// The current time as microseconds since the epoch (UTC).
pub fn now_micros() -> i64 {
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    since.as_micros() as i64
}
