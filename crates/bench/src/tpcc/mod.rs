//! TPC-C (v5.11), in throughput mode: no keying or think times, the full five-transaction
//! logic, the specification's population and its consistency conditions 1 to 4 checked after
//! every run.
//!
//! - `spec`: scale, NURand and the other random rules, transaction inputs;
//! - `schema`: the nine tables as rows and keys, for the engine adapter;
//! - `engram`: the engine adapter, one closure per transaction (stored-procedure style);
//! - `sql`: the same transactions as SQL statements through Engram's SQL front end;
//! - `sqlite`: the same transactions in SQL on SQLite, the embedded peer;
//! - this file: the driver (mix, warehouse assignment, retries, tallies), consistency and
//!   reports.

pub mod engram;
pub mod load;
pub mod schema;
pub mod spec;
pub mod sql;
pub mod sqlite;
pub mod wire;

use crate::db::{Db, Either, Outcome};
use crate::report::{Latency, Machine, PaddedCounter, Percentiles, Progress};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use serde::Serialize;
use spec::{
    Constants, DeliveryInput, NewOrderInput, OrderStatusInput, Output, PaymentInput, Scale,
    StockLevelInput,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The highest order id delivered in each district, raised only after a Delivery commits: an
/// application's memory of where Delivery's scan of NEW-ORDER may start. Orders are created in
/// increasing id order and delivered oldest first, so every undelivered order lies above it,
/// and the scan does not wade through rows deleted but not yet collected (Silo's TPC-C keeps
/// the same). The scan itself stays transactional; the hint only chooses where it starts.
#[derive(Debug, Default)]
pub struct DeliveryHints(Vec<AtomicU32>);

impl DeliveryHints {
    /// Every district of `warehouses` delivered up to `delivered`.
    pub fn new(warehouses: u16, delivered: u32) -> DeliveryHints {
        let districts = usize::from(warehouses) * usize::from(spec::DISTRICTS);
        DeliveryHints((0..districts).map(|_| AtomicU32::new(delivered)).collect())
    }

    fn slot(&self, w: u16, d: u8) -> &AtomicU32 {
        &self.0[usize::from(w - 1) * usize::from(spec::DISTRICTS) + usize::from(d) - 1]
    }

    /// The highest order id known delivered in district `d` of warehouse `w`.
    pub fn get(&self, w: u16, d: u8) -> u32 {
        self.slot(w, d).load(Ordering::Relaxed)
    }

    /// Records that order `o` of the district was delivered by a committed transaction.
    pub fn raise(&self, w: u16, d: u8, o: u32) {
        self.slot(w, d).fetch_max(o, Ordering::Relaxed);
    }
}

/// A database that can run TPC-C.
pub trait TpccDb: Db {
    /// Creates the nine tables and loads `scale` with the load-time constants, on `threads`.
    fn fill(&mut self, scale: &Scale, constants: &Constants, threads: usize) -> Result<(), String>;
    /// Readies a filled database for a run: reserves the memory the run will grow into and
    /// waits until snapshots include the load. A run of several databases fills them all
    /// before it settles any, so that no database loads into memory another one reserved.
    fn settle(&self) -> Result<(), String> {
        Ok(())
    }
    /// The Engram database underneath, whose conflict statistics a report shows.
    fn engine(&self) -> Option<&engram_engine::Database> {
        None
    }
    /// [`TpccDb::fill`], then [`TpccDb::settle`].
    fn load(&mut self, scale: &Scale, constants: &Constants, threads: usize) -> Result<(), String> {
        self.fill(scale, constants, threads)?;
        self.settle()
    }
    fn new_order(
        &self,
        conn: &mut Self::Conn,
        input: &NewOrderInput,
        output: &mut Output,
    ) -> Outcome;
    fn payment(&self, conn: &mut Self::Conn, input: &PaymentInput, output: &mut Output) -> Outcome;
    fn order_status(
        &self,
        conn: &mut Self::Conn,
        input: &OrderStatusInput,
        output: &mut Output,
    ) -> Outcome;
    fn delivery(
        &self,
        conn: &mut Self::Conn,
        input: &DeliveryInput,
        output: &mut Output,
    ) -> Outcome;
    fn stock_level(
        &self,
        conn: &mut Self::Conn,
        input: &StockLevelInput,
        output: &mut Output,
    ) -> Outcome;
    /// Wu et al.'s StockScan: scan STOCK and count items per warehouse (index 0 is warehouse 1).
    fn stock_scan(&self, conn: &mut Self::Conn) -> Result<Vec<u64>, String>;
    /// Schema change number `round` of a run with `Options::ddl_every` (`sql/ddl.rs`).
    fn alter(&self, conn: &mut Self::Conn, round: u64) -> Result<(), String> {
        let _ = (conn, round);
        Err(format!("{} runs no ALTER TABLE in this benchmark", self.name()))
    }
    /// The aggregates the consistency conditions compare.
    fn facts(&self, conn: &mut Self::Conn) -> Result<Facts, String>;
}

/// Calls `$method` on whichever database `$self` is, with its own kind of connection.
macro_rules! either {
    ($self:ident, $conn:ident, $method:ident ($($arg:expr),*)) => {
        match ($self, $conn) {
            (Either::First(db), Either::First(conn)) => db.$method(conn $(, $arg)*),
            (Either::Second(db), Either::Second(conn)) => db.$method(conn $(, $arg)*),
            _ => panic!("a connection used with another database"),
        }
    };
}

impl<A: TpccDb, B: TpccDb> TpccDb for Either<A, B> {
    fn fill(&mut self, scale: &Scale, constants: &Constants, threads: usize) -> Result<(), String> {
        match self {
            Either::First(db) => db.fill(scale, constants, threads),
            Either::Second(db) => db.fill(scale, constants, threads),
        }
    }
    fn settle(&self) -> Result<(), String> {
        match self {
            Either::First(db) => db.settle(),
            Either::Second(db) => db.settle(),
        }
    }
    fn new_order(
        &self,
        conn: &mut Self::Conn,
        input: &NewOrderInput,
        output: &mut Output,
    ) -> Outcome {
        either!(self, conn, new_order(input, output))
    }
    fn payment(&self, conn: &mut Self::Conn, input: &PaymentInput, output: &mut Output) -> Outcome {
        either!(self, conn, payment(input, output))
    }
    fn order_status(
        &self,
        conn: &mut Self::Conn,
        input: &OrderStatusInput,
        output: &mut Output,
    ) -> Outcome {
        either!(self, conn, order_status(input, output))
    }
    fn delivery(
        &self,
        conn: &mut Self::Conn,
        input: &DeliveryInput,
        output: &mut Output,
    ) -> Outcome {
        either!(self, conn, delivery(input, output))
    }
    fn stock_level(
        &self,
        conn: &mut Self::Conn,
        input: &StockLevelInput,
        output: &mut Output,
    ) -> Outcome {
        either!(self, conn, stock_level(input, output))
    }
    fn stock_scan(&self, conn: &mut Self::Conn) -> Result<Vec<u64>, String> {
        either!(self, conn, stock_scan())
    }
    fn alter(&self, conn: &mut Self::Conn, round: u64) -> Result<(), String> {
        either!(self, conn, alter(round))
    }
    fn facts(&self, conn: &mut Self::Conn) -> Result<Facts, String> {
        either!(self, conn, facts())
    }
}

/// Per-warehouse and per-district aggregates for consistency conditions 1 to 4.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// (W_ID, W_YTD in cents).
    pub warehouses: Vec<(u16, i64)>,
    pub districts: Vec<DistrictFacts>,
    /// Not a consistency condition, but what two databases that ran the same transactions
    /// must agree on: over CUSTOMER, the sums of C_BALANCE and C_YTD_PAYMENT in cents, of
    /// C_PAYMENT_CNT and C_DELIVERY_CNT, and of the lengths of C_DATA (which a payment by a
    /// bad-credit customer rewrites).
    pub customers: [i64; 5],
    /// Over STOCK, the sums of S_QUANTITY, S_YTD, S_ORDER_CNT and S_REMOTE_CNT.
    pub stock: [i64; 4],
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DistrictFacts {
    pub w_id: u16,
    pub d_id: u8,
    pub ytd_cents: i64,
    pub next_o_id: u32,
    pub max_o_id: u32,
    /// (min, max, count) of NO_O_ID, if the district has new orders.
    pub new_orders: Option<(u32, u32, u64)>,
    pub sum_ol_cnt: u64,
    pub order_lines: u64,
}

impl Facts {
    /// Clause 3.3.2.1 to 3.3.2.4. Returns the violations, one line each.
    pub fn violations(&self) -> Vec<String> {
        let mut violations = Vec::new();
        for &(w_id, ytd) in &self.warehouses {
            let districts: i64 =
                self.districts.iter().filter(|d| d.w_id == w_id).map(|d| d.ytd_cents).sum();
            if districts != ytd {
                violations.push(format!(
                    "condition 1: warehouse {w_id} W_YTD {ytd} != sum of D_YTD {districts} (cents)"
                ));
            }
        }
        for district in &self.districts {
            let (w, d) = (district.w_id, district.d_id);
            if district.next_o_id - 1 != district.max_o_id {
                violations.push(format!(
                    "condition 2: district ({w},{d}) D_NEXT_O_ID - 1 = {} but max(O_ID) = {}",
                    district.next_o_id - 1,
                    district.max_o_id
                ));
            }
            if let Some((min, max, count)) = district.new_orders {
                if max != district.max_o_id {
                    violations.push(format!(
                        "condition 2: district ({w},{d}) max(NO_O_ID) = {max} but max(O_ID) = {}",
                        district.max_o_id
                    ));
                }
                if u64::from(max - min + 1) != count {
                    violations.push(format!(
                        "condition 3: district ({w},{d}) has {count} new orders for ids {min}..={max}"
                    ));
                }
            }
            if district.sum_ol_cnt != district.order_lines {
                violations.push(format!(
                    "condition 4: district ({w},{d}) sum(O_OL_CNT) = {} but {} order lines",
                    district.sum_ol_cnt, district.order_lines
                ));
            }
        }
        violations
    }
}

impl Facts {
    /// The facts through SQL, for the SQL adapters: `query` runs a statement and returns its
    /// rows with every column as an integer (money in cents, NULL as 0).
    pub fn from_sql(
        mut query: impl FnMut(&str) -> Result<Vec<Vec<i64>>, String>,
    ) -> Result<Facts, String> {
        let mut facts = Facts::default();
        for row in query("SELECT w_id, w_ytd FROM warehouse ORDER BY w_id")? {
            facts.warehouses.push((row[0] as u16, row[1]));
        }
        for row in
            query("SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM district ORDER BY d_w_id, d_id")?
        {
            facts.districts.push(DistrictFacts {
                w_id: row[0] as u16,
                d_id: row[1] as u8,
                ytd_cents: row[2],
                next_o_id: row[3] as u32,
                ..DistrictFacts::default()
            });
        }
        let districts = usize::from(spec::DISTRICTS);
        let index_of = |w: i64, d: i64| (w as usize - 1) * districts + d as usize - 1;
        for row in query(
            "SELECT o_w_id, o_d_id, MAX(o_id), SUM(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id",
        )? {
            let district = &mut facts.districts[index_of(row[0], row[1])];
            district.max_o_id = row[2] as u32;
            district.sum_ol_cnt = row[3] as u64;
        }
        for row in query(
            "SELECT no_w_id, no_d_id, MIN(no_o_id), MAX(no_o_id), COUNT(*) FROM new_order \
             GROUP BY no_w_id, no_d_id",
        )? {
            facts.districts[index_of(row[0], row[1])].new_orders =
                Some((row[2] as u32, row[3] as u32, row[4] as u64));
        }
        for row in
            query("SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id")?
        {
            facts.districts[index_of(row[0], row[1])].order_lines = row[2] as u64;
        }
        let sums = |row: Vec<Vec<i64>>, into: &mut [i64]| {
            let row = row.into_iter().next().unwrap_or_default();
            for (sum, value) in into.iter_mut().zip(row) {
                *sum = value;
            }
        };
        sums(
            query(
                "SELECT SUM(c_balance), SUM(c_ytd_payment), SUM(c_payment_cnt), \
                 SUM(c_delivery_cnt), SUM(length(c_data)) FROM customer",
            )?,
            &mut facts.customers,
        );
        sums(
            query(
                "SELECT SUM(s_quantity), SUM(s_ytd), SUM(s_order_cnt), SUM(s_remote_cnt) \
                 FROM stock",
            )?,
            &mut facts.stock,
        );
        Ok(facts)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// 45% NewOrder, 43% Payment, 4% each OrderStatus, Delivery, StockLevel (clause 5.2.3).
    Standard,
    /// 50% NewOrder, 50% Payment: the mix DBx1000 and TicToc publish.
    NewOrderPayment,
}

impl Mix {
    pub fn parse(name: &str) -> Option<Mix> {
        match name {
            "standard" => Some(Mix::Standard),
            "new-order-payment" => Some(Mix::NewOrderPayment),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mix::Standard => "standard",
            Mix::NewOrderPayment => "new-order-payment",
        }
    }

    fn choose(self, random: &mut SmallRng) -> Kind {
        let roll = random.random_range(1..=100);
        match self {
            Mix::Standard => match roll {
                1..=45 => Kind::NewOrder,
                46..=88 => Kind::Payment,
                89..=92 => Kind::OrderStatus,
                93..=96 => Kind::Delivery,
                _ => Kind::StockLevel,
            },
            Mix::NewOrderPayment => {
                if roll <= 50 {
                    Kind::NewOrder
                } else {
                    Kind::Payment
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl Kind {
    pub const ALL: [Kind; 5] =
        [Kind::NewOrder, Kind::Payment, Kind::OrderStatus, Kind::Delivery, Kind::StockLevel];

    pub fn name(self) -> &'static str {
        match self {
            Kind::NewOrder => "new_order",
            Kind::Payment => "payment",
            Kind::OrderStatus => "order_status",
            Kind::Delivery => "delivery",
            Kind::StockLevel => "stock_level",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub scale: Scale,
    pub threads: usize,
    pub duration: Duration,
    pub mix: Mix,
    pub stock_scan: bool,
    /// Run one ALTER TABLE on the benchmark's tables this often, from one more connection.
    pub ddl_every: Option<Duration>,
    pub seed: u64,
    pub progress: bool,
}

/// The warehouses thread `thread` of `threads` works on (Silo: one home warehouse per thread;
/// with more warehouses than threads each thread takes every `threads`-th one; with fewer,
/// threads share).
pub fn home_warehouses(thread: usize, threads: usize, warehouses: u16) -> Vec<u16> {
    let warehouses = warehouses as usize;
    if warehouses >= threads {
        (1..=warehouses).filter(|w| (w - 1) % threads == thread).map(|w| w as u16).collect()
    } else {
        vec![(thread % warehouses + 1) as u16]
    }
}

/// What happened to one transaction type.
#[derive(Debug, Clone, Default)]
pub struct TypeTally {
    pub committed: u64,
    pub rolled_back: u64,
    pub aborted: u64,
    pub aborts_by_reason: BTreeMap<String, u64>,
    pub latency: Latency,
}

impl TypeTally {
    fn merge(&mut self, other: &TypeTally) {
        self.committed += other.committed;
        self.rolled_back += other.rolled_back;
        self.aborted += other.aborted;
        for (reason, count) in &other.aborts_by_reason {
            *self.aborts_by_reason.entry(reason.clone()).or_default() += count;
        }
        self.latency.merge(&other.latency);
    }
}

#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub types: BTreeMap<Kind, TypeTally>,
    pub elapsed: Duration,
    pub stock_scans: u64,
    pub stock_scan_latency: Latency,
    pub alters: u64,
    pub alter_latency: Latency,
    /// With durability on: from a transaction's start until its commit is durable (when it
    /// may be acknowledged), over every committed transaction.
    pub durable_latency: Latency,
    pub durable_commits: u64,
    /// Aborts per (table, key, reason), where the database reports them.
    pub contended: BTreeMap<(String, String, String), u64>,
    /// Throughput of each merged measurement, in order.
    pub rounds: Vec<f64>,
}

impl Tally {
    pub fn completed(&self) -> u64 {
        self.types.values().map(|tally| tally.committed + tally.rolled_back).sum()
    }

    pub fn merge(&mut self, other: &Tally) {
        for (kind, tally) in &other.types {
            self.types.entry(*kind).or_default().merge(tally);
        }
        self.elapsed += other.elapsed;
        self.stock_scans += other.stock_scans;
        self.stock_scan_latency.merge(&other.stock_scan_latency);
        self.alters += other.alters;
        self.alter_latency.merge(&other.alter_latency);
        self.durable_latency.merge(&other.durable_latency);
        self.durable_commits += other.durable_commits;
        crate::report::merge_contention(&mut self.contended, &other.contended);
        self.rounds.push(other.completed() as f64 / other.elapsed.as_secs_f64());
    }
}

/// Runs one transaction until it commits or rolls back, counting aborts.
fn execute<D: TpccDb>(
    db: &D,
    conn: &mut D::Conn,
    kind: Kind,
    inputs: &Inputs,
    output: &mut Output,
    tally: &mut TypeTally,
) -> (Instant, bool) {
    let began = Instant::now();
    let mut committed = false;
    loop {
        let outcome = match kind {
            Kind::NewOrder => db.new_order(conn, &inputs.new_order, output),
            Kind::Payment => db.payment(conn, &inputs.payment, output),
            Kind::OrderStatus => db.order_status(conn, &inputs.order_status, output),
            Kind::Delivery => db.delivery(conn, &inputs.delivery, output),
            Kind::StockLevel => db.stock_level(conn, &inputs.stock_level, output),
        };
        match outcome {
            Outcome::Committed => {
                tally.committed += 1;
                committed = true;
            }
            Outcome::RolledBack => tally.rolled_back += 1,
            Outcome::Aborted(reason) => {
                tally.aborted += 1;
                *tally.aborts_by_reason.entry(reason.to_string()).or_default() += 1;
                continue;
            }
        }
        break;
    }
    tally.latency.record(began.elapsed());
    (began, committed)
}

/// Commits waiting to become durable, oldest first, and the latency of those that have.
#[derive(Default)]
struct DurableTracker {
    waiting: std::collections::VecDeque<(Instant, u64)>,
}

impl DurableTracker {
    fn settle<D: Db>(&mut self, db: &D, tally: &mut Tally) {
        let Some(durable) = db.durable_epoch() else { return };
        // Nothing became durable since the last call (the common case: a call per commit, a
        // new durable epoch every 40 ms): no clock read.
        if self.waiting.front().is_none_or(|&(_, epoch)| epoch > durable) {
            return;
        }
        let now = Instant::now();
        while let Some(&(began, epoch)) = self.waiting.front() {
            if epoch > durable {
                break;
            }
            tally.durable_latency.record(now - began);
            tally.durable_commits += 1;
            self.waiting.pop_front();
        }
    }
}

/// The current inputs of each transaction type (only the chosen one is regenerated).
struct Inputs {
    new_order: NewOrderInput,
    payment: PaymentInput,
    order_status: OrderStatusInput,
    delivery: DeliveryInput,
    stock_level: StockLevelInput,
}

/// Runs the mix for `duration` on `options.threads` threads, plus a StockScan thread if asked.
pub fn measure<D: TpccDb>(
    db: &D,
    options: &Options,
    constants: &Constants,
    duration: Duration,
    label: &str,
) -> Result<Tally, String> {
    let stop = AtomicBool::new(false);
    let counters: Vec<PaddedCounter> =
        (0..options.threads).map(|_| PaddedCounter::default()).collect();
    let started = Instant::now();
    let stopped = std::sync::Mutex::new(None);
    let (tallies, scans) =
        std::thread::scope(|scope| -> Result<(Vec<Tally>, Option<Tally>), String> {
            let handles: Vec<_> = (0..options.threads)
                .map(|thread| {
                    let (stop, counter) = (&stop, &counters[thread]);
                    scope.spawn(move || -> Result<Tally, String> {
                        let mut conn = db.connect()?;
                        let mut random = SmallRng::seed_from_u64(
                            options.seed.wrapping_mul(7_919) + thread as u64,
                        );
                        let homes =
                            home_warehouses(thread, options.threads, options.scale.warehouses);
                        let scale = &options.scale;
                        let mut inputs = Inputs {
                            new_order: NewOrderInput::generate(
                                &mut random,
                                scale,
                                constants,
                                homes[0],
                            ),
                            payment: PaymentInput::generate(
                                &mut random,
                                scale,
                                constants,
                                homes[0],
                            ),
                            order_status: OrderStatusInput::generate(
                                &mut random,
                                scale,
                                constants,
                                homes[0],
                            ),
                            delivery: DeliveryInput::generate(&mut random, homes[0]),
                            stock_level: StockLevelInput::generate(&mut random, homes[0]),
                        };
                        let mut tally = Tally::default();
                        let mut durable = DurableTracker::default();
                        let mut output = Output::default();
                        let mut done = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let home = homes[random.random_range(0..homes.len())];
                            let kind = options.mix.choose(&mut random);
                            match kind {
                                Kind::NewOrder => {
                                    inputs.new_order =
                                        NewOrderInput::generate(&mut random, scale, constants, home)
                                }
                                Kind::Payment => {
                                    inputs.payment =
                                        PaymentInput::generate(&mut random, scale, constants, home)
                                }
                                Kind::OrderStatus => {
                                    inputs.order_status = OrderStatusInput::generate(
                                        &mut random,
                                        scale,
                                        constants,
                                        home,
                                    )
                                }
                                Kind::Delivery => {
                                    inputs.delivery = DeliveryInput::generate(&mut random, home)
                                }
                                Kind::StockLevel => {
                                    inputs.stock_level =
                                        StockLevelInput::generate(&mut random, home)
                                }
                            }
                            let (began, committed) = execute(
                                db,
                                &mut conn,
                                kind,
                                &inputs,
                                &mut output,
                                tally.types.entry(kind).or_default(),
                            );
                            if committed && let Some(epoch) = db.last_commit_epoch(&conn) {
                                durable.waiting.push_back((began, epoch));
                                durable.settle(db, &mut tally);
                            }
                            done += 1;
                            if done.is_multiple_of(16) {
                                counter.0.store(done, Ordering::Relaxed);
                            }
                        }
                        // The last commits of the round become durable within an epoch or two.
                        let deadline = Instant::now() + Duration::from_secs(2);
                        while !durable.waiting.is_empty() && Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(1));
                            durable.settle(db, &mut tally);
                        }
                        Ok(tally)
                    })
                })
                .collect();
            let scanner = options.stock_scan.then(|| {
                let stop = &stop;
                scope.spawn(move || -> Result<Tally, String> {
                    let mut conn = db.connect()?;
                    let mut tally = Tally::default();
                    while !stop.load(Ordering::Relaxed) {
                        let began = Instant::now();
                        let counts = db.stock_scan(&mut conn)?;
                        std::hint::black_box(counts);
                        tally.stock_scan_latency.record(began.elapsed());
                        tally.stock_scans += 1;
                    }
                    Ok(tally)
                })
            });
            let altering = options.ddl_every.map(|every| {
                let stop = &stop;
                scope.spawn(move || -> Result<Tally, String> {
                    let mut conn = db.connect()?;
                    let mut tally = Tally::default();
                    let mut next = Instant::now() + every;
                    while !stop.load(Ordering::Relaxed) {
                        let now = Instant::now();
                        if now < next {
                            // Woken rarely: the driver threads keep the cores.
                            std::thread::sleep((next - now).min(Duration::from_millis(50)));
                            continue;
                        }
                        next += every;
                        let began = Instant::now();
                        db.alter(&mut conn, tally.alters)?;
                        tally.alter_latency.record(began.elapsed());
                        tally.alters += 1;
                    }
                    Ok(tally)
                })
            });
            Progress::new(label, duration, options.progress).watch(&counters, duration);
            stop.store(true, Ordering::Relaxed);
            // Waiting for the last commits to become durable is not part of the measurement.
            *stopped.lock().unwrap() = Some(started.elapsed());
            let tallies = handles
                .into_iter()
                .map(|handle| handle.join().expect("driver thread"))
                .collect::<Result<Vec<_>, _>>()?;
            let mut scans =
                scanner.map(|handle| handle.join().expect("scan thread")).transpose()?;
            if let Some(alters) =
                altering.map(|handle| handle.join().expect("ALTER thread")).transpose()?
            {
                scans.get_or_insert_with(Tally::default).merge(&alters);
            }
            Ok((tallies, scans))
        })?;
    let mut total = Tally::default();
    for tally in &tallies {
        for (kind, types) in &tally.types {
            total.types.entry(*kind).or_default().merge(types);
        }
        total.durable_latency.merge(&tally.durable_latency);
        total.durable_commits += tally.durable_commits;
    }
    if let Some(scans) = scans {
        total.stock_scans = scans.stock_scans;
        total.stock_scan_latency = scans.stock_scan_latency;
        total.alters = scans.alters;
        total.alter_latency = scans.alter_latency;
    }
    total.elapsed = stopped.into_inner().unwrap().unwrap_or_else(|| started.elapsed());
    Ok(total)
}

#[derive(Debug, Clone, Serialize)]
pub struct TypeReport {
    pub committed: u64,
    pub rolled_back: u64,
    pub aborted: u64,
    pub aborts_by_reason: BTreeMap<String, u64>,
    pub throughput_txn_per_s: f64,
    pub latency_us: Percentiles,
}

#[derive(Debug, Clone, Serialize)]
pub struct AlterReport {
    pub alters: u64,
    pub latency_us: Percentiles,
}

#[derive(Debug, Clone, Serialize)]
pub struct StockScanReport {
    pub scans: u64,
    pub latency_us: Percentiles,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub benchmark: &'static str,
    pub db: String,
    pub settings: String,
    pub mix: Mix,
    pub warehouses: u16,
    pub items: u32,
    pub customers_per_district: u32,
    pub threads: usize,
    pub duration_s: f64,
    /// Completed transactions (committed, and NewOrders rolled back by the 1% rule) per second.
    pub throughput_txn_per_s: f64,
    /// NewOrder transactions completed per minute (clause 5.4.2 counts the rolled back ones).
    pub tpmc: f64,
    pub committed: u64,
    pub rolled_back: u64,
    pub aborted: u64,
    pub per_type: BTreeMap<&'static str, TypeReport>,
    /// The keys that aborted most transactions (Engram only).
    pub contended_keys: Vec<crate::report::ContendedKey>,
    pub stock_scan: Option<StockScanReport>,
    /// The ALTER TABLEs of `Options::ddl_every`.
    pub alter: Option<AlterReport>,
    /// With durability on: start of a transaction to its commit being durable, microseconds.
    pub durable_latency_us: Option<Percentiles>,
    /// "ok", or the violated consistency conditions.
    pub consistency: serde_json::Value,
    pub rounds_txn_per_s: Vec<f64>,
    pub machine: Machine,
}

impl Report {
    pub fn mix_name(&self) -> &'static str {
        self.mix.name()
    }
}

pub fn report<D: Db>(db: &D, options: &Options, tally: &Tally, violations: &[String]) -> Report {
    let seconds = tally.elapsed.as_secs_f64();
    let per_type = tally
        .types
        .iter()
        .map(|(kind, types)| {
            (
                kind.name(),
                TypeReport {
                    committed: types.committed,
                    rolled_back: types.rolled_back,
                    aborted: types.aborted,
                    aborts_by_reason: types.aborts_by_reason.clone(),
                    throughput_txn_per_s: (types.committed + types.rolled_back) as f64 / seconds,
                    latency_us: types.latency.summary(),
                },
            )
        })
        .collect();
    let new_orders = tally.types.get(&Kind::NewOrder).map_or(0, |t| t.committed + t.rolled_back);
    Report {
        benchmark: "tpcc",
        db: db.name(),
        settings: db.settings(),
        mix: options.mix,
        warehouses: options.scale.warehouses,
        items: options.scale.items,
        customers_per_district: options.scale.customers_per_district,
        threads: options.threads,
        duration_s: seconds,
        throughput_txn_per_s: tally.completed() as f64 / seconds,
        tpmc: new_orders as f64 * 60.0 / seconds,
        committed: tally.types.values().map(|t| t.committed).sum(),
        rolled_back: tally.types.values().map(|t| t.rolled_back).sum(),
        aborted: tally.types.values().map(|t| t.aborted).sum(),
        per_type,
        contended_keys: crate::report::contended_keys(&tally.contended),
        durable_latency_us: (tally.durable_commits > 0).then(|| tally.durable_latency.summary()),
        stock_scan: (tally.stock_scans > 0).then(|| StockScanReport {
            scans: tally.stock_scans,
            latency_us: tally.stock_scan_latency.summary(),
        }),
        alter: (tally.alters > 0).then(|| AlterReport {
            alters: tally.alters,
            latency_us: tally.alter_latency.summary(),
        }),
        consistency: if violations.is_empty() {
            serde_json::json!("ok")
        } else {
            serde_json::json!(violations)
        },
        rounds_txn_per_s: if tally.rounds.len() > 1 { tally.rounds.clone() } else { Vec::new() },
        machine: Machine::describe(),
    }
}

/// How the warehouses relate to the thread counts of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warehouses {
    /// One database of `options.scale.warehouses`, shared by every thread count.
    Shared,
    /// A database per thread count with one warehouse per thread (Silo's methodology), all
    /// loaded before the first round.
    PerThread,
}

/// Opens and loads the databases, measures each thread count in `thread_counts`, alternating
/// them in `rounds` rounds when there are several, then checks consistency. Returns one report
/// per thread count, each with the consistency verdict of its database's final state.
pub fn run<D: TpccDb>(
    mut open: impl FnMut() -> Result<D, String>,
    options: &Options,
    thread_counts: &[usize],
    rounds: u32,
    warehouses: Warehouses,
) -> Result<Vec<Report>, String> {
    // The options each thread count runs with, and which database it runs on.
    let configured: Vec<(Options, usize)> = thread_counts
        .iter()
        .enumerate()
        .map(|(index, &threads)| match warehouses {
            Warehouses::Shared => (Options { threads, ..options.clone() }, 0),
            Warehouses::PerThread => {
                let scale = Scale { warehouses: threads as u16, ..options.scale };
                (Options { threads, scale, ..options.clone() }, index)
            }
        })
        .collect();
    let databases = match warehouses {
        Warehouses::Shared => 1,
        Warehouses::PerThread => thread_counts.len(),
    };
    let dbs = (0..databases).map(|_| open()).collect::<Result<Vec<D>, String>>()?;
    run_configured(dbs, &configured, options, rounds)
}

/// Fills the databases of a run at the same time, the loader threads shared out among them.
///
/// Loaded one after another, the database loaded second ran slower: 0.989 of its twin over 12
/// runs of two identical databases, and epoch / off came out 0.888 with `off` loaded first
/// against 0.918 with `epoch` first (docs/performance.md). Filled together, the databases
/// take their blocks from the same chunks, interleaved, and neither is the later one: twins
/// came out at 1.002 of each other with a third less spread, and epoch / off at 0.905 and
/// 0.899 in the two orders (16 runs each).
fn fill_together<D: TpccDb + Send>(
    dbs: &mut [D],
    configured: &[(Options, usize)],
    options: &Options,
    constants: &Constants,
) -> Result<(), String> {
    let load_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let scales: Vec<Scale> = (0..dbs.len())
        .map(|index| {
            configured.iter().find(|(_, db)| *db == index).map_or(options.scale, |c| c.0.scale)
        })
        .collect();
    // Loader threads in proportion to the warehouses, at least one a database.
    let warehouses: usize = scales.iter().map(|scale| usize::from(scale.warehouses)).sum();
    std::thread::scope(|scope| {
        let handles: Vec<_> = dbs
            .iter_mut()
            .zip(scales)
            .map(|(db, scale)| {
                let share = load_threads * usize::from(scale.warehouses);
                let threads = ((share + warehouses / 2) / warehouses.max(1)).max(1);
                scope.spawn(move || -> Result<(), String> {
                    let loading = Instant::now();
                    db.fill(&scale, constants, threads)?;
                    if options.progress {
                        eprintln!(
                            "loaded {} warehouse(s) into {} on {threads} thread(s) in {:.1} s",
                            scale.warehouses,
                            db.name(),
                            loading.elapsed().as_secs_f64()
                        );
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|handle| handle.join().expect("loader"))
    })
}

/// Fills `dbs` together (each with the scale of the first configuration that runs on it) and
/// settles them, measures each configuration `(options, database index)`, alternating them in
/// `rounds` rounds when there are several (the order reversed every other round:
/// `report::round_order`), then checks consistency. Returns one report per configuration.
pub fn run_configured<D: TpccDb + Send>(
    mut dbs: Vec<D>,
    configured: &[(Options, usize)],
    options: &Options,
    rounds: u32,
) -> Result<Vec<Report>, String> {
    let mut random = SmallRng::seed_from_u64(options.seed);
    let constants = Constants::generate(&mut random);
    fill_together(&mut dbs, configured, options, &constants)?;
    for db in &dbs {
        db.settle()?;
    }
    let rounds = if configured.len() > 1 { rounds.max(1) } else { 1 };
    let per_round = options.duration / rounds;
    let mut tallies: Vec<Tally> = configured.iter().map(|_| Tally::default()).collect();
    for round in 0..rounds {
        for index in crate::report::round_order(round, configured.len()) {
            let (options, db) = &configured[index];
            // The other databases' background work (a checkpoint under way) waits for their
            // own rounds.
            for (other, other_db) in dbs.iter().enumerate() {
                other_db.pause_background(other != *db);
            }
            let db = &dbs[*db];
            let label = format!("tpcc {} x{} {}/{}", db.name(), options.threads, round + 1, rounds);
            let before = db.engine().map(|engine| engine.conflict_stats());
            let mut tally = measure(db, options, &constants, per_round, &label)?;
            if let (Some(engine), Some(before)) = (db.engine(), before) {
                let render = crate::report::hex_key;
                crate::report::note_contention(engine, &before, render, &mut tally.contended);
            }
            tallies[index].merge(&tally);
        }
    }
    for db in &dbs {
        db.pause_background(false);
    }
    let mut violations = Vec::with_capacity(dbs.len());
    for db in &dbs {
        let mut conn = db.connect()?;
        violations.push(db.facts(&mut conn)?.violations());
    }
    Ok(configured
        .iter()
        .zip(&tallies)
        .map(|((options, db), tally)| report(&dbs[*db], options, tally, &violations[*db]))
        .collect())
}
