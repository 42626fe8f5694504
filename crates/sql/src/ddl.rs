//! DDL: run inside the session's transaction with the schema lock held exclusively. Catalog
//! rows are written through the engine transaction; engine tables are created at once and
//! dropped at commit, and a rollback puts the previous catalog entries back. ALTER TABLE is in
//! `ddl/alter.rs`.

mod alter;
mod check;
mod comment;
mod foreign;
pub(crate) mod sequence;
mod view;

use crate::ast::{CreateTable, Statement};
use crate::catalog::{CATALOG_TABLE, ColumnSchema, IndexSchema, Sequence, TableInfo, TableSchema};
use crate::codec::{KeyFormat, Wanted, encode_key};
use crate::error::{SqlError, SqlResult};
use crate::session::{Session, Undo};
use engram_engine::Direction;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

/// How a rebuild changes a table.
pub(crate) enum Rebuild {
    AddIndex(IndexSchema),
    DropIndex(String),
    Truncate,
    PrimaryKey(Vec<usize>),
}

impl Session {
    pub(crate) fn run_ddl(&mut self, statement: &Statement) -> SqlResult<String> {
        match statement {
            Statement::CreateTable(create) => self.create_table(create),
            Statement::CreateView(create) => self.create_view(create),
            Statement::CreateSequence(create) => self.create_sequence(create),
            Statement::AlterSequence { name, if_exists, ty, options, rename } => {
                self.alter_sequence(name, *if_exists, *ty, options, rename.as_deref())
            }
            Statement::DropSequence { names, if_exists, cascade } => {
                self.drop_sequences(names, *if_exists, *cascade)
            }
            Statement::DropView { names, if_exists, cascade } => {
                self.drop_views(names, *if_exists, *cascade)
            }
            Statement::Comment { kind, name, text } => {
                self.comment_on(*kind, name, text.as_deref())
            }
            Statement::DropTable { names, if_exists, cascade } => {
                for name in names {
                    if self.db.catalog.read().views.contains_key(name) {
                        return Err(SqlError::new(
                            "42809",
                            format!("\"{name}\" is not a table (use DROP VIEW to remove a view)"),
                        ));
                    }
                    if self.db.catalog.read().tables.contains_key(name) {
                        self.drop_dependents(name, *cascade)?;
                        self.drop_referencing_keys(name, names, *cascade)?;
                        self.drop_table(name)?;
                        self.forget_comments(name)?;
                    } else if *if_exists {
                        self.notice(format!("table \"{name}\" does not exist, skipping"));
                    } else {
                        return Err(SqlError::new(
                            "42P01",
                            format!("table \"{name}\" does not exist"),
                        ));
                    }
                }
                Ok("DROP TABLE".into())
            }
            Statement::CreateIndex(create) => {
                let table = self.db.catalog.read().table(&create.table)?;
                let mut columns = Vec::new();
                for name in &create.columns {
                    columns.push(
                        table
                            .schema
                            .column(name)
                            .ok_or_else(|| SqlError::undefined_column(name))?,
                    );
                }
                let name = create.name.clone().unwrap_or_else(|| {
                    format!(
                        "{}_{}_{}",
                        table.schema.name,
                        create.columns.join("_"),
                        if create.unique { "key" } else { "idx" }
                    )
                });
                if self.relation_exists(&name) {
                    if create.if_not_exists {
                        self.notice(format!("relation \"{name}\" already exists, skipping"));
                        return Ok("CREATE INDEX".into());
                    }
                    return Err(SqlError::new(
                        "42P07",
                        format!("relation \"{name}\" already exists"),
                    ));
                }
                self.rebuild(
                    &table,
                    Rebuild::AddIndex(IndexSchema { name, columns, unique: create.unique }),
                )?;
                Ok("CREATE INDEX".into())
            }
            Statement::DropIndex { names, if_exists } => {
                for name in names {
                    let owner = self.db.catalog.read().index_table(name);
                    match owner {
                        Some(table)
                            if table.schema.primary_name.as_deref() == Some(name.as_str()) =>
                        {
                            return Err(SqlError::new(
                                "2BP01",
                                format!(
                                    "cannot drop index {name} because constraint {name} on table {} requires it",
                                    table.schema.name
                                ),
                            ));
                        }
                        Some(table) => self.rebuild(&table, Rebuild::DropIndex(name.clone()))?,
                        None if *if_exists => {
                            self.notice(format!("index \"{name}\" does not exist, skipping"))
                        }
                        None => {
                            return Err(SqlError::new(
                                "42704",
                                format!("index \"{name}\" does not exist"),
                            ));
                        }
                    }
                }
                Ok("DROP INDEX".into())
            }
            Statement::Truncate { tables } => {
                let mut infos = Vec::new();
                for name in tables {
                    infos.push(self.db.catalog.read().table(name)?);
                    self.check_truncate(name, tables)?;
                }
                for table in infos {
                    self.rebuild(&table, Rebuild::Truncate)?;
                }
                Ok("TRUNCATE TABLE".into())
            }
            Statement::AlterTable(alter) => self.alter_table(alter),
            _ => Err(SqlError::new("XX000", "not a DDL statement")),
        }
    }

