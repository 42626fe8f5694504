//! Temporary tables: `CREATE TEMP TABLE name` makes a table only its session sees, under a
//! catalog name of Engram's own (`_engram_temp<session>#<name>`, which no user table can
//! take, and which no statement may name itself), that shadows a permanent table of the same name in the session's statements, as
//! PostgreSQL's `pg_temp` schema comes first in the search path. The session resolves its
//! temporary names wherever a statement names a table (`catalog::View::temp`, and the DDL
//! statements below). When the session ends its temporary tables are left to the next DDL
//! statement of any session to drop (a session's end must not wait for the schema lock), and
//! a restart drops any that a crash left. Their rows are logged like any table's (PostgreSQL
//! does not log them).

use super::Session;
use crate::ast::{CreateTable, Statement};
use crate::error::{SqlError, SqlResult};

use crate::catalog::TEMP_PREFIX;

impl Session {
    pub(crate) fn create_temp_table(&mut self, create: &CreateTable) -> SqlResult<String> {
        if self.temp_table(&create.name).is_some() {
            if create.if_not_exists {
                self.notice(format!("relation \"{}\" already exists, skipping", create.name));
                return Ok("CREATE TABLE".into());
            }
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{}\" already exists", create.name),
            ));
        }
        if create.name.contains('#')
            || create.name.contains('.')
            || create.name.starts_with("_engram")
        {
            return Err(SqlError::new("42602", format!("invalid table name \"{}\"", create.name)));
        }
        let internal = self.temp_name(&create.name);
        let inner = CreateTable { name: internal.clone(), temporary: false, ..create.clone() };
        let tag = self.create_table_named(&inner)?;
        self.temp_tables.insert(create.name.clone(), internal);
        Ok(tag)
    }

    /// The catalog name a temporary table `name` of this session takes.
    fn temp_name(&self, name: &str) -> String {
        format!("{TEMP_PREFIX}{}#{name}", self.id)
    }

    /// The catalog name of the session's temporary table `name`, if it has one now (a table
    /// whose CREATE was rolled back, or that was dropped, is gone from the catalog).
    pub(crate) fn temp_table(&self, name: &str) -> Option<String> {
        let internal = self.temp_tables.get(name)?;
        self.db.catalog.read().tables.contains_key(internal).then(|| internal.clone())
    }

    /// `name` as the catalog knows it: the session's temporary table of that name, else the
    /// name itself.
    pub(crate) fn resolve_table(&self, name: &str) -> String {
        self.temp_table(name).unwrap_or_else(|| name.to_string())
    }

    /// A DDL statement with the table names it gives resolved to the session's temporary
    /// tables (`None`: it names none). A name of Engram's temporary tables typed out is
    /// refused: another session's table is not this one's to reach.
    pub(crate) fn resolved_ddl(&mut self, statement: &Statement) -> SqlResult<Option<Statement>> {
        let named: Vec<&String> = match statement {
            Statement::DropTable { names, .. } => names.iter().collect(),
            Statement::Truncate { tables } => tables.iter().collect(),
            Statement::CreateIndex(create) => vec![&create.table],
            Statement::AlterTable(alter) => vec![&alter.table],
            _ => Vec::new(),
        };
        if let Some(name) = named.iter().find(|name| name.starts_with(TEMP_PREFIX)) {
            return Err(SqlError::undefined_table(name));
        }
        if self.temp_tables.is_empty() || named.is_empty() {
            return Ok(None);
        }
        let mut statement = statement.clone();
        match &mut statement {
            Statement::DropTable { names, .. } => {
                names.iter_mut().for_each(|name| *name = self.resolve_table(name));
            }
            Statement::Truncate { tables } => {
                tables.iter_mut().for_each(|name| *name = self.resolve_table(name));
            }
            Statement::CreateIndex(create) => create.table = self.resolve_table(&create.table),
            Statement::AlterTable(alter) => {
                if let Some(internal) = self.temp_table(&alter.table) {
                    alter.table = internal;
                    // A temporary table renamed stays temporary, under its new name.
                    for action in &mut alter.actions {
                        if let crate::ast::AlterAction::RenameTable { to } = action {
                            let renamed = self.temp_name(to);
                            self.temp_tables.insert(to.clone(), renamed.clone());
                            *to = renamed;
                        }
                    }
                }
            }
            _ => return Ok(None),
        }
        Ok(Some(statement))
    }

    /// Hands the session's temporary tables to the database to drop (the session ends).
    pub(crate) fn leave_temp_tables(&mut self) {
        let names: Vec<String> = self.temp_tables.drain().map(|(_, internal)| internal).collect();
        if !names.is_empty() {
            self.db.temp_orphans.lock().extend(names);
        }
    }

    /// Drops the temporary tables of sessions that have ended, inside the running DDL
    /// transaction (which holds the schema lock exclusively). If that transaction rolls back,
    /// they go back to the list ([`Session::requeue_orphans`]).
    pub(crate) fn drop_orphaned_temp_tables(&mut self) -> SqlResult<()> {
        let orphans = std::mem::take(&mut *self.db.temp_orphans.lock());
        let notices = self.notices.len();
        for name in &orphans {
            if self.db.catalog.read().tables.contains_key(name) {
                self.drop_dependents(name, true)?;
                self.drop_table(name)?;
            }
        }
        // The drops are no concern of this session's client.
        self.notices.truncate(notices);
        self.orphans_taken.extend(orphans);
        Ok(())
    }

    /// At the end of a transaction: the ended sessions' tables it dropped are gone if it
    /// committed, and go back to the list if not.
    pub(crate) fn requeue_orphans(&mut self, committed: bool) {
        let taken = std::mem::take(&mut self.orphans_taken);
        if !committed && !taken.is_empty() {
            self.db.temp_orphans.lock().extend(taken);
        }
    }
}
