//! Schema versions a transaction sees: the catalog version it began at, its own uncommitted
//! ALTER TABLEs, and their installation when it commits; the undo of its DDL when it rolls
//! back; CREATE TABLE ... AS, which is DDL and a write in one transaction.
//!
//! An ALTER TABLE that only changes the table's definition (`ddl/alter.rs`) takes the schema
//! lock shared, as any transaction does: it neither waits for other transactions nor blocks
//! them. Its new table version stays the session's own ([`Pending`]) until the commit, which
//! installs it under `SqlDb::alter_commit`, after checking that no other ALTER of the same
//! table committed in between (40001 otherwise). A transaction that began before the install
//! keeps reading the version it began with; a write to the table fails with 40001
//! (`Binder::written_table`), as X-Engine's stale-schema writers do.

use super::{Outcome, Session, Tag, TransactionStatus};
use crate::ast::{ColumnDef, CreateTable, Insert, InsertSource, Statement, TableRef};
use crate::catalog::{Pending, TableInfo, View};
use crate::error::{SqlError, SqlResult};
use crate::plan::{Binder, Plan};
use crate::types::Type;
use engram_engine::CommitInfo;
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl Session {
    pub(super) fn ddl_statement(&mut self, statement: &Statement) -> SqlResult<Outcome> {
        if self.read_only() {
            return self.fail(SqlError::read_only_transaction(statement.command_name()));
        }
        let autocommit = self.status == TransactionStatus::Idle;
        let result = self.ensure_transaction().and_then(|()| {
            // ALTER TABLE takes the exclusive lock only for what rewrites or checks the rows
            // (`ddl/alter.rs`); its other changes are new schema versions.
            if !matches!(statement, Statement::AlterTable(_)) {
                self.take_exclusive()?;
                self.drop_orphaned_temp_tables()?;
            }
            match self.resolved_ddl(statement)? {
                Some(resolved) => self.run_ddl(&resolved),
                None => self.run_ddl(statement),
            }
        });
        match result {
            Ok(tag) => {
                if autocommit {
                    self.finish(true)?;
                }
                Ok(Outcome::Command { tag: tag.into() })
            }
            Err(error) => {
                if autocommit {
                    let _ = self.finish(false);
                    return Err(error);
                }
                self.fail(error)
            }
        }
    }

    /// What this session sees beyond the committed catalog.
    pub(crate) fn view(&self) -> View<'_> {
        let temp = (!self.temp_tables.is_empty()).then_some(&self.temp_tables);
        View { pending: &self.pending, as_of: self.as_of, temp }
    }

    /// Whether plans made now see anything but the newest committed catalog.
    pub(crate) fn viewing(&self) -> bool {
        self.viewing_at(self.db.catalog_version.load(Ordering::Acquire))
    }

    #[inline]
    pub(crate) fn viewing_at(&self, version: u64) -> bool {
        !self.pending.is_empty() || self.as_of < version
    }

    /// The table `name` for a DDL statement: the session's own version of it, never one
    /// older than the catalog's.
    pub(crate) fn ddl_table(&self, name: &str) -> SqlResult<Arc<TableInfo>> {
        match self.db.catalog.read().table_in(name, self.view())? {
            (table, true) => Ok(table),
            (_, false) => Err(SqlError::new(
                "40001",
                format!(
                    "could not serialize access: table \"{name}\" was altered after this \
                     transaction began; retry the transaction"
                ),
            )),
        }
    }

    /// Takes the schema lock exclusively (waiting for every other transaction to end). The
    /// transaction's uncommitted ALTERs go into the catalog at once: nothing else runs until
    /// it ends, and a rollback takes them out again.
    pub(crate) fn take_exclusive(&mut self) -> SqlResult<()> {
        if self.holds_exclusive {
            return Ok(());
        }
        self.db.schema_lock.lock_exclusive(self.id)?;
        self.holds_exclusive = true;
        self.as_of = u64::MAX;
        for pending in std::mem::take(&mut self.pending) {
            self.install_version(&pending.old_name, &pending.name, pending.info);
        }
        Ok(())
    }

    /// Installs a new version of table `old_name` (now named `name`) in the catalog, to be
    /// undone if the transaction rolls back.
    pub(crate) fn install_version(&mut self, old_name: &str, name: &str, info: Arc<TableInfo>) {
        if old_name != name {
            self.install(old_name, None, None);
        }
        self.install(name, Some(info), None);
    }

    /// Records `info`, a new version of `table`: the table is `current` before this action,
    /// `name` after it, and was `old_name` when the transaction's first ALTER of it began.
    /// Installed now under the exclusive lock, else at commit.
    pub(crate) fn put_version(
        &mut self,
        table: &Arc<TableInfo>,
        old_name: &str,
        current: &str,
        name: &str,
        info: Arc<TableInfo>,
    ) {
        if self.holds_exclusive {
            self.install_version(current, name, info);
            return;
        }
        match self.pending.iter_mut().find(|pending| pending.name == current) {
            Some(pending) => {
                pending.name = name.to_string();
                pending.info = info;
            }
            None => self.pending.push(Pending {
                old_name: old_name.to_string(),
                base: Arc::clone(table),
                name: name.to_string(),
                info,
            }),
        }
    }

    /// Commits the engine transaction; with uncommitted ALTERs, checks first that each
    /// table is still the version they started from, and installs them after.
    pub(crate) fn commit_engine(&mut self) -> SqlResult<CommitInfo> {
        if self.pending.is_empty() {
            return Ok(self.worker.commit()?);
        }
        let db = Arc::clone(&self.db);
        let _serial = db.alter_commit.lock();
        let conflict = {
            let catalog = db.catalog.read();
            self.pending.iter().find_map(|pending| {
                let current = catalog.tables.get(&pending.old_name);
                if !current.is_some_and(|current| Arc::ptr_eq(current, &pending.base)) {
                    return Some(SqlError::new(
                        "40001",
                        format!(
                            "could not serialize access: table \"{}\" was altered by another \
                             transaction at the same time; retry the transaction",
                            pending.old_name
                        ),
                    ));
                }
                (pending.name != pending.old_name && catalog.tables.contains_key(&pending.name))
                    .then(|| {
                        SqlError::new(
                            "42P07",
                            format!("relation \"{}\" already exists", pending.name),
                        )
                    })
            })
        };
        if let Some(error) = conflict {
            let _ = self.worker.rollback();
            self.pending.clear();
            return Err(error);
        }
        let info = match self.worker.commit() {
            Ok(info) => info,
            Err(error) => {
                self.pending.clear();
                return Err(error.into());
            }
        };
        let mut catalog = db.catalog.write();
        catalog.version += 1;
        for pending in std::mem::take(&mut self.pending) {
            if pending.name != pending.old_name {
                catalog.tables.remove(&pending.old_name);
            }
            pending.info.since.store(catalog.version, Ordering::Release);
            pending.info.publish_layout();
            catalog.tables.insert(pending.name, pending.info);
        }
        db.catalog_version.store(catalog.version, Ordering::Release);
        Ok(info)
    }

    /// `CREATE TABLE name [(columns)] AS query`: a table of the query's columns, filled with
    /// its rows, in one transaction.
    pub(super) fn create_table_as(&mut self, create: &CreateTable) -> SqlResult<Outcome> {
        let query = create.query.as_deref().expect("CREATE TABLE ... AS");
        if self.db.catalog.read().tables.contains_key(&create.name) && create.if_not_exists {
            self.notice(format!("relation \"{}\" already exists, skipping", create.name));
            return Ok(Outcome::Command { tag: "CREATE TABLE AS".into() });
        }
        let autocommit = self.status == TransactionStatus::Idle;
        if autocommit {
            self.status = TransactionStatus::InBlock;
        }
        let result = self.create_table_as_steps(create, query);
        if autocommit {
            self.status = TransactionStatus::Idle;
            match &result {
                Ok(_) => self.finish(true)?,
                Err(_) => {
                    let _ = self.finish(false);
                }
            }
        } else if result.is_err() {
            self.fail_block();
        }
        result
    }

    fn create_table_as_steps(
        &mut self,
        create: &CreateTable,
        query: &crate::ast::Query,
    ) -> SqlResult<Outcome> {
        let statement = Statement::Query(Box::new(query.clone()));
        let columns = {
            let catalog = self.db.catalog.read();
            let binder =
                Binder::new(&catalog, &[]).with_settings(&self.settings).with_view(self.view());
            match binder.statement(&statement)?.0 {
                Plan::Query(plan) => plan.columns,
                _ => unreachable!("a query's plan"),
            }
        };
        if create.columns.len() > columns.len() {
            return Err(SqlError::syntax("too many column names were specified"));
        }
        let definition = CreateTable {
            columns: columns
                .iter()
                .enumerate()
                .map(|(at, column)| ColumnDef {
                    name: create
                        .columns
                        .get(at)
                        .map_or_else(|| column.name.clone(), |c| c.name.clone()),
                    ty: if column.ty == Type::Unknown { Type::Text } else { column.ty },
                    not_null: false,
                    default: None,
                    serial: false,
                    identity: None,
                    primary: false,
                    unique: false,
                })
                .collect(),
            query: None,
            ..create.clone()
        };
        self.ddl_statement(&Statement::CreateTable(Box::new(definition)))?;
        let insert = Statement::Insert(Box::new(Insert {
            table: TableRef::named(create.name.clone()),
            columns: Vec::new(),
            source: InsertSource::Query(Box::new(query.clone())),
            on_conflict: None,
            returning: Vec::new(),
        }));
        let rows = match self.data_statement(&insert, &[], 0, None)? {
            Outcome::Command { tag } | Outcome::Rows { tag, .. } => {
                tag.as_str().rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
            }
        };
        Ok(Outcome::Command { tag: Tag::counted("SELECT ", rows) })
    }

    /// Puts back the catalog entries the transaction's DDL replaced (tables and views), drops
    /// the engine tables it created, and forgets its pending versions and catalog rows.
    pub(super) fn undo_ddl(&mut self) {
        self.pending.clear();
        self.drop_at_commit.clear();
        self.catalog_rows.clear();
        self.undo_ddl_to(0, false);
    }

    /// Undoes the catalog changes from `undo[len]` on, newest first. The engine tables they
    /// created are dropped now, or with `defer_drops` when the transaction ends (a rollback to
    /// a savepoint: the open engine transaction may still hold their records).
    pub(super) fn undo_ddl_to(&mut self, len: usize, defer_drops: bool) {
        if self.undo.len() <= len {
            return;
        }
        let mut catalog = self.db.catalog.write();
        for undo in self.undo.drain(len..).rev() {
            match undo {
                super::Undo::Table { name, previous, created_engine } => {
                    match previous {
                        Some(info) => {
                            catalog.tables.insert(name, info);
                        }
                        None => {
                            catalog.tables.remove(&name);
                        }
                    }
                    if let Some(engine) = created_engine {
                        match defer_drops {
                            true => self.drop_at_end.push(engine),
                            false => {
                                let _ = self.db.db.drop_table(&engine);
                            }
                        }
                    }
                }
                super::Undo::View { name, previous } => match previous {
                    Some(view) => {
                        catalog.views.insert(name, view);
                    }
                    None => {
                        catalog.views.remove(&name);
                    }
                },
                super::Undo::Comment { key, previous } => match previous {
                    Some(text) => {
                        catalog.comments.insert(key, text);
                    }
                    None => {
                        catalog.comments.remove(&key);
                    }
                },
                super::Undo::Sequence { name, previous } => match previous {
                    Some(def) => {
                        if let Some(sequence) = catalog.sequences.get(&def.key) {
                            sequence.state.lock().options = def.options;
                        }
                        catalog.sequence_defs.insert(name, def);
                    }
                    None => {
                        catalog.sequence_defs.remove(&name);
                    }
                },
            }
        }
        catalog.version += 1;
        self.db.catalog_version.store(catalog.version, std::sync::atomic::Ordering::Release);
    }
}
