//! `engram`: the command line. Each subcommand is a thin layer over a library crate.

use clap::{Args, Parser, Subcommand};
use engram_bench::report::{format_rate, write_json};
use engram_bench::tpcc::engram::{EngramTpcc, Persistence, ReadOnlyLevels};
use engram_engine::{Durability, Gc, IndexPointers, Protocol, VersionStorage};

mod bench_ddl;
mod bench_ycsb;
use bench_ycsb::YcsbArgs;
mod crash;
mod serve;
use engram_bench::db::Either;
use engram_bench::tpcc::{self, spec::Scale, sql::SqlTpcc, sqlite::SqliteTpcc, wire::WireTpcc};
use engram_bench::{index, paper, plot, ycsb};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "engram", version, about = "Engram: a multi-core in-memory OLTP database")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark.
    Bench {
        #[command(subcommand)]
        benchmark: Benchmark,
    },
    /// Serve the database to PostgreSQL clients (psql, pgbench, sysbench, drivers).
    Serve(serve::ServeArgs),
    /// Verify a data directory without changing it: checksums of every checkpoint and log
    /// block, record structure, the catalog.
    Check {
        /// The data directory.
        #[arg(long)]
        data: PathBuf,
        /// Also recover a scratch copy of the directory and read every SQL row under the
        /// schema version it was written in (needs room for the copy).
        #[arg(long)]
        rows: bool,
    },
    /// Crash a child process running bank transfers or TPC-C with SIGKILL at random moments,
    /// recover, and check that every acknowledged commit survived and the data is consistent.
    CrashTest(crash::CrashArgs),
    /// The workload process of `crash-test` (not for direct use).
    #[command(hide = true)]
    CrashChild(crash::ChildArgs),
}

#[derive(Subcommand)]
enum Benchmark {
    /// YCSB (Silo's variant, or Wu et al.'s read-only / read-intensive / update-intensive mixes).
    Ycsb(YcsbArgs),
    /// The B+tree against other concurrent ordered maps.
    Index(IndexArgs),
    /// TPC-C (v5.11, throughput mode) with consistency checks, on Engram or SQLite.
    Tpcc(TpccArgs),
    /// The time of each ALTER TABLE on tables of n rows, on Engram, SQLite and PostgreSQL.
    Ddl(bench_ddl::DdlArgs),
    /// Draw throughput against threads (or skew) from the JSON of ycsb and tpcc runs.
    Plot(PlotArgs),
    /// Open (recover) a data directory and report how long each recovery phase took.
    Recovery(RecoveryArgs),
    /// Wu et al.'s MVCC experiments (VLDB 2017, Figs. 6-23): a JSON result and an SVG plot per
    /// figure panel (docs/paper.md).
    Paper(PaperArgs),
}

