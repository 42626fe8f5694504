//! FROM items that are not stored tables: subqueries and `VALUES` in FROM, common table
//! expressions (`WITH`, `WITH RECURSIVE`), set operations (`UNION`, `INTERSECT`, `EXCEPT`)
//! and set-returning functions (`generate_series`). Each becomes a [`Derived`] source whose
//! rows the executor computes once per run of the query (`exec/derived.rs`) and then scans
//! like a table's; the planner sees a table of its columns with no key.

use super::{Binder, OutputColumn, QueryPlan, Scope};
use crate::ast::{self, Expr, SetOp, Source};
use crate::catalog::{ColumnSchema, TableInfo, TableSchema};
use crate::codec::KeyFormat;
use crate::error::{SqlError, SqlResult};
use crate::expr::BExpr;
use crate::types::{Type, Value};
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

/// Views nested in views deeper than this are taken for a cycle (`CREATE OR REPLACE VIEW` can
/// make one).
const VIEW_DEPTH_MAX: usize = 64;

/// The rows of a recursive CTE's working table, shared by the recursion and the step that
/// reads it.
pub type WorkTable = Arc<parking_lot::Mutex<Vec<Vec<Value>>>>;

/// A source of rows computed when the query runs.
#[derive(Debug, Clone)]
pub enum Derived {
    Query(QueryPlan),
    SetOp {
        op: SetOp,
        all: bool,
        left: QueryPlan,
        right: QueryPlan,
    },
    /// `generate_series(start, stop [, step])` over integers.
    Series {
        start: BExpr,
        stop: BExpr,
        step: Option<BExpr>,
    },
    /// `unnest(array, ...)`: a row per element, the arrays side by side (the shorter ones
    /// padded with NULLs).
    Unnest(Vec<BExpr>),
    /// A json set-returning function (`jsonb_each`, `json_array_elements`, ...) of a value
    /// (`expr/functions/json.rs`).
    Json {
        name: String,
        arg: BExpr,
    },
    /// A set-returning function `WITH ORDINALITY`: its rows, each numbered from 1 in a last
    /// column.
    Numbered(Box<Derived>),
    /// `WITH RECURSIVE`: `anchor`, then `step` over the rows the previous round added (the
    /// working table) until a round adds none; `all`: UNION ALL (else repeated rows are left
    /// out).
    Recursive {
        anchor: QueryPlan,
        step: QueryPlan,
        all: bool,
        work: WorkTable,
    },
    /// The working table, as the recursive step reads it.
    Work(WorkTable),
    /// A source that reads the FROM items before it (`LATERAL (subquery)`, a function of
    /// their columns): computed for each of their joined rows, at its place in the join
    /// (`exec.rs`), not once before it. `outer`: what a LATERAL subquery's `BExpr::Outer`
    /// values are (a function's arguments read the row itself).
    Lateral {
        source: Box<Derived>,
        outer: Vec<super::OuterArg>,
    },
}

impl Derived {
    /// The columns of the joined row before it that the source reads: its arguments' (a
    /// function's) or its outer columns (a LATERAL subquery's).
    pub fn row_columns(&self, visit: &mut dyn FnMut(usize)) {
        match self {
            Derived::Series { start, stop, step } => {
                start.columns(&mut |c| visit(c));
                stop.columns(&mut |c| visit(c));
                if let Some(step) = step {
                    step.columns(&mut |c| visit(c));
                }
            }
            Derived::Unnest(arrays) => {
                arrays.iter().for_each(|array| array.columns(&mut |c| visit(c)))
            }
            Derived::Json { arg, .. } => arg.columns(&mut |c| visit(c)),
            Derived::Numbered(inner) => inner.row_columns(visit),
            Derived::Lateral { source, outer } => {
                source.row_columns(visit);
                for arg in outer {
                    if let super::OuterArg::Column(column) = arg {
                        visit(*column);
                    }
                }
            }
            Derived::Query(_)
            | Derived::SetOp { .. }
            | Derived::Recursive { .. }
            | Derived::Work(_) => {}
        }
    }
}

/// Whether a source reads the joined row before it.
fn reads_row(derived: &Derived) -> bool {
    let mut reads = false;
    derived.row_columns(&mut |_| reads = true);
    reads
}

