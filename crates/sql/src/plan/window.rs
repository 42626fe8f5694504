//! Window functions (`f(...) OVER (PARTITION BY ... ORDER BY ... frame)`): bound over the
//! rows a query emits (its joined rows, or its group rows when it groups), computed by the
//! executor once every row is in (`exec/window.rs`), each row then carrying its windows'
//! values after its own columns (`BExpr::Window`).

use super::{Aggregate, Binder, GroupBinding, Scope, SortKey};
use crate::ast::{Expr, FrameBound, FrameUnits, WindowSpec};
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::Type;

#[derive(Debug, Clone)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// `ntile(buckets)`.
    Ntile,
    /// `lag(value [, offset [, default]])`, `lead(...)`.
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// `nth_value(value, n)`.
    NthValue,
    /// An aggregate over the frame.
    Aggregate(Aggregate),
}

#[derive(Debug, Clone)]
pub enum Bound {
    UnboundedPreceding,
    /// Rows (ROWS) or peer groups (GROUPS) before the current one; a constant.
    Preceding(BExpr),
    CurrentRow,
    Following(BExpr),
    UnboundedFollowing,
}

#[derive(Debug, Clone)]
pub struct WindowPlan {
    pub func: WindowFunc,
    pub args: Vec<BExpr>,
    pub partition: Vec<BExpr>,
    pub order: Vec<SortKey>,
    pub units: FrameUnits,
    pub start: Bound,
    pub end: Bound,
    pub ty: Type,
}

