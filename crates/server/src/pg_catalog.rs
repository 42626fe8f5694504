//! What psql's describe commands ask of `pg_catalog`, answered from Engram's catalog.
//!
//! psql's `\d`, `\dt`, `\di` and `\d NAME` send fixed queries over `pg_class`,
//! `pg_namespace`, `pg_attribute`, `pg_index` and a few more, with regular-expression
//! operators, `format_type`, `pg_get_indexdef` and other functions Engram's SQL does not
//! have. Each of those queries
//! is recognised here by its shape and answered with the rows PostgreSQL would give for
//! Engram's tables, indexes and columns, numbered as the system views number them
//! (`engram_sql::system`: table `i` by name is `16384 + 64 i`, its primary key the next, its
//! indexes after that). Other queries of `pg_catalog` and `information_schema` go to those
//! views through the SQL layer.
//! Queries of psql's describe family that Engram has nothing for (policies, statistics
//! objects, publications, inheritance, triggers, foreign keys) get an empty result.

use engram_sql::system::{Relation, column_list, index_definition};
use engram_sql::{Outcome, OutputColumn, SqlDb, Type, Value};
use std::sync::Arc;

/// Tables and indexes with their object ids, as the system views number them.
fn relations(db: &SqlDb) -> Vec<Relation> {
    engram_sql::system::relations(&db.tables())
}

fn rows(columns: &[(&str, Type)], rows: Vec<Vec<Value>>) -> Outcome {
    let columns: Arc<[OutputColumn]> = columns
        .iter()
        .map(|(name, ty)| OutputColumn { name: (*name).to_string(), ty: *ty })
        .collect();
    Outcome::Rows { columns, tag: engram_sql::Tag::counted("SELECT ", rows.len() as u64), rows }
}

fn text(s: impl Into<engram_sql::Text>) -> Value {
    Value::Text(s.into())
}

/// The name pattern psql puts in `relname OPERATOR(pg_catalog.~) '^(...)$'`, if any: psql
/// turns `*` into `.*` and `?` into `.`; other regular-expression syntax is not expected.
fn name_pattern(sql: &str) -> Option<String> {
    let start = sql.find("'^(")? + 3;
    let end = start + sql[start..].find(")$'")?;
    Some(sql[start..end].to_string())
}

