//! The row codec and the memcomparable key encoding (byte tables in docs/format.md).
//!
//! A row: `schema version: u16 LE | column count: u16 LE | null bitmap (1 bit per column,
//! LSB first) | each non-null value in column order`. Fixed-width values are little-endian;
//! text and bytea are a varint length then the bytes; NUMERIC is `rust_decimal`'s 16-byte
//! form. A row with fewer columns than its table (written before a column was added) reads
//! the missing ones as NULL.
//!
//! A key: each column's encoding, concatenated, such that byte order is value order.

use crate::error::{SqlError, SqlResult};
use crate::types::{Elem, Interval, Text, Type, Value, array};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Encodes a row of `values` (already cast to `types`).
pub fn encode_row(version: u16, types: &[Type], values: &[Value], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(types.len() as u16).to_le_bytes());
    let bitmap_at = out.len();
    out.resize(bitmap_at + types.len().div_ceil(8), 0);
    for (column, (ty, value)) in types.iter().zip(values).enumerate() {
        if value.is_null() {
            out[bitmap_at + column / 8] |= 1 << (column % 8);
            continue;
        }
        encode_value(*ty, value, out);
    }
}

/// Re-encodes `row` with `changes` (column, value already cast to its type) applied, copying
/// the bytes of every other column as they are, so an UPDATE of a few columns of a wide row
/// neither decodes nor re-encodes the rest: the null bitmap is copied whole, columns are walked
/// only up to the last changed one, and everything after it is copied in one piece. `changes`
/// are in ascending column order, each column once (an internal error otherwise). Returns
/// `false`, writing nothing, when the row was written with another column count (the caller
/// then decodes and encodes it whole).
///
/// `starts` is what [`decode_row_noting`] noted while it decoded this same `row` (or empty):
/// where each column it stepped over begins, so that the patch jumps to a changed column and
/// past it instead of stepping over every column before.
pub fn patch_row(
    row: &[u8],
    version: u16,
    types: &[Type],
    changes: &[(usize, Value)],
    starts: &[u32],
    out: &mut Vec<u8>,
) -> SqlResult<bool> {
    if row.len() < 4 {
        return Err(corrupt());
    }
    if usize::from(u16::from_le_bytes([row[2], row[3]])) != types.len() {
        return Ok(false);
    }
    let bitmap_at = 4;
    let data_at = bitmap_at + types.len().div_ceil(8);
    if data_at > row.len() {
        return Err(corrupt());
    }
    out.clear();
    out.reserve(row.len() + 64);
    out.extend_from_slice(&version.to_le_bytes());
    // The column count and the null bitmap, whose changed bits are set below.
    out.extend_from_slice(&row[2..data_at]);
    let null = |column: usize| row[bitmap_at + column / 8] & (1 << (column % 8)) != 0;
    // Past column `column`, which starts at `at`.
    let skip = |column: usize, at: usize| -> SqlResult<usize> {
        if null(column) {
            Ok(at)
        } else {
            Ok(column_bytes(row, types[column], at).ok_or_else(corrupt)?.1)
        }
    };
    // Noted starts are of this row (checked whole in debug builds); a row whose data begins
    // elsewhere was not the one decoded, and the patch walks.
    let known = if starts.first() == Some(&(data_at as u32)) { starts } else { &[] };
    debug_assert!(known.is_empty() || known == noted_starts(row, types, known.len() - 1));
    // Unchanged columns are copied in runs: `copy_from` is where the current run starts.
    let (mut column, mut at, mut copy_from) = (0, data_at, data_at);
    for (changed, value) in changes {
        if *changed < column || *changed >= types.len() {
            return Err(SqlError::new("XX000", "an UPDATE's changes are not in column order"));
        }
        if let Some(&start) = known.get(*changed) {
            (column, at) = (*changed, start as usize);
        }
        while column < *changed {
            at = skip(column, at)?;
            column += 1;
        }
        let start = at;
        at = match known.get(column + 1) {
            Some(&end) => end as usize,
            None => skip(column, at)?,
        };
        column += 1;
        out.extend_from_slice(&row[copy_from..start]);
        copy_from = at;
        let (byte, bit) = (bitmap_at + changed / 8, 1u8 << (changed % 8));
        match value {
            Value::Null => out[byte] |= bit,
            value => {
                out[byte] &= !bit;
                encode_value(types[*changed], value, out);
            }
        }
    }
    out.extend_from_slice(&row[copy_from..]);
    Ok(true)
}

