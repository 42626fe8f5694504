//! The binder and planner: names resolved against the catalog, types checked, parameters'
//! types inferred, and each table's access path chosen (point lookup, primary or index range
//! scan, full scan), with ORDER BY satisfied by the scan order and LIMIT pushed into the scan
//! when it can be.

use crate::ast::{self, BinaryOp, Expr, JoinKind, Literal};
use crate::catalog::{Catalog, TableInfo};
use crate::codec::Wanted;
use crate::depth;
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Func};
use crate::types::{Type, Value, cast, parse_text};
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct OutputColumn {
    pub name: String,
    pub ty: Type,
}

/// How one table's rows are found.
#[derive(Debug, Clone)]
pub enum Path {
    /// Every primary-key column is fixed: at most one row.
    Point(Vec<BExpr>),
    /// Every primary-key column fixed but the one at `at`, which takes each value of an `IN`
    /// list in turn (`key[at]` is a placeholder): at most one row per value, read in key order.
    Points { key: Vec<BExpr>, at: usize, list: Vec<BExpr> },
    /// A scan of the primary key (`index: None`) or a secondary index: the leading `eq`
    /// columns fixed, the next one optionally bounded.
    Range {
        index: Option<usize>,
        eq: Vec<BExpr>,
        low: Option<(BExpr, bool)>,
        high: Option<(BExpr, bool)>,
        descending: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Access {
    pub table: Arc<TableInfo>,
    /// Position of the table's first column in the joined row.
    pub offset: usize,
    pub path: Path,
    pub kind: JoinKind,
    /// A LEFT JOIN's ON condition (inner joins fold theirs into the filter).
    pub on: Option<BExpr>,
    /// Columns to decode.
    pub wanted: Wanted,
    /// The conjuncts the path decides exactly (left out of the filter). A lookup that falls
    /// back to a full scan (a key value that does not convert) tests them itself.
    pub implied: Option<BExpr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
}

#[derive(Debug, Clone)]
pub struct Aggregate {
    pub func: AggFunc,
    pub arg: Option<BExpr>,
    pub distinct: bool,
    pub ty: Type,
}

#[derive(Debug, Clone)]
pub struct Grouping {
    pub keys: Vec<BExpr>,
    pub aggregates: Vec<Aggregate>,
    pub having: Option<BExpr>,
}

#[derive(Debug, Clone)]
pub struct SortKey {
    pub expr: BExpr,
    pub descending: bool,
    pub nulls_first: bool,
}

#[derive(Debug, Clone)]
pub struct QueryPlan {
    pub tables: Vec<Access>,
    /// Rows of a `VALUES` list or of a SELECT without FROM (one empty row).
    pub values: Option<Vec<Vec<BExpr>>>,
    pub filter: Option<BExpr>,
    pub grouping: Option<Grouping>,
    pub output: Vec<BExpr>,
    pub columns: Vec<OutputColumn>,
    /// Sort keys over the same row as `output`; empty when the scan order already fits.
    pub sort: Vec<SortKey>,
    pub distinct: bool,
    pub limit: Option<BExpr>,
    pub offset: Option<BExpr>,
    pub for_update: bool,
    /// The row lock a locking read takes, and what it does at a held row.
    pub lock: (crate::locks::RowLockMode, crate::locks::WaitPolicy),
    pub width: usize,
    /// Uncorrelated subqueries, run once before the query.
    pub subqueries: Vec<QueryPlan>,
    /// Per output expression: whether it is a column of the innermost table that no other
    /// output expression reads, so the executor moves the decoded value into the result row
    /// instead of cloning it (the next row overwrites that column anyway). Empty: none.
    pub moves: Vec<bool>,
}

#[derive(Debug, Clone)]
pub enum ConflictAction {
    Nothing,
    /// Assignments over the row `existing columns ++ excluded columns`.
    Update {
        assignments: Vec<(usize, BExpr)>,
        filter: Option<BExpr>,
    },
}

#[derive(Debug, Clone)]
pub struct ConflictPlan {
    /// `None`: the primary key; else a unique index.
    pub index: Option<usize>,
    pub action: ConflictAction,
}

#[derive(Debug, Clone)]
pub enum InsertRows {
    /// Per row, per table column: the expression, or `None` for the column's default.
    Values(Vec<Vec<Option<BExpr>>>),
    /// A query whose output column i goes to table column `targets[i]`.
    Query(Box<QueryPlan>, Vec<usize>),
}

#[derive(Debug, Clone)]
pub struct InsertPlan {
    pub table: Arc<TableInfo>,
    pub rows: InsertRows,
    /// For VALUES rows, per row and table column: whether the value is a parameter declared or
    /// inferred as the column's own type. A bound statement's parameters conform to their
    /// types (`types::conforms`, or converted when they do not), so these are not cast again.
    pub conformed: Vec<Vec<bool>>,
    pub defaults: Vec<Option<BExpr>>,
    pub on_conflict: Option<ConflictPlan>,
    pub returning: Vec<BExpr>,
    /// Per RETURNING expression: whether it is a column no other one reads, moved into the
    /// result row (the row is not read again) instead of cloned.
    pub returning_moves: Vec<bool>,
    pub columns: Vec<OutputColumn>,
    pub subqueries: Vec<QueryPlan>,
}

#[derive(Debug, Clone)]
pub struct ModifyPlan {
    /// One access (the target table) with the WHERE clause as filter.
    pub access: Access,
    pub filter: Option<BExpr>,
    /// UPDATE's assignments (table column, value over the old row); empty for DELETE.
    pub assignments: Arc<[(usize, BExpr)]>,
    pub delete: bool,
    pub returning: Vec<BExpr>,
    /// Per RETURNING expression: whether it is a column no other one reads, moved into the
    /// result row (the row is not read again) instead of cloned.
    pub returning_moves: Vec<bool>,
    pub columns: Vec<OutputColumn>,
    pub subqueries: Vec<QueryPlan>,
    /// Whether an assignment changes a primary-key column.
    pub changes_key: bool,
    /// Whether no assignment changes a column of a secondary index: the engine is told that
    /// each changed row keeps its index keys (`Txn::update_same_keys`), and does not compare
    /// them at commit.
    pub keeps_index_keys: bool,
    /// The columns the statement reads from each row it changes (filters, assignments,
    /// RETURNING, the key when it may change); the others are copied as bytes.
    pub decode: Arc<Wanted>,
    /// An UPDATE of one row by its whole primary key, its WHERE decided by the key, with no
    /// RETURNING, subquery or volatile function, that leaves the key as it is: commit may apply
    /// it again to the newest row at READ COMMITTED (`exec::Reapply`), as PostgreSQL does.
    pub reapplies: bool,
    /// The whole WHERE clause when the path reads a secondary index, whose columns may have
    /// changed between the scan and the locking re-read; `None` when `filter` suffices (a
    /// row found again by its primary key still satisfies what the path decided).
    pub recheck: Option<BExpr>,
}

#[derive(Debug, Clone)]
pub enum Plan {
    Query(QueryPlan),
    Insert(InsertPlan),
    Modify(ModifyPlan),
}

impl Plan {
    pub fn columns(&self) -> &[OutputColumn] {
        match self {
            Plan::Query(plan) => &plan.columns,
            Plan::Insert(plan) => &plan.columns,
            Plan::Modify(plan) => &plan.columns,
        }
    }
}

struct ScopeTable {
    name: String,
    columns: Vec<(String, Type)>,
    offset: usize,
}

#[derive(Default)]
struct Scope {
    tables: Vec<ScopeTable>,
}

impl Scope {
    fn width(&self) -> usize {
        self.tables.last().map_or(0, |t| t.offset + t.columns.len())
    }

    fn push(&mut self, name: String, columns: Vec<(String, Type)>) -> SqlResult<usize> {
        if self.tables.iter().any(|t| t.name == name) {
            return Err(SqlError::new(
                "42712",
                format!("table name \"{name}\" specified more than once"),
            ));
        }
        let offset = self.width();
        self.tables.push(ScopeTable { name, columns, offset });
        Ok(offset)
    }

    fn resolve(&self, table: Option<&str>, name: &str) -> SqlResult<(usize, Type)> {
        let mut found = None;
        for scope_table in &self.tables {
            if table.is_some_and(|t| t != scope_table.name) {
                continue;
            }
            if let Some(at) = scope_table.columns.iter().position(|(c, _)| c == name) {
                if found.is_some() {
                    return Err(SqlError::new(
                        "42702",
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some((scope_table.offset + at, scope_table.columns[at].1));
            }
        }
        match (found, table) {
            (Some(found), _) => Ok(found),
            (None, Some(table)) if !self.tables.iter().any(|t| t.name == table) => Err(
                SqlError::new("42P01", format!("missing FROM-clause entry for table \"{table}\"")),
            ),
            (None, Some(table)) => Err(SqlError::undefined_column(&format!("{table}.{name}"))),
            (None, None) => Err(SqlError::undefined_column(name)),
        }
    }
}

fn table_columns(table: &TableInfo) -> Vec<(String, Type)> {
    table.schema.columns.iter().map(|c| (c.name.clone(), c.ty)).collect()
}

/// Aggregation state while binding the select list of a grouped query.
struct GroupBinding {
    keys: Vec<BExpr>,
    key_types: Vec<Type>,
    aggregates: Vec<Aggregate>,
}

#[allow(missing_debug_implementations)]
pub struct Binder<'a> {
    catalog: &'a Catalog,
    /// The session's settings, for the `pg_settings` view.
    settings: Option<&'a std::collections::BTreeMap<String, String>>,
    /// The engine, for the views of its statistics (`engram_stat_conflicts`).
    engine: Option<&'a engram_engine::Database>,
    /// Parameter types, inferred from their use (`Unknown` until decided).
    pub params: Vec<Type>,
    subqueries: Vec<QueryPlan>,
    /// A system view was read: its rows were made now, so the plan must not be reused.
    volatile: bool,
}

fn is_aggregate(name: &str) -> bool {
    matches!(name, "count" | "sum" | "min" | "max" | "avg")
}

fn contains_aggregate(expr: &Expr) -> bool {
    depth::grow(|| contains_aggregate_node(expr))
}

fn contains_aggregate_node(expr: &Expr) -> bool {
    match expr {
        Expr::Function { name, args, .. } => {
            is_aggregate(name) || args.iter().any(contains_aggregate)
        }
        Expr::Negate(e)
        | Expr::Not(e)
        | Expr::Cast { expr: e, .. }
        | Expr::IsNull { expr: e, .. }
        | Expr::IsBool { expr: e, .. } => contains_aggregate(e),
        Expr::Binary { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        Expr::Between { expr, low, high, .. } => {
            contains_aggregate(expr) || contains_aggregate(low) || contains_aggregate(high)
        }
        Expr::InList { expr, list, .. } => {
            contains_aggregate(expr) || list.iter().any(contains_aggregate)
        }
        Expr::Like { expr, pattern, .. } => contains_aggregate(expr) || contains_aggregate(pattern),
        Expr::Case { operand, whens, otherwise } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || whens.iter().any(|(w, t)| contains_aggregate(w) || contains_aggregate(t))
                || otherwise.as_deref().is_some_and(contains_aggregate)
        }
        _ => false,
    }
}

fn split_conjuncts(expr: BExpr, out: &mut Vec<BExpr>) {
    let mut expr = expr;
    depth::grow(|| match &mut expr {
        BExpr::And(left, right) => {
            split_conjuncts(std::mem::replace(&mut **left, BExpr::Param(0)), out);
            split_conjuncts(std::mem::replace(&mut **right, BExpr::Param(0)), out);
        }
        _ => out.push(expr),
    })
}

/// The conjunction of `conjuncts` in their order, bracketed as a balanced tree (a WHERE of
/// thousands of ANDs nests a dozen levels deep, `depth.rs`).
fn join_conjuncts(conjuncts: Vec<BExpr>) -> Option<BExpr> {
    depth::balanced(conjuncts, &|left, right| BExpr::And(Box::new(left), Box::new(right)))
}

/// Whether a value of type `from` can be converted to key column type `to` without changing
/// which rows compare equal (so a key lookup finds exactly the rows the comparison accepts).
fn key_compatible(column: Type, from: Type) -> bool {
    match column {
        Type::Int2 | Type::Int4 | Type::Int8 => from.is_integer(),
        Type::Numeric { precision: 0, .. } => {
            from.is_integer() || matches!(from, Type::Numeric { .. })
        }
        Type::Numeric { .. } => from.is_integer(),
        Type::Float4 => false,
        Type::Float8 => from.is_numeric(),
        Type::Char(_) => false,
        Type::Varchar(_) | Type::Text => from.is_text(),
        Type::Date => from == Type::Date,
        Type::Timestamp => from == Type::Timestamp,
        Type::Bool => from == Type::Bool,
        Type::Bytea => from == Type::Bytea,
        Type::Unknown => false,
    }
}

#[derive(Default, Clone)]
struct ColumnBounds {
    /// Each bound with the position of the conjunct it came from, and whether the key lookup
    /// decides that conjunct exactly (so the filter need not test it again).
    eq: Option<(BExpr, usize, bool)>,
    low: Option<(BExpr, bool, usize, bool)>,
    high: Option<(BExpr, bool, usize, bool)>,
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a Catalog, param_types: &[Type]) -> Self {
        Binder {
            catalog,
            settings: None,
            engine: None,
            params: param_types.to_vec(),
            subqueries: Vec::new(),
            volatile: false,
        }
    }

    /// The session's settings, which the `pg_settings` view shows.
    pub fn with_settings(
        mut self,
        settings: &'a std::collections::BTreeMap<String, String>,
    ) -> Self {
        self.settings = Some(settings);
        self
    }

    /// The engine whose statistics views show.
    pub fn with_engine(mut self, engine: &'a engram_engine::Database) -> Self {
        self.engine = Some(engine);
        self
    }

    /// The table a query reads: a system view (made now) or a table of the catalog.
    fn read_table(&mut self, name: &str) -> SqlResult<Arc<TableInfo>> {
        if let Some(view) = crate::system::view(name, self.catalog, self.settings, self.engine) {
            self.volatile = true;
            return Ok(view);
        }
        self.catalog.table(name)
    }

    /// The table a statement writes: never a system view.
    fn written_table(&self, name: &str) -> SqlResult<Arc<TableInfo>> {
        if crate::system::is_view(name) {
            return Err(SqlError::new(
                "42501",
                format!("permission denied: \"{name}\" is a system view and cannot be changed"),
            ));
        }
        self.catalog.table(name)
    }

    fn note_param(&mut self, at: usize, ty: Type) {
        if self.params.len() <= at {
            self.params.resize(at + 1, Type::Unknown);
        }
        if self.params[at] == Type::Unknown && ty != Type::Unknown {
            self.params[at] = ty;
        }
    }

    /// Gives an untyped expression (a string literal or parameter) the type `to`.
    fn coerce(&mut self, expr: BExpr, from: Type, to: Type) -> SqlResult<(BExpr, Type)> {
        if from != Type::Unknown || to == Type::Unknown {
            return Ok((expr, from));
        }
        let mut expr = expr;
        match &mut expr {
            BExpr::Const(value) => {
                Ok((BExpr::Const(cast(std::mem::replace(value, Value::Null), to, false)?), to))
            }
            BExpr::Param(at) => {
                let at = *at;
                self.note_param(at, to);
                Ok((BExpr::Param(at), to))
            }
            _ => Ok((BExpr::Cast { expr: Box::new(expr), ty: to }, to)),
        }
    }

    fn bind(&mut self, expr: &Expr, scope: &Scope) -> SqlResult<(BExpr, Type)> {
        self.bind_in(expr, scope, &mut None)
    }

    fn bind_in(
        &mut self,
        expr: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        depth::grow(|| self.bind_node(expr, scope, group))
    }

    fn bind_node(
        &mut self,
        expr: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        if group.is_some() {
            if let Expr::Function { name, .. } = expr
                && is_aggregate(name)
            {
                return self.bind_aggregate(expr, scope, group);
            }
            if !contains_aggregate(expr) {
                // An expression that is a GROUP BY key reads the key.
                let mut none = None;
                if let Ok((bound, ty)) = self.bind_in(expr, scope, &mut none) {
                    let text = format!("{bound:?}");
                    let keys =
                        &group.as_ref().map(|g| &g.keys).into_iter().flatten().collect::<Vec<_>>();
                    if let Some(at) = keys.iter().position(|key| format!("{key:?}") == text) {
                        let key_type = group.as_ref().map_or(ty, |g| g.key_types[at]);
                        return Ok((BExpr::Column(at), key_type));
                    }
                    if bound.column_bound() == 0 {
                        return Ok((bound, ty));
                    }
                }
                if let Expr::Column { name, .. } = expr {
                    return Err(SqlError::new(
                        "42803",
                        format!(
                            "column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"
                        ),
                    ));
                }
            }
        }
        Ok(match expr {
            Expr::Column { table, name } => {
                let (at, ty) = scope.resolve(table.as_deref(), name)?;
                (BExpr::Column(at), ty)
            }
            Expr::Literal(literal) => match literal {
                Literal::Null => (BExpr::Const(Value::Null), Type::Unknown),
                Literal::Bool(b) => (BExpr::Const(Value::Bool(*b)), Type::Bool),
                Literal::String(s) => (BExpr::Const(Value::Text(s.clone().into())), Type::Unknown),
                Literal::Number(text) => {
                    if text.contains(['.', 'e', 'E']) {
                        let ty = Type::Numeric { precision: 0, scale: 0 };
                        (BExpr::Const(parse_text(text, ty)?), ty)
                    } else {
                        match text.parse::<i64>() {
                            Ok(v) if i32::try_from(v).is_ok() => {
                                (BExpr::Const(Value::Int(v)), Type::Int4)
                            }
                            Ok(v) => (BExpr::Const(Value::Int(v)), Type::Int8),
                            Err(_) => {
                                let ty = Type::Numeric { precision: 0, scale: 0 };
                                (BExpr::Const(parse_text(text, ty)?), ty)
                            }
                        }
                    }
                }
            },
            Expr::Param(n) => {
                let at = n - 1;
                self.note_param(at, Type::Unknown);
                (BExpr::Param(at), self.params[at])
            }
            Expr::Negate(inner) => {
                let (inner, ty) = self.bind_in(inner, scope, group)?;
                if !ty.is_numeric() && ty != Type::Unknown {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: - {}",
                        ty.name()
                    )));
                }
                (BExpr::Negate(Box::new(inner), ty), ty)
            }
            Expr::Not(inner) => {
                let (inner, ty) = self.bind_in(inner, scope, group)?;
                let (inner, _) = self.expect_bool(inner, ty, "NOT")?;
                (BExpr::Not(Box::new(inner)), Type::Bool)
            }
            Expr::Binary { op, left, right } => {
                let (l, lt) = self.bind_in(left, scope, group)?;
                let (r, rt) = self.bind_in(right, scope, group)?;
                self.binary(*op, l, lt, r, rt)?
            }
            Expr::IsNull { expr, negated } => {
                let (inner, _) = self.bind_in(expr, scope, group)?;
                (BExpr::IsNull { expr: Box::new(inner), negated: *negated }, Type::Bool)
            }
            Expr::IsBool { expr, value, negated } => {
                let (inner, ty) = self.bind_in(expr, scope, group)?;
                let (inner, _) = self.expect_bool(inner, ty, "IS TRUE / IS FALSE")?;
                (
                    BExpr::IsBool { expr: Box::new(inner), value: *value, negated: *negated },
                    Type::Bool,
                )
            }
            Expr::InList { expr, list, negated } => {
                let (inner, inner_ty) = self.bind_in(expr, scope, group)?;
                let mut ty = inner_ty;
                let mut items = Vec::new();
                let mut types = Vec::new();
                for item in list {
                    let (bound, item_ty) = self.bind_in(item, scope, group)?;
                    ty = Type::common(ty, item_ty).ok_or_else(|| {
                        SqlError::mismatch(format!(
                            "IN types {} and {} cannot be matched",
                            ty.name(),
                            item_ty.name()
                        ))
                    })?;
                    items.push(bound);
                    types.push(item_ty);
                }
                let (inner, _) = self.coerce(inner, inner_ty, ty)?;
                let mut coerced = Vec::new();
                for (item, item_ty) in items.into_iter().zip(types) {
                    coerced.push(self.coerce(item, item_ty, ty)?.0);
                }
                (
                    BExpr::InList { expr: Box::new(inner), list: coerced, negated: *negated },
                    Type::Bool,
                )
            }
            Expr::InSubquery { expr, query, negated } => {
                let (inner, ty) = self.bind_in(expr, scope, group)?;
                let (index, sub_ty) = self.subquery(query)?;
                let (inner, _) = self.coerce(inner, ty, sub_ty)?;
                (
                    BExpr::InSubquery { expr: Box::new(inner), subquery: index, negated: *negated },
                    Type::Bool,
                )
            }
            Expr::Exists { query, negated } => {
                let (index, _) = self.subquery(query)?;
                (BExpr::Exists { subquery: index, negated: *negated }, Type::Bool)
            }
            Expr::Subquery(query) => {
                let (index, ty) = self.subquery(query)?;
                (BExpr::Subquery(index), ty)
            }
            Expr::Between { expr, low, high, negated } => {
                let (e, et) = self.bind_in(expr, scope, group)?;
                let (lo, lot) = self.bind_in(low, scope, group)?;
                let (hi, hit) = self.bind_in(high, scope, group)?;
                let (ge, _) = self.binary(BinaryOp::GtEq, e.clone(), et, lo, lot)?;
                let (le, _) = self.binary(BinaryOp::LtEq, e, et, hi, hit)?;
                let both = BExpr::And(Box::new(ge), Box::new(le));
                (if *negated { BExpr::Not(Box::new(both)) } else { both }, Type::Bool)
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let (e, et) = self.bind_in(expr, scope, group)?;
                let (p, pt) = self.bind_in(pattern, scope, group)?;
                let (e, et) = self.coerce(e, et, Type::Text)?;
                let (p, pt) = self.coerce(p, pt, Type::Text)?;
                if !et.is_text() || !pt.is_text() {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: {} ~~ {}",
                        et.name(),
                        pt.name()
                    )));
                }
                (
                    BExpr::Like {
                        expr: Box::new(e),
                        pattern: Box::new(p),
                        negated: *negated,
                        case_insensitive: *case_insensitive,
                    },
                    Type::Bool,
                )
            }
            Expr::Cast { expr, ty } => {
                let (inner, from) = self.bind_in(expr, scope, group)?;
                if let BExpr::Param(at) = inner {
                    self.note_param(at, *ty);
                    return Ok((BExpr::Cast { expr: Box::new(inner), ty: *ty }, *ty));
                }
                if let BExpr::Const(value) = &inner {
                    return Ok((BExpr::Const(cast(value.clone(), *ty, true)?), *ty));
                }
                let _ = from;
                (BExpr::Cast { expr: Box::new(inner), ty: *ty }, *ty)
            }
            Expr::Function { name, args, distinct, star } => {
                if is_aggregate(name) {
                    return Err(SqlError::new(
                        "42803",
                        format!("aggregate function {name} is not allowed here"),
                    ));
                }
                if *distinct || *star {
                    return Err(SqlError::syntax(format!(
                        "{name}(DISTINCT ...) or {name}(*) is only valid for aggregates"
                    )));
                }
                self.function(name, args, scope, group)?
            }
            Expr::Case { operand, whens, otherwise } => {
                let operand = match operand {
                    Some(o) => Some(self.bind_in(o, scope, group)?),
                    None => None,
                };
                let mut result_ty = Type::Unknown;
                let mut bound_whens = Vec::new();
                for (when, then) in whens {
                    let (w, wt) = self.bind_in(when, scope, group)?;
                    let w = match &operand {
                        Some((_, ot)) => self.coerce(w, wt, *ot)?.0,
                        None => self.expect_bool(w, wt, "CASE WHEN")?.0,
                    };
                    let (t, tt) = self.bind_in(then, scope, group)?;
                    result_ty = Type::common(result_ty, tt).ok_or_else(|| {
                        SqlError::mismatch(format!(
                            "CASE types {} and {} cannot be matched",
                            result_ty.name(),
                            tt.name()
                        ))
                    })?;
                    bound_whens.push((w, t));
                }
                let otherwise = match otherwise {
                    Some(o) => {
                        let (e, et) = self.bind_in(o, scope, group)?;
                        result_ty = Type::common(result_ty, et).ok_or_else(|| {
                            SqlError::mismatch(format!(
                                "CASE types {} and {} cannot be matched",
                                result_ty.name(),
                                et.name()
                            ))
                        })?;
                        Some(Box::new(e))
                    }
                    None => None,
                };
                (
                    BExpr::Case {
                        operand: operand.map(|(o, _)| Box::new(o)),
                        whens: bound_whens,
                        otherwise,
                    },
                    if result_ty == Type::Unknown { Type::Text } else { result_ty },
                )
            }
            Expr::Default => {
                return Err(SqlError::syntax("DEFAULT is not allowed in this context"));
            }
        })
    }

    fn expect_bool(&mut self, expr: BExpr, ty: Type, what: &str) -> SqlResult<(BExpr, Type)> {
        let (expr, ty) = self.coerce(expr, ty, Type::Bool)?;
        if ty != Type::Bool {
            return Err(SqlError::mismatch(format!(
                "argument of {what} must be type boolean, not type {}",
                ty.name()
            )));
        }
        Ok((expr, ty))
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        l: BExpr,
        lt: Type,
        r: BExpr,
        rt: Type,
    ) -> SqlResult<(BExpr, Type)> {
        match op {
            BinaryOp::And | BinaryOp::Or => {
                let (l, _) = self.expect_bool(l, lt, op.symbol())?;
                let (r, _) = self.expect_bool(r, rt, op.symbol())?;
                let bound = if op == BinaryOp::And {
                    BExpr::And(Box::new(l), Box::new(r))
                } else {
                    BExpr::Or(Box::new(l), Box::new(r))
                };
                Ok((bound, Type::Bool))
            }
            BinaryOp::Concat => {
                let (l, _) = self.coerce(l, lt, Type::Text)?;
                let (r, _) = self.coerce(r, rt, Type::Text)?;
                Ok((
                    BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty: Type::Text },
                    Type::Text,
                ))
            }
            op if op.is_comparison() => {
                let (l, lt) = self.coerce(l, lt, rt)?;
                let (r, rt) = self.coerce(r, rt, lt)?;
                let (l, lt) = self.coerce(l, lt, Type::Text)?;
                let (r, rt) = self.coerce(r, rt, Type::Text)?;
                if Type::common(lt, rt).is_none() {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: {} {} {}",
                        lt.name(),
                        op.symbol(),
                        rt.name()
                    )));
                }
                Ok((BExpr::Compare { op, left: Box::new(l), right: Box::new(r) }, Type::Bool))
            }
            op => {
                // Arithmetic: an untyped operand takes the other's type.
                let (l, lt) = self.coerce(l, lt, rt)?;
                let (r, rt) = self.coerce(r, rt, lt)?;
                let date_math = matches!((lt, rt), (Type::Date, t) | (t, Type::Date) if t.is_integer())
                    || (lt == rt
                        && matches!(lt, Type::Date | Type::Timestamp)
                        && op == BinaryOp::Subtract);
                if date_math {
                    let ty = if lt == Type::Timestamp {
                        Type::Float8
                    } else if lt == rt {
                        Type::Int4
                    } else {
                        Type::Date
                    };
                    return Ok((
                        BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty },
                        ty,
                    ));
                }
                let (l, lt) = self.coerce(l, lt, Type::Numeric { precision: 0, scale: 0 })?;
                let (r, rt) = self.coerce(r, rt, Type::Numeric { precision: 0, scale: 0 })?;
                let ty = match Type::common(lt, rt) {
                    Some(ty) if ty.is_numeric() => match ty {
                        Type::Int2 => Type::Int4,
                        Type::Numeric { .. } => Type::Numeric { precision: 0, scale: 0 },
                        other => other,
                    },
                    _ => {
                        return Err(SqlError::undefined_function(format!(
                            "operator does not exist: {} {} {}",
                            lt.name(),
                            op.symbol(),
                            rt.name()
                        )));
                    }
                };
                Ok((BExpr::Arith { op, left: Box::new(l), right: Box::new(r), ty }, ty))
            }
        }
    }

    fn function(
        &mut self,
        name: &str,
        args: &[Expr],
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let mut bound = Vec::new();
        for arg in args {
            bound.push(self.bind_in(arg, scope, group)?);
        }
        let arity = |min: usize, max: usize| -> SqlResult<()> {
            if bound.len() < min || bound.len() > max {
                Err(SqlError::undefined_function(format!(
                    "function {name} with {} arguments does not exist",
                    bound.len()
                )))
            } else {
                Ok(())
            }
        };
        let (func, ty) = match name {
            "lower" | "upper" | "btrim" | "trim" => {
                arity(1, 1)?;
                let func = match name {
                    "lower" => Func::Lower,
                    "upper" => Func::Upper,
                    _ => Func::Trim,
                };
                (func, Type::Text)
            }
            "length" | "char_length" | "character_length" => {
                arity(1, 1)?;
                (Func::Length, Type::Int4)
            }
            "substr" | "substring" => {
                arity(2, 3)?;
                (Func::Substr, Type::Text)
            }
            "concat" => (Func::Concat, Type::Text),
            "repeat" => {
                arity(2, 2)?;
                (Func::Repeat, Type::Text)
            }
            "replace" => {
                arity(3, 3)?;
                (Func::Replace, Type::Text)
            }
            "left" | "right" => {
                arity(2, 2)?;
                (if name == "left" { Func::Left } else { Func::Right }, Type::Text)
            }
            "lpad" | "rpad" => {
                arity(2, 3)?;
                (if name == "lpad" { Func::Lpad } else { Func::Rpad }, Type::Text)
            }
            "strpos" => {
                arity(2, 2)?;
                (Func::Strpos, Type::Int4)
            }
            "coalesce" | "greatest" | "least" => {
                arity(1, 100)?;
                let mut ty = Type::Unknown;
                for (_, t) in &bound {
                    ty = Type::common(ty, *t).ok_or_else(|| {
                        SqlError::mismatch(format!("{name} types cannot be matched"))
                    })?;
                }
                let ty = if ty == Type::Unknown { Type::Text } else { ty };
                let func = match name {
                    "coalesce" => Func::Coalesce,
                    "greatest" => Func::Greatest,
                    _ => Func::Least,
                };
                (func, ty)
            }
            "nullif" => {
                arity(2, 2)?;
                (Func::Nullif, bound[0].1)
            }
            "abs" => {
                arity(1, 1)?;
                (Func::Abs, bound[0].1)
            }
            "round" => {
                arity(1, 2)?;
                (Func::Round, bound[0].1)
            }
            "floor" | "ceil" | "ceiling" => {
                arity(1, 1)?;
                (if name == "floor" { Func::Floor } else { Func::Ceil }, bound[0].1)
            }
            "mod" => {
                arity(2, 2)?;
                (Func::Mod, Type::common(bound[0].1, bound[1].1).unwrap_or(Type::Int8))
            }
            "now"
            | "current_timestamp"
            | "localtimestamp"
            | "transaction_timestamp"
            | "statement_timestamp" => {
                arity(0, 0)?;
                (Func::Now, Type::Timestamp)
            }
            "current_date" => (Func::CurrentDate, Type::Date),
            "version" => (Func::Version, Type::Text),
            "current_database" => (Func::CurrentDatabase, Type::Text),
            "current_schema" => (Func::CurrentSchema, Type::Text),
            "current_user" | "session_user" | "user" => (Func::CurrentUser, Type::Text),
            "random" => (Func::Random, Type::Float8),
            "pg_sleep" => {
                arity(1, 1)?;
                (Func::PgSleep, Type::Float8)
            }
            "nextval" => {
                return Err(SqlError::unsupported("nextval() outside a SERIAL column's default"));
            }
            _ => {
                return Err(SqlError::undefined_function(format!(
                    "function {name} does not exist"
                )));
            }
        };
        let mut args = Vec::new();
        for (expr, t) in bound {
            let target = match func {
                Func::Lower
                | Func::Upper
                | Func::Length
                | Func::Trim
                | Func::Concat
                | Func::Replace
                | Func::Strpos => Type::Text,
                Func::Substr
                | Func::Repeat
                | Func::Left
                | Func::Right
                | Func::Lpad
                | Func::Rpad
                    if args.is_empty() =>
                {
                    Type::Text
                }
                Func::Lpad | Func::Rpad if args.len() == 2 => Type::Text,
                Func::Substr
                | Func::Repeat
                | Func::Left
                | Func::Right
                | Func::Lpad
                | Func::Rpad => Type::Int8,
                _ => ty,
            };
            args.push(self.coerce(expr, t, target)?.0);
        }
        Ok((BExpr::Call { func, args, ty }, ty))
    }

    fn bind_aggregate(
        &mut self,
        expr: &Expr,
        scope: &Scope,
        group: &mut Option<GroupBinding>,
    ) -> SqlResult<(BExpr, Type)> {
        let Expr::Function { name, args, distinct, star } = expr else {
            unreachable!("checked by the caller")
        };
        let (func, arg, ty) = if *star {
            if name != "count" {
                return Err(SqlError::syntax(format!("{name}(*) is not valid; only count(*)")));
            }
            (AggFunc::CountStar, None, Type::Int8)
        } else {
            let [arg] = args.as_slice() else {
                return Err(SqlError::undefined_function(format!(
                    "function {name} takes one argument"
                )));
            };
            if contains_aggregate(arg) {
                return Err(SqlError::new("42803", "aggregate function calls cannot be nested"));
            }
            let (bound, arg_ty) = self.bind(arg, scope)?;
            let (bound, arg_ty) = self.coerce(bound, arg_ty, Type::Text)?;
            let (func, ty) = match name.as_str() {
                "count" => (AggFunc::Count, Type::Int8),
                "min" | "max" => (if name == "min" { AggFunc::Min } else { AggFunc::Max }, arg_ty),
                "sum" | "avg" => {
                    if !arg_ty.is_numeric() {
                        return Err(SqlError::undefined_function(format!(
                            "function {name}({}) does not exist",
                            arg_ty.name()
                        )));
                    }
                    let ty = match (name.as_str(), arg_ty) {
                        ("sum", Type::Int2 | Type::Int4) => Type::Int8,
                        (_, Type::Float4 | Type::Float8) => Type::Float8,
                        _ => Type::Numeric { precision: 0, scale: 0 },
                    };
                    (if name == "sum" { AggFunc::Sum } else { AggFunc::Avg }, ty)
                }
                _ => unreachable!("is_aggregate"),
            };
            (func, Some(bound), ty)
        };
        let binding = group
            .as_mut()
            .ok_or_else(|| SqlError::new("42803", "aggregate functions are not allowed here"))?;
        binding.aggregates.push(Aggregate { func, arg, distinct: *distinct, ty });
        Ok((BExpr::Column(binding.keys.len() + binding.aggregates.len() - 1), ty))
    }

    fn subquery(&mut self, query: &ast::Query) -> SqlResult<(usize, Type)> {
        let plan = self.query(query)?;
        if plan.columns.len() != 1 {
            return Err(SqlError::syntax("subquery must return only one column"));
        }
        let ty = plan.columns[0].ty;
        self.subqueries.push(plan);
        Ok((self.subqueries.len() - 1, ty))
    }

    /// Plans a statement that reads or writes rows.
    pub fn statement(self, statement: &ast::Statement) -> SqlResult<(Plan, Vec<Type>)> {
        self.statement_volatile(statement).map(|(plan, params, _)| (plan, params))
    }

    /// [`Binder::statement`], and whether the plan read a system view (then it holds rows
    /// made now and must be made again for the next execution).
    pub fn statement_volatile(
        mut self,
        statement: &ast::Statement,
    ) -> SqlResult<(Plan, Vec<Type>, bool)> {
        let plan = match statement {
            ast::Statement::Query(query) => {
                let mut plan = self.query(query)?;
                plan.subqueries.append(&mut self.subqueries);
                Plan::Query(plan)
            }
            ast::Statement::Insert(insert) => Plan::Insert(self.insert(insert)?),
            ast::Statement::Update(update) => Plan::Modify(self.modify(
                &update.table,
                update.filter.as_ref(),
                Some(&update.assignments),
                &update.returning,
            )?),
            ast::Statement::Delete(delete) => Plan::Modify(self.modify(
                &delete.table,
                delete.filter.as_ref(),
                None,
                &delete.returning,
            )?),
            _ => return Err(SqlError::new("XX000", "not a statement with a plan")),
        };
        let params =
            self.params.iter().map(|t| if *t == Type::Unknown { Type::Text } else { *t }).collect();
        Ok((plan, params, self.volatile))
    }

    fn query(&mut self, query: &ast::Query) -> SqlResult<QueryPlan> {
        let select = match &query.body {
            ast::QueryBody::Values(rows) => return self.values_query(rows, query),
            ast::QueryBody::Select(select) => select,
        };
        let saved_subqueries = std::mem::take(&mut self.subqueries);
        let mut scope = Scope::default();
        let mut tables = Vec::new();
        let mut conjuncts = Vec::new();
        let mut left_ons = Vec::new();
        for item in &select.from {
            let mut refs = vec![(&item.table, JoinKind::Inner, None)];
            for join in &item.joins {
                refs.push((&join.table, join.kind, join.on.as_ref()));
            }
            for (table_ref, kind, on) in refs {
                let table = self.read_table(&table_ref.name)?;
                // `pg_catalog.pg_class` is `pg_class` to the query's column references.
                let bare = table_ref.name.rsplit('.').next().unwrap_or(&table_ref.name);
                let name = table_ref.alias.clone().unwrap_or_else(|| bare.to_string());
                let offset = scope.push(name, table_columns(&table))?;
                let on = match on {
                    Some(on) => {
                        let (bound, ty) = self.bind(on, &scope)?;
                        Some(self.expect_bool(bound, ty, "JOIN ... ON")?.0)
                    }
                    None => None,
                };
                match (kind, on) {
                    (JoinKind::Inner, Some(on)) => split_conjuncts(on, &mut conjuncts),
                    (JoinKind::Left, on) => left_ons.push((tables.len(), on)),
                    (JoinKind::Inner, None) => {}
                }
                tables.push((table, offset, kind));
            }
        }
        if let Some(filter) = &select.filter {
            if contains_aggregate(filter) {
                return Err(SqlError::new("42803", "aggregate functions are not allowed in WHERE"));
            }
            let (bound, ty) = self.bind(filter, &scope)?;
            split_conjuncts(self.expect_bool(bound, ty, "WHERE")?.0, &mut conjuncts);
        }
        let width = scope.width();
        let row_types: Vec<Type> =
            scope.tables.iter().flat_map(|t| t.columns.iter().map(|(_, ty)| *ty)).collect();
        // Access paths, in FROM order: each table may use conjuncts over earlier tables.
        let mut accesses = Vec::new();
        let mut decided = vec![false; conjuncts.len()];
        for (position, (table, offset, kind)) in tables.iter().enumerate() {
            let on = left_ons.iter().find(|(at, _)| *at == position).and_then(|(_, on)| on.clone());
            let mut usable = Vec::new();
            match kind {
                JoinKind::Inner => usable.extend(conjuncts.iter().cloned()),
                JoinKind::Left => {
                    if let Some(on) = &on {
                        split_conjuncts(on.clone(), &mut usable);
                    }
                }
            }
            let (path, mut implied) =
                choose_path(table, *offset, &usable, &self.params, &row_types);
            if *kind == JoinKind::Left {
                // ON conditions stay whole: they decide which rows are NULL-extended.
                implied.clear();
            }
            for &at in &implied {
                decided[at] = true;
            }
            accesses.push(Access {
                table: Arc::clone(table),
                offset: *offset,
                path,
                kind: *kind,
                on,
                wanted: Wanted::marked(Vec::new(), &[]),
                implied: join_conjuncts(implied.iter().map(|at| usable[*at].clone()).collect()),
            });
        }
        // What the access paths do not decide is tested on every joined row.
        let conjuncts: Vec<BExpr> = conjuncts
            .into_iter()
            .zip(&decided)
            .filter(|(_, decided)| !**decided)
            .map(|(conjunct, _)| conjunct)
            .collect();
        // Projection, grouping, ordering.
        let grouped = !select.group_by.is_empty()
            || select.having.is_some()
            || select.items.iter().any(|item| matches!(item, ast::SelectItem::Expr { expr, .. } if contains_aggregate(expr)))
            || query.order_by.iter().any(|o| contains_aggregate(&o.expr));
        let mut group = None;
        if grouped {
            let mut keys = Vec::new();
            let mut key_types = Vec::new();
            for key in &select.group_by {
                // GROUP BY may name an output column by position.
                let key = match key {
                    Expr::Literal(Literal::Number(n)) => match n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .and_then(|n| select.items.get(n))
                    {
                        Some(ast::SelectItem::Expr { expr, .. }) => expr,
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "GROUP BY position {n} is not in select list"
                            )));
                        }
                    },
                    other => other,
                };
                let (bound, ty) = self.bind(key, &scope)?;
                keys.push(bound);
                key_types.push(ty);
            }
            group = Some(GroupBinding { keys, key_types, aggregates: Vec::new() });
        }
        let mut output = Vec::new();
        let mut columns = Vec::new();
        for item in &select.items {
            match item {
                ast::SelectItem::Wildcard | ast::SelectItem::QualifiedWildcard(_) => {
                    if grouped {
                        return Err(SqlError::new(
                            "42803",
                            "SELECT * is not allowed with GROUP BY or aggregates",
                        ));
                    }
                    if scope.tables.is_empty() {
                        return Err(SqlError::syntax(
                            "SELECT * with no tables specified is not valid",
                        ));
                    }
                    let only = match item {
                        ast::SelectItem::QualifiedWildcard(name) => Some(name),
                        _ => None,
                    };
                    let mut matched = false;
                    for scope_table in &scope.tables {
                        if only.is_some_and(|name| *name != scope_table.name) {
                            continue;
                        }
                        matched = true;
                        for (i, (name, ty)) in scope_table.columns.iter().enumerate() {
                            output.push(BExpr::Column(scope_table.offset + i));
                            columns.push(OutputColumn { name: name.clone(), ty: *ty });
                        }
                    }
                    if !matched {
                        return Err(SqlError::new(
                            "42P01",
                            format!(
                                "missing FROM-clause entry for table \"{}\"",
                                only.map_or("", |s| s)
                            ),
                        ));
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    let (bound, ty) = self.bind_in(expr, &scope, &mut group)?;
                    let (bound, ty) = self.coerce(bound, ty, Type::Text)?;
                    output.push(bound);
                    columns.push(OutputColumn {
                        name: alias.clone().unwrap_or_else(|| column_name(expr)),
                        ty,
                    });
                }
            }
        }
        let mut having = None;
        if let Some(expr) = &select.having {
            let (bound, ty) = self.bind_in(expr, &scope, &mut group)?;
            having = Some(self.expect_bool(bound, ty, "HAVING")?.0);
        }
        // ORDER BY: an output position, an output name, or an expression over the input.
        let mut sort = Vec::new();
        for item in &query.order_by {
            let by_output = match &item.expr {
                Expr::Literal(Literal::Number(n)) => {
                    let at = n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .filter(|n| *n < output.len());
                    Some(at.ok_or_else(|| {
                        SqlError::syntax(format!("ORDER BY position {n} is not in select list"))
                    })?)
                }
                Expr::Column { table: None, name } => {
                    let named: Vec<usize> = columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.name == *name)
                        .map(|(i, _)| i)
                        .collect();
                    let in_scope = scope.resolve(None, name).is_ok();
                    match named.as_slice() {
                        [one]
                            if !in_scope
                                || matches!(&select.items[..], items if items.iter().any(|i| matches!(i, ast::SelectItem::Expr { alias: Some(a), .. } if a == name))) =>
                        {
                            Some(*one)
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            let expr = match by_output {
                Some(at) => output[at].clone(),
                None => {
                    if select.distinct {
                        let (bound, _) = self.bind_in(&item.expr, &scope, &mut group)?;
                        let text = format!("{bound:?}");
                        if !output.iter().any(|o| format!("{o:?}") == text) {
                            return Err(SqlError::new(
                                "42P10",
                                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                            ));
                        }
                        bound
                    } else {
                        self.bind_in(&item.expr, &scope, &mut group)?.0
                    }
                }
            };
            sort.push(SortKey {
                expr,
                descending: item.descending,
                nulls_first: item.nulls_first.unwrap_or(item.descending),
            });
        }
        let limit = query.limit.as_ref().map(|e| self.bind_count(e)).transpose()?;
        let offset = query.offset.as_ref().map(|e| self.bind_count(e)).transpose()?;
        let grouping = group.map(|g| Grouping { keys: g.keys, aggregates: g.aggregates, having });
        if query.for_update && (grouping.is_some() || select.distinct) {
            return Err(SqlError::unsupported("FOR UPDATE with GROUP BY, aggregates or DISTINCT"));
        }
        // The residual filter: the conjuncts the access paths do not decide.
        let filter = join_conjuncts(conjuncts);
        let mut plan = QueryPlan {
            tables: accesses,
            values: if tables.is_empty() { Some(vec![Vec::new()]) } else { None },
            filter,
            grouping,
            output,
            columns,
            sort,
            distinct: select.distinct,
            limit,
            offset,
            for_update: query.for_update,
            lock: query.lock,
            width,
            subqueries: std::mem::replace(&mut self.subqueries, saved_subqueries),
            moves: Vec::new(),
        };
        eliminate_sort(&mut plan);
        mark_wanted(&mut plan);
        mark_moves(&mut plan);
        Ok(plan)
    }

    fn bind_count(&mut self, expr: &Expr) -> SqlResult<BExpr> {
        let (bound, ty) = self.bind(expr, &Scope::default())?;
        let (bound, ty) = self.coerce(bound, ty, Type::Int8)?;
        if !ty.is_integer() {
            return Err(SqlError::mismatch(format!(
                "argument of LIMIT/OFFSET must be type bigint, not type {}",
                ty.name()
            )));
        }
        Ok(bound)
    }

    fn values_query(&mut self, rows: &[Vec<Expr>], query: &ast::Query) -> SqlResult<QueryPlan> {
        let scope = Scope::default();
        let mut bound_rows = Vec::new();
        let mut types: Vec<Type> = Vec::new();
        for row in rows {
            if !types.is_empty() && row.len() != types.len() {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let mut bound = Vec::new();
            for (i, expr) in row.iter().enumerate() {
                let (e, t) = self.bind(expr, &scope)?;
                if types.len() <= i {
                    types.push(t);
                } else {
                    types[i] = Type::common(types[i], t)
                        .ok_or_else(|| SqlError::mismatch("VALUES types cannot be matched"))?;
                }
                bound.push(e);
            }
            bound_rows.push(bound);
        }
        let types: Vec<Type> =
            types.into_iter().map(|t| if t == Type::Unknown { Type::Text } else { t }).collect();
        let mut coerced_rows = Vec::new();
        for row in bound_rows {
            let mut coerced = Vec::new();
            for (e, ty) in row.into_iter().zip(&types) {
                coerced.push(
                    self.coerce(e, Type::Unknown, *ty)
                        .map(|(e, _)| e)
                        .unwrap_or_else(|_| BExpr::Const(Value::Null)),
                );
            }
            coerced_rows.push(coerced);
        }
        let columns: Vec<OutputColumn> = types
            .iter()
            .enumerate()
            .map(|(i, ty)| OutputColumn { name: format!("column{}", i + 1), ty: *ty })
            .collect();
        let output = (0..columns.len()).map(BExpr::Column).collect();
        let mut sort = Vec::new();
        for item in &query.order_by {
            let Expr::Literal(Literal::Number(n)) = &item.expr else {
                return Err(SqlError::unsupported(
                    "ORDER BY an expression over VALUES (use a position)",
                ));
            };
            let at = n
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .filter(|n| *n < columns.len())
                .ok_or_else(|| {
                    SqlError::syntax(format!("ORDER BY position {n} is not in select list"))
                })?;
            sort.push(SortKey {
                expr: BExpr::Column(at),
                descending: item.descending,
                nulls_first: item.nulls_first.unwrap_or(item.descending),
            });
        }
        Ok(QueryPlan {
            tables: Vec::new(),
            values: Some(coerced_rows),
            filter: None,
            grouping: None,
            output,
            width: columns.len(),
            columns,
            sort,
            distinct: false,
            limit: query.limit.as_ref().map(|e| self.bind_count(e)).transpose()?,
            offset: query.offset.as_ref().map(|e| self.bind_count(e)).transpose()?,
            for_update: false,
            lock: Default::default(),
            subqueries: std::mem::take(&mut self.subqueries),
            moves: Vec::new(),
        })
    }

    fn returning(
        &mut self,
        items: &[ast::SelectItem],
        table: &TableInfo,
        scope: &Scope,
    ) -> SqlResult<(Vec<BExpr>, Vec<bool>, Vec<OutputColumn>)> {
        let mut output = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard | ast::SelectItem::QualifiedWildcard(_) => {
                    for (i, column) in table.schema.columns.iter().enumerate() {
                        output.push(BExpr::Column(i));
                        columns.push(OutputColumn { name: column.name.clone(), ty: column.ty });
                    }
                }
                ast::SelectItem::Expr { expr, alias } => {
                    let (bound, ty) = self.bind(expr, scope)?;
                    let (bound, ty) = self.coerce(bound, ty, Type::Text)?;
                    output.push(bound);
                    columns.push(OutputColumn {
                        name: alias.clone().unwrap_or_else(|| column_name(expr)),
                        ty,
                    });
                }
            }
        }
        let width = table.schema.columns.len();
        let moves = sole_reads(&output, width, 0..width);
        Ok((output, moves, columns))
    }

    /// The default of each column, bound (SERIAL: the sequence's next value).
    fn defaults(&mut self, table: &TableInfo) -> SqlResult<Vec<Option<BExpr>>> {
        let mut defaults = Vec::new();
        for (i, column) in table.schema.columns.iter().enumerate() {
            if let Some(sequence) = &table.sequences[i] {
                defaults.push(Some(BExpr::NextVal(Arc::clone(sequence))));
                continue;
            }
            defaults.push(match &column.default {
                None => None,
                Some(text) => {
                    let expr = crate::parse::parse_expr(text)?;
                    let (bound, ty) = self.bind(&expr, &Scope::default())?;
                    Some(self.assign(bound, ty, column.ty, &column.name)?)
                }
            });
        }
        Ok(defaults)
    }

    /// An expression stored into a column of type `to`.
    fn assign(&mut self, expr: BExpr, from: Type, to: Type, column: &str) -> SqlResult<BExpr> {
        let (expr, from) = self.coerce(expr, from, to)?;
        if !to.assignable_from(from) {
            return Err(SqlError::mismatch(format!(
                "column \"{column}\" is of type {} but expression is of type {}",
                to.name(),
                from.name()
            )));
        }
        Ok(expr)
    }

    fn insert(&mut self, insert: &ast::Insert) -> SqlResult<InsertPlan> {
        let table = self.written_table(&insert.table.name)?;
        let schema = &table.schema;
        let targets: Vec<usize> = if insert.columns.is_empty() {
            (0..schema.columns.len()).collect()
        } else {
            let mut targets = Vec::new();
            for name in &insert.columns {
                let at = schema.column(name).ok_or_else(|| {
                    SqlError::undefined_column(&format!("{name}\" of relation \"{}", schema.name))
                })?;
                if targets.contains(&at) {
                    return Err(SqlError::new(
                        "42701",
                        format!("column \"{name}\" specified more than once"),
                    ));
                }
                targets.push(at);
            }
            targets
        };
        let defaults = self.defaults(&table)?;
        let rows = match &insert.source {
            ast::InsertSource::DefaultValues => {
                InsertRows::Values(vec![vec![None; schema.columns.len()]])
            }
            ast::InsertSource::Values(rows) => {
                let mut bound_rows = Vec::new();
                for row in rows {
                    if row.len() > targets.len() {
                        return Err(SqlError::syntax(
                            "INSERT has more expressions than target columns",
                        ));
                    }
                    if row.len() < targets.len() {
                        return Err(SqlError::syntax(
                            "INSERT has more target columns than expressions",
                        ));
                    }
                    let mut bound = vec![None; schema.columns.len()];
                    for (expr, &column) in row.iter().zip(&targets) {
                        if matches!(expr, Expr::Default) {
                            continue;
                        }
                        let (e, ty) = self.bind(expr, &Scope::default())?;
                        let col = &schema.columns[column];
                        bound[column] = Some(self.assign(e, ty, col.ty, &col.name)?);
                    }
                    bound_rows.push(bound);
                }
                InsertRows::Values(bound_rows)
            }
            ast::InsertSource::Query(query) => {
                let plan = self.query(query)?;
                if plan.columns.len() != targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has a different number of target columns than the query returns",
                    ));
                }
                for (column, &target) in plan.columns.iter().zip(&targets) {
                    let col = &schema.columns[target];
                    if !col.ty.assignable_from(column.ty) {
                        return Err(SqlError::mismatch(format!(
                            "column \"{}\" is of type {} but expression is of type {}",
                            col.name,
                            col.ty.name(),
                            column.ty.name()
                        )));
                    }
                }
                InsertRows::Query(Box::new(plan), targets.clone())
            }
        };
        let on_conflict = match &insert.on_conflict {
            None => None,
            Some(conflict) => {
                let columns: Vec<usize> = conflict
                    .columns
                    .iter()
                    .map(|name| schema.column(name).ok_or_else(|| SqlError::undefined_column(name)))
                    .collect::<SqlResult<_>>()?;
                let index = if columns.is_empty() || columns == schema.primary_key {
                    if schema.primary_key.is_empty() {
                        return Err(SqlError::new(
                            "42P10",
                            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                        ));
                    }
                    None
                } else {
                    let at = schema.indexes.iter().position(|i| i.unique && i.columns == columns).ok_or_else(|| {
                        SqlError::new("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
                    })?;
                    Some(at)
                };
                let action = match &conflict.action {
                    ast::ConflictAction::Nothing => ConflictAction::Nothing,
                    ast::ConflictAction::Update { assignments, filter } => {
                        if conflict.columns.is_empty() {
                            return Err(SqlError::new(
                                "42601",
                                "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                            ));
                        }
                        let mut scope = Scope::default();
                        scope.push(
                            insert.table.alias.clone().unwrap_or_else(|| schema.name.clone()),
                            table_columns(&table),
                        )?;
                        scope.push("excluded".into(), table_columns(&table))?;
                        let assignments = self.assignments(assignments, &table, &scope)?;
                        let filter = match filter {
                            Some(f) => {
                                let (b, t) = self.bind(f, &scope)?;
                                Some(self.expect_bool(b, t, "WHERE")?.0)
                            }
                            None => None,
                        };
                        ConflictAction::Update { assignments, filter }
                    }
                };
                Some(ConflictPlan { index, action })
            }
        };
        let mut scope = Scope::default();
        scope.push(
            insert.table.alias.clone().unwrap_or_else(|| schema.name.clone()),
            table_columns(&table),
        )?;
        let (returning, returning_moves, columns) =
            self.returning(&insert.returning, &table, &scope)?;
        // Parameter types only go from unknown to known, so what they are now they stay.
        let conformed = match &rows {
            InsertRows::Values(rows) => rows
                .iter()
                .map(|row| {
                    row.iter()
                        .zip(&table.types)
                        .map(|(expr, ty)| {
                            matches!(expr, Some(BExpr::Param(at)) if self.params.get(*at) == Some(ty))
                        })
                        .collect()
                })
                .collect(),
            InsertRows::Query(..) => Vec::new(),
        };
        Ok(InsertPlan {
            table: Arc::clone(&table),
            rows,
            conformed,
            defaults,
            on_conflict,
            returning,
            returning_moves,
            columns,
            subqueries: std::mem::take(&mut self.subqueries),
        })
    }

    fn assignments(
        &mut self,
        list: &[(String, Expr)],
        table: &TableInfo,
        scope: &Scope,
    ) -> SqlResult<Vec<(usize, BExpr)>> {
        let defaults = self.defaults(table)?;
        let mut out: Vec<(usize, BExpr)> = Vec::new();
        for (name, expr) in list {
            let at = table.schema.column(name).ok_or_else(|| {
                SqlError::undefined_column(&format!("{name}\" of relation \"{}", table.schema.name))
            })?;
            if out.iter().any(|(c, _)| *c == at) {
                return Err(SqlError::new(
                    "42601",
                    format!("multiple assignments to same column \"{name}\""),
                ));
            }
            let column = &table.schema.columns[at];
            let bound = if matches!(expr, Expr::Default) {
                defaults[at].clone().unwrap_or(BExpr::Const(Value::Null))
            } else {
                let (e, ty) = self.bind(expr, scope)?;
                self.assign(e, ty, column.ty, &column.name)?
            };
            out.push((at, bound));
        }
        Ok(out)
    }

    fn modify(
        &mut self,
        table_ref: &ast::TableRef,
        filter: Option<&Expr>,
        assignments: Option<&[(String, Expr)]>,
        returning: &[ast::SelectItem],
    ) -> SqlResult<ModifyPlan> {
        let table = self.written_table(&table_ref.name)?;
        let mut scope = Scope::default();
        scope.push(
            table_ref.alias.clone().unwrap_or_else(|| table.schema.name.clone()),
            table_columns(&table),
        )?;
        let mut conjuncts = Vec::new();
        if let Some(filter) = filter {
            let (bound, ty) = self.bind(filter, &scope)?;
            split_conjuncts(self.expect_bool(bound, ty, "WHERE")?.0, &mut conjuncts);
        }
        let (path, implied) = choose_path(&table, 0, &conjuncts, &self.params, &table.types);
        let assignments_given = assignments;
        let assignments = match assignments {
            Some(list) => self.assignments(list, &table, &scope)?,
            None => Vec::new(),
        };
        let changes_key = assignments.iter().any(|(c, _)| table.schema.primary_key.contains(c));
        let keeps_index_keys = !assignments
            .iter()
            .any(|(c, _)| table.schema.indexes.iter().any(|index| index.columns.contains(c)));
        let uses_primary_key =
            matches!(path, Path::Point(_) | Path::Points { .. } | Path::Range { index: None, .. });
        let (returning, returning_moves, columns) = self.returning(returning, &table, &scope)?;
        let width = table.schema.columns.len();
        let filter = join_conjuncts(
            conjuncts
                .iter()
                .enumerate()
                .filter(|(at, _)| !implied.contains(at))
                .map(|(_, conjunct)| conjunct.clone())
                .collect(),
        );
        let recheck = if uses_primary_key { None } else { join_conjuncts(conjuncts.clone()) };
        let reapplies = assignments_given.is_some()
            && matches!(path, Path::Point(_))
            && filter.is_none()
            && recheck.is_none()
            && returning.is_empty()
            && self.subqueries.is_empty()
            && !changes_key
            && !assignments.iter().any(|(_, expr)| contains_volatile(expr));
        // The scan reads the filter's columns; each changed row, what the statement reads.
        let mut wanted = vec![false; width];
        let mut decode = vec![false; width];
        let mark = |expr: &BExpr, into: &mut Vec<bool>| {
            expr.columns(&mut |at| {
                if at < width {
                    into[at] = true;
                }
            })
        };
        for expr in filter.iter() {
            mark(expr, &mut wanted);
        }
        for expr in filter.iter().chain(&recheck).chain(&returning) {
            mark(expr, &mut decode);
        }
        for (_, expr) in &assignments {
            mark(expr, &mut decode);
        }
        if changes_key {
            for &column in &table.schema.primary_key {
                decode[column] = true;
            }
        }
        Ok(ModifyPlan {
            access: Access {
                table: Arc::clone(&table),
                offset: 0,
                path,
                kind: JoinKind::Inner,
                on: None,
                wanted: Wanted::marked(wanted, &table.types),
                implied: join_conjuncts(implied.iter().map(|at| conjuncts[*at].clone()).collect()),
            },
            filter,
            recheck,
            decode: Arc::new(Wanted::marked(decode, &table.types)),
            reapplies,
            delete: assignments_given.is_none(),
            assignments: assignments.into(),
            returning,
            returning_moves,
            columns,
            subqueries: std::mem::take(&mut self.subqueries),
            changes_key,
            keeps_index_keys,
        })
    }
}

/// The output name PostgreSQL gives an unaliased expression.
fn column_name(expr: &Expr) -> String {
    match expr {
        Expr::Column { name, .. } => name.clone(),
        Expr::Function { name, .. } => name.clone(),
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Column { name, .. } => name.clone(),
            _ => "?column?".into(),
        },
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        _ => "?column?".into(),
    }
}

