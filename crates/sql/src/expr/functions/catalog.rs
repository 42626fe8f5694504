//! Functions over the catalog that introspection queries call (SQLAlchemy's and Django's
//! reflection, pgjdbc's `DatabaseMetaData`, psql): object ids as the system views number them
//! (`system::relations`), definitions written back as SQL.

use crate::error::SqlResult;
use crate::expr::{BExpr, Context};
use crate::system::{
    Relation, constraint_definition, constraints, index_definition, relations, user_tables,
};
use crate::types::{Elem, Type, Value, array};

/// Runs `f` over the relations of the catalog; `None` when the statement runs without a
/// session (a backfill), where no relation is known.
fn with_relations<T>(cx: &Context<'_>, f: impl FnOnce(&[Relation]) -> T) -> Option<T> {
    let mut f = Some(f);
    let mut out = None;
    cx.reserve.with_catalog(&mut |catalog| {
        if let Some(f) = f.take() {
            out = Some(f(&relations(&user_tables(catalog))));
        }
    });
    out
}

fn oid(value: &Value) -> Option<i64> {
    match value {
        Value::Int(oid) => Some(*oid),
        Value::Text(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn text(value: impl Into<crate::types::Text>) -> Value {
    Value::Text(value.into())
}

/// `pg_get_indexdef(index [, column, pretty])`: the CREATE INDEX statement, or with a column
/// number above 0 that column's name.
pub(super) fn pg_get_indexdef(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let Some(id) = oid(&values[0]) else { return Ok(Value::Null) };
    let column = match values.get(1) {
        Some(Value::Int(column)) => *column,
        _ => 0,
    };
    let found = with_relations(cx, |relations| {
        let relation = relations.iter().find(|r| r.oid == id && r.kind == 'i')?;
        if column > 0 {
            let (columns, ..) = relation.index.as_ref()?;
            let at = *columns.get(column as usize - 1)?;
            return Some(relation.table.schema.columns[at].name.clone());
        }
        index_definition(relation)
    });
    Ok(found.flatten().map_or(Value::Null, text))
}

/// `pg_get_constraintdef(constraint [, pretty])`: the constraint as its clause of CREATE
/// TABLE (`PRIMARY KEY (a)`, `UNIQUE (b)`, `FOREIGN KEY (c) REFERENCES t(id) ON DELETE
/// CASCADE`), by the id `pg_constraint` gives it.
pub(super) fn pg_get_constraintdef(
    values: &[Value],
    _: Type,
    cx: &Context<'_>,
) -> SqlResult<Value> {
    let Some(id) = oid(&values[0]) else { return Ok(Value::Null) };
    let mut found = None;
    cx.reserve.with_catalog(&mut |catalog| {
        found = constraints(&user_tables(catalog))
            .iter()
            .find(|c| c.oid == id)
            .map(constraint_definition);
    });
    Ok(found.map_or(Value::Null, text))
}

/// `to_regclass(name)`: the relation's id, NULL when there is none.
pub(super) fn to_regclass(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let Value::Text(name) = &values[0] else { return Ok(Value::Null) };
    let name = name.strip_prefix("public.").unwrap_or(name);
    let name = name.trim_matches('"');
    let found =
        with_relations(cx, |relations| relations.iter().find(|r| r.name == name).map(|r| r.oid));
    Ok(found.flatten().map_or(Value::Null, Value::Int))
}

/// The name of the relation with id `oid` (`regclass` as text); the id itself when there is
/// none, as PostgreSQL prints an unknown one.
pub(super) fn relation_name(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let Some(id) = oid(&values[0]) else { return Ok(Value::Null) };
    let found = with_relations(cx, |relations| {
        relations.iter().find(|r| r.oid == id).map(|r| r.name.clone())
    });
    Ok(text(found.flatten().unwrap_or_else(|| id.to_string())))
}

/// `to_regtype(name)`: the type's id, by the names `pg_type` and SQL give it; NULL when
/// there is none.
pub(super) fn to_regtype(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let Value::Text(name) = &values[0] else { return Ok(Value::Null) };
    let name = name.trim().trim_start_matches("pg_catalog.").to_ascii_lowercase();
    const BASES: [u32; 18] = [
        16, 17, 20, 21, 23, 25, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1700, 2205,
        2950,
    ];
    let types = BASES
        .iter()
        .filter_map(|&oid| Type::from_oid(oid))
        .flat_map(|ty| [Some(ty), Elem::of(ty).map(Type::Array)].into_iter().flatten());
    let found = types.into_iter().find(|ty| {
        ty.typname() == name || ty.name() == name || (name == "integer" && *ty == Type::Int4)
    });
    Ok(found.map_or(Value::Null, |ty| Value::Int(i64::from(ty.oid()))))
}

/// Every relation is in `public` or `pg_catalog`, both on the search path.
pub(super) fn pg_table_is_visible(_: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Bool(true))
}

/// `format_type(type, modifier)`: the type's SQL name with its modifier (`character
/// varying(20)`, `numeric(10,2)`), as `pg_attribute.atttypmod` holds it.
pub(super) fn format_type(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let Some(id) = oid(&values[0]) else { return Ok(Value::Null) };
    let modifier = match values.get(1) {
        Some(Value::Int(modifier)) => *modifier,
        _ => -1,
    };
    let Some(ty) = u32::try_from(id).ok().and_then(Type::from_oid) else {
        return Ok(text("???"));
    };
    let with_modifier = match ty {
        Type::Varchar(_) if modifier >= 4 => Type::Varchar((modifier - 4) as u32),
        Type::Char(_) if modifier >= 4 => Type::Char((modifier - 4) as u32),
        Type::Char(_) => return Ok(text("character")),
        Type::Numeric { .. } if modifier >= 4 => {
            let packed = modifier - 4;
            Type::Numeric { precision: (packed >> 16) as u8, scale: (packed & 0xFFFF) as u8 }
        }
        Type::Unknown => return Ok(text("unknown")),
        ty => ty,
    };
    Ok(text(with_modifier.name()))
}

/// `current_schemas(implicit)`: the search path, with `pg_catalog` when `implicit`.
pub(super) fn current_schemas(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let mut schemas = Vec::new();
    if matches!(values[0], Value::Bool(true)) {
        schemas.push(text("pg_catalog"));
    }
    schemas.push(text("public"));
    Ok(array(schemas))
}

/// Comments (`obj_description`, `col_description`, `shobj_description`): Engram keeps none.
pub(super) fn no_description(_: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(Value::Null)
}

/// The `COMMENT ON` text of the relation with id `id` (a table or an index), or with `column`
/// (from 1) of one of its columns; `None` when there is none.
fn description(cx: &Context<'_>, id: i64, column: Option<i64>) -> Option<String> {
    let mut out = None;
    cx.reserve.with_catalog(&mut |catalog| {
        let relations = relations(&user_tables(catalog));
        let Some(relation) = relations.iter().find(|r| r.oid == id) else { return };
        let key = match (column, relation.kind) {
            (None, 'i') => format!("index:{}", relation.name),
            (None, _) => format!("table:{}", relation.name),
            (Some(at), 'r') => {
                let columns = &relation.table.schema.columns;
                let Some(column) = usize::try_from(at - 1).ok().and_then(|at| columns.get(at))
                else {
                    return;
                };
                format!("column:{}.{}", relation.name, column.name)
            }
            (Some(_), _) => return,
        };
        out = catalog.comments.get(&key).cloned();
    });
    out
}

/// `obj_description(object [, catalog])`: a relation's comment.
pub(super) fn obj_description(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let Some(id) = oid(&values[0]) else { return Ok(Value::Null) };
    if let Some(Value::Text(catalog)) = values.get(1)
        && catalog.as_str() != "pg_class"
    {
        return Ok(Value::Null);
    }
    Ok(description(cx, id, None).map_or(Value::Null, text))
}

/// `col_description(table, column)`: a column's comment.
pub(super) fn col_description(values: &[Value], _: Type, cx: &Context<'_>) -> SqlResult<Value> {
    let (Some(id), Some(column)) = (oid(&values[0]), oid(&values[1])) else {
        return Ok(Value::Null);
    };
    Ok(description(cx, id, Some(column)).map_or(Value::Null, text))
}

/// `pg_get_expr(expression, relation [, pretty])`: Engram's catalog keeps expressions (column
/// defaults) as SQL text already.
pub(super) fn pg_get_expr(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(values[0].clone())
}

/// The one role's name.
pub(super) fn pg_get_userbyid(_: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(text("postgres"))
}

/// `has_table_privilege` and its kin: the one role may do everything.
pub(super) fn has_privilege(
    _: &[BExpr],
    _: &[Value],
    _: Type,
    _: &Context<'_>,
) -> SqlResult<Value> {
    Ok(Value::Bool(true))
}

/// The one encoding.
pub(super) fn pg_encoding_to_char(_: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    Ok(text("UTF8"))
}

/// `quote_ident(name)`: the name, in double quotes when it needs them.
pub(super) fn quote_ident(values: &[Value], _: Type, _: &Context<'_>) -> SqlResult<Value> {
    let Value::Text(name) = &values[0] else { return Ok(Value::Null) };
    let plain = !name.is_empty()
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED.contains(&name.as_str());
    if plain {
        return Ok(values[0].clone());
    }
    Ok(text(format!("\"{}\"", name.replace('"', "\"\""))))
}

/// PostgreSQL's reserved key words, which a name must be quoted to be.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// `text[]`, for the result of `current_schemas`.
pub(super) fn text_array(_: &[Type]) -> Type {
    Type::Array(Elem::Text)
}
