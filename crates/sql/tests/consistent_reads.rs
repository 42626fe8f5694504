//! Every statement reads one state (docs/isolation.md, "One state per statement"): while
//! transfers move money between accounts, a `sum()` over them, by scan or by point reads, is
//! never off at any level, and at REPEATABLE READ and SERIALIZABLE two statements of one
//! transaction never show two states (the second fails with 40001 instead).

use engram_sql::{Session, SqlDb, SqlError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const ACCOUNTS: i64 = 32;
const BALANCE: i64 = 100;

/// A database of `ACCOUNTS` accounts; `epoch_ms`: the epoch interval (short ones make the
/// statement check's epoch shortcut, `cc/txn/statement.rs`, apply to rows written moments ago).
fn setup(epoch_ms: u64) -> Arc<SqlDb> {
    let config =
        engram_engine::Config { epoch_interval_ms: epoch_ms, ..engram_engine::Config::default() };
    let db: Arc<SqlDb> = SqlDb::open(config).unwrap();
    let mut session = db.session().unwrap();
    session.execute_one("CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL)").unwrap();
    for id in 0..ACCOUNTS {
        session.execute_one(&format!("INSERT INTO acct VALUES ({id}, {BALANCE})")).unwrap();
    }
    db
}

fn one_number(session: &mut Session, sql: &str) -> Result<i64, SqlError> {
    let rows = session.execute_one(sql)?.text_rows();
    Ok(rows[0][0].as_deref().unwrap().parse().unwrap())
}

/// Transfers between random pairs of accounts (each in its own transaction) until `stop`.
fn transfers(db: Arc<SqlDb>, stop: Arc<AtomicBool>, seed: u64) {
    let mut session = db.session().unwrap();
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    while !stop.load(Ordering::Relaxed) {
        let from = (next() % ACCOUNTS as u64) as i64;
        let to = (from + 1 + (next() % (ACCOUNTS as u64 - 1)) as i64) % ACCOUNTS;
        let amount = (next() % 10) as i64 + 1;
        let result = session.execute_one("BEGIN").and_then(|_| {
            session
                .execute_one(&format!("UPDATE acct SET bal = bal - {amount} WHERE id = {from}"))?;
            session
                .execute_one(&format!("UPDATE acct SET bal = bal + {amount} WHERE id = {to}"))?;
            session.execute_one("COMMIT")
        });
        if let Err(error) = result {
            assert_eq!(error.code, "40001", "{error:?}");
            let _ = session.execute_one("ROLLBACK");
        }
    }
}

/// Runs `reader` on two threads while two threads transfer; returns (statements, wrong).
fn under_transfers(reader: fn(&mut Session) -> (u64, u64), epoch_ms: u64) -> (u64, u64) {
    let db = setup(epoch_ms);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|seed| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            std::thread::spawn(move || transfers(db, stop, 0x9E37_79B9 + seed))
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || reader(&mut db.session().unwrap()))
        })
        .collect();
    let mut totals = (0, 0);
    for reader in readers {
        let (statements, wrong) = reader.join().unwrap();
        totals.0 += statements;
        totals.1 += wrong;
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    totals
}

const ROUNDS: u64 = 600;
const LEVELS: [&str; 3] = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"];

fn sums(session: &mut Session) -> (u64, u64) {
    let ids: Vec<String> = (0..ACCOUNTS).map(|id| id.to_string()).collect();
    let by_points = format!("SELECT sum(bal) FROM acct WHERE id IN ({})", ids.join(", "));
    let (mut statements, mut wrong) = (0, 0);
    for round in 0..ROUNDS {
        let level = LEVELS[(round % 3) as usize];
        for sql in ["SELECT sum(bal) FROM acct", by_points.as_str()] {
            session.execute_one(&format!("SET default_transaction_isolation = '{level}'")).unwrap();
            match one_number(session, sql) {
                Ok(total) => {
                    statements += 1;
                    wrong += u64::from(total != ACCOUNTS * BALANCE);
                }
                Err(error) => assert_eq!(error.code, "40001", "{level}: {error:?}"),
            }
        }
    }
    (statements, wrong)
}

#[test]
fn a_sum_under_transfers_is_never_off_at_any_level() {
    for epoch_ms in [40, 1] {
        let (statements, wrong) = under_transfers(sums, epoch_ms);
        assert!(statements > ROUNDS, "{statements} statements answered");
        assert_eq!(wrong, 0, "{wrong} of {statements} sums were off ({epoch_ms} ms epochs)");
    }
}

/// Statements of one transaction at REPEATABLE READ or SERIALIZABLE: a scan of half the
/// accounts, then point reads of the other half, always add up, or a statement fails with
/// 40001 (the transaction then rolls back; what it showed must still be one state).
fn pairs(session: &mut Session) -> (u64, u64) {
    let (mut statements, mut wrong) = (0, 0);
    for round in 0..ROUNDS {
        let level = LEVELS[1 + (round % 2) as usize];
        session.execute_one(&format!("BEGIN ISOLATION LEVEL {level}")).unwrap();
        let result = (|| {
            let half = ACCOUNTS / 2;
            let low = one_number(session, &format!("SELECT sum(bal) FROM acct WHERE id < {half}"))?;
            let high = (half..ACCOUNTS)
                .map(|id| one_number(session, &format!("SELECT bal FROM acct WHERE id = {id}")))
                .sum::<Result<i64, SqlError>>()?;
            Ok::<_, SqlError>(low + high)
        })();
        match result {
            Ok(total) => {
                statements += 1;
                wrong += u64::from(total != ACCOUNTS * BALANCE);
            }
            Err(error) => assert_eq!(error.code, "40001", "{level}: {error:?}"),
        }
        let _ = session.execute_one("ROLLBACK");
    }
    (statements, wrong)
}

#[test]
fn statements_of_a_repeatable_read_transaction_never_show_two_states() {
    for epoch_ms in [40, 1] {
        let (transactions, wrong) = under_transfers(pairs, epoch_ms);
        assert!(transactions > 0, "no transaction got through");
        assert_eq!(
            wrong, 0,
            "{wrong} of {transactions} transactions saw two states ({epoch_ms} ms epochs)"
        );
    }
}

/// PostgreSQL's REPEATABLE READ keeps an absent key absent: two transactions that both read
/// a key as missing and then insert it cannot both commit, and neither sees the other's row.
#[test]
fn repeatable_read_protects_a_missing_key() {
    let db = setup(40);
    let mut a = db.session().unwrap();
    let mut b = db.session().unwrap();
    a.execute_one("CREATE TABLE kv (k INT PRIMARY KEY, v INT)").unwrap();
    a.execute_one("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    b.execute_one("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert!(a.execute_one("SELECT v FROM kv WHERE k = 1").unwrap().text_rows().is_empty());
    assert!(b.execute_one("SELECT v FROM kv WHERE k = 1").unwrap().text_rows().is_empty());
    a.execute_one("INSERT INTO kv VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET v = kv.v + 1")
        .unwrap();
    a.execute_one("COMMIT").unwrap();
    // b's second read of the key must not show a's row where its first showed none.
    let outcome = b.execute_one("SELECT v FROM kv WHERE k = 1").and_then(|outcome| {
        assert!(outcome.text_rows().is_empty(), "a row appeared");
        b.execute_one("INSERT INTO kv VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET v = kv.v + 1")?;
        b.execute_one("COMMIT")
    });
    assert_eq!(outcome.unwrap_err().code, "40001");
    let _ = b.execute_one("ROLLBACK");
    assert_eq!(one_number(&mut a, "SELECT v FROM kv WHERE k = 1").unwrap(), 1);
}
