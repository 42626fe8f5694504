//! The executor: runs plans inside an engine transaction.

use crate::ast::{BinaryOp, JoinKind};
use crate::catalog::{Sequence, TableInfo};
use crate::codec::{decode_row, encode_key, encode_row};
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
use crate::plan::{
    Access, AggFunc, Aggregate, ConflictAction, InsertPlan, InsertRows, ModifyPlan, Path, QueryPlan,
};
use crate::types::{GroupKey, Type, Value, cast};
use engram_engine::{Direction, Error, Txn};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;

/// Rows a statement produced, and how many rows it affected.
#[derive(Debug, Default)]
pub struct Produced {
    pub rows: Vec<Vec<Value>>,
    pub affected: u64,
}

/// What every statement's execution shares.
#[allow(missing_debug_implementations)]
pub struct Env<'a> {
    pub params: &'a [Value],
    pub now: i64,
    pub reserve: &'a dyn Fn(&Sequence, i64) -> SqlResult<()>,
    /// Stop after this many output rows (a portal's row limit); 0 is no limit.
    pub max_rows: usize,
}

fn engine_error(error: Error, table: &TableInfo) -> SqlError {
    match error {
        Error::DuplicateKey { index, .. } => {
            let constraint = match index {
                None => table
                    .schema
                    .primary_name
                    .clone()
                    .unwrap_or_else(|| format!("{}_pkey", table.schema.name)),
                Some(name) => name,
            };
            SqlError::new(
                "23505",
                format!("duplicate key value violates unique constraint \"{constraint}\""),
            )
        }
        Error::KeyTooLong { len, max } => SqlError::new(
            "54000",
            format!(
                "index row size {len} exceeds maximum {max} for table \"{}\"",
                table.schema.name
            ),
        ),
        Error::ValueTooLong { len, max } => SqlError::new(
            "54000",
            format!("row size {len} exceeds maximum {max} for table \"{}\"", table.schema.name),
        ),
        other => other.into(),
    }
}

/// Runs the uncorrelated subqueries of a plan; one column of values each.
fn run_subqueries(
    txn: &mut Txn<'_>,
    subqueries: &[QueryPlan],
    env: &Env<'_>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut results = Vec::with_capacity(subqueries.len());
    for sub in subqueries {
        let inner = Env { params: env.params, now: env.now, reserve: env.reserve, max_rows: 0 };
        let rows = run_query(txn, sub, &inner)?.rows;
        results.push(rows.into_iter().map(|mut row| row.swap_remove(0)).collect());
    }
    Ok(results)
}

/// Encodes the primary key of a full row.
pub fn primary_key(table: &TableInfo, values: &[Value], out: &mut Vec<u8>) {
    out.clear();
    for &column in &table.schema.primary_key {
        encode_key(table.types[column], &values[column], out);
    }
}

fn successor(mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    while let Some(last) = bytes.last_mut() {
        if *last == u8::MAX {
            bytes.pop();
        } else {
            *last += 1;
            return Some(bytes);
        }
    }
    None
}

/// Key bytes of the scan, or `None` when no row can match.
enum Bounds {
    Empty,
    Scan {
        low: Option<Vec<u8>>,
        high: Option<Vec<u8>>,
    },
    /// A value did not convert to the key column's type: scan everything and filter.
    Full,
}

fn key_part(ty: Type, value: Value, marker: bool, out: &mut Vec<u8>) -> Option<Option<()>> {
    if value.is_null() {
        return Some(None);
    }
    let value = cast(value, ty, false).ok()?;
    if marker {
        out.push(1);
    }
    encode_key(ty, &value, out);
    Some(Some(()))
}

