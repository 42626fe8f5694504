//! Concurrency control: transactions and the commit skeleton.
//!
//! `commit.rs` owns the fixed steps every protocol goes through (ARCHITECTURE.md decision 3):
//!
//! 1. lock the write set in a global order (record address);
//! 2. insert the secondary entries of updates that change a secondary key, so that concurrent
//!    uniqueness checks and scans see them before anyone validates;
//! 3. take the serialization point (Silo: read the global epoch after a fence);
//! 4. validate the read set and the node set;
//! 5. choose the commit timestamp (Silo: a TID from the worker, no global counter);
//! 6. install the writes, fix the secondary entries of dropped versions, release the locks;
//! 7. finish: run ready clean-up tasks, clean the records cooperative GC noted, seal garbage,
//!    unpin.
//!
//! A protocol supplies the hooks through the `Hooks` trait (`silo.rs`; the multi-version
//! protocols' in `mv.rs`, with the serial safety net's extra steps in `ssn.rs`); the skeleton
//! is generic over it, so the default path has no dynamic dispatch.
//! `txn.rs` (with `txn/`: inserts, scans, statements, attributes) holds the operations a
//! transaction runs before commit; `secondary.rs` keeps secondary indexes in step with rows;
//! `access.rs` is the access and node sets; `conflict.rs` works out where an abort happened.
//!
//! ISOLATION LEVELS (the full anomaly table is docs/isolation.md)
//!
//! | level            | read set validated | node set validated | notes                       |
//! |------------------|--------------------|--------------------|-----------------------------|
//! | SERIALIZABLE     | yes                | yes                | Silo; the default           |
//! | REPEATABLE READ  | yes                | no                 | phantoms possible           |
//! | READ COMMITTED   | no                 | no                 | MOT: reads see committed data only |
//! | SNAPSHOT         | (read only)        |                    | consistent snapshot, never aborts |
//!
//! Uniqueness checks and `get_for_update` reads are validated at every level.

mod access;
mod commit;
pub mod conflict;
pub(crate) mod cooperative;
mod mv;
mod mv2pl;
mod mvto;
pub(crate) mod secondary;
mod silo;
mod ssn;
mod txn;
pub(crate) mod worker;

pub(crate) use crate::protocol::Rules;
pub use crate::protocol::{Isolation, Protocol};
pub(crate) use access::{AccessSet, NodeSet, Span};
pub(crate) use commit::{abort, abort_kicked, commit};
pub use conflict::{Conflict, ConflictSite, ConflictStats, HotKey, RowKeys};
pub(crate) use secondary::{EntryScratch, InsertedEntry};
pub use txn::{Recompute, Savepoint, StatementCheck, Txn};
pub(crate) use txn::{Recomputes, bytes_writable};
