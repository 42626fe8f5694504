//! CHECK constraints in DDL: naming them as PostgreSQL does, binding them when they are made
//! (an expression over the table's columns, boolean, without aggregates), checking the rows
//! a constraint is added over, and keeping them when columns are renamed or dropped. The
//! executor tests each row written (`exec::check_row`).

use crate::ast::CheckDef;
use crate::catalog::{CheckSchema, TableInfo, TableSchema};
use crate::codec::Wanted;
use crate::error::{SqlError, SqlResult};
use crate::expr::Context;
use crate::plan::Binder;
use crate::session::Session;
use std::sync::Arc;

/// The constraints of `defs` for table `schema`, named: a column's `<table>_<column>_check`,
/// a table's `<table>_check`, numbered from 1 when the name is taken.
pub(crate) fn name_checks(schema: &TableSchema, defs: &[CheckDef]) -> SqlResult<Vec<CheckSchema>> {
    let mut out: Vec<CheckSchema> = Vec::new();
    let taken = |name: &str, out: &[CheckSchema]| {
        schema.checks.iter().chain(out).any(|c| c.name == name)
            || schema.foreign_keys.iter().any(|fk| fk.name == name)
            || schema.primary_name.as_deref() == Some(name)
            || schema.indexes.iter().any(|index| index.name == name)
    };
    for def in defs {
        let name = match &def.name {
            Some(name) => {
                if taken(name, &out) {
                    return Err(SqlError::new(
                        "42710",
                        format!(
                            "constraint \"{name}\" for relation \"{}\" already exists",
                            schema.name
                        ),
                    ));
                }
                name.clone()
            }
            None => {
                let base = match &def.column {
                    Some(column) => format!("{}_{column}_check", schema.name),
                    None => format!("{}_check", schema.name),
                };
                let mut name = base.clone();
                let mut number = 0;
                while taken(&name, &out) {
                    number += 1;
                    name = format!("{base}{number}");
                }
                name
            }
        };
        out.push(CheckSchema { name, expr: def.expr.clone() });
    }
    Ok(out)
}

impl Session {
    /// Binds `table`'s CHECK constraints and, when `rows`, tests its rows against the ones
    /// named in `only` (all when empty): 23514 if a row makes one false.
    pub(crate) fn validate_checks(
        &mut self,
        table: &Arc<TableInfo>,
        only: &[String],
        rows: bool,
    ) -> SqlResult<()> {
        let checks = {
            let catalog = self.db.catalog.read();
            Binder::new(&catalog, &[]).with_view(self.view()).check_exprs(table)?
        };
        if !rows {
            return Ok(());
        }
        let checks: Vec<_> =
            checks.into_iter().filter(|(name, _)| only.is_empty() || only.contains(name)).collect();
        if checks.is_empty() {
            return Ok(());
        }
        let mut found = Vec::new();
        self.scan_table(table, usize::MAX, |_, row| {
            found.push(row.to_vec());
            true
        })?;
        self.with_context(|cx: &Context<'_>| {
            let mut values = Vec::new();
            for row in found {
                table.decode(&row, &Wanted::ALL, &mut values)?;
                for (name, check) in &checks {
                    if matches!(check.eval(&values, cx)?, crate::types::Value::Bool(false)) {
                        return Err(SqlError::new(
                            "23514",
                            format!(
                                "check constraint \"{name}\" of relation \"{}\" is violated \
                                 by some row",
                                table.schema.name
                            ),
                        ));
                    }
                }
            }
            Ok(())
        })
    }
}

/// Keeps `schema`'s CHECK constraints through a rename of column `from` to `to`.
pub(crate) fn rename_in_checks(schema: &mut TableSchema, from: &str, to: &str) -> SqlResult<()> {
    for check in &mut schema.checks {
        let (renamed, found) = crate::parse::rename_column_in(&check.expr, from, Some(to))?;
        if found {
            check.expr = renamed;
        }
    }
    Ok(())
}

/// Drops the CHECK constraints of `schema` that read column `column` (dropped with it, as in
/// PostgreSQL).
pub(crate) fn drop_checks_of(schema: &mut TableSchema, column: &str) -> SqlResult<()> {
    let mut kept = Vec::with_capacity(schema.checks.len());
    for check in schema.checks.drain(..) {
        if !crate::parse::rename_column_in(&check.expr, column, None)?.1 {
            kept.push(check);
        }
    }
    schema.checks = kept;
    Ok(())
}
