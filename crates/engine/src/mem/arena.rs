//! Per-worker memory for records and versions (SYSTEM.md §1: allocation is per core; a central
//! allocator is a measured bottleneck).
//!
//! An `Arena` caches free blocks by size class in front of the huge-page chunks of
//! `mem::chunks`. A worker allocates record heads and versions from its own arena and frees
//! what its garbage list releases into it, so in steady state (updates replacing versions of the
//! same sizes) it takes no lock and the global allocator is not called at all: the commit path
//! allocates nothing. An empty class refills a batch of blocks from the chunks; a class holding
//! more than `CACHED_BYTES_PER_CLASS_MAX` bytes gives half back, so blocks move between workers.
//!
//! An arena may instead draw from a [`Space`] that several workers share
//! (`Config::memory_spaces`): every allocation and free then takes the space's lock. That is
//! Wu et al.'s memory-space experiment (VLDB 2017, Fig. 16), where fewer spaces than cores make
//! allocation the bottleneck of storage that copies a version on every update; the default
//! gives each worker its own arena and takes no lock.
//!
//! | class range     | block sizes                          |
//! |-----------------|--------------------------------------|
//! | 0..64           | 16, 32, ..., 1024 bytes (16-byte steps) |
//! | 64..71          | 2 KiB, 4 KiB, ..., 128 KiB             |
//! | beyond          | exact size, straight to the global allocator |

use super::chunks;
use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::sync::{Arc, Mutex, MutexGuard};

const SMALL_STEP_BYTES: usize = 16;
const SMALL_CLASSES: usize = 64;
const SMALL_BYTES_MAX: usize = SMALL_STEP_BYTES * SMALL_CLASSES;
const LARGE_CLASSES: usize = 7;
const LARGE_BYTES_MAX: usize = SMALL_BYTES_MAX << LARGE_CLASSES;
const CLASSES: usize = SMALL_CLASSES + LARGE_CLASSES;

/// Blocks cached per class, in bytes: enough for the versions a worker frees between two
/// reclamation passes at millions of updates per second, small next to the data.
const CACHED_BYTES_PER_CLASS_MAX: usize = 4 << 20;

/// Bytes of blocks an empty class takes from the chunks at once (at least one block).
const REFILL_BYTES: usize = 16 << 10;

/// Alignment of every block: record words are 8-byte atomics, and 16 keeps small blocks from
/// straddling more cache lines than their size needs.
pub const BLOCK_ALIGN: usize = 16;

/// The size class of a request, and the block size that class hands out.
#[inline]
fn class_of(bytes: usize) -> Option<(usize, usize)> {
    if bytes <= SMALL_BYTES_MAX {
        let class = bytes.max(1).div_ceil(SMALL_STEP_BYTES) - 1;
        Some((class, (class + 1) * SMALL_STEP_BYTES))
    } else if bytes <= LARGE_BYTES_MAX {
        let size = bytes.next_power_of_two();
        let class =
            SMALL_CLASSES + (size.trailing_zeros() - SMALL_BYTES_MAX.trailing_zeros()) as usize - 1;
        Some((class, size))
    } else {
        None
    }
}

/// The block size an allocation of `bytes` really gets.
#[inline]
pub fn block_bytes(bytes: usize) -> usize {
    class_of(bytes).map_or(bytes, |(_, size)| size)
}

#[derive(Debug, Default, Clone, Copy)]
pub struct ArenaStats {
    /// Batches of blocks taken from the shared chunks, and blocks beyond the largest class
    /// taken from the global allocator.
    pub system_allocations: u64,
    /// Blocks served from the cache.
    pub cached_allocations: u64,
}

#[derive(Debug)]
pub struct Arena {
    free: [Vec<*mut u8>; CLASSES],
    stats: ArenaStats,
    /// The shared space this arena allocates from instead of its own cache, if any.
    space: Option<Space>,
}

/// A memory space shared by the workers whose arenas draw from it.
pub type Space = Arc<Mutex<Arena>>;

/// A new shared memory space.
pub fn new_space() -> Space {
    Arc::new(Mutex::new(Arena::new()))
}

fn locked(space: &Space) -> MutexGuard<'_, Arena> {
    // An arena's state is consistent between calls: a panic elsewhere cannot tear it.
    space.lock().unwrap_or_else(|poison| poison.into_inner())
}

// SAFETY: the arena exclusively owns the free blocks it caches.
unsafe impl Send for Arena {}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

fn class_bytes(class: usize) -> usize {
    if class < SMALL_CLASSES {
        (class + 1) * SMALL_STEP_BYTES
    } else {
        SMALL_BYTES_MAX << (class - SMALL_CLASSES + 1)
    }
}

impl Arena {
    pub fn new() -> Self {
        Arena {
            free: std::array::from_fn(|_| Vec::new()),
            stats: ArenaStats::default(),
            space: None,
        }
    }

    /// An arena that allocates from `space`, under its lock.
    pub fn in_space(space: Space) -> Self {
        let mut arena = Arena::new();
        arena.space = Some(space);
        arena
    }

