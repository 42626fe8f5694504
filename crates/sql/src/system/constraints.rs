//! Constraints as the catalog views list them: `pg_constraint` and `information_schema`'s
//! `table_constraints`, `key_column_usage`, `referential_constraints` and
//! `constraint_column_usage`. A table's primary key and unique indexes are constraints whose
//! id is their index's; its foreign keys take the ids at the top of the table's block
//! (`OIDS_PER_TABLE`), counting down.

use super::{
    BIG, BOOL, DATABASE_NAME, INT, OIDS_PER_TABLE, PUBLIC_OID, Sources, TEXT, ViewDefinition, int,
    relations, text,
};
use crate::ast::FkAction;
use crate::catalog::TableInfo;
use crate::types::{Elem, Type, Value, array};
use std::sync::Arc;

/// One constraint of a user table.
#[derive(Debug)]
pub struct Constraint {
    pub oid: i64,
    pub name: String,
    /// `p` primary key, `u` unique, `f` foreign key.
    pub kind: char,
    pub table: Arc<TableInfo>,
    pub table_oid: i64,
    pub columns: Vec<usize>,
    /// The index that enforces it (a primary key or unique constraint's own; a foreign key's
    /// referenced key's).
    pub index_oid: i64,
    pub foreign: Option<Foreign>,
    /// A CHECK constraint's expression.
    pub check: Option<String>,
}

/// What a foreign key references.
#[derive(Debug)]
pub struct Foreign {
    pub table: Arc<TableInfo>,
    pub table_oid: i64,
    pub columns: Vec<usize>,
    /// The referenced primary key or unique constraint's name.
    pub key_name: String,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    pub deferrable: bool,
    pub match_full: bool,
}

/// Every constraint of `tables` (sorted by name, as `relations` wants them).
pub fn constraints(tables: &[Arc<TableInfo>]) -> Vec<Constraint> {
    let relations = relations(tables);
    let table_oid = |name: &str| {
        relations.iter().find(|r| r.kind == 'r' && r.table.schema.name == name).map(|r| r.oid)
    };
    let mut out = Vec::new();
    for relation in &relations {
        match &relation.index {
            Some((columns, unique, primary)) if *unique => out.push(Constraint {
                oid: relation.oid,
                name: relation.name.clone(),
                kind: if *primary { 'p' } else { 'u' },
                table: Arc::clone(&relation.table),
                table_oid: relation.oid - relation.oid.rem_euclid(OIDS_PER_TABLE),
                columns: columns.clone(),
                index_oid: relation.oid,
                foreign: None,
                check: None,
            }),
            Some(_) => {}
            None => {
                for (at, fk) in relation.table.schema.foreign_keys.iter().enumerate() {
                    let Some(parent) =
                        relations.iter().find(|r| r.kind == 'r' && r.table.schema.name == fk.table)
                    else {
                        continue;
                    };
                    let same = |a: &[usize]| {
                        a.len() == fk.ref_columns.len()
                            && a.iter().all(|c| fk.ref_columns.contains(c))
                    };
                    let key = relations.iter().find(|r| {
                        r.table.schema.name == fk.table
                            && r.index.as_ref().is_some_and(|(c, unique, _)| *unique && same(c))
                    });
                    out.push(Constraint {
                        oid: relation.oid + OIDS_PER_TABLE - 1 - at as i64,
                        name: fk.name.clone(),
                        kind: 'f',
                        table: Arc::clone(&relation.table),
                        table_oid: relation.oid,
                        columns: fk.columns.clone(),
                        index_oid: key.map_or(0, |k| k.oid),
                        foreign: Some(Foreign {
                            table: Arc::clone(&parent.table),
                            table_oid: table_oid(&fk.table).unwrap_or(0),
                            columns: fk.ref_columns.clone(),
                            key_name: key.map_or_else(String::new, |k| k.name.clone()),
                            on_delete: fk.on_delete,
                            on_update: fk.on_update,
                            deferrable: fk.deferrable,
                            match_full: fk.match_full,
                        }),
                        check: None,
                    });
                }
                let taken = relation.table.schema.foreign_keys.len() as i64;
                for (at, check) in relation.table.schema.checks.iter().enumerate() {
                    let columns = relation
                        .table
                        .schema
                        .columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| {
                            !c.dropped
                                && crate::parse::rename_column_in(&check.expr, &c.name, None)
                                    .is_ok_and(|(_, found)| found)
                        })
                        .map(|(at, _)| at)
                        .collect();
                    out.push(Constraint {
                        oid: relation.oid + OIDS_PER_TABLE - 1 - taken - at as i64,
                        name: check.name.clone(),
                        kind: 'c',
                        table: Arc::clone(&relation.table),
                        table_oid: relation.oid,
                        columns,
                        index_oid: 0,
                        foreign: None,
                        check: Some(check.expr.clone()),
                    });
                }
            }
        }
    }
    out
}

