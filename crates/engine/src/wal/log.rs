//! Epoch group commit (Silo §4.10): per-worker log buffers, logger threads, the durable epoch,
//! and waiting for it.
//!
//! A committing worker appends its transaction's record (the TID and the new row images) to
//! its slot's buffer *before* it leaves the commit (`EpochManager::leave_commit`), so once the
//! stable epoch reaches `e`, every record of an epoch at or below `e` is in some buffer. A
//! logger wakes after each epoch tick, reads the stable epoch `s`, takes the buffers of its
//! workers, writes them as blocks whose last one carries the mark `s`, fsyncs, and publishes
//! `s` as its durable epoch. Each such write is a round, and every block carries its round's
//! number (format 6, `format::ROUNDS`): a crash can leave only the last round incomplete, with
//! its pages written in any order, and a reader tells that from corruption by the rounds. With nothing to write it writes the mark alone only while a
//! record it wrote may be above its mark, someone waits for a newer epoch (the `demand`) or
//! another logger's mark is ahead of its own, so an idle database does no I/O; its durable
//! epoch then stays at the last mark written. The database's durable epoch is the minimum over loggers. Records
//! of epochs above a logger's mark may already be in its file; recovery ignores everything above
//! the durable epoch it computes from the marks.
//!
//! Waiting never spins: a blocking wait sleeps on a condition variable, an async wait parks its
//! `Waker`, and the logger wakes both after each fsync.
//!
//! EPOCHS ON DEMAND. A commit that waits for durability waits first for its epoch to end,
//! on average half an interval. With `Config::epoch_min_us` set, a waiter raises the log's
//! `demand` (the newest epoch someone waits for) and wakes the epoch ticker, which ends the
//! epoch as soon as it is `epoch_min_us` old instead of at the interval: group commit then
//! takes what arrived while the previous fsync ran, as PostgreSQL's does, and an idle server
//! still ticks only at the interval. The floor bounds how fast epochs are used up (the TID
//! word's 38-bit epoch field lasts 8.7 years of back-to-back 1 ms epochs).
//!
//! SPARE SEGMENTS. A segment that a checkpoint supersedes is renamed `wal/spare-N.log` instead of
//! removed, while the spares hold no more than the checkpoint superseded (the log it expects until
//! the next checkpoint, at most `Config::log_spare_bytes`), and the next new segment
//! takes it over (`Storage::reuse_log`): its first page is rewritten and synced, and then it is
//! renamed, as PostgreSQL recycles its WAL files. Writing over blocks the file system has already
//! written is cheaper than writing into fresh preallocated space, which the file system must mark
//! written at each fsync (and a thin-provisioned virtual disk must allocate): on the two-core
//! machine TPC-C's durable p99 fell by about 3 ms of 87, while its throughput moved within the
//! noise (docs/performance.md, "Spare segments"). `Config::log_reserve_bytes` writes spares of
//! zeros when the database opens, so that a new database's log starts as a long-running one's does.
//! The old blocks left in a taken-over file fail its new segment's salt (format 5), so readers stop
//! at the segment's end as they stop at zeros; before a logger moves on to its next segment it cuts
//! the old bytes off, so that only a logger's newest segment can end in them.

use super::WriteFailure;
use super::format::{self, BlockKind, FileHeader, FileKind, Sink};
use super::storage::{Storage, StorageFile};
use crate::error::{Error, Result};
use crate::sync::shim::{AtomicBool, AtomicU64, Condvar, Mutex, MutexGuard, Ordering};
use crate::sync::{Epoch, EpochManager};
use crossbeam_utils::CachePadded;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::Duration;

/// When a commit is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Nothing is logged. A crash loses every commit since the last checkpoint.
    Off,
    /// Commits are logged and fsynced per epoch; a commit is durable (and should be
    /// acknowledged) once its epoch is. A crash loses no durable commit.
    #[default]
    Epoch,
}

impl std::str::FromStr for Durability {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "off" => Ok(Durability::Off),
            "epoch" => Ok(Durability::Epoch),
            other => Err(format!("unknown durability \"{other}\": use off or epoch")),
        }
    }
}

/// The size and alignment of the chunk a worker takes when it has filled one: one 2 MiB huge
/// page, so that the logger's `O_DIRECT` writes pin and release one page per chunk instead of
/// 512 (`LogChunk::layout`). A chunk is full at half its capacity (`LogChunk::is_full`), which
/// leaves room for a record of up to a mebibyte before it must grow.
const CHUNK_CAPACITY: usize = 2 << 20;
/// The chunk a slot starts with, and the one that replaces a chunk the logger takes before it
/// is full: ordinary pages, touched only as records arrive, so that a slot that logs little
/// (most of a server's 1,024) does not hold a huge page or two.
const SMALL_CHUNK_CAPACITY: usize = 64 << 10;
/// Full chunks a worker may queue before its commits wait for the logger (64 MiB of records
/// in huge chunks), and empty ones it keeps.
const CHUNKS_QUEUED_MAX: usize = 64;

/// A chunk of a worker's log records, laid out as the block the logger writes: page-aligned,
/// with room for the block header before the records and for the zero padding after them
/// (format 3 starts each segment block on a page), so that the logger frames it where it lies
/// and writes it to the `O_DIRECT` segment with no copy. Copying each chunk into the logger's
/// own aligned buffer had cost the logger about half its CPU (docs/performance.md).
pub struct LogChunk {
    start: std::ptr::NonNull<u8>,
    /// Header and records.
    len: usize,
    capacity: usize,
    /// Header, records and padding, once sealed.
    sealed: usize,
    /// CRC32C of the records, which `Log::append` extends over each record as it is written.
    crc: u32,
}

