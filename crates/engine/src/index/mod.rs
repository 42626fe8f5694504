//! Ordered indexes: the OLC B+tree and the memcomparable key encoding its users build keys with.
//!
//! Keys are byte strings compared lexicographically; values are 64-bit record references (a
//! record head's address). Every operation takes a [`crate::sync::Pin`]: nodes a reader can
//! still reach are freed only through epoch-based reclamation.

pub mod btree;
pub mod key;

pub use btree::{
    BTree, Direction, Finger, GROUP_KEYS, LeafObserver, LeafVersion, Probe, SCAN_PREFETCH_DISTANCE,
    ScanBuffer, ScanVisitor,
};
