//! Foreign keys as a statement that writes a table must keep them: the keys the table holds
//! (each row it writes must find its referenced row) and those that reference it (each row it
//! deletes or whose referenced columns it changes is looked for in the referencing table,
//! then refused, or cascaded). Gathered when the statement is planned, from the tables the
//! statement sees; `exec/foreign.rs` enforces them.

use super::Binder;
use crate::ast::FkAction;
use crate::catalog::TableInfo;
use crate::error::SqlResult;
use std::collections::HashMap;
use std::sync::Arc;

/// A foreign key of the table written: a row's `columns` must find `parent`'s row with
/// `ref_columns` equal.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub name: String,
    pub columns: Vec<usize>,
    pub parent: Arc<TableInfo>,
    pub ref_columns: Vec<usize>,
    /// The unique index of the parent whose columns are `ref_columns`; `None`: its primary key.
    pub index: Option<usize>,
    /// `MATCH FULL`.
    pub match_full: bool,
}

/// A foreign key of `child` that references the table written.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub name: String,
    pub child: Arc<TableInfo>,
    pub columns: Vec<usize>,
    pub ref_columns: Vec<usize>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    /// An index of the child whose leading columns are `columns`, in order: the referencing
    /// rows are found through it (else by a scan of the child).
    pub index: Option<usize>,
}

/// One table's keys, both ways.
#[derive(Debug, Clone, Default)]
pub struct TableKeys {
    pub outgoing: Vec<Outgoing>,
    pub incoming: Vec<Incoming>,
}

/// The keys of the table a statement writes, and of every table a cascade from it may write,
/// by table name.
#[derive(Debug, Clone, Default)]
pub struct ForeignKeys {
    pub tables: HashMap<String, TableKeys>,
}

impl ForeignKeys {
    pub fn of(&self, table: &str) -> Option<&TableKeys> {
        self.tables.get(table)
    }
}

impl Binder<'_> {
    /// The foreign keys a write of `table` must keep; `None` when no table the statement sees
    /// has one (so statements of databases without foreign keys pay nothing).
    pub(super) fn foreign_keys(
        &mut self,
        table: &Arc<TableInfo>,
    ) -> SqlResult<Option<Arc<ForeignKeys>>> {
        let holders: Vec<String> = self
            .catalog
            .tables
            .values()
            .filter(|t| !t.schema.foreign_keys.is_empty())
            .map(|t| t.schema.name.clone())
            .collect();
        if holders.is_empty() {
            return Ok(None);
        }
        // The tables holding keys, as the statement sees them.
        let mut holding = Vec::with_capacity(holders.len());
        for name in &holders {
            if let Ok(info) = self.read_table(name) {
                holding.push(info);
            }
        }
        let mut keys = ForeignKeys::default();
        let mut pending = vec![table.schema.name.clone()];
        let written = table.schema.name.clone();
        while let Some(name) = pending.pop() {
            if keys.tables.contains_key(&name) {
                continue;
            }
            let this = match name == table.schema.name {
                true => Arc::clone(table),
                false => self.read_table(&name)?,
            };
            let mut entry = TableKeys::default();
            for fk in &this.schema.foreign_keys {
                let parent = match fk.table == this.schema.name {
                    true => Arc::clone(&this),
                    false => self.read_table(&fk.table)?,
                };
                let index = unique_index(&parent, &fk.ref_columns);
                entry.outgoing.push(Outgoing {
                    name: fk.name.clone(),
                    columns: fk.columns.clone(),
                    parent,
                    ref_columns: fk.ref_columns.clone(),
                    index,
                    match_full: fk.match_full,
                });
            }
            for child in &holding {
                for fk in child.schema.foreign_keys.iter().filter(|fk| fk.table == name) {
                    entry.incoming.push(Incoming {
                        name: fk.name.clone(),
                        child: Arc::clone(child),
                        columns: fk.columns.clone(),
                        ref_columns: fk.ref_columns.clone(),
                        on_delete: fk.on_delete,
                        on_update: fk.on_update,
                        index: leading_index(child, &fk.columns),
                    });
                    // A cascade writes the child: its own referencing tables count too.
                    pending.push(child.schema.name.clone());
                }
            }
            keys.tables.insert(name, entry);
        }
        let involved = keys
            .tables
            .get(&written)
            .is_some_and(|own| !own.outgoing.is_empty() || !own.incoming.is_empty());
        Ok(involved.then(|| Arc::new(keys)))
    }
}

/// The unique index of `table` over exactly `columns` (any order); `None` when they are the
/// primary key's (or no index has them: the key was checked when it was made).
pub(crate) fn unique_index(table: &TableInfo, columns: &[usize]) -> Option<usize> {
    let same = |a: &[usize]| a.len() == columns.len() && a.iter().all(|c| columns.contains(c));
    if same(&table.schema.primary_key) {
        return None;
    }
    table.schema.indexes.iter().position(|index| index.unique && same(&index.columns))
}

/// An index of `table` whose first columns are `columns`, in order.
fn leading_index(table: &TableInfo, columns: &[usize]) -> Option<usize> {
    table.schema.indexes.iter().position(|index| index.columns.starts_with(columns))
}
