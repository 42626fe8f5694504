//! `engram bench paper`: the experiments of Wu et al. (VLDB 2017, "An Empirical Evaluation of
//! In-Memory Multi-Version Concurrency Control") that Engram can run, one command per figure.
//!
//! Each figure is written as `figure-N.json` (every measured point, with its commits, aborts
//! and abort reasons) and one SVG per panel (`figure-Na.svg`, ...), titled and labelled like
//! the paper's; each throughput panel also gets its aborts (`figure-Na-aborts.svg`).
//! docs/paper.md sets each plot beside the paper's finding.
//!
//! | figure | experiment                                   | here                                  |
//! |--------|----------------------------------------------|---------------------------------------|
//! | 6      | scalability: read-only YCSB, 1 and 100 ops    | threads 1, 2, 4, ... up to `threads`  |
//! | 7      | contention: read- and update-intensive YCSB   | theta 0 to 0.9 at `threads`           |
//! | 8      | heterogeneous, read-only not declared         | half the threads read-write, 0 to that many read-only threads |
//! | 9      | heterogeneous, read-only declared             | as 8, read-only as snapshot transactions |
//! | 10     | TPC-C: throughput and aborts by type          | one warehouse per four threads        |
//! | 12     | chain order: read- and update-intensive YCSB under MVTO | `--version-storage append-n2o`, `append-o2n` and `time-travel`, theta 0.2 to 0.9 |
//! | 13     | transaction footprint: YCSB rows of 10 and 100 attributes, 0-100% updates, MVTO | `append-n2o`, `time-travel` and `delta` (as 14, 15 and 17); 100-attribute tables hold a tenth of the rows |
//! | 14     | attributes modified per update (1 to 100), read- and update-intensive | as 13, 100 attributes |
//! | 15     | attributes read per read (1 to 100), updates modifying one or all | as 13, 100 attributes, read-intensive |
//! | 16     | memory spaces: update- and read-intensive YCSB under MVTO | 1, 2, 4, ... spaces up to `threads`, time-travel, append-only N2O and delta storage |
//! | 18, 19 | tuple-level GC: throughput and memory over time, update-intensive YCSB at theta 0.2 and 0.8, MVTO, O2N | `--gc tuple-vacuum`, `tuple-cooperative` and `none`, as 20 and 21 |
//! | 20, 21 | GC: throughput and memory over time, YCSB theta 0.8 under MVTO | `--gc transaction`, `tuple-vacuum` and `none`, `seconds` x 10 each, sampled 20 times |
//! | 17     | TPC-C with StockScan by version storage, MVTO | one warehouse per four threads, StockScan on one more thread |
//! | 22     | index pointers: update-intensive YCSB, MVTO, append-only N2O | 1 to 20 secondary indexes (quick: 1, 4, 8), logical and physical, theta 0.2 and 0.8 |
//! | 23     | index pointers with 8 secondary indexes       | threads 1, 2, 4, ... up to `threads`, theta 0.2 and 0.8 |
//! | 11     | non-inline attributes: read- and update-intensive YCSB, rows of 1 to 50 attributes of 100 bytes, MVTO | full tuple copy against reference counting (`storage::shared`), append-only N2O |
//!
//! The paper's storage for its protocol experiments is newest-to-oldest append-only chains,
//! transaction-level GC and logical index pointers; Engram's defaults are the same but for
//! time-travel storage (its newest version in place, a newest-first chain behind it). Its machine had
//! 40 cores; `threads` (default: this machine's cores) stands in for its 40, and its 20
//! read-write threads of Figs. 8 and 9 become half of `threads`.
//!
//! Every point of a figure measures each protocol in turn, the order rotated from point to
//! point, so drift in a shared machine's speed touches every protocol alike.

use crate::db::Db;
use crate::report::{Machine, write_json};
use crate::tpcc::engram::{EngramTpcc, Persistence, ReadOnlyLevels};
use crate::tpcc::{self, spec::Scale};
use crate::ycsb::{self, Class, EngramYcsb, YcsbDb};
use engram_engine::storage::chunks::in_use_bytes;
use engram_engine::{Gc, IndexPointers, Protocol, Sharing, VersionStorage};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Figures the command knows.
pub const FIGURES: [u32; 18] = [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23];

#[derive(Debug, Clone)]
pub struct Options {
    /// Figures to run; empty: every figure.
    pub figures: Vec<u32>,
    /// Small tables and short points: minutes, not the paper's hours.
    pub quick: bool,
    /// The most worker threads (the paper's 40).
    pub threads: usize,
    /// YCSB rows (the paper's 10 million).
    pub rows: u64,
    /// Seconds each protocol is measured at each point.
    pub seconds: f64,
    /// Protocols, in the order lines are drawn.
    pub protocols: Vec<Protocol>,
    /// Where the JSON and plot files go.
    pub out: PathBuf,
    /// The plots' format: "svg" or "png".
    pub format: String,
    pub seed: u64,
    pub progress: bool,
    /// The command line, recorded with every figure.
    pub command: String,
}

impl Options {
    /// The paper's protocols first, in its order, then SI and Silo as references.
    pub const PROTOCOLS: [Protocol; 6] = [
        Protocol::Mvto,
        Protocol::Mvocc,
        Protocol::Mv2pl,
        Protocol::Ssn,
        Protocol::Si,
        Protocol::Silo,
    ];
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub figure: u32,
    pub title: String,
    /// What the paper found, in a sentence.
    pub paper_finding: String,
    /// How this run set the experiment up.
    pub setup: String,
    pub panels: Vec<Panel>,
    pub command: String,
    pub machine: Machine,
}

#[derive(Debug, Clone, Serialize)]
pub struct Panel {
    /// "6a", "6b", ...
    pub id: String,
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    /// Bars: one group per category, one bar per line, the category at `points[i].x == i`.
    pub categories: Vec<String>,
    pub lines: Vec<Line>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Line {
    pub label: String,
    pub points: Vec<Sample>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub x: f64,
    pub y: f64,
    pub committed: u64,
    pub aborted: u64,
    pub aborts_by_reason: BTreeMap<String, u64>,
}

impl Sample {
    /// Aborted attempts per 100 committed (or completed) transactions ([`ABORTS`]).
    pub fn aborts_per_100(&self) -> f64 {
        100.0 * self.aborted as f64 / self.committed.max(1) as f64
    }
}

/// The paper's name for a protocol.
pub fn label(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Mvto => "MVTO",
        Protocol::Mvocc => "MVOCC",
        Protocol::Mv2pl => "MV2PL",
        Protocol::Ssn => "SI+SSN",
        Protocol::Si => "SI",
        Protocol::Silo => "Silo (1V)",
    }
}

