//! Deep statements (`depth.rs`): long chains of operators and deep nesting run as PostgreSQL
//! runs them, and beyond the limits fail with SQLSTATE 54001; none overflows the stack.
//!
//! Every statement runs on a thread with a small stack (a quarter of a tokio worker's), so a
//! recursion that does not grow its stack overflows here at depths far below the limits.

use engram_sql::depth::{EXPRESSION_DEPTH_MAX, PARSER_RECURSION_MAX};
use engram_sql::fuzzing::SqlTextHarness;
use engram_sql::{Outcome, Session, SqlDb};

const SMALL_STACK_BYTES: usize = 512 << 10;

/// Runs `body` on a thread with a small stack.
fn on_small_stack<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK_BYTES)
        .spawn(body)
        .expect("a thread")
        .join()
        .expect("the statement's thread ends without a panic")
}

fn session() -> Session {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut session = db.session().unwrap();
    session.execute_one("CREATE TABLE t (id INT PRIMARY KEY, name TEXT, n BIGINT)").unwrap();
    for id in 0..50 {
        session.execute_one(&format!("INSERT INTO t VALUES ({id}, 'r{id}', {id})")).unwrap();
    }
    session
}

fn value(session: &mut Session, sql: &str) -> Option<String> {
    match session.execute_one(sql) {
        Ok(outcome @ Outcome::Rows { .. }) => outcome.text_rows()[0][0].clone(),
        other => panic!("{}...: {other:?}", &sql[..sql.len().min(80)]),
    }
}

fn code(session: &mut Session, sql: &str) -> String {
    match session.execute_one(sql) {
        Err(error) => error.code.to_string(),
        Ok(outcome) => panic!("{}... did not fail: {outcome:?}", &sql[..sql.len().min(80)]),
    }
}

fn chain(term: impl Fn(usize) -> String, separator: &str, terms: usize) -> String {
    (0..terms).map(term).collect::<Vec<_>>().join(separator)
}

#[test]
fn long_chains_of_operators_run() {
    on_small_stack(|| {
        let mut session = session();
        // The statements of the report that crashed the server.
        let sum = format!("SELECT {}", chain(|_| "1".into(), "+", 600));
        assert_eq!(value(&mut session, &sum).as_deref(), Some("600"));
        let or = format!(
            "SELECT count(*) FROM t WHERE {}",
            chain(|i| format!("id = {}", i % 100), " OR ", 1_000)
        );
        assert_eq!(value(&mut session, &or).as_deref(), Some("50"));
        let and = format!(
            "SELECT count(*) FROM t WHERE {}",
            chain(|i| format!("id >= {}", i % 10), " AND ", 1_000)
        );
        assert_eq!(value(&mut session, &and).as_deref(), Some("41"));
        let concat = format!("SELECT {}", chain(|_| "'a'".into(), "||", 1_000));
        assert_eq!(value(&mut session, &concat), Some("a".repeat(1_000)));
        // An ORM's IN list written out: 20,000 ORs.
        let or = format!(
            "SELECT count(*), sum(n) FROM t WHERE {}",
            chain(|i| format!("id = {}", (i * 7) % 30_000), " OR ", 20_000)
        );
        let expected = (0..50).filter(|id| (0..20_000).any(|i| (i * 7) % 30_000 == *id)).count();
        assert_eq!(value(&mut session, &or), Some(expected.to_string()));
        // As deep as a chain may be.
        let sum = format!("SELECT {}", chain(|_| "1".into(), "+", EXPRESSION_DEPTH_MAX));
        assert_eq!(value(&mut session, &sum), Some(EXPRESSION_DEPTH_MAX.to_string()));
    });
}

