//! Hermitage's anomaly cases over the wire: Engram must never be weaker than PostgreSQL 15.
//!
//! `hermitage/anomaly-cases.json` holds Hermitage's 14 PostgreSQL test cases as data (Martin
//! Kleppmann, github ept/hermitage, CC BY 4.0; see `hermitage/README.md`): a setup, numbered
//! steps each run by one session, PostgreSQL's outcome of every step at READ COMMITTED,
//! REPEATABLE READ and SERIALIZABLE, the levels where PostgreSQL prevents the anomaly, and a
//! predicate (`anomaly_if`) over what the steps returned that says whether it happened.
//!
//! `engram_is_never_weaker_than_postgres` runs every case at every level against a fresh
//! in-process server, one connection per session, and fails when
//! 1. the predicate detects the anomaly at a level where PostgreSQL prevents it;
//! 2. a step shows a row that PostgreSQL does not show at that step (for a step marked `either`,
//!    whose rows depend on the order in which the others finished, the rows must be one of the
//!    results the data lists for that step);
//! 3. a step fails with a SQLSTATE that is neither an abort (40001, 40P01), nor the 25P02 of a
//!    transaction that failed earlier, nor the error PostgreSQL gives there;
//! 4. a statement never finishes: a hang is a bug.
//!
//! An abort where PostgreSQL blocks or succeeds is allowed: aborting is never weaker. A run that
//! aborted where PostgreSQL did not (or succeeded where PostgreSQL failed, or blocked where
//! PostgreSQL did not) has left PostgreSQL's path: from there on the aborted writer's rows stay
//! old and a delayed commit lands later, so PostgreSQL's rows are no longer the reference for
//! rule 2 and only the predicate judges the run.
//!
//! Blocking. PostgreSQL blocks some statements on row locks until another session's step (the
//! one whose `unblocks` names it); Engram mostly aborts there instead, and blocks on row locks of
//! its own. So every statement runs on its session's task and the runner waits `STEP_WAIT` for
//! it; one that has not finished by then counts as blocked and the runner goes on with the other
//! sessions, as Hermitage's scripts do in a second terminal. A later step of the same session
//! queues behind it. A step with `unblocks` is followed by a wait of `UNBLOCK_WAIT` for those
//! sessions, and the end of a case by a wait of `END_WAIT` for everything.
//!
//! With `HERMITAGE_PG` set to a connection string, `postgres_reproduces_the_expected_outcomes`
//! runs the same runner against that PostgreSQL (dropping and recreating table `test` for every
//! case) and requires every step and every verdict to be exactly the data's: that shows the
//! runner reads the data as Hermitage meant it. Without the variable it is skipped.
//!
//! Run `cargo test -p engram-server --test hermitage -- --nocapture` to see the table of
//! outcomes.

use engram_engine::{Config, Durability, Protocol};
use engram_server::{Server, ServerConfig, ServerHandle};
use engram_sql::SqlDb;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, timeout_at};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

const CASES_JSON: &str = include_str!("hermitage/anomaly-cases.json");

/// How long a statement may run before the runner counts it as blocked and goes on. These
/// statements touch at most four rows and finish in well under a millisecond; 300 ms is far
/// above that on a loaded CI machine, and each blocked statement costs the run one such wait.
const STEP_WAIT: Duration = Duration::from_millis(300);

/// How long the runner waits for the statements of the sessions a step `unblocks`: PostgreSQL
/// wakes them within milliseconds of the unblocking commit.
const UNBLOCK_WAIT: Duration = Duration::from_secs(2);

/// How long everything still running at the end of a case may take. A statement still blocked
/// after it waits on a session that has nothing left to run: a hang.
const END_WAIT: Duration = Duration::from_secs(10);

/// SQLSTATEs of an abort (serialization failure, deadlock) and of the statements a failed
/// transaction refuses afterwards. Engram may answer any of them where PostgreSQL blocks or
/// succeeds.
const ABORT_CODES: [&str; 3] = ["40001", "40P01", "25P02"];

type Row = Vec<i64>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Level {
    const ALL: [Level; 3] = [Level::ReadCommitted, Level::RepeatableRead, Level::Serializable];

    /// The name `SET TRANSACTION ISOLATION LEVEL` takes, which replaces `{isolation}` in a step.
    fn sql(self) -> &'static str {
        match self {
            Level::ReadCommitted => "read committed",
            Level::RepeatableRead => "repeatable read",
            Level::Serializable => "serializable",
        }
    }
}

