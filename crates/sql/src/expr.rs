//! Bound expressions (names resolved to row positions, types decided) and their evaluation
//! with SQL's three-valued logic.

use crate::ast::BinaryOp;
use crate::catalog::{SEQUENCE_BLOCK, Sequence};
use crate::error::{SqlError, SqlResult};
use crate::types::{MICROS_PER_DAY, Text, Type, Value, cast, check_int, fit_numeric};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Lower,
    Upper,
    Length,
    Substr,
    Coalesce,
    Nullif,
    Abs,
    Round,
    Trim,
    Concat,
    Now,
    CurrentDate,
    Greatest,
    Least,
    Mod,
    Version,
    CurrentDatabase,
    CurrentSchema,
    CurrentUser,
    Floor,
    Ceil,
    Random,
    Repeat,
    Replace,
    Left,
    Right,
    Lpad,
    Rpad,
    Strpos,
    PgSleep,
}

#[derive(Debug, Clone)]
pub enum BExpr {
    /// A column of the row being evaluated.
    Column(usize),
    Const(Value),
    /// Parameter `$n + 1`.
    Param(usize),
    Negate(Box<BExpr>, Type),
    Not(Box<BExpr>),
    /// Arithmetic or concatenation computed in type `ty`.
    Arith {
        op: BinaryOp,
        left: Box<BExpr>,
        right: Box<BExpr>,
        ty: Type,
    },
    Compare {
        op: BinaryOp,
        left: Box<BExpr>,
        right: Box<BExpr>,
    },
    And(Box<BExpr>, Box<BExpr>),
    Or(Box<BExpr>, Box<BExpr>),
    IsNull {
        expr: Box<BExpr>,
        negated: bool,
    },
    IsBool {
        expr: Box<BExpr>,
        value: bool,
        negated: bool,
    },
    InList {
        expr: Box<BExpr>,
        list: Vec<BExpr>,
        negated: bool,
    },
    /// `expr IN (subquery)`: the subquery's rows, computed once per statement.
    InSubquery {
        expr: Box<BExpr>,
        subquery: usize,
        negated: bool,
    },
    Exists {
        subquery: usize,
        negated: bool,
    },
    /// A scalar subquery.
    Subquery(usize),
    Like {
        expr: Box<BExpr>,
        pattern: Box<BExpr>,
        negated: bool,
        case_insensitive: bool,
    },
    Cast {
        expr: Box<BExpr>,
        ty: Type,
    },
    Call {
        func: Func,
        args: Vec<BExpr>,
        ty: Type,
    },
    Case {
        operand: Option<Box<BExpr>>,
        whens: Vec<(BExpr, BExpr)>,
        otherwise: Option<Box<BExpr>>,
    },
    NextVal(Arc<Sequence>),
}

/// Dropping a tree takes it apart node by node instead of recursing: expressions may nest
/// [`EXPRESSION_DEPTH_MAX`](crate::depth::EXPRESSION_DEPTH_MAX) deep (`depth.rs`).
impl Drop for BExpr {
    fn drop(&mut self) {
        crate::depth::dismantle(self, BExpr::detach_children);
    }
}

impl BExpr {
    /// Moves the node's child expressions to `out`, leaving leaves in their place.
    fn detach_children(&mut self, out: &mut Vec<BExpr>) {
        let mut take = |child: &mut Box<BExpr>| {
            if !matches!(**child, BExpr::Column(_) | BExpr::Const(_) | BExpr::Param(_)) {
                out.push(std::mem::replace(&mut **child, BExpr::Param(0)));
            }
        };
        match self {
            BExpr::Column(_)
            | BExpr::Const(_)
            | BExpr::Param(_)
            | BExpr::Exists { .. }
            | BExpr::Subquery(_)
            | BExpr::NextVal(_) => {}
            BExpr::Negate(e, _)
            | BExpr::Not(e)
            | BExpr::Cast { expr: e, .. }
            | BExpr::IsNull { expr: e, .. }
            | BExpr::IsBool { expr: e, .. }
            | BExpr::InSubquery { expr: e, .. } => take(e),
            BExpr::Arith { left, right, .. }
            | BExpr::Compare { left, right, .. }
            | BExpr::And(left, right)
            | BExpr::Or(left, right)
            | BExpr::Like { expr: left, pattern: right, .. } => {
                take(left);
                take(right);
            }
            BExpr::InList { expr, list, .. } => {
                take(expr);
                out.append(list);
            }
            BExpr::Call { args, .. } => out.append(args),
            BExpr::Case { operand, whens, otherwise } => {
                if let Some(operand) = operand {
                    take(operand);
                }
                if let Some(otherwise) = otherwise {
                    take(otherwise);
                }
                for (when, then) in whens.drain(..) {
                    out.push(when);
                    out.push(then);
                }
            }
        }
    }
}

