//! A data directory under damage: the code the fuzz target `wal_recovery` runs (`fuzz/`, on a
//! nightly toolchain) and `tests/durability.rs` runs on the stable one.
//!
//! [`sample_directory`] writes a small database into memory: a checkpoint, log after it with
//! updates and deletes, a dropped table and a secondary index. [`open_damaged`] flips bits
//! and cuts files of a copy where its input says, then runs `check` and recovery on it. Both
//! must end in a report or an error, never a panic; they must agree on whether the
//! directory can be opened (a directory `check` passes must open, and one that opens must
//! pass `check`); and a database that opens must hold one of the states the sample went
//! through (a log cut short loses its last transactions, never some in the middle, and a
//! damaged byte is never read as data).

use crate::recovery::check;
use crate::wal::{FaultyStorage, Storage};
use crate::{Config, Database, Direction, IndexKeys, IndexSpec, Isolation, KeyBuilder, TableSpec};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

/// Bytes of input one damage takes: the file (one byte), the offset (four), and one byte
/// that cuts the file at the offset when odd, and is the mask of bits to flip there when
/// even.
pub const DAMAGE_BYTES: usize = 6;

fn by_first_byte() -> IndexSpec {
    IndexSpec::new("by_first_byte", false, |row: &[u8], out: &mut Vec<u8>| match row.first() {
        Some(first) => {
            out.push(*first);
            true
        }
        None => false,
    })
    .definition(b"first byte".to_vec())
}

fn config(storage: &FaultyStorage) -> Config {
    Config {
        epoch_interval_ms: 1,
        snapshot_interval_epochs: 1,
        storage: Some(Arc::new(storage.clone())),
        checkpoint_log_bytes: 0,
        log_patches: true,
        index_keys: Some(IndexKeys::new(|definition| {
            (definition.definition == b"first byte").then(|| by_first_byte().key_of)
        })),
        recovery_threads: 2,
        ..Config::default()
    }
}

fn key(id: u64) -> Vec<u8> {
    KeyBuilder::new().u64(id).finish()
}

/// Row `id`'s value: `id-word` padded to 160 bytes, so that an update of the word is logged
/// as a patch (format 4), not a whole row.
fn sample_value(id: u64, word: &str) -> String {
    format!("{id:02}-{word:.<157}")
}

/// The sample's transactions after its checkpoint, in commit order: a key and its new value,
/// or `None` for a delete.
fn after_checkpoint() -> Vec<(u64, Option<String>)> {
    let updates = (0..24u64).step_by(3).map(|id| (id, Some(sample_value(id, "second"))));
    let deletes = (0..24u64).step_by(5).map(|id| (id, None));
    updates.chain(deletes).collect()
}

/// The table's contents as the checkpoint left them, and after each later transaction.
pub fn sample_states() -> Vec<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut state: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..24u64).map(|id| (key(id), sample_value(id, "first").into_bytes())).collect();
    let mut states = vec![state.clone()];
    for (id, value) in after_checkpoint() {
        match value {
            Some(value) => state.insert(key(id), value.into_bytes()),
            None => state.remove(&key(id)),
        };
        states.push(state.clone());
    }
    states
}

/// A small data directory in memory, closed cleanly: table `rows` with a secondary index,
/// checkpointed after 24 inserts, then the transactions of [`after_checkpoint`] in the log,
/// each durable before the next; table `gone` written and dropped.
pub fn sample_directory() -> FaultyStorage {
    let storage = FaultyStorage::new(1);
    let db = Database::open(config(&storage)).expect("a database in memory");
    let table = db.create_table(TableSpec::new("rows").index(by_first_byte())).expect("a table");
    let gone = db.create_table(TableSpec::new("gone")).expect("a table");
    let mut worker = db.worker().expect("a worker");
    for id in 0..24u64 {
        worker
            .transaction(Isolation::Serializable, |txn| {
                txn.put(&table, &key(id), sample_value(id, "first").as_bytes())?;
                txn.put(&gone, &key(id), b"x")
            })
            .expect("a write");
    }
    worker.wait_durable().expect("durable");
    db.checkpoint().expect("a checkpoint");
    for (id, value) in after_checkpoint() {
        worker
            .transaction(Isolation::Serializable, |txn| match &value {
                Some(value) => txn.put(&table, &key(id), value.as_bytes()),
                None => txn.delete(&table, &key(id)).map(|_| ()),
            })
            .expect("a write");
        worker.wait_durable().expect("durable");
    }
    drop(worker);
    drop(gone);
    drop(table);
    db.drop_table("gone").expect("a drop");
    drop(db);
    storage
}