fn bounds(access: &Access, row: &[Value], cx: &Context<'_>) -> SqlResult<Bounds> {
    let schema = &access.table.schema;
    let Path::Range { index, eq, low, high, .. } = &access.path else {
        unreachable!("point paths have no bounds")
    };
    let (columns, marker) = match index {
        None => (&schema.primary_key, false),
        Some(i) => (&schema.indexes[*i].columns, true),
    };
    let types = &access.table.types;
    let mut prefix = Vec::new();
    for (expr, column) in eq.iter().zip(columns) {
        match key_part(types[*column], expr.eval(row, cx)?, marker, &mut prefix) {
            None => return Ok(Bounds::Full),
            Some(None) => return Ok(Bounds::Empty),
            Some(Some(())) => {}
        }
    }
    let next = columns.get(eq.len()).map(|c| types[*c]);
    let mut low_key = if prefix.is_empty() { None } else { Some(prefix.clone()) };
    let mut high_key = if prefix.is_empty() { None } else { successor(prefix.clone()) };
    if let (Some(ty), true) = (next, low.is_some() || high.is_some()) {
        if marker {
            // Only non-NULL values of the next column (marker 1) can satisfy a comparison.
            let mut values_low = prefix.clone();
            values_low.push(1);
            low_key = Some(values_low);
            let mut values_high = prefix.clone();
            values_high.push(2);
            high_key = Some(values_high);
        }
        if let Some((expr, inclusive)) = low {
            let mut key = prefix.clone();
            match key_part(ty, expr.eval(row, cx)?, marker, &mut key) {
                None => return Ok(Bounds::Full),
                Some(None) => return Ok(Bounds::Empty),
                Some(Some(())) => {}
            }
            low_key = if *inclusive { Some(key) } else { successor(key) };
            if low_key.is_none() {
                return Ok(Bounds::Empty);
            }
        }
        if let Some((expr, inclusive)) = high {
            let mut key = prefix.clone();
            match key_part(ty, expr.eval(row, cx)?, marker, &mut key) {
                None => return Ok(Bounds::Full),
                Some(None) => return Ok(Bounds::Empty),
                Some(Some(())) => {}
            }
            high_key = if *inclusive { successor(key) } else { Some(key) };
        }
    }
    Ok(Bounds::Scan { low: low_key, high: high_key })
}

/// Receives `(primary key, decoded columns)`; returns whether to go on.
type Sink<'a> = dyn FnMut(&[u8], &[Value]) -> SqlResult<bool> + 'a;

/// Visits the rows of one table access: `sink(key, columns)` returns whether to go on.
fn fetch(
    txn: &mut Txn<'_>,
    access: &Access,
    row: &[Value],
    cx: &Context<'_>,
    for_update: bool,
    sink: &mut Sink<'_>,
) -> SqlResult<()> {
    let table = &access.table;
    let types = &table.types;
    let mut decoded = Vec::new();
    match &access.path {
        Path::Point(exprs) => {
            let mut key = Vec::new();
            for (expr, column) in exprs.iter().zip(&table.schema.primary_key) {
                match key_part(types[*column], expr.eval(row, cx)?, false, &mut key) {
                    None => return fetch_full(txn, access, for_update, sink),
                    Some(None) => return Ok(()),
                    Some(Some(())) => {}
                }
            }
            let found = if for_update {
                txn.get_for_update(&table.engine, &key)
            } else {
                txn.get(&table.engine, &key)
            }
            .map_err(|e| engine_error(e, table))?;
            if let Some(bytes) = found {
                decode_row(bytes, types, &access.wanted, &mut decoded)?;
                sink(&key, &decoded)?;
            }
            Ok(())
        }
        Path::Range { index, descending, .. } => {
            let (low, high) = match bounds(access, row, cx)? {
                Bounds::Empty => return Ok(()),
                Bounds::Full => return fetch_full(txn, access, for_update, sink),
                Bounds::Scan { low, high } => (low, high),
            };
            let low = low.as_deref().map_or(Bound::Unbounded, Bound::Included);
            let high = high.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let direction = if *descending { Direction::Reverse } else { Direction::Forward };
            let mut failure = None;
            let mut keys: Vec<Vec<u8>> = Vec::new();
            let mut visit = |key: &[u8], bytes: &[u8]| -> bool {
                if let Err(error) = decode_row(bytes, types, &access.wanted, &mut decoded) {
                    failure = Some(error);
                    return false;
                }
                if for_update {
                    keys.push(key.to_vec());
                }
                match sink(key, &decoded) {
                    Ok(go_on) => go_on,
                    Err(error) => {
                        failure = Some(error);
                        false
                    }
                }
            };
            let scanned = match index {
                None => txn.scan(&table.engine, low, high, direction, usize::MAX, &mut visit),
                Some(i) => {
                    txn.scan_index(&table.engine, *i, low, high, direction, usize::MAX, &mut visit)
                }
            };
            scanned.map_err(|e| engine_error(e, table))?;
            if let Some(error) = failure {
                return Err(error);
            }
            for key in keys {
                txn.get_for_update(&table.engine, &key).map_err(|e| engine_error(e, table))?;
            }
            Ok(())
        }
    }
}

