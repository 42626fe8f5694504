//! Concurrent UPDATEs of one primary-key range lose nothing, under every protocol: at
//! SERIALIZABLE (one pass over the range, `Txn::update_range`) and at READ COMMITTED (the keys
//! first, then each row read for update). Rows outside the range never change.

use engram_engine::{Config, Protocol};
use engram_sql::{Outcome, Session, SqlDb, Value};
use std::sync::Arc;

const INSIDE: i64 = 8;
const THREADS: usize = 2;
const COMMITS: usize = 150;

/// Runs the range UPDATE in a transaction at `level` until it commits; the rows it returned.
fn commit_retrying(session: &mut Session, level: &str) -> Vec<Vec<Value>> {
    loop {
        let results = session.execute(&format!(
            "BEGIN ISOLATION LEVEL {level}; \
             UPDATE c SET v = v + 1 WHERE id BETWEEN 1 AND {INSIDE} AND tag <> 'never' \
             RETURNING id, v; \
             COMMIT"
        ));
        match results.iter().find_map(|result| result.as_ref().err()) {
            None => {
                let Ok(Outcome::Rows { rows, .. }) = &results[1] else {
                    panic!("no rows from the UPDATE: {:?}", results[1])
                };
                return rows.clone();
            }
            Some(error) if error.is_retryable() => {
                session.execute_one("ROLLBACK").expect("rollback");
            }
            Some(error) => panic!("{level}: {error}"),
        }
    }
}

fn no_update_is_lost(protocol: Protocol, level: &'static str) {
    let db = SqlDb::open(Config { protocol, ..Config::default() }).expect("open");
    let mut session = db.session().expect("session");
    session.execute_one("CREATE TABLE c (id INT PRIMARY KEY, tag TEXT, v BIGINT)").expect("table");
    for id in 0..=2 * INSIDE {
        session.execute_one(&format!("INSERT INTO c VALUES ({id}, 't', 0)")).expect("row");
    }
    let db = Arc::clone(&db);
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut session = db.session().expect("session");
                let mut last = vec![0i64; INSIDE as usize];
                for _ in 0..COMMITS {
                    let rows = commit_retrying(&mut session, level);
                    assert_eq!(rows.len(), INSIDE as usize, "{protocol:?} {level}: {rows:?}");
                    for row in rows {
                        let (Value::Int(id), Value::Int(v)) = (&row[0], &row[1]) else {
                            panic!("{row:?}")
                        };
                        // Each commit of this thread sees its own earlier ones.
                        let seen = &mut last[*id as usize - 1];
                        assert!(
                            *v > *seen,
                            "{protocol:?} {level}: id {id} went from {seen} to {v}"
                        );
                        *seen = *v;
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    let rows = session.execute_one("SELECT id, v FROM c ORDER BY id").expect("read");
    let Outcome::Rows { rows, .. } = rows else { panic!("no rows") };
    for row in rows {
        let (Value::Int(id), Value::Int(v)) = (&row[0], &row[1]) else { panic!("{row:?}") };
        let expected = if (1..=INSIDE).contains(id) { (THREADS * COMMITS) as i64 } else { 0 };
        assert_eq!(*v, expected, "{protocol:?} {level}: row {id}");
    }
}

#[test]
fn concurrent_range_updates_lose_nothing_under_every_protocol() {
    for protocol in Protocol::ALL {
        for level in ["SERIALIZABLE", "READ COMMITTED"] {
            no_update_is_lost(protocol, level);
        }
    }
}
