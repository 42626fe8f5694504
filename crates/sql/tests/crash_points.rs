//! Every write and sync of a script of DDL and DML is, in turn, the point where the disk fails
//! and the process then crashes. After each crash the database opens, holds exactly the state
//! after the last statement it acknowledged (or after the one the failure interrupted, whose
//! outcome the client never learned), and takes writes again. DDL builds and drops engine
//! tables around a catalog row (CREATE INDEX, TRUNCATE, ADD PRIMARY KEY make a new generation
//! of the table), so a crash between those steps must leave one consistent catalog; ALTER
//! TABLE's schema versions leave rows of several versions in the checkpoint and the log.

use engram_engine::wal::FaultyStorage;
use engram_engine::{Config, Durability};
use engram_sql::{Outcome, SqlDb};
use std::sync::Arc;

/// Statements run one at a time; a step of several is one transaction, acknowledged by its
/// last statement.
const SCRIPT: &[&[&str]] = &[
    &["CREATE TABLE a (id BIGSERIAL PRIMARY KEY, name VARCHAR(20) NOT NULL, n INT)"],
    &["INSERT INTO a (name, n) VALUES ('x', 1), ('y', 2), ('w', 5)"],
    &["CREATE INDEX a_name ON a (name)"],
    &["CREATE TABLE b (k INT PRIMARY KEY, v TEXT)"],
    &["INSERT INTO b VALUES (1, 'one'), (2, 'two')"],
    &["CHECKPOINT"],
    &[
        "BEGIN",
        "CREATE TABLE c (z INT)",
        "INSERT INTO c VALUES (1), (2)",
        "INSERT INTO a (name, n) VALUES ('in a transaction', 9)",
        "COMMIT",
    ],
    &["UPDATE a SET n = n + 10 WHERE name <> 'y'"],
    &["DROP TABLE b"],
    &["CREATE TABLE b (k INT PRIMARY KEY, w TEXT, extra INT)"],
    &["INSERT INTO b VALUES (3, 'three', 3)"],
    &[
        "BEGIN",
        "CREATE TABLE gone (x INT)",
        "INSERT INTO b VALUES (4, 'rolled back', 4)",
        "ROLLBACK",
    ],
    &["CREATE TABLE h (v TEXT NOT NULL)"],
    &["INSERT INTO h VALUES ('p'), ('q')"],
    &["ALTER TABLE h ADD PRIMARY KEY (v)"],
    &["DROP INDEX a_name"],
    &["TRUNCATE c"],
    &["CHECKPOINT"],
    &["INSERT INTO c VALUES (3)"],
    &["INSERT INTO a (name, n) VALUES ('z', 3)"],
    &["DELETE FROM a WHERE name = 'x'"],
    &["CREATE UNIQUE INDEX b_w ON b (w)"],
    &["UPDATE b SET extra = extra * 2"],
    // Schema versions: rows of several versions in the checkpoint and in the log.
    &["ALTER TABLE b ADD COLUMN d INT DEFAULT 4"],
    &["INSERT INTO b VALUES (5, 'five', 5, 50)"],
    &[
        "BEGIN",
        "ALTER TABLE a ALTER COLUMN n TYPE BIGINT",
        "UPDATE a SET n = n + 10000000000 WHERE name = 'y'",
        "COMMIT",
    ],
    &["CHECKPOINT"],
    &["ALTER TABLE b DROP COLUMN extra"],
    &["INSERT INTO b VALUES (6, 'six', 60)"],
    &["BEGIN", "ALTER TABLE b RENAME TO bb", "ALTER TABLE bb RENAME COLUMN w TO ww", "COMMIT"],
];

fn config() -> Config {
    Config {
        durability: Durability::Epoch,
        epoch_interval_ms: 1,
        checkpoint_log_bytes: 0,
        recovery_threads: 2,
        ..Config::default()
    }
}

fn open(storage: &FaultyStorage) -> Arc<SqlDb> {
    SqlDb::open(Config { storage: Some(Arc::new(storage.clone())), ..config() }).unwrap()
}

/// Everything a client can see: each table's schema (less the engine table's name, a
/// generation number) and its rows in order.
fn state(db: &Arc<SqlDb>) -> String {
    let mut session = db.session().unwrap();
    let mut out = String::new();
    for name in db.table_names() {
        let schema = db.table_schema(&name).unwrap();
        out += &format!(
            "{name} v{} {:?} key {:?} {:?} {:?}\n",
            schema.version, schema.columns, schema.primary_key, schema.primary_name, schema.indexes
        );
        let visible = schema.columns.iter().filter(|c| !c.dropped).count();
        let columns = (1..=visible).map(|c| c.to_string()).collect::<Vec<_>>();
        let query = format!("SELECT * FROM {name} ORDER BY {}", columns.join(", "));
        let Outcome::Rows { rows, .. } = session.execute_one(&query).unwrap() else {
            panic!("{query} returned no rows");
        };
        for row in rows {
            out += &format!("  {row:?}\n");
        }
    }
    out
}

