//! Golden data directories: `tests/golden/vN` was written by format version N and must stay
//! readable by every later build (a format change bumps `FORMAT_VERSION` and keeps a reader or
//! a migration for every older version). Write only the new version's directory, once, when
//! the format changes: `ENGRAM_WRITE_GOLDEN=1 cargo test -p engram-engine --test golden`
//! writes `v{FORMAT_VERSION}` and leaves the older ones alone.

use engram_engine::wal;
use engram_engine::{Config, Database, IndexKeys, IndexSpec, Isolation, KeyBuilder, TableSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden_dir(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/v{version}"))
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
        log_patches: true,
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

/// Rows of table `wide` (format 4 on): 160 bytes, a counter in the last 8.
fn wide_row(id: u64, fill: u8, counter: u64) -> Vec<u8> {
    let mut row = format!("{id:08}").into_bytes();
    row.resize(152, fill);
    row.extend_from_slice(&counter.to_le_bytes());
    row
}

/// What happens to `wide` after the checkpoint, in order: the key, and the new row or `None`
/// for a delete. Updates that change only the counter are logged as patches; those that
/// change the fill (row 4 in round 2) are whole images, between patches of the same row.
fn wide_after_checkpoint() -> Vec<(u64, Option<Vec<u8>>)> {
    let mut writes = Vec::new();
    for round in 1..=3u64 {
        for id in (0..24u64).step_by(2) {
            let fill = if id == 4 && round == 3 { b'z' } else { b'w' };
            writes.push((id, Some(wide_row(id, fill, round))));
        }
        if round == 2 {
            writes.push((4, Some(wide_row(4, b'z', 20))));
            writes.push((30, Some(wide_row(30, b'n', 0))));
        }
    }
    writes.push((30, Some(wide_row(30, b'n', 7))));
    writes.push((6, None));
    writes
}

fn expected_wide() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rows: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..24u64).map(|id| (key(id), wide_row(id, b'w', 0))).collect();
    for (id, row) in wide_after_checkpoint() {
        match row {
            Some(row) => rows.insert(key(id), row),
            None => rows.remove(&key(id)),
        };
    }
    rows
}

fn write_golden(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let db = Database::open(config(dir)).unwrap();
    let table = db.create_table(TableSpec::new("golden").index(by_parity())).unwrap();
    db.create_table(TableSpec::new("dropped")).unwrap();
    db.drop_table("dropped").unwrap();
    let wide = db.create_table(TableSpec::new("wide")).unwrap();
    let mut worker = db.worker().unwrap();
    for id in 0..24u64 {
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.insert(&wide, &key(id), &wide_row(id, b'w', 99))
            })
            .unwrap();
        // Patched before the checkpoint: replay skips these.
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.update(&wide, &key(id), &wide_row(id, b'w', 0)).map(|_| ())
            })
            .unwrap();
    }
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
    for (id, row) in wide_after_checkpoint() {
        worker
            .transaction(Isolation::Serializable, |txn| match &row {
                Some(row) => txn.put(&wide, &key(id), row),
                None => txn.delete(&wide, &key(id)).map(|_| ()),
            })
            .unwrap();
    }
    worker.wait_durable().unwrap();
    drop(worker);
    drop(wide);
    drop(table);
    drop(db);
    // Rows the catalog log holds (format 8): written by a run with the log off.
    let off = Config { durability: engram_engine::Durability::Off, ..config(dir) };
    let db = Database::open(off).unwrap();
    let kept = db.create_table(TableSpec::new("catalog_rows")).unwrap();
    let mut worker = db.worker().unwrap();
    for (id, row) in catalog_rows() {
        worker.transaction(Isolation::Serializable, |txn| txn.put(&kept, &key(id), row)).unwrap();
        let row: &[u8] = row;
        db.log_catalog_rows(&kept, &worker.last_commit(), &[(&key(id), Some(row))]).unwrap();
    }
    drop(worker);
    drop(kept);
    drop(db);
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