#[derive(Deserialize)]
struct PerLevel<T> {
    read_committed: T,
    repeatable_read: T,
    serializable: T,
}

impl<T> PerLevel<T> {
    fn at(&self, level: Level) -> &T {
        match level {
            Level::ReadCommitted => &self.read_committed,
            Level::RepeatableRead => &self.repeatable_read,
            Level::Serializable => &self.serializable,
        }
    }
}

#[derive(Deserialize)]
struct Case {
    id: String,
    setup_sql: Vec<String>,
    steps: Vec<Step>,
    expected: PerLevel<Verdict>,
    anomaly_if: Predicate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Prevented,
    Anomaly,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Prevented => "prevented",
            Verdict::Anomaly => "anomaly",
        }
    }
}

#[derive(Deserialize)]
struct Step {
    index: usize,
    session: usize,
    sql: String,
    expect: PerLevel<Expect>,
    /// Sessions whose blocked statement this step releases in PostgreSQL.
    #[serde(default)]
    unblocks: Vec<usize>,
    /// The name `anomaly_if` uses for this step's result.
    label: Option<String>,
    /// The rows depend on the order in which blocked statements finished: any of the results
    /// the data lists for this step is PostgreSQL's.
    #[serde(default)]
    either: bool,
}

impl Step {
    fn is_commit(&self) -> bool {
        self.sql.trim().eq_ignore_ascii_case("commit")
    }

    fn name(&self) -> String {
        format!("step {} (session {}: {})", self.index, self.session, self.sql)
    }
}

/// PostgreSQL's outcome of one step at one level.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Expect {
    /// `"ok"`.
    Ok(OkWord),
    /// `{"ok": "COMMIT"}`: success with this command tag. A COMMIT of a failed transaction
    /// succeeds with tag ROLLBACK; tokio-postgres does not show tags, so the runner tells the
    /// two apart by the session's earlier errors.
    Tag {
        ok: String,
    },
    Rows {
        rows: Vec<Row>,
    },
    Error {
        error: String,
    },
    /// PostgreSQL blocks until a later step releases the statement, and then gives this.
    Blocks {
        blocks: Box<Expect>,
    },
}

#[derive(Debug, Deserialize)]
enum OkWord {
    #[serde(rename = "ok")]
    Ok,
}

impl Expect {
    fn blocks(&self) -> bool {
        matches!(self, Expect::Blocks { .. })
    }

    /// The outcome once the statement has finished.
    fn settled(&self) -> &Expect {
        match self {
            Expect::Blocks { blocks } => blocks.settled(),
            other => other,
        }
    }

    fn is_error(&self) -> bool {
        matches!(self.settled(), Expect::Error { .. })
    }

    fn rows(&self) -> Option<Vec<Row>> {
        match self.settled() {
            Expect::Rows { rows } => Some(sorted(rows)),
            _ => None,
        }
    }
}

/// `anomaly_if`: every kind the data uses, and nothing else (an unknown kind fails to parse).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Predicate {
    Any(Vec<Predicate>),
    All(Vec<Predicate>),
    /// The labelled step returned rows, and they include this row.
    StepRowsInclude {
        step: String,
        row: Row,
    },
    /// The labelled step returned rows, and they are not these.
    StepRowsNotEqual {
        step: String,
        rows: Vec<Row>,
    },
    /// The table after every session ended is one of these.
    FinalStateIn(Vec<Vec<Row>>),
    /// Every one of these sessions committed: its COMMIT succeeded and none of its statements
    /// failed before it.
    Committed(Vec<usize>),
    /// Adya's OTV: after an observer step saw a value some writer wrote, a later observer step
    /// (or the same one) read a key at a version older than that writer's version of the key.
    ObservedTransactionVanishes {
        observer_steps: Vec<String>,
        /// Each key's versions, oldest first.
        version_order: BTreeMap<i64, Vec<i64>>,
        /// Each writer's value for each key it wrote.
        writers: BTreeMap<String, BTreeMap<i64, i64>>,
    },
}

/// What a statement returned.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    /// Sorted, since the cases compare sets of rows and a scan's order is the engine's choice.
    Rows(Vec<Row>),
    Error(String),
}