/// Runs the script until a statement fails; returns the state after each step that
/// succeeded (the first is the empty database's) and whether a step failed, and checks that
/// a failure is the full disk's 53100.
fn run_script(db: &Arc<SqlDb>) -> (Vec<String>, bool) {
    let mut states = vec![state(db)];
    let mut session = db.session().unwrap();
    for step in SCRIPT {
        for statement in *step {
            if let Err(error) = session.execute_one(statement) {
                assert_eq!(error.code, "53100", "{statement}: {error:?}");
                return (states, true);
            }
        }
        states.push(state(db));
    }
    (states, false)
}

/// The disk fails at each write and sync of the recovery of `crashed` (truncating torn
/// tails, rewriting the catalog and the manifest, dropping DDL's leftovers), the process
/// crashes again, and the next recovery still finds `found`, what an undisturbed one found.
fn recovery_crash_points(crashed: &FaultyStorage, found: &str, point: u64) {
    let undisturbed = crashed.crash();
    drop(open(&undisturbed));
    for failing in 0..undisturbed.operations() {
        let storage = crashed.crash();
        storage.fail_after(failing);
        let opened = SqlDb::open(Config { storage: Some(Arc::new(storage.clone())), ..config() });
        if let Ok(db) = opened {
            assert_eq!(state(&db), found, "point {point}: open failing at {failing}");
        }
        let again = storage.crash();
        if let Err(error) = engram_engine::recovery::check(&again, 1) {
            panic!("point {point}: recovery failing at {failing}, then check: {error}");
        }
        assert_eq!(state(&open(&again)), found, "point {point}: recovery failing at {failing}");
    }
}

#[test]
fn a_crash_at_every_write_and_sync_of_ddl_and_dml_recovers_an_acknowledged_prefix() {
    // The whole script without faults: the state after each step, and its operations.
    let clean = FaultyStorage::new(1);
    let db = open(&clean);
    let opened_after = clean.operations();
    let (expected, failed) = run_script(&db);
    assert!(!failed);
    assert_eq!(expected.len(), SCRIPT.len() + 1);
    let operations = clean.operations() - opened_after;
    drop(db);
    assert!(operations > 2 * SCRIPT.len() as u64, "{operations} operations");
    let mut outcomes = [0usize; 2];
    for point in 0..operations {
        for seed in [3, 8] {
            let storage = FaultyStorage::new(seed + point * 16);
            let db = open(&storage);
            storage.fail_after(point);
            let (states, failed) = run_script(&db);
            let acknowledged = states.len() - 1;
            assert_eq!(states[..], expected[..=acknowledged], "point {point}: a state differs");
            drop(db);
            let crashed = storage.crash();
            let pristine = crashed.crash();
            // `engram check` finds nothing wrong, changes nothing, and reports what recovery
            // then cuts.
            let paths = crashed.paths();
            let checked = engram_engine::recovery::check(&crashed, 1)
                .unwrap_or_else(|error| panic!("point {point} seed {seed}: check: {error}"));
            assert_eq!(crashed.paths(), paths);
            let db = SqlDb::open(Config { storage: Some(Arc::new(crashed.clone())), ..config() })
                .unwrap_or_else(|error| {
                    panic!(
                        "point {point} seed {seed}: {acknowledged} steps acknowledged: {error:?}"
                    )
                });
            let recovered = db.database().recovery_report().unwrap();
            assert_eq!(recovered.torn_tails, checked.torn_tails, "point {point} seed {seed}");
            let found = state(&db);
            // The acknowledged steps, and perhaps the one the failure interrupted.
            let at = (acknowledged..=(acknowledged + 1).min(SCRIPT.len()))
                .find(|&step| expected[step] == found)
                .unwrap_or_else(|| {
                    panic!(
                        "point {point} seed {seed}: {acknowledged} steps acknowledged \
                         (failed: {failed}), recovered:\n{found}\nexpected:\n{}\nor:\n{}",
                        expected[acknowledged],
                        expected.get(acknowledged + 1).map_or("", String::as_str)
                    )
                });
            outcomes[usize::from(at > acknowledged)] += 1;
            if seed == 3 && point % 4 == 0 {
                recovery_crash_points(&pristine, &found, point);
            }
            // Writes go on after the restart, DDL included, and survive the next one.
            let mut session = db.session().unwrap();
            session.execute_one("CREATE TABLE after_restart (x INT PRIMARY KEY)").unwrap();
            session.execute_one("INSERT INTO after_restart VALUES (1)").unwrap();
            if at >= 2 {
                session.execute_one("INSERT INTO a (name, n) VALUES ('after', 0)").unwrap();
            }
            let before = state(&db);
            drop(session);
            drop(db);
            let again = crashed.crash();
            assert_eq!(state(&open(&again)), before, "point {point}: the second restart");
        }
    }
    // Both outcomes of an interrupted step happen (its record durable or not).
    eprintln!("{operations} crash points, outcomes {outcomes:?}");
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
