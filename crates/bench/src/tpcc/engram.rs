//! TPC-C on Engram's engine, each transaction one closure on a worker (stored-procedure
//! style, as Silo's benchmarks run). NewOrder, Payment and Delivery run at SERIALIZABLE;
//! OrderStatus and StockLevel at SERIALIZABLE too by default, or as snapshot transactions with
//! `read_only_snapshots` (never abort, read data up to one snapshot interval old).
//!
//! Delivery finds each district's oldest undelivered order by scanning NEW-ORDER from the
//! highest order id already delivered there ([`DeliveryHints`]).

use super::load::BatchSink;
use super::schema::*;
use super::spec::{
    Constants, CustomerSelector, DISTRICTS, DeliveryInput, NewOrderInput, ORDER_LINES_MAX,
    OrderStatusInput, Output, PaymentInput, STOCK_LEVEL_ORDERS, Scale, StockLevelInput,
};
use super::{DeliveryHints, DistrictFacts, Facts, TpccDb, load};
use crate::db::{Db, Outcome};
use engram_engine::{
    Config, Database, Direction, Durability, Error, Gc, IndexKeys, IndexPointers, IndexSpec,
    Isolation, Protocol, TableRef, TableSpec, Txn, VersionStorage, Worker,
};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone)]
struct Tables {
    warehouse: TableRef,
    district: TableRef,
    customer: TableRef,
    history: TableRef,
    order: TableRef,
    new_order: TableRef,
    order_line: TableRef,
    item: TableRef,
    stock: TableRef,
}

/// The isolation levels of the two read-only transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnlyLevels {
    /// What TPC-C requires (clause 3.4.0.1): OrderStatus at level 2 (repeatable read),
    /// StockLevel at level 1 (read committed).
    Specification,
    /// Both serializable.
    Serializable,
    /// Both as snapshot transactions: never abort, read data up to a snapshot interval old.
    Snapshot,
}

impl ReadOnlyLevels {
    pub fn parse(name: &str) -> Option<ReadOnlyLevels> {
        match name {
            "specification" => Some(ReadOnlyLevels::Specification),
            "serializable" => Some(ReadOnlyLevels::Serializable),
            "snapshot" => Some(ReadOnlyLevels::Snapshot),
            _ => None,
        }
    }

    /// The isolation of OrderStatus and of StockLevel.
    pub fn isolations(self) -> (Isolation, Isolation) {
        match self {
            ReadOnlyLevels::Specification => (Isolation::RepeatableRead, Isolation::ReadCommitted),
            ReadOnlyLevels::Serializable => (Isolation::Serializable, Isolation::Serializable),
            ReadOnlyLevels::Snapshot => (Isolation::Snapshot, Isolation::Snapshot),
        }
    }
}

/// How an Engram benchmark database keeps its commits, and the protocol it runs.
#[derive(Debug, Clone, Default)]
pub struct Persistence {
    /// The concurrency-control protocol (`Config::protocol`).
    pub protocol: Protocol,
    /// `None`: purely in memory, nothing logged.
    pub data_dir: Option<std::path::PathBuf>,
    pub durability: Durability,
    pub log_compression: bool,
    /// Updates logged as the bytes they change (`Config::log_patches`).
    pub log_patches: bool,
    /// Log bytes between background checkpoints (`Config::checkpoint_log_bytes`); `None`
    /// keeps the default.
    pub checkpoint_log_bytes: Option<u64>,
    /// The least log since the last checkpoint, as a multiple of the database's estimated
    /// size, before the next one (`Config::checkpoint_log_ratio`); `None` keeps the default.
    pub checkpoint_log_ratio: Option<u64>,
    /// Logger threads (`Config::loggers`); `None` keeps the default.
    pub loggers: Option<usize>,
    /// Spare segments of zeros written at open (`Config::log_reserve_bytes`).
    pub log_reserve_bytes: u64,
    /// Memory spaces shared by the workers (`Config::memory_spaces`; 0: one per worker).
    pub memory_spaces: usize,
    /// How superseded versions are removed (`Config::gc`).
    pub gc: Gc,
    /// Where versions are kept (`Config::version_storage`).
    pub version_storage: VersionStorage,
    /// What secondary entries name (`Config::index_pointers`).
    pub index_pointers: IndexPointers,
    /// Under cooperative cleaning, the vacuum's sweep interval
    /// (`Config::cooperative_sweep_interval_ms`); `None` keeps the default.
    pub cooperative_sweep_interval_ms: Option<u64>,
}

