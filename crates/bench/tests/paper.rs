//! `engram bench paper` on a tiny scale: each figure it runs writes its JSON and a plot per
//! panel with a line per protocol and a point per x.

mod common;

use common::options;
use engram_bench::paper::{self, Options};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("engram-paper-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn figures_write_json_and_a_plot_per_panel() {
    let out = scratch("run");
    let paper::Run { figures } =
        paper::run(&options(&[16, 11, 22, 12, 10, 9, 8], out.clone()), |_| ()).unwrap();
    assert_eq!(
        figures.iter().map(|f| f.figure).collect::<Vec<_>>(),
        [8, 9, 10, 11, 12, 16, 22],
        "YCSB's first"
    );

    for figure in &figures {
        let text = std::fs::read_to_string(out.join(format!("figure-{}.json", figure.figure)))
            .expect("the figure's JSON");
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["figure"], figure.figure);
        assert!(!json["paper_finding"].as_str().unwrap().is_empty());
        for panel in &figure.panels {
            let svg = std::fs::read_to_string(out.join(format!("figure-{}.svg", panel.id)))
                .expect("the panel's plot");
            if figure.figure == 16 {
                continue;
            }
            let lines = match figure.figure {
                12 => 3,
                11 | 22 => 2,
                _ => 6,
            };
            assert_eq!(panel.lines.len(), lines, "a line per protocol, storage or pointer scheme");
            if panel.categories.is_empty() {
                let aborts = out.join(format!("figure-{}-aborts.svg", panel.id));
                assert!(std::fs::read_to_string(aborts).unwrap().contains("aborted attempts"));
            }
            for line in &panel.lines {
                assert!(svg.contains(&line.label), "{} in {}", line.label, panel.id);
            }
        }
    }

    // Fig. 8: one read-write thread beside 0, 1 and 2 read-only threads.
    let fig8 = &figures[0];
    let (writers, readers) = (&fig8.panels[0], &fig8.panels[1]);
    for line in &writers.lines {
        let xs: Vec<f64> = line.points.iter().map(|p| p.x).collect();
        assert_eq!(xs, [0.0, 1.0, 2.0], "{}", line.label);
        assert!(line.points[0].committed > 0, "{} alone commits", line.label);
    }
    for line in &readers.lines {
        assert_eq!(line.points[0].committed, 0, "no read-only threads at x = 0");
        assert_eq!(line.points[0].y, 0.0);
    }
    let read_only_commits: u64 =
        readers.lines.iter().flat_map(|l| &l.points[1..]).map(|p| p.committed).sum();
    assert!(read_only_commits > 0);

    declared_readers_commit(&figures[1]);

    // Fig. 10: throughput at 1 and 2 threads, then aborts of each of the five types.
    let fig10 = &figures[2];
    for line in &fig10.panels[0].lines {
        assert_eq!(line.points.len(), 2, "{}", line.label);
        assert!(line.points.iter().all(|p| p.committed > 0 && p.y > 0.0), "{}", line.label);
    }
    assert_eq!(fig10.panels[1].categories.len(), 5);
    for line in &fig10.panels[1].lines {
        assert_eq!(line.points.len(), 5, "{}", line.label);
        for point in &line.points {
            let reasons: u64 = point.aborts_by_reason.values().sum();
            assert_eq!(reasons, point.aborted, "every abort has its reason");
        }
    }

    // Fig. 12: MVTO over N2O and O2N append-only chains, and over time-travel storage, at
    // two thetas each.
    for panel in &figures[4].panels {
        let labels: Vec<&str> = panel.lines.iter().map(|l| l.label.as_str()).collect();
        assert!(labels[0].starts_with("N2O") && labels[1].starts_with("O2N"), "{labels:?}");
        for line in &panel.lines {
            assert_eq!(line.points.iter().map(|p| p.x).collect::<Vec<_>>(), [0.2, 0.9]);
            assert!(line.points.iter().all(|p| p.committed > 0), "{}", line.label);
        }
    }

    // Fig. 16: MVTO with the workers sharing one and two memory spaces, and with an arena
    // each, over time-travel, append-only and delta storage.
    for panel in &figures[5].panels {
        let [shared, own, append_shared, append_own, delta_shared, delta_own] = &panel.lines[..]
        else {
            panic!("two lines per storage")
        };
        assert!(shared.label.starts_with("time-travel") && append_own.label.starts_with("append"));
        assert!(delta_shared.label.starts_with("delta"));
        for (shared, own) in [(shared, own), (append_shared, append_own), (delta_shared, delta_own)]
        {
            assert_eq!(shared.points.iter().map(|p| p.x).collect::<Vec<_>>(), [1.0, 2.0]);
            assert_eq!(own.points.iter().map(|p| p.x).collect::<Vec<_>>(), [2.0]);
            assert!(shared.points.iter().chain(&own.points).all(|p| p.committed > 0));
        }
        assert!(out.join(format!("figure-{}.svg", panel.id)).exists());
    }

    // Fig. 11: both sharings commit at 1 and 10 non-inline attributes, in both mixes.
    for panel in &figures[3].panels {
        let labels: Vec<&str> = panel.lines.iter().map(|line| line.label.as_str()).collect();
        assert_eq!(labels, ["full tuple copy", "reference counting"]);
        for line in &panel.lines {
            assert_eq!(line.points.iter().map(|p| p.x).collect::<Vec<_>>(), [1.0, 10.0]);
            assert!(line.points.iter().all(|p| p.committed > 0), "{}", line.label);
        }
    }

    // Fig. 22: both pointer schemes commit at 1, 4 and 8 secondary indexes.
    for panel in &figures[6].panels {
        let labels: Vec<&str> = panel.lines.iter().map(|line| line.label.as_str()).collect();
        assert_eq!(labels, ["logical pointers", "physical pointers"]);
        for line in &panel.lines {
            assert_eq!(line.points.iter().map(|p| p.x).collect::<Vec<_>>(), [1.0, 4.0, 8.0]);
            assert!(line.points.iter().all(|p| p.committed > 0), "{}", line.label);
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// Figs. 13-15 and 17 measure append-only, time-travel and delta storage at every point: rows
/// of 10 and 100 attributes, updates and reads of one to every attribute, and TPC-C with
/// StockScan, whose scans finish beside the workers.
#[test]
fn version_storage_figures_measure_every_storage() {
    let out = scratch("storage");
    let run = paper::run(&options(&[17, 15, 14, 13], out.clone()), |_| ()).unwrap();
    assert_eq!(run.figures.iter().map(|f| f.figure).collect::<Vec<_>>(), [13, 14, 15, 17]);
    for figure in &run.figures {
        let xs: &[f64] = match figure.figure {
            13 => &[20.0, 80.0],
            14 | 15 => &[1.0, 100.0],
            _ => &[1.0, 2.0],
        };
        for panel in &figure.panels {
            let labels: Vec<&str> = panel.lines.iter().map(|l| l.label.as_str()).collect();
            assert_eq!(labels, ["append-only", "time-travel", "delta"], "{}", panel.id);
            for line in &panel.lines {
                assert_eq!(line.points.iter().map(|p| p.x).collect::<Vec<_>>(), xs);
                assert!(
                    line.points.iter().all(|p| p.committed > 0 && p.y > 0.0),
                    "{} {}",
                    panel.id,
                    line.label
                );
            }
            assert!(out.join(format!("figure-{}.svg", panel.id)).exists());
        }
    }
    assert!(run.figures[2].setup.contains("rows of 100 attributes"));
    assert_eq!(run.figures[3].panels[1].y_title, "StockScan median latency (ms)");
    std::fs::remove_dir_all(&out).unwrap();
}

/// Fig. 9's read-only transactions are snapshot transactions: they never abort, and the
/// snapshot they read holds every loaded row.
fn declared_readers_commit(figure: &paper::Figure) {
    assert_eq!(figure.figure, 9);
    for line in &figure.panels[1].lines {
        let readers = &line.points[1..];
        assert!(readers.iter().all(|p| p.committed > 0 && p.aborted == 0), "{}", line.label);
    }
}

/// Fig. 9 first, right after the load: the snapshot must already hold the rows (a read-only
/// transaction that found a key missing used to end the run).
#[test]
fn declared_read_only_transactions_see_the_load_at_once() {
    let out = scratch("fig9");
    let run = paper::run(&options(&[9], out.clone()), |_| ()).unwrap();
    declared_readers_commit(&run.figures[0]);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_requests_are_refused_before_any_work() {
    let out = scratch("bad");
    assert!(paper::run(&options(&[5], out.clone()), |_| ()).unwrap_err().contains("Figs. 6-23"));
    let png_or_svg = Options { format: "gif".into(), ..options(&[6], out.clone()) };
    assert!(paper::run(&png_or_svg, |_| ()).is_err());
    let nothing = Options { protocols: Vec::new(), ..options(&[6], out.clone()) };
    assert!(paper::run(&nothing, |_| ()).is_err());
    assert!(!out.exists(), "nothing was written");
}
