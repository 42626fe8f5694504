//! Date/time arithmetic: which operators exist between dates, times, timestamps, intervals
//! and numbers (for the binder), and their evaluation, over the values of `types`.

use crate::ast::BinaryOp;
use crate::error::{SqlError, SqlResult};
use crate::types::{
    Interval, MICROS_PER_DAY, Type, Value, check_range, date_to_local, decimal_to_f64,
    instant_plus, interval_overflow, local_plus, timestamp_difference,
};

/// The result type of `left op right` where a date, time, timestamp or interval takes part,
/// or `None` when no such operator exists (the caller then tries numeric arithmetic).
pub fn datetime_result(op: BinaryOp, left: Type, right: Type) -> Option<Type> {
    use BinaryOp::{Add, Divide, Multiply, Subtract};
    use Type::{Date, Interval as Iv, Time, Timestamp as Ts, Timestamptz as Tz};
    Some(match (op, left, right) {
        (Add, Ts, Iv) | (Add, Iv, Ts) | (Subtract, Ts, Iv) => Ts,
        (Add, Tz, Iv) | (Add, Iv, Tz) | (Subtract, Tz, Iv) => Tz,
        (Add, Date, Iv) | (Add, Iv, Date) | (Subtract, Date, Iv) => Ts,
        (Add, Date, Time) | (Add, Time, Date) => Ts,
        (Add, Time, Iv) | (Add, Iv, Time) | (Subtract, Time, Iv) => Time,
        (Add | Subtract, Iv, Iv) => Iv,
        (Subtract, Ts, Ts) | (Subtract, Tz, Tz) | (Subtract, Time, Time) => Iv,
        (Multiply, Iv, n) | (Multiply, n, Iv) | (Divide, Iv, n) if n.is_numeric() => Iv,
        _ => return None,
    })
}

/// `left op right` for the operators [`datetime_result`] names (neither side NULL).
pub fn datetime_arith(op: BinaryOp, left: &Value, right: &Value) -> SqlResult<Value> {
    use BinaryOp::{Add, Divide, Multiply, Subtract};
    let factor = |value: &Value| -> Option<f64> {
        match value {
            Value::Int(v) => Some(*v as f64),
            Value::Float(v) => Some(*v),
            Value::Numeric(v) => Some(decimal_to_f64(*v)),
            _ => None,
        }
    };
    Ok(match (op, left, right) {
        (Add, Value::Timestamp(t), Value::Interval(i))
        | (Add, Value::Interval(i), Value::Timestamp(t)) => Value::Timestamp(local_plus(*t, *i)?),
        (Subtract, Value::Timestamp(t), Value::Interval(i)) => {
            Value::Timestamp(local_plus(*t, i.checked_neg()?)?)
        }
        (Add, Value::Date(d), Value::Interval(i)) | (Add, Value::Interval(i), Value::Date(d)) => {
            Value::Timestamp(local_plus(date_to_local(*d), *i)?)
        }
        (Subtract, Value::Date(d), Value::Interval(i)) => {
            Value::Timestamp(local_plus(date_to_local(*d), i.checked_neg()?)?)
        }
        (Add, Value::Timestamptz(t), Value::Interval(i))
        | (Add, Value::Interval(i), Value::Timestamptz(t)) => {
            Value::Timestamptz(instant_plus(*t, *i)?)
        }
        (Subtract, Value::Timestamptz(t), Value::Interval(i)) => {
            Value::Timestamptz(instant_plus(*t, i.checked_neg()?)?)
        }
        (Add, Value::Date(d), Value::Time(t)) | (Add, Value::Time(t), Value::Date(d)) => {
            Value::Timestamp(check_range(date_to_local(*d).saturating_add(*t))?)
        }
        (Add, Value::Time(t), Value::Interval(i)) | (Add, Value::Interval(i), Value::Time(t)) => {
            Value::Time((t + i.micros % MICROS_PER_DAY).rem_euclid(MICROS_PER_DAY))
        }
        (Subtract, Value::Time(t), Value::Interval(i)) => {
            Value::Time((t - i.micros % MICROS_PER_DAY).rem_euclid(MICROS_PER_DAY))
        }
        (Add, Value::Interval(a), Value::Interval(b)) => Value::Interval(a.checked_add(*b)?),
        (Subtract, Value::Interval(a), Value::Interval(b)) => Value::Interval(a.checked_sub(*b)?),
        (Subtract, Value::Timestamp(a), Value::Timestamp(b))
        | (Subtract, Value::Timestamptz(a), Value::Timestamptz(b)) => {
            Value::Interval(timestamp_difference(*a, *b)?)
        }
        (Subtract, Value::Time(a), Value::Time(b)) => Value::Interval(Interval::new(0, 0, a - b)),
        (Multiply, Value::Interval(i), n) | (Multiply, n, Value::Interval(i)) => {
            Value::Interval(i.scaled(factor(n).ok_or_else(interval_overflow)?)?)
        }
        (Divide, Value::Interval(i), n) => {
            Value::Interval(i.divided(factor(n).ok_or_else(interval_overflow)?)?)
        }
        (op, left, right) => {
            return Err(SqlError::undefined_function(format!(
                "operator does not exist: {} {} {}",
                left.kind_name(),
                op.symbol(),
                right.kind_name()
            )));
        }
    })
}
