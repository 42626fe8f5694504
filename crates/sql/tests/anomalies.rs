//! The engine's anomaly scripts (crates/engine/tests/anomalies) run again through SQL: each
//! transaction of a script is a session, each step the SQL statement a client would send
//! (`get k` is `SELECT v FROM t WHERE k = $1`, `put k v` an upsert, `begin ser` is
//! `BEGIN ISOLATION LEVEL SERIALIZABLE`, ...), and a serialization failure (SQLSTATE 40001)
//! is read back as the engine's abort reason. Every script must give the outcomes it states
//! at every level it names, and its anomaly must happen exactly where it says.

use engram_engine::{Isolation, Protocol};
use engram_sql::{
    Outcome, Prepared, Session, SqlDb, SqlError, TransactionStatus, Value, isolation_sql,
};
use engram_testkit::script::{Executor, Script, load_folder};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// A session and the statements the steps send, prepared once.
struct Client {
    session: Session,
    statements: BTreeMap<&'static str, Arc<Prepared>>,
    /// The outcome of the statement that failed the open transaction block.
    failed_with: Option<String>,
}

const STATEMENTS: [(&str, &str); 9] = [
    ("get", "SELECT v FROM t WHERE k = $1"),
    ("get-for-update", "SELECT v FROM t WHERE k = $1 FOR UPDATE"),
    ("put", "INSERT INTO t VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"),
    ("insert", "INSERT INTO t VALUES ($1, $2)"),
    ("update", "UPDATE t SET v = $2 WHERE k = $1"),
    ("delete", "DELETE FROM t WHERE k = $1"),
    ("scan", "SELECT k, v FROM t WHERE k >= $1 AND k <= $2 ORDER BY k"),
    ("count", "SELECT count(*) FROM t WHERE k BETWEEN $1 AND $2"),
    ("commit", "COMMIT"),
];

impl Client {
    fn new(db: &Arc<SqlDb>) -> Client {
        let mut session = db.session().expect("session");
        // Steps run one at a time on one thread, so a row-lock wait could never end: it times
        // out at once (55P03, `lock_wait`) where a client would wait (`locking_reads.rs`).
        session.execute_one("SET lock_timeout = 1").expect("lock_timeout");
        let statements = STATEMENTS
            .iter()
            .map(|(name, sql)| (*name, session.prepare(sql, &[]).expect(sql)))
            .collect();
        Client { session, statements, failed_with: None }
    }
}

struct SqlExecutor {
    db: Arc<SqlDb>,
    clients: BTreeMap<usize, Client>,
}

impl SqlExecutor {
    fn new(setup: &[(String, String)], protocol: Protocol) -> SqlExecutor {
        let db = SqlDb::open(engram_engine::Config {
            epoch_interval_ms: 0,
            snapshot_interval_epochs: 1,
            protocol,
            ..engram_engine::Config::default()
        })
        .expect("open");
        let mut session = db.session().expect("session");
        session.execute_one("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)").expect("table");
        for (key, value) in setup {
            session
                .execute_one(&format!("INSERT INTO t VALUES ('{key}', '{value}')"))
                .expect("setup");
        }
        // Make the setup visible to snapshot transactions.
        db.database().advance_epoch();
        db.database().advance_epoch();
        SqlExecutor { db, clients: BTreeMap::new() }
    }
}

/// The script's word for a failed statement.
fn outcome_of(error: &SqlError) -> String {
    match error.code {
        "40001" => format!("abort({})", error.abort.map_or("unknown", |reason| reason.name())),
        "23505" => "duplicate".into(),
        "25006" => "read-only".into(),
        "55P03" => "abort(lock_wait)".into(),
        // The transaction already ended (aborted by an earlier step).
        "25P02" => "-".into(),
        other => format!("error({other}: {})", error.message),
    }
}

