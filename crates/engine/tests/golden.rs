//! Golden data directory: `tests/golden/v1` was written by format version 1 and must stay
//! readable by every later build (a format change bumps `FORMAT_VERSION` and keeps a reader or
//! a migration for version 1). Regenerate only when adding a new version's directory:
//! `ENGRAM_WRITE_GOLDEN=1 cargo test -p engram-engine --test golden`.

use engram_engine::wal;
use engram_engine::{Config, Database, IndexKeys, IndexSpec, Isolation, KeyBuilder, TableSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1")
}

fn key(id: u64) -> Vec<u8> {
    KeyBuilder::new().u64(id).finish()
}

fn by_parity() -> IndexSpec {
    IndexSpec::new("by_parity", false, |row: &[u8], out: &mut Vec<u8>| {
        out.push(row[0] % 2);
        true
    })
    .definition(&b"parity"[..])
}

fn config(dir: &Path) -> Config {
    Config {
        data_dir: Some(dir.to_path_buf()),
        epoch_interval_ms: 2,
        snapshot_interval_epochs: 2,
        segment_bytes: 4096,
        checkpoint_log_bytes: 0,
        index_keys: Some(IndexKeys::new(|definition| {
            (definition.definition == b"parity").then(|| by_parity().key_of)
        })),
        ..Config::default()
    }
}

/// The rows the golden directory holds.
fn expected() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rows = BTreeMap::new();
    for id in 0..60u64 {
        rows.insert(key(id), format!("{id}-v1").into_bytes());
    }
    for id in (0..60u64).step_by(3) {
        rows.insert(key(id), format!("{id}-v2").into_bytes());
    }
    for id in (0..60u64).step_by(7) {
        rows.remove(&key(id));
    }
    rows
}

fn write_golden(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let db = Database::open(config(dir)).unwrap();
    let table = db.create_table(TableSpec::new("golden").index(by_parity())).unwrap();
    db.create_table(TableSpec::new("dropped")).unwrap();
    db.drop_table("dropped").unwrap();
    let mut worker = db.worker().unwrap();
    for id in 0..60u64 {
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.insert(&table, &key(id), format!("{id}-v1").as_bytes())
            })
            .unwrap();
    }
    worker.wait_durable().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    db.checkpoint().unwrap();
    for id in (0..60u64).step_by(3) {
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.update(&table, &key(id), format!("{id}-v2").as_bytes()).map(|_| ())
            })
            .unwrap();
    }
    for id in (0..60u64).step_by(7) {
        worker
            .transaction(Isolation::Serializable, |txn| txn.delete(&table, &key(id)).map(|_| ()))
            .unwrap();
    }
    worker.wait_durable().unwrap();
    drop(worker);
    drop(table);
    drop(db);
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_version_1_data_directory_stays_readable() {
    if std::env::var_os("ENGRAM_WRITE_GOLDEN").is_some() {
        write_golden(&golden_dir());
    }
    let copy = std::env::temp_dir().join(format!("engram-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    copy_dir(&golden_dir(), &copy);
    let storage = wal::DirStorage::open(&copy).unwrap();
    let report = wal::check(&storage, 1).unwrap();
    assert!(report.checkpoint_epoch.is_some() && report.log_transactions > 0, "{report:?}");
    drop(storage);
    let db = Database::open(config(&copy)).unwrap();
    assert_eq!(db.table_names(), vec!["golden".to_string()]);
    let table = db.table("golden").unwrap();
    let mut worker = db.worker().unwrap();
    let (rows, odd) = worker
        .transaction(Isolation::Serializable, |txn| {
            let mut rows = BTreeMap::new();
            txn.scan(
                &table,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                engram_engine::Direction::Forward,
                usize::MAX,
                |k, v| {
                    rows.insert(k.to_vec(), v.to_vec());
                    true
                },
            )?;
            let mut odd = 0;
            let one = [1u8];
            txn.scan_index(
                &table,
                0,
                std::ops::Bound::Included(&one[..]),
                std::ops::Bound::Included(&one[..]),
                engram_engine::Direction::Forward,
                usize::MAX,
                |_, _| {
                    odd += 1;
                    true
                },
            )?;
            Ok((rows, odd))
        })
        .unwrap();
    assert_eq!(rows, expected());
    assert_eq!(odd, expected().values().filter(|v| v[0] % 2 == 1).count());
    drop(worker);
    drop(table);
    drop(db);
    std::fs::remove_dir_all(&copy).unwrap();
}