/// Whether a key built from a value of type `from` converted to the column's type finds
/// exactly the rows for which the comparison is true (a conversion either is exact or fails,
/// and a failure makes the access fall back to a full scan that tests every conjunct).
fn key_exact(column: Type, from: Type) -> bool {
    key_compatible(column, from) && column != Type::Float8
}

/// Chooses how to find the rows of `table` given the conjuncts usable for it. Also returns
/// the positions (in `conjuncts`) of the conjuncts the path decides exactly: rows the path
/// yields satisfy them, so the filter leaves them out.
fn choose_path(
    table: &TableInfo,
    offset: usize,
    conjuncts: &[BExpr],
    params: &[Type],
    row_types: &[Type],
) -> (Path, Vec<usize>) {
    let width = table.schema.columns.len();
    let mut bounds = vec![ColumnBounds::default(); width];
    for (position, conjunct) in conjuncts.iter().enumerate() {
        let BExpr::Compare { op, left, right } = conjunct else { continue };
        let (column, other, op) = match (left.as_ref(), right.as_ref()) {
            (BExpr::Column(c), other) if (offset..offset + width).contains(c) => {
                (*c - offset, other, *op)
            }
            (other, BExpr::Column(c)) if (offset..offset + width).contains(c) => {
                (*c - offset, other, op.flipped())
            }
            _ => continue,
        };
        // The other side may read only earlier tables (an index join) or nothing.
        if other.column_bound() > offset
            || matches!(other, BExpr::NextVal(_))
            || contains_volatile(other)
        {
            continue;
        }
        let column_ty = table.schema.columns[column].ty;
        let Some(other_ty) = expr_type_hint(other, params, row_types) else { continue };
        if !key_compatible(column_ty, other_ty) {
            continue;
        }
        let exact = key_exact(column_ty, other_ty);
        let entry = &mut bounds[column];
        match op {
            BinaryOp::Eq => entry.eq = Some((other.clone(), position, exact)),
            BinaryOp::Gt => entry.low = Some((other.clone(), false, position, exact)),
            BinaryOp::GtEq => entry.low = Some((other.clone(), true, position, exact)),
            BinaryOp::Lt => entry.high = Some((other.clone(), false, position, exact)),
            BinaryOp::LtEq => entry.high = Some((other.clone(), true, position, exact)),
            _ => {}
        }
    }
    let score = |columns: &[usize]| -> (usize, bool) {
        let eq = columns.iter().take_while(|c| bounds[**c].eq.is_some()).count();
        let range =
            columns.get(eq).is_some_and(|c| bounds[*c].low.is_some() || bounds[*c].high.is_some());
        (eq, range)
    };
    let mut implied = Vec::new();
    let take_eq = |column: &usize, implied: &mut Vec<usize>| -> BExpr {
        match &bounds[*column].eq {
            Some((expr, position, exact)) => {
                if *exact {
                    implied.push(*position);
                }
                expr.clone()
            }
            None => BExpr::Const(Value::Null),
        }
    };
    let primary = &table.schema.primary_key;
    if !primary.is_empty() && score(primary).0 == primary.len() {
        let key = primary.iter().map(|c| take_eq(c, &mut implied)).collect();
        return (Path::Point(key), implied);
    }
    // One primary-key column in an IN list, the others fixed: a lookup per listed value.
    for (position, conjunct) in conjuncts.iter().enumerate() {
        let BExpr::InList { expr, list, negated: false } = conjunct else { continue };
        let BExpr::Column(c) = expr.as_ref() else { continue };
        let Some(at) = primary.iter().position(|k| offset + *k == *c) else { continue };
        let others_fixed =
            primary.iter().enumerate().all(|(i, k)| i == at || bounds[*k].eq.is_some());
        let column_ty = table.schema.columns[primary[at]].ty;
        let item_ty = |item: &BExpr| expr_type_hint(item, params, row_types);
        let usable = others_fixed
            && !list.is_empty()
            && list.iter().all(|item| {
                item.column_bound() <= offset
                    && !contains_volatile(item)
                    && item_ty(item).is_some_and(|ty| key_compatible(column_ty, ty))
            });
        if !usable {
            continue;
        }
        let exact =
            list.iter().all(|item| item_ty(item).is_some_and(|ty| key_exact(column_ty, ty)));
        let key = primary
            .iter()
            .enumerate()
            .map(
                |(i, k)| if i == at { BExpr::Const(Value::Null) } else { take_eq(k, &mut implied) },
            )
            .collect();
        if exact {
            implied.push(position);
        }
        return (Path::Points { key, at, list: list.clone() }, implied);
    }
    let mut best: (Option<usize>, (usize, bool)) =
        (None, if primary.is_empty() { (0, false) } else { score(primary) });
    for (i, index) in table.schema.indexes.iter().enumerate() {
        let s = score(&index.columns);
        // A unique index leaves out rows with NULLs: use it only when every column is bound.
        let complete = s.0 == index.columns.len() || (s.1 && s.0 + 1 == index.columns.len());
        if index.unique && !complete {
            continue;
        }
        if (s.0, s.1) > best.1 {
            best = (Some(i), s);
        }
    }
    let (index, (eq, _)) = best;
    let columns: &[usize] = match index {
        None => primary,
        Some(i) => &table.schema.indexes[i].columns,
    };
    let eq_exprs = columns[..eq].iter().map(|c| take_eq(c, &mut implied)).collect();
    let mut bound = |side: &Option<(BExpr, bool, usize, bool)>| {
        side.as_ref().map(|(expr, inclusive, position, exact)| {
            if *exact {
                implied.push(*position);
            }
            (expr.clone(), *inclusive)
        })
    };
    let next = columns.get(eq);
    let low = next.and_then(|c| bound(&bounds[*c].low));
    let high = next.and_then(|c| bound(&bounds[*c].high));
    (Path::Range { index, eq: eq_exprs, low, high, descending: false }, implied)
}

