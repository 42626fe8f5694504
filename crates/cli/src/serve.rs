//! `engram serve`: the PostgreSQL wire-protocol server over a data directory.

use clap::Args;
use engram_engine::{Config, Durability, Gc, Protocol, VersionStorage};
use engram_server::{AuthMethod, Server, ServerConfig};
use engram_sql::SqlDb;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    /// The data directory (created if missing). Without it the database lives in memory
    /// only and is gone when the server stops.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Address to listen on (overrides the config file; default 127.0.0.1:5433).
    #[arg(long)]
    listen: Option<String>,
    /// Also listen on the Unix-domain socket DIR/.s.PGSQL.<port>, where `psql -h DIR -p PORT`
    /// connects (overrides the config file's `unix_socket_dir`).
    #[arg(long, value_name = "DIR")]
    unix_socket_dir: Option<PathBuf>,
    /// A TOML configuration file (see crates/server/src/config.rs and docs/server.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// off | epoch (default, with --data): COMMIT is answered once its epoch is durable.
    #[arg(long)]
    durability: Option<String>,
    /// trust | scram (default: trust on a loopback address, scram elsewhere).
    #[arg(long)]
    auth: Option<String>,
    /// Connections served at once.
    #[arg(long)]
    max_connections: Option<usize>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long)]
    metrics_listen: Option<String>,
    /// Event-loop threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Epoch interval in milliseconds: group commit waits for the epoch to end, so this is
    /// the floor of commit latency with durability on (Silo used 40 ms for batch throughput;
    /// a server answering interactive clients wants a short one).
    #[arg(long, default_value_t = 2)]
    epoch_ms: u64,
    /// While a COMMIT waits for durability, end its epoch once it is this many microseconds
    /// old instead of at --epoch-ms (0: only at --epoch-ms). Shorter answers commits sooner
    /// and uses up epochs faster: 2^38 epochs last 8.7 years at 1 ms.
    #[arg(long, default_value_t = 1000)]
    epoch_min_us: u64,
    /// Memory (MiB) mapped and faulted in at start for rows and index nodes.
    #[arg(long, default_value_t = 0)]
    reserve_memory_mib: usize,
    /// Log space (MiB) written as spare segments at start, so that the log writes over written
    /// blocks from the first commit (docs/durability.md, "Spare segments").
    #[arg(long, default_value_t = 0)]
    log_reserve_mib: u64,
    /// Concurrency-control protocol: silo (default), si, mvocc, ssn, mvto or mv2pl
    /// (docs/isolation.md).
    #[arg(long, default_value = "silo")]
    protocol: String,
    /// Where versions are kept: time-travel (default), append-n2o, append-o2n or delta
    /// (docs/architecture.md, Wu et al.'s version storage).
    #[arg(long, default_value = "time-travel")]
    version_storage: String,
    /// How superseded versions are removed: transaction (default), tuple-vacuum,
    /// tuple-cooperative (needs --version-storage append-o2n) or none.
    #[arg(long, default_value = "transaction")]
    gc: String,
}

