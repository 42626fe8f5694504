//! What the session and the server are: the functions clients and tools ask at connection.

use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::types::{Type, Value};

pub(super) fn version(_: &[BExpr], _: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text(
        format!(
            "PostgreSQL 15.0 (Engram {}) on x86_64, an in-memory OLTP engine",
            env!("CARGO_PKG_VERSION")
        )
        .into(),
    ))
}

pub(super) fn current_database(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    _: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Text("engram".into()))
}

pub(super) fn current_schema(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    _: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Text("public".into()))
}

pub(super) fn current_user(_: &[BExpr], _: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Text("engram".into()))
}

/// Sleeps in short steps, so that statement_timeout and cancel stop it, and a server learns
/// that the statement runs long (`Interrupt`).
pub(super) fn pg_sleep(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let seconds = match values[0] {
        Value::Float(seconds) => seconds,
        Value::Int(seconds) => seconds as f64,
        _ => 0.0,
    };
    let until = std::time::Instant::now()
        + std::time::Duration::try_from_secs_f64(seconds.max(0.0))
            .map_err(|_| SqlError::out_of_range("pg_sleep's seconds"))?;
    loop {
        cx.interrupt.check()?;
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(10)));
    }
    Ok(Value::Null)
}
