//! Counters and histograms for `/metrics` (Prometheus text format), kept with relaxed
//! atomics on the paths that run per statement.

use engram_sql::{Outcome, SqlError, SqlResult};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] =
    [0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.05, 0.25, 1.0];

#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn record(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        if let Some(at) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            self.buckets[at].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(elapsed.as_nanos() as u64, Relaxed);
    }

    fn write(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += bucket.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {}", self.sum_nanos.load(Relaxed) as f64 / 1e9);
        let _ = writeln!(out, "{name}_count {count}");
    }
}

#[derive(Debug, Default)]
pub struct Metrics {
    connections_open: AtomicU64,
    connections_total: AtomicU64,
    auth_failures: AtomicU64,
    statements: AtomicU64,
    commits: AtomicU64,
    errors: AtomicU64,
    /// Aborts by concurrency control (40001), by the engine's reason.
    aborts: Mutex<BTreeMap<String, u64>>,
    statement_latency: Histogram,
    durable_wait: Histogram,
}

/// A connection counted against `max_connections`; uncounted when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Metrics>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Relaxed);
    }
}

impl Metrics {
    pub(crate) fn open_connection(self: &Arc<Self>, max: usize) -> Option<Slot> {
        let open = self.connections_open.fetch_add(1, Relaxed);
        if open as usize >= max {
            self.connections_open.fetch_sub(1, Relaxed);
            return None;
        }
        self.connections_total.fetch_add(1, Relaxed);
        Some(Slot(Arc::clone(self)))
    }

    pub fn connections_open(&self) -> u64 {
        self.connections_open.load(Relaxed)
    }

    pub(crate) fn auth_failed(&self) {
        self.auth_failures.fetch_add(1, Relaxed);
    }

    pub(crate) fn statement(&self, elapsed: Duration, result: &SqlResult<Outcome>) {
        self.statements.fetch_add(1, Relaxed);
        self.statement_latency.record(elapsed);
        if let Ok(outcome) = result
            && matches!(outcome.tag(), "COMMIT")
        {
            self.commits.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn durable_wait(&self, elapsed: Duration) {
        self.durable_wait.record(elapsed);
    }

    pub(crate) fn error(&self, error: &SqlError) {
        self.errors.fetch_add(1, Relaxed);
        if error.code == "40001" {
            let reason = error.abort.map_or_else(|| "other".to_string(), |r| format!("{r:?}"));
            *self.aborts.lock().entry(reason).or_default() += 1;
        }
    }

    /// The Prometheus text exposition; `gauges` adds lines computed at scrape time.
    pub fn render(&self, gauges: &[(&str, &str, f64)]) -> String {
        let mut out = String::new();
        let mut counter = |name: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        };
        counter(
            "engram_connections_total",
            "Connections accepted.",
            self.connections_total.load(Relaxed),
        );
        counter(
            "engram_auth_failures_total",
            "Failed authentications.",
            self.auth_failures.load(Relaxed),
        );
        counter("engram_statements_total", "Statements executed.", self.statements.load(Relaxed));
        counter(
            "engram_commits_total",
            "Explicit COMMITs that succeeded.",
            self.commits.load(Relaxed),
        );
        counter("engram_errors_total", "Errors sent to clients.", self.errors.load(Relaxed));
        let _ = writeln!(
            out,
            "# HELP engram_aborts_total Transactions aborted by concurrency control, by reason.\n# TYPE engram_aborts_total counter"
        );
        for (reason, count) in self.aborts.lock().iter() {
            let _ = writeln!(out, "engram_aborts_total{{reason=\"{reason}\"}} {count}");
        }
        let _ = writeln!(
            out,
            "# HELP engram_connections Open client connections.\n# TYPE engram_connections gauge\nengram_connections {}",
            self.connections_open.load(Relaxed)
        );
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        }
        self.statement_latency.write(
            &mut out,
            "engram_statement_seconds",
            "Statement execution time.",
        );
        self.durable_wait.write(
            &mut out,
            "engram_durable_wait_seconds",
            "Time replies waited for their commit's epoch to be durable.",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_limit_and_exposition() {
        let metrics = Arc::new(Metrics::default());
        let first = metrics.open_connection(2).unwrap();
        let _second = metrics.open_connection(2).unwrap();
        assert!(metrics.open_connection(2).is_none());
        drop(first);
        assert!(metrics.open_connection(2).is_some());
        metrics
            .statement(Duration::from_micros(30), &Ok(Outcome::Command { tag: "COMMIT".into() }));
        let mut abort = SqlError::new("40001", "x");
        abort.abort = Some(engram_engine::AbortReason::ReadValidation);
        metrics.error(&abort);
        let text = metrics.render(&[("engram_epoch_lag", "Epochs.", 2.0)]);
        assert!(text.contains("engram_commits_total 1"), "{text}");
        assert!(text.contains("engram_aborts_total{reason=\"ReadValidation\"} 1"), "{text}");
        assert!(text.contains("engram_statement_seconds_bucket{le=\"0.00005\"} 1"), "{text}");
        assert!(text.contains("engram_epoch_lag 2"), "{text}");
    }
}
