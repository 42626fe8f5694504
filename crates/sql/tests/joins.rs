//! Joins whose inner table is found by primary key, across many outer rows, against a nested
//! loop computed here: inner keys that exist, do not exist, or are NULL; a filter on the inner
//! row; aggregates; a LIMIT; a key value that does not convert to the key's type.

use engram_sql::{Session, SqlDb};

/// `outer_t` has 600 rows whose `ref` points at `inner_t` keys 0..60 (only even ones exist),
/// at nothing (NULL), or at keys that do not exist.
/// Outer rows `(id, ref)` and inner rows `(id, weight)`.
type Rows = (Vec<(i64, Option<i64>)>, Vec<(i64, i64)>);

fn session() -> (Session, Rows) {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut session = db.session().unwrap();
    session.execute_one("CREATE TABLE inner_t (id INT PRIMARY KEY, weight INT NOT NULL)").unwrap();
    session.execute_one("CREATE TABLE outer_t (id INT PRIMARY KEY, ref INT)").unwrap();
    let inner: Vec<(i64, i64)> = (0..60).filter(|i| i % 2 == 0).map(|i| (i, i * 10 + 1)).collect();
    let outer: Vec<(i64, Option<i64>)> =
        (0..600).map(|i| (i, (i % 7 != 3).then_some((i * 13) % 70))).collect();
    for (id, weight) in &inner {
        session.execute_one(&format!("INSERT INTO inner_t VALUES ({id}, {weight})")).unwrap();
    }
    for (id, reference) in &outer {
        let reference = reference.map_or("NULL".to_string(), |r| r.to_string());
        session.execute_one(&format!("INSERT INTO outer_t VALUES ({id}, {reference})")).unwrap();
    }
    (session, (outer, inner))
}

fn ints(session: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
    session.execute_one(sql).unwrap().text_rows()
}

#[test]
fn batched_inner_lookups_give_the_nested_loop_result() {
    let (mut session, (outer, inner)) = session();
    let weight = |r: i64| inner.iter().find(|(id, _)| *id == r).map(|(_, w)| *w);
    let expected: Vec<(i64, i64)> = outer
        .iter()
        .filter_map(|(id, reference)| reference.and_then(weight).map(|w| (*id, w)))
        .collect();
    assert!(expected.len() > 200, "many joined rows: {}", expected.len());
    // Every joined row, in the outer scan's order.
    let rows =
        ints(&mut session, "SELECT o.id, i.weight FROM outer_t o JOIN inner_t i ON i.id = o.ref");
    let got: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| (r[0].as_ref().unwrap().parse().unwrap(), r[1].as_ref().unwrap().parse().unwrap()))
        .collect();
    assert_eq!(got, expected);
    // A filter on the inner row, aggregates, and a LIMIT.
    let heavy: Vec<_> = expected.iter().filter(|(_, w)| *w > 300).collect();
    let rows = ints(
        &mut session,
        "SELECT count(*), count(DISTINCT i.id) FROM outer_t o, inner_t i \
         WHERE i.id = o.ref AND i.weight > 300",
    );
    let distinct: std::collections::BTreeSet<i64> =
        heavy.iter().map(|(_, w)| (w - 1) / 10).collect();
    assert_eq!(rows[0][0].as_deref(), Some(heavy.len().to_string().as_str()));
    assert_eq!(rows[0][1].as_deref(), Some(distinct.len().to_string().as_str()));
    let rows =
        ints(&mut session, "SELECT o.id FROM outer_t o JOIN inner_t i ON i.id = o.ref LIMIT 70");
    let first: Vec<String> = expected.iter().take(70).map(|(id, _)| id.to_string()).collect();
    assert_eq!(rows.iter().map(|r| r[0].clone().unwrap()).collect::<Vec<_>>(), first);
    // A key value that does not convert to the inner key's type: no row matches.
    let rows =
        ints(&mut session, "SELECT count(*) FROM outer_t o JOIN inner_t i ON i.id = o.ref + 0.5");
    assert_eq!(rows[0][0].as_deref(), Some("0"));
}
