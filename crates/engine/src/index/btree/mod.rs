//! A concurrent ordered B+tree with optimistic lock coupling, written here because Silo's node
//! set needs what no crate offers: leaf versions that a scan records and a commit re-checks,
//! over byte-string keys of any length (ARCHITECTURE.md, decision 1).
//!
//! - `node`: the node layout and in-node search and edits;
//! - `tree`: lookups, inserts, removals and copy-on-write structure changes;
//! - `iter`: forward and reverse range scans that report the leaves they read;
//! - `pool`: node memory in huge-page chunks.

mod iter;
mod node;
mod pool;
mod tree;

pub use iter::{Direction, SCAN_PREFETCH_DISTANCE, ScanBuffer, ScanVisitor};
pub use tree::{BTree, Finger, GROUP_KEYS, LeafObserver, LeafVersion, Probe, TreeStats};
