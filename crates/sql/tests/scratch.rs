//! A session lends its statements the same buffers one after another (`exec::Scratch`):
//! statements on tables of different widths, a failing statement, and a statement that runs
//! another inside it (a subquery, INSERT ... SELECT) all see only their own rows.

use engram_sql::{Session, SqlDb};

fn text(session: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
    session.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).text_rows()
}

fn row(values: &[&str]) -> Vec<Option<String>> {
    values.iter().map(|v| Some(v.to_string())).collect()
}

#[test]
fn statements_sharing_buffers_see_only_their_own_rows() {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut s = db.session().unwrap();
    s.execute_one("CREATE TABLE narrow (id INT PRIMARY KEY, n INT)").unwrap();
    s.execute_one(
        "CREATE TABLE wide (id INT PRIMARY KEY, a TEXT, b INT, c TEXT, d SMALLINT, e TEXT)",
    )
    .unwrap();
    s.execute_one("CREATE UNIQUE INDEX wide_b ON wide (b)").unwrap();
    s.execute_one("INSERT INTO narrow VALUES (1, 10), (2, 20)").unwrap();
    s.execute_one(
        "INSERT INTO wide VALUES (1, 'a1', 100, 'c1', 1, 'e1'), (2, 'a2', 200, 'c2', 2, 'e2')",
    )
    .unwrap();
    for round in 0..3 {
        assert_eq!(
            text(&mut s, "UPDATE wide SET b = b + 1, e = e || 'x' WHERE id = 1 RETURNING a, b, e"),
            vec![row(&["a1", &(101 + round).to_string(), &format!("e1{}", "x".repeat(round + 1))])]
        );
        assert_eq!(
            text(&mut s, "UPDATE narrow SET n = n + 1 WHERE id = 2 RETURNING id, n"),
            vec![row(&["2", &(21 + round).to_string()])]
        );
        // A failing UPDATE (a unique violation, then a value out of range) changes nothing.
        assert_eq!(
            s.execute_one("UPDATE wide SET b = 200 WHERE id = 1").unwrap_err().code,
            "23505"
        );
        assert_eq!(
            s.execute_one("UPDATE wide SET d = 40000 WHERE id = 2").unwrap_err().code,
            "22003"
        );
        // An UPDATE whose value comes from a query run inside it.
        assert_eq!(
            text(
                &mut s,
                "UPDATE narrow SET n = (SELECT b FROM wide WHERE id = 2) WHERE id = 1 RETURNING n"
            ),
            vec![row(&["200"])]
        );
    }
    s.execute_one("INSERT INTO narrow SELECT id + 10, b FROM wide").unwrap();
    assert_eq!(
        text(&mut s, "SELECT id, n FROM narrow ORDER BY id"),
        vec![row(&["1", "200"]), row(&["2", "23"]), row(&["11", "103"]), row(&["12", "200"])]
    );
    assert_eq!(
        text(&mut s, "SELECT a, b, c, d, e FROM wide ORDER BY id"),
        vec![row(&["a1", "103", "c1", "1", "e1xxx"]), row(&["a2", "200", "c2", "2", "e2"])]
    );
}

/// Queries take the session's joined-row and join-level buffers in turn: joins of different
/// depths, point queries wanting fewer columns than the query before, a LEFT JOIN without a
/// match, IN lists and a query that fails mid-scan each see only their own rows.
#[test]
fn queries_sharing_buffers_see_only_their_own_rows() {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut s = db.session().unwrap();
    s.execute_one("CREATE TABLE narrow (id INT PRIMARY KEY, n INT)").unwrap();
    s.execute_one("CREATE TABLE wide (id INT PRIMARY KEY, a TEXT, b INT, c TEXT)").unwrap();
    s.execute_one("INSERT INTO narrow VALUES (1, 10), (2, 20), (3, 0)").unwrap();
    s.execute_one("INSERT INTO wide VALUES (1, 'a1', 2, 'c1'), (2, 'a2', 1, NULL)").unwrap();
    let join = "SELECT w.a, n.n, v.c FROM wide w JOIN narrow n ON n.id = w.b \
                JOIN wide v ON v.id = n.id ORDER BY w.id";
    for _ in 0..3 {
        assert_eq!(
            text(&mut s, join),
            vec![vec![Some("a1".into()), Some("20".into()), None], row(&["a2", "10", "c1"]),]
        );
        assert_eq!(
            text(&mut s, "SELECT * FROM wide WHERE id = 1"),
            vec![row(&["1", "a1", "2", "c1"])]
        );
        // Fewer columns of another row of the same table: nothing of the row before shows.
        assert_eq!(
            text(&mut s, "SELECT a, c FROM wide WHERE id = 2"),
            vec![vec![Some("a2".into()), None]]
        );
        assert_eq!(
            text(
                &mut s,
                "SELECT n.id, w.a FROM narrow n LEFT JOIN wide w ON w.id = n.n ORDER BY n.id"
            ),
            vec![
                vec![Some("1".into()), None],
                vec![Some("2".into()), None],
                vec![Some("3".into()), None]
            ]
        );
        assert_eq!(
            s.execute_one("SELECT id FROM narrow WHERE 100 / n > 1").unwrap_err().code,
            "22012"
        );
        assert_eq!(
            text(&mut s, "SELECT id, n FROM narrow WHERE id IN (3, 1, 9) ORDER BY id"),
            vec![row(&["1", "10"]), row(&["3", "0"])]
        );
        assert_eq!(text(&mut s, "SELECT n FROM narrow WHERE id = 2"), vec![row(&["20"])]);
    }
}
