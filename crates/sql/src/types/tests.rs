//! Values: text forms, parsing, casts, numeric fitting and the binary NUMERIC format.

use super::*;

#[test]
fn dates_round_trip() {
    for days in [-800_000i64, -1, 0, 1, 10_957, 19_000, 2_932_896] {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days);
    }
    assert_eq!(days_from_civil(2000, 1, 1), 10_957);
    let value = parse_text("2024-02-29 13:45:01.5", Type::Timestamp).unwrap();
    assert_eq!(value.to_text(Type::Timestamp).unwrap(), "2024-02-29 13:45:01.5");
    assert!(parse_text("2023-02-29", Type::Date).is_err());
}

#[test]
fn numeric_fits_precision() {
    let ty = Type::Numeric { precision: 5, scale: 2 };
    let value = parse_text("123.456", ty).unwrap();
    assert_eq!(value.to_text(ty).unwrap(), "123.46");
    assert_eq!(parse_text("1234.5", ty).unwrap_err().code, "22003");
    assert_eq!(parse_text("1.5x", ty).unwrap_err().code, "22P02");
}

/// The mantissa test of `integer_digits_fit` agrees with comparing the truncated value
/// against 10^digits in decimal arithmetic, at the powers of ten and around them.
#[test]
fn integer_digits_by_mantissa() {
    use rand::{RngExt, SeedableRng, rngs::SmallRng};
    let by_arithmetic = |value: &Decimal, digits: u8| {
        digits > 28
            || value.trunc().abs() < Decimal::from_i128_with_scale(10i128.pow(digits.into()), 0)
    };
    let mut random = SmallRng::seed_from_u64(5);
    let mut values = vec![Decimal::MAX, Decimal::MIN, Decimal::ZERO];
    for exponent in 0..29u32 {
        for scale in 0..=28u32 {
            let power = 10i128.pow(exponent);
            for mantissa in [power - 1, power, power + 1, -power, 1 - power] {
                if let Ok(value) = Decimal::try_from_i128_with_scale(mantissa, scale) {
                    values.push(value);
                }
            }
        }
    }
    for _ in 0..20_000 {
        let mantissa =
            random.random_range(-(1i128 << 95)..(1i128 << 95)) >> random.random_range(0..95);
        values.push(Decimal::from_i128_with_scale(mantissa, random.random_range(0..=28)));
    }
    for value in &values {
        for digits in 0..=40u8 {
            assert_eq!(
                integer_digits_fit(value, digits),
                by_arithmetic(value, digits),
                "{value} in {digits} digits"
            );
        }
    }
}

/// `conforms` is true only where the implicit cast gives back the same value.
#[test]
fn conforming_values_cast_to_themselves() {
    use rand::{RngExt, SeedableRng, rngs::SmallRng};
    let types = [
        Type::Bool,
        Type::Int2,
        Type::Int4,
        Type::Int8,
        Type::Float4,
        Type::Float8,
        Type::Numeric { precision: 0, scale: 0 },
        Type::Numeric { precision: 4, scale: 4 },
        Type::Numeric { precision: 6, scale: 2 },
        Type::Numeric { precision: 28, scale: 0 },
        Type::Char(2),
        Type::Varchar(3),
        Type::Varchar(0),
        Type::Text,
        Type::Bytea,
        Type::Date,
        Type::Timestamp,
        Type::Unknown,
    ];
    let mut random = SmallRng::seed_from_u64(11);
    let (mut conforming, mut converted) = (0, 0);
    for _ in 0..20_000 {
        let value = match random.random_range(0..8) {
            0 => Value::Null,
            1 => Value::Bool(random.random_bool(0.5)),
            2 => Value::Int(match random.random_range(0..3) {
                0 => random.random_range(-300..300),
                1 => random.random_range(-70_000..70_000),
                _ => random.random(),
            }),
            3 => Value::Float(random.random_range(-1e6..1e6)),
            4 => Value::Numeric(Decimal::new(
                random.random_range(-10_000_000..10_000_000),
                random.random_range(0..6),
            )),
            5 => Value::Text(
                ["", "a", "ab", "ab ", "abc", "abcd", "é", "éé", "x  "][random.random_range(0..9)]
                    .into(),
            ),
            6 => Value::Date(random.random_range(-1000..1000)),
            _ => Value::Timestamp(random.random_range(-1 << 40..1 << 40)),
        };
        let ty = types[random.random_range(0..types.len())];
        // The cast without its fast path: the match on every pair of value and type.
        let slow = |explicit: bool| convert(value.clone(), ty, explicit);
        if conforms(&value, ty) {
            conforming += 1;
            for explicit in [false, true] {
                let cast = slow(explicit);
                assert!(
                    matches!(&cast, Ok(c) if format!("{c:?}") == format!("{value:?}")),
                    "{value:?} as {ty:?} conforms, but the cast gave {cast:?}"
                );
            }
        } else {
            converted += 1;
        }
    }
    assert!(conforming > 2_000 && converted > 2_000, "{conforming} / {converted}");
}

#[test]
fn text_limits() {
    assert_eq!(parse_text("abcd", Type::Varchar(3)).unwrap_err().code, "22001");
    assert!(
        matches!(cast(Value::Text("abcd".into()), Type::Varchar(3), true), Ok(Value::Text(t)) if t == "abc")
    );
    assert_eq!(Value::Text("ab".into()).to_text(Type::Char(4)).unwrap(), "ab  ");
}
