//! Temporary tables: each session's own, shadowing a permanent table of the same name, gone
//! with their session (dropped by the next DDL statement) and after a restart.

use engram_sql::{Outcome, SqlDb};

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

#[test]
fn sessions_keep_their_own_temporary_tables() {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut a = db.session().unwrap();
    let mut b = db.session().unwrap();
    a.execute_one("CREATE TABLE t (v text)").unwrap();
    a.execute_one("INSERT INTO t VALUES ('permanent')").unwrap();
    a.execute_one("CREATE TEMP TABLE t (v text, n int)").unwrap();
    b.execute_one("CREATE TEMPORARY TABLE t (v text)").unwrap();
    a.execute_one("INSERT INTO t VALUES ('a', 1)").unwrap();
    b.execute_one("INSERT INTO t VALUES ('b')").unwrap();
    assert_eq!(texts(a.execute_one("SELECT v, n FROM t").unwrap()), vec!["a|1"]);
    assert_eq!(texts(b.execute_one("SELECT t.v FROM t").unwrap()), vec!["b"]);
    let mut c = db.session().unwrap();
    assert_eq!(texts(c.execute_one("SELECT v FROM t").unwrap()), vec!["permanent"]);
    // A rolled-back CREATE TEMP TABLE leaves nothing behind.
    c.execute_one("BEGIN").unwrap();
    c.execute_one("CREATE TEMP TABLE only_c (x int)").unwrap();
    c.execute_one("ROLLBACK").unwrap();
    assert_eq!(c.execute_one("SELECT * FROM only_c").unwrap_err().code, "42P01");
    assert_eq!(a.execute_one("SELECT * FROM only_c").unwrap_err().code, "42P01");
    // Dropping the temporary table uncovers the permanent one.
    a.execute_one("DROP TABLE t").unwrap();
    assert_eq!(texts(a.execute_one("SELECT v FROM t").unwrap()), vec!["permanent"]);
    // A session's end leaves its tables to the next DDL statement.
    let before = db.tables().len();
    drop(b);
    assert_eq!(db.tables().len(), before, "dropped only by DDL");
    c.execute_one("CREATE TABLE other (x int)").unwrap();
    let names: Vec<String> = db.tables().iter().map(|t| t.schema.name.clone()).collect();
    assert!(!names.iter().any(|n| n.starts_with("_engram_temp")), "{names:?}");
    assert_eq!(
        texts(
            c.execute_one("SELECT count(*) FROM pg_class WHERE relname LIKE '_engram%'").unwrap()
        ),
        vec!["0"]
    );
}

#[test]
fn temporary_tables_do_not_survive_a_restart() {
    let dir = std::env::temp_dir().join(format!("engram-sql-temp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = || engram_engine::Config { data_dir: Some(dir.clone()), ..Default::default() };
    {
        let db = SqlDb::open(config()).unwrap();
        let mut session = db.session().unwrap();
        session.execute_one("CREATE TABLE kept (id serial PRIMARY KEY)").unwrap();
        session.execute_one("CREATE TEMP TABLE scratch (id serial PRIMARY KEY, v text)").unwrap();
        session.execute_one("INSERT INTO scratch (v) VALUES ('x')").unwrap();
        // The session ends and no DDL statement runs after it to drop its table: the catalog
        // still holds it when the database closes, as after a crash.
        drop(session);
        assert_eq!(db.tables().len(), 2);
    }
    let db = SqlDb::open(config()).unwrap();
    let names: Vec<String> = db.tables().iter().map(|t| t.schema.name.clone()).collect();
    assert_eq!(names, vec!["kept"]);
    let mut session = db.session().unwrap();
    assert_eq!(session.execute_one("SELECT * FROM scratch").unwrap_err().code, "42P01");
    // The name is free for the session's own temporary table.
    session.execute_one("CREATE TEMP TABLE scratch (v text)").unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A temporary table renamed stays its session's; no statement reaches another session's
/// table by its catalog name; DDL that drops ended sessions' tables and then rolls back leaves
/// them to the next.
#[test]
fn temporary_tables_stay_private_through_renames_and_rollbacks() {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut a = db.session().unwrap();
    let mut b = db.session().unwrap();
    a.execute_one("CREATE TEMP TABLE t (x int)").unwrap();
    a.execute_one("ALTER TABLE t RENAME TO u").unwrap();
    a.execute_one("INSERT INTO u VALUES (1)").unwrap();
    assert_eq!(b.execute_one("SELECT * FROM u").unwrap_err().code, "42P01");
    let internal: Vec<String> = db
        .tables()
        .iter()
        .map(|t| t.schema.name.clone())
        .filter(|n| n.starts_with("_engram_temp"))
        .collect();
    assert_eq!(internal.len(), 1, "{internal:?}");
    let name = &internal[0];
    for statement in [format!("SELECT * FROM \"{name}\""), format!("DROP TABLE \"{name}\"")] {
        assert_eq!(b.execute_one(&statement).unwrap_err().code, "42P01", "{statement}");
    }
    drop(a);
    // The DDL that would drop the ended session's table rolls back: the table waits for the
    // next one.
    b.execute_one("BEGIN").unwrap();
    b.execute_one("CREATE TABLE other (x int)").unwrap();
    b.execute_one("ROLLBACK").unwrap();
    assert!(db.tables().iter().any(|t| &t.schema.name == name));
    b.execute_one("CREATE TABLE other (x int)").unwrap();
    assert!(!db.tables().iter().any(|t| &t.schema.name == name));
}
