//! `engram bench ddl`: how long each ALTER TABLE (and CREATE/DROP INDEX) takes on a table of
//! n rows, on Engram (in process), SQLite (in process, in memory) and any server over the
//! PostgreSQL wire protocol (PostgreSQL, or `engram serve`): the same statements in the same
//! order on the same rows, each timed from the client.

use crate::report::Machine;
use serde::Serialize;
use std::time::Instant;

/// `CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, name TEXT)` with `a = id % 1000` and
/// `name = 'name' || id`; then these statements, in order. SQLite runs the forms it has
/// (`sqlite_form`).
pub const STATEMENTS: [&str; 17] = [
    "ALTER TABLE t ADD COLUMN c1 INT",
    "ALTER TABLE t ADD COLUMN c2 INT DEFAULT 7",
    "ALTER TABLE t ADD COLUMN c3 TIMESTAMP DEFAULT clock_timestamp()",
    "ALTER TABLE t ALTER COLUMN c2 SET DEFAULT 8",
    "ALTER TABLE t ALTER COLUMN c2 DROP DEFAULT",
    "ALTER TABLE t RENAME COLUMN c1 TO c1r",
    "ALTER TABLE t ALTER COLUMN a TYPE BIGINT",
    "ALTER TABLE t ALTER COLUMN a DROP NOT NULL",
    "ALTER TABLE t ALTER COLUMN a SET NOT NULL",
    "ALTER TABLE t ALTER COLUMN c2 TYPE TEXT",
    "ALTER TABLE t DROP COLUMN c1r",
    "ALTER TABLE t RENAME TO t2",
    "ALTER TABLE t2 RENAME TO t",
    "ALTER TABLE t ADD CONSTRAINT t_name_key UNIQUE (name)",
    "ALTER TABLE t DROP CONSTRAINT t_name_key",
    "CREATE INDEX t_a ON t (a)",
    "DROP INDEX t_a",
];

/// SQLite's spelling of a statement, or `None` where SQLite has no such ALTER.
pub fn sqlite_form(statement: &str) -> Option<String> {
    if statement.contains("ALTER COLUMN") || statement.contains("CONSTRAINT") {
        return None;
    }
    if statement.contains("clock_timestamp") {
        // SQLite's ADD COLUMN takes only a constant default.
        return None;
    }
    Some(statement.replace("TIMESTAMP", "TEXT"))
}

/// Commits do not wait for the log (or Engram's epoch): the times are the statements' own,
/// not a flush's.
const COMMIT_UNWAITED: &str = "SET synchronous_commit = off";

/// A database the statements run on.
pub trait Target {
    fn name(&self) -> String;
    /// Runs one statement (or a string of them).
    fn run(&mut self, sql: &str) -> Result<(), String>;
    /// The form of `statement` this database runs (`None`: it has none).
    fn form(&self, statement: &str) -> Option<String> {
        Some(statement.to_string())
    }
    /// Creates `t` with `rows` rows.
    fn load(&mut self, rows: u64) -> Result<(), String> {
        let _ = self.run("DROP TABLE IF EXISTS t");
        let _ = self.run("DROP TABLE IF EXISTS t2");
        self.run("CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, name TEXT)")?;
        const BATCH: u64 = 1_000;
        let mut first = 1;
        while first <= rows {
            let last = (first + BATCH - 1).min(rows);
            let values: Vec<String> =
                (first..=last).map(|id| format!("({id}, {}, 'name{id}')", id % 1000)).collect();
            self.run(&format!("BEGIN; INSERT INTO t VALUES {}; COMMIT", values.join(", ")))?;
            first = last + 1;
        }
        Ok(())
    }
}

/// Engram in process.
pub struct Engram {
    session: engram_sql::Session,
    _db: std::sync::Arc<engram_sql::SqlDb>,
}

impl Engram {
    pub fn open() -> Result<Engram, String> {
        let db =
            engram_sql::SqlDb::open(engram_engine::Config::default()).map_err(|e| e.to_string())?;
        let session = db.session().map_err(|e| e.to_string())?;
        let mut engram = Engram { session, _db: db };
        engram.run(COMMIT_UNWAITED)?;
        Ok(engram)
    }
}

impl Target for Engram {
    fn name(&self) -> String {
        "engram".into()
    }
    fn run(&mut self, sql: &str) -> Result<(), String> {
        for result in self.session.execute(sql) {
            result.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// SQLite in memory.
pub struct Sqlite(rusqlite::Connection);

impl Sqlite {
    pub fn open() -> Result<Sqlite, String> {
        rusqlite::Connection::open_in_memory().map(Sqlite).map_err(|e| e.to_string())
    }
}

impl Target for Sqlite {
    fn name(&self) -> String {
        format!("sqlite {}", rusqlite::version())
    }
    fn run(&mut self, sql: &str) -> Result<(), String> {
        self.0.execute_batch(sql).map_err(|e| e.to_string())
    }
    fn form(&self, statement: &str) -> Option<String> {
        sqlite_form(statement)
    }
}

/// A server over the PostgreSQL wire protocol.
pub struct Wire {
    url: String,
    client: tokio_postgres::Client,
    runtime: tokio::runtime::Runtime,
}

impl Wire {
    pub fn connect(url: &str) -> Result<Wire, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let client = runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            tokio::spawn(connection);
            Ok::<_, String>(client)
        })?;
        let mut wire = Wire { url: url.to_string(), client, runtime };
        wire.run(COMMIT_UNWAITED)?;
        Ok(wire)
    }
}

impl Target for Wire {
    fn name(&self) -> String {
        let version = self
            .runtime
            .block_on(self.client.query_one("SELECT version()", &[]))
            .ok()
            .and_then(|row| row.try_get::<_, String>(0).ok())
            .unwrap_or_default();
        let short: String = version.split(" on ").next().unwrap_or(&version).to_string();
        format!("{short} at {}", self.url.rsplit('@').next().unwrap_or(&self.url))
    }
    fn run(&mut self, sql: &str) -> Result<(), String> {
        self.runtime.block_on(self.client.batch_execute(sql)).map_err(|e| e.to_string())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub statement: String,
    /// Milliseconds; `None` where the database has no such statement.
    pub ms: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub db: String,
    pub rows: u64,
    pub load_s: f64,
    pub timings: Vec<Timing>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub benchmark: &'static str,
    pub runs: Vec<Run>,
    pub machine: Machine,
}

/// Loads `rows` rows into `target` and times each statement.
pub fn run(target: &mut dyn Target, rows: u64) -> Result<Run, String> {
    let started = Instant::now();
    target.load(rows)?;
    let load_s = started.elapsed().as_secs_f64();
    let mut timings = Vec::new();
    for statement in STATEMENTS {
        let Some(form) = target.form(statement) else {
            timings.push(Timing { statement: statement.into(), ms: None, error: None });
            continue;
        };
        let began = Instant::now();
        let result = target.run(&form);
        let ms = began.elapsed().as_secs_f64() * 1e3;
        timings.push(Timing {
            statement: statement.into(),
            ms: result.is_ok().then_some(ms),
            error: result.err(),
        });
    }
    let _ = target.run("DROP TABLE IF EXISTS t");
    Ok(Run { db: target.name(), rows, load_s, timings })
}
