//! The initial population (clause 4.3.3.1), generated once and handed to an adapter's sink, so
//! that every database under test gets the same rules (and, for one seed, the same data).

use super::schema::*;
use super::spec::{
    Constants, DISTRICTS, Scale, astring, data_string, last_name, nstring, nurand, state, zip,
};
use rand::{RngExt, SeedableRng, rngs::SmallRng};

/// Receives the rows of a load, table by table.
pub trait Sink {
    type Error;
    fn item(&mut self, row: &Item) -> Result<(), Self::Error>;
    fn warehouse(&mut self, row: &Warehouse) -> Result<(), Self::Error>;
    fn stock(&mut self, row: &Stock) -> Result<(), Self::Error>;
    fn district(&mut self, row: &District) -> Result<(), Self::Error>;
    fn customer(&mut self, row: &Customer) -> Result<(), Self::Error>;
    /// A history row with its hidden key's sequence number.
    fn history(&mut self, row: &History, sequence: u64) -> Result<(), Self::Error>;
    fn order(&mut self, row: &Order) -> Result<(), Self::Error>;
    fn order_line(&mut self, row: &OrderLine) -> Result<(), Self::Error>;
    fn new_order(&mut self, row: &NewOrder) -> Result<(), Self::Error>;
}

/// A sink that holds rows back in batches: `flush` writes the last ones.
pub trait BatchSink: Sink {
    fn flush(&mut self) -> Result<(), Self::Error>;
}

/// Loads ITEM, then every warehouse on `threads` threads (each takes the next warehouse not
/// yet loaded), each thread writing through its own sink from `make`.
pub fn all<S: BatchSink>(
    scale: &Scale,
    constants: &Constants,
    threads: usize,
    make: impl Fn() -> Result<S, String> + Sync,
) -> Result<(), String>
where
    S::Error: std::fmt::Display,
{
    let fail = |error: S::Error| error.to_string();
    let now = super::spec::now();
    let mut items = make()?;
    self::items(scale, load_seed(constants, 0), &mut items)
        .and_then(|()| items.flush())
        .map_err(fail)?;
    let next = std::sync::atomic::AtomicU32::new(1);
    std::thread::scope(|scope| -> Result<(), String> {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| {
                let (next, make) = (&next, &make);
                scope.spawn(move || -> Result<(), String> {
                    let mut sink = make()?;
                    loop {
                        let w = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if w > u32::from(scale.warehouses) {
                            return sink.flush().map_err(fail);
                        }
                        warehouse(
                            scale,
                            constants,
                            w as u16,
                            load_seed(constants, w),
                            now,
                            &mut sink,
                        )
                        .map_err(fail)?;
                    }
                })
            })
            .collect();
        handles.into_iter().try_for_each(|handle| handle.join().expect("loader"))
    })
}

fn text<const N: usize>(
    random: &mut SmallRng,
    min: usize,
    max: usize,
    buffer: &mut Vec<u8>,
) -> Text<N> {
    astring(random, min, max, buffer);
    Text::new(buffer)
}

/// The ITEM table: `scale.items` rows.
pub fn items<S: Sink>(scale: &Scale, seed: u64, sink: &mut S) -> Result<(), S::Error> {
    let mut random = SmallRng::seed_from_u64(seed);
    let mut buffer = Vec::new();
    for i in 1..=scale.items {
        let name = text(&mut random, 14, 24, &mut buffer);
        data_string(&mut random, &mut buffer);
        sink.item(&Item {
            i_id: i,
            im_id: random.random_range(1..=10_000),
            name,
            price_cents: random.random_range(100..=10_000),
            data: Text::new(&buffer),
        })?;
    }
    Ok(())
}

