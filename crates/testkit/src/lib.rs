//! Test helpers shared by Engram's crates.
//!
//! - [`script`]: plain-text anomaly scripts of interleaved transactions, with the expected
//!   outcome of every step at every isolation level;
//! - [`history`]: a checker for multi-threaded histories (Elle-style list append): it rebuilds
//!   the dependency graph of committed transactions and reports cycles;
//! - [`alloc`]: a counting global allocator, to show the commit path allocates nothing and that
//!   memory stays bounded;
//! - [`files`]: copying a checked-in data directory for a test to open.

pub mod alloc;
pub mod files;
pub mod history;
pub mod script;