/// A CTE visible to the query being bound.
#[derive(Clone)]
pub(super) struct CteBinding {
    name: String,
    columns: Vec<String>,
    query: ast::Query,
    recursive: bool,
    /// How many CTEs were visible where this one was defined (it sees those, not later ones).
    visible: usize,
    /// While its own recursive step is bound: the working table and its columns.
    work: Option<(WorkTable, Vec<OutputColumn>, Arc<std::sync::atomic::AtomicBool>)>,
    /// How deep in expression subqueries the recursive step began (`Binder::sublinks`).
    sublinks: usize,
}

impl Binder<'_> {
    /// Makes a query's WITH clause visible; returns how many CTEs to forget afterwards.
    pub(super) fn push_ctes(&mut self, query: &ast::Query) -> usize {
        let before = self.ctes.len();
        for cte in &query.with {
            let visible = self.ctes.len();
            self.ctes.push(CteBinding {
                name: cte.name.clone(),
                columns: cte.columns.clone(),
                query: cte.query.clone(),
                recursive: query.recursive,
                visible,
                work: None,
                sublinks: 0,
            });
        }
        before
    }

    /// What a FROM item reads when it is not a stored table: the source's rows and the table
    /// its columns form (`None`: a table or view by name).
    /// A FROM item that is not a stored table: a CTE, a view, a subquery or a function;
    /// `scope`: the FROM items before it, which a function's arguments and a LATERAL
    /// subquery may read (the source is then [`Derived::Lateral`]).
    pub(super) fn derived_source(
        &mut self,
        table_ref: &ast::TableRef,
        scope: &Scope,
    ) -> SqlResult<Option<(Derived, Arc<TableInfo>)>> {
        // A function's arguments are evaluated in the outer query's context, so subqueries in
        // them are the outer query's. Subqueries bound for other sources are the source's own;
        // only a LATERAL one reads a column of a query around it (the FROM items before it,
        // and what they may read).
        let lateral =
            table_ref.lateral && matches!(table_ref.source.as_deref(), Some(Source::Query(_)));
        let scopes = if lateral {
            self.outer.push((scope.clone(), Vec::new()));
            Vec::new()
        } else {
            std::mem::take(&mut self.outer)
        };
        let result = match table_ref.source.as_deref() {
            Some(Source::Function { .. }) => self.derived_source_inner(table_ref, scope),
            _ => {
                let outer = std::mem::take(&mut self.subqueries);
                let result = self.derived_source_inner(table_ref, scope);
                self.subqueries = outer;
                result
            }
        };
        if !lateral {
            self.outer = scopes;
            return result;
        }
        let (_, read) = self.outer.pop().expect("pushed above");
        let (derived, table) = match result? {
            Some(found) => found,
            None => return Ok(None),
        };
        // Whatever its form (a query, a set operation), a source that read the items before
        // it is computed for each of their rows.
        Ok(Some(if read.is_empty() {
            (derived, table)
        } else {
            (Derived::Lateral { source: Box::new(derived), outer: read }, table)
        }))
    }

    fn derived_source_inner(
        &mut self,
        table_ref: &ast::TableRef,
        scope: &Scope,
    ) -> SqlResult<Option<(Derived, Arc<TableInfo>)>> {
        let (derived, columns) = match table_ref.source.as_deref() {
            None => match self.ctes.iter().rposition(|c| c.name == table_ref.name) {
                Some(at) => self.cte(at)?,
                None => match self.catalog.views.get(&table_ref.name) {
                    Some(view) => self.view(&Arc::clone(view))?,
                    None => return Ok(None),
                },
            },
            Some(Source::Query(query)) => self.derived_query(query)?,
            Some(Source::Function { name, args, ordinality }) => {
                let (derived, mut columns) = self.table_function(name, args, scope)?;
                let derived = if *ordinality {
                    columns.push(OutputColumn { name: "ordinality".into(), ty: Type::Int8 });
                    Derived::Numbered(Box::new(derived))
                } else {
                    derived
                };
                // Arguments that read the FROM items before: computed per joined row.
                if reads_row(&derived) {
                    (Derived::Lateral { source: Box::new(derived), outer: Vec::new() }, columns)
                } else {
                    (derived, columns)
                }
            }
        };
        let mut columns = columns;
        if table_ref.columns.len() > columns.len() {
            return Err(SqlError::new(
                "42P10",
                format!(
                    "table \"{}\" has {} columns available but {} columns specified",
                    table_ref.alias.as_deref().unwrap_or(&table_ref.name),
                    columns.len(),
                    table_ref.columns.len()
                ),
            ));
        }
        for (column, alias) in columns.iter_mut().zip(&table_ref.columns) {
            column.name = alias.clone();
        }
        // As PostgreSQL: a function of one column aliased without column names names its
        // column after the alias (`generate_series(1, 3) g` has a column `g`).
        if let (Some(Source::Function { .. }), Some(alias), [column]) =
            (table_ref.source.as_deref(), &table_ref.alias, columns.as_mut_slice())
            && table_ref.columns.is_empty()
        {
            column.name.clone_from(alias);
        }
        let table = self.derived_table(&table_ref.name, &columns)?;
        Ok(Some((derived, table)))
    }

    /// A view: its query, parsed and bound where it is read (it sees no CTE of the query
    /// that reads it), with the view's column names.
    fn view(&mut self, view: &crate::catalog::ViewDef) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        if self.view_depth >= VIEW_DEPTH_MAX {
            return Err(SqlError::new(
                "42P17",
                format!("infinite recursion detected in rules for relation \"{}\"", view.name),
            ));
        }
        let statements = crate::parse::parse(&view.query)?;
        let Some(ast::Statement::Query(query)) = statements.first() else {
            return Err(SqlError::new("XX001", format!("view \"{}\" does not parse", view.name)));
        };
        let ctes = std::mem::take(&mut self.ctes);
        self.view_depth += 1;
        let result = crate::depth::grow(|| self.derived_query(query));
        self.view_depth -= 1;
        self.ctes = ctes;
        let (derived, mut columns) = result?;
        for (column, name) in columns.iter_mut().zip(&view.columns) {
            column.name.clone_from(name);
        }
        Ok((derived, columns))
    }

    /// A subquery in FROM (or a CTE's body): a set operation's two sides, or a query.
    pub(super) fn derived_query(
        &mut self,
        query: &ast::Query,
    ) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        if let ast::QueryBody::SetOp { op, all, left, right } = &query.body
            && query.order_by.is_empty()
            && query.limit.is_none()
            && query.offset.is_none()
            && query.with.is_empty()
        {
            return self.set_operation(*op, *all, left, right);
        }
        let plan = self.query(query)?;
        let columns = plan.columns.clone();
        Ok((Derived::Query(plan), columns))
    }

    /// Binds both sides and gives each output column the type common to both.
    fn set_operation(
        &mut self,
        op: SetOp,
        all: bool,
        left: &ast::Query,
        right: &ast::Query,
    ) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        let mut left = self.query(left)?;
        let mut right = self.query(right)?;
        let name = match op {
            SetOp::Union => "UNION",
            SetOp::Intersect => "INTERSECT",
            SetOp::Except => "EXCEPT",
        };
        if left.columns.len() != right.columns.len() {
            return Err(SqlError::syntax(format!(
                "each {name} query must have the same number of columns"
            )));
        }
        let mut columns = left.columns.clone();
        for (at, column) in columns.iter_mut().enumerate() {
            let (a, b) = (left.columns[at].ty, right.columns[at].ty);
            let ty = match Type::common(a, b) {
                Some(Type::Unknown) => Type::Text,
                Some(ty) => ty,
                None => {
                    return Err(SqlError::mismatch(format!(
                        "{name} types {} and {} cannot be matched",
                        a.name(),
                        b.name()
                    )));
                }
            };
            column.ty = ty;
            conform_output(&mut left, at, ty);
            conform_output(&mut right, at, ty);
        }
        Ok((Derived::SetOp { op, all, left, right }, columns))
    }

    /// A reference to the CTE at `at`: its query bound where it was defined.
    fn cte(&mut self, at: usize) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        let cte = self.ctes[at].clone();
        if let Some((work, columns, used)) = &cte.work {
            // PostgreSQL's rules for the recursive term: the step reads the working table
            // once, and not from a subquery of an expression.
            if self.sublinks != cte.sublinks {
                return Err(SqlError::new(
                    "42P19",
                    format!(
                        "recursive reference to query \"{}\" must not appear within a subquery",
                        cte.name
                    ),
                ));
            }
            if used.swap(true, std::sync::atomic::Ordering::Relaxed) {
                return Err(SqlError::new(
                    "42P19",
                    format!(
                        "recursive reference to query \"{}\" must not appear more than once",
                        cte.name
                    ),
                ));
            }
            return Ok((Derived::Work(Arc::clone(work)), columns.clone()));
        }
        // The CTEs defined after this one are not visible to it.
        let later = self.ctes.split_off(cte.visible);
        let result = self.cte_body(&cte);
        self.ctes.extend(later);
        let (derived, mut columns) = result?;
        if cte.columns.len() > columns.len() {
            return Err(SqlError::new(
                "42P10",
                format!(
                    "WITH query \"{}\" has {} columns available but {} columns specified",
                    cte.name,
                    columns.len(),
                    cte.columns.len()
                ),
            ));
        }
        for (column, alias) in columns.iter_mut().zip(&cte.columns) {
            column.name = alias.clone();
        }
        Ok((derived, columns))
    }

    fn cte_body(&mut self, cte: &CteBinding) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        let query = &cte.query;
        let recursive_union = match &query.body {
            ast::QueryBody::SetOp { op: SetOp::Union, all, left, right }
                if cte.recursive && query.order_by.is_empty() && query.limit.is_none() =>
            {
                Some((*all, left, right))
            }
            _ => None,
        };
        let Some((all, left, right)) = recursive_union else {
            if cte.recursive {
                // Visible to itself, so that a self-reference is reported as PostgreSQL does.
                self.ctes.push(cte.clone());
                let result = self.non_recursive_body(cte);
                self.ctes.pop();
                return result;
            }
            return self.derived_query(query);
        };
        if query.for_update {
            return Err(SqlError::unsupported("FOR UPDATE/SHARE in a recursive query"));
        }
        let mut anchor = self.query(left)?;
        let mut columns = anchor.columns.clone();
        for (column, alias) in columns.iter_mut().zip(&cte.columns) {
            column.name = alias.clone();
        }
        for (at, column) in columns.iter_mut().enumerate() {
            if column.ty == Type::Unknown {
                column.ty = Type::Text;
                conform_output(&mut anchor, at, Type::Text);
            }
        }
        let work: WorkTable = Arc::default();
        let used = Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.ctes.push(CteBinding {
            work: Some((Arc::clone(&work), columns.clone(), Arc::clone(&used))),
            sublinks: self.sublinks,
            ..cte.clone()
        });
        let step = self.query(right);
        self.ctes.pop();
        let mut step = step?;
        if used.load(std::sync::atomic::Ordering::Relaxed) {
            if step.grouping.is_some() {
                return Err(SqlError::new(
                    "42P19",
                    "aggregate functions are not allowed in a recursive query's recursive term",
                ));
            }
            if step.for_update {
                return Err(SqlError::unsupported("FOR UPDATE/SHARE in a recursive query"));
            }
        }
        if step.columns.len() != columns.len() {
            return Err(SqlError::syntax("each UNION query must have the same number of columns"));
        }
        for (at, column) in columns.iter().enumerate() {
            let ty = step.columns[at].ty;
            if Type::common(column.ty, ty).is_none() {
                return Err(SqlError::mismatch(format!(
                    "recursive query \"{}\" column {} has type {} in non-recursive term but \
                     type {} overall",
                    cte.name,
                    at + 1,
                    column.ty.name(),
                    ty.name()
                )));
            }
            conform_output(&mut step, at, column.ty);
        }
        if !used.load(std::sync::atomic::Ordering::Relaxed) {
            // No self-reference: a plain UNION.
            let mut right = step;
            for (at, column) in columns.iter().enumerate() {
                conform_output(&mut right, at, column.ty);
            }
            return Ok((Derived::SetOp { op: SetOp::Union, all, left: anchor, right }, columns));
        }
        Ok((Derived::Recursive { anchor, step, all, work }, columns))
    }

    /// A CTE of a `WITH RECURSIVE` whose body is not `anchor UNION step`: it must not read
    /// itself.
    fn non_recursive_body(&mut self, cte: &CteBinding) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        let work: WorkTable = Arc::default();
        let used = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let last = self.ctes.len() - 1;
        self.ctes[last].work = Some((work, Vec::new(), Arc::clone(&used)));
        let result = self.derived_query(&cte.query)?;
        if used.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SqlError::new(
                "42P19",
                format!(
                    "recursive query \"{}\" does not have the form non-recursive-term UNION \
                     [ALL] recursive-term",
                    cte.name
                ),
            ));
        }
        Ok(result)
    }

    /// A set-returning function in FROM; its arguments may read `scope`'s columns.
    fn table_function(
        &mut self,
        name: &str,
        args: &[Expr],
        scope: &Scope,
    ) -> SqlResult<(Derived, Vec<OutputColumn>)> {
        let scope = scope.clone();
        match name {
            "generate_series" if (2..=3).contains(&args.len()) => {
                let mut bound = Vec::new();
                let mut ty = Type::Int4;
                for arg in args {
                    let (expr, arg_ty) = self.bind(arg, &scope)?;
                    let (expr, arg_ty) = self.coerce(expr, arg_ty, Type::Int4)?;
                    if !arg_ty.is_integer() {
                        return Err(SqlError::new(
                            "42883",
                            format!(
                                "function generate_series({}) does not exist",
                                vec![arg_ty.name(); args.len()].join(", ")
                            ),
                        ));
                    }
                    if arg_ty == Type::Int8 {
                        ty = Type::Int8;
                    }
                    bound.push(expr);
                }
                let step = if bound.len() == 3 { bound.pop() } else { None };
                let stop = bound.pop().expect("two arguments");
                let start = bound.pop().expect("two arguments");
                let columns = vec![OutputColumn { name: name.to_string(), ty }];
                Ok((Derived::Series { start, stop, step }, columns))
            }
            "unnest" if !args.is_empty() => {
                let mut arrays = Vec::with_capacity(args.len());
                let mut columns = Vec::with_capacity(args.len());
                for arg in args {
                    let (expr, ty) = self.bind(arg, &scope)?;
                    let elem = match ty {
                        Type::Array(elem) => elem,
                        Type::Unknown => crate::types::Elem::Text,
                        other => {
                            return Err(SqlError::new(
                                "42883",
                                format!("function unnest({}) does not exist", other.name()),
                            ));
                        }
                    };
                    arrays.push(self.convert_to(expr, ty, Type::Array(elem))?);
                    columns.push(OutputColumn { name: "unnest".into(), ty: elem.ty() });
                }
                Ok((Derived::Unnest(arrays), columns))
            }
            _ if args.len() == 1
                && crate::expr::functions::json::set_columns(name, Type::Jsonb).is_some() =>
            {
                let (expr, ty) = self.bind(&args[0], &scope)?;
                let kind = match ty {
                    Type::Json | Type::Jsonb => ty,
                    Type::Unknown if name.starts_with("jsonb_") => Type::Jsonb,
                    Type::Unknown => Type::Json,
                    other => {
                        return Err(SqlError::new(
                            "42883",
                            format!("function {name}({}) does not exist", other.name()),
                        ));
                    }
                };
                let arg = self.convert_to(expr, ty, kind)?;
                let columns = crate::expr::functions::json::set_columns(name, kind)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(column, ty)| OutputColumn { name: column.into(), ty })
                    .collect();
                Ok((Derived::Json { name: name.to_string(), arg }, columns))
            }
            _ => Err(SqlError::new(
                "42883",
                format!("function {name} does not exist (as a FROM item)"),
            )),
        }
    }

    /// The table a derived source's columns form: no key, no index, no stored rows.
    pub(super) fn derived_table(
        &self,
        name: &str,
        columns: &[OutputColumn],
    ) -> SqlResult<Arc<TableInfo>> {
        let engine = self
            .catalog
            .system_table
            .clone()
            .ok_or_else(|| SqlError::new("XX000", "the catalog has no system table"))?;
        let schema = TableSchema {
            name: name.to_string(),
            engine_name: engine.name().to_string(),
            version: 1,
            columns: columns.iter().map(|c| ColumnSchema::new(c.name.clone(), c.ty)).collect(),
            primary_key: Vec::new(),
            indexes: Vec::new(),
            primary_name: None,
            key_format: KeyFormat::Compact,
            layouts: Vec::new(),
            types_from: 0,
            foreign_keys: Vec::new(),
            checks: Vec::new(),
        };
        Ok(Arc::new(TableInfo::new(
            schema,
            engine,
            Arc::new(AtomicI64::new(1)),
            vec![None; columns.len()],
            Some(Arc::default()),
        )))
    }
}

/// Makes output column `at` of `plan` produce type `ty`.
fn conform_output(plan: &mut QueryPlan, at: usize, ty: Type) {
    let column = &mut plan.columns[at];
    if column.ty == ty {
        return;
    }
    let expr = std::mem::replace(&mut plan.output[at], BExpr::Const(Value::Null));
    let converted = match expr.constant() {
        Some(value) if column.ty == Type::Unknown => {
            crate::types::cast(value.clone(), ty, false).ok().map(BExpr::Const)
        }
        _ => None,
    };
    plan.output[at] = converted.unwrap_or_else(|| BExpr::Cast { expr: Box::new(expr), ty });
    column.ty = ty;
    if let Some(moves) = plan.moves.get_mut(at) {
        *moves = false;
    }
}
