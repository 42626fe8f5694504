//! The binder and planner: names resolved against the catalog, types checked, parameters'
//! types inferred, and each table's access path chosen (point lookup, primary or index range
//! scan, full scan), with ORDER BY satisfied by the scan order and LIMIT pushed into the scan
//! when it can be. Expressions are bound in `plan/bind.rs`, access paths chosen in
//! `plan/path.rs`, INSERT, UPDATE and DELETE bound in `plan/dml.rs`, EXPLAIN's text made in
//! `plan/explain.rs`.

use crate::ast::{self, Expr, JoinKind, Literal};
use crate::catalog::{Catalog, TableInfo, View};
use crate::codec::Wanted;
use crate::depth;
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::{Type, Value, cast};
use std::sync::Arc;

mod array;
mod bind;
mod derived;
mod dml;
mod explain;
pub mod foreign;
mod inspect;
mod join;
use inspect::{column_name, contains_volatile, expr_type_hint};
mod passes;
mod path;
mod subquery;
mod values;
mod window;

pub use derived::{Derived, WorkTable};
pub use explain::explain;
pub(crate) use passes::sole_reads;
use passes::{eliminate_sort, mark_moves, mark_wanted};
use path::choose_path;
pub use window::{Bound, WindowFunc, WindowPlan};

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

impl Path {
    /// A scan of every row.
    pub fn full() -> Path {
        Path::Range { index: None, eq: Vec::new(), low: None, high: None, descending: false }
    }
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
    /// Rows computed when the query runs (`QueryPlan::derived[i]`) instead of a stored
    /// table's; `table` is then a table of their columns.
    pub derived: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    /// `string_agg(value, separator)`: the values as text, each after the separator of its
    /// row (the first without one); NULL values are left out.
    StringAgg,
    /// `array_agg(value)`: the values in an array, NULLs included.
    ArrayAgg,
    /// `bool_and` (`every`) and `bool_or`.
    BoolAnd,
    BoolOr,
    /// `json_agg` / `jsonb_agg` (by the aggregate's type): the values in a json array, NULLs
    /// as json nulls.
    JsonAgg,
    /// `json_object_agg(key, value)` / `jsonb_object_agg`: the pairs in a json object (the
    /// value is carried where `string_agg` carries its separator).
    JsonObjectAgg,
}

