//! Numeric functions. Arguments arrive in the result type (`Takes::Result`).

use crate::ast::BinaryOp;
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context, arith};
use crate::types::{Type, Value, check_int};

pub(super) fn abs(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(match &values[0] {
        Value::Int(v) => {
            check_int(v.checked_abs().ok_or_else(|| SqlError::out_of_range(&ty.name()))?, ty)?
        }
        Value::Float(v) => Value::Float(v.abs()),
        Value::Numeric(v) => Value::Numeric(v.abs()),
        _ => Value::Null,
    })
}

/// Numeric rounds half away from zero to the given places; double precision to an integer,
/// half to even (as PostgreSQL's `round(double precision)`).
pub(super) fn round(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let places = values.get(1).and_then(Value::as_int).unwrap_or(0);
    Ok(match &values[0] {
        Value::Numeric(v) => Value::Numeric(v.round_dp_with_strategy(
            places.clamp(0, 28) as u32,
            rust_decimal::RoundingStrategy::MidpointAwayFromZero,
        )),
        Value::Float(v) => Value::Float(v.round_ties_even()),
        other => other.clone(),
    })
}

pub(super) fn floor(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(match &values[0] {
        Value::Numeric(v) => Value::Numeric(v.floor()),
        Value::Float(v) => Value::Float(v.floor()),
        other => other.clone(),
    })
}

pub(super) fn ceil(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(match &values[0] {
        Value::Numeric(v) => Value::Numeric(v.ceil()),
        Value::Float(v) => Value::Float(v.ceil()),
        other => other.clone(),
    })
}

pub(super) fn modulo(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    arith(BinaryOp::Modulo, values[0].clone(), values[1].clone(), ty)
}

/// A double in [0, 1) from the clock's nanoseconds, mixed.
pub(super) fn random(_: &[BExpr], _: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let mixed = u64::from(nanos).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    Ok(Value::Float(mixed as f64 / (1u64 << 53) as f64))
}
