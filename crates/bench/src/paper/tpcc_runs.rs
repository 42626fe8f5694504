//! TPC-C under the protocols (Wu et al. Figs. 10 and 17).

use super::*;

/// What [`tpcc_runs`] measured.
pub(super) struct TpccRuns {
    pub(super) warehouses: u16,
    pub(super) scale: Scale,
    /// Each run's options and database, in the order of `reports`.
    pub(super) configured: Vec<(tpcc::Options, usize)>,
    pub(super) reports: Vec<tpcc::Report>,
    pub(super) rounds: u32,
}

/// TPC-C's standard mix at 1, 2, 4, ... up to `options.threads` threads, on one database per
/// configuration of `persistences`, with one warehouse per four threads (the paper's 10 for
/// 40) and, if `stock_scan`, StockScan on one more thread; measured in alternating rounds and
/// checked for consistency.
pub(super) fn tpcc_runs(
    options: &Options,
    persistences: Vec<Persistence>,
    stock_scan: bool,
) -> Result<TpccRuns, String> {
    let warehouses = (options.threads / 4).max(1) as u16;
    let scale = if options.quick { Scale::tiny(warehouses) } else { Scale::standard(warehouses) };
    let counts = thread_counts(options.threads);
    let tpcc_options = tpcc::Options {
        scale,
        threads: counts[0],
        duration: Duration::from_secs_f64(options.seconds),
        mix: tpcc::Mix::Standard,
        stock_scan,
        ddl_every: None,
        seed: options.seed,
        progress: options.progress,
    };
    // TPC-C grows by about 200 MiB per thread-second; each database reserves its share.
    let thread_seconds: f64 = counts.iter().map(|&n| n as f64 * options.seconds).sum();
    let reserve = ((thread_seconds * 200.0) as usize) << 20;
    let dbs = persistences
        .into_iter()
        .map(|persistence| EngramTpcc::open(ReadOnlyLevels::Serializable, reserve, persistence))
        .collect::<Result<Vec<_>, String>>()?;
    let mut configured: Vec<(tpcc::Options, usize)> = Vec::new();
    for &threads in &counts {
        for db in 0..dbs.len() {
            configured.push((tpcc::Options { threads, ..tpcc_options.clone() }, db));
        }
    }
    let rounds: u32 = if options.quick { 1 } else { 2 };
    let reports = tpcc::run_configured(dbs, &configured, &tpcc_options, rounds)?;
    if let Some(bad) = reports.iter().find(|report| report.consistency != serde_json::json!("ok")) {
        return Err(format!("TPC-C consistency failed under {}: {}", bad.db, bad.consistency));
    }
    Ok(TpccRuns { warehouses, scale, configured, reports, rounds })
}