    pub(crate) fn notice(&mut self, message: String) {
        self.notices.push(crate::error::Notice::info(message));
    }

    pub(crate) fn relation_exists(&self, name: &str) -> bool {
        let catalog = self.db.catalog.read();
        catalog.tables.contains_key(name)
            || catalog.views.contains_key(name)
            || catalog.sequence_defs.contains_key(name)
            || catalog.index_table(name).is_some()
    }

    /// Writes (or with `None` deletes) a table's catalog row in the session's transaction,
    /// and notes it for the catalog log at commit (`SqlDb::log_catalog_rows`).
    pub(crate) fn write_catalog_row(
        &mut self,
        name: &str,
        schema: Option<&TableSchema>,
    ) -> SqlResult<()> {
        let value = schema
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| SqlError::new("XX000", e.to_string()))?;
        self.write_catalog_entry(format!("table:{name}").into_bytes(), value)
    }

    /// Writes (or with `None` deletes) the catalog row `key` holding `object` as JSON.
    pub(crate) fn write_catalog_json<T: serde::Serialize>(
        &mut self,
        key: String,
        object: Option<&T>,
    ) -> SqlResult<()> {
        let value = object
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| SqlError::new("XX000", e.to_string()))?;
        self.write_catalog_entry(key.into_bytes(), value)
    }

    /// Writes (or with `None` deletes) the catalog row `key` in the session's transaction, and
    /// notes it for the catalog log at commit.
    pub(crate) fn write_catalog_entry(
        &mut self,
        key: Vec<u8>,
        value: Option<Vec<u8>>,
    ) -> SqlResult<()> {
        let catalog_table = self.db.database().table(CATALOG_TABLE)?;
        let mut txn = self.worker.txn()?;
        match &value {
            Some(bytes) => txn.put(&catalog_table, &key, bytes)?,
            None => {
                txn.delete(&catalog_table, &key)?;
            }
        }
        self.catalog_rows.retain(|(written, _)| *written != key);
        self.catalog_rows.push((key, value));
        Ok(())
    }

    pub(crate) fn install(
        &mut self,
        name: &str,
        info: Option<Arc<TableInfo>>,
        created_engine: Option<String>,
    ) {
        let mut catalog = self.db.catalog.write();
        catalog.version += 1;
        let previous = match info {
            Some(info) => {
                info.since.store(catalog.version, std::sync::atomic::Ordering::Release);
                info.publish_layout();
                catalog.tables.insert(name.to_string(), info)
            }
            None => catalog.tables.remove(name),
        };
        self.db.catalog_version.store(catalog.version, std::sync::atomic::Ordering::Release);
        self.undo.push(Undo::Table { name: name.to_string(), previous, created_engine });
    }

    fn create_table(&mut self, create: &CreateTable) -> SqlResult<String> {
        if create.temporary {
            return self.create_temp_table(create);
        }
        if self.db.catalog.read().tables.contains_key(&create.name)
            || self.relation_exists(&create.name)
        {
            if create.if_not_exists {
                self.notice(format!("relation \"{}\" already exists, skipping", create.name));
                return Ok("CREATE TABLE".into());
            }
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{}\" already exists", create.name),
            ));
        }
        if create.name.contains('#') || create.name.starts_with("_engram") {
            return Err(SqlError::new("42602", format!("invalid table name \"{}\"", create.name)));
        }
        if let Some((schema, _)) = create.name.split_once('.') {
            return Err(SqlError::new(
                "42501",
                format!(
                    "permission denied to create \"{}\": schema {schema} holds system views",
                    create.name
                ),
            ));
        }
        self.create_table_named(create)
    }

    /// CREATE TABLE once the name is known to be free and valid (a temporary table's is
    /// Engram's own, `session/temp.rs`).
    pub(crate) fn create_table_named(&mut self, create: &CreateTable) -> SqlResult<String> {
        if create.columns.is_empty() {
            return Err(SqlError::unsupported("a table without columns"));
        }
        let engine_name = self.db.catalog.write().next_engine_name(&create.name);
        let mut columns: Vec<ColumnSchema> = Vec::new();
        for def in &create.columns {
            if columns.iter().any(|c| c.name == def.name) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{}\" specified more than once", def.name),
                ));
            }
            let sequence = match def.serial {
                true => {
                    let options = def.identity.as_ref().map_or(&[][..], |(_, o)| o.as_slice());
                    Some(self.create_owned_sequence(&create.name, &def.name, def.ty, options)?)
                }
                false => None,
            };
            columns.push(ColumnSchema {
                not_null: def.not_null,
                default: def.default.clone(),
                sequence,
                identity: def.identity.as_ref().map(|(kind, _)| *kind),
                ..ColumnSchema::new(def.name.clone(), def.ty)
            });
        }
        let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        let position = |name: &str| {
            names.iter().position(|c| c == name).ok_or_else(|| SqlError::undefined_column(name))
        };
        let mut primary_names: Vec<String> =
            create.columns.iter().filter(|c| c.primary).map(|c| c.name.clone()).collect();
        if !create.primary_key.is_empty() {
            if !primary_names.is_empty() {
                return Err(SqlError::new(
                    "42P16",
                    format!("multiple primary keys for table \"{}\" are not allowed", create.name),
                ));
            }
            primary_names = create.primary_key.clone();
        }
        if primary_names.len() > 1 && create.columns.iter().filter(|c| c.primary).count() > 1 {
            return Err(SqlError::new(
                "42P16",
                format!("multiple primary keys for table \"{}\" are not allowed", create.name),
            ));
        }
        let mut primary_key = Vec::new();
        for name in &primary_names {
            let at = position(name)?;
            if primary_key.contains(&at) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{name}\" appears twice in primary key constraint"),
                ));
            }
            primary_key.push(at);
        }
        for &at in &primary_key {
            columns[at].not_null = true;
        }
        let mut indexes = Vec::new();
        let mut uniques: Vec<Vec<String>> =
            create.columns.iter().filter(|c| c.unique).map(|c| vec![c.name.clone()]).collect();
        uniques.extend(create.uniques.iter().cloned());
        for unique in uniques {
            let positions =
                unique.iter().map(|name| position(name)).collect::<SqlResult<Vec<_>>>()?;
            if positions == primary_key {
                continue;
            }
            indexes.push(IndexSchema {
                name: format!("{}_{}_key", create.name, unique.join("_")),
                columns: positions,
                unique: true,
            });
        }
        let mut schema = TableSchema {
            name: create.name.clone(),
            engine_name: engine_name.clone(),
            version: 1,
            columns,
            primary_key,
            indexes,
            primary_name: (!primary_names.is_empty()).then(|| format!("{}_pkey", create.name)),
            key_format: KeyFormat::Compact,
            layouts: Vec::new(),
            types_from: 0,
            foreign_keys: Vec::new(),
            checks: Vec::new(),
        };
        for def in &create.foreign_keys {
            let fk = self.resolve_foreign_key(&schema, def)?;
            schema.foreign_keys.push(fk);
        }
        schema.checks = check::name_checks(&schema, &create.checks)?;
        let info = self.install_new(schema, None)?;
        self.validate_checks(&info, &[], false)?;
        Ok("CREATE TABLE".into())
    }

    /// Per column of `schema`, the sequence of a SERIAL column.
    pub(crate) fn sequences_of(&self, schema: &TableSchema) -> Vec<Option<Arc<Sequence>>> {
        let mut catalog = self.db.catalog.write();
        schema
            .columns
            .iter()
            .map(|c| c.sequence.as_ref().map(|key| catalog.sequence_of_key(key)))
            .collect()
    }

    /// Creates the engine table of `schema`, writes its catalog row and installs it.
    pub(crate) fn install_new(
        &mut self,
        schema: TableSchema,
        rowid: Option<Arc<AtomicI64>>,
    ) -> SqlResult<Arc<TableInfo>> {
        schema.check_key_types()?;
        let engine = self.db.database().create_table(schema.engine_spec())?;
        let created = schema.engine_name.clone();
        if let Err(error) = self.write_catalog_row(&schema.name.clone(), Some(&schema)) {
            let _ = self.db.database().drop_table(&created);
            return Err(error);
        }
        let sequences = self.sequences_of(&schema);
        let rowid = rowid.unwrap_or_else(|| Arc::new(AtomicI64::new(1)));
        let info = Arc::new(TableInfo::new(schema, engine, rowid, sequences, None));
        self.install(&info.schema.name.clone(), Some(Arc::clone(&info)), Some(created));
        Ok(info)
    }

    pub(crate) fn drop_table(&mut self, name: &str) -> SqlResult<()> {
        let table = self.db.catalog.read().table(name)?;
        self.drop_owned_sequences(name)?;
        self.write_catalog_row(name, None)?;
        self.install(name, None, None);
        self.drop_at_commit.push(table.schema.engine_name.clone());
        Ok(())
    }

    /// Visits up to `limit` (key, row) pairs of `table`, in key order, as this transaction
    /// sees them, until `visit` returns false.
    pub(crate) fn scan_table(
        &mut self,
        table: &TableInfo,
        limit: usize,
        visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> SqlResult<()> {
        let mut txn = self.worker.txn()?;
        txn.scan(
            &table.engine,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            limit,
            visit,
        )?;
        Ok(())
    }

    /// Every (key, row) of `table` as this transaction sees it, collected first: the scan
    /// borrows the transaction that then writes them elsewhere.
    pub(crate) fn table_rows(&mut self, table: &TableInfo) -> SqlResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut rows = Vec::new();
        self.scan_table(table, usize::MAX, |key, row| {
            rows.push((key.to_vec(), row.to_vec()));
            true
        })?;
        Ok(rows)
    }

    /// Builds a new generation of `table` with a changed schema, copying its rows (in this
    /// transaction, so they include its own writes); the old generation is dropped at commit.
    pub(crate) fn rebuild(&mut self, table: &Arc<TableInfo>, change: Rebuild) -> SqlResult<()> {
        let mut schema = table.schema.clone();
        schema.engine_name = self.db.catalog.write().next_engine_name(&schema.name);
        let mut copy = true;
        let mut rekey = false;
        match change {
            Rebuild::AddIndex(index) => schema.indexes.push(index),
            Rebuild::DropIndex(name) => schema.indexes.retain(|i| i.name != name),
            // Rebuilds that write every key anew move a table created before compact keys to
            // them; the others copy the keys as they are, so the format stays.
            Rebuild::Truncate => {
                copy = false;
                schema.key_format = KeyFormat::Compact;
            }
            Rebuild::PrimaryKey(columns) => {
                schema.key_format = KeyFormat::Compact;
                for &c in &columns {
                    schema.columns[c].not_null = true;
                }
                schema.primary_key = columns;
                schema.primary_name = Some(format!("{}_pkey", schema.name));
                rekey = true;
            }
        }
        let rows = if copy { self.table_rows(table)? } else { Vec::new() };
        let rowid = (!rekey && schema.primary_key.is_empty()).then(|| Arc::clone(&table.rowid));
        let info = self.install_new(schema, rowid)?;
        let mut txn = self.worker.txn()?;
        let (mut values, mut upgraded) = (Vec::new(), Vec::new());
        for (mut key, row) in rows {
            // Rows of older schema versions are written in the newest, so that the new
            // generation's indexes read the values they stand for.
            let row = table.upgrade(&row, &mut upgraded)?;
            if rekey {
                info.decode(row, &Wanted::ALL, &mut values)?;
                key.clear();
                for &c in &info.schema.primary_key {
                    if values[c].is_null() {
                        return Err(SqlError::new(
                            "23502",
                            format!(
                                "column \"{}\" of relation \"{}\" contains null values",
                                info.schema.columns[c].name, info.schema.name
                            ),
                        ));
                    }
                    encode_key(info.schema.key_format, info.types[c], &values[c], &mut key);
                }
                // The row bytes stay as they are: the columns did not change.
            }
            match txn.insert(&info.engine, &key, row) {
                Ok(()) => {}
                Err(engram_engine::Error::DuplicateKey { index, .. }) => {
                    return Err(duplicate_error(&info, index, row));
                }
                Err(error) => return Err(error.into()),
            }
        }
        self.drop_at_commit.push(table.schema.engine_name.clone());
        Ok(())
    }
}

/// PostgreSQL's error for a unique index that cannot be built over the rows: `row` is one
/// whose key was found twice.
pub(crate) fn duplicate_error(info: &TableInfo, index: Option<String>, row: &[u8]) -> SqlError {
    let columns = match info.schema.indexes.iter().find(|i| index.as_ref() == Some(&i.name)) {
        Some(index) => index.columns.clone(),
        None => info.schema.primary_key.clone(),
    };
    let name = index.or_else(|| info.schema.primary_name.clone()).unwrap_or_default();
    let error = SqlError::new("23505", format!("could not create unique index \"{name}\""));
    let mut values = Vec::new();
    if info.decode(row, &Wanted::ALL, &mut values).is_err() {
        return error;
    }
    let names: Vec<&str> = columns.iter().map(|&c| info.schema.columns[c].name.as_str()).collect();
    let texts: Vec<String> = columns
        .iter()
        .map(|&c| values[c].to_text(info.types[c]).unwrap_or_else(|| "null".into()))
        .collect();
    error.with_detail(format!("Key ({})=({}) is duplicated.", names.join(", "), texts.join(", ")))
}
