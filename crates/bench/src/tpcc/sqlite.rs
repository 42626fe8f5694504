//! TPC-C on SQLite (through `rusqlite`, with SQLite built in), the embedded database a user
//! would otherwise pick, tuned for this job:
//!
//! - one database file on tmpfs (`/dev/shm` when it exists), in WAL mode, so readers never wait
//!   for the writer and the file system costs nothing;
//! - `synchronous = OFF` (no fsync: Engram runs without logging in these figures too), a page
//!   cache large enough for the whole database, memory-mapped I/O, temporary data in memory;
//! - clustered primary keys (`WITHOUT ROWID`), the two secondary indexes TPC-C needs;
//! - one connection per driver thread, prepared statements cached per connection;
//! - `BEGIN IMMEDIATE` for the writing transactions, so writers queue on SQLite's single write
//!   lock (with a busy timeout) instead of failing when they upgrade; plain `BEGIN` for the
//!   read-only ones.
//!
//! Money is stored in integer cents, as in the engine adapter, so sums are exact.

use super::schema::{
    Customer, District, History, Item, NewOrder, Order, OrderLine, Stock, Warehouse,
};
use super::spec::{
    Constants, CustomerSelector, DISTRICTS, DeliveryInput, NewOrderInput, OrderStatusInput, Output,
    PaymentInput, STOCK_LEVEL_ORDERS, Scale, StockLevelInput,
};
use super::{Facts, TpccDb, load};
use crate::db::{Db, Outcome};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use std::path::PathBuf;

/// How long a writer waits for SQLite's write lock before it counts an abort.
const BUSY_TIMEOUT_MS: u64 = 10_000;

const SCHEMA: &str = "
CREATE TABLE warehouse (
  w_id INTEGER NOT NULL, w_name TEXT, w_street_1 TEXT, w_street_2 TEXT, w_city TEXT,
  w_state TEXT, w_zip TEXT, w_tax INTEGER, w_ytd INTEGER,
  PRIMARY KEY (w_id)) WITHOUT ROWID;
CREATE TABLE district (
  d_id INTEGER NOT NULL, d_w_id INTEGER NOT NULL, d_name TEXT, d_street_1 TEXT, d_street_2 TEXT,
  d_city TEXT, d_state TEXT, d_zip TEXT, d_tax INTEGER, d_ytd INTEGER, d_next_o_id INTEGER,
  PRIMARY KEY (d_w_id, d_id)) WITHOUT ROWID;
CREATE TABLE customer (
  c_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_w_id INTEGER NOT NULL, c_first TEXT,
  c_middle TEXT, c_last TEXT, c_street_1 TEXT, c_street_2 TEXT, c_city TEXT, c_state TEXT,
  c_zip TEXT, c_phone TEXT, c_since INTEGER, c_credit TEXT, c_credit_lim INTEGER,
  c_discount INTEGER, c_balance INTEGER, c_ytd_payment INTEGER, c_payment_cnt INTEGER,
  c_delivery_cnt INTEGER, c_data TEXT,
  PRIMARY KEY (c_w_id, c_d_id, c_id)) WITHOUT ROWID;
CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE TABLE history (
  h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER,
  h_date INTEGER, h_amount INTEGER, h_data TEXT);
CREATE TABLE new_order (
  no_o_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL, no_w_id INTEGER NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)) WITHOUT ROWID;
CREATE TABLE orders (
  o_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_w_id INTEGER NOT NULL, o_c_id INTEGER,
  o_entry_d INTEGER, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER,
  PRIMARY KEY (o_w_id, o_d_id, o_id)) WITHOUT ROWID;
CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE order_line (
  ol_o_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL, ol_w_id INTEGER NOT NULL,
  ol_number INTEGER NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER, ol_delivery_d INTEGER,
  ol_quantity INTEGER, ol_amount INTEGER, ol_dist_info TEXT,
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)) WITHOUT ROWID;
CREATE TABLE item (
  i_id INTEGER NOT NULL, i_im_id INTEGER, i_name TEXT, i_price INTEGER, i_data TEXT,
  PRIMARY KEY (i_id)) WITHOUT ROWID;