fn contains_volatile(expr: &BExpr) -> bool {
    depth::grow(|| contains_volatile_node(expr))
}

fn contains_volatile_node(expr: &BExpr) -> bool {
    match expr {
        BExpr::Call { func: Func::Random | Func::PgSleep, .. } | BExpr::NextVal(_) => true,
        BExpr::Call { args, .. } => args.iter().any(contains_volatile),
        BExpr::Arith { left, right, .. } => contains_volatile(left) || contains_volatile(right),
        BExpr::Negate(e, _) | BExpr::Cast { expr: e, .. } => contains_volatile(e),
        _ => false,
    }
}

/// The type of a bound expression where the planner can tell it cheaply.
fn expr_type_hint(expr: &BExpr, params: &[Type], row_types: &[Type]) -> Option<Type> {
    match expr {
        BExpr::Param(at) => params.get(*at).copied().filter(|t| *t != Type::Unknown),
        BExpr::Const(value) => match value {
            Value::Int(_) => Some(Type::Int8),
            Value::Numeric(_) => Some(Type::Numeric { precision: 0, scale: 0 }),
            Value::Float(_) => Some(Type::Float8),
            Value::Text(_) => Some(Type::Text),
            Value::Bool(_) => Some(Type::Bool),
            Value::Bytes(_) => Some(Type::Bytea),
            Value::Date(_) => Some(Type::Date),
            Value::Timestamp(_) => Some(Type::Timestamp),
            Value::Null => None,
        },
        BExpr::Cast { ty, .. }
        | BExpr::Arith { ty, .. }
        | BExpr::Call { ty, .. }
        | BExpr::Negate(_, ty) => Some(*ty),
        // A column of an earlier table (an index join).
        BExpr::Column(at) => row_types.get(*at).copied(),
        _ => None,
    }
}

