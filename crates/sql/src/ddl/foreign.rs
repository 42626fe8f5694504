//! Foreign keys in DDL: resolving a key against the referenced table (CREATE TABLE, ALTER
//! TABLE ... ADD [CONSTRAINT] FOREIGN KEY, ADD COLUMN ... REFERENCES), checking the rows a
//! key is added over, and what the keys forbid of other DDL (dropping or truncating a
//! referenced table, dropping a referenced column or key). Enforcement is `exec/foreign.rs`.

use crate::ast::{FkAction, ForeignKeyDef};
use crate::catalog::{ForeignKeySchema, TableInfo, TableSchema};
use crate::error::{SqlError, SqlResult};
use crate::session::Session;
use crate::types::Type;
use std::sync::Arc;

fn positions(schema: &TableSchema, names: &[String]) -> SqlResult<Vec<usize>> {
    names
        .iter()
        .map(|name| {
            schema.column(name).ok_or_else(|| {
                SqlError::new(
                    "42703",
                    format!(
                        "column \"{name}\" referenced in foreign key constraint does not exist"
                    ),
                )
            })
        })
        .collect()
}

impl Session {
    /// Resolves the foreign key `def` of the table `child` (the schema as it will be): the
    /// referenced table (`child` itself when it names it), its primary key when no columns are
    /// given, and a primary key or unique index over exactly the referenced columns.
    pub(crate) fn resolve_foreign_key(
        &self,
        child: &TableSchema,
        def: &ForeignKeyDef,
    ) -> SqlResult<ForeignKeySchema> {
        if def.on_delete == FkAction::SetDefault || def.on_update == FkAction::SetDefault {
            return Err(SqlError::unsupported("ON DELETE or ON UPDATE SET DEFAULT"));
        }
        let loaded;
        let parent: &TableSchema = if def.table == child.name {
            child
        } else {
            let name = self.resolve_table(&def.table);
            loaded = self.ddl_table(&name)?;
            if loaded.system.is_some() {
                return Err(SqlError::new(
                    "42809",
                    format!("referenced relation \"{}\" is not a table", def.table),
                ));
            }
            &loaded.schema
        };
        let columns = positions(child, &def.columns)?;
        let ref_columns = if def.ref_columns.is_empty() {
            if parent.primary_key.is_empty() {
                return Err(SqlError::new(
                    "42704",
                    format!("there is no primary key for referenced table \"{}\"", def.table),
                ));
            }
            parent.primary_key.clone()
        } else {
            positions(parent, &def.ref_columns)?
        };
        if columns.len() != ref_columns.len() {
            return Err(SqlError::new(
                "42830",
                "number of referencing and referenced columns for foreign key disagree",
            ));
        }
        let same =
            |a: &[usize]| a.len() == ref_columns.len() && a.iter().all(|c| ref_columns.contains(c));
        let unique = same(&parent.primary_key)
            || parent.indexes.iter().any(|index| index.unique && same(&index.columns));
        if !unique {
            return Err(SqlError::new(
                "42830",
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    def.table
                ),
            ));
        }
        let name = def.name.clone().unwrap_or_else(|| {
            let names: Vec<&str> =
                columns.iter().map(|&c| child.columns[c].name.as_str()).collect();
            format!("{}_{}_fkey", child.name, names.join("_"))
        });
        for (&column, &referenced) in columns.iter().zip(&ref_columns) {
            let (from, to) = (child.columns[column].ty, parent.columns[referenced].ty);
            if Type::common(from, to).is_none() {
                let mut error = SqlError::new(
                    "42804",
                    format!("foreign key constraint \"{name}\" cannot be implemented"),
                );
                error.detail = Some(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                    child.columns[column].name,
                    parent.columns[referenced].name,
                    from.name(),
                    to.name()
                ));
                return Err(error);
            }
        }
        if child.foreign_keys.iter().any(|fk| fk.name == name)
            || child.primary_name.as_deref() == Some(name.as_str())
            || child.indexes.iter().any(|index| index.name == name)
        {
            return Err(SqlError::new(
                "42710",
                format!("constraint \"{name}\" for relation \"{}\" already exists", child.name),
            ));
        }
        Ok(ForeignKeySchema {
            name,
            columns,
            table: if def.table == child.name {
                child.name.clone()
            } else {
                self.resolve_table(&def.table)
            },
            ref_columns,
            on_delete: def.on_delete,
            on_update: def.on_update,
            deferrable: def.deferrable,
            match_full: def.match_full,
        })
    }

    /// The foreign keys of other tables that reference `table`: (referencing table, key).
    pub(crate) fn referencing(&self, table: &str) -> Vec<(String, ForeignKeySchema)> {
        let catalog = self.db.catalog.read();
        let mut found: Vec<(String, ForeignKeySchema)> = catalog
            .tables
            .values()
            .filter(|t| t.schema.name != table)
            .flat_map(|t| {
                t.schema
                    .foreign_keys
                    .iter()
                    .filter(|fk| fk.table == table)
                    .map(|fk| (t.schema.name.clone(), fk.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        found.sort_by(|a, b| (&a.0, &a.1.name).cmp(&(&b.0, &b.1.name)));
        found
    }

    /// Refuses to drop `table` while a table not dropped with it (`dropped`) references it,
    /// unless `cascade`, which drops those keys (PostgreSQL's 2BP01 and its notice).
    pub(crate) fn drop_referencing_keys(
        &mut self,
        table: &str,
        dropped: &[String],
        cascade: bool,
    ) -> SqlResult<()> {
        let keys: Vec<(String, ForeignKeySchema)> = self
            .referencing(table)
            .into_iter()
            .filter(|(child, _)| !dropped.contains(child))
            .collect();
        let Some((child, fk)) = keys.first() else { return Ok(()) };
        if !cascade {
            let mut error = SqlError::new(
                "2BP01",
                format!("cannot drop table {table} because other objects depend on it"),
            );
            error.detail =
                Some(format!("constraint {} on table {child} depends on table {table}", fk.name));
            return Err(error);
        }
        for (child, fk) in keys {
            self.notice(format!("drop cascades to constraint {} on table {child}", fk.name));
            self.drop_foreign_key(&child, &fk.name)?;
        }
        Ok(())
    }

    /// Refuses to truncate `table` while a table not truncated with it references it.
    pub(crate) fn check_truncate(&self, table: &str, truncated: &[String]) -> SqlResult<()> {
        if let Some((child, _)) =
            self.referencing(table).into_iter().find(|(child, _)| !truncated.contains(child))
        {
            let mut error = SqlError::new(
                "0A000",
                "cannot truncate a table referenced in a foreign key constraint",
            );
            error.detail = Some(format!("Table \"{child}\" references \"{table}\"."));
            return Err(error);
        }
        Ok(())
    }

    /// Refuses a change to `table` that would take away what another table's foreign key
    /// references: `columns` (a dropped column, a dropped key), or the table's name.
    pub(crate) fn check_referenced(&self, table: &TableSchema, columns: &[usize]) -> SqlResult<()> {
        if let Some((child, fk)) = self.referencing(&table.name).into_iter().find(|(_, fk)| {
            columns.is_empty() || fk.ref_columns.iter().any(|c| columns.contains(c))
        }) {
            let mut error = SqlError::new(
                "2BP01",
                format!("cannot change {} because other objects depend on it", table.name),
            );
            error.detail = Some(format!("constraint {} on table {child} depends on it", fk.name));
            return Err(error);
        }
        Ok(())
    }

    /// Fails with 23503 if a row of `table` references no row under `fk` (a key added to a
    /// table that has rows).
    pub(crate) fn check_existing_references(
        &mut self,
        table: &Arc<TableInfo>,
        fk: &ForeignKeySchema,
    ) -> SqlResult<()> {
        let parent = match fk.table == table.schema.name {
            true => Arc::clone(table),
            false => self.ddl_table(&fk.table)?,
        };
        let mut rows = Vec::new();
        self.scan_table(table, usize::MAX, |_, row| {
            rows.push(row.to_vec());
            true
        })?;
        let outgoing = crate::plan::foreign::Outgoing {
            name: fk.name.clone(),
            columns: fk.columns.clone(),
            index: crate::plan::foreign::unique_index(&parent, &fk.ref_columns),
            parent,
            ref_columns: fk.ref_columns.clone(),
            match_full: fk.match_full,
        };
        let mut keys = crate::plan::foreign::ForeignKeys::default();
        keys.tables.insert(
            table.schema.name.clone(),
            crate::plan::foreign::TableKeys { outgoing: vec![outgoing], incoming: Vec::new() },
        );
        let mut txn = self.worker.txn()?;
        let mut values = Vec::new();
        for row in rows {
            table.decode(&row, &crate::codec::Wanted::ALL, &mut values)?;
            crate::exec::check_references(&mut txn, &keys, table, &values, None)?;
        }
        Ok(())
    }
}

impl Session {
    /// Drops the foreign key `name` of table `table` (a cascade of DROP TABLE).
    pub(crate) fn drop_foreign_key(&mut self, table: &str, name: &str) -> SqlResult<()> {
        let action =
            crate::ast::AlterAction::DropConstraint { name: name.to_string(), if_exists: false };
        self.alter_one(table, &action).map(|_| ())
    }
}
