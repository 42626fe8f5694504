//! Subqueries of expressions: bound over the scope of the query around them, whose columns a
//! correlated one reads as `BExpr::Outer` values (passed down through each subquery between),
//! and where the executor cannot run them per row.

use super::{Binder, OuterArg, Scope};
use crate::ast;
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::Type;

impl Binder<'_> {
    /// Binds a subquery of an expression over `scope`, whose columns it may read (then it is
    /// correlated and runs for each row); `one_column`: it must return one column (all but
    /// EXISTS).
    pub(super) fn subquery(
        &mut self,
        query: &ast::Query,
        scope: &Scope,
        one_column: bool,
    ) -> SqlResult<(usize, Type)> {
        self.outer.push((scope.clone(), Vec::new()));
        self.sublinks += 1;
        let plan = self.query(query);
        self.sublinks -= 1;
        let (_, read) = self.outer.pop().expect("pushed above");
        let mut plan = plan?;
        if one_column && plan.columns.len() != 1 {
            return Err(SqlError::syntax("subquery must return only one column"));
        }
        plan.outer_args = read;
        let ty = plan.columns.first().map_or(Type::Bool, |c| c.ty);
        self.subqueries.push(plan);
        Ok((self.subqueries.len() - 1, ty))
    }

    /// Refuses correlated subqueries bound since `before` where they are not run per row.
    pub(super) fn no_correlated_since(&self, before: usize, place: &str) -> SqlResult<()> {
        if self.subqueries[before..].iter().any(|sub| !sub.outer_args.is_empty()) {
            return Err(SqlError::unsupported(format!("a correlated subquery in {place}")));
        }
        Ok(())
    }

    /// A column of a query around the subquery being bound: its `BExpr::Outer`. A column of a
    /// query further out is passed down through each subquery between.
    pub(super) fn outer_column(
        &mut self,
        table: Option<&str>,
        name: &str,
    ) -> Option<(BExpr, Type)> {
        let (found, column, ty) =
            self.outer.iter().enumerate().rev().find_map(|(at, (scope, _))| {
                scope.resolve(table, name).ok().map(|(c, t)| (at, c, t))
            })?;
        let mut arg = OuterArg::Column(column);
        for (_, read) in &mut self.outer[found..] {
            let at = match read.iter().position(|a| *a == arg) {
                Some(at) => at,
                None => {
                    read.push(arg);
                    read.len() - 1
                }
            };
            arg = OuterArg::Outer(at);
        }
        let OuterArg::Outer(at) = arg else { unreachable!("one level at least") };
        Some((BExpr::Outer(at, ty), ty))
    }
}
