//! Binding array expressions: `ARRAY[...]`, `op ANY (array)` and `op ALL (array)`, and
//! subscripts (`types/array.rs` has the type and its values).

use super::{Binder, GroupBinding, Scope};
use crate::ast::{BinaryOp, Expr};
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::{Elem, Type};

impl Binder<'_> {
    /// `expr` as a value of type `to`: untyped literals and parameters take it, other values
    /// are cast when their type differs.
    pub(super) fn convert_to(&mut self, expr: BExpr, from: Type, to: Type) -> SqlResult<BExpr> {
        let (expr, from) = self.coerce(expr, from, to)?;
        Ok(if from == to { expr } else { BExpr::Cast { expr: Box::new(expr), ty: to } })
    }

    /// `ARRAY[a, b, ...]`: the elements in their common type (text when none has a type).
    pub(super) fn bind_array(
        &mut self,
        items: &[Expr],
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let mut bound = Vec::with_capacity(items.len());
        let mut common = Type::Unknown;
        for item in items {
            let (expr, ty) = self.bind_in(item, scope, group)?;
            common = Type::common(common, ty).ok_or_else(|| {
                SqlError::mismatch(format!(
                    "ARRAY types {} and {} cannot be matched",
                    common.name(),
                    ty.name()
                ))
            })?;
            bound.push((expr, ty));
        }
        let elem =
            Elem::of(common).ok_or_else(|| SqlError::unsupported("multidimensional arrays"))?;
        let mut elements = Vec::with_capacity(bound.len());
        for (expr, ty) in bound {
            elements.push(self.convert_to(expr, ty, elem.ty())?);
        }
        Ok((BExpr::Array(elements), Type::Array(elem)))
    }

    /// `expr op ANY (array)` / `ALL`: the value and the elements compared in their common
    /// type. An untyped array (`'{1,2}'`, a parameter) is an array of the value's type.
    pub(super) fn bind_any_all(
        &mut self,
        expr: &Expr,
        op: BinaryOp,
        array: &Expr,
        all: bool,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let (left, left_ty) = self.bind_in(expr, scope, group)?;
        let (right, right_ty) = self.bind_in(array, scope, group)?;
        let elem_ty = match right_ty {
            Type::Array(elem) => elem.ty(),
            Type::Unknown => left_ty,
            other => {
                return Err(SqlError::new(
                    "42809",
                    format!(
                        "op ANY/ALL (array) requires array on right side, not {}",
                        other.name()
                    ),
                ));
            }
        };
        let common = Type::common(left_ty, elem_ty).ok_or_else(|| {
            SqlError::undefined_function(format!(
                "operator does not exist: {} {} {}",
                left_ty.name(),
                op.symbol(),
                elem_ty.name()
            ))
        })?;
        let common = if common == Type::Unknown { Type::Text } else { common };
        let elem =
            Elem::of(common).ok_or_else(|| SqlError::unsupported("multidimensional arrays"))?;
        let left = self.convert_to(left, left_ty, elem.ty())?;
        let right = self.convert_to(right, right_ty, Type::Array(elem))?;
        Ok((BExpr::AnyAll { op, left: Box::new(left), array: Box::new(right), all }, Type::Bool))
    }

    /// `array[index]`: the element, NULL past either end.
    pub(super) fn bind_subscript(
        &mut self,
        array: &Expr,
        index: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let (array, array_ty) = self.bind_in(array, scope, group)?;
        if array_ty == Type::Jsonb {
            // `jsonb['key']`, `jsonb[0]`: the member, as `->` reads it.
            let (index, index_ty) = self.bind_in(index, scope, group)?;
            return self.call_bound("json_arrow", vec![(array, array_ty), (index, index_ty)]);
        }
        let Type::Array(elem) = array_ty else {
            return Err(SqlError::mismatch(format!(
                "cannot subscript type {} because it does not support subscripting",
                array_ty.name()
            )));
        };
        let (index, index_ty) = self.bind_in(index, scope, group)?;
        if !index_ty.is_integer() && index_ty != Type::Unknown {
            return Err(SqlError::mismatch("array subscript must have type integer"));
        }
        let index = self.convert_to(index, index_ty, Type::Int4)?;
        Ok((BExpr::Subscript { array: Box::new(array), index: Box::new(index) }, elem.ty()))
    }
}
