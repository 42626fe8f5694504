//! TPC-C through Engram's SQL front end (`engram-sql`), in the same process: each driver thread
//! holds a [`Session`] and runs every transaction as the SQL statements a client would send,
//! each one prepared once per connection (parsed and planned once; executions bind values).
//!
//! The schema is the specification's in SQL types: money in NUMERIC (W_YTD NUMERIC(12,2),
//! I_PRICE NUMERIC(5,2), taxes and discounts NUMERIC(4,4)), dates in TIMESTAMP, names in
//! VARCHAR, fixed codes in CHAR, composite primary keys, and the two secondary indexes TPC-C
//! needs (customers by last name, orders by customer). HISTORY has no primary key and gets
//! the hidden row id.
//!
//! Isolation as in the stored-procedure adapter: NewOrder, Payment and Delivery run in
//! `BEGIN ISOLATION LEVEL SERIALIZABLE` blocks, OrderStatus and StockLevel at the levels
//! [`ReadOnlyLevels`] chooses. Serialization failures (SQLSTATE 40001) end the attempt as an
//! abort that the driver retries, with the engine's reason taken from the message.
//!
//! The statements are those a client written for PostgreSQL would send: a row read and then
//! changed is changed by one `UPDATE ... RETURNING` (STOCK, DISTRICT, WAREHOUSE, CUSTOMER,
//! ORDERS, ORDER-LINE), a NewOrder's items are read by one `SELECT ... WHERE i_id IN (...)`
//! and its order lines go in one multi-row INSERT. Delivery starts its scan of NEW-ORDER
//! above the order last delivered in the district ([`DeliveryHints`]), as the stored
//! procedures do.
//!
//! The results the driver compares (order ids, amounts in cents, counts) are computed the same
//! way as in the other adapters, so a deterministic stream gives identical outputs on all
//! three.

use super::engram::{Persistence, ReadOnlyLevels};
use super::schema::{
    Customer, District, History, Item, NewOrder, Order, OrderLine, Stock, Warehouse,
};
use super::spec::{
    Constants, CustomerSelector, DISTRICTS, DeliveryInput, NewOrderInput, ORDER_LINES_MAX,
    ORDER_LINES_MIN, OrderStatusInput, Output, PaymentInput, STOCK_LEVEL_ORDERS, Scale,
    StockLevelInput,
};
use super::{DeliveryHints, Facts, TpccDb, load};
use crate::db::{Db, Outcome};
use engram_engine::{Config, Durability};
use engram_sql::{Decimal, Prepared, Session, SqlDb, SqlError, Text, Value, isolation_sql};
use std::sync::Arc;

mod ddl;

/// The nine tables and two indexes, as the load creates them.
pub const SCHEMA: &str = "
CREATE TABLE warehouse (
  w_id INTEGER NOT NULL PRIMARY KEY, w_name VARCHAR(10), w_street_1 VARCHAR(20),
  w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9),
  w_tax NUMERIC(4,4), w_ytd NUMERIC(12,2));
CREATE TABLE district (
  d_id INTEGER NOT NULL, d_w_id INTEGER NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20),
  d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9),
  d_tax NUMERIC(4,4), d_ytd NUMERIC(12,2), d_next_o_id INTEGER,
  PRIMARY KEY (d_w_id, d_id));
CREATE TABLE customer (
  c_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_w_id INTEGER NOT NULL,
  c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20),
  c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9),
  c_phone CHAR(16), c_since TIMESTAMP, c_credit CHAR(2), c_credit_lim NUMERIC(12,2),
  c_discount NUMERIC(4,4), c_balance NUMERIC(12,2), c_ytd_payment NUMERIC(12,2),
  c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data VARCHAR(500),
  PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE TABLE history (
  h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER,
  h_date TIMESTAMP, h_amount NUMERIC(6,2), h_data VARCHAR(24));
CREATE TABLE new_order (
  no_o_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL, no_w_id INTEGER NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id));
