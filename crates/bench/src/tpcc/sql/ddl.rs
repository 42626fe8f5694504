//! The schema changes a TPC-C run makes with `--ddl-every`: one ALTER TABLE each time, in
//! turn on CUSTOMER, STOCK, HISTORY, ORDERS and DISTRICT, adding a column with a default on
//! one visit to a table and dropping it on the next, so the tables stay as wide as they were.
//! Each is a constant-time schema version on Engram (docs/sql.md, "ALTER TABLE"); the five
//! transactions name their columns, so they run on whichever version is current.

use super::{SqlClient, SqlConn};

const TABLES: [&str; 5] = ["customer", "stock", "history", "orders", "district"];

/// ALTER TABLE number `round` of a run.
pub fn statement(round: u64) -> String {
    let table = TABLES[(round % TABLES.len() as u64) as usize];
    let visit = round / TABLES.len() as u64;
    if visit.is_multiple_of(2) {
        format!("ALTER TABLE {table} ADD COLUMN ddl_{visit} INT DEFAULT {visit}")
    } else {
        format!("ALTER TABLE {table} DROP COLUMN ddl_{}", visit - 1)
    }
}

impl<C: SqlClient> SqlConn<C> {
    /// Runs ALTER TABLE number `round` (autocommit).
    pub fn alter(&mut self, round: u64) -> Result<(), String> {
        let sql = statement(round);
        self.client.batch(&sql).map(|_| ()).map_err(|error| format!("{sql}: {error}"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_table_gets_a_column_and_loses_it_again() {
        assert_eq!(super::statement(0), "ALTER TABLE customer ADD COLUMN ddl_0 INT DEFAULT 0");
        assert_eq!(super::statement(4), "ALTER TABLE district ADD COLUMN ddl_0 INT DEFAULT 0");
        assert_eq!(super::statement(5), "ALTER TABLE customer DROP COLUMN ddl_0");
        assert_eq!(super::statement(10), "ALTER TABLE customer ADD COLUMN ddl_2 INT DEFAULT 2");
    }
}