/// Warehouse `w` and everything under it: its STOCK, DISTRICTs, CUSTOMERs, HISTORY, ORDERs,
/// ORDER-LINEs and NEW-ORDERs.
pub fn warehouse<S: Sink>(
    scale: &Scale,
    constants: &Constants,
    w: u16,
    seed: u64,
    now: u64,
    sink: &mut S,
) -> Result<(), S::Error> {
    let mut random = SmallRng::seed_from_u64(seed);
    let mut buffer = Vec::new();
    sink.warehouse(&Warehouse {
        w_id: w,
        name: text(&mut random, 6, 10, &mut buffer),
        street_1: text(&mut random, 10, 20, &mut buffer),
        street_2: text(&mut random, 10, 20, &mut buffer),
        city: text(&mut random, 10, 20, &mut buffer),
        state: state(&mut random),
        zip: zip(&mut random),
        tax: random.random_range(0..=2000),
        ytd_cents: 30_000_000,
    })?;
    for i in 1..=scale.items {
        let mut dist = [[0u8; 24]; 10];
        for part in &mut dist {
            astring(&mut random, 24, 24, &mut buffer);
            part.copy_from_slice(&buffer);
        }
        data_string(&mut random, &mut buffer);
        sink.stock(&Stock {
            w_id: w,
            i_id: i,
            quantity: random.random_range(10..=100),
            dist,
            ytd: 0,
            order_cnt: 0,
            remote_cnt: 0,
            data: Text::new(&buffer),
        })?;
    }
    for d in 1..=DISTRICTS {
        sink.district(&District {
            w_id: w,
            d_id: d,
            name: text(&mut random, 6, 10, &mut buffer),
            street_1: text(&mut random, 10, 20, &mut buffer),
            street_2: text(&mut random, 10, 20, &mut buffer),
            city: text(&mut random, 10, 20, &mut buffer),
            state: state(&mut random),
            zip: zip(&mut random),
            tax: random.random_range(0..=2000),
            ytd_cents: 3_000_000,
            next_o_id: scale.orders_per_district + 1,
        })?;
        let names = scale.last_names();
        for c in 1..=scale.customers_per_district {
            let number = if c <= names {
                c - 1
            } else {
                nurand(&mut random, 255, constants.c_last_load, 0, names - 1)
            };
            last_name(number, &mut buffer);
            let last = Text::new(&buffer);
            let first = text(&mut random, 8, 16, &mut buffer);
            let mut phone = [0u8; 16];
            nstring(&mut random, 16, 16, &mut buffer);
            phone.copy_from_slice(&buffer);
            let street_1 = text(&mut random, 10, 20, &mut buffer);
            let street_2 = text(&mut random, 10, 20, &mut buffer);
            let city = text(&mut random, 10, 20, &mut buffer);
            sink.customer(&Customer {
                w_id: w,
                d_id: d,
                c_id: c,
                last,
                first,
                middle: *b"OE",
                street_1,
                street_2,
                city,
                state: state(&mut random),
                zip: zip(&mut random),
                phone,
                since: now,
                credit: if random.random_range(0..10) == 0 { *b"BC" } else { *b"GC" },
                credit_lim_cents: 5_000_000,
                discount: random.random_range(0..=5000),
                balance_cents: -1000,
                ytd_payment_cents: 1000,
                payment_cnt: 1,
                delivery_cnt: 0,
                data: text(&mut random, 300, 500, &mut buffer),
            })?;
            let history = History {
                c_id: c,
                c_d_id: d,
                c_w_id: w,
                d_id: d,
                w_id: w,
                date: now,
                amount_cents: 1000,
                data: text(&mut random, 12, 24, &mut buffer),
            };
            sink.history(&history, u64::from(d) << 32 | u64::from(c))?;
        }
        // Orders go to the customers in a random permutation.
        let mut customer_of: Vec<u32> = (1..=scale.customers_per_district).collect();
        for index in (1..customer_of.len()).rev() {
            customer_of.swap(index, random.random_range(0..=index));
        }
        let first_new = scale.first_new_order();
        for o in 1..=scale.orders_per_district {
            let delivered = o < first_new;
            let ol_cnt = random.random_range(5..=15);
            sink.order(&Order {
                w_id: w,
                d_id: d,
                o_id: o,
                c_id: customer_of[(o as usize - 1) % customer_of.len()],
                entry_d: now,
                carrier_id: if delivered { random.random_range(1..=10) } else { 0 },
                ol_cnt,
                all_local: 1,
            })?;
            for number in 1..=ol_cnt {
                let mut dist_info = [0u8; 24];
                astring(&mut random, 24, 24, &mut buffer);
                dist_info.copy_from_slice(&buffer);
                sink.order_line(&OrderLine {
                    w_id: w,
                    d_id: d,
                    o_id: o,
                    number,
                    i_id: random.random_range(1..=scale.items),
                    supply_w_id: w,
                    delivery_d: if delivered { now } else { 0 },
                    quantity: 5,
                    amount_cents: if delivered { 0 } else { random.random_range(1..=999_999) },
                    dist_info,
                })?;
            }
            if !delivered {
                sink.new_order(&NewOrder { w_id: w, d_id: d, o_id: o })?;
            }
        }
    }
    Ok(())
}

/// The seed of warehouse `w`'s data (0: the items), the same for every adapter.
pub fn load_seed(constants: &Constants, w: u32) -> u64 {
    (u64::from(constants.c_last_load) << 32 | u64::from(w)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
