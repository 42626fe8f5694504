//! COPY FROM STDIN through a session: chunked data, atomicity, errors with SQLSTATEs.

use engram_sql::ast::Statement;
use engram_sql::{Session, SqlDb, TransactionStatus};

fn session() -> Session {
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut session = db.session().unwrap();
    session
        .execute_one("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), amount NUMERIC(8,2))")
        .unwrap();
    session
}

fn copy_statement(session: &mut Session, sql: &str) -> engram_sql::ast::CopyFrom {
    match session.parse(sql).unwrap().remove(0) {
        Statement::Copy(copy) => *copy,
        other => panic!("not a COPY: {other:?}"),
    }
}

fn count(session: &mut Session) -> String {
    session.execute_one("SELECT count(*) FROM t").unwrap().text_rows()[0][0].clone().unwrap()
}

#[test]
fn chunks_split_anywhere_insert_every_row_once() {
    let mut session = session();
    let data = b"1\tone\t1.50\n2\t\\N\t\\N\n3\tthree\t-7\n";
    for split in 0..data.len() {
        session.execute_one("TRUNCATE t").unwrap();
        let copy = copy_statement(&mut session, "COPY t FROM STDIN");
        let mut copy_in = session.copy_in(&copy).unwrap();
        copy_in.feed(&mut session, &data[..split]).unwrap();
        copy_in.feed(&mut session, &data[split..]).unwrap();
        assert_eq!(copy_in.finish(&mut session).unwrap(), "COPY 3");
        assert_eq!(count(&mut session), "3");
    }
    let rows = session.execute_one("SELECT id, name, amount FROM t ORDER BY id").unwrap();
    assert_eq!(
        rows.text_rows(),
        vec![
            vec![Some("1".into()), Some("one".into()), Some("1.50".into())],
            vec![Some("2".into()), None, None],
            vec![Some("3".into()), Some("three".into()), Some("-7.00".into())],
        ]
    );
}

#[test]
fn csv_with_header_and_column_list() {
    let mut session = session();
    let copy =
        copy_statement(&mut session, "COPY t (name, id) FROM STDIN WITH (FORMAT csv, HEADER)");
    let mut copy_in = session.copy_in(&copy).unwrap();
    copy_in.feed(&mut session, b"name,id\n\"a,b\",1\n,2\n").unwrap();
    assert_eq!(copy_in.finish(&mut session).unwrap(), "COPY 2");
    let rows = session.execute_one("SELECT name FROM t ORDER BY id").unwrap().text_rows();
    assert_eq!(rows, vec![vec![Some("a,b".into())], vec![None]]);
}

#[test]
fn a_bad_record_rolls_back_the_whole_copy() {
    let mut session = session();
    let copy = copy_statement(&mut session, "COPY t FROM STDIN");
    let mut copy_in = session.copy_in(&copy).unwrap();
    copy_in.feed(&mut session, b"1\ta\t1\n2\tb\t2\n").unwrap();
    let error = copy_in.feed(&mut session, b"x\tc\t3\n").unwrap_err();
    assert_eq!(error.code, "22P02");
    assert!(error.message.contains("line 3"), "{}", error.message);
    assert_eq!(copy_in.finish(&mut session).unwrap_err().code, "57014");
    assert_eq!(count(&mut session), "0");
    // Duplicate keys, too long values and missing columns get PostgreSQL's codes.
    for (data, code) in [
        (&b"1\ta\t1\n1\tb\t2\n"[..], "23505"),
        (b"1\tmuch too long a name\t1\n", "22001"),
        (b"1\ta\n", "22P04"),
    ] {
        let mut copy_in = session.copy_in(&copy).unwrap();
        let error = copy_in
            .feed(&mut session, data)
            .and_then(|()| copy_in.finish(&mut session).map(|_| ()))
            .unwrap_err();
        assert_eq!(error.code, code, "{error:?}");
        assert_eq!(count(&mut session), "0");
    }
}

