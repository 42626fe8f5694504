//! The executor: runs plans inside an engine transaction. Queries (access paths, joins,
//! grouping) are here; INSERT, UPDATE and DELETE in `exec/dml.rs`.

use crate::ast::JoinKind;
use crate::catalog::TableInfo;
use crate::codec::{KeyFormat, Wanted, encode_key};
use crate::error::{SqlError, SqlResult};
use crate::expr::{BExpr, Context};
pub use crate::interrupt::{INTERRUPT_CHECK_ROWS, Interrupt};
use crate::plan::{Access, Derived, OuterArg, Path, QueryPlan};
use crate::types::{GroupHasher, GroupKey, Type, Value, cast};
use engram_engine::{Direction, Error, Txn};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;

mod aggregate;
mod derived;
mod dml;
use aggregate::{AggState, accumulate_row, finish, new_states};
mod foreign;
pub(crate) use foreign::check_references;
mod window;

pub use dml::{run_insert, run_modify};

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
    pub reserve: &'a dyn crate::expr::Sequences,
    /// Stop after this many output rows (a portal's row limit); 0 is no limit.
    pub max_rows: usize,
    pub interrupt: &'a Interrupt,
    /// Buffers a session lends its statements, so that each one does not allocate its own.
    pub scratch: &'a std::cell::RefCell<Scratch>,
    /// Whether an UPDATE may be applied again at commit to a row changed since
    /// (`ModifyPlan::reapplies`): not once the transaction has read rows `FOR UPDATE` or `FOR
    /// SHARE`, whose values it may have computed the update from (then a concurrent change
    /// aborts it with 40001, so that no increment made through such a read is lost).
    pub reapply: bool,
    /// How the statement locks rows.
    pub locks: Option<&'a crate::locks::Locker<'a>>,
    /// In a correlated subquery: the outer row's values it reads (`BExpr::Outer`).
    pub outer: &'a [Value],
}

/// Buffers an INSERT, UPDATE or DELETE works in, kept by the session across statements. A
/// statement takes them out for its run and puts them back when it succeeds; one that runs
/// inside another (a subquery) finds them taken and starts with empty ones.
#[derive(Debug, Default)]
pub struct Scratch {
    values: Vec<Value>,
    changes: Vec<(usize, Value)>,
    /// Where the columns of the row being updated begin (`codec::decode_row_noting`).
    starts: Vec<u32>,
    bytes: Vec<u8>,
    key: Vec<u8>,
    /// A query's joined row and its join levels' buffers (`run_query`).
    row: Vec<Value>,
    lent: Vec<Lent>,
}

impl Scratch {
    fn take(cell: &std::cell::RefCell<Scratch>) -> Scratch {
        std::mem::take(&mut *cell.borrow_mut())
    }

    /// Puts the buffers back, emptied (their memory kept).
    fn give_back(mut self, cell: &std::cell::RefCell<Scratch>) {
        self.values.clear();
        self.changes.clear();
        self.starts.clear();
        self.bytes.clear();
        self.key.clear();
        *cell.borrow_mut() = self;
    }
}

impl Env<'_> {
    /// The same environment without a row limit, for a query that feeds another (a subquery,
    /// `INSERT ... SELECT`): a portal's limit applies to the outer statement's rows only.
    fn unlimited(&self) -> Env<'_> {
        Env { max_rows: 0, ..*self }
    }
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
        if !sub.outer_args.is_empty() {
            // Correlated: run for each row (`descend`).
            results.push(Vec::new());
            continue;
        }
        // On a new stack segment if need be: subqueries nest (`depth.rs`).
        let rows = crate::depth::grow(|| run_query(txn, sub, &env.unlimited()))?.rows;
        results.push(rows.into_iter().map(|mut row| row.swap_remove(0)).collect());
    }
    Ok(results)
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

