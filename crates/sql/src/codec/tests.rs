//! Row and key encodings: round trips, order, and malformed input.

use super::*;
use crate::types::parse_text;

fn key_in(format: KeyFormat, ty: Type, text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(format, ty, &parse_text(text, ty).unwrap(), &mut out);
    out
}

fn key(ty: Type, text: &str) -> Vec<u8> {
    key_in(KeyFormat::Compact, ty, text)
}

#[test]
fn keys_order_like_values() {
    let cases: [(Type, &[&str]); 11] = [
        (Type::Int2, &["-32768", "-256", "-1", "0", "239", "240", "255", "256", "32767"]),
        (Type::Int4, &["-2147483648", "-5", "0", "7", "2147483647"]),
        (Type::Int8, &["-9223372036854775808", "-1", "0", "1", "9223372036854775807"]),
        (Type::Float8, &["-Infinity", "-1.5", "-0.001", "0", "1e-9", "2.5", "Infinity", "NaN"]),
        (
            Type::Numeric { precision: 0, scale: 0 },
            &["-123.45", "-12.3", "-12", "-0.5", "0", "0.001", "0.5", "12", "12.3", "100"],
        ),
        (Type::Text, &["", "a", "a\u{0}", "ab", "b"]),
        (Type::Date, &["1969-12-31", "1970-01-01", "2024-03-01"]),
        (
            Type::Timestamptz,
            &["1969-12-31 23:59:59+00", "1970-01-01 00:00:00+00", "2024-03-01 12:00-05"],
        ),
        (Type::Time, &["00:00", "00:00:00.000001", "12:00", "23:59:59.999999"]),
        (
            Type::Interval,
            &["-1 year", "-1 day", "-00:00:01", "0", "1 hour", "1 day 1 second", "1 mon 1 day"],
        ),
        (
            Type::Uuid,
            &[
                "00000000-0000-0000-0000-000000000000",
                "00000000-0000-0000-0000-000000000001",
                "ffffffff-0000-0000-0000-000000000000",
            ],
        ),
    ];
    for (ty, values) in cases {
        for format in [KeyFormat::Fixed, KeyFormat::Compact] {
            let keys: Vec<Vec<u8>> = values.iter().map(|v| key_in(format, ty, v)).collect();
            for pair in keys.windows(2) {
                assert!(pair[0] < pair[1], "{format:?} {ty:?}: {:?}", values);
            }
        }
    }
    // The widths the fixed format has always written, and the compact sizes.
    assert_eq!(key_in(KeyFormat::Fixed, Type::Int4, "-1"), [0x7F, 0xFF, 0xFF, 0xFF]);
    assert_eq!(key_in(KeyFormat::Fixed, Type::Int2, "1"), [0x80, 0x01]);
    assert_eq!(key(Type::Int4, "7"), [15]);
    assert_eq!(key(Type::Int4, "3000"), [0xF9, 0x0B, 0xB8]);
    assert_eq!(key(Type::Int4, "-1"), [7, 0xFF]);
    assert_eq!(
        key(Type::Numeric { precision: 0, scale: 0 }, "1.50"),
        key(Type::Numeric { precision: 0, scale: 0 }, "1.5")
    );
}

