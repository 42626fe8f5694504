//! The `engram` binary end to end: benchmarks run with tiny parameters and write the JSON
//! fields their issues name.

use std::process::Command;

fn engram(args: &[&str]) -> String {
    let output =
        Command::new(env!("CARGO_BIN_EXE_engram")).args(args).output().expect("run engram");
    assert!(
        output.status.success(),
        "engram {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("json written")).expect("valid json")
}

#[test]
fn ycsb_reports_its_figures() {
    let dir = std::env::temp_dir().join(format!("engram-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ycsb.json");
    let text = engram(&[
        "bench",
        "ycsb",
        "--workload",
        "update-intensive",
        "--rows",
        "2000",
        "--theta",
        "0.9",
        "--threads",
        "2",
        "--duration",
        "0.5",
        "--quiet",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(text.contains("txn/s"), "{text}");
    let report = json(&path);
    for field in [
        "throughput_txn_per_s",
        "committed",
        "aborted",
        "aborts_by_reason",
        "threads",
        "workload",
        "mode",
    ] {
        assert!(report.get(field).is_some(), "missing {field}: {report}");
    }
    assert!(report["latency_us"]["p50"].is_number() && report["latency_us"]["p99"].is_number());
    assert!(report["committed"].as_u64().unwrap() > 0);
    assert_eq!(report["workload"], "update-intensive");
    // Both modes on one table, alternating, with the ratio.
    let path = dir.join("both.json");
    let text = engram(&[
        "bench",
        "ycsb",
        "--rows",
        "2000",
        "--threads",
        "1",
        "--duration",
        "0.4",
        "--mode",
        "both",
        "--rounds",
        "2",
        "--quiet",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(text.contains("txn / raw"), "{text}");
    let comparison = json(&path);
    assert_eq!(comparison["results"].as_array().unwrap().len(), 2);
    assert!(comparison["ratios"]["txn_over_raw_threads_1"].as_f64().unwrap() > 0.0);
    // Rows of non-inline attributes (Wu et al.'s Fig. 11), under both sharings.
    for sharing in ["copy", "refcount"] {
        let path = dir.join(format!("{sharing}.json"));
        let text = engram(&[
            "bench",
            "ycsb",
            "--rows",
            "2000",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--workload",
            "update-intensive",
            "--non-inline",
            sharing,
            "--attributes",
            "5",
            "--version-storage",
            "append-n2o",
            "--quiet",
            "--json",
            path.to_str().unwrap(),
        ]);
        assert!(
            text.contains(&format!("non-inline attributes of 100 bytes ({sharing})")),
            "{text}"
        );
        let report = json(&path);
        assert_eq!(report["value_bytes"], 500);
        assert!(report["committed"].as_u64().unwrap() > 0);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn index_benchmark_covers_every_structure() {
    let path = std::env::temp_dir().join(format!("engram-index-{}.json", std::process::id()));
    engram(&[
        "bench",
        "index",
        "--sizes",
        "20000",
        "--threads",
        "1",
        "--seconds",
        "0.2",
        "--rounds",
        "1",
        "--json",
        path.to_str().unwrap(),
    ]);
    let report = json(&path);
    let results = report["results"].as_array().unwrap();
    for structure in ["engram", "congee", "scc-tree-index", "crossbeam-skiplist", "rwlock-btreemap"]
    {
        for operation in ["insert", "get", "scan"] {
            assert!(
                results.iter().any(|r| r["structure"] == structure
                    && r["operation"] == operation
                    && r["ops_per_s"].as_f64().unwrap() > 0.0),
                "{structure} {operation} missing"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["bench", "ycsb", "--workload", "nonsense"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown workload"));
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["bench", "ycsb", "--theta", "7"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("theta"));
    for attributes in ["1", "200000"] {
        let output = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["bench", "ycsb", "--attributes", attributes, "--rows", "10"])
            .output()
            .unwrap();
        assert!(!output.status.success());
        assert!(String::from_utf8_lossy(&output.stderr).contains("--attributes must be"));
    }
    // Non-inline attributes need append-only storage, and say so.
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["bench", "ycsb", "--non-inline", "refcount", "--rows", "10"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("append-n2o or append-o2n"));
    // A server whose design options do not go together says why and does not start.
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["serve", "--gc", "tuple-cooperative", "--version-storage", "delta"])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs version_storage append-o2n"));
    // A reserve larger than the machine is an error, not a crash.
    #[rustfmt::skip]
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["bench", "tpcc", "--threads", "1", "--duration", "0.1", "--items", "1000",
               "--customers", "60", "--reserve-memory-mib", "1000000000", "--quiet"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("out of memory"));
}

#[test]
fn tpcc_reports_its_figures_and_plots_them() {
    let dir = std::env::temp_dir().join(format!("engram-cli-tpcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for db in ["engram", "sqlite"] {
        let path = dir.join(format!("{db}.json"));
        #[rustfmt::skip]
        let text = engram(&[
            "bench", "tpcc", "--db", db, "--threads", "1,2", "--rounds", "1",
            "--duration", "0.6", "--items", "1000", "--customers", "60",
            "--reserve-memory-mib", "8", "--quiet", "--json", path.to_str().unwrap(),
        ]);
        assert!(text.contains("new_order") && text.contains("tpmC"), "{text}");
        let reports = json(&path);
        let reports = reports.as_array().expect("one report per thread count");
        assert_eq!(reports.len(), 2);
        for (report, threads) in reports.iter().zip([1, 2]) {
            for field in
                ["throughput_txn_per_s", "tpmc", "committed", "aborted", "mix", "db", "per_type"]
            {
                assert!(report.get(field).is_some(), "missing {field}: {report}");
            }
            assert_eq!(report["consistency"], "ok");
            assert_eq!(report["threads"], threads);
            assert_eq!(report["warehouses"], threads, "a warehouse per thread by default");
            assert_eq!(report["mix"], "standard");
            for kind in ["new_order", "payment", "order_status", "delivery", "stock_level"] {
                let per_type = &report["per_type"][kind];
                assert!(per_type["committed"].as_u64().is_some(), "{kind}: {report}");
                assert!(per_type["aborted"].as_u64().is_some(), "{kind}: {report}");
                for p in ["p50", "p95", "p99"] {
                    assert!(per_type["latency_us"][p].is_number(), "{kind} {p}: {report}");
                }
            }
            assert!(report["per_type"]["new_order"]["committed"].as_u64().unwrap() > 0);
        }
        files.push(path);
    }
    let out = dir.join("tpcc.svg");
    let mut args = vec!["bench", "plot", "--out", out.to_str().unwrap()];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let text = engram(&args);
    assert!(text.contains("2 line(s), 4 point(s)"), "{text}");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.contains("\nengram\n") && svg.contains("\nsqlite\n"), "lines labelled directly");
    // Something that is not a result is an error, not a crash.
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["bench", "plot", "--out", out.to_str().unwrap(), out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("not JSON"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn recovery_benchmark_takes_a_checkpoint_that_the_next_open_loads() {
    let dir = std::env::temp_dir().join(format!("engram-cli-recovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let tpcc = dir.join("tpcc.json");
    #[rustfmt::skip]
    engram(&[
        "bench", "tpcc", "--threads", "1", "--duration", "0.4", "--items", "1000",
        "--customers", "60", "--reserve-memory-mib", "8", "--quiet",
        "--durability", "epoch,epoch-patches", "--checkpoint-log-mib", "0",
        "--data", data.to_str().unwrap(), "--json", tpcc.to_str().unwrap(),
    ]);
    let names: Vec<_> = json(&tpcc)
        .as_array()
        .expect("a report per database")
        .iter()
        .map(|report| report["db"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["engram-epoch", "engram-epoch-patches"], "the two logs are told apart");
    let reports = dir.join("recovery.json");
    #[rustfmt::skip]
    let text = engram(&[
        "bench", "recovery", "--data", data.join("epoch").to_str().unwrap(), "--checkpoint",
        "--repeat", "2", "--json", reports.to_str().unwrap(),
    ]);
    assert!(text.contains("checkpoint taken") && text.contains("ns a row"), "{text}");
    let reports = json(&reports);
    let [first, second] = reports["runs"].as_array().expect("a report per open").as_slice() else {
        panic!("two opens: {reports}")
    };
    assert_eq!(first["checkpoint_rows"], 0, "no checkpoint before: {first}");
    let taken = first["checkpoint_taken"]["rows"].as_u64().expect("rows checkpointed");
    assert!(taken > 5_000, "the loaded warehouse and the run's orders: {taken}");
    // The second open loads what the first checkpointed.
    assert_eq!(second["checkpoint_rows"].as_u64(), Some(taken), "{second}");
    assert_eq!(second["checkpoint_taken"]["rows"].as_u64(), Some(taken), "{second}");
    engram(&["check", "--data", data.join("epoch").to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
}