/// Runs one step on `client` and describes the outcome. A transaction a statement failed is
/// over: its COMMIT reports that failure (PostgreSQL answers ROLLBACK), and a ROLLBACK finds
/// nothing left to undo (`-`), as the engine's calls would.
fn step(client: &mut Client, level: Isolation, operation: &[String]) -> String {
    let word = |index: usize| operation.get(index).map(String::as_str).unwrap_or("");
    let text = |index: usize| Value::Text(word(index).into());
    let failed = client.failed_with.take();
    let result = match word(0) {
        "begin" => {
            let level = engram_testkit::script::level_alias(word(1)).unwrap_or(level);
            client.session.execute_one(&format!("BEGIN ISOLATION LEVEL {}", isolation_sql(level)))
        }
        "rollback" => client.session.execute_one("ROLLBACK"),
        name => {
            let statement = Arc::clone(&client.statements[name]);
            let params: Vec<Value> = match name {
                "get" | "get-for-update" | "delete" => vec![text(1)],
                "commit" => Vec::new(),
                _ => vec![text(1), text(2)],
            };
            client.session.execute_prepared(&statement, &params, 0)
        }
    };
    match (result, failed) {
        (Ok(_), Some(failure)) if word(0) == "commit" => failure,
        (Ok(_), Some(_)) => "-".into(),
        (Ok(outcome), None) => describe(word(0), &outcome),
        (Err(error), failed) => {
            let outcome = outcome_of(&error);
            if client.session.status() == TransactionStatus::Failed {
                client.failed_with = Some(failed.unwrap_or_else(|| outcome.clone()));
            }
            outcome
        }
    }
}

fn describe(name: &str, outcome: &Outcome) -> String {
    let value = |v: &Value| v.as_str().map_or_else(|| format!("{v:?}"), str::to_string);
    match name {
        "get" | "get-for-update" => {
            outcome.rows().first().map_or("none".to_string(), |row| value(&row[0]))
        }
        "scan" => outcome
            .rows()
            .iter()
            .map(|row| format!("{}={}", value(&row[0]), value(&row[1])))
            .collect::<Vec<_>>()
            .join(","),
        "count" => match &outcome.rows()[0][0] {
            Value::Int(n) => n.to_string(),
            other => format!("{other:?}"),
        },
        "update" | "delete" => {
            if outcome.tag().ends_with(" 0") {
                "false".into()
            } else {
                "ok".into()
            }
        }
        _ => "ok".into(),
    }
}

impl Executor for SqlExecutor {
    fn execute(&mut self, actor: Option<usize>, level: Isolation, operation: &[String]) -> String {
        match actor {
            // A check reads in a transaction of its own (autocommit).
            None => step(&mut Client::new(&self.db), level, operation),
            Some(number) => {
                let db = &self.db;
                let client = self.clients.entry(number).or_insert_with(|| Client::new(db));
                step(client, level, operation)
            }
        }
    }

    fn is_sql(&self) -> bool {
        true
    }

    fn end_open(&mut self) -> Vec<usize> {
        let mut open = Vec::new();
        for (number, client) in &mut self.clients {
            if client.session.status() == TransactionStatus::InBlock {
                open.push(*number);
            }
            let _ = client.session.execute_one("ROLLBACK");
        }
        open
    }
}

fn scripts() -> Vec<(String, Script)> {
    load_folder(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/anomalies"))
}

#[test]
fn every_anomaly_script_behaves_as_written_through_sql() {
    let mut failures = Vec::new();
    let mut runs = 0;
    for (file, script) in scripts() {
        for &level in &script.levels {
            let run = script.run_on(level, &mut SqlExecutor::new(&script.setup, level.protocol));
            runs += 1;
            failures.extend(script.failures(&file, &run, true));
        }
    }
    assert!(runs >= 30, "only {runs} runs");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Parameters typed as the column's: a key given as text finds its row.
#[test]
fn the_step_statements_take_text_parameters() {
    let mut executor = SqlExecutor::new(&[("x".into(), "1".into())], Protocol::Silo);
    let words = |text: &str| text.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(executor.execute(None, Isolation::ReadCommitted, &words("get x")), "1");
    assert_eq!(executor.execute(Some(1), Isolation::ReadCommitted, &words("begin")), "ok");
    assert_eq!(executor.execute(Some(1), Isolation::ReadCommitted, &words("put y 2")), "ok");
    assert_eq!(executor.execute(Some(1), Isolation::ReadCommitted, &words("scan a z")), "x=1,y=2");
    assert_eq!(executor.execute(Some(1), Isolation::ReadCommitted, &words("commit")), "ok");
    assert_eq!(executor.execute(None, Isolation::ReadCommitted, &words("count a z")), "2");
    assert!(executor.end_open().is_empty());
}
