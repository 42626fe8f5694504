//! Anomaly scripts: interleaved transactions as plain text, with expected outcomes per level.
//!
//! ```text
//! # comments start with '#'
//! name: lost update
//! row: P4 lost update                  # the row of docs/isolation.md this script decides
//! levels: rc rr ser si-rr              # modes to run (see below)
//! allowed: rc                          # levels at which the witness must hold
//! setup: x=10 y=20                     # rows committed before the steps
//!
//! T1 begin
//! T1 get x @r1           => 10         # '@label' names a step for the witness
//! T2 begin
//! T2 get x               => 10
//! T1 put x 11            => ok
//! T2 put x 11            => ok
//! T1 commit              => ok
//! T2 commit @c2          => rc: ok | rr ser: abort(read_validation)
//! check x                => 11
//! witness: c2=ok
//! ```
//!
//! A mode is a protocol and an isolation level: `rc`, `rr`, `ser` and `snap` are Silo's levels,
//! `si-rc`, `si-rr`, `si-ser`, `mvocc-rc`, `mvocc-rr` and `mvocc-ser` those of the
//! multi-version protocols (`engram_engine::Protocol`). Each run opens a fresh database with
//! the mode's protocol; under a multi-version protocol every step is a statement (at READ
//! COMMITTED it reads a new snapshot).
//!
//! A step is `T<n> <operation> [arguments] [@label] [=> expected]`, or `check <key>`, which
//! reads the committed value in a new transaction. Expected outcomes are one value for every
//! level or `levels: value` alternatives separated by `|`. Operations: `begin [level]` (the
//! run's level unless one is named: writers in read anomalies), `get k`,
//! `get-for-update k`, `put k v`, `insert k v`, `update k v`, `delete k`, `scan lo hi` (keys
//! in `[lo, hi]`, printed `k=v,k=v`), `count lo hi`, `commit`, `rollback`. Outcomes: a value,
//! `none`, `ok`, `false` (no such row), `duplicate`, `abort(reason)`, or `-` for a step of a
//! transaction that already ended. The witness holds at a level when every labelled step had
//! the given outcome; it must hold exactly at the `allowed` levels.
//!
//! Run through SQL (`engram-sql`'s tests), a step may expect something else: an alternative
//! `sql rc: value` applies only there, before the plain ones, and `sql-allowed: rc rr` replaces
//! `allowed` (SQL has no blind write: `put` is an upsert that reads the row, so at READ
//! COMMITTED a second writer aborts where the engine's blind write would overwrite).

use engram_engine::{Database, Direction, Error, Isolation, Protocol, TableRef, TableSpec, Worker};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Bound;

/// A parsed script.
#[derive(Debug, Clone)]
pub struct Script {
    pub name: String,
    pub row: String,
    pub levels: Vec<Mode>,
    pub allowed: Vec<Mode>,
    /// Where the anomaly may happen through SQL, when not where `allowed` says.
    pub sql_allowed: Option<Vec<Mode>>,
    pub setup: Vec<(String, String)>,
    pub steps: Vec<Step>,
    pub witness: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub line: usize,
    pub actor: Actor,
    pub operation: Vec<String>,
    pub label: Option<String>,
    /// Expected outcomes; `None` when the step states no expectation.
    pub expected: Option<Vec<Expectation>>,
}

/// One alternative of a step's expected outcome.
#[derive(Debug, Clone)]
pub struct Expectation {
    /// The modes it applies to; empty: every mode.
    pub levels: Vec<Mode>,
    /// Whether it applies only to runs through SQL.
    pub sql: bool,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    Transaction(usize),
    Check,
}

/// What one level's run produced.
#[derive(Debug)]
pub struct Run {
    pub level: Mode,
    pub transcript: String,
    pub mismatches: Vec<String>,
    pub witnessed: bool,
}

pub fn level_alias(alias: &str) -> Option<Isolation> {
    match alias {
        "rc" => Some(Isolation::ReadCommitted),
        "rr" => Some(Isolation::RepeatableRead),
        "ser" => Some(Isolation::Serializable),
        "snap" => Some(Isolation::Snapshot),
        _ => None,
    }
}