#[test]
fn rows_round_trip() {
    let types = [
        Type::Int4,
        Type::Text,
        Type::Numeric { precision: 6, scale: 2 },
        Type::Bool,
        Type::Float8,
    ];
    let values = vec![
        Value::Int(-7),
        Value::Text("héllo".into()),
        parse_text("12.50", types[2]).unwrap(),
        Value::Null,
        Value::Float(2.5),
    ];
    let mut row = Vec::new();
    encode_row(3, &types, &values, &mut row);
    assert_eq!(row_version(&row), 3);
    let mut out = Vec::new();
    decode_row(&row, &types, &Wanted::ALL, &mut out).unwrap();
    for (a, b) in values.iter().zip(&out) {
        assert_eq!(a.compare(b), std::cmp::Ordering::Equal);
    }
    assert!(decode_row(&row[..row.len() - 3], &types, &Wanted::ALL, &mut out).is_err());
    // A row cut anywhere before the end of the last wanted column is an error, never a
    // panic, whichever columns are read; a cut after it is not seen.
    for wanted in [[true, false, false, false, false], [false, false, true, false, true]] {
        let last = wanted.iter().rposition(|w| *w).unwrap();
        let end = noted_starts(&row, &types, last + 1)[last + 1] as usize;
        let wanted = Wanted::marked(wanted.to_vec(), &types);
        for cut in 0..row.len() {
            let decoded = decode_row(&row[..cut], &types, &wanted, &mut out);
            assert_eq!(decoded.is_err(), cut < end, "cut at {cut} of {}", row.len());
        }
    }
    // A damaged length of a column stepped over, ending just short of 2^64 (where the
    // next column's width would overflow), is an error.
    let mut damaged = row[..9].to_vec();
    damaged.extend_from_slice(&[0xE7, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]);
    damaged.extend_from_slice(&row[10..]);
    let wanted = Wanted::marked(vec![false, false, true, false, true], &types);
    assert!(decode_row(&damaged, &types, &wanted, &mut out).is_err());
    // Stored text that is not UTF-8 (damaged bytes) is an error, ASCII or not around it.
    for text in ["abcd", "abcdé"] {
        let mut damaged = Vec::new();
        let mut values = vec![Value::Null; types.len()];
        values[1] = Value::Text(text.into());
        encode_row(3, &types, &values, &mut damaged);
        let at = damaged.windows(4).position(|w| w == b"abcd").unwrap();
        decode_row(&damaged, &types, &Wanted::ALL, &mut out).unwrap();
        damaged[at + 1] = 0xC3;
        damaged[at + 2] = 0x28;
        let error = decode_row(&damaged, &types, &Wanted::ALL, &mut out).unwrap_err();
        assert_eq!(error.code, "XX001", "{text}");
    }
    // Only the wanted columns, the last one included; the others are NULL.
    for wanted in [[true, false, false, false, false], [false, true, true, false, false]] {
        decode_row(&row, &types, &Wanted::marked(wanted.to_vec(), &types), &mut out).unwrap();
        assert_eq!(out.len(), types.len());
        for (column, value) in out.iter().enumerate() {
            if wanted[column] {
                assert_eq!(value.compare(&values[column]), std::cmp::Ordering::Equal);
            } else {
                assert!(value.is_null(), "{column}: {value:?}");
            }
        }
    }
}

use rand::{RngExt, SeedableRng, rngs::SmallRng};

/// Column types of every storage shape: fixed and variable widths.
const MIXED_TYPES: [Type; 12] = [
    Type::Int4,
    Type::Text,
    Type::Numeric { precision: 6, scale: 2 },
    Type::Bool,
    Type::Varchar(600),
    Type::Int8,
    Type::Timestamp,
    Type::Bytea,
    Type::Int2,
    Type::Interval,
    Type::Uuid,
    Type::Timestamptz,
];

/// A random value of `ty`, NULL a quarter of the time; text holds zero bytes too.
fn random_value(random: &mut SmallRng, ty: Type) -> Value {
    if random.random_bool(0.25) {
        return Value::Null;
    }
    match ty {
        Type::Int4 | Type::Int8 | Type::Int2 => Value::Int(random.random_range(-99..99)),
        Type::Numeric { .. } => Value::Numeric(Decimal::new(random.random_range(-9999..9999), 2)),
        Type::Bool => Value::Bool(random.random_bool(0.5)),
        Type::Timestamp => Value::Timestamp(random.random_range(0..1 << 40)),
        Type::Timestamptz => Value::Timestamptz(random.random_range(-1 << 50..1 << 50)),
        Type::Time => Value::Time(random.random_range(0..86_400_000_000)),
        Type::Interval => Value::Interval(crate::types::Interval::new(
            random.random_range(-99..99),
            random.random_range(-99..99),
            random.random(),
        )),
        Type::Uuid => Value::Uuid(random.random()),
        Type::Bytea => Value::Bytes(vec![random.random_range(0..2); random.random_range(0..300)]),
        _ => Value::Text("x\0".repeat(random.random_range(0..150)).into()),
    }
}

/// Ten fixed-width columns (two bytes of null bitmap), then text: marks within the first
/// ten are read in place (`Wanted::direct`) when none of them is NULL.
const FIXED_FIRST: [Type; 12] = [
    Type::Int4,
    Type::Int2,
    Type::Numeric { precision: 6, scale: 2 },
    Type::Bool,
    Type::Int8,
    Type::Timestamp,
    Type::Int4,
    Type::Int8,
    Type::Int2,
    Type::Int4,
    Type::Text,
    Type::Int4,
];

