//! Randomized histories over the wire, checked by the testkit's history checker
//! (`engram_testkit::history`): 8 clients run 10,000 transactions per level, each a few point
//! reads, range reads (keys that do not exist yet read as empty) and appends made by upserts
//! that insert new keys, against `engram serve`'s default protocol. Every transaction's reads
//! are checked, including those of transactions that then failed:
//!
//! - SERIALIZABLE and REPEATABLE READ: committed transactions, and what each failed one read
//!   before failing (as a read-only transaction), have no dependency cycle. PostgreSQL's
//!   REPEATABLE READ is snapshot isolation, and is checked as that (no cycle with one
//!   anti-dependency); Engram's is serializable under Silo (docs/isolation.md, "One state per
//!   statement"), and is checked as such.
//! - READ COMMITTED: no dirty, aborted or lost append, and every statement read one state (each
//!   statement's reads, as a read-only transaction, close no cycle with the appends).
//!
//! `HISTORIES_PG="host=127.0.0.1 user=postgres dbname=rotest"` runs the same histories against
//! a PostgreSQL instead (the ignored test), to show the checks are ones PostgreSQL passes.

use engram_engine::{Config, Durability};
use engram_server::{Server, ServerConfig};
use engram_sql::SqlDb;
use engram_testkit::history::{self, Committed, Key, TxnId};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_postgres::{Client, NoTls};

const CLIENTS: u64 = 8;
const TRANSACTIONS: u64 = 10_000;
const KEYS: u64 = 48;
const RANGE: u64 = 4;
/// Pseudo transaction ids of statements and failed transactions (read-only), above every real
/// id.
const READERS: TxnId = 1 << 40;

#[derive(Default)]
struct Outcome {
    committed: Vec<Committed>,
    /// Read-only observations: each statement (READ COMMITTED) or each failed transaction.
    readers: Vec<Vec<(Key, Vec<TxnId>)>>,
    failed: u64,
}

fn parse_list(text: Option<&str>) -> Vec<TxnId> {
    text.unwrap_or("")
        .split(',')
        .filter(|id| !id.is_empty())
        .map(|id| id.parse().unwrap())
        .collect()
}

struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One client's transactions; `level` is the SQL name of the isolation level.
async fn client(client: Client, level: &'static str, number: u64) -> Outcome {
    let point = client.prepare("SELECT v FROM h WHERE k = $1").await.unwrap();
    let range =
        client.prepare("SELECT k, v FROM h WHERE k >= $1 AND k < $2 ORDER BY k").await.unwrap();
    let append = client
        .prepare("INSERT INTO h VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = h.v || $2")
        .await
        .unwrap();
    let statement_level = level == "READ COMMITTED";
    let mut random =
        Random(0x9E37_79B9_7F4A_7C15 ^ (number + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut outcome = Outcome::default();
    for n in 0..TRANSACTIONS / CLIENTS {
        let id = number * 1_000_000 + n + 1;
        let mut txn = Committed { id, ..Committed::default() };
        let mut statements: Vec<Vec<(Key, Vec<TxnId>)>> = Vec::new();
        let result: Result<(), tokio_postgres::Error> = async {
            client.batch_execute(&format!("BEGIN ISOLATION LEVEL {level}")).await?;
            for _ in 0..1 + random.below(4) {
                let key = random.below(KEYS);
                // A key this transaction appended to is not read again: the checker takes a
                // transaction's read of a key to be the state it appended to.
                let read_mine = |k: Key| txn.appends.contains(&k);
                match random.below(10) {
                    0..4 if !read_mine(key) => {
                        let rows = client.query(&point, &[&(key as i64)]).await?;
                        let list = parse_list(rows.first().map(|row| row.get::<_, &str>(0)));
                        statements.push(vec![(key, list)]);
                    }
                    4..6 if !(key..key + RANGE).any(read_mine) => {
                        let rows =
                            client.query(&range, &[&(key as i64), &((key + RANGE) as i64)]).await?;
                        let mut found: BTreeMap<Key, Vec<TxnId>> = (key..key + RANGE)
                            .filter(|k| *k < KEYS)
                            .map(|k| (k, Vec::new()))
                            .collect();
                        for row in rows {
                            let k = row.get::<_, i64>(0) as Key;
                            found.insert(k, parse_list(Some(row.get::<_, &str>(1))));
                        }
                        statements.push(found.into_iter().collect());
                    }
                    6.. if !txn.appends.contains(&key) => {
                        client.execute(&append, &[&(key as i64), &format!("{id},")]).await?;
                        txn.appends.push(key);
                    }
                    _ => {}
                }
            }
            client.batch_execute("COMMIT").await
        }
        .await;
        let reads = || statements.iter().flatten().cloned().collect::<Vec<_>>();
        match result {
            Ok(()) if statement_level => {
                outcome.committed.push(txn);
                outcome.readers.extend(statements);
            }
            Ok(()) => {
                txn.reads = reads();
                outcome.committed.push(txn);
            }
            Err(error) => {
                let code = error.code().map(|code| code.code().to_string());
                assert!(
                    matches!(code.as_deref(), Some("40001" | "40P01")),
                    "{level}: unexpected failure {error:?}"
                );
                let _ = client.batch_execute("ROLLBACK").await;
                outcome.failed += 1;
                if statement_level {
                    outcome.readers.extend(statements);
                } else {
                    outcome.readers.push(reads());
                }
            }
        }
    }
    outcome
}

/// Runs one level's histories and checks them; `snapshot_rr`: REPEATABLE READ is checked as
/// snapshot isolation (PostgreSQL's) rather than serializability (Engram's under Silo).
async fn run_level(
    connect: &(dyn Fn() -> tokio_postgres::Config + Sync),
    level: &'static str,
    snapshot_rr: bool,
) {
    let (setup, connection) = connect().connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    setup
        .batch_execute(
            "DROP TABLE IF EXISTS h; CREATE TABLE h (k BIGINT PRIMARY KEY, v TEXT NOT NULL)",
        )
        .await
        .unwrap();
    // Half the keys exist at the start (holding an empty list), half are inserted by appends.
    for key in (0..KEYS).step_by(2) {
        setup.execute("INSERT INTO h VALUES ($1, '')", &[&(key as i64)]).await.unwrap();
    }
    let mut tasks = Vec::new();
    for number in 0..CLIENTS {
        let (client_connection, connection) = connect().connect(NoTls).await.unwrap();
        tokio::spawn(connection);
        tasks.push(tokio::spawn(client(client_connection, level, number)));
    }
    let mut all = Outcome::default();
    for task in tasks {
        let outcome = task.await.unwrap();
        all.committed.extend(outcome.committed);
        all.readers.extend(outcome.readers);
        all.failed += outcome.failed;
    }
    let mut finals: BTreeMap<Key, Vec<TxnId>> = BTreeMap::new();
    for row in setup.query("SELECT k, v FROM h", &[]).await.unwrap() {
        finals.insert(row.get::<_, i64>(0) as Key, parse_list(Some(row.get::<_, &str>(1))));
    }
    let committed = all.committed.len();
    let readers = all.readers.len();
    let mut checked = all.committed;
    for (index, reads) in all.readers.into_iter().enumerate() {
        checked.push(Committed { id: READERS + index as TxnId, reads, appends: Vec::new() });
    }
    let check = if snapshot_rr && level == "REPEATABLE READ" {
        history::check_snapshot_isolation
    } else {
        history::check
    };
    let summary =
        check(&checked, &finals).unwrap_or_else(|violation| panic!("{level}: {violation}"));
    println!(
        "{level}: {committed} committed, {} failed, {readers} read-only observations checked, \
         {} edges ({} anti-dependencies)",
        all.failed, summary.edges, summary.read_write_edges
    );
    assert!(committed as u64 > TRANSACTIONS / 4, "{level}: only {committed} committed");
}

const LEVELS: [&str; 3] = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_over_the_wire_are_as_strong_as_each_level_promises() {
    let db = SqlDb::open(Config { durability: Durability::Off, ..Config::default() }).unwrap();
    let config =
        ServerConfig { listen: "127.0.0.1:0".into(), threads: 2, ..ServerConfig::default() };
    let server = Server::start(Arc::clone(&db), config).unwrap();
    let port = server.addr.port();
    let connect = move || {
        let mut config = tokio_postgres::Config::new();
        config.host("127.0.0.1").port(port).user("postgres").dbname("engram");
        config
    };
    for level in LEVELS {
        run_level(&connect, level, false).await;
    }
}

/// The same histories against a PostgreSQL named by `HISTORIES_PG`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL: HISTORIES_PG=\"host=... user=... dbname=...\""]
async fn postgresql_passes_the_same_checks() {
    let Ok(text) = std::env::var("HISTORIES_PG") else {
        return;
    };
    let config: tokio_postgres::Config = text.parse().unwrap();
    let connect = move || config.clone();
    for level in LEVELS {
        run_level(&connect, level, true).await;
    }
}
