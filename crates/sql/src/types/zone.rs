//! Time zones: the session's `TimeZone` setting, in which `timestamptz` values are read and
//! written, and the zones that `AT TIME ZONE` and timestamp input name.
//!
//! A `timestamptz` is an instant (microseconds since 1970-01-01 UTC); only its text form and
//! its civil fields depend on a zone. The zone rules are the IANA database that `jiff` bundles
//! (so a machine without tzdata reads `America/New_York` the same way); Engram writes the
//! formats and arithmetic itself.
//!
//! The zone in force is per thread, as PostgreSQL's is per backend: a session installs its
//! zone on the thread it runs on at each entry ([`install`]), and value formatting, parsing
//! and casts read it ([`current`]). Installing costs a comparison when the thread already
//! holds that session's zone.

use super::*;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

/// A named time zone (an IANA name, a fixed offset, or an abbreviation's offset).
#[derive(Debug, Clone)]
pub struct Zone {
    /// Distinct per zone made, so that installing a session's zone again costs a comparison.
    id: u64,
    name: Arc<str>,
    rules: TimeZone,
}

static NEXT_ZONE_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CURRENT: RefCell<Zone> = RefCell::new(Zone::utc());
}

/// An instant in seconds, clamped to what `jiff` answers offsets for (years -9999 to 9999,
/// with two days to spare for offsets); beyond them the rules at the nearest end apply.
fn rules_instant(micros: i64) -> jiff::Timestamp {
    const SPARE: i64 = 2 * 86_400;
    // The Gregorian calendar repeats every 400 years, weekdays too: an instant beyond the
    // range is moved by whole cycles, keeping its season and weekday for the zone's rules.
    const CYCLE: i64 = 146_097 * 86_400;
    let low = jiff::Timestamp::MIN.as_second() + SPARE;
    let high = jiff::Timestamp::MAX.as_second() - SPARE;
    let mut seconds = micros.div_euclid(1_000_000);
    if seconds > high {
        seconds -= ((seconds - high) as u64).div_ceil(CYCLE as u64) as i64 * CYCLE;
    } else if seconds < low {
        seconds += ((low - seconds) as u64).div_ceil(CYCLE as u64) as i64 * CYCLE;
    }
    jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

impl Zone {
    /// UTC, every session's zone until it sets another.
    pub fn utc() -> Zone {
        Zone { id: 0, name: "UTC".into(), rules: TimeZone::UTC }
    }

    fn new(name: &str, rules: TimeZone) -> Zone {
        Zone { id: NEXT_ZONE_ID.fetch_add(1, AtomicOrdering::Relaxed), name: name.into(), rules }
    }

    /// A fixed offset east of UTC, in seconds.
    pub fn fixed(seconds: i32, name: &str) -> Option<Zone> {
        let offset = Offset::from_seconds(seconds).ok()?;
        Some(Zone::new(name, TimeZone::fixed(offset)))
    }

    /// The zone a `SET TIME ZONE` or `AT TIME ZONE` names: an IANA name (`Europe/Paris`,
    /// `PST8PDT`), `UTC`/`GMT`/`Z`, a common abbreviation (`EST`, `PDT`), a number of hours
    /// east of UTC, or a POSIX-style `UTC+3` (3 hours west, as POSIX counts).
    pub fn named(text: &str) -> Option<Zone> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let lower = text.to_ascii_lowercase();
        if matches!(lower.as_str(), "utc" | "gmt" | "z" | "zulu" | "etc/utc" | "universal") {
            return Some(Zone { name: text.into(), ..Zone::utc() });
        }
        if let Some(seconds) = abbreviation(&lower) {
            return Zone::fixed(seconds, text);
        }
        if let Some(hours) = parse_hours(text) {
            return Zone::fixed(hours, text);
        }
        for prefix in ["utc", "gmt"] {
            if let Some(rest) = lower.strip_prefix(prefix)
                && let Some(seconds) = parse_offset(rest)
            {
                // POSIX: `UTC+3` is three hours behind UTC.
                return Zone::fixed(-seconds, text);
            }
        }
        let rules = TimeZone::get(text).ok()?;
        Some(Zone::new(text, rules))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's offset east of UTC, in seconds, at instant `micros` (UTC).
    pub fn offset_at(&self, micros: i64) -> i32 {
        if self.id == 0 {
            return 0;
        }
        self.rules.to_offset(rules_instant(micros)).seconds()
    }

    /// The instant of a local wall-clock time (microseconds since 1970-01-01, read in this
    /// zone). As PostgreSQL does, a time skipped by a change to daylight time is read with the
    /// offset before the change, and a time that happens twice with the offset after it.
    pub fn to_utc(&self, local: i64) -> i64 {
        if self.id == 0 {
            return local;
        }
        let civil = TimeZone::UTC.to_datetime(rules_instant(local));
        let offset = match self.rules.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset,
            AmbiguousOffset::Gap { before, .. } => before,
            AmbiguousOffset::Fold { after, .. } => after,
        };
        local.saturating_sub(i64::from(offset.seconds()) * 1_000_000)
    }

    /// The local wall-clock time of instant `micros`.
    pub fn to_local(&self, micros: i64) -> i64 {
        micros.saturating_add(i64::from(self.offset_at(micros)) * 1_000_000)
    }
}

