//! TPC-C over the PostgreSQL wire protocol (`--db postgres://...`): the SQL adapter's
//! statements and transaction logic (`super::sql`), sent by tokio-postgres to any
//! PostgreSQL-compatible server, so that `engram serve` and PostgreSQL are measured by one
//! driver with the same SQL.
//!
//! Each driver thread owns a client on its own single-threaded runtime and waits for each
//! reply (a client's round trip per statement, as an application has). Parameters go in text
//! format, results come back in binary; the load pipelines each batch of INSERTs. A server
//! that understands `BEGIN ISOLATION LEVEL SNAPSHOT` (Engram) runs StockScan and snapshot
//! read-only transactions as snapshots; elsewhere they run at REPEATABLE READ (PostgreSQL's
//! snapshot isolation).

use super::engram::ReadOnlyLevels;
use super::spec::{
    Constants, DeliveryInput, NewOrderInput, OrderStatusInput, Output, PaymentInput, Scale,
    StockLevelInput,
};
use super::sql::{Loader, SCHEMA, SqlClient, SqlConn, sql_conn_transactions};
use super::{DeliveryHints, Facts, TpccDb, load};
use crate::db::{Db, Outcome};
use engram_engine::Isolation;
use engram_sql::types::numeric_from_binary;
use engram_sql::{SqlError, Value};
use std::error::Error;
use std::sync::Arc;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{NoTls, Statement};

/// Microseconds between the Unix epoch and PostgreSQL's.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// A connection to a server, with the runtime its replies are awaited on.
pub struct WireClient {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    /// The server takes `ISOLATION LEVEL SNAPSHOT` (Engram).
    snapshots: bool,
}

impl std::fmt::Debug for WireClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireClient").field("snapshots", &self.snapshots).finish()
    }
}

fn sql_error(error: tokio_postgres::Error) -> SqlError {
    let code = match error.code().map(|code| code.code()) {
        Some("40001" | "40P01") => "40001",
        Some("23505") => "23505",
        Some(_) => "XX000",
        None => "08006",
    };
    SqlError::new(code, error.to_string())
}

impl WireClient {
    pub fn connect(url: &str) -> Result<WireClient, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| error.to_string())?;
        let (client, connection) = runtime
            .block_on(tokio_postgres::connect(url, NoTls))
            .map_err(|error| format!("cannot connect to {url}: {error}"))?;
        runtime.spawn(connection);
        let snapshots = runtime
            .block_on(client.batch_execute("BEGIN ISOLATION LEVEL SNAPSHOT READ ONLY; ROLLBACK"))
            .is_ok();
        Ok(WireClient { runtime, client, snapshots })
    }

    pub fn snapshots(&self) -> bool {
        self.snapshots
    }
}

