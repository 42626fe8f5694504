//! Log records: a transaction's head and its writes (whole rows, deletions and patches), the
//! patch of an update (`diff_rows`), and the cursor that decodes a log block's payload. The
//! byte layout is in docs/format.md.

use super::*;

// ----- log records ---------------------------------------------------------------------------

pub const RECORD_TXN: u8 = 1;
pub const OP_PUT: u8 = 1;
pub const OP_DELETE: u8 = 2;
/// Format 4 and later: the changed bytes of an updated row ([`Patch`]).
pub const OP_PATCH: u8 = 3;

/// One write of a logged transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedWrite<'a> {
    pub table: u32,
    pub key: &'a [u8],
    pub change: Change<'a>,
}

/// What a logged write did to its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    /// An insert or an update: the whole new row.
    Put(&'a [u8]),
    Delete,
    /// An update that kept the row's length: the bytes it changed.
    Patch(Patch<'a>),
}

/// The bytes an update changed in a row of unchanged length, as edits in ascending,
/// non-overlapping order; decoding checks that every edit lies within the row, so applying
/// a decoded patch to a row of [`Patch::row_len`] bytes cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patch<'a> {
    row_len: u32,
    count: u32,
    /// `count` times: offset (4), length (4), the bytes.
    edits: &'a [u8],
}

/// Rows shorter than this are logged whole: a patch could save at most half of such a row,
/// less than the comparison costs (TPC-C's ORDER-LINE rows, of about 50 bytes, are updated a
/// hundred at a time by Delivery).
pub const PATCH_ROW_BYTES_MIN: usize = 128;

/// Bytes of a patch's body before its edits (row length and edit count), and of each edit's
/// head (offset and length).
const PATCH_HEAD_BYTES: usize = 8;
const EDIT_HEAD_BYTES: usize = 8;

/// A patch is logged in place of the whole row only when its body is at most this fraction
/// of the row: replaying a patch costs more than replaying an image (`recovery`), so a
/// patch that saves little is not worth it.
pub const PATCH_ROW_FRACTION_MAX: usize = 2;

impl<'a> Patch<'a> {
    /// Parses a patch body (row length, count, edits), checking every edit's bounds.
    pub fn decode(body: &'a [u8]) -> Option<Patch<'a>> {
        let mut cursor = Cursor::new(body);
        let row_len = cursor.u32()?;
        let count = cursor.u32()?;
        let edits = &body[PATCH_HEAD_BYTES..];
        let mut end = 0usize;
        for _ in 0..count {
            let offset = cursor.u32()? as usize;
            let bytes = cursor.sized()?;
            if bytes.is_empty() || offset < end || offset + bytes.len() > row_len as usize {
                return None;
            }
            end = offset + bytes.len();
        }
        cursor.is_empty().then_some(Patch { row_len, count, edits })
    }

    /// The bytes of the patch's body.
    pub fn body_len(&self) -> usize {
        PATCH_HEAD_BYTES + self.edits.len()
    }

    /// Writes the patch's body, which [`Patch::decode`] reads back, into `out`, which is
    /// [`Patch::body_len`] bytes long.
    pub fn write_body_into(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.row_len.to_le_bytes());
        out[4..8].copy_from_slice(&self.count.to_le_bytes());
        out[PATCH_HEAD_BYTES..].copy_from_slice(self.edits);
    }

    /// The length of the row before and after the update.
    pub fn row_len(&self) -> usize {
        self.row_len as usize
    }

