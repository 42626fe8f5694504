//! Date and time functions: the statement's clock (`Context::now`, the transaction's start).

use crate::error::SqlResult;
use crate::expr::{BExpr, Context};
use crate::types::{MICROS_PER_DAY, Type, Value};

pub(super) fn now(_: &[BExpr], _: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Timestamp(cx.now))
}

pub(super) fn current_date(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    cx: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Date(cx.now.div_euclid(MICROS_PER_DAY) as i32))
}
