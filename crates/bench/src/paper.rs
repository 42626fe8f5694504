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
use engram_engine::mem::chunks::in_use_bytes;
use engram_engine::{Gc, IndexPointers, Protocol, Sharing, VersionStorage};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

mod gc;
mod indexes;
mod storage;
mod tpcc_runs;

use gc::*;
use indexes::*;
use storage::*;
use tpcc_runs::*;

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