/// `row`, written with fewer columns than `types` (before columns were added), widened to all
/// of them under `version`: its bytes as they are, then each added column's `missing` value
/// (NULL when it has none). Every column before the row's end keeps its type.
pub fn widen_row(
    row: &[u8],
    version: u16,
    types: &[Type],
    missing: &[Value],
    out: &mut Vec<u8>,
) -> SqlResult<()> {
    let stored = row_width(row);
    let old_data = 4 + stored.div_ceil(8);
    if row.len() < old_data || stored > types.len() {
        return Err(corrupt());
    }
    out.clear();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(types.len() as u16).to_le_bytes());
    let bitmap_at = out.len();
    out.resize(bitmap_at + types.len().div_ceil(8), 0);
    out[bitmap_at..bitmap_at + stored.div_ceil(8)].copy_from_slice(&row[4..old_data]);
    out.extend_from_slice(&row[old_data..]);
    for column in stored..types.len() {
        match missing.get(column) {
            Some(value) if !value.is_null() => encode_value(types[column], value, out),
            _ => out[bitmap_at + column / 8] |= 1 << (column % 8),
        }
    }
    Ok(())
}

fn encode_value(ty: Type, value: &Value, out: &mut Vec<u8>) {
    match (ty, value) {
        (Type::Bool, Value::Bool(b)) => out.push(u8::from(*b)),
        (Type::Int2, Value::Int(v)) => out.extend_from_slice(&(*v as i16).to_le_bytes()),
        (Type::Int4, Value::Int(v)) => out.extend_from_slice(&(*v as i32).to_le_bytes()),
        (Type::Int8 | Type::Regclass, Value::Int(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (Type::Float4, Value::Float(v)) => out.extend_from_slice(&(*v as f32).to_le_bytes()),
        (Type::Float8, Value::Float(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (Type::Numeric { .. }, Value::Numeric(d)) => out.extend_from_slice(&d.serialize()),
        (Type::Date, Value::Date(d)) => out.extend_from_slice(&d.to_le_bytes()),
        (Type::Timestamp, Value::Timestamp(t))
        | (Type::Timestamptz, Value::Timestamptz(t))
        | (Type::Time, Value::Time(t)) => out.extend_from_slice(&t.to_le_bytes()),
        (Type::Interval, Value::Interval(i)) => {
            out.extend_from_slice(&i.months.to_le_bytes());
            out.extend_from_slice(&i.days.to_le_bytes());
            out.extend_from_slice(&i.micros.to_le_bytes());
        }
        (Type::Uuid, Value::Uuid(bytes)) => out.extend_from_slice(bytes),
        (_, Value::Text(text)) => {
            write_varint(text.len() as u64, out);
            out.extend_from_slice(text.as_bytes());
        }
        (_, Value::Bytes(bytes)) => {
            write_varint(bytes.len() as u64, out);
            out.extend_from_slice(bytes);
        }
        (Type::Array(elem), Value::Array(items)) => {
            let mut payload = Vec::new();
            encode_array(elem, items, &mut payload);
            write_varint(payload.len() as u64, out);
            out.extend_from_slice(&payload);
        }
        // jsonb as its printed text, read back by the parser (docs/format.md).
        (_, Value::Json(json)) => {
            let text = json.to_text();
            write_varint(text.len() as u64, out);
            out.extend_from_slice(text.as_bytes());
        }
        (ty, value) => unreachable!("value {value:?} was not cast to column type {ty:?}"),
    }
}

/// An array's bytes in a row (after the column's length): the element count, then per
/// element 0 for NULL or 1 and the element as a column of its type is written.
fn encode_array(elem: Elem, items: &[Value], out: &mut Vec<u8>) {
    write_varint(items.len() as u64, out);
    for item in items {
        match item {
            Value::Null => out.push(0),
            item => {
                out.push(1);
                encode_value(elem.ty(), item, out);
            }
        }
    }
}

/// Reads back [`encode_array`]'s bytes.
fn decode_array(elem: Elem, bytes: &[u8]) -> SqlResult<Value> {
    let mut at = 0;
    let count = read_varint(bytes, &mut at).ok_or_else(corrupt)? as usize;
    let ty = elem.ty();
    let mut items = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let marker = *bytes.get(at).ok_or_else(corrupt)?;
        at += 1;
        if marker == 0 {
            items.push(Value::Null);
            continue;
        }
        let (item, end) = column_bytes(bytes, ty, at).ok_or_else(corrupt)?;
        items.push(match ty.fixed_width() {
            Some(_) => decode_fixed(ty, item),
            None if ty == Type::Bytea => Value::Bytes(item.to_vec()),
            None if ty == Type::Jsonb => decode_jsonb(item)?,
            None => Value::Text(stored_text(item)?),
        });
        at = end;
    }
    Ok(array(items))
}

fn write_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// The value bytes of a non-NULL column of type `ty` stored at `at` (after the length of a
/// variable-width one), and where the next column starts. `None` when the row is too short.
#[inline(always)]
fn column_bytes(row: &[u8], ty: Type, at: usize) -> Option<(&[u8], usize)> {
    let (start, len) = match ty.fixed_width() {
        Some(width) => (at, width),
        None => {
            let mut start = at;
            let len = read_varint(row, &mut start)? as usize;
            (start, len)
        }
    };
    let end = start.checked_add(len)?;
    Some((row.get(start..end)?, end))
}

fn corrupt() -> SqlError {
    SqlError::new("XX001", "a stored row does not decode: the row codec found damaged bytes")
}

/// The schema version a row was written with.
pub fn row_version(row: &[u8]) -> u16 {
    row.get(..2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

/// How many columns a row holds (those its schema version had).
pub fn row_width(row: &[u8]) -> usize {
    row.get(2..4).map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])))
}

/// The columns of a table that a decode reads: every one, or those marked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// A mark per column up to the last one wanted (no trailing `false`); empty with `all`.
    marks: Vec<bool>,
    /// How many are marked.
    count: usize,
    all: bool,
    /// When every column up to the last marked one has a fixed width, each marked column's
    /// place in a row with no NULL among those columns: they are read there, with no walk.
    direct: Option<Direct>,
    /// Per column up to the last marked one, what a walk does there: its width when fixed
    /// (0 when variable), with [`STEP_WANTED`] set when marked. One byte a column, so that
    /// stepping over a column reads neither its type nor its bytes.
    steps: Vec<u8>,
}