fn level_short(level: Isolation) -> &'static str {
    match level {
        Isolation::ReadCommitted => "rc",
        Isolation::RepeatableRead => "rr",
        Isolation::Serializable => "ser",
        Isolation::Snapshot => "snap",
    }
}

/// A protocol and an isolation level: what one run of a script uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mode {
    pub protocol: Protocol,
    pub isolation: Isolation,
}

impl Mode {
    pub fn silo(isolation: Isolation) -> Mode {
        Mode { protocol: Protocol::Silo, isolation }
    }

    /// The script's alias: `rr` (Silo), `si-rr`.
    pub fn alias(self) -> String {
        match self.protocol {
            Protocol::Silo => level_short(self.isolation).to_string(),
            protocol => format!("{}-{}", protocol.name(), level_short(self.isolation)),
        }
    }

    pub fn parse_alias(alias: &str) -> Option<Mode> {
        match alias.split_once('-') {
            None => level_alias(alias).map(Mode::silo),
            Some((protocol, level)) => {
                let protocol = Protocol::parse(protocol).ok()?;
                let isolation = level_alias(level)?;
                (protocol != Protocol::Silo).then_some(Mode { protocol, isolation })
            }
        }
    }

    /// The name in reports and in docs/isolation.md's column headers: `repeatable-read`
    /// (Silo), `si repeatable-read`.
    pub fn name(self) -> String {
        match self.protocol {
            Protocol::Silo => self.isolation.name().to_string(),
            protocol => format!("{} {}", protocol.name(), self.isolation.name()),
        }
    }

    pub fn parse_name(name: &str) -> Option<Mode> {
        match name.split_once(' ') {
            None => Isolation::parse(name).map(Mode::silo),
            Some((protocol, level)) => {
                let protocol = Protocol::parse(protocol).ok()?;
                let isolation = Isolation::parse(level)?;
                (protocol != Protocol::Silo).then_some(Mode { protocol, isolation })
            }
        }
    }
}

fn levels(list: &str, line: usize) -> Result<Vec<Mode>, String> {
    list.split_whitespace()
        .map(|alias| {
            Mode::parse_alias(alias).ok_or_else(|| format!("line {line}: unknown mode {alias}"))
        })
        .collect()
}

fn pairs(list: &str, line: usize) -> Result<Vec<(String, String)>, String> {
    list.split_whitespace()
        .map(|pair| {
            pair.split_once('=')
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .ok_or_else(|| format!("line {line}: expected key=value, got {pair}"))
        })
        .collect()
}

