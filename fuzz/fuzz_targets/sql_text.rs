//! SQL text through a session of an in-memory database, as a simple query runs it: parse,
//! bind, plan, execute. Every statement ends in rows, a command tag or an error with a
//! SQLSTATE; none panics, and the session still runs `SELECT 1` afterwards.
#![no_main]

use engram_sql::{Session, SqlDb};
use libfuzzer_sys::fuzz_target;
use std::sync::{Mutex, OnceLock};

static SESSION: OnceLock<Mutex<Session>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let session = SESSION.get_or_init(|| {
        let config = engram_engine::Config {
            durability: engram_engine::Durability::Off,
            ..engram_engine::Config::default()
        };
        let db = SqlDb::open(config).expect("an in-memory database");
        let mut session = db.session().expect("a session");
        for setup in [
            "CREATE TABLE t (a INT PRIMARY KEY, b TEXT, c NUMERIC(10,2), d BIGINT)",
            "CREATE INDEX t_b ON t (b)",
            "INSERT INTO t VALUES (1, 'x', 1.5, 10), (2, 'y', NULL, 20), (3, NULL, -2, 30)",
        ] {
            session.execute_one(setup).expect("setup");
        }
        Mutex::new(session)
    });
    let mut session = session.lock().unwrap_or_else(|poison| poison.into_inner());
    let text = String::from_utf8_lossy(data);
    for result in session.execute(&text) {
        if let Err(error) = result {
            assert_eq!(error.code.len(), 5, "{error:?}");
        }
    }
    let _ = session.execute_one("ROLLBACK");
    assert!(session.execute_one("SELECT 1").is_ok());
});