    /// The edits: each an offset into the row and the bytes that replace those there.
    pub fn edits(&self) -> impl Iterator<Item = (usize, &'a [u8])> + 'a {
        let mut cursor = Cursor::new(self.edits);
        (0..self.count).map(move |_| {
            let offset = cursor.u32().expect("checked when decoded") as usize;
            (offset, cursor.sized().expect("checked when decoded"))
        })
    }

    /// Applies the edits to `row`, which must be [`Patch::row_len`] bytes long.
    pub fn apply(&self, row: &mut [u8]) {
        assert_eq!(row.len(), self.row_len(), "a patch applies to a row of its length");
        for (offset, bytes) in self.edits() {
            row[offset..offset + bytes.len()].copy_from_slice(bytes);
        }
    }
}

/// The 8-byte words in which `new` differs from `old` (of equal length), as `(offset,
/// length)` edits of `new` appended to `edits`, and the bytes a patch of them takes (its body).
/// Differing words one equal word apart share an edit: an edit's head costs as much as the
/// word between them. Returns `None`, with `edits` as it was, if the lengths differ or the
/// patch would exceed `1 / PATCH_ROW_FRACTION_MAX` of the row.
///
/// Rows are compared 64 bytes at a time ([`differing_bytes`]), and word by word only inside
/// blocks that differ: an update changes a few columns, and a word-by-word loop over a whole
/// row cost more than logging the row (docs/performance.md).
#[inline]
pub fn diff_rows(old: &[u8], new: &[u8], edits: &mut Vec<(u32, u32)>) -> Option<usize> {
    const WORD: usize = 8;
    const BLOCK: usize = DIFF_BLOCK_BYTES;
    if old.len() != new.len() || new.len() < PATCH_ROW_BYTES_MIN || new.len() > u32::MAX as usize {
        return None;
    }
    let len = new.len();
    let limit = len / PATCH_ROW_FRACTION_MAX;
    let start = edits.len();
    let mut body = PATCH_HEAD_BYTES;
    // The open edit: its start and the end of its last differing word.
    let mut open: Option<(usize, usize)> = None;
    let close = |(from, last): (usize, usize), edits: &mut Vec<(u32, u32)>, body: &mut usize| {
        *body += EDIT_HEAD_BYTES + (last - from);
        edits.push((from as u32, (last - from) as u32));
    };
    let mut note = |at: usize, edits: &mut Vec<(u32, u32)>, body: &mut usize| {
        let end = (at + WORD).min(len);
        open = match open {
            Some((from, last)) if at <= last + WORD => Some((from, end)),
            closed => {
                if let Some(edit) = closed {
                    close(edit, edits, body);
                }
                Some((at, end))
            }
        };
    };
    let (old_blocks, new_blocks) = (old.chunks_exact(BLOCK), new.chunks_exact(BLOCK));
    let new_tail = new_blocks.remainder();
    for (block, (a, b)) in old_blocks.zip(new_blocks).enumerate() {
        let a: &[u8; BLOCK] = a.try_into().expect("a whole block");
        let b: &[u8; BLOCK] = b.try_into().expect("a whole block");
        let mut differ = differing_bytes(a, b);
        while differ != 0 {
            let word = differ.trailing_zeros() as usize / WORD;
            differ &= !(0xff << (word * WORD));
            note(block * BLOCK + word * WORD, edits, &mut body);
        }
        if body > limit {
            edits.truncate(start);
            return None;
        }
    }
    // The bytes after the last whole block: the row's last 64 bytes compared as a block (a
    // row has at least two), those before the tail masked off.
    if !new_tail.is_empty() {
        let window = len - BLOCK;
        let a: &[u8; BLOCK] = old[window..].try_into().expect("the last block");
        let b: &[u8; BLOCK] = new[window..].try_into().expect("the last block");
        let mut differ = differing_bytes(a, b) & (u64::MAX << (len - new_tail.len() - window));
        while differ != 0 {
            let word = (window + differ.trailing_zeros() as usize) / WORD;
            let covered = (word * WORD + WORD).min(len) - window;
            differ &= u64::MAX.checked_shl(covered as u32).unwrap_or(0);
            note(word * WORD, edits, &mut body);
        }
    }
    if let Some(edit) = open {
        close(edit, edits, &mut body);
    }
    if body > limit {
        edits.truncate(start);
        return None;
    }
    Some(body)
}

const DIFF_BLOCK_BYTES: usize = 64;
const _: () = assert!(PATCH_ROW_BYTES_MIN >= DIFF_BLOCK_BYTES, "a patched row holds a block");

/// A bit per byte of the block, set where `a` and `b` differ: four 16-byte SSE2 compares
/// (every x86-64 has SSE2), or eight word compares elsewhere.
#[inline]
fn differing_bytes(a: &[u8; DIFF_BLOCK_BYTES], b: &[u8; DIFF_BLOCK_BYTES]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8};
        let mut equal = 0u64;
        for lane in 0..4 {
            // SAFETY: SSE2 is part of x86-64; each load reads 16 bytes inside the 64-byte
            // arrays, unaligned loads being allowed.
            let mask = unsafe {
                let x = _mm_loadu_si128(a.as_ptr().add(16 * lane) as *const __m128i);
                let y = _mm_loadu_si128(b.as_ptr().add(16 * lane) as *const __m128i);
                _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) as u32 as u64
            };
            equal |= mask << (16 * lane);
        }
        !equal
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut differ = 0u64;
        for word in 0..DIFF_BLOCK_BYTES / 8 {
            if a[word * 8..][..8] != b[word * 8..][..8] {
                differ |= 0xff << (word * 8);
            }
        }
        differ
    }
}