fn names(table: &TableInfo, columns: &[usize]) -> String {
    columns.iter().map(|&c| table.schema.columns[c].name.as_str()).collect::<Vec<_>>().join(", ")
}

/// `pg_get_constraintdef`: the constraint as its clause of CREATE TABLE.
pub fn constraint_definition(constraint: &Constraint) -> String {
    let columns = names(&constraint.table, &constraint.columns);
    match (&constraint.foreign, constraint.kind) {
        (Some(foreign), _) => {
            let mut out = format!(
                "FOREIGN KEY ({columns}) REFERENCES {}({})",
                foreign.table.schema.name,
                names(&foreign.table, &foreign.columns)
            );
            if foreign.match_full {
                out.push_str(" MATCH FULL");
            }
            if foreign.on_update != FkAction::NoAction {
                out.push_str(&format!(" ON UPDATE {}", foreign.on_update.words()));
            }
            if foreign.on_delete != FkAction::NoAction {
                out.push_str(&format!(" ON DELETE {}", foreign.on_delete.words()));
            }
            if foreign.deferrable {
                out.push_str(" DEFERRABLE INITIALLY DEFERRED");
            }
            out
        }
        (None, 'c') => format!("CHECK (({}))", constraint.check.as_deref().unwrap_or("")),
        (None, 'p') => format!("PRIMARY KEY ({columns})"),
        (None, _) => format!("UNIQUE ({columns})"),
    }
}

/// Attribute numbers (from 1) as `int2[]`.
fn attnums(columns: &[usize]) -> Value {
    array(columns.iter().map(|&c| Value::Int(c as i64 + 1)).collect())
}

const SMALLS: Type = Type::Array(Elem::Int2);

pub(super) const VIEWS: &[ViewDefinition] = &[
    ViewDefinition {
        schema: "pg_catalog",
        name: "pg_constraint",
        columns: &[
            ("oid", BIG),
            ("conname", TEXT),
            ("connamespace", BIG),
            ("contype", TEXT),
            ("condeferrable", BOOL),
            ("condeferred", BOOL),
            ("convalidated", BOOL),
            ("conrelid", BIG),
            ("contypid", BIG),
            ("conindid", BIG),
            ("conparentid", BIG),
            ("confrelid", BIG),
            ("confupdtype", TEXT),
            ("confdeltype", TEXT),
            ("confmatchtype", TEXT),
            ("conislocal", BOOL),
            ("coninhcount", INT),
            ("connoinherit", BOOL),
            ("conkey", SMALLS),
            ("confkey", SMALLS),
        ],
        key_columns: 1,
        rows: pg_constraint,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "table_constraints",
        columns: &[
            ("constraint_catalog", TEXT),
            ("constraint_schema", TEXT),
            ("constraint_name", TEXT),
            ("table_catalog", TEXT),
            ("table_schema", TEXT),
            ("table_name", TEXT),
            ("constraint_type", TEXT),
            ("is_deferrable", TEXT),
            ("initially_deferred", TEXT),
            ("enforced", TEXT),
        ],
        key_columns: 6,
        rows: table_constraints,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "key_column_usage",
        columns: &[
            ("constraint_catalog", TEXT),
            ("constraint_schema", TEXT),
            ("constraint_name", TEXT),
            ("table_catalog", TEXT),
            ("table_schema", TEXT),
            ("table_name", TEXT),
            ("ordinal_position", INT),
            ("column_name", TEXT),
            ("position_in_unique_constraint", INT),
        ],
        key_columns: 7,
        rows: key_column_usage,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "referential_constraints",
        columns: &[
            ("constraint_catalog", TEXT),
            ("constraint_schema", TEXT),
            ("constraint_name", TEXT),
            ("unique_constraint_catalog", TEXT),
            ("unique_constraint_schema", TEXT),
            ("unique_constraint_name", TEXT),
            ("match_option", TEXT),
            ("update_rule", TEXT),
            ("delete_rule", TEXT),
        ],
        key_columns: 3,
        rows: referential_constraints,
    },
    ViewDefinition {
        schema: "information_schema",
        name: "constraint_column_usage",
        columns: &[
            ("table_catalog", TEXT),
            ("table_schema", TEXT),
            ("table_name", TEXT),
            ("column_name", TEXT),
            ("constraint_catalog", TEXT),
            ("constraint_schema", TEXT),
            ("constraint_name", TEXT),
        ],
        key_columns: 7,
        rows: constraint_column_usage,
    },
];