/// Fig. 10: TPC-C throughput over threads with one warehouse per four threads (the paper's 10
/// warehouses for 40 threads), and each transaction type's aborts at the most threads.
pub(super) fn figure_10(options: &Options) -> Result<Figure, String> {
    let persistences =
        options.protocols.iter().map(|&protocol| Persistence { protocol, ..Default::default() });
    let TpccRuns { warehouses, scale, configured, reports, rounds } =
        tpcc_runs(options, persistences.collect(), false)?;
    let mut throughput: Vec<Line> = options
        .protocols
        .iter()
        .map(|&p| Line { label: label(p).into(), points: Vec::new() })
        .collect();
    let mut aborts = throughput.clone();
    let kinds = tpcc::Kind::ALL;
    for ((run, db), report) in configured.iter().zip(&reports) {
        let reasons = report.per_type.values().flat_map(|t| t.aborts_by_reason.iter()).fold(
            BTreeMap::new(),
            |mut all: BTreeMap<String, u64>, (reason, count)| {
                *all.entry(reason.clone()).or_default() += count;
                all
            },
        );
        throughput[*db].points.push(Sample {
            x: run.threads as f64,
            y: report.throughput_txn_per_s,
            committed: report.committed + report.rolled_back,
            aborted: report.aborted,
            aborts_by_reason: reasons,
        });
        if run.threads == options.threads {
            for (index, kind) in kinds.iter().enumerate() {
                let Some(typed) = report.per_type.get(kind.name()) else { continue };
                let mut sample = Sample {
                    x: index as f64,
                    y: 0.0,
                    committed: typed.committed + typed.rolled_back,
                    aborted: typed.aborted,
                    aborts_by_reason: typed.aborts_by_reason.clone(),
                };
                sample.y = sample.aborts_per_100();
                aborts[*db].points.push(sample);
            }
        }
    }
    let categories =
        ["NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"].map(String::from).to_vec();
    let panels = vec![
        panel("10a", "Throughput", "worker threads", THROUGHPUT, throughput),
        Panel {
            categories,
            ..panel(
                "10b",
                &format!("Aborts by transaction type, {} threads", options.threads),
                "transaction type",
                ABORTS,
                aborts,
            )
        },
    ];
    Ok(figure(
        10,
        &format!("TPC-C ({warehouses} warehouse{})", if warehouses == 1 { "" } else { "s" }),
        "MVTO outperforms the other protocols by 45-120%; MVOCC wastes work by finding conflicts \
         only at validation and aborts NewOrder most; MV2PL aborts Payment 6.8x as often as \
         NewOrder; SI+SSN and MVTO abort least.",
        format!(
            "{} warehouse(s), {} items, standard mix, every transaction serializable, {} s per \
             protocol per thread count, in {rounds} alternating round(s)",
            warehouses, scale.items, options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 17: TPC-C under MVTO over threads with each version storage of [`STORAGES`], Wu et
/// al.'s StockScan (a snapshot scan of STOCK) running beside the workers on one more thread:
/// throughput, and the scan's median latency.
pub(super) fn figure_17(options: &Options) -> Result<Figure, String> {
    let persistences = STORAGES.iter().map(|&(version_storage, _)| Persistence {
        protocol: Protocol::Mvto,
        version_storage,
        ..Default::default()
    });
    let TpccRuns { warehouses, scale, configured, reports, rounds } =
        tpcc_runs(options, persistences.collect(), true)?;
    let mut throughput: Vec<Line> = STORAGES
        .iter()
        .map(|(_, label)| Line { label: label.to_string(), points: Vec::new() })
        .collect();
    let mut latency = throughput.clone();
    for ((run, db), report) in configured.iter().zip(&reports) {
        let sample = |y| Sample {
            x: run.threads as f64,
            y,
            committed: report.committed + report.rolled_back,
            aborted: report.aborted,
            aborts_by_reason: BTreeMap::new(),
        };
        throughput[*db].points.push(sample(report.throughput_txn_per_s));
        if let Some(scan) = report.stock_scan.as_ref().filter(|scan| scan.scans > 0) {
            latency[*db].points.push(sample(scan.latency_us.p50 / 1000.0));
        }
    }
    let panels = vec![
        panel("17a", "Throughput", "worker threads", THROUGHPUT, throughput),
        panel(
            "17b",
            "StockScan latency",
            "worker threads",
            "StockScan median latency (ms)",
            latency,
        ),
    ];
    Ok(figure(
        17,
        &format!(
            "TPC-C with StockScan by version storage ({warehouses} warehouse{}, MVTO)",
            if warehouses == 1 { "" } else { "s" }
        ),
        "Append-only storage leads on throughput (TPC-C's reads of many attributes cost it \
         least), delta storage's smaller versions bring no clear gain, and time-travel is lowest; \
         StockScan is fastest under append-only and time-travel, while under delta storage its \
         latency grows almost linearly with the threads.",
        format!(
            "{warehouses} warehouse(s), {} items, standard mix, MVTO, every transaction \
             serializable, StockScan as a snapshot transaction on one thread beside the workers; \
             {} s per storage per thread count, in {rounds} alternating round(s)",
            scale.items, options.seconds
        ),
        panels,
        options,
    ))
}
