//! Memory the engine allocates itself, below everything else (it imports nothing of the
//! engine).
//!
//! - [`chunks`]: huge-page chunks carved into blocks, under arenas and index nodes;
//! - [`arena`]: per-worker block caches for heads and versions.

pub mod arena;
pub mod chunks;
