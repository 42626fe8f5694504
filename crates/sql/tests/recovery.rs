//! The SQL catalog, sequences and indexes come back after a restart from the data directory,
//! and DDL that rolled back leaves nothing behind.

use engram_sql::{Outcome, SqlDb};

fn config(dir: &std::path::Path) -> engram_engine::Config {
    engram_engine::Config { data_dir: Some(dir.to_path_buf()), ..Default::default() }
}

fn texts(outcome: Outcome) -> Vec<String> {
    assert!(matches!(outcome, Outcome::Rows { .. }), "no rows: {outcome:?}");
    let out: Vec<String> = outcome
        .text_rows()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    out
}

#[test]
fn catalog_and_data_survive_restart() {
    let dir = std::env::temp_dir().join(format!("engram-sql-recovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let db = SqlDb::open(config(&dir)).unwrap();
        let mut session = db.session().unwrap();
        session.execute_one("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, name VARCHAR(20) NOT NULL, price NUMERIC(6,2))").unwrap();
        session.execute_one("CREATE INDEX t_name ON t (name)").unwrap();
        session
            .execute_one("INSERT INTO t (name, price) VALUES ('b', 1.25), ('a', 2.50), ('c', NULL)")
            .unwrap();
        session.execute_one("BEGIN").unwrap();
        session.execute_one("CREATE TABLE gone (x INT)").unwrap();
        session.execute_one("INSERT INTO t (name) VALUES ('rolled back')").unwrap();
        session.execute_one("ROLLBACK").unwrap();
        session.execute_one("CREATE TABLE h (v TEXT)").unwrap();
        session.execute_one("INSERT INTO h VALUES ('x'), ('y')").unwrap();
    }
    let db = SqlDb::open(config(&dir)).unwrap();
    assert_eq!(db.table_names(), vec!["h".to_string(), "t".to_string()]);
    let mut session = db.session().unwrap();
    let rows = texts(
        session.execute_one("SELECT name, price FROM t WHERE name >= 'a' ORDER BY name").unwrap(),
    );
    assert_eq!(rows, vec!["a|2.50", "b|1.25", "c|NULL"]);
    let plan = texts(session.execute_one("EXPLAIN SELECT id FROM t WHERE name = 'a'").unwrap());
    assert!(plan[0].contains("t_name"), "{plan:?}");
    // The sequence continues past every value handed out before the restart.
    let ids = texts(session.execute_one("INSERT INTO t (name) VALUES ('d') RETURNING id").unwrap());
    assert!(ids[0].parse::<i64>().unwrap() > 4, "{ids:?}");
    // A table without a primary key keeps numbering its hidden row ids.
    session.execute_one("INSERT INTO h VALUES ('z')").unwrap();
    assert_eq!(texts(session.execute_one("SELECT count(*) FROM h").unwrap()), vec!["3"]);
    drop(session);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
