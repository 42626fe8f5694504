//! Entry points for the `sql_text` fuzz target in `fuzz/` (cargo-fuzz, nightly) and for the
//! tests that run the same code on the stable toolchain in CI (`tests/depth.rs`).
//!
//! [`SqlTextHarness`] is a session of an in-memory database with a small table. It runs a
//! fuzzer's input as a simple query runs it (parse, bind, plan, execute): every statement ends
//! in rows, a command tag or an error with a SQLSTATE; none panics or overflows the stack, and
//! the session still runs `SELECT 1` afterwards.
//!
//! Deep statements are longer than the inputs libFuzzer makes, so an input that starts with a
//! zero byte is a repetition ([`sql_text`]): two bytes of count (little-endian, times 16),
//! then `prefix|unit|suffix`, giving prefix + unit * count + suffix (`depth.rs`).

use crate::{Session, SqlDb};

/// The statement text an input stands for.
pub fn sql_text(data: &[u8]) -> String {
    match data {
        [0, low, high, rest @ ..] => {
            let count = usize::from(u16::from_le_bytes([*low, *high])) * 16;
            let rest = String::from_utf8_lossy(rest);
            let mut parts = rest.splitn(3, '|');
            let prefix = parts.next().unwrap_or("");
            let unit = parts.next().unwrap_or("");
            let suffix = parts.next().unwrap_or("");
            format!("{prefix}{}{suffix}", unit.repeat(count))
        }
        _ => String::from_utf8_lossy(data).into_owned(),
    }
}

/// A session over a fresh in-memory database with table `t` (three rows, an index).
#[allow(missing_debug_implementations)]
pub struct SqlTextHarness {
    session: Session,
}

impl SqlTextHarness {
    pub fn new() -> Self {
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
        SqlTextHarness { session }
    }

    /// Runs the statements `data` stands for and returns their outcomes (`None`, or the
    /// SQLSTATE of the error that ended the string); panics if one fails without a SQLSTATE
    /// or the session no longer answers.
    pub fn run(&mut self, data: &[u8]) -> Vec<Option<&'static str>> {
        let text = sql_text(data);
        let mut outcomes = Vec::new();
        for result in self.session.execute(&text) {
            match result {
                Ok(_) => outcomes.push(None),
                Err(error) => {
                    assert_eq!(error.code.len(), 5, "{error:?}");
                    outcomes.push(Some(error.code));
                }
            }
        }
        let _ = self.session.execute_one("ROLLBACK");
        assert!(self.session.execute_one("SELECT 1").is_ok());
        outcomes
    }
}

impl Default for SqlTextHarness {
    fn default() -> Self {
        SqlTextHarness::new()
    }
}