    /// Whether this arena draws from a shared space.
    pub fn is_shared(&self) -> bool {
        self.space.is_some()
    }

    #[cold]
    #[inline(never)]
    fn alloc_shared(space: &Space, bytes: usize) -> *mut u8 {
        locked(space).alloc(bytes)
    }

    /// # Safety
    /// As [`Arena::free`].
    #[cold]
    #[inline(never)]
    unsafe fn free_shared(space: &Space, block: *mut u8, bytes: usize) {
        // SAFETY: guaranteed by the caller.
        unsafe { locked(space).free(block, bytes) }
    }

    pub fn stats(&self) -> ArenaStats {
        self.stats
    }

    /// A block of at least `bytes` bytes, aligned to [`BLOCK_ALIGN`], uninitialised.
    #[inline]
    pub fn alloc(&mut self, bytes: usize) -> *mut u8 {
        if let Some(space) = &self.space {
            return Self::alloc_shared(space, bytes);
        }
        let Some((class, size)) = class_of(bytes) else {
            self.stats.system_allocations += 1;
            let layout = Self::large_layout(bytes);
            // SAFETY: the layout has a non-zero size.
            let block = unsafe { alloc(layout) };
            if block.is_null() {
                handle_alloc_error(layout);
            }
            return block;
        };
        if let Some(block) = self.free[class].pop() {
            self.stats.cached_allocations += 1;
            return block;
        }
        self.stats.system_allocations += 1;
        chunks::alloc_blocks(size, (REFILL_BYTES / size).max(1), &mut self.free[class]);
        self.free[class].pop().expect("refilled")
    }

    /// Returns a block of `bytes` bytes (the size it was requested with).
    ///
    /// # Safety
    /// `block` came from [`Arena::alloc`] (of any arena) with the same `bytes`, and nothing
    /// reaches it any more.
    #[inline]
    pub unsafe fn free(&mut self, block: *mut u8, bytes: usize) {
        if let Some(space) = &self.space {
            // SAFETY: guaranteed by the caller.
            return unsafe { Self::free_shared(space, block, bytes) };
        }
        let Some((class, size)) = class_of(bytes) else {
            // SAFETY: guaranteed by the caller; the layout is the one `alloc` used.
            unsafe { dealloc(block, Self::large_layout(bytes)) };
            return;
        };
        let list = &mut self.free[class];
        list.push(block);
        if list.len() * size > CACHED_BYTES_PER_CLASS_MAX {
            let keep = list.len() / 2;
            // SAFETY: cached blocks are free and of this class's size.
            unsafe { chunks::free_blocks(size, list.drain(keep..)) };
        }
    }

    fn large_layout(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, BLOCK_ALIGN).expect("block layout")
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (class, list) in self.free.iter_mut().enumerate() {
            // SAFETY: cached blocks are free and of this class's size.
            unsafe { chunks::free_blocks(class_bytes(class), list.drain(..)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_sizes_and_recycle() {
        assert_eq!(class_of(1), Some((0, 16)));
        assert_eq!(class_of(16), Some((0, 16)));
        assert_eq!(class_of(17), Some((1, 32)));
        assert_eq!(class_of(1024), Some((63, 1024)));
        assert_eq!(class_of(1025), Some((64, 2048)));
        assert_eq!(class_of(LARGE_BYTES_MAX), Some((CLASSES - 1, LARGE_BYTES_MAX)));
        assert_eq!(class_of(LARGE_BYTES_MAX + 1), None);
        let mut arena = Arena::new();
        let block = arena.alloc(100);
        // SAFETY: allocated above with the same size.
        unsafe { arena.free(block, 100) };
        assert_eq!(arena.alloc(110), block, "same class: the cached block comes back");
        // SAFETY: as above.
        unsafe { arena.free(block, 110) };
        let huge = arena.alloc(LARGE_BYTES_MAX * 2);
        // SAFETY: as above.
        unsafe { arena.free(huge, LARGE_BYTES_MAX * 2) };
        assert_eq!(arena.stats().system_allocations, 2, "one refill of the class, one large block");
    }

    #[test]
    fn arenas_in_one_space_share_its_blocks() {
        let space = new_space();
        let (mut first, mut second) = (Arena::in_space(space.clone()), Arena::in_space(space));
        assert!(first.is_shared() && !Arena::new().is_shared());
        let block = first.alloc(64);
        // SAFETY: allocated above with the same size.
        unsafe { first.free(block, 64) };
        assert_eq!(second.alloc(64), block, "the block freed into the space comes back");
        // SAFETY: as above.
        unsafe { second.free(block, 64) };
        let threads: Vec<_> = [first, second]
            .into_iter()
            .map(|mut arena| {
                std::thread::spawn(move || {
                    for round in 0..10_000usize {
                        let bytes = 16 + round % 200;
                        let block = arena.alloc(bytes);
                        // SAFETY: a fresh block of at least `bytes` bytes.
                        unsafe {
                            block.write_bytes(0xAB, bytes);
                            arena.free(block, bytes);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
}
