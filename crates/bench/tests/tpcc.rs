//! TPC-C on a tiny database: each transaction's effects, the two adapters agreeing on a long
//! deterministic sequence, and concurrent runs passing the consistency conditions.

use engram_bench::db::Outcome;
use engram_bench::tpcc::engram::{EngramTpcc, Persistence, ReadOnlyLevels};
use engram_bench::tpcc::spec::{
    Constants, CustomerSelector, DeliveryInput, NewOrderInput, OrderLineInput, OrderStatusInput,
    Output, PaymentInput, Scale, StockLevelInput,
};
use engram_bench::tpcc::sql::SqlTpcc;
use engram_bench::tpcc::sqlite::SqliteTpcc;
use engram_bench::tpcc::wire::WireTpcc;
use engram_bench::tpcc::{self, Kind, Mix, Options, TpccDb, Warehouses};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use std::time::Duration;

fn constants() -> Constants {
    Constants::generate(&mut SmallRng::seed_from_u64(42))
}

fn loaded<D: TpccDb>(mut db: D, warehouses: u16) -> D {
    db.load(&Scale::tiny(warehouses), &constants(), 2).expect("load");
    db
}

fn engram(warehouses: u16) -> EngramTpcc {
    loaded(
        EngramTpcc::open(ReadOnlyLevels::Serializable, 0, Default::default()).unwrap(),
        warehouses,
    )
}

fn sqlite(warehouses: u16) -> SqliteTpcc {
    loaded(SqliteTpcc::create().unwrap(), warehouses)
}

fn sql(warehouses: u16) -> SqlTpcc {
    loaded(SqlTpcc::open(ReadOnlyLevels::Serializable, 0, Default::default()).unwrap(), warehouses)
}

/// An in-process `engram serve` (durability off) and the TPC-C adapter over the wire to it.
fn wire(warehouses: u16) -> (WireTpcc, engram_server::ServerHandle) {
    let db = engram_sql::SqlDb::open(engram_engine::Config {
        durability: engram_engine::Durability::Off,
        ..engram_engine::Config::default()
    })
    .unwrap();
    let config = engram_server::ServerConfig {
        listen: "127.0.0.1:0".into(),
        threads: 2,
        ..engram_server::ServerConfig::default()
    };
    let server = engram_server::Server::start(db, config).unwrap();
    let url = format!("postgres://postgres@127.0.0.1:{}/engram", server.addr.port());
    let tpcc = WireTpcc::new(&url, ReadOnlyLevels::Serializable).unwrap();
    (loaded(tpcc, warehouses), server)
}