/// 1, 2, 4, ... below `most`, then `most`.
pub fn thread_counts(most: usize) -> Vec<usize> {
    let mut counts: Vec<usize> =
        std::iter::successors(Some(1), |&n| Some(n * 2)).take_while(|&n| n < most).collect();
    counts.push(most.max(1));
    counts
}

/// What a paper run did.
#[derive(Debug, Clone)]
pub struct Run {
    pub figures: Vec<Figure>,
}

/// Runs the chosen figures, writing each one's JSON and plots under `options.out` and handing
/// it to `measured` as soon as it is measured.
pub fn run(options: &Options, mut measured: impl FnMut(&Figure)) -> Result<Run, String> {
    let mut wanted: Vec<u32> =
        if options.figures.is_empty() { FIGURES.to_vec() } else { options.figures.clone() };
    // The figures that share the YCSB databases run together, so that those databases (one
    // per protocol, 1.5 GB each at 10 million rows) are gone before the others load theirs.
    // Figs. 18 and 19 come from the same runs, and so do 20 and 21: asking for one gives both.
    for pair in [[18, 19], [20, 21]] {
        if pair.iter().any(|figure| wanted.contains(figure)) {
            wanted.extend(pair);
        }
    }
    wanted.sort_by_key(|figure| (!(6..=9).contains(figure), *figure));
    wanted.dedup();
    if let Some(unknown) = wanted.iter().find(|figure| !FIGURES.contains(figure)) {
        return Err(format!("no figure {unknown}: the paper's experiments are Figs. 6-23"));
    }
    if options.protocols.is_empty() || options.threads == 0 || options.rows == 0 {
        return Err("a paper run needs a protocol, a thread and a row".into());
    }
    if options.format != "svg" && options.format != "png" {
        return Err(format!("plots are svg or png, not {:?}", options.format));
    }
    std::fs::create_dir_all(&options.out)
        .map_err(|error| format!("cannot create {}: {error}", options.out.display()))?;

    let mut figures = Vec::new();
    let mut ycsb: Option<Vec<EngramYcsb>> = None;
    let mut gc_figures: Vec<Figure> = Vec::new();
    for &number in &wanted {
        if !(6..=9).contains(&number) {
            ycsb = None;
        }
        let figure = match number {
            6..=9 => {
                if ycsb.is_none() {
                    ycsb = Some(load_ycsb(options)?);
                }
                let dbs = ycsb.as_deref().expect("loaded");
                match number {
                    6 => figure_6(options, dbs)?,
                    7 => figure_7(options, dbs)?,
                    _ => heterogeneous(options, dbs, number == 9)?,
                }
            }
            11 => figure_11(options)?,
            12 => figure_12(options)?,
            13 => figure_13(options)?,
            14 => figure_14(options)?,
            15 => figure_15(options)?,
            17 => figure_17(options)?,
            16 => figure_16(options)?,
            22 => figure_22(options)?,
            23 => figure_23(options)?,
            18..=21 => {
                if !gc_figures.iter().any(|f| f.figure == number) {
                    let pair = if number <= 19 { figures_18_19 } else { figures_20_21 };
                    gc_figures.extend(pair(options)?);
                }
                let at = gc_figures.iter().position(|f| f.figure == number).expect("both built");
                gc_figures.swap_remove(at)
            }
            _ => figure_10(options)?,
        };
        write(options, &figure)?;
        measured(&figure);
        figures.push(figure);
    }
    Ok(Run { figures })
}

/// One YCSB database per protocol, each loaded with the same rows of ten 64-bit attributes.
fn load_ycsb(options: &Options) -> Result<Vec<EngramYcsb>, String> {
    options
        .protocols
        .iter()
        .map(|&protocol| loaded_ycsb(options, Persistence { protocol, ..Persistence::default() }))
        .collect()
}

/// A YCSB database configured as `persistence` says, loaded with `options.rows` rows.
fn loaded_ycsb(options: &Options, persistence: Persistence) -> Result<EngramYcsb, String> {
    loaded_ycsb_rows(options, persistence, options.rows, YCSB_ATTRIBUTES)
}

/// YCSB's rows: ten 64-bit attributes.
const YCSB_ATTRIBUTES: usize = 10;

/// [`loaded_ycsb`] with `rows` rows of `attributes` 64-bit attributes.
fn loaded_ycsb_rows(
    options: &Options,
    persistence: Persistence,
    rows: u64,
    attributes: usize,
) -> Result<EngramYcsb, String> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut db = EngramYcsb::open_with(ycsb::Mode::Txn, &persistence)?;
    let began = std::time::Instant::now();
    db.load(rows, attributes * ycsb::ATTRIBUTE_BYTES, threads)?;
    if options.progress {
        eprintln!(
            "loaded {rows} rows of {attributes} attributes into {} in {:.1} s",
            db.settings(),
            began.elapsed().as_secs_f64()
        );
    }
    Ok(db)
}

/// The version storages Figs. 13-15 and 17 compare, each with its line's label: the paper's
/// append-only storage is newest-to-oldest.
const STORAGES: [(VersionStorage, &str); 3] = [
    (VersionStorage::AppendN2o, "append-only"),
    (VersionStorage::TimeTravel, "time-travel"),
    (VersionStorage::Delta, "delta"),
];

/// Rows of a table of `attributes` attributes: as many bytes as `options.rows` rows of ten (the
/// paper keeps 10 million rows whatever their width; three databases of 100-attribute rows at
/// that count would not fit this machine's memory).
fn rows_for(options: &Options, attributes: usize) -> u64 {
    (options.rows * YCSB_ATTRIBUTES as u64 / attributes as u64).max(1_000)
}

