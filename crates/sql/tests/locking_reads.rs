//! Row locks (`locks.rs`, docs/isolation.md "Row locks"): `SELECT ... FOR UPDATE` protects a
//! read-modify-write at READ COMMITTED, as in PostgreSQL: the increments of several threads,
//! each computed in the client from the value read FOR UPDATE, are never lost, and no
//! transaction fails, since each waits for the row. Then NOWAIT, SKIP LOCKED, FOR SHARE,
//! the weaker PostgreSQL modes, UPDATE waiting for a locked row, deadlocks and lock_timeout.

use engram_sql::{Session, SqlDb, Value};
use std::sync::Arc;

const THREADS: usize = 4;
const INCREMENTS: usize = 150;

fn increment(session: &mut Session) -> Result<(), engram_sql::SqlError> {
    session.execute_one("BEGIN")?;
    let read = session.execute_one("SELECT n FROM counter WHERE id = 1 FOR UPDATE")?;
    let n: i64 = read.text_rows()[0][0].as_deref().unwrap().parse().unwrap();
    let update = session.prepare("UPDATE counter SET n = $1 WHERE id = 1", &[])?;
    session.execute_prepared(&update, &[Value::Int(n + 1)], 0)?;
    session.execute_one("COMMIT").map(|_| ())
}

#[test]
fn increments_read_for_update_are_never_lost() {
    let db: Arc<SqlDb> = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE TABLE counter (id INT PRIMARY KEY, n BIGINT NOT NULL)").unwrap();
    setup.execute_one("INSERT INTO counter VALUES (1, 0)").unwrap();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut session = db.session().unwrap();
                let mut retries = 0;
                for _ in 0..INCREMENTS {
                    loop {
                        match increment(&mut session) {
                            Ok(()) => break,
                            Err(error) => {
                                assert_eq!(error.code, "40001", "{error:?}");
                                let _ = session.execute_one("ROLLBACK");
                                retries += 1;
                            }
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let retries: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let total = setup.execute_one("SELECT n FROM counter WHERE id = 1").unwrap().text_rows();
    assert_eq!(
        total[0][0].as_deref(),
        Some((THREADS * INCREMENTS).to_string().as_str()),
        "increments lost ({retries} retries)"
    );
    // Each transaction waited for the row instead of failing.
    assert_eq!(retries, 0, "transactions failed with 40001 instead of waiting");
    assert_eq!(db.locked_rows(), 0, "row locks left behind");
}

fn queue() -> Arc<SqlDb> {
    let db: Arc<SqlDb> = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE TABLE q (id INT PRIMARY KEY, n INT NOT NULL)").unwrap();
    setup.execute_one("INSERT INTO q VALUES (1, 0), (2, 0), (3, 0)").unwrap();
    db
}

fn rows(session: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
    session.execute_one(sql).unwrap().text_rows()
}

fn code(session: &mut Session, sql: &str) -> &'static str {
    session.execute_one(sql).unwrap_err().code
}

#[test]
fn nowait_and_skip_locked_pass_over_a_held_row() {
    let db = queue();
    let (mut a, mut b) = (db.session().unwrap(), db.session().unwrap());
    a.execute_one("BEGIN").unwrap();
    assert_eq!(rows(&mut a, "SELECT id FROM q WHERE id = 1 FOR UPDATE"), [[Some("1".into())]]);
    b.execute_one("BEGIN").unwrap();
    assert_eq!(code(&mut b, "SELECT id FROM q WHERE id = 1 FOR UPDATE NOWAIT"), "55P03");
    b.execute_one("ROLLBACK").unwrap();
    // A job queue: the first free row.
    let first_free = "SELECT id FROM q ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
    b.execute_one("BEGIN").unwrap();
    assert_eq!(rows(&mut b, first_free), [[Some("2".into())]]);
    let mut c = db.session().unwrap();
    c.execute_one("BEGIN").unwrap();
    assert_eq!(rows(&mut c, first_free), [[Some("3".into())]]);
    assert_eq!(rows(&mut c, "SELECT id FROM q WHERE id = 2 FOR UPDATE SKIP LOCKED").len(), 0);
    // Shared locks let each other be; an exclusive one waits for them.
    let mut d = db.session().unwrap();
    d.execute_one("BEGIN").unwrap();
    assert_eq!(code(&mut d, "SELECT id FROM q WHERE id = 3 FOR SHARE NOWAIT"), "55P03");
    d.execute_one("ROLLBACK").unwrap();
    c.execute_one("ROLLBACK").unwrap();
    d.execute_one("BEGIN").unwrap();
    rows(&mut d, "SELECT id FROM q WHERE id = 3 FOR SHARE");
    c.execute_one("BEGIN").unwrap();
    rows(&mut c, "SELECT id FROM q WHERE id = 3 FOR SHARE NOWAIT");
    assert_eq!(code(&mut b, "SELECT id FROM q WHERE id = 3 FOR UPDATE NOWAIT"), "55P03");
    // PostgreSQL's weaker modes: FOR KEY SHARE does not conflict with FOR NO KEY UPDATE.
    a.execute_one("ROLLBACK").unwrap();
    a.execute_one("BEGIN").unwrap();
    rows(&mut a, "SELECT id FROM q WHERE id = 1 FOR NO KEY UPDATE");
    let mut e = db.session().unwrap();
    e.execute_one("BEGIN").unwrap();
    rows(&mut e, "select id from q where id = 1 for key share nowait");
    assert_eq!(code(&mut c, "SELECT id FROM q WHERE id = 1 FOR SHARE NOWAIT"), "55P03");
    for session in [&mut a, &mut b, &mut c, &mut d, &mut e] {
        let _ = session.execute_one("ROLLBACK");
    }
    assert_eq!(db.locked_rows(), 0, "row locks left behind");
}

/// A second locking read, and an UPDATE, wait for the row and then see the first's commit.
#[test]
fn a_held_row_is_waited_for_and_then_read_as_committed() {
    let db = queue();
    let mut a = db.session().unwrap();
    a.execute_one("BEGIN").unwrap();
    rows(&mut a, "SELECT n FROM q WHERE id < 3 FOR UPDATE");
    let waiters: Vec<_> = [
        "SELECT n FROM q WHERE id = 1 FOR UPDATE",
        "UPDATE q SET n = n + 10 WHERE id = 2 RETURNING n",
    ]
    .into_iter()
    .map(|sql| {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let mut b = db.session().unwrap();
            b.execute_one("BEGIN").unwrap();
            let started = std::time::Instant::now();
            let seen = rows(&mut b, sql);
            b.execute_one("COMMIT").unwrap();
            (seen, started.elapsed())
        })
    })
    .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    a.execute_one("UPDATE q SET n = 5 WHERE id < 3").unwrap();
    a.execute_one("COMMIT").unwrap();
    for waiter in waiters {
        let (seen, waited) = waiter.join().unwrap();
        assert!(waited >= std::time::Duration::from_millis(250), "did not wait: {waited:?}");
        let n: i64 = seen[0][0].as_deref().unwrap().parse().unwrap();
        assert!(n == 5 || n == 15, "saw {n}, not the committed 5");
    }
    assert_eq!(rows(&mut a, "SELECT n FROM q WHERE id = 2"), [[Some("15".into())]]);
}