#[derive(Args)]
struct PaperArgs {
    /// Figures to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    figure: Vec<u32>,
    /// Small tables and short points (100,000 rows, tiny TPC-C, 0.3 s per point).
    #[arg(long)]
    quick: bool,
    /// The most worker threads, standing in for the paper's 40 (default: the number of cores).
    #[arg(long)]
    threads: Option<usize>,
    /// YCSB rows (default: the paper's 10,000,000; 100,000 with --quick).
    #[arg(long)]
    rows: Option<u64>,
    /// Seconds each protocol is measured at each point (default 2; 0.3 with --quick).
    #[arg(long)]
    seconds: Option<f64>,
    /// Protocols, comma-separated (default: mvto, mvocc, mv2pl, ssn, si, silo).
    #[arg(long, value_delimiter = ',')]
    protocol: Vec<String>,
    /// Directory for the JSON results and plots.
    #[arg(long, default_value = "paper")]
    out: PathBuf,
    /// Plot format: svg or png.
    #[arg(long, default_value = "svg")]
    format: String,
    /// Seed of the key and operation choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct RecoveryArgs {
    /// The data directory (for example one written by `bench tpcc --durability epoch`).
    #[arg(long)]
    data: PathBuf,
    /// Recovery threads (default: every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Recover this many times (each open replays the same checkpoint and log).
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// After each open, take a checkpoint on one thread and report its cost per row (this
    /// writes the checkpoint into the directory and removes what it supersedes).
    #[arg(long)]
    checkpoint: bool,
    /// Write the reports as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Where and how a benchmark's database logs, and the protocol it runs.
#[derive(Args, Clone)]
struct DurabilityArgs {
    /// Concurrency-control protocol: silo, si, mvocc, ssn, mvto or mv2pl (docs/isolation.md);
    /// with TPC-C, a comma-separated list measured in alternating rounds, each on its own
    /// database.
    #[arg(long, value_delimiter = ',', default_value = "silo")]
    protocol: Vec<String>,
    /// off | epoch | epoch-patches (epoch, with updates logged as the bytes they change
    /// instead of whole rows), or (TPC-C) a comma-separated list measured in alternating
    /// rounds, each on its own database.
    #[arg(long, value_delimiter = ',', default_value = "off")]
    durability: Vec<String>,
    /// Data directory for `--durability epoch` (must not hold a database yet; with several
    /// databases each gets a subdirectory).
    #[arg(long)]
    data: Option<PathBuf>,
    /// LZ4-compress log blocks.
    #[arg(long)]
    log_compression: bool,
    /// MiB of log between background checkpoints (0: none during the run).
    #[arg(long)]
    checkpoint_log_mib: Option<u64>,
    /// ...and at least this many times the database's size, estimated from the last
    /// checkpoint (0: MiB alone decide; default 8).
    #[arg(long)]
    checkpoint_log_ratio: Option<u64>,
    /// Logger threads, each writing its own segments (default 1).
    #[arg(long)]
    loggers: Option<usize>,
    /// MiB of spare log segments written (as zeros) when each database opens, before its
    /// load: the log then writes over written blocks, as a long-running database's does once
    /// checkpoints hand their superseded segments back (default 0: a new log of fresh files).
    #[arg(long, default_value_t = 0)]
    log_reserve_mib: u64,
    /// Memory spaces the workers share for records and versions (0: one per worker, no
    /// lock; Wu et al.'s Fig. 16).
    #[arg(long, default_value_t = 0)]
    memory_spaces: usize,
    /// How superseded versions are removed: transaction (the writers, the default),
    /// tuple-vacuum (a background thread), tuple-cooperative (the readers; needs
    /// --version-storage append-o2n) or none (kept until deleted; experiments only).
    #[arg(long, default_value = "transaction", value_parser = parse_gc)]
    gc: Gc,
    /// Where versions are kept: time-travel (the newest in place, the default), append-n2o or
    /// append-o2n (every version its own block, chained newest or oldest first), or delta
    /// (the newest in place, older versions as records of the bytes that changed).
    #[arg(long, default_value = "time-travel", value_parser = parse_version_storage)]
    version_storage: VersionStorage,
    /// What secondary index entries name: logical (the record, the default) or physical (the
    /// version: every new version is added to every secondary index; needs --version-storage
    /// append-n2o or append-o2n).
    #[arg(long, default_value = "logical", value_parser = parse_index_pointers)]
    index_pointers: IndexPointers,
}

/// The most attributes a YCSB row may have: a row stays within the engine's value limit.
fn limits_attributes_max() -> usize {
    engram_engine::limits::VALUE_BYTES_MAX / ycsb::ATTRIBUTE_BYTES
}

fn parse_gc(text: &str) -> Result<Gc, String> {
    text.parse()
}

fn parse_version_storage(text: &str) -> Result<VersionStorage, String> {
    text.parse()
}

fn parse_index_pointers(text: &str) -> Result<IndexPointers, String> {
    text.parse()
}

/// A `--durability` entry: `off`, `epoch`, or `epoch-patches` (epoch, updates logged as the
/// bytes they change: `Config::log_patches`), so that the two logs compare in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    durability: Durability,
    patches: bool,
}

impl Mode {
    fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "epoch-patches" => Ok(Mode { durability: Durability::Epoch, patches: true }),
            other => Ok(Mode { durability: other.parse()?, patches: false }),
        }
    }

    fn name(self) -> String {
        let name = format!("{:?}", self.durability).to_lowercase();
        if self.patches { format!("{name}-patches") } else { name }
    }
}

impl DurabilityArgs {
    fn modes(&self) -> Result<Vec<Mode>, String> {
        let modes =
            self.durability.iter().map(|mode| Mode::parse(mode)).collect::<Result<Vec<_>, _>>()?;
        if modes.iter().any(|mode| mode.durability == Durability::Epoch) && self.data.is_none() {
            return Err("--durability epoch needs --data DIR".into());
        }
        Ok(modes)
    }

    fn protocols(&self) -> Result<Vec<Protocol>, String> {
        self.protocol.iter().map(|name| Protocol::parse(name)).collect()
    }

    /// The persistence of database `name` in mode `mode`, running the first protocol.
    fn persistence(&self, mode: Mode, name: Option<&str>) -> Result<Persistence, String> {
        let protocol = self.protocols()?[0];
        let Mode { durability: mode, patches } = mode;
        let data_dir = match (mode, &self.data) {
            (Durability::Epoch, Some(dir)) => {
                let dir = name.map_or_else(|| dir.clone(), |name| dir.join(name));
                if dir.join("MANIFEST").exists() {
                    return Err(format!(
                        "{} already holds a database; remove it or choose another --data",
                        dir.display()
                    ));
                }
                Some(dir)
            }
            _ => None,
        };
        Ok(Persistence {
            protocol,
            data_dir,
            durability: mode,
            log_compression: self.log_compression,
            log_patches: patches,
            checkpoint_log_bytes: self.checkpoint_log_mib.map(|mib| mib << 20),
            checkpoint_log_ratio: self.checkpoint_log_ratio,
            loggers: self.loggers,
            log_reserve_bytes: self.log_reserve_mib << 20,
            memory_spaces: self.memory_spaces,
            gc: self.gc,
            version_storage: self.version_storage,
            index_pointers: self.index_pointers,
            cooperative_sweep_interval_ms: None,
        })
    }
}