CREATE TABLE orders (
  o_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_w_id INTEGER NOT NULL, o_c_id INTEGER,
  o_entry_d TIMESTAMP, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER,
  PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE order_line (
  ol_o_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL, ol_w_id INTEGER NOT NULL,
  ol_number INTEGER NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER,
  ol_delivery_d TIMESTAMP, ol_quantity INTEGER, ol_amount NUMERIC(6,2), ol_dist_info CHAR(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
CREATE TABLE item (
  i_id INTEGER NOT NULL PRIMARY KEY, i_im_id INTEGER, i_name VARCHAR(24),
  i_price NUMERIC(5,2), i_data VARCHAR(50));
CREATE TABLE stock (
  s_i_id INTEGER NOT NULL, s_w_id INTEGER NOT NULL, s_quantity INTEGER,
  s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24),
  s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24),
  s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INTEGER, s_order_cnt INTEGER,
  s_remote_cnt INTEGER, s_data VARCHAR(50),
  PRIMARY KEY (s_w_id, s_i_id));
";

/// Rows inserted per load transaction.
const LOAD_BATCH_ROWS: usize = 500;

#[derive(Debug)]
pub struct SqlTpcc {
    db: Arc<SqlDb>,
    scale: Scale,
    read_only: ReadOnlyLevels,
    /// Memory to reserve after loading.
    reserve_bytes: usize,
    delivered: Arc<DeliveryHints>,
}

/// What the adapter needs of a connection: an in-process [`Session`], or a client of a
/// PostgreSQL-compatible server over the wire (`super::wire`).
pub trait SqlClient {
    type Statement;
    /// Prepares one statement (parameter types inferred).
    fn prepare(&mut self, sql: &str) -> Result<Self::Statement, SqlError>;
    /// Runs a prepared statement; its rows (none for a command).
    fn run(
        &mut self,
        statement: &Self::Statement,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, SqlError>;
    /// Runs many executions in order (a wire client pipelines them).
    fn run_many(
        &mut self,
        executions: Vec<(&Self::Statement, Vec<Value>)>,
    ) -> Result<(), SqlError> {
        for (statement, params) in executions {
            self.run(statement, &params)?;
        }
        Ok(())
    }
    /// Runs a string of statements; each one's rows. Stops at the first error.
    fn batch(&mut self, sql: &str) -> Result<Vec<Vec<Vec<Value>>>, SqlError>;
    /// How `BEGIN ISOLATION LEVEL` spells a level on this server.
    fn isolation_sql(&self, level: engram_engine::Isolation) -> &'static str {
        isolation_sql(level)
    }
    /// The epoch of the last commit, when the adapter tracks durability itself.
    fn last_commit_epoch(&self) -> Option<u64> {
        None
    }
}

impl SqlClient for Session {
    type Statement = Arc<Prepared>;

    fn prepare(&mut self, sql: &str) -> Result<Arc<Prepared>, SqlError> {
        Session::prepare(self, sql, &[])
    }

    fn run(
        &mut self,
        statement: &Arc<Prepared>,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        match self.execute_prepared(statement, params, 0)? {
            engram_sql::Outcome::Rows { rows, .. } => Ok(rows),
            engram_sql::Outcome::Command { .. } => Ok(Vec::new()),
        }
    }

    fn batch(&mut self, sql: &str) -> Result<Vec<Vec<Vec<Value>>>, SqlError> {
        self.execute(sql).into_iter().map(|result| result.map(|o| o.rows().to_vec())).collect()
    }

    fn last_commit_epoch(&self) -> Option<u64> {
        Some(self.last_commit().epoch.0)
    }
}

/// A driver thread's connection (an in-process session by default) and its prepared
/// statements.
#[derive(Debug)]
pub struct SqlConn<C: SqlClient = Session> {
    client: C,
    statements: Statements<C::Statement>,
    /// Shared by the database's connections.
    delivered: Arc<DeliveryHints>,
    /// The parameters of NewOrder's multi-row INSERT (up to 93 values), kept between
    /// transactions as a client keeps its parameter buffer.
    order_lines: Vec<Value>,
}

impl<C: SqlClient> SqlConn<C> {
    /// Prepares every statement the transactions send.
    pub fn new(
        mut client: C,
        read_only: ReadOnlyLevels,
        delivered: Arc<DeliveryHints>,
    ) -> Result<SqlConn<C>, SqlError> {
        let statements = Statements::prepare(&mut client, read_only)?;
        Ok(SqlConn { client, statements, delivered, order_lines: Vec::new() })
    }

    pub fn client(&mut self) -> &mut C {
        &mut self.client
    }
}

/// Every statement the five transactions, the load and the checks send, prepared once.
#[derive(Debug)]
struct Statements<S> {
    begin_serializable: S,
    begin_order_status: S,
    begin_stock_level: S,
    commit: S,
    rollback: S,
    // NewOrder
    warehouse_tax: S,
    district_advance: S,
    customer_discount: S,
    insert_order: S,
    insert_new_order: S,
    /// One per order size, from `ORDER_LINES_MIN` lines up: the order's items in one lookup.
    items: Vec<S>,
    /// One per district: each returns its own S_DIST_xx column.
    stock_update: Vec<S>,
    /// One per order size, from `ORDER_LINES_MIN` lines up.
    insert_order_lines: Vec<S>,
    // Payment
    warehouse_pay: S,
    district_pay: S,
    customers_by_name: S,
    customer_pay: S,
    customer_bad_credit: S,
    insert_history: S,
    // OrderStatus
    customer_balance: S,
    last_order: S,
    order_lines: S,
    // Delivery
    oldest_new_order: S,
    delete_new_order: S,
    order_carrier: S,
    order_lines_delivered: S,
    customer_deliver: S,
    // StockLevel
    district_next_read: S,
    stock_low: S,
}

impl<S> Statements<S> {
    fn prepare<C: SqlClient<Statement = S>>(
        client: &mut C,
        read_only: ReadOnlyLevels,
    ) -> Result<Statements<S>, SqlError> {
        let (order_status, stock_level) = read_only.isolations();
        let (order_status, stock_level) =
            (client.isolation_sql(order_status), client.isolation_sql(stock_level));
        let mut p = |sql: &str| client.prepare(sql);
        Ok(Statements {
            begin_serializable: p("BEGIN ISOLATION LEVEL SERIALIZABLE")?,
            begin_order_status: p(&format!("BEGIN ISOLATION LEVEL {order_status} READ ONLY"))?,
            begin_stock_level: p(&format!("BEGIN ISOLATION LEVEL {stock_level} READ ONLY"))?,
            commit: p("COMMIT")?,
            rollback: p("ROLLBACK")?,
            warehouse_tax: p("SELECT w_tax FROM warehouse WHERE w_id = $1")?,
            district_advance: p(
                "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 \
                 RETURNING d_tax, d_next_o_id",
            )?,
            customer_discount: p("SELECT c_discount, c_last, c_credit FROM customer \
                 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3")?,
            insert_order: p("INSERT INTO orders VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)")?,
            insert_new_order: p("INSERT INTO new_order VALUES ($1, $2, $3)")?,
            items: (ORDER_LINES_MIN..=ORDER_LINES_MAX)
                .map(|lines| {
                    let list: Vec<String> = (1..=lines).map(|n| format!("${n}")).collect();
                    p(&format!(
                        "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({})",
                        list.join(", ")
                    ))
                })
                .collect::<Result<_, _>>()?,
            // Clause 2.4.2.2: the quantity drops by the amount ordered, and 91 is added when
            // that would leave fewer than 10.
            stock_update: (1..=DISTRICTS)
                .map(|d| {
                    p(&format!(
                        "UPDATE stock SET s_quantity = CASE WHEN s_quantity >= $3 + 10 \
                         THEN s_quantity - $3 ELSE s_quantity - $3 + 91 END, \
                         s_ytd = s_ytd + $3, s_order_cnt = s_order_cnt + 1, \
                         s_remote_cnt = s_remote_cnt + $4 \
                         WHERE s_w_id = $1 AND s_i_id = $2 RETURNING s_dist_{d:02}, s_data"
                    ))
                })
                .collect::<Result<_, _>>()?,
            insert_order_lines: (ORDER_LINES_MIN..=ORDER_LINES_MAX)
                .map(|lines| {
                    // o, d, w, then each line's number, item, supply warehouse, quantity,
                    // amount and district information.
                    let rows: Vec<String> = (0..usize::from(lines))
                        .map(|line| {
                            let n = 4 + line * 6;
                            format!(
                                "($1, $2, $3, ${}, ${}, ${}, NULL, ${}, ${}, ${})",
                                n,
                                n + 1,
                                n + 2,
                                n + 3,
                                n + 4,
                                n + 5
                            )
                        })
                        .collect();
                    p(&format!("INSERT INTO order_line VALUES {}", rows.join(", ")))
                })
                .collect::<Result<_, _>>()?,
            warehouse_pay: p("UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1 \
                 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip")?,
            district_pay: p(
                "UPDATE district SET d_ytd = d_ytd + $3 WHERE d_w_id = $1 AND d_id = $2 \
                 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
            )?,
            customers_by_name: p(
                "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 \
                 ORDER BY c_first",
            )?,
            customer_pay: p("UPDATE customer SET c_balance = c_balance - $4, \
                 c_ytd_payment = c_ytd_payment + $4, c_payment_cnt = c_payment_cnt + 1 \
                 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 \
                 RETURNING c_balance, c_credit, c_first, c_middle, c_last, c_since, \
                 c_credit_lim, c_discount")?,
            // Clause 2.5.2.2: a bad-credit customer's C_DATA gets the payment in front, kept
            // to 500 characters.
            customer_bad_credit: p("UPDATE customer SET c_data = substr($4 || c_data, 1, 500) \
                 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3")?,
            insert_history: p("INSERT INTO history VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")?,
            customer_balance: p("SELECT c_balance, c_first, c_middle, c_last FROM customer \
                 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3")?,
            last_order: p("SELECT o_id, o_entry_d, o_carrier_id FROM orders \
                 WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1")?,
            order_lines: p(
                "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
                 FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            )?,
            oldest_new_order: p(
                "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 \
                 AND no_o_id > $3 ORDER BY no_o_id LIMIT 1",
            )?,
            delete_new_order: p(
                "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
            )?,
            order_carrier: p(
                "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 \
                 RETURNING o_c_id",
            )?,
            order_lines_delivered: p("UPDATE order_line SET ol_delivery_d = $4 \
                 WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 RETURNING ol_amount")?,
            customer_deliver: p("UPDATE customer SET c_balance = c_balance + $4, \
                 c_delivery_cnt = c_delivery_cnt + 1 \
                 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3")?,
            district_next_read: p(
                "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2",
            )?,
            stock_low: p("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock \
                 WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 \
                 AND s_w_id = $1 AND s_i_id = ol_i_id AND s_quantity < $5")?,
        })
    }
}

impl SqlTpcc {
    /// A fresh database kept as `persistence` says. After loading, `reserve_bytes` of memory
    /// are mapped and faulted in for the run to grow into, as in the engine adapter.
    pub fn open(
        read_only: ReadOnlyLevels,
        reserve_bytes: usize,
        persistence: Persistence,
    ) -> Result<SqlTpcc, String> {
        let config: Config = persistence.config();
        let db = SqlDb::open(config).map_err(|error| error.to_string())?;
        Ok(SqlTpcc {
            db,
            scale: Scale::standard(1),
            read_only,
            reserve_bytes,
            delivered: Arc::default(),
        })
    }

    pub fn database(&self) -> &Arc<SqlDb> {
        &self.db
    }

    fn logs(&self) -> bool {
        let config = self.db.database().config();
        config.data_dir.is_some() && config.durability == Durability::Epoch
    }

    fn session(&self) -> Result<Session, String> {
        let mut session = self.db.session().map_err(|error| error.to_string())?;
        // The driver tracks durability itself (as a server acknowledges asynchronously).
        session.set_wait_durable(false);
        Ok(session)
    }
}

impl Db for SqlTpcc {
    type Conn = SqlConn;

    fn name(&self) -> String {
        if self.logs() { "engram-sql-epoch".into() } else { "engram-sql".into() }
    }

    fn settings(&self) -> String {
        let (order_status, stock_level) = self.read_only.isolations();
        let config = self.db.database().config();
        format!(
            "in-process SQL sessions, prepared statements; NewOrder, Payment, Delivery serializable, \
             OrderStatus {}, StockLevel {}; NUMERIC money; epoch {} ms; {} MiB reserved after loading; {}",
            order_status.name(),
            stock_level.name(),
            config.epoch_interval_ms,
            self.reserve_bytes >> 20,
            match (&config.data_dir, config.durability) {
                (Some(dir), Durability::Epoch) =>
                    format!("durability epoch: log in {}", dir.display()),
                (Some(dir), Durability::Off) =>
                    format!("durability off (data in {})", dir.display()),
                (None, _) => "durability off: nothing logged".into(),
            }
        )
    }

    fn connect(&self) -> Result<SqlConn, String> {
        SqlConn::new(self.session()?, self.read_only, Arc::clone(&self.delivered))
            .map_err(|error| error.to_string())
    }

    fn durable_epoch(&self) -> Option<u64> {
        self.logs().then(|| self.db.database().durable_epoch().0)
    }

    fn last_commit_epoch(&self, conn: &SqlConn) -> Option<u64> {
        if self.logs() { conn.client.last_commit_epoch() } else { None }
    }

    fn pause_background(&self, paused: bool) {
        self.db.database().pause_checkpoints(paused);
    }
}

// ----- values in and out ---------------------------------------------------------------------

fn int(value: impl Into<i64>) -> Value {
    Value::Int(value.into())
}

fn text(bytes: &[u8]) -> Value {
    Value::Text(String::from_utf8_lossy(bytes).as_ref().into())
}

fn money(cents: i64) -> Value {
    Value::Numeric(Decimal::new(cents, 2))
}

/// A rate such as a tax in basis points (0.1234 is 1234).
fn rate(basis_points: u16) -> Value {
    Value::Numeric(Decimal::new(i64::from(basis_points), 4))
}

fn timestamp(seconds: u64) -> Value {
    Value::Timestamp(seconds as i64 * 1_000_000)
}

/// Why a transaction attempt ended early.
enum Stop {
    Rollback,
    Sql(SqlError),
}

impl From<SqlError> for Stop {
    fn from(error: SqlError) -> Self {
        Stop::Sql(error)
    }
}

/// A value the statement's types guarantee, in the unit asked for.
fn as_int(value: &Value) -> Result<i64, Stop> {
    match value {
        Value::Int(v) => Ok(*v),
        Value::Null => Ok(0),
        other => Err(unexpected(other)),
    }
}

/// A NUMERIC scaled by `10^digits` and truncated: cents for money (2), basis points (4).
fn as_scaled(value: &Value, digits: u32) -> Result<i64, Stop> {
    match value {
        // From the mantissa and scale, truncating: a decimal multiplication costs ten times more.
        Value::Numeric(decimal) => {
            let (mantissa, scale) = (decimal.mantissa(), decimal.scale());
            let scaled = if scale <= digits {
                mantissa.checked_mul(10i128.pow(digits - scale))
            } else {
                Some(mantissa / 10i128.pow(scale - digits))
            };
            scaled.and_then(|scaled| i64::try_from(scaled).ok()).ok_or_else(|| unexpected(value))
        }
        Value::Int(v) => Ok(v * 10i64.pow(digits)),
        Value::Null => Ok(0),
        other => Err(unexpected(other)),
    }
}

fn as_text(value: &Value) -> Result<&str, Stop> {
    match value {
        Value::Text(text) => Ok(text),
        Value::Null => Ok(""),
        other => Err(unexpected(other)),
    }
}

fn unexpected(value: &Value) -> Stop {
    Stop::Sql(SqlError::new("XX000", format!("unexpected value {value:?}")))
}

/// Runs a prepared statement and returns its rows.
fn rows<C: SqlClient>(
    client: &mut C,
    statement: &C::Statement,
    params: &[Value],
) -> Result<Vec<Vec<Value>>, Stop> {
    Ok(client.run(statement, params)?)
}

/// The first row, if any.
fn optional<C: SqlClient>(
    client: &mut C,
    statement: &C::Statement,
    params: &[Value],
) -> Result<Option<Vec<Value>>, Stop> {
    Ok(rows(client, statement, params)?.into_iter().next())
}

/// The one row the load and the transaction's logic guarantee.
fn one<C: SqlClient>(
    client: &mut C,
    statement: &C::Statement,
    params: &[Value],
) -> Result<Vec<Value>, Stop> {
    optional(client, statement, params)?.ok_or_else(|| {
        Stop::Sql(SqlError::new("P0002", format!("no row where one must be, for {params:?}")))
    })
}

/// Runs a statement that changes rows.
fn change<C: SqlClient>(
    client: &mut C,
    statement: &C::Statement,
    params: &[Value],
) -> Result<(), Stop> {
    client.run(statement, params)?;
    Ok(())
}

/// Runs `body` between `begin` and COMMIT, rolling back on any stop.
fn run<C: SqlClient>(
    conn: &mut SqlConn<C>,
    begin: fn(&Statements<C::Statement>) -> &C::Statement,
    body: impl FnOnce(&mut C, &Statements<C::Statement>) -> Result<(), Stop>,
) -> Outcome {
    let SqlConn { client, statements, .. } = conn;
    let result = client
        .run(begin(statements), &[])
        .map_err(Stop::from)
        .and_then(|_| body(client, statements))
        .and_then(|()| client.run(&statements.commit, &[]).map_err(Stop::from));
    match result {
        Ok(_) => Outcome::Committed,
        Err(stop) => {
            let _ = client.run(&statements.rollback, &[]);
            match stop {
                Stop::Rollback => Outcome::RolledBack,
                Stop::Sql(error) if error.is_retryable() => {
                    Outcome::Aborted(error.abort.map_or("serialization_failure", |r| r.name()))
                }
                Stop::Sql(error) => panic!("SQL TPC-C transaction failed: {error}"),
            }
        }
    }
}

/// The customer a Payment or OrderStatus names (clause 2.5.2.2): by id, or the one in the
/// middle of those with the last name, ordered by first name.
fn find_customer<C: SqlClient>(
    session: &mut C,
    statements: &Statements<C::Statement>,
    w: u16,
    d: u8,
    selector: &CustomerSelector,
) -> Result<u32, Stop> {
    match selector {
        CustomerSelector::Id(c) => Ok(*c),
        CustomerSelector::LastName(last) => {
            let found =
                rows(session, &statements.customers_by_name, &[int(w), int(d), text(last)])?;
            if found.is_empty() {
                return Err(Stop::Sql(SqlError::new(
                    "P0002",
                    format!("no customer named {:?}", String::from_utf8_lossy(last)),
                )));
            }
            Ok(as_int(&found[found.len().div_ceil(2) - 1][0])? as u32)
        }
    }
}

// ----- the load ------------------------------------------------------------------------------

/// The load's INSERTs, prepared once per loading connection.
struct LoadStatements<S> {
    item: S,
    warehouse: S,
    stock: S,
    district: S,
    customer: S,
    history: S,
    order: S,
    order_line: S,
    new_order: S,
}

/// Which of the load's statements a row goes through.
type LoadStatement<S> = fn(&LoadStatements<S>) -> &S;

/// Inserts a load's rows through prepared INSERTs, `LOAD_BATCH_ROWS` per transaction.
pub(crate) struct Loader<C: SqlClient> {
    client: C,
    statements: LoadStatements<C::Statement>,
    pending: Vec<(LoadStatement<C::Statement>, Vec<Value>)>,
}

impl<C: SqlClient> Loader<C> {
    pub(crate) fn new(mut client: C) -> Result<Loader<C>, SqlError> {
        let mut p = |table: &str, columns: usize| {
            let values: Vec<String> = (1..=columns).map(|n| format!("${n}")).collect();
            client.prepare(&format!("INSERT INTO {table} VALUES ({})", values.join(", ")))
        };
        let statements = LoadStatements {
            item: p("item", 5)?,
            warehouse: p("warehouse", 9)?,
            stock: p("stock", 17)?,
            district: p("district", 11)?,
            customer: p("customer", 21)?,
            history: p("history", 8)?,
            order: p("orders", 8)?,
            order_line: p("order_line", 10)?,
            new_order: p("new_order", 3)?,
        };
        Ok(Loader { client, statements, pending: Vec::new() })
    }

    fn insert(
        &mut self,
        which: LoadStatement<C::Statement>,
        row: &[Value],
    ) -> Result<(), SqlError> {
        self.pending.push((which, row.to_vec()));
        if self.pending.len() >= LOAD_BATCH_ROWS {
            load::BatchSink::flush(self)?;
        }
        Ok(())
    }
}

impl<C: SqlClient> load::BatchSink for Loader<C> {
    fn flush(&mut self) -> Result<(), SqlError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let statements = &self.statements;
        let executions = pending.into_iter().map(|(which, row)| (which(statements), row)).collect();
        self.client.batch("BEGIN")?;
        let result = self.client.run_many(executions);
        if let Err(error) = result {
            let _ = self.client.batch("ROLLBACK");
            return Err(error);
        }
        self.client.batch("COMMIT")?;
        Ok(())
    }
}