#[test]
fn deep_nesting_runs() {
    on_small_stack(|| {
        let mut session = session();
        let nested = |open: &str, inner: &str, close: &str, depth: usize| {
            format!("SELECT {}{inner}{}", open.repeat(depth), close.repeat(depth))
        };
        assert_eq!(value(&mut session, &nested("(", "7", ")", 1_000)).as_deref(), Some("7"));
        assert_eq!(value(&mut session, &nested("-(", "7", ")", 1_000)).as_deref(), Some("7"));
        assert_eq!(value(&mut session, &nested("abs(", "-7", ")", 1_000)).as_deref(), Some("7"));
        assert_eq!(value(&mut session, &nested("NOT (", "true", ")", 1_000)).as_deref(), Some("t"));
        let case = nested("CASE WHEN id > 0 THEN ", "n", " ELSE 0 END", 1_000);
        assert_eq!(
            value(&mut session, &format!("{case} FROM t WHERE id = 9")).as_deref(),
            Some("9")
        );
        let sub = nested("(SELECT ", "1", ")", 1_000);
        assert_eq!(value(&mut session, &sub).as_deref(), Some("1"));
    });
}

#[test]
fn deep_expressions_in_every_kind_of_statement() {
    on_small_stack(|| {
        let mut session = session();
        let plus_ones = chain(|_| "1".into(), " + ", 2_000);
        session.execute_one(&format!("INSERT INTO t VALUES (100, 'x', {plus_ones})")).unwrap();
        assert_eq!(value(&mut session, "SELECT n FROM t WHERE id = 100").as_deref(), Some("2000"));
        let many_ids = chain(|i| format!("id = {}", 100 + i), " OR ", 5_000);
        let update = format!("UPDATE t SET n = n {} WHERE {many_ids}", "+ 1 ".repeat(3_000));
        session.execute_one(&update).unwrap();
        assert_eq!(value(&mut session, "SELECT n FROM t WHERE id = 100").as_deref(), Some("5000"));
        session.execute_one(&format!("DELETE FROM t WHERE {many_ids}")).unwrap();
        assert_eq!(value(&mut session, "SELECT count(*) FROM t").as_deref(), Some("50"));
        // A prepared statement keeps its deep plan and runs it again.
        let select = format!("SELECT $1::int {} FROM t WHERE id = 1", "+ 1 ".repeat(3_000));
        let prepared = session.prepare(&select, &[]).unwrap();
        for given in [1i64, 2] {
            let outcome =
                session.execute_prepared(&prepared, &[engram_sql::Value::Int(given)], 0).unwrap();
            assert_eq!(outcome.text_rows()[0][0], Some((given + 3_000).to_string()));
        }
        // EXPLAIN and PREPARE of deep statements.
        let deep_sub = format!("{}1{}", "(SELECT ".repeat(1_000), ")".repeat(1_000));
        for sql in [format!("EXPLAIN SELECT {deep_sub}"), format!("EXPLAIN {select}")] {
            assert!(session.execute_one(&sql).is_ok(), "{}", &sql[..40]);
        }
        session.execute_one(&format!("PREPARE deep AS {select}")).unwrap();
        assert_eq!(value(&mut session, "EXECUTE deep (5)"), Some("3005".into()));
        // Against a table that does not exist: the usual error.
        let missing = format!("SELECT {} FROM missing", chain(|_| "1".into(), "+", 2_000));
        assert_eq!(code(&mut session, &missing), "42P01");
    });
}

#[test]
fn beyond_the_limits_54001_and_the_session_goes_on() {
    on_small_stack(|| {
        let mut session = session();
        let too_long = format!("SELECT {}", chain(|_| "1".into(), "+", EXPRESSION_DEPTH_MAX + 1));
        assert_eq!(code(&mut session, &too_long), "54001");
        // A chain too long to drop by recursion: taken apart without it.
        let huge = format!("SELECT {} FROM t", chain(|_| "1".into(), "+", 1_000_000));
        assert_eq!(code(&mut session, &huge), "54001");
        let huge_casts = format!("SELECT 1{}", "::int".repeat(200_000));
        assert_eq!(code(&mut session, &huge_casts), "54001");
        let deep_parens = format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000));
        assert_eq!(code(&mut session, &deep_parens), "54001");
        let deep_subqueries = format!(
            "SELECT {}1{}",
            "(SELECT ".repeat(PARSER_RECURSION_MAX),
            ")".repeat(PARSER_RECURSION_MAX)
        );
        assert_eq!(code(&mut session, &deep_subqueries), "54001");
        // A deep right operand inside a chain, and inside a function's arguments.
        let inner = chain(|_| "1".into(), "+", 300_000);
        assert_eq!(code(&mut session, &format!("SELECT 1 + ({inner}) + 1")), "54001");
        assert_eq!(code(&mut session, &format!("SELECT coalesce(1, {inner}, 2)")), "54001");
        // Inside an open transaction the failure fails the block, as any error does.
        session.execute_one("BEGIN").unwrap();
        assert_eq!(code(&mut session, &too_long), "54001");
        assert_eq!(code(&mut session, "SELECT 1"), "25P02");
        session.execute_one("ROLLBACK").unwrap();
        assert_eq!(value(&mut session, "SELECT count(*) FROM t").as_deref(), Some("50"));
    });
}

