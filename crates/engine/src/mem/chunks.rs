//! Memory in 2 MiB chunks, backed by transparent huge pages where the kernel allows
//! (`madvise(MADV_HUGEPAGE)`), carved into blocks of fixed sizes.
//!
//! An OLTP transaction touches a handful of records and index nodes among gigabytes of them;
//! with 4 KiB pages nearly every such access also misses the TLB. Packing index nodes, record
//! heads and versions into huge pages lets the TLB cover the whole database (the gain is
//! measured in docs/performance.md). Each block size has a global free list behind a mutex;
//! index nodes take and give single blocks (splits and merges are rare), and per-worker arenas
//! (`mem::arena`) move blocks in batches, so the lock is taken once per many allocations.
//! Chunks are kept for the life of the process: freed blocks are reused, not returned.
//!
//! RESERVE. The first write to a fresh page costs a page fault and the kernel's zeroing of it
//! (under a hypervisor, often the host's as well): on the reference machine about a fifth of a
//! TPC-C run's time went there (docs/performance.md). [`reserve`] maps and touches chunks ahead
//! of need, as an in-memory server reserves its memory at start-up (Silo's benchmark driver
//! pre-allocates its pool, `dbtest --numa-memory`), so that a database growing into them takes
//! no faults. Reserved chunks are process-wide.
//!
//! PREFAULT. Recovery cannot know ahead how much memory the database it rebuilds will take, so
//! it cannot reserve it all; instead a [`Prefault`] thread keeps a few chunks reserved ahead of
//! its threads, faulting them in only when a core would otherwise idle (`SCHED_IDLE`): while a
//! replaying thread waits for its next segment to be read, or a phase's last table is finished
//! by one thread alone. The kernel's zeroing then takes idle time instead of the replay's.

use std::alloc::{Layout, alloc, handle_alloc_error};
use std::sync::Mutex;

/// Bytes per chunk: one huge page.
pub const CHUNK_BYTES: usize = 2 << 20;

#[derive(Debug)]
struct Class {
    bytes: usize,
    free: Vec<usize>,
    chunk: usize,
    chunk_left: usize,
    /// Blocks carved from chunks so far.
    carved: usize,
}

impl Class {
    fn carve(&mut self) -> usize {
        if self.chunk_left < self.bytes {
            let chunk = take_reserved().unwrap_or_else(map_chunk);
            CARVED_CHUNKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.chunk = chunk;
            self.chunk_left = CHUNK_BYTES;
        }
        let block = self.chunk;
        self.carved += 1;
        self.chunk += self.bytes;
        self.chunk_left -= self.bytes;
        block
    }
}

/// A fresh chunk, advised to be huge pages.
fn map_chunk() -> usize {
    try_map_chunk().unwrap_or_else(|| handle_alloc_error(chunk_layout()))
}

/// A fresh chunk, advised to be huge pages, or `None` when the allocator has none.
fn try_map_chunk() -> Option<usize> {
    // SAFETY: the layout has a non-zero size.
    let start = unsafe { alloc(chunk_layout()) };
    if start.is_null() {
        return None;
    }
    advise_huge_pages(start, CHUNK_BYTES);
    Some(start as usize)
}

fn chunk_layout() -> Layout {
    Layout::from_size_align(CHUNK_BYTES, CHUNK_BYTES).expect("chunk layout")
}

/// Chunks mapped and touched by [`reserve`], not yet carved.
static RESERVED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn take_reserved() -> Option<usize> {
    RESERVED.lock().unwrap_or_else(|poison| poison.into_inner()).pop()
}

/// Bytes of chunks reserved and not yet carved.
pub fn reserved_bytes() -> usize {
    RESERVED.lock().unwrap_or_else(|poison| poison.into_inner()).len() * CHUNK_BYTES
}

/// Why [`reserve`] reserved nothing: the bytes it still needed, and those available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReserveFailed {
    pub requested: usize,
    pub available: usize,
}

