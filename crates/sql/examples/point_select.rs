//! CPU per execution of a prepared point SELECT by primary key, against the same lookup
//! through the engine's API, on one thread (so wall time is CPU time; the process's user +
//! system time is printed too).
//!
//! `cargo run --release -p engram-sql --example point_select [rows] [executions] [added]
//! [star]`: with `added` = n > 0, n `ALTER TABLE ... ADD COLUMN ... DEFAULT` run after the
//! load, so every row read is of an older schema version; with `added` = `nc`, the same n
//! columns are in the CREATE TABLE instead (the same table without DDL). With `star`, the
//! select reads every column (`SELECT *`) instead of one.

use engram_engine::Isolation;
use engram_sql::{SqlDb, Type, Value};
use std::time::Instant;

/// User plus system CPU seconds of this process.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    // SAFETY: zeroed, then filled by getrusage.
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: i64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let executions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let added = args.next().unwrap_or_default();
    let created = added.ends_with('c');
    let added: usize = added.trim_end_matches('c').parse().unwrap_or(0);
    let extra: String = (0..added).map(|c| format!(", extra{c} INT DEFAULT {c}")).collect();
    let star = args.next().is_some_and(|a| a == "star");
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut session = db.session().unwrap();
    let columns = if created { extra.as_str() } else { "" };
    session.execute_one(&format!("CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL{columns})")).unwrap();
    let insert =
        session.prepare("INSERT INTO sbtest (id, k, c, pad) VALUES ($1, $2, $3, $4)", &[]).unwrap();
    session.execute_one("BEGIN").unwrap();
    for id in 0..rows {
        let params = [
            Value::Int(id),
            Value::Int(id * 7 % rows),
            Value::Text(format!("{id:0>110}").into()),
            Value::Text("pad".into()),
        ];
        session.execute_prepared(&insert, &params, 0).unwrap();
    }
    session.execute_one("COMMIT").unwrap();
    for column in (0..added).filter(|_| !created) {
        session
            .execute_one(&format!(
                "ALTER TABLE sbtest ADD COLUMN extra{column} INT DEFAULT {column}"
            ))
            .unwrap();
    }
    let query = if star {
        "SELECT * FROM sbtest WHERE id = $1"
    } else {
        "SELECT c FROM sbtest WHERE id = $1"
    };
    let select = session.prepare(query, &[Type::Int4]).unwrap();
    let mut random = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        (random % rows as u64) as i64
    };
    let mut found = 0usize;
    let (cpu, start) = (cpu_seconds(), Instant::now());
    for _ in 0..executions {
        let outcome = session.execute_prepared(&select, &[Value::Int(next())], 0).unwrap();
        found += outcome.rows().len();
    }
    let sql_wall = start.elapsed().as_secs_f64();
    let sql_cpu = cpu_seconds() - cpu;
    assert_eq!(found, executions);
    // The same lookups through the engine (a stored procedure reading the row).
    let schema = db.table_schema("sbtest").unwrap();
    let table = db.database().table(&schema.engine_name).unwrap();
    let mut worker = db.database().worker().unwrap();
    let (cpu, start) = (cpu_seconds(), Instant::now());
    let mut bytes = 0usize;
    for _ in 0..executions {
        // The key as the SQL layer encodes it (`codec::encode_key`, the table's key format).
        let mut key = Vec::with_capacity(8);
        engram_sql::codec::encode_key(schema.key_format, Type::Int4, &Value::Int(next()), &mut key);
        bytes += worker
            .transaction(Isolation::ReadCommitted, |txn| {
                Ok(txn.get(&table, &key)?.map_or(0, <[u8]>::len))
            })
            .unwrap();
    }
    let raw_wall = start.elapsed().as_secs_f64();
    let raw_cpu = cpu_seconds() - cpu;
    assert!(bytes > 0);
    println!(
        "rows {rows}, executions {executions}, {added} more columns ({}), select {query}",
        if created { "in CREATE TABLE" } else { "by ALTER TABLE" }
    );
    println!(
        "prepared SQL point select: {:.3} us CPU ({:.3} us wall) per execution",
        sql_cpu * 1e6 / executions as f64,
        sql_wall * 1e6 / executions as f64
    );
    println!(
        "engine get in a transaction: {:.3} us CPU ({:.3} us wall) per execution",
        raw_cpu * 1e6 / executions as f64,
        raw_wall * 1e6 / executions as f64
    );
    println!("SQL / engine CPU: {:.2}", sql_cpu / raw_cpu);
}
