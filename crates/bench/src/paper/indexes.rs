//! Index management (Wu et al. §6, Figs. 22-23): logical against physical index pointers as
//! secondary indexes are added.

use super::*;

/// Two YCSB databases with `indexes` secondary indexes, one per index-pointer scheme, set up
/// as Wu et al.'s §7.5 (MVTO, append-only newest-to-oldest storage), each loaded with the
/// run's rows. Their garbage collection is transaction-level: the paper's cooperative
/// cleaning needs oldest-to-newest chains here (`Config::validate`).
pub(super) fn pointer_dbs(options: &Options, indexes: usize) -> Result<Vec<EngramYcsb>, String> {
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

pub(super) fn pointer_labels() -> Vec<String> {
    IndexPointers::ALL.iter().map(|pointers| format!("{pointers} pointers")).collect()
}

/// The two contention levels of Figs. 22 and 23: (panel suffix, theta, title).
pub(super) const POINTER_PANELS: [(&str, f64, &str); 2] =
    [("a", 0.2, "low contention (theta 0.2)"), ("b", 0.8, "high contention (theta 0.8)")];

/// Fig. 22: update-intensive YCSB with more and more secondary indexes.
pub(super) fn figure_22(options: &Options) -> Result<Figure, String> {
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
pub(super) fn figure_23(options: &Options) -> Result<Figure, String> {
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
