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
        Type::Timestamptz,
        Type::Time,
        Type::Interval,
        Type::Uuid,
        Type::Unknown,
    ];
    let mut random = SmallRng::seed_from_u64(11);
    let (mut conforming, mut converted) = (0, 0);
    for _ in 0..20_000 {
        let value = match random.random_range(0..12) {
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
            7 => Value::Timestamptz(random.random_range(-1 << 40..1 << 40)),
            8 => Value::Time(random.random_range(0..MICROS_PER_DAY)),
            9 => Value::Interval(Interval::new(
                random.random_range(-50..50),
                random.random_range(-50..50),
                random.random_range(-1 << 40..1 << 40),
            )),
            10 => Value::Uuid(random.random()),
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

/// Interval text round-trips through PostgreSQL's output style, and input forms agree.
#[test]
fn intervals_read_and_write() {
    let text = |s: &str| parse_text(s, Type::Interval).unwrap().to_text(Type::Interval).unwrap();
    assert_eq!(text("1 year 2 months -3 days 04:05:06.5"), "1 year 2 mons -3 days +04:05:06.5");
    assert_eq!(text("-1 day +2 hours"), "-1 days +02:00:00");
    assert_eq!(text("@ 1 minute ago"), "-00:01:00");
    assert_eq!(text("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
    assert_eq!(text("1-2"), "1 year 2 mons");
    assert_eq!(text("1.5 months"), "1 mon 15 days");
    assert_eq!(text("0"), "00:00:00");
    for bad in ["", "1 fortnight", "1 day ago ago", "P1X"] {
        assert!(parse_text(bad, Type::Interval).is_err(), "{bad:?} was read");
    }
    let month = Interval::new(1, 0, 0);
    assert_eq!(month.span(), Interval::new(0, 30, 0).span());
    assert_eq!(
        Interval::new(0, 0, 50 * 3_600_000_000).justify_hours().unwrap(),
        Interval::new(0, 2, 7_200_000_000)
    );
    assert!(Interval::new(0, i32::MAX, MICROS_PER_DAY).justify_hours().is_err());
}

/// A zone's wall clock and instants convert both ways, with PostgreSQL's choices in the hour
/// a change to daylight time skips or repeats.
#[test]
fn zones_convert_across_daylight_changes() {
    let new_york = Zone::named("America/New_York").unwrap();
    let at = |s: &str| parse_text(s, Type::Timestamp).unwrap().as_timestamp().unwrap();
    let utc = |s: &str| at(s);
    // 02:30 on 2024-03-10 does not exist: read with the offset before the change (-5).
    assert_eq!(new_york.to_utc(at("2024-03-10 02:30")), utc("2024-03-10 07:30"));
    // 01:30 on 2024-11-03 happens twice: read with the offset after the change (-5).
    assert_eq!(new_york.to_utc(at("2024-11-03 01:30")), utc("2024-11-03 06:30"));
    assert_eq!(new_york.to_local(utc("2024-07-01 16:00")), at("2024-07-01 12:00"));
    assert_eq!(new_york.offset_at(utc("2024-01-01 00:00")), -5 * 3600);
    // Far beyond the rules' years, the season still decides (by whole 400-year cycles).
    let helsinki = Zone::named("Europe/Helsinki").unwrap();
    assert_eq!(helsinki.offset_at(utc("205000-07-10 12:00")), 3 * 3600);
    assert!(Zone::named("Mars/Olympus_Mons").is_none());
    assert_eq!(Zone::named("-7").unwrap().offset_at(0), -7 * 3600);
    assert_eq!(Zone::named("UTC+3").unwrap().offset_at(0), -3 * 3600);
}

#[test]
fn uuids_read_and_write() {
    let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    for form in [
        canonical,
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "a0eebc999c0b4ef8bb6d6bb9bd380a11",
        "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
    ] {
        assert_eq!(
            parse_text(form, Type::Uuid).unwrap().to_text(Type::Uuid).unwrap(),
            canonical,
            "{form}"
        );
    }
    for bad in [
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
        "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
        "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    ] {
        assert!(parse_text(bad, Type::Uuid).is_err(), "{bad}");
    }
    let random = random_uuid();
    assert_eq!(random[6] >> 4, 4);
    assert_eq!(random[8] >> 6, 2);
}
