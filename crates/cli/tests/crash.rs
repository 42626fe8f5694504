//! The short crash test of CI: child processes running bank transfers and TPC-C are killed
//! with SIGKILL at random moments; after each recovery every acknowledged commit is present and
//! the data is consistent (`engram crash-test`; the long version is documented in
//! docs/durability.md). Then `engram check` verifies the directories it left.

use std::process::Command;

#[test]
fn killed_children_lose_no_acknowledged_commit() {
    let dir = std::env::temp_dir().join(format!("engram-crash-ci-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let output = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args([
            "crash-test",
            "--cycles",
            "4",
            "--max-run-ms",
            "500",
            "--seed",
            "7",
            "--keep",
            "--dir",
        ])
        .arg(&dir)
        .output()
        .expect("run engram crash-test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("bank: 4 cycles"), "{stdout}");
    assert!(stdout.contains("tpcc: 4 cycles"), "{stdout}");
    for workload in ["bank", "tpcc"] {
        let check = Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["check", "--data"])
            .arg(dir.join(workload))
            .output()
            .expect("run engram check");
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "{text}\n{}", String::from_utf8_lossy(&check.stderr));
        assert!(text.contains(": ok"), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