impl Script {
    pub fn parse(text: &str) -> Result<Script, String> {
        let mut script = Script {
            name: String::new(),
            row: String::new(),
            levels: vec![
                Mode::silo(Isolation::ReadCommitted),
                Mode::silo(Isolation::RepeatableRead),
                Mode::silo(Isolation::Serializable),
            ],
            allowed: Vec::new(),
            sql_allowed: None,
            setup: Vec::new(),
            steps: Vec::new(),
            witness: Vec::new(),
        };
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            if let Some((header, rest)) = content.split_once(':')
                && !header.contains(' ')
            {
                let rest = rest.trim();
                match header {
                    "name" => script.name = rest.to_string(),
                    "row" => script.row = rest.to_string(),
                    "levels" => script.levels = levels(rest, line)?,
                    "allowed" => script.allowed = levels(rest, line)?,
                    "sql-allowed" => script.sql_allowed = Some(levels(rest, line)?),
                    "setup" => script.setup = pairs(rest, line)?,
                    "witness" => script.witness = pairs(rest, line)?,
                    other => return Err(format!("line {line}: unknown header {other}")),
                }
                continue;
            }
            let (action, expected) = match content.split_once("=>") {
                Some((action, expected)) => (action.trim(), Some(expected.trim())),
                None => (content, None),
            };
            let mut words: Vec<String> = action.split_whitespace().map(str::to_string).collect();
            let label = words
                .iter()
                .position(|word| word.starts_with('@'))
                .map(|position| words.remove(position)[1..].to_string());
            let first = words.remove(0);
            let actor = if first == "check" {
                words.insert(0, "get".into());
                Actor::Check
            } else {
                let number = first
                    .strip_prefix('T')
                    .and_then(|number| number.parse().ok())
                    .ok_or_else(|| format!("line {line}: a step starts with T<n> or check"))?;
                Actor::Transaction(number)
            };
            let expected = match expected {
                None => None,
                Some(text) => {
                    let mut alternatives = Vec::new();
                    for alternative in text.split('|') {
                        let alternative = alternative.trim();
                        let tagged = alternative.split_once(':').and_then(|(names, value)| {
                            let (sql, names) = match names.trim().strip_prefix("sql") {
                                Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                                    (true, rest)
                                }
                                _ => (false, names),
                            };
                            names
                                .split_whitespace()
                                .all(|n| Mode::parse_alias(n).is_some())
                                .then_some((sql, names, value))
                        });
                        alternatives.push(match tagged {
                            Some((sql, names, value)) => Expectation {
                                levels: levels(names, line)?,
                                sql,
                                value: value.trim().to_string(),
                            },
                            None => Expectation {
                                levels: Vec::new(),
                                sql: false,
                                value: alternative.to_string(),
                            },
                        });
                    }
                    Some(alternatives)
                }
            };
            script.steps.push(Step { line, actor, operation: words, label, expected });
        }
        if script.name.is_empty() || script.row.is_empty() {
            return Err("a script needs name: and row: headers".into());
        }
        Ok(script)
    }

    /// Whether the anomaly may happen at `level` (through SQL when `sql`).
    pub fn allows(&self, level: Mode, sql: bool) -> bool {
        match (&self.sql_allowed, sql) {
            (Some(levels), true) => levels.contains(&level),
            _ => self.allowed.contains(&level),
        }
    }

    /// What went wrong in `run` of the script from `file`: each step that gave another outcome
    /// than the script states, and the anomaly happening where it is prevented or not where
    /// it is possible (through SQL when `sql`). Empty when the run behaved as written.
    pub fn failures(&self, file: &str, run: &Run, sql: bool) -> Vec<String> {
        let level = run.level.name();
        let mut failures: Vec<String> = run
            .mismatches
            .iter()
            .map(|mismatch| format!("{file} at {level}: {mismatch}\n{}", run.transcript))
            .collect();
        let allowed = self.allows(run.level, sql);
        if run.witnessed != allowed {
            failures.push(format!(
                "{file} at {level}: the anomaly {} but the script says it is {}\n{}",
                if run.witnessed { "happened" } else { "did not happen" },
                if allowed { "possible" } else { "prevented" },
                run.transcript
            ));
        }
        failures
    }

    /// Runs the script at `level` on a fresh engine database.
    pub fn run(&self, level: Mode) -> Run {
        self.run_on(level, &mut EngineExecutor::new(&self.setup, level.protocol))
    }

    /// Runs the script at `level` through `executor`, which holds the setup rows already and
    /// runs `level`'s protocol.
    pub fn run_on(&self, level: Mode, executor: &mut dyn Executor) -> Run {
        let mut outcomes: BTreeMap<String, String> = BTreeMap::new();
        let mut run =
            Run { level, transcript: String::new(), mismatches: Vec::new(), witnessed: false };
        for step in &self.steps {
            let actor_number = match step.actor {
                Actor::Check => None,
                Actor::Transaction(number) => Some(number),
            };
            let outcome = executor.execute(actor_number, level.isolation, &step.operation);
            let actor = match step.actor {
                Actor::Check => "check".to_string(),
                Actor::Transaction(number) => format!("T{number}"),
            };
            let _ = writeln!(run.transcript, "{actor} {} => {outcome}", step.operation.join(" "));
            if let Some(label) = &step.label {
                outcomes.insert(label.clone(), outcome.clone());
            }
            if let Some(alternatives) = &step.expected {
                let applies = |e: &&Expectation| e.levels.is_empty() || e.levels.contains(&level);
                let sql = executor.is_sql();
                let wanted = alternatives
                    .iter()
                    .filter(|e| sql && e.sql)
                    .find(applies)
                    .or_else(|| alternatives.iter().filter(|e| !e.sql).find(applies))
                    .map(|e| e.value.as_str());
                match wanted {
                    Some(wanted) if wanted == outcome => {}
                    Some(wanted) => run.mismatches.push(format!(
                        "line {}: {actor} {} gave {outcome}, expected {wanted}",
                        step.line,
                        step.operation.join(" ")
                    )),
                    None => run
                        .mismatches
                        .push(format!("line {}: no expectation for this level", step.line)),
                }
            }
        }
        for number in executor.end_open() {
            run.mismatches.push(format!("T{number} never ended"));
        }
        run.witnessed = !self.witness.is_empty()
            && self.witness.iter().all(|(label, value)| outcomes.get(label) == Some(value));
        run
    }
}

