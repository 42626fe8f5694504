//! Every limit in the engine, named, with where it comes from. Relations between limits are
//! checked at compile time.

/// Longest user key (primary or secondary), in bytes. MOT's limit; long enough for composite
/// keys of a few strings, short enough that an index node holds several of the longest.
pub const KEY_BYTES_MAX: usize = 256;

/// Longest index entry key: a secondary entry is the order-preserving encoding of the
/// secondary key (groups of 8 bytes and a marker: `index::key::encoded_bytes_len`, which
/// checks this sum) followed by the primary key and, under physical index pointers, the version
/// it names.
pub const INDEX_KEY_BYTES_MAX: usize =
    (KEY_BYTES_MAX / 8 + 1) * 9 + KEY_BYTES_MAX + VERSION_SUFFIX_BYTES;

/// Under physical index pointers (`storage::table`), the bytes at the end of an entry key that
/// name its version.
pub const VERSION_SUFFIX_BYTES: usize = 8;

/// Longest value. Larger rows belong in a blob store, not in an OLTP record.
pub const VALUE_BYTES_MAX: usize = 1 << 20;

/// Worker slots in the epoch table: concurrently open transactions. The ticker scans them all
/// every epoch (1,024 cache lines every 40 ms is negligible).
pub const WORKERS_MAX: usize = 1024;

/// Optimistic attempts an index operation makes before it takes latches pessimistically. Each
/// failed attempt means another thread changed a node on our path; 32 in a row is contention
/// that optimism does not win.
pub const INDEX_RESTARTS_OPTIMISTIC_MAX: u32 = 32;

/// Tables in one database. Table ids are dense indexes into the catalog.
pub const TABLES_MAX: usize = 4096;

/// Secondary indexes on one table.
pub const SECONDARY_INDEXES_MAX: usize = 32;

const _: () = assert!(INDEX_KEY_BYTES_MAX < u16::MAX as usize);
const _: () = assert!(VALUE_BYTES_MAX < (1 << 31), "value lengths are stored in 31 bits");
const _: () = assert!(WORKERS_MAX <= u16::MAX as usize);
