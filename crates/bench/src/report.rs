//! What every benchmark reports: latency percentiles from per-thread histograms, live
//! progress, the machine it ran on, and JSON.

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Latency of one in this many transactions is measured, so that reading the clock does not
/// weigh on short transactions (two clock reads are a tenth of a 400 ns transaction).
pub const LATENCY_SAMPLE_EVERY: u64 = 8;

/// Per-thread latency recorder in microseconds (3 significant digits, up to an hour).
#[derive(Debug, Clone)]
pub struct Latency {
    histogram: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            histogram: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds"),
        }
    }
}

impl Latency {
    pub fn record(&mut self, elapsed: Duration) {
        // Whole microseconds without `as_nanos`, whose u128 division is a call to `__udivti3`:
        // this runs once per commit, twice with durability on.
        let micros =
            elapsed.as_secs().saturating_mul(1_000_000) + u64::from(elapsed.subsec_micros());
        let micros = micros.clamp(1, 3_600_000_000);
        self.histogram.saturating_record(micros);
    }

    pub fn merge(&mut self, other: &Latency) {
        self.histogram.add(&other.histogram).expect("same bounds");
    }

    pub fn summary(&self) -> Percentiles {
        let at = |q: f64| {
            if self.histogram.is_empty() { 0.0 } else { self.histogram.value_at_quantile(q) as f64 }
        };
        Percentiles { p50: at(0.50), p95: at(0.95), p99: at(0.99), samples: self.histogram.len() }
    }
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub samples: u64,
}

/// A counter per thread on its own cache line, summed by the progress display.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct PaddedCounter(pub AtomicU64);

/// A progress bar over a run of known duration, showing live throughput.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
}

impl Progress {
    pub fn new(label: &str, duration: Duration, enabled: bool) -> Progress {
        let bar = if enabled {
            ProgressBar::new(duration.as_millis() as u64)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix:>24} [{bar:30}] {elapsed:>4} {msg}")
                .expect("template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Progress { bar, started: Instant::now() }
    }

    /// Polls `counters` until `duration` has passed, updating the display every 100 ms.
    pub fn watch(&self, counters: &[PaddedCounter], duration: Duration) {
        let mut last = (Instant::now(), 0u64);
        while self.started.elapsed() < duration {
            std::thread::sleep(
                Duration::from_millis(100).min(duration.saturating_sub(self.started.elapsed())),
            );
            let total: u64 = counters.iter().map(|counter| counter.0.load(Ordering::Relaxed)).sum();
            let now = Instant::now();
            let rate = (total - last.1) as f64 / now.duration_since(last.0).as_secs_f64().max(1e-9);
            last = (now, total);
            self.bar.set_position(self.started.elapsed().as_millis() as u64);
            self.bar.set_message(format!("{:>12} txn/s", format_rate(rate)));
        }
        self.bar.finish_and_clear();
    }
}

pub fn format_rate(rate: f64) -> String {
    let digits = format!("{:.0}", rate);
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Where and when a figure was measured.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub date: String,
    pub commit: String,
}

impl Machine {
    pub fn describe() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split(':').nth(1))
                    .map(|name| name.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let commit = std::process::Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        Machine { cpu, cores, date: today(), commit }
    }
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let days = (seconds / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &std::path::Path, value: &impl Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|error| error.to_string())?;
    std::fs::write(path, text + "\n")
        .map_err(|error| format!("cannot write {}: {error}", path.display()))
}

