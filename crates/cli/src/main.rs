//! `engram`: the command line. Each subcommand is a thin layer over a library crate.

use clap::{Args, Parser, Subcommand};
use engram_bench::report::{format_rate, write_json};
use engram_bench::tpcc::engram::{EngramTpcc, ReadOnlyLevels};
use engram_bench::tpcc::{self, spec::Scale, sqlite::SqliteTpcc};
use engram_bench::{index, plot, ycsb};
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
}

#[derive(Subcommand)]
enum Benchmark {
    /// YCSB (Silo's variant, or Wu et al.'s read-only / read-intensive / update-intensive mixes).
    Ycsb(YcsbArgs),
    /// The B+tree against other concurrent ordered maps.
    Index(IndexArgs),
    /// TPC-C (v5.11, throughput mode) with consistency checks, on Engram or SQLite.
    Tpcc(TpccArgs),
    /// Draw throughput against threads (or skew) from the JSON of ycsb and tpcc runs.
    Plot(PlotArgs),
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
    /// engram | sqlite
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
    /// (default: 200 MiB per thread-second of the run, at most half the available memory).
    #[arg(long)]
    reserve_memory_mib: Option<usize>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Memory a TPC-C run adds per thread-second, roughly: about 2.2 KiB per NewOrder (an order,
/// its new-order row and ten order lines with their index entries; measured as resident
/// memory growth) at up to 80,000 NewOrders a second per thread (the new-order-payment mix).
const TPCC_GROWTH_MIB_PER_THREAD_SECOND: f64 = 200.0;

/// The default reserve: the run's expected growth, at most half of the memory available now.
fn default_tpcc_reserve_mib(thread_seconds: f64) -> usize {
    let wanted = (thread_seconds * TPCC_GROWTH_MIB_PER_THREAD_SECOND).ceil() as usize;
    let available_mib = engram_engine::storage::chunks::available_bytes().map(|bytes| bytes >> 20);
    available_mib.map_or(wanted, |available| wanted.min(available / 2))
}

#[derive(Args)]
struct YcsbArgs {
    /// silo | read-only | read-intensive | update-intensive
    #[arg(long, default_value = "silo")]
    workload: String,
    /// Rows in the table.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Operations per transaction (default: 1 for silo, 10 otherwise).
    #[arg(long)]
    ops_per_txn: Option<usize>,
    /// Zipfian skew of key choice; 0 is uniform.
    #[arg(long, default_value_t = 0.0)]
    theta: f64,
    /// Driver threads, or a comma-separated list measured in alternating rounds (default: the
    /// number of cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Seconds of measurement (split over the rounds when several modes run).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// txn | raw | both (both alternates raw and txn rounds on one loaded table)
    #[arg(long, default_value = "txn")]
    mode: String,
    /// Rounds when several modes or thread counts run.
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run exactly this many transactions per thread (no warm-up) instead of for --duration:
    /// for instruction counts under callgrind.
    #[arg(long)]
    transactions: Option<u64>,
    /// Seed of the key and operation choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
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

fn ycsb(args: YcsbArgs) -> Result<(), String> {
    let workload = ycsb::Workload::parse(&args.workload).ok_or_else(|| {
        format!(
            "unknown workload {:?}: use silo, read-only, read-intensive or update-intensive",
            args.workload
        )
    })?;
    let modes: Vec<ycsb::Mode> = match args.mode.as_str() {
        "txn" => vec![ycsb::Mode::Txn],
        "raw" => vec![ycsb::Mode::Raw],
        "both" => vec![ycsb::Mode::Raw, ycsb::Mode::Txn],
        other => return Err(format!("unknown mode {other:?}: use txn, raw or both")),
    };
    if args.duration.is_nan() || args.duration <= 0.0 {
        return Err("--duration must be positive".into());
    }
    if args.rows == 0 {
        return Err("--rows must be at least 1".into());
    }
    // Checked before loading anything: a bad skew should not cost a full load.
    engram_bench::keys::KeyChooser::new(args.rows.min(16), args.theta)?;
    let options = ycsb::Options {
        workload,
        rows: args.rows,
        ops_per_txn: args.ops_per_txn.unwrap_or(workload.ops_per_txn()).max(1),
        theta: args.theta,
        threads: 0,
        duration: Duration::from_secs_f64(args.duration),
        seed: args.seed,
        progress: !args.quiet,
        transactions: args.transactions,
    };
    let mut thread_counts = args.threads.clone();
    if thread_counts.is_empty() {
        thread_counts.push(std::thread::available_parallelism().map_or(1, |n| n.get()));
    }
    if thread_counts.contains(&0) {
        return Err("--threads must be at least 1".into());
    }
    let reports = ycsb::run(&options, &modes, &thread_counts, args.rounds)?;
    println!(
        "YCSB {} | {} rows | theta {} | {} ops/txn | {}",
        workload.name(),
        options.rows,
        options.theta,
        options.ops_per_txn,
        reports[0].settings
    );
    println!(
        "{:<6} {:>7} {:>14} {:>12} {:>10} {:>9} {:>9}  aborts by reason",
        "mode", "threads", "txn/s", "committed", "aborted", "p50 us", "p99 us"
    );
    for report in &reports {
        let reasons: Vec<String> = report
            .aborts_by_reason
            .iter()
            .map(|(reason, count)| format!("{reason}={count}"))
            .collect();
        println!(
            "{:<6} {:>7} {:>14} {:>12} {:>10} {:>9} {:>9}  {}",
            report.mode.name(),
            report.threads,
            format_rate(report.throughput_txn_per_s),
            report.committed,
            report.aborted,
            report.latency_us.p50,
            report.latency_us.p99,
            if reasons.is_empty() { "-".to_string() } else { reasons.join(" ") }
        );
    }
    let ratios = ratios(&reports);
    for line in &ratios.lines {
        println!("{line}");
    }
    if let Some(path) = &args.json {
        match &reports[..] {
            [single] => write_json(path, single)?,
            _ => write_json(path, &Comparison { results: reports.clone(), ratios: ratios.values })?,
        }
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct Comparison {
    results: Vec<ycsb::Report>,
    /// txn over raw per thread count ("txn_over_raw_threads_1"), and each thread count over
    /// the smallest per mode ("txn_threads_2_over_1").
    ratios: std::collections::BTreeMap<String, f64>,
}

struct Ratios {
    lines: Vec<String>,
    values: std::collections::BTreeMap<String, f64>,
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

/// The ratios a multi-configuration run is for: transactions over raw at each thread count,
/// and scaling over the smallest thread count in each mode; each as the ratio of the totals
/// and as the median of the per-round ratios.
fn ratios(reports: &[ycsb::Report]) -> Ratios {
    let mut ratios = Ratios { lines: Vec::new(), values: Default::default() };
    let report = |mode: ycsb::Mode, threads: usize| {
        reports.iter().find(|report| report.mode == mode && report.threads == threads)
    };
    let mut add = |name: String, label: String, a: &ycsb::Report, b: &ycsb::Report| {
        let total = a.throughput_txn_per_s / b.throughput_txn_per_s;
        let mut line = format!("{label} = {total:.3}");
        if let Some(median) = median_ratio(&a.rounds_txn_per_s, &b.rounds_txn_per_s) {
            line += &format!(" (median of {} rounds: {median:.3})", a.rounds_txn_per_s.len());
            ratios.values.insert(format!("{name}_median"), median);
        }
        ratios.values.insert(name, total);
        ratios.lines.push(line);
    };
    let mut thread_counts: Vec<usize> = reports.iter().map(|report| report.threads).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    for &threads in &thread_counts {
        if let (Some(raw), Some(txn)) =
            (report(ycsb::Mode::Raw, threads), report(ycsb::Mode::Txn, threads))
        {
            add(
                format!("txn_over_raw_threads_{threads}"),
                format!("txn / raw at {threads} threads"),
                txn,
                raw,
            );
        }
    }
    for mode in [ycsb::Mode::Raw, ycsb::Mode::Txn] {
        let base_threads = thread_counts[0];
        let Some(base) = report(mode, base_threads) else { continue };
        for &threads in &thread_counts[1..] {
            if let Some(more) = report(mode, threads) {
                add(
                    format!("{}_threads_{threads}_over_{base_threads}", mode.name()),
                    format!("{} {threads} threads / {base_threads}", mode.name()),
                    more,
                    base,
                );
            }
        }
    }
    ratios
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
        seed: args.seed,
        progress: !args.quiet,
    };
    let read_only = ReadOnlyLevels::parse(&args.read_only).ok_or_else(|| {
        format!(
            "unknown --read-only {:?}: use specification, serializable or snapshot",
            args.read_only
        )
    })?;
    let reports = match args.db.as_str() {
        "engram" => {
            // Every thread count runs for its share of the duration.
            let thread_seconds = thread_counts.iter().sum::<usize>() as f64 * args.duration
                / thread_counts.len() as f64;
            let reserve_mib =
                args.reserve_memory_mib.unwrap_or_else(|| default_tpcc_reserve_mib(thread_seconds));
            let open = || EngramTpcc::open(read_only, reserve_mib << 20);
            tpcc::run(open, &options, &thread_counts, args.rounds, layout)?
        }
        "sqlite" => tpcc::run(SqliteTpcc::create, &options, &thread_counts, args.rounds, layout)?,
        other => return Err(format!("unknown database {other:?}: use engram or sqlite")),
    };
    for report in &reports {
        print_tpcc(report);
    }
    if let [one, two] = &reports[..] {
        let ratio = two.throughput_txn_per_s / one.throughput_txn_per_s;
        let median = median_ratio(&two.rounds_txn_per_s, &one.rounds_txn_per_s);
        println!(
            "{} threads / {} = {ratio:.3}{}",
            two.threads,
            one.threads,
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
    plot::draw(&lines, axis, &title, &args.out)?;
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
    if let Some(scan) = &report.stock_scan {
        println!(
            "stock scan: {} scans, latency p50 {} us, p95 {} us, p99 {} us",
            scan.scans, scan.latency_us.p50, scan.latency_us.p95, scan.latency_us.p99
        );
    }
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench { benchmark: Benchmark::Ycsb(args) } => ycsb(args),
        Command::Bench { benchmark: Benchmark::Index(args) } => index(args),
        Command::Bench { benchmark: Benchmark::Tpcc(args) } => tpcc_command(args),
        Command::Bench { benchmark: Benchmark::Plot(args) } => plot_command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("engram: {message}");
            ExitCode::FAILURE
        }
    }
}
