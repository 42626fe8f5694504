//! ALTER TABLE racing writers, under every protocol: transfers between accounts keep their sum
//! while another session adds, drops and widens columns of the same table; writers that began
//! before an ALTER abort with 40001 and retry; transactions on another table never abort for
//! it; readers see one consistent state; every row decodes afterwards.

use engram_engine::{Config, Protocol};
use engram_sql::{Outcome, Session, SqlDb, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const ACCOUNTS: i64 = 10;
const TRANSFERS: usize = 300;

/// Runs `sql` (a whole transaction) until it commits; how many times it was retried because
/// a table's definition changed.
fn commit_retrying(session: &mut Session, sql: &str) -> u64 {
    let mut definition_aborts = 0;
    loop {
        let results = session.execute(sql);
        match results.iter().find_map(|result| result.as_ref().err()) {
            None => return definition_aborts,
            Some(error) if error.is_retryable() => {
                if error.message.contains("definition") {
                    definition_aborts += 1;
                }
                session.execute_one("ROLLBACK").expect("rollback");
            }
            Some(error) => panic!("{sql}: {error:?}"),
        }
    }
}

fn int(outcome: Outcome) -> i64 {
    let Outcome::Rows { rows, .. } = outcome else { panic!("no rows") };
    match rows[0][0] {
        Value::Int(v) => v,
        ref other => panic!("{other:?}"),
    }
}

fn race(protocol: Protocol) {
    let db = SqlDb::open(Config { protocol, ..Config::default() }).expect("open");
    let mut session = db.session().expect("session");
    session.execute_one("CREATE TABLE acct (id INT PRIMARY KEY, bal INT, note TEXT)").unwrap();
    session.execute_one("CREATE TABLE other (id INT PRIMARY KEY, n BIGINT)").unwrap();
    session.execute_one("INSERT INTO other VALUES (1, 0)").unwrap();
    for id in 0..ACCOUNTS {
        session.execute_one(&format!("INSERT INTO acct VALUES ({id}, 100, 'n')")).unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    let definition_aborts = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|thread| {
            let (db, aborts) = (Arc::clone(&db), Arc::clone(&definition_aborts));
            std::thread::spawn(move || {
                let mut session = db.session().expect("session");
                for i in 0..TRANSFERS {
                    let from = (i as i64 * 3 + thread) % ACCOUNTS;
                    let to = (i as i64 * 7 + 1 + thread) % ACCOUNTS;
                    let sql = format!(
                        "BEGIN ISOLATION LEVEL SERIALIZABLE; \
                         UPDATE acct SET bal = bal - 1 WHERE id = {from}; \
                         UPDATE acct SET bal = bal + 1 WHERE id = {to}; COMMIT"
                    );
                    aborts.fetch_add(commit_retrying(&mut session, &sql), Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Transactions on another table: an ALTER of `acct` never aborts them.
    let bystander = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut session = db.session().expect("session");
            let (mut commits, mut aborts) = (0, 0);
            while !done.load(Ordering::Acquire) {
                aborts += commit_retrying(
                    &mut session,
                    "BEGIN; UPDATE other SET n = n + 1 WHERE id = 1; COMMIT",
                );
                commits += 1;
            }
            (commits, aborts)
        })
    };
    // Readers: the sum is the same whatever version of the table they read.
    let reader = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut session = db.session().expect("session");
            while !done.load(Ordering::Acquire) {
                if let Ok(outcome) =
                    session.execute_one("SELECT CAST(sum(bal) AS BIGINT) FROM acct")
                {
                    assert_eq!(int(outcome), 100 * ACCOUNTS, "{protocol:?}");
                }
            }
        })
    };
    let mut alter = db.session().expect("session");
    for round in 0..12 {
        alter
            .execute_one(&format!("ALTER TABLE acct ADD COLUMN c{round} INT DEFAULT {round}"))
            .unwrap_or_else(|e| panic!("{protocol:?}: {e:?}"));
        if round % 3 == 2 {
            alter.execute_one(&format!("ALTER TABLE acct DROP COLUMN c{}", round - 1)).unwrap();
        }
        if round == 5 {
            alter.execute_one("ALTER TABLE acct ALTER COLUMN bal TYPE BIGINT").unwrap();
        }
        if round == 8 {
            alter.execute_one("ALTER TABLE acct RENAME COLUMN note TO remark").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    for writer in writers {
        writer.join().expect("writer");
    }
    done.store(true, Ordering::Release);
    reader.join().expect("reader");
    let (commits, other_aborts) = bystander.join().expect("bystander");
    assert_eq!(other_aborts, 0, "{protocol:?}: transactions on another table aborted");
    assert_eq!(int(session.execute_one("SELECT n FROM other").unwrap()), commits);
    assert_eq!(
        int(session.execute_one("SELECT CAST(sum(bal) AS BIGINT) FROM acct").unwrap()),
        100 * ACCOUNTS
    );
    assert_eq!(int(session.execute_one("SELECT count(*) FROM acct").unwrap()), ACCOUNTS);
    let Outcome::Rows { rows, columns, .. } =
        session.execute_one("SELECT * FROM acct ORDER BY id").unwrap()
    else {
        panic!("no rows")
    };
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["id", "bal", "remark", "c0", "c2", "c3", "c5", "c6", "c8", "c9", "c11"],
        "{protocol:?}"
    );
    for row in rows {
        // Every row reads each added column's default, whichever version wrote it.
        let added: Vec<i64> = row[3..]
            .iter()
            .map(|value| match value {
                Value::Int(v) => *v,
                other => panic!("{protocol:?}: {other:?}"),
            })
            .collect();
        assert_eq!(added, [0, 2, 3, 5, 6, 8, 9, 11], "{protocol:?}");
    }
    let aborts = definition_aborts.load(Ordering::Relaxed);
    eprintln!(
        "{protocol:?}: {aborts} writer retries for a changed definition, {commits} bystander commits"
    );
}

#[test]
fn alter_table_races_writers_under_every_protocol() {
    for protocol in Protocol::ALL {
        race(protocol);
    }
}