fn matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p {
            [] => n.is_empty(),
            [b'.', b'*', rest @ ..] => (0..=n.len()).any(|skip| go(rest, &n[skip..])),
            [b'.', rest @ ..] => !n.is_empty() && go(rest, &n[1..]),
            [b'\\', c, rest @ ..] => n.first() == Some(c) && go(rest, &n[1..]),
            [c, rest @ ..] => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The OID in `... = '16384'` after `marker`.
fn oid_after(sql: &str, marker: &str) -> Option<u32> {
    let at = sql.find(marker)? + marker.len();
    let rest = sql[at..].trim_start().trim_start_matches('\'');
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Answers a psql describe query, or `None` when `sql` is not one.
pub(crate) fn answer(sql: &str, db: &SqlDb) -> Option<Outcome> {
    if !sql.contains("pg_catalog.") {
        return None;
    }
    // \dt, \di, \d: lists of relations.
    if sql.contains("as \"Schema\"") && sql.contains("c.relkind IN (") {
        let kinds_at = sql.find("c.relkind IN (")? + "c.relkind IN (".len();
        let kinds = &sql[kinds_at..kinds_at + sql[kinds_at..].find(')')?];
        let pattern = name_pattern(sql);
        let with_table = sql.contains("as \"Table\"");
        // `\dt+`, `\di+`: persistence, access method, size and description too.
        let verbose = sql.contains("as \"Description\"") && sql.contains("as \"Access method\"");
        let mut out = Vec::new();
        for relation in relations(db) {
            if !kinds.contains(&format!("'{}'", relation.kind)) {
                continue;
            }
            if pattern.as_ref().is_some_and(|p| !matches(p, &relation.name)) {
                continue;
            }
            let mut row = vec![
                text("public"),
                text(relation.name.clone()),
                text(if relation.kind == 'r' { "table" } else { "index" }),
                text("postgres"),
            ];
            if with_table {
                row.push(text(relation.table.schema.name.clone()));
            }
            if verbose {
                // (Engram keeps no per-table size: the Size column is empty.)
                row.push(text("permanent"));
                row.push(text(if relation.kind == 'r' { "heap" } else { "btree" }));
                row.push(Value::Null);
                let kind = if relation.kind == 'r' { "table" } else { "index" };
                row.push(
                    db.comment(&format!("{kind}:{}", relation.name)).map_or(Value::Null, text),
                );
            }
            out.push(row);
        }
        out.sort_by(|a, b| a[1].compare(&b[1]));
        let mut columns = vec![
            ("Schema", Type::Text),
            ("Name", Type::Text),
            ("Type", Type::Text),
            ("Owner", Type::Text),
        ];
        if with_table {
            columns.push(("Table", Type::Text));
        }
        if verbose {
            columns.extend([
                ("Persistence", Type::Text),
                ("Access method", Type::Text),
                ("Size", Type::Text),
                ("Description", Type::Text),
            ]);
        }
        return Some(rows(&columns, out));
    }
    // \d NAME, step 1: the relations whose name matches.
    if sql.starts_with("SELECT c.oid,") && sql.contains("pg_table_is_visible") {
        let pattern = name_pattern(sql)?;
        let out = relations(db)
            .into_iter()
            .filter(|r| matches(&pattern, &r.name))
            .map(|r| vec![text(r.oid.to_string()), text("public"), text(r.name)])
            .collect();
        return Some(rows(
            &[("oid", Type::Text), ("nspname", Type::Text), ("relname", Type::Text)],
            out,
        ));
    }
    let relation = |marker: &str| {
        let oid = i64::from(oid_after(sql, marker)?);
        relations(db).into_iter().find(|r| r.oid == oid)
    };
    // Step 2: the relation's kind and flags.
    if sql.starts_with("SELECT c.relchecks, c.relkind") {
        let out = match relation("WHERE c.oid =") {
            Some(r) if r.kind == 'r' => vec![vec![
                Value::Int(0),
                text("r"),
                Value::Bool(
                    r.table.schema.indexes.len()
                        + usize::from(!r.table.schema.primary_key.is_empty())
                        > 0,
                ),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(false),
                Value::Bool(false),
                text(""),
                text("0"),
                text(""),
                text("p"),
                text("d"),
                text("heap"),
            ]],
            _ => Vec::new(),
        };
        let columns = [
            ("relchecks", Type::Int4),
            ("relkind", Type::Text),
            ("relhasindex", Type::Bool),
            ("relhasrules", Type::Bool),
            ("relhastriggers", Type::Bool),
            ("relrowsecurity", Type::Bool),
            ("relforcerowsecurity", Type::Bool),
            ("relhasoids", Type::Bool),
            ("relispartition", Type::Bool),
            ("?column?", Type::Text),
            ("reltablespace", Type::Text),
            ("reloftype", Type::Text),
            ("relpersistence", Type::Text),
            ("relreplident", Type::Text),
            ("amname", Type::Text),
        ];
        return Some(rows(&columns, out));
    }
    // Step 3: the columns.
    if sql.contains("FROM pg_catalog.pg_attribute a") && sql.contains("format_type") {
        // `\d+ NAME` asks for storage, compression, statistics target and description too.
        let verbose = sql.contains("a.attstorage");
        let mut out = Vec::new();
        if let Some(r) = relation("a.attrelid =").filter(|r| r.kind == 'r') {
            for column in r.table.schema.columns.iter().filter(|c| !c.dropped) {
                let mut row = vec![
                    text(column.name.clone()),
                    text(column.ty.name()),
                    column.default.as_deref().map_or(Value::Null, text),
                    Value::Bool(column.not_null),
                    Value::Null,
                    text(""),
                    text(""),
                ];
                if verbose {
                    // PostgreSQL's storage of the type: plain (fixed width), main
                    // (numeric) or extended.
                    let storage = match column.ty {
                        Type::Numeric { .. } => "m",
                        ty if ty.pg_length() > 0 => "p",
                        _ => "x",
                    };
                    let comment = db.comment(&format!("column:{}.{}", r.name, column.name));
                    row.extend([
                        text(storage),
                        text(""),
                        Value::Null,
                        comment.map_or(Value::Null, text),
                    ]);
                }
                out.push(row);
            }
        }
        let mut columns = vec![
            ("attname", Type::Text),
            ("format_type", Type::Text),
            ("pg_get_expr", Type::Text),
            ("attnotnull", Type::Bool),
            ("attcollation", Type::Text),
            ("attidentity", Type::Text),
            ("attgenerated", Type::Text),
        ];
        if verbose {
            columns.extend([
                ("attstorage", Type::Text),
                ("attcompression", Type::Text),
                ("attstattarget", Type::Int4),
                ("col_description", Type::Text),
            ]);
        }
        return Some(rows(&columns, out));
    }
    // Step 4: the indexes.
    if sql.contains("pg_catalog.pg_index i") && sql.contains("c.oid = i.indrelid") {
        let mut out = Vec::new();
        if let Some(table) = relation("WHERE c.oid =").filter(|r| r.kind == 'r') {
            let mut indexes: Vec<Relation> = relations(db)
                .into_iter()
                .filter(|r| r.kind == 'i' && Arc::ptr_eq(&r.table, &table.table))
                .collect();
            indexes.sort_by(|a, b| {
                let primary = |r: &Relation| r.index.as_ref().is_some_and(|i| i.2);
                primary(b).cmp(&primary(a)).then(a.name.cmp(&b.name))
            });
            for index in indexes {
                let Some((columns, unique, primary)) = &index.index else { continue };
                let Some(definition) = index_definition(&index) else { continue };
                let list = column_list(&index.table, columns);
                let (constraint, kind) = if *primary {
                    (text(format!("PRIMARY KEY ({list})")), text("p"))
                } else {
                    (Value::Null, Value::Null)
                };
                out.push(vec![
                    text(index.name.clone()),
                    Value::Bool(*primary),
                    Value::Bool(*unique),
                    Value::Bool(false),
                    Value::Bool(true),
                    text(definition),
                    constraint,
                    kind,
                    Value::Bool(false),
                    Value::Bool(false),
                    Value::Bool(false),
                    text("0"),
                ]);
            }
        }
        let columns = [
            ("relname", Type::Text),
            ("indisprimary", Type::Bool),
            ("indisunique", Type::Bool),
            ("indisclustered", Type::Bool),
            ("indisvalid", Type::Bool),
            ("pg_get_indexdef", Type::Text),
            ("pg_get_constraintdef", Type::Text),
            ("contype", Type::Text),
            ("condeferrable", Type::Bool),
            ("condeferred", Type::Bool),
            ("indisreplident", Type::Bool),
            ("reltablespace", Type::Text),
        ];
        return Some(rows(&columns, out));
    }
    // pgbench's check that its accounts table exists and whether it is partitioned.
    if sql.contains("pg_catalog.pg_partitioned_table") && sql.contains("c.relname = '") {
        let at = sql.find("c.relname = '")? + "c.relname = '".len();
        let name = &sql[at..at + sql[at..].find('\'')?];
        let exists = db.tables().iter().any(|t| t.schema.name == name);
        let out =
            if exists { vec![vec![Value::Int(1), Value::Null, Value::Int(0)]] } else { Vec::new() };
        return Some(rows(
            &[("n", Type::Int4), ("partstrat", Type::Text), ("count", Type::Int8)],
            out,
        ));
    }
    // The rest of a describe: policies, statistics, publications, inheritance, triggers,
    // foreign keys. Engram has none.
    let describe_family = [
        "pg_catalog.pg_policy",
        "pg_catalog.pg_statistic_ext",
        "pg_catalog.pg_publication",
        "pg_catalog.pg_inherits",
        "pg_catalog.pg_trigger",
        "pg_catalog.pg_constraint",
        "pg_catalog.pg_rewrite",
    ];
    if describe_family.iter().any(|t| sql.contains(t)) && sql.contains("= '") {
        return Some(rows(&[], Vec::new()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psql_patterns() {
        assert!(matches("t1", "t1"));
        assert!(!matches("t1", "t10"));
        assert!(matches("t.*", "t10"));
        assert!(matches("pg.*_accounts", "pgbench_accounts"));
        assert!(matches("t.", "t1") && !matches("t.", "t"));
        assert_eq!(
            name_pattern("WHERE c.relname OPERATOR(pg_catalog.~) '^(t1)$' COLLATE"),
            Some("t1".into())
        );
        assert_eq!(oid_after("WHERE c.oid = '16448';", "WHERE c.oid ="), Some(16_448));
    }
}
