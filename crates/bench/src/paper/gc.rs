//! Garbage collection (Wu et al. §5, Figs. 18-21): transaction-level, background vacuum and
//! cooperative cleaning, over time and against the workload.

use super::*;

/// What a GC-over-time experiment runs: panels of (id suffix, workload, theta), the GC modes
/// (one line each: the mode, and for cooperative cleaning its sweep interval in ms, 0 for none)
/// and the version storage.
pub(super) struct GcRuns<'a> {
    pub(super) panels: &'a [(&'a str, ycsb::Workload, f64)],
    pub(super) modes: &'a [(Gc, Option<u64>)],
    pub(super) storage: VersionStorage,
    /// The figure numbers of the throughput and the memory panels.
    pub(super) numbers: (u32, u32),
}

/// YCSB under MVTO with each GC mode of `runs`: one freshly loaded database per mode and panel,
/// run for `seconds` x 10 in 20 consecutive slices. Returns the throughput panels (each slice's
/// rate), the memory panels (the engine's blocks in use, `chunks::in_use_bytes`, above what the
/// loaded database took, at each slice's end) and the setup they share.
pub(super) fn gc_over_time(
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
pub(super) fn figures_18_19(options: &Options) -> Result<Vec<Figure>, String> {
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
pub(super) fn figures_20_21(options: &Options) -> Result<Vec<Figure>, String> {
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