/// What evaluation needs besides the row.
#[allow(missing_debug_implementations)]
pub struct Context<'a> {
    pub params: &'a [Value],
    /// Results of uncorrelated subqueries: rows of one column each.
    pub subqueries: &'a [Vec<Value>],
    /// Transaction start time (`now()` is stable within a transaction, as in PostgreSQL).
    pub now: i64,
    pub reserve: &'a dyn Fn(&Sequence, i64) -> SqlResult<()>,
    /// Checked every few thousand rows a scan visits (statement timeout, cancel).
    pub interrupt: &'a crate::interrupt::Interrupt,
    /// How the statement locks rows (`None`: it locks none, e.g. evaluating at commit).
    pub locks: Option<&'a crate::locks::Locker<'a>>,
}

impl BExpr {
    pub fn constant(&self) -> Option<&Value> {
        match self {
            BExpr::Const(value) => Some(value),
            _ => None,
        }
    }

    /// Calls `visit` on every column position the expression reads.
    pub fn columns(&self, visit: &mut impl FnMut(usize)) {
        crate::depth::grow(|| self.columns_node(visit))
    }

    fn columns_node(&self, visit: &mut impl FnMut(usize)) {
        match self {
            BExpr::Column(at) => visit(*at),
            BExpr::Const(_)
            | BExpr::Param(_)
            | BExpr::Exists { .. }
            | BExpr::Subquery(_)
            | BExpr::NextVal(_) => {}
            BExpr::Negate(e, _) | BExpr::Not(e) | BExpr::Cast { expr: e, .. } => e.columns(visit),
            BExpr::IsNull { expr, .. }
            | BExpr::IsBool { expr, .. }
            | BExpr::InSubquery { expr, .. } => expr.columns(visit),
            BExpr::Arith { left, right, .. }
            | BExpr::Compare { left, right, .. }
            | BExpr::And(left, right)
            | BExpr::Or(left, right) => {
                left.columns(visit);
                right.columns(visit);
            }
            BExpr::InList { expr, list, .. } => {
                expr.columns(visit);
                list.iter().for_each(|e| e.columns(visit));
            }
            BExpr::Like { expr, pattern, .. } => {
                expr.columns(visit);
                pattern.columns(visit);
            }
            BExpr::Call { args, .. } => args.iter().for_each(|e| e.columns(visit)),
            BExpr::Case { operand, whens, otherwise } => {
                if let Some(o) = operand {
                    o.columns(visit);
                }
                for (w, t) in whens {
                    w.columns(visit);
                    t.columns(visit);
                }
                if let Some(o) = otherwise {
                    o.columns(visit);
                }
            }
        }
    }

    /// The highest column position read, plus one (0 when none).
    pub fn column_bound(&self) -> usize {
        let mut bound = 0;
        self.columns(&mut |at| bound = bound.max(at + 1));
        bound
    }

    /// The value of a column, constant or parameter, where it is; `None` for other nodes (and
    /// for a column or parameter that is not there, which [`BExpr::eval`] reports).
    #[inline(always)]
    fn leaf<'v>(&'v self, row: &'v [Value], cx: &'v Context<'_>) -> Option<&'v Value> {
        match self {
            BExpr::Column(at) => row.get(*at),
            BExpr::Const(value) => Some(value),
            BExpr::Param(at) => cx.params.get(*at),
            _ => None,
        }
    }

