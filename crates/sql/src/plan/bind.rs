//! Binding expressions: names to columns, types checked and coerced, parameters typed by
//! their use, operators, functions and aggregates.

use super::{AggFunc, Aggregate, Binder, GroupBinding, Scope, contains_aggregate, is_aggregate};
use crate::ast::{BinaryOp, Expr, Literal};
use crate::depth;
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::expr::functions::{self, Returns};
use crate::types::{Type, Value, cast, parse_text};

/// The function an aggregate call names (with or without FILTER); `None` for other nodes.
fn aggregate_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Function { name, .. } => Some(name),
        Expr::Over { function, window: None, .. } => match function.as_ref() {
            Expr::Function { name, .. } => Some(name),
            _ => None,
        },
        _ => None,
    }
}

impl Binder<'_> {
    pub(super) fn bind(&mut self, expr: &Expr, scope: &Scope) -> SqlResult<(BExpr, Type)> {
        self.bind_in(expr, scope, &mut None)
    }

    pub(super) fn bind_in(
        &mut self,
        expr: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        depth::grow(|| self.bind_node(expr, scope, group))
    }

    fn bind_node(
        &mut self,
        expr: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        if let Expr::Over { function, filter, window: Some(window), .. } = expr {
            return self.bind_window(function, filter.as_deref(), window, scope, group);
        }
        if group.is_some() {
            if let Some(name) = aggregate_name(expr)
                && is_aggregate(name)
            {
                return self.bind_aggregate(expr, scope, group);
            }
            if !contains_aggregate(expr) {
                // An expression that is a GROUP BY key reads the key.
                let mut none = None;
                if let Ok((bound, ty)) = self.bind_in(expr, scope, &mut none) {
                    let text = format!("{bound:?}");
                    let keys =
                        &group.as_ref().map(|g| &g.keys).into_iter().flatten().collect::<Vec<_>>();
                    if let Some(at) = keys.iter().position(|key| format!("{key:?}") == text) {
                        let key_type = group.as_ref().map_or(ty, |g| g.key_types[at]);
                        return Ok((BExpr::Column(at), key_type));
                    }
                    if bound.column_bound() == 0 {
                        return Ok((bound, ty));
                    }
                }
                if let Expr::Column { name, .. } = expr {
                    return Err(SqlError::new(
                        "42803",
                        format!(
                            "column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"
                        ),
                    ));
                }
            }
        }
        Ok(match expr {
            Expr::Over { .. } => {
                return Err(SqlError::new("42803", "aggregate functions are not allowed here"));
            }
            Expr::Column { table, name } => match scope.resolve(table.as_deref(), name) {
                Ok((at, ty)) => (BExpr::Column(at), ty),
                Err(error) => match self.outer_column(table.as_deref(), name) {
                    Some(outer) => outer,
                    None => return Err(error),
                },
            },
            Expr::Literal(literal) => match literal {
                Literal::Null => (BExpr::Const(Value::Null), Type::Unknown),
                Literal::Bool(b) => (BExpr::Const(Value::Bool(*b)), Type::Bool),
                Literal::String(s) => (BExpr::Const(Value::Text(s.clone().into())), Type::Unknown),
                Literal::Number(text) => {
                    if text.contains(['.', 'e', 'E']) {
                        let ty = Type::Numeric { precision: 0, scale: 0 };
                        (BExpr::Const(parse_text(text, ty)?), ty)
                    } else {
                        match text.parse::<i64>() {
                            Ok(v) if i32::try_from(v).is_ok() => {
                                (BExpr::Const(Value::Int(v)), Type::Int4)
                            }
                            Ok(v) => (BExpr::Const(Value::Int(v)), Type::Int8),
                            Err(_) => {
                                let ty = Type::Numeric { precision: 0, scale: 0 };
                                (BExpr::Const(parse_text(text, ty)?), ty)
                            }
                        }
                    }
                }
            },
            Expr::Param(n) => {
                let at = n - 1;
                self.note_param(at, Type::Unknown);
                (BExpr::Param(at), self.params[at])
            }
            Expr::Negate(inner) => {
                let (inner, ty) = self.bind_in(inner, scope, group)?;
                if !ty.is_numeric() && ty != Type::Unknown && ty != Type::Interval {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: - {}",
                        ty.name()
                    )));
                }
                (BExpr::Negate(Box::new(inner), ty), ty)
            }
            Expr::Not(inner) => {
                let (inner, ty) = self.bind_in(inner, scope, group)?;
                let (inner, _) = self.expect_bool(inner, ty, "NOT")?;
                (BExpr::Not(Box::new(inner)), Type::Bool)
            }
            Expr::Binary { op, left, right } => {
                let (l, lt) = self.bind_in(left, scope, group)?;
                let (r, rt) = self.bind_in(right, scope, group)?;
                self.binary(*op, l, lt, r, rt)?
            }
            Expr::IsNull { expr, negated } => {
                let (inner, _) = self.bind_in(expr, scope, group)?;
                (BExpr::IsNull { expr: Box::new(inner), negated: *negated }, Type::Bool)
            }
            Expr::IsBool { expr, value, negated } => {
                let (inner, ty) = self.bind_in(expr, scope, group)?;
                let (inner, _) = self.expect_bool(inner, ty, "IS TRUE / IS FALSE")?;
                (
                    BExpr::IsBool { expr: Box::new(inner), value: *value, negated: *negated },
                    Type::Bool,
                )
            }
            Expr::InList { expr, list, negated } => {
                let (inner, inner_ty) = self.bind_in(expr, scope, group)?;
                let mut ty = inner_ty;
                let mut items = Vec::new();
                let mut types = Vec::new();
                for item in list {
                    let (bound, item_ty) = self.bind_in(item, scope, group)?;
                    ty = Type::common(ty, item_ty).ok_or_else(|| {
                        SqlError::mismatch(format!(
                            "IN types {} and {} cannot be matched",
                            ty.name(),
                            item_ty.name()
                        ))
                    })?;
                    items.push(bound);
                    types.push(item_ty);
                }
                let (inner, _) = self.coerce(inner, inner_ty, ty)?;
                let mut coerced = Vec::new();
                for (item, item_ty) in items.into_iter().zip(types) {
                    coerced.push(self.coerce(item, item_ty, ty)?.0);
                }
                (
                    BExpr::InList { expr: Box::new(inner), list: coerced, negated: *negated },
                    Type::Bool,
                )
            }
            Expr::InSubquery { expr, query, negated } => {
                let (inner, ty) = self.bind_in(expr, scope, group)?;
                let (index, sub_ty) = self.subquery(query, scope, true)?;
                let (inner, _) = self.coerce(inner, ty, sub_ty)?;
                (
                    BExpr::InSubquery { expr: Box::new(inner), subquery: index, negated: *negated },
                    Type::Bool,
                )
            }
            Expr::Exists { query, negated } => {
                let (index, _) = self.subquery(query, scope, false)?;
                // Whether there is a row: the first one answers.
                let sub = &mut self.subqueries[index];
                if sub.limit.is_none() && sub.offset.is_none() && sub.grouping.is_none() {
                    sub.limit = Some(BExpr::Const(Value::Int(1)));
                }
                (BExpr::Exists { subquery: index, negated: *negated }, Type::Bool)
            }
            Expr::Subquery(query) => {
                let (index, ty) = self.subquery(query, scope, true)?;
                (BExpr::Subquery(index), ty)
            }
            Expr::Between { expr, low, high, negated } => {
                let (e, et) = self.bind_in(expr, scope, group)?;
                let (lo, lot) = self.bind_in(low, scope, group)?;
                let (hi, hit) = self.bind_in(high, scope, group)?;
                let (ge, _) = self.binary(BinaryOp::GtEq, e.clone(), et, lo, lot)?;
                let (le, _) = self.binary(BinaryOp::LtEq, e, et, hi, hit)?;
                let both = BExpr::And(Box::new(ge), Box::new(le));
                (if *negated { BExpr::Not(Box::new(both)) } else { both }, Type::Bool)
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let (e, et) = self.bind_in(expr, scope, group)?;
                let (p, pt) = self.bind_in(pattern, scope, group)?;
                let (e, et) = self.coerce(e, et, Type::Text)?;
                let (p, pt) = self.coerce(p, pt, Type::Text)?;
                if !et.is_text() || !pt.is_text() {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: {} ~~ {}",
                        et.name(),
                        pt.name()
                    )));
                }
                (
                    BExpr::Like {
                        expr: Box::new(e),
                        pattern: Box::new(p),
                        negated: *negated,
                        case_insensitive: *case_insensitive,
                    },
                    Type::Bool,
                )
            }
            Expr::Cast { expr, ty } => {
                let (inner, from) = self.bind_in(expr, scope, group)?;
                if *ty == Type::Regclass && (from.is_text() || from == Type::Unknown) {
                    return self.regclass_of(inner);
                }
                if from == Type::Regclass && ty.is_text() {
                    let (name, _) =
                        self.call_bound("_engram_relation_name", vec![(inner, from)])?;
                    return Ok((BExpr::Cast { expr: Box::new(name), ty: *ty }, *ty));
                }
                if let BExpr::Param(at) = inner {
                    self.note_param(at, *ty);
                    return Ok((BExpr::Cast { expr: Box::new(inner), ty: *ty }, *ty));
                }
                if from == Type::Json && !(ty.is_text() || matches!(ty, Type::Json | Type::Jsonb)) {
                    return Err(SqlError::new(
                        "42846",
                        format!("cannot cast type json to {}", ty.name()),
                    ));
                }
                if let BExpr::Const(value) = &inner {
                    return Ok((BExpr::Const(cast(value.clone(), *ty, true)?), *ty));
                }
                (BExpr::Cast { expr: Box::new(inner), ty: *ty }, *ty)
            }
            Expr::Function { name, args, distinct, star } => {
                if is_aggregate(name) {
                    return Err(SqlError::new(
                        "42803",
                        format!("aggregate function {name} is not allowed here"),
                    ));
                }
                if *distinct || *star {
                    return Err(SqlError::syntax(format!(
                        "{name}(DISTINCT ...) or {name}(*) is only valid for aggregates"
                    )));
                }
                self.function(name, args, scope, group)?
            }
            Expr::Case { operand, whens, otherwise } => {
                let operand = match operand {
                    Some(o) => Some(self.bind_in(o, scope, group)?),
                    None => None,
                };
                let mut result_ty = Type::Unknown;
                let mut bound_whens = Vec::new();
                for (when, then) in whens {
                    let (w, wt) = self.bind_in(when, scope, group)?;
                    let w = match &operand {
                        Some((_, ot)) => self.coerce(w, wt, *ot)?.0,
                        None => self.expect_bool(w, wt, "CASE WHEN")?.0,
                    };
                    let (t, tt) = self.bind_in(then, scope, group)?;
                    result_ty = Type::common(result_ty, tt).ok_or_else(|| {
                        SqlError::mismatch(format!(
                            "CASE types {} and {} cannot be matched",
                            result_ty.name(),
                            tt.name()
                        ))
                    })?;
                    bound_whens.push((w, t));
                }
                let otherwise = match otherwise {
                    Some(o) => {
                        let (e, et) = self.bind_in(o, scope, group)?;
                        result_ty = Type::common(result_ty, et).ok_or_else(|| {
                            SqlError::mismatch(format!(
                                "CASE types {} and {} cannot be matched",
                                result_ty.name(),
                                et.name()
                            ))
                        })?;
                        Some(Box::new(e))
                    }
                    None => None,
                };
                (
                    BExpr::Case {
                        operand: operand.map(|(o, _)| Box::new(o)),
                        whens: bound_whens,
                        otherwise,
                    },
                    if result_ty == Type::Unknown { Type::Text } else { result_ty },
                )
            }
            Expr::Default => {
                return Err(SqlError::syntax("DEFAULT is not allowed in this context"));
            }
            Expr::Array(items) => self.bind_array(items, scope, group)?,
            Expr::ArraySubquery(query) => {
                let (index, ty) = self.subquery(query, scope, true)?;
                let elem = crate::types::Elem::of(ty)
                    .ok_or_else(|| SqlError::unsupported("multidimensional arrays"))?;
                (BExpr::ArraySubquery(index), Type::Array(elem))
            }
            Expr::AnyAll { expr, op, array, all } => {
                self.bind_any_all(expr, *op, array, *all, scope, group)?
            }
            Expr::Subscript { array, index } => self.bind_subscript(array, index, scope, group)?,
        })
    }

    pub(super) fn expect_bool(
        &mut self,
        expr: BExpr,
        ty: Type,
        what: &str,
    ) -> SqlResult<(BExpr, Type)> {
        let (expr, ty) = self.coerce(expr, ty, Type::Bool)?;
        if ty != Type::Bool {
            return Err(SqlError::mismatch(format!(
                "argument of {what} must be type boolean, not type {}",
                ty.name()
            )));
        }
        Ok((expr, ty))
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        l: BExpr,
        lt: Type,
        r: BExpr,
        rt: Type,
    ) -> SqlResult<(BExpr, Type)> {
        match op {
            BinaryOp::And | BinaryOp::Or => {
                let (l, _) = self.expect_bool(l, lt, op.symbol())?;
                let (r, _) = self.expect_bool(r, rt, op.symbol())?;
                let bound = if op == BinaryOp::And {
                    BExpr::And(Box::new(l), Box::new(r))
                } else {
                    BExpr::Or(Box::new(l), Box::new(r))
                };
                Ok((bound, Type::Bool))
            }
            BinaryOp::Concat if matches!(lt, Type::Array(_)) || matches!(rt, Type::Array(_)) => {
                let name = match (lt, rt) {
                    (Type::Array(_), Type::Array(_) | Type::Unknown)
                    | (Type::Unknown, Type::Array(_)) => "array_cat",
                    (Type::Array(_), _) => "array_append",
                    _ => "array_prepend",
                };
                self.call_bound(name, vec![(l, lt), (r, rt)])
            }
            BinaryOp::Concat if lt == Type::Jsonb || rt == Type::Jsonb => {
                self.call_bound("jsonb_concat", vec![(l, lt), (r, rt)])
            }
            BinaryOp::Subtract if lt == Type::Jsonb => {
                self.call_bound("jsonb_delete", vec![(l, lt), (r, rt)])
            }
            BinaryOp::Concat => {
                let (l, _) = self.coerce(l, lt, Type::Text)?;
                let (r, _) = self.coerce(r, rt, Type::Text)?;
                Ok((
                    BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty: Type::Text },
                    Type::Text,
                ))
            }
            op if op.is_comparison()
                || matches!(op, BinaryOp::IsDistinctFrom | BinaryOp::IsNotDistinctFrom) =>
            {
                let (l, lt) = self.coerce(l, lt, rt)?;
                let (r, rt) = self.coerce(r, rt, lt)?;
                let (l, lt) = self.coerce(l, lt, Type::Text)?;
                let (r, rt) = self.coerce(r, rt, Type::Text)?;
                // `json` has no comparison operators (its text is not its value).
                if Type::common(lt, rt).is_none() || lt == Type::Json || rt == Type::Json {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: {} {} {}",
                        lt.name(),
                        op.symbol(),
                        rt.name()
                    )));
                }
                let (left, right) = (Box::new(l), Box::new(r));
                let bound = match op {
                    BinaryOp::IsDistinctFrom => BExpr::Distinct { left, right, negated: false },
                    BinaryOp::IsNotDistinctFrom => BExpr::Distinct { left, right, negated: true },
                    op => BExpr::Compare { op, left, right },
                };
                Ok((bound, Type::Bool))
            }
            op => {
                // Arithmetic: an untyped operand takes the other's type, but one added to (or
                // taken from) a date or time is an interval, and one beside an interval
                // multiplies it.
                let moves = |t: Type| t.is_datetime() || matches!(t, Type::Time | Type::Interval);
                // (PostgreSQL tries the other side's type first: `now() - '1 day'` fails there
                // too, as there is a `timestamptz - timestamptz`.)
                let partner = |other: Type| match op {
                    BinaryOp::Add if moves(other) => Type::Interval,
                    BinaryOp::Multiply | BinaryOp::Divide if other == Type::Interval => {
                        Type::Float8
                    }
                    _ => other,
                };
                let (l, lt) =
                    if lt == Type::Unknown { self.coerce(l, lt, partner(rt))? } else { (l, lt) };
                let (r, rt) =
                    if rt == Type::Unknown { self.coerce(r, rt, partner(lt))? } else { (r, rt) };
                let date_math = matches!((lt, rt), (Type::Date, t) | (t, Type::Date) if t.is_integer())
                    || (lt == rt && lt == Type::Date && op == BinaryOp::Subtract);
                if date_math {
                    let ty = if lt == rt { Type::Int4 } else { Type::Date };
                    return Ok((
                        BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty },
                        ty,
                    ));
                }
                // Two timestamps of different kinds meet in `timestamptz`.
                let (l, lt, r, rt) = match (lt, rt) {
                    (a, b)
                        if a != b
                            && a.is_datetime()
                            && b.is_datetime()
                            && op == BinaryOp::Subtract =>
                    {
                        let common = Type::common(a, b).unwrap_or(Type::Timestamptz);
                        let (l, lt) = self.coerce(l, lt, common)?;
                        let (r, rt) = self.coerce(r, rt, common)?;
                        (l, lt, r, rt)
                    }
                    _ => (l, lt, r, rt),
                };
                if let Some(ty) = crate::expr::dates::datetime_result(op, lt, rt) {
                    return Ok((
                        BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty },
                        ty,
                    ));
                }
                let (l, lt) = self.coerce(l, lt, Type::Numeric { precision: 0, scale: 0 })?;
                let (r, rt) = self.coerce(r, rt, Type::Numeric { precision: 0, scale: 0 })?;
                let ty = match Type::common(lt, rt) {
                    Some(ty) if ty.is_numeric() => match ty {
                        Type::Int2 => Type::Int4,
                        Type::Numeric { .. } => Type::Numeric { precision: 0, scale: 0 },
                        other => other,
                    },
                    _ => {
                        return Err(SqlError::undefined_function(format!(
                            "operator does not exist: {} {} {}",
                            lt.name(),
                            op.symbol(),
                            rt.name()
                        )));
                    }
                };
                Ok((BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty }, ty))
            }
        }
    }

    pub(super) fn function(
        &mut self,
        name: &str,
        args: &[Expr],
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let sets_allowed = std::mem::take(&mut self.sets_allowed);
        let mut bound = Vec::new();
        for arg in args {
            bound.push(self.bind_in(arg, scope, group)?);
        }
        let call = self.call_bound(name, bound)?;
        if !sets_allowed && crate::expr::is_set_call(&call.0) {
            return Err(SqlError::new(
                "0A000",
                format!(
                    "set-returning function {name} is allowed only at the top of a select-list \
                     item or in FROM"
                ),
            ));
        }
        Ok(call)
    }

    /// A call of function `name` with its arguments bound.
    pub(super) fn call_bound(
        &mut self,
        name: &str,
        bound: Vec<(BExpr, Type)>,
    ) -> SqlResult<(BExpr, Type)> {
        if name == "pg_typeof" && bound.len() == 1 {
            // The argument's type, known when the call is bound (PostgreSQL's `regtype`
            // prints as the type's name).
            return Ok((BExpr::Const(Value::Text(bound[0].1.name().into())), Type::Text));
        }
        if name == "pg_get_serial_sequence" && bound.len() == 2 {
            return self.serial_sequence(&bound);
        }
        // `@>` and `<@` are jsonb's as well as arrays'.
        let name = match name {
            "arraycontains" | "arraycontained"
                if bound.iter().any(|(_, t)| matches!(t, Type::Jsonb | Type::Json)) =>
            {
                if name == "arraycontains" { "jsonb_contains" } else { "jsonb_contained" }
            }
            name => name,
        };
        let func = functions::lookup(name).ok_or_else(|| {
            SqlError::undefined_function(format!("function {name} does not exist"))
        })?;
        let (min, max) = func.arity;
        if bound.len() < min || bound.len() > max {
            return Err(SqlError::undefined_function(format!(
                "function {name} with {} arguments does not exist",
                bound.len()
            )));
        }
        if let functions::Takes::Array(roles) = func.takes {
            return self.call_polymorphic(name, func, roles, bound);
        }
        if let functions::Takes::Resolve(resolve) = func.takes {
            let types: Vec<Type> = bound.iter().map(|(_, t)| *t).collect();
            let resolved = resolve(&types).ok_or_else(|| {
                let names: Vec<String> = types.iter().map(|t| t.name()).collect();
                SqlError::undefined_function(format!(
                    "function {name}({}) does not exist",
                    names.join(", ")
                ))
            })?;
            let ty = match func.returns {
                Returns::Of(of) => of(&resolved),
                Returns::Fixed(ty) => ty,
                _ => resolved.first().copied().unwrap_or(Type::Text),
            };
            let mut args = Vec::with_capacity(bound.len());
            for ((expr, from), to) in bound.into_iter().zip(&resolved) {
                args.push(self.convert_to(expr, from, *to)?);
            }
            return Ok((BExpr::Call { func, args, ty }, ty));
        }
        let ty = match func.returns {
            Returns::Fixed(ty) => ty,
            Returns::First => bound[0].1,
            Returns::CommonOfTwo => Type::common(bound[0].1, bound[1].1).unwrap_or(Type::Int8),
            Returns::Of(of) => of(&bound.iter().map(|(_, t)| *t).collect::<Vec<_>>()),
            Returns::Common => {
                let mut ty = Type::Unknown;
                for (_, t) in &bound {
                    ty = Type::common(ty, *t).ok_or_else(|| {
                        SqlError::mismatch(format!("{name} types cannot be matched"))
                    })?;
                }
                if ty == Type::Unknown { Type::Text } else { ty }
            }
        };
        let mut args = Vec::with_capacity(bound.len());
        for (position, (expr, t)) in bound.into_iter().enumerate() {
            args.push(self.coerce(expr, t, func.argument_type(position, ty))?.0);
        }
        Ok((BExpr::Call { func, args, ty }, ty))
    }

    /// A call of a function over arrays (`Takes::Array`): the arrays in one array type, the
    /// elements in its element type.
    fn call_polymorphic(
        &mut self,
        name: &str,
        func: &'static functions::Function,
        roles: &[functions::Role],
        bound: Vec<(BExpr, Type)>,
    ) -> SqlResult<(BExpr, Type)> {
        use functions::Role;
        let role = |position: usize| roles[position.min(roles.len() - 1)];
        let no_such = |types: &[Type]| {
            let names: Vec<String> = types.iter().map(|t| t.name()).collect();
            SqlError::undefined_function(format!(
                "function {name}({}) does not exist",
                names.join(", ")
            ))
        };
        let types: Vec<Type> = bound.iter().map(|(_, t)| *t).collect();
        let mut elem = Type::Unknown;
        for (position, ty) in types.iter().enumerate() {
            let element = match (role(position), ty) {
                (Role::Array, Type::Array(e)) => e.ty(),
                (Role::Array, Type::Unknown) | (Role::Element, _) => *ty,
                (Role::Array, _) => return Err(no_such(&types)),
                (Role::Fixed(_), _) => continue,
            };
            elem = Type::common(elem, element).ok_or_else(|| no_such(&types))?;
        }
        let elem = crate::types::Elem::of(if elem == Type::Unknown { Type::Text } else { elem })
            .ok_or_else(|| no_such(&types))?;
        let resolved: Vec<Type> = (0..bound.len())
            .map(|position| match role(position) {
                Role::Array => Type::Array(elem),
                Role::Element => elem.ty(),
                Role::Fixed(ty) => ty,
            })
            .collect();
        let ty = match func.returns {
            Returns::Fixed(ty) => ty,
            Returns::Of(of) => of(&resolved),
            _ => Type::Array(elem),
        };
        let mut args = Vec::with_capacity(bound.len());
        for ((expr, from), to) in bound.into_iter().zip(&resolved) {
            args.push(self.convert_to(expr, from, *to)?);
        }
        Ok((BExpr::Call { func, args, ty }, ty))
    }

    /// A value that goes into a json result: a `json` value as its content (jsonb), an
    /// untyped literal as text.
    pub(super) fn json_content(&mut self, expr: BExpr, ty: Type) -> SqlResult<BExpr> {
        match ty {
            Type::Unknown => self.convert_to(expr, ty, Type::Text),
            Type::Json => self.convert_to(expr, ty, Type::Jsonb),
            Type::Array(crate::types::Elem::Json) => {
                self.convert_to(expr, ty, Type::Array(crate::types::Elem::Jsonb))
            }
            _ => Ok(expr),
        }
    }

    /// `name::regclass`: a constant name becomes the relation's id now (42P01 when there is
    /// none), another text is looked up as the statement runs.
    fn regclass_of(&mut self, inner: BExpr) -> SqlResult<(BExpr, Type)> {
        if let BExpr::Const(value) = &inner {
            let Some(name) = value.to_text(Type::Text) else {
                return Ok((BExpr::Const(Value::Null), Type::Regclass));
            };
            let bare = name.strip_prefix("public.").unwrap_or(&name).trim_matches('"').to_string();
            let tables = crate::system::user_tables(self.catalog);
            let oid = crate::system::relations(&tables)
                .into_iter()
                .find(|relation| relation.name == bare)
                .map(|relation| relation.oid);
            if let Some(oid) = oid {
                return Ok((BExpr::Const(Value::Int(oid)), Type::Regclass));
            }
            // Sequences and views have no object id here: their name stands for them, as
            // `nextval('s'::regclass)` and a column default `nextval('t_id_seq'::regclass)`
            // want it.
            let named = self.catalog.sequence_defs.contains_key(&bare)
                || self.catalog.views.contains_key(&bare);
            if !named {
                return Err(SqlError::undefined_table(&name));
            }
            return Ok((BExpr::Const(Value::Text(bare.into())), Type::Text));
        }
        let (call, _) = self.call_bound("to_regclass", vec![(inner, Type::Text)])?;
        Ok((call, Type::Regclass))
    }

    /// `pg_get_serial_sequence('table', 'column')`: the sequence the column takes its values
    /// from (`public.name`), NULL when none; the arguments must be constants.
    fn serial_sequence(&self, bound: &[(BExpr, Type)]) -> SqlResult<(BExpr, Type)> {
        let text = |expr: &BExpr| match expr {
            BExpr::Const(value) => Ok(value.to_text(Type::Text).unwrap_or_default()),
            _ => Err(SqlError::unsupported("pg_get_serial_sequence of values not constant")),
        };
        let table = functions::sequence::sequence_name(&text(&bound[0].0)?);
        let column = text(&bound[1].0)?;
        let info = self.catalog.table(&table)?;
        let at = info.schema.column(&column).ok_or_else(|| SqlError::undefined_column(&column))?;
        let name = info.schema.columns[at].sequence.as_ref().and_then(|key| {
            self.catalog
                .sequence_defs
                .values()
                .find(|def| &def.key == key)
                .map(|def| Value::Text(format!("public.{}", def.name).into()))
        });
        Ok((BExpr::Const(name.unwrap_or(Value::Null)), Type::Text))
    }

    fn bind_aggregate(
        &mut self,
        expr: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let aggregate = match expr {
            Expr::Over { function, filter, window: None, order } => {
                self.aggregate_call(function, filter.as_deref(), order, scope, None)?
            }
            _ => self.aggregate_call(expr, None, &[], scope, None)?,
        };
        let ty = aggregate.ty;
        let binding = group
            .as_mut()
            .ok_or_else(|| SqlError::new("42803", "aggregate functions are not allowed here"))?;
        binding.aggregates.push(aggregate);
        Ok((BExpr::Column(binding.keys.len() + binding.aggregates.len() - 1), ty))
    }

    /// An aggregate call: its function, argument and type. Its arguments are bound over the
    /// rows it aggregates: the joined rows, or (`over_groups`, a window over a grouped query)
    /// the group rows, where they may contain aggregates themselves.
    pub(super) fn aggregate_call(
        &mut self,
        expr: &Expr,
        filter: Option<&Expr>,
        order: &[crate::ast::OrderItem],
        scope: &Scope,
        mut over_groups: Option<&mut Option<GroupBinding>>,
    ) -> SqlResult<Aggregate> {
        let Expr::Function { name, args, distinct, star } = expr else {
            unreachable!("checked by the caller")
        };
        let mut bind_arg = |binder: &mut Self, arg: &Expr| -> SqlResult<(BExpr, Type)> {
            match over_groups.as_deref_mut() {
                Some(group) => binder.bind_in(arg, scope, group),
                None => {
                    if contains_aggregate(arg) {
                        return Err(SqlError::new(
                            "42803",
                            "aggregate function calls cannot be nested",
                        ));
                    }
                    binder.bind(arg, scope)
                }
            }
        };
        let mut separator = None;
        let (func, arg, ty) = if *star {
            if name != "count" {
                return Err(SqlError::syntax(format!("{name}(*) is not valid; only count(*)")));
            }
            (AggFunc::CountStar, None, Type::Int8)
        } else if name == "string_agg" {
            let [arg, between] = args.as_slice() else {
                return Err(SqlError::undefined_function(format!(
                    "function string_agg with {} arguments does not exist",
                    args.len()
                )));
            };
            let (bound, arg_ty) = bind_arg(self, arg)?;
            let (bound, _) = self.coerce(bound, arg_ty, Type::Text)?;
            let (between, between_ty) = bind_arg(self, between)?;
            separator = Some(self.coerce(between, between_ty, Type::Text)?.0);
            (AggFunc::StringAgg, Some(bound), Type::Text)
        } else if name == "json_object_agg" || name == "jsonb_object_agg" {
            let [key, value] = args.as_slice() else {
                return Err(SqlError::undefined_function(format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                )));
            };
            let (key, key_ty) = bind_arg(self, key)?;
            let key = self.convert_to(key, key_ty, Type::Text)?;
            let (value, value_ty) = bind_arg(self, value)?;
            let value = self.json_content(value, value_ty)?;
            separator = Some(value);
            let ty = if name == "jsonb_object_agg" { Type::Jsonb } else { Type::Json };
            (AggFunc::JsonObjectAgg, Some(key), ty)
        } else if name == "json_agg" || name == "jsonb_agg" {
            let [arg] = args.as_slice() else {
                return Err(SqlError::undefined_function(format!(
                    "function {name} takes one argument"
                )));
            };
            let (bound, arg_ty) = bind_arg(self, arg)?;
            let bound = self.json_content(bound, arg_ty)?;
            let ty = if name == "jsonb_agg" { Type::Jsonb } else { Type::Json };
            (AggFunc::JsonAgg, Some(bound), ty)
        } else {
            let [arg] = args.as_slice() else {
                return Err(SqlError::undefined_function(format!(
                    "function {name} takes one argument"
                )));
            };
            let (bound, arg_ty) = bind_arg(self, arg)?;
            let (bound, arg_ty) = self.coerce(bound, arg_ty, Type::Text)?;
            let (func, ty) = match name.as_str() {
                "count" => (AggFunc::Count, Type::Int8),
                "array_agg" => {
                    let elem = crate::types::Elem::of(arg_ty).ok_or_else(|| {
                        SqlError::unsupported("array_agg of arrays (multidimensional arrays)")
                    })?;
                    (AggFunc::ArrayAgg, Type::Array(elem))
                }
                "bool_and" | "every" | "bool_or" => {
                    if arg_ty != Type::Bool {
                        return Err(SqlError::undefined_function(format!(
                            "function {name}({}) does not exist",
                            arg_ty.name()
                        )));
                    }
                    let func = if name == "bool_or" { AggFunc::BoolOr } else { AggFunc::BoolAnd };
                    (func, Type::Bool)
                }
                "min" | "max" => (if name == "min" { AggFunc::Min } else { AggFunc::Max }, arg_ty),
                "sum" | "avg" if arg_ty == Type::Interval => {
                    (if name == "sum" { AggFunc::Sum } else { AggFunc::Avg }, Type::Interval)
                }
                "sum" | "avg" => {
                    if !arg_ty.is_numeric() {
                        return Err(SqlError::undefined_function(format!(
                            "function {name}({}) does not exist",
                            arg_ty.name()
                        )));
                    }
                    let ty = match (name.as_str(), arg_ty) {
                        ("sum", Type::Int2 | Type::Int4) => Type::Int8,
                        (_, Type::Float4 | Type::Float8) => Type::Float8,
                        _ => Type::Numeric { precision: 0, scale: 0 },
                    };
                    (if name == "sum" { AggFunc::Sum } else { AggFunc::Avg }, ty)
                }
                _ => unreachable!("is_aggregate"),
            };
            (func, Some(bound), ty)
        };
        let filter = match filter {
            None => None,
            Some(filter) => {
                let (bound, filter_ty) = bind_arg(self, filter)?;
                Some(self.expect_bool(bound, filter_ty, "FILTER")?.0)
            }
        };
        let mut sort = Vec::with_capacity(order.len());
        for item in order {
            let (expr, _) = bind_arg(self, &item.expr)?;
            sort.push(super::SortKey {
                expr,
                descending: item.descending,
                nulls_first: item.nulls_first.unwrap_or(item.descending),
            });
        }
        Ok(Aggregate { func, arg, separator, distinct: *distinct, ty, filter, order: sort })
    }
}