fn key_part(
    format: KeyFormat,
    ty: Type,
    value: Value,
    marker: bool,
    out: &mut Vec<u8>,
) -> Option<Option<()>> {
    if value.is_null() {
        return Some(None);
    }
    let value = cast(value, ty, false).ok()?;
    if marker {
        out.push(1);
    }
    encode_key(format, ty, &value, out);
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
    let format = schema.key_format;
    let mut prefix = Vec::with_capacity(32);
    for (expr, column) in eq.iter().zip(columns) {
        match key_part(format, types[*column], expr.eval(row, cx)?, marker, &mut prefix) {
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
            match key_part(format, ty, expr.eval(row, cx)?, marker, &mut key) {
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
            match key_part(format, ty, expr.eval(row, cx)?, marker, &mut key) {
                None => return Ok(Bounds::Full),
                Some(None) => return Ok(Bounds::Empty),
                Some(Some(())) => {}
            }
            high_key = if *inclusive { successor(key) } else { Some(key) };
        }
    }
    Ok(Bounds::Scan { low: low_key, high: high_key })
}

/// Whether a point lookup's primary key could be built.
enum PointKey {
    /// Built, in the caller's buffer.
    Key,
    /// A key value is NULL: no row can match.
    NoRow,
    /// A key value does not convert to its column's type: scan and filter instead.
    Unconvertible,
}

/// Builds in `key` the primary key of `exprs`, where `listed` (a key position and an
/// expression) replaces one of them: the key of one value of a [`Path::Points`] list.
fn key_into(
    table: &TableInfo,
    exprs: &[BExpr],
    listed: Option<(usize, &BExpr)>,
    row: &[Value],
    cx: &Context<'_>,
    key: &mut Vec<u8>,
) -> SqlResult<PointKey> {
    key.clear();
    let format = table.schema.key_format;
    for (i, (expr, column)) in exprs.iter().zip(&table.schema.primary_key).enumerate() {
        let expr = match listed {
            Some((at, listed)) if at == i => listed,
            _ => expr,
        };
        match key_part(format, table.types[*column], expr.eval(row, cx)?, false, key) {
            None => return Ok(PointKey::Unconvertible),
            Some(None) => return Ok(PointKey::NoRow),
            Some(Some(())) => {}
        }
    }
    Ok(PointKey::Key)
}

/// Keys one after another in one buffer, each a span of it: a [`Path::Points`] access's keys
/// cost two allocations, none when the buffers are lent again, instead of one per key.
#[derive(Debug, Default, Clone)]
struct KeyList {
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
}

impl KeyList {
    fn key(&self, span: (u32, u32)) -> &[u8] {
        spanned(&self.bytes, span)
    }
}

fn spanned(bytes: &[u8], (start, end): (u32, u32)) -> &[u8] {
    &bytes[start as usize..end as usize]
}

/// Builds in `keys` the keys of a [`Path::Points`] access, sorted and without repeats (`built`
/// is the buffer each is built in); false when a value does not convert to its column's type.
#[allow(clippy::too_many_arguments)]
fn listed_keys(
    table: &TableInfo,
    key: &[BExpr],
    at: usize,
    list: &[BExpr],
    row: &[Value],
    cx: &Context<'_>,
    built: &mut Vec<u8>,
    keys: &mut KeyList,
) -> SqlResult<bool> {
    keys.bytes.clear();
    keys.spans.clear();
    for listed in list {
        match key_into(table, key, Some((at, listed)), row, cx, built)? {
            PointKey::Key => {
                let start = keys.bytes.len() as u32;
                keys.bytes.extend_from_slice(built);
                keys.spans.push((start, keys.bytes.len() as u32));
            }
            // A NULL in the list (or in a fixed column) matches no row.
            PointKey::NoRow => {}
            PointKey::Unconvertible => return Ok(false),
        }
    }
    let KeyList { bytes, spans } = keys;
    spans.sort_unstable_by(|a, b| spanned(bytes, *a).cmp(spanned(bytes, *b)));
    spans.dedup_by(|a, b| spanned(bytes, *a) == spanned(bytes, *b));
    Ok(true)
}

/// Buffers one table access works in, lent by a caller that visits many times (an inner join
/// level, once per outer row): the row decoded, the point key built, and the keys of a list.
#[derive(Debug, Default, Clone)]
struct Lent {
    decoded: Vec<Value>,
    key: Vec<u8>,
    keys: KeyList,
}

/// Receives `(primary key, decoded columns)`; returns whether to go on. The columns are the
/// sink's to take (the next row is decoded afresh).
type Sink<'a> = dyn FnMut(&[u8], &mut [Value]) -> SqlResult<bool> + 'a;

/// The rows one table access visits, resolved from the current row (the key expressions of
/// an index join read earlier tables' columns).
enum Target {
    Empty,
    Key(Vec<u8>),
    /// Sorted, without repeats.
    Keys(KeyList),
    Range {
        low: Option<Vec<u8>>,
        high: Option<Vec<u8>>,
    },
    /// A key value did not convert to its column's type: scan the whole table and test the
    /// conjuncts the path would have decided, over this joined row.
    Full(Vec<Value>),
}

/// A point key is built in `lent.key` and a list's keys in `lent.keys`; they come back in
/// `Target::Key` and `Target::Keys`, and [`visit`] returns them to `lent` when done.
fn resolve(access: &Access, row: &[Value], cx: &Context<'_>, lent: &mut Lent) -> SqlResult<Target> {
    let key = &mut lent.key;
    let full = || {
        let mut joined = row.to_vec();
        joined.resize(joined.len().max(access.offset + access.table.types.len()), Value::Null);
        Target::Full(joined)
    };
    Ok(match &access.path {
        Path::Point(exprs) => match key_into(&access.table, exprs, None, row, cx, key)? {
            PointKey::Key => Target::Key(std::mem::take(key)),
            PointKey::NoRow => Target::Empty,
            PointKey::Unconvertible => full(),
        },
        Path::Points { key: exprs, at, list } => {
            if listed_keys(&access.table, exprs, *at, list, row, cx, key, &mut lent.keys)? {
                Target::Keys(std::mem::take(&mut lent.keys))
            } else {
                full()
            }
        }
        Path::Range { .. } => match bounds(access, row, cx)? {
            Bounds::Empty => Target::Empty,
            Bounds::Full => full(),
            Bounds::Scan { low, high } => Target::Range { low, high },
        },
    })
}

/// Visits the rows of one table access: `sink(key, columns)` returns whether to go on.
fn fetch(
    txn: &mut Txn<'_>,
    access: &Access,
    row: &[Value],
    cx: &Context<'_>,
    for_update: bool,
    sink: &mut Sink<'_>,
) -> SqlResult<()> {
    let mut lent = Lent::default();
    let target = resolve(access, row, cx, &mut lent)?;
    visit(txn, access, target, cx, for_update, usize::MAX, &mut lent, sink)
}

/// Rows are decoded into `lent.decoded`, and a point key resolved into `lent.key` goes back
/// there. A range scan stops after `limit` rows, which the caller passes when the sink takes
/// every row it is given (a LIMIT with nothing left to filter): the engine's scan then also
/// copies no more of the first leaf than that.
#[allow(clippy::too_many_arguments)]
fn visit(
    txn: &mut Txn<'_>,
    access: &Access,
    target: Target,
    cx: &Context<'_>,
    for_update: bool,
    limit: usize,
    lent: &mut Lent,
    sink: &mut Sink<'_>,
) -> SqlResult<()> {
    let table = &access.table;
    let types = &table.types;
    let decoded = &mut lent.decoded;
    if let Some(at) = access.derived {
        for row in &cx.derived[at] {
            cx.interrupt.tick()?;
            decoded.clone_from(row);
            if !sink(&[], decoded)? {
                break;
            }
        }
        return Ok(());
    }
    let (low, high, index, descending, wanted) = match target {
        Target::Empty => return Ok(()),
        Target::Key(key) => {
            lookup(txn, access, cx, &key, for_update, decoded, sink)?;
            lent.key = key;
            return Ok(());
        }
        Target::Keys(keys) => {
            for span in &keys.spans {
                if !lookup(txn, access, cx, keys.key(*span), for_update, decoded, sink)? {
                    break;
                }
            }
            lent.keys = keys;
            return Ok(());
        }
        Target::Full(mut joined) => {
            // Decode everything: the implied conjuncts read key columns the query may not want.
            let (offset, width) = (access.offset, types.len());
            let mut test_implied = |key: &[u8], columns: &mut [Value]| -> SqlResult<bool> {
                if let Some(implied) = &access.implied {
                    joined[offset..offset + width].clone_from_slice(columns);
                    if !implied.test(&joined, cx)? {
                        return Ok(true);
                    }
                }
                sink(key, columns)
            };
            let everything = Target::Range { low: None, high: None };
            let whole = Access {
                path: Path::Range {
                    index: None,
                    eq: Vec::new(),
                    low: None,
                    high: None,
                    descending: false,
                },
                wanted: Wanted::ALL,
                implied: None,
                ..access.clone()
            };
            // The implied test drops rows: no limit reaches the scan.
            return visit(
                txn,
                &whole,
                everything,
                cx,
                for_update,
                usize::MAX,
                lent,
                &mut test_implied,
            );
        }
        Target::Range { low, high } => {
            let Path::Range { index, descending, .. } = &access.path else {
                unreachable!("a range comes from a range path")
            };
            (low, high, *index, *descending, &access.wanted)
        }
    };
    let low = low.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let high = high.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let direction = if descending { Direction::Reverse } else { Direction::Forward };
    let mut failure = None;
    let mut keys: Vec<Vec<u8>> = Vec::new();
    // A locking scan takes each row's lock before the row counts, and cannot wait inside
    // the engine's scan (`Locker::lock_read`).
    let locker = cx.locks.filter(|_| for_update && table.system.is_none());
    let limit = if locker.is_some() { usize::MAX } else { limit };
    let mut step = |key: &[u8], bytes: &[u8]| -> bool {
        if let Err(error) = cx.interrupt.tick() {
            failure = Some(error);
            return false;
        }
        if let Some(locker) = locker {
            match locker.lock_read(None, table, key) {
                Ok(true) => {}
                Ok(false) => return true,
                Err(error) => {
                    failure = Some(error);
                    return false;
                }
            }
        }
        if let Err(error) = table.decode(bytes, wanted, decoded) {
            failure = Some(error);
            return false;
        }
        if for_update {
            keys.push(key.to_vec());
        }
        match sink(key, decoded) {
            Ok(go_on) => go_on,
            Err(error) => {
                failure = Some(error);
                false
            }
        }
    };
    if let Some(locker) = cx.locks {
        locker.scanning.set(locker.scanning.get() + 1);
    }
    let scanned = match (&table.system, index) {
        (Some(rows), _) => {
            // A system view: its rows are in memory, keyed as stored rows are.
            let range = rows.range::<[u8], _>((low, high));
            let mut visit = |(key, row): (&Vec<u8>, &Vec<u8>)| step(key, row);
            match direction {
                Direction::Forward => range.take(limit).all(&mut visit),
                Direction::Reverse => range.rev().take(limit).all(&mut visit),
            };
            Ok(())
        }
        (None, None) => txn.scan(&table.engine, low, high, direction, limit, &mut step).map(|_| ()),
        (None, Some(i)) => {
            txn.scan_index(&table.engine, i, low, high, direction, limit, &mut step).map(|_| ())
        }
    };
    if let Some(locker) = cx.locks {
        locker.scanning.set(locker.scanning.get() - 1);
    }
    scanned.map_err(|e| engine_error(e, table))?;
    if let Some(error) = failure {
        if let Some(locker) = locker
            && error.code == crate::locks::RESTART
            && locker.scanning.get() == 0
        {
            // Outside every scan now: wait for the row, then the statement runs again.
            locker.wait_deferred(txn, table)?;
        }
        return Err(error);
    }
    if table.system.is_none() {
        for key in keys {
            txn.get_for_update(&table.engine, &key).map_err(|e| engine_error(e, table))?;
        }
    }
    Ok(())
}

/// Reads the row with primary key `key`, if there is one, into the sink; returns whether to go
/// on (true when there is no row).
fn lookup(
    txn: &mut Txn<'_>,
    access: &Access,
    cx: &Context<'_>,
    key: &[u8],
    for_update: bool,
    decoded: &mut Vec<Value>,
    sink: &mut Sink<'_>,
) -> SqlResult<bool> {
    let table = &access.table;
    if for_update
        && table.system.is_none()
        && let Some(locker) = cx.locks
        && !locker.lock_read(Some(txn), table, key)?
    {
        return Ok(true);
    }
    let found = match &table.system {
        Some(rows) => rows.get(key).map(Vec::as_slice),
        None if for_update => {
            txn.get_for_update(&table.engine, key).map_err(|e| engine_error(e, table))?
        }
        None => txn.get(&table.engine, key).map_err(|e| engine_error(e, table))?,
    };
    match found {
        Some(bytes) => {
            table.decode(bytes, &access.wanted, decoded)?;
            sink(key, decoded)
        }
        None => Ok(true),
    }
}

/// What a query accumulates as rows arrive.
struct Collector<'p, 'e> {
    plan: &'p QueryPlan,
    /// The statement's environment, for the correlated subqueries run per row.
    env: &'p Env<'e>,
    /// (sort keys, output row).
    rows: Vec<(Vec<Value>, Vec<Value>)>,
    groups: HashMap<GroupKey, usize, GroupHasher>,
    group_states: Vec<(Vec<Value>, Vec<AggState>)>,
    /// Rows needed before the scan may stop (`usize::MAX`: all).
    enough: usize,
    /// Per join level: the buffers its scans work in, kept across outer rows.
    lent: Vec<Lent>,
    /// With window functions: the rows to emit once their windows are computed.
    pending: Vec<Vec<Value>>,
}

impl Collector<'_, '_> {
    /// Takes one joined row that passed the filter; returns whether to go on scanning.
    fn take(&mut self, row: &mut [Value], cx: &Context<'_>) -> SqlResult<bool> {
        let plan = self.plan;
        if let Some(grouping) = &plan.grouping {
            if grouping.keys.is_empty() {
                // One group: no key to hash.
                if self.group_states.is_empty() {
                    self.group_states.push((Vec::new(), new_states(&grouping.aggregates)));
                }
                accumulate_row(&mut self.group_states[0].1, &grouping.aggregates, row, cx)?;
                return Ok(true);
            }
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
            accumulate_row(&mut self.group_states[at].1, &grouping.aggregates, row, cx)?;
            return Ok(true);
        }
        if !plan.windows.is_empty() {
            self.pending.push(row.to_vec());
            return Ok(true);
        }
        self.emit(row, cx)?;
        Ok(self.rows.len() < self.enough)
    }

    /// Adds the output row (and its sort keys) for `row`, whose movable columns
    /// ([`QueryPlan::moves`]) it leaves `NULL`.
    fn emit(&mut self, row: &mut [Value], cx: &Context<'_>) -> SqlResult<()> {
        let plan = self.plan;
        // Sort keys first: they may read a column the output moves.
        let mut keys = Vec::with_capacity(plan.sort.len() + plan.distinct_on.len());
        for key in &plan.sort {
            keys.push(key.expr.eval(row, cx)?);
        }
        // DISTINCT ON's values follow the sort keys (the sort reads only its own).
        for expr in &plan.distinct_on {
            keys.push(expr.eval(row, cx)?);
        }
        let mut output = Vec::with_capacity(plan.output.len());
        for (index, expr) in plan.output.iter().enumerate() {
            output.push(match expr {
                BExpr::Column(at) if plan.moves.get(index) == Some(&true) => {
                    std::mem::replace(&mut row[*at], Value::Null)
                }
                _ => expr.eval(row, cx)?,
            });
        }
        if plan.sets {
            return self.spread(keys, output);
        }
        self.rows.push((keys, output));
        Ok(())
    }

    /// Spreads a row whose set-returning outputs hold their sets (as arrays) over as many
    /// rows as the longest set has values, the shorter ones padded with NULL (PostgreSQL's
    /// rule since version 10); a row whose sets are all empty gives no row. A sort key equal
    /// to a set-returning output is spread with it.
    fn spread(&mut self, keys: Vec<Value>, output: Vec<Value>) -> SqlResult<()> {
        let plan = self.plan;
        let sets: Vec<usize> =
            (0..output.len()).filter(|at| crate::expr::is_set_call(&plan.output[*at])).collect();
        let set_keys: Vec<Option<usize>> = plan
            .sort
            .iter()
            .map(|key| {
                let text = format!("{:?}", key.expr);
                sets.iter().copied().find(|at| format!("{:?}", plan.output[*at]) == text)
            })
            .collect();
        let length = |value: &Value| match value {
            Value::Array(items) => items.len(),
            _ => 0,
        };
        let count = sets.iter().map(|at| length(&output[*at])).max().unwrap_or(0);
        for i in 0..count {
            let element = |value: &Value| match value {
                Value::Array(items) => items.get(i).cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            };
            let mut row = output.clone();
            for &at in &sets {
                row[at] = element(&output[at]);
            }
            let mut row_keys = keys.clone();
            for (position, set) in set_keys.iter().enumerate() {
                if let Some(at) = set {
                    row_keys[position] = element(&output[*at]);
                }
            }
            self.rows.push((row_keys, row));
        }
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
    let mut cx = Context {
        params: env.params,
        subqueries: &subqueries,
        derived: &[],
        correlated: None,
        outer: env.outer,
        now: env.now,
        reserve: env.reserve,
        interrupt: env.interrupt,
        locks: env.locks,
    };
    // Made only for the queries that need them: a point query neither builds nor drops them.
    let correlated;
    if plan.correlated {
        correlated = std::cell::RefCell::new(Vec::new());
        cx.correlated = Some(&correlated);
    }
    let derived;
    if !plan.derived.is_empty() {
        derived = derived::materialize(txn, plan, env, &cx)?;
        cx.derived = &derived;
    }
    let limit = count_value(&plan.limit, &cx)?;
    let offset = count_value(&plan.offset, &cx)?.unwrap_or(0);
    let streaming = plan.sort.is_empty()
        && plan.grouping.is_none()
        && !plan.distinct
        && plan.distinct_on.is_empty()
        && plan.windows.is_empty();
    let mut enough = match (streaming, limit) {
        (true, Some(limit)) => offset.saturating_add(limit),
        _ => usize::MAX,
    };
    if streaming && env.max_rows > 0 {
        enough = enough.min(offset.saturating_add(env.max_rows));
    }
    // The session's buffers, when no statement around this one has them: a point query then
    // allocates nothing to decode or build keys in.
    let (mut row, mut lent) = {
        let mut scratch = env.scratch.borrow_mut();
        (std::mem::take(&mut scratch.row), std::mem::take(&mut scratch.lent))
    };
    row.clear();
    row.resize(plan.width, Value::Null);
    if lent.len() < plan.tables.len() {
        lent.resize_with(plan.tables.len(), Lent::default);
    }
    let mut collector = Collector {
        plan,
        env,
        rows: Vec::new(),
        groups: HashMap::default(),
        group_states: Vec::new(),
        enough,
        lent,
        pending: Vec::new(),
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
                        && !collector.take(&mut row, &cx)?
                    {
                        break;
                    }
                }
            }
            None => {
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
            if plan.windows.is_empty() {
                collector.emit(&mut row, &cx)?;
            } else {
                collector.pending.push(row);
            }
        }
    }
    if !plan.windows.is_empty() {
        let mut rows = std::mem::take(&mut collector.pending);
        window::compute(&plan.windows, &mut rows, &cx)?;
        for mut row in rows {
            collector.emit(&mut row, &cx)?;
        }
    }
    {
        let mut scratch = env.scratch.borrow_mut();
        row.clear();
        scratch.row = row;
        scratch.lent = std::mem::take(&mut collector.lent);
    }
    let mut rows = collector.rows;
    if plan.distinct {
        let mut seen = HashSet::<_, GroupHasher>::default();
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
    if !plan.distinct_on.is_empty() {
        let at = plan.sort.len();
        let mut seen = HashSet::<_, GroupHasher>::default();
        rows.retain(|(keys, _)| seen.insert(GroupKey(keys[at..].to_vec())));
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
    collector: &mut Collector<'_, '_>,
) -> SqlResult<bool> {
    let access = &plan.tables[level];
    let last = level + 1 == plan.tables.len();
    let width = access.table.types.len();
    let offset = access.offset;
    if let Some(at) = access.derived
        && let Derived::Lateral { source, outer } = &plan.derived[at]
    {
        return join_lateral(txn, plan, level, (source, outer), row, cx, collector);
    }
    let target = resolve(access, row, cx, &mut collector.lent[level])?;
    let mut matched_any = false;
    // Correlated subqueries run for each joined row, which the scan must not be inside of.
    if last && !plan.correlated {
        // The innermost table: filter and collect inside the scan, stopping early when enough.
        let mut go_on = true;
        // Lent back below (on an error it is only lost, not wrong).
        let mut lent = std::mem::take(&mut collector.lent[level]);
        // One table, each of its rows an output row: the scan needs no more than are wanted.
        let takes_all = plan.tables.len() == 1 && access.on.is_none() && plan.filter.is_none();
        let limit = if takes_all { collector.enough } else { usize::MAX };
        visit(txn, access, target, cx, plan.for_update, limit, &mut lent, &mut |_, columns| {
            // Only the decoded columns: nothing reads the others, which stay NULL.
            for (target, value) in access
                .wanted
                .kept(&mut row[offset..offset + width])
                .zip(access.wanted.kept(columns))
            {
                std::mem::swap(target, value);
            }
            if let Some(on) = &access.on
                && !on.test(row, cx)?
            {
                return Ok(true);
            }
            matched_any = true;
            if plan.filter.as_ref().map_or(Ok(true), |f| f.test(row, cx))? {
                go_on = collector.take(row, cx)?;
            }
            Ok(go_on)
        })?;
        collector.lent[level] = lent;
        if go_on && !matched_any && access.kind == JoinKind::Left {
            return unmatched(txn, plan, level, last, row, cx, collector);
        }
        return Ok(go_on);
    }
    // Collect this level's rows first (moved, one after another in one vector): the inner
    // levels need the transaction too.
    // Only the decoded columns are kept: nothing reads the others.
    let wanted = &access.wanted;
    let per_row = wanted.count(width);
    let (mut matches, mut count): (Vec<Value>, usize) = (Vec::new(), 0);
    let lent = &mut collector.lent[level];
    visit(txn, access, target, cx, plan.for_update, usize::MAX, lent, &mut |_, columns| {
        matches.extend(wanted.kept(columns).map(|value| std::mem::replace(value, Value::Null)));
        count += 1;
        Ok(true)
    })?;
    for at in 0..count {
        let slot = &mut matches[at * per_row..(at + 1) * per_row];
        for (target, value) in wanted.kept(&mut row[offset..offset + width]).zip(slot) {
            std::mem::swap(target, value);
        }
        match candidate(txn, plan, level, last, row, cx, collector)? {
            None => {}
            Some(false) => return Ok(false),
            Some(true) => matched_any = true,
        }
    }
    if !matched_any && access.kind == JoinKind::Left {
        return unmatched(txn, plan, level, last, row, cx, collector);
    }
    Ok(true)
}

/// A LATERAL source's level of the join: its rows computed for the row so far, then joined as
/// a derived source's are.
#[cold]
fn join_lateral(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    level: usize,
    (source, outer): (&Derived, &[OuterArg]),
    row: &mut Vec<Value>,
    cx: &Context<'_>,
    collector: &mut Collector<'_, '_>,
) -> SqlResult<bool> {
    let access = &plan.tables[level];
    let last = level + 1 == plan.tables.len();
    let (offset, width) = (access.offset, access.table.types.len());
    let rows = derived::lateral(txn, source, outer, collector.env, cx, row)?;
    let mut matched_any = false;
    for values in rows {
        cx.interrupt.tick()?;
        for (target, value) in row[offset..offset + width].iter_mut().zip(values) {
            *target = value;
        }
        match candidate(txn, plan, level, last, row, cx, collector)? {
            None => {}
            Some(false) => return Ok(false),
            Some(true) => matched_any = true,
        }
    }
    if !matched_any && access.kind == JoinKind::Left {
        return unmatched(txn, plan, level, last, row, cx, collector);
    }
    Ok(true)
}

/// A row of `level`'s table placed in `row`: `None` when the level's ON rejects it, else
/// whether to go on after the levels after it took it.
fn candidate(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    level: usize,
    last: bool,
    row: &mut Vec<Value>,
    cx: &Context<'_>,
    collector: &mut Collector<'_, '_>,
) -> SqlResult<Option<bool>> {
    if let Some(on) = &plan.tables[level].on
        && !on.test(row, cx)?
    {
        return Ok(None);
    }
    descend(txn, plan, level, last, row, cx, collector).map(Some)
}

/// A left join's level with no row meeting its ON: the row NULL-extended, then the levels
/// after it.
fn unmatched(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    level: usize,
    last: bool,
    row: &mut Vec<Value>,
    cx: &Context<'_>,
    collector: &mut Collector<'_, '_>,
) -> SqlResult<bool> {
    let access = &plan.tables[level];
    row[access.offset..access.offset + access.table.types.len()].fill(Value::Null);
    descend(txn, plan, level, last, row, cx, collector)
}

fn descend(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    level: usize,
    last: bool,
    row: &mut Vec<Value>,
    cx: &Context<'_>,
    collector: &mut Collector<'_, '_>,
) -> SqlResult<bool> {
    if last {
        if plan.correlated {
            run_correlated(txn, plan, row, cx, collector.env)?;
        }
        if plan.filter.as_ref().map_or(Ok(true), |f| f.test(row, cx))? {
            return collector.take(row, cx);
        }
        Ok(true)
    } else {
        join(txn, plan, level + 1, row, cx, collector)
    }
}

/// Runs each correlated subquery of `plan` for the joined row `row`, its results replacing the
/// previous row's (`Context::correlated`).
#[cold]
fn run_correlated(
    txn: &mut Txn<'_>,
    plan: &QueryPlan,
    row: &[Value],
    cx: &Context<'_>,
    env: &Env<'_>,
) -> SqlResult<()> {
    let Some(correlated) = cx.correlated else { return Ok(()) };
    let mut results = std::mem::take(&mut *correlated.borrow_mut());
    results.resize(plan.subqueries.len(), None);
    for (at, sub) in plan.subqueries.iter().enumerate() {
        if sub.outer_args.is_empty() {
            continue;
        }
        let outer: Vec<Value> = sub
            .outer_args
            .iter()
            .map(|arg| match *arg {
                OuterArg::Column(column) => row[column].clone(),
                OuterArg::Outer(at) => cx.outer[at].clone(),
            })
            .collect();
        let inner = Env { max_rows: 0, outer: &outer, ..*env };
        let rows = crate::depth::grow(|| run_query(txn, sub, &inner))?.rows;
        results[at] = Some(rows.into_iter().map(|mut row| row.swap_remove(0)).collect());
    }
    *correlated.borrow_mut() = results;
    Ok(())
}
