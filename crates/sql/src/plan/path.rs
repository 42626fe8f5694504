//! Access paths: how a table's rows are found from the conjuncts usable for it (a point
//! key, a list of keys, a range, an index, or a scan).

use super::{ColumnBounds, Path, contains_volatile, expr_type_hint, key_compatible};
use crate::ast::BinaryOp;
use crate::catalog::TableInfo;
use crate::expr::BExpr;
use crate::types::{Type, Value};

/// Whether a key built from a value of type `from` converted to the column's type finds
/// exactly the rows for which the comparison is true (a conversion either is exact or fails,
/// and a failure makes the access fall back to a full scan that tests every conjunct).
fn key_exact(column: Type, from: Type) -> bool {
    key_compatible(column, from) && column != Type::Float8
}

/// Chooses how to find the rows of `table` given the conjuncts usable for it. Also returns
/// the positions (in `conjuncts`) of the conjuncts the path decides exactly: rows the path
/// yields satisfy them, so the filter leaves them out.
pub(super) fn choose_path(
    table: &TableInfo,
    offset: usize,
    conjuncts: &[BExpr],
    params: &[Type],
    row_types: &[Type],
    earlier: &dyn Fn(&BExpr) -> bool,
) -> (Path, Vec<usize>) {
    let width = table.schema.columns.len();
    let mut bounds = vec![ColumnBounds::default(); width];
    for (position, conjunct) in conjuncts.iter().enumerate() {
        let BExpr::Compare { op, left, right } = conjunct else { continue };
        let (column, other, op) = match (left.as_ref(), right.as_ref()) {
            (BExpr::Column(c), other) if (offset..offset + width).contains(c) => {
                (*c - offset, other, *op)
            }
            (other, BExpr::Column(c)) if (offset..offset + width).contains(c) => {
                (*c - offset, other, op.flipped())
            }
            _ => continue,
        };
        // The other side may read only earlier tables (an index join) or nothing.
        if !earlier(other) || matches!(other, BExpr::NextVal(_)) || contains_volatile(other) {
            continue;
        }
        let column_ty = table.schema.columns[column].ty;
        let Some(other_ty) = expr_type_hint(other, params, row_types) else { continue };
        if !key_compatible(column_ty, other_ty) {
            continue;
        }
        let exact = key_exact(column_ty, other_ty);
        let entry = &mut bounds[column];
        match op {
            BinaryOp::Eq => entry.eq = Some((other.clone(), position, exact)),
            BinaryOp::Gt => entry.low = Some((other.clone(), false, position, exact)),
            BinaryOp::GtEq => entry.low = Some((other.clone(), true, position, exact)),
            BinaryOp::Lt => entry.high = Some((other.clone(), false, position, exact)),
            BinaryOp::LtEq => entry.high = Some((other.clone(), true, position, exact)),
            _ => {}
        }
    }
    let score = |columns: &[usize]| -> (usize, bool) {
        let eq = columns.iter().take_while(|c| bounds[**c].eq.is_some()).count();
        let range =
            columns.get(eq).is_some_and(|c| bounds[*c].low.is_some() || bounds[*c].high.is_some());
        (eq, range)
    };
    let mut implied = Vec::new();
    let take_eq = |column: &usize, implied: &mut Vec<usize>| -> BExpr {
        match &bounds[*column].eq {
            Some((expr, position, exact)) => {
                if *exact {
                    implied.push(*position);
                }
                expr.clone()
            }
            None => BExpr::Const(Value::Null),
        }
    };
    let primary = &table.schema.primary_key;
    if !primary.is_empty() && score(primary).0 == primary.len() {
        let key = primary.iter().map(|c| take_eq(c, &mut implied)).collect();
        return (Path::Point(key), implied);
    }
    // One primary-key column in an IN list, the others fixed: a lookup per listed value.
    for (position, conjunct) in conjuncts.iter().enumerate() {
        let BExpr::InList { expr, list, negated: false } = conjunct else { continue };
        let BExpr::Column(c) = expr.as_ref() else { continue };
        let Some(at) = primary.iter().position(|k| offset + *k == *c) else { continue };
        let others_fixed =
            primary.iter().enumerate().all(|(i, k)| i == at || bounds[*k].eq.is_some());
        let column_ty = table.schema.columns[primary[at]].ty;
        let item_ty = |item: &BExpr| expr_type_hint(item, params, row_types);
        let usable = others_fixed
            && !list.is_empty()
            && list.iter().all(|item| {
                earlier(item)
                    && !contains_volatile(item)
                    && item_ty(item).is_some_and(|ty| key_compatible(column_ty, ty))
            });
        if !usable {
            continue;
        }
        let exact =
            list.iter().all(|item| item_ty(item).is_some_and(|ty| key_exact(column_ty, ty)));
        let key = primary
            .iter()
            .enumerate()
            .map(
                |(i, k)| if i == at { BExpr::Const(Value::Null) } else { take_eq(k, &mut implied) },
            )
            .collect();
        if exact {
            implied.push(position);
        }
        return (Path::Points { key, at, list: list.clone() }, implied);
    }
    let mut best: (Option<usize>, (usize, bool)) =
        (None, if primary.is_empty() { (0, false) } else { score(primary) });
    for (i, index) in table.schema.indexes.iter().enumerate() {
        let s = score(&index.columns);
        // A unique index leaves out rows with NULLs: use it only when every column is bound.
        let complete = s.0 == index.columns.len() || (s.1 && s.0 + 1 == index.columns.len());
        if index.unique && !complete {
            continue;
        }
        if (s.0, s.1) > best.1 {
            best = (Some(i), s);
        }
    }
    let (index, (eq, _)) = best;
    let columns: &[usize] = match index {
        None => primary,
        Some(i) => &table.schema.indexes[i].columns,
    };
    let eq_exprs = columns[..eq].iter().map(|c| take_eq(c, &mut implied)).collect();
    let mut bound = |side: &Option<(BExpr, bool, usize, bool)>| {
        side.as_ref().map(|(expr, inclusive, position, exact)| {
            if *exact {
                implied.push(*position);
            }
            (expr.clone(), *inclusive)
        })
    };
    let next = columns.get(eq);
    let low = next.and_then(|c| bound(&bounds[*c].low));
    let high = next.and_then(|c| bound(&bounds[*c].high));
    (Path::Range { index, eq: eq_exprs, low, high, descending: false }, implied)
}