#[derive(Args)]
struct PlotArgs {
    /// JSON files written by `engram bench ycsb|tpcc --json`.
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// The image to write: FILE.png or FILE.svg.
    #[arg(long)]
    out: PathBuf,
    /// auto (skew when only theta varies, else threads) | threads | theta
    #[arg(long, default_value = "auto")]
    x: String,
    /// The title (default: the benchmark and what the runs share).
    #[arg(long)]
    title: Option<String>,
}

#[derive(Args)]
struct TpccArgs {
    /// Warehouses (default: one per thread of the largest thread count).
    #[arg(long)]
    warehouses: Option<u16>,
    /// Driver threads, or a comma-separated list measured in alternating rounds.
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Seconds of measurement (split over the rounds when several thread counts run).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// standard (45/43/4/4/4) | new-order-payment (50/50)
    #[arg(long, default_value = "standard")]
    mix: String,
    /// Run Wu et al.'s StockScan (scan STOCK, count items per warehouse) on one extra thread.
    #[arg(long)]
    stock_scan: bool,
    /// Run one ALTER TABLE every this many seconds from one more connection (engram-sql and
    /// the wire; `sql/ddl.rs` lists them).
    #[arg(long)]
    ddl_every: Option<f64>,
    /// engram (stored procedures) | engram-sql (prepared SQL in process) | sqlite |
    /// postgres://user@host:port/db (the SQL over the wire, to engram serve or PostgreSQL), or two of
    /// them separated by a comma, measured in alternating rounds of one run.
    #[arg(long, default_value = "engram")]
    db: String,
    /// Isolation of OrderStatus and StockLevel on Engram: specification (repeatable read and
    /// read committed, TPC-C's clause 3.4.0.1), serializable, or snapshot.
    #[arg(long, default_value = "specification")]
    read_only: String,
    /// Items (a smaller database for quick runs; the specification's is 100,000).
    #[arg(long, default_value_t = 100_000)]
    items: u32,
    /// Customers and initial orders per district (the specification's is 3,000).
    #[arg(long, default_value_t = 3_000)]
    customers: u32,
    /// Rounds when several thread counts run.
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Seed of the data and the inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// MiB of memory Engram maps and faults in after loading, for the orders a run adds
    /// (default: 200 MiB per thread-second of the run, at most three quarters of the
    /// available memory).
    #[arg(long)]
    reserve_memory_mib: Option<usize>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    durability: DurabilityArgs,
}

/// Memory a TPC-C run adds per thread-second, roughly: about 2.2 KiB per NewOrder (an order,
/// its new-order row and ten order lines with their index entries; measured as resident
/// memory growth) at up to 80,000 NewOrders a second per thread (the new-order-payment mix).
const TPCC_GROWTH_MIB_PER_THREAD_SECOND: f64 = 200.0;

/// The thread-seconds a TPC-C run measures, which its reserve is sized by: every
/// configuration (each thread count, or each of `databases_compared` databases, modes or
/// protocols at one thread count) runs for the whole duration, its rounds splitting it, and
/// all of them grow into one reserve. Dividing by the configurations reserved half of what two databases side by side add: the second one's last
/// round, with the reserve used up, ran up to 20% slower while the kernel faulted pages in
/// (`--durability off,off` measured 0.93-0.95 instead of 0.99-1.00).
fn tpcc_thread_seconds(thread_counts: &[usize], duration: f64, databases_compared: usize) -> f64 {
    thread_counts.iter().sum::<usize>() as f64 * duration * databases_compared.max(1) as f64
}

/// The default reserve: the run's expected growth, at most three quarters of the memory
/// available now (the rest is for the loaded tables and everything else on the machine).
fn default_tpcc_reserve_mib(thread_seconds: f64) -> usize {
    let wanted = (thread_seconds * TPCC_GROWTH_MIB_PER_THREAD_SECOND).ceil() as usize;
    let available_mib = engram_engine::mem::chunks::available_bytes().map(|bytes| bytes >> 20);
    available_mib.map_or(wanted, |available| wanted.min(available / 4 * 3))
}