/// Decoding into one buffer, row after row (with the columns of the row before in it),
/// gives each time what a fresh buffer gets: the wanted columns' values and NULL everywhere
/// else, for rows with and without NULLs, rows written before columns were added, and any
/// set of wanted columns, none and all included; read in place or walked to.
#[test]
fn decoding_into_a_used_buffer_equals_decoding_into_a_new_one() {
    let mut random = SmallRng::seed_from_u64(3);
    for types in [&MIXED_TYPES[..], &FIXED_FIRST[..]] {
        let (mut row, mut reused, mut in_place) = (Vec::new(), Vec::new(), 0);
        for _ in 0..3_000 {
            let stored = random.random_range(1..=types.len());
            let nulls = random.random_bool(0.5);
            let written: Vec<Value> = types[..stored]
                .iter()
                .map(|ty| {
                    loop {
                        let value = random_value(&mut random, *ty);
                        if nulls || !value.is_null() {
                            break value;
                        }
                    }
                })
                .collect();
            encode_row(1, &types[..stored], &written, &mut row);
            let all = random.random_bool(0.2);
            let reach = random.random_range(1..=types.len());
            let marks: Vec<bool> =
                (0..types.len()).map(|c| all || (c < reach && random.random_bool(0.3))).collect();
            let wanted = if all { Wanted::ALL } else { Wanted::marked(marks.clone(), types) };
            let last = marks.iter().rposition(|m| *m).map_or(0, |at| at + 1);
            in_place += usize::from(
                !all && last <= 10
                    && last <= stored
                    && written[..last].iter().all(|v| !v.is_null()),
            );
            decode_row(&row, types, &wanted, &mut reused).unwrap();
            let mut fresh = Vec::new();
            decode_row(&row, types, &Wanted::ALL, &mut fresh).unwrap();
            for (column, value) in reused.iter().enumerate() {
                let expected = if marks[column] { &fresh[column] } else { &Value::Null };
                assert_eq!(format!("{value:?}"), format!("{expected:?}"), "{column}: {written:?}");
            }
            // A join level moves exactly the marked columns.
            let mut numbered: Vec<Value> = (0..marks.len() as i64).map(Value::Int).collect();
            let moved: Vec<String> = wanted.kept(&mut numbered).map(|v| format!("{v:?}")).collect();
            let marked: Vec<String> = (0..marks.len() as i64)
                .filter(|c| marks[*c as usize])
                .map(|c| format!("{:?}", Value::Int(c)))
                .collect();
            assert_eq!(moved, marked);
            assert_eq!(wanted.count(marks.len()), marked.len());
        }
        if types.len() == FIXED_FIRST.len() {
            assert!(in_place > 500, "only {in_place} rows read in place");
        }
    }
    // A row too short for the places it should have is an error, not a panic.
    let wanted = Wanted::marked(vec![false, true], &FIXED_FIRST);
    let mut row = Vec::new();
    encode_row(1, &FIXED_FIRST[..3], &[Value::Int(1), Value::Int(2), Value::Null], &mut row);
    let mut out = Vec::new();
    assert!(decode_row(&row[..row.len() - 1], &FIXED_FIRST, &wanted, &mut out).is_err());
}