#[test]
fn a_deadlock_ends_one_transaction_with_40p01_and_lock_timeout_ends_a_wait() {
    let db = queue();
    let mut a = db.session().unwrap();
    a.execute_one("BEGIN").unwrap();
    rows(&mut a, "SELECT n FROM q WHERE id = 1 FOR UPDATE");
    let other = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let mut b = db.session().unwrap();
            b.execute_one("BEGIN").unwrap();
            rows(&mut b, "SELECT n FROM q WHERE id = 2 FOR UPDATE");
            std::thread::sleep(std::time::Duration::from_millis(200));
            let result = b.execute_one("SELECT n FROM q WHERE id = 1 FOR UPDATE");
            let _ = b.execute_one("ROLLBACK");
            result.map(|_| ()).map_err(|error| (error.code, error.detail))
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mine = a.execute_one("SELECT n FROM q WHERE id = 2 FOR UPDATE").map(|_| ());
    let mine = mine.map_err(|error| (error.code, error.detail));
    let _ = a.execute_one("ROLLBACK");
    let theirs = other.join().unwrap();
    // The chosen one's DETAIL names the row it waited for.
    for (outcome, row) in [(&mine, "(id)=(2)"), (&theirs, "(id)=(1)")] {
        if let Err((_, detail)) = outcome {
            let detail = detail.as_deref().unwrap_or_default();
            assert!(detail.contains(row) && detail.contains("relation \"q\""), "{detail}");
        }
    }
    // Exactly one of the two is chosen; the other gets its row.
    let outcomes = [mine, theirs].map(|outcome| outcome.map_err(|(code, _)| code));
    assert_eq!(outcomes.iter().filter(|o| **o == Err("40P01")).count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    // lock_timeout bounds a wait.
    a.execute_one("BEGIN").unwrap();
    rows(&mut a, "SELECT n FROM q WHERE id = 3 FOR UPDATE");
    let mut b = db.session().unwrap();
    b.execute_one("SET lock_timeout = 100").unwrap();
    let started = std::time::Instant::now();
    assert_eq!(code(&mut b, "UPDATE q SET n = 1 WHERE id = 3"), "55P03");
    assert!(started.elapsed() >= std::time::Duration::from_millis(100));
    a.execute_one("ROLLBACK").unwrap();
    b.execute_one("UPDATE q SET n = 1 WHERE id = 3").unwrap();
    assert_eq!(db.locked_rows(), 0, "row locks left behind");
}