/// A [`Wanted::steps`] entry's mark.
const STEP_WANTED: u8 = 0x80;

/// Marked columns at fixed places: (column, offset after the null bitmap, type), and the
/// bytes up to the end of the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Direct {
    columns: Box<[(usize, usize, Type)]>,
    end: usize,
}

impl Wanted {
    /// Every column.
    pub const ALL: Wanted =
        Wanted { marks: Vec::new(), count: 0, all: true, direct: None, steps: Vec::new() };

    /// The columns whose mark is true, of a table whose columns have `types`.
    pub fn marked(mut marks: Vec<bool>, types: &[Type]) -> Wanted {
        let last = marks.iter().rposition(|m| *m).map_or(0, |at| at + 1);
        marks.truncate(last);
        let count = marks.iter().filter(|m| **m).count();
        // Where the next column starts, while every column so far has a fixed width.
        let (mut columns, mut end) = (Vec::new(), Some(0));
        for (column, &mark) in marks.iter().enumerate() {
            let (Some(at), Some(width)) = (end, types.get(column).and_then(|ty| ty.fixed_width()))
            else {
                end = None;
                break;
            };
            if mark {
                columns.push((column, at, types[column]));
            }
            end = Some(at + width);
        }
        let direct = end.map(|end| Direct { columns: columns.into(), end });
        let steps = marks.iter().zip(types).map(|(&mark, ty)| step_of(*ty, mark)).collect();
        Wanted { marks, count, all: false, direct, steps }
    }

    /// Whether column `column` is read.
    pub fn wants(&self, column: usize) -> bool {
        self.all || self.marks.get(column).copied().unwrap_or(false)
    }

    /// How many columns of a row of `width` are read.
    pub fn count(&self, width: usize) -> usize {
        if self.all { width } else { self.count }
    }

    /// The read values of `row` (a table's columns), in column order.
    pub fn kept<'v>(&'v self, row: &'v mut [Value]) -> impl Iterator<Item = &'v mut Value> {
        let limit = if self.all { row.len() } else { self.marks.len().min(row.len()) };
        row[..limit]
            .iter_mut()
            .enumerate()
            .filter(move |(column, _)| self.all || self.marks[*column])
            .map(|(_, value)| value)
    }
}

/// Decodes the `wanted` columns of `row` into `out` (one value per column of `types`; the
/// others are left NULL). `out` is usually the caller's buffer from the previous row, reset in
/// place; columns after the last wanted one are neither read nor stepped over.
pub fn decode_row(
    row: &[u8],
    types: &[Type],
    wanted: &Wanted,
    out: &mut Vec<Value>,
) -> SqlResult<()> {
    decode_walk(row, types, wanted, out, None)
}

/// [`decode_row`], noting in `starts` where each column it steps over begins, and last where
/// the next one would (empty when it read the columns in place): [`patch_row`] of the same row
/// then skips to the columns it changes.
pub fn decode_row_noting(
    row: &[u8],
    types: &[Type],
    wanted: &Wanted,
    out: &mut Vec<Value>,
    starts: &mut Vec<u32>,
) -> SqlResult<()> {
    starts.clear();
    decode_walk(row, types, wanted, out, Some(starts))
}