/// What runs a script's steps: the engine's API here, SQL sessions in `engram-sql`'s tests.
pub trait Executor {
    /// Runs one step's operation (`begin [level]`, `get k`, `put k v`, ..., `commit`) for
    /// transaction `actor`, or for a check (`None`: a read in a transaction of its own), and
    /// describes the outcome in the script's words (a value, `none`, `ok`, `false`,
    /// `duplicate`, `abort(reason)`, `-`).
    fn execute(&mut self, actor: Option<usize>, level: Isolation, operation: &[String]) -> String;

    /// Rolls back the transactions still open; returns their numbers.
    fn end_open(&mut self) -> Vec<usize>;

    /// Whether steps run as SQL statements (`sql` expectations apply).
    fn is_sql(&self) -> bool {
        false
    }
}

/// Runs scripts through the engine's API, one worker per transaction, on table `t`.
pub struct EngineExecutor {
    db: Database,
    table: TableRef,
    workers: BTreeMap<usize, Worker>,
}

impl EngineExecutor {
    /// A fresh database running `protocol`, holding `setup`, visible to snapshot
    /// transactions.
    pub fn new(setup: &[(String, String)], protocol: Protocol) -> Self {
        let db = Database::open(engram_engine::Config {
            epoch_interval_ms: 0,
            snapshot_interval_epochs: 1,
            protocol,
            ..engram_engine::Config::default()
        })
        .expect("open");
        let table = db.create_table(TableSpec::new("t")).expect("table");
        let mut worker = db.worker().expect("worker");
        worker
            .transaction(Isolation::Serializable, |txn| {
                for (key, value) in setup {
                    txn.insert(&table, key.as_bytes(), value.as_bytes())?;
                }
                Ok(())
            })
            .expect("setup commits");
        // Make the setup visible to snapshot transactions.
        db.advance_epoch();
        db.advance_epoch();
        EngineExecutor { db, table, workers: BTreeMap::new() }
    }
}

impl Executor for EngineExecutor {
    fn execute(&mut self, actor: Option<usize>, level: Isolation, operation: &[String]) -> String {
        match actor {
            None => {
                let mut worker = self.db.worker().expect("worker");
                execute(&mut worker, &self.table, level, operation)
            }
            Some(number) => {
                let db = &self.db;
                let worker =
                    self.workers.entry(number).or_insert_with(|| db.worker().expect("worker"));
                execute(worker, &self.table, level, operation)
            }
        }
    }

    fn end_open(&mut self) -> Vec<usize> {
        let mut open = Vec::new();
        for (number, worker) in self.workers.iter_mut() {
            if worker.in_transaction() {
                open.push(*number);
                let _ = worker.rollback();
            }
        }
        open
    }
}

fn outcome_of(error: &Error) -> String {
    match error {
        Error::Aborted(reason) => format!("abort({reason})"),
        Error::DuplicateKey { .. } => "duplicate".into(),
        Error::ReadOnly => "read-only".into(),
        Error::NoTransaction => "-".into(),
        other => format!("error({other})"),
    }
}