// SAFETY: the chunk owns its allocation alone.
unsafe impl Send for LogChunk {}

impl std::fmt::Debug for LogChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogChunk").field("records", &self.records().len()).finish()
    }
}

impl LogChunk {
    const HEADER: usize = format::BLOCK_HEADER_BYTES;

    /// Page-aligned, or huge-page-aligned when the capacity is whole huge pages.
    fn layout(capacity: usize) -> std::alloc::Layout {
        let align = if capacity.is_multiple_of(CHUNK_CAPACITY) {
            CHUNK_CAPACITY
        } else {
            format::PAGE_BYTES
        };
        std::alloc::Layout::from_size_align(capacity, align).expect("an aligned layout")
    }

    pub(crate) fn with_capacity(bytes: usize) -> LogChunk {
        let capacity = (bytes + Self::HEADER).next_multiple_of(format::PAGE_BYTES);
        // SAFETY: a non-zero, page-aligned layout.
        let start = unsafe { std::alloc::alloc(Self::layout(capacity)) };
        let start = std::ptr::NonNull::new(start)
            .unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout(capacity)));
        if capacity.is_multiple_of(CHUNK_CAPACITY) {
            crate::mem::chunks::advise_huge_pages_inside(start.as_ptr(), capacity);
        }
        // Zeroed after the advice, so that the first touch takes the huge page: `claim` hands
        // out initialized bytes. Chunks are reused (`SlotBuffers::free`), so this is rare.
        // SAFETY: the allocation holds `capacity` bytes.
        unsafe { std::ptr::write_bytes(start.as_ptr(), 0, capacity) };
        LogChunk { start, len: Self::HEADER, capacity, sealed: 0, crc: 0 }
    }

    /// The records appended since the chunk was created or cleared.
    pub fn records(&self) -> &[u8] {
        // SAFETY: `HEADER..len` was claimed (`Sink::claim`) and is initialized.
        unsafe {
            std::slice::from_raw_parts(
                self.start.as_ptr().add(Self::HEADER),
                self.len - Self::HEADER,
            )
        }
    }

    fn is_empty(&self) -> bool {
        self.len == Self::HEADER
    }

    /// Whether the chunk should go to the logger: it holds half its capacity.
    fn is_full(&self) -> bool {
        self.len >= self.capacity / 2
    }

    pub(crate) fn clear(&mut self) {
        self.len = Self::HEADER;
        self.sealed = 0;
        self.crc = 0;
    }

    /// Extends the records' CRC32C over what was appended since the records held `from`
    /// bytes; the bytes were just written, so they are read from the cache.
    fn checksum_from(&mut self, from: usize) {
        let records = self.records();
        let crc = format::crc32c_append(self.crc, &records[from..]);
        self.crc = crc;
    }

    /// The header of the block holding these records, from their running checksum, with
    /// the flags of its round (`format::round_flags`), salted for the segment it goes to.
    fn block_header(&self, flags: u16, mark: u64, salt: u32) -> [u8; format::BLOCK_HEADER_BYTES] {
        let records = self.records();
        debug_assert_eq!(self.crc, format::crc32c(records), "the running checksum");
        let header = format::block_header_of_checksummed(
            BlockKind::Log,
            flags,
            mark,
            records.len(),
            self.crc,
        );
        format::salted(header, salt)
    }

    /// Makes room for `more` bytes after `len`, keeping whole pages beyond for the padding.
    fn reserve(&mut self, more: usize) {
        let needed = (self.len + more).next_multiple_of(format::PAGE_BYTES);
        if needed <= self.capacity {
            return;
        }
        let mut grown = LogChunk::with_capacity(needed.max(self.capacity * 2) - Self::HEADER);
        // SAFETY: both hold at least `len` bytes; they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.start.as_ptr(), grown.start.as_ptr(), self.len)
        };
        grown.len = self.len;
        grown.crc = self.crc;
        std::mem::swap(self, &mut grown);
    }

    /// Writes `header` before the records and zeros after them up to the next page: the chunk
    /// is then a block of whole pages (`sealed`).
    pub(crate) fn seal(&mut self, header: [u8; format::BLOCK_HEADER_BYTES]) {
        self.reserve(0);
        let sealed = self.len.next_multiple_of(format::PAGE_BYTES);
        // SAFETY: `reserve` made `sealed <= capacity`; the header fits before the records.
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), self.start.as_ptr(), Self::HEADER);
            std::ptr::write_bytes(self.start.as_ptr().add(self.len), 0, sealed - self.len);
        }
        self.sealed = sealed;
    }

    /// Appends `bytes` whole.
    fn put(&mut self, bytes: &[u8]) {
        self.claim(bytes.len()).copy_from_slice(bytes);
    }

    /// The sealed block with its padding.
    pub(crate) fn sealed(&self) -> &[u8] {
        // SAFETY: `seal` wrote `0..sealed`.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.sealed) }
    }
}

impl format::Sink for LogChunk {
    #[inline]
    fn claim(&mut self, bytes: usize) -> &mut [u8] {
        if self.len + bytes > self.capacity {
            self.reserve(bytes);
        }
        let at = self.len;
        self.len += bytes;
        // SAFETY: `at..at + bytes` lies inside the allocation, which `with_capacity` zeroed,
        // and the returned borrow of `self` is its only reference.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr().add(at), bytes) }
    }
}