#[inline(always)]
fn decode_walk(
    row: &[u8],
    types: &[Type],
    wanted: &Wanted,
    out: &mut Vec<Value>,
    starts: Option<&mut Vec<u32>>,
) -> SqlResult<()> {
    if out.len() == types.len() {
        for value in out.iter_mut().filter(|value| !value.is_null()) {
            *value = Value::Null;
        }
    } else {
        out.clear();
        out.resize_with(types.len(), || Value::Null);
    }
    if row.len() < 4 {
        return Err(corrupt());
    }
    let last = if wanted.all { types.len() } else { wanted.marks.len() };
    let stored = usize::from(u16::from_le_bytes([row[2], row[3]]));
    let count = stored.min(types.len()).min(last);
    let bitmap_at = 4;
    let at = bitmap_at + stored.div_ceil(8);
    if at > row.len() {
        return Err(corrupt());
    }
    if let Some(direct) = &wanted.direct
        && count == last
        && no_nulls(&row[bitmap_at..at], last)
    {
        let fixed = row.get(at..at + direct.end).ok_or_else(corrupt)?;
        for &(column, offset, ty) in direct.columns.iter() {
            out[column] = decode_fixed(ty, &fixed[offset..]);
        }
        return Ok(());
    }
    if wanted.all {
        let step = |column: usize| step_of(types[column], true);
        decode_steps(row, types, count, step, at, out, starts)
    } else {
        let steps = &wanted.steps;
        decode_steps(row, types, count, |column: usize| steps[column], at, out, starts)
    }
}

/// A [`Wanted::steps`] entry: the width of a column of type `ty` when fixed (0 when not),
/// and the mark.
fn step_of(ty: Type, wanted: bool) -> u8 {
    let width = ty.fixed_width().unwrap_or(0) as u8;
    if wanted { width | STEP_WANTED } else { width }
}

/// The walk of [`decode_walk`] over the first `count` columns, led by each one's step: a
/// column not read is stepped over by its width, or by the length in front of it; only read
/// columns are sliced (and checked against the row's end), the others once at the end.
#[inline(always)]
fn decode_steps(
    row: &[u8],
    types: &[Type],
    count: usize,
    step: impl Fn(usize) -> u8,
    mut at: usize,
    out: &mut [Value],
    mut starts: Option<&mut Vec<u32>>,
) -> SqlResult<()> {
    const BITMAP_AT: usize = 4;
    for column in 0..count {
        let step = step(column);
        if let Some(starts) = starts.as_deref_mut() {
            starts.push(at as u32);
        }
        if row[BITMAP_AT + column / 8] & (1 << (column % 8)) != 0 {
            continue;
        }
        let width = usize::from(step & !STEP_WANTED);
        let start = if width != 0 {
            at
        } else {
            let mut start = at;
            let len = match row.get(at) {
                Some(&len) if len < 0x80 => {
                    start += 1;
                    usize::from(len)
                }
                _ => read_varint(row, &mut start).ok_or_else(corrupt)? as usize,
            };
            at = start.checked_add(len).ok_or_else(corrupt)?;
            start
        };
        if width != 0 {
            // Saturating: a damaged length before may have taken `at` anywhere.
            at = at.saturating_add(width);
        }
        if step & STEP_WANTED == 0 {
            continue;
        }
        let bytes = row.get(start..at).ok_or_else(corrupt)?;
        let ty = types[column];
        out[column] = match width {
            0 => match ty {
                Type::Bytea => Value::Bytes(bytes.to_vec()),
                Type::Array(elem) => decode_array(elem, bytes)?,
                Type::Jsonb => decode_jsonb(bytes)?,
                _ => Value::Text(stored_text(bytes)?),
            },
            _ => decode_fixed(ty, bytes),
        };
    }
    if at > row.len() {
        return Err(corrupt());
    }
    if let Some(starts) = starts {
        starts.push(at as u32);
    }
    Ok(())
}

/// A stored jsonb value (its printed text).
fn decode_jsonb(bytes: &[u8]) -> SqlResult<Value> {
    let text = stored_text(bytes)?;
    Ok(crate::types::json::jsonb(crate::types::json::parse_jsonb(&text).map_err(|_| corrupt())?))
}

/// A stored text column's value. ASCII (every string TPC-C and sysbench store) is checked a
/// word at a time and taken as it is, which costs a fraction of the general UTF-8 check on
/// short strings; other text goes through that check.
#[inline]
fn stored_text(bytes: &[u8]) -> SqlResult<Text> {
    if bytes.is_ascii() {
        // SAFETY: every ASCII byte sequence is valid UTF-8.
        return Ok(Text::from(unsafe { std::str::from_utf8_unchecked(bytes) }));
    }
    std::str::from_utf8(bytes).map(Text::from).map_err(|_| corrupt())
}

