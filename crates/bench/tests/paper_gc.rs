//! `engram bench paper --figure 18,20` on a tiny scale. A process of its own: its memory samples
//! (`chunks::in_use_bytes`) count every database in the process, so no other test may run
//! beside it.

mod common;

use common::options;
use engram_bench::paper;

/// Figs. 18 and 19, and 20 and 21, each come from one set of runs (asking for one gives
/// both): a line per GC mode, 20 samples each; without GC memory only grows, and the vacuum and
/// the cooperating readers pruned versions.
#[test]
fn gc_figures_sample_throughput_and_memory_over_time() {
    let out = std::env::temp_dir().join(format!("engram-paper-gc-{}", std::process::id()));
    let run = paper::run(&options(&[21, 18], out.clone()), |_| ()).unwrap();
    assert_eq!(run.figures.iter().map(|f| f.figure).collect::<Vec<_>>(), [18, 19, 20, 21]);
    for figure in &run.figures {
        for panel in &figure.panels {
            let labels: Vec<&str> = panel.lines.iter().map(|l| l.label.as_str()).collect();
            if figure.figure <= 19 {
                let cooperative =
                    ["tuple-cooperative, no sweep", "tuple-cooperative, sweep every 1000 ms"];
                assert_eq!(labels, ["tuple-vacuum", cooperative[0], cooperative[1], "none"]);
            } else {
                assert_eq!(labels, ["transaction", "tuple-vacuum", "none"]);
            }
            for line in &panel.lines {
                assert_eq!(line.points.len(), 20, "{} {}", panel.id, line.label);
                assert!(line.points.iter().all(|p| p.committed > 0), "{}", line.label);
            }
            assert!(out.join(format!("figure-{}.svg", panel.id)).exists());
        }
    }
    for panel in run.figures[1].panels.iter().chain(&run.figures[3].panels) {
        let none = &panel.lines.last().unwrap().points;
        assert!(none.windows(2).all(|w| w[1].y >= w[0].y), "{}: memory fell with no GC", panel.id);
        assert!(none.last().unwrap().y > 0.0, "{}: no memory grown with no GC", panel.id);
        assert!(!out.join(format!("figure-{}-aborts.svg", panel.id)).exists());
    }
    assert!(run.figures[2].setup.contains("versions pruned"));
    // Fig. 18's setup reports the readers' cleaning: records pruned, none passes.
    let setup = &run.figures[0].setup;
    assert!(setup.contains("append-o2n") && setup.contains("tuple-cooperative"), "{setup}");
    std::fs::remove_dir_all(&out).unwrap();
}
