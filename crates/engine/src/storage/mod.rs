//! Records and tables.
//!
//! - [`record`]: the record head (MOT's sentinel), its TID word, the inline newest version and
//!   the chain of older versions;
//! - [`table`]: primary and secondary indexes over record heads;
//! - [`delta`]: the delta records of `delta` version storage;
//! - [`shared`]: non-inline attributes, each its own value, shared between versions by
//!   reference count or copied.

pub mod delta;
pub mod record;
pub mod shared;
pub mod table;

pub use record::{Head, Tid, TidWord, VersionStorage};
pub use shared::{NonInline, Sharing};
pub use table::{
    IndexPointers, IndexSpec, KeyExtractor, SecondaryIndex, Table, TableId, TableRef, TableSpec,
};
