//! The parser: statements PostgreSQL clients send, and errors for what Engram refuses.

use super::*;

#[test]
fn rejects_unsupported_with_0a000() {
    for sql in [
        "SELECT * FROM a UNION SELECT * FROM b",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "SELECT rank() OVER () FROM t",
        "CREATE TEMPORARY TABLE t (a int)",
        "SAVEPOINT s",
    ] {
        let error = parse(sql).unwrap_err();
        assert_eq!(error.code, "0A000", "{sql}: {error}");
        assert!(error.message.contains("not supported"), "{}", error.message);
    }
    assert_eq!(parse("SELEC 1").unwrap_err().code, "42601");
}

#[test]
fn utilities_and_multiple_statements() {
    let statements = parse("vacuum analyze pgbench_accounts; SELECT 1; ANALYZE").unwrap();
    assert_eq!(statements.len(), 3);
    assert!(matches!(statements[0], Statement::Utility { .. }));
    assert!(matches!(statements[1], Statement::Query(_)));
}
