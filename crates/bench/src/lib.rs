//! Engram's benchmarks.
//!
//! - [`db`]: the abstract database a benchmark drives (after Silo's `abstract_db`): each
//!   workload is a trait of transactions that every adapter implements;
//! - [`ycsb`]: YCSB in Silo's variant and Wu et al.'s three mixes, over the engine in
//!   transactional or raw mode;
//! - [`tpcc`]: TPC-C with its consistency checks and StockScan, on the engine and on SQLite;
//! - [`paper`]: Wu et al.'s MVCC experiments (Figs. 6-23), as JSON and SVG per figure;
//! - [`index`]: the B+tree against other concurrent ordered maps;
//! - [`keys`]: uniform and scrambled Zipfian key choice;
//! - [`plot`]: throughput against threads or skew, drawn from JSON results;
//! - [`report`]: latency histograms, progress, machine description, JSON.

pub mod db;
pub mod ddl;
pub mod index;
pub mod keys;
pub mod paper;
pub mod plot;
pub mod report;
pub mod tpcc;
pub mod ycsb;
