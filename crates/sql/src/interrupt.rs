//! Stopping a running statement: its deadline, the client's cancel flag, and the hook a server
//! is called through when a statement runs long.

use crate::error::{SqlError, SqlResult};

/// Why a running statement should stop: `statement_timeout` passed, or the client asked to
/// cancel. Scans count the rows they visit here and check every [`INTERRUPT_CHECK_ROWS`] rows
/// of the statement, whichever scans the rows come from: a join that runs a million inner scans
/// of twenty rows each is stopped as surely as one long scan.
///
/// A server also learns here that a statement runs long: past `long_after`, `on_long` is
/// called once (Engram's server hands its event loop to another thread then, so that one long
/// statement does not hold up other clients).
#[derive(Debug, Default)]
pub struct Interrupt {
    pub deadline: Option<std::time::Instant>,
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// When the running statement started (set only when `on_long` is).
    pub started: Option<std::time::Instant>,
    pub long_after: std::time::Duration,
    pub on_long: Option<fn()>,
    pub(crate) reported_long: std::cell::Cell<bool>,
    /// Rows the running statement's scans have visited (wrapping).
    pub(crate) visited: std::cell::Cell<u32>,
}

/// Rows a scan visits between two interruption checks (a clock read each).
pub const INTERRUPT_CHECK_ROWS: u32 = 1024;

impl Interrupt {
    /// Counts one visited row, and checks every [`INTERRUPT_CHECK_ROWS`] rows.
    #[inline]
    pub fn tick(&self) -> SqlResult<()> {
        let visited = self.visited.get().wrapping_add(1);
        self.visited.set(visited);
        if visited.is_multiple_of(INTERRUPT_CHECK_ROWS) { self.check() } else { Ok(()) }
    }

    pub fn check(&self) -> SqlResult<()> {
        if let Some(cancel) = &self.cancel
            && cancel.load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(SqlError::new("57014", "canceling statement due to user request"));
        }
        if let Some(deadline) = self.deadline
            && std::time::Instant::now() >= deadline
        {
            return Err(SqlError::new("57014", "canceling statement due to statement timeout"));
        }
        if let (Some(on_long), Some(started)) = (self.on_long, self.started)
            && !self.reported_long.get()
            && started.elapsed() >= self.long_after
        {
            self.reported_long.set(true);
            on_long();
        }
        Ok(())
    }
}