struct StepResult {
    /// None: the statement never finished.
    outcome: Option<Outcome>,
    /// The statement had not finished `STEP_WAIT` after it was sent.
    blocked: bool,
}

struct CaseRun {
    steps: Vec<StepResult>,
    /// `select * from test order by id` on a new connection after every session ended.
    final_state: Outcome,
}

/// Where the cases run.
enum Target {
    /// A fresh in-process server and database per case and level.
    Engram(Protocol),
    /// A PostgreSQL at this connection string; each case drops and recreates table `test`.
    Postgres(Box<tokio_postgres::Config>),
}

fn cases() -> Vec<Case> {
    let cases: Vec<Case> = serde_json::from_str(CASES_JSON).expect("anomaly-cases.json parses");
    assert_eq!(cases.len(), 14, "Hermitage has 14 PostgreSQL cases");
    for case in &cases {
        for (position, step) in case.steps.iter().enumerate() {
            assert_eq!(step.index, position, "{}: steps are numbered in order", case.id);
        }
    }
    cases
}

fn sorted(rows: &[Row]) -> Vec<Row> {
    let mut rows = rows.to_vec();
    rows.sort();
    rows
}

async fn connect(config: &tokio_postgres::Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

async fn execute(client: &Client, sql: &str) -> Outcome {
    let messages = match client.simple_query(sql).await {
        Ok(messages) => messages,
        Err(error) => {
            let code = error.code().map(|code| code.code().to_string());
            return Outcome::Error(code.unwrap_or_else(|| format!("no SQLSTATE: {error}")));
        }
    };
    let mut rows: Option<Vec<Row>> = None;
    for message in messages {
        match message {
            SimpleQueryMessage::RowDescription(_) => {
                rows.get_or_insert_with(Vec::new);
            }
            SimpleQueryMessage::Row(row) => {
                let values = (0..row.len())
                    .map(|column| {
                        let text = row.get(column).expect("the cases store no NULLs");
                        text.parse().expect("the cases store integers")
                    })
                    .collect();
                rows.get_or_insert_with(Vec::new).push(values);
            }
            _ => {}
        }
    }
    rows.map_or(Outcome::Ok, |rows| Outcome::Rows(sorted(&rows)))
}

struct Statement {
    sql: String,
    reply: oneshot::Sender<Outcome>,
}

/// One session's connection, driven by its own task so that a blocked statement holds up only
/// the statements of its session.
fn open_session(client: Client) -> mpsc::UnboundedSender<Statement> {
    let (sender, mut statements) = mpsc::unbounded_channel::<Statement>();
    tokio::spawn(async move {
        while let Some(statement) = statements.recv().await {
            let outcome = execute(&client, &statement.sql).await;
            // The runner stops listening only when it has given up on the case.
            let _ = statement.reply.send(outcome);
        }
    });
    sender
}

/// A statement sent to its session and not yet answered.
struct Running {
    step: usize,
    session: usize,
    reply: oneshot::Receiver<Outcome>,
}

/// Waits until `deadline` for the running statements that `pick` selects, in the order they
/// were sent, and records those that finish.
async fn settle(
    running: &mut Vec<Running>,
    results: &mut [StepResult],
    deadline: Instant,
    pick: impl Fn(&Running) -> bool,
) {
    let mut still_running = Vec::new();
    for mut statement in running.drain(..) {
        if !pick(&statement) {
            still_running.push(statement);
            continue;
        }
        match timeout_at(deadline, &mut statement.reply).await {
            Ok(reply) => {
                let outcome = reply.unwrap_or_else(|_| Outcome::Error("session task died".into()));
                results[statement.step].outcome = Some(outcome);
            }
            Err(_elapsed) => still_running.push(statement),
        }
    }
    *running = still_running;
}

async fn run_case(case: &Case, level: Level, target: &Target) -> CaseRun {
    let (server, config) = match target {
        Target::Engram(protocol) => {
            let config =
                Config { durability: Durability::Off, protocol: *protocol, ..Config::default() };
            let db = SqlDb::open(config).expect("open the database");
            let server_config = ServerConfig {
                listen: "127.0.0.1:0".into(),
                threads: 2,
                ..ServerConfig::default()
            };
            let server = Server::start(db, server_config).expect("start the server");
            let mut config = tokio_postgres::Config::new();
            config.host("127.0.0.1").port(server.addr.port()).user("postgres").dbname("engram");
            (Some(server), config)
        }
        Target::Postgres(config) => (None, config.as_ref().clone()),
    };
    let setup = connect(&config).await;
    if matches!(target, Target::Postgres(_)) {
        setup.batch_execute("drop table if exists test").await.expect("drop table test");
    }
    for sql in &case.setup_sql {
        setup
            .batch_execute(sql)
            .await
            .unwrap_or_else(|error| panic!("{}: {sql}: {error}", case.id));
    }
    drop(setup);

    let mut sessions = BTreeMap::new();
    for step in &case.steps {
        if let Entry::Vacant(session) = sessions.entry(step.session) {
            session.insert(open_session(connect(&config).await));
        }
    }
    let mut results: Vec<StepResult> =
        case.steps.iter().map(|_| StepResult { outcome: None, blocked: false }).collect();
    let mut running: Vec<Running> = Vec::new();
    for step in &case.steps {
        let (reply, answer) = oneshot::channel();
        let sql = step.sql.replace("{isolation}", level.sql());
        sessions[&step.session].send(Statement { sql, reply }).expect("the session task runs");
        running.push(Running { step: step.index, session: step.session, reply: answer });
        let deadline = Instant::now() + STEP_WAIT;
        settle(&mut running, &mut results, deadline, |r| r.step == step.index).await;
        results[step.index].blocked = results[step.index].outcome.is_none();
        let deadline = Instant::now() + UNBLOCK_WAIT;
        settle(&mut running, &mut results, deadline, |r| step.unblocks.contains(&r.session)).await;
    }
    let deadline = Instant::now() + END_WAIT;
    settle(&mut running, &mut results, deadline, |_| true).await;
    let hung = !running.is_empty();
    // Closing the connections ends every session; an open transaction rolls back.
    drop(sessions);

    let final_state = execute(&connect(&config).await, "select * from test order by id").await;
    if hung {
        // Stopping the server waits for its connections, one of which is stuck: leave it.
        std::mem::forget(server);
    } else if let Some(server) = server {
        tokio::task::spawn_blocking(move || ServerHandle::stop(server)).await.expect("stop");
    }
    CaseRun { steps: results, final_state }
}

/// Evaluates `anomaly_if` over a run.
struct Judge<'a> {
    case: &'a Case,
    run: &'a CaseRun,
}