impl<C: SqlClient> load::Sink for Loader<C> {
    type Error = SqlError;

    fn item(&mut self, r: &Item) -> Result<(), SqlError> {
        let row = [
            int(r.i_id),
            int(r.im_id),
            text(r.name.as_bytes()),
            money(r.price_cents),
            text(r.data.as_bytes()),
        ];
        self.insert(|s| &s.item, &row)
    }
    fn warehouse(&mut self, r: &Warehouse) -> Result<(), SqlError> {
        let row = [
            int(r.w_id),
            text(r.name.as_bytes()),
            text(r.street_1.as_bytes()),
            text(r.street_2.as_bytes()),
            text(r.city.as_bytes()),
            text(&r.state),
            text(&r.zip),
            rate(r.tax),
            money(r.ytd_cents),
        ];
        self.insert(|s| &s.warehouse, &row)
    }
    fn stock(&mut self, r: &Stock) -> Result<(), SqlError> {
        let mut row = vec![int(r.i_id), int(r.w_id), int(r.quantity)];
        row.extend(r.dist.iter().map(|dist| text(dist)));
        row.extend([int(r.ytd), int(r.order_cnt), int(r.remote_cnt), text(r.data.as_bytes())]);
        self.insert(|s| &s.stock, &row)
    }
    fn district(&mut self, r: &District) -> Result<(), SqlError> {
        let row = [
            int(r.d_id),
            int(r.w_id),
            text(r.name.as_bytes()),
            text(r.street_1.as_bytes()),
            text(r.street_2.as_bytes()),
            text(r.city.as_bytes()),
            text(&r.state),
            text(&r.zip),
            rate(r.tax),
            money(r.ytd_cents),
            int(r.next_o_id),
        ];
        self.insert(|s| &s.district, &row)
    }
    fn customer(&mut self, r: &Customer) -> Result<(), SqlError> {
        let row = [
            int(r.c_id),
            int(r.d_id),
            int(r.w_id),
            text(r.first.as_bytes()),
            text(&r.middle),
            text(r.last.as_bytes()),
            text(r.street_1.as_bytes()),
            text(r.street_2.as_bytes()),
            text(r.city.as_bytes()),
            text(&r.state),
            text(&r.zip),
            text(&r.phone),
            timestamp(r.since),
            text(&r.credit),
            money(r.credit_lim_cents),
            rate(r.discount),
            money(r.balance_cents),
            money(r.ytd_payment_cents),
            int(r.payment_cnt),
            int(r.delivery_cnt),
            text(r.data.as_bytes()),
        ];
        self.insert(|s| &s.customer, &row)
    }
    fn history(&mut self, r: &History, _sequence: u64) -> Result<(), SqlError> {
        let row = [
            int(r.c_id),
            int(r.c_d_id),
            int(r.c_w_id),
            int(r.d_id),
            int(r.w_id),
            timestamp(r.date),
            money(r.amount_cents),
            text(r.data.as_bytes()),
        ];
        self.insert(|s| &s.history, &row)
    }
    fn order(&mut self, r: &Order) -> Result<(), SqlError> {
        let carrier = if r.carrier_id == 0 { Value::Null } else { int(r.carrier_id) };
        let row = [
            int(r.o_id),
            int(r.d_id),
            int(r.w_id),
            int(r.c_id),
            timestamp(r.entry_d),
            carrier,
            int(r.ol_cnt),
            int(r.all_local),
        ];
        self.insert(|s| &s.order, &row)
    }
    fn order_line(&mut self, r: &OrderLine) -> Result<(), SqlError> {
        let delivered = if r.delivery_d == 0 { Value::Null } else { timestamp(r.delivery_d) };
        let row = [
            int(r.o_id),
            int(r.d_id),
            int(r.w_id),
            int(r.number),
            int(r.i_id),
            int(r.supply_w_id),
            delivered,
            int(r.quantity),
            money(r.amount_cents),
            text(&r.dist_info),
        ];
        self.insert(|s| &s.order_line, &row)
    }
    fn new_order(&mut self, r: &NewOrder) -> Result<(), SqlError> {
        self.insert(|s| &s.new_order, &[int(r.o_id), int(r.d_id), int(r.w_id)])
    }
}