thread_local! {
    /// Which session environment the thread holds: (session, settings changes), as [`enter`]
    /// was last given it.
    static ENTERED: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((u64::MAX, 0)) };
}

/// Runs `install` (which installs a session's zone and other per-thread settings) unless the
/// thread holds the environment `key` names already.
#[inline]
pub fn enter(key: (u64, u64), install: impl FnOnce()) {
    ENTERED.with(|entered| {
        if entered.get() != key {
            entered.set(key);
            install();
        }
    });
}

/// The session whose environment the thread holds.
pub(super) fn entered_session() -> u64 {
    ENTERED.with(|entered| entered.get().0)
}

/// Installs `zone` as this thread's zone, unless it already is.
pub fn install(zone: &Zone) {
    CURRENT.with(|current| {
        if current.borrow().id != zone.id {
            *current.borrow_mut() = zone.clone();
        }
    });
}

/// The zone in force on this thread.
pub fn current() -> Zone {
    CURRENT.with(|current| current.borrow().clone())
}

/// Runs `body` with the zone in force on this thread, without cloning it.
pub fn with_current<T>(body: impl FnOnce(&Zone) -> T) -> T {
    CURRENT.with(|current| body(&current.borrow()))
}

/// Offsets of the abbreviations PostgreSQL's default set knows and people write most.
fn abbreviation(lower: &str) -> Option<i32> {
    let hours = |h: i32| Some(h * 3600);
    match lower {
        "ut" => hours(0),
        "est" => hours(-5),
        "edt" => hours(-4),
        "cst" => hours(-6),
        "cdt" => hours(-5),
        "mst" => hours(-7),
        "mdt" => hours(-6),
        "pst" => hours(-8),
        "pdt" => hours(-7),
        "akst" => hours(-9),
        "akdt" => hours(-8),
        "hst" => hours(-10),
        "bst" => hours(1),
        "cet" | "met" => hours(1),
        "cest" | "mest" => hours(2),
        "eet" => hours(2),
        "eest" => hours(3),
        "wet" => hours(0),
        "west" => hours(1),
        "msk" => hours(3),
        "ist" => hours(2),
        "jst" | "kst" => hours(9),
        "aest" => hours(10),
        "aedt" => hours(11),
        "nzst" => hours(12),
        "nzdt" => hours(13),
        _ => None,
    }
}

/// A number of hours east of UTC, as `SET TIME ZONE -7` gives it (fractions allowed).
fn parse_hours(text: &str) -> Option<i32> {
    let hours: f64 = text.parse().ok()?;
    (hours.is_finite() && hours.abs() < 16.0).then(|| (hours * 3600.0).round() as i32)
}

/// An offset written `+5`, `-08`, `+05:30`, `+0530`, `-08:00:00`: seconds east of UTC.
pub fn parse_offset(text: &str) -> Option<i32> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let mut fields = [0i32; 3];
    if digits.contains(':') {
        let mut count = 0;
        for (at, field) in digits.split(':').enumerate() {
            if at >= 3 || field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            fields[at] = field.parse().ok()?;
            count += 1;
        }
        if count == 0 {
            return None;
        }
    } else {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match digits.len() {
            1 | 2 => fields[0] = digits.parse().ok()?,
            3 | 4 => {
                let split = digits.len() - 2;
                fields[0] = digits[..split].parse().ok()?;
                fields[1] = digits[split..].parse().ok()?;
            }
            5 | 6 => {
                let (h, rest) = digits.split_at(digits.len() - 4);
                fields = [h.parse().ok()?, rest[..2].parse().ok()?, rest[2..].parse().ok()?];
            }
            _ => return None,
        }
    }
    let [hours, minutes, seconds] = fields;
    if hours > 15 || minutes > 59 || seconds > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60 + seconds))
}

/// Writes an offset as PostgreSQL's ISO style does: `+00`, `-08`, `+05:30`, `-00:01:15`.
pub fn write_offset(seconds: i32, out: &mut String) {
    let sign = if seconds < 0 { '-' } else { '+' };
    let seconds = seconds.unsigned_abs();
    let _ = write!(out, "{sign}{:02}", seconds / 3600);
    if !seconds.is_multiple_of(3600) {
        let _ = write!(out, ":{:02}", seconds / 60 % 60);
        if !seconds.is_multiple_of(60) {
            let _ = write!(out, ":{:02}", seconds % 60);
        }
    }
}