fn fetch_full(
    txn: &mut Txn<'_>,
    access: &Access,
    for_update: bool,
    sink: &mut Sink<'_>,
) -> SqlResult<()> {
    let full = Access {
        path: Path::Range { index: None, eq: Vec::new(), low: None, high: None, descending: false },
        ..access.clone()
    };
    fetch(
        txn,
        &full,
        &[],
        &Context { params: &[], subqueries: &[], now: 0, reserve: &|_, _| Ok(()) },
        for_update,
        sink,
    )
}

/// What a query accumulates as rows arrive.
struct Collector<'p> {
    plan: &'p QueryPlan,
    /// (sort keys, output row).
    rows: Vec<(Vec<Value>, Vec<Value>)>,
    groups: HashMap<GroupKey, usize>,
    group_states: Vec<(Vec<Value>, Vec<AggState>)>,
    /// Rows needed before the scan may stop (`usize::MAX`: all).
    enough: usize,
}

#[derive(Debug)]
enum AggState {
    Count(i64),
    Sum(Value),
    MinMax(Value),
    Avg(Value, i64),
    Distinct(Vec<Value>, HashSet<GroupKey>),
}

fn new_states(aggregates: &[Aggregate]) -> Vec<AggState> {
    aggregates
        .iter()
        .map(|a| {
            if a.distinct {
                return AggState::Distinct(Vec::new(), HashSet::new());
            }
            match a.func {
                AggFunc::Count | AggFunc::CountStar => AggState::Count(0),
                AggFunc::Sum => AggState::Sum(Value::Null),
                AggFunc::Min | AggFunc::Max => AggState::MinMax(Value::Null),
                AggFunc::Avg => AggState::Avg(Value::Null, 0),
            }
        })
        .collect()
}

fn add(sum: Value, value: Value, ty: Type) -> SqlResult<Value> {
    if sum.is_null() {
        return cast(value, ty, false);
    }
    crate::expr::arith(BinaryOp::Add, sum, value, ty)
}

fn accumulate(state: &mut AggState, aggregate: &Aggregate, value: Value) -> SqlResult<()> {
    match state {
        AggState::Count(n) => {
            if aggregate.func == AggFunc::CountStar || !value.is_null() {
                *n += 1;
            }
        }
        _ if value.is_null() => {}
        AggState::Sum(sum) => *sum = add(std::mem::replace(sum, Value::Null), value, aggregate.ty)?,
        AggState::MinMax(best) => {
            let replace = best.is_null() || {
                let ordering = value.compare(best);
                if aggregate.func == AggFunc::Min {
                    ordering == Ordering::Less
                } else {
                    ordering == Ordering::Greater
                }
            };
            if replace {
                *best = value;
            }
        }
        AggState::Avg(sum, count) => {
            *sum = add(std::mem::replace(sum, Value::Null), value, aggregate.ty)?;
            *count += 1;
        }
        AggState::Distinct(values, seen) => {
            if seen.insert(GroupKey(vec![value.clone()])) {
                values.push(value);
            }
        }
    }
    Ok(())
}

fn finish(state: AggState, aggregate: &Aggregate) -> SqlResult<Value> {
    Ok(match state {
        AggState::Count(n) => Value::Int(n),
        AggState::Sum(sum) | AggState::MinMax(sum) => sum,
        AggState::Avg(sum, count) => {
            if count == 0 {
                Value::Null
            } else {
                crate::expr::arith(BinaryOp::Divide, sum, Value::Int(count), aggregate.ty)?
            }
        }
        AggState::Distinct(values, _) => {
            let plain = Aggregate { distinct: false, ..aggregate.clone() };
            let mut inner = new_states(std::slice::from_ref(&plain)).remove(0);
            for value in values {
                accumulate(&mut inner, &plain, value)?;
            }
            finish(inner, &plain)?
        }
    })
}