/// A parameter in text format (the server converts it to the parameter's type).
#[derive(Debug)]
struct Param<'a>(&'a Value);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        if self.0.is_null() {
            return Ok(IsNull::Yes);
        }
        let engram_type = match ty.oid() {
            1042 => engram_sql::Type::Text,
            oid => engram_sql::Type::from_oid(oid).unwrap_or(engram_sql::Type::Text),
        };
        let mut text = String::new();
        self.0.write_text(engram_type, &mut text);
        out.extend_from_slice(text.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// A result value decoded from the binary format.
struct Out(Value);

impl<'a> tokio_postgres::types::FromSql<'a> for Out {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Out, Box<dyn Error + Sync + Send>> {
        let fixed = |n: usize| -> Result<&[u8], Box<dyn Error + Sync + Send>> {
            if raw.len() == n { Ok(raw) } else { Err(format!("{ty}: {} bytes", raw.len()).into()) }
        };
        Ok(Out(match *ty {
            Type::INT2 => Value::Int(i64::from(i16::from_be_bytes(fixed(2)?.try_into()?))),
            Type::INT4 => Value::Int(i64::from(i32::from_be_bytes(fixed(4)?.try_into()?))),
            Type::INT8 => Value::Int(i64::from_be_bytes(fixed(8)?.try_into()?)),
            Type::FLOAT8 => Value::Float(f64::from_be_bytes(fixed(8)?.try_into()?)),
            Type::BOOL => Value::Bool(fixed(1)?[0] != 0),
            Type::NUMERIC => {
                Value::Numeric(numeric_from_binary(raw).ok_or("a NUMERIC out of range")?)
            }
            Type::TIMESTAMP => {
                Value::Timestamp(i64::from_be_bytes(fixed(8)?.try_into()?) + PG_EPOCH_MICROS)
            }
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                Value::Text(std::str::from_utf8(raw)?.into())
            }
            ref other => return Err(format!("unexpected result type {other}").into()),
        }))
    }

    fn from_sql_null(_: &Type) -> Result<Out, Box<dyn Error + Sync + Send>> {
        Ok(Out(Value::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn values(rows: Vec<tokio_postgres::Row>) -> Result<Vec<Vec<Value>>, SqlError> {
    rows.iter()
        .map(|row| {
            (0..row.len())
                .map(|i| {
                    row.try_get::<_, Out>(i)
                        .map(|out| out.0)
                        .map_err(|error| SqlError::new("XX000", error.to_string()))
                })
                .collect()
        })
        .collect()
}

impl SqlClient for WireClient {
    type Statement = Statement;

    fn prepare(&mut self, sql: &str) -> Result<Statement, SqlError> {
        self.runtime.block_on(self.client.prepare(sql)).map_err(sql_error)
    }

    fn run(
        &mut self,
        statement: &Statement,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        let params: Vec<Param<'_>> = params.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let rows = self.runtime.block_on(self.client.query(statement, &refs)).map_err(sql_error)?;
        values(rows)
    }

    fn run_many(&mut self, executions: Vec<(&Statement, Vec<Value>)>) -> Result<(), SqlError> {
        let params: Vec<Vec<Param<'_>>> =
            executions.iter().map(|(_, row)| row.iter().map(Param).collect()).collect();
        let refs: Vec<Vec<&(dyn ToSql + Sync)>> = params
            .iter()
            .map(|row| row.iter().map(|p| p as &(dyn ToSql + Sync)).collect())
            .collect();
        let client = &self.client;
        // Polled together, the queries are pipelined on the connection.
        let queries = executions
            .iter()
            .zip(&refs)
            .map(|((statement, _), params)| client.execute(*statement, params.as_slice()));
        self.runtime.block_on(futures::future::try_join_all(queries)).map_err(sql_error)?;
        Ok(())
    }

    fn batch(&mut self, sql: &str) -> Result<Vec<Vec<Vec<Value>>>, SqlError> {
        // Each statement on its own, so that results come back typed (no literal here holds
        // a semicolon).
        let mut results = Vec::new();
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let rows =
                self.runtime.block_on(self.client.query(statement, &[])).map_err(sql_error)?;
            results.push(values(rows)?);
        }
        Ok(results)
    }

    fn isolation_sql(&self, level: Isolation) -> &'static str {
        match level {
            Isolation::Snapshot if !self.snapshots => "repeatable read",
            other => engram_sql::isolation_sql(other),
        }
    }
}

/// The TPC-C database behind a PostgreSQL connection string.
#[derive(Debug)]
pub struct WireTpcc {
    url: String,
    scale: Scale,
    read_only: ReadOnlyLevels,
    snapshots: bool,
    delivered: Arc<DeliveryHints>,
}

impl WireTpcc {
    /// Checks that the server answers.
    pub fn new(url: &str, read_only: ReadOnlyLevels) -> Result<WireTpcc, String> {
        let client = WireClient::connect(url)?;
        Ok(WireTpcc {
            url: url.to_string(),
            scale: Scale::standard(1),
            read_only,
            snapshots: client.snapshots,
            delivered: Arc::default(),
        })
    }
}

impl Db for WireTpcc {
    type Conn = SqlConn<WireClient>;

    fn name(&self) -> String {
        let server = if self.snapshots { "engram" } else { "postgres" };
        format!("{server}-wire")
    }

    fn settings(&self) -> String {
        let (order_status, stock_level) = self.read_only.isolations();
        format!(
            "tokio-postgres to {} (a round trip per statement, prepared statements); NewOrder, \
             Payment, Delivery serializable, OrderStatus {}, StockLevel {}; durability as the \
             server is configured",
            self.url,
            order_status.name(),
            stock_level.name()
        )
    }

    fn connect(&self) -> Result<Self::Conn, String> {
        SqlConn::new(WireClient::connect(&self.url)?, self.read_only, Arc::clone(&self.delivered))
            .map_err(|error| error.to_string())
    }
}

impl TpccDb for WireTpcc {
    fn fill(&mut self, scale: &Scale, constants: &Constants, threads: usize) -> Result<(), String> {
        self.scale = *scale;
        self.delivered =
            Arc::new(DeliveryHints::new(scale.warehouses, scale.first_new_order() - 1));
        let mut client = WireClient::connect(&self.url)?;
        client
            .batch(
                "DROP TABLE IF EXISTS warehouse; DROP TABLE IF EXISTS district; \
                 DROP TABLE IF EXISTS customer; DROP TABLE IF EXISTS history; \
                 DROP TABLE IF EXISTS new_order; DROP TABLE IF EXISTS orders; \
                 DROP TABLE IF EXISTS order_line; DROP TABLE IF EXISTS item; \
                 DROP TABLE IF EXISTS stock",
            )
            .map_err(|error| error.to_string())?;
        client.batch(SCHEMA).map_err(|error| error.to_string())?;
        let url = &self.url;
        load::all(scale, constants, threads, || {
            Loader::new(WireClient::connect(url)?).map_err(|error| error.to_string())
        })?;
        // PostgreSQL plans better with statistics; Engram accepts ANALYZE and ignores it.
        client.batch("ANALYZE").map_err(|error| error.to_string())?;
        if self.snapshots {
            // Engram's snapshots are taken every second or so: wait until one holds the whole
            // load, as the in-process adapters do, so that snapshot readers see it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                let results = client
                    .batch(
                        "BEGIN ISOLATION LEVEL SNAPSHOT READ ONLY; \
                         SELECT count(*) FROM stock; COMMIT",
                    )
                    .map_err(|error| error.to_string())?;
                let seen =
                    results.get(1).and_then(|rows| rows.first()).and_then(|row| row[0].as_int());
                if seen == Some(i64::from(scale.warehouses) * i64::from(scale.items)) {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    return Err("the load did not become visible to snapshots within 60 s".into());
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        Ok(())
    }

    sql_conn_transactions!();

    fn stock_scan(&self, conn: &mut Self::Conn) -> Result<Vec<u64>, String> {
        let level = if self.snapshots { "SNAPSHOT" } else { "REPEATABLE READ" };
        conn.stock_scan(self.scale.warehouses, level)
    }

    fn alter(&self, conn: &mut Self::Conn, round: u64) -> Result<(), String> {
        conn.alter(round)
    }
}
