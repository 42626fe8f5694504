//! Byte formats of the data directory; `docs/format.md` has them as tables. All integers are
//! little-endian. Every file starts with a 40-byte header and continues with CRC32C-framed
//! blocks; a reader classifies a bad block as a torn tail (the end of a file whose last write
//! did not finish) or as corruption, and the caller decides which it may accept.

use crate::error::{Error, Result};
use crate::storage::Tid;
use crate::sync::Epoch;
use std::borrow::Cow;

/// CRC32C (Castagnoli, the iSCSI polynomial) of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// The CRC32C of the bytes `crc` covered followed by `data`. The `crc-fast` crate folds
/// with carry-less multiplies (512 bits at a time where the CPU has VPCLMULQDQ): 52 GB/s on a
/// 2.8 KB transaction record, against 18 GB/s for the `crc32c` crate's three streams of the
/// CRC32 instruction (docs/performance.md).
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    let mut digest =
        crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    digest.update(data);
    digest.finalize() as u32
}

/// Bumped whenever any byte format changes; readers keep accepting every older version they
/// know. Version 2 logs TIDs with 22 sequence bits under a 38-bit epoch, where version 1 had
/// 24 under 36 ([`tid_from_file`]). Version 3 starts every block of a log segment at a
/// multiple of [`PAGE_BYTES`], zeros filling the space after the block before it
/// ([`PADDED_SEGMENTS`]), and a block's checksum covers its payload first and then its header
/// ([`PAYLOAD_FIRST`]). Version 4 adds patches, the changed bytes of an updated row
/// ([`PATCHES`]). Version 5 salts each log segment's block headers ([`SALTED_SEGMENTS`]), so
/// that a segment file can be reused. Version 6 numbers each log block's write round
/// ([`ROUNDS`]). Version 7 salts the catalog log too, afresh at each rewrite
/// ([`SALTED_CATALOGS`]). Version 8 lets the catalog log hold rows ([`CATALOG_ROWS`]).
pub const FORMAT_VERSION: u32 = 8;

/// The first format whose catalog log may hold rows of a table ([`CatalogRecord::Rows`]):
/// what `Database::log_catalog_rows` makes durable where nothing else would (with durability
/// off, the SQL catalog's rows), applied at recovery over the checkpoint and the log by the
/// TID rule, as log records are.
pub const CATALOG_ROWS: u32 = 8;

/// The first format whose catalog log carries a salt, as segments do ([`SALTED_SEGMENTS`]):
/// a new random one each time the catalog is rewritten (at every open). The catalog is
/// written through the page cache, and after a crash before an append's sync a file system
/// without a journal may leave the file its new length over blocks that still hold a freed
/// file's bytes: an earlier catalog's, whose blocks at the same offsets may be whole, valid
/// records (an earlier run's change that the crash lost, say, a table's drop). Unsalted,
/// recovery applied such a record; salted, it fails its checksum and is a torn tail.
pub const SALTED_CATALOGS: u32 = 7;

/// The first format whose log segments carry a salt in their file header (bytes 32..36), a
/// random number XORed into the header checksum of each of the segment's blocks. A superseded
/// segment's file is reused for a new segment (`wal::log`, spare segments) without clearing
/// it: its old blocks stay after the new ones until overwritten, and fail the new salt, so
/// that a reader finds the end of the new blocks as it would find zeros.
pub const SALTED_SEGMENTS: u32 = 5;

/// The first format whose log blocks say which of their logger's write rounds wrote them
/// ([`round_flags`]): the round's number within the segment (modulo 2^14) in flag bits 2 to
/// 15, and flag bit 1 on the round's last block. A logger writes a round's blocks with one
/// request and syncs them before it writes the next round, so after a crash only the last
/// round can be incomplete, and a device may have written its pages in any order: a damaged
/// block with valid blocks after it is then a torn tail when all those blocks are of the
/// damaged block's own round, and corruption when any is of a later round (whose write
/// began only once the damaged block's round was synced). Before, any valid block after
/// damage made it corruption, and a database a power cut left that way did not open.
pub const ROUNDS: u32 = 6;

/// The first format whose log may hold a patch ([`OP_PATCH`]) in place of a whole row.
pub const PATCHES: u32 = 4;

/// The first format whose block checksum is the CRC32C of the payload followed by the first
/// 24 header bytes (before: the header bytes, then the payload). A worker computes its
/// records' CRC as it writes them, while they are in its cache, and the logger only extends
/// it over the header it builds; the other order needed a CRC combination per block, which
/// cost more than computing the CRC over the payload again.
pub const PAYLOAD_FIRST: u32 = 3;

/// The first format whose log segments pad each block to the next page: a logger writes a
/// worker's chunk of records, framed where it lies, straight to the `O_DIRECT` file, with no
/// copy into a buffer of its own.
pub const PADDED_SEGMENTS: u32 = 3;

/// The unit of padding in log segments, and of direct I/O.
pub const PAGE_BYTES: usize = 4096;

/// Sequence bits of a TID as format 1 logged it.
const V1_SEQUENCE_BITS: u32 = 24;

/// A TID that a file of format `version` logged, in this build's layout: the same epoch and
/// sequence. Fails for a format 1 TID whose sequence this layout cannot hold (more than 4
/// million commits in one dependency chain within one epoch, which no known run reached).
pub fn tid_from_file(version: u32, raw: u64) -> std::result::Result<u64, String> {
    if version >= 2 {
        return Ok(raw);
    }
    let (epoch, sequence) = (raw >> V1_SEQUENCE_BITS, raw & ((1 << V1_SEQUENCE_BITS) - 1));
    if sequence > Tid::SEQUENCE_MAX {
        return Err(format!(
            "a format 1 TID with sequence {sequence} in epoch {epoch}: this build holds at most \
             {} per epoch",
            Tid::SEQUENCE_MAX
        ));
    }
    if epoch >= 1 << 36 {
        return Err(format!("a format 1 TID with epoch {epoch}, beyond format 1's 36 bits"));
    }
    Ok(Tid::new(Epoch(epoch), sequence).as_u64())
}

/// The format version of a file whose header [`decode_file_header`] accepted.
pub fn file_version(data: &[u8]) -> u32 {
    u32_at(data, 8)
}

/// The salt of the blocks of a file whose header [`decode_file_header`] accepted: 0 before
/// [`SALTED_SEGMENTS`], and in checkpoint files and catalogs before [`SALTED_CATALOGS`]
/// (whose header bytes 32..36 are zeros).
pub fn file_salt(data: &[u8]) -> u32 {
    if file_version(data) >= SALTED_SEGMENTS { u32_at(data, 32) } else { 0 }
}

/// `header` salted with `salt`: its own checksum (bytes 28..32) XORed with it.
pub fn salted(mut header: [u8; BLOCK_HEADER_BYTES], salt: u32) -> [u8; BLOCK_HEADER_BYTES] {
    let checksum = u32_at(&header, 28) ^ salt;
    header[28..32].copy_from_slice(&checksum.to_le_bytes());
    header
}

