//! Per-worker retire lists for epoch-based reclamation (Silo §4.5; Fraser's EBR).
//!
//! A worker retires memory it unlinked into `pending`; when its transaction ends the pending
//! items are tagged with [`EpochManager::retire_tag`] (one fence for the whole batch) and
//! moved to `tagged`, which is therefore ordered by tag. [`Garbage::collect`] frees from the
//! front while the tag is below the published reclaim bound. Nothing is ever freed by another
//! worker; a worker that goes away hands its list to the database's orphan list.
//!
//! The list knows nothing of what it holds: each [`Retired`] item carries the function that
//! frees it, given by the layer that unlinked it (an index node from `index::btree`, a record
//! head or version from `storage::record`, a plain arena block from here), so reclamation sits
//! beneath the structures that retire into it.

use super::{Epoch, EpochManager};
use crate::mem::arena::Arena;
use std::collections::VecDeque;

/// Frees a retired item: its address, its size in bytes, and the arena of the freeing worker.
///
/// # Safety
/// Nothing can reach the item any more, it was retired exactly once, and it belongs to the
/// function it was retired with.
pub type Free = unsafe fn(*mut u8, usize, &mut Arena);

/// Something unlinked from shared memory, waiting until no thread can hold a pointer to it.
#[derive(Debug)]
pub struct Retired {
    item: *mut u8,
    bytes: usize,
    free: Free,
}

// SAFETY: a retired item is owned by the list it sits in; it is only dereferenced to free it.
unsafe impl Send for Retired {}

impl Retired {
    /// An item that `free` releases once no thread can reach it.
    pub fn new(item: *mut u8, bytes: usize, free: Free) -> Retired {
        Retired { item, bytes, free }
    }

    /// An arena block of `bytes` bytes (a version, a delta).
    pub fn block(item: *mut u8, bytes: usize) -> Retired {
        Retired::new(item, bytes, free_block)
    }
}

/// # Safety
/// As [`Free`]: the block came from an arena of the same spaces as `arena`.
unsafe fn free_block(block: *mut u8, bytes: usize, arena: &mut Arena) {
    // SAFETY: guaranteed by the caller.
    unsafe { arena.free(block, bytes) }
}

/// Items freed per [`Garbage::collect`] call at most, so that one transaction's end never pays
/// for a long backlog at once. Retiring is bounded per transaction too, so the list drains.
const COLLECT_BATCH_MAX: usize = 4096;

#[derive(Debug, Default)]
pub struct Garbage {
    pending: Vec<Retired>,
    tagged: VecDeque<(Epoch, Retired)>,
    freed_total: u64,
}

impl Garbage {
    pub fn new() -> Self {
        Garbage::default()
    }

    #[inline]
    pub fn retire(&mut self, item: Retired) {
        self.pending.push(item);
    }

    /// Tags everything retired since the last call. Call after the unlinks, before unpinning.
    #[inline]
    pub fn seal(&mut self, epochs: &EpochManager) {
        if !self.pending.is_empty() {
            self.seal_pending(epochs);
        }
    }

    #[cold]
    fn seal_pending(&mut self, epochs: &EpochManager) {
        let tag = epochs.retire_tag();
        self.tagged.extend(self.pending.drain(..).map(|item| (tag, item)));
    }

    /// Frees what no thread can reach any more. Returns how many items were freed.
    #[inline]
    pub fn collect(&mut self, epochs: &EpochManager, arena: &mut Arena) -> usize {
        match self.tagged.front() {
            Some((tag, _)) if *tag < epochs.reclaim_bound() => self.collect_ready(epochs, arena),
            _ => 0,
        }
    }

    fn collect_ready(&mut self, epochs: &EpochManager, arena: &mut Arena) -> usize {
        let bound = epochs.reclaim_bound();
        let mut freed = 0;
        while freed < COLLECT_BATCH_MAX {
            match self.tagged.front() {
                Some((tag, _)) if *tag < bound => {}
                _ => break,
            }
            let (_, item) = self.tagged.pop_front().expect("front checked");
            // SAFETY: the item's tag is below the reclaim bound, so no pinned thread can reach
            // it (sync::epoch, ORDERING), and it was retired exactly once.
            unsafe { free(item, arena) };
            freed += 1;
        }
        self.freed_total += freed as u64;
        freed
    }

    /// Items waiting to be freed.
    pub fn len(&self) -> usize {
        self.pending.len() + self.tagged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn freed_total(&self) -> u64 {
        self.freed_total
    }

    /// Moves everything into `other` (a departing worker hands its list over).
    pub fn append_to(&mut self, other: &mut Garbage, epochs: &EpochManager) {
        self.seal(epochs);
        other.tagged.extend(self.tagged.drain(..));
        // Keep `other` ordered by tag so `collect` can stop at the first young item.
        other.tagged.make_contiguous().sort_by_key(|(tag, _)| *tag);
    }

    /// Frees everything immediately.
    ///
    /// # Safety
    /// No other thread may reach any retired item (the database is shutting down).
    pub unsafe fn free_all(&mut self, arena: &mut Arena) {
        for item in self.pending.drain(..).chain(self.tagged.drain(..).map(|(_, item)| item)) {
            // SAFETY: guaranteed by the caller.
            unsafe { free(item, arena) };
        }
    }
}

/// # Safety
/// Nothing can reach `item` any more, and it was retired exactly once.
unsafe fn free(item: Retired, arena: &mut Arena) {
    // SAFETY: guaranteed by the caller; `item.free` is the function it was retired with.
    unsafe { (item.free)(item.item, item.bytes, arena) }
}
