//! CREATE VIEW and DROP VIEW. A view is its query's SQL text in the catalog (`ViewDef`),
//! bound again wherever a statement reads it, as a subquery in FROM (`plan/derived.rs`);
//! creating one binds the query once to check it and to learn its columns. A view names the
//! tables and views its query reads, and dropping one of them needs CASCADE, which drops the
//! views that read it (and theirs) as well.

use crate::ast::{CreateView, Query, Statement};
use crate::catalog::ViewDef;
use crate::error::{SqlError, SqlResult};
use crate::plan::{Binder, OutputColumn, Plan};
use crate::session::{Session, Undo};
use std::sync::Arc;

impl Session {
    /// The columns a view's query gives, named as the view names them.
    fn view_columns(&self, query: &Query, names: &[String]) -> SqlResult<Vec<OutputColumn>> {
        let statement = Statement::Query(Box::new(query.clone()));
        let catalog = self.db.catalog.read();
        let (plan, params) =
            Binder::new(&catalog, &[]).with_view(self.view()).statement(&statement)?;
        if !params.is_empty() {
            return Err(SqlError::new("42P02", "there is no parameter $1 in a view"));
        }
        let Plan::Query(plan) = plan else { unreachable!("a query's plan") };
        let mut columns = plan.columns;
        if names.len() > columns.len() {
            return Err(SqlError::syntax("CREATE VIEW specifies more column names than columns"));
        }
        for (column, name) in columns.iter_mut().zip(names) {
            column.name.clone_from(name);
        }
        Ok(columns)
    }

    pub(super) fn create_view(&mut self, create: &CreateView) -> SqlResult<String> {
        let existing = self.db.catalog.read().views.get(&create.name).cloned();
        if existing.is_none() && self.relation_exists(&create.name) {
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{}\" already exists", create.name),
            ));
        }
        let columns = self.view_columns(&create.query, &create.columns)?;
        for (at, column) in columns.iter().enumerate() {
            if columns[..at].iter().any(|c| c.name == column.name) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{}\" specified more than once", column.name),
                ));
            }
        }
        if let Some(existing) = &existing {
            if !create.or_replace {
                return Err(SqlError::new(
                    "42P07",
                    format!("relation \"{}\" already exists", create.name),
                ));
            }
            // As PostgreSQL: the new query keeps the old columns, in order, and may add more.
            let query = crate::parse::parse(&existing.query)?;
            let Some(Statement::Query(old_query)) = query.first() else {
                return Err(SqlError::new("XX001", "a view's query does not parse"));
            };
            let old = self.view_columns(old_query, &existing.columns)?;
            if old.len() > columns.len() {
                return Err(SqlError::new("42P16", "cannot drop columns from view"));
            }
            for (old, new) in old.iter().zip(&columns) {
                if old.name != new.name {
                    return Err(SqlError::new(
                        "42P16",
                        format!(
                            "cannot change name of view column \"{}\" to \"{}\"",
                            old.name, new.name
                        ),
                    ));
                }
                if old.ty != new.ty {
                    return Err(SqlError::new(
                        "42P16",
                        format!(
                            "cannot change data type of view column \"{}\" from {} to {}",
                            old.name,
                            old.ty.name(),
                            new.ty.name()
                        ),
                    ));
                }
            }
        }
        let depends = {
            let catalog = self.db.catalog.read();
            create
                .reads
                .iter()
                .filter(|name| {
                    catalog.tables.contains_key(*name) || catalog.views.contains_key(*name)
                })
                .cloned()
                .collect()
        };
        let view = ViewDef {
            name: create.name.clone(),
            query: create.text.clone(),
            columns: columns.into_iter().map(|c| c.name).collect(),
            depends,
        };
        self.put_view(&create.name, Some(Arc::new(view)))?;
        Ok("CREATE VIEW".into())
    }

    /// Writes (or with `None` removes) a view's catalog row and entry.
    fn put_view(&mut self, name: &str, view: Option<Arc<ViewDef>>) -> SqlResult<()> {
        self.write_catalog_json(format!("view:{name}"), view.as_deref())?;
        let mut catalog = self.db.catalog.write();
        catalog.version += 1;
        let previous = match view {
            Some(view) => catalog.views.insert(name.to_string(), view),
            None => catalog.views.remove(name),
        };
        self.db.catalog_version.store(catalog.version, std::sync::atomic::Ordering::Release);
        self.undo.push(Undo::View { name: name.to_string(), previous });
        Ok(())
    }

    pub(super) fn drop_views(
        &mut self,
        names: &[String],
        if_exists: bool,
        cascade: bool,
    ) -> SqlResult<String> {
        for name in names {
            let (is_view, is_table) = {
                let catalog = self.db.catalog.read();
                (catalog.views.contains_key(name), catalog.tables.contains_key(name))
            };
            if is_view {
                self.drop_dependents(name, cascade)?;
                self.put_view(name, None)?;
            } else if is_table {
                return Err(SqlError::new(
                    "42809",
                    format!("\"{name}\" is not a view (use DROP TABLE to remove a table)"),
                ));
            } else if if_exists {
                self.notice(format!("view \"{name}\" does not exist, skipping"));
            } else {
                return Err(SqlError::new("42P01", format!("view \"{name}\" does not exist")));
            }
        }
        Ok("DROP VIEW".into())
    }

    /// The views that read `name`: with `cascade` they are dropped (and the views that read
    /// them), else they stop the drop (2BP01, as PostgreSQL).
    pub(crate) fn drop_dependents(&mut self, name: &str, cascade: bool) -> SqlResult<()> {
        let mut dependents: Vec<String> = self
            .db
            .catalog
            .read()
            .views
            .values()
            .filter(|view| view.name != name && view.depends.iter().any(|d| d == name))
            .map(|view| view.name.clone())
            .collect();
        dependents.sort();
        if dependents.is_empty() {
            return Ok(());
        }
        if !cascade {
            let mut error = SqlError::new(
                "2BP01",
                format!("cannot drop {name} because other objects depend on it"),
            );
            error.detail = Some(
                dependents
                    .iter()
                    .map(|view| format!("view {view} depends on {name}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            return Err(error);
        }
        for view in dependents {
            if !self.db.catalog.read().views.contains_key(&view) {
                continue;
            }
            self.notice(format!("drop cascades to view {view}"));
            self.drop_dependents(&view, true)?;
            self.put_view(&view, None)?;
        }
        Ok(())
    }
}
