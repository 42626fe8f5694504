//! Version storage (Wu et al. §4, Figs. 11-16): append-only (oldest or newest first),
//! time-travel and delta storage against the number and size of attributes, and non-inline
//! attributes shared or copied.

use super::*;

/// The version storages Figs. 13-15 and 17 compare, each with its line's label: the paper's
/// append-only storage is newest-to-oldest.
pub(super) const STORAGES: [(VersionStorage, &str); 3] = [
    (VersionStorage::AppendN2o, "append-only"),
    (VersionStorage::TimeTravel, "time-travel"),
    (VersionStorage::Delta, "delta"),
];

/// Rows of a table of `attributes` attributes: as many bytes as `options.rows` rows of ten (the
/// paper keeps 10 million rows whatever their width; three databases of 100-attribute rows at
/// that count would not fit this machine's memory).
pub(super) fn rows_for(options: &Options, attributes: usize) -> u64 {
    (options.rows * YCSB_ATTRIBUTES as u64 / attributes as u64).max(1_000)
}

/// Runs YCSB at theta 0.2 under MVTO over the storages of [`STORAGES`], one freshly loaded
/// database each, of `attributes`-attribute rows: at each x, `class(x)` on each database in
/// turn. Returns one line per storage and the rows loaded.
pub(super) fn storage_sweep(
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
pub(super) fn attribute_counts(options: &Options) -> &'static [f64] {
    if options.quick { &[1.0, 100.0] } else { &[1.0, 10.0, 25.0, 50.0, 100.0] }
}

/// Fig. 13: the version storages over the share of operations that update, with rows of 10 and
/// of 100 attributes (an update modifies one).
pub(super) fn figure_13(options: &Options) -> Result<Figure, String> {
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
pub(super) fn figure_14(options: &Options) -> Result<Figure, String> {
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
pub(super) fn figure_15(options: &Options) -> Result<Figure, String> {
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

/// Fig. 16: YCSB (theta 0.2, 10 ops) under MVTO at `threads`, the workers sharing 1, 2, 4, ...
/// memory spaces (`Config::memory_spaces`, each under a lock), and the default arena per worker
/// (no lock) as a second line's one point, for time-travel, append-only N2O and delta storage;
/// one database per configuration, a storage's measured in turn in two rounds.
pub(super) fn figure_16(options: &Options) -> Result<Figure, String> {
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
pub(super) const SHARINGS: [(Sharing, &str); 2] =
    [(Sharing::Copy, "full tuple copy"), (Sharing::RefCount, "reference counting")];

/// Fig. 11: non-inline attributes under append-only storage. Rows of 1 to 50 attributes of 100
/// bytes, each its own value; every operation reads one attribute and an update writes it
/// back. One database per sharing at each attribute count, loaded with as many value bytes as
/// `options.rows` rows of ten 64-bit attributes take (the paper keeps 10 million rows; 50
/// attributes of 100 bytes over 10 million rows would take 50 GB here).
pub(super) fn figure_11(options: &Options) -> Result<Figure, String> {
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
pub(super) fn figure_12(options: &Options) -> Result<Figure, String> {
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
