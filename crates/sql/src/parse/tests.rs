//! The parser: statements PostgreSQL clients send, and errors for what Engram refuses.

use super::*;

#[test]
fn rejects_unsupported_with_0a000() {
    for sql in
        ["SELECT * FROM a, LATERAL (SELECT 1) s", "CREATE TEMPORARY TABLE t (a int)", "SAVEPOINT s"]
    {
        let error = parse(sql).unwrap_err();
        assert_eq!(error.code, "0A000", "{sql}: {error}");
        assert!(error.message.contains("not supported"), "{}", error.message);
    }
    assert_eq!(parse("SELEC 1").unwrap_err().code, "42601");
}

#[test]
fn set_operations_nest_and_keep_their_order_and_limit() {
    let statements =
        parse("SELECT 1 UNION ALL (SELECT 2 EXCEPT SELECT 3) ORDER BY 1 LIMIT 2").unwrap();
    let Statement::Query(query) = &statements[0] else { panic!("a query") };
    assert_eq!(query.order_by.len(), 1);
    assert!(query.limit.is_some());
    let QueryBody::SetOp { op: SetOp::Union, all: true, right, .. } = &query.body else {
        panic!("UNION ALL: {:?}", query.body)
    };
    assert!(matches!(right.body, QueryBody::SetOp { op: SetOp::Except, all: false, .. }));
}

#[test]
fn utilities_and_multiple_statements() {
    let statements = parse("vacuum analyze pgbench_accounts; SELECT 1; ANALYZE").unwrap();
    assert_eq!(statements.len(), 3);
    assert!(matches!(statements[0], Statement::Utility { .. }));
    assert!(matches!(statements[1], Statement::Query(_)));
}
