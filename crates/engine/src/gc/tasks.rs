//! Deferred clean-up of deleted records.
//!
//! A delete only marks its record absent: a snapshot older than the delete may still read the
//! row through the indexes. The deleting worker queues an unlink task that becomes ready once
//! the snapshot low-water mark reaches the delete's epoch (and, under a multi-version protocol,
//! every reader's timestamp is above the delete's). Running it (in `cc::commit`, after a
//! later transaction of the same worker) first looks the key up in the primary index: only if
//! the key still maps to the same head, still deleted by the same TID, is the head reachable and
//! still garbage. It then removes the head's secondary entries and its primary entry, marks
//! the head no longer LATEST (so transactions that read it fail validation), and retires it.
//!
//! Tasks are FIFO per worker; their keys live in recycled buffers, so queueing a task does not
//! allocate in steady state.

use crate::storage::{Head, TableId, Tid, TidWord};
use crate::sync::Epoch;
use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct Task {
    pub table: TableId,
    pub head: *mut Head,
    /// The word the delete installed; anything else means the key was reused.
    pub word: TidWord,
    pub ready: Epoch,
    pub key: Vec<u8>,
}

#[derive(Debug, Default)]
pub(crate) struct Tasks {
    queue: VecDeque<Task>,
    spare_keys: Vec<Vec<u8>>,
}

// SAFETY: a task's head pointer is only dereferenced after the key is found mapping to it in
// the primary index, by the worker that owns the task.
unsafe impl Send for Tasks {}

/// Spare key buffers kept for reuse.
const SPARE_KEYS_MAX: usize = 1024;

impl Tasks {
    pub fn push_unlink(&mut self, table: TableId, head: *mut Head, word: TidWord, key: &[u8]) {
        let mut buffer = self.spare_keys.pop().unwrap_or_default();
        buffer.clear();
        buffer.extend_from_slice(key);
        self.queue.push_back(Task { table, head, word, ready: word.epoch(), key: buffer });
    }

    /// The oldest task, if `low` (the snapshot low-water mark, and the durable epoch when
    /// logging) has reached it and every multi-version reader (all at or above `readers_low`)
    /// sees the delete.
    pub fn pop_ready(&mut self, low: Epoch, readers_low: Tid) -> Option<Task> {
        if self.queue.front().is_some_and(|task| task.ready <= low && task.word.tid() < readers_low)
        {
            self.queue.pop_front()
        } else {
            None
        }
    }

    /// Puts a task that could not run yet (its head is busy or claimed) at the back.
    pub fn requeue(&mut self, task: Task) {
        self.queue.push_back(task);
    }

    pub fn recycle(&mut self, key: Vec<u8>) {
        if self.spare_keys.len() < SPARE_KEYS_MAX {
            self.spare_keys.push(key);
        }
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn append_to(&mut self, other: &mut Tasks) {
        other.queue.extend(self.queue.drain(..));
    }
}