/// Runs one step on `worker` and describes the outcome.
fn execute(
    worker: &mut Worker,
    table: &TableRef,
    level: Isolation,
    operation: &[String],
) -> String {
    let word = |index: usize| operation.get(index).map(String::as_str).unwrap_or("");
    match word(0) {
        "begin" => {
            let isolation = level_alias(word(1)).unwrap_or(level);
            match worker.begin(isolation) {
                Ok(()) => "ok".into(),
                Err(error) => outcome_of(&error),
            }
        }
        "commit" => match worker.commit() {
            Ok(_) => "ok".into(),
            Err(error) => outcome_of(&error),
        },
        "rollback" => match worker.rollback() {
            Ok(()) => "ok".into(),
            Err(error) => outcome_of(&error),
        },
        operation_name => {
            let checking = !worker.in_transaction();
            if checking {
                worker.begin(Isolation::Serializable).expect("begin a check");
            }
            let outcome = {
                let mut txn = match worker.txn() {
                    Ok(txn) => txn,
                    Err(error) => return outcome_of(&error),
                };
                // Each step is a statement (a new snapshot at READ COMMITTED under a
                // multi-version protocol).
                if let Err(error) = txn.next_statement() {
                    return outcome_of(&error);
                }
                let text = |value: Option<&[u8]>| {
                    value.map_or("none".to_string(), |bytes| {
                        String::from_utf8_lossy(bytes).into_owned()
                    })
                };
                let flag = |done: bool| if done { "ok".to_string() } else { "false".to_string() };
                let result: Result<String, Error> = match operation_name {
                    "get" => txn.get(table, word(1).as_bytes()).map(text),
                    "get-for-update" => txn.get_for_update(table, word(1).as_bytes()).map(text),
                    "put" => {
                        txn.put(table, word(1).as_bytes(), word(2).as_bytes()).map(|()| "ok".into())
                    }
                    "insert" => txn
                        .insert(table, word(1).as_bytes(), word(2).as_bytes())
                        .map(|()| "ok".into()),
                    "update" => txn.update(table, word(1).as_bytes(), word(2).as_bytes()).map(flag),
                    "delete" => txn.delete(table, word(1).as_bytes()).map(flag),
                    "scan" | "count" => {
                        let mut rows = Vec::new();
                        txn.scan(
                            table,
                            Bound::Included(word(1).as_bytes()),
                            Bound::Included(word(2).as_bytes()),
                            Direction::Forward,
                            usize::MAX,
                            |key, value| {
                                rows.push(format!(
                                    "{}={}",
                                    String::from_utf8_lossy(key),
                                    String::from_utf8_lossy(value)
                                ));
                                true
                            },
                        )
                        .map(|count| {
                            if operation_name == "count" {
                                count.to_string()
                            } else {
                                rows.join(",")
                            }
                        })
                    }
                    other => Ok(format!("error(unknown operation {other})")),
                };
                result.unwrap_or_else(|error| outcome_of(&error))
            };
            if checking {
                let _ = worker.commit();
            }
            outcome
        }
    }
}

/// Every `*.txt` script in `folder`, parsed, with its file name, in name order.
pub fn load_folder(folder: &std::path::Path) -> Vec<(String, Script)> {
    let mut scripts: Vec<(String, Script)> = std::fs::read_dir(folder)
        .expect("anomaly scripts")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read script");
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let script = Script::parse(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
            (name, script)
        })
        .collect();
    scripts.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(scripts.len() >= 10, "the anomaly scripts are missing");
    scripts
}

/// The anomaly tables of docs/isolation.md (one per protocol, rows by anomaly name): row name
/// -> mode -> allowed.
pub fn parse_table(markdown: &str) -> BTreeMap<String, BTreeMap<Mode, bool>> {
    let mut table: BTreeMap<String, BTreeMap<Mode, bool>> = BTreeMap::new();
    let mut columns: Vec<Option<Mode>> = Vec::new();
    for line in markdown.lines() {
        if !line.trim_start().starts_with('|') {
            columns.clear();
            continue;
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 2 || cells[0].starts_with("---") {
            continue;
        }
        if cells[0] == "anomaly" {
            columns = cells[1..].iter().map(|name| Mode::parse_name(name)).collect();
            continue;
        }
        if columns.is_empty() {
            continue;
        }
        let mut row = BTreeMap::new();
        for (cell, column) in cells[1..].iter().zip(&columns) {
            if let Some(level) = column {
                match *cell {
                    "possible" => {
                        row.insert(*level, true);
                    }
                    "prevented" => {
                        row.insert(*level, false);
                    }
                    _ => {}
                }
            }
        }
        if !row.is_empty() {
            table.entry(cells[0].to_string()).or_default().extend(row);
        }
    }
    table
}