impl Binder<'_> {
    /// A window function call: its plan joins the query's windows, and the call reads its
    /// value (`BExpr::Window`).
    pub(super) fn bind_window(
        &mut self,
        function: &Expr,
        filter: Option<&Expr>,
        spec: &WindowSpec,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        if !self.windows_allowed {
            return Err(SqlError::new(
                "42P20",
                "window functions are not allowed here (only in the select list and ORDER BY)",
            ));
        }
        // No window inside a window's arguments or definition.
        self.windows_allowed = false;
        let plan = self.window_plan(function, filter, spec, scope, group);
        self.windows_allowed = true;
        let plan = plan?;
        let ty = plan.ty;
        self.windows.push(plan);
        Ok((BExpr::Window(self.windows.len() - 1), ty))
    }

    fn window_plan(
        &mut self,
        function: &Expr,
        filter: Option<&Expr>,
        spec: &WindowSpec,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<WindowPlan> {
        let Expr::Function { name, args, distinct, star } = function else {
            unreachable!("parsed as a function call")
        };
        let (name, distinct, star) = (name.as_str(), *distinct, *star);
        let mut partition = Vec::new();
        for expr in &spec.partition {
            partition.push(self.bind_in(expr, scope, group)?.0);
        }
        let mut order = Vec::new();
        for item in &spec.order {
            order.push(SortKey {
                expr: self.bind_in(&item.expr, scope, group)?.0,
                descending: item.descending,
                nulls_first: item.nulls_first.unwrap_or(item.descending),
            });
        }
        if distinct {
            return Err(SqlError::unsupported("DISTINCT in a window function"));
        }
        let arity = |n: std::ops::RangeInclusive<usize>| -> SqlResult<()> {
            if star || !n.contains(&args.len()) {
                return Err(SqlError::undefined_function(format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                )));
            }
            Ok(())
        };
        if filter.is_some() && !super::is_aggregate(name) {
            return Err(SqlError::syntax(format!(
                "FILTER is not implemented for non-aggregate window functions ({name})"
            )));
        }
        let mut bound_args = Vec::new();
        let (func, ty) = match name {
            "row_number" | "rank" | "dense_rank" | "percent_rank" | "cume_dist" => {
                arity(0..=0)?;
                match name {
                    "row_number" => (WindowFunc::RowNumber, Type::Int8),
                    "rank" => (WindowFunc::Rank, Type::Int8),
                    "dense_rank" => (WindowFunc::DenseRank, Type::Int8),
                    "percent_rank" => (WindowFunc::PercentRank, Type::Float8),
                    _ => (WindowFunc::CumeDist, Type::Float8),
                }
            }
            "ntile" => {
                arity(1..=1)?;
                bound_args.push(self.integer_arg(&args[0], scope, group)?);
                (WindowFunc::Ntile, Type::Int4)
            }
            "lag" | "lead" | "first_value" | "last_value" | "nth_value" => {
                let Some(first) = args.first() else {
                    return Err(SqlError::undefined_function(format!(
                        "function {name}() does not exist"
                    )));
                };
                let (value, ty) = self.bind_in(first, scope, group)?;
                let (value, ty) = self.coerce(value, ty, Type::Text)?;
                bound_args.push(value);
                let func = match name {
                    "lag" | "lead" => {
                        arity(1..=3)?;
                        if let Some(offset) = args.get(1) {
                            bound_args.push(self.integer_arg(offset, scope, group)?);
                        }
                        if let Some(default) = args.get(2) {
                            let (default, default_ty) = self.bind_in(default, scope, group)?;
                            let (default, default_ty) = self.coerce(default, default_ty, ty)?;
                            if Type::common(ty, default_ty).is_none() {
                                return Err(SqlError::mismatch(format!(
                                    "function {name}({}, integer, {}) does not exist",
                                    ty.name(),
                                    default_ty.name()
                                )));
                            }
                            let default = if default_ty == ty {
                                default
                            } else {
                                BExpr::Cast { expr: Box::new(default), ty }
                            };
                            bound_args.push(default);
                        }
                        if name == "lag" { WindowFunc::Lag } else { WindowFunc::Lead }
                    }
                    "nth_value" => {
                        arity(2..=2)?;
                        bound_args.push(self.integer_arg(&args[1], scope, group)?);
                        WindowFunc::NthValue
                    }
                    _ => {
                        arity(1..=1)?;
                        if name == "first_value" {
                            WindowFunc::FirstValue
                        } else {
                            WindowFunc::LastValue
                        }
                    }
                };
                (func, ty)
            }
            _ if super::is_aggregate(name) => {
                let aggregate = self.aggregate_call(function, filter, &[], scope, Some(group))?;
                let ty = aggregate.ty;
                (WindowFunc::Aggregate(aggregate), ty)
            }
            _ => {
                return Err(SqlError::new(
                    "42809",
                    format!(
                        "OVER specified, but {name} is not a window function nor an aggregate function"
                    ),
                ));
            }
        };
        let (units, start, end) = match &spec.frame {
            None if spec.order.is_empty() => {
                (FrameUnits::Rows, Bound::UnboundedPreceding, Bound::UnboundedFollowing)
            }
            None => (FrameUnits::Range, Bound::UnboundedPreceding, Bound::CurrentRow),
            Some(frame) => {
                let start = self.frame_bound(&frame.start, frame.units)?;
                let end = self.frame_bound(&frame.end, frame.units)?;
                (frame.units, start, end)
            }
        };
        Ok(WindowPlan { func, args: bound_args, partition, order, units, start, end, ty })
    }

    fn integer_arg(
        &mut self,
        arg: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<BExpr> {
        let (bound, ty) = self.bind_in(arg, scope, group)?;
        let (bound, ty) = self.coerce(bound, ty, Type::Int4)?;
        // PostgreSQL declares these arguments `integer`: a bigint finds no function.
        if !matches!(ty, Type::Int2 | Type::Int4) {
            return Err(SqlError::undefined_function(format!(
                "function with an argument of type {} does not exist (integer expected)",
                ty.name()
            )));
        }
        Ok(bound)
    }

    fn frame_bound(&mut self, bound: &FrameBound, units: FrameUnits) -> SqlResult<Bound> {
        let offset = |binder: &mut Self, expr: &Expr| -> SqlResult<BExpr> {
            if units == FrameUnits::Range {
                return Err(SqlError::unsupported("RANGE with an offset (use ROWS or GROUPS)"));
            }
            let (bound, ty) = binder.bind(expr, &Scope::default())?;
            let (bound, ty) = binder.coerce(bound, ty, Type::Int8)?;
            if !ty.is_integer() {
                return Err(SqlError::mismatch("a frame offset must be an integer"));
            }
            Ok(bound)
        };
        Ok(match bound {
            FrameBound::UnboundedPreceding => Bound::UnboundedPreceding,
            FrameBound::Preceding(expr) => Bound::Preceding(offset(self, expr)?),
            FrameBound::CurrentRow => Bound::CurrentRow,
            FrameBound::Following(expr) => Bound::Following(offset(self, expr)?),
            FrameBound::UnboundedFollowing => Bound::UnboundedFollowing,
        })
    }
}