    /// Evaluates a predicate: true only when the value is TRUE.
    pub fn test(&self, row: &[Value], cx: &Context<'_>) -> SqlResult<bool> {
        Ok(self.eval(row, cx)?.truth()? == Some(true))
    }

    /// Evaluates the expression over `row`. Columns, constants and parameters, most of what
    /// is evaluated, are answered here, inlined into the caller; the other nodes go to
    /// [`BExpr::eval_node`], whose frame is large.
    #[inline]
    pub fn eval(&self, row: &[Value], cx: &Context<'_>) -> SqlResult<Value> {
        match self {
            BExpr::Column(at) => Ok(row[*at].clone()),
            BExpr::Const(value) => Ok(value.clone()),
            BExpr::Param(at) => match cx.params.get(*at) {
                Some(value) => Ok(value.clone()),
                None => Err(SqlError::new(
                    "08P01",
                    format!("no value was given for parameter ${}", at + 1),
                )),
            },
            _ => self.eval_node(row, cx),
        }
    }

    /// The nodes [`BExpr::eval`] does not answer itself, on enough stack (`depth.rs`).
    #[inline(never)]
    fn eval_node(&self, row: &[Value], cx: &Context<'_>) -> SqlResult<Value> {
        crate::depth::grow(|| self.eval_inner(row, cx))
    }