impl Persistence {
    /// The engine configuration that keeps commits as this says.
    pub fn config(&self) -> Config {
        let defaults = Config::default();
        Config {
            protocol: self.protocol,
            memory_spaces: self.memory_spaces,
            gc: self.gc,
            version_storage: self.version_storage,
            index_pointers: self.index_pointers,
            cooperative_sweep_interval_ms: self
                .cooperative_sweep_interval_ms
                .unwrap_or(defaults.cooperative_sweep_interval_ms),
            data_dir: self.data_dir.clone(),
            durability: self.durability,
            log_compression: self.log_compression,
            log_patches: self.log_patches,
            checkpoint_log_bytes: self
                .checkpoint_log_bytes
                .unwrap_or(defaults.checkpoint_log_bytes),
            checkpoint_log_ratio: self
                .checkpoint_log_ratio
                .unwrap_or(defaults.checkpoint_log_ratio),
            loggers: self.loggers.unwrap_or(defaults.loggers),
            log_reserve_bytes: self.log_reserve_bytes,
            ..defaults
        }
    }
}

/// Rebuilds TPC-C's two secondary indexes at recovery.
pub fn index_keys() -> IndexKeys {
    IndexKeys::new(|definition| {
        let key_of: fn(&[u8], &mut Vec<u8>) -> bool = match definition.definition {
            b"customer_by_name" => customer_name_key,
            b"order_by_customer" => order_customer_key,
            _ => return None,
        };
        Some(Arc::new(key_of))
    })
}

#[derive(Debug)]
pub struct EngramTpcc {
    db: Arc<Database>,
    tables: Option<Tables>,
    scale: Scale,
    order_status_isolation: Isolation,
    stock_level_isolation: Isolation,
    /// Memory to reserve after loading.
    reserve_bytes: usize,
    delivered: DeliveryHints,
    threads_connected: AtomicU64,
}

/// A driver thread's worker and reusable buffers.
#[derive(Debug)]
pub struct Conn {
    worker: Worker,
    thread: u16,
    history_sequence: u64,
    row: Vec<u8>,
    key: Vec<u8>,
    high: Vec<u8>,
    found: Vec<u32>,
    delivered: Vec<(u8, u32)>,
}

/// A row the load and the transactions' logic guarantee exists.
fn required(row: Option<&[u8]>) -> Result<&[u8], Error> {
    row.ok_or(Error::NotFound)
}

fn error_outcome(result: Result<(), Error>) -> Outcome {
    match result {
        Ok(()) => Outcome::Committed,
        Err(Error::Aborted(reason)) => Outcome::Aborted(reason.name()),
        Err(Error::Rollback) => Outcome::RolledBack,
        Err(error) => panic!("TPC-C transaction failed: {error}"),
    }
}