/// Where log records are encoded: a `Vec`, or a worker's log chunk.
pub trait Sink {
    /// The next `len` bytes of the output, which the caller fills whole. An encoder claims
    /// each record once and writes its fields in place: one bounds check and no call per
    /// field, where appending field by field had cost a copy call each (docs/performance.md).
    fn claim(&mut self, len: usize) -> &mut [u8];
}

impl Sink for Vec<u8> {
    #[inline]
    fn claim(&mut self, len: usize) -> &mut [u8] {
        let at = self.len();
        self.resize(at + len, 0);
        &mut self[at..]
    }
}

/// Bytes of a transaction record's head (type, TID, write count) and of a write's head
/// (table, operation, key length).
const TXN_HEAD_BYTES: usize = 13;
const WRITE_HEAD_BYTES: usize = 9;

/// Copies `src` into `dst`, of its length: keys of 4 to 32 bytes as two overlapping loads and
/// stores of a power of two, which the compiler inlines, instead of a call to `memcpy`.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    match n {
        16..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        8..=15 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

#[inline(always)]
fn put_u32(out: &mut [u8], at: usize, value: u32) {
    out[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Appends a transaction record's head; `count` writes follow (`encode_write`).
#[inline]
pub fn encode_txn_head(out: &mut impl Sink, tid: u64, count: u32) {
    let head = out.claim(TXN_HEAD_BYTES);
    head[0] = RECORD_TXN;
    head[1..9].copy_from_slice(&tid.to_le_bytes());
    put_u32(head, 9, count);
}

/// Writes a write's head and key at the start of `record`; the rest of it follows.
#[inline(always)]
fn write_head<'r>(record: &'r mut [u8], table: u32, op: u8, key: &[u8]) -> &'r mut [u8] {
    let (head, rest) = record.split_at_mut(WRITE_HEAD_BYTES);
    put_u32(head, 0, table);
    head[4] = op;
    put_u32(head, 5, key.len() as u32);
    let (key_bytes, rest) = rest.split_at_mut(key.len());
    copy_short(key_bytes, key);
    rest
}

/// Appends a put or a delete. (A patch is written from the new row and its edits:
/// [`encode_patch`].)
#[inline]
pub fn encode_write(out: &mut impl Sink, table: u32, key: &[u8], value: Option<&[u8]>) {
    let Some(value) = value else {
        write_head(out.claim(WRITE_HEAD_BYTES + key.len()), table, OP_DELETE, key);
        return;
    };
    let record = out.claim(WRITE_HEAD_BYTES + key.len() + 4 + value.len());
    let rest = write_head(record, table, OP_PUT, key);
    put_u32(rest, 0, value.len() as u32);
    rest[4..].copy_from_slice(value);
}