/// What [`open_damaged`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened {
    /// `check` passed, the database opened, and table `rows` holds state `state` of
    /// [`sample_states`] (0: as checkpointed).
    Readable { state: usize },
    /// Both refused the directory.
    Refused,
}

/// Damages a copy of `pristine` as `damage` says (whole [`DAMAGE_BYTES`] steps; the rest is
/// ignored), then checks and opens it. Panics when `check` and recovery disagree, or a
/// recovered database cannot be read or holds a state the sample never had: those are the
/// bugs this looks for.
pub fn open_damaged(pristine: &FaultyStorage, damage: &[u8]) -> Opened {
    let copy = pristine.crash();
    let paths = copy.paths();
    for step in damage.chunks_exact(DAMAGE_BYTES) {
        let path = &paths[usize::from(step[0]) % paths.len()];
        let offset = u32::from_le_bytes([step[1], step[2], step[3], step[4]]) as usize;
        match step[5] {
            odd if odd % 2 == 1 => {
                let length = copy.read(path).map_or(0, |bytes| bytes.len());
                copy.damage(path, 0, 0, Some(offset % (length + 1)));
            }
            even => copy.damage(path, offset, even.max(2), None),
        }
    }
    let checked = check(&copy, 1);
    let opened = Database::open(config(&copy));
    match (checked, opened) {
        (Ok(_), Ok(db)) => {
            let rows = read_rows(&db);
            match sample_states().iter().position(|state| *state == rows) {
                Some(state) => Opened::Readable { state },
                None => panic!("recovered a state the sample never had: {rows:?}"),
            }
        }
        (Err(_), Err(_)) => Opened::Refused,
        (Ok(report), Err(error)) => {
            panic!("check passed ({report:?}) but recovery failed: {error}")
        }
        (Err(error), Ok(_)) => panic!("recovery succeeded but check failed: {error}"),
    }
}

/// Table `rows` in full, read through its secondary index too, which must agree. A damaged
/// catalog may lose the drop of table `gone` (an earlier state): then `gone` must hold what
/// it held, 24 rows of `x`; no other table may appear.
fn read_rows(db: &Database) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let names = db.table_names();
    assert!(names == ["rows"] || names == ["gone", "rows"], "tables after recovery: {names:?}");
    let mut worker = db.worker().expect("a worker");
    let mut read = |name: &str, index: bool| {
        let table = db.table(name).expect("a listed table");
        worker
            .transaction(Isolation::Serializable, |txn| {
                let mut rows = BTreeMap::new();
                txn.scan(
                    &table,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    Direction::Forward,
                    usize::MAX,
                    |key, value| {
                        rows.insert(key.to_vec(), value.to_vec());
                        true
                    },
                )?;
                if index {
                    let mut indexed = 0;
                    txn.scan_index(
                        &table,
                        0,
                        Bound::Unbounded,
                        Bound::Unbounded,
                        Direction::Forward,
                        usize::MAX,
                        |_, _| {
                            indexed += 1;
                            true
                        },
                    )?;
                    assert_eq!(indexed, rows.len(), "the secondary index disagrees with the rows");
                }
                Ok(rows)
            })
            .expect("a recovered table reads")
    };
    if names.len() == 2 {
        let gone = read("gone", false);
        let expected: BTreeMap<Vec<u8>, Vec<u8>> =
            (0..24u64).map(|id| (key(id), b"x".to_vec())).collect();
        assert_eq!(gone, expected, "table gone came back with other rows");
    }
    read("rows", true)
}

/// Two 16-byte keys of table `table` whose rows hash alike in recovery (`row_hash`, which
/// groups a row's patches): the second word of the second key undoes the difference the first
/// words made. For tests of rows whose hashes tie (`tests/durability.rs`).
pub fn keys_of_one_row_hash(table: u32, first: u64) -> (Vec<u8>, Vec<u8>) {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let start = mix(0, u64::from(table) | 16 << 32);
    let (a1, a2, b1) = (first, 7, first + 1);
    let b2 = mix(start, a1).rotate_left(5) ^ a2 ^ mix(start, b1).rotate_left(5);
    let key = |one: u64, two: u64| [one.to_le_bytes(), two.to_le_bytes()].concat();
    let (a, b) = (key(a1, a2), key(b1, b2));
    assert_ne!(a, b);
    let hash = crate::recovery::row_hash;
    assert_eq!(hash(table, &a), hash(table, &b), "the keys must hash alike");
    (a, b)
}