impl Judge<'_> {
    fn rows(&self, label: &str) -> Option<&Vec<Row>> {
        let step = self.case.steps.iter().find(|step| step.label.as_deref() == Some(label));
        let step = step.unwrap_or_else(|| panic!("{}: no step is labelled {label}", self.case.id));
        match &self.run.steps[step.index].outcome {
            Some(Outcome::Rows(rows)) => Some(rows),
            _ => None,
        }
    }

    fn committed(&self, session: usize) -> bool {
        let mut committed = false;
        for (step, result) in self.case.steps.iter().zip(&self.run.steps) {
            if step.session != session {
                continue;
            }
            match &result.outcome {
                Some(Outcome::Error(_)) | None => return false,
                Some(_) => committed |= step.is_commit(),
            }
        }
        committed
    }

    fn holds(&self, predicate: &Predicate) -> bool {
        match predicate {
            Predicate::Any(predicates) => predicates.iter().any(|p| self.holds(p)),
            Predicate::All(predicates) => predicates.iter().all(|p| self.holds(p)),
            Predicate::StepRowsInclude { step, row } => {
                self.rows(step).is_some_and(|rows| rows.contains(row))
            }
            Predicate::StepRowsNotEqual { step, rows } => {
                self.rows(step).is_some_and(|shown| *shown != sorted(rows))
            }
            Predicate::FinalStateIn(states) => {
                states.iter().any(|state| self.run.final_state == Outcome::Rows(sorted(state)))
            }
            Predicate::Committed(sessions) => sessions.iter().all(|&s| self.committed(s)),
            Predicate::ObservedTransactionVanishes { observer_steps, version_order, writers } => {
                let version = |key: i64, value: i64| {
                    version_order.get(&key).and_then(|order| order.iter().position(|&v| v == value))
                };
                let mut observed: Vec<&BTreeMap<i64, i64>> = Vec::new();
                for label in observer_steps {
                    let Some(rows) = self.rows(label) else { continue };
                    for row in rows {
                        let (key, value) = (row[0], row[1]);
                        observed.extend(writers.values().filter(|w| w.get(&key) == Some(&value)));
                        let read = version(key, value);
                        let vanished = observed.iter().any(|writer| {
                            let written = writer.get(&key).and_then(|&w| version(key, w));
                            matches!((read, written), (Some(read), Some(written)) if read < written)
                        });
                        if vanished {
                            return true;
                        }
                    }
                }
                false
            }
        }
    }
}