impl Drop for LogChunk {
    fn drop(&mut self) {
        // SAFETY: allocated in `with_capacity` with this layout.
        unsafe { std::alloc::dealloc(self.start.as_ptr(), Self::layout(self.capacity)) };
    }
}

/// One worker's log buffers: the one it appends to, full ones waiting for the logger, and
/// empty ones the logger gave back.
#[derive(Debug)]
struct SlotBuffers {
    current: LogChunk,
    full: Vec<LogChunk>,
    free: Vec<LogChunk>,
}

impl Default for SlotBuffers {
    fn default() -> SlotBuffers {
        SlotBuffers { current: small_chunk(), full: Vec::new(), free: Vec::new() }
    }
}

fn new_chunk() -> LogChunk {
    LogChunk::with_capacity(CHUNK_CAPACITY - LogChunk::HEADER)
}

fn small_chunk() -> LogChunk {
    LogChunk::with_capacity(SMALL_CHUNK_CAPACITY - LogChunk::HEADER)
}

fn spare_path(number: u64) -> String {
    format!("wal/spare-{number:08}.log")
}

/// The number of a spare file's name (`spare-00000012.log`).
pub(crate) fn parse_spare_name(name: &str) -> Option<u64> {
    name.strip_prefix("spare-")?.strip_suffix(".log")?.parse().ok()
}

/// A closed segment and the newest epoch any of its records or marks has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SegmentInfo {
    pub path: String,
    pub max_epoch: u64,
}

pub(crate) fn segment_path(run: u64, logger: usize, sequence: u64) -> String {
    format!("wal/r{run:08}-l{logger:03}-{sequence:08}.log")
}

/// `(run, logger, sequence)` of a segment file name.
pub(crate) fn parse_segment_name(name: &str) -> Option<(u64, usize, u64)> {
    let stem = name.strip_suffix(".log")?;
    let mut parts = stem.split('-');
    let run = parts.next()?.strip_prefix('r')?.parse().ok()?;
    let logger = parts.next()?.strip_prefix('l')?.parse().ok()?;
    let sequence = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((run, logger, sequence))
}

#[derive(Debug, Default)]
struct Failure {
    /// Why the log stopped for good (`Log::fail`: a failed fsync, an I/O error, a panic).
    message: Option<String>,
    no_space: bool,
    /// The loggers (one bit each) whose last write or new segment found the disk full
    /// (`Log::full`), and the newest such error: the log refuses writes until each of them has
    /// written again.
    full: u64,
    full_message: String,
}

