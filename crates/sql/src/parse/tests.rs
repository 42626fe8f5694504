//! The parser: statements PostgreSQL clients send, and errors for what Engram refuses.

use super::*;

#[test]
fn rejects_unsupported_with_0a000() {
    for sql in [
        "SELECT * FROM (a JOIN b ON true)",
        "CREATE TEMPORARY TABLE t (a int) ON COMMIT DROP",
        "COMMIT AND CHAIN",
    ] {
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

/// CREATE and ALTER SEQUENCE take their options in any order (sqlparser takes one), and an
/// identity column's options are put in the order sqlparser reads.
#[test]
fn sequence_options_in_any_order() {
    let statements =
        parse("-- a comment\nCREATE SEQUENCE IF NOT EXISTS s START WITH 10 MAXVALUE 99 INCREMENT BY -2 CYCLE OWNED BY t.c").unwrap();
    let Statement::CreateSequence(create) = &statements[0] else { panic!("{statements:?}") };
    assert!(create.if_not_exists);
    assert_eq!(
        create.options,
        vec![
            SequenceOption::Start(10),
            SequenceOption::Max(Some(99)),
            SequenceOption::Increment(-2),
            SequenceOption::Cycle(true)
        ]
    );
    assert_eq!(create.owned_by, Some(("t".into(), "c".into())));
    let statements = parse("ALTER SEQUENCE public.s RESTART NO MINVALUE").unwrap();
    assert!(matches!(
        &statements[0],
        Statement::AlterSequence { name, options, .. }
            if name == "s" && *options == vec![SequenceOption::Restart(None), SequenceOption::Min(None)]
    ));
    let statements =
        parse("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 2))")
            .unwrap();
    let Statement::CreateTable(table) = &statements[0] else { panic!("{statements:?}") };
    let (_, options) = table.columns[0].identity.as_ref().expect("an identity column");
    assert!(
        options.contains(&SequenceOption::Start(5))
            && options.contains(&SequenceOption::Increment(2))
    );
    assert_eq!(parse("CREATE SEQUENCE s INCREMENT BY").unwrap_err().code, "42601");
}
