//! Garbage collection: what may be freed, and when.
//!
//! - [`reclaim`]: epoch-based reclamation. Memory unlinked from a shared structure (an index
//!   node replaced by a split, a superseded record version, the head of a deleted record) is
//!   retired into the worker's [`Garbage`] list, tagged with the epoch after the unlink, and
//!   freed once the epoch manager's reclaim bound passes the tag (`sync::epoch`).
//! - [`tasks`]: deferred logical clean-up. A deleted record must stay in its indexes while a
//!   snapshot may still read its older versions; the deleting worker queues a task that runs
//!   once the snapshot low-water mark passes the delete's epoch, then unlinks the record and
//!   retires its head.
//!
//! Superseded versions are pruned by the writer that supersedes them (see `storage::record`):
//! a version is kept only while a snapshot boundary at or above the snapshot low-water mark
//! falls between its epoch and its successor's.

pub mod reclaim;
pub(crate) mod tasks;

pub use reclaim::Garbage;
pub(crate) use reclaim::Retired;