/// The shared state of epoch logging.
pub(crate) struct Log {
    storage: Arc<dyn Storage>,
    buffers: Box<[CachePadded<Mutex<SlotBuffers>>]>,
    logger_durable: Box<[CachePadded<AtomicU64>]>,
    durable: CachePadded<AtomicU64>,
    /// Writes are refused: the log stopped (`stopped`), or a logger waits for room.
    failed: AtomicBool,
    /// The log stopped for good (`Log::fail`).
    stopped: AtomicBool,
    failure: Mutex<Failure>,
    wait_lock: Mutex<()>,
    wakeup: Condvar,
    wakers: Mutex<Vec<(u64, Waker)>>,
    /// The newest epoch a waiter waits for (epochs on demand, module comment).
    demand: CachePadded<AtomicU64>,
    /// The epoch ticker, woken when `demand` rises; unset when epochs end only at the interval.
    ticker: OnceLock<Thread>,
    pub(crate) compression: bool,
    pub(crate) segment_bytes: u64,
    pub(crate) run: u64,
    /// Closed segments (of this and earlier runs), oldest first, for removal after checkpoints.
    pub(crate) closed: Mutex<Vec<SegmentInfo>>,
    /// Spare segment files (module comment, SPARE SEGMENTS), the next one to use last.
    spares: Mutex<Vec<String>>,
    /// The most bytes of spares a checkpoint leaves (`Config::log_spare_bytes`).
    spare_bytes_max: u64,
    /// Bytes of spares a checkpoint may always leave (`Config::log_reserve_bytes`).
    spare_bytes_min: u64,
    /// The number the next spare's name takes.
    next_spare: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) stop: AtomicBool,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("durable", &self.durable())
            .field("loggers", &self.logger_durable.len())
            .field("failed", &self.failed.load(Ordering::Relaxed))
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Log {
    pub fn new(
        storage: Arc<dyn Storage>,
        workers: usize,
        loggers: usize,
        durable: Epoch,
        run: u64,
        compression: bool,
        segment_bytes: u64,
    ) -> Log {
        Log {
            storage,
            buffers: (0..workers)
                .map(|_| CachePadded::new(Mutex::new(SlotBuffers::default())))
                .collect(),
            logger_durable: (0..loggers)
                .map(|_| CachePadded::new(AtomicU64::new(durable.0)))
                .collect(),
            durable: CachePadded::new(AtomicU64::new(durable.0)),
            failed: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            failure: Mutex::new(Failure::default()),
            wait_lock: Mutex::new(()),
            wakeup: Condvar::new(),
            wakers: Mutex::new(Vec::new()),
            demand: CachePadded::new(AtomicU64::new(0)),
            ticker: OnceLock::new(),
            compression,
            segment_bytes,
            run,
            closed: Mutex::new(Vec::new()),
            spares: Mutex::new(Vec::new()),
            spare_bytes_max: 0,
            spare_bytes_min: 0,
            next_spare: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    pub fn loggers(&self) -> usize {
        self.logger_durable.len()
    }

    /// The log with superseded segments kept as spares (none by default): up to as many as
    /// the checkpoint superseded, at most `max` bytes, at least `min` (`spare_limit`).
    pub(crate) fn keeping_spares(self, max: u64, min: u64) -> Log {
        Log { spare_bytes_max: max, spare_bytes_min: min, ..self }
    }

    /// Bytes of spares a checkpoint that superseded `superseded` segments leaves: that many
    /// segments, the log written since the checkpoint before, which is what the log should
    /// write again until the next one (as PostgreSQL recycles the WAL it expects to need until
    /// its next checkpoint); within `spare_bytes_max`, and never less than the reserve. So the
    /// spares hold no more than the log held just before the checkpoint: after the first
    /// checkpoint a steady log writes nearly every segment over a spare (bench/results/history.md,
    /// "As many spares as a checkpoint superseded"), and disk use stays at its peak rather than
    /// falling and growing again.
    pub(crate) fn spare_limit(&self, superseded: usize) -> u64 {
        Self::spare_bytes(superseded, self.segment_bytes)
            .min(self.spare_bytes_max)
            .max(self.spare_bytes_min)
    }

    /// Takes up the spare files that a data directory's `wal/` holds (from an earlier run).
    pub(crate) fn adopt_spares(&self, names: &[String]) {
        let mut spares = lock(&self.spares);
        for name in names {
            if let Some(number) = parse_spare_name(name) {
                spares.push(format!("wal/{name}"));
                self.next_spare.fetch_max(number + 1, Ordering::Relaxed);
            }
        }
    }

    /// Bytes the spares are counted as (each for a segment's worth).
    fn spare_bytes(spares: usize, segment_bytes: u64) -> u64 {
        (spares as u64).saturating_mul(segment_bytes)
    }

    /// Writes spare files of zeros until the spares hold `bytes` (whole segments): the log
    /// then writes over blocks the file system has already written, at a steady state's cost
    /// (module comment, SPARE SEGMENTS).
    pub(crate) fn prepare_spares(&self, bytes: u64) -> std::io::Result<()> {
        loop {
            let count = lock(&self.spares).len();
            if Self::spare_bytes(count, self.segment_bytes) >= bytes {
                return Ok(());
            }
            let path = spare_path(self.next_spare.fetch_add(1, Ordering::Relaxed));
            // A logger moves to its next segment after the round that passes the segment's
            // size, so a segment runs past it by up to a round's writes: a quarter more
            // covers the rounds of a busy two-core machine (segments of 71 to 77 MiB).
            if let Err(error) =
                self.storage.prepare_log(&path, self.segment_bytes + self.segment_bytes / 4)
            {
                let _ = self.storage.remove(&path);
                return Err(error);
            }
            lock(&self.spares).push(path);
        }
    }

    /// Keeps the superseded segment at `path` as a spare if the spares then hold at most
    /// `limit` bytes (`spare_limit`); whether it did (otherwise the caller removes it).
    /// (The checkpointer alone calls it; the rename and its directory sync happen outside the
    /// lock, which a logger takes to start a segment.)
    pub(crate) fn keep_as_spare(&self, path: &str, limit: u64) -> bool {
        let count = lock(&self.spares).len();
        if Self::spare_bytes(count + 1, self.segment_bytes) > limit {
            return false;
        }
        let spare = spare_path(self.next_spare.fetch_add(1, Ordering::Relaxed));
        if self.storage.rename(path, &spare).is_err() {
            return false;
        }
        lock(&self.spares).push(spare);
        true
    }

    /// Removes every spare file: a checkpoint found no room, and the space the spares hold is
    /// the first to give back (they only make writing the log cheaper). Spares that cannot be
    /// removed stay listed. Returns how many were removed.
    pub(crate) fn release_spares(&self) -> usize {
        let spares = std::mem::take(&mut *lock(&self.spares));
        let count = spares.len();
        let kept: Vec<String> =
            spares.into_iter().filter(|spare| self.storage.remove(spare).is_err()).collect();
        let released = count - kept.len();
        lock(&self.spares).extend(kept);
        if released > 0 {
            let _ = self.storage.sync_dir("wal");
        }
        released
    }

    fn take_spare(&self) -> Option<String> {
        lock(&self.spares).pop()
    }

    /// Makes waiters wake `ticker` so that it can end their epoch early.
    pub fn end_epochs_on_demand(&self, ticker: Thread) {
        let _ = self.ticker.set(ticker);
    }

    /// The newest epoch a waiter waits for.
    pub fn demand(&self) -> Epoch {
        Epoch(self.demand.load(Ordering::Acquire))
    }

    /// Records that a commit of `epoch` is waited for (an idle logger writes its mark only
    /// for a waiter); wakes the ticker, if epochs end on demand, when that is news.
    fn want(&self, epoch: Epoch) {
        if self.demand.fetch_max(epoch.0, Ordering::AcqRel) < epoch.0
            && let Some(ticker) = self.ticker.get()
        {
            ticker.unpark();
        }
    }

    /// Every commit of an epoch at or below this one is durable.
    #[inline]
    pub fn durable(&self) -> Epoch {
        Epoch(self.durable.load(Ordering::Acquire))
    }

    /// The error new commits get once logging failed, if it has.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(self.error())
    }

    fn error(&self) -> Error {
        let failure = lock(&self.failure);
        let Some(message) = failure.message.clone() else {
            return Error::DiskFull(format!(
                "writes are refused until there is room again; they resume by themselves, and \
                 acknowledged commits are safe: {}",
                failure.full_message
            ));
        };
        if failure.no_space {
            Error::DiskFull(format!(
                "the log stopped, so no more writes are accepted (free space and restart; \
                 acknowledged commits are safe): {message}"
            ))
        } else {
            Error::LogFailed(message)
        }
    }

    /// Stops accepting commits for good and wakes every waiter with the error.
    pub fn fail(&self, message: String, no_space: bool) {
        {
            let mut failure = lock(&self.failure);
            if failure.message.is_none() {
                failure.message = Some(message);
                failure.no_space = no_space;
            }
        }
        self.stopped.store(true, Ordering::Release);
        self.failed.store(true, Ordering::Release);
        self.notify(u64::MAX);
    }

    /// Whether the log stopped for good (`fail`); its loggers end.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Logger `logger` found the disk full before it wrote anything that is relied on:
    /// commits are refused (the one waiting gets `DiskFull`, its outcome unknown) until it
    /// has written again (`room_again`), which it tries at every round.
    pub(crate) fn full(&self, logger: usize, message: String) {
        {
            let mut failure = lock(&self.failure);
            if failure.full & (1 << logger) == 0 {
                tracing::warn!("the log refuses writes until there is room: {message}");
            }
            failure.full |= 1 << logger;
            failure.full_message = message;
            self.failed.store(true, Ordering::Release);
        }
        self.notify(u64::MAX);
    }

    /// Logger `logger` wrote: once no logger waits for room, commits are taken again.
    pub(crate) fn room_again(&self, logger: usize) {
        let mut failure = lock(&self.failure);
        if failure.full & (1 << logger) == 0 {
            return;
        }
        failure.full &= !(1 << logger);
        if failure.full == 0 && failure.message.is_none() {
            tracing::info!("the log has room again and takes writes");
            self.failed.store(false, Ordering::Release);
        }
    }

    /// Appends a committed transaction's record to the worker's buffer: `encode` writes it.
    /// Called inside the commit, before the worker leaves it.
    #[inline]
    pub fn append(&self, slot: usize, encode: impl FnOnce(&mut LogChunk)) {
        let queued = {
            let mut buffers = lock(&self.buffers[slot]);
            let before = buffers.current.records().len();
            encode(&mut buffers.current);
            buffers.current.checksum_from(before);
            if buffers.current.is_full() {
                let next = buffers.free.pop().unwrap_or_else(new_chunk);
                let full = std::mem::replace(&mut buffers.current, next);
                buffers.full.push(full);
            }
            buffers.full.len()
        };
        if queued > CHUNKS_QUEUED_MAX {
            // The logger is behind: wait for it to take the chunks (it does not wait for us).
            while lock(&self.buffers[slot]).full.len() > CHUNKS_QUEUED_MAX / 2
                && !self.failed.load(Ordering::Acquire)
            {
                crate::sync::shim::sleep(Duration::from_micros(100));
            }
        }
    }

    fn notify(&self, durable: u64) {
        drop(lock(&self.wait_lock));
        self.wakeup.notify_all();
        let mut wakers = lock(&self.wakers);
        let mut index = 0;
        while index < wakers.len() {
            if wakers[index].0 <= durable || self.failed.load(Ordering::Acquire) {
                wakers.swap_remove(index).1.wake();
            } else {
                index += 1;
            }
        }
    }

    /// Blocks until `epoch` is durable, or returns the log's failure.
    pub fn wait(&self, epoch: Epoch) -> Result<()> {
        if self.durable() >= epoch {
            return Ok(());
        }
        self.want(epoch);
        let mut guard = lock(&self.wait_lock);
        loop {
            if self.durable() >= epoch {
                return Ok(());
            }
            self.check()?;
            guard = self.wakeup.wait(guard).unwrap_or_else(|poison| poison.into_inner());
        }
    }

    fn poll_durable(&self, epoch: Epoch, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if self.durable() >= epoch {
            return Poll::Ready(Ok(()));
        }
        if let Err(error) = self.check() {
            return Poll::Ready(Err(error));
        }
        self.want(epoch);
        lock(&self.wakers).push((epoch.0, cx.waker().clone()));
        // Re-check after registering: the logger may have published in between.
        if self.durable() >= epoch {
            return Poll::Ready(Ok(()));
        }
        if let Err(error) = self.check() {
            return Poll::Ready(Err(error));
        }
        Poll::Pending
    }

    fn publish(&self, logger: usize, mark: u64) {
        self.logger_durable[logger].store(mark, Ordering::Release);
        let minimum = self
            .logger_durable
            .iter()
            .map(|durable| durable.load(Ordering::Acquire))
            .min()
            .unwrap_or(mark);
        let previous = self.durable.fetch_max(minimum, Ordering::AcqRel);
        if minimum > previous {
            self.notify(minimum);
        }
    }
}

/// Waits for commits to become durable. Cheap to clone; take one per session.
#[derive(Debug, Clone)]
pub struct DurabilityWatcher {
    pub(crate) log: Option<Arc<Log>>,
}

impl DurabilityWatcher {
    /// The durable epoch (`Epoch(u64::MAX)` when nothing is logged: there is nothing to wait for).
    pub fn durable(&self) -> Epoch {
        self.log.as_ref().map_or(Epoch(u64::MAX), |log| log.durable())
    }

    /// The newest epoch anyone has waited for (`Epoch(0)` when nothing is logged).
    pub fn demand(&self) -> Epoch {
        self.log.as_ref().map_or(Epoch(0), |log| log.demand())
    }

    /// Whether a commit of `epoch` is durable.
    pub fn is_durable(&self, epoch: Epoch) -> bool {
        self.durable() >= epoch
    }

    /// Blocks the calling thread until `epoch` is durable. Fails if logging failed (the commit
    /// may or may not survive a crash: it was never acknowledged).
    pub fn wait(&self, epoch: Epoch) -> Result<()> {
        match &self.log {
            Some(log) => log.wait(epoch),
            None => Ok(()),
        }
    }

    /// A future that completes when `epoch` is durable; it parks a `Waker`, never a thread.
    pub fn durable_future(&self, epoch: Epoch) -> DurableFuture {
        DurableFuture { log: self.log.clone(), epoch }
    }
}

/// See [`DurabilityWatcher::durable_future`].
#[derive(Debug)]
pub struct DurableFuture {
    log: Option<Arc<Log>>,
    epoch: Epoch,
}

impl Future for DurableFuture {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        match &self.log {
            Some(log) => log.poll_durable(self.epoch, cx),
            None => Poll::Ready(Ok(())),
        }
    }
}