pub const FILE_HEADER_BYTES: usize = 40;
pub const BLOCK_HEADER_BYTES: usize = 32;
pub const BLOCK_MAGIC: [u8; 4] = *b"EGBK";

/// Largest payload of one block; larger batches are split.
pub const BLOCK_PAYLOAD_MAX: usize = 8 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A log segment: header fields (logger, run, sequence).
    Segment,
    /// A checkpoint file: header fields (table, checkpoint epoch, part).
    Checkpoint,
    /// The catalog log: header fields (0, 0, 0).
    Catalog,
}

impl FileKind {
    fn magic(self) -> &'static [u8; 8] {
        match self {
            FileKind::Segment => b"ENGRAMLG",
            FileKind::Checkpoint => b"ENGRAMCK",
            FileKind::Catalog => b"ENGRAMCT",
        }
    }
}

/// The three kind-specific fields of a file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub a: u32,
    pub b: u64,
    pub c: u64,
}

pub fn encode_file_header(kind: FileKind, header: FileHeader) -> [u8; FILE_HEADER_BYTES] {
    encode_salted_file_header(kind, header, 0)
}

/// A file header whose blocks are salted with `salt` ([`SALTED_SEGMENTS`]).
pub fn encode_salted_file_header(
    kind: FileKind,
    header: FileHeader,
    salt: u32,
) -> [u8; FILE_HEADER_BYTES] {
    let mut out = [0u8; FILE_HEADER_BYTES];
    out[0..8].copy_from_slice(kind.magic());
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&header.a.to_le_bytes());
    out[16..24].copy_from_slice(&header.b.to_le_bytes());
    out[24..32].copy_from_slice(&header.c.to_le_bytes());
    out[32..36].copy_from_slice(&salt.to_le_bytes());
    let crc = crc32c(&out[0..36]);
    out[36..40].copy_from_slice(&crc.to_le_bytes());
    out
}

pub fn decode_file_header(kind: FileKind, data: &[u8], file: &str) -> Result<FileHeader> {
    let corrupt = |reason: &str| Error::Corrupt {
        file: file.to_string(),
        offset: 0,
        reason: reason.to_string(),
    };
    if data.len() < FILE_HEADER_BYTES {
        return Err(corrupt("file is shorter than its header"));
    }
    if &data[0..8] != kind.magic() {
        return Err(corrupt("wrong magic number: not a file of this kind"));
    }
    if u32_at(data, 36) != crc32c(&data[0..36]) {
        return Err(corrupt("header checksum mismatch"));
    }
    let version = u32_at(data, 8);
    if version == 0 || version > FORMAT_VERSION {
        return Err(corrupt(&format!(
            "format version {version}; this build reads versions 1 to {FORMAT_VERSION}"
        )));
    }
    Ok(FileHeader { a: u32_at(data, 12), b: u64_at(data, 16), c: u64_at(data, 24) })
}

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum BlockKind {
    /// Transaction records (log segments).
    Log = 1,
    /// Rows (checkpoint files).
    Rows = 2,
    /// The last block of a complete checkpoint file: row count and row bytes.
    End = 3,
    /// One catalog change (catalog log).
    Catalog = 4,
}

impl BlockKind {
    fn from_u16(value: u16) -> Option<BlockKind> {
        Some(match value {
            1 => BlockKind::Log,
            2 => BlockKind::Rows,
            3 => BlockKind::End,
            4 => BlockKind::Catalog,
            _ => return None,
        })
    }
}

const FLAG_LZ4: u16 = 1;
/// A log block that ends its write round ([`ROUNDS`]).
const FLAG_ROUND_END: u16 = 2;
/// Where a log block's round number lies in its flags, and its mask ([`ROUNDS`]).
const ROUND_SHIFT: u16 = 2;
const ROUND_MASK: u16 = 0x3FFF;

/// The flags of a log block written by round `round` of its segment, the round's last block
/// when `end` ([`ROUNDS`]). A segment's first block is round 0, ending it.
pub fn round_flags(round: u64, end: bool) -> u16 {
    ((round as u16) & ROUND_MASK) << ROUND_SHIFT | if end { FLAG_ROUND_END } else { 0 }
}

/// The round a log block with `flags` ended or belongs to, and whether it ended it.
fn round_of(flags: u16) -> (u16, bool) {
    ((flags >> ROUND_SHIFT) & ROUND_MASK, flags & FLAG_ROUND_END != 0)
}

/// A random salt that is not 0 (0 leaves a block unsalted): `seed` (what names the file) is
/// hashed with the time under a random key.
pub fn fresh_salt(seed: impl std::hash::Hash) -> u32 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let hash = std::collections::hash_map::RandomState::new().hash_one((seed, nanos));
    ((hash ^ (hash >> 32)) as u32).max(1)
}

/// Appends one uncompressed block whose header checksum is salted with `salt` ([`salted`]).
pub fn encode_salted_block(
    out: &mut Vec<u8>,
    kind: BlockKind,
    mark: u64,
    payload: &[u8],
    salt: u32,
) {
    out.extend_from_slice(&salted(block_header(kind, mark, payload), salt));
    out.extend_from_slice(payload);
}

/// Appends one framed block to `out`. `mark` is the block's epoch: for a log block, every
/// record of the logger's workers with an epoch at or below it is in this block or before it.
pub fn encode_block(out: &mut Vec<u8>, kind: BlockKind, mark: u64, payload: &[u8], lz4: bool) {
    if lz4 && payload.len() >= 64 {
        let compressed = lz4_flex::block::compress(payload);
        if compressed.len() < payload.len() {
            out.extend_from_slice(&header(kind, FLAG_LZ4, mark, &compressed, payload.len()));
            out.extend_from_slice(&compressed);
            return;
        }
    }
    out.extend_from_slice(&block_header(kind, mark, payload));
    out.extend_from_slice(payload);
}

/// The header of an uncompressed block holding `payload`, for writers that write the payload
/// from where it is.
pub fn block_header(kind: BlockKind, mark: u64, payload: &[u8]) -> [u8; BLOCK_HEADER_BYTES] {
    header(kind, 0, mark, payload, payload.len())
}

/// [`block_header`] of a log block with the flags of its round ([`round_flags`]).
pub fn log_block_header(flags: u16, mark: u64, payload: &[u8]) -> [u8; BLOCK_HEADER_BYTES] {
    header(BlockKind::Log, flags, mark, payload, payload.len())
}

/// The header of an uncompressed block whose payload of `payload_len` bytes has the CRC32C
/// `payload_crc`, computed by whoever wrote the payload (a worker, while its records were
/// still in its cache); the same header as [`block_header`] gives ([`PAYLOAD_FIRST`]).
pub fn block_header_of_checksummed(
    kind: BlockKind,
    flags: u16,
    mark: u64,
    payload_len: usize,
    payload_crc: u32,
) -> [u8; BLOCK_HEADER_BYTES] {
    framed(kind, flags, mark, payload_len, payload_len, payload_crc)
}

