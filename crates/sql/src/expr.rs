//! Bound expressions (names resolved to row positions, types decided) and their evaluation
//! with SQL's three-valued logic.

use crate::ast::BinaryOp;
use crate::catalog::Sequence;
use crate::error::{SqlError, SqlResult};
pub mod dates;
pub mod functions;

use crate::types::{Type, Value, cast, check_int, fit_numeric};
use functions::{Body, Function};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub enum BExpr {
    /// A column of the row being evaluated.
    Column(usize),
    Const(Value),
    /// Parameter `$n + 1`.
    Param(usize),
    /// In a correlated subquery: the `n`th value of the outer row it reads
    /// (`QueryPlan::outer_args`), of the type given.
    Outer(usize, Type),
    /// The value of the query's `n`th window function for the row (`QueryPlan::windows`):
    /// the executor appends the windows' values to each row, the last window's first.
    Window(usize),
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
    /// `IS [NOT] DISTINCT FROM`: whether the two differ, NULL equal to NULL (`negated`: whether
    /// they do not).
    Distinct {
        left: Box<BExpr>,
        right: Box<BExpr>,
        negated: bool,
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
    /// A scalar function of the registry (`expr::functions`).
    Call {
        func: &'static Function,
        args: Vec<BExpr>,
        ty: Type,
    },
    Case {
        operand: Option<Box<BExpr>>,
        whens: Vec<(BExpr, BExpr)>,
        otherwise: Option<Box<BExpr>>,
    },
    NextVal(Arc<Sequence>),
    /// `ARRAY[...]`, its elements coerced to one type.
    Array(Vec<BExpr>),
    /// `ARRAY(subquery)`: the subquery's rows.
    ArraySubquery(usize),
    /// `left op ANY (array)`, or with `all`, `ALL`.
    AnyAll {
        op: BinaryOp,
        left: Box<BExpr>,
        array: Box<BExpr>,
        all: bool,
    },
    /// `array[index]`, counted from 1.
    Subscript {
        array: Box<BExpr>,
        index: Box<BExpr>,
    },
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
            | BExpr::Outer(..)
            | BExpr::Window(_)
            | BExpr::Exists { .. }
            | BExpr::Subquery(_)
            | BExpr::ArraySubquery(_)
            | BExpr::NextVal(_) => {}
            BExpr::Negate(e, _)
            | BExpr::Not(e)
            | BExpr::Cast { expr: e, .. }
            | BExpr::IsNull { expr: e, .. }
            | BExpr::IsBool { expr: e, .. }
            | BExpr::InSubquery { expr: e, .. } => take(e),
            BExpr::Array(items) => out.append(items),
            BExpr::AnyAll { left, array: right, .. }
            | BExpr::Subscript { array: left, index: right } => {
                take(left);
                take(right);
            }
            BExpr::Arith { left, right, .. }
            | BExpr::Compare { left, right, .. }
            | BExpr::Distinct { left, right, .. }
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
    /// Rows of the query's FROM items that are not stored tables (`QueryPlan::derived`).
    pub derived: &'a [Vec<Vec<Value>>],
    /// Results of correlated subqueries for the row being evaluated (`Some` at their
    /// positions among the subqueries), made again for each row (`exec.rs`, `descend`).
    pub correlated: Option<&'a std::cell::RefCell<Vec<Option<Vec<Value>>>>>,
    /// In a correlated subquery: the values of the outer row it reads.
    pub outer: &'a [Value],
    /// Transaction start time (`now()` is stable within a transaction, as in PostgreSQL).
    pub now: i64,
    /// Sequences: reservations, names, the session's values.
    pub reserve: &'a dyn Sequences,
    /// Checked every few thousand rows a scan visits (statement timeout, cancel).
    pub interrupt: &'a crate::interrupt::Interrupt,
    /// How the statement locks rows (`None`: it locks none, e.g. evaluating at commit).
    pub locks: Option<&'a crate::locks::Locker<'a>>,
}

impl Context<'_> {
    /// Runs `f` over the rows of subquery `at`: a correlated one's for the current row, an
    /// uncorrelated one's from before the statement.
    fn subquery<T>(&self, at: usize, f: impl FnOnce(&[Value]) -> T) -> T {
        if let Some(correlated) = self.correlated
            && let Some(Some(rows)) = correlated.borrow().get(at)
        {
            return f(rows);
        }
        f(&self.subqueries[at])
    }
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
            | BExpr::Outer(..)
            | BExpr::Window(_)
            | BExpr::Exists { .. }
            | BExpr::Subquery(_)
            | BExpr::ArraySubquery(_)
            | BExpr::NextVal(_) => {}
            BExpr::Negate(e, _) | BExpr::Not(e) | BExpr::Cast { expr: e, .. } => e.columns(visit),
            BExpr::Array(items) => items.iter().for_each(|e| e.columns(visit)),
            BExpr::AnyAll { left, array: right, .. }
            | BExpr::Subscript { array: left, index: right } => {
                left.columns(visit);
                right.columns(visit);
            }
            BExpr::IsNull { expr, .. }
            | BExpr::IsBool { expr, .. }
            | BExpr::InSubquery { expr, .. } => expr.columns(visit),
            BExpr::Arith { left, right, .. }
            | BExpr::Compare { left, right, .. }
            | BExpr::Distinct { left, right, .. }
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
                Value::Interval(v) => Value::Interval(v.checked_neg()?),
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
            BExpr::Distinct { left, right, negated } => {
                let (l, r) = (left.eval(row, cx)?, right.eval(row, cx)?);
                let same = match (l.is_null(), r.is_null()) {
                    (true, true) => true,
                    (false, false) => l.compare(&r) == Ordering::Equal,
                    _ => false,
                };
                Value::Bool(same == *negated)
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
            // (A plan that reads an outer value it was not given is a planner bug: an error
            // for the statement, not a panic for the server.)
            BExpr::Outer(at, _) => cx.outer.get(*at).cloned().ok_or_else(|| {
                SqlError::new("XX000", "a correlated value was read where none is given")
            })?,
            BExpr::Window(at) => row[row.len() - 1 - *at].clone(),
            BExpr::InSubquery { expr, subquery, negated } => {
                let value = expr.eval(row, cx)?;
                cx.subquery(*subquery, |rows| in_values(&value, rows, *negated))
            }
            BExpr::Exists { subquery, negated } => {
                cx.subquery(*subquery, |rows| Value::Bool(rows.is_empty() == *negated))
            }
            BExpr::Subquery(at) => cx.subquery(*at, |rows| match rows {
                [] => Ok(Value::Null),
                [value] => Ok(value.clone()),
                _ => Err(SqlError::new(
                    "21000",
                    "more than one row returned by a subquery used as an expression",
                )),
            })?,
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
            BExpr::Call { func, args, ty } => call(func, args, *ty, row, cx)?,
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
            BExpr::Array(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(item.eval(row, cx)?);
                }
                crate::types::array(values)
            }
            BExpr::ArraySubquery(at) => cx.subquery(*at, |rows| crate::types::array(rows.to_vec())),
            BExpr::AnyAll { op, left, array, all } => {
                let value = left.eval(row, cx)?;
                match array.eval(row, cx)? {
                    Value::Array(items) => any_all(*op, &value, &items, *all),
                    _ => Value::Null,
                }
            }
            BExpr::Subscript { array, index } => match (array.eval(row, cx)?, index.eval(row, cx)?)
            {
                (Value::Array(items), Value::Int(at)) if at >= 1 => {
                    items.get(at as usize - 1).cloned().unwrap_or(Value::Null)
                }
                _ => Value::Null,
            },
        })
    }
}

