//! `SELECT ... FOR UPDATE` protects a read-modify-write at READ COMMITTED: the increments of
//! several threads, each computed in the client from the value read FOR UPDATE, are never
//! lost (a concurrent change aborts the later transaction with 40001, which is retried).

use engram_sql::{Session, SqlDb, Value};
use std::sync::Arc;

const THREADS: usize = 4;
const INCREMENTS: usize = 150;

fn increment(session: &mut Session) -> Result<(), engram_sql::SqlError> {
    session.execute_one("BEGIN")?;
    let read = session.execute_one("SELECT n FROM counter WHERE id = 1 FOR UPDATE")?;
    let n: i64 = read.text_rows()[0][0].as_deref().unwrap().parse().unwrap();
    let update = session.prepare("UPDATE counter SET n = $1 WHERE id = 1", &[])?;
    session.execute_prepared(&update, &[Value::Int(n + 1)], 0)?;
    session.execute_one("COMMIT").map(|_| ())
}

#[test]
fn increments_read_for_update_are_never_lost() {
    let db: Arc<SqlDb> = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut setup = db.session().unwrap();
    setup.execute_one("CREATE TABLE counter (id INT PRIMARY KEY, n BIGINT NOT NULL)").unwrap();
    setup.execute_one("INSERT INTO counter VALUES (1, 0)").unwrap();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut session = db.session().unwrap();
                let mut retries = 0;
                for _ in 0..INCREMENTS {
                    loop {
                        match increment(&mut session) {
                            Ok(()) => break,
                            Err(error) => {
                                assert_eq!(error.code, "40001", "{error:?}");
                                let _ = session.execute_one("ROLLBACK");
                                retries += 1;
                            }
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let retries: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let total = setup.execute_one("SELECT n FROM counter WHERE id = 1").unwrap().text_rows();
    assert_eq!(
        total[0][0].as_deref(),
        Some((THREADS * INCREMENTS).to_string().as_str()),
        "increments lost ({retries} retries)"
    );
}