/// After a load: reserves `reserve_bytes` of memory for the run to grow into, then waits
/// until snapshots include the load (snapshot transactions read a past epoch: StockScan, and
/// OrderStatus and StockLevel when configured so; bounded by the ticker, about
/// `snapshot_interval_epochs` epochs).
pub fn settle_after_load(db: &Database, reserve_bytes: usize) -> Result<(), String> {
    if reserve_bytes > 0 {
        db.reserve_memory(reserve_bytes).map_err(|error| error.to_string())?;
    }
    let loaded = db.epochs().global();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.epochs().snapshot() <= loaded {
        if std::time::Instant::now() > deadline {
            return Err("snapshots did not catch up with the load within a minute".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(())
}

impl EngramTpcc {
    /// A fresh database. After loading, `reserve_bytes` of memory are mapped and faulted in
    /// for the run to grow into (`Database::reserve_memory`): page faults are not what the
    /// benchmark measures, and a database server reserves its memory up front.
    pub fn open(
        read_only: ReadOnlyLevels,
        reserve_bytes: usize,
        persistence: Persistence,
    ) -> Result<EngramTpcc, String> {
        let config = Config { index_keys: Some(index_keys()), ..persistence.config() };
        let db = Database::open(config).map_err(|error| error.to_string())?;
        let mut tpcc = EngramTpcc::over(Arc::new(db), read_only);
        tpcc.reserve_bytes = reserve_bytes;
        Ok(tpcc)
    }

    /// TPC-C over an open database (a recovered one: see [`EngramTpcc::attach`]).
    pub fn over(db: Arc<Database>, read_only: ReadOnlyLevels) -> EngramTpcc {
        let (order_status_isolation, stock_level_isolation) = read_only.isolations();
        EngramTpcc {
            db,
            tables: None,
            scale: Scale::standard(1),
            order_status_isolation,
            stock_level_isolation,
            delivered: DeliveryHints::default(),
            threads_connected: AtomicU64::new(0),
            reserve_bytes: 0,
        }
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The database, shared: it outlives this adapter (a test reads it after a run).
    pub fn database_handle(&self) -> Arc<Database> {
        Arc::clone(&self.db)
    }

    /// Uses the tables of a recovered database loaded at `scale` instead of loading. Driver
    /// threads number from `first_thread` (history keys include the thread, so a new process
    /// must not reuse an earlier one's numbers).
    pub fn attach(&mut self, scale: &Scale, first_thread: u16) -> Result<(), String> {
        let table = |name: &str| self.db.table(name).map_err(|error| error.to_string());
        self.tables = Some(Tables {
            warehouse: table("warehouse")?,
            district: table("district")?,
            customer: table("customer")?,
            history: table("history")?,
            order: table("order")?,
            new_order: table("new_order")?,
            order_line: table("order_line")?,
            item: table("item")?,
            stock: table("stock")?,
        });
        self.scale = *scale;
        // Recovery left no deleted NEW-ORDER rows in the index: Delivery may scan from the start.
        self.delivered = DeliveryHints::new(scale.warehouses, 0);
        self.threads_connected.store(u64::from(first_thread), Ordering::Relaxed);
        Ok(())
    }

    /// Whether order `(w, d, o)` exists.
    pub fn order_exists(&self, conn: &mut Conn, w: u16, d: u8, o: u32) -> Result<bool, String> {
        let order = &self.tables().order;
        conn.worker
            .transaction(Isolation::ReadCommitted, |txn| {
                Ok(txn.get(order, &order_key(w, d, o))?.is_some())
            })
            .map_err(|error| error.to_string())
    }

    fn logs(&self) -> bool {
        let config = self.db.config();
        config.data_dir.is_some() && config.durability == Durability::Epoch
    }

    fn tables(&self) -> &Tables {
        self.tables.as_ref().expect("loaded")
    }

    fn create_tables(&self) -> Result<Tables, Error> {
        let create = |name: &str| self.db.create_table(TableSpec::new(name));
        Ok(Tables {
            warehouse: create("warehouse")?,
            district: create("district")?,
            customer: self.db.create_table(
                TableSpec::new("customer").index(
                    IndexSpec::new("customer_by_name", false, customer_name_key)
                        .definition(&b"customer_by_name"[..]),
                ),
            )?,
            history: create("history")?,
            order: self.db.create_table(
                TableSpec::new("order").index(
                    IndexSpec::new("order_by_customer", false, order_customer_key)
                        .definition(&b"order_by_customer"[..]),
                ),
            )?,
            new_order: create("new_order")?,
            order_line: create("order_line")?,
            item: create("item")?,
            stock: create("stock")?,
        })
    }
}

impl Db for EngramTpcc {
    type Conn = Conn;

    fn name(&self) -> String {
        let base = match (self.logs(), self.db.config().log_patches) {
            (false, _) => "engram",
            (true, false) => "engram-epoch",
            (true, true) => "engram-epoch-patches",
        };
        match self.db.config().protocol {
            Protocol::Silo => base.into(),
            protocol => format!("{base}-{protocol}"),
        }
    }

    fn durable_epoch(&self) -> Option<u64> {
        self.logs().then(|| self.db.durable_epoch().0)
    }

    fn last_commit_epoch(&self, conn: &Conn) -> Option<u64> {
        self.logs().then(|| conn.worker.last_commit().epoch.0)
    }

    fn pause_background(&self, paused: bool) {
        self.db.pause_checkpoints(paused);
    }

    fn settings(&self) -> String {
        let config = self.db.config();
        format!(
            "stored procedures; protocol {}; NewOrder, Payment, Delivery serializable, OrderStatus {}, StockLevel {}; \
             epoch {} ms; {} MiB reserved after loading; {}",
            config.protocol,
            self.order_status_isolation.name(),
            self.stock_level_isolation.name(),
            config.epoch_interval_ms,
            self.reserve_bytes >> 20,
            match (&config.data_dir, config.durability) {
                (Some(dir), Durability::Epoch) => format!(
                    "durability epoch: log in {} ({} logger, fsync per epoch{}; {})",
                    dir.display(),
                    config.loggers,
                    match (config.log_compression, config.log_patches) {
                        (false, false) => "",
                        (true, false) => ", LZ4",
                        (false, true) => ", patches",
                        (true, true) => ", LZ4, patches",
                    },
                    match (config.checkpoint_log_bytes, config.checkpoint_log_ratio) {
                        (0, _) => "no background checkpoints".to_string(),
                        (bytes, 0) => format!("checkpoint every {} MiB of log", bytes >> 20),
                        (bytes, ratio) => format!(
                            "checkpoint after {} MiB of log and {ratio}x the database's size",
                            bytes >> 20
                        ),
                    }
                ),
                (Some(dir), Durability::Off) =>
                    format!("durability off (data in {})", dir.display()),
                (None, _) => "durability off: nothing logged".into(),
            }
        )
    }

    fn connect(&self) -> Result<Conn, String> {
        Ok(Conn {
            worker: self.db.worker().map_err(|error| error.to_string())?,
            thread: self.threads_connected.fetch_add(1, Ordering::Relaxed) as u16,
            history_sequence: 0,
            row: Vec::with_capacity(1024),
            key: Vec::with_capacity(64),
            high: Vec::with_capacity(64),
            found: Vec::with_capacity(16),
            delivered: Vec::with_capacity(10),
        })
    }
}

/// Rows inserted per load transaction.
const LOAD_BATCH_ROWS: usize = 500;

/// Loads rows into the engine in transactions of `LOAD_BATCH_ROWS` rows.
struct Loader<'a> {
    worker: Worker,
    tables: &'a Tables,
    /// (table, key span, row span) in `bytes`.
    pending: Vec<(u8, usize, usize, usize)>,
    bytes: Vec<u8>,
    row: Vec<u8>,
}

impl Tables {
    /// Tables by the loader's numbering.
    fn by_number(&self, index: u8) -> &TableRef {
        [
            &self.warehouse,
            &self.district,
            &self.customer,
            &self.history,
            &self.order,
            &self.new_order,
            &self.order_line,
            &self.item,
            &self.stock,
        ][usize::from(index)]
    }
}

impl Loader<'_> {
    fn add(&mut self, table: u8, key: &[u8]) -> Result<(), Error> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(&self.row);
        self.pending.push((table, start, key.len(), self.row.len()));
        if self.pending.len() >= LOAD_BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }
}

impl load::BatchSink for Loader<'_> {
    fn flush(&mut self) -> Result<(), Error> {
        let Loader { worker, tables, pending, bytes, .. } = self;
        worker.transaction(Isolation::Serializable, |txn| {
            for &(table, start, key_len, row_len) in pending.iter() {
                let key = &bytes[start..start + key_len];
                let row = &bytes[start + key_len..start + key_len + row_len];
                txn.insert(tables.by_number(table), key, row)?;
            }
            Ok(())
        })?;
        pending.clear();
        bytes.clear();
        Ok(())
    }
}