/// Tops the reserve up to at least `bytes` (rounded up to whole chunks) of mapped, touched
/// memory for future blocks. Returns the bytes reserved now. Refuses, reserving nothing more,
/// when the top-up is more than the memory the kernel reports available (faulting it in would
/// invite the out-of-memory killer) or the mapping fails.
pub fn reserve(bytes: usize) -> Result<usize, ReserveFailed> {
    let mut reserved = RESERVED.lock().unwrap_or_else(|poison| poison.into_inner());
    let wanted = bytes.div_ceil(CHUNK_BYTES);
    let missing = wanted.saturating_sub(reserved.len());
    if missing == 0 {
        return Ok(reserved.len() * CHUNK_BYTES);
    }
    let requested = missing.saturating_mul(CHUNK_BYTES);
    let available = available_bytes().unwrap_or(usize::MAX);
    let failed = ReserveFailed { requested, available };
    if requested > available {
        return Err(failed);
    }
    let Ok(layout) = Layout::from_size_align(requested, CHUNK_BYTES) else {
        return Err(failed);
    };
    // SAFETY: the layout has a non-zero size.
    let start = unsafe { alloc(layout) };
    if start.is_null() {
        return Err(failed);
    }
    advise_huge_pages(start, requested);
    populate(start, requested);
    let start = start as usize;
    // Popped from the end: the lowest addresses are carved first.
    reserved.extend((0..missing).rev().map(|index| start + index * CHUNK_BYTES));
    Ok(reserved.len() * CHUNK_BYTES)
}

/// The memory the kernel reports available for new allocations (`MemAvailable`), if known.
pub fn available_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|line| line.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Pieces of a reserve smaller than this are faulted in by the calling thread alone.
const POPULATE_PIECE_MIN: usize = 256 << 20;

/// Faults every page of a fresh range in, a piece per core. The kernel's zeroing of fresh
/// pages is the whole cost, and under a hypervisor the host zeroes them too: one thread
/// reserved about half a gigabyte a second on the reference machine, so a benchmark's
/// reserve of 17 GiB took half a minute (docs/performance.md).
fn populate(start: *mut u8, bytes: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    let pieces = cores.min(bytes / POPULATE_PIECE_MIN).max(1);
    if pieces == 1 {
        return populate_piece(start as usize, bytes);
    }
    let piece = (bytes / pieces).next_multiple_of(CHUNK_BYTES);
    let start = start as usize;
    std::thread::scope(|scope| {
        for offset in (0..bytes).step_by(piece) {
            let len = piece.min(bytes - offset);
            let thread = std::thread::Builder::new().name("engram-reserve".into());
            if thread.spawn_scoped(scope, move || populate_piece(start + offset, len)).is_err() {
                populate_piece(start + offset, len);
            }
        }
    });
}

/// Faults in `bytes` at `start`, part of a fresh range that only this call touches.
fn populate_piece(start: usize, bytes: usize) {
    let start = start as *mut u8;
    #[cfg(target_os = "linux")]
    // SAFETY: the range is a fresh allocation of ours; MADV_POPULATE_WRITE only faults it in.
    let unsupported = unsafe {
        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_POPULATE_WRITE) != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
    };
    #[cfg(not(target_os = "linux"))]
    let unsupported = true;
    // Any other failure (no memory) leaves the pages to fault in when first used, rather than
    // forcing them in here for the out-of-memory killer.
    if unsupported {
        // Older kernels: one write per 4 KiB page.
        for offset in (0..bytes).step_by(4096) {
            // SAFETY: in bounds of the fresh allocation, which nothing else reaches yet.
            unsafe { start.add(offset).write_volatile(0) };
        }
    }
}