/// The effects of each transaction, checked through the facts and the other transactions.
fn effects<D: TpccDb>(db: D) {
    let mut conn = db.connect().unwrap();
    let facts = |conn: &mut D::Conn| db.facts(conn).unwrap();
    let before = facts(&mut conn);
    assert!(before.violations().is_empty(), "{:?}", before.violations());
    let district = |facts: &tpcc::Facts, d: u8| {
        facts.districts.iter().find(|f| f.w_id == 1 && f.d_id == d).unwrap().clone()
    };

    // NewOrder: a new order with its lines, its new-order row, the district's next id.
    let lines: Vec<OrderLineInput> = (1..=7)
        .map(|item| OrderLineInput { item: item * 10, supply_warehouse: 1, quantity: item as u8 })
        .collect();
    let order = NewOrderInput { warehouse: 1, district: 3, customer: 17, lines, entry_date: 1 };
    let mut output = Output::default();
    assert_eq!(db.new_order(&mut conn, &order, &mut output), Outcome::Committed);
    let after = facts(&mut conn);
    let (was, now) = (district(&before, 3), district(&after, 3));
    assert_eq!(output.order, was.next_o_id);
    assert_eq!(now.next_o_id, was.next_o_id + 1);
    assert_eq!(now.max_o_id, output.order);
    assert_eq!(now.new_orders.unwrap().1, output.order);
    assert_eq!(now.new_orders.unwrap().2, was.new_orders.unwrap().2 + 1);
    assert_eq!(now.order_lines, was.order_lines + 7);
    assert!(output.amount_cents > 0);
    // OrderStatus sees it as the customer's last order.
    let mut status = Output::default();
    let input = OrderStatusInput { warehouse: 1, district: 3, customer: CustomerSelector::Id(17) };
    assert_eq!(db.order_status(&mut conn, &input, &mut status), Outcome::Committed);
    assert_eq!((status.order, status.count), (output.order, 7));

    // A NewOrder naming an unused item rolls back and leaves nothing.
    let mut bad = order.clone();
    bad.lines.last_mut().unwrap().item = Scale::tiny(1).items + 1;
    assert_eq!(db.new_order(&mut conn, &bad, &mut Output::default()), Outcome::RolledBack);
    assert_eq!(facts(&mut conn), after);

    // Payment: the warehouse's and district's year-to-date, the customer's balance.
    let balance = status.amount_cents;
    let payment = PaymentInput {
        warehouse: 1,
        district: 3,
        customer_warehouse: 1,
        customer_district: 3,
        customer: CustomerSelector::Id(17),
        amount_cents: 12_345,
        date: 1,
    };
    let mut paid = Output::default();
    assert_eq!(db.payment(&mut conn, &payment, &mut paid), Outcome::Committed);
    assert_eq!(paid.amount_cents, balance - 12_345);
    let after_payment = facts(&mut conn);
    assert_eq!(after_payment.warehouses[0].1, after.warehouses[0].1 + 12_345);
    assert_eq!(district(&after_payment, 3).ytd_cents, district(&after, 3).ytd_cents + 12_345);
    // By last name: the customer in the middle of those with the name, by first name.
    let mut by_name = Output::default();
    let name = PaymentInput {
        customer: CustomerSelector::LastName(b"BARBARBAR".to_vec()),
        ..payment.clone()
    };
    assert_eq!(db.payment(&mut conn, &name, &mut by_name), Outcome::Committed);
    assert!(by_name.customer >= 1);

    // Delivery: the oldest new order of every district goes; its customer is credited.
    let mut delivered = Output::default();
    assert_eq!(
        db.delivery(
            &mut conn,
            &DeliveryInput { warehouse: 1, carrier: 4, date: 2 },
            &mut delivered
        ),
        Outcome::Committed
    );
    assert_eq!(delivered.count, 10);
    let after_delivery = facts(&mut conn);
    for d in 1..=10 {
        let (was, now) = (
            district(&after_payment, d).new_orders.unwrap(),
            district(&after_delivery, d).new_orders.unwrap(),
        );
        assert_eq!((now.0, now.1, now.2), (was.0 + 1, was.1, was.2 - 1), "district {d}");
    }
    assert!(after_delivery.violations().is_empty(), "{:?}", after_delivery.violations());

    // StockLevel counts items below the threshold among the last 20 orders' lines: at the
    // highest threshold at least as many as at the lowest.
    let mut low = Output::default();
    let mut high = Output::default();
    db.stock_level(
        &mut conn,
        &StockLevelInput { warehouse: 1, district: 3, threshold: 10 },
        &mut low,
    );
    db.stock_level(
        &mut conn,
        &StockLevelInput { warehouse: 1, district: 3, threshold: 101 },
        &mut high,
    );
    assert!(low.count <= high.count);
    assert!(high.count > 0, "every stock is below 101");
    assert_eq!(db.stock_scan(&mut conn).unwrap(), vec![Scale::tiny(1).items as u64]);
}

#[test]
fn transaction_effects_on_engram() {
    effects(engram(1));
}

#[test]
fn transaction_effects_on_sqlite() {
    effects(sqlite(1));
}

#[test]
fn transaction_effects_through_sql() {
    effects(sql(1));
}