impl load::Sink for Loader<'_> {
    type Error = Error;

    fn item(&mut self, row: &Item) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(7, &item_key(row.i_id))
    }
    fn warehouse(&mut self, row: &Warehouse) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(0, &warehouse_key(row.w_id))
    }
    fn stock(&mut self, row: &Stock) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(8, &stock_key(row.w_id, row.i_id))
    }
    fn district(&mut self, row: &District) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(1, &district_key(row.w_id, row.d_id))
    }
    fn customer(&mut self, row: &Customer) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(2, &customer_key(row.w_id, row.d_id, row.c_id))
    }
    fn history(&mut self, row: &History, sequence: u64) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(3, &history_key(row.w_id, u16::MAX, sequence))
    }
    fn order(&mut self, row: &Order) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(4, &order_key(row.w_id, row.d_id, row.o_id))
    }
    fn order_line(&mut self, row: &OrderLine) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(6, &order_line_key(row.w_id, row.d_id, row.o_id, row.number))
    }
    fn new_order(&mut self, row: &NewOrder) -> Result<(), Error> {
        row.encode(&mut self.row);
        self.add(5, &order_key(row.w_id, row.d_id, row.o_id))
    }
}

impl TpccDb for EngramTpcc {
    fn engine(&self) -> Option<&Database> {
        Some(&self.db)
    }

