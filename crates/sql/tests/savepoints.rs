//! Savepoints through SQL, under every protocol: a failed statement's partial writes undone by
//! ROLLBACK TO, reads made in a rolled-back savepoint still guarding a serializable
//! transaction, a transaction that concurrency control aborted staying aborted, inserts undone
//! leaving no row and no index entry behind, savepoints prepared as the extended protocol
//! runs them, and threads whose transactions undo part of their work keeping a total.

use engram_engine::Protocol;
use engram_sql::{Outcome, Session, SqlDb, TransactionStatus};
use std::sync::Arc;

fn open(protocol: Protocol) -> Arc<SqlDb> {
    SqlDb::open(engram_engine::Config { protocol, ..engram_engine::Config::default() }).unwrap()
}

fn texts(outcome: Outcome) -> Vec<String> {
    outcome
        .text_rows()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn query(session: &mut Session, sql: &str) -> Vec<String> {
    texts(session.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}")))
}

fn run(session: &mut Session, sql: &str) {
    session.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[test]
fn a_failed_statement_is_undone_by_rollback_to() {
    for protocol in Protocol::ALL {
        let db = open(protocol);
        let mut s = db.session().unwrap();
        run(&mut s, "CREATE TABLE t (k int PRIMARY KEY, v int, w text UNIQUE)");
        run(&mut s, "CREATE INDEX t_v ON t (v)");
        run(&mut s, "INSERT INTO t SELECT g, g, 'w' || g FROM generate_series(1, 20) g");
        run(&mut s, "BEGIN");
        run(&mut s, "UPDATE t SET v = v + 100 WHERE k <= 5");
        run(&mut s, "SAVEPOINT s");
        // Updates rows in key order until k = 10 divides by zero: half-done.
        let error = s.execute_one("UPDATE t SET v = v + 1000 / (10 - k)").unwrap_err();
        assert_eq!(error.code, "22012", "{protocol:?}");
        assert_eq!(s.status(), TransactionStatus::Failed);
        assert_eq!(s.execute_one("SELECT 1").unwrap_err().code, "25P02");
        run(&mut s, "ROLLBACK TO SAVEPOINT s");
        assert_eq!(s.status(), TransactionStatus::InBlock);
        // A duplicate in a unique index fails the statement half-way too.
        assert_eq!(
            s.execute_one("INSERT INTO t VALUES (21, 21, 'x'), (22, 22, 'w3')").unwrap_err().code,
            "23505"
        );
        run(&mut s, "ROLLBACK TO s");
        run(&mut s, "INSERT INTO t VALUES (21, 21, 'w21')");
        run(&mut s, "COMMIT");
        assert_eq!(
            query(&mut s, "SELECT sum(v), count(*) FROM t"),
            vec![format!("{}", (1..=21).sum::<i32>() + 500) + "|21"],
            "{protocol:?}"
        );
        // The secondary indexes hold the rows' entries only.
        assert_eq!(query(&mut s, "SELECT k FROM t WHERE v = 1001"), Vec::<String>::new());
        assert_eq!(query(&mut s, "SELECT k FROM t WHERE v = 101"), vec!["1"]);
        assert_eq!(query(&mut s, "SELECT k FROM t WHERE w = 'x'"), Vec::<String>::new());
        assert_eq!(query(&mut s, "SELECT k FROM t WHERE w = 'w21'"), vec!["21"]);
    }
}

#[test]
fn an_undone_insert_leaves_its_key_free() {
    for protocol in Protocol::ALL {
        let db = open(protocol);
        let mut a = db.session().unwrap();
        let mut b = db.session().unwrap();
        run(&mut a, "CREATE TABLE t (k int PRIMARY KEY, v text UNIQUE)");
        run(&mut a, "BEGIN");
        run(&mut a, "SAVEPOINT s");
        run(&mut a, "INSERT INTO t VALUES (1, 'one')");
        run(&mut a, "ROLLBACK TO s");
        // Inserted again under another key, with the same unique value: no conflict with the
        // undone row's entry.
        run(&mut a, "INSERT INTO t VALUES (2, 'one')");
        run(&mut a, "COMMIT");
        run(&mut b, "INSERT INTO t VALUES (1, 'uno')");
        assert_eq!(query(&mut b, "SELECT k, v FROM t ORDER BY k"), vec!["1|uno", "2|one"]);
    }
}

#[test]
fn reads_of_a_rolled_back_savepoint_still_count_at_serializable() {
    for protocol in [Protocol::Silo, Protocol::Ssn, Protocol::Mv2pl, Protocol::Mvto] {
        let db = open(protocol);
        let mut a = db.session().unwrap();
        let mut b = db.session().unwrap();
        run(&mut a, "CREATE TABLE oncall (doctor text PRIMARY KEY, on_call bool)");
        run(&mut a, "INSERT INTO oncall VALUES ('alice', true), ('bob', true)");
        // Write skew: each reads both rows inside a savepoint it then rolls back, and takes
        // itself off call. One of the two must fail.
        run(&mut a, "BEGIN ISOLATION LEVEL SERIALIZABLE");
        run(&mut b, "BEGIN ISOLATION LEVEL SERIALIZABLE");
        run(&mut a, "SAVEPOINT look");
        run(&mut b, "SAVEPOINT look");
        let seen_a = query(&mut a, "SELECT count(*) FROM oncall WHERE on_call");
        let seen_b = query(&mut b, "SELECT count(*) FROM oncall WHERE on_call");
        assert_eq!((seen_a, seen_b), (vec!["2".to_string()], vec!["2".to_string()]));
        run(&mut a, "ROLLBACK TO look");
        run(&mut b, "ROLLBACK TO look");
        let first = a.execute_one("UPDATE oncall SET on_call = false WHERE doctor = 'alice'");
        let second = b.execute_one("UPDATE oncall SET on_call = false WHERE doctor = 'bob'");
        let commit_a = first.and_then(|_| a.execute_one("COMMIT"));
        let commit_b = second.and_then(|_| b.execute_one("COMMIT"));
        let committed = [&commit_a, &commit_b]
            .iter()
            .filter(|r| matches!(r, Ok(Outcome::Command { tag }) if tag.as_str() == "COMMIT"))
            .count();
        assert!(committed <= 1, "{protocol:?}: write skew through a savepoint's reads");
        let _ = a.execute_one("ROLLBACK");
        let _ = b.execute_one("ROLLBACK");
        let left = query(&mut a, "SELECT count(*) FROM oncall WHERE on_call");
        assert_ne!(left, vec!["0".to_string()], "{protocol:?}");
    }
}

#[test]
fn an_aborted_transaction_cannot_return_to_a_savepoint() {
    let db = open(Protocol::Silo);
    let mut a = db.session().unwrap();
    let mut b = db.session().unwrap();
    run(&mut a, "CREATE TABLE t (k int PRIMARY KEY, v int)");
    run(&mut a, "INSERT INTO t VALUES (1, 0)");
    run(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    run(&mut a, "SAVEPOINT s");
    assert_eq!(query(&mut a, "SELECT v FROM t WHERE k = 1"), vec!["0"]);
    run(&mut b, "UPDATE t SET v = 1 WHERE k = 1");
    // A's read is stale: its next statement that checks it aborts the transaction.
    let error = a.execute_one("SELECT v FROM t WHERE k = 1").unwrap_err();
    assert_eq!(error.code, "40001");
    let error = a.execute_one("ROLLBACK TO s").unwrap_err();
    assert_eq!(error.code, "40001", "{error}");
    assert_eq!(a.status(), TransactionStatus::Failed);
    run(&mut a, "ROLLBACK");
    assert_eq!(query(&mut a, "SELECT v FROM t"), vec!["1"]);
}

#[test]
fn prepared_savepoint_statements_run_as_the_extended_protocol_sends_them() {
    let db = open(Protocol::Silo);
    let mut s = db.session().unwrap();
    run(&mut s, "CREATE TABLE t (k int PRIMARY KEY)");
    let statements: Vec<_> = [
        "BEGIN",
        "SAVEPOINT p",
        "INSERT INTO t VALUES ($1)",
        "ROLLBACK TO SAVEPOINT p",
        "RELEASE SAVEPOINT p",
        "COMMIT",
    ]
    .iter()
    .map(|sql| s.prepare(sql, &[]).unwrap())
    .collect();
    let none: &[engram_sql::Value] = &[];
    s.execute_prepared(&statements[0], none, 0).unwrap();
    s.execute_prepared(&statements[1], none, 0).unwrap();
    s.execute_prepared(&statements[2], &[engram_sql::Value::Int(1)], 0).unwrap();
    s.execute_prepared(&statements[3], none, 0).unwrap();
    s.execute_prepared(&statements[2], &[engram_sql::Value::Int(2)], 0).unwrap();
    s.execute_prepared(&statements[4], none, 0).unwrap();
    s.execute_prepared(&statements[5], none, 0).unwrap();
    assert_eq!(query(&mut s, "SELECT k FROM t"), vec!["2"]);
}

/// Transfers on four threads, each undoing a bogus second transfer through a savepoint (and
/// one in three undoing a failed statement): the total stays, under every protocol at every
/// writing level.
#[test]
fn transfers_with_undone_parts_keep_the_total() {
    for protocol in Protocol::ALL {
        for level in ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"] {
            let db = open(protocol);
            let mut setup = db.session().unwrap();
            run(&mut setup, "CREATE TABLE acct (id int PRIMARY KEY, balance int)");
            run(&mut setup, "INSERT INTO acct SELECT g, 100 FROM generate_series(0, 9) g");
            let threads: Vec<_> = (0..4)
                .map(|thread| {
                    let db = Arc::clone(&db);
                    std::thread::spawn(move || {
                        let mut s = db.session().unwrap();
                        s.execute_one("SET lock_timeout = 100").unwrap();
                        for round in 0..60 {
                            let from = (thread * 3 + round) % 10;
                            let to = (from + 1 + round % 9) % 10;
                            let steps = [
                                format!("BEGIN ISOLATION LEVEL {level}"),
                                format!("UPDATE acct SET balance = balance - 1 WHERE id = {from}"),
                                format!("UPDATE acct SET balance = balance + 1 WHERE id = {to}"),
                                "SAVEPOINT bogus".to_string(),
                                format!(
                                    "UPDATE acct SET balance = balance + 50 WHERE id = {}",
                                    (to + 2) % 10
                                ),
                                format!("UPDATE acct SET balance = balance - 7 WHERE id = {from}"),
                                if round % 3 == 0 {
                                    "UPDATE acct SET balance = 1 / 0".to_string()
                                } else {
                                    "SELECT 1".to_string()
                                },
                                "ROLLBACK TO SAVEPOINT bogus".to_string(),
                                "COMMIT".to_string(),
                            ];
                            for step in &steps {
                                match s.execute_one(step) {
                                    Ok(_) => {}
                                    Err(error) if error.code == "22012" => {}
                                    Err(error)
                                        if matches!(error.code, "40001" | "40P01" | "55P03") =>
                                    {
                                        s.execute_one("ROLLBACK").unwrap();
                                        break;
                                    }
                                    Err(error) => panic!("{protocol:?} {level} {step}: {error}"),
                                }
                            }
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            assert_eq!(
                query(&mut setup, "SELECT sum(balance), count(*) FROM acct"),
                vec!["1000|10"],
                "{protocol:?} {level}"
            );
        }
    }
}