/// The order in which round `round` (from 0) measures `count` configurations: as given in
/// even rounds, reversed in odd ones (A B, B A, A B, ...), so that none always runs first or
/// always last: whatever running after another costs (its leftover garbage and background
/// work, caches it left cold) falls on each alike over every two rounds.
pub fn round_order(round: u32, count: usize) -> impl Iterator<Item = usize> {
    let reversed = round % 2 == 1;
    (0..count).map(move |index| if reversed { count - 1 - index } else { index })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_dates_format() {
        assert_eq!(format_rate(1234567.4), "1,234,567");
        assert_eq!(format_rate(12.0), "12");
        let date = today();
        assert_eq!(date.len(), 10);
        assert!(date.starts_with("20"));
    }

    #[test]
    fn latency_percentiles() {
        let mut latency = Latency::default();
        for micros in 1..=100u64 {
            latency.record(Duration::from_micros(micros));
        }
        let summary = latency.summary();
        assert_eq!(summary.samples, 100);
        assert!((49.0..=51.0).contains(&summary.p50), "{summary:?}");
        assert!((98.0..=100.0).contains(&summary.p99), "{summary:?}");
    }

    #[test]
    fn latencies_are_whole_microseconds_clamped_to_the_histogram() {
        let recorded = |elapsed: Duration| {
            let mut latency = Latency::default();
            latency.record(elapsed);
            latency.summary().p50
        };
        assert_eq!(recorded(Duration::from_nanos(1_999)), 1.0);
        assert_eq!(recorded(Duration::ZERO), 1.0, "below a microsecond counts as one");
        let seconds = recorded(Duration::new(3, 250_000_999));
        assert!((3_249_000.0..=3_252_000.0).contains(&seconds), "{seconds}");
        let hours = recorded(Duration::from_secs(5 * 3_600));
        assert!(hours >= 3_599_000_000.0, "clamped to the bound: {hours}");
    }

    #[test]
    fn rounds_alternate_the_order_so_positions_even_out() {
        let order = |round, count| round_order(round, count).collect::<Vec<_>>();
        assert_eq!(order(0, 2), [0, 1]);
        assert_eq!(order(1, 2), [1, 0]);
        assert_eq!(order(2, 3), [0, 1, 2]);
        assert_eq!(order(3, 3), [2, 1, 0]);
        for count in 1..6 {
            // Over two rounds, every configuration runs twice, at positions summing to the
            // same total: none is always first or always last.
            let mut runs = vec![0; count];
            let mut positions = vec![0; count];
            for round in 0..2 {
                for (position, index) in round_order(round, count).enumerate() {
                    runs[index] += 1;
                    positions[index] += position;
                }
            }
            assert!(runs.iter().all(|&runs| runs == 2), "{count}: {runs:?}");
            assert!(positions.iter().all(|&sum| sum == count - 1), "{count}: {positions:?}");
        }
    }
}

/// A key that aborted transactions during a measurement (`engram_engine::ConflictStats`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ContendedKey {
    pub table: String,
    pub key: String,
    pub reason: String,
    pub aborts: u64,
}

/// Contended keys a report lists.
pub const CONTENDED_KEYS_SHOWN: usize = 5;

/// Aborts per (table, key, reason) counted between two looks at an engine's conflict
/// statistics, added to `into`, each key written by `render`.
pub fn note_contention(
    db: &engram_engine::Database,
    before: &engram_engine::ConflictStats,
    render: fn(&[u8]) -> String,
    into: &mut std::collections::BTreeMap<(String, String, String), u64>,
) {
    let during = db.conflict_stats().since(before);
    for hot in during.hot_keys {
        let table = hot.site.table.and_then(|table| db.table_name(table)).unwrap_or_default();
        let reason = hot.site.reason.name().to_string();
        *into.entry((table, render(&hot.key), reason)).or_default() += hot.count;
    }
}

/// Adds one measurement's contended keys (`note_contention`) to another's.
pub fn merge_contention(
    into: &mut std::collections::BTreeMap<(String, String, String), u64>,
    from: &std::collections::BTreeMap<(String, String, String), u64>,
) {
    for (key, count) in from {
        *into.entry(key.clone()).or_default() += count;
    }
}

/// A key as hex bytes.
pub fn hex_key(key: &[u8]) -> String {
    key.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The most counted of `tally`'s keys, most first.
pub fn contended_keys(
    tally: &std::collections::BTreeMap<(String, String, String), u64>,
) -> Vec<ContendedKey> {
    let mut keys: Vec<ContendedKey> = tally
        .iter()
        .map(|((table, key, reason), aborts)| ContendedKey {
            table: table.clone(),
            key: key.clone(),
            reason: reason.clone(),
            aborts: *aborts,
        })
        .collect();
    keys.sort_by_key(|key| std::cmp::Reverse(key.aborts));
    keys.truncate(CONTENDED_KEYS_SHOWN);
    keys
}

/// `table[key] reason=aborts, ...` for a report line; "-" when none.
pub fn contended_line(keys: &[ContendedKey]) -> String {
    if keys.is_empty() {
        return "-".to_string();
    }
    let shown: Vec<String> = keys
        .iter()
        .map(|key| format!("{}[{}] {}={}", key.table, key.key, key.reason, key.aborts))
        .collect();
    shown.join(", ")
}