#[derive(Debug, Clone)]
pub struct Aggregate {
    pub func: AggFunc,
    pub arg: Option<BExpr>,
    /// `string_agg`'s separator, evaluated per row.
    pub separator: Option<BExpr>,
    pub distinct: bool,
    pub ty: Type,
    /// `FILTER (WHERE ...)`: only rows that pass are aggregated.
    pub filter: Option<BExpr>,
    /// `ORDER BY` in the call (`array_agg(x ORDER BY y)`): the order rows are taken in.
    pub order: Vec<SortKey>,
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

/// A value a correlated subquery reads from the query around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OuterArg {
    /// A column of that query's joined row.
    Column(usize),
    /// A value that query reads from the one around it (its `BExpr::Outer(i)`).
    Outer(usize),
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
    /// `DISTINCT ON`: expressions over the same row as `output`; of the rows equal in them
    /// only the first in `sort` order is kept.
    pub distinct_on: Vec<BExpr>,
    pub limit: Option<BExpr>,
    pub offset: Option<BExpr>,
    pub for_update: bool,
    /// The row lock a locking read takes, and what it does at a held row.
    pub lock: (crate::ast::RowLockMode, crate::ast::WaitPolicy),
    pub width: usize,
    /// Uncorrelated subqueries, run once before the query.
    pub subqueries: Vec<QueryPlan>,
    /// Per output expression: whether it is a column of the innermost table that no other
    /// output expression reads, so the executor moves the decoded value into the result row
    /// instead of cloning it (the next row overwrites that column anyway). Empty: none.
    pub moves: Vec<bool>,
    /// The sources of FROM items that are not stored tables (`Access::derived`).
    pub derived: Vec<Derived>,
    /// A correlated subquery's: the values of the outer query it reads (`BExpr::Outer(i)` is
    /// the `i`th); empty for a query that reads no outer row.
    pub outer_args: Vec<OuterArg>,
    /// Whether some of `subqueries` are correlated: they run for each joined row.
    pub correlated: bool,
    /// Window functions over the rows the query emits (`BExpr::Window(i)` reads the `i`th).
    pub windows: Vec<WindowPlan>,
    /// Whether an output expression is a set-returning call (`SELECT unnest(a)`): each row
    /// emitted becomes as many rows as its longest set has values.
    pub sets: bool,
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
    /// The foreign keys the insert must keep (`plan/foreign.rs`); `None` when none applies.
    pub foreign: Option<Arc<foreign::ForeignKeys>>,
    /// The table's CHECK constraints: (name, expression over a row).
    pub checks: Vec<(String, BExpr)>,
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
    /// The foreign keys the statement must keep (`plan/foreign.rs`); `None` when none
    /// applies. With some, every row changed is decoded whole, and none is applied again at
    /// commit.
    pub foreign: Option<Arc<foreign::ForeignKeys>>,
    /// The table's CHECK constraints: (name, expression over a row).
    pub checks: Vec<(String, BExpr)>,
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

#[derive(Clone)]
struct ScopeTable {
    name: String,
    columns: Vec<(String, Type)>,
    offset: usize,
    /// A `JOIN ... USING` right side's join columns: unqualified names and `*` read the left
    /// side's (PostgreSQL shows such a column once).
    hidden: Vec<String>,
    /// A stored table's primary-key columns (grouping by them groups by every column of the
    /// table: PostgreSQL's functional dependency); empty for other FROM items.
    primary_key: Vec<usize>,
}

#[derive(Default, Clone)]
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
        self.tables.push(ScopeTable {
            name,
            columns,
            offset,
            hidden: Vec::new(),
            primary_key: Vec::new(),
        });
        Ok(offset)
    }

    fn resolve(&self, table: Option<&str>, name: &str) -> SqlResult<(usize, Type)> {
        let mut found = None;
        for scope_table in &self.tables {
            if table.is_some_and(|t| t != scope_table.name) {
                continue;
            }
            if table.is_none() && scope_table.hidden.iter().any(|h| h == name) {
                continue;
            }
            if let Some(at) = scope_table
                .columns
                .iter()
                .position(|(c, _)| c == name && !crate::catalog::is_dropped_name(c))
            {
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
    /// The session's own uncommitted ALTERs and its transaction's catalog version.
    view: View<'a>,
    /// The session's settings, for the `pg_settings` view.
    settings: Option<&'a std::collections::BTreeMap<String, String>>,
    /// The engine, for the views of its statistics (`engram_stat_conflicts`).
    engine: Option<&'a engram_engine::Database>,
    /// Parameter types, inferred from their use (`Unknown` until decided).
    pub params: Vec<Type>,
    subqueries: Vec<QueryPlan>,
    /// The common table expressions visible where binding is (innermost last).
    ctes: Vec<derived::CteBinding>,
    /// While a subquery is bound: the scope of the query around it, whose columns it may
    /// read, and the outer columns it has read so far (with their types), innermost last.
    outer: Vec<(Scope, Vec<OuterArg>)>,
    /// The windows of the query being bound, and whether a window function may appear where
    /// binding is (the select list and ORDER BY).
    windows: Vec<WindowPlan>,
    windows_allowed: bool,
    /// Whether the call being bound is a select-list item's top, where a set-returning
    /// function may be called.
    sets_allowed: bool,
    /// Views being bound inside one another (a cycle shows as depth).
    view_depth: usize,
    /// How many expression subqueries enclose what is being bound.
    sublinks: usize,
    /// A system view was read: its rows were made now, so the plan must not be reused.
    volatile: bool,
}

pub(crate) fn is_aggregate(name: &str) -> bool {
    matches!(
        name,
        "count"
            | "sum"
            | "min"
            | "max"
            | "avg"
            | "string_agg"
            | "array_agg"
            | "bool_and"
            | "bool_or"
            | "every"
            | "json_agg"
            | "jsonb_agg"
            | "json_object_agg"
            | "jsonb_object_agg"
    )
}

fn contains_aggregate(expr: &Expr) -> bool {
    depth::grow(|| contains_aggregate_node(expr))
}

fn contains_aggregate_node(expr: &Expr) -> bool {
    match expr {
        Expr::Function { name, args, .. } => {
            is_aggregate(name) || args.iter().any(contains_aggregate)
        }
        // An aggregate with FILTER; a window function's arguments and definition may hold
        // aggregates of the query's groups.
        Expr::Over { function, window: None, .. } => contains_aggregate(function),
        Expr::Over { function, window: Some(window), .. } => {
            let args = match function.as_ref() {
                Expr::Function { args, .. } => args.iter().any(contains_aggregate),
                _ => false,
            };
            args || window.partition.iter().any(contains_aggregate)
                || window.order.iter().any(|o| contains_aggregate(&o.expr))
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
        Expr::Array(items) => items.iter().any(contains_aggregate),
        Expr::AnyAll { expr: left, array: right, .. }
        | Expr::Subscript { array: left, index: right } => {
            contains_aggregate(left) || contains_aggregate(right)
        }
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
        // A date or timestamp of another kind converts through the session's zone, and a key
        // probe must not depend on it.
        Type::Timestamp | Type::Timestamptz | Type::Time | Type::Interval | Type::Uuid => {
            from == column
        }
        Type::Bool => from == Type::Bool,
        Type::Bytea => from == Type::Bytea,
        Type::Unknown | Type::Array(_) | Type::Regclass | Type::Json | Type::Jsonb => false,
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
            view: View::CURRENT,
            settings: None,
            engine: None,
            params: param_types.to_vec(),
            subqueries: Vec::new(),
            ctes: Vec::new(),
            outer: Vec::new(),
            windows: Vec::new(),
            windows_allowed: false,
            sets_allowed: false,
            view_depth: 0,
            sublinks: 0,
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

    /// What the session sees beyond the committed catalog.
    pub fn with_view(mut self, view: View<'a>) -> Self {
        self.view = view;
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
        if self.catalog.sequence_defs.contains_key(name) {
            self.volatile = true;
            return crate::system::sequence_view(name, self.catalog)
                .ok_or_else(|| SqlError::undefined_table(name));
        }
        Ok(self.catalog.table_in(name, self.view)?.0)
    }

    /// The table a statement writes: never a system view.
    fn written_table(&self, name: &str) -> SqlResult<Arc<TableInfo>> {
        if self.catalog.views.contains_key(name) {
            return Err(SqlError::unsupported(format!(
                "changing rows through the view \"{name}\" (write to its tables)"
            )));
        }
        if crate::system::is_view(name) {
            return Err(SqlError::new(
                "42501",
                format!("permission denied: \"{name}\" is a system view and cannot be changed"),
            ));
        }
        match self.catalog.table_in(name, self.view)? {
            (table, true) => Ok(table),
            (_, false) => Err(SqlError::new(
                "40001",
                format!(
                    "could not serialize access: the definition of table \"{name}\" changed \
                     (ALTER TABLE) after this transaction began; retry the transaction"
                ),
            )),
        }
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
        if let Plan::Insert(InsertPlan { subqueries, .. })
        | Plan::Modify(ModifyPlan { subqueries, .. }) = &plan
            && subqueries.iter().any(|sub| !sub.outer_args.is_empty())
        {
            return Err(SqlError::unsupported("a correlated subquery in INSERT, UPDATE or DELETE"));
        }
        let params =
            self.params.iter().map(|t| if *t == Type::Unknown { Type::Text } else { *t }).collect();
        Ok((plan, params, self.volatile))
    }

    fn query(&mut self, query: &ast::Query) -> SqlResult<QueryPlan> {
        let visible = self.push_ctes(query);
        let plan = self.query_body(query);
        self.ctes.truncate(visible);
        plan
    }

    fn query_body(&mut self, query: &ast::Query) -> SqlResult<QueryPlan> {
        let select = match &query.body {
            ast::QueryBody::Values(rows) => return self.values_query(rows, query),
            ast::QueryBody::Select(select) => select,
            ast::QueryBody::SetOp { .. } => {
                // `SELECT * FROM (left op right)`, with the ORDER BY and LIMIT over its rows.
                let inner = ast::Query {
                    with: Vec::new(),
                    recursive: false,
                    order_by: Vec::new(),
                    limit: None,
                    offset: None,
                    for_update: false,
                    lock: Default::default(),
                    body: query.body.clone(),
                };
                let outer = ast::Query {
                    with: Vec::new(),
                    recursive: false,
                    body: ast::QueryBody::Select(Box::new(ast::Select {
                        distinct: false,
                        distinct_on: Vec::new(),
                        items: vec![ast::SelectItem::Wildcard],
                        from: vec![ast::FromItem {
                            table: ast::TableRef {
                                source: Some(Box::new(ast::Source::Query(inner))),
                                ..ast::TableRef::named("*SELECT*".into())
                            },
                            joins: Vec::new(),
                        }],
                        filter: None,
                        group_by: Vec::new(),
                        having: None,
                    })),
                    ..query.clone()
                };
                if query.for_update {
                    return Err(SqlError::new(
                        "0A000",
                        "FOR UPDATE is not allowed with UNION/INTERSECT/EXCEPT",
                    ));
                }
                return self.query_body(&outer);
            }
        };
        let saved_subqueries = std::mem::take(&mut self.subqueries);
        let saved_windows = std::mem::take(&mut self.windows);
        let saved_windows_allowed = std::mem::replace(&mut self.windows_allowed, false);
        let mut scope = Scope::default();
        let mut tables = Vec::new();
        let mut conjuncts = Vec::new();
        let mut left_ons = Vec::new();
        let mut derived_sources = Vec::new();
        for item in &select.from {
            let mut refs = vec![(&item.table, JoinKind::Inner, None, None)];
            for join in &item.joins {
                refs.push((&join.table, join.kind, join.on.as_ref(), Some(join)));
            }
            // `a FULL JOIN b ON c`: one derived source whose columns are a's and b's.
            let mut skip = 0;
            if let Some(join) = item.joins.first()
                && join.kind == JoinKind::Full
            {
                let full = self.full_join(&item.table, join, query.lock)?;
                derived_sources.push(full.derived);
                let offset = scope.push(full.left.0, full.left.1)?;
                scope.push(full.right.0, full.right.1)?;
                tables.push((full.table, offset, JoinKind::Inner, Some(derived_sources.len() - 1)));
                skip = 2;
            }
            for (position, (table_ref, kind, on, join)) in refs.into_iter().enumerate().skip(skip) {
                if kind == JoinKind::Full {
                    return Err(SqlError::unsupported(
                        "a FULL JOIN after another join of the same FROM item",
                    ));
                }
                // A RIGHT JOIN swaps its two sides in the nested loop: the side kept whole
                // must be one table, the FROM item's first.
                if kind == JoinKind::Right && position != 1 {
                    return Err(SqlError::unsupported(
                        "a RIGHT JOIN after another join of the same FROM item",
                    ));
                }
                let (table, source) = match self.derived_source(table_ref, &scope)? {
                    Some((derived, table)) => {
                        derived_sources.push(derived);
                        (table, Some(derived_sources.len() - 1))
                    }
                    None => (self.read_table(&table_ref.name)?, None),
                };
                // `pg_catalog.pg_class` is `pg_class` to the query's column references.
                let bare = table_ref.name.rsplit('.').next().unwrap_or(&table_ref.name);
                let name = table_ref.alias.clone().unwrap_or_else(|| bare.to_string());
                let mut columns = table_columns(&table);
                if source.is_none() {
                    if table_ref.columns.len() > columns.len() {
                        return Err(SqlError::new(
                            "42P10",
                            format!(
                                "table \"{name}\" has {} columns available but {} columns \
                                 specified",
                                columns.len(),
                                table_ref.columns.len()
                            ),
                        ));
                    }
                    for ((column, _), alias) in columns.iter_mut().zip(&table_ref.columns) {
                        column.clone_from(alias);
                    }
                }
                let right_columns: Vec<String> = columns.iter().map(|(c, _)| c.clone()).collect();
                let using = match join {
                    Some(join) if join.natural => right_columns
                        .iter()
                        .filter(|c| scope.resolve(None, c).is_ok())
                        .cloned()
                        .collect(),
                    Some(join) => join.using.clone(),
                    None => Vec::new(),
                };
                let using_on = self.using_condition(&scope, &name, &right_columns, &using)?;
                let offset = scope.push(name, columns)?;
                if source.is_none()
                    && table.system.is_none()
                    && let Some(last) = scope.tables.last_mut()
                {
                    last.primary_key.clone_from(&table.schema.primary_key);
                }
                // USING's merged columns show the side kept whole: the right side's columns are
                // hidden, or for a RIGHT JOIN the left side's.
                let keeper = if kind == JoinKind::Right {
                    scope.tables.len() - 2
                } else {
                    scope.tables.len() - 1
                };
                if let Some(table) = scope.tables.get_mut(keeper) {
                    table.hidden = using;
                }
                let on = match on.or(using_on.as_ref()) {
                    Some(on) => {
                        let before = self.subqueries.len();
                        let (bound, ty) = self.bind(on, &scope)?;
                        self.no_correlated_since(before, "JOIN ... ON")?;
                        Some(self.expect_bool(bound, ty, "JOIN ... ON")?.0)
                    }
                    None => None,
                };
                match (kind, on) {
                    (JoinKind::Inner, Some(on)) => split_conjuncts(on, &mut conjuncts),
                    (JoinKind::Left, on) => left_ons.push((tables.len(), on)),
                    (JoinKind::Inner, None) => {}
                    // The left side, NULL-extended, goes after the right side in the loop.
                    (JoinKind::Right, on) => left_ons.push((tables.len(), on)),
                    (JoinKind::Full, _) => unreachable!("planned above"),
                }
                tables.push((table, offset, kind, source));
                if kind == JoinKind::Right {
                    let at = tables.len() - 2;
                    tables.swap(at, at + 1);
                    tables[at].2 = JoinKind::Inner;
                    tables[at + 1].2 = JoinKind::Left;
                }
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
        // Per column of the joined row: whether a table earlier in the loop has set it.
        let mut available = vec![false; width];
        for (position, (table, offset, kind, source)) in tables.iter().enumerate() {
            let on = left_ons.iter().find(|(at, _)| *at == position).and_then(|(_, on)| on.clone());
            let mut usable = Vec::new();
            match kind {
                JoinKind::Inner => usable.extend(conjuncts.iter().cloned()),
                JoinKind::Left => {
                    if let Some(on) = &on {
                        split_conjuncts(on.clone(), &mut usable);
                    }
                }
                JoinKind::Right | JoinKind::Full => unreachable!("planned as a left join"),
            }
            let (path, mut implied) = match source {
                // Computed rows: scanned whole, every conjunct left to the filter.
                Some(_) => (Path::full(), Vec::new()),
                None => {
                    // What the tables before this one in the loop have set (not always the
                    // columns before its own: a RIGHT JOIN swaps its sides).
                    let earlier = |expr: &BExpr| {
                        let mut set = true;
                        expr.columns(&mut |column| set &= available[column]);
                        set
                    };
                    choose_path(table, *offset, &usable, &self.params, &row_types, &earlier)
                }
            };
            if *kind == JoinKind::Left {
                // ON conditions stay whole: they decide which rows are NULL-extended.
                implied.clear();
            }
            for &at in &implied {
                decided[at] = true;
            }
            available[*offset..*offset + table.types.len()].fill(true);
            accesses.push(Access {
                table: Arc::clone(table),
                offset: *offset,
                path,
                kind: *kind,
                on,
                wanted: Wanted::marked(Vec::new(), &[]),
                implied: join_conjuncts(implied.iter().map(|at| usable[*at].clone()).collect()),
                derived: *source,
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
            // Grouped by a table's whole primary key: its other columns are grouped too (each
            // group has one value of them), so the select list may name them.
            for table in &scope.tables {
                let grouped: Vec<usize> = keys
                    .iter()
                    .filter_map(|key| match key {
                        BExpr::Column(at) => Some(*at),
                        _ => None,
                    })
                    .collect();
                let grouped_by = |column: usize| grouped.contains(&(table.offset + column));
                if table.primary_key.is_empty() || !table.primary_key.iter().all(|&c| grouped_by(c))
                {
                    continue;
                }
                for (column, (_, ty)) in table.columns.iter().enumerate() {
                    if !grouped_by(column) {
                        keys.push(BExpr::Column(table.offset + column));
                        key_types.push(*ty);
                    }
                }
            }
            group = Some(GroupBinding { keys, key_types, aggregates: Vec::new() });
        }
        let mut output = Vec::new();
        let mut columns = Vec::new();
        let before_items = self.subqueries.len();
        self.windows_allowed = true;
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
                            if crate::catalog::is_dropped_name(name)
                                || (only.is_none() && scope_table.hidden.contains(name))
                            {
                                continue;
                            }
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
                    self.sets_allowed = matches!(expr, Expr::Function { .. });
                    let bound = self.bind_in(expr, &scope, &mut group);
                    self.sets_allowed = false;
                    let (bound, ty) = bound?;
                    let (bound, ty) = self.coerce(bound, ty, Type::Text)?;
                    output.push(bound);
                    columns.push(OutputColumn {
                        name: alias.clone().unwrap_or_else(|| column_name(expr)),
                        ty,
                    });
                }
            }
        }
        self.windows_allowed = false;
        let mut having = None;
        if let Some(expr) = &select.having {
            let (bound, ty) = self.bind_in(expr, &scope, &mut group)?;
            having = Some(self.expect_bool(bound, ty, "HAVING")?.0);
        }
        // ORDER BY: an output position, an output name, or an expression over the input.
        self.windows_allowed = true;
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
        self.windows_allowed = false;
        if grouped {
            // Group rows are not the joined rows a correlated subquery reads.
            self.no_correlated_since(before_items, "a grouped query's select list")?;
        }
        if !self.windows.is_empty() {
            // Rows with windows are emitted once all are in, after the per-row results of
            // correlated subqueries have moved on.
            self.no_correlated_since(before_items, "the select list of a query with windows")?;
        }
        let mut distinct_on = Vec::new();
        for expr in &select.distinct_on {
            distinct_on.push(self.bind_in(expr, &scope, &mut group)?.0);
        }
        if !distinct_on.is_empty() {
            // PostgreSQL's rule: the ORDER BY begins with the DISTINCT ON expressions.
            let text = |e: &BExpr| format!("{e:?}");
            let on: Vec<String> = distinct_on.iter().map(text).collect();
            if sort.iter().take(on.len()).any(|key| !on.contains(&text(&key.expr))) {
                return Err(SqlError::new(
                    "42P10",
                    "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                ));
            }
            if sort.is_empty() {
                sort = distinct_on
                    .iter()
                    .map(|expr| SortKey {
                        expr: expr.clone(),
                        descending: false,
                        nulls_first: false,
                    })
                    .collect();
            }
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
            distinct_on,
            limit,
            offset,
            for_update: query.for_update,
            lock: query.lock,
            width,
            subqueries: std::mem::replace(&mut self.subqueries, saved_subqueries),
            moves: Vec::new(),
            derived: derived_sources,
            outer_args: Vec::new(),
            correlated: false,
            windows: std::mem::replace(&mut self.windows, saved_windows),
            sets: false,
        };
        plan.sets = plan.output.iter().any(crate::expr::is_set_call);
        self.windows_allowed = saved_windows_allowed;
        plan.correlated = plan.subqueries.iter().any(|sub| !sub.outer_args.is_empty());
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
}