/// One case at one level: the verdict and what the table shows.
struct Report {
    case: String,
    level: Level,
    detected: bool,
    postgres: Verdict,
    /// Steps that failed, as `#index sSession CODE`.
    errors: Vec<String>,
    /// Where the run left PostgreSQL's path, and rows it did not show.
    notes: Vec<String>,
    failures: Vec<String>,
}

fn describe(case: &Case, level: Level, run: &CaseRun) -> Report {
    let detected = Judge { case, run }.holds(&case.anomaly_if);
    let mut report = Report {
        case: case.id.clone(),
        level,
        detected,
        postgres: *case.expected.at(level),
        errors: Vec::new(),
        notes: Vec::new(),
        failures: Vec::new(),
    };
    for (step, result) in case.steps.iter().zip(&run.steps) {
        let error = match &result.outcome {
            Some(Outcome::Error(code)) => Some(code.as_str()),
            None => Some("never finished"),
            Some(_) => None,
        };
        let shown = match (result.blocked, error) {
            (true, Some(error)) => format!("blocked, {error}"),
            (true, None) => "blocked".to_string(),
            (false, Some(error)) => error.to_string(),
            (false, None) => continue,
        };
        report.errors.push(format!("#{} s{} {shown}", step.index, step.session));
    }
    report
}

fn either_rows(step: &Step) -> Vec<Vec<Row>> {
    Level::ALL.iter().filter_map(|&level| step.expect.at(level).rows()).collect()
}

/// Rules 1 to 4 of the module comment.
fn check_engram(case: &Case, level: Level, run: &CaseRun, report: &mut Report) {
    let here = format!("{} at {}", case.id, level.sql());
    if report.detected && report.postgres == Verdict::Prevented {
        report.failures.push(format!("{here}: the anomaly happened; PostgreSQL prevents it"));
    }
    let mut off_path = false;
    for (step, result) in case.steps.iter().zip(&run.steps) {
        let expect = step.expect.at(level);
        let Some(outcome) = &result.outcome else {
            report.failures.push(format!("{here}: {} never finished", step.name()));
            continue;
        };
        match outcome {
            Outcome::Error(code) => {
                let postgres_fails_so =
                    matches!(expect.settled(), Expect::Error { error } if error == code);
                if !ABORT_CODES.contains(&code.as_str()) && !postgres_fails_so {
                    report.failures.push(format!("{here}: {} failed with {code}", step.name()));
                }
            }
            Outcome::Rows(shown) if !off_path => {
                if let Some(expected) = expect.rows() {
                    if step.either {
                        let alternatives = either_rows(step);
                        if !alternatives.contains(shown) {
                            report.failures.push(format!(
                                "{here}: {} shows {shown:?}; PostgreSQL shows one of {alternatives:?}",
                                step.name()
                            ));
                        }
                    } else {
                        let extra: Vec<&Row> =
                            shown.iter().filter(|r| !expected.contains(r)).collect();
                        if !extra.is_empty() {
                            report.failures.push(format!(
                                "{here}: {} shows {extra:?}, which PostgreSQL does not show \
                                 (it shows {expected:?}; Engram showed {shown:?})",
                                step.name()
                            ));
                        } else if *shown != expected {
                            report.notes.push(format!("#{} fewer rows", step.index));
                        }
                    }
                }
            }
            Outcome::Ok | Outcome::Rows(_) => {}
        }
        let fails = matches!(outcome, Outcome::Error(_));
        if fails != expect.is_error() {
            let how = if fails { "failed" } else { "succeeded" };
            report.notes.push(format!("#{} {how} unlike PG", step.index));
            off_path = true;
        }
        if result.blocked != expect.blocks() {
            let how = if result.blocked { "blocked" } else { "did not block" };
            report.notes.push(format!("#{} {how} unlike PG", step.index));
            off_path |= result.blocked;
        }
    }
}