/// The five transactions and the facts of a [`TpccDb`] whose connection is a [`SqlConn`]: the
/// in-process and the wire adapters run the same statements.
macro_rules! sql_conn_transactions {
    () => {
        fn new_order(
            &self,
            conn: &mut Self::Conn,
            input: &NewOrderInput,
            output: &mut Output,
        ) -> Outcome {
            conn.new_order(input, output)
        }

        fn payment(
            &self,
            conn: &mut Self::Conn,
            input: &PaymentInput,
            output: &mut Output,
        ) -> Outcome {
            conn.payment(input, output)
        }

        fn order_status(
            &self,
            conn: &mut Self::Conn,
            input: &OrderStatusInput,
            output: &mut Output,
        ) -> Outcome {
            conn.order_status(input, output)
        }

        fn delivery(
            &self,
            conn: &mut Self::Conn,
            input: &DeliveryInput,
            output: &mut Output,
        ) -> Outcome {
            conn.delivery(input, output)
        }

        fn stock_level(
            &self,
            conn: &mut Self::Conn,
            input: &StockLevelInput,
            output: &mut Output,
        ) -> Outcome {
            conn.stock_level(input, output)
        }

        fn facts(&self, conn: &mut Self::Conn) -> Result<Facts, String> {
            conn.facts()
        }
    };
}
pub(crate) use sql_conn_transactions;

