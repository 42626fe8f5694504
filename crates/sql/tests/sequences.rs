//! Sequences under concurrency: sessions on several threads take values of one sequence
//! (through `nextval`, SERIAL defaults and `setval` racing them), and no value is handed out
//! twice; each session's `currval` is its own.

use engram_sql::{Outcome, SqlDb};
use std::collections::HashSet;

fn first_int(outcome: Outcome) -> i64 {
    outcome.text_rows()[0][0].as_deref().expect("not NULL").parse().expect("an integer")
}

#[test]
fn concurrent_sessions_never_share_a_value() {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE SEQUENCE shared INCREMENT BY 3 START WITH 7").unwrap();
    setup.execute_one("CREATE TABLE rows (id bigserial PRIMARY KEY, session int)").unwrap();
    const THREADS: i64 = 4;
    const EACH: usize = 1_500;
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut session = db.session().unwrap();
                let mut values = Vec::with_capacity(EACH);
                for _ in 0..EACH {
                    let value = first_int(session.execute_one("SELECT nextval('shared')").unwrap());
                    assert_eq!(
                        first_int(session.execute_one("SELECT currval('shared')").unwrap()),
                        value,
                        "currval is the session's own last value"
                    );
                    values.push(value);
                    session
                        .execute_one(&format!("INSERT INTO rows (session) VALUES ({thread})"))
                        .unwrap();
                }
                values
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for handle in handles {
        for value in handle.join().unwrap() {
            assert_eq!((value - 7) % 3, 0, "{value} is not on the sequence's steps");
            assert!(seen.insert(value), "{value} was handed out twice");
        }
    }
    assert_eq!(seen.len(), THREADS as usize * EACH);
    let count = first_int(setup.execute_one("SELECT count(DISTINCT id) FROM rows").unwrap());
    assert_eq!(count, THREADS * EACH as i64, "SERIAL values are distinct");
    // setval moves the sequence for every session.
    setup.execute_one("SELECT setval('shared', 1000000)").unwrap();
    assert_eq!(first_int(setup.execute_one("SELECT nextval('shared')").unwrap()), 1_000_003);
}