/// Appends a patch of the update to `row`: the bytes of each `(offset, length)` edit, which
/// [`diff_rows`] found, and whose body it said takes `body` bytes.
#[inline]
pub fn encode_patch(
    out: &mut impl Sink,
    table: u32,
    key: &[u8],
    row: &[u8],
    edits: &[(u32, u32)],
    body: usize,
) {
    let record = out.claim(WRITE_HEAD_BYTES + key.len() + 4 + body);
    let rest = write_head(record, table, OP_PATCH, key);
    put_u32(rest, 0, body as u32);
    put_u32(rest, 4, row.len() as u32);
    put_u32(rest, 8, edits.len() as u32);
    let mut at = 4 + PATCH_HEAD_BYTES;
    for &(offset, len) in edits {
        let (offset, len) = (offset as usize, len as usize);
        put_u32(rest, at, offset as u32);
        put_u32(rest, at + 4, len as u32);
        rest[at + EDIT_HEAD_BYTES..][..len].copy_from_slice(&row[offset..offset + len]);
        at += EDIT_HEAD_BYTES + len;
    }
    assert_eq!(at, rest.len(), "a patch's body is the bytes its edits take");
}

/// A cursor over little-endian fields that reports running off the end as `None`.
#[derive(Debug)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn bytes(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(len)?;
        let slice = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(slice)
    }

    #[inline]
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    #[inline]
    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4).map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    }

    #[inline]
    pub fn u64(&mut self) -> Option<u64> {
        self.bytes(8).map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    }

    /// A u32 length followed by that many bytes.
    #[inline]
    pub fn sized(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.bytes(len)
    }
}

/// Visits every transaction in a log block payload of a file of format `version`:
/// `visit(tid, writes)`, the TID in this build's layout. A record that does not parse is an
/// error (its checksum passed, so the writer wrote it wrongly or the format is not what this
/// build expects).
pub fn decode_log_payload(
    payload: &[u8],
    version: u32,
    mut visit: impl FnMut(u64, &[LoggedWrite<'_>]),
) -> std::result::Result<(), String> {
    let mut cursor = Cursor::new(payload);
    let mut local: Vec<LoggedWrite<'_>> = Vec::with_capacity(16);
    while !cursor.is_empty() {
        let at = cursor.position();
        let bad = || format!("malformed transaction record at payload offset {at}");
        if cursor.u8() != Some(RECORD_TXN) {
            return Err(format!("unknown record type at payload offset {at}"));
        }
        let tid = tid_from_file(version, cursor.u64().ok_or_else(bad)?)?;
        let count = cursor.u32().ok_or_else(bad)?;
        local.clear();
        for _ in 0..count {
            let table = cursor.u32().ok_or_else(bad)?;
            let op = cursor.u8().ok_or_else(bad)?;
            let key = cursor.sized().filter(|key| key_fits(key)).ok_or_else(bad)?;
            let change = match op {
                OP_PUT => Change::Put(cursor.sized().ok_or_else(bad)?),
                OP_DELETE => Change::Delete,
                OP_PATCH if version >= PATCHES => {
                    Change::Patch(cursor.sized().and_then(Patch::decode).ok_or_else(bad)?)
                }
                _ => return Err(bad()),
            };
            local.push(LoggedWrite { table, key, change });
        }
        visit(tid, &local);
    }
    Ok(())
}

/// Whether a logged or checkpointed key is one an index can hold: no writer logs a longer
/// one, so a longer one is a malformed record, not a key to hand to the index.
#[inline]
pub fn key_fits(key: &[u8]) -> bool {
    key.len() <= crate::limits::INDEX_KEY_BYTES_MAX
}

// ----- checkpoint rows -------------------------------------------------------------------------

#[inline]
pub fn encode_row(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}
