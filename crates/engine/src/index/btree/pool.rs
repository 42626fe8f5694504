//! Memory for index nodes: 2 MiB chunks, backed by transparent huge pages where the kernel
//! allows (`madvise(MADV_HUGEPAGE)`), carved into nodes of the two node sizes.
//!
//! A lookup in a tree of millions of keys touches a leaf among hundreds of megabytes of
//! leaves; with 4 KiB pages nearly every leaf visit also misses the TLB. With nodes packed into
//! huge pages the TLB covers the whole tree (measured in docs/performance.md). Node allocation
//! happens only on splits and merges, so one mutex-guarded free list per size is enough; freed
//! nodes are reused and chunks are kept for the life of the process.

use std::alloc::{Layout, alloc, handle_alloc_error};
use std::sync::Mutex;

const CHUNK_BYTES: usize = 2 << 20;

#[derive(Debug)]
struct SizeClass {
    bytes: usize,
    free: Vec<usize>,
    chunk: usize,
    chunk_left: usize,
}

// SAFETY: the class only holds addresses of memory it exclusively owns.
unsafe impl Send for SizeClass {}

impl SizeClass {
    const fn new(bytes: usize) -> Self {
        SizeClass { bytes, free: Vec::new(), chunk: 0, chunk_left: 0 }
    }

    fn alloc(&mut self) -> *mut u8 {
        if let Some(block) = self.free.pop() {
            return block as *mut u8;
        }
        if self.chunk_left < self.bytes {
            let layout = Layout::from_size_align(CHUNK_BYTES, CHUNK_BYTES).expect("chunk layout");
            // SAFETY: the layout has a non-zero size.
            let chunk = unsafe { alloc(layout) };
            if chunk.is_null() {
                handle_alloc_error(layout);
            }
            advise_huge_pages(chunk, CHUNK_BYTES);
            self.chunk = chunk as usize;
            self.chunk_left = CHUNK_BYTES;
        }
        let block = self.chunk;
        self.chunk += self.bytes;
        self.chunk_left -= self.bytes;
        block as *mut u8
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

/// Node sizes are 64-byte multiples; each gets a class the first time it is used.
static CLASSES: Mutex<Vec<SizeClass>> = Mutex::new(Vec::new());

/// An uninitialised block of `bytes` (a node size), 64-byte aligned.
pub(crate) fn alloc_node(bytes: usize) -> *mut u8 {
    debug_assert!(bytes.is_multiple_of(64) && bytes <= CHUNK_BYTES);
    let mut classes = CLASSES.lock().unwrap_or_else(|poison| poison.into_inner());
    if let Some(class) = classes.iter_mut().find(|class| class.bytes == bytes) {
        return class.alloc();
    }
    classes.push(SizeClass::new(bytes));
    classes.last_mut().expect("just pushed").alloc()
}

/// Returns a block from [`alloc_node`] of the same size.
///
/// # Safety
/// Nothing reaches `block` any more.
pub(crate) unsafe fn free_node(block: *mut u8, bytes: usize) {
    let mut classes = CLASSES.lock().unwrap_or_else(|poison| poison.into_inner());
    let class = classes
        .iter_mut()
        .find(|class| class.bytes == bytes)
        .expect("a class for every size allocated");
    class.free.push(block as usize);
}