impl Collector<'_> {
    /// Takes one joined row that passed the filter; returns whether to go on scanning.
    fn take(&mut self, row: &[Value], cx: &Context<'_>) -> SqlResult<bool> {
        let plan = self.plan;
        if let Some(grouping) = &plan.grouping {
            let mut keys = Vec::with_capacity(grouping.keys.len());
            for key in &grouping.keys {
                keys.push(key.eval(row, cx)?);
            }
            let key = GroupKey(keys);
            let at = match self.groups.get(&key) {
                Some(at) => *at,
                None => {
                    self.group_states.push((key.0.clone(), new_states(&grouping.aggregates)));
                    self.groups.insert(key, self.group_states.len() - 1);
                    self.group_states.len() - 1
                }
            };
            let states = &mut self.group_states[at].1;
            for (state, aggregate) in states.iter_mut().zip(&grouping.aggregates) {
                let value = match &aggregate.arg {
                    Some(arg) => arg.eval(row, cx)?,
                    None => Value::Null,
                };
                accumulate(state, aggregate, value)?;
            }
            return Ok(true);
        }
        self.emit(row, cx)?;
        Ok(self.rows.len() < self.enough)
    }

    fn emit(&mut self, row: &[Value], cx: &Context<'_>) -> SqlResult<()> {
        let plan = self.plan;
        let mut output = Vec::with_capacity(plan.output.len());
        for expr in &plan.output {
            output.push(expr.eval(row, cx)?);
        }
        let mut keys = Vec::with_capacity(plan.sort.len());
        for key in &plan.sort {
            keys.push(key.expr.eval(row, cx)?);
        }
        self.rows.push((keys, output));
        Ok(())
    }
}

fn count_value(expr: &Option<BExpr>, cx: &Context<'_>) -> SqlResult<Option<usize>> {
    match expr {
        None => Ok(None),
        Some(expr) => match expr.eval(&[], cx)? {
            Value::Null => Ok(None),
            Value::Int(n) if n >= 0 => Ok(Some(n as usize)),
            _ => Err(SqlError::new("2201W", "LIMIT and OFFSET must not be negative")),
        },
    }
}

