//! A counting global allocator. A test binary installs it with
//! `#[global_allocator] static ALLOCATOR: CountingAllocator = CountingAllocator;` and then reads
//! how many allocations the current thread made and how many bytes are live process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

#[derive(Debug)]
pub struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

fn count(bytes: i64) {
    // `try_with`: the thread-local may already be gone while a thread shuts down.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
    LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

/// Allocations (including reallocations) made by the calling thread so far.
pub fn allocations_this_thread() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes allocated and not yet freed, by every thread.
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Ordering::Relaxed)
}
