//! What the planner reads off an expression without binding it again: the output name of an
//! unaliased one, whether a bound one is volatile, and its type where that is cheap to tell.

use crate::ast::Expr;
use crate::depth;
use crate::expr::BExpr;
use crate::types::{Type, Value};

/// The output name PostgreSQL gives an unaliased expression.
pub(super) fn column_name(expr: &Expr) -> String {
    match expr {
        Expr::Column { name, .. } => name.clone(),
        // Operators written as the functions behind them are unnamed, as operators are.
        Expr::Function { name, .. }
            if matches!(
                name.as_str(),
                "json_arrow"
                    | "json_arrow_text"
                    | "json_path_op"
                    | "json_path_text_op"
                    | "arraycontains"
                    | "arraycontained"
                    | "arrayoverlap"
            ) =>
        {
            "?column?".into()
        }
        Expr::Function { name, .. } => name.clone(),
        // A cast is named by what it casts when that has a name, else by its type.
        Expr::Cast { expr, ty } => match column_name(expr) {
            name if name != "?column?" => name,
            _ => match ty {
                // An array type is named by its element's.
                Type::Array(elem) => elem.ty().typname().into(),
                _ => ty.typname().into(),
            },
        },
        Expr::Array(_) | Expr::ArraySubquery(_) => "array".into(),
        Expr::Subscript { array, .. } => column_name(array),
        Expr::Over { function, .. } => column_name(function),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        _ => "?column?".into(),
    }
}

pub(super) fn contains_volatile(expr: &BExpr) -> bool {
    depth::grow(|| contains_volatile_node(expr))
}

fn contains_volatile_node(expr: &BExpr) -> bool {
    match expr {
        BExpr::Call { func, .. } if func.volatile => true,
        BExpr::NextVal(_) => true,
        BExpr::Call { args, .. } => args.iter().any(contains_volatile),
        BExpr::Arith { left, right, .. } => contains_volatile(left) || contains_volatile(right),
        BExpr::Negate(e, _) | BExpr::Cast { expr: e, .. } => contains_volatile(e),
        _ => false,
    }
}

/// The type of a bound expression where the planner can tell it cheaply.
pub(super) fn expr_type_hint(expr: &BExpr, params: &[Type], row_types: &[Type]) -> Option<Type> {
    match expr {
        BExpr::Param(at) => params.get(*at).copied().filter(|t| *t != Type::Unknown),
        BExpr::Outer(_, ty) => Some(*ty),
        BExpr::Const(value) => match value {
            Value::Int(_) => Some(Type::Int8),
            Value::Numeric(_) => Some(Type::Numeric { precision: 0, scale: 0 }),
            Value::Float(_) => Some(Type::Float8),
            Value::Text(_) => Some(Type::Text),
            Value::Bool(_) => Some(Type::Bool),
            Value::Bytes(_) => Some(Type::Bytea),
            Value::Date(_) => Some(Type::Date),
            Value::Timestamp(_) => Some(Type::Timestamp),
            Value::Timestamptz(_) => Some(Type::Timestamptz),
            Value::Time(_) => Some(Type::Time),
            Value::Interval(_) => Some(Type::Interval),
            Value::Uuid(_) => Some(Type::Uuid),
            Value::Json(_) => Some(Type::Jsonb),
            Value::Null | Value::Array(_) => None,
        },
        BExpr::Cast { ty, .. }
        | BExpr::Arith { ty, .. }
        | BExpr::Call { ty, .. }
        | BExpr::Negate(_, ty) => Some(*ty),
        // A column of an earlier table (an index join).
        BExpr::Column(at) => row_types.get(*at).copied(),
        _ => None,
    }
}