impl TpccDb for SqlTpcc {
    fn engine(&self) -> Option<&engram_engine::Database> {
        Some(self.db.database())
    }

    fn fill(&mut self, scale: &Scale, constants: &Constants, threads: usize) -> Result<(), String> {
        let fail = |error: SqlError| error.to_string();
        self.scale = *scale;
        self.delivered =
            Arc::new(DeliveryHints::new(scale.warehouses, scale.first_new_order() - 1));
        let mut session = self.session()?;
        session.batch(SCHEMA).map_err(fail)?;
        let this = &*self;
        load::all(scale, constants, threads, || Loader::new(this.session()?).map_err(fail))
    }

    fn settle(&self) -> Result<(), String> {
        super::engram::settle_after_load(self.db.database(), self.reserve_bytes)
    }

    sql_conn_transactions!();

    fn stock_scan(&self, conn: &mut SqlConn) -> Result<Vec<u64>, String> {
        conn.stock_scan(self.scale.warehouses, "SNAPSHOT")
    }

    fn alter(&self, conn: &mut SqlConn, round: u64) -> Result<(), String> {
        conn.alter(round)
    }
}

/// The five transactions, StockScan and the consistency facts, as SQL statements over any
/// [`SqlClient`].
impl<C: SqlClient> SqlConn<C> {
    pub fn new_order(&mut self, input: &NewOrderInput, output: &mut Output) -> Outcome {
        let mut lines = std::mem::take(&mut self.order_lines);
        let outcome = run(
            self,
            |s| &s.begin_serializable,
            |session, s| {
                let (w, d) = (input.warehouse, input.district);
                let w_tax = as_scaled(&one(session, &s.warehouse_tax, &[int(w)])?[0], 4)?;
                let district = one(session, &s.district_advance, &[int(w), int(d)])?;
                let (d_tax, o) = (as_scaled(&district[0], 4)?, as_int(&district[1])? - 1);
                let customer =
                    one(session, &s.customer_discount, &[int(w), int(d), int(input.customer)])?;
                let discount = as_scaled(&customer[0], 4)?;
                let all_local = input.lines.iter().all(|line| line.supply_warehouse == w);
                change(
                    session,
                    &s.insert_order,
                    &[
                        int(o),
                        int(d),
                        int(w),
                        int(input.customer),
                        timestamp(input.entry_date),
                        int(input.lines.len() as i64),
                        int(i64::from(all_local)),
                    ],
                )?;
                change(session, &s.insert_new_order, &[int(o), int(d), int(w)])?;
                let (mut total, mut original) = (0i64, 0);
                let size = input.lines.len() - usize::from(ORDER_LINES_MIN);
                let ids: Vec<Value> = input.lines.iter().map(|line| int(line.item)).collect();
                let items = rows(session, &s.items[size], &ids)?;
                lines.clear();
                lines.extend([int(o), int(d), int(w)]);
                for (number, line) in input.lines.iter().enumerate() {
                    // An unused item id (1% of NewOrders) rolls the transaction back.
                    let found = items
                        .iter()
                        .find(|item| matches!(item[0], Value::Int(i) if i == i64::from(line.item)));
                    let Some(item) = found.map(|item| &item[1..]) else {
                        return Err(Stop::Rollback);
                    };
                    let price = as_scaled(&item[0], 2)?;
                    let ordered = i64::from(line.quantity);
                    let remote = i64::from(line.supply_warehouse != w);
                    let mut stock = one(
                        session,
                        &s.stock_update[usize::from(d) - 1],
                        &[int(line.supply_warehouse), int(line.item), int(ordered), int(remote)],
                    )?;
                    original += u32::from(
                        as_text(&item[2])?.contains("ORIGINAL")
                            && as_text(&stock[1])?.contains("ORIGINAL"),
                    );
                    let amount = ordered * price;
                    total += amount;
                    lines.extend([
                        int(number as i64 + 1),
                        int(line.item),
                        int(line.supply_warehouse),
                        int(ordered),
                        money(amount),
                        std::mem::replace(&mut stock[0], Value::Null),
                    ]);
                }
                change(session, &s.insert_order_lines[size], &lines)?;
                let taxed = total * (10_000 + w_tax + d_tax) / 10_000;
                output.amount_cents = taxed * (10_000 - discount) / 10_000;
                output.order = o as u32;
                output.customer = input.customer;
                output.count = input.lines.len() as u32;
                output.original = original;
                Ok(())
            },
        );
        self.order_lines = lines;
        outcome
    }