    fn eval_inner(&self, row: &[Value], cx: &Context<'_>) -> SqlResult<Value> {
        Ok(match self {
            BExpr::Column(_) | BExpr::Const(_) | BExpr::Param(_) => return self.eval(row, cx),
            BExpr::Negate(inner, ty) => match inner.eval(row, cx)? {
                Value::Null => Value::Null,
                Value::Int(v) => check_int(
                    v.checked_neg().ok_or_else(|| SqlError::out_of_range(&ty.name()))?,
                    *ty,
                )?,
                Value::Float(v) => Value::Float(-v),
                Value::Numeric(v) => Value::Numeric(-v),
                other => {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: - {other:?}"
                    )));
                }
            },
            BExpr::Not(inner) => match inner.eval(row, cx)?.truth()? {
                None => Value::Null,
                Some(b) => Value::Bool(!b),
            },
            BExpr::And(left, right) => {
                let l = left.eval(row, cx)?.truth()?;
                if l == Some(false) {
                    return Ok(Value::Bool(false));
                }
                match (l, right.eval(row, cx)?.truth()?) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            BExpr::Or(left, right) => {
                let l = left.eval(row, cx)?.truth()?;
                if l == Some(true) {
                    return Ok(Value::Bool(true));
                }
                match (l, right.eval(row, cx)?.truth()?) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            BExpr::Compare { op, left, right } => {
                // Two leaves (`s_quantity < $5`) are compared where they are, not copied.
                if let (Some(l), Some(r)) = (left.leaf(row, cx), right.leaf(row, cx)) {
                    if l.is_null() || r.is_null() {
                        return Ok(Value::Null);
                    }
                    return Ok(Value::Bool(compare_holds(*op, l.compare(r))));
                }
                let l = left.eval(row, cx)?;
                let r = right.eval(row, cx)?;
                if l.is_null() || r.is_null() {
                    return Ok(Value::Null);
                }
                Value::Bool(compare_holds(*op, l.compare(&r)))
            }
            BExpr::Arith { op, left, right, ty } => {
                // Two integer leaves (`s_ytd + $3`): `arith`'s integer case, without copies.
                if let (Some(Value::Int(a)), Some(Value::Int(b))) =
                    (left.leaf(row, cx), right.leaf(row, cx))
                    && matches!(ty, Type::Int2 | Type::Int4 | Type::Int8)
                    && *op != BinaryOp::Concat
                {
                    return int_arith(*op, *a, *b, *ty);
                }
                let l = left.eval(row, cx)?;
                let r = right.eval(row, cx)?;
                arith(*op, l, r, *ty)?
            }
            BExpr::IsNull { expr, negated } => {
                Value::Bool(expr.eval(row, cx)?.is_null() != *negated)
            }
            BExpr::IsBool { expr, value, negated } => {
                let truth = expr.eval(row, cx)?.truth()?;
                Value::Bool((truth == Some(*value)) != *negated)
            }
            BExpr::InList { expr, list, negated } => {
                let value = expr.eval(row, cx)?;
                let mut candidates = Vec::with_capacity(list.len());
                for item in list {
                    candidates.push(item.eval(row, cx)?);
                }
                in_values(&value, &candidates, *negated)
            }
            BExpr::InSubquery { expr, subquery, negated } => {
                let value = expr.eval(row, cx)?;
                in_values(&value, &cx.subqueries[*subquery], *negated)
            }
            BExpr::Exists { subquery, negated } => {
                Value::Bool(cx.subqueries[*subquery].is_empty() == *negated)
            }
            BExpr::Subquery(at) => match cx.subqueries[*at].as_slice() {
                [] => Value::Null,
                [value] => value.clone(),
                _ => {
                    return Err(SqlError::new(
                        "21000",
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
            },
            BExpr::Like { expr, pattern, negated, case_insensitive } => {
                let (Value::Text(text), Value::Text(pattern)) =
                    (expr.eval(row, cx)?, pattern.eval(row, cx)?)
                else {
                    return Ok(Value::Null);
                };
                let matched = if *case_insensitive {
                    like(&text.to_lowercase(), &pattern.to_lowercase())
                } else {
                    like(&text, &pattern)
                };
                Value::Bool(matched != *negated)
            }
            BExpr::Cast { expr, ty } => cast(expr.eval(row, cx)?, *ty, true)?,
            BExpr::Call { func, args, ty } => call(*func, args, *ty, row, cx)?,
            BExpr::Case { operand, whens, otherwise } => {
                let subject = operand.as_ref().map(|o| o.eval(row, cx)).transpose()?;
                for (when, then) in whens {
                    let hit = match &subject {
                        Some(subject) => {
                            let candidate = when.eval(row, cx)?;
                            !subject.is_null()
                                && !candidate.is_null()
                                && subject.compare(&candidate) == Ordering::Equal
                        }
                        None => when.test(row, cx)?,
                    };
                    if hit {
                        return then.eval(row, cx);
                    }
                }
                match otherwise {
                    Some(otherwise) => otherwise.eval(row, cx)?,
                    None => Value::Null,
                }
            }
            BExpr::NextVal(sequence) => Value::Int(next_value(sequence, cx)?),
        })
    }
}

fn next_value(sequence: &Sequence, cx: &Context<'_>) -> SqlResult<i64> {
    let mut state = sequence.state.lock();
    if state.0 > state.1 {
        let limit = state.0 + SEQUENCE_BLOCK - 1;
        (cx.reserve)(sequence, limit)?;
        state.1 = limit;
    }
    let value = state.0;
    state.0 += 1;
    Ok(value)
}

pub fn compare_holds(op: BinaryOp, ordering: Ordering) -> bool {
    match op {
        BinaryOp::Eq => ordering == Ordering::Equal,
        BinaryOp::NotEq => ordering != Ordering::Equal,
        BinaryOp::Lt => ordering == Ordering::Less,
        BinaryOp::LtEq => ordering != Ordering::Greater,
        BinaryOp::Gt => ordering == Ordering::Greater,
        BinaryOp::GtEq => ordering != Ordering::Less,
        _ => false,
    }
}

fn in_values(value: &Value, candidates: &[Value], negated: bool) -> Value {
    if value.is_null() {
        return Value::Null;
    }
    let mut saw_null = false;
    for candidate in candidates {
        if candidate.is_null() {
            saw_null = true;
        } else if value.compare(candidate) == Ordering::Equal {
            return Value::Bool(!negated);
        }
    }
    if saw_null { Value::Null } else { Value::Bool(negated) }
}

/// SQL LIKE with `%` and `_` and backslash escapes.
pub fn like(text: &str, pattern: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    // Iterative matching with backtracking to the last '%'.
    let (mut t, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                '%' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                '_' => {
                    t += 1;
                    p += 1;
                    continue;
                }
                '\\' if p + 1 < pattern.len() && pattern[p + 1] == text[t] => {
                    t += 1;
                    p += 2;
                    continue;
                }
                '\\' if p + 1 < pattern.len() => {}
                c if c == text[t] => {
                    t += 1;
                    p += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((star_p, star_t)) => {
                p = star_p + 1;
                t = star_t + 1;
                star = Some((star_p, star_t + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == '%')
}

fn to_decimal(value: &Value) -> Option<Decimal> {
    match value {
        Value::Int(v) => Some(Decimal::from(*v)),
        Value::Numeric(v) => Some(*v),
        Value::Float(v) => Decimal::from_f64_retain(*v),
        _ => None,
    }
}

fn to_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Int(v) => Some(*v as f64),
        Value::Float(v) => Some(*v),
        Value::Numeric(v) => Some(crate::types::decimal_to_f64(*v)),
        _ => None,
    }
}

/// Arithmetic in type `ty` (the operands' common type, or text for `||`).
/// `a op b` for an integer type `ty`: checked for overflow and for the type's range.
#[inline]
fn int_arith(op: BinaryOp, a: i64, b: i64, ty: Type) -> SqlResult<Value> {
    let result = match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Subtract => a.checked_sub(b),
        BinaryOp::Multiply => a.checked_mul(b),
        BinaryOp::Divide => {
            if b == 0 {
                return Err(SqlError::division_by_zero());
            }
            a.checked_div(b)
        }
        BinaryOp::Modulo => {
            if b == 0 {
                return Err(SqlError::division_by_zero());
            }
            Some(a.checked_rem(b).unwrap_or(0))
        }
        _ => None,
    }
    .ok_or_else(|| SqlError::out_of_range(&ty.name()))?;
    check_int(result, ty)
}

/// `left op right` of result type `ty`. Two integers to an integer, most of what UPDATEs
/// compute, are answered here, inlined into the caller; the rest goes to [`arith_general`].
#[inline(always)]
pub fn arith(op: BinaryOp, left: Value, right: Value, ty: Type) -> SqlResult<Value> {
    if let (Value::Int(a), Value::Int(b)) = (&left, &right)
        && matches!(ty, Type::Int2 | Type::Int4 | Type::Int8)
        && op != BinaryOp::Concat
    {
        return int_arith(op, *a, *b, ty);
    }
    arith_general(op, left, right, ty)
}

#[inline(never)]
fn arith_general(op: BinaryOp, left: Value, right: Value, ty: Type) -> SqlResult<Value> {
    if left.is_null() || right.is_null() {
        return Ok(Value::Null);
    }
    if op == BinaryOp::Concat {
        // Both text forms written into one string (text is copied once, not twice).
        let texts = left.as_str().map_or(0, str::len) + right.as_str().map_or(0, str::len);
        check_text_len(texts)?;
        let mut out = String::with_capacity(texts);
        left.write_text(Type::Text, &mut out);
        right.write_text(Type::Text, &mut out);
        check_text_len(out.len())?;
        return Ok(Value::Text(out.into()));
    }
    // Date arithmetic: date + integer days, date - date.
    match (&left, &right, op) {
        (Value::Date(d), Value::Int(n), BinaryOp::Add)
        | (Value::Int(n), Value::Date(d), BinaryOp::Add) => {
            return Ok(Value::Date(
                i32::try_from(i64::from(*d) + n).map_err(|_| SqlError::out_of_range("date"))?,
            ));
        }
        (Value::Date(d), Value::Int(n), BinaryOp::Subtract) => {
            return Ok(Value::Date(
                i32::try_from(i64::from(*d) - n).map_err(|_| SqlError::out_of_range("date"))?,
            ));
        }
        (Value::Date(a), Value::Date(b), BinaryOp::Subtract) => {
            return Ok(Value::Int(i64::from(*a) - i64::from(*b)));
        }
        (Value::Timestamp(a), Value::Timestamp(b), BinaryOp::Subtract) => {
            // No interval type: the difference in days, as a float.
            return Ok(Value::Float((a - b) as f64 / MICROS_PER_DAY as f64));
        }
        _ => {}
    }
    match ty {
        Type::Int2 | Type::Int4 | Type::Int8 => {
            let (Some(a), Some(b)) = (left.as_int(), right.as_int()) else {
                return Err(SqlError::mismatch("integer arithmetic on a non-integer value"));
            };
            int_arith(op, a, b, ty)
        }
        Type::Float4 | Type::Float8 => {
            let (Some(a), Some(b)) = (to_f64(&left), to_f64(&right)) else {
                return Err(SqlError::mismatch("float arithmetic on a non-numeric value"));
            };
            let result = match op {
                BinaryOp::Add => a + b,
                BinaryOp::Subtract => a - b,
                BinaryOp::Multiply => a * b,
                BinaryOp::Divide => {
                    if b == 0.0 {
                        return Err(SqlError::division_by_zero());
                    }
                    a / b
                }
                BinaryOp::Modulo => {
                    if b == 0.0 {
                        return Err(SqlError::division_by_zero());
                    }
                    a % b
                }
                _ => return Err(SqlError::mismatch("not an arithmetic operator")),
            };
            if result.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(SqlError::out_of_range("double precision"));
            }
            Ok(Value::Float(result))
        }
        Type::Numeric { .. } => {
            let (Some(a), Some(b)) = (to_decimal(&left), to_decimal(&right)) else {
                return Err(SqlError::mismatch("numeric arithmetic on a non-numeric value"));
            };
            let result = match op {
                BinaryOp::Add => a.checked_add(b),
                BinaryOp::Subtract => a.checked_sub(b),
                BinaryOp::Multiply => a.checked_mul(b),
                BinaryOp::Divide => {
                    if b.is_zero() {
                        return Err(SqlError::division_by_zero());
                    }
                    a.checked_div(b).map(|q| {
                        let scale = division_scale(q, a.scale().max(b.scale()));
                        let mut q = q.round_dp(scale);
                        q.rescale(scale);
                        q
                    })
                }
                BinaryOp::Modulo => {
                    if b.is_zero() {
                        return Err(SqlError::division_by_zero());
                    }
                    a.checked_rem(b)
                }
                _ => None,
            }
            .ok_or_else(|| SqlError::out_of_range("numeric value"))?;
            fit_numeric(result, Type::Numeric { precision: 0, scale: 0 })
        }
        _ => Err(SqlError::undefined_function(format!(
            "operator does not exist: {} {} {}",
            ty.name(),
            op.symbol(),
            ty.name()
        ))),
    }
}

/// PostgreSQL's display scale of a NUMERIC quotient: at least 16 significant digits, counted
/// in its base-10000 weight, and at least the operands' scales.
fn division_scale(quotient: Decimal, operand_scale: u32) -> u32 {
    let magnitude = quotient.abs();
    let weight: i64 = if magnitude >= Decimal::ONE {
        (magnitude.trunc().to_string().len() as i64 - 1) / 4
    } else if magnitude.is_zero() {
        0
    } else {
        let text = magnitude.to_string();
        let zeros = text.trim_start_matches("0.").bytes().take_while(|b| *b == b'0').count() as i64;
        -1 - zeros / 4
    };
    (16 - weight * 4).max(i64::from(operand_scale)).clamp(0, 20) as u32
}

/// The longest text a function or `||` may build (PostgreSQL's limit is 1 GB; a statement's
/// result is held in memory, so Engram's is lower).
pub const TEXT_BYTES_MAX: usize = 64 << 20;

/// Fails with 54000 if a text of `len` bytes would be longer than [`TEXT_BYTES_MAX`].
fn check_text_len(len: usize) -> SqlResult<()> {
    if len > TEXT_BYTES_MAX {
        return Err(SqlError::new(
            "54000",
            format!("requested length too large: {len} bytes (the limit is {TEXT_BYTES_MAX})"),
        ));
    }
    Ok(())
}

/// `lpad` / `rpad`: `text` cut or filled with `fill` to `len` characters.
fn pad(text: &str, len: i64, fill: &str, left: bool) -> SqlResult<String> {
    let len = len.max(0) as usize;
    let chars = text.chars().count();
    if chars >= len {
        return Ok(text.chars().take(len).collect());
    }
    if fill.is_empty() {
        return Ok(text.to_string());
    }
    let missing = len - chars;
    let fill_bytes = fill.len().div_ceil(fill.chars().count()) * missing;
    check_text_len(text.len().saturating_add(fill_bytes))?;
    let filler: String = fill.chars().cycle().take(missing).collect();
    Ok(if left { filler + text } else { text.to_string() + &filler })
}

/// `left` / `right`: the first (last) `n` characters, or all but the last (first) `-n`.
fn take_chars(text: &str, n: i64, from_left: bool) -> String {
    let chars = text.chars().count() as i64;
    let keep = if n >= 0 { n.min(chars) } else { (chars + n).max(0) } as usize;
    if from_left {
        text.chars().take(keep).collect()
    } else {
        text.chars().skip(chars as usize - keep).collect()
    }
}

fn call(func: Func, args: &[BExpr], ty: Type, row: &[Value], cx: &Context<'_>) -> SqlResult<Value> {
    // Functions that do not evaluate all their arguments first.
    match func {
        Func::Coalesce => {
            for arg in args {
                let value = arg.eval(row, cx)?;
                if !value.is_null() {
                    return cast(value, ty, false);
                }
            }
            return Ok(Value::Null);
        }
        Func::Now => return Ok(Value::Timestamp(cx.now)),
        Func::CurrentDate => return Ok(Value::Date(cx.now.div_euclid(MICROS_PER_DAY) as i32)),
        Func::Version => {
            return Ok(Value::Text(
                format!(
                    "PostgreSQL 15.0 (Engram {}) on x86_64, an in-memory OLTP engine",
                    env!("CARGO_PKG_VERSION")
                )
                .into(),
            ));
        }
        Func::CurrentDatabase => return Ok(Value::Text("engram".into())),
        Func::CurrentSchema => return Ok(Value::Text("public".into())),
        Func::CurrentUser => return Ok(Value::Text("engram".into())),
        Func::Random => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .subsec_nanos();
            let mixed = u64::from(nanos).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
            return Ok(Value::Float(mixed as f64 / (1u64 << 53) as f64));
        }
        _ => {}
    }
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(arg.eval(row, cx)?);
    }
    if func != Func::Concat
        && values.iter().any(Value::is_null)
        && !matches!(func, Func::Greatest | Func::Least)
    {
        return Ok(Value::Null);
    }
    let text = |at: usize| values[at].to_text(Type::Text).unwrap_or_default();
    Ok(match func {
        Func::Lower => Value::Text(text(0).to_lowercase().into()),
        Func::Upper => Value::Text(text(0).to_uppercase().into()),
        Func::Length => Value::Int(text(0).chars().count() as i64),
        Func::Trim => Value::Text(text(0).trim_matches(' ').into()),
        Func::Substr => {
            // Text is read where it is; another value in its text form.
            let owned;
            let source = match values[0].as_str() {
                Some(source) => source,
                None => {
                    owned = text(0);
                    owned.as_str()
                }
            };
            let start = values[1].as_int().unwrap_or(1);
            let end = match values.get(2) {
                Some(length) => {
                    let length = length.as_int().unwrap_or(0);
                    if length < 0 {
                        return Err(SqlError::new(
                            "22011",
                            "negative substring length not allowed",
                        ));
                    }
                    start.saturating_add(length)
                }
                None => i64::MAX,
            };
            // Characters `from..to` (counted from 0), as byte offsets into the source.
            let (from, to) = ((start.max(1) - 1) as usize, (end.max(1) - 1) as usize);
            let ascii = source.is_ascii();
            let byte = |chars: usize| match ascii {
                true => chars.min(source.len()),
                false => source.char_indices().nth(chars).map_or(source.len(), |(at, _)| at),
            };
            Value::Text(if from >= to {
                Text::default()
            } else {
                Text::from(&source[byte(from)..byte(to)])
            })
        }
        Func::Concat => {
            let out: String = values.iter().filter_map(|v| v.to_text(Type::Text)).collect();
            check_text_len(out.len())?;
            Value::Text(out.into())
        }
        Func::Repeat => {
            let source = text(0);
            let count = values[1].as_int().unwrap_or(0).max(0) as usize;
            check_text_len(source.len().saturating_mul(count))?;
            Value::Text(source.repeat(count).into())
        }
        Func::Replace => {
            let (source, from, to) = (text(0), text(1), text(2));
            if from.is_empty() {
                Value::Text(source.into())
            } else {
                let matches = source.matches(from.as_str()).count();
                let grown = to.len().saturating_sub(from.len()).saturating_mul(matches);
                check_text_len(source.len().saturating_add(grown))?;
                Value::Text(source.replace(from.as_str(), &to).into())
            }
        }
        Func::Left | Func::Right => Value::Text(
            take_chars(&text(0), values[1].as_int().unwrap_or(0), func == Func::Left).into(),
        ),
        Func::Lpad | Func::Rpad => {
            let fill = if values.len() > 2 { text(2) } else { " ".to_string() };
            let len = values[1].as_int().unwrap_or(0);
            Value::Text(pad(&text(0), len, &fill, func == Func::Lpad)?.into())
        }
        Func::PgSleep => {
            // Sleeps in short steps, so that statement_timeout and cancel stop it, and a
            // server learns that the statement runs long (`Interrupt`).
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
            Value::Null
        }
        Func::Strpos => {
            let (haystack, needle) = (text(0), text(1));
            Value::Int(match haystack.find(needle.as_str()) {
                Some(byte) => haystack[..byte].chars().count() as i64 + 1,
                None => 0,
            })
        }
        Func::Nullif => {
            if values[0].compare(&values[1]) == Ordering::Equal {
                Value::Null
            } else {
                values[0].clone()
            }
        }
        Func::Abs => match &values[0] {
            Value::Int(v) => {
                check_int(v.checked_abs().ok_or_else(|| SqlError::out_of_range(&ty.name()))?, ty)?
            }
            Value::Float(v) => Value::Float(v.abs()),
            Value::Numeric(v) => Value::Numeric(v.abs()),
            _ => Value::Null,
        },
        Func::Round => {
            let places = values.get(1).and_then(Value::as_int).unwrap_or(0);
            match &values[0] {
                Value::Numeric(v) => Value::Numeric(v.round_dp_with_strategy(
                    places.clamp(0, 28) as u32,
                    rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                )),
                Value::Float(v) => Value::Float(v.round_ties_even()),
                other => other.clone(),
            }
        }
        Func::Floor | Func::Ceil => match &values[0] {
            Value::Numeric(v) => {
                Value::Numeric(if func == Func::Floor { v.floor() } else { v.ceil() })
            }
            Value::Float(v) => Value::Float(if func == Func::Floor { v.floor() } else { v.ceil() }),
            other => other.clone(),
        },
        Func::Mod => arith(BinaryOp::Modulo, values[0].clone(), values[1].clone(), ty)?,
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for value in values.into_iter().filter(|v| !v.is_null()) {
                let better = match &best {
                    None => true,
                    Some(b) => {
                        let ordering = value.compare(b);
                        if func == Func::Greatest {
                            ordering == Ordering::Greater
                        } else {
                            ordering == Ordering::Less
                        }
                    }
                };
                if better {
                    best = Some(value);
                }
            }
            cast(best.unwrap_or(Value::Null), ty, false)?
        }
        Func::Coalesce
        | Func::Now
        | Func::CurrentDate
        | Func::Version
        | Func::CurrentDatabase
        | Func::CurrentSchema
        | Func::CurrentUser
        | Func::Random => {
            unreachable!("handled above")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn like_patterns() {
        assert!(like("hello", "h%o"));
        assert!(like("hello", "_ello"));
        assert!(like("hello", "%"));
        assert!(!like("hello", "h_o"));
        assert!(like("a%b", "a\\%b"));
        assert!(!like("axb", "a\\%b"));
        assert!(like("", "%"));
        assert!(like("abcabc", "%abc"));
    }
}
