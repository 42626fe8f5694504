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

/// Every value is reserved before it is handed out, at the ends of the i64 range too, and a
/// cycling sequence reserves again after it wraps.
#[test]
fn values_are_reserved_before_they_are_handed_out_at_the_type_bounds() {
    use engram_sql::catalog::{Sequence, SequenceOptions, SequenceState};
    use std::cell::Cell;
    let cases = [
        SequenceOptions {
            increment: -1,
            min: i64::MIN,
            max: i64::MIN + 2,
            start: i64::MIN + 1,
            cycle: true,
        },
        SequenceOptions {
            increment: 1,
            min: i64::MAX - 2,
            max: i64::MAX,
            start: i64::MAX - 1,
            cycle: true,
        },
        SequenceOptions { increment: 7, min: -20, max: 20, start: -20, cycle: false },
    ];
    for options in cases {
        let sequence = Sequence::new("@s#1".into(), SequenceState::new(options));
        let reserved = Cell::new(None::<i64>);
        for _ in 0..6 {
            let value = match sequence.next_value("s", |_, limit| {
                reserved.set(Some(limit));
                Ok(())
            }) {
                Ok(value) => value,
                Err(error) => {
                    assert_eq!(error.code, "2200H", "{options:?}");
                    break;
                }
            };
            let limit = reserved.get().expect("reserved before the first value");
            let covered = if options.increment > 0 { value <= limit } else { value >= limit };
            assert!(covered, "{options:?}: {value} handed out beyond the reservation {limit}");
        }
    }
}
