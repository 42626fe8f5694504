//! The nine TPC-C tables for the engine adapter: every column of clause 1.3, as fixed-layout
//! little-endian rows, and their primary keys as memcomparable byte strings.
//!
//! Money is stored in integer cents and rates (tax, discount) in units of 1/10,000, so that
//! sums are exact, as NUMERIC columns are. Dates are seconds since the Unix epoch; a null
//! O_CARRIER_ID or OL_DELIVERY_D is 0. Variable-length text is a length and a fixed buffer, so
//! every row of a table has one size and updates stay in place. The columns a secondary index
//! covers come first in their rows, so key extractors read them at fixed offsets.

/// A column type that knows its fixed-width encoding.
pub trait Field: Sized {
    /// Encoded width in bytes.
    const WIDTH: usize;
    fn put(&self, out: &mut Vec<u8>);
    fn get(bytes: &[u8], at: &mut usize) -> Self;

    /// The field encoded at offset `at` of a row.
    #[inline]
    fn read_at(row: &[u8], at: usize) -> Self {
        let mut at = at;
        Self::get(row, &mut at)
    }
}

/// Integer fields can be rewritten in place.
pub trait Patch: Field {
    fn write_at(&self, row: &mut [u8], at: usize);
}

macro_rules! int_field {
    ($($ty:ty),*) => {$(
        impl Field for $ty {
            const WIDTH: usize = size_of::<$ty>();
            #[inline]
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn get(bytes: &[u8], at: &mut usize) -> Self {
                const N: usize = size_of::<$ty>();
                let value = <$ty>::from_le_bytes(bytes[*at..*at + N].try_into().expect("row width"));
                *at += N;
                value
            }
        }

        impl Patch for $ty {
            #[inline]
            fn write_at(&self, row: &mut [u8], at: usize) {
                row[at..at + size_of::<$ty>()].copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
int_field!(u8, u16, u32, u64, i16, i32, i64);

impl<const N: usize> Field for [u8; N] {
    const WIDTH: usize = N;
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    #[inline]
    fn get(bytes: &[u8], at: &mut usize) -> Self {
        let value = bytes[*at..*at + N].try_into().expect("row width");
        *at += N;
        value
    }
}

/// VARCHAR(N): a length and N bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Text<const N: usize> {
    len: u16,
    bytes: [u8; N],
}

impl<const N: usize> Text<N> {
    pub fn new(value: &[u8]) -> Self {
        let len = value.len().min(N);
        let mut bytes = [0u8; N];
        bytes[..len].copy_from_slice(&value[..len]);
        Text { len: len as u16, bytes }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    pub fn contains(&self, needle: &[u8]) -> bool {
        self.as_bytes().windows(needle.len()).any(|window| window == needle)
    }
}

impl<const N: usize> std::fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl<const N: usize> Field for Text<N> {
    const WIDTH: usize = 2 + N;
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        self.len.put(out);
        out.extend_from_slice(&self.bytes);
    }
    #[inline]
    fn get(bytes: &[u8], at: &mut usize) -> Self {
        let len = u16::get(bytes, at);
        let value = <[u8; N]>::get(bytes, at);
        Text { len: len.min(N as u16), bytes: value }
    }
}

/// Constants with each field's byte offset, accumulated over the field list.
macro_rules! offsets {
    ($at:expr;) => {};
    ($at:expr; $field:ident : $ty:ty $(, $rest:ident : $rest_ty:ty)*) => {
        #[allow(non_upper_case_globals)]
        pub const $field: usize = $at;
        offsets!($at + <$ty as Field>::WIDTH; $($rest : $rest_ty),*);
    };
}

/// A row type: its fields, their encoding, and a module `$at` of their offsets (so stored
/// procedures read and patch single fields in place, as Silo's benchmarks touch records).
macro_rules! row {
    ($(#[$meta:meta])* $name:ident, $at:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        pub mod $at {
            use super::*;
            offsets!(0; $($field : $ty),*);
            /// The encoded row's width.
            pub const WIDTH: usize = 0 $(+ <$ty as Field>::WIDTH)*;
        }
        row!($(#[$meta])* $name { $($field : $ty),* });
    };
    ($(#[$meta:meta])* $name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name { $(pub $field: $ty),* }

        impl $name {
            /// Writes the row into `out` (cleared first).
            pub fn encode(&self, out: &mut Vec<u8>) {
                out.clear();
                $(Field::put(&self.$field, out);)*
            }

            pub fn decode(bytes: &[u8]) -> Self {
                let mut at = 0;
                $(let $field = <$ty as Field>::get(bytes, &mut at);)*
                $name { $($field),* }
            }
        }
    };
}

row!(Warehouse, warehouse_at {
    w_id: u16,
    name: Text<10>,
    street_1: Text<20>,
    street_2: Text<20>,
    city: Text<20>,
    state: [u8; 2],
    zip: [u8; 9],
    tax: u16,
    ytd_cents: i64,
});

row!(District, district_at {
    w_id: u16,
    d_id: u8,
    name: Text<10>,
    street_1: Text<20>,
    street_2: Text<20>,
    city: Text<20>,
    state: [u8; 2],
    zip: [u8; 9],
    tax: u16,
    ytd_cents: i64,
    next_o_id: u32,
});

row!(
    /// W, D and the last and first names come first: the by-name index reads them in place.
    Customer, customer_at {
        w_id: u16,
        d_id: u8,
        c_id: u32,
        last: Text<16>,
        first: Text<16>,
        middle: [u8; 2],
        street_1: Text<20>,
        street_2: Text<20>,
        city: Text<20>,
        state: [u8; 2],
        zip: [u8; 9],
        phone: [u8; 16],
        since: u64,
        credit: [u8; 2],
        credit_lim_cents: i64,
        discount: u16,
        balance_cents: i64,
        ytd_payment_cents: i64,
        payment_cnt: u16,
        delivery_cnt: u16,
        data: Text<500>,
    }
);

row!(History, history_at {
    c_id: u32,
    c_d_id: u8,
    c_w_id: u16,
    d_id: u8,
    w_id: u16,
    date: u64,
    amount_cents: i64,
    data: Text<24>,
});

row!(
    /// W, D, O and C come first: the by-customer index reads them in place.
    Order, order_at {
        w_id: u16,
        d_id: u8,
        o_id: u32,
        c_id: u32,
        entry_d: u64,
        carrier_id: u8,
        ol_cnt: u8,
        all_local: u8,
    }
);

row!(NewOrder, new_order_at { w_id: u16, d_id: u8, o_id: u32 });

row!(
    OrderLine,
    order_line_at {
        w_id: u16,
        d_id: u8,
        o_id: u32,
        number: u8,
        i_id: u32,
        supply_w_id: u16,
        delivery_d: u64,
        quantity: u8,
        amount_cents: i64,
        dist_info: [u8; 24],
    }
);

row!(Item, item_at { i_id: u32, im_id: u32, name: Text<24>, price_cents: i64, data: Text<50> });

row!(Stock, stock_at {
    w_id: u16,
    i_id: u32,
    quantity: i16,
    dist: [[u8; 24]; 10],
    ytd: u32,
    order_cnt: u16,
    remote_cnt: u16,
    data: Text<50>,
});

impl Field for [[u8; 24]; 10] {
    const WIDTH: usize = 240;
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        for part in self {
            out.extend_from_slice(part);
        }
    }
    #[inline]
    fn get(bytes: &[u8], at: &mut usize) -> Self {
        let mut value = [[0u8; 24]; 10];
        for part in &mut value {
            *part = <[u8; 24]>::get(bytes, at);
        }
        value
    }
}

// ----- primary keys: big-endian fields in key order ------------------------------------------

pub fn warehouse_key(w: u16) -> [u8; 2] {
    w.to_be_bytes()
}

pub fn district_key(w: u16, d: u8) -> [u8; 3] {
    let [a, b] = w.to_be_bytes();
    [a, b, d]
}

pub fn customer_key(w: u16, d: u8, c: u32) -> [u8; 7] {
    let mut key = [0u8; 7];
    key[..3].copy_from_slice(&district_key(w, d));
    key[3..].copy_from_slice(&c.to_be_bytes());
    key
}

/// ORDER and NEW-ORDER share the key (W, D, O).
pub fn order_key(w: u16, d: u8, o: u32) -> [u8; 7] {
    customer_key(w, d, o)
}

pub fn order_line_key(w: u16, d: u8, o: u32, number: u8) -> [u8; 8] {
    let mut key = [0u8; 8];
    key[..7].copy_from_slice(&order_key(w, d, o));
    key[7] = number;
    key
}

pub fn item_key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

pub fn stock_key(w: u16, i: u32) -> [u8; 6] {
    let mut key = [0u8; 6];
    key[..2].copy_from_slice(&w.to_be_bytes());
    key[2..].copy_from_slice(&i.to_be_bytes());
    key
}

/// HISTORY has no primary key in TPC-C; rows get a hidden one: warehouse, the inserting
/// thread and its sequence number.
pub fn history_key(w: u16, thread: u16, sequence: u64) -> [u8; 12] {
    let mut key = [0u8; 12];
    key[..2].copy_from_slice(&w.to_be_bytes());
    key[2..4].copy_from_slice(&thread.to_be_bytes());
    key[4..].copy_from_slice(&sequence.to_be_bytes());
    key
}

// ----- secondary keys ---------------------------------------------------------------------

const CUSTOMER_LAST: usize = customer_at::last;
const CUSTOMER_FIRST: usize = customer_at::first;

/// The text of a `Text<capacity>` field at offset `at` of a row, read in place.
pub fn text_at(row: &[u8], at: usize, capacity: usize) -> &[u8] {
    let len = (u16::from_le_bytes([row[at], row[at + 1]]) as usize).min(capacity);
    &row[at + 2..at + 2 + len]
}

/// CUSTOMER by (W, D, C_LAST, C_FIRST): the key Payment and OrderStatus look customers up by.
pub fn customer_name_key(row: &[u8], out: &mut Vec<u8>) -> bool {
    let last = text_at(row, CUSTOMER_LAST, 16);
    let first = text_at(row, CUSTOMER_FIRST, 16);
    customer_name_prefix(u16::from_le_bytes([row[0], row[1]]), row[2], last, out);
    engram_engine::index::key::encode_bytes(first, out);
    true
}

/// The part of the by-name key that names (W, D, C_LAST): the prefix a lookup scans.
pub fn customer_name_prefix(w: u16, d: u8, last: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&district_key(w, d));
    engram_engine::index::key::encode_bytes(last, out);
}

/// ORDER by (W, D, C, O): OrderStatus finds a customer's last order by it.
pub fn order_customer_key(row: &[u8], out: &mut Vec<u8>) -> bool {
    out.extend_from_slice(&district_key(u16::from_le_bytes([row[0], row[1]]), row[2]));
    out.extend_from_slice(&u32::from_le_bytes(row[7..11].try_into().expect("c_id")).to_be_bytes());
    out.extend_from_slice(&u32::from_le_bytes(row[3..7].try_into().expect("o_id")).to_be_bytes());
    true
}

/// The part of the by-customer key that names (W, D, C).
pub fn order_customer_prefix(w: u16, d: u8, c: u32) -> [u8; 7] {
    customer_key(w, d, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_extractors_read_them_in_place() {
        let customer = Customer {
            w_id: 3,
            d_id: 7,
            c_id: 1234,
            last: Text::new(b"BARABLEPRI"),
            first: Text::new(b"firstname"),
            middle: *b"OE",
            street_1: Text::new(b"s1"),
            street_2: Text::new(b"s2"),
            city: Text::new(b"city"),
            state: *b"CA",
            zip: *b"123411111",
            phone: *b"0123456789012345",
            since: 99,
            credit: *b"GC",
            credit_lim_cents: 5_000_000,
            discount: 1234,
            balance_cents: -1000,
            ytd_payment_cents: 1000,
            payment_cnt: 1,
            delivery_cnt: 0,
            data: Text::new(&[b'x'; 400]),
        };
        let mut row = Vec::new();
        customer.encode(&mut row);
        assert_eq!(Customer::decode(&row), customer);
        let mut key = Vec::new();
        customer_name_key(&row, &mut key);
        let mut prefix = Vec::new();
        customer_name_prefix(3, 7, b"BARABLEPRI", &mut prefix);
        assert!(key.starts_with(&prefix) && key.len() > prefix.len());

        let order = Order {
            w_id: 3,
            d_id: 7,
            o_id: 42,
            c_id: 1234,
            entry_d: 5,
            carrier_id: 0,
            ol_cnt: 9,
            all_local: 1,
        };
        order.encode(&mut row);
        key.clear();
        order_customer_key(&row, &mut key);
        let mut want = order_customer_prefix(3, 7, 1234).to_vec();
        want.extend_from_slice(&42u32.to_be_bytes());
        assert_eq!(key, want);
        // Offsets agree with the encoding.
        assert_eq!(
            u16::read_at(
                &{
                    let mut r = Vec::new();
                    customer.encode(&mut r);
                    r
                },
                customer_at::discount
            ),
            1234
        );
        let mut customer_row = Vec::new();
        customer.encode(&mut customer_row);
        assert_eq!(customer_row.len(), customer_at::WIDTH);
        assert_eq!(i64::read_at(&customer_row, customer_at::balance_cents), -1000);
        (-2000i64).write_at(&mut customer_row, customer_at::balance_cents);
        assert_eq!(Customer::decode(&customer_row).balance_cents, -2000);
        assert_eq!(Text::<500>::read_at(&customer_row, customer_at::data), customer.data);
        assert!(order_line_key(1, 2, 3, 4) < order_line_key(1, 2, 3, 5));
        assert!(order_line_key(1, 2, 3, 15) < order_line_key(1, 2, 4, 1));
    }
}
