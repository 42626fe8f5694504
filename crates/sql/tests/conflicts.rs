//! Abort diagnostics through SQL (`conflicts.rs`): a 40001's DETAIL names the relation, the
//! key in PostgreSQL's `(col)=(value)` form and the commit that caused it, and the
//! `engram_stat_conflicts` and `engram_stat_conflict_keys` views count conflicts per
//! relation, index and reason and list the most contended keys.

use engram_sql::{Session, SqlDb, SqlError};
use std::sync::Arc;

fn db() -> Arc<SqlDb> {
    SqlDb::open(engram_engine::Config::default()).unwrap()
}

fn rows(session: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
    session.execute_one(sql).unwrap().text_rows()
}

/// Two serializable transactions read a row and write it; the second to commit fails.
fn lost_race(db: &Arc<SqlDb>, table: &str, key: &str, set: &str) -> SqlError {
    let (mut a, mut b) = (db.session().unwrap(), db.session().unwrap());
    for session in [&mut a, &mut b] {
        session.execute_one("BEGIN ISOLATION LEVEL SERIALIZABLE").unwrap();
        session.execute_one(&format!("SELECT * FROM {table} WHERE {key}")).unwrap();
    }
    a.execute_one(&format!("UPDATE {table} SET {set} WHERE {key}")).unwrap();
    b.execute_one(&format!("UPDATE {table} SET {set} WHERE {key}")).unwrap();
    a.execute_one("COMMIT").unwrap();
    let error = b.execute_one("COMMIT").unwrap_err();
    assert_eq!(error.code, "40001", "{error:?}");
    error
}

#[test]
fn a_serialization_failure_names_the_relation_the_key_and_the_commit() {
    let db = db();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE TABLE accounts (id INT PRIMARY KEY, bal INT)").unwrap();
    setup.execute_one("INSERT INTO accounts VALUES (1, 100), (2, 100)").unwrap();
    let error = lost_race(&db, "accounts", "id = 2", "bal = bal + 1");
    let detail = error.detail.unwrap_or_default();
    assert!(detail.contains("On relation \"accounts\", key (id)=(2)"), "{detail}");
    assert!(detail.contains("the change committed as TID "), "{detail}");
    assert!(detail.contains("read_validation"), "{detail}");
}

#[test]
fn composite_and_text_keys_are_written_as_postgresql_writes_them() {
    let db = db();
    let mut setup = db.session().unwrap();
    setup
        .execute_one("CREATE TABLE stock (w INT, item TEXT, qty INT, PRIMARY KEY (w, item))")
        .unwrap();
    setup.execute_one("INSERT INTO stock VALUES (3, 'bolt', 10), (3, 'nut', 10)").unwrap();
    let error = lost_race(&db, "stock", "w = 3 AND item = 'nut'", "qty = qty - 1");
    let detail = error.detail.unwrap_or_default();
    assert!(detail.contains("key (w, item)=(3, nut)"), "{detail}");
}

#[test]
fn a_statement_that_reads_a_changed_row_names_it_at_the_statement() {
    let db = db();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE TABLE t (id BIGINT PRIMARY KEY, v INT)").unwrap();
    setup.execute_one("INSERT INTO t VALUES (7, 0), (8, 0)").unwrap();
    let mut reader = db.session().unwrap();
    reader.execute_one("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    rows(&mut reader, "SELECT v FROM t WHERE id = 7");
    setup.execute_one("UPDATE t SET v = 1 WHERE id = 7").unwrap();
    let error = reader.execute_one("SELECT sum(v) FROM t").unwrap_err();
    assert_eq!(error.code, "40001");
    let detail = error.detail.unwrap_or_default();
    assert!(detail.contains("key (id)=(7)"), "{detail}");
    reader.execute_one("ROLLBACK").unwrap();
}

#[test]
fn the_views_count_conflicts_per_site_and_list_the_hottest_keys() {
    let db = db();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE TABLE hot (id INT PRIMARY KEY, n INT)").unwrap();
    setup.execute_one("INSERT INTO hot VALUES (1, 0), (2, 0)").unwrap();
    for _ in 0..3 {
        lost_race(&db, "hot", "id = 1", "n = n + 1");
    }
    lost_race(&db, "hot", "id = 2", "n = n + 1");
    let sites = rows(
        &mut setup,
        "SELECT relation, index, reason, conflicts, hottest_key, hottest_key_conflicts \
         FROM engram_stat_conflicts WHERE relation = 'hot'",
    );
    let s = |text: &str| Some(text.to_string());
    assert_eq!(
        sites,
        [[s("hot"), s("hot_pkey"), s("read_validation"), s("4"), s("(id)=(1)"), s("3")]]
    );
    let keys = rows(
        &mut setup,
        "SELECT key, conflicts FROM engram_stat_conflict_keys WHERE relation = 'hot' ORDER BY rank",
    );
    assert_eq!(keys, [[s("(id)=(1)"), s("3")], [s("(id)=(2)"), s("1")]]);
    // The views cannot be written.
    let error = setup.execute_one("DELETE FROM engram_stat_conflicts").unwrap_err();
    assert_eq!(error.code, "42501");
}