/// Where the first `columns` columns of `row` begin, and the next after them: what a decode
/// notes, found by walking (debug builds check noted starts with it).
fn noted_starts(row: &[u8], types: &[Type], columns: usize) -> Vec<u32> {
    let stored = usize::from(u16::from_le_bytes([row[2], row[3]]));
    let mut at = 4 + stored.div_ceil(8);
    let mut starts = Vec::with_capacity(columns + 1);
    for (column, ty) in types.iter().enumerate().take(columns) {
        starts.push(at as u32);
        if row[4 + column / 8] & (1 << (column % 8)) == 0 {
            at = column_bytes(row, *ty, at).map_or(row.len(), |(_, end)| end);
        }
    }
    starts.push(at as u32);
    starts
}

/// Whether none of the first `columns` columns is NULL (`bitmap` covers them).
fn no_nulls(bitmap: &[u8], columns: usize) -> bool {
    let (whole, rest) = (columns / 8, columns % 8);
    bitmap[..whole].iter().all(|byte| *byte == 0)
        && (rest == 0 || bitmap[whole] & ((1u8 << rest) - 1) == 0)
}

/// The first `N` bytes (the caller checked the width).
fn le<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut array = [0u8; N];
    array.copy_from_slice(&bytes[..N]);
    array
}

fn decode_fixed(ty: Type, bytes: &[u8]) -> Value {
    match ty {
        Type::Bool => Value::Bool(bytes[0] != 0),
        Type::Int2 => Value::Int(i64::from(i16::from_le_bytes(le(bytes)))),
        Type::Int4 => Value::Int(i64::from(i32::from_le_bytes(le(bytes)))),
        Type::Int8 | Type::Regclass => Value::Int(i64::from_le_bytes(le(bytes))),
        Type::Float4 => Value::Float(f64::from(f32::from_le_bytes(le(bytes)))),
        Type::Float8 => Value::Float(f64::from_le_bytes(le(bytes))),
        Type::Numeric { .. } => Value::Numeric(Decimal::deserialize(le(bytes))),
        Type::Date => Value::Date(i32::from_le_bytes(le(bytes))),
        Type::Timestamp => Value::Timestamp(i64::from_le_bytes(le(bytes))),
        Type::Timestamptz => Value::Timestamptz(i64::from_le_bytes(le(bytes))),
        Type::Time => Value::Time(i64::from_le_bytes(le(bytes))),
        Type::Interval => Value::Interval(Interval::new(
            i32::from_le_bytes(le(bytes)),
            i32::from_le_bytes(le(&bytes[4..])),
            i64::from_le_bytes(le(&bytes[8..])),
        )),
        Type::Uuid => Value::Uuid(le(bytes)),
        _ => Value::Null,
    }
}

/// How a table's keys encode integers (docs/format.md, "SQL keys"). Recorded in the table's
/// schema and in its index definitions, so that a table keeps the encoding its keys were
/// written with; catalogs written before the field existed read as [`KeyFormat::Fixed`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyFormat {
    /// SMALLINT, INTEGER and BIGINT at their width (2, 4, 8 bytes), big-endian with the sign
    /// bit flipped: the encoding of every table created before format 2.
    #[default]
    Fixed,
    /// Every integer in 1 to 9 bytes by its magnitude ([`encode_compact_int`]): TPC-C's
    /// composite keys of small numbers fit the index's 8-byte fast path (ORDER-LINE's four
    /// INTEGER columns take 6 bytes instead of 16). The encoding of every new table.
    Compact,
}

/// Smallest value [`encode_compact_int`] writes in its header byte alone.
const COMPACT_SMALL_MIN: i64 = 0;
/// Largest value [`encode_compact_int`] writes in its header byte alone.
const COMPACT_SMALL_MAX: i64 = 239;
/// Header of the small values: `COMPACT_SMALL_BASE + value`.
const COMPACT_SMALL_BASE: u8 = 8;
/// Header of a positive value of `n` (1 to 8) bytes: `COMPACT_POSITIVE_BASE + n`.
const COMPACT_POSITIVE_BASE: u8 = 0xF7;
const _: () = assert!(COMPACT_SMALL_BASE as i64 + COMPACT_SMALL_MAX - COMPACT_SMALL_MIN < 0xF8);
const _: () = assert!(COMPACT_POSITIVE_BASE as usize + 8 == 0xFF);

