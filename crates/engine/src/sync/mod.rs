//! Latches and epochs: every piece of shared-memory synchronisation the engine does by hand.
//!
//! Everything concurrent in the engine goes through this module so that the randomized-schedule
//! tests can swap the atomics and threads underneath for shuttle's (`--features shuttle`):
//!
//! - [`shim`] re-exports the atomic types, fences and thread helpers from `std` or shuttle;
//! - [`latch`] is the optimistic version latch (a lock bit, an obsolete bit and a version counter
//!   in one word) that index nodes use for optimistic lock coupling;
//! - [`epoch`] is Silo's global epoch with per-worker local epochs, which drive commit TIDs,
//!   snapshot epochs and epoch-based reclamation;
//! - [`reclaim`] is epoch-based reclamation: per-worker lists of unlinked memory, freed once
//!   no pinned thread can reach it;
//! - [`lockword`] is the no-wait lock words of the pessimistic multi-version protocols (`mvto`,
//!   `mv2pl`), kept in record heads;
//! - [`backoff`] bounds every spin loop: spin, then yield, then give up;
//! - [`tid`] is Silo's transaction identifier, the TID word of a record head, and the
//!   retention bounds that say which superseded versions readers may still need.

pub mod backoff;
pub mod epoch;
pub mod latch;
pub mod lockword;
pub mod reclaim;
pub mod shim;
pub mod tid;

pub use backoff::Backoff;
pub use epoch::{Epoch, EpochManager, Pin, SlotId, StatementSnapshot};
pub use latch::{Restart, VersionLatch};
pub use reclaim::{Garbage, Retired};
pub use tid::{Retention, Tid, TidWord};