/// The header of a block holding `compressed`, LZ4 of `raw_len` bytes, with `flags` besides
/// the compression's.
pub fn lz4_block_header(
    kind: BlockKind,
    flags: u16,
    mark: u64,
    compressed: &[u8],
    raw_len: usize,
) -> [u8; BLOCK_HEADER_BYTES] {
    header(kind, flags | FLAG_LZ4, mark, compressed, raw_len)
}

/// A block header for the `stored` payload bytes, `raw_len` once decompressed.
fn header(
    kind: BlockKind,
    flags: u16,
    mark: u64,
    stored: &[u8],
    raw_len: usize,
) -> [u8; BLOCK_HEADER_BYTES] {
    framed(kind, flags, mark, stored.len(), raw_len, crc32c(stored))
}

/// A block header for `stored_len` payload bytes whose CRC32C is `stored_crc`: the block
/// checksum extends it over header bytes 0..24 ([`PAYLOAD_FIRST`]).
fn framed(
    kind: BlockKind,
    flags: u16,
    mark: u64,
    stored_len: usize,
    raw_len: usize,
    stored_crc: u32,
) -> [u8; BLOCK_HEADER_BYTES] {
    let mut header = [0u8; BLOCK_HEADER_BYTES];
    header[0..4].copy_from_slice(&BLOCK_MAGIC);
    header[4..6].copy_from_slice(&(kind as u16).to_le_bytes());
    header[6..8].copy_from_slice(&flags.to_le_bytes());
    header[8..12].copy_from_slice(&(stored_len as u32).to_le_bytes());
    header[12..16].copy_from_slice(&(raw_len as u32).to_le_bytes());
    header[16..24].copy_from_slice(&mark.to_le_bytes());
    let crc = crc32c_append(stored_crc, &header[0..24]);
    header[24..28].copy_from_slice(&crc.to_le_bytes());
    let header_crc = crc32c(&header[0..28]);
    header[28..32].copy_from_slice(&header_crc.to_le_bytes());
    header
}

/// A decoded block.
#[derive(Debug)]
pub struct Block<'a> {
    pub kind: BlockKind,
    pub mark: u64,
    pub offset: usize,
    pub payload: Cow<'a, [u8]>,
}

/// Why reading stopped before the end of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// The file ends inside a block, or in zeros: the tail of a write that did not finish.
    Torn { offset: usize, reason: String },
    /// A block that fails its checksum or makes no sense, with more data after it.
    Corrupt { offset: usize, reason: String },
}

impl Damage {
    pub fn offset(&self) -> usize {
        match self {
            Damage::Torn { offset, .. } | Damage::Corrupt { offset, .. } => *offset,
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Damage::Torn { reason, .. } | Damage::Corrupt { reason, .. } => reason,
        }
    }

    pub fn into_error(self, file: &str) -> Error {
        Error::Corrupt {
            file: file.to_string(),
            offset: self.offset() as u64,
            reason: self.reason().to_string(),
        }
    }
}

/// Reads the blocks of a file after its header.
#[derive(Debug)]
pub struct BlockReader<'a> {
    data: &'a [u8],
    pos: usize,
    /// The file's format version (0 when the data is too short for a header).
    version: u32,
    /// Blocks after the first start at page boundaries (log segments of [`PADDED_SEGMENTS`]).
    padded: bool,
    /// XORed into each block header's checksum ([`SALTED_SEGMENTS`]).
    salt: u32,
    /// The flags of the last valid block, in a segment whose blocks carry their round
    /// ([`ROUNDS`]).
    last_flags: Option<u16>,
}

impl<'a> BlockReader<'a> {
    pub fn new(data: &'a [u8]) -> BlockReader<'a> {
        let (version, salt) = if data.len() >= FILE_HEADER_BYTES {
            (file_version(data), file_salt(data))
        } else {
            (0, 0)
        };
        BlockReader {
            data,
            pos: FILE_HEADER_BYTES.min(data.len()),
            version,
            padded: false,
            salt,
            last_flags: None,
        }
    }

    /// A reader of a log segment (whose header the caller checked), which skips the padding
    /// of formats that have it.
    pub fn segment(data: &'a [u8]) -> BlockReader<'a> {
        let reader = BlockReader::new(data);
        BlockReader { padded: reader.version >= PADDED_SEGMENTS, ..reader }
    }

    /// Offset of the next block (the end of the valid part once reading stops).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next block, `Ok(None)` at a clean end (the end of the file, or only zeros after
    /// the last block: preallocated space), or the damage that stopped reading. Damage is a
    /// torn tail when no valid block follows it anywhere in the file (a write that never
    /// finished, after which nothing was written), or, in a segment whose blocks carry their
    /// round ([`ROUNDS`]), when every valid block after it is of the damaged block's round;
    /// otherwise it is corruption. In a reused segment file, the old blocks after the new ones
    /// fail the salt: a crash leaves them as such a tail.
    pub fn next_block(&mut self) -> std::result::Result<Option<Block<'a>>, Damage> {
        // In a padded segment, zeros from the end of a block to the next page are padding; a
        // block starts only at a page boundary (the first right after the file header), so the
        // skip never passes over a block. Bytes there that are not zero are damage, found below.
        if self.padded && self.pos > FILE_HEADER_BYTES && !self.pos.is_multiple_of(PAGE_BYTES) {
            let page_end = self.pos.next_multiple_of(PAGE_BYTES).min(self.data.len());
            if all_zero(&self.data[self.pos..page_end]) {
                self.pos = page_end;
            }
        }
        let offset = self.pos;
        if all_zero(&self.data[offset..]) {
            return Ok(None);
        }
        match self.parse(offset) {
            Ok(block) => Ok(Some(block)),
            Err(reason) => {
                let torn = match self.damaged_round() {
                    Some(round) => self.later_rounds_after(offset + 1).all(|later| later == round),
                    None => !valid_block_after(self.data, offset + 1, self.salt),
                };
                Err(if torn {
                    Damage::Torn { offset, reason }
                } else {
                    Damage::Corrupt { offset, reason }
                })
            }
        }
    }

    /// The round a damaged block after the last valid one belongs to: that block's round, or
    /// the next when it ended its round. `None` where blocks carry no rounds, or no valid
    /// block came before (a segment's first block is synced alone, before any other).
    fn damaged_round(&self) -> Option<u16> {
        if !self.padded || self.version < ROUNDS {
            return None;
        }
        let (round, ended) = round_of(self.last_flags?);
        Some(if ended { round.wrapping_add(1) & ROUND_MASK } else { round })
    }

    /// The rounds of the valid block headers at the page boundaries from `from` on (where a
    /// padded segment's blocks start).
    fn later_rounds_after(&self, from: usize) -> impl Iterator<Item = u16> + '_ {
        let first = from.next_multiple_of(PAGE_BYTES);
        (first..self.data.len()).step_by(PAGE_BYTES).filter_map(move |start| {
            let header = self.data.get(start..start + BLOCK_HEADER_BYTES)?;
            let valid = header[0..4] == BLOCK_MAGIC
                && crc32c(&header[0..28]) ^ self.salt == u32_at(header, 28);
            valid.then(|| round_of(u16_at(header, 6)).0)
        })
    }

