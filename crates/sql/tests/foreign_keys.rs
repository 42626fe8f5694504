//! Foreign keys under concurrency, under every protocol at every writing isolation level: a
//! referencing row inserted while its referenced row is deleted by another transaction, in
//! both orders of commit, never leaves a dangling reference; and threads that insert
//! referencing rows, delete referenced ones and cascade never leave one either.

use engram_engine::Protocol;
use engram_sql::{Session, SqlDb};
use std::sync::Arc;

const LEVELS: [&str; 3] = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"];

fn open(protocol: Protocol) -> Arc<SqlDb> {
    SqlDb::open(engram_engine::Config { protocol, ..engram_engine::Config::default() }).unwrap()
}

fn run(session: &mut Session, sql: &str) {
    session.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn count(session: &mut Session, sql: &str) -> i64 {
    let rows = session.execute_one(sql).unwrap().text_rows();
    rows[0][0].as_deref().unwrap().parse().unwrap()
}

const DANGLING: &str =
    "SELECT count(*) FROM child c WHERE NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = c.pid)";

fn setup(db: &Arc<SqlDb>, on_delete: &str) -> Session {
    let mut s = db.session().unwrap();
    run(&mut s, "CREATE TABLE parent (id int PRIMARY KEY)");
    run(
        &mut s,
        &format!("CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent {on_delete})"),
    );
    run(&mut s, "CREATE INDEX child_pid ON child (pid)");
    run(&mut s, "INSERT INTO parent SELECT g FROM generate_series(1, 8) g");
    s
}

/// The two interleavings of "insert a referencing row" and "delete the referenced row":
/// whichever commits second must fail (or the delete must see the row and refuse).
#[test]
fn a_reference_and_a_delete_of_its_row_never_both_commit() {
    for protocol in Protocol::ALL {
        for level in LEVELS {
            for (child_first, delete_first) in
                [(true, false), (false, false), (true, true), (false, true)]
            {
                let db = open(protocol);
                let mut check = setup(&db, "");
                let mut a = db.session().unwrap();
                let mut b = db.session().unwrap();
                run(&mut a, &format!("BEGIN ISOLATION LEVEL {level}"));
                run(&mut b, &format!("BEGIN ISOLATION LEVEL {level}"));
                let (inserted, deleted) = if delete_first {
                    let deleted = b.execute_one("DELETE FROM parent WHERE id = 1");
                    (a.execute_one("INSERT INTO child VALUES (1, 1)"), deleted)
                } else {
                    let inserted = a.execute_one("INSERT INTO child VALUES (1, 1)");
                    (inserted, b.execute_one("DELETE FROM parent WHERE id = 1"))
                };
                let (first, second) = if child_first { (&mut a, &mut b) } else { (&mut b, &mut a) };
                let commit_first = first.execute_one("COMMIT");
                let commit_second = second.execute_one("COMMIT");
                let _ = (inserted, deleted, commit_first, commit_second);
                assert_eq!(
                    count(&mut check, DANGLING),
                    0,
                    "{protocol:?} {level} child commits first: {child_first}, delete first: {delete_first}"
                );
            }
        }
    }
}

/// Four threads insert children of random parents, delete parents (restricted, or cascading
/// to their children) and insert parents again; no child may end without its parent.
#[test]
fn concurrent_references_and_deletes_leave_no_dangling_reference() {
    for protocol in Protocol::ALL {
        for level in LEVELS {
            for on_delete in ["", "ON DELETE CASCADE"] {
                let db = open(protocol);
                let mut check = setup(&db, on_delete);
                let threads: Vec<_> = (0..4u32)
                    .map(|thread| {
                        let db = Arc::clone(&db);
                        std::thread::spawn(move || {
                            let mut s = db.session().unwrap();
                            s.execute_one("SET lock_timeout = 100").unwrap();
                            let mut state = thread.wrapping_mul(2_654_435_761).wrapping_add(7);
                            for round in 0..200u32 {
                                state ^= state << 13;
                                state ^= state >> 17;
                                state ^= state << 5;
                                let parent = state % 8 + 1;
                                let child = thread * 1_000 + round;
                                let steps = match state % 3 {
                                    0 => vec![format!("INSERT INTO child VALUES ({child}, {parent})")],
                                    1 => vec![format!("DELETE FROM parent WHERE id = {parent}")],
                                    _ => vec![format!(
                                        "INSERT INTO parent VALUES ({parent}) ON CONFLICT DO NOTHING"
                                    )],
                                };
                                let _ = s.execute_one(&format!("BEGIN ISOLATION LEVEL {level}"));
                                let mut failed = false;
                                for step in &steps {
                                    if let Err(error) = s.execute_one(step) {
                                        assert!(
                                            matches!(error.code, "23503" | "40001" | "40P01" | "55P03" | "23505"),
                                            "{step}: {error}"
                                        );
                                        failed = true;
                                        break;
                                    }
                                }
                                let end = if failed { "ROLLBACK" } else { "COMMIT" };
                                if let Err(error) = s.execute_one(end) {
                                    assert!(matches!(error.code, "40001" | "40P01"), "{error}");
                                }
                            }
                        })
                    })
                    .collect();
                for thread in threads {
                    thread.join().unwrap();
                }
                assert_eq!(count(&mut check, DANGLING), 0, "{protocol:?} {level} {on_delete}");
            }
        }
    }
}