/// Compact integers round-trip, order like their values at every length boundary and
/// at random, and a composite of two orders like the pair: the header fixes each
/// value's length, so the second column is never compared against the first's bytes.
#[test]
fn compact_integers_round_trip_and_order_as_pairs() {
    let mut values: Vec<i64> = vec![i64::MIN, i64::MAX, 0, -1, 1];
    for shift in 0..63 {
        for base in [1i64 << shift, -(1i64 << shift)] {
            values.extend([base - 1, base, base + 1]);
        }
    }
    values.extend([238, 239, 240, 241, -255, -256, -257]);
    let mut random = SmallRng::seed_from_u64(5);
    for _ in 0..2_000 {
        let bits = random.random_range(0..64);
        values.push(random.random::<i64>() >> bits);
    }
    let encode = |value: i64| {
        let mut out = Vec::new();
        encode_compact_int(value, &mut out);
        out
    };
    for &value in &values {
        let bytes = encode(value);
        assert!((1..=9).contains(&bytes.len()), "{value}: {bytes:?}");
        assert_eq!(decode_compact_int(&bytes), Some((value, bytes.len())), "{value}");
        assert_eq!(decode_compact_int(&bytes[..bytes.len() - 1]), None, "{value}");
    }
    for pair in values.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert_eq!(encode(a).cmp(&encode(b)), a.cmp(&b), "{a} against {b}");
    }
    for _ in 0..5_000 {
        let pick = |random: &mut SmallRng| values[random.random_range(0..values.len())];
        let (a, b) =
            ((pick(&mut random), pick(&mut random)), (pick(&mut random), pick(&mut random)));
        let (mut left, mut right) = (encode(a.0), encode(b.0));
        encode_compact_int(a.1, &mut left);
        encode_compact_int(b.1, &mut right);
        assert_eq!(left.cmp(&right), a.cmp(&b), "{a:?} against {b:?}");
    }
}

/// A primary key of every type, width and format reads back as the values it was built
/// from; a key cut short, or with bytes left over, does not read back.
#[test]
fn keys_read_back_as_their_values() {
    let mut random = SmallRng::seed_from_u64(17);
    let types = [
        Type::Int2,
        Type::Int4,
        Type::Int8,
        Type::Float8,
        Type::Date,
        Type::Numeric { precision: 0, scale: 0 },
        Type::Bool,
        Type::Text,
        Type::Bytea,
        Type::Timestamp,
        Type::Timestamptz,
        Type::Time,
        Type::Uuid,
    ];
    let mut key = Vec::new();
    for _ in 0..5_000 {
        let count = random.random_range(1..=3);
        let chosen: Vec<Type> =
            (0..count).map(|_| types[random.random_range(0..types.len())]).collect();
        let values: Vec<Value> = chosen
            .iter()
            .map(|ty| match ty {
                Type::Int2 => Value::Int(random.random_range(-32768..32768)),
                Type::Int4 => Value::Int(random.random_range(-(1 << 31)..(1 << 31))),
                Type::Int8 => Value::Int(random.random::<i64>() >> random.random_range(0..64)),
                Type::Float8 => Value::Float(random.random_range(-1e9..1e9)),
                Type::Date => Value::Date(random.random_range(-100_000..100_000)),
                Type::Numeric { .. } => Value::Numeric(Decimal::new(
                    random.random_range(-10i64.pow(12)..10i64.pow(12)),
                    random.random_range(0..8),
                )),
                other => loop {
                    let value = random_value(&mut random, *other);
                    if !value.is_null() {
                        break value;
                    }
                },
            })
            .collect();
        let format = if random.random_bool(0.5) { KeyFormat::Compact } else { KeyFormat::Fixed };
        key.clear();
        for (ty, value) in chosen.iter().zip(&values) {
            encode_key(format, *ty, value, &mut key);
        }
        let decoded = decode_key(format, &chosen, &key).expect("reads back");
        for (read, written) in decoded.iter().zip(&values) {
            match (read, written) {
                (Value::Numeric(a), Value::Numeric(b)) => assert_eq!(a, b),
                _ => assert_eq!(format!("{read:?}"), format!("{written:?}")),
            }
        }
        assert!(decode_key(format, &chosen, &key[..key.len() - 1]).is_none());
        key.push(0);
        assert!(decode_key(format, &chosen, &key).is_none());
    }
}