    fn parse(&mut self, offset: usize) -> std::result::Result<Block<'a>, String> {
        let rest = &self.data[offset..];
        if rest.len() < BLOCK_HEADER_BYTES {
            return Err("the file ends inside a block header".into());
        }
        if rest[0..4] != BLOCK_MAGIC {
            return Err("no block starts here (bad magic number)".into());
        }
        if crc32c(&rest[0..28]) ^ self.salt != u32_at(rest, 28) {
            return Err("block header checksum mismatch".into());
        }
        let stored = u32_at(rest, 8) as usize;
        let end = BLOCK_HEADER_BYTES + stored;
        if end > rest.len() {
            return Err("the file ends inside a block".into());
        }
        let payload = &rest[BLOCK_HEADER_BYTES..end];
        let crc = if self.version >= PAYLOAD_FIRST {
            crc32c_append(crc32c(payload), &rest[0..24])
        } else {
            crc32c_append(crc32c(&rest[0..24]), payload)
        };
        if crc != u32_at(rest, 24) {
            return Err("block checksum mismatch".into());
        }
        let Some(kind) = BlockKind::from_u16(u16_at(rest, 4)) else {
            return Err("unknown block kind".into());
        };
        let flags = u16_at(rest, 6);
        let raw_len = u32_at(rest, 12) as usize;
        let body = &rest[BLOCK_HEADER_BYTES..end];
        let payload = if flags & FLAG_LZ4 != 0 {
            let decompressed = lz4_flex::block::decompress(body, raw_len)
                .map_err(|error| format!("LZ4 block does not decompress: {error}"))?;
            Cow::Owned(decompressed)
        } else {
            if raw_len != stored {
                return Err("block lengths disagree".into());
            }
            Cow::Borrowed(body)
        };
        self.pos = offset + end;
        self.last_flags = Some(flags);
        Ok(Block { kind, mark: u64_at(rest, 16), offset, payload })
    }
}

/// Whether every byte is zero. A byte-at-a-time test costs about five instructions a byte;
/// the preallocated tail of a segment is up to its whole size, so the test ORs fixed-size
/// chunks, which the compiler vectorises, and stops at the first chunk that is not zero.
fn all_zero(bytes: &[u8]) -> bool {
    bytes.chunks(4096).all(|chunk| chunk.iter().fold(0u8, |acc, &byte| acc | byte) == 0)
}

/// Whether a block header with a valid checksum (salted with `salt`) starts anywhere at or
/// after `from`.
fn valid_block_after(data: &[u8], from: usize, salt: u32) -> bool {
    let mut at = from;
    while at + BLOCK_HEADER_BYTES <= data.len() {
        match data[at..].windows(4).position(|window| window == BLOCK_MAGIC) {
            None => return false,
            Some(found) => {
                let start = at + found;
                if start + BLOCK_HEADER_BYTES <= data.len()
                    && crc32c(&data[start..start + 28]) ^ salt == u32_at(data, start + 28)
                {
                    return true;
                }
                at = start + 1;
            }
        }
    }
    false
}

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
/// of the row: replaying a patch costs more than replaying an image (`wal::recovery`), so a
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

// ----- catalog records -------------------------------------------------------------------------

pub const CATALOG_CREATE: u8 = 1;
pub const CATALOG_DROP: u8 = 2;
pub const CATALOG_ROWS_TAG: u8 = 3;

/// A secondary index as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRecord {
    pub name: String,
    pub unique: bool,
    pub definition: Vec<u8>,
}

/// A row a catalog log holds (`CatalogRecord::Rows`): its key, and its value or `None` for a
/// deletion.
pub type CatalogRow = (Vec<u8>, Option<Vec<u8>>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogRecord {
    Create {
        table: u32,
        name: String,
        indexes: Vec<IndexRecord>,
    },
    Drop {
        table: u32,
    },
    /// Rows of `table` that a transaction with TID `tid` committed ([`CATALOG_ROWS`]).
    Rows {
        table: u32,
        tid: u64,
        rows: Vec<CatalogRow>,
    },
}

fn put_sized(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

pub fn encode_catalog(record: &CatalogRecord) -> Vec<u8> {
    let mut out = Vec::new();
    match record {
        CatalogRecord::Create { table, name, indexes } => {
            out.push(CATALOG_CREATE);
            out.extend_from_slice(&table.to_le_bytes());
            put_sized(&mut out, name.as_bytes());
            out.extend_from_slice(&(indexes.len() as u32).to_le_bytes());
            for index in indexes {
                put_sized(&mut out, index.name.as_bytes());
                out.push(u8::from(index.unique));
                put_sized(&mut out, &index.definition);
            }
        }
        CatalogRecord::Drop { table } => {
            out.push(CATALOG_DROP);
            out.extend_from_slice(&table.to_le_bytes());
        }
        CatalogRecord::Rows { table, tid, rows } => {
            out.push(CATALOG_ROWS_TAG);
            out.extend_from_slice(&table.to_le_bytes());
            out.extend_from_slice(&tid.to_le_bytes());
            out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
            for (key, value) in rows {
                put_sized(&mut out, key);
                match value {
                    Some(value) => {
                        out.push(1);
                        put_sized(&mut out, value);
                    }
                    None => out.push(0),
                }
            }
        }
    }
    out
}

pub fn decode_catalog(payload: &[u8]) -> Option<CatalogRecord> {
    let mut cursor = Cursor::new(payload);
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).ok();
    let record = match cursor.u8()? {
        CATALOG_CREATE => {
            let table = cursor.u32()?;
            let name = text(cursor.sized()?)?;
            let count = cursor.u32()?;
            let mut indexes = Vec::new();
            for _ in 0..count {
                let name = text(cursor.sized()?)?;
                let unique = cursor.u8()? != 0;
                let definition = cursor.sized()?.to_vec();
                indexes.push(IndexRecord { name, unique, definition });
            }
            CatalogRecord::Create { table, name, indexes }
        }
        CATALOG_DROP => CatalogRecord::Drop { table: cursor.u32()? },
        CATALOG_ROWS_TAG => {
            let table = cursor.u32()?;
            let tid = cursor.u64()?;
            let count = cursor.u32()?;
            let mut rows = Vec::new();
            for _ in 0..count {
                let key = cursor.sized()?;
                if !key_fits(key) {
                    return None;
                }
                let value = match cursor.u8()? {
                    0 => None,
                    1 => Some(cursor.sized()?.to_vec()),
                    _ => return None,
                };
                rows.push((key.to_vec(), value));
            }
            CatalogRecord::Rows { table, tid, rows }
        }
        _ => return None,
    };
    cursor.is_empty().then_some(record)
}

// ----- manifest ----------------------------------------------------------------------------------

/// The manifest: which run wrote last, the newest complete checkpoint, and epoch ranges whose
/// log records must never be replayed (written but never durable before a crash).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub run: u64,
    /// Epoch and file count of the newest complete checkpoint.
    pub checkpoint: Option<(u64, u64)>,
    pub voids: Vec<(u64, u64)>,
}