#[test]
fn inside_a_block_copy_belongs_to_the_transaction() {
    let mut session = session();
    session.execute_one("BEGIN").unwrap();
    let copy = copy_statement(&mut session, "COPY t FROM STDIN");
    let mut copy_in = session.copy_in(&copy).unwrap();
    copy_in.feed(&mut session, b"1\ta\t1\n").unwrap();
    copy_in.finish(&mut session).unwrap();
    assert_eq!(session.status(), TransactionStatus::InBlock);
    session.execute_one("ROLLBACK").unwrap();
    assert_eq!(count(&mut session), "0");
    // A failed COPY fails the block.
    session.execute_one("BEGIN").unwrap();
    let mut copy_in = session.copy_in(&copy).unwrap();
    let abandoned = copy_in.feed(&mut session, b"1\ta\n").unwrap_err();
    assert_eq!(abandoned.code, "22P04");
    assert_eq!(session.status(), TransactionStatus::Failed);
    assert_eq!(session.execute_one("SELECT 1").unwrap_err().code, "25P02");
    session.execute_one("ROLLBACK").unwrap();
    // COPY of an unknown table, and COPY through execute (no data channel).
    let unknown = copy_statement(&mut session, "COPY nope FROM STDIN");
    assert_eq!(session.copy_in(&unknown).unwrap_err().code, "42P01");
    assert_eq!(session.execute_one("COPY t FROM STDIN").unwrap_err().code, "0A000");
}

#[test]
fn statement_timeout_stops_a_long_scan() {
    let mut session = session();
    let copy = copy_statement(&mut session, "COPY t (id) FROM STDIN");
    let mut copy_in = session.copy_in(&copy).unwrap();
    let data: String = (0..200_000).map(|i| format!("{i}\n")).collect();
    copy_in.feed(&mut session, data.as_bytes()).unwrap();
    copy_in.finish(&mut session).unwrap();
    session.execute_one("SET statement_timeout = '1ms'").unwrap();
    let slow = "SELECT count(*) FROM t a, t b WHERE a.id = b.id AND a.name IS NULL";
    let error = session.execute_one(slow).unwrap_err();
    assert_eq!(error.code, "57014", "{error:?}");
    assert!(error.message.contains("statement timeout"));
    // The session goes on; a bad value is refused; 0 turns the limit off.
    assert_eq!(session.execute_one("SET statement_timeout = 'soon'").unwrap_err().code, "22023");
    session.execute_one("SET statement_timeout = 0").unwrap();
    assert_eq!(count(&mut session), "200000");
    // A raised cancel flag stops the next scan the same way.
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    session.set_cancel_flag(flag);
    let error = session.execute_one(slow).unwrap_err();
    assert!(error.message.contains("user request"), "{error:?}");
    // The rows of many short scans count together: a hundred inner scans of a hundred rows
    // each, none of which alone reaches a check, are stopped all the same.
    let short_scans =
        "SELECT count(*) FROM t a, t b WHERE a.id < 100 AND b.id < 100 AND a.name IS NULL";
    let error = session.execute_one(short_scans).unwrap_err();
    assert!(error.message.contains("user request"), "{error:?}");
}

/// `real` values arrive as text and are held as the double of the `real`: such a value
/// conforms to its column (a debug build asserts it at the insert).
#[test]
fn real_columns_take_copied_values() {
    let mut session = session();
    session.execute_one("CREATE TABLE r (a SMALLINT, b REAL)").unwrap();
    let copy = copy_statement(&mut session, "COPY r FROM STDIN");
    let mut copy_in = session.copy_in(&copy).unwrap();
    copy_in.feed(&mut session, b"56\t7.8\n100\t99.097\n0\t0.09561\n").unwrap();
    assert_eq!(copy_in.finish(&mut session).unwrap(), "COPY 3");
    let rows = session.execute_one("SELECT b FROM r ORDER BY a").unwrap().text_rows();
    assert_eq!(
        rows,
        vec![vec![Some("0.09561".into())], vec![Some("7.8".into())], vec![Some("99.097".into())]]
    );
}
