//! Per-worker retire lists for epoch-based reclamation (Silo §4.5; Fraser's EBR).
//!
//! A worker retires memory it unlinked into `pending`; when its transaction ends the pending
//! items are tagged with [`EpochManager::retire_tag`] (one fence for the whole batch) and
//! moved to `tagged`, which is therefore ordered by tag. [`Garbage::collect`] frees from the
//! front while the tag is below the published reclaim bound. Nothing is ever freed by another
//! worker; a worker that goes away hands its list to the database's orphan list.

use crate::index::btree::Node;
use crate::storage::Head;
use crate::storage::arena::Arena;
use crate::sync::{Epoch, EpochManager};
use std::collections::VecDeque;

/// Something unlinked from shared memory, waiting until no thread can hold a pointer to it.
#[derive(Debug)]
pub(crate) enum Retired {
    /// An index node replaced by a split, a merge or a root change.
    Node(*mut Node),
    /// An arena block (a version) of the given size in bytes.
    Block(*mut u8, usize),
    /// A record head, an arena block of the given size in bytes.
    Head(*mut Head, usize),
    /// A version of a non-inline table: freeing it releases its values (`storage::shared`).
    Handles(*mut u8),
}

// SAFETY: a retired item is owned by the list it sits in; it is only dereferenced to free it.
unsafe impl Send for Retired {}

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
    pub(crate) fn retire(&mut self, item: Retired) {
        self.pending.push(item);
    }

    pub(crate) fn retire_node(&mut self, node: *mut Node) {
        self.retire(Retired::Node(node));
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
/// Nothing can reach `item` any more.
unsafe fn free(item: Retired, arena: &mut Arena) {
    match item {
        // SAFETY: nodes are retired once, after they were unlinked and marked obsolete.
        Retired::Node(node) => unsafe { Node::free(node) },
        // SAFETY: blocks are retired once, by the worker that unlinked them.
        Retired::Block(block, bytes) => unsafe { arena.free(block, bytes) },
        Retired::Head(head, bytes) => {
            // Nobody can reach the head to lock it any more, and a protocol lock (`mvto`,
            // `mv2pl`) is never held on a record past its unlink but by a locker still in the
            // call that found it (`cc::secondary::abandon_fresh`, `commit::run_ready_tasks`):
            // one held now would be released into freed memory.
            // SAFETY: as blocks; the head is intact until the arena hands its block out again.
            debug_assert!(!unsafe { &*head }.is_lock_held(), "a lock outlived its record");
            // SAFETY: as blocks.
            unsafe { arena.free(head as *mut u8, bytes) }
        }
        // SAFETY: as blocks.
        Retired::Handles(version) => unsafe {
            crate::storage::record::Version::free(version as *mut _, arena)
        },
    }
}