    fn fill(&mut self, scale: &Scale, constants: &Constants, threads: usize) -> Result<(), String> {
        let tables = self.create_tables().map_err(|error| error.to_string())?;
        self.scale = *scale;
        self.delivered = DeliveryHints::new(scale.warehouses, scale.first_new_order() - 1);
        let db = &*self.db;
        let loader = |tables| -> Result<Loader<'_>, String> {
            Ok(Loader {
                worker: db.worker().map_err(|error| error.to_string())?,
                tables,
                pending: Vec::with_capacity(LOAD_BATCH_ROWS),
                bytes: Vec::new(),
                row: Vec::new(),
            })
        };
        load::all(scale, constants, threads, || loader(&tables))?;
        self.tables = Some(tables);
        Ok(())
    }

    fn settle(&self) -> Result<(), String> {
        settle_after_load(&self.db, self.reserve_bytes)
    }

    fn new_order(&self, conn: &mut Conn, input: &NewOrderInput, output: &mut Output) -> Outcome {
        let t = self.tables();
        let Conn { worker, row, .. } = conn;
        let result = worker.transaction_once(Isolation::Serializable, |txn| {
            let (w, d) = (input.warehouse, input.district);
            let lines = &input.lines[..];
            let w_tax = u16::read_at(
                required(txn.get(&t.warehouse, &warehouse_key(w))?)?,
                warehouse_at::tax,
            );
            let mut d_tax = 0;
            let mut o = 0;
            let district_found = txn.update_with(&t.district, &district_key(w, d), |row| {
                d_tax = u16::read_at(row, district_at::tax);
                o = u32::read_at(row, district_at::next_o_id);
                (o + 1).write_at(row, district_at::next_o_id);
                true
            })?;
            if !district_found {
                return Err(Error::NotFound);
            }
            let customer = required(txn.get(&t.customer, &customer_key(w, d, input.customer))?)?;
            let discount = u16::read_at(customer, customer_at::discount);
            std::hint::black_box((
                text_at(customer, customer_at::last, 16),
                &customer[customer_at::credit..][..2],
            ));
            let all_local = lines.iter().all(|line| line.supply_warehouse == w);
            Order {
                w_id: w,
                d_id: d,
                o_id: o,
                c_id: input.customer,
                entry_d: input.entry_date,
                carrier_id: 0,
                ol_cnt: lines.len() as u8,
                all_local: all_local as u8,
            }
            .encode(row);
            txn.insert(&t.order, &order_key(w, d, o), row)?;
            NewOrder { w_id: w, d_id: d, o_id: o }.encode(row);
            txn.insert(&t.new_order, &order_key(w, d, o), row)?;
            // Items and stock are random rows of large tables: each is read with one batched
            // lookup, whose cache misses overlap.
            const LINES: usize = ORDER_LINES_MAX as usize;
            let mut item_keys = [[0; 4]; LINES];
            let mut stock_keys = [[0; 6]; LINES];
            for (index, line) in lines.iter().enumerate() {
                item_keys[index] = item_key(line.item);
                stock_keys[index] = stock_key(line.supply_warehouse, line.item);
            }
            let (mut prices, mut item_original, mut unused) =
                ([0i64; LINES], [false; LINES], false);
            txn.get_many(&t.item, &item_keys[..lines.len()], |index, item| match item {
                Some(item) => {
                    prices[index] = i64::read_at(item, item_at::price_cents);
                    item_original[index] =
                        text_at(item, item_at::data, 50).windows(8).any(|part| part == b"ORIGINAL");
                }
                None => unused = true,
            })?;
            // An unused item id rolls the order back (clause 2.4.2.3).
            if unused {
                return Err(Error::Rollback);
            }
            let (mut dist_info, mut original) = ([[0u8; 24]; LINES], 0);
            let (stocked, _) =
                txn.update_many(&t.stock, &stock_keys[..lines.len()], |index, row| {
                    let line = &lines[index];
                    let ordered = i16::from(line.quantity);
                    let quantity = i16::read_at(row, stock_at::quantity);
                    let quantity = if quantity >= ordered + 10 {
                        quantity - ordered
                    } else {
                        quantity - ordered + 91
                    };
                    quantity.write_at(row, stock_at::quantity);
                    (u32::read_at(row, stock_at::ytd) + u32::from(line.quantity))
                        .write_at(row, stock_at::ytd);
                    (u16::read_at(row, stock_at::order_cnt) + 1).write_at(row, stock_at::order_cnt);
                    if line.supply_warehouse != w {
                        (u16::read_at(row, stock_at::remote_cnt) + 1)
                            .write_at(row, stock_at::remote_cnt);
                    }
                    dist_info[index] =
                        <[u8; 24]>::read_at(row, stock_at::dist + 24 * (usize::from(d) - 1));
                    original += u32::from(
                        item_original[index]
                            && text_at(row, stock_at::data, 50)
                                .windows(8)
                                .any(|part| part == b"ORIGINAL"),
                    );
                    true
                })?;
            if stocked != lines.len() {
                return Err(Error::NotFound);
            }
            let mut total = 0i64;
            for (number, line) in lines.iter().enumerate() {
                let amount = i64::from(line.quantity) * prices[number];
                total += amount;
                OrderLine {
                    w_id: w,
                    d_id: d,
                    o_id: o,
                    number: number as u8 + 1,
                    i_id: line.item,
                    supply_w_id: line.supply_warehouse,
                    delivery_d: 0,
                    quantity: line.quantity,
                    amount_cents: amount,
                    dist_info: dist_info[number],
                }
                .encode(row);
                txn.insert(&t.order_line, &order_line_key(w, d, o, number as u8 + 1), row)?;
            }
            // total * (1 - discount) * (1 + w_tax + d_tax), rates in 1/10,000.
            let taxed = total * (10_000 + i64::from(w_tax) + i64::from(d_tax)) / 10_000;
            output.amount_cents = taxed * (10_000 - i64::from(discount)) / 10_000;
            output.order = o;
            output.customer = input.customer;
            output.count = lines.len() as u32;
            output.original = original;
            Ok(())
        });
        error_outcome(result)
    }

    fn payment(&self, conn: &mut Conn, input: &PaymentInput, output: &mut Output) -> Outcome {
        let t = self.tables();
        let Conn { worker, row, key, high, found, thread, history_sequence, .. } = conn;
        *history_sequence += 1;
        let history_key = history_key(input.warehouse, *thread, *history_sequence);
        let result = worker.transaction_once(Isolation::Serializable, |txn| {
            let (w, d) = (input.warehouse, input.district);
            row.clear();
            row.extend_from_slice(required(txn.get(&t.warehouse, &warehouse_key(w))?)?);
            (i64::read_at(row, warehouse_at::ytd_cents) + input.amount_cents)
                .write_at(row, warehouse_at::ytd_cents);
            let w_name = Text::<10>::read_at(row, warehouse_at::name);
            txn.update(&t.warehouse, &warehouse_key(w), row)?;
            row.clear();
            row.extend_from_slice(required(txn.get(&t.district, &district_key(w, d))?)?);
            (i64::read_at(row, district_at::ytd_cents) + input.amount_cents)
                .write_at(row, district_at::ytd_cents);
            let d_name = Text::<10>::read_at(row, district_at::name);
            txn.update(&t.district, &district_key(w, d), row)?;
            let (cw, cd) = (input.customer_warehouse, input.customer_district);
            let c = find_customer(txn, t, cw, cd, &input.customer, key, high, found)?;
            row.clear();
            row.extend_from_slice(required(txn.get(&t.customer, &customer_key(cw, cd, c))?)?);
            let balance = i64::read_at(row, customer_at::balance_cents) - input.amount_cents;
            balance.write_at(row, customer_at::balance_cents);
            (i64::read_at(row, customer_at::ytd_payment_cents) + input.amount_cents)
                .write_at(row, customer_at::ytd_payment_cents);
            (u16::read_at(row, customer_at::payment_cnt) + 1)
                .write_at(row, customer_at::payment_cnt);
            if &row[customer_at::credit..customer_at::credit + 2] == b"BC" {
                // C_DATA gets the payment in front, truncated to 500 characters (2.5.2.2).
                use std::io::Write;
                high.clear();
                let _ = write!(
                    high,
                    "{} {} {} {} {} {}.{:02}|",
                    c,
                    cd,
                    cw,
                    d,
                    w,
                    input.amount_cents / 100,
                    input.amount_cents % 100
                );
                high.extend_from_slice(text_at(row, customer_at::data, 500));
                let data = Text::<500>::new(high);
                let end = customer_at::data + Text::<500>::WIDTH;
                let mut encoded = Vec::with_capacity(Text::<500>::WIDTH);
                data.put(&mut encoded);
                row[customer_at::data..end].copy_from_slice(&encoded);
            }
            txn.update(&t.customer, &customer_key(cw, cd, c), row)?;
            let mut data = [b' '; 24];
            let name_len = w_name.as_bytes().len();
            data[..name_len].copy_from_slice(w_name.as_bytes());
            data[name_len + 4..name_len + 4 + d_name.as_bytes().len()]
                .copy_from_slice(d_name.as_bytes());
            History {
                c_id: c,
                c_d_id: cd,
                c_w_id: cw,
                d_id: d,
                w_id: w,
                date: input.date,
                amount_cents: input.amount_cents,
                data: Text::new(&data[..name_len + 4 + d_name.as_bytes().len()]),
            }
            .encode(row);
            txn.insert(&t.history, &history_key, row)?;
            output.customer = c;
            output.amount_cents = balance;
            Ok(())
        });
        error_outcome(result)
    }

    fn order_status(
        &self,
        conn: &mut Conn,
        input: &OrderStatusInput,
        output: &mut Output,
    ) -> Outcome {
        let t = self.tables();
        let Conn { worker, key, high, found, .. } = conn;
        let result = worker.transaction_once(self.order_status_isolation, |txn| {
            let (w, d) = (input.warehouse, input.district);
            let c = find_customer(txn, t, w, d, &input.customer, key, high, found)?;
            let customer = required(txn.get(&t.customer, &customer_key(w, d, c))?)?;
            let balance = i64::read_at(customer, customer_at::balance_cents);
            std::hint::black_box((
                text_at(customer, customer_at::first, 16),
                text_at(customer, customer_at::last, 16),
            ));
            // The customer's most recent order: the last entry of its prefix in the by-customer
            // index.
            let prefix = order_customer_prefix(w, d, c);
            high.clear();
            high.extend_from_slice(&prefix);
            successor(high);
            let mut order = None;
            txn.scan_index(
                &t.order,
                0,
                Bound::Included(&prefix),
                Bound::Excluded(high),
                Direction::Reverse,
                1,
                |_, row| {
                    order = Some(u32::read_at(row, order_at::o_id));
                    std::hint::black_box((
                        u64::read_at(row, order_at::entry_d),
                        row[order_at::carrier_id],
                    ));
                    false
                },
            )?;
            let mut lines = 0;
            if let Some(o) = order {
                let low = order_line_key(w, d, o, 0);
                let end = order_line_key(w, d, o + 1, 0);
                lines = txn.scan(
                    &t.order_line,
                    Bound::Included(&low),
                    Bound::Excluded(&end),
                    Direction::Forward,
                    usize::MAX,
                    |_, row| {
                        std::hint::black_box((
                            u32::read_at(row, order_line_at::i_id),
                            u16::read_at(row, order_line_at::supply_w_id),
                            row[order_line_at::quantity],
                            i64::read_at(row, order_line_at::amount_cents),
                            u64::read_at(row, order_line_at::delivery_d),
                        ));
                        true
                    },
                )?;
            }
            output.customer = c;
            output.amount_cents = balance;
            output.order = order.unwrap_or(0);
            output.count = lines as u32;
            Ok(())
        });
        error_outcome(result)
    }

    fn delivery(&self, conn: &mut Conn, input: &DeliveryInput, output: &mut Output) -> Outcome {
        let t = self.tables();
        let Conn { worker, row, delivered, .. } = conn;
        let w = input.warehouse;
        let result = worker.transaction_once(Isolation::Serializable, |txn| {
            delivered.clear();
            for d in 1..=DISTRICTS {
                let from = order_key(w, d, self.delivered.get(w, d) + 1);
                let end = order_key(w, d, u32::MAX);
                let mut oldest = None;
                txn.scan(
                    &t.new_order,
                    Bound::Included(&from),
                    Bound::Included(&end),
                    Direction::Forward,
                    1,
                    |_, row| {
                        oldest = Some(u32::read_at(row, new_order_at::o_id));
                        false
                    },
                )?;
                // A district with no undelivered order is skipped (clause 2.7.4.2).
                let Some(o) = oldest else { continue };
                txn.delete(&t.new_order, &order_key(w, d, o))?;
                row.clear();
                row.extend_from_slice(required(txn.get(&t.order, &order_key(w, d, o))?)?);
                let c = u32::read_at(row, order_at::c_id);
                input.carrier.write_at(row, order_at::carrier_id);
                txn.update(&t.order, &order_key(w, d, o), row)?;
                let mut total = 0;
                let low = order_line_key(w, d, o, 0);
                let high = order_line_key(w, d, o + 1, 0);
                txn.update_range(
                    &t.order_line,
                    Bound::Included(&low),
                    Bound::Excluded(&high),
                    Direction::Forward,
                    usize::MAX,
                    |_, line, out| {
                        total += i64::read_at(line, order_line_at::amount_cents);
                        out.extend_from_slice(line);
                        input.date.write_at(out, order_line_at::delivery_d);
                        true
                    },
                )?;
                let customer_key = customer_key(w, d, c);
                row.clear();
                row.extend_from_slice(required(txn.get(&t.customer, &customer_key)?)?);
                (i64::read_at(row, customer_at::balance_cents) + total)
                    .write_at(row, customer_at::balance_cents);
                (u16::read_at(row, customer_at::delivery_cnt) + 1)
                    .write_at(row, customer_at::delivery_cnt);
                txn.update(&t.customer, &customer_key, row)?;
                delivered.push((d, o));
            }
            output.count = delivered.len() as u32;
            Ok(())
        });
        let outcome = error_outcome(result);
        if outcome == Outcome::Committed {
            for &(d, o) in delivered.iter() {
                self.delivered.raise(w, d, o);
            }
        }
        outcome
    }

    fn stock_level(
        &self,
        conn: &mut Conn,
        input: &StockLevelInput,
        output: &mut Output,
    ) -> Outcome {
        let t = self.tables();
        let Conn { worker, found, .. } = conn;
        let result = worker.transaction_once(self.stock_level_isolation, |txn| {
            let (w, d) = (input.warehouse, input.district);
            let next = u32::read_at(
                required(txn.get(&t.district, &district_key(w, d))?)?,
                district_at::next_o_id,
            );
            let low = order_line_key(w, d, next.saturating_sub(STOCK_LEVEL_ORDERS), 0);
            let high = order_line_key(w, d, next, 0);
            found.clear();
            txn.scan(
                &t.order_line,
                Bound::Included(&low),
                Bound::Excluded(&high),
                Direction::Forward,
                usize::MAX,
                |_, row| {
                    found.push(u32::read_at(row, order_line_at::i_id));
                    true
                },
            )?;
            found.sort_unstable();
            found.dedup();
            let mut low_stock = 0;
            // Batched lookups, whose cache misses overlap.
            const KEYS: usize = 16;
            let (mut keys, mut missing) = ([[0; 6]; KEYS], false);
            for items in found.chunks(KEYS) {
                for (key, &item) in keys.iter_mut().zip(items) {
                    *key = stock_key(w, item);
                }
                txn.get_many(&t.stock, &keys[..items.len()], |_, stock| match stock {
                    Some(row) => {
                        let quantity = i16::read_at(row, stock_at::quantity);
                        low_stock += u32::from(i32::from(quantity) < input.threshold);
                    }
                    None => missing = true,
                })?;
            }
            if missing {
                return Err(Error::NotFound);
            }
            output.count = low_stock;
            Ok(())
        });
        error_outcome(result)
    }

    fn stock_scan(&self, conn: &mut Conn) -> Result<Vec<u64>, String> {
        let t = self.tables();
        let warehouses = usize::from(self.scale.warehouses);
        conn.worker
            .transaction(Isolation::Snapshot, |txn| {
                let mut counts = vec![0u64; warehouses];
                scan_all(txn, &t.stock, |key, _| {
                    let w = u16::from_be_bytes([key[0], key[1]]);
                    counts[usize::from(w) - 1] += 1;
                    true
                })?;
                Ok(counts)
            })
            .map_err(|error| error.to_string())
    }

    fn facts(&self, conn: &mut Conn) -> Result<Facts, String> {
        let t = self.tables();
        // Run once the drivers have stopped: read committed sees the final state, and a read
        // set of millions of order lines would only cost memory.
        conn.worker
            .transaction(Isolation::ReadCommitted, |txn| {
                let mut facts = Facts::default();
                scan_all(txn, &t.warehouse, |_, row| {
                    let warehouse = Warehouse::decode(row);
                    facts.warehouses.push((warehouse.w_id, warehouse.ytd_cents));
                    true
                })?;
                scan_all(txn, &t.district, |_, row| {
                    let district = District::decode(row);
                    facts.districts.push(DistrictFacts {
                        w_id: district.w_id,
                        d_id: district.d_id,
                        ytd_cents: district.ytd_cents,
                        next_o_id: district.next_o_id,
                        ..DistrictFacts::default()
                    });
                    true
                })?;
                let index_of = |w: u16, d: u8| {
                    usize::from(w - 1) * usize::from(DISTRICTS) + usize::from(d) - 1
                };
                let districts = &mut facts.districts;
                scan_all(txn, &t.order, |_, row| {
                    let order = Order::decode(row);
                    let district = &mut districts[index_of(order.w_id, order.d_id)];
                    district.max_o_id = district.max_o_id.max(order.o_id);
                    district.sum_ol_cnt += u64::from(order.ol_cnt);
                    true
                })?;
                scan_all(txn, &t.new_order, |_, row| {
                    let new_order = NewOrder::decode(row);
                    let district = &mut districts[index_of(new_order.w_id, new_order.d_id)];
                    let o = new_order.o_id;
                    district.new_orders = Some(match district.new_orders {
                        None => (o, o, 1),
                        Some((min, max, count)) => (min.min(o), max.max(o), count + 1),
                    });
                    true
                })?;
                scan_all(txn, &t.order_line, |_, row| {
                    let line = OrderLine::decode(row);
                    districts[index_of(line.w_id, line.d_id)].order_lines += 1;
                    true
                })?;
                let sums = &mut facts.customers;
                scan_all(txn, &t.customer, |_, row| {
                    let customer = Customer::decode(row);
                    sums[0] += customer.balance_cents;
                    sums[1] += customer.ytd_payment_cents;
                    sums[2] += i64::from(customer.payment_cnt);
                    sums[3] += i64::from(customer.delivery_cnt);
                    sums[4] += customer.data.as_bytes().len() as i64;
                    true
                })?;
                let sums = &mut facts.stock;
                scan_all(txn, &t.stock, |_, row| {
                    let stock = Stock::decode(row);
                    sums[0] += i64::from(stock.quantity);
                    sums[1] += i64::from(stock.ytd);
                    sums[2] += i64::from(stock.order_cnt);
                    sums[3] += i64::from(stock.remote_cnt);
                    true
                })?;
                Ok(facts)
            })
            .map_err(|error| error.to_string())
    }
}