/// The rows of the table whose rows only the catalog log holds (format 8).
fn catalog_rows() -> [(u64, &'static [u8]); 2] {
    [(1, b"kept by the catalog"), (2, b"and this")]
}

#[test]
fn every_versions_data_directory_stays_readable() {
    if std::env::var_os("ENGRAM_WRITE_GOLDEN").is_some() {
        write_golden(&golden_dir(wal::format::FORMAT_VERSION));
    }
    for version in 1..=wal::format::FORMAT_VERSION {
        read_golden(version);
    }
}

fn all_rows(
    worker: &mut engram_engine::Worker,
    table: &engram_engine::TableRef,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    worker
        .transaction(Isolation::Serializable, |txn| {
            let mut rows = BTreeMap::new();
            txn.scan(
                table,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                engram_engine::Direction::Forward,
                usize::MAX,
                |k, v| {
                    rows.insert(k.to_vec(), v.to_vec());
                    true
                },
            )?;
            Ok(rows)
        })
        .unwrap()
}

/// Opens a copy of version `version`'s directory, checks its rows, then writes to it and opens
/// it again, so that its files and this build's are read together.
fn read_golden(version: u32) {
    let copy =
        std::env::temp_dir().join(format!("engram-golden-v{version}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    engram_testkit::files::copy_dir(&golden_dir(version), &copy).unwrap();
    let storage = wal::DirStorage::open(&copy).unwrap();
    let report = engram_engine::recovery::check(&storage, 1).unwrap();
    assert!(report.checkpoint_epoch.is_some() && report.log_transactions > 0, "{report:?}");
    drop(storage);
    let db = Database::open(config(&copy)).unwrap();
    let patches = version >= wal::format::PATCHES;
    let catalog_rows_held = version >= wal::format::CATALOG_ROWS;
    let names: &[&str] = match (patches, catalog_rows_held) {
        (_, true) => &["catalog_rows", "golden", "wide"],
        (true, false) => &["golden", "wide"],
        (false, false) => &["golden"],
    };
    assert_eq!(db.table_names(), names);
    if catalog_rows_held {
        let mut worker = db.worker().unwrap();
        let expected: BTreeMap<Vec<u8>, Vec<u8>> =
            catalog_rows().iter().map(|(id, row)| (key(*id), row.to_vec())).collect();
        assert_eq!(all_rows(&mut worker, &db.table("catalog_rows").unwrap()), expected);
    }
    let table = db.table("golden").unwrap();
    let mut worker = db.worker().unwrap();
    if patches {
        let report = db.recovery_report().unwrap();
        assert!(report.log_patches > 0, "version {version}: {report:?}");
        assert_eq!(all_rows(&mut worker, &db.table("wide").unwrap()), expected_wide());
    }
    let rows = all_rows(&mut worker, &table);
    let odd = worker
        .transaction(Isolation::Serializable, |txn| {
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
            Ok(odd)
        })
        .unwrap();
    assert_eq!(rows, expected(), "version {version}");
    assert_eq!(odd, expected().values().filter(|v| v[0] % 2 == 1).count());
    // Newer TIDs than every logged one, in this build's layout, next to the old files.
    let before = worker.last_commit().epoch;
    worker
        .transaction(Isolation::Serializable, |txn| {
            txn.update(&table, &key(1), b"1-now").map(|_| ())
        })
        .unwrap();
    assert!(worker.last_commit().epoch >= before);
    worker.wait_durable().unwrap();
    drop(worker);
    drop(table);
    drop(db);
    let db = Database::open(config(&copy)).unwrap();
    let table = db.table("golden").unwrap();
    let mut worker = db.worker().unwrap();
    let one = worker
        .transaction(Isolation::Serializable, |txn| {
            txn.get(&table, &key(1)).map(|row| row.map(<[u8]>::to_vec))
        })
        .unwrap();
    assert_eq!(one.as_deref(), Some(&b"1-now"[..]), "version {version}, reopened");
    drop(worker);
    drop(table);
    drop(db);
    std::fs::remove_dir_all(&copy).unwrap();
}
