//! Byte formats of the data directory; `docs/format.md` has them as tables. All integers are
//! little-endian. Every file starts with a 40-byte header and continues with CRC32C-framed
//! blocks; a reader classifies a bad block as a torn tail (the end of a file whose last write
//! did not finish) or as corruption, and the caller decides which it may accept.

use crate::error::{Error, Result};
use crate::storage::Tid;
use crate::sync::Epoch;
use std::borrow::Cow;

mod catalog;
mod records;

pub use catalog::*;
pub use records::*;

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
mod tests;