/// Visits every row of `table` in key order.
fn scan_all(
    txn: &mut Txn<'_>,
    table: &TableRef,
    visit: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<usize, Error> {
    txn.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward, usize::MAX, visit)
}

/// Replaces `prefix` with the smallest key above every key that starts with it: the exclusive
/// upper bound of a prefix scan. TPC-C prefixes always have one (they start with a warehouse
/// id, never all 0xFF bytes).
fn successor(prefix: &mut Vec<u8>) {
    *prefix = engram_engine::index::key::prefix_successor(prefix)
        .expect("a TPC-C prefix has a successor");
}

/// The customer a Payment or OrderStatus names: by id, or the one at position ceil(n / 2) among
/// the n customers with the last name, ordered by first name (clause 2.5.2.2).
#[allow(clippy::too_many_arguments)]
fn find_customer(
    txn: &mut Txn<'_>,
    t: &Tables,
    w: u16,
    d: u8,
    selector: &CustomerSelector,
    key: &mut Vec<u8>,
    high: &mut Vec<u8>,
    found: &mut Vec<u32>,
) -> Result<u32, Error> {
    match selector {
        CustomerSelector::Id(c) => Ok(*c),
        CustomerSelector::LastName(last) => {
            // The by-name index key is (W, D, C_LAST, C_FIRST); every key of this last name
            // starts with the encoding of (W, D, C_LAST).
            key.clear();
            customer_name_prefix(w, d, last, key);
            high.clear();
            high.extend_from_slice(key);
            successor(high);
            found.clear();
            txn.scan_index(
                &t.customer,
                0,
                Bound::Included(key),
                Bound::Excluded(high),
                Direction::Forward,
                usize::MAX,
                |primary_key, _| {
                    found.push(u32::from_be_bytes(
                        primary_key[3..7].try_into().expect("customer key"),
                    ));
                    true
                },
            )?;
            if found.is_empty() {
                return Err(Error::NotFound);
            }
            Ok(found[found.len().div_ceil(2) - 1])
        }
    }
}