/// One logger's open segment.
pub(crate) struct Segment {
    file: Box<dyn StorageFile>,
    pub path: String,
    pub sequence: u64,
    pub bytes: u64,
    pub max_epoch: u64,
    /// XORed into the checksum of each block header (format 5, `format::SALTED_SEGMENTS`).
    salt: u32,
    /// Whether the file is a spare's: the old bytes after the segment's end must be cut off
    /// before another segment follows it.
    reused: bool,
    /// The number of the next write round (`format::ROUNDS`): the first block was round 0.
    round: u64,
}

impl Segment {
    /// Creates, syncs and announces (directory sync) a new segment whose first block carries
    /// `mark`, so a logger's stream always has a valid mark. It takes over a spare file when
    /// the log has one, which needs no new room. A fresh file that the disk has no room for
    /// is removed, and the failure is `Full`: nothing in it was relied on.
    pub fn create(
        log: &Log,
        logger: usize,
        loggers: usize,
        sequence: u64,
        mark: u64,
    ) -> std::result::Result<Segment, WriteFailure> {
        let (storage, run) = (&*log.storage, log.run);
        let path = segment_path(run, logger, sequence);
        // Random, so that no block of the file's earlier lives carries it.
        let salt = format::fresh_salt((run, logger, sequence));
        let mut bytes = format::encode_salted_file_header(
            FileKind::Segment,
            FileHeader { a: ((logger as u32) << 16) | loggers as u32, b: run, c: sequence },
            salt,
        )
        .to_vec();
        // The mark's block has no payload: its header is the whole block. It is round 0,
        // written and synced alone.
        bytes.extend_from_slice(&format::salted(
            format::log_block_header(format::round_flags(0, true), mark, &[]),
            salt,
        ));
        // The first page, padded: the logger's blocks start at page boundaries after it.
        bytes.resize(format::PAGE_BYTES, 0);
        let reused = log.take_spare().and_then(|spare| {
            storage
                .reuse_log(&spare, &path, &bytes, log.segment_bytes)
                .map_err(|error| {
                    tracing::warn!(
                        "cannot take over spare {} for a log segment: {error}",
                        storage.describe(&spare)
                    )
                })
                .ok()
        });
        let (file, reused) = match reused {
            Some(file) => (file, true),
            None => {
                let what = "cannot create log segment";
                let made = storage.create_log(&path, log.segment_bytes).and_then(|mut file| {
                    file.append(&bytes)?;
                    Ok(file)
                });
                let mut file = made.map_err(|error| {
                    let _ = storage.remove(&path);
                    WriteFailure::written(storage, &path, what, error)
                })?;
                // Past here a failure is a sync's: the log stops (`WriteFailure`).
                file.sync().map_err(|error| WriteFailure::synced(storage, &path, what, error))?;
                storage
                    .sync_dir("wal")
                    .map_err(|error| WriteFailure::synced(storage, "wal", what, error))?;
                (file, false)
            }
        };
        Ok(Segment {
            file,
            path,
            sequence,
            bytes: bytes.len() as u64,
            max_epoch: mark,
            salt,
            reused,
            round: 1,
        })
    }
}

