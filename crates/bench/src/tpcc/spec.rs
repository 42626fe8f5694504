//! TPC-C v5.11 as the specification defines it: scale, random functions (clause 2.1.6 and
//! 4.3.2), the population rules' helpers (clause 4.3.3), and the inputs of the five
//! transactions (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1).

use rand::{Rng, RngExt};

/// Districts per warehouse (clause 4.2.2).
pub const DISTRICTS: u8 = 10;
/// Syllables of customer last names (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] =
    ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];
/// Order lines per order, inclusive (clause 2.4.1.3).
pub const ORDER_LINES_MIN: u8 = 5;
pub const ORDER_LINES_MAX: u8 = 15;
/// Orders a StockLevel examines (clause 2.8.2.2).
pub const STOCK_LEVEL_ORDERS: u32 = 20;

/// The size of a database. `Scale::standard(w)` is the specification's; the others shrink the
/// item and customer counts for tests (the relations between counts are kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub warehouses: u16,
    pub items: u32,
    pub customers_per_district: u32,
    /// Initial orders per district; the last `new_orders_per_district` are undelivered.
    pub orders_per_district: u32,
    pub new_orders_per_district: u32,
}

impl Scale {
    pub fn standard(warehouses: u16) -> Scale {
        Scale {
            warehouses,
            items: 100_000,
            customers_per_district: 3_000,
            orders_per_district: 3_000,
            new_orders_per_district: 900,
        }
    }

    /// A small database for tests: 1,000 items, 300 customers and orders per district.
    pub fn tiny(warehouses: u16) -> Scale {
        Scale {
            warehouses,
            items: 1_000,
            customers_per_district: 300,
            orders_per_district: 300,
            new_orders_per_district: 90,
        }
    }

    /// Distinct last names: the first customers of a district get one each (clause 4.3.3.1:
    /// C_LAST of customer c <= 1,000 is name number c - 1); smaller test scales have fewer.
    pub fn last_names(&self) -> u32 {
        self.customers_per_district.min(1000)
    }

    /// The first order id that is still undelivered after the load.
    pub fn first_new_order(&self) -> u32 {
        self.orders_per_district - self.new_orders_per_district + 1
    }
}