/// Runs a query.
pub fn run_query(txn: &mut Txn<'_>, plan: &QueryPlan, env: &Env<'_>) -> SqlResult<Produced> {
    let subqueries = run_subqueries(txn, &plan.subqueries, env)?;
    let cx =
        Context { params: env.params, subqueries: &subqueries, now: env.now, reserve: env.reserve };
    let limit = count_value(&plan.limit, &cx)?;
    let offset = count_value(&plan.offset, &cx)?.unwrap_or(0);
    let streaming = plan.sort.is_empty() && plan.grouping.is_none() && !plan.distinct;
    let mut enough = match (streaming, limit) {
        (true, Some(limit)) => offset.saturating_add(limit),
        _ => usize::MAX,
    };
    if streaming && env.max_rows > 0 {
        enough = enough.min(offset.saturating_add(env.max_rows));
    }
    let mut collector = Collector {
        plan,
        rows: Vec::new(),
        groups: HashMap::new(),
        group_states: Vec::new(),
        enough,
    };
    if enough > 0 {
        match &plan.values {
            Some(rows) => {
                for values in rows {
                    let mut row = Vec::with_capacity(values.len());
                    for expr in values {
                        row.push(expr.eval(&[], &cx)?);
                    }
                    if plan.filter.as_ref().map_or(Ok(true), |f| f.test(&row, &cx))?
                        && !collector.take(&row, &cx)?
                    {
                        break;
                    }
                }
            }
            None => {
                let mut row = vec![Value::Null; plan.width];
                join(txn, plan, 0, &mut row, &cx, &mut collector)?;
            }
        }
    }
    // Groups to rows.
    if let Some(grouping) = &plan.grouping {
        if collector.group_states.is_empty() && grouping.keys.is_empty() {
            collector.group_states.push((Vec::new(), new_states(&grouping.aggregates)));
        }
        for (keys, states) in std::mem::take(&mut collector.group_states) {
            let mut row = keys;
            for (state, aggregate) in states.into_iter().zip(&grouping.aggregates) {
                row.push(finish(state, aggregate)?);
            }
            if let Some(having) = &grouping.having
                && !having.test(&row, &cx)?
            {
                continue;
            }
            collector.emit(&row, &cx)?;
        }
    }
    let mut rows = collector.rows;
    if plan.distinct {
        let mut seen = HashSet::new();
        rows.retain(|(_, output)| seen.insert(GroupKey(output.clone())));
    }
    if !plan.sort.is_empty() {
        let sort = &plan.sort;
        rows.sort_by(|(a, _), (b, _)| {
            for ((x, y), key) in a.iter().zip(b).zip(sort) {
                let ordering = match (x.is_null(), y.is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => {
                        if key.nulls_first {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        }
                    }
                    (false, true) => {
                        if key.nulls_first {
                            Ordering::Greater
                        } else {
                            Ordering::Less
                        }
                    }
                    (false, false) => {
                        let o = x.compare(y);
                        if key.descending { o.reverse() } else { o }
                    }
                };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
            Ordering::Equal
        });
    }
    let mut out: Vec<Vec<Value>> =
        rows.into_iter().skip(offset).map(|(_, output)| output).collect();
    if let Some(limit) = limit {
        out.truncate(limit);
    }
    if env.max_rows > 0 {
        out.truncate(env.max_rows);
    }
    Ok(Produced { affected: out.len() as u64, rows: out })
}

/// Nested-loop join over the plan's tables from `level` on.
fn join(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    level: usize,
    row: &mut Vec<Value>,
    cx: &Context<'_>,
    collector: &mut Collector<'_>,
) -> SqlResult<bool> {
    let access = &plan.tables[level];
    let last = level + 1 == plan.tables.len();
    let width = access.table.types.len();
    let offset = access.offset;
    if last && level == 0 {
        // One table: filter and collect inside the scan, stopping early when enough.
        let mut go_on = true;
        fetch(txn, access, &row.clone(), cx, plan.for_update, &mut |_, columns| {
            row[offset..offset + width].clone_from_slice(columns);
            if plan.filter.as_ref().map_or(Ok(true), |f| f.test(row, cx))? {
                go_on = collector.take(row, cx)?;
            }
            Ok(go_on)
        })?;
        return Ok(go_on);
    }
    // Collect this level's rows first: the scan borrows the transaction.
    let mut matches: Vec<Vec<Value>> = Vec::new();
    let current = row.clone();
    fetch(txn, access, &current, cx, plan.for_update, &mut |_, columns| {
        matches.push(columns.to_vec());
        Ok(true)
    })?;
    let mut matched_any = false;
    for columns in matches {
        row[offset..offset + width].clone_from_slice(&columns);
        if let Some(on) = &access.on
            && !on.test(row, cx)?
        {
            continue;
        }
        matched_any = true;
        if !descend(txn, plan, level, last, row, cx, collector)? {
            return Ok(false);
        }
    }
    if !matched_any && access.kind == JoinKind::Left {
        for value in &mut row[offset..offset + width] {
            *value = Value::Null;
        }
        if !descend(txn, plan, level, last, row, cx, collector)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn descend(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    level: usize,
    last: bool,
    row: &mut Vec<Value>,
    cx: &Context<'_>,
    collector: &mut Collector<'_>,
) -> SqlResult<bool> {
    if last {
        if plan.filter.as_ref().map_or(Ok(true), |f| f.test(row, cx))? {
            return collector.take(row, cx);
        }
        Ok(true)
    } else {
        join(txn, plan, level + 1, row, cx, collector)
    }
}

/// Casts values to the table's column types and checks NOT NULL.
fn conform(table: &TableInfo, values: &mut [Value]) -> SqlResult<()> {
    for (i, value) in values.iter_mut().enumerate() {
        let column = &table.schema.columns[i];
        if value.is_null() {
            if column.not_null || table.schema.primary_key.contains(&i) {
                return Err(SqlError::new(
                    "23502",
                    format!(
                        "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                        column.name, table.schema.name
                    ),
                ));
            }
            continue;
        }
        *value = cast(std::mem::replace(value, Value::Null), column.ty, false)?;
    }
    Ok(())
}

fn row_key(table: &TableInfo, values: &[Value], key: &mut Vec<u8>) {
    if table.schema.primary_key.is_empty() {
        key.clear();
        encode_key(Type::Int8, &Value::Int(table.next_rowid()), key);
    } else {
        primary_key(table, values, key);
    }
}

/// Runs an INSERT.
pub fn run_insert(txn: &mut Txn<'_>, plan: &InsertPlan, env: &Env<'_>) -> SqlResult<Produced> {
    let subqueries = run_subqueries(txn, &plan.subqueries, env)?;
    let cx =
        Context { params: env.params, subqueries: &subqueries, now: env.now, reserve: env.reserve };
    let table = &plan.table;
    let width = table.types.len();
    // Source rows as per-column values, `None` for defaults.
    let mut sources: Vec<Vec<Option<Value>>> = Vec::new();
    match &plan.rows {
        InsertRows::Values(rows) => {
            for exprs in rows {
                let mut values = Vec::with_capacity(width);
                for expr in exprs {
                    values.push(match expr {
                        Some(expr) => Some(expr.eval(&[], &cx)?),
                        None => None,
                    });
                }
                sources.push(values);
            }
        }
        InsertRows::Query(query, targets) => {
            let inner = Env { params: env.params, now: env.now, reserve: env.reserve, max_rows: 0 };
            for row in run_query(txn, query, &inner)?.rows {
                let mut values = vec![None; width];
                for (value, &target) in row.into_iter().zip(targets) {
                    values[target] = Some(value);
                }
                sources.push(values);
            }
        }
    }
    let mut produced = Produced::default();
    let mut key = Vec::new();
    let mut bytes = Vec::new();
    for source in sources {
        let mut values = Vec::with_capacity(width);
        for (i, value) in source.into_iter().enumerate() {
            values.push(match value {
                Some(value) => value,
                None => match &plan.defaults[i] {
                    Some(default) => default.eval(&[], &cx)?,
                    None => Value::Null,
                },
            });
        }
        conform(table, &mut values)?;
        row_key(table, &values, &mut key);
        encode_row(table.schema.version, &table.types, &values, &mut bytes);
        match txn.insert(&table.engine, &key, &bytes) {
            Ok(()) => {
                produced.affected += 1;
                returning(&plan.returning, &values, &cx, &mut produced.rows)?;
            }
            Err(Error::DuplicateKey { index, .. })
                if plan.on_conflict.as_ref().is_some_and(|c| {
                    c.index.map(|i| &table.schema.indexes[i].name) == index.as_ref()
                }) =>
            {
                let Some(conflict) = &plan.on_conflict else {
                    unreachable!("checked by the guard")
                };
                let ConflictAction::Update { assignments, filter } = &conflict.action else {
                    continue;
                };
                // Find the existing row: by primary key, or through the unique index.
                let existing_key = match conflict.index {
                    None => key.clone(),
                    Some(i) => {
                        let mut prefix = Vec::new();
                        for &column in &table.schema.indexes[i].columns {
                            prefix.push(1);
                            encode_key(table.types[column], &values[column], &mut prefix);
                        }
                        let mut found = None;
                        let high = successor(prefix.clone());
                        txn.scan_index(
                            &table.engine,
                            i,
                            Bound::Included(&prefix),
                            high.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                            Direction::Forward,
                            1,
                            |pk, _| {
                                found = Some(pk.to_vec());
                                false
                            },
                        )
                        .map_err(|e| engine_error(e, table))?;
                        found.ok_or_else(|| {
                            SqlError::new(
                                "40001",
                                "could not serialize access: the conflicting row changed",
                            )
                        })?
                    }
                };
                let Some(old) = txn
                    .get_for_update(&table.engine, &existing_key)
                    .map_err(|e| engine_error(e, table))?
                else {
                    return Err(SqlError::new(
                        "40001",
                        "could not serialize access: the conflicting row was deleted concurrently",
                    ));
                };
                let mut old_values = Vec::new();
                decode_row(old, &table.types, &[], &mut old_values)?;
                let mut both = old_values.clone();
                both.extend(values.iter().cloned());
                if let Some(filter) = filter
                    && !filter.test(&both, &cx)?
                {
                    continue;
                }
                let mut new_values = old_values;
                for (column, expr) in assignments {
                    new_values[*column] = expr.eval(&both, &cx)?;
                }
                conform(table, &mut new_values)?;
                let mut new_key = Vec::new();
                primary_key(table, &new_values, &mut new_key);
                encode_row(table.schema.version, &table.types, &new_values, &mut bytes);
                if new_key != existing_key && !table.schema.primary_key.is_empty() {
                    txn.delete(&table.engine, &existing_key).map_err(|e| engine_error(e, table))?;
                    txn.insert(&table.engine, &new_key, &bytes)
                        .map_err(|e| engine_error(e, table))?;
                } else {
                    txn.update(&table.engine, &existing_key, &bytes)
                        .map_err(|e| engine_error(e, table))?;
                }
                produced.affected += 1;
                returning(&plan.returning, &new_values, &cx, &mut produced.rows)?;
            }
            Err(error) => return Err(engine_error(error, table)),
        }
    }
    Ok(produced)
}

fn returning(
    exprs: &[BExpr],
    row: &[Value],
    cx: &Context<'_>,
    out: &mut Vec<Vec<Value>>,
) -> SqlResult<()> {
    if exprs.is_empty() {
        return Ok(());
    }
    let mut output = Vec::with_capacity(exprs.len());
    for expr in exprs {
        output.push(expr.eval(row, cx)?);
    }
    out.push(output);
    Ok(())
}

/// Runs an UPDATE or DELETE: finds the rows through the access path, then writes each one
/// through a read that is checked again at commit (so a concurrent change aborts this
/// transaction instead of being lost), re-testing the WHERE clause on the row it writes.
pub fn run_modify(txn: &mut Txn<'_>, plan: &ModifyPlan, env: &Env<'_>) -> SqlResult<Produced> {
    let subqueries = run_subqueries(txn, &plan.subqueries, env)?;
    let cx =
        Context { params: env.params, subqueries: &subqueries, now: env.now, reserve: env.reserve };
    let table = &plan.access.table;
    let mut targets: Vec<Vec<u8>> = Vec::new();
    fetch(txn, &plan.access, &[], &cx, false, &mut |key, columns| {
        if plan.filter.as_ref().map_or(Ok(true), |f| f.test(columns, &cx))? {
            targets.push(key.to_vec());
        }
        Ok(true)
    })?;
    let mut produced = Produced::default();
    let mut values = Vec::new();
    let mut bytes = Vec::new();
    for key in targets {
        let Some(current) =
            txn.get_for_update(&table.engine, &key).map_err(|e| engine_error(e, table))?
        else {
            continue;
        };
        decode_row(current, &table.types, &[], &mut values)?;
        if !plan.filter.as_ref().map_or(Ok(true), |f| f.test(&values, &cx))? {
            continue;
        }
        if plan.delete {
            txn.delete(&table.engine, &key).map_err(|e| engine_error(e, table))?;
            produced.affected += 1;
            returning(&plan.returning, &values, &cx, &mut produced.rows)?;
            continue;
        }
        let mut new_values = values.clone();
        for (column, expr) in &plan.assignments {
            new_values[*column] = expr.eval(&values, &cx)?;
        }
        conform(table, &mut new_values)?;
        encode_row(table.schema.version, &table.types, &new_values, &mut bytes);
        if plan.changes_key {
            let mut new_key = Vec::new();
            primary_key(table, &new_values, &mut new_key);
            if new_key != key {
                txn.delete(&table.engine, &key).map_err(|e| engine_error(e, table))?;
                txn.insert(&table.engine, &new_key, &bytes).map_err(|e| engine_error(e, table))?;
                produced.affected += 1;
                returning(&plan.returning, &new_values, &cx, &mut produced.rows)?;
                continue;
            }
        }
        txn.update(&table.engine, &key, &bytes).map_err(|e| engine_error(e, table))?;
        produced.affected += 1;
        returning(&plan.returning, &new_values, &cx, &mut produced.rows)?;
    }
    Ok(produced)
}