    pub fn payment(&mut self, input: &PaymentInput, output: &mut Output) -> Outcome {
        run(
            self,
            |s| &s.begin_serializable,
            |session, s| {
                let (w, d) = (input.warehouse, input.district);
                let amount = money(input.amount_cents);
                let warehouse = one(session, &s.warehouse_pay, &[int(w), amount.clone()])?;
                let district = one(session, &s.district_pay, &[int(w), int(d), amount.clone()])?;
                let (cw, cd) = (input.customer_warehouse, input.customer_district);
                let customer = find_customer(session, s, cw, cd, &input.customer)?;
                let key = [int(cw), int(cd), int(customer)];
                let mut params = Vec::with_capacity(key.len() + 1);
                params.extend(key);
                params.push(amount.clone());
                let row = one(session, &s.customer_pay, &params)?;
                let balance = as_scaled(&row[0], 2)?;
                if as_text(&row[1])? == "BC" {
                    params[3] = Value::Text(
                        format!(
                            "{} {} {} {} {} {}.{:02}|",
                            customer,
                            cd,
                            cw,
                            d,
                            w,
                            input.amount_cents / 100,
                            input.amount_cents % 100,
                        )
                        .into(),
                    );
                    change(session, &s.customer_bad_credit, &params)?;
                }
                // W_NAME, four spaces, D_NAME (clause 2.5.2.2): at most 24 bytes, held inline.
                let mut history = Text::default();
                for part in [as_text(&warehouse[0])?, "    ", as_text(&district[0])?] {
                    history.push_str(part);
                }
                change(
                    session,
                    &s.insert_history,
                    &[
                        int(customer),
                        int(cd),
                        int(cw),
                        int(d),
                        int(w),
                        timestamp(input.date),
                        amount,
                        Value::Text(history),
                    ],
                )?;
                output.customer = customer;
                output.amount_cents = balance;
                Ok(())
            },
        )
    }

