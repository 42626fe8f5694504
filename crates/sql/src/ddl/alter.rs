//! ALTER TABLE, as X-Engine changes a schema: most actions make a new version of the table's
//! definition and touch no row. Each row says which version it was written in (its first two
//! bytes, docs/format.md); a read converts an older row to the reader's version
//! (`TableInfo::decode`: added columns read their `missing` value, dropped ones are skipped,
//! widened ones read as the wider type) and a write produces the newest. Such an action takes
//! the schema lock shared and runs in constant time whatever the table's size; its version
//! is installed when its transaction commits (`session/schema.rs`).
//!
//! What must read or rewrite the rows takes the schema lock exclusively, as other DDL does:
//! SET NOT NULL and ADD COLUMN ... NOT NULL without a default scan for NULLs; a type change
//! that is not a widening (or of a key or index column), a volatile default (evaluated per
//! row, as PostgreSQL does), and constraint and key changes write a new generation of the
//! table (`rewrite`, `Session::rebuild`).

use crate::ast::{AlterAction, AlterTable, ColumnDef};
use crate::catalog::{
    ColumnSchema, IndexSchema, TableInfo, TableSchema, dropped_name, primary_key,
};
use crate::codec::{KeyFormat, Wanted, encode_key, encode_row};
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::plan::Binder;
use crate::session::Session;
use crate::types::{Type, Value, cast};
use std::sync::Arc;

use super::Rebuild;

/// Whether a column of type `from` can become `to` without rewriting a row: every stored
/// value of `from` decodes (under its row's version) to a valid value of `to`.
fn widens(from: Type, to: Type) -> bool {
    match (from, to) {
        (Type::Int2, Type::Int4 | Type::Int8) | (Type::Int4, Type::Int8) => true,
        (Type::Float4, Type::Float8) => true,
        (Type::Varchar(n), Type::Varchar(m)) => m == 0 || (n != 0 && m >= n),
        (Type::Varchar(_) | Type::Char(_), Type::Text) => true,
        (Type::Text, Type::Varchar(0)) => true,
        (Type::Numeric { precision: p, scale: s }, Type::Numeric { precision: q, scale: t }) => {
            s == t && (q == 0 || (p != 0 && q - t >= p - s))
        }
        _ => false,
    }
}

impl Session {
    pub(crate) fn alter_table(&mut self, alter: &AlterTable) -> SqlResult<String> {
        // `ALTER TABLE seq RENAME TO name` renames a sequence, as in PostgreSQL.
        if let [AlterAction::RenameTable { to }] = alter.actions.as_slice()
            && self.db.catalog.read().sequence_defs.contains_key(&alter.table)
        {
            self.take_exclusive()?;
            self.alter_sequence(&alter.table, false, None, &[], Some(to))?;
            return Ok("ALTER TABLE".into());
        }
        let table = match self.ddl_table(&alter.table) {
            Ok(table) => table,
            Err(error) if alter.if_exists && error.code == "42P01" => {
                self.notice(format!("relation \"{}\" does not exist, skipping", alter.table));
                return Ok("ALTER TABLE".into());
            }
            Err(error) => return Err(error),
        };
        if table.system.is_some() {
            return Err(SqlError::new(
                "42501",
                format!("permission denied: \"{}\" is a system view", alter.table),
            ));
        }
        if alter.actions.iter().any(|action| !self.instant(&table, action)) {
            self.take_exclusive()?;
        }
        let mut name = alter.table.clone();
        for action in &alter.actions {
            name = self.alter_one(&name, action)?;
        }
        Ok("ALTER TABLE".into())
    }

    /// Whether `action` on `table` changes only the table's definition.
    fn instant(&self, table: &TableInfo, action: &AlterAction) -> bool {
        let keyed = |column: usize| {
            table.schema.primary_key.contains(&column)
                || table.schema.indexes.iter().any(|index| index.columns.contains(&column))
        };
        match action {
            AlterAction::AddColumn { column, foreign_key, checks, .. } => {
                foreign_key.is_none()
                    && checks.is_empty()
                    && !column.primary
                    && !column.unique
                    && !column.serial
                    && match &column.default {
                        None => !column.not_null,
                        Some(text) => {
                            self.bind_default(text, column.ty, &column.name).is_ok_and(|(_, v)| !v)
                        }
                    }
            }
            AlterAction::DropColumn { name, .. } => {
                table.schema.column(name).is_none_or(|column| !keyed(column))
            }
            AlterAction::RenameColumn { .. }
            | AlterAction::RenameTable { .. }
            | AlterAction::SetDefault { .. } => true,
            AlterAction::SetNotNull { column, not_null } => {
                !not_null
                    || table.schema.column(column).is_none_or(|c| table.schema.columns[c].not_null)
            }
            AlterAction::SetType { column, ty } => table.schema.column(column).is_none_or(|c| {
                let from = table.schema.columns[c].ty;
                from == *ty || (widens(from, *ty) && !keyed(c))
            }),
            AlterAction::AddPrimaryKey { .. }
            | AlterAction::AddUnique { .. }
            | AlterAction::AddForeignKey(_)
            | AlterAction::AddCheck(_)
            | AlterAction::DropConstraint { .. } => false,
        }
    }

