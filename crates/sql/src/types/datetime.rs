//! Dates and timestamps: days since the Unix epoch and microseconds since it, their civil
//! calendar, and their text forms (ISO 8601, as PostgreSQL writes them).

use super::*;

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

pub(super) fn write_date(days: i32, out: &mut String) {
    let (year, month, day) = civil_from_days(i64::from(days));
    let _ = write!(out, "{year:04}-{month:02}-{day:02}");
}

pub(super) fn write_timestamp(micros: i64, out: &mut String) {
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

pub(super) fn parse_date(text: &str) -> Option<i64> {
    let mut parts = text.trim().splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

pub(super) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

pub(super) fn parse_timestamp(text: &str) -> Option<i64> {
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

/// The current time as a timestamp.
pub fn now_micros() -> i64 {
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    since.as_micros() as i64
}
