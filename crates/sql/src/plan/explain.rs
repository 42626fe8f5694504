//! EXPLAIN: a plan as indented text, one line per node.

use super::{Access, ConflictAction, Derived, InsertRows, Path, Plan, QueryPlan};
use crate::ast::{JoinKind, SetOp};
use std::fmt::Write as _;

/// EXPLAIN's text: one line per plan node, indented.
pub fn explain(plan: &Plan) -> Vec<String> {
    let mut lines = Vec::new();
    match plan {
        Plan::Query(query) => explain_query(query, 0, &mut lines),
        Plan::Insert(insert) => {
            lines.push(format!("Insert on {}", insert.table.schema.name));
            if let Some(conflict) = &insert.on_conflict {
                let target = match conflict.index {
                    None => insert
                        .table
                        .schema
                        .primary_name
                        .clone()
                        .unwrap_or_else(|| "primary key".into()),
                    Some(i) => insert.table.schema.indexes[i].name.clone(),
                };
                let action = match conflict.action {
                    ConflictAction::Nothing => "NOTHING",
                    ConflictAction::Update { .. } => "UPDATE",
                };
                lines.push(format!("  Conflict Resolution: {action} on {target}"));
            }
            match &insert.rows {
                InsertRows::Values(rows) => {
                    lines.push(format!("  ->  Values ({} rows)", rows.len()))
                }
                InsertRows::Query(query, _) => explain_query(query, 1, &mut lines),
            }
        }
        Plan::Modify(modify) => {
            let verb = if modify.assignments.is_empty() { "Delete" } else { "Update" };
            lines.push(format!("{verb} on {}", modify.access.table.schema.name));
            lines.push(format!("  ->  {}", describe_access(&modify.access)));
            if modify.filter.is_some() {
                lines.push("        Filter: (WHERE clause)".into());
            }
        }
    }
    lines
}

fn explain_query(query: &QueryPlan, depth: usize, lines: &mut Vec<String>) {
    let pad = |depth: usize| {
        if depth == 0 { String::new() } else { format!("{}->  ", "  ".repeat(depth * 2 - 1)) }
    };
    let mut depth = depth;
    if query.limit.is_some() || query.offset.is_some() {
        lines.push(format!("{}Limit", pad(depth)));
        depth += 1;
    }
    if !query.sort.is_empty() {
        lines.push(format!("{}Sort ({} keys)", pad(depth), query.sort.len()));
        depth += 1;
    }
    if query.distinct {
        lines.push(format!("{}Unique", pad(depth)));
        depth += 1;
    }
    if let Some(grouping) = &query.grouping {
        let name = if grouping.keys.is_empty() { "Aggregate" } else { "HashAggregate" };
        let mut line = format!("{}{name}", pad(depth));
        if !grouping.keys.is_empty() {
            let _ = write!(line, " ({} group keys)", grouping.keys.len());
        }
        lines.push(line);
        depth += 1;
    }
    if query.tables.is_empty() {
        lines.push(format!("{}Result", pad(depth)));
        return;
    }
    if query.tables.len() > 1 {
        let kind = if query.tables.iter().any(|t| t.kind == JoinKind::Left) {
            "Nested Loop Left Join"
        } else {
            "Nested Loop"
        };
        lines.push(format!("{}{kind}", pad(depth)));
        depth += 1;
    }
    for access in &query.tables {
        let Some(at) = access.derived else {
            lines.push(format!("{}{}", pad(depth), describe_access(access)));
            continue;
        };
        let name = &access.table.schema.name;
        let mut derived = &query.derived[at];
        if let Derived::Lateral { source, .. } = derived {
            lines.push(format!("{}Lateral (computed for each row before it)", pad(depth)));
            derived = source;
        }
        match derived {
            Derived::Query(plan) => {
                lines.push(format!("{}Subquery Scan on {name}", pad(depth)));
                explain_query(plan, depth + 1, lines);
            }
            Derived::SetOp { op, all, left, right } => {
                let node = match op {
                    SetOp::Union if *all => "Append",
                    SetOp::Union => "HashAggregate (UNION)",
                    SetOp::Intersect => "HashSetOp Intersect",
                    SetOp::Except => "HashSetOp Except",
                };
                let all = if *all && *op != SetOp::Union { " All" } else { "" };
                lines.push(format!("{}{node}{all}", pad(depth)));
                explain_query(left, depth + 1, lines);
                explain_query(right, depth + 1, lines);
            }
            Derived::Series { .. } => {
                lines.push(format!("{}Function Scan on generate_series {name}", pad(depth)))
            }
            // (A source is lateral once: unwrapped above.)
            Derived::Lateral { .. } => {}
            Derived::Json { name: function, .. } => {
                lines.push(format!("{}Function Scan on {function} {name}", pad(depth)))
            }
            Derived::Unnest(_) => {
                lines.push(format!("{}Function Scan on unnest {name}", pad(depth)))
            }
            Derived::Numbered(inner) if matches!(**inner, Derived::Unnest(_)) => {
                lines.push(format!("{}Function Scan on unnest {name}", pad(depth)))
            }
            Derived::Numbered(_) => {
                lines.push(format!("{}Function Scan on generate_series {name}", pad(depth)))
            }
            Derived::Recursive { anchor, step, .. } => {
                lines.push(format!("{}CTE Scan on {name}", pad(depth)));
                lines.push(format!("{}Recursive Union", pad(depth + 1)));
                explain_query(anchor, depth + 2, lines);
                explain_query(step, depth + 2, lines);
            }
            Derived::Work(_) => lines.push(format!("{}WorkTable Scan on {name}", pad(depth))),
        }
    }
    if query.filter.is_some() {
        lines.push(format!("{}Filter: (WHERE clause)", "  ".repeat(depth * 2 + 2)));
    }
    for sub in &query.subqueries {
        lines.push(format!("{}SubPlan", "  ".repeat(depth * 2 + 2)));
        explain_query(sub, depth + 2, lines);
    }
}

fn describe_access(access: &Access) -> String {
    let schema = &access.table.schema;
    let name = &schema.name;
    let column_names = |columns: &[usize], n: usize| -> String {
        columns
            .iter()
            .take(n)
            .map(|c| schema.columns[*c].name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &access.path {
        Path::Point(_) => format!(
            "Point Lookup on {name} using {} ({})",
            schema.primary_name.clone().unwrap_or_else(|| "primary key".into()),
            column_names(&schema.primary_key, usize::MAX)
        ),
        Path::Points { list, .. } => format!(
            "Point Lookups on {name} using {} ({}), {} listed keys",
            schema.primary_name.clone().unwrap_or_else(|| "primary key".into()),
            column_names(&schema.primary_key, usize::MAX),
            list.len()
        ),
        Path::Range { index, eq, low, high, descending } => {
            let (label, columns) = match index {
                None if schema.primary_key.is_empty() => return format!("Seq Scan on {name}"),
                None => (
                    schema.primary_name.clone().unwrap_or_else(|| "primary key".into()),
                    &schema.primary_key,
                ),
                Some(i) => (schema.indexes[*i].name.clone(), &schema.indexes[*i].columns),
            };
            let bounded = eq.len() + usize::from(low.is_some() || high.is_some());
            if bounded == 0 && index.is_none() {
                return format!("Seq Scan on {name}{}", if *descending { " Backward" } else { "" });
            }
            format!(
                "Index Scan{} on {name} using {label} ({})",
                if *descending { " Backward" } else { "" },
                column_names(columns, bounded.max(1))
            )
        }
    }
}