/// Asks the scheduler to run this thread ahead of the workers (a lower nice value), so that a
/// machine busy with transactions still writes the log promptly: every commit waits on it.
/// Without the privilege to do so the thread keeps the default priority.
fn raise_priority() {
    set_thread_nice(-10);
}

/// Sets the calling thread's nice value (threads it spawns inherit it); without the privilege
/// a raise is ignored.
pub(crate) fn set_thread_nice(nice: i32) {
    // SAFETY: gettid and setpriority on the calling thread have no memory effects.
    unsafe {
        let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, thread, nice);
    }
}

fn io_failure(log: &Log, storage: &dyn Storage, path: &str, what: &str, error: std::io::Error) {
    let no_space = error.raw_os_error() == Some(libc::ENOSPC);
    log.fail(format!("{what} {}: {error}", storage.describe(path)), no_space);
}

/// Stops the log for good with `error` (a `WriteFailure::Failed`'s).
fn fail_with(log: &Log, error: Error) {
    let no_space = matches!(error, Error::DiskFull(_));
    let message = match error {
        Error::DiskFull(message) | Error::Io(message) | Error::LogFailed(message) => message,
        other => other.to_string(),
    };
    log.fail(message, no_space);
}

/// The message of a `WriteFailure::Full`'s error.
fn full_message(error: Error) -> String {
    match error {
        Error::DiskFull(message) => message,
        other => other.to_string(),
    }
}