/// Appends the order-preserving, prefix-free encoding of `value` in 1 to 9 bytes. A header
/// byte tells the class and the length: 0..=7 a negative value of 8 - header bytes (the
/// two's-complement tail, big-endian), 8..=247 the values 0 to 239 themselves, 248..=255 a
/// positive value of header - 247 big-endian bytes. Within a class, shorter means nearer to
/// zero, so byte order is value order; the header fixes the length, so a key that goes on
/// with another column never compares by that column's bytes too early.
#[inline]
pub fn encode_compact_int(value: i64, out: &mut Vec<u8>) {
    if (COMPACT_SMALL_MIN..=COMPACT_SMALL_MAX).contains(&value) {
        out.push(COMPACT_SMALL_BASE + value as u8);
    } else if value > 0 {
        let bytes = 8 - value.leading_zeros() as usize / 8;
        out.push(COMPACT_POSITIVE_BASE + bytes as u8);
        out.extend_from_slice(&value.to_be_bytes()[8 - bytes..]);
    } else {
        // The bytes after the leading 0xFF ones; at least one, so -1 is [7, 0xFF].
        let bytes = (8 - (!value).leading_zeros() as usize / 8).max(1);
        out.push(8 - bytes as u8);
        out.extend_from_slice(&value.to_be_bytes()[8 - bytes..]);
    }
}

/// Reads a value [`encode_compact_int`] wrote at the start of `bytes`: the value and the
/// bytes it took, or `None` when they are cut short.
pub fn decode_compact_int(bytes: &[u8]) -> Option<(i64, usize)> {
    let header = *bytes.first()?;
    let (length, negative) = match header {
        0..COMPACT_SMALL_BASE => (usize::from(COMPACT_SMALL_BASE - header), true),
        0xF8.. => (usize::from(header - COMPACT_POSITIVE_BASE), false),
        _ => return Some((i64::from(header - COMPACT_SMALL_BASE), 1)),
    };
    let tail = bytes.get(1..=length)?;
    let mut word = if negative { [0xFF; 8] } else { [0; 8] };
    word[8 - length..].copy_from_slice(tail);
    Some((i64::from_be_bytes(word), 1 + length))
}