/// Every step exactly as the data says, and the verdict PostgreSQL's.
fn check_postgres(case: &Case, level: Level, run: &CaseRun, report: &mut Report) {
    let here = format!("{} at {}", case.id, level.sql());
    if report.detected != (report.postgres == Verdict::Anomaly) {
        report.failures.push(format!(
            "{here}: the runner finds detected = {}, the data says {}",
            report.detected,
            report.postgres.name()
        ));
    }
    let mut failed_sessions = Vec::new();
    for (step, result) in case.steps.iter().zip(&run.steps) {
        let expect = step.expect.at(level);
        if result.blocked != expect.blocks() {
            report.failures.push(format!(
                "{here}: {} blocked = {}, the data says {:?}",
                step.name(),
                result.blocked,
                expect
            ));
        }
        let matches = match (expect.settled(), &result.outcome) {
            (Expect::Ok(_), Some(Outcome::Ok)) => true,
            (Expect::Tag { ok }, Some(Outcome::Ok)) => {
                (ok == "ROLLBACK") == failed_sessions.contains(&step.session)
            }
            (Expect::Rows { .. }, Some(Outcome::Rows(shown))) => {
                if step.either {
                    either_rows(step).contains(shown)
                } else {
                    expect.rows().as_ref() == Some(shown)
                }
            }
            (Expect::Error { error }, Some(Outcome::Error(code))) => error == code,
            _ => false,
        };
        if !matches {
            report.failures.push(format!(
                "{here}: {} gave {:?}, the data says {:?}",
                step.name(),
                result.outcome,
                expect
            ));
        }
        if matches!(result.outcome, Some(Outcome::Error(_))) {
            failed_sessions.push(step.session);
        }
    }
}

fn print_table(title: &str, reports: &[Report]) {
    println!("\n{title}");
    println!(
        "{:<20} {:<16} {:<10} {:<10} {:<40} notes",
        "case", "level", "outcome", "postgres", "errors and blocked statements"
    );
    for report in reports {
        let outcome = if report.detected { "anomaly" } else { "prevented" };
        let mark = if report.failures.is_empty() { "" } else { "  <-- FAILS" };
        println!(
            "{:<20} {:<16} {:<10} {:<10} {:<40} {}{mark}",
            report.case,
            report.level.sql(),
            outcome,
            report.postgres.name(),
            report.errors.join(", "),
            report.notes.join(", ")
        );
    }
}

async fn run_all(target: &Target, check: fn(&Case, Level, &CaseRun, &mut Report)) -> Vec<Report> {
    let mut reports = Vec::new();
    for case in &cases() {
        for level in Level::ALL {
            let run = run_case(case, level, target).await;
            let mut report = describe(case, level, &run);
            check(case, level, &run, &mut report);
            reports.push(report);
        }
    }
    reports
}

fn assert_no_failures(reports: &[Report]) {
    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.failures).collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engram_is_never_weaker_than_postgres() {
    // Every protocol, unless `HERMITAGE_PROTOCOL` names one (silo, si, mvocc, ssn, mvto,
    // mv2pl) to look at by hand.
    let protocols = match std::env::var("HERMITAGE_PROTOCOL") {
        Ok(name) => vec![Protocol::parse(&name).expect("HERMITAGE_PROTOCOL names a protocol")],
        Err(_) => Protocol::ALL.to_vec(),
    };
    let mut all = Vec::new();
    for protocol in protocols {
        let reports = run_all(&Target::Engram(protocol), check_engram).await;
        print_table(&format!("Hermitage on Engram ({protocol})"), &reports);
        all.extend(reports);
    }
    assert_no_failures(&all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_reproduces_the_expected_outcomes() {
    let Ok(connection_string) = std::env::var("HERMITAGE_PG") else {
        println!("HERMITAGE_PG is not set: the PostgreSQL run is skipped");
        return;
    };
    let config = connection_string.parse().expect("HERMITAGE_PG is a connection string");
    let reports = run_all(&Target::Postgres(Box::new(config)), check_postgres).await;
    print_table("Hermitage on PostgreSQL (HERMITAGE_PG)", &reports);
    assert_no_failures(&reports);
}