/// One deterministic stream of transactions over two warehouses (remote payments and supply
/// included), run on two adapters: every outcome and output must be the same.
fn agree<A: TpccDb, B: TpccDb>(first: A, second: B) {
    let (mut first_conn, mut second_conn) = (first.connect().unwrap(), second.connect().unwrap());
    let scale = Scale::tiny(2);
    let constants = constants();
    let mut random = SmallRng::seed_from_u64(9);
    let mut seen = std::collections::BTreeMap::new();
    for step in 0..1_500 {
        let home = random.random_range(1..=2);
        let kind =
            [Kind::NewOrder, Kind::Payment, Kind::OrderStatus, Kind::Delivery, Kind::StockLevel]
                [random.random_range(0..5)];
        let (mut ours, mut theirs) = (Output::default(), Output::default());
        let outcomes = match kind {
            Kind::NewOrder => {
                let input = NewOrderInput::generate(&mut random, &scale, &constants, home);
                (
                    first.new_order(&mut first_conn, &input, &mut ours),
                    second.new_order(&mut second_conn, &input, &mut theirs),
                )
            }
            Kind::Payment => {
                let input = PaymentInput::generate(&mut random, &scale, &constants, home);
                (
                    first.payment(&mut first_conn, &input, &mut ours),
                    second.payment(&mut second_conn, &input, &mut theirs),
                )
            }
            Kind::OrderStatus => {
                let input = OrderStatusInput::generate(&mut random, &scale, &constants, home);
                (
                    first.order_status(&mut first_conn, &input, &mut ours),
                    second.order_status(&mut second_conn, &input, &mut theirs),
                )
            }
            Kind::Delivery => {
                let input = DeliveryInput::generate(&mut random, home);
                (
                    first.delivery(&mut first_conn, &input, &mut ours),
                    second.delivery(&mut second_conn, &input, &mut theirs),
                )
            }
            Kind::StockLevel => {
                let input = StockLevelInput::generate(&mut random, home);
                (
                    first.stock_level(&mut first_conn, &input, &mut ours),
                    second.stock_level(&mut second_conn, &input, &mut theirs),
                )
            }
        };
        assert_eq!(outcomes.0, outcomes.1, "step {step} ({kind:?}): outcomes differ");
        assert_eq!(ours, theirs, "step {step} ({kind:?}): outputs differ");
        *seen.entry(format!("{kind:?} {:?}", outcomes.0)).or_insert(0) += 1;
    }
    assert!(
        seen.len() >= 6,
        "every transaction type ran, and some NewOrders rolled back: {seen:?}"
    );
    let (ours, theirs) =
        (first.facts(&mut first_conn).unwrap(), second.facts(&mut second_conn).unwrap());
    assert_eq!(ours, theirs, "the final states agree");
    assert!(ours.violations().is_empty());
}

#[test]
fn engram_and_sqlite_agree_transaction_by_transaction() {
    agree(engram(2), sqlite(2));
}

#[test]
fn stored_procedures_and_sql_agree_transaction_by_transaction() {
    agree(engram(2), sql(2));
}

#[test]
fn transaction_effects_over_the_wire() {
    let (tpcc, _server) = wire(1);
    effects(tpcc);
}

#[test]
fn stored_procedures_and_the_wire_agree_transaction_by_transaction() {
    let (tpcc, _server) = wire(2);
    agree(engram(2), tpcc);
}

fn concurrent_run<D: TpccDb>(open: impl FnMut() -> Result<D, String>) {
    let options = Options {
        scale: Scale::tiny(1),
        threads: 2,
        duration: Duration::from_millis(1_500),
        mix: Mix::Standard,
        stock_scan: true,
        ddl_every: None,
        seed: 3,
        progress: false,
    };
    let reports = tpcc::run(open, &options, &[2], 1, Warehouses::Shared).expect("run");
    let report = &reports[0];
    assert_eq!(report.consistency, serde_json::json!("ok"), "{:?}", report.consistency);
    for kind in ["new_order", "payment", "order_status", "delivery", "stock_level"] {
        assert!(
            report.per_type[kind].committed > 0,
            "{kind} never committed: {:?}",
            report.per_type
        );
    }
    assert!(report.stock_scan.as_ref().is_some_and(|scan| scan.scans > 0));
    assert!(report.tpmc > 0.0);
}

#[test]
fn concurrent_runs_on_engram_pass_the_consistency_checks() {
    concurrent_run(|| {
        EngramTpcc::open(ReadOnlyLevels::Specification, 16 << 20, Default::default())
    });
    concurrent_run(|| EngramTpcc::open(ReadOnlyLevels::Serializable, 0, Default::default()));
}

/// Every concurrency-control protocol keeps TPC-C consistent, the StockScan thread included.
#[test]
fn concurrent_runs_under_every_protocol_pass_the_consistency_checks() {
    for protocol in engram_engine::Protocol::ALL {
        concurrent_run(|| {
            let persistence = Persistence { protocol, ..Default::default() };
            EngramTpcc::open(ReadOnlyLevels::Specification, 0, persistence)
        });
    }
}