/// The fuzz target's seeds (`fuzz/seeds/sql_text`, the `deep-*` ones among them) through the
/// fuzz target's own code.
#[test]
fn the_fuzz_seeds_run_on_a_small_stack() {
    on_small_stack(|| {
        let seeds = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/sql_text");
        let mut harness = SqlTextHarness::new();
        let mut deep = 0;
        for entry in std::fs::read_dir(seeds).unwrap() {
            let path = entry.unwrap().path();
            deep += usize::from(path.to_string_lossy().contains("deep-"));
            harness.run(&std::fs::read(&path).unwrap());
        }
        assert!(deep >= 8, "the deep seeds are there");
    });
}

/// Random expressions built of every nesting form, around and beyond the limits, run as the
/// fuzz target runs them: each gives a result or an error with a SQLSTATE, never a crash.
#[test]
fn random_deep_expressions_never_crash() {
    use rand::{RngExt, SeedableRng};
    on_small_stack(|| {
        let mut harness = SqlTextHarness::new();
        let mut random = rand::rngs::StdRng::seed_from_u64(52);
        let (mut ran, mut too_deep) = (0, 0);
        for _ in 0..24 {
            // Wrappers nest (recursion in the parser); links chain (a loop in the parser).
            // A numeric expression in the select list, a condition in WHERE.
            let levels = random.random_range(1..30_000);
            let mut expr = String::from("a");
            let (mut open, mut close) = (String::new(), String::new());
            let mut condition = String::from("a < 3");
            for _ in 0..levels {
                match random.random_range(0..14) {
                    0 => expr.push_str(" + 1"),
                    1 => expr.push_str(" * 1"),
                    2 => condition.push_str(" OR a = 2"),
                    3 => condition.push_str(" AND b IS NOT NULL"),
                    4 => expr.push_str("::int8"),
                    5 => condition.push_str(" OR d > 5"),
                    6 => expr.push_str(" - d"),
                    7 => expr.push_str(" % 1000"),
                    8 if open.len() < 6_000 => {
                        open.push('(');
                        close.insert(0, ')');
                    }
                    9 if open.len() < 6_000 => {
                        open.push_str("abs(");
                        close.insert(0, ')');
                    }
                    10 if open.len() < 6_000 => {
                        open.push_str("-(");
                        close.insert(0, ')');
                    }
                    11 if open.len() < 6_000 => {
                        open.push_str("coalesce(NULL, ");
                        close.insert(0, ')');
                    }
                    12 if open.len() < 6_000 => {
                        open.push_str("CASE WHEN a > 0 THEN ");
                        close.insert_str(0, " ELSE 0 END");
                    }
                    _ => expr.push_str(" - 1"),
                }
            }
            let sql = format!("SELECT {open}{expr}{close} FROM t WHERE {condition}");
            match harness.run(sql.as_bytes()).as_slice() {
                [None] => ran += 1,
                [Some("54001")] => too_deep += 1,
                other => panic!("{other:?}: {}", &sql[..sql.len().min(200)]),
            }
        }
        // Both sides of the limits are reached.
        assert!(ran > 0 && too_deep > 0, "{ran} ran, {too_deep} too deep");
    });
}