/// Appends the memcomparable encoding of a non-null `value` of type `ty`, integers as `format`
/// says.
pub fn encode_key(format: KeyFormat, ty: Type, value: &Value, out: &mut Vec<u8>) {
    match (ty, value) {
        (_, Value::Bool(b)) => out.push(u8::from(*b)),
        (_, Value::Int(v)) if format == KeyFormat::Compact => encode_compact_int(*v, out),
        (Type::Int2, Value::Int(v)) => {
            out.extend_from_slice(&((*v as i16 as u16) ^ 0x8000).to_be_bytes())
        }
        (Type::Int4, Value::Int(v)) => {
            out.extend_from_slice(&((*v as i32 as u32) ^ 0x8000_0000).to_be_bytes())
        }
        (_, Value::Int(v)) => out.extend_from_slice(&((*v as u64) ^ (1 << 63)).to_be_bytes()),
        (_, Value::Float(v)) => {
            // -0.0 and 0.0 are equal; NaN orders above everything.
            let v = if *v == 0.0 { 0.0 } else { *v };
            let bits = v.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        (_, Value::Numeric(d)) => encode_decimal(*d, out),
        (_, Value::Text(text)) => encode_escaped(text.as_bytes(), out),
        (_, Value::Bytes(bytes)) => encode_escaped(bytes, out),
        (_, Value::Date(d)) => out.extend_from_slice(&((*d as u32) ^ 0x8000_0000).to_be_bytes()),
        (_, Value::Timestamp(t) | Value::Timestamptz(t) | Value::Time(t)) => {
            out.extend_from_slice(&((*t as u64) ^ (1 << 63)).to_be_bytes())
        }
        // Intervals equal in length ('1 mon' and '30 days') are one key, as they are equal.
        (_, Value::Interval(i)) => {
            out.extend_from_slice(&((i.span() as u128) ^ (1 << 127)).to_be_bytes())
        }
        (_, Value::Uuid(bytes)) => out.extend_from_slice(bytes),
        // An array's row bytes, escaped (as `encode_index_key` takes them from a row): equal
        // arrays are equal keys; no order is promised (arrays are never range-probed).
        (ty, Value::Array(items)) => {
            let elem = match ty {
                Type::Array(elem) => elem,
                _ => Elem::Text,
            };
            let mut payload = Vec::new();
            encode_array(elem, items, &mut payload);
            encode_escaped(&payload, out);
        }
        // jsonb is never a key column (`ddl.rs`); a value is keyed by its row bytes.
        (_, Value::Json(json)) => encode_escaped(json.to_text().as_bytes(), out),
        (_, Value::Null) => unreachable!("keys never hold NULL"),
    }
}

/// Index columns [`encode_index_key`] finds in one walk of the row; an index with more is
/// keyed through [`decode_row`].
pub const INDEX_KEY_COLUMNS_MAX: usize = 8;

/// Appends the secondary-index key of `row` (as [`encode_row`] wrote it) over `columns`: per
/// column a marker (1 a value, 2 NULL, so NULLs sort last) and the value's key encoding, taken
/// straight from the row's bytes: nothing is decoded into values and nothing allocated (a
/// key is built for every version of every row an UPDATE or DELETE changes in an indexed
/// table). A column the row was written without is NULL. Returns `Ok(Some(false))`, with
/// `out` partly written, when a column is NULL and `skip_null` (a unique index leaves such
/// rows out), and `Ok(None)` when there are more than [`INDEX_KEY_COLUMNS_MAX`] columns.
pub fn encode_index_key(
    format: KeyFormat,
    row: &[u8],
    types: &[Type],
    columns: &[usize],
    skip_null: bool,
    out: &mut Vec<u8>,
) -> SqlResult<Option<bool>> {
    if columns.len() > INDEX_KEY_COLUMNS_MAX {
        return Ok(None);
    }
    if row.len() < 4 {
        return Err(corrupt());
    }
    let stored = usize::from(u16::from_le_bytes([row[2], row[3]]));
    let bitmap_at = 4;
    let mut at = bitmap_at + stored.div_ceil(8);
    if at > row.len() {
        return Err(corrupt());
    }
    // Per index column, its bytes in the row; `None` for NULL.
    let mut found: [Option<&[u8]>; INDEX_KEY_COLUMNS_MAX] = [None; INDEX_KEY_COLUMNS_MAX];
    let last = columns.iter().map(|c| c + 1).max().unwrap_or(0).min(stored).min(types.len());
    for (column, ty) in types.iter().enumerate().take(last) {
        if row[bitmap_at + column / 8] & (1 << (column % 8)) != 0 {
            continue;
        }
        let (bytes, end) = column_bytes(row, *ty, at).ok_or_else(corrupt)?;
        at = end;
        for (position, _) in columns.iter().enumerate().filter(|(_, c)| **c == column) {
            found[position] = Some(bytes);
        }
    }
    for (position, &column) in columns.iter().enumerate() {
        let Some(bytes) = found[position] else {
            if skip_null {
                return Ok(Some(false));
            }
            out.push(2);
            continue;
        };
        out.push(1);
        let ty = types[column];
        match ty.fixed_width() {
            Some(_) => encode_key(format, ty, &decode_fixed(ty, bytes), out),
            None => encode_escaped(bytes, out),
        }
    }
    Ok(Some(true))
}

/// Bytes with every 0x00 written as 0x00 0xFF, ended by 0x00 0x01: a prefix of another value
/// sorts first, and the next column cannot be confused with the bytes.
fn encode_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Sign class (1 negative, 2 zero, 3 positive), then for non-zero values the decimal exponent
/// (a big-endian u16 offset by 0x8000) and the significant digits as bytes 1..=10 ended by 0;
/// for negative values everything after the class byte is inverted.
fn encode_decimal(value: Decimal, out: &mut Vec<u8>) {
    if value.is_zero() {
        out.push(2);
        return;
    }
    let negative = value.is_sign_negative();
    let normalized = value.abs().normalize();
    let mantissa = normalized.mantissa().unsigned_abs();
    let digits = mantissa.to_string();
    let exponent = digits.len() as i32 - normalized.scale() as i32;
    let digits = digits.trim_end_matches('0');
    out.push(if negative { 1 } else { 3 });
    let start = out.len();
    out.extend_from_slice(&((exponent + 0x8000) as u16).to_be_bytes());
    out.extend(digits.bytes().map(|b| b - b'0' + 1));
    out.push(0);
    if negative {
        for byte in &mut out[start..] {
            *byte = !*byte;
        }
    }
}

/// Reads back a key [`encode_key`] wrote for a value of each of `types` in turn (a primary
/// key): the values, or `None` when the bytes are not such a key. Used to name keys in
/// diagnostics, never on a data path.
pub fn decode_key(format: KeyFormat, types: &[Type], bytes: &[u8]) -> Option<Vec<Value>> {
    let mut at = 0;
    let mut values = Vec::with_capacity(types.len());
    for &ty in types {
        let rest = bytes.get(at..)?;
        let (value, used) = decode_key_value(format, ty, rest)?;
        values.push(value);
        at += used;
    }
    (at == bytes.len()).then_some(values)
}

fn decode_key_value(format: KeyFormat, ty: Type, bytes: &[u8]) -> Option<(Value, usize)> {
    let fixed = |n: usize| bytes.get(..n);
    Some(match ty {
        Type::Bool => (Value::Bool(*bytes.first()? != 0), 1),
        Type::Int2 | Type::Int4 | Type::Int8 if format == KeyFormat::Compact => {
            let (value, used) = decode_compact_int(bytes)?;
            (Value::Int(value), used)
        }
        Type::Int2 => {
            (Value::Int(i64::from((u16::from_be_bytes(le(fixed(2)?)) ^ 0x8000) as i16)), 2)
        }
        Type::Int4 => {
            let raw = u32::from_be_bytes(le(fixed(4)?)) ^ 0x8000_0000;
            (Value::Int(i64::from(raw as i32)), 4)
        }
        Type::Int8 | Type::Regclass => {
            (Value::Int((u64::from_be_bytes(le(fixed(8)?)) ^ (1 << 63)) as i64), 8)
        }
        Type::Float4 | Type::Float8 => {
            let ordered = u64::from_be_bytes(le(fixed(8)?));
            let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
            (Value::Float(f64::from_bits(bits)), 8)
        }
        Type::Date => {
            let raw = u32::from_be_bytes(le(fixed(4)?)) ^ 0x8000_0000;
            (Value::Date(raw as i32), 4)
        }
        Type::Timestamp | Type::Timestamptz | Type::Time => {
            let micros = (u64::from_be_bytes(le(fixed(8)?)) ^ (1 << 63)) as i64;
            let value = match ty {
                Type::Timestamp => Value::Timestamp(micros),
                Type::Timestamptz => Value::Timestamptz(micros),
                _ => Value::Time(micros),
            };
            (value, 8)
        }
        Type::Interval => {
            let span = (u128::from_be_bytes(le(fixed(16)?)) ^ (1 << 127)) as i128;
            let day = i128::from(crate::types::MICROS_PER_DAY);
            let days = i32::try_from(span.div_euclid(day)).ok()?;
            (Value::Interval(Interval::new(0, days, span.rem_euclid(day) as i64)), 16)
        }
        Type::Uuid => (Value::Uuid(le(fixed(16)?)), 16),
        Type::Numeric { .. } => decode_decimal(bytes)?,
        Type::Char(_) | Type::Varchar(_) | Type::Text | Type::Unknown => {
            let (raw, used) = decode_escaped(bytes)?;
            (Value::Text(Text::from(String::from_utf8(raw).ok()?)), used)
        }
        Type::Bytea => {
            let (raw, used) = decode_escaped(bytes)?;
            (Value::Bytes(raw), used)
        }
        Type::Array(elem) => {
            let (raw, used) = decode_escaped(bytes)?;
            (decode_array(elem, &raw).ok()?, used)
        }
        Type::Json | Type::Jsonb => {
            let (raw, used) = decode_escaped(bytes)?;
            let text = String::from_utf8(raw).ok()?;
            let value = match ty {
                Type::Json => Value::Text(Text::from(text)),
                _ => crate::types::json::jsonb(crate::types::json::parse_jsonb(&text).ok()?),
            };
            (value, used)
        }
    })
}

/// Reads back [`encode_escaped`]'s bytes: the value and the bytes the encoding took.
fn decode_escaped(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let (byte, width) = match (*bytes.get(at)?, bytes.get(at + 1)) {
            (0, Some(0xFF)) => (0, 2),
            (0, Some(0x01)) => return Some((out, at + 2)),
            (0, _) => return None,
            (byte, _) => (byte, 1),
        };
        out.push(byte);
        at += width;
    }
}