/// Makes logger `me`'s segment number `sequence`: first, for its run's first segment, the
/// manifest that names the run (`announce`, `DataDir::announce_run`).
fn next_segment(
    log: &Log,
    me: usize,
    sequence: u64,
    mark: u64,
    announce: &dyn Fn() -> std::result::Result<(), WriteFailure>,
) -> std::result::Result<Segment, WriteFailure> {
    announce()?;
    Segment::create(log, me, log.loggers(), sequence, mark)
}

/// The body of logger thread `me`: until stopped, after each wake-up write what its workers
/// logged, fsync, and publish the stable epoch read before taking the buffers.
///
/// A FULL DISK is waited out (docs/durability.md, "A full disk"). Where a round's write, or
/// the logger's first segment, finds no room, nothing it wrote is relied on: the logger cuts
/// the round's bytes off the segment (synced), keeps the round's chunks, and says so
/// (`Log::full`: the waiters get `DiskFull`, new commits are refused); at every later round it
/// tries again with the same chunks and those that came since, and once a round is synced
/// (`Log::room_again`) commits are taken again. A next segment the disk has no room for is
/// tried again after each later round, the logger writing on past the current one's size
/// meanwhile. A failed fsync, or a cut that fails, stops the log for good (`Log::fail`).
/// `segment` is `None` when the disk had no room for it at the open: the logger makes it
/// (after `announce`) once there is.
pub(crate) fn run_logger(
    log: &Log,
    epochs: &EpochManager,
    me: usize,
    segment: Option<Segment>,
    interval: Duration,
    announce: &dyn Fn() -> std::result::Result<(), WriteFailure>,
) {
    let storage = &*log.storage;
    raise_priority();
    let mut taken: Vec<(usize, LogChunk)> = Vec::new();
    // Blocks the logger frames itself: compressed chunks, and a mark with no records.
    let mut frame = new_chunk();
    let mut mark = log.logger_durable[me].load(Ordering::Relaxed);
    // The newest epoch a record already written may carry: the global epoch read after its
    // chunk was taken bounds it. While the mark is below it, the mark is written each round.
    let mut owed = mark;
    let mut segment = segment;
    loop {
        let stopping = log.stop.load(Ordering::Acquire);
        if !stopping {
            crate::sync::shim::park_timeout(interval);
        }
        if log.stopped() {
            return;
        }
        // Read the stable epoch before taking buffers: every record at or below it is in them.
        let stable = epochs.stable().0;
        for slot in (me..log.buffers.len()).step_by(log.loggers()) {
            let mut buffers = lock(&log.buffers[slot]);
            if buffers.current.is_empty() && buffers.full.is_empty() {
                continue;
            }
            let SlotBuffers { current, full, free } = &mut *buffers;
            taken.extend(full.drain(..).map(|chunk| (slot, chunk)));
            if !current.is_empty() {
                let next = free.pop().unwrap_or_else(small_chunk);
                taken.push((slot, std::mem::replace(current, next)));
            }
        }
        if !taken.is_empty() {
            owed = owed.max(epochs.global().0);
        }
        // No segment yet (no room for it at the open): try at every round, whether or not
        // there is anything to write, since until it exists the log takes no commits.
        let segment = match &mut segment {
            Some(segment) => segment,
            None if stopping => return,
            None => match next_segment(log, me, 0, mark, announce) {
                Ok(made) => {
                    log.room_again(me);
                    segment.insert(made)
                }
                Err(WriteFailure::Full(error)) => {
                    log.full(me, full_message(error));
                    continue;
                }
                Err(WriteFailure::Failed(error)) => return fail_with(log, error),
            },
        };
        // Nothing to write, no record written above the mark, nobody waiting for a newer
        // epoch, and no other logger ahead (the durable epoch is the minimum over loggers, so
        // a logger left behind would hold back every other's commits): an idle database
        // writes and syncs nothing (it used to write an empty block and fsync at every epoch,
        // 500 times a second at 2 ms epochs). Waiters raise the demand (`Log::want`), so they
        // are answered at the next round.
        let idle = taken.is_empty()
            && owed <= mark
            && log.demand.load(Ordering::Acquire) <= mark
            && log.logger_durable.iter().all(|other| other.load(Ordering::Acquire) <= mark);
        if (taken.is_empty() && stable <= mark) || idle {
            if stopping {
                // A clean stop gives back the preallocated space after the log's bytes, so
                // that the next recovery neither reads nor scans it. (After a crash the tail
                // keeps its zeros, which readers recognise as the end.)
                if let Err(error) = storage.truncate(&segment.path, segment.bytes) {
                    tracing::warn!(
                        "cannot cut the preallocated end of {}: {error}",
                        storage.describe(&segment.path)
                    );
                }
                return;
            }
            continue;
        }
        let new_mark = stable.max(mark);
        let count = taken.len();
        // Every block of the round carries its number; the last says it ends the round.
        let round = segment.round;
        let flags = |index: usize| format::round_flags(round, index + 1 >= count);
        let mut written = 0u64;
        // A round with nothing taken still writes its mark: the mark is what recovery reads
        // as durable.
        let appended = if count == 0 {
            frame.clear();
            frame.seal(format::salted(
                format::log_block_header(flags(0), new_mark, &[]),
                segment.salt,
            ));
            written += frame.sealed().len() as u64;
            segment.file.append_pages(&[frame.sealed()])
        } else if log.compression {
            // Each chunk is compressed into the frame and written alone.
            let mut appended = Ok(());
            for (index, (_, records)) in taken.iter().enumerate() {
                let block_mark = if index + 1 == count { new_mark } else { mark };
                let raw = records.records();
                frame.clear();
                let compressed = (raw.len() >= 64)
                    .then(|| lz4_flex::block::compress(raw))
                    .filter(|compressed| compressed.len() < raw.len());
                let header = match &compressed {
                    Some(compressed) => {
                        frame.put(compressed);
                        format::lz4_block_header(
                            BlockKind::Log,
                            flags(index),
                            block_mark,
                            compressed,
                            raw.len(),
                        )
                    }
                    None => {
                        frame.put(raw);
                        format::log_block_header(flags(index), block_mark, raw)
                    }
                };
                frame.seal(format::salted(header, segment.salt));
                written += frame.sealed().len() as u64;
                appended = segment.file.append_pages(&[frame.sealed()]);
                if appended.is_err() {
                    break;
                }
            }
            appended
        } else {
            // Each chunk is framed where it lies and the whole round goes out in one write.
            for (index, (_, records)) in taken.iter_mut().enumerate() {
                let block_mark = if index + 1 == count { new_mark } else { mark };
                let header = records.block_header(flags(index), block_mark, segment.salt);
                records.seal(header);
                written += records.sealed().len() as u64;
            }
            let pages: Vec<&[u8]> = taken.iter().map(|(_, records)| records.sealed()).collect();
            segment.file.append_pages(&pages)
        };
        if let Err(error) = appended {
            if error.raw_os_error() != Some(libc::ENOSPC) {
                return io_failure(log, storage, &segment.path, "cannot write log segment", error);
            }
            // Nothing of this round was synced or published: cut off whatever of it reached
            // the file (a stale block of it after a later round's end would read as the log),
            // keep its chunks, and try again at the next round.
            if let Err(error) = segment.file.cut(segment.bytes) {
                let what = "cannot cut a write the disk had no room for from log segment";
                return io_failure(log, storage, &segment.path, what, error);
            }
            let message =
                format!("cannot write log segment {}: {error}", storage.describe(&segment.path));
            log.full(me, message);
            if stopping {
                return;
            }
            continue;
        }
        // Give the chunks back to their workers.
        for (slot, mut records) in taken.drain(..) {
            records.clear();
            let mut buffers = lock(&log.buffers[slot]);
            if buffers.free.len() < CHUNKS_QUEUED_MAX {
                buffers.free.push(records);
            }
        }
        if let Err(error) = segment.file.sync() {
            return io_failure(log, storage, &segment.path, "cannot fsync log segment", error);
        }
        segment.round += 1;
        segment.bytes += written;
        segment.max_epoch = segment.max_epoch.max(epochs.global().0);
        log.bytes_written.fetch_add(written, Ordering::Relaxed);
        mark = new_mark;
        log.publish(me, mark);
        log.room_again(me);
        if segment.bytes >= log.segment_bytes {
            // A spare's old bytes after the segment's end go before the next segment exists:
            // only a logger's newest segment may end in bytes that are not its blocks.
            if segment.reused {
                if let Err(error) = storage.truncate(&segment.path, segment.bytes) {
                    let what = "cannot cut log segment";
                    return io_failure(log, storage, &segment.path, what, error);
                }
                segment.reused = false;
            }
            match next_segment(log, me, segment.sequence + 1, mark, announce) {
                Ok(next) => {
                    let closed = std::mem::replace(segment, next);
                    let info = SegmentInfo { path: closed.path, max_epoch: closed.max_epoch };
                    lock(&log.closed).push(info);
                }
                // The logger writes on in this segment, and tries again after its next round.
                Err(WriteFailure::Full(error)) => tracing::warn!(
                    "no room for a new log segment; {} grows past its size meanwhile: {error}",
                    storage.describe(&segment.path)
                ),
                Err(WriteFailure::Failed(error)) => return fail_with(log, error),
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// Randomized schedules (shuttle) of the group commit: workers that commit as `cc::commit`
/// does (announce the commit, take the global epoch, append the record, leave), the epoch
/// ticker, the loggers of `run_logger` on an in-memory disk, and waiters that block on the
/// condition variable or poll the future. Whatever the interleaving:
/// - a commit is acknowledged only once a crash at that moment would recover it: the durable
///   epoch that recovery computes from the synced marks (the minimum over loggers of each
///   one's last) covers its epoch, and its record is in a synced block of a segment whose
///   directory entry is durable;
/// - the durable epoch the log publishes never runs ahead of that one;
/// - every waiter is answered, with `Ok` or, once the disk fails, the log's error. A waiter
///   left asleep fails the run: as a deadlock in `hand_off`, and in `group_commit`, where the
///   ticker and the loggers keep running, as a run past shuttle's step bound.
///
/// Each of these mutations of the code fails them (checked by hand): reading the
/// stable epoch after taking the buffers; publishing before the fsync; the maximum of the
/// loggers' marks for the minimum; a blocking wait that does not check the durable epoch
/// under its lock; a future that does not check again after parking its waker.
#[cfg(all(test, feature = "shuttle"))]
mod schedules;