fn pg_constraint(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    constraints(&sources.tables)
        .into_iter()
        .map(|c| {
            let foreign = c.foreign.as_ref();
            vec![
                int(c.oid),
                text(c.name.clone()),
                int(PUBLIC_OID),
                text(c.kind.to_string()),
                Value::Bool(foreign.is_some_and(|f| f.deferrable)),
                Value::Bool(foreign.is_some_and(|f| f.deferrable)),
                Value::Bool(true),
                int(c.table_oid),
                int(0),
                int(c.index_oid),
                int(0),
                int(foreign.map_or(0, |f| f.table_oid)),
                text(foreign.map_or(" ", |f| f.on_update.code())),
                text(foreign.map_or(" ", |f| f.on_delete.code())),
                text(match foreign {
                    Some(f) if f.match_full => "f",
                    Some(_) => "s",
                    None => " ",
                }),
                Value::Bool(true),
                int(0),
                Value::Bool(true),
                attnums(&c.columns),
                foreign.map_or(Value::Null, |f| attnums(&f.columns)),
            ]
        })
        .collect()
}

fn kind_words(kind: char) -> &'static str {
    match kind {
        'p' => "PRIMARY KEY",
        'u' => "UNIQUE",
        'c' => "CHECK",
        _ => "FOREIGN KEY",
    }
}

fn yes(flag: bool) -> Value {
    text(if flag { "YES" } else { "NO" })
}

fn table_constraints(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    constraints(&sources.tables)
        .into_iter()
        .map(|c| {
            let deferrable = c.foreign.as_ref().is_some_and(|f| f.deferrable);
            vec![
                text(DATABASE_NAME),
                text("public"),
                text(c.name.clone()),
                text(DATABASE_NAME),
                text("public"),
                text(c.table.schema.name.clone()),
                text(kind_words(c.kind)),
                yes(deferrable),
                yes(deferrable),
                text("YES"),
            ]
        })
        .collect()
}

fn key_column_usage(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for c in constraints(&sources.tables).into_iter().filter(|c| c.kind != 'c') {
        for (at, &column) in c.columns.iter().enumerate() {
            // A foreign key column's position in the referenced key.
            let in_unique = c.foreign.as_ref().map_or(Value::Null, |_| int(at as i64 + 1));
            rows.push(vec![
                text(DATABASE_NAME),
                text("public"),
                text(c.name.clone()),
                text(DATABASE_NAME),
                text("public"),
                text(c.table.schema.name.clone()),
                int(at as i64 + 1),
                text(c.table.schema.columns[column].name.clone()),
                in_unique,
            ]);
        }
    }
    rows
}

fn referential_constraints(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    constraints(&sources.tables)
        .into_iter()
        .filter_map(|c| {
            let foreign = c.foreign.as_ref()?;
            Some(vec![
                text(DATABASE_NAME),
                text("public"),
                text(c.name.clone()),
                text(DATABASE_NAME),
                text("public"),
                text(foreign.key_name.clone()),
                text(if foreign.match_full { "FULL" } else { "NONE" }),
                text(foreign.on_update.words()),
                text(foreign.on_delete.words()),
            ])
        })
        .collect()
}

fn constraint_column_usage(sources: &Sources<'_>) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for c in constraints(&sources.tables) {
        let (table, columns) = match &c.foreign {
            Some(foreign) => (&foreign.table, &foreign.columns),
            None => (&c.table, &c.columns),
        };
        for &column in columns {
            rows.push(vec![
                text(DATABASE_NAME),
                text("public"),
                text(table.schema.name.clone()),
                text(table.schema.columns[column].name.clone()),
                text(DATABASE_NAME),
                text("public"),
                text(c.name.clone()),
            ]);
        }
    }
    rows
}