CREATE TABLE stock (
  s_i_id INTEGER NOT NULL, s_w_id INTEGER NOT NULL, s_quantity INTEGER,
  s_dist_01 TEXT, s_dist_02 TEXT, s_dist_03 TEXT, s_dist_04 TEXT, s_dist_05 TEXT,
  s_dist_06 TEXT, s_dist_07 TEXT, s_dist_08 TEXT, s_dist_09 TEXT, s_dist_10 TEXT,
  s_ytd INTEGER, s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data TEXT,
  PRIMARY KEY (s_w_id, s_i_id)) WITHOUT ROWID;
";

#[derive(Debug)]
pub struct SqliteTpcc {
    path: PathBuf,
    scale: Scale,
}

#[derive(Debug)]
pub struct SqliteConn {
    connection: Connection,
}

impl SqliteTpcc {
    /// A fresh database file in a new folder on tmpfs (or the temporary folder).
    pub fn create() -> Result<SqliteTpcc, String> {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        static CREATED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let instance = CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let folder = base.join(format!("engram-tpcc-sqlite-{}-{instance}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder)
            .map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
        Ok(SqliteTpcc { path: folder.join("tpcc.db"), scale: Scale::standard(1) })
    }

    fn open(&self) -> Result<Connection, String> {
        let connection = Connection::open(&self.path).map_err(|error| error.to_string())?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = OFF;
                 PRAGMA cache_size = -4000000;
                 PRAGMA mmap_size = 17179869184;
                 PRAGMA temp_store = MEMORY;",
            )
            .map_err(|error| error.to_string())?;
        connection
            .busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
            .map_err(|error| error.to_string())?;
        connection.set_prepared_statement_cache_capacity(64);
        Ok(connection)
    }
}

impl Drop for SqliteTpcc {
    fn drop(&mut self) {
        if let Some(folder) = self.path.parent() {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

impl Db for SqliteTpcc {
    type Conn = SqliteConn;

    fn name(&self) -> String {
        "sqlite".into()
    }

    fn settings(&self) -> String {
        format!(
            "SQLite {} (bundled), file on {}, WAL, synchronous=OFF, 4 GB cache, mmap, prepared statements, \
             BEGIN IMMEDIATE for writers",
            rusqlite::version(),
            self.path
                .parent()
                .and_then(|folder| folder.parent())
                .map_or("?".into(), |base| base.display().to_string())
        )
    }

    fn connect(&self) -> Result<SqliteConn, String> {
        Ok(SqliteConn { connection: self.open()? })
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Inserts a load's rows through prepared statements in one transaction per warehouse.
struct Loader<'a> {
    connection: &'a Connection,
}

impl load::Sink for Loader<'_> {
    type Error = rusqlite::Error;

    fn item(&mut self, r: &Item) -> rusqlite::Result<()> {
        self.connection.prepare_cached("INSERT INTO item VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(
            params![
                r.i_id,
                r.im_id,
                text(r.name.as_bytes()),
                r.price_cents,
                text(r.data.as_bytes())
            ],
        )?;
        Ok(())
    }
    fn warehouse(&mut self, r: &Warehouse) -> rusqlite::Result<()> {
        self.connection
            .prepare_cached("INSERT INTO warehouse VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?
            .execute(params![
                r.w_id,
                text(r.name.as_bytes()),
                text(r.street_1.as_bytes()),
                text(r.street_2.as_bytes()),
                text(r.city.as_bytes()),
                text(&r.state),
                text(&r.zip),
                r.tax,
                r.ytd_cents
            ])?;
        Ok(())
    }
    fn stock(&mut self, r: &Stock) -> rusqlite::Result<()> {
        let d = |i: usize| text(&r.dist[i]);
        self.connection
            .prepare_cached(
                "INSERT INTO stock VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            )?
            .execute(params![
                r.i_id,
                r.w_id,
                r.quantity,
                d(0),
                d(1),
                d(2),
                d(3),
                d(4),
                d(5),
                d(6),
                d(7),
                d(8),
                d(9),
                r.ytd,
                r.order_cnt,
                r.remote_cnt,
                text(r.data.as_bytes())
            ])?;
        Ok(())
    }
    fn district(&mut self, r: &District) -> rusqlite::Result<()> {
        self.connection
            .prepare_cached(
                "INSERT INTO district VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?
            .execute(params![
                r.d_id,
                r.w_id,
                text(r.name.as_bytes()),
                text(r.street_1.as_bytes()),
                text(r.street_2.as_bytes()),
                text(r.city.as_bytes()),
                text(&r.state),
                text(&r.zip),
                r.tax,
                r.ytd_cents,
                r.next_o_id
            ])?;
        Ok(())
    }
    fn customer(&mut self, r: &Customer) -> rusqlite::Result<()> {
        self.connection
            .prepare_cached(
                "INSERT INTO customer VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
                 ?18, ?19, ?20, ?21)",
            )?
            .execute(params![
                r.c_id,
                r.d_id,
                r.w_id,
                text(r.first.as_bytes()),
                text(&r.middle),
                text(r.last.as_bytes()),
                text(r.street_1.as_bytes()),
                text(r.street_2.as_bytes()),
                text(r.city.as_bytes()),
                text(&r.state),
                text(&r.zip),
                text(&r.phone),
                r.since as i64,
                text(&r.credit),
                r.credit_lim_cents,
                r.discount,
                r.balance_cents,
                r.ytd_payment_cents,
                r.payment_cnt,
                r.delivery_cnt,
                text(r.data.as_bytes())
            ])?;
        Ok(())
    }
    fn history(&mut self, r: &History, _sequence: u64) -> rusqlite::Result<()> {
        self.connection
            .prepare_cached("INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?
            .execute(params![
                r.c_id,
                r.c_d_id,
                r.c_w_id,
                r.d_id,
                r.w_id,
                r.date as i64,
                r.amount_cents,
                text(r.data.as_bytes())
            ])?;
        Ok(())
    }
    fn order(&mut self, r: &Order) -> rusqlite::Result<()> {
        let carrier = (r.carrier_id != 0).then_some(r.carrier_id);
        self.connection
            .prepare_cached("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?
            .execute(params![
                r.o_id,
                r.d_id,
                r.w_id,
                r.c_id,
                r.entry_d as i64,
                carrier,
                r.ol_cnt,
                r.all_local
            ])?;
        Ok(())
    }
    fn order_line(&mut self, r: &OrderLine) -> rusqlite::Result<()> {
        let delivered = (r.delivery_d != 0).then_some(r.delivery_d as i64);
        self.connection
            .prepare_cached(
                "INSERT INTO order_line VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                r.o_id,
                r.d_id,
                r.w_id,
                r.number,
                r.i_id,
                r.supply_w_id,
                delivered,
                r.quantity,
                r.amount_cents,
                text(&r.dist_info)
            ])?;
        Ok(())
    }
    fn new_order(&mut self, r: &NewOrder) -> rusqlite::Result<()> {
        self.connection
            .prepare_cached("INSERT INTO new_order VALUES (?1, ?2, ?3)")?
            .execute(params![r.o_id, r.d_id, r.w_id])?;
        Ok(())
    }
}

/// Why a transaction attempt ended early.
enum Stop {
    Rollback,
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Stop {
    fn from(error: rusqlite::Error) -> Self {
        Stop::Sqlite(error)
    }
}

/// Runs `body` between BEGIN (IMMEDIATE when `writes`) and COMMIT, rolling back on any stop.
fn run(
    connection: &Connection,
    writes: bool,
    body: impl FnOnce(&Connection) -> Result<(), Stop>,
) -> Outcome {
    let begin = if writes { "BEGIN IMMEDIATE" } else { "BEGIN" };
    let result = connection
        .execute_batch(begin)
        .map_err(Stop::from)
        .and_then(|()| body(connection))
        .and_then(|()| {
            connection.prepare_cached("COMMIT")?.execute([])?;
            Ok(())
        });
    match result {
        Ok(()) => Outcome::Committed,
        Err(stop) => {
            let _ = connection.execute_batch("ROLLBACK");
            match stop {
                Stop::Rollback => Outcome::RolledBack,
                Stop::Sqlite(rusqlite::Error::SqliteFailure(failure, _))
                    if matches!(
                        failure.code,
                        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked
                    ) =>
                {
                    Outcome::Aborted("busy")
                }
                Stop::Sqlite(error) => panic!("SQLite TPC-C transaction failed: {error}"),
            }
        }
    }
}

/// The customer a Payment or OrderStatus names (clause 2.5.2.2).
fn find_customer(
    connection: &Connection,
    w: u16,
    d: u8,
    selector: &CustomerSelector,
) -> Result<u32, Stop> {
    match selector {
        CustomerSelector::Id(c) => Ok(*c),
        CustomerSelector::LastName(last) => {
            let mut statement = connection.prepare_cached(
                "SELECT c_id FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_last = ?3 ORDER BY c_first",
            )?;
            let ids: Vec<u32> = statement
                .query_map(params![w, d, text(last)], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            if ids.is_empty() {
                return Err(Stop::Sqlite(rusqlite::Error::QueryReturnedNoRows));
            }
            Ok(ids[ids.len().div_ceil(2) - 1])
        }
    }
}

impl TpccDb for SqliteTpcc {
    fn fill(
        &mut self,
        scale: &Scale,
        constants: &Constants,
        _threads: usize,
    ) -> Result<(), String> {
        self.scale = *scale;
        // SQLite has one writer: the load runs on one connection, a transaction per warehouse.
        let connection = self.open()?;
        connection.execute_batch(SCHEMA).map_err(|error| error.to_string())?;
        let now = super::spec::now();
        let mut loader = Loader { connection: &connection };
        let step = |connection: &Connection,
                    body: &mut dyn FnMut() -> rusqlite::Result<()>|
         -> Result<(), String> {
            connection.execute_batch("BEGIN").map_err(|error| error.to_string())?;
            body().map_err(|error| error.to_string())?;
            connection.execute_batch("COMMIT").map_err(|error| error.to_string())
        };
        step(&connection, &mut || load::items(scale, load::load_seed(constants, 0), &mut loader))?;
        for w in 1..=scale.warehouses {
            let mut loader = Loader { connection: &connection };
            step(&connection, &mut || {
                load::warehouse(
                    scale,
                    constants,
                    w,
                    load::load_seed(constants, u32::from(w)),
                    now,
                    &mut loader,
                )
            })?;
        }
        connection.execute_batch("ANALYZE").map_err(|error| error.to_string())
    }

    fn new_order(
        &self,
        conn: &mut SqliteConn,
        input: &NewOrderInput,
        output: &mut Output,
    ) -> Outcome {
        run(&conn.connection, true, |c| {
            let (w, d) = (input.warehouse, input.district);
            let w_tax: i64 = c
                .prepare_cached("SELECT w_tax FROM warehouse WHERE w_id = ?1")?
                .query_row([w], |r| r.get(0))?;
            let (d_tax, o): (i64, u32) = c
                .prepare_cached(
                    "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2",
                )?
                .query_row(params![w, d], |r| Ok((r.get(0)?, r.get(1)?)))?;
            c.prepare_cached(
                "UPDATE district SET d_next_o_id = ?3 WHERE d_w_id = ?1 AND d_id = ?2",
            )?
            .execute(params![w, d, o + 1])?;
            let (discount, _last, _credit): (i64, String, String) = c
                .prepare_cached("SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3")?
                .query_row(params![w, d, input.customer], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            let all_local = input.lines.iter().all(|line| line.supply_warehouse == w);
            c.prepare_cached("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)")?
                .execute(params![
                    o,
                    d,
                    w,
                    input.customer,
                    input.entry_date as i64,
                    input.lines.len(),
                    all_local
                ])?;
            c.prepare_cached("INSERT INTO new_order VALUES (?1, ?2, ?3)")?
                .execute(params![o, d, w])?;
            let (mut total, mut original) = (0i64, 0);
            for (number, line) in input.lines.iter().enumerate() {
                let item: Option<(i64, String)> = c
                    .prepare_cached("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?1")?
                    .query_row([line.item], |r| Ok((r.get(0)?, r.get(2)?)))
                    .optional()?;
                let Some((price, item_data)) = item else { return Err(Stop::Rollback) };
                let column = format!("s_dist_{:02}", d);
                let (quantity, ytd, order_cnt, remote_cnt, dist, stock_data): (i64, i64, i64, i64, String, String) = c
                    .prepare_cached(&format!(
                        "SELECT s_quantity, s_ytd, s_order_cnt, s_remote_cnt, {column}, s_data FROM stock \
                         WHERE s_w_id = ?1 AND s_i_id = ?2"
                    ))?
                    .query_row(params![line.supply_warehouse, line.item], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
                    })?;
                original +=
                    u32::from(item_data.contains("ORIGINAL") && stock_data.contains("ORIGINAL"));
                let ordered = i64::from(line.quantity);
                let quantity = if quantity >= ordered + 10 {
                    quantity - ordered
                } else {
                    quantity - ordered + 91
                };
                let remote = i64::from(line.supply_warehouse != w);
                c.prepare_cached(
                    "UPDATE stock SET s_quantity = ?3, s_ytd = ?4, s_order_cnt = ?5, s_remote_cnt = ?6 WHERE s_w_id = ?1 AND s_i_id = ?2",
                )?
                .execute(params![line.supply_warehouse, line.item, quantity, ytd + ordered, order_cnt + 1, remote_cnt + remote])?;
                let amount = ordered * price;
                total += amount;
                c.prepare_cached(
                    "INSERT INTO order_line VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9)",
                )?
                .execute(params![
                    o,
                    d,
                    w,
                    number + 1,
                    line.item,
                    line.supply_warehouse,
                    line.quantity,
                    amount,
                    dist
                ])?;
            }
            let taxed = total * (10_000 + w_tax + d_tax) / 10_000;
            output.amount_cents = taxed * (10_000 - discount) / 10_000;
            output.order = o;
            output.customer = input.customer;
            output.count = input.lines.len() as u32;
            output.original = original;
            Ok(())
        })
    }

    fn payment(&self, conn: &mut SqliteConn, input: &PaymentInput, output: &mut Output) -> Outcome {
        run(&conn.connection, true, |c| {
            let (w, d) = (input.warehouse, input.district);
            c.prepare_cached("UPDATE warehouse SET w_ytd = w_ytd + ?2 WHERE w_id = ?1")?
                .execute(params![w, input.amount_cents])?;
            let w_name: String = c
                .prepare_cached("SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?1")?
                .query_row([w], |r| r.get(0))?;
            c.prepare_cached(
                "UPDATE district SET d_ytd = d_ytd + ?3 WHERE d_w_id = ?1 AND d_id = ?2",
            )?
            .execute(params![w, d, input.amount_cents])?;
            let d_name: String = c
                .prepare_cached(
                    "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ?1 AND d_id = ?2",
                )?
                .query_row(params![w, d], |r| r.get(0))?;
            let (cw, cd) = (input.customer_warehouse, input.customer_district);
            let customer = find_customer(c, cw, cd, &input.customer)?;
            let (balance, ytd, count, credit, data): (i64, i64, i64, String, String) = c
                .prepare_cached(
                    "SELECT c_balance, c_ytd_payment, c_payment_cnt, c_credit, c_data FROM customer \
                     WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                )?
                .query_row(params![cw, cd, customer], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
            let balance = balance - input.amount_cents;
            if credit == "BC" {
                let mut data = format!(
                    "{} {} {} {} {} {}.{:02}|{}",
                    customer,
                    cd,
                    cw,
                    d,
                    w,
                    input.amount_cents / 100,
                    input.amount_cents % 100,
                    data
                );
                data.truncate(500);
                c.prepare_cached(
                    "UPDATE customer SET c_balance = ?4, c_ytd_payment = ?5, c_payment_cnt = ?6, c_data = ?7 \
                     WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                )?
                .execute(params![cw, cd, customer, balance, ytd + input.amount_cents, count + 1, data])?;
            } else {
                c.prepare_cached(
                    "UPDATE customer SET c_balance = ?4, c_ytd_payment = ?5, c_payment_cnt = ?6 \
                     WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                )?
                .execute(params![
                    cw,
                    cd,
                    customer,
                    balance,
                    ytd + input.amount_cents,
                    count + 1
                ])?;
            }
            c.prepare_cached("INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?
                .execute(params![
                    customer,
                    cd,
                    cw,
                    d,
                    w,
                    input.date as i64,
                    input.amount_cents,
                    format!("{w_name}    {d_name}")
                ])?;
            output.customer = customer;
            output.amount_cents = balance;
            Ok(())
        })
    }

    fn order_status(
        &self,
        conn: &mut SqliteConn,
        input: &OrderStatusInput,
        output: &mut Output,
    ) -> Outcome {
        run(&conn.connection, false, |c| {
            let (w, d) = (input.warehouse, input.district);
            let customer = find_customer(c, w, d, &input.customer)?;
            let balance: i64 = c
                .prepare_cached(
                    "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                )?
                .query_row(params![w, d, customer], |r| r.get(0))?;
            let order: Option<u32> = c
                .prepare_cached(
                    "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_c_id = ?3 \
                     ORDER BY o_id DESC LIMIT 1",
                )?
                .query_row(params![w, d, customer], |r| r.get(0))
                .optional()?;
            let mut lines = 0;
            if let Some(o) = order {
                let mut statement = c.prepare_cached(
                    "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
                     WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
                )?;
                let mut rows = statement.query(params![w, d, o])?;
                while rows.next()?.is_some() {
                    lines += 1;
                }
            }
            output.customer = customer;
            output.amount_cents = balance;
            output.order = order.unwrap_or(0);
            output.count = lines;
            Ok(())
        })
    }

    fn delivery(
        &self,
        conn: &mut SqliteConn,
        input: &DeliveryInput,
        output: &mut Output,
    ) -> Outcome {
        run(&conn.connection, true, |c| {
            let w = input.warehouse;
            let mut delivered = 0;
            for d in 1..=DISTRICTS {
                let oldest: Option<u32> = c
                    .prepare_cached("SELECT no_o_id FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 ORDER BY no_o_id LIMIT 1")?
                    .query_row(params![w, d], |r| r.get(0))
                    .optional()?;
                let Some(o) = oldest else { continue };
                c.prepare_cached(
                    "DELETE FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 AND no_o_id = ?3",
                )?
                .execute(params![w, d, o])?;
                let customer: u32 = c
                    .prepare_cached(
                        "SELECT o_c_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
                    )?
                    .query_row(params![w, d, o], |r| r.get(0))?;
                c.prepare_cached("UPDATE orders SET o_carrier_id = ?4 WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3")?
                    .execute(params![w, d, o, input.carrier])?;
                c.prepare_cached("UPDATE order_line SET ol_delivery_d = ?4 WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3")?
                    .execute(params![w, d, o, input.date as i64])?;
                let total: i64 = c
                    .prepare_cached("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3")?
                    .query_row(params![w, d, o], |r| r.get(0))?;
                c.prepare_cached(
                    "UPDATE customer SET c_balance = c_balance + ?4, c_delivery_cnt = c_delivery_cnt + 1 \
                     WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
                )?
                .execute(params![w, d, customer, total])?;
                delivered += 1;
            }
            output.count = delivered;
            Ok(())
        })
    }

    fn stock_level(
        &self,
        conn: &mut SqliteConn,
        input: &StockLevelInput,
        output: &mut Output,
    ) -> Outcome {
        run(&conn.connection, false, |c| {
            let (w, d) = (input.warehouse, input.district);
            let next: u32 = c
                .prepare_cached("SELECT d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2")?
                .query_row(params![w, d], |r| r.get(0))?;
            let low: u32 = c
                .prepare_cached(
                    "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ?1 AND ol_d_id = ?2 \
                     AND ol_o_id < ?3 AND ol_o_id >= ?4 AND s_w_id = ?1 AND s_i_id = ol_i_id AND s_quantity < ?5",
                )?
                .query_row(params![w, d, next, next.saturating_sub(STOCK_LEVEL_ORDERS), input.threshold], |r| r.get(0))?;
            output.count = low;
            Ok(())
        })
    }

    fn stock_scan(&self, conn: &mut SqliteConn) -> Result<Vec<u64>, String> {
        let mut counts = vec![0u64; usize::from(self.scale.warehouses)];
        let c = &conn.connection;
        let mut statement = c
            .prepare_cached("SELECT s_w_id, COUNT(*) FROM stock GROUP BY s_w_id")
            .map_err(|error| error.to_string())?;
        let rows = statement
            .query_map([], |r| Ok((r.get::<_, u16>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|error| error.to_string())?;
        for row in rows {
            let (w, count) = row.map_err(|error| error.to_string())?;
            counts[usize::from(w) - 1] = count as u64;
        }
        Ok(counts)
    }

    fn facts(&self, conn: &mut SqliteConn) -> Result<Facts, String> {
        let c = &conn.connection;
        Facts::from_sql(|sql| {
            let mut statement = c.prepare(sql).map_err(|error| error.to_string())?;
            let width = statement.column_count();
            let rows = statement
                .query_map([], |row| {
                    (0..width)
                        .map(|index| row.get::<_, Option<i64>>(index).map(|v| v.unwrap_or(0)))
                        .collect()
                })
                .map_err(|error| error.to_string())?;
            rows.collect::<rusqlite::Result<_>>().map_err(|error| error.to_string())
        })
    }
}