    pub fn order_status(&mut self, input: &OrderStatusInput, output: &mut Output) -> Outcome {
        run(
            self,
            |s| &s.begin_order_status,
            |session, s| {
                let (w, d) = (input.warehouse, input.district);
                let customer = find_customer(session, s, w, d, &input.customer)?;
                let key = [int(w), int(d), int(customer)];
                let balance = as_scaled(&one(session, &s.customer_balance, &key)?[0], 2)?;
                let order = match optional(session, &s.last_order, &key)? {
                    Some(row) => Some(as_int(&row[0])?),
                    None => None,
                };
                let mut lines = 0;
                if let Some(o) = order {
                    lines = rows(session, &s.order_lines, &[int(w), int(d), int(o)])?.len() as u32;
                }
                output.customer = customer;
                output.amount_cents = balance;
                output.order = order.unwrap_or(0) as u32;
                output.count = lines;
                Ok(())
            },
        )
    }

    pub fn delivery(&mut self, input: &DeliveryInput, output: &mut Output) -> Outcome {
        let hints = Arc::clone(&self.delivered);
        let w = input.warehouse;
        let mut delivered = Vec::with_capacity(usize::from(DISTRICTS));
        let outcome = run(
            self,
            |s| &s.begin_serializable,
            |session, s| {
                for d in 1..=DISTRICTS {
                    let after = int(hints.get(w, d));
                    let Some(oldest) =
                        optional(session, &s.oldest_new_order, &[int(w), int(d), after])?
                    else {
                        // A district with no undelivered order is skipped (clause 2.7.4.2).
                        continue;
                    };
                    let o = as_int(&oldest[0])?;
                    let key = [int(w), int(d), int(o)];
                    change(session, &s.delete_new_order, &key)?;
                    let mut params = key.to_vec();
                    params.push(int(input.carrier));
                    let customer = one(session, &s.order_carrier, &params)?[0].clone();
                    params[3] = timestamp(input.date);
                    let mut total = 0;
                    for line in rows(session, &s.order_lines_delivered, &params)? {
                        total += as_scaled(&line[0], 2)?;
                    }
                    change(
                        session,
                        &s.customer_deliver,
                        &[int(w), int(d), customer, money(total)],
                    )?;
                    delivered.push((d, o as u32));
                }
                output.count = delivered.len() as u32;
                Ok(())
            },
        );
        if outcome == Outcome::Committed {
            for &(d, o) in &delivered {
                hints.raise(w, d, o);
            }
        }
        outcome
    }