/// Drops the sort when the single table's scan already yields rows in the requested order.
fn eliminate_sort(plan: &mut QueryPlan) {
    if plan.sort.is_empty() || plan.grouping.is_some() || plan.tables.len() != 1 || plan.distinct {
        return;
    }
    let access = &mut plan.tables[0];
    let schema = &access.table.schema;
    let (columns, eq) = match &access.path {
        Path::Point(_) => {
            plan.sort.clear();
            return;
        }
        // In key order, but the ORDER BY is left to the sort.
        Path::Points { .. } => return,
        Path::Range { index: None, eq, .. } => (schema.primary_key.clone(), eq.len()),
        Path::Range { index: Some(i), eq, .. } => (schema.indexes[*i].columns.clone(), eq.len()),
    };
    let descending = plan.sort[0].descending;
    let mut next = eq;
    for key in &plan.sort {
        let BExpr::Column(c) = key.expr else { return };
        if key.descending != descending || key.nulls_first != descending {
            return;
        }
        // Columns fixed by equality may appear anywhere in the ORDER BY.
        if let Some(position) = columns.iter().position(|k| *k == c)
            && position < eq
        {
            continue;
        }
        if columns.get(next) != Some(&c) {
            return;
        }
        next += 1;
    }
    if let Path::Range { descending: d, .. } = &mut access.path {
        *d = descending;
    }
    plan.sort.clear();
}