/// Asks for huge pages for the whole 4 KiB pages inside `bytes` at `start`, memory of the
/// caller's that nothing has touched yet (a large buffer's fresh mapping): its first touches
/// then fault in huge pages, and random reads across it miss the TLB far less.
pub(crate) fn advise_huge_pages_inside(start: *const u8, bytes: usize) {
    const PAGE: usize = 4096;
    let first = (start as usize).div_ceil(PAGE) * PAGE;
    let end = (start as usize).saturating_add(bytes) / PAGE * PAGE;
    if end > first {
        advise_huge_pages(first as *mut u8, end - first);
    }
}

fn advise_huge_pages(start: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: the range is a fresh allocation of ours; madvise only changes how the kernel
    // backs it, and a failure (huge pages disabled) leaves ordinary pages.
    unsafe {
        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

/// Keeps chunks reserved ahead of need while it lives, faulting each in on a thread of its own
/// that the scheduler runs only when a core has nothing else to run (`SCHED_IDLE` on Linux;
/// elsewhere nothing is done). It keeps as many ahead as have been carved since it started, at
/// least `PREFAULT_AHEAD_MIN` bytes and at most `ahead_max`, so that a small database is not
/// given far more than it takes, and a large one at most `ahead_max` more. The chunks are the
/// process-wide reserve's: carving takes them first, and those left when it stops stay
/// reserved for later blocks.
#[derive(Debug)]
pub struct Prefault {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Chunks carved from the reserve or freshly mapped, in all: what `Prefault` keeps pace with.
static CARVED_CHUNKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The least a `Prefault` keeps ahead.
pub const PREFAULT_AHEAD_MIN: usize = 16 << 20;

/// The memory a `Prefault` leaves to others: it stops adding chunks once the kernel reports
/// less than this available.
const PREFAULT_SPARE_BYTES_MIN: usize = 1 << 30;

impl Prefault {
    /// Starts keeping chunks ahead, up to `ahead_max` bytes (at least `PREFAULT_AHEAD_MIN`).
    pub fn start(ahead_max: usize) -> Prefault {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let thread = cfg!(target_os = "linux").then(|| {
            let stop = stop.clone();
            let carved_before = CARVED_CHUNKS.load(Ordering::Relaxed);
            let (least, most) = (PREFAULT_AHEAD_MIN / CHUNK_BYTES, ahead_max / CHUNK_BYTES);
            std::thread::Builder::new().name("engram-prefault".into()).spawn(move || {
                if !run_when_idle() {
                    return;
                }
                // The available memory is read once per this many chunks (a read of
                // `/proc/meminfo` costs about what faulting a chunk in does).
                const CHECK_EVERY: usize = 32;
                let mut until_check = 0;
                while !stop.load(Ordering::Relaxed) {
                    let carved = CARVED_CHUNKS.load(Ordering::Relaxed) - carved_before;
                    let wanted = carved.clamp(least, most.max(least));
                    let have = RESERVED.lock().unwrap_or_else(|poison| poison.into_inner()).len();
                    if have >= wanted {
                        std::thread::park_timeout(std::time::Duration::from_millis(1));
                        continue;
                    }
                    if until_check == 0 {
                        if available_bytes().is_some_and(|bytes| bytes < PREFAULT_SPARE_BYTES_MIN) {
                            return;
                        }
                        until_check = CHECK_EVERY;
                    }
                    until_check -= 1;
                    // Out of memory: the database's own allocations will say so, not this.
                    let Some(chunk) = try_map_chunk() else { return };
                    populate_piece(chunk, CHUNK_BYTES);
                    // Reserved even when stopped meanwhile: it is faulted in and kept.
                    RESERVED.lock().unwrap_or_else(|poison| poison.into_inner()).push(chunk);
                }
            })
        });
        Prefault { stop, thread: thread.and_then(Result::ok) }
    }
}

/// Stops the thread without waiting for it: it may be in the middle of a chunk, which on a busy
/// machine an idle-class thread can take long to finish. It reserves that chunk and adds no
/// other.
impl Drop for Prefault {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
        }
    }
}

/// Puts the calling thread in the scheduler's idle class; false where that is not possible.
fn run_when_idle() -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: changes only the calling thread's (pid 0) scheduling class, downwards, which
        // needs no privilege.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// One class per block size ever used (a few dozen at most).
static CLASSES: Mutex<Vec<Class>> = Mutex::new(Vec::new());

fn with_class<T>(bytes: usize, body: impl FnOnce(&mut Class) -> T) -> T {
    assert!(bytes > 0 && bytes.is_multiple_of(16) && bytes <= CHUNK_BYTES, "block size {bytes}");
    let mut classes = CLASSES.lock().unwrap_or_else(|poison| poison.into_inner());
    let index = match classes.iter().position(|class| class.bytes == bytes) {
        Some(index) => index,
        None => {
            classes.push(Class { bytes, free: Vec::new(), chunk: 0, chunk_left: 0, carved: 0 });
            classes.len() - 1
        }
    };
    body(&mut classes[index])
}

/// Bytes of blocks in use in this process: carved from chunks and not on a free list (blocks
/// that workers' arenas cache count as in use). Record heads, versions and index nodes of
/// every open database; what a database frees is reused, so this is the memory the engine
/// needs, sampled over time by the benchmarks (Wu et al.'s memory figures).
pub fn in_use_bytes() -> usize {
    let classes = CLASSES.lock().unwrap_or_else(|poison| poison.into_inner());
    classes.iter().map(|class| (class.carved - class.free.len()) * class.bytes).sum()
}

/// An uninitialised block of `bytes` (a multiple of 16), aligned to the largest power of two
/// dividing `bytes`, up to 64.
pub fn alloc_block(bytes: usize) -> *mut u8 {
    with_class(bytes, |class| class.free.pop().unwrap_or_else(|| class.carve())) as *mut u8
}

/// Appends `count` blocks of `bytes` to `out`.
pub fn alloc_blocks(bytes: usize, count: usize, out: &mut Vec<*mut u8>) {
    with_class(bytes, |class| {
        for _ in 0..count {
            let block = class.free.pop().unwrap_or_else(|| class.carve());
            out.push(block as *mut u8);
        }
    });
}

/// Returns a block from [`alloc_block`] or [`alloc_blocks`] of the same size.
///
/// # Safety
/// Nothing reaches `block` any more.
pub unsafe fn free_block(block: *mut u8, bytes: usize) {
    with_class(bytes, |class| class.free.push(block as usize));
}

/// Returns blocks of one size.
///
/// # Safety
/// Nothing reaches any of the blocks any more.
pub unsafe fn free_blocks(bytes: usize, blocks: impl Iterator<Item = *mut u8>) {
    with_class(bytes, |class| class.free.extend(blocks.map(|block| block as usize)));
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A range of two pieces (faulted in on two threads where there are two cores) is resident
    /// page by page afterwards, as `mincore` sees it.
    #[test]
    fn populate_faults_in_every_page_of_a_range_split_among_threads() {
        let bytes = 2 * POPULATE_PIECE_MIN;
        let layout = Layout::from_size_align(bytes, CHUNK_BYTES).unwrap();
        // SAFETY: a non-zero layout.
        let start = unsafe { alloc(layout) };
        assert!(!start.is_null());
        let pages = bytes / 4096;
        let mut resident = vec![0u8; pages];
        // SAFETY: `start..start + bytes` is our mapping; `resident` holds a byte per page.
        let before = unsafe {
            libc::mincore(start as *mut libc::c_void, bytes, resident.as_mut_ptr());
            resident.iter().filter(|&&page| page & 1 == 1).count()
        };
        populate(start, bytes);
        // SAFETY: as above.
        unsafe { libc::mincore(start as *mut libc::c_void, bytes, resident.as_mut_ptr()) };
        let after = resident.iter().filter(|&&page| page & 1 == 1).count();
        assert_eq!(after, pages, "every page resident ({before} before)");
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(start, layout) };
    }
}
