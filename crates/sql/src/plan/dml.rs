//! Binding INSERT, UPDATE and DELETE: target columns, defaults, assignments, ON CONFLICT and
//! RETURNING.

use super::{
    Access, Binder, ConflictAction, ConflictPlan, InsertPlan, InsertRows, ModifyPlan, OutputColumn,
    Path, Scope, choose_path, column_name, contains_volatile, join_conjuncts, sole_reads,
    split_conjuncts, table_columns,
};
use crate::ast::{self, Expr, JoinKind};
use crate::catalog::TableInfo;
use crate::codec::Wanted;
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::{Type, Value};
use std::sync::Arc;

impl Binder<'_> {
    pub(super) fn returning(
        &mut self,
        items: &[ast::SelectItem],
        table: &TableInfo,
        scope: &Scope,
    ) -> SqlResult<(Vec<BExpr>, Vec<bool>, Vec<OutputColumn>)> {
        let mut output = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard | ast::SelectItem::QualifiedWildcard(_) => {
                    for (i, column) in table.schema.columns.iter().enumerate() {
                        if column.dropped {
                            continue;
                        }
                        output.push(BExpr::Column(i));
                        columns.push(OutputColumn { name: column.name.clone(), ty: column.ty });
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    let (bound, ty) = self.bind(expr, scope)?;
                    let (bound, ty) = self.coerce(bound, ty, Type::Text)?;
                    output.push(bound);
                    columns.push(OutputColumn {
                        name: alias.clone().unwrap_or_else(|| column_name(expr)),
                        ty,
                    });
                }
            }
        }
        let width = table.schema.columns.len();
        let moves = sole_reads(&output, width, 0..width);
        Ok((output, moves, columns))
    }

    /// The default of each column, bound (SERIAL: the sequence's next value).
    pub(super) fn defaults(&mut self, table: &TableInfo) -> SqlResult<Vec<Option<BExpr>>> {
        let mut defaults = Vec::new();
        for (i, column) in table.schema.columns.iter().enumerate() {
            if let Some(sequence) = &table.sequences[i] {
                defaults.push(Some(BExpr::NextVal(Arc::clone(sequence))));
                continue;
            }
            defaults.push(match &column.default {
                None => None,
                Some(text) => {
                    let expr = crate::parse::parse_expr(text)?;
                    let (bound, ty) = self.bind(&expr, &Scope::default())?;
                    Some(self.assign(bound, ty, column.ty, &column.name)?)
                }
            });
        }
        Ok(defaults)
    }

    /// A column default given as SQL text, bound for column `column` of type `ty`, and
    /// whether it is volatile (a different value each time it is evaluated).
    pub fn default_expr(&mut self, text: &str, ty: Type, column: &str) -> SqlResult<(BExpr, bool)> {
        let expr = crate::parse::parse_expr(text)?;
        let (bound, from) = self.bind(&expr, &Scope::default())?;
        let bound = self.assign(bound, from, ty, column)?;
        let volatile = contains_volatile(&bound);
        Ok((bound, volatile))
    }

    /// The CHECK constraints of `table`, bound over its columns.
    pub fn check_exprs(&mut self, table: &TableInfo) -> SqlResult<Vec<(String, BExpr)>> {
        if table.schema.checks.is_empty() {
            return Ok(Vec::new());
        }
        let mut scope = Scope::default();
        scope.push(table.schema.name.clone(), table_columns(table))?;
        let mut out = Vec::with_capacity(table.schema.checks.len());
        for check in &table.schema.checks {
            let expr = crate::parse::parse_expr(&check.expr)?;
            if super::contains_aggregate(&expr) {
                return Err(SqlError::new(
                    "42803",
                    "aggregate functions are not allowed in check constraints",
                ));
            }
            let (bound, ty) = self.bind(&expr, &scope)?;
            let (bound, _) = self.expect_bool(bound, ty, "CHECK")?;
            out.push((check.name.clone(), bound));
        }
        Ok(out)
    }

    /// An expression stored into a column of type `to`.
    fn assign(&mut self, expr: BExpr, from: Type, to: Type, column: &str) -> SqlResult<BExpr> {
        let (expr, from) = self.coerce(expr, from, to)?;
        if !to.assignable_from(from) {
            return Err(SqlError::mismatch(format!(
                "column \"{column}\" is of type {} but expression is of type {}",
                to.name(),
                from.name()
            )));
        }
        Ok(expr)
    }

    pub(super) fn insert(&mut self, insert: &ast::Insert) -> SqlResult<InsertPlan> {
        let table = self.written_table(&insert.table.name)?;
        let schema = &table.schema;
        let targets: Vec<usize> = if insert.columns.is_empty() {
            schema.visible().collect()
        } else {
            let mut targets = Vec::new();
            for name in &insert.columns {
                let at = schema.column(name).ok_or_else(|| {
                    SqlError::undefined_column(&format!("{name}\" of relation \"{}", schema.name))
                })?;
                if targets.contains(&at) {
                    return Err(SqlError::new(
                        "42701",
                        format!("column \"{name}\" specified more than once"),
                    ));
                }
                targets.push(at);
            }
            targets
        };
        let defaults = self.defaults(&table)?;
        let rows = match &insert.source {
            ast::InsertSource::DefaultValues => {
                InsertRows::Values(vec![vec![None; schema.columns.len()]])
            }
            ast::InsertSource::Values(rows) => {
                let mut bound_rows = Vec::new();
                for row in rows {
                    if row.len() > targets.len() {
                        return Err(SqlError::syntax(
                            "INSERT has more expressions than target columns",
                        ));
                    }
                    // Without a column list, fewer values fill the first columns (PostgreSQL).
                    if row.len() < targets.len() && !insert.columns.is_empty() {
                        return Err(SqlError::syntax(
                            "INSERT has more target columns than expressions",
                        ));
                    }
                    let mut bound = vec![None; schema.columns.len()];
                    for (expr, &column) in row.iter().zip(&targets) {
                        if matches!(expr, Expr::Default) {
                            continue;
                        }
                        let col = &schema.columns[column];
                        always_identity(col)?;
                        let (e, ty) = self.bind(expr, &Scope::default())?;
                        bound[column] = Some(self.assign(e, ty, col.ty, &col.name)?);
                    }
                    bound_rows.push(bound);
                }
                InsertRows::Values(bound_rows)
            }
            ast::InsertSource::Query(query) => {
                let plan = self.query(query)?;
                let mut targets = targets.clone();
                if insert.columns.is_empty() && plan.columns.len() < targets.len() {
                    targets.truncate(plan.columns.len());
                }
                if plan.columns.len() != targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has a different number of target columns than the query returns",
                    ));
                }
                for (column, &target) in plan.columns.iter().zip(&targets) {
                    let col = &schema.columns[target];
                    always_identity(col)?;
                    if !col.ty.assignable_from(column.ty) {
                        return Err(SqlError::mismatch(format!(
                            "column \"{}\" is of type {} but expression is of type {}",
                            col.name,
                            col.ty.name(),
                            column.ty.name()
                        )));
                    }
                }
                InsertRows::Query(Box::new(plan), targets)
            }
        };
        let on_conflict = match &insert.on_conflict {
            None => None,
            Some(conflict) => {
                let columns: Vec<usize> = conflict
                    .columns
                    .iter()
                    .map(|name| schema.column(name).ok_or_else(|| SqlError::undefined_column(name)))
                    .collect::<SqlResult<_>>()?;
                let index = if columns.is_empty() || columns == schema.primary_key {
                    if schema.primary_key.is_empty() {
                        return Err(SqlError::new(
                            "42P10",
                            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                        ));
                    }
                    None
                } else {
                    let at = schema.indexes.iter().position(|i| i.unique && i.columns == columns).ok_or_else(|| {
                        SqlError::new("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
                    })?;
                    Some(at)
                };
                let action = match &conflict.action {
                    ast::ConflictAction::Nothing => ConflictAction::Nothing,
                    ast::ConflictAction::Update { assignments, filter } => {
                        if conflict.columns.is_empty() {
                            return Err(SqlError::new(
                                "42601",
                                "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                            ));
                        }
                        let mut scope = Scope::default();
                        scope.push(
                            insert.table.alias.clone().unwrap_or_else(|| insert.table.name.clone()),
                            table_columns(&table),
                        )?;
                        scope.push("excluded".into(), table_columns(&table))?;
                        let assignments = self.assignments(assignments, &table, &scope)?;
                        let filter = match filter {
                            Some(f) => {
                                let (b, t) = self.bind(f, &scope)?;
                                Some(self.expect_bool(b, t, "WHERE")?.0)
                            }
                            None => None,
                        };
                        ConflictAction::Update { assignments, filter }
                    }
                };
                Some(ConflictPlan { index, action })
            }
        };
        let mut scope = Scope::default();
        scope.push(
            insert.table.alias.clone().unwrap_or_else(|| insert.table.name.clone()),
            table_columns(&table),
        )?;
        let (returning, returning_moves, columns) =
            self.returning(&insert.returning, &table, &scope)?;
        // Parameter types only go from unknown to known, so what they are now they stay.
        let conformed = match &rows {
            InsertRows::Values(rows) => rows
                .iter()
                .map(|row| {
                    row.iter()
                        .zip(&table.types)
                        .map(|(expr, ty)| {
                            matches!(expr, Some(BExpr::Param(at)) if self.params.get(*at) == Some(ty))
                        })
                        .collect()
                })
                .collect(),
            InsertRows::Query(..) => Vec::new(),
        };
        let foreign = self.foreign_keys(&table)?;
        let checks = self.check_exprs(&table)?;
        Ok(InsertPlan {
            foreign,
            checks,
            table: Arc::clone(&table),
            rows,
            conformed,
            defaults,
            on_conflict,
            returning,
            returning_moves,
            columns,
            subqueries: std::mem::take(&mut self.subqueries),
        })
    }

    pub(super) fn assignments(
        &mut self,
        list: &[(String, Expr)],
        table: &TableInfo,
        scope: &Scope,
    ) -> SqlResult<Vec<(usize, BExpr)>> {
        let defaults = self.defaults(table)?;
        let mut out: Vec<(usize, BExpr)> = Vec::new();
        for (name, expr) in list {
            let at = table.schema.column(name).ok_or_else(|| {
                SqlError::undefined_column(&format!("{name}\" of relation \"{}", table.schema.name))
            })?;
            if out.iter().any(|(c, _)| *c == at) {
                return Err(SqlError::new(
                    "42601",
                    format!("multiple assignments to same column \"{name}\""),
                ));
            }
            let column = &table.schema.columns[at];
            let bound = if matches!(expr, Expr::Default) {
                defaults[at].clone().unwrap_or(BExpr::Const(Value::Null))
            } else {
                if column.identity == Some(crate::ast::Identity::Always) {
                    return Err(SqlError::new(
                        "428C9",
                        format!("column \"{name}\" can only be updated to DEFAULT"),
                    ));
                }
                let (e, ty) = self.bind(expr, scope)?;
                self.assign(e, ty, column.ty, &column.name)?
            };
            out.push((at, bound));
        }
        Ok(out)
    }

    pub(super) fn modify(
        &mut self,
        table_ref: &ast::TableRef,
        filter: Option<&Expr>,
        assignments: Option<&[(String, Expr)]>,
        returning: &[ast::SelectItem],
    ) -> SqlResult<ModifyPlan> {
        let table = self.written_table(&table_ref.name)?;
        let mut scope = Scope::default();
        scope.push(
            table_ref.alias.clone().unwrap_or_else(|| table_ref.name.clone()),
            table_columns(&table),
        )?;
        let mut conjuncts = Vec::new();
        if let Some(filter) = filter {
            let (bound, ty) = self.bind(filter, &scope)?;
            split_conjuncts(self.expect_bool(bound, ty, "WHERE")?.0, &mut conjuncts);
        }
        let (path, implied) =
            choose_path(&table, 0, &conjuncts, &self.params, &table.types, &|other: &BExpr| {
                other.column_bound() == 0
            });
        let assignments_given = assignments;
        let assignments = match assignments {
            Some(list) => self.assignments(list, &table, &scope)?,
            None => Vec::new(),
        };
        let changes_key = assignments.iter().any(|(c, _)| table.schema.primary_key.contains(c));
        let keeps_index_keys = !assignments
            .iter()
            .any(|(c, _)| table.schema.indexes.iter().any(|index| index.columns.contains(c)));
        let uses_primary_key =
            matches!(path, Path::Point(_) | Path::Points { .. } | Path::Range { index: None, .. });
        let (returning, returning_moves, columns) = self.returning(returning, &table, &scope)?;
        let width = table.schema.columns.len();
        let filter = join_conjuncts(
            conjuncts
                .iter()
                .enumerate()
                .filter(|(at, _)| !implied.contains(at))
                .map(|(_, conjunct)| conjunct.clone())
                .collect(),
        );
        let recheck = if uses_primary_key { None } else { join_conjuncts(conjuncts.clone()) };
        let foreign = self.foreign_keys(&table)?;
        let checks = self.check_exprs(&table)?;
        let reapplies = foreign.is_none()
            && checks.is_empty()
            && assignments_given.is_some()
            && matches!(path, Path::Point(_))
            && filter.is_none()
            && recheck.is_none()
            && returning.is_empty()
            && self.subqueries.is_empty()
            && !changes_key
            && !assignments.iter().any(|(_, expr)| contains_volatile(expr));
        // The scan reads the filter's columns; each changed row, what the statement reads.
        let mut wanted = vec![false; width];
        let mut decode = vec![false; width];
        let mark = |expr: &BExpr, into: &mut Vec<bool>| {
            expr.columns(&mut |at| {
                if at < width {
                    into[at] = true;
                }
            })
        };
        for expr in filter.iter() {
            mark(expr, &mut wanted);
        }
        for expr in filter.iter().chain(&recheck).chain(&returning) {
            mark(expr, &mut decode);
        }
        for expr in assignments.iter().map(|(_, e)| e).chain(checks.iter().map(|(_, e)| e)) {
            mark(expr, &mut decode);
        }
        if changes_key {
            for &column in &table.schema.primary_key {
                decode[column] = true;
            }
        }
        if foreign.is_some() {
            decode.iter_mut().for_each(|column| *column = true);
        }
        Ok(ModifyPlan {
            foreign,
            checks,
            access: Access {
                table: Arc::clone(&table),
                offset: 0,
                path,
                kind: JoinKind::Inner,
                on: None,
                wanted: Wanted::marked(wanted, &table.types),
                implied: join_conjuncts(implied.iter().map(|at| conjuncts[*at].clone()).collect()),
                derived: None,
            },
            filter,
            recheck,
            decode: Arc::new(Wanted::marked(decode, &table.types)),
            reapplies,
            delete: assignments_given.is_none(),
            assignments: assignments.into(),
            returning,
            returning_moves,
            columns,
            subqueries: std::mem::take(&mut self.subqueries),
            changes_key,
            keeps_index_keys,
        })
    }
}

/// Refuses a value given for a `GENERATED ALWAYS AS IDENTITY` column (PostgreSQL's 428C9).
fn always_identity(column: &crate::catalog::ColumnSchema) -> SqlResult<()> {
    if column.identity == Some(crate::ast::Identity::Always) {
        let mut error = SqlError::new(
            "428C9",
            format!("cannot insert a non-DEFAULT value into column \"{}\"", column.name),
        );
        error.detail = Some(format!(
            "Column \"{}\" is an identity column defined as GENERATED ALWAYS.",
            column.name
        ));
        return Err(error);
    }
    Ok(())
}