    pub fn stock_level(&mut self, input: &StockLevelInput, output: &mut Output) -> Outcome {
        run(
            self,
            |s| &s.begin_stock_level,
            |session, s| {
                let (w, d) = (input.warehouse, input.district);
                let next = as_int(&one(session, &s.district_next_read, &[int(w), int(d)])?[0])?;
                let low = one(
                    session,
                    &s.stock_low,
                    &[
                        int(w),
                        int(d),
                        int(next),
                        int((next - i64::from(STOCK_LEVEL_ORDERS)).max(0)),
                        int(input.threshold),
                    ],
                )?;
                output.count = as_int(&low[0])? as u32;
                Ok(())
            },
        )
    }

    /// Wu et al.'s StockScan in one read-only transaction at `level` (a snapshot where the
    /// server has one: a long scan that never aborts and never waits for NewOrder's rows).
    pub fn stock_scan(&mut self, warehouses: u16, level: &str) -> Result<Vec<u64>, String> {
        let mut counts = vec![0u64; usize::from(warehouses)];
        let results = self.client.batch(&format!(
            "BEGIN ISOLATION LEVEL {level} READ ONLY; \
             SELECT s_w_id, COUNT(*) FROM stock GROUP BY s_w_id; COMMIT"
        ));
        let results = match results {
            Ok(results) => results,
            Err(error) => {
                let _ = self.client.batch("ROLLBACK");
                return Err(error.to_string());
            }
        };
        for row in results.get(1).map_or(&[][..], Vec::as_slice) {
            let (Value::Int(w), Value::Int(count)) = (&row[0], &row[1]) else {
                return Err(format!("unexpected row {row:?}"));
            };
            counts[*w as usize - 1] = *count as u64;
        }
        Ok(counts)
    }

    /// The aggregates the consistency conditions compare.
    pub fn facts(&mut self) -> Result<Facts, String> {
        let client = &mut self.client;
        Facts::from_sql(|sql| {
            let results = client.batch(sql).map_err(|error| error.to_string())?;
            let rows = results.into_iter().last().unwrap_or_default();
            rows.iter()
                .map(|row| {
                    row.iter()
                        .map(|value| match value {
                            Value::Numeric(_) => as_scaled(value, 2),
                            other => as_int(other),
                        })
                        .collect::<Result<Vec<i64>, Stop>>()
                        .map_err(|_| format!("unexpected row {row:?}"))
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scaling from the mantissa truncates toward zero, as the decimal multiplication and
    /// `trunc` it replaced did, for every scale above, at and below the digits asked for.
    #[test]
    fn scaled_numerics_truncate_like_decimal_arithmetic() {
        for (mantissa, scale) in
            [(1234, 2), (-1234, 2), (7, 0), (-123_456, 5), (99_999, 3), (5, 4), (-1, 6), (0, 3)]
        {
            let decimal = Decimal::new(mantissa, scale);
            for digits in [0, 2, 4] {
                let expected =
                    i64::try_from((decimal * Decimal::from(10i64.pow(digits))).trunc()).unwrap();
                let got = as_scaled(&Value::Numeric(decimal), digits).ok().unwrap();
                assert_eq!(got, expected, "{decimal} at {digits} digits");
            }
        }
        assert!(as_scaled(&Value::Numeric(Decimal::MAX), 4).is_err());
    }
}