/// Marks the columns each table must decode.
/// Fills [`QueryPlan::moves`]: output columns of the innermost table read by exactly one
/// output expression. Outer tables' columns stay in the joined row for the next inner row, and
/// grouped plans emit from group rows, so neither moves anything.
fn mark_moves(plan: &mut QueryPlan) {
    let Some(last) = plan.tables.last() else { return };
    if plan.grouping.is_some() {
        return;
    }
    let innermost = last.offset..last.offset + last.table.types.len();
    plan.moves = sole_reads(&plan.output, plan.width, innermost);
}

/// Per expression: whether it is a bare column in `movable` that no other expression reads
/// (its value may then be moved out of the row instead of cloned).
pub(crate) fn sole_reads(
    exprs: &[BExpr],
    width: usize,
    movable: std::ops::Range<usize>,
) -> Vec<bool> {
    let mut readers = vec![0usize; width];
    for expr in exprs {
        expr.columns(&mut |at| {
            if at < readers.len() {
                readers[at] += 1;
            }
        });
    }
    exprs
        .iter()
        .map(|expr| matches!(expr, BExpr::Column(at) if movable.contains(at) && readers[*at] == 1))
        .collect()
}

fn mark_wanted(plan: &mut QueryPlan) {
    let mut used = vec![false; plan.width];
    let mut mark = |expr: &BExpr| {
        expr.columns(&mut |at| {
            if at < used.len() {
                used[at] = true;
            }
        })
    };
    if let Some(filter) = &plan.filter {
        mark(filter);
    }
    for access in &plan.tables {
        if let Some(on) = &access.on {
            mark(on);
        }
        match &access.path {
            Path::Point(key) => key.iter().for_each(&mut mark),
            Path::Points { key, list, .. } => key.iter().chain(list).for_each(&mut mark),
            Path::Range { eq, low, high, .. } => {
                eq.iter().for_each(&mut mark);
                if let Some((e, _)) = low {
                    mark(e);
                }
                if let Some((e, _)) = high {
                    mark(e);
                }
            }
        }
    }
    match &plan.grouping {
        Some(grouping) => {
            grouping.keys.iter().for_each(&mut mark);
            for aggregate in &grouping.aggregates {
                if let Some(arg) = &aggregate.arg {
                    mark(arg);
                }
            }
        }
        None => {
            plan.output.iter().for_each(&mut mark);
            plan.sort.iter().for_each(|k| mark(&k.expr));
        }
    }
    for access in &mut plan.tables {
        let width = access.table.types.len();
        access.wanted = Wanted::marked(
            used[access.offset..access.offset + width].to_vec(),
            &access.table.types,
        );
    }
}

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
        lines.push(format!("{}{}", pad(depth), describe_access(access)));
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