/// A secondary key built from the row's bytes equals the key built from its decoded
/// values, for every mix of NULLs, widths, column orders and unique indexes, and for rows
/// written before columns were added.
#[test]
fn index_keys_from_bytes_equal_keys_from_values() {
    let mut random = SmallRng::seed_from_u64(11);
    let (mut row, mut values, mut fast, mut slow) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3_000 {
        let stored = random.random_range(1..=MIXED_TYPES.len());
        let written: Vec<Value> =
            MIXED_TYPES[..stored].iter().map(|ty| random_value(&mut random, *ty)).collect();
        encode_row(1, &MIXED_TYPES[..stored], &written, &mut row);
        let count = random.random_range(1..=4);
        let columns: Vec<usize> =
            (0..count).map(|_| random.random_range(0..MIXED_TYPES.len())).collect();
        let unique = random.random_bool(0.5);
        let format = if random.random_bool(0.5) { KeyFormat::Compact } else { KeyFormat::Fixed };
        fast.clear();
        let keyed =
            encode_index_key(format, &row, &MIXED_TYPES, &columns, unique, &mut fast).unwrap();
        // The reference: decode, then encode each value.
        decode_row(&row, &MIXED_TYPES, &Wanted::ALL, &mut values).unwrap();
        slow.clear();
        let mut expected = true;
        for &column in &columns {
            match &values[column] {
                Value::Null if unique => {
                    expected = false;
                    break;
                }
                Value::Null => slow.push(2),
                value => {
                    slow.push(1);
                    encode_key(format, MIXED_TYPES[column], value, &mut slow);
                }
            }
        }
        assert_eq!(keyed, Some(expected), "{written:?} {columns:?}");
        if expected {
            assert_eq!(fast, slow, "{written:?} {columns:?}");
        }
    }
    // Damaged bytes are an error, and a wide index is left to the caller.
    let compact = KeyFormat::Compact;
    assert!(encode_index_key(compact, &row[..3], &MIXED_TYPES, &[0], false, &mut fast).is_err());
    let wide = [0; INDEX_KEY_COLUMNS_MAX + 1];
    let keyed = encode_index_key(compact, &row, &MIXED_TYPES, &wide, false, &mut fast);
    assert_eq!(keyed.unwrap(), None);
}

/// Patching a row gives the same bytes as encoding the changed row whole, for every mix
/// of NULLs, fixed and variable widths and changes, whether it walks the row or jumps by
/// the starts a decode of some of its columns noted.
#[test]
fn patched_rows_equal_rows_encoded_whole() {
    let mut random = SmallRng::seed_from_u64(5);
    let value = random_value;
    let (mut old, mut expected, mut patched) = (Vec::new(), Vec::new(), Vec::new());
    let (mut decoded, mut starts) = (Vec::new(), Vec::new());
    let mut jumped = 0;
    for types in [&MIXED_TYPES[..], &FIXED_FIRST[..]] {
        for _ in 0..2_000 {
            let mut values: Vec<Value> = types.iter().map(|ty| value(&mut random, *ty)).collect();
            encode_row(1, types, &values, &mut old);
            // What the statement read of the row, as a decode notes it.
            let marks: Vec<bool> = types.iter().map(|_| random.random_bool(0.3)).collect();
            decode_row_noting(
                &old,
                types,
                &Wanted::marked(marks, types),
                &mut decoded,
                &mut starts,
            )
            .unwrap();
            jumped += usize::from(starts.len() > 1);
            let mut changes = Vec::new();
            for (column, ty) in types.iter().enumerate() {
                if random.random_bool(0.3) {
                    let new = value(&mut random, *ty);
                    values[column] = new.clone();
                    changes.push((column, new));
                }
            }
            encode_row(2, types, &values, &mut expected);
            for known in [&[][..], &starts] {
                assert!(patch_row(&old, 2, types, &changes, known, &mut patched).unwrap());
                assert_eq!(patched, expected, "{values:?} {known:?}");
                // Out of order, or a column twice: refused, never a wrong row.
                if changes.len() > 1 {
                    changes.swap(0, 1);
                    let refused = patch_row(&old, 2, types, &changes, known, &mut patched);
                    assert_eq!(refused.unwrap_err().code, "XX000");
                    changes.swap(0, 1);
                }
                // Once more, the same patch into a buffer holding something else.
                patched.extend_from_slice(b"left over");
                assert!(patch_row(&old, 2, types, &changes, known, &mut patched).unwrap());
                assert_eq!(patched, expected, "{values:?} {known:?}");
            }
        }
    }
    // Most decodes stepped over columns and noted where they start.
    assert!(jumped > 2_000, "{jumped}");
    // A row written with fewer columns is left to the caller.
    let types = MIXED_TYPES;
    encode_row(1, &types[..3], &[Value::Int(1), Value::Null, Value::Null], &mut old);
    assert!(!patch_row(&old, 2, &types, &[], &[], &mut patched).unwrap());
    assert!(patch_row(&old[..2], 2, &types, &[], &[], &mut patched).is_err());
}
