//! Numeric functions. Arguments arrive in the result type (`Takes::Result`).

use crate::ast::BinaryOp;
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context, arith};
use crate::types::{Type, Value, check_int};
use rust_decimal::Decimal;

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

/// -1, 0 or 1 in the argument's type.
pub(super) fn sign(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(match &values[0] {
        Value::Int(v) => Value::Int(v.signum()),
        Value::Float(v) if *v == 0.0 || v.is_nan() => Value::Float(*v),
        Value::Float(v) => Value::Float(v.signum()),
        Value::Numeric(v) => Value::Numeric(Decimal::from(v.cmp(&Decimal::ZERO) as i8)),
        other => other.clone(),
    })
}

/// Truncated toward zero, at `places` decimal places (none by default).
pub(super) fn trunc(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let places = values.get(1).and_then(Value::as_int).unwrap_or(0);
    Ok(truncated(&values[0], places))
}

fn truncated(value: &Value, places: i64) -> Value {
    match value {
        Value::Numeric(v) => Value::Numeric(v.trunc_with_scale(places.clamp(0, 28) as u32)),
        Value::Float(v) => Value::Float(v.trunc()),
        other => other.clone(),
    }
}

/// The integer quotient, truncated toward zero (22012 when dividing by zero).
pub(super) fn div(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    let quotient = arith(BinaryOp::Divide, values[0].clone(), values[1].clone(), ty)?;
    Ok(truncated(&quotient, 0))
}

/// Greatest common divisor and least common multiple of two integers (positive; 22003 when
/// the result does not fit).
pub(super) fn gcd(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (a, b) = integers(values)?;
    let divisor = gcd_of(a, b).ok_or_else(|| SqlError::out_of_range(&ty.name()))?;
    check_int(divisor, ty)
}

pub(super) fn lcm(values: &[Value], ty: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (a, b) = integers(values)?;
    if a == 0 || b == 0 {
        return check_int(0, ty);
    }
    let divisor = gcd_of(a, b).ok_or_else(|| SqlError::out_of_range(&ty.name()))?;
    let multiple = (a / divisor).checked_mul(b).and_then(i64::checked_abs);
    check_int(multiple.ok_or_else(|| SqlError::out_of_range(&ty.name()))?, ty)
}

fn integers(values: &[Value]) -> SqlResult<(i64, i64)> {
    match (&values[0], &values[1]) {
        (Value::Int(a), Value::Int(b)) => Ok((*a, *b)),
        _ => Err(SqlError::undefined_function("gcd and lcm take integers")),
    }
}

/// Euclid's algorithm on magnitudes; `None` when the result (|i64::MIN|) does not fit.
fn gcd_of(a: i64, b: i64) -> Option<i64> {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).ok()
}

/// A double's result, refused when it is not a number (a domain error) or infinite (an
/// overflow), as PostgreSQL refuses them.
fn double(value: f64, what: &str) -> SqlResult<Value> {
    if value.is_infinite() {
        return Err(SqlError::new("22003", format!("value out of range: overflow in {what}")));
    }
    Ok(Value::Float(value))
}

fn argument(values: &[Value], at: usize) -> f64 {
    match &values[at] {
        Value::Float(v) => *v,
        Value::Int(v) => *v as f64,
        Value::Numeric(v) => crate::types::decimal_to_f64(*v),
        _ => f64::NAN,
    }
}

pub(super) fn sqrt(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let x = argument(values, 0);
    if x < 0.0 {
        return Err(SqlError::new("2201F", "cannot take square root of a negative number"));
    }
    double(x.sqrt(), "sqrt")
}

pub(super) fn exp(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    double(argument(values, 0).exp(), "exp")
}

/// The natural logarithm (`ln`), or the base-10 one (`log` of one argument).
fn logarithm(x: f64, ln: bool) -> SqlResult<Value> {
    if x == 0.0 {
        return Err(SqlError::new("2201E", "cannot take logarithm of zero"));
    }
    if x < 0.0 {
        return Err(SqlError::new("2201E", "cannot take logarithm of a negative number"));
    }
    double(if ln { x.ln() } else { x.log10() }, "log")
}

pub(super) fn ln(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    logarithm(argument(values, 0), true)
}

pub(super) fn log10(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    logarithm(argument(values, 0), false)
}

pub(super) fn power(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let (base, exponent) = (argument(values, 0), argument(values, 1));
    if base == 0.0 && exponent < 0.0 {
        return Err(SqlError::new("2201F", "zero raised to a negative power is undefined"));
    }
    if base < 0.0 && exponent.fract() != 0.0 {
        return Err(SqlError::new(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    double(base.powf(exponent), "power")
}

pub(super) fn pi(_: &[BExpr], _: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Float(std::f64::consts::PI))
}

/// `generate_series(start, stop [, step])` in a select list: the integers as an array (a
/// set-returning function's body, spread over rows by the executor).
pub(super) fn series(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let int = |value: &Value| match value {
        Value::Int(n) => Ok(*n),
        other => Err(SqlError::mismatch(format!("generate_series of {}", other.kind_name()))),
    };
    let (start, stop) = (int(&values[0])?, int(&values[1])?);
    let step = match values.get(2) {
        None => 1,
        Some(step) => match int(step)? {
            0 => return Err(SqlError::new("22023", "step size cannot equal zero")),
            step => step,
        },
    };
    let mut items = Vec::new();
    let mut value = start;
    while (step > 0 && value <= stop) || (step < 0 && value >= stop) {
        cx.interrupt.tick()?;
        if items.len() >= crate::types::ARRAY_ELEMENTS_MAX {
            return Err(SqlError::new(
                "54000",
                "a set-returning function in a select list returned more than 8,388,608 rows",
            ));
        }
        items.push(Value::Int(value));
        match value.checked_add(step) {
            Some(next) => value = next,
            None => break,
        }
    }
    Ok(crate::types::array(items))
}