pub fn run(args: ServeArgs) -> Result<(), String> {
    let mut config = match &args.config {
        Some(path) => ServerConfig::from_file(path)?,
        None => ServerConfig::default(),
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(dir) = args.unix_socket_dir {
        config.unix_socket_dir = Some(dir);
    }
    if let Some(auth) = &args.auth {
        config.auth = Some(match auth.as_str() {
            "trust" => AuthMethod::Trust,
            "scram" => AuthMethod::Scram,
            other => return Err(format!("--auth {other}: expected trust or scram")),
        });
    }
    if let Some(max) = args.max_connections {
        config.max_connections = max;
    }
    if let Some(listen) = args.metrics_listen {
        config.metrics_listen = Some(listen);
    }
    if let Some(threads) = args.threads {
        config.threads = threads;
    }
    let durability: Durability = match (&args.durability, &args.data) {
        (Some(mode), _) => mode.parse()?,
        (None, Some(_)) => Durability::Epoch,
        (None, None) => Durability::Off,
    };
    if durability == Durability::Epoch && args.data.is_none() {
        return Err("--durability epoch needs --data DIR".into());
    }
    if args.epoch_ms == 0 {
        return Err("--epoch-ms must be at least 1".into());
    }
    let protocol = Protocol::parse(&args.protocol)?;
    let version_storage: VersionStorage = args.version_storage.parse()?;
    let gc: Gc = args.gc.parse()?;
    // Snapshots stay about a second apart and idle transactions are given up after about
    // ten seconds, whatever the epoch length. Epochs ended early for waiting commits are
    // shorter: snapshots then come sooner, and the idle limit counts them at their shortest
    // so that it is never under ten seconds.
    let interval_us = args.epoch_ms.saturating_mul(1000);
    let shortest_us = match args.epoch_min_us {
        0 => interval_us,
        us => us.min(interval_us),
    };
    let engine = Config {
        protocol,
        version_storage,
        gc,
        data_dir: args.data.clone(),
        durability,
        reserved_memory_bytes: args.reserve_memory_mib << 20,
        log_reserve_bytes: args.log_reserve_mib << 20,
        epoch_interval_ms: args.epoch_ms,
        epoch_min_us: args.epoch_min_us,
        snapshot_interval_epochs: (1000 / args.epoch_ms).max(1),
        idle_transaction_epochs_max: (10_000_000 / shortest_us).max(2),
        ..Config::default()
    };
    let db = SqlDb::open(engine)
        .map_err(|error| format!("cannot open the database: {}", error.message))?;
    if let Some(report) = db.database().recovery_report() {
        println!("{}", recovery_line(db.table_names().len(), report));
        tracing::debug!(?report, "recovered");
    }
    let runtime = engram_server::runtime(config.threads).map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let server = Server::bind(db, config).await.map_err(|e| format!("cannot listen: {e}"))?;
        let addr = server.local_addr();
        println!(
            "engram: listening on {addr} ({} authentication, durability {}, data {})",
            match server.auth() {
                AuthMethod::Trust => "trust",
                AuthMethod::Scram => "SCRAM-SHA-256",
            },
            match durability {
                Durability::Off => "off",
                Durability::Epoch => "epoch",
            },
            args.data.as_ref().map_or_else(|| "in memory".to_string(), |d| d.display().to_string()),
        );
        println!("engram: connect with  psql -h {} -p {} -U postgres engram", addr.ip(), addr.port());
        if let Some(path) = server.unix_socket_path() {
            let dir = path.parent().unwrap_or(path);
            println!(
                "engram: or on the Unix socket {}: psql -h {} -p {} -U postgres engram",
                path.display(),
                dir.display(),
                addr.port()
            );
        }
        if let Some(metrics) = server.metrics_addr() {
            println!("engram: metrics at http://{metrics}/metrics");
        }
        let (stop, shutdown) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut terminate =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match terminate.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            }
            tracing::info!("shutting down: rolling back open transactions, flushing the log");
            let _ = stop.send(true);
        });
        server.run(shutdown, Duration::from_secs(10)).await;
        Ok::<(), String>(())
    })?;
    // The database is dropped here: the loggers write and sync what was committed.
    println!("engram: stopped");
    Ok(())
}

/// What an open recovered, in one line for people (the whole report is logged at debug level).
fn recovery_line(tables: usize, report: &engram_engine::RecoveryReport) -> String {
    let mib = |bytes: u64| bytes as f64 / f64::from(1 << 20);
    let mut line = format!("engram: opened {tables} table{}", if tables == 1 { "" } else { "s" });
    if report.checkpoint_epoch.is_some() {
        line += &format!(
            ", a checkpoint of {} rows ({:.1} MiB)",
            report.checkpoint_rows,
            mib(report.checkpoint_bytes)
        );
    }
    if report.log_bytes > 0 {
        line += &format!(
            ", {} transactions replayed from {:.1} MiB of log",
            report.log_transactions,
            mib(report.log_bytes)
        );
    }
    if !report.torn_tails.is_empty() {
        line += &format!(", {} torn log tails cut", report.torn_tails.len());
    }
    line + &format!(" in {:.2} s", report.total_seconds)
}
