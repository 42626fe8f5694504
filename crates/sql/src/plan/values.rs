//! `VALUES` lists as queries: each column takes the type common to its rows.

use super::{Binder, OutputColumn, QueryPlan, Scope, SortKey};
use crate::ast::{self, Expr, Literal};
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::{Type, Value};

impl Binder<'_> {
    pub(super) fn values_query(
        &mut self,
        rows: &[Vec<Expr>],
        query: &ast::Query,
    ) -> SqlResult<QueryPlan> {
        let scope = Scope::default();
        let mut bound_rows = Vec::new();
        let mut types: Vec<Type> = Vec::new();
        for row in rows {
            if !types.is_empty() && row.len() != types.len() {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let mut bound = Vec::new();
            for (i, expr) in row.iter().enumerate() {
                let (e, t) = self.bind(expr, &scope)?;
                if types.len() <= i {
                    types.push(t);
                } else {
                    types[i] = Type::common(types[i], t)
                        .ok_or_else(|| SqlError::mismatch("VALUES types cannot be matched"))?;
                }
                bound.push(e);
            }
            bound_rows.push(bound);
        }
        let types: Vec<Type> =
            types.into_iter().map(|t| if t == Type::Unknown { Type::Text } else { t }).collect();
        let mut coerced_rows = Vec::new();
        for row in bound_rows {
            let mut coerced = Vec::new();
            for (e, ty) in row.into_iter().zip(&types) {
                coerced.push(
                    self.coerce(e, Type::Unknown, *ty)
                        .map(|(e, _)| e)
                        .unwrap_or_else(|_| BExpr::Const(Value::Null)),
                );
            }
            coerced_rows.push(coerced);
        }
        let columns: Vec<OutputColumn> = types
            .iter()
            .enumerate()
            .map(|(i, ty)| OutputColumn { name: format!("column{}", i + 1), ty: *ty })
            .collect();
        let output = (0..columns.len()).map(BExpr::Column).collect();
        let mut sort = Vec::new();
        for item in &query.order_by {
            let Expr::Literal(Literal::Number(n)) = &item.expr else {
                return Err(SqlError::unsupported(
                    "ORDER BY an expression over VALUES (use a position)",
                ));
            };
            let at = n
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .filter(|n| *n < columns.len())
                .ok_or_else(|| {
                    SqlError::syntax(format!("ORDER BY position {n} is not in select list"))
                })?;
            sort.push(SortKey {
                expr: BExpr::Column(at),
                descending: item.descending,
                nulls_first: item.nulls_first.unwrap_or(item.descending),
            });
        }
        Ok(QueryPlan {
            tables: Vec::new(),
            values: Some(coerced_rows),
            filter: None,
            grouping: None,
            output,
            width: columns.len(),
            columns,
            sort,
            distinct: false,
            distinct_on: Vec::new(),
            limit: query.limit.as_ref().map(|e| self.bind_count(e)).transpose()?,
            offset: query.offset.as_ref().map(|e| self.bind_count(e)).transpose()?,
            for_update: false,
            lock: Default::default(),
            subqueries: std::mem::take(&mut self.subqueries),
            moves: Vec::new(),
            derived: Vec::new(),
            outer_args: Vec::new(),
            correlated: false,
            windows: Vec::new(),
            sets: false,
        })
    }
}