/// The run-time constants C of NURand (clause 2.1.6.1). `c_last_load` and `c_last_run`
/// satisfy clause 2.1.6.1's rule on their difference.
#[derive(Debug, Clone, Copy)]
pub struct Constants {
    pub c_last_load: u32,
    pub c_last_run: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl Constants {
    pub fn generate(random: &mut impl Rng) -> Constants {
        let c_last_load = random.random_range(0..=255);
        let c_last_run = loop {
            let candidate: u32 = random.random_range(0..=255);
            let delta = candidate.abs_diff(c_last_load);
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                break candidate;
            }
        };
        Constants {
            c_last_load,
            c_last_run,
            c_id: random.random_range(0..=1023),
            ol_i_id: random.random_range(0..=8191),
        }
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(random: &mut impl Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    (((random.random_range(0..=a) | random.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// The last name of number `number` in 0..=999: three syllables, one per decimal digit.
pub fn last_name(number: u32, out: &mut Vec<u8>) {
    debug_assert!(number < 1000);
    out.clear();
    for digit in [number / 100, (number / 10) % 10, number % 10] {
        out.extend_from_slice(SYLLABLES[digit as usize].as_bytes());
    }
}

/// A last name for a customer lookup at run time: NURand(255, 0, 999) with the run constant
/// (over fewer names in smaller test scales).
pub fn random_last_name(
    random: &mut impl Rng,
    scale: &Scale,
    constants: &Constants,
    out: &mut Vec<u8>,
) {
    last_name(nurand(random, 255, constants.c_last_run, 0, scale.last_names() - 1), out);
}

/// A random a-string (clause 4.3.2.2) of `min..=max` alphanumeric characters.
pub fn astring(random: &mut impl Rng, min: usize, max: usize, out: &mut Vec<u8>) {
    const ALPHANUMERIC: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    out.clear();
    let len = random.random_range(min..=max);
    out.extend((0..len).map(|_| ALPHANUMERIC[random.random_range(0..ALPHANUMERIC.len())]));
}

/// A random n-string of `min..=max` digits.
pub fn nstring(random: &mut impl Rng, min: usize, max: usize, out: &mut Vec<u8>) {
    out.clear();
    let len = random.random_range(min..=max);
    out.extend((0..len).map(|_| b'0' + random.random_range(0..10u8)));
}

/// An I_DATA or S_DATA string: 26 to 50 characters, 10% containing "ORIGINAL" at a random
/// position (clause 4.3.3.1).
pub fn data_string(random: &mut impl Rng, out: &mut Vec<u8>) {
    astring(random, 26, 50, out);
    if random.random_range(0..10) == 0 {
        let at = random.random_range(0..=out.len() - 8);
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// A zip code: four random digits and "11111" (clause 4.3.2.7).
pub fn zip(random: &mut impl Rng) -> [u8; 9] {
    let mut zip = *b"000011111";
    for digit in &mut zip[..4] {
        *digit = b'0' + random.random_range(0..10u8);
    }
    zip
}

/// Two random upper-case letters.
pub fn state(random: &mut impl Rng) -> [u8; 2] {
    [b'A' + random.random_range(0..26u8), b'A' + random.random_range(0..26u8)]
}

/// Seconds since the Unix epoch, the unit of every date and time column.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLineInput {
    pub item: u32,
    pub supply_warehouse: u16,
    pub quantity: u8,
}

#[derive(Debug, Clone)]
pub struct NewOrderInput {
    pub warehouse: u16,
    pub district: u8,
    pub customer: u32,
    pub lines: Vec<OrderLineInput>,
    pub entry_date: u64,
}

impl NewOrderInput {
    /// Clause 2.4.1. With probability 1% the last line names an unused item id, so the
    /// transaction rolls back; each line is supplied by a remote warehouse with probability 1%.
    pub fn generate(
        random: &mut impl Rng,
        scale: &Scale,
        constants: &Constants,
        warehouse: u16,
    ) -> NewOrderInput {
        let count = random.random_range(ORDER_LINES_MIN..=ORDER_LINES_MAX);
        let rollback = random.random_range(1..=100) == 1;
        let lines = (0..count)
            .map(|line| {
                let item = if rollback && line == count - 1 {
                    scale.items + 1
                } else {
                    nurand(random, 8191, constants.ol_i_id, 1, scale.items)
                };
                let supply_warehouse = if scale.warehouses > 1 && random.random_range(1..=100) == 1
                {
                    other_warehouse(random, scale, warehouse)
                } else {
                    warehouse
                };
                OrderLineInput { item, supply_warehouse, quantity: random.random_range(1..=10) }
            })
            .collect();
        NewOrderInput {
            warehouse,
            district: random.random_range(1..=DISTRICTS),
            customer: nurand(random, 1023, constants.c_id, 1, scale.customers_per_district),
            lines,
            entry_date: now(),
        }
    }
}

/// A warehouse other than `home`, uniformly.
fn other_warehouse(random: &mut impl Rng, scale: &Scale, home: u16) -> u16 {
    let other = random.random_range(1..scale.warehouses);
    if other >= home { other + 1 } else { other }
}

/// How a customer is named: by id, or by last name (the middle one of those with the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerSelector {
    Id(u32),
    LastName(Vec<u8>),
}

impl CustomerSelector {
    /// 60% by last name (clause 2.5.1.2, 2.6.1.2).
    fn generate(random: &mut impl Rng, scale: &Scale, constants: &Constants) -> CustomerSelector {
        if random.random_range(1..=100) <= 60 {
            let mut name = Vec::with_capacity(16);
            random_last_name(random, scale, constants, &mut name);
            CustomerSelector::LastName(name)
        } else {
            CustomerSelector::Id(nurand(
                random,
                1023,
                constants.c_id,
                1,
                scale.customers_per_district,
            ))
        }
    }
}

#[derive(Debug, Clone)]
pub struct PaymentInput {
    pub warehouse: u16,
    pub district: u8,
    pub customer_warehouse: u16,
    pub customer_district: u8,
    pub customer: CustomerSelector,
    /// In cents: 1.00 to 5,000.00.
    pub amount_cents: i64,
    pub date: u64,
}

impl PaymentInput {
    /// Clause 2.5.1: 85% of customers are of the home warehouse, 15% remote.
    pub fn generate(
        random: &mut impl Rng,
        scale: &Scale,
        constants: &Constants,
        warehouse: u16,
    ) -> PaymentInput {
        let district = random.random_range(1..=DISTRICTS);
        let (customer_warehouse, customer_district) =
            if scale.warehouses > 1 && random.random_range(1..=100) > 85 {
                (other_warehouse(random, scale, warehouse), random.random_range(1..=DISTRICTS))
            } else {
                (warehouse, district)
            };
        PaymentInput {
            warehouse,
            district,
            customer_warehouse,
            customer_district,
            customer: CustomerSelector::generate(random, scale, constants),
            amount_cents: random.random_range(100..=500_000),
            date: now(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct OrderStatusInput {
    pub warehouse: u16,
    pub district: u8,
    pub customer: CustomerSelector,
}

impl OrderStatusInput {
    pub fn generate(
        random: &mut impl Rng,
        scale: &Scale,
        constants: &Constants,
        warehouse: u16,
    ) -> OrderStatusInput {
        OrderStatusInput {
            warehouse,
            district: random.random_range(1..=DISTRICTS),
            customer: CustomerSelector::generate(random, scale, constants),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct DeliveryInput {
    pub warehouse: u16,
    pub carrier: u8,
    pub date: u64,
}

impl DeliveryInput {
    pub fn generate(random: &mut impl Rng, warehouse: u16) -> DeliveryInput {
        DeliveryInput { warehouse, carrier: random.random_range(1..=10), date: now() }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct StockLevelInput {
    pub warehouse: u16,
    pub district: u8,
    pub threshold: i32,
}

impl StockLevelInput {
    pub fn generate(random: &mut impl Rng, warehouse: u16) -> StockLevelInput {
        StockLevelInput {
            warehouse,
            district: random.random_range(1..=DISTRICTS),
            threshold: random.random_range(10..=20),
        }
    }
}

/// What a transaction reports back; tests check them, the driver discards them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// NewOrder: the order id; OrderStatus: the customer's last order id.
    pub order: u32,
    /// NewOrder: the total in cents after discount and taxes; Payment: the customer's balance;
    /// OrderStatus: the customer's balance.
    pub amount_cents: i64,
    /// The customer the transaction settled on.
    pub customer: u32,
    /// NewOrder: lines entered; OrderStatus: lines of the last order; Delivery: orders
    /// delivered; StockLevel: items below the threshold.
    pub count: u32,
    /// NewOrder: lines whose item and stock data both contain "ORIGINAL" (brand-generic "B",
    /// clause 2.4.2.2).
    pub original: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{SeedableRng, rngs::SmallRng};

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut random = SmallRng::seed_from_u64(3);
        let mut counts = vec![0u32; 3001];
        for _ in 0..300_000 {
            let value = nurand(&mut random, 1023, 259, 1, 3000);
            assert!((1..=3000).contains(&value));
            counts[value as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        // Uniform would give each value 100; NURand's hot values get several times that.
        assert!(counts[0] > 300, "most frequent value drawn {} times", counts[0]);
    }

    #[test]
    fn last_names_are_three_syllables() {
        let mut name = Vec::new();
        last_name(0, &mut name);
        assert_eq!(name, b"BARBARBAR");
        last_name(371, &mut name);
        assert_eq!(name, b"PRICALLYOUGHT");
        last_name(999, &mut name);
        assert_eq!(name, b"EINGEINGEING");
    }

    #[test]
    fn constants_follow_the_delta_rule() {
        let mut random = SmallRng::seed_from_u64(11);
        for _ in 0..1000 {
            let constants = Constants::generate(&mut random);
            let delta = constants.c_last_run.abs_diff(constants.c_last_load);
            assert!((65..=119).contains(&delta) && delta != 96 && delta != 112);
        }
    }

    #[test]
    fn inputs_follow_the_mix_rules() {
        let mut random = SmallRng::seed_from_u64(5);
        let scale = Scale::standard(4);
        let constants = Constants::generate(&mut random);
        let (mut rollbacks, mut remote_lines, mut lines, mut remote_payments, mut by_name) =
            (0, 0, 0, 0, 0);
        let trials = 20_000;
        for _ in 0..trials {
            let order = NewOrderInput::generate(&mut random, &scale, &constants, 2);
            assert!((5..=15).contains(&order.lines.len()));
            rollbacks += (order.lines.last().unwrap().item > scale.items) as u32;
            lines += order.lines.len();
            remote_lines += order.lines.iter().filter(|line| line.supply_warehouse != 2).count();
            assert!(order.lines.iter().all(|line| (1..=4).contains(&line.supply_warehouse)));
            let payment = PaymentInput::generate(&mut random, &scale, &constants, 2);
            remote_payments += (payment.customer_warehouse != 2) as u32;
            by_name += matches!(payment.customer, CustomerSelector::LastName(_)) as u32;
        }
        let share = |count: u32| count as f64 / trials as f64;
        assert!((0.005..0.015).contains(&share(rollbacks)), "rollbacks {}", share(rollbacks));
        assert!((0.13..0.17).contains(&share(remote_payments)));
        assert!((0.57..0.63).contains(&share(by_name)));
        let remote_share = remote_lines as f64 / lines as f64;
        assert!((0.007..0.013).contains(&remote_share), "remote lines {remote_share}");
    }
}
