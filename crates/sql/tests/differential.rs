//! Random single-table queries on Engram and SQLite, compared as sorted multisets of rows.
//! The table has a primary key and a secondary index, so point lookups, range scans, index
//! scans and full scans are all exercised against SQLite's answers.

use engram_sql::{Outcome, SqlDb};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

fn predicate(rng: &mut SmallRng, depth: u32) -> String {
    let column = ["id", "a", "b", "c"][rng.random_range(0..4)];
    let constant = |rng: &mut SmallRng, column: &str| -> String {
        if column == "c" {
            format!("'{}'", ["", "a", "ab", "b", "ba", "c", "zz"][rng.random_range(0..7)])
        } else {
            rng.random_range(-3..23).to_string()
        }
    };
    if depth > 0 && rng.random_bool(0.4) {
        let left = predicate(rng, depth - 1);
        let right = predicate(rng, depth - 1);
        return match rng.random_range(0..3) {
            0 => format!("({left} AND {right})"),
            1 => format!("({left} OR {right})"),
            _ => format!("NOT ({left})"),
        };
    }
    match rng.random_range(0..5) {
        0 => format!("{column} IS {}NULL", if rng.random_bool(0.5) { "NOT " } else { "" }),
        1 => format!("{column} BETWEEN {} AND {}", constant(rng, column), constant(rng, column)),
        2 => {
            // One to four values, now and then a NULL (on the primary key: a lookup each).
            let values: Vec<String> =
                (0..rng.random_range(1..5))
                    .map(|_| {
                        if rng.random_bool(0.1) {
                            "NULL".to_string()
                        } else {
                            constant(rng, column)
                        }
                    })
                    .collect();
            format!("{column} IN ({})", values.join(", "))
        }
        _ => {
            let op = ["=", "<>", "<", "<=", ">", ">="][rng.random_range(0..6)];
            format!("{column} {op} {}", constant(rng, column))
        }
    }
}

fn engram_rows(outcome: Outcome) -> Vec<String> {
    assert!(matches!(outcome, Outcome::Rows { .. }), "no rows: {outcome:?}");
    let mut out: Vec<String> = outcome
        .text_rows()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    out.sort();
    out
}

fn sqlite_rows(connection: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut statement = connection.prepare(sql).unwrap();
    let count = statement.column_count();
    let mut out: Vec<String> = statement
        .query_map([], |row| {
            let mut cells = Vec::new();
            for i in 0..count {
                let cell = match row.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "blob".to_string(),
                };
                cells.push(cell);
            }
            Ok(cells.join("|"))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    out.sort();
    out
}

/// An Engram database and an SQLite one, each with the table `schema` creates.
fn both_with(schema: &str) -> (std::sync::Arc<SqlDb>, engram_sql::Session, rusqlite::Connection) {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut session = db.session().unwrap();
    session.execute_one(schema).unwrap();
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    sqlite.execute(schema, []).unwrap();
    (db, session, sqlite)
}

#[test]
fn random_queries_match_sqlite() {
    let (_db, mut session, sqlite) =
        both_with("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c TEXT)");
    session.execute_one("CREATE INDEX t_b ON t (b, a)").unwrap();
    let mut rng = SmallRng::seed_from_u64(7);
    for id in 0..200 {
        let value = |rng: &mut SmallRng| {
            if rng.random_bool(0.15) {
                "NULL".to_string()
            } else {
                rng.random_range(0..20).to_string()
            }
        };
        let a = value(&mut rng);
        let b = value(&mut rng);
        let c = if rng.random_bool(0.15) {
            "NULL".to_string()
        } else {
            format!("'{}'", ["", "a", "ab", "b", "ba", "c", "zz"][rng.random_range(0..7)])
        };
        let insert = format!("INSERT INTO t VALUES ({id}, {a}, {b}, {c})");
        session.execute_one(&insert).unwrap();
        sqlite.execute(&insert, []).unwrap();
    }
    let mut compared = 0;
    for round in 0..600 {
        let pred = predicate(&mut rng, 3);
        let sql = match round % 3 {
            0 => format!("SELECT id, a, b, c FROM t WHERE {pred}"),
            1 => format!("SELECT count(*), count(a), sum(a), min(b), max(c) FROM t WHERE {pred}"),
            _ => format!("SELECT b, count(*), sum(id) FROM t WHERE {pred} GROUP BY b"),
        };
        let ours = engram_rows(session.execute_one(&sql).unwrap_or_else(|e| panic!("{sql}: {e}")));
        let theirs = sqlite_rows(&sqlite, &sql);
        assert_eq!(ours, theirs, "{sql}");
        compared += 1;
    }
    assert_eq!(compared, 600);
}

/// A conjunct over the composite-key table `g`: equalities, IN lists and ranges on either key
/// column, and conditions on the value, so that point lookups, lookups per listed value on
/// either key column, prefix ranges and full scans are all chosen.
fn key_conjunct(rng: &mut SmallRng) -> String {
    let list = |rng: &mut SmallRng, high: i64| -> String {
        let values: Vec<String> = (0..rng.random_range(1..5))
            .map(|_| {
                if rng.random_bool(0.1) {
                    "NULL".to_string()
                } else {
                    rng.random_range(-1..high).to_string()
                }
            })
            .collect();
        values.join(", ")
    };
    match rng.random_range(0..7) {
        0 => format!("w = {}", rng.random_range(-1..5)),
        1 => format!("w IN ({})", list(rng, 5)),
        2 => format!("i = {}", rng.random_range(-1..31)),
        3 => format!("i IN ({})", list(rng, 31)),
        4 => format!("i BETWEEN {} AND {}", rng.random_range(-1..31), rng.random_range(-1..31)),
        5 => format!("v < {}", rng.random_range(0..100)),
        _ => format!("NOT (i IN ({}))", list(rng, 31)),
    }
}

#[test]
fn random_composite_key_queries_match_sqlite() {
    let (_db, mut session, sqlite) =
        both_with("CREATE TABLE g (w INT, i INT, v INT, PRIMARY KEY (w, i))");
    let mut rng = SmallRng::seed_from_u64(8);
    for w in 0..4 {
        for i in 0..30 {
            if rng.random_bool(0.7) {
                let insert =
                    format!("INSERT INTO g VALUES ({w}, {i}, {})", rng.random_range(0..100));
                session.execute_one(&insert).unwrap();
                sqlite.execute(&insert, []).unwrap();
            }
        }
    }
    for round in 0..400 {
        let conjuncts: Vec<String> =
            (0..rng.random_range(1..4)).map(|_| key_conjunct(&mut rng)).collect();
        let pred = conjuncts.join(" AND ");
        let sql = match round % 2 {
            0 => format!("SELECT w, i, v FROM g WHERE {pred}"),
            _ => format!("SELECT count(*), sum(v), min(i), max(w) FROM g WHERE {pred}"),
        };
        let ours = engram_rows(session.execute_one(&sql).unwrap_or_else(|e| panic!("{sql}: {e}")));
        let theirs = sqlite_rows(&sqlite, &sql);
        assert_eq!(ours, theirs, "{sql}");
    }
}
