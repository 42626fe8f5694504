//! Numbers: integers checked against their type's range, NUMERIC fitted to its precision and
//! scale (SQLSTATE 22003 when it does not fit), and NUMERIC's binary wire format.

use super::*;

pub fn decimal_to_f64(value: Decimal) -> f64 {
    use rust_decimal::prelude::ToPrimitive;
    value.to_f64().unwrap_or(f64::NAN)
}

/// Checks that an integer fits `ty`.
pub fn check_int(value: i64, ty: Type) -> SqlResult<Value> {
    let fits = match ty {
        Type::Int2 => i16::try_from(value).is_ok(),
        Type::Int4 => i32::try_from(value).is_ok(),
        _ => true,
    };
    if fits { Ok(Value::Int(value)) } else { Err(SqlError::out_of_range(&ty.name())) }
}

/// Rounds a decimal to the column's scale and checks its precision.
pub fn fit_numeric(value: Decimal, ty: Type) -> SqlResult<Value> {
    let Type::Numeric { precision, scale } = ty else {
        return Ok(Value::Numeric(value));
    };
    if precision == 0 {
        return Ok(Value::Numeric(value));
    }
    let mut rounded = value.round_dp_with_strategy(
        u32::from(scale),
        rust_decimal::RoundingStrategy::MidpointAwayFromZero,
    );
    rounded.rescale(u32::from(scale));
    if !integer_digits_fit(&rounded, precision - scale) || rounded.scale() != u32::from(scale) {
        return Err(SqlError::new(
            "22003",
            format!(
                "numeric field overflow: a field with precision {precision}, scale {scale} \
                 must round to an absolute value less than 10^{}",
                precision - scale
            ),
        ));
    }
    Ok(Value::Numeric(rounded))
}

/// Whether `value`'s integer part has at most `digits` digits.
pub(super) fn integer_digits_fit(value: &Decimal, digits: u8) -> bool {
    // |value| < 10^digits exactly when |mantissa| < 10^(digits + scale), and a mantissa is
    // below 2^96 < 10^29: no decimal arithmetic needed.
    let exponent = u32::from(digits) + value.scale();
    exponent >= 29 || value.mantissa().unsigned_abs() < 10u128.pow(exponent)
}

/// NUMERIC in PostgreSQL's binary format (the wire protocol's): digit count, weight (in
/// base-10000 digits), sign, display scale, then the base-10000 digits.
pub fn numeric_to_binary(value: Decimal, out: &mut Vec<u8>) {
    let scale = value.scale() as usize;
    let digits = value.mantissa().unsigned_abs().to_string();
    let (int_part, frac_part) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let frac = format!("{}{}", "0".repeat(scale - frac_part.len()), frac_part);
    let int = format!("{}{}", "0".repeat((4 - int_part.len() % 4) % 4), int_part);
    let frac = format!("{}{}", frac, "0".repeat((4 - frac.len() % 4) % 4));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|chunk| chunk.iter().fold(0i16, |n, d| n * 10 + i16::from(d - b'0')))
            .collect()
    };
    let mut groups = group(&int);
    let mut weight = groups.len() as i16 - 1;
    groups.extend(group(&frac));
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let negative = value.is_sign_negative() && !groups.is_empty();
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&(if negative { 0x4000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

/// Reads [`numeric_to_binary`]'s format; `None` for NaN, digits out of range, or a value the
/// decimal type cannot hold.
pub fn numeric_from_binary(bytes: &[u8]) -> Option<Decimal> {
    let read = |at: usize| bytes.get(at..at + 2).map(|b| i16::from_be_bytes([b[0], b[1]]));
    let count = read(0)? as usize;
    let weight = i64::from(read(2)?);
    let sign = read(4)? as u16;
    let scale = read(6)? as u16 as u32;
    if sign != 0 && sign != 0x4000 {
        return None;
    }
    let mut value = Decimal::ZERO;
    for i in 0..count {
        let digit = read(8 + 2 * i)?;
        if !(0..10_000).contains(&digit) {
            return None;
        }
        let power = weight - i as i64;
        let term = if power >= 0 {
            let scaled = i128::from(digit).checked_mul(10i128.checked_pow(4 * power as u32)?)?;
            Decimal::try_from_i128_with_scale(scaled, 0).ok()?
        } else {
            Decimal::try_from_i128_with_scale(i128::from(digit), (4 * -power) as u32).ok()?
        };
        value = value.checked_add(term)?;
    }
    if sign == 0x4000 {
        value.set_sign_negative(true);
    }
    if scale > 28 {
        return None;
    }
    value.rescale(scale);
    Some(value)
}