/// Reads back [`encode_decimal`]'s bytes.
fn decode_decimal(bytes: &[u8]) -> Option<(Value, usize)> {
    let negative = match *bytes.first()? {
        2 => return Some((Value::Numeric(Decimal::ZERO), 1)),
        1 => true,
        3 => false,
        _ => return None,
    };
    let byte = |at: usize| bytes.get(at).map(|b| if negative { !*b } else { *b });
    let exponent = i32::from(u16::from_be_bytes([byte(1)?, byte(2)?])) - 0x8000;
    let mut digits = String::new();
    let mut at = 3;
    loop {
        match byte(at)? {
            0 => break,
            digit @ 1..=10 => digits.push(char::from(b'0' + digit - 1)),
            _ => return None,
        }
        at += 1;
    }
    // 0.d1 d2 ... times ten to the exponent.
    let scale = digits.len() as i32 - exponent;
    let mut mantissa: i128 = digits.parse().ok()?;
    let scale = if scale < 0 {
        mantissa = mantissa.checked_mul(10i128.checked_pow(scale.unsigned_abs())?)?;
        0
    } else {
        scale as u32
    };
    let mut value = Decimal::try_from_i128_with_scale(mantissa, scale).ok()?;
    value.set_sign_negative(negative);
    Some((Value::Numeric(value), at + 1))
}

#[cfg(test)]
mod tests;
