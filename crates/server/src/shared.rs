//! What every connection of a server shares, and the shutdown signal they watch.

use crate::config::{AuthMethod, ServerConfig};
use crate::metrics::Metrics;
use engram_sql::SqlDb;
use parking_lot::Mutex;
use pgwire::api::auth::sasl::scram::ScramSecret;
use pgwire::messages::startup::SecretKey;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use tokio::sync::watch;

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) db: Arc<SqlDb>,
    pub(crate) config: ServerConfig,
    pub(crate) auth: AuthMethod,
    pub(crate) secrets: HashMap<String, ScramSecret>,
    pub(crate) tls: Option<pgwire::tokio::TlsAcceptor>,
    pub(crate) watcher: engram_engine::DurabilityWatcher,
    pub(crate) metrics: Arc<Metrics>,
    /// Cancel keys: process id -> (secret, the connection's cancel flag).
    pub(crate) cancels: Mutex<HashMap<i32, (i32, Arc<AtomicBool>)>>,
    pub(crate) next_pid: AtomicI32,
}

impl Shared {
    /// A cancel request: flags the connection if the key matches (no reply, as in
    /// PostgreSQL). COPY checks the flag between chunks; a statement runs in microseconds
    /// to milliseconds and is not interrupted.
    pub(crate) fn cancel(&self, pid: i32, secret: &SecretKey) {
        // Decoded before the protocol version is known, a 4-byte key may arrive as bytes.
        let secret = match secret {
            SecretKey::I32(secret) => *secret,
            SecretKey::Bytes(bytes) if bytes.len() == 4 => {
                i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
            }
            SecretKey::Bytes(_) => return,
        };
        let secret = &secret;
        if let Some((expected, flag)) = self.cancels.lock().get(&pid)
            && expected == secret
        {
            flag.store(true, Ordering::Relaxed);
        }
    }

    pub(crate) fn gauges(&self) -> Vec<(&'static str, &'static str, f64)> {
        let engine = self.db.database();
        let global = engine.epochs().global().0;
        let durable = self.watcher.durable().0;
        // An idle log writes nothing, so the durable epoch stays behind the global one while
        // nothing waits: the lag that matters is behind the newest epoch a commit waited for.
        let lag = self.watcher.demand().0.saturating_sub(durable);
        vec![
            ("engram_epoch", "The global epoch.", global as f64),
            (
                "engram_epoch_lag",
                "Epochs between the newest epoch a commit waited for and the durable epoch.",
                lag as f64,
            ),
            ("engram_resident_bytes", "Resident memory of the process.", resident_bytes() as f64),
        ]
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("auth", &self.auth).finish()
    }
}

fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1).and_then(|pages| pages.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

/// Completes when `shutdown` turns true (or its sender is gone).
pub(crate) async fn stopped(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