pub const MANIFEST_FIRST_LINE: &str = "engram data directory";

impl Manifest {
    pub fn encode(&self) -> String {
        let mut text =
            format!("{MANIFEST_FIRST_LINE}\nformat {FORMAT_VERSION}\nrun {}\n", self.run);
        if let Some((epoch, files)) = self.checkpoint {
            text.push_str(&format!("checkpoint {epoch} {files}\n"));
        }
        for (low, high) in &self.voids {
            text.push_str(&format!("void {low} {high}\n"));
        }
        let crc = crc32c(text.as_bytes());
        text.push_str(&format!("crc32c {crc:08x}\n"));
        text
    }

    pub fn decode(text: &[u8], file: &str) -> Result<Manifest> {
        let corrupt = |reason: String| Error::Corrupt { file: file.to_string(), offset: 0, reason };
        let text = std::str::from_utf8(text).map_err(|_| corrupt("not UTF-8 text".into()))?;
        let crc_at = text.rfind("crc32c ").ok_or_else(|| corrupt("no crc32c line".into()))?;
        let expected = u32::from_str_radix(text[crc_at + 7..].trim(), 16)
            .map_err(|_| corrupt("unreadable crc32c line".into()))?;
        if crc32c(&text.as_bytes()[..crc_at]) != expected {
            return Err(corrupt("checksum mismatch".into()));
        }
        let mut manifest = Manifest::default();
        let mut lines = text[..crc_at].lines();
        if lines.next() != Some(MANIFEST_FIRST_LINE) {
            return Err(corrupt("not an Engram manifest".into()));
        }
        for line in lines {
            let fields: Vec<&str> = line.split(' ').collect();
            let number = |index: usize| -> Result<u64> {
                fields
                    .get(index)
                    .and_then(|field| field.parse().ok())
                    .ok_or_else(|| corrupt(format!("bad line \"{line}\"")))
            };
            match fields[0] {
                "format" => {
                    let version = number(1)?;
                    if version == 0 || version > u64::from(FORMAT_VERSION) {
                        return Err(corrupt(format!(
                            "format version {version}; this build reads 1 to {FORMAT_VERSION}"
                        )));
                    }
                }
                "run" => manifest.run = number(1)?,
                "checkpoint" => manifest.checkpoint = Some((number(1)?, number(2)?)),
                "void" => manifest.voids.push((number(1)?, number(2)?)),
                _ => return Err(corrupt(format!("unknown line \"{line}\""))),
            }
        }
        Ok(manifest)
    }

    /// Whether records of `epoch` were voided by an earlier recovery.
    pub fn is_void(&self, epoch: u64) -> bool {
        self.voids.iter().any(|&(low, high)| (low..=high).contains(&epoch))
    }
}

#[inline]
fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(data[at..at + 2].try_into().unwrap())
}

#[inline]
pub fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