fn next_value(sequence: &Sequence, cx: &Context<'_>) -> SqlResult<i64> {
    let value = sequence
        .next_value(&sequence.key, |sequence, limit| cx.reserve.reserve(sequence, limit))?;
    cx.reserve.note(sequence, value);
    Ok(value)
}

/// What evaluating sequence calls needs beyond the sequences themselves: their durable
/// reservations, the named sequences, and the session's values for `currval` and `lastval`.
pub trait Sequences {
    /// Makes values up to `limit` of `sequence` durable.
    fn reserve(&self, sequence: &Sequence, limit: i64) -> SqlResult<()>;

    /// The named sequence `name` (its name as `nextval('name')` gives it).
    fn find(&self, name: &str) -> SqlResult<(Arc<crate::catalog::SequenceDef>, Arc<Sequence>)> {
        Err(SqlError::new("42P01", format!("relation \"{name}\" does not exist")))
    }

    /// Notes that the session was handed `value` of `sequence`.
    fn note(&self, _sequence: &Sequence, _value: i64) {}

    /// The value of `sequence` last handed to the session.
    fn current(&self, _sequence: &Sequence) -> Option<i64> {
        None
    }

    /// The value of any sequence last handed to the session.
    fn last(&self) -> Option<i64> {
        None
    }

    /// Calls `f` with the catalog, if the statement runs in a session (the catalog
    /// functions, `expr/functions/catalog.rs`); does nothing otherwise.
    fn with_catalog(&self, _f: &mut dyn FnMut(&crate::catalog::Catalog)) {}
}

/// A reservation function alone: evaluation with no session (a backfill).
impl<F: Fn(&Sequence, i64) -> SqlResult<()>> Sequences for F {
    fn reserve(&self, sequence: &Sequence, limit: i64) -> SqlResult<()> {
        self(sequence, limit)
    }
}

/// Whether `expr` is a call of a set-returning function (`functions::Function::set`).
pub fn is_set_call(expr: &BExpr) -> bool {
    matches!(expr, BExpr::Call { func, .. } if func.set)
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

/// `value op ANY (items)` (or `ALL`) in three-valued logic: ANY is true if a comparison is
/// true, else NULL if one is NULL, else false (an empty array: false); ALL the dual.
fn any_all(op: BinaryOp, value: &Value, items: &[Value], all: bool) -> Value {
    let mut unknown = false;
    for item in items {
        if value.is_null() || item.is_null() {
            unknown = true;
            continue;
        }
        if compare_holds(op, value.compare(item)) != all {
            return Value::Bool(!all);
        }
    }
    if unknown { Value::Null } else { Value::Bool(all) }
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
        _ => {}
    }
    if matches!(ty, Type::Timestamp | Type::Timestamptz | Type::Time | Type::Interval) {
        return dates::datetime_arith(op, &left, &right);
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
pub(crate) fn check_text_len(len: usize) -> SqlResult<()> {
    if len > TEXT_BYTES_MAX {
        return Err(SqlError::new(
            "54000",
            format!("requested length too large: {len} bytes (the limit is {TEXT_BYTES_MAX})"),
        ));
    }
    Ok(())
}

/// Calls a scalar function (`expr::functions`): its arguments are evaluated first unless its body
/// is lazy, and a strict body is not called when one of them is NULL.
fn call(
    func: &Function,
    args: &[BExpr],
    ty: Type,
    row: &[Value],
    cx: &Context<'_>,
) -> SqlResult<Value> {
    let (body, strict) = match func.body {
        Body::Lazy(body) => return body(args, row, ty, cx),
        Body::Strict(body) => (body, true),
        Body::Nulls(body) => (body, false),
    };
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(arg.eval(row, cx)?);
    }
    if strict && values.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    body(&values, ty, cx)
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