    /// A default's expression bound for its column, and whether it is volatile.
    fn bind_default(&self, text: &str, ty: Type, column: &str) -> SqlResult<(BExpr, bool)> {
        let catalog = self.db.catalog.read();
        Binder::new(&catalog, &[]).with_view(self.view()).default_expr(text, ty, column)
    }

    /// Evaluates a bound default once.
    fn evaluate(&self, expr: &BExpr) -> SqlResult<Value> {
        self.with_context(|cx| expr.eval(&[], cx))
    }

    /// Runs `f` with a context to evaluate expressions of DDL in (defaults, checks): the
    /// session's sequences and transaction start, no parameters or subqueries.
    pub(super) fn with_context<T>(&self, f: impl FnOnce(&Context<'_>) -> T) -> T {
        let reserve = crate::session::sequences::SessionSequences {
            db: &self.db,
            values: &self.sequence_values,
        };
        let interrupt = crate::interrupt::Interrupt::default();
        let cx = Context {
            params: &[],
            subqueries: &[],
            derived: &[],
            correlated: None,
            outer: &[],
            now: self.txn_started,
            reserve: &reserve,
            interrupt: &interrupt,
            locks: None,
        };
        f(&cx)
    }

    /// Applies one action to the table named `name`; returns the table's name after it.
    pub(super) fn alter_one(&mut self, name: &str, action: &AlterAction) -> SqlResult<String> {
        let table = self.ddl_table(name)?;
        let old_name = self
            .pending
            .iter()
            .find(|pending| pending.name == name)
            .map_or_else(|| name.to_string(), |pending| pending.old_name.clone());
        let mut schema = table.schema.clone();
        let relation = schema.name.clone();
        let find = |schema: &TableSchema, column: &str| {
            schema.column(column).ok_or_else(|| {
                SqlError::new(
                    "42703",
                    format!("column \"{column}\" of relation \"{relation}\" does not exist"),
                )
            })
        };
        let mut new_name = name.to_string();
        match action {
            AlterAction::AddColumn { column, if_not_exists, foreign_key, checks } => {
                if schema.column(&column.name).is_some() {
                    let message = format!(
                        "column \"{}\" of relation \"{relation}\" already exists",
                        column.name
                    );
                    if *if_not_exists {
                        self.notice(format!("{message}, skipping"));
                        return Ok(new_name);
                    }
                    return Err(SqlError::new("42701", message));
                }
                self.add_column(&table, &old_name, schema, column)?;
                if let Some(fk) = foreign_key {
                    self.alter_one(&new_name, &AlterAction::AddForeignKey(fk.clone()))?;
                }
                for check in checks {
                    self.alter_one(&new_name, &AlterAction::AddCheck(check.clone()))?;
                }
                return Ok(new_name);
            }
            AlterAction::AddCheck(def) => {
                let named = super::check::name_checks(&schema, std::slice::from_ref(def))?;
                let only: Vec<String> = named.iter().map(|c| c.name.clone()).collect();
                schema.checks.extend(named);
                self.new_version(&table, &old_name, name, &new_name, schema)?;
                let altered = self.ddl_table(&new_name)?;
                self.validate_checks(&altered, &only, true)?;
                return Ok(new_name);
            }
            AlterAction::AddForeignKey(def) => {
                let fk = self.resolve_foreign_key(&schema, def)?;
                self.check_existing_references(&table, &fk)?;
                schema.foreign_keys.push(fk);
            }
            AlterAction::DropColumn { name: column, if_exists, cascade } => {
                let Some(at) = schema.column(column) else {
                    let message =
                        format!("column \"{column}\" of relation \"{relation}\" does not exist");
                    if *if_exists {
                        self.notice(format!("{message}, skipping"));
                        return Ok(new_name);
                    }
                    return Err(SqlError::new("42703", message));
                };
                if *cascade {
                    let keys: Vec<_> = self
                        .referencing(&schema.name)
                        .into_iter()
                        .filter(|(_, fk)| fk.ref_columns.contains(&at))
                        .collect();
                    for (child, fk) in keys {
                        self.notice(format!(
                            "drop cascades to constraint {} on table {child}",
                            fk.name
                        ));
                        self.drop_foreign_key(&child, &fk.name)?;
                    }
                }
                self.check_referenced(&schema, &[at])?;
                // The column's own foreign keys and checks go with it.
                schema.foreign_keys.retain(|fk| !fk.columns.contains(&at));
                super::check::drop_checks_of(&mut schema, column)?;
                let keyed = schema.primary_key.contains(&at)
                    || schema.indexes.iter().any(|index| index.columns.contains(&at));
                // Indexes and the primary key on the column go with it, as in PostgreSQL.
                schema.indexes.retain(|index| !index.columns.contains(&at));
                if schema.primary_key.contains(&at) {
                    schema.primary_key.clear();
                    schema.primary_name = None;
                }
                let dropped = &mut schema.columns[at];
                dropped.name = dropped_name(at);
                dropped.dropped = true;
                dropped.not_null = false;
                dropped.default = None;
                dropped.sequence = None;
                if keyed {
                    self.rewrite(&table, schema, &mut |_, values| {
                        values[at] = Value::Null;
                        Ok(())
                    })?;
                    return Ok(new_name);
                }
                schema.version = next_version(schema.version)?;
            }
            AlterAction::RenameColumn { from, to } => {
                let at = schema.column(from).ok_or_else(|| SqlError::undefined_column(from))?;
                if schema.column(to).is_some() {
                    return Err(SqlError::new(
                        "42701",
                        format!("column \"{to}\" of relation \"{relation}\" already exists"),
                    ));
                }
                schema.columns[at].name = to.clone();
                super::check::rename_in_checks(&mut schema, from, to)?;
                self.move_sequence_owner(&schema.name, &schema.name, Some((from, to)))?;
            }
            AlterAction::RenameTable { to } => {
                // (A temporary table's new name is Engram's own: `session/temp.rs`.)
                let temporary = to.starts_with(crate::catalog::TEMP_PREFIX);
                if !temporary && (to.contains('#') || to.starts_with("_engram") || to.contains('.'))
                {
                    return Err(SqlError::new("42602", format!("invalid table name \"{to}\"")));
                }
                if to != name && self.relation_exists(to) {
                    return Err(SqlError::new(
                        "42P07",
                        format!("relation \"{to}\" already exists"),
                    ));
                }
                if to != name {
                    if !self.referencing(&schema.name).is_empty() {
                        return Err(SqlError::unsupported(
                            "renaming a table that another table's foreign key references",
                        ));
                    }
                    // A key of the table on itself follows the name.
                    for fk in schema.foreign_keys.iter_mut().filter(|fk| fk.table == schema.name) {
                        fk.table = to.clone();
                    }
                }
                self.move_sequence_owner(&schema.name, to, None)?;
                schema.name = to.clone();
                new_name = to.clone();
            }
            AlterAction::SetDefault { column, default } => {
                let at = find(&schema, column)?;
                if let Some(text) = default {
                    self.bind_default(text, schema.columns[at].ty, column)?;
                }
                schema.columns[at].default = default.clone();
            }
            AlterAction::SetNotNull { column, not_null } => {
                let at = find(&schema, column)?;
                if !not_null && schema.primary_key.contains(&at) {
                    return Err(SqlError::new(
                        "42P16",
                        format!("column \"{column}\" is in a primary key"),
                    ));
                }
                if *not_null && !schema.columns[at].not_null {
                    self.check_no_nulls(&table, at)?;
                }
                schema.columns[at].not_null = *not_null;
            }
            AlterAction::SetType { column, ty } => {
                let at = find(&schema, column)?;
                let from = schema.columns[at].ty;
                if from == *ty {
                    return Ok(new_name);
                }
                let keyed = schema.primary_key.contains(&at)
                    || schema.indexes.iter().any(|index| index.columns.contains(&at));
                if let Some(text) = &schema.columns[at].default {
                    self.bind_default(text, *ty, column).map_err(|_| {
                        SqlError::new(
                            "42804",
                            format!(
                                "default for column \"{column}\" cannot be cast automatically to type {}",
                                ty.name()
                            ),
                        )
                    })?;
                }
                if !widens(from, *ty) || keyed {
                    if !ty.assignable_from(from) {
                        return Err(SqlError::new(
                            "42804",
                            format!(
                                "column \"{column}\" cannot be cast automatically to type {}",
                                ty.name()
                            ),
                        ));
                    }
                    schema.columns[at].ty = *ty;
                    let to = *ty;
                    self.rewrite(&table, schema, &mut |_, values| {
                        values[at] =
                            cast(std::mem::replace(&mut values[at], Value::Null), to, false)?;
                        Ok(())
                    })?;
                    return Ok(new_name);
                }
                // Rows written so far keep their layout; later ones are written wider.
                let version = next_version(schema.version)?;
                schema.layouts.push(crate::catalog::Layout {
                    from: schema.types_from,
                    types: table.types.clone(),
                });
                schema.types_from = version;
                schema.version = version;
                schema.columns[at].ty = *ty;
                // The value rows older than the column read is kept in the column's type.
                if let Some(missing) = table.missing.get(at).filter(|value| !value.is_null()) {
                    let mut bytes = Vec::new();
                    encode_row(1, &[*ty], std::slice::from_ref(missing), &mut bytes);
                    schema.columns[at].missing = Some(bytes);
                }
            }
            AlterAction::AddPrimaryKey { columns } => {
                if !schema.primary_key.is_empty() {
                    return Err(SqlError::new(
                        "42P16",
                        format!("multiple primary keys for table \"{relation}\" are not allowed"),
                    ));
                }
                let positions = positions(&schema, columns)?;
                self.rebuild(&table, Rebuild::PrimaryKey(positions))?;
                return Ok(new_name);
            }
            AlterAction::AddUnique { name: index, columns } => {
                let positions = positions(&schema, columns)?;
                let index = index
                    .clone()
                    .unwrap_or_else(|| format!("{relation}_{}_key", columns.join("_")));
                if self.relation_exists(&index) {
                    return Err(SqlError::new(
                        "42P07",
                        format!("relation \"{index}\" already exists"),
                    ));
                }
                self.rebuild(
                    &table,
                    Rebuild::AddIndex(IndexSchema {
                        name: index,
                        columns: positions,
                        unique: true,
                    }),
                )?;
                return Ok(new_name);
            }
            AlterAction::DropConstraint { name: constraint, if_exists } => {
                if let Some(at) = schema.checks.iter().position(|c| c.name == *constraint) {
                    schema.checks.remove(at);
                    self.new_version(&table, &old_name, name, &new_name, schema)?;
                    return Ok(new_name);
                }
                if let Some(at) = schema.foreign_keys.iter().position(|fk| fk.name == *constraint) {
                    schema.foreign_keys.remove(at);
                    self.new_version(&table, &old_name, name, &new_name, schema)?;
                    return Ok(new_name);
                }
                let referenced = if schema.primary_name.as_deref() == Some(constraint.as_str()) {
                    Some(schema.primary_key.clone())
                } else {
                    schema.indexes.iter().find(|i| i.name == *constraint).map(|i| i.columns.clone())
                };
                if let Some(columns) = referenced {
                    let keys = self.referencing(&schema.name);
                    let same = |a: &[usize]| {
                        a.len() == columns.len() && a.iter().all(|c| columns.contains(c))
                    };
                    if let Some((child, fk)) = keys.iter().find(|(_, fk)| same(&fk.ref_columns)) {
                        let mut error = SqlError::new(
                            "2BP01",
                            format!(
                                "cannot drop constraint {constraint} on table {relation} because                                  other objects depend on it"
                            ),
                        );
                        error.detail = Some(format!(
                            "constraint {} on table {child} depends on index {constraint}",
                            fk.name
                        ));
                        return Err(error);
                    }
                }
                if schema.primary_name.as_deref() == Some(constraint.as_str()) {
                    schema.primary_key.clear();
                    schema.primary_name = None;
                    return self.rewrite(&table, schema, &mut |_, _| Ok(())).map(|()| new_name);
                }
                if schema.indexes.iter().any(|index| index.unique && index.name == *constraint) {
                    self.rebuild(&table, Rebuild::DropIndex(constraint.clone()))?;
                    return Ok(new_name);
                }
                let message = format!(
                    "constraint \"{constraint}\" of relation \"{relation}\" does not exist"
                );
                if *if_exists {
                    self.notice(format!("{message}, skipping"));
                    return Ok(new_name);
                }
                return Err(SqlError::new("42704", message));
            }
        }
        self.new_version(&table, &old_name, name, &new_name, schema)?;
        Ok(new_name)
    }

    /// ADD COLUMN: a new version whose rows written before read the default evaluated now
    /// (or NULL); a volatile default, SERIAL, or a key on the column rewrites the table.
    fn add_column(
        &mut self,
        table: &Arc<TableInfo>,
        old_name: &str,
        mut schema: TableSchema,
        def: &ColumnDef,
    ) -> SqlResult<()> {
        let at = schema.columns.len();
        if at >= crate::catalog::MAX_COLUMNS {
            return Err(SqlError::new(
                "54011",
                format!("tables can have at most {} columns", crate::catalog::MAX_COLUMNS),
            ));
        }
        let mut column = ColumnSchema {
            not_null: def.not_null || def.primary,
            default: def.default.clone(),
            sequence: None,
            ..ColumnSchema::new(def.name.clone(), def.ty)
        };
        if def.serial {
            let options = def.identity.as_ref().map_or(&[][..], |(_, o)| o.as_slice());
            let key = self.create_owned_sequence(&schema.name, &def.name, def.ty, options)?;
            column.sequence = Some(key);
            column.identity = def.identity.as_ref().map(|(kind, _)| *kind);
        }
        let bound = match &def.default {
            Some(text) => Some(self.bind_default(text, def.ty, &def.name)?),
            None => None,
        };
        schema.columns.push(column.clone());
        if def.primary {
            if !schema.primary_key.is_empty() {
                return Err(SqlError::new(
                    "42P16",
                    format!("multiple primary keys for table \"{}\" are not allowed", schema.name),
                ));
            }
            schema.primary_key = vec![at];
            schema.primary_name = Some(format!("{}_pkey", schema.name));
        }
        if def.unique {
            schema.indexes.push(IndexSchema {
                name: format!("{}_{}_key", schema.name, def.name),
                columns: vec![at],
                unique: true,
            });
        }
        let volatile = bound.as_ref().is_some_and(|(_, volatile)| *volatile);
        if def.serial || volatile || def.primary || def.unique {
            // Each existing row takes its own value: written now, in a new generation.
            let sequence =
                column.sequence.clone().map(|key| self.db.catalog.write().sequence_of_key(&key));
            let value = match (sequence, bound) {
                (Some(sequence), _) => Some(BExpr::NextVal(sequence)),
                (None, Some((expr, _))) => Some(expr),
                (None, None) => None,
            };
            return self.rewrite(table, schema, &mut |session, values| {
                if let Some(expr) = &value {
                    values[at] = session.evaluate(expr)?;
                }
                Ok(())
            });
        }
        let missing = match &bound {
            Some((expr, _)) => self.evaluate(expr)?,
            None => Value::Null,
        };
        if missing.is_null() && column.not_null {
            self.check_empty(table, &column.name)?;
        }
        if !missing.is_null() {
            let mut bytes = Vec::new();
            encode_row(1, &[def.ty], &[missing], &mut bytes);
            column.missing = Some(bytes);
            schema.columns[at] = column;
        }
        schema.version = next_version(schema.version)?;
        let name = schema.name.clone();
        self.new_version(table, old_name, &name, &name, schema)
    }

    /// Writes the catalog row of a new version of `table` and records it.
    fn new_version(
        &mut self,
        table: &Arc<TableInfo>,
        old_name: &str,
        name: &str,
        new_name: &str,
        schema: TableSchema,
    ) -> SqlResult<()> {
        if name != new_name {
            self.write_catalog_row(name, None)?;
        }
        self.write_catalog_row(new_name, Some(&schema))?;
        let sequences = self.sequences_of(&schema);
        let info = Arc::new(table.altered(schema, sequences));
        self.put_version(table, old_name, name, new_name, info);
        Ok(())
    }

    /// Fails with 23502 if column `at` of `table` holds a NULL.
    fn check_no_nulls(&mut self, table: &Arc<TableInfo>, at: usize) -> SqlResult<()> {
        let mut marks = vec![false; table.types.len()];
        marks[at] = true;
        let wanted = Wanted::marked(marks, &table.types);
        let mut found = false;
        let mut failure = None;
        let mut values = Vec::new();
        self.scan_table(table, usize::MAX, |_, row| {
            match table.decode(row, &wanted, &mut values) {
                Ok(()) => {
                    found = values[at].is_null();
                    !found
                }
                Err(error) => {
                    failure = Some(error);
                    false
                }
            }
        })?;
        if let Some(error) = failure {
            return Err(error);
        }
        if found {
            return Err(SqlError::new(
                "23502",
                format!(
                    "column \"{}\" of relation \"{}\" contains null values",
                    table.schema.columns[at].name, table.schema.name
                ),
            ));
        }
        Ok(())
    }

    /// Fails with 23502 (naming `column`) if `table` holds a row.
    fn check_empty(&mut self, table: &Arc<TableInfo>, column: &str) -> SqlResult<()> {
        let mut any = false;
        self.scan_table(table, 1, |_, _| {
            any = true;
            false
        })?;
        if any {
            return Err(SqlError::new(
                "23502",
                format!(
                    "column \"{column}\" of relation \"{}\" contains null values",
                    table.schema.name
                ),
            ));
        }
        Ok(())
    }

    /// Writes every row of `table` into a new generation under `schema` (the exclusive lock
    /// is held): each row decoded under its own version, widened to `schema`'s columns, changed
    /// by `change`, checked against NOT NULL and encoded in the new version, under new keys
    /// when the primary key changed. The old generation is dropped at commit.
    fn rewrite(
        &mut self,
        table: &Arc<TableInfo>,
        mut schema: TableSchema,
        change: &mut dyn FnMut(&Session, &mut Vec<Value>) -> SqlResult<()>,
    ) -> SqlResult<()> {
        schema.engine_name = self.db.catalog.write().next_engine_name(&schema.name);
        schema.key_format = KeyFormat::Compact;
        // Every row is written anew: one layout, and no row misses a column.
        schema.version = next_version(schema.version).unwrap_or(1);
        schema.layouts.clear();
        schema.types_from = schema.version;
        for column in &mut schema.columns {
            column.missing = None;
        }
        let rows = self.table_rows(table)?;
        let same_rowids = schema.primary_key.is_empty() && table.schema.primary_key.is_empty();
        let info = self.install_new(schema, same_rowids.then(|| Arc::clone(&table.rowid)))?;
        let width = info.types.len();
        let mut values = Vec::new();
        // Each row's new key and bytes, made before the transaction is borrowed to write them.
        let mut written = Vec::with_capacity(rows.len());
        for (old_key, row) in rows {
            table.decode(&row, &Wanted::ALL, &mut values)?;
            values.resize(width, Value::Null);
            change(self, &mut values)?;
            for (at, column) in info.schema.columns.iter().enumerate() {
                if column.not_null && values[at].is_null() {
                    return Err(SqlError::new(
                        "23502",
                        format!(
                            "column \"{}\" of relation \"{}\" contains null values",
                            column.name, info.schema.name
                        ),
                    ));
                }
            }
            let mut key = Vec::new();
            if !info.schema.primary_key.is_empty() {
                primary_key(&info, &values, &mut key);
            } else if same_rowids {
                key = old_key;
            } else {
                let rowid = Value::Int(info.next_rowid());
                encode_key(KeyFormat::Compact, Type::Int8, &rowid, &mut key);
            }
            let mut bytes = Vec::new();
            encode_row(info.schema.version, &info.types, &values, &mut bytes);
            written.push((key, bytes));
        }
        let mut txn = self.worker.txn()?;
        for (key, bytes) in written {
            match txn.insert(&info.engine, &key, &bytes) {
                Ok(()) => {}
                Err(engram_engine::Error::DuplicateKey { index, .. }) => {
                    return Err(super::duplicate_error(&info, index, &bytes));
                }
                Err(error) => return Err(error.into()),
            }
        }
        self.drop_at_commit.push(table.schema.engine_name.clone());
        Ok(())
    }
}

/// The version after `version`: 65,535 versions of one generation of a table at most (any
/// rewrite starts again at 1).
fn next_version(version: u16) -> SqlResult<u16> {
    version.checked_add(1).ok_or_else(|| {
        SqlError::new(
            "54000",
            "the table has had 65535 schema versions since it was last rewritten: run \
             VACUUM FULL or TRUNCATE",
        )
    })
}

fn positions(schema: &TableSchema, columns: &[String]) -> SqlResult<Vec<usize>> {
    columns
        .iter()
        .map(|name| schema.column(name).ok_or_else(|| SqlError::undefined_column(name)))
        .collect()
}