/// Runs YCSB at theta 0.2 under MVTO over the storages of [`STORAGES`], one freshly loaded
/// database each, of `attributes`-attribute rows: at each x, `class(x)` on each database in
/// turn. Returns one line per storage and the rows loaded.
fn storage_sweep(
    options: &Options,
    attributes: usize,
    xs: &[f64],
    class: impl Fn(f64) -> Class,
) -> Result<(Vec<Line>, u64), String> {
    let rows = rows_for(options, attributes);
    let dbs = STORAGES
        .iter()
        .map(|&(version_storage, _)| {
            let persistence =
                Persistence { protocol: Protocol::Mvto, version_storage, ..Default::default() };
            loaded_ycsb_rows(options, persistence, rows, attributes)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let labels: Vec<String> = STORAGES.iter().map(|(_, label)| label.to_string()).collect();
    let mut lines =
        ycsb_sweep_labelled(options, &dbs, &labels, rows, xs, |x| (0.2, vec![class(x)]), 1)?;
    Ok((lines.remove(0), rows))
}

/// The attribute counts of Figs. 14 and 15's x axes, out of 100.
fn attribute_counts(options: &Options) -> &'static [f64] {
    if options.quick { &[1.0, 100.0] } else { &[1.0, 10.0, 25.0, 50.0, 100.0] }
}

/// Fig. 13: the version storages over the share of operations that update, with rows of 10 and
/// of 100 attributes (an update modifies one).
fn figure_13(options: &Options) -> Result<Figure, String> {
    let percents: &[f64] =
        if options.quick { &[20.0, 80.0] } else { &[0.0, 20.0, 40.0, 60.0, 80.0, 100.0] };
    let mut panels = Vec::new();
    let mut sizes = Vec::new();
    for (id, attributes) in [("13a", 10), ("13b", 100)] {
        let (line, rows) = storage_sweep(options, attributes, percents, |percent| Class {
            update_fraction: percent / 100.0,
            ..Class::of(ycsb::Workload::ReadOnly, options.threads, 10)
        })?;
        sizes.push(format!("{rows} rows of {attributes}"));
        let title = format!("{attributes} attributes, {} threads", options.threads);
        panels.push(panel(id, &title, "update operations (% of operations)", THROUGHPUT, line));
    }
    Ok(figure(
        13,
        "Transaction footprint (YCSB, theta 0.2, 10 ops per txn, MVTO)",
        "With 10 attributes append-only and delta storage perform alike, and time-travel matches \
         append-only; with 100 attributes delta reaches twice the others' throughput, because it \
         copies and allocates less memory per update.",
        format!(
            "{} attributes, theta 0.2, {} threads, MVTO, serializable, an update modifies one \
             attribute; one database per storage, {} s per storage per point",
            sizes.join(" and "),
            options.threads,
            options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 14: the version storages over the attributes an update modifies, rows of 100
/// attributes, read- and update-intensive.
fn figure_14(options: &Options) -> Result<Figure, String> {
    let mut panels = Vec::new();
    let mut rows = 0;
    for (id, workload) in
        [("14a", ycsb::Workload::ReadIntensive), ("14b", ycsb::Workload::UpdateIntensive)]
    {
        let line;
        (line, rows) = storage_sweep(options, 100, attribute_counts(options), |modified| Class {
            touch: ycsb::Touch { modified: modified as usize, ..ycsb::Touch::ONE },
            ..Class::of(workload, options.threads, 10)
        })?;
        let title = format!("{}, {} threads", workload_title(workload), options.threads);
        panels.push(panel(id, &title, "attributes modified per update", THROUGHPUT, line));
    }
    Ok(figure(
        14,
        "Attributes modified (YCSB, theta 0.2, 10 ops per txn, MVTO, 100 attributes)",
        "Append-only and time-travel storage are flat whatever the number of attributes \
         modified; delta storage is fastest when updates modify few attributes and falls to the \
         others' throughput as they modify more, since each delta then copies as much.",
        format!(
            "{rows} rows of 100 attributes, theta 0.2, {} threads, MVTO, serializable, a read \
             reads one attribute; one database per storage, {} s per storage per point",
            options.threads, options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 15: the version storages over the attributes a read reads, rows of 100 attributes,
/// read-intensive, updates modifying one attribute or every one.
fn figure_15(options: &Options) -> Result<Figure, String> {
    let mut panels = Vec::new();
    let mut rows = 0;
    for (id, modified) in [("15a", 1), ("15b", 100)] {
        let line;
        (line, rows) = storage_sweep(options, 100, attribute_counts(options), |read| Class {
            touch: ycsb::Touch { read: read as usize, modified },
            ..Class::of(ycsb::Workload::ReadIntensive, options.threads, 10)
        })?;
        let what = if modified == 1 { "one attribute" } else { "every attribute" };
        let title = format!("Updates modify {what}, {} threads", options.threads);
        panels.push(panel(id, &title, "attributes read per read", THROUGHPUT, line));
    }
    Ok(figure(
        15,
        "Attributes read (read-intensive YCSB, theta 0.2, 10 ops per txn, MVTO, 100 attributes)",
        "When updates modify one attribute, reading more attributes costs delta storage most (it \
         walks the chain for each attribute it reads); append-only and time-travel also fall, as \
         each read moves more data. When updates modify every attribute, all three fall alike.",
        format!(
            "{rows} rows of 100 attributes, theta 0.2, {} threads, MVTO, serializable, 80% \
             reads; one database per storage, {} s per storage per point",
            options.threads, options.seconds
        ),
        panels,
        options,
    ))
}

/// The YCSB options of one point: `theta`, and the run's rows, seed and progress.
fn ycsb_options(options: &Options, theta: f64, seconds: f64) -> ycsb::Options {
    ycsb::Options {
        workload: ycsb::Workload::ReadOnly,
        rows: options.rows,
        ops_per_txn: 10,
        theta,
        threads: 0,
        duration: Duration::from_secs_f64(seconds),
        seed: options.seed,
        progress: options.progress,
        transactions: None,
        attributes: None,
        touch: ycsb::Touch::ONE,
        persistence: Persistence::default(),
        secondary_indexes: 0,
        non_inline: None,
    }
}

fn sample(x: f64, y: f64, tally: &ycsb::Tally) -> Sample {
    Sample {
        x,
        y,
        committed: tally.committed,
        aborted: tally.aborted,
        aborts_by_reason: tally.aborts_by_reason.clone(),
    }
}

fn rate(tally: &ycsb::Tally) -> f64 {
    tally.committed as f64 / tally.elapsed.as_secs_f64()
}

/// Measures `classes` on every database at each x, the protocol order rotated per point;
/// `panels` turns one point's class tallies into one value per panel. The lines are labelled
/// with the databases' protocols.
fn ycsb_sweep(
    options: &Options,
    dbs: &[EngramYcsb],
    xs: &[f64],
    point: impl Fn(f64) -> (f64, Vec<Class>),
    panels: usize,
) -> Result<Vec<Vec<Line>>, String> {
    let labels: Vec<String> = options.protocols.iter().map(|&p| label(p).into()).collect();
    ycsb_sweep_labelled(options, dbs, &labels, options.rows, xs, point, panels)
}

/// [`ycsb_sweep`], with a line label per database, over databases of `rows` rows.
fn ycsb_sweep_labelled(
    options: &Options,
    dbs: &[EngramYcsb],
    labels: &[String],
    rows: u64,
    xs: &[f64],
    point: impl Fn(f64) -> (f64, Vec<Class>),
    panels: usize,
) -> Result<Vec<Vec<Line>>, String> {
    assert_eq!(labels.len(), dbs.len(), "a label per database");
    let mut lines: Vec<Vec<Line>> = (0..panels)
        .map(|_| {
            labels.iter().map(|label| Line { label: label.clone(), points: Vec::new() }).collect()
        })
        .collect();
    for (index, &x) in xs.iter().enumerate() {
        let (theta, classes) = point(x);
        let point_options = ycsb::Options { rows, ..ycsb_options(options, theta, options.seconds) };
        for turn in 0..dbs.len() {
            let which = (turn + index) % dbs.len();
            let db = &dbs[which];
            if index == 0 {
                // Uncounted: caches and free lists warm for whichever protocol runs first.
                let warm = Duration::from_secs_f64((options.seconds / 5.0).min(1.0));
                ycsb::measure_classes(db, &point_options, &classes, warm, "warm-up")?;
            }
            let tag = format!("{} x={x}", labels[which]);
            let tallies =
                ycsb::measure_classes(db, &point_options, &classes, point_options.duration, &tag)?;
            for (panel, tally) in tallies.iter().take(panels).enumerate() {
                lines[panel][which].points.push(sample(x, rate(tally), tally));
            }
        }
    }
    Ok(lines)
}

fn panel(id: &str, title: &str, x_title: &str, y_title: &str, lines: Vec<Line>) -> Panel {
    Panel {
        id: id.into(),
        title: title.into(),
        x_title: x_title.into(),
        y_title: y_title.into(),
        categories: Vec::new(),
        lines,
    }
}

const THROUGHPUT: &str = "throughput (txn/s)";
/// Aborted attempts per 100 committed transactions. The drivers retry an aborted transaction
/// at once, so an attempt that keeps meeting the same held lock counts each time.
const ABORTS: &str = "aborted attempts per 100 completed";

fn figure(
    number: u32,
    title: &str,
    finding: &str,
    setup: String,
    panels: Vec<Panel>,
    options: &Options,
) -> Figure {
    Figure {
        figure: number,
        title: title.into(),
        paper_finding: finding.into(),
        setup,
        panels,
        command: options.command.clone(),
        machine: Machine::describe(),
    }
}

/// Fig. 6: read-only YCSB, short (1 op) and long (100 ops) transactions, low skew, over threads.
fn figure_6(options: &Options, dbs: &[EngramYcsb]) -> Result<Figure, String> {
    let counts = thread_counts(options.threads);
    let xs: Vec<f64> = counts.iter().map(|&n| n as f64).collect();
    let mut panels = Vec::new();
    for (id, ops) in [("6a", 1), ("6b", 100)] {
        let class = |threads: f64| Class::of(ycsb::Workload::ReadOnly, threads as usize, ops);
        let mut lines = ycsb_sweep(options, dbs, &xs, |x| (0.2, vec![class(x)]), 1)?;
        let title = format!("Read-only, {ops} op{} per txn", if ops == 1 { "" } else { "s" });
        panels.push(panel(id, &title, "worker threads", THROUGHPUT, lines.remove(0)));
    }
    Ok(figure(
        6,
        "Scalability bottlenecks (read-only YCSB, theta 0.2)",
        "Every protocol scales almost linearly with 1-op read-only transactions; SI+SSN is lowest \
         (its central transaction table); 100-op transactions run up to 30x fewer per second but \
         also scale linearly.",
        format!(
            "{} rows, theta 0.2, serializable, {} s per protocol per point",
            options.rows, options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 7: read-intensive and update-intensive YCSB, 10 ops, over skew, at `threads`.
fn figure_7(options: &Options, dbs: &[EngramYcsb]) -> Result<Figure, String> {
    let thetas: &[f64] =
        if options.quick { &[0.0, 0.6, 0.9] } else { &[0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9] };
    let mut panels = Vec::new();
    for (id, workload) in
        [("7a", ycsb::Workload::ReadIntensive), ("7b", ycsb::Workload::UpdateIntensive)]
    {
        let class = Class::of(workload, options.threads, 10);
        let mut lines = ycsb_sweep(options, dbs, thetas, |theta| (theta, vec![class]), 1)?;
        let title = format!("{}, {} threads", workload_title(workload), options.threads);
        panels.push(panel(id, &title, "Zipfian theta (contention)", THROUGHPUT, lines.remove(0)));
    }
    Ok(figure(
        7,
        "Transaction contention (YCSB, 10 ops per txn)",
        "All protocols are alike below theta 0.7; above it MVOCC loses up to half its throughput \
         (it finds conflicts only at validation), and under updates MV2PL falls furthest.",
        format!(
            "{} rows, {} threads, serializable, {} s per protocol per point",
            options.rows, options.threads, options.seconds
        ),
        panels,
        options,
    ))
}

fn workload_title(workload: ycsb::Workload) -> &'static str {
    match workload {
        ycsb::Workload::ReadIntensive => "Read-intensive (80% reads)",
        ycsb::Workload::UpdateIntensive => "Update-intensive (80% updates)",
        ycsb::Workload::ReadOnly => "Read-only",
        ycsb::Workload::Silo => "Silo's YCSB",
    }
}

/// Read-only thread counts of Figs. 8 and 9: 0, then 1, 2, 4, ... up to the read-write
/// threads (at least 2).
fn read_only_counts(read_write: usize) -> Vec<usize> {
    let mut counts = vec![0];
    counts.extend(thread_counts(read_write.max(2)));
    counts
}

/// Figs. 8 and 9: update-intensive read-write threads beside read-only threads, 100 ops per
/// transaction, theta 0.8; read-only transactions declared as such (Fig. 9) or not (Fig. 8).
fn heterogeneous(options: &Options, dbs: &[EngramYcsb], declared: bool) -> Result<Figure, String> {
    let read_write = (options.threads / 2).max(1);
    let xs: Vec<f64> = read_only_counts(read_write).iter().map(|&n| n as f64).collect();
    let point = |read_only: f64| {
        let writers = Class::of(ycsb::Workload::UpdateIntensive, read_write, 100);
        let readers = Class {
            declared_read_only: declared,
            ..Class::of(ycsb::Workload::ReadOnly, read_only as usize, 100)
        };
        (0.8, vec![writers, readers])
    };
    let mut lines = ycsb_sweep(options, dbs, &xs, point, 2)?;
    let (number, how) = if declared { (9, "declared") } else { (8, "not declared") };
    let x_title = "read-only threads";
    let panels = vec![
        panel(
            &format!("{number}a"),
            &format!("Read-write threads ({read_write}), read-only {how}"),
            x_title,
            THROUGHPUT,
            lines.remove(0),
        ),
        panel(
            &format!("{number}b"),
            &format!("Read-only threads, {how}"),
            x_title,
            THROUGHPUT,
            lines.remove(0),
        ),
    ];
    let finding = if declared {
        "Declared read-only queries run without conflict checks, so every protocol's read-only \
         throughput is the same and read-write throughput stays flat; SI+SSN leads read-write \
         throughput (1.6x MV2PL and MVTO) and MVOCC trails (most validation aborts)."
    } else {
        "Undeclared read-only queries take part in concurrency control: under MVTO and MV2PL \
         read-write throughput falls as read-only threads are added (MV2PL nearly stops at 20), \
         MVOCC starves its read-only queries, and SI+SSN keeps the most read-write throughput."
    };
    Ok(figure(
        number,
        &format!("Heterogeneous workload, read-only {how} (YCSB, theta 0.8)"),
        finding,
        format!(
            "{} rows, theta 0.8, 100 ops per txn; {read_write} read-write threads (80% updates), \
             read-only threads {}; {} s per protocol per point",
            options.rows,
            if declared { "as snapshot transactions" } else { "serializable" },
            options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 16: YCSB (theta 0.2, 10 ops) under MVTO at `threads`, the workers sharing 1, 2, 4, ...
/// memory spaces (`Config::memory_spaces`, each under a lock), and the default arena per worker
/// (no lock) as a second line's one point, for time-travel, append-only N2O and delta storage;
/// one database per configuration, a storage's measured in turn in two rounds.
fn figure_16(options: &Options) -> Result<Figure, String> {
    let counts = thread_counts(options.threads);
    let storages = [
        (VersionStorage::TimeTravel, "time-travel"),
        (VersionStorage::AppendN2o, "append-only"),
        (VersionStorage::Delta, "delta"),
    ];
    let workloads =
        [("16a", ycsb::Workload::ReadIntensive), ("16b", ycsb::Workload::UpdateIntensive)];
    let rounds: u32 = if options.quick { 1 } else { 2 };
    let mut lines: Vec<Vec<Line>> = workloads.iter().map(|_| Vec::new()).collect();
    // One storage's databases at a time (nine at once would not fit this machine's memory):
    // a database per space count, then the default, an arena per worker and no lock
    // (`memory_spaces` 0).
    for (storage, name) in storages {
        let spaces: Vec<usize> = counts.iter().copied().chain([0]).collect();
        let dbs = spaces
            .iter()
            .map(|&memory_spaces| {
                let persistence = Persistence {
                    protocol: Protocol::Mvto,
                    memory_spaces,
                    version_storage: storage,
                    ..Default::default()
                };
                loaded_ycsb(options, persistence)
            })
            .collect::<Result<Vec<_>, String>>()?;
        for (panel_lines, (id, workload)) in lines.iter_mut().zip(workloads) {
            let class = Class::of(workload, options.threads, 10);
            let point = ycsb_options(options, 0.2, options.seconds / rounds as f64);
            let mut tallies = vec![ycsb::Tally::default(); dbs.len()];
            for round in 0..rounds {
                for index in crate::report::round_order(round, dbs.len()) {
                    let db = &dbs[index];
                    let count =
                        if spaces[index] == 0 { "own".into() } else { spaces[index].to_string() };
                    let label = format!("{id} {storage} spaces {count} {}/{rounds}", round + 1);
                    let tally =
                        ycsb::measure_classes(db, &point, &[class], point.duration, &label)?;
                    tallies[index].merge(&tally[0]);
                }
            }
            let points = counts
                .iter()
                .zip(&tallies)
                .map(|(&spaces, tally)| sample(spaces as f64, rate(tally), tally))
                .collect();
            panel_lines.push(Line { label: format!("{name}, shared spaces"), points });
            let own = tallies.last().expect("the default database");
            panel_lines.push(Line {
                label: format!("{name}, arena per worker"),
                points: vec![sample(options.threads as f64, rate(own), own)],
            });
        }
    }
    let panels = workloads
        .iter()
        .zip(lines)
        .map(|((id, workload), lines)| {
            let title = format!("{}, {} threads", workload_title(*workload), options.threads);
            panel(id, &title, "memory spaces", THROUGHPUT, lines)
        })
        .collect();
    Ok(figure(
        16,
        "Memory allocation (YCSB, theta 0.2, 10 ops per txn, MVTO)",
        "Append-only and time-travel storage gain 1.6-4x as memory spaces go from 1 to 20 (a new \
         version is allocated on every update); delta storage, which copies only the modified \
         attributes, is flat.",
        format!(
            "{} rows, theta 0.2, {} threads, MVTO, serializable; time-travel (Engram's default), \
             append-only N2O and delta storage; one database per storage and space count (one \
             storage's loaded at a time), {} s each in {rounds} alternating round(s)",
            options.rows, options.threads, options.seconds
        ),
        panels,
        options,
    ))
}

/// The sharings Fig. 11 compares, each with its line's label.
const SHARINGS: [(Sharing, &str); 2] =
    [(Sharing::Copy, "full tuple copy"), (Sharing::RefCount, "reference counting")];

/// Fig. 11: non-inline attributes under append-only storage. Rows of 1 to 50 attributes of 100
/// bytes, each its own value; every operation reads one attribute and an update writes it
/// back. One database per sharing at each attribute count, loaded with as many value bytes as
/// `options.rows` rows of ten 64-bit attributes take (the paper keeps 10 million rows; 50
/// attributes of 100 bytes over 10 million rows would take 50 GB here).
fn figure_11(options: &Options) -> Result<Figure, String> {
    let counts: &[f64] =
        if options.quick { &[1.0, 10.0] } else { &[1.0, 10.0, 20.0, 30.0, 40.0, 50.0] };
    let workloads = [ycsb::Workload::ReadIntensive, ycsb::Workload::UpdateIntensive];
    let labels: Vec<String> = SHARINGS.iter().map(|(_, label)| label.to_string()).collect();
    let mut lines: Vec<Vec<Line>> = workloads
        .iter()
        .map(|_| {
            labels.iter().map(|label| Line { label: label.clone(), points: Vec::new() }).collect()
        })
        .collect();
    let mut sizes = Vec::new();
    for &count in counts {
        let attributes = count as usize;
        let value_bytes = attributes * ycsb::NON_INLINE_ATTRIBUTE_BYTES;
        let rows = (options.rows * (YCSB_ATTRIBUTES * ycsb::ATTRIBUTE_BYTES) as u64
            / value_bytes as u64)
            .max(1_000);
        sizes.push(format!("{rows} rows of {attributes}"));
        let dbs = SHARINGS
            .iter()
            .map(|&(sharing, _)| {
                let persistence = Persistence {
                    protocol: Protocol::Mvto,
                    version_storage: VersionStorage::AppendN2o,
                    ..Default::default()
                };
                let mut db = EngramYcsb::open_with(ycsb::Mode::Txn, &persistence)?;
                db.non_inline = Some(sharing);
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                db.load(rows, value_bytes, threads)?;
                Ok(db)
            })
            .collect::<Result<Vec<_>, String>>()?;
        for (panel, &workload) in workloads.iter().enumerate() {
            let class = Class::of(workload, options.threads, 10);
            let measured = ycsb_sweep_labelled(
                options,
                &dbs,
                &labels,
                rows,
                &[count],
                |_| (0.2, vec![class]),
                1,
            )?;
            for (line, points) in lines[panel].iter_mut().zip(measured.into_iter().flatten()) {
                line.points.extend(points.points);
            }
        }
    }
    let panels = workloads
        .iter()
        .zip(lines)
        .zip(["11a", "11b"])
        .map(|((&workload, lines), id)| {
            let title = format!("{}, {} threads", workload_title(workload), options.threads);
            panel(id, &title, "non-inline attributes per row", THROUGHPUT, lines)
        })
        .collect();
    Ok(figure(
        11,
        "Non-inline attributes (YCSB, theta 0.2, 10 ops per txn, MVTO, append-only storage)",
        "Keeping a reference count on the non-inline attributes an update does not change always \
         wins over copying the whole tuple: up to 40% more throughput read-intensive with 50 \
         attributes, and over 100% more update-intensive, since updates copy no unchanged data.",
        format!(
            "{} attributes of {} bytes, each its own value; theta 0.2, {} threads, MVTO, \
             serializable, append-only N2O, transaction-level GC; every operation reads one \
             attribute, an update writes it back; one database per sharing, {} s per sharing per \
             point",
            sizes.join(", "),
            ycsb::NON_INLINE_ATTRIBUTE_BYTES,
            options.threads,
            options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 12: append-only chains newest-to-oldest against oldest-to-newest, YCSB read- and
/// update-intensive over skew, 10 ops per transaction, MVTO, with Engram's default
/// (time-travel) as a third line. One database per storage, each loaded with the same rows.
fn figure_12(options: &Options) -> Result<Figure, String> {
    let storages =
        [VersionStorage::AppendN2o, VersionStorage::AppendO2n, VersionStorage::TimeTravel];
    let dbs = storages
        .iter()
        .map(|&version_storage| {
            let persistence =
                Persistence { protocol: Protocol::Mvto, version_storage, ..Default::default() };
            loaded_ycsb(options, persistence)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let labels: Vec<String> = storages
        .iter()
        .map(|storage| match storage {
            VersionStorage::AppendN2o => "N2O (append-only)".to_string(),
            VersionStorage::AppendO2n => "O2N (append-only)".to_string(),
            VersionStorage::TimeTravel => "time-travel N2O (the default)".to_string(),
            VersionStorage::Delta => "delta N2O".to_string(),
        })
        .collect();
    let thetas: &[f64] = if options.quick { &[0.2, 0.9] } else { &[0.2, 0.4, 0.6, 0.7, 0.8, 0.9] };
    let mut panels = Vec::new();
    for (id, workload) in
        [("12a", ycsb::Workload::ReadIntensive), ("12b", ycsb::Workload::UpdateIntensive)]
    {
        let class = Class::of(workload, options.threads, 10);
        let mut lines = ycsb_sweep_labelled(
            options,
            &dbs,
            &labels,
            options.rows,
            thetas,
            |theta| (theta, vec![class]),
            1,
        )?;
        let title = format!("{}, {} threads", workload_title(workload), options.threads);
        panels.push(panel(id, &title, "Zipfian theta (contention)", THROUGHPUT, lines.remove(0)));
    }
    Ok(figure(
        12,
        "Version chain ordering (YCSB, 10 ops per txn, MVTO, append-only storage)",
        "N2O always beats O2N: updating the index pointer for each new version costs far less \
         than O2N's walks along longer chains, which lengthen transactions and raise conflicts; \
         at theta 0.9 N2O reaches 2.4-3.4x O2N.",
        format!(
            "{} rows, {} threads, MVTO, serializable, transaction-level GC (writers prune; under \
             O2N at every install that keeps a version), {} s per storage per point",
            options.rows, options.threads, options.seconds
        ),
        panels,
        options,
    ))
}

/// Two YCSB databases with `indexes` secondary indexes, one per index-pointer scheme, set up
/// as Wu et al.'s §7.5 (MVTO, append-only newest-to-oldest storage), each loaded with the
/// run's rows. Their garbage collection is transaction-level: the paper's cooperative
/// cleaning needs oldest-to-newest chains here (`Config::validate`).
fn pointer_dbs(options: &Options, indexes: usize) -> Result<Vec<EngramYcsb>, String> {
    IndexPointers::ALL
        .iter()
        .map(|&index_pointers| {
            let persistence = Persistence {
                protocol: Protocol::Mvto,
                version_storage: VersionStorage::AppendN2o,
                index_pointers,
                ..Default::default()
            };
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let mut db = EngramYcsb::open_with(ycsb::Mode::Txn, &persistence)?;
            db.secondary_indexes = indexes;
            db.load(options.rows, YCSB_ATTRIBUTES * ycsb::ATTRIBUTE_BYTES, threads)?;
            Ok(db)
        })
        .collect()
}

fn pointer_labels() -> Vec<String> {
    IndexPointers::ALL.iter().map(|pointers| format!("{pointers} pointers")).collect()
}

/// The two contention levels of Figs. 22 and 23: (panel suffix, theta, title).
const POINTER_PANELS: [(&str, f64, &str); 2] =
    [("a", 0.2, "low contention (theta 0.2)"), ("b", 0.8, "high contention (theta 0.8)")];

/// Fig. 22: update-intensive YCSB with more and more secondary indexes.
fn figure_22(options: &Options) -> Result<Figure, String> {
    let counts: &[usize] = if options.quick { &[1, 4, 8] } else { &[1, 2, 4, 8, 12, 16, 20] };
    let labels = pointer_labels();
    let class = Class::of(ycsb::Workload::UpdateIntensive, options.threads, 10);
    let mut panels_lines: Vec<Vec<Line>> = POINTER_PANELS
        .iter()
        .map(|_| {
            labels.iter().map(|label| Line { label: label.clone(), points: Vec::new() }).collect()
        })
        .collect();
    for &count in counts {
        let dbs = pointer_dbs(options, count)?;
        for (panel_lines, &(_, theta, _)) in panels_lines.iter_mut().zip(&POINTER_PANELS) {
            let mut lines = ycsb_sweep_labelled(
                options,
                &dbs,
                &labels,
                options.rows,
                &[count as f64],
                |_| (theta, vec![class]),
                1,
            )?;
            for (line, measured) in panel_lines.iter_mut().zip(lines.remove(0)) {
                line.points.extend(measured.points);
            }
        }
    }
    let panels = POINTER_PANELS
        .iter()
        .zip(panels_lines)
        .map(|(&(suffix, _, title), lines)| {
            let title = format!("Update-intensive, {title}, {} threads", options.threads);
            panel(&format!("22{suffix}"), &title, "secondary indexes", THROUGHPUT, lines)
        })
        .collect();
    Ok(figure(
        22,
        "Index management (update-intensive YCSB, MVTO, append-only N2O)",
        "Logical pointers beat physical ones, by 25% at high contention and by up to 40% at low \
         contention as the number of secondary indexes grows to 20: under physical pointers \
         every new version is inserted into every secondary index.",
        format!(
            "{} rows of ten attributes, secondary index i non-unique on attribute 2 + i mod 8 \
             (never updated), 80% updates of the first attribute, {} threads, MVTO, append-only \
             N2O, transaction-level GC; a freshly loaded database per scheme and index count, \
             {} s per scheme per point",
            options.rows, options.threads, options.seconds
        ),
        panels,
        options,
    ))
}

/// Fig. 23: the same with 8 secondary indexes, over worker threads.
fn figure_23(options: &Options) -> Result<Figure, String> {
    let dbs = pointer_dbs(options, 8)?;
    let labels = pointer_labels();
    let counts = thread_counts(options.threads);
    let xs: Vec<f64> = counts.iter().map(|&n| n as f64).collect();
    let mut panels = Vec::new();
    for &(suffix, theta, title) in &POINTER_PANELS {
        let class = |threads: f64| Class::of(ycsb::Workload::UpdateIntensive, threads as usize, 10);
        let mut lines = ycsb_sweep_labelled(
            options,
            &dbs,
            &labels,
            options.rows,
            &xs,
            |x| (theta, vec![class(x)]),
            1,
        )?;
        let title = format!("Update-intensive, {title}, 8 secondary indexes");
        panels.push(panel(
            &format!("23{suffix}"),
            &title,
            "worker threads",
            THROUGHPUT,
            lines.remove(0),
        ));
    }
    Ok(figure(
        23,
        "Index management over threads (update-intensive YCSB, 8 secondary indexes)",
        "With 8 secondary indexes logical pointers reach up to 45% more throughput than physical \
         ones at high contention; the gap narrows as threads are added, at both contention \
         levels.",
        format!(
            "{} rows of ten attributes, 8 non-unique secondary indexes on never-updated \
             attributes, 80% updates, MVTO, append-only N2O, transaction-level GC, {} s per scheme \
             per point",
            options.rows, options.seconds
        ),
        panels,
        options,
    ))
}

/// What a GC-over-time experiment runs: panels of (id suffix, workload, theta), the GC modes
/// (one line each: the mode, and for cooperative cleaning its sweep interval in ms, 0 for none)
/// and the version storage.
struct GcRuns<'a> {
    panels: &'a [(&'a str, ycsb::Workload, f64)],
    modes: &'a [(Gc, Option<u64>)],
    storage: VersionStorage,
    /// The figure numbers of the throughput and the memory panels.
    numbers: (u32, u32),
}

/// YCSB under MVTO with each GC mode of `runs`: one freshly loaded database per mode and panel,
/// run for `seconds` x 10 in 20 consecutive slices. Returns the throughput panels (each slice's
/// rate), the memory panels (the engine's blocks in use, `chunks::in_use_bytes`, above what the
/// loaded database took, at each slice's end) and the setup they share.
fn gc_over_time(
    options: &Options,
    runs: &GcRuns<'_>,
) -> Result<(Vec<Panel>, Vec<Panel>, String), String> {
    const SLICES: usize = 20;
    let total = options.seconds * 10.0;
    let slice = Duration::from_secs_f64(total / SLICES as f64);
    let mut throughput_panels = Vec::new();
    let mut memory_panels = Vec::new();
    let mut notes = Vec::new();
    for &(id, workload, theta) in runs.panels {
        let class = Class::of(workload, options.threads, 10);
        let point = ycsb_options(options, theta, slice.as_secs_f64());
        let mut throughput_lines = Vec::new();
        let mut memory_lines = Vec::new();
        for &(gc, sweep_ms) in runs.modes {
            let name = match sweep_ms {
                Some(0) => format!("{gc}, no sweep"),
                Some(ms) => format!("{gc}, sweep every {ms} ms"),
                None => gc.name().to_string(),
            };
            let persistence = Persistence {
                protocol: Protocol::Mvto,
                gc,
                cooperative_sweep_interval_ms: sweep_ms,
                version_storage: runs.storage,
                ..Default::default()
            };
            let db = loaded_ycsb(options, persistence)?;
            let loaded = in_use_bytes();
            let (mut rates, mut memory) = (Vec::new(), Vec::new());
            for index in 0..SLICES {
                let label = format!("{id} gc {name} {}/{SLICES}", index + 1);
                let tally = ycsb::measure_classes(&db, &point, &[class], slice, &label)?;
                // The slice's nominal end, so every line shares the x values (slices start
                // within milliseconds of them: `measure_classes` spawns its threads anew).
                let at = ((index + 1) as f64 * slice.as_secs_f64() * 1000.0).round() / 1000.0;
                let grown = in_use_bytes().saturating_sub(loaded) as f64 / (1 << 20) as f64;
                rates.push(sample(at, rate(&tally[0]), &tally[0]));
                memory.push(sample(at, grown, &tally[0]));
            }
            if matches!(gc, Gc::TupleVacuum | Gc::TupleCooperative) {
                let stats = db.db.vacuum_stats();
                notes.push(format!(
                    "{name}, {}, theta {theta}: {} passes, {} records pruned or visited, {} \
                     versions pruned, {} records busy",
                    workload_title(workload),
                    stats.passes,
                    stats.records,
                    stats.versions,
                    stats.busy
                ));
            }
            drop(db);
            throughput_lines.push(Line { label: name.clone(), points: rates });
            memory_lines.push(Line { label: name, points: memory });
        }
        let title =
            format!("{}, theta {theta}, {} threads", workload_title(workload), options.threads);
        let (throughput, memory) = runs.numbers;
        throughput_panels.push(panel(
            &format!("{throughput}{id}"),
            &title,
            "elapsed (s)",
            THROUGHPUT,
            throughput_lines,
        ));
        memory_panels.push(panel(
            &format!("{memory}{id}"),
            &title,
            "elapsed (s)",
            "memory grown since the load (MiB)",
            memory_lines,
        ));
    }
    let setup = format!(
        "{} rows, 10 ops per txn, {} threads, MVTO, serializable, {} version storage; one \
         freshly loaded database per GC mode and panel, {total} s each in {SLICES} slices; \
         memory is the engine's blocks in use (record heads, versions, index nodes) minus the \
         loaded database's; the vacuum pauses {} ms between passes. {}",
        options.rows,
        options.threads,
        runs.storage,
        engram_engine::Config::default().vacuum_interval_ms,
        notes.join("; ")
    );
    Ok((throughput_panels, memory_panels, setup))
}

/// Figs. 18 and 19: the two tuple-level GCs, the vacuum and cooperative cleaning, against no GC,
/// on update-intensive YCSB at low and high contention, over oldest-to-newest chains (the only
/// order cooperative cleaning works with), MVTO.
fn figures_18_19(options: &Options) -> Result<Vec<Figure>, String> {
    let runs = GcRuns {
        panels: &[
            ("a", ycsb::Workload::UpdateIntensive, 0.2),
            ("b", ycsb::Workload::UpdateIntensive, 0.8),
        ],
        modes: &[
            (Gc::TupleVacuum, None),
            (Gc::TupleCooperative, Some(0)),
            (Gc::TupleCooperative, Some(1_000)),
            (Gc::None, None),
        ],
        storage: VersionStorage::AppendO2n,
        numbers: (18, 19),
    };
    let (throughput, memory, setup) = gc_over_time(options, &runs)?;
    Ok(vec![
        figure(
            18,
            "Tuple-level GC: throughput over time (update-intensive YCSB, MVTO, O2N)",
            "Cooperative cleaning beats the vacuum by up to 45% and is steadier (its work is \
             spread over the transaction threads and memory comes back sooner); without GC \
             throughput falls over time as chains grow longer to walk.",
            setup.clone(),
            throughput,
            options,
        ),
        figure(
            19,
            "Tuple-level GC: memory over time (update-intensive YCSB, MVTO, O2N)",
            "Cooperative cleaning allocates 30-60% less memory per transaction than the vacuum; \
             without GC memory grows with every update.",
            setup,
            memory,
            options,
        ),
    ])
}

/// Figs. 20 and 21: YCSB at theta 0.8 under MVTO with writers, a vacuum or nobody pruning
/// (Engram's default, time-travel storage).
fn figures_20_21(options: &Options) -> Result<Vec<Figure>, String> {
    let runs = GcRuns {
        panels: &[
            ("a", ycsb::Workload::ReadIntensive, 0.8),
            ("b", ycsb::Workload::UpdateIntensive, 0.8),
        ],
        modes: &[(Gc::Transaction, None), (Gc::TupleVacuum, None), (Gc::None, None)],
        storage: VersionStorage::TimeTravel,
        numbers: (20, 21),
    };
    let (throughput, memory, setup) = gc_over_time(options, &runs)?;
    Ok(vec![
        figure(
            20,
            "Tuple-level vs. transaction-level GC: throughput over time (YCSB, theta 0.8, MVTO)",
            "Transaction-level GC is slightly ahead on the read-intensive mix and about 20% ahead \
             on the update-intensive one (it removes expired versions in batches, with less \
             synchronisation); both beat running without GC by 20-30%.",
            setup.clone(),
            throughput,
            options,
        ),
        figure(
            21,
            "Tuple-level vs. transaction-level GC: memory over time (YCSB, theta 0.8, MVTO)",
            "Both GC schemes hold memory down; without GC it grows with every update.",
            setup,
            memory,
            options,
        ),
    ])
}

/// What [`tpcc_runs`] measured.
struct TpccRuns {
    warehouses: u16,
    scale: Scale,
    /// Each run's options and database, in the order of `reports`.
    configured: Vec<(tpcc::Options, usize)>,
    reports: Vec<tpcc::Report>,
    rounds: u32,
}

/// TPC-C's standard mix at 1, 2, 4, ... up to `options.threads` threads, on one database per
/// configuration of `persistences`, with one warehouse per four threads (the paper's 10 for
/// 40) and, if `stock_scan`, StockScan on one more thread; measured in alternating rounds and
/// checked for consistency.
fn tpcc_runs(
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
fn figure_10(options: &Options) -> Result<Figure, String> {
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
fn figure_17(options: &Options) -> Result<Figure, String> {
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

/// Writes `figure-N.json` and one plot per panel.
fn write(options: &Options, figure: &Figure) -> Result<(), String> {
    write_json(&options.out.join(format!("figure-{}.json", figure.figure)), figure)?;
    for panel in &figure.panels {
        let path = options.out.join(format!("figure-{}.{}", panel.id, options.format));
        let title = format!("Fig. {}: {}", panel.id, panel.title);
        if panel.categories.is_empty() {
            // The panel's lines, each point's value taken by `value`.
            let series = |value: fn(&Sample) -> f64| -> Vec<crate::plot::Series> {
                let line = |line: &Line| crate::plot::Series {
                    label: line.label.clone(),
                    points: line.points.iter().map(|s| (s.x, value(s))).collect(),
                };
                panel.lines.iter().map(line).collect()
            };
            let frame = crate::plot::Frame {
                x_title: panel.x_title.clone(),
                y_title: panel.y_title.clone(),
                whole_x: !panel.x_title.contains("theta") && !panel.x_title.contains("elapsed"),
            };
            crate::plot::draw(&series(|s| s.y), &frame, &title, &path)?;
            if panel.y_title != THROUGHPUT {
                continue;
            }
            // Beside each throughput panel, the same points' aborts.
            let frame = crate::plot::Frame { y_title: ABORTS.into(), ..frame };
            let path = options.out.join(format!("figure-{}-aborts.{}", panel.id, options.format));
            let title = format!("{title}: aborts");
            crate::plot::draw(&series(Sample::aborts_per_100), &frame, &title, &path)?;
        } else {
            let bars: Vec<(String, Vec<f64>)> = panel
                .lines
                .iter()
                .map(|line| (line.label.clone(), line.points.iter().map(|s| s.y).collect()))
                .collect();
            crate::plot::draw_bars(&panel.categories, &bars, &panel.y_title, &title, &path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_and_reader_counts() {
        assert_eq!(thread_counts(1), [1]);
        assert_eq!(thread_counts(2), [1, 2]);
        assert_eq!(thread_counts(16), [1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(40), [1, 2, 4, 8, 16, 32, 40]);
        assert_eq!(read_only_counts(1), [0, 1, 2]);
        assert_eq!(read_only_counts(8), [0, 1, 2, 4, 8]);
    }
}