#[inline]
pub fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::INDEX_KEY_BYTES_MAX;

    /// CRC32C one bit at a time, from its definition (reflected polynomial 0x82F63B78,
    /// inverted before and after).
    fn crc32c_by_bits(crc: u32, data: &[u8]) -> u32 {
        let mut state = !crc;
        for &byte in data {
            state ^= u32::from(byte);
            for _ in 0..8 {
                state = (state >> 1) ^ (0x82F6_3B78 & (state & 1).wrapping_neg());
            }
        }
        !state
    }

    #[test]
    fn the_checksum_is_crc32c_for_every_length_alignment_and_split() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283, "the catalogue's check value");
        let data: Vec<u8> =
            (0..9_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        for len in (0..600).chain([1_000, 2_800, 4_096, 4_097, 8_191]) {
            for offset in [0, 1, 3, 8, 13] {
                let bytes = &data[offset..offset + len];
                let expected = crc32c_by_bits(0, bytes);
                assert_eq!(crc32c(bytes), expected, "length {len} at offset {offset}");
                for split in [0, len / 3, len / 2, len.saturating_sub(1), len] {
                    let first = crc32c_append(0, &bytes[..split]);
                    assert_eq!(crc32c_append(first, &bytes[split..]), expected, "split at {split}");
                }
            }
        }
    }

    #[test]
    fn writes_encode_every_key_length_and_decode_back() {
        let value: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for key_len in 0..=40usize {
            let key: Vec<u8> = (0..key_len).map(|i| (i * 13 + 5) as u8).collect();
            let mut payload = Vec::new();
            encode_txn_head(&mut payload, 5, 2);
            encode_write(&mut payload, 9, &key, Some(&value[..key_len * 7]));
            encode_write(&mut payload, 10, &key, None);
            let mut seen = 0;
            decode_log_payload(&payload, FORMAT_VERSION, |_, writes| {
                seen += 1;
                assert_eq!(writes.len(), 2);
                assert_eq!((writes[0].table, writes[0].key), (9, &key[..]));
                assert!(
                    matches!(writes[0].change, Change::Put(put) if put == &value[..key_len * 7])
                );
                assert_eq!((writes[1].table, writes[1].key), (10, &key[..]));
                assert!(matches!(writes[1].change, Change::Delete));
            })
            .unwrap();
            assert_eq!(seen, 1, "key of {key_len} bytes");
        }
    }

    #[test]
    fn a_header_from_the_payloads_checksum_equals_one_computed_over_it() {
        for len in [0usize, 1, 7, 64, 4099] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
            assert_eq!(
                block_header_of_checksummed(BlockKind::Log, 0, 42, len, crc32c(&payload)),
                block_header(BlockKind::Log, 42, &payload)
            );
        }
    }

    #[test]
    fn blocks_round_trip_with_and_without_lz4() {
        for lz4 in [false, true] {
            let mut file =
                encode_file_header(FileKind::Segment, FileHeader { a: 1, b: 2, c: 3 }).to_vec();
            let payload: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 7).to_le_bytes()).collect();
            encode_block(&mut file, BlockKind::Log, 42, &payload, lz4);
            encode_block(&mut file, BlockKind::Log, 43, b"", lz4);
            let header = decode_file_header(FileKind::Segment, &file, "f").unwrap();
            assert_eq!(header, FileHeader { a: 1, b: 2, c: 3 });
            let mut reader = BlockReader::new(&file);
            let block = reader.next_block().unwrap().unwrap();
            assert_eq!(
                (block.kind, block.mark, &*block.payload),
                (BlockKind::Log, 42, &payload[..])
            );
            assert_eq!(reader.next_block().unwrap().unwrap().mark, 43);
            assert!(reader.next_block().unwrap().is_none());
        }
    }

    #[test]
    fn a_cut_or_zeroed_tail_is_torn_and_a_flipped_byte_in_the_middle_is_corrupt() {
        let mut file =
            encode_file_header(FileKind::Segment, FileHeader { a: 0, b: 0, c: 0 }).to_vec();
        encode_block(&mut file, BlockKind::Log, 1, &[7u8; 100], false);
        let second = file.len();
        encode_block(&mut file, BlockKind::Log, 2, &[8u8; 100], false);
        for cut in second + 1..file.len() {
            let mut reader = BlockReader::new(&file[..cut]);
            reader.next_block().unwrap().unwrap();
            assert!(
                matches!(reader.next_block(), Err(Damage::Torn { offset, .. }) if offset == second)
            );
        }
        let mut zeroed = file.clone();
        zeroed[second..].fill(0);
        let mut reader = BlockReader::new(&zeroed);
        reader.next_block().unwrap().unwrap();
        assert!(reader.next_block().unwrap().is_none(), "zeros after the last block: a clean end");
        let mut garbage = file.clone();
        garbage[second + 40..].fill(0xEE);
        let mut reader = BlockReader::new(&garbage);
        reader.next_block().unwrap().unwrap();
        assert!(
            matches!(reader.next_block(), Err(Damage::Torn { .. })),
            "garbage with nothing valid after it"
        );
        let mut flipped = file.clone();
        flipped[FILE_HEADER_BYTES + BLOCK_HEADER_BYTES + 5] ^= 1;
        assert!(matches!(
            BlockReader::new(&flipped).next_block(),
            Err(Damage::Corrupt { offset: FILE_HEADER_BYTES, .. })
        ));
        let mut last = file.clone();
        let end = last.len();
        last[end - 1] ^= 1;
        let mut reader = BlockReader::new(&last);
        reader.next_block().unwrap().unwrap();
        assert!(
            matches!(reader.next_block(), Err(Damage::Torn { .. })),
            "a bad last block is a torn write"
        );
    }

    /// A segment of `salt` holding blocks with marks `marks`, each salted.
    fn salted_segment(salt: u32, sequence: u64, marks: &[u64]) -> Vec<u8> {
        let header = FileHeader { a: 1, b: 2, c: sequence };
        let mut file = encode_salted_file_header(FileKind::Segment, header, salt).to_vec();
        for &mark in marks {
            let payload = [mark as u8; 300];
            file.extend_from_slice(&salted(block_header(BlockKind::Log, mark, &payload), salt));
            file.extend_from_slice(&payload);
        }
        file
    }

    fn marks(file: &[u8]) -> (Vec<u64>, Result<(), Damage>) {
        let mut reader = BlockReader::new(file);
        let mut marks = Vec::new();
        loop {
            match reader.next_block() {
                Ok(Some(block)) => marks.push(block.mark),
                Ok(None) => return (marks, Ok(())),
                Err(damage) => return (marks, Err(damage)),
            }
        }
    }

    /// A segment file taken over from an older one keeps the old blocks after the new: they
    /// fail the new salt, so reading stops at the new blocks' end as a torn tail (a crash's),
    /// never reading an old block as new and never calling the old ones corruption. Unsalted
    /// (the same salt), the old blocks would be read as the segment's own.
    #[test]
    fn a_reused_segments_old_blocks_fail_its_salt() {
        let old = salted_segment(0xA5A5_0001, 1, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(file_salt(&old), 0xA5A5_0001);
        assert_eq!(marks(&old), (vec![1, 2, 3, 4, 5, 6], Ok(())));
        let new = salted_segment(0x0BAD_CAFE, 9, &[10, 11]);
        let mut reused = old.clone();
        reused[..new.len()].copy_from_slice(&new);
        let (read, end) = marks(&reused);
        assert_eq!(read, vec![10, 11], "only the new segment's blocks");
        assert!(
            matches!(end, Err(Damage::Torn { offset, .. }) if offset == new.len()),
            "the old blocks read as a torn tail: {end:?}"
        );
        // A block of the new segment after damage is still found: corruption.
        let mut damaged = reused.clone();
        damaged[FILE_HEADER_BYTES + 40] ^= 1;
        assert!(matches!(
            marks(&damaged).1,
            Err(Damage::Corrupt { offset: FILE_HEADER_BYTES, .. })
        ));
        // Without a salt to tell them apart, the old blocks pass for the new segment's.
        let mut same = salted_segment(0x0BAD_CAFE, 1, &[1, 2, 3, 4, 5, 6]);
        same[..new.len()].copy_from_slice(&new);
        assert_eq!(marks(&same).0, vec![10, 11, 3, 4, 5, 6]);
        // Files of format 4 and checkpoint files have no salt.
        let plain = encode_file_header(FileKind::Checkpoint, FileHeader { a: 0, b: 0, c: 0 });
        assert_eq!(file_salt(&plain), 0);
        let mut v4 = plain;
        v4[8..12].copy_from_slice(&4u32.to_le_bytes());
        v4[32..36].copy_from_slice(&7u32.to_le_bytes());
        assert_eq!(file_salt(&v4), 0, "bytes 32..36 mean nothing before format 5");
    }

    #[test]
    fn format_1_tids_keep_their_epoch_and_sequence() {
        let v1 = |epoch: u64, sequence: u64| (epoch << 24) | sequence;
        for (epoch, sequence) in
            [(0, 0), (1, 1), (5, 7), (123_456, Tid::SEQUENCE_MAX), ((1 << 36) - 1, 3)]
        {
            let tid = Tid::from_u64(tid_from_file(1, v1(epoch, sequence)).unwrap());
            assert_eq!((tid.epoch().0, tid.sequence()), (epoch, sequence));
        }
        assert!(tid_from_file(1, v1(9, Tid::SEQUENCE_MAX + 1)).is_err());
        assert_eq!(tid_from_file(2, 12345), Ok(12345));
        // Order is kept: v1 TIDs compare as their conversions do.
        let (a, b) = (v1(3, 900), v1(4, 2));
        assert!(tid_from_file(1, a).unwrap() < tid_from_file(1, b).unwrap());
    }

    #[test]
    fn log_and_catalog_records_round_trip() {
        let mut payload = Vec::new();
        encode_txn_head(&mut payload, 99, 2);
        encode_write(&mut payload, 3, b"k", Some(b"value"));
        encode_write(&mut payload, 4, b"gone", None);
        let mut seen = Vec::new();
        decode_log_payload(&payload, FORMAT_VERSION, |tid, writes| {
            seen.push((
                tid,
                writes
                    .iter()
                    .map(|w| {
                        let value = match w.change {
                            Change::Put(value) => Some(value.to_vec()),
                            Change::Delete => None,
                            Change::Patch(_) => panic!("no patch was written"),
                        };
                        (w.table, w.key.to_vec(), value)
                    })
                    .collect::<Vec<_>>(),
            ));
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![(
                99,
                vec![(3, b"k".to_vec(), Some(b"value".to_vec())), (4, b"gone".to_vec(), None)]
            )]
        );
        assert!(
            decode_log_payload(&payload[..payload.len() - 1], FORMAT_VERSION, |_, _| {}).is_err()
        );
        // A key longer than any index holds is a malformed record (the index would refuse it).
        for (len, fits) in [(INDEX_KEY_BYTES_MAX, true), (INDEX_KEY_BYTES_MAX + 1, false)] {
            let mut payload = Vec::new();
            encode_txn_head(&mut payload, 99, 1);
            let key = vec![1u8; len];
            encode_write(&mut payload, 3, &key, Some(b"v"));
            assert_eq!(decode_log_payload(&payload, FORMAT_VERSION, |_, _| {}).is_ok(), fits);
        }
        let record = CatalogRecord::Create {
            table: 7,
            name: "t".into(),
            indexes: vec![IndexRecord { name: "i".into(), unique: true, definition: vec![1, 2] }],
        };
        assert_eq!(decode_catalog(&encode_catalog(&record)), Some(record));
        assert_eq!(
            decode_catalog(&encode_catalog(&CatalogRecord::Drop { table: 2 })),
            Some(CatalogRecord::Drop { table: 2 })
        );
        let record = CatalogRecord::Rows {
            table: 4,
            tid: 1 << 40,
            rows: vec![(b"table:t".to_vec(), Some(b"{}".to_vec())), (b"table:u".to_vec(), None)],
        };
        let encoded = encode_catalog(&record);
        assert_eq!(decode_catalog(&encoded), Some(record));
        assert_eq!(decode_catalog(&encoded[..encoded.len() - 1]), None);
        // A key longer than any index holds is a malformed record here too.
        let long = CatalogRecord::Rows {
            table: 4,
            tid: 1,
            rows: vec![(vec![1u8; INDEX_KEY_BYTES_MAX + 1], None)],
        };
        assert_eq!(decode_catalog(&encode_catalog(&long)), None);
    }

    /// The patch of `old` to `new` through the log's bytes, if `diff_rows` makes one.
    fn logged_patch(old: &[u8], new: &[u8], version: u32) -> Option<Vec<u8>> {
        let mut edits = Vec::new();
        let body = diff_rows(old, new, &mut edits)?;
        let mut payload = Vec::new();
        encode_txn_head(&mut payload, 7, 1);
        encode_patch(&mut payload, 2, b"key", new, &edits, body);
        let mut patched = None;
        decode_log_payload(&payload, version, |_, writes| {
            let Change::Patch(patch) = writes[0].change else { panic!("a patch was written") };
            let mut row = old.to_vec();
            patch.apply(&mut row);
            assert_eq!(patch.body_len(), body, "diff_rows tells the body's length");
            let mut copy = vec![0; patch.body_len()];
            patch.write_body_into(&mut copy);
            assert_eq!(Patch::decode(&copy), Some(patch));
            patched = Some(row);
        })
        .unwrap();
        patched
    }

    #[test]
    fn patches_carry_the_changed_words_and_no_more_than_half_a_row() {
        let old: Vec<u8> = (0..204u8).collect();
        let mut new = old.clone();
        new[3] = 250;
        new[13] = 251; // one equal word between: one edit
        new[203] = 252; // the last, short word, after the last whole block
        let mut edits = Vec::new();
        assert_eq!(diff_rows(&old, &new, &mut edits), Some(8 + (8 + 16) + (8 + 4)));
        assert_eq!(edits, vec![(0, 16), (200, 4)]);
        assert_eq!(logged_patch(&old, &new, FORMAT_VERSION), Some(new.clone()));
        // An unchanged row is a patch of no edits.
        assert_eq!(logged_patch(&old, &old, FORMAT_VERSION), Some(old.clone()));
        // Most of the row, a changed length, or a short row: the whole row instead.
        let mut most = old.clone();
        most[..120].fill(0xee);
        assert_eq!(diff_rows(&old, &most, &mut edits), None);
        assert_eq!(diff_rows(&old, &old[..203], &mut edits), None);
        let short = &old[..PATCH_ROW_BYTES_MIN - 1];
        let mut changed = short.to_vec();
        changed[0] = 0xee;
        assert_eq!(diff_rows(short, &changed, &mut edits), None);
        assert_eq!(edits, vec![(0, 16), (200, 4)], "a refused diff leaves the edits as they were");
        // Formats before 4 have no patches: one there is a malformed record.
        let mut payload = Vec::new();
        encode_txn_head(&mut payload, 7, 1);
        encode_patch(&mut payload, 2, b"key", &new, &[(0, 16), (200, 4)], 44);
        assert!(decode_log_payload(&payload, PATCHES - 1, |_, _| {}).is_err());
        assert!(decode_log_payload(&payload, PATCHES, |_, _| {}).is_ok());
    }

    #[test]
    fn patches_whose_edits_leave_the_row_or_overlap_are_malformed() {
        let body = |row_len: u32, edits: &[(u32, &[u8])]| {
            let mut body = Vec::new();
            body.extend_from_slice(&row_len.to_le_bytes());
            body.extend_from_slice(&(edits.len() as u32).to_le_bytes());
            for (offset, bytes) in edits {
                body.extend_from_slice(&offset.to_le_bytes());
                body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                body.extend_from_slice(bytes);
            }
            body
        };
        assert!(Patch::decode(&body(16, &[(0, b"ab"), (8, b"cdefghij")])).is_some());
        assert!(Patch::decode(&body(16, &[(9, b"cdefghij")])).is_none(), "past the row's end");
        assert!(Patch::decode(&body(16, &[(4, b"abc"), (6, b"d")])).is_none(), "overlapping");
        assert!(Patch::decode(&body(16, &[(8, b"ab"), (0, b"c")])).is_none(), "out of order");
        assert!(Patch::decode(&body(16, &[(2, b"")])).is_none(), "empty edit");
        assert!(Patch::decode(&body(u32::MAX, &[(u32::MAX - 1, b"ab")])).is_none());
        let mut long = body(16, &[(0, b"ab")]);
        long.push(0);
        assert!(Patch::decode(&long).is_none(), "bytes after the last edit");
        assert!(Patch::decode(&long[..7]).is_none(), "a cut head");
    }

    proptest::proptest! {
        #[test]
        fn a_logged_patch_rebuilds_the_new_row(
            old in proptest::collection::vec(proptest::num::u8::ANY, 100..400),
            changes in proptest::collection::vec(
                (proptest::num::usize::ANY, proptest::num::u8::ANY),
                0..12,
            ),
        ) {
            let mut new = old.clone();
            for (at, byte) in changes {
                if !new.is_empty() {
                    let len = new.len();
                    new[at % len] = byte;
                }
            }
            if let Some(row) = logged_patch(&old, &new, FORMAT_VERSION) {
                proptest::prop_assert_eq!(row, new);
            }
        }
    }

    #[test]
    fn manifests_round_trip_and_detect_damage() {
        let manifest = Manifest { run: 3, checkpoint: Some((100, 4)), voids: vec![(5, 6)] };
        let text = manifest.encode();
        assert_eq!(Manifest::decode(text.as_bytes(), "m").unwrap(), manifest);
        let damaged = text.replace("run 3", "run 4");
        assert!(matches!(Manifest::decode(damaged.as_bytes(), "m"), Err(Error::Corrupt { .. })));
        assert!(manifest.is_void(5) && manifest.is_void(6) && !manifest.is_void(7));
    }

    /// A padded, salted segment of version `version`: its first block (round 0, ending it),
    /// then a page-padded block of 100 bytes for each `(round, ends the round)`.
    fn segment_of_rounds(version: u32, blocks: &[(u64, bool)]) -> Vec<u8> {
        let salt = 0x5EED_F00D;
        let header = FileHeader { a: 1, b: 1, c: 0 };
        let mut data = encode_salted_file_header(FileKind::Segment, header, salt).to_vec();
        data[8..12].copy_from_slice(&version.to_le_bytes());
        let crc = crc32c(&data[0..36]);
        data[36..40].copy_from_slice(&crc.to_le_bytes());
        data.extend_from_slice(&salted(log_block_header(round_flags(0, true), 1, &[]), salt));
        data.resize(PAGE_BYTES, 0);
        for (index, &(round, end)) in blocks.iter().enumerate() {
            let payload = vec![index as u8 + 1; 100];
            let header = log_block_header(round_flags(round, end), round, &payload);
            data.extend_from_slice(&salted(header, salt));
            data.extend_from_slice(&payload);
            data.resize(data.len().next_multiple_of(PAGE_BYTES), 0);
        }
        data
    }

    /// The blocks read before the damage, and the damage.
    fn read_until_damage(data: &[u8]) -> (usize, Option<Damage>) {
        let mut reader = BlockReader::segment(data);
        let mut blocks = 0;
        loop {
            match reader.next_block() {
                Ok(Some(_)) => blocks += 1,
                Ok(None) => return (blocks, None),
                Err(damage) => return (blocks, Some(damage)),
            }
        }
    }

    #[test]
    fn damage_followed_only_by_its_own_round_is_a_torn_tail_and_by_a_later_round_corruption() {
        let blocks = [(1, false), (1, true), (2, false), (2, false), (2, true)];
        let torn = |damage: &Option<Damage>| matches!(damage, Some(Damage::Torn { .. }));
        let corrupt = |damage: &Option<Damage>| matches!(damage, Some(Damage::Corrupt { .. }));
        // `damaged` is the index of the block (after the segment's first) whose first sector
        // is lost; `None` damages the segment's first block.
        let read = |version: u32, blocks: &[(u64, bool)], damaged: Option<usize>| {
            let mut data = segment_of_rounds(version, blocks);
            let at = damaged.map_or(FILE_HEADER_BYTES, |index| (index + 1) * PAGE_BYTES);
            data[at..at + 512].fill(0);
            read_until_damage(&data)
        };
        assert_eq!(read_until_damage(&segment_of_rounds(ROUNDS, &blocks)), (6, None));
        // Within the last round, before its last block: torn, whatever came through after.
        let (read_blocks, damage) = read(ROUNDS, &blocks, Some(3));
        assert!(torn(&damage) && read_blocks == 4, "{damage:?}");
        // The first block of the last round (the block before it ended round 1).
        let (read_blocks, damage) = read(ROUNDS, &blocks, Some(2));
        assert!(torn(&damage) && read_blocks == 3, "{damage:?}");
        // A block of round 1, which was synced before round 2 was written: corruption.
        assert!(corrupt(&read(ROUNDS, &blocks, Some(1)).1));
        assert!(corrupt(&read(ROUNDS, &blocks, Some(0)).1));
        // The segment's first block is synced alone, before any other.
        assert!(corrupt(&read(ROUNDS, &blocks, None).1));
        // The last block lost reads as the end; one of its bytes wrong, as a torn tail.
        assert_eq!(read(ROUNDS, &blocks, Some(4)), (5, None));
        let mut data = segment_of_rounds(ROUNDS, &blocks);
        data[5 * PAGE_BYTES + BLOCK_HEADER_BYTES + 7] ^= 1;
        let (read_blocks, damage) = read_until_damage(&data);
        assert!(torn(&damage) && read_blocks == 5, "{damage:?}");
        // Round numbers wrap: round 2^14 is round 0 again.
        let wrapping = [(16_383, true), (16_384, false), (16_384, true)];
        assert!(torn(&read(ROUNDS, &wrapping, Some(1)).1));
        assert!(corrupt(&read(ROUNDS, &wrapping, Some(0)).1));
        // Segments of earlier formats carry no rounds: any valid block after damage is
        // corruption, as those formats were read before.
        let older: Vec<(u64, bool)> = blocks.iter().map(|_| (0, false)).collect();
        assert!(corrupt(&read(SALTED_SEGMENTS, &older, Some(3)).1));
        let mut data = segment_of_rounds(SALTED_SEGMENTS, &older);
        data[5 * PAGE_BYTES + BLOCK_HEADER_BYTES + 7] ^= 1;
        assert!(torn(&read_until_damage(&data).1));
    }

    /// Random segments of rounds: any loss of sectors of the last round reads as every
    /// earlier block and then a clean end or a torn tail; a flipped byte in a block of an
    /// earlier round is corruption.
    #[test]
    fn random_tears_of_the_last_round_are_torn_tails_and_flips_before_it_corruption() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        let salt = 0xA5A5_0101;
        for _ in 0..400 {
            let header = FileHeader { a: 1, b: 1, c: 0 };
            let mut data = encode_salted_file_header(FileKind::Segment, header, salt).to_vec();
            data.extend_from_slice(&salted(log_block_header(round_flags(0, true), 1, &[]), salt));
            data.resize(PAGE_BYTES, 0);
            // (round, start, payload start, end) of each block after the first.
            let mut blocks = Vec::new();
            let rounds = 1 + next(5);
            for round in 1..=rounds {
                let count = 1 + next(4);
                for index in 0..count {
                    let len = 1 + next(3 * PAGE_BYTES as u64) as usize;
                    let payload: Vec<u8> = (0..len).map(|_| 1 + next(255) as u8).collect();
                    let flags = round_flags(round, index + 1 == count);
                    let start = data.len();
                    data.extend_from_slice(&salted(log_block_header(flags, round, &payload), salt));
                    data.extend_from_slice(&payload);
                    blocks.push((round, start, start + BLOCK_HEADER_BYTES, data.len()));
                    data.resize(data.len().next_multiple_of(PAGE_BYTES), 0);
                }
            }
            let before_last = blocks.iter().filter(|block| block.0 < rounds).count();
            let last_start = blocks[before_last].1;
            // A torn last round: sectors lost at random (a fresh file reads zeros there).
            let mut torn = data.clone();
            let lose = 1 + next(8);
            for sector in (last_start..torn.len()).step_by(512) {
                if next(lose) == 0 {
                    let end = (sector + 512).min(torn.len());
                    torn[sector..end].fill(0);
                }
            }
            let (read, damage) = read_until_damage(&torn);
            assert!(read > before_last, "every block before the last round, and the first");
            assert!(!matches!(damage, Some(Damage::Corrupt { .. })), "{damage:?}");
            // A flip in a block before the last round, where a later round's blocks follow.
            if before_last > 0 {
                let (_, _, payload, end) = blocks[next(before_last as u64) as usize];
                let at = payload + next((end - payload) as u64) as usize;
                let mut flipped = data.clone();
                flipped[at] ^= 1 << next(8);
                let (_, damage) = read_until_damage(&flipped);
                assert!(matches!(damage, Some(Damage::Corrupt { .. })), "{damage:?}");
            }
        }
    }
}
