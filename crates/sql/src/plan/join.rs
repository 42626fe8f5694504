//! Joins the nested loop does not run as they are written: `JOIN ... USING` and NATURAL
//! JOIN's conditions, and FULL JOIN as one derived source (RIGHT JOIN swaps its sides in
//! `plan.rs`).

use super::derived::Derived;
use super::{Binder, Scope};
use crate::ast::{self, Expr, SetOp};
use crate::catalog::TableInfo;
use crate::error::{SqlError, SqlResult};
use crate::types::Type;
use std::sync::Arc;

/// A FULL JOIN planned as one source ([`Binder::full_join`]): its rows, the table of its
/// columns, and each side's name and columns as the query sees them.
pub(super) struct FullJoin {
    pub derived: Derived,
    pub table: Arc<TableInfo>,
    pub left: (String, Vec<(String, Type)>),
    pub right: (String, Vec<(String, Type)>),
}

impl Binder<'_> {
    /// `JOIN right USING (columns)`: the condition that each column of the tables joined so
    /// far equals the right side's of the same name (bound once the right side is in scope).
    pub(super) fn using_condition(
        &self,
        scope: &Scope,
        right: &str,
        right_columns: &[String],
        using: &[String],
    ) -> SqlResult<Option<Expr>> {
        let mut condition: Option<Expr> = None;
        for column in using {
            let left = scope
                .tables
                .iter()
                .filter(|t| {
                    t.columns.iter().any(|(c, _)| c == column) && !t.hidden.contains(column)
                })
                .map(|t| t.name.clone())
                .collect::<Vec<_>>();
            let left = match left.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(SqlError::new(
                        "42703",
                        format!(
                            "column \"{column}\" specified in USING clause does not exist in left table"
                        ),
                    ));
                }
                _ => {
                    return Err(SqlError::new(
                        "42702",
                        format!(
                            "common column name \"{column}\" appears more than once in left table"
                        ),
                    ));
                }
            };
            if !right_columns.contains(column) {
                return Err(SqlError::new(
                    "42703",
                    format!(
                        "column \"{column}\" specified in USING clause does not exist in right table"
                    ),
                ));
            }
            let equal = Expr::Binary {
                op: ast::BinaryOp::Eq,
                left: Box::new(Expr::Column { table: Some(left), name: column.clone() }),
                right: Box::new(Expr::Column {
                    table: Some(right.to_string()),
                    name: column.clone(),
                }),
            };
            condition = Some(match condition {
                None => equal,
                Some(before) => Expr::Binary {
                    op: ast::BinaryOp::And,
                    left: Box::new(before),
                    right: Box::new(equal),
                },
            });
        }
        Ok(condition)
    }

    /// `left FULL JOIN right ON c` as the source `(SELECT left.*, right.* FROM left LEFT JOIN
    /// right ON c) UNION ALL (SELECT NULL, ..., right.* FROM right WHERE NOT EXISTS (SELECT
    /// FROM left WHERE c))`: every pair that meets, each left row that meets none (NULLs on
    /// the right), and each right row that meets none (NULLs on the left).
    pub(super) fn full_join(
        &mut self,
        left: &ast::TableRef,
        join: &ast::Join,
        lock: (ast::RowLockMode, ast::WaitPolicy),
    ) -> SqlResult<FullJoin> {
        if !join.using.is_empty() || join.natural {
            return Err(SqlError::unsupported("FULL JOIN with USING or NATURAL"));
        }
        let Some(on) = &join.on else {
            return Err(SqlError::syntax("FULL JOIN needs an ON condition"));
        };
        let name = |table: &ast::TableRef| {
            table
                .alias
                .clone()
                .unwrap_or_else(|| table.name.rsplit('.').next().unwrap_or(&table.name).to_string())
        };
        let query = |body: ast::QueryBody| ast::Query {
            with: Vec::new(),
            recursive: false,
            body,
            order_by: Vec::new(),
            limit: None,
            offset: None,
            for_update: false,
            lock,
        };
        let select = |items, from, filter| {
            ast::QueryBody::Select(Box::new(ast::Select {
                distinct: false,
                distinct_on: Vec::new(),
                items,
                from,
                filter,
                group_by: Vec::new(),
                having: None,
            }))
        };
        let only =
            |table: &ast::TableRef| vec![ast::FromItem { table: table.clone(), joins: Vec::new() }];
        let (left_name, right_name) = (name(left), name(&join.table));
        // Each side's columns, as a query over it alone sees them.
        let scopes = std::mem::take(&mut self.outer);
        let outer = std::mem::take(&mut self.subqueries);
        let columns_of =
            |binder: &mut Self, table: &ast::TableRef| -> SqlResult<Vec<(String, Type)>> {
                let body = select(vec![ast::SelectItem::Wildcard], only(table), None);
                let plan = binder.query(&query(body))?;
                Ok(plan.columns.into_iter().map(|c| (c.name, c.ty)).collect())
            };
        let result = (|| {
            let left_columns = columns_of(self, left)?;
            let right_columns = columns_of(self, &join.table)?;
            let meets = select(
                vec![
                    ast::SelectItem::QualifiedWildcard(left_name.clone()),
                    ast::SelectItem::QualifiedWildcard(right_name.clone()),
                ],
                vec![ast::FromItem {
                    table: left.clone(),
                    joins: vec![ast::Join { kind: ast::JoinKind::Left, ..join.clone() }],
                }],
                None,
            );
            let mut items: Vec<ast::SelectItem> = left_columns
                .iter()
                .map(|(_, ty)| ast::SelectItem::Expr {
                    expr: Expr::Cast { expr: Box::new(Expr::Literal(ast::Literal::Null)), ty: *ty },
                    alias: None,
                })
                .collect();
            items.push(ast::SelectItem::QualifiedWildcard(right_name.clone()));
            let unmatched = Expr::Exists {
                query: Box::new(query(select(
                    vec![ast::SelectItem::Expr {
                        expr: Expr::Literal(ast::Literal::Null),
                        alias: None,
                    }],
                    only(left),
                    Some(on.clone()),
                ))),
                negated: true,
            };
            let rest = select(items, only(&join.table), Some(unmatched));
            let both = query(ast::QueryBody::SetOp {
                op: SetOp::Union,
                all: true,
                left: Box::new(query(meets)),
                right: Box::new(query(rest)),
            });
            let (derived, columns) = self.derived_query(&both)?;
            let table = self.derived_table(&format!("{left_name}_{right_name}"), &columns)?;
            Ok(FullJoin {
                derived,
                table,
                left: (left_name.clone(), left_columns),
                right: (right_name.clone(), right_columns),
            })
        })();
        self.subqueries = outer;
        self.outer = scopes;
        result
    }
}