/// Version storages and GC modes keep TPC-C consistent too (its secondary index on customer
/// names included): append-only chains newest or oldest first, pruned by writers, the vacuum
/// or the readers, the default storage under the vacuum and with no GC at all, and delta
/// records pruned by writers and by the vacuum.
#[test]
fn concurrent_runs_under_every_version_storage_and_gc_pass_the_consistency_checks() {
    use engram_engine::{Gc, Protocol, VersionStorage};
    for (version_storage, protocol, gc) in [
        (VersionStorage::AppendN2o, Protocol::Mvto, Gc::Transaction),
        (VersionStorage::AppendN2o, Protocol::Ssn, Gc::TupleVacuum),
        (VersionStorage::AppendO2n, Protocol::Mvto, Gc::TupleCooperative),
        (VersionStorage::AppendO2n, Protocol::Silo, Gc::Transaction),
        (VersionStorage::AppendO2n, Protocol::Mv2pl, Gc::TupleVacuum),
        (VersionStorage::TimeTravel, Protocol::Mvocc, Gc::TupleVacuum),
        (VersionStorage::TimeTravel, Protocol::Mvto, Gc::None),
        (VersionStorage::Delta, Protocol::Mvto, Gc::Transaction),
        (VersionStorage::Delta, Protocol::Si, Gc::TupleVacuum),
        (VersionStorage::Delta, Protocol::Silo, Gc::Transaction),
    ] {
        concurrent_run(|| {
            let persistence = Persistence { protocol, gc, version_storage, ..Default::default() };
            EngramTpcc::open(ReadOnlyLevels::Specification, 0, persistence)
        });
    }
}

#[test]
fn concurrent_runs_with_snapshot_readers_pass_the_consistency_checks() {
    concurrent_run(|| EngramTpcc::open(ReadOnlyLevels::Snapshot, 0, Default::default()));
}

#[test]
fn concurrent_runs_through_sql_pass_the_consistency_checks() {
    concurrent_run(|| SqlTpcc::open(ReadOnlyLevels::Specification, 0, Default::default()));
    concurrent_run(|| SqlTpcc::open(ReadOnlyLevels::Snapshot, 0, Default::default()));
}

#[test]
fn concurrent_runs_on_sqlite_pass_the_consistency_checks() {
    concurrent_run(SqliteTpcc::create);
}

#[test]
fn the_checks_catch_an_inconsistent_database() {
    let mut facts = tpcc::Facts {
        warehouses: vec![(1, 300)],
        districts: vec![tpcc::DistrictFacts {
            w_id: 1,
            d_id: 1,
            ytd_cents: 200,
            next_o_id: 11,
            max_o_id: 10,
            new_orders: Some((8, 10, 2)),
            sum_ol_cnt: 50,
            order_lines: 49,
        }],
        ..tpcc::Facts::default()
    };
    let violations = facts.violations();
    assert_eq!(violations.len(), 3, "{violations:?}");
    assert!(violations[0].starts_with("condition 1") && violations[1].starts_with("condition 3"));
    assert!(violations[2].starts_with("condition 4"));
    facts.districts[0].next_o_id = 12;
    assert!(facts.violations().iter().any(|v| v.starts_with("condition 2")));
}

/// A run of several databases fills them all at once (`tpcc::fill_together`), each at its own
/// scale, then settles them: every one holds exactly its own warehouses and ends consistent.
#[test]
fn databases_filled_together_each_hold_their_own_warehouses() {
    use engram_bench::db::Db;
    use std::sync::Arc;
    let mut opened = Vec::new();
    let open = || -> Result<EngramTpcc, String> {
        let tpcc = EngramTpcc::open(ReadOnlyLevels::Specification, 16 << 20, Default::default())?;
        opened.push(tpcc.database_handle());
        Ok(tpcc)
    };
    let options = Options {
        scale: Scale::tiny(1),
        threads: 1,
        duration: Duration::from_millis(900),
        mix: Mix::Standard,
        stock_scan: false,
        ddl_every: None,
        seed: 5,
        progress: false,
    };
    let reports = tpcc::run(open, &options, &[1, 2, 3], 3, Warehouses::PerThread).expect("run");
    for (report, threads) in reports.iter().zip([1, 2, 3]) {
        assert_eq!(report.consistency, serde_json::json!("ok"), "{:?}", report.consistency);
        assert_eq!(report.threads, threads);
        assert!(report.committed > 0, "nothing committed with {threads} threads");
    }
    assert_eq!(opened.len(), 3);
    for (db, warehouses) in opened.iter().zip([1u16, 2, 3]) {
        let mut tpcc = EngramTpcc::over(Arc::clone(db), ReadOnlyLevels::Specification);
        tpcc.attach(&Scale::tiny(warehouses), 100).expect("attach");
        let mut conn = tpcc.connect().expect("connect");
        let facts = tpcc.facts(&mut conn).expect("facts");
        let ids: Vec<u16> = facts.warehouses.iter().map(|(w, _)| *w).collect();
        assert_eq!(ids, (1..=warehouses).collect::<Vec<_>>());
        assert!(facts.violations().is_empty(), "{:?}", facts.violations());
    }
}
