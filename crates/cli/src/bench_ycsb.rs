//! `engram bench ycsb`: its options, the run, and the table it prints.

use super::{DurabilityArgs, limits_attributes_max, median_ratio};
use clap::Args;
use engram_bench::report::{format_rate, write_json};
use engram_bench::ycsb;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub(crate) struct YcsbArgs {
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
    /// 64-bit attributes per row (default: the workload's; at least 2); with --non-inline, the
    /// non-inline attributes per row (at least 1).
    #[arg(long)]
    attributes: Option<usize>,
    /// Attributes a read reads, from the first (Wu et al.'s Fig. 15).
    #[arg(long, default_value_t = 1)]
    attributes_read: usize,
    /// Attributes an update modifies, from the first (Wu et al.'s Fig. 14).
    #[arg(long, default_value_t = 1)]
    attributes_modified: usize,
    /// Non-unique secondary indexes on attributes no update modifies (Wu et al.'s Figs. 22
    /// and 23; see --index-pointers).
    #[arg(long, default_value_t = 0)]
    secondary_indexes: usize,
    /// Rows of non-inline attributes of 100 bytes, each its own value, which updates copy
    /// (`copy`) or share with the version they replace (`refcount`): Wu et al.'s Fig. 11. Needs
    /// --version-storage append-n2o or append-o2n; --attributes sets how many.
    #[arg(long)]
    non_inline: Option<engram_engine::Sharing>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    durability: DurabilityArgs,
}

pub(crate) fn run(args: YcsbArgs) -> Result<(), String> {
    let workload = ycsb::Workload::parse(&args.workload).ok_or_else(|| {
        format!(
            "unknown workload {:?}: use silo, read-only, read-intensive or update-intensive",
            args.workload
        )
    })?;
    if let (Some(attributes), Some(_)) = (args.attributes, args.non_inline) {
        let most = engram_engine::storage::shared::ATTRIBUTES_MAX;
        if !(1..=most).contains(&attributes) {
            return Err(format!("--attributes must be 1 to {most} with --non-inline"));
        }
    } else if args
        .attributes
        .is_some_and(|attributes| !(2..=limits_attributes_max()).contains(&attributes))
    {
        return Err(format!(
            "--attributes must be 2 to {}: rows hold an update counter and the key",
            limits_attributes_max()
        ));
    }
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
        attributes: args.attributes,
        touch: ycsb::Touch { read: args.attributes_read, modified: args.attributes_modified },
        secondary_indexes: args.secondary_indexes,
        non_inline: args.non_inline,
        persistence: match (&args.durability.modes()?[..], &args.durability.protocols()?[..]) {
            ([mode], [_]) => args.durability.persistence(*mode, None)?,
            _ => return Err("YCSB runs one --durability mode and one --protocol at a time".into()),
        },
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
        "YCSB {} | {} rows of {} bytes | theta {} | {} ops/txn | {} attribute(s) read, {} \
         modified per op | {}",
        workload.name(),
        options.rows,
        options.value_bytes(),
        options.theta,
        options.ops_per_txn,
        options.touch.read,
        options.touch.modified,
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
    for report in reports.iter().filter(|report| !report.contended_keys.is_empty()) {
        println!(
            "most contended keys ({} x{}): {}",
            report.mode.name(),
            report.threads,
            engram_bench::report::contended_line(&report.contended_keys)
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