#[derive(Args)]
struct IndexArgs {
    /// Key counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000")]
    sizes: Vec<u64>,
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Seconds of measurement per structure, operation and thread count (over all rounds).
    #[arg(long, default_value_t = 4.0)]
    seconds: f64,
    /// Alternating rounds the seconds are split into.
    #[arg(long, default_value_t = 8)]
    rounds: u32,
    /// Only these structures (comma-separated): engram, congee, scc-tree-index,
    /// crossbeam-skiplist, rwlock-btreemap.
    #[arg(long)]
    only: Option<String>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The median of the round-by-round ratios `a[i] / b[i]`: rounds that ran next to each other
/// saw the same machine, so a burst of noise in one round does not sway the result.
fn median_ratio(a: &[f64], b: &[f64]) -> Option<f64> {
    let mut ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let middle = ratios.len() / 2;
    Some(if ratios.len() % 2 == 1 {
        ratios[middle]
    } else {
        (ratios[middle - 1] + ratios[middle]) / 2.0
    })
}

fn tpcc_command(args: TpccArgs) -> Result<(), String> {
    let mix = tpcc::Mix::parse(&args.mix)
        .ok_or_else(|| format!("unknown mix {:?}: use standard or new-order-payment", args.mix))?;
    let mut thread_counts = args.threads.clone();
    if thread_counts.is_empty() {
        thread_counts.push(std::thread::available_parallelism().map_or(1, |n| n.get()));
    }
    if thread_counts.contains(&0) {
        return Err("--threads must be at least 1".into());
    }
    // Without --warehouses, each thread count gets a database with one warehouse per thread.
    let (warehouses, layout) = match args.warehouses {
        Some(warehouses) => (warehouses, tpcc::Warehouses::Shared),
        None => (
            *thread_counts.iter().max().expect("a thread count") as u16,
            tpcc::Warehouses::PerThread,
        ),
    };
    if warehouses == 0 {
        return Err("--warehouses must be at least 1".into());
    }
    if args.items < 100 || args.customers < 30 {
        return Err("--items must be at least 100 and --customers at least 30".into());
    }
    if args.duration.is_nan() || args.duration <= 0.0 {
        return Err("--duration must be positive".into());
    }
    let scale = Scale {
        warehouses,
        items: args.items,
        customers_per_district: args.customers,
        orders_per_district: args.customers,
        new_orders_per_district: args.customers * 3 / 10,
    };
    let options = tpcc::Options {
        scale,
        threads: thread_counts[0],
        duration: Duration::from_secs_f64(args.duration),
        mix,
        stock_scan: args.stock_scan,
        ddl_every: args.ddl_every.map(Duration::from_secs_f64),
        seed: args.seed,
        progress: !args.quiet,
    };
    let read_only = ReadOnlyLevels::parse(&args.read_only).ok_or_else(|| {
        format!(
            "unknown --read-only {:?}: use specification, serializable or snapshot",
            args.read_only
        )
    })?;
    let modes = args.durability.modes()?;
    let protocols = args.durability.protocols()?;
    if modes.len() > 1 && thread_counts.len() > 1 {
        return Err("compare durability modes at one thread count".into());
    }
    if protocols.len() > 1 && (thread_counts.len() > 1 || modes.len() > 1) {
        return Err("compare protocols at one thread count and one durability mode".into());
    }
    if protocols.len() > 1 && args.db != "engram" {
        return Err("protocols are compared on --db engram".into());
    }
    let names: Vec<&str> = args.db.split(',').map(str::trim).collect();
    let databases_compared = modes.len().max(names.len()).max(protocols.len());
    let thread_seconds = tpcc_thread_seconds(&thread_counts, args.duration, databases_compared);
    let reserve_mib =
        args.reserve_memory_mib.unwrap_or_else(|| default_tpcc_reserve_mib(thread_seconds));
    if names.len() > 1 && modes.len() > 1 {
        return Err("compare durability modes on one database".into());
    }
    let databases = if layout == tpcc::Warehouses::PerThread { thread_counts.len() } else { 1 };
    let reports = match &names[..] {
        ["engram"] if protocols.len() > 1 => {
            let configured = side_by_side(&options, thread_counts[0], layout, protocols.len());
            let dbs = protocols
                .iter()
                .map(|&protocol| {
                    let persistence =
                        args.durability.persistence(modes[0], Some(protocol.name()))?;
                    EngramTpcc::open(
                        read_only,
                        reserve_mib << 20,
                        Persistence { protocol, ..persistence },
                    )
                })
                .collect::<Result<Vec<_>, String>>()?;
            tpcc::run_configured(dbs, &configured, &options, args.rounds)?
        }
        ["engram"] => {
            if let [mode] = &modes[..] {
                let mut name = database_names(databases);
                let open = || {
                    EngramTpcc::open(
                        read_only,
                        reserve_mib << 20,
                        args.durability.persistence(*mode, name().as_deref())?,
                    )
                };
                tpcc::run(open, &options, &thread_counts, args.rounds, layout)?
            } else {
                let configured = side_by_side(&options, thread_counts[0], layout, modes.len());
                let dbs = modes
                    .iter()
                    .map(|mode| {
                        let name = mode.name();
                        EngramTpcc::open(
                            read_only,
                            reserve_mib << 20,
                            args.durability.persistence(*mode, Some(&name))?,
                        )
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                tpcc::run_configured(dbs, &configured, &options, args.rounds)?
            }
        }
        [single] if modes.len() > 1 => {
            return Err(format!("durability modes are compared on engram, not {single}"));
        }
        ["engram-sql"] => {
            let mut name = database_names(databases);
            let open = || {
                SqlTpcc::open(
                    read_only,
                    reserve_mib << 20,
                    args.durability.persistence(modes[0], name().as_deref())?,
                )
            };
            tpcc::run(open, &options, &thread_counts, args.rounds, layout)?
        }
        ["sqlite"] => tpcc::run(SqliteTpcc::create, &options, &thread_counts, args.rounds, layout)?,
        [url] if is_url(url) => tpcc::run(
            || WireTpcc::new(url, read_only),
            &options,
            &thread_counts,
            args.rounds,
            layout,
        )?,
        [first, second] => {
            let [threads] = thread_counts[..] else {
                return Err("compare two databases at one thread count".into());
            };
            let scale = match layout {
                tpcc::Warehouses::PerThread => {
                    Scale { warehouses: threads as u16, ..options.scale }
                }
                tpcc::Warehouses::Shared => options.scale,
            };
            let dbs = [first, second]
                .iter()
                .map(|name| {
                    let persistence = || args.durability.persistence(modes[0], Some(name));
                    Ok(match **name {
                        "engram" => Either::First(EngramTpcc::open(
                            read_only,
                            reserve_mib << 20,
                            persistence()?,
                        )?),
                        "engram-sql" => Either::Second(Either::First(SqlTpcc::open(
                            read_only,
                            reserve_mib << 20,
                            persistence()?,
                        )?)),
                        "sqlite" => {
                            Either::Second(Either::Second(Either::First(SqliteTpcc::create()?)))
                        }
                        url if is_url(url) => Either::Second(Either::Second(Either::Second(
                            WireTpcc::new(url, read_only)?,
                        ))),
                        other => return Err(unknown_tpcc_db(other)),
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            let configured =
                [0, 1].map(|index| (tpcc::Options { threads, scale, ..options.clone() }, index));
            tpcc::run_configured(dbs, &configured, &options, args.rounds)?
        }
        [other] => return Err(unknown_tpcc_db(other)),
        _ => return Err("--db names one database, or two to compare".into()),
    };
    for report in &reports {
        print_tpcc(report);
    }
    if let [one, two] = &reports[..] {
        let ratio = two.throughput_txn_per_s / one.throughput_txn_per_s;
        let median = median_ratio(&two.rounds_txn_per_s, &one.rounds_txn_per_s);
        let label = if one.threads == two.threads {
            format!("{} / {}", two.db, one.db)
        } else {
            format!("{} threads / {}", two.threads, one.threads)
        };
        println!(
            "{label} = {ratio:.3}{}",
            median.map_or(String::new(), |m| format!(
                " (median of {} rounds: {m:.3})",
                two.rounds_txn_per_s.len()
            ))
        );
    }
    if let Some(path) = &args.json {
        match &reports[..] {
            [single] => write_json(path, single)?,
            _ => write_json(path, &reports)?,
        }
    }
    match reports.iter().find(|report| report.consistency != serde_json::json!("ok")) {
        None => Ok(()),
        Some(report) => Err(format!(
            "consistency check failed ({} threads): {}",
            report.threads, report.consistency
        )),
    }
}

/// Names the databases of a run under --data: db0, db1, ... when there are several.
fn database_names(databases: usize) -> impl FnMut() -> Option<String> {
    let mut opened = 0;
    move || {
        let name = (databases > 1).then(|| format!("db{opened}"));
        opened += 1;
        name
    }
}

fn unknown_tpcc_db(name: &str) -> String {
    format!("unknown database {name:?}: use engram, engram-sql, sqlite or a postgres:// URL")
}

/// A PostgreSQL connection string (`postgres://` or `postgresql://`): TPC-C over the wire.
fn is_url(name: &str) -> bool {
    name.starts_with("postgres://") || name.starts_with("postgresql://")
}

fn plot_command(args: PlotArgs) -> Result<(), String> {
    let mut points = Vec::new();
    for path in &args.results {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|error| format!("{} is not JSON: {error}", path.display()))?;
        points.extend(plot::points(&json).map_err(|error| format!("{}: {error}", path.display()))?);
    }
    let axis = plot::Axis::parse(&args.x)?.unwrap_or_else(|| plot::choose_axis(&points));
    let lines = plot::series(&points, axis)?;
    let title = args.title.unwrap_or_else(|| plot::title(&points));
    plot::draw(&lines, &axis.frame(), &title, &args.out)?;
    println!("{}: {} line(s), {} point(s)", args.out.display(), lines.len(), points.len());
    Ok(())
}

fn print_tpcc(report: &tpcc::Report) {
    println!(
        "TPC-C {} mix | {} | {} warehouse(s) | {} threads | {:.1} s | {}",
        report.mix_name(),
        report.db,
        report.warehouses,
        report.threads,
        report.duration_s,
        report.settings
    );
    println!(
        "total {} txn/s ({} per thread), tpmC {} | committed {} rolled back {} aborted {} | consistency {}",
        format_rate(report.throughput_txn_per_s),
        format_rate(report.throughput_txn_per_s / report.threads as f64),
        format_rate(report.tpmc),
        report.committed,
        report.rolled_back,
        report.aborted,
        report.consistency
    );
    println!(
        "{:<13} {:>12} {:>11} {:>10} {:>9} {:>9} {:>9}  aborts by reason",
        "type", "txn/s", "committed", "aborted", "p50 us", "p95 us", "p99 us"
    );
    for (name, kind) in &report.per_type {
        let reasons: Vec<String> = kind
            .aborts_by_reason
            .iter()
            .map(|(reason, count)| format!("{reason}={count}"))
            .collect();
        println!(
            "{:<13} {:>12} {:>11} {:>10} {:>9} {:>9} {:>9}  {}",
            name,
            format_rate(kind.throughput_txn_per_s),
            kind.committed + kind.rolled_back,
            kind.aborted,
            kind.latency_us.p50,
            kind.latency_us.p95,
            kind.latency_us.p99,
            if reasons.is_empty() { "-".to_string() } else { reasons.join(" ") }
        );
    }
    if !report.contended_keys.is_empty() {
        let keys = engram_bench::report::contended_line(&report.contended_keys);
        println!("most contended keys: {keys}");
    }
    if let Some(alter) = &report.alter {
        println!(
            "ALTER TABLE: {} statements, latency p50 {} us, p99 {} us",
            alter.alters, alter.latency_us.p50, alter.latency_us.p99
        );
    }
    if let Some(scan) = &report.stock_scan {
        println!(
            "stock scan: {} scans, latency p50 {} us, p95 {} us, p99 {} us",
            scan.scans, scan.latency_us.p50, scan.latency_us.p95, scan.latency_us.p99
        );
    }
    if let Some(durable) = &report.durable_latency_us {
        let epoch_us = 40_000.0;
        println!(
            "durable commit latency (start to durable): p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms = {:.2} epochs of 40 ms",
            durable.p50 / 1e3,
            durable.p95 / 1e3,
            durable.p99 / 1e3,
            durable.p99 / epoch_us
        );
    }
}

/// The run options of `count` databases measured side by side at `threads` threads, each
/// with its own warehouses when `layout` gives every thread its own.
fn side_by_side(
    options: &tpcc::Options,
    threads: usize,
    layout: tpcc::Warehouses,
    count: usize,
) -> Vec<(tpcc::Options, usize)> {
    let scale = match layout {
        tpcc::Warehouses::PerThread => Scale { warehouses: threads as u16, ..options.scale },
        tpcc::Warehouses::Shared => options.scale,
    };
    (0..count).map(|index| (tpcc::Options { threads, scale, ..options.clone() }, index)).collect()
}

/// User and system CPU seconds of this process so far, from `/proc/self/stat` (clock ticks of
/// 10 ms); `None` where that cannot be read.
fn process_cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let user: u64 = fields.nth(11)?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user as f64 / 100.0, system as f64 / 100.0))
}

fn recovery_command(args: RecoveryArgs) -> Result<(), String> {
    if !args.data.join("MANIFEST").exists() {
        return Err(format!("{} holds no database (no MANIFEST)", args.data.display()));
    }
    let mut reports = Vec::new();
    for round in 0..args.repeat.max(1) {
        let started = std::time::Instant::now();
        let config = engram_engine::Config {
            data_dir: Some(args.data.clone()),
            recovery_threads: args.threads,
            index_keys: Some(engram_bench::tpcc::engram::index_keys()),
            checkpoint_log_bytes: 0,
            ..engram_engine::Config::default()
        };
        let db = engram_engine::Database::open(config).map_err(|error| error.to_string())?;
        let open_seconds = started.elapsed().as_secs_f64();
        let report = db.recovery_report().expect("a data directory").clone();
        println!(
            "recovery {}: {:.3} s to open ({:.3} s recovering) on {} threads | {} tables",
            round + 1,
            open_seconds,
            report.total_seconds,
            report.threads,
            report.tables
        );
        println!(
            "  checkpoint: epoch {} | {} files, {} rows, {:.1} MiB in {:.3} s ({:.2} GiB/s)",
            report.checkpoint_epoch.map_or("none".to_string(), |epoch| epoch.to_string()),
            report.checkpoint_files,
            report.checkpoint_rows,
            report.checkpoint_bytes as f64 / (1 << 20) as f64,
            report.checkpoint_seconds,
            report.checkpoint_bytes as f64
                / report.checkpoint_seconds.max(1e-9)
                / (1u64 << 30) as f64
        );
        println!(
            "  log: {} segments, {:.1} MiB, {} transactions, {} row images applied in {:.3} s ({:.2} GiB/s); durable epoch {}",
            report.log_segments,
            report.log_bytes as f64 / (1 << 20) as f64,
            report.log_transactions,
            report.log_writes_applied,
            report.replay_seconds,
            report.replay_bytes_per_second() / (1u64 << 30) as f64,
            report.durable_epoch
        );
        if report.log_patches > 0 {
            println!(
                "  of which patches: {} read, applied after the images in {:.3} s",
                report.log_patches, report.patch_seconds
            );
        }
        println!(
            "  indexes (deleted rows out, secondary indexes built): {:.3} s",
            report.index_seconds
        );
        if let Some((low, high)) = report.discarded_epochs {
            println!("  epochs {low} to {high} were never durable and are discarded");
        }
        for torn in &report.torn_tails {
            println!("  torn tail truncated: {torn}");
        }
        let checkpoint = if args.checkpoint {
            let before = process_cpu_seconds();
            let taken = db.checkpoint().map_err(|error| error.to_string())?;
            let cpu = process_cpu_seconds()
                .zip(before)
                .map(|(after, before)| (after.0 - before.0, after.1 - before.1));
            let per_row = |seconds: f64| seconds * 1e9 / taken.rows.max(1) as f64;
            println!(
                "  checkpoint taken: {} rows, {:.1} MiB in {:.3} s ({:.0} ns a row{})",
                taken.rows,
                taken.bytes as f64 / (1 << 20) as f64,
                taken.seconds,
                per_row(taken.seconds),
                cpu.map_or(String::new(), |(user, system)| format!(
                    "; the process's CPU {:.0} ns a row, {:.0} user and {:.0} system",
                    per_row(user + system),
                    per_row(user),
                    per_row(system)
                ))
            );
            serde_json::json!({
                "rows": taken.rows,
                "bytes": taken.bytes,
                "seconds": taken.seconds,
                "user_seconds": cpu.map(|cpu| cpu.0),
                "system_seconds": cpu.map(|cpu| cpu.1),
            })
        } else {
            serde_json::Value::Null
        };
        reports.push(serde_json::json!({
            "checkpoint_taken": checkpoint,
            "open_seconds": open_seconds,
            "recovery_seconds": report.total_seconds,
            "threads": report.threads,
            "checkpoint_rows": report.checkpoint_rows,
            "checkpoint_bytes": report.checkpoint_bytes,
            "checkpoint_seconds": report.checkpoint_seconds,
            "log_bytes": report.log_bytes,
            "log_transactions": report.log_transactions,
            "replay_seconds": report.replay_seconds,
            "replay_bytes_per_second": report.replay_bytes_per_second(),
            "log_writes_applied": report.log_writes_applied,
            "log_patches": report.log_patches,
            "patch_seconds": report.patch_seconds,
            "index_seconds": report.index_seconds,
        }));
    }
    if let Some(path) = &args.json {
        write_json(
            path,
            &serde_json::json!({ "benchmark": "recovery", "data": args.data, "runs": reports, "machine": engram_bench::report::Machine::describe() }),
        )?;
    }
    Ok(())
}

/// `engram check --rows`: recovers a copy of `data` and checks every SQL row against its
/// table's schema versions (`engram_sql::check`).
fn check_rows(data: &std::path::Path) -> Result<(), String> {
    fn copy(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy(&entry.path(), &target)?;
            } else {
                std::fs::copy(entry.path(), target)?;
            }
        }
        Ok(())
    }
    let scratch = std::env::temp_dir().join(format!("engram-check-{}", std::process::id()));
    let result = (|| {
        copy(data, &scratch).map_err(|error| format!("cannot copy {}: {error}", data.display()))?;
        let config =
            engram_engine::Config { data_dir: Some(scratch.clone()), ..Default::default() };
        let db = engram_sql::SqlDb::open(config).map_err(|error| error.to_string())?;
        let check = db.check_rows().map_err(|error| error.to_string())?;
        for (table, versions) in &check.tables {
            let counts: Vec<String> = versions
                .iter()
                .map(|(version, rows)| format!("{rows} of version {version}"))
                .collect();
            println!(
                "sql table {table}: {}",
                if counts.is_empty() { "no rows".into() } else { counts.join(", ") }
            );
        }
        if check.problems.is_empty() {
            println!("{} SQL rows: each decodes under its schema version and holds", check.rows());
            Ok(())
        } else {
            Err(check.problems.join("\n"))
        }
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn check_command(data: &std::path::Path) -> Result<(), String> {
    if !data.join("MANIFEST").exists() {
        return Err(format!("{} holds no database (no MANIFEST)", data.display()));
    }
    let storage = engram_engine::wal::DirStorage::open(data)
        .map_err(|error| format!("cannot open {}: {error}", data.display()))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let report =
        engram_engine::recovery::check(&storage, threads).map_err(|error| error.to_string())?;
    for (id, name, indexes) in
        engram_engine::recovery::catalog_tables(&storage).map_err(|error| error.to_string())?
    {
        println!(
            "table {id} {name}{}",
            if indexes.is_empty() {
                String::new()
            } else {
                format!(" (indexes: {})", indexes.join(", "))
            }
        );
    }
    println!(
        "checkpoint: epoch {} | {} files, {} rows, {} bytes",
        report.checkpoint_epoch.map_or("none".to_string(), |epoch| epoch.to_string()),
        report.checkpoint_files,
        report.checkpoint_rows,
        report.checkpoint_bytes
    );
    println!(
        "log: {} segments, {} bytes, {} transactions; durable epoch {}",
        report.log_segments, report.log_bytes, report.log_transactions, report.durable_epoch
    );
    if let Some((low, high)) = report.discarded_epochs {
        println!("epochs {low} to {high} were never durable: recovery will discard them");
    }
    for torn in &report.torn_tails {
        println!("torn tail (recovery will truncate it): {torn}");
    }
    println!("{}: ok", data.display());
    Ok(())
}

fn index(args: IndexArgs) -> Result<(), String> {
    let report = index::run(
        &args.sizes,
        &args.threads,
        Duration::from_secs_f64(args.seconds),
        args.rounds,
        args.only.as_deref(),
        true,
    );
    println!("{:<20} {:>12} {:>8} {:>8} {:>16}", "structure", "keys", "threads", "op", "ops/s");
    for result in &report.results {
        println!(
            "{:<20} {:>12} {:>8} {:>8} {:>16}",
            result.structure,
            format_rate(result.keys as f64),
            result.threads,
            result.operation,
            format_rate(result.ops_per_s)
        );
    }
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    Ok(())
}

fn paper_command(args: PaperArgs) -> Result<(), String> {
    let seconds = args.seconds.unwrap_or(if args.quick { 0.3 } else { 2.0 });
    if seconds.is_nan() || seconds <= 0.0 {
        return Err("--seconds must be positive".into());
    }
    let protocols = if args.protocol.is_empty() {
        paper::Options::PROTOCOLS.to_vec()
    } else {
        args.protocol.iter().map(|name| Protocol::parse(name)).collect::<Result<Vec<_>, _>>()?
    };
    let options = paper::Options {
        figures: args.figure,
        quick: args.quick,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        rows: args.rows.unwrap_or(if args.quick { 100_000 } else { 10_000_000 }),
        seconds,
        protocols,
        out: args.out,
        format: args.format,
        seed: args.seed,
        progress: !args.quiet,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let print = |figure: &paper::Figure| {
        println!("Fig. {}: {} ({})", figure.figure, figure.title, figure.setup);
        for panel in &figure.panels {
            // Columns are the x values of every line (or the categories); a line without a
            // point at some x shows "-" there.
            let mut xs: Vec<f64> =
                panel.lines.iter().flat_map(|l| l.points.iter().map(|s| s.x)).collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            let columns: Vec<String> = match panel.categories.is_empty() {
                true => xs.iter().map(|x| format!("{x}")).collect(),
                false => panel.categories.clone(),
            };
            let width = panel.lines.iter().map(|l| l.label.len()).max().unwrap_or(0).max(10);
            println!("  {} {}: {} by {}", panel.id, panel.title, panel.y_title, panel.x_title);
            println!(
                "    {:<width$} {}",
                "",
                columns.iter().map(|c| format!("{c:>12}")).collect::<String>()
            );
            for line in &panel.lines {
                let cell = |x: f64| match line.points.iter().find(|s| s.x == x) {
                    Some(s) if s.y >= 100.0 => format_rate(s.y),
                    Some(s) => format!("{:.2}", s.y),
                    None => "-".into(),
                };
                let values: String = match panel.categories.is_empty() {
                    true => xs.iter().map(|&x| format!("{:>12}", cell(x))).collect(),
                    false => {
                        (0..columns.len()).map(|i| format!("{:>12}", cell(i as f64))).collect()
                    }
                };
                println!("    {:<width$} {values}", line.label);
            }
        }
    };
    paper::run(&options, print)?;
    println!("results and plots in {}", options.out.display());
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_target(false).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench { benchmark: Benchmark::Ycsb(args) } => bench_ycsb::run(args),
        Command::Bench { benchmark: Benchmark::Index(args) } => index(args),
        Command::Bench { benchmark: Benchmark::Tpcc(args) } => tpcc_command(args),
        Command::Bench { benchmark: Benchmark::Plot(args) } => plot_command(args),
        Command::Bench { benchmark: Benchmark::Ddl(args) } => bench_ddl::run(args),
        Command::Bench { benchmark: Benchmark::Recovery(args) } => recovery_command(args),
        Command::Bench { benchmark: Benchmark::Paper(args) } => paper_command(args),
        Command::Check { data, rows } => {
            check_command(&data).and_then(|()| if rows { check_rows(&data) } else { Ok(()) })
        }
        Command::Serve(args) => serve::run(args),
        Command::CrashTest(args) => crash::run(args),
        Command::CrashChild(args) => crash::child(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("engram: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_of_a_tpcc_run_reserves_for_the_whole_duration() {
        // `--threads 2 --duration 24 --durability off,epoch`: two databases, 24 s each.
        assert_eq!(tpcc_thread_seconds(&[2], 24.0, 2), 96.0);
        // `--threads 1,2,4 --duration 10`: each thread count runs 10 s.
        assert_eq!(tpcc_thread_seconds(&[1, 2, 4], 10.0, 1), 70.0);
        assert_eq!(tpcc_thread_seconds(&[2], 10.0, 1), 20.0);
    }
}
