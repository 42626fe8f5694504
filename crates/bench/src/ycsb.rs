//! YCSB, as Silo and Wu et al. run it.
//!
//! | workload           | operations per transaction | updates | value                 |
//! |--------------------|----------------------------|---------|-----------------------|
//! | `silo`             | 1                          | 20%     | 100 bytes             |
//! | `read-only`        | 10                         | 0%      | ten 64-bit attributes |
//! | `read-intensive`   | 10                         | 20%     | ten 64-bit attributes |
//! | `update-intensive` | 10                         | 80%     | ten 64-bit attributes |
//!
//! One table of `rows` rows with 64-bit keys; keys are chosen uniformly or by a scrambled
//! Zipfian of skew `theta`. A read copies the row and reads its first attribute; an update is a
//! read-modify-write of the first attribute. Wu et al.'s version-storage experiments (`engram
//! bench paper`, Figs. 13-15) load rows of more attributes and read or modify more of them
//! ([`Touch`]). Every transaction runs at SERIALIZABLE. `--mode raw` runs the same operations
//! through the engine's non-transactional record access (`Worker::raw`): the same index and
//! records with no read set, validation or commit, which is Silo's "key-value" baseline.

use crate::db::{Db, Outcome};
use crate::keys::KeyChooser;
use crate::report::{LATENCY_SAMPLE_EVERY, Latency, Machine, PaddedCounter, Percentiles, Progress};
use engram_engine::{
    Database, Error, IndexSpec, Isolation, NonInline, Sharing, TableRef, TableSpec, Txn, Worker,
};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    Silo,
    ReadOnly,
    ReadIntensive,
    UpdateIntensive,
}

impl Workload {
    pub fn parse(name: &str) -> Option<Workload> {
        match name {
            "silo" => Some(Workload::Silo),
            "read-only" => Some(Workload::ReadOnly),
            "read-intensive" => Some(Workload::ReadIntensive),
            "update-intensive" => Some(Workload::UpdateIntensive),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Workload::Silo => "silo",
            Workload::ReadOnly => "read-only",
            Workload::ReadIntensive => "read-intensive",
            Workload::UpdateIntensive => "update-intensive",
        }
    }

    pub fn ops_per_txn(self) -> usize {
        if self == Workload::Silo { 1 } else { 10 }
    }

    pub fn update_fraction(self) -> f64 {
        match self {
            Workload::Silo | Workload::ReadIntensive => 0.2,
            Workload::ReadOnly => 0.0,
            Workload::UpdateIntensive => 0.8,
        }
    }

    pub fn value_bytes(self) -> usize {
        if self == Workload::Silo { 100 } else { 80 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Txn,
    Raw,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Txn => "txn",
            Mode::Raw => "raw",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Update,
}

#[derive(Debug, Clone, Copy)]
pub struct Op {
    pub key: u64,
    pub kind: OpKind,
}

/// A database that can run YCSB.
pub trait YcsbDb: Db {
    /// Creates the table and its `rows` rows of `value_bytes` (at least 16), on `threads`
    /// threads. Called once, before the database is shared with driver threads.
    fn load(&mut self, rows: u64, value_bytes: usize, threads: usize) -> Result<(), String>;
    /// Runs one transaction of `ops` once, declared read-only (a snapshot transaction, with
    /// no conflict checks) when `read_only` is set; reads and updates touch the attributes
    /// `touch` says. `scratch` is the caller's reusable buffer.
    fn execute(
        &self,
        conn: &mut Self::Conn,
        ops: &[Op],
        read_only: bool,
        touch: Touch,
        scratch: &mut Vec<u8>,
    ) -> Outcome;
}

/// Bytes of an attribute: rows are 64-bit attributes.
pub const ATTRIBUTE_BYTES: usize = 8;

/// How many of a row's attributes an operation touches, from the first: a read sums `read`
/// attributes, an update bumps `modified` of them (both capped by the row's attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    pub read: usize,
    pub modified: usize,
}

impl Touch {
    /// YCSB's own: one attribute read, one modified.
    pub const ONE: Touch = Touch { read: 1, modified: 1 };
}

/// The attribute of `row` at `index`.
#[inline]
fn attribute(row: &[u8], index: usize) -> u64 {
    let at = index * ATTRIBUTE_BYTES;
    u64::from_le_bytes(row[at..at + ATTRIBUTE_BYTES].try_into().expect("an attribute"))
}

/// Bumps the first `count` attributes of a row (at least one): the "modify" of a
/// read-modify-write.
#[inline]
fn modify(row: &mut [u8], count: usize) {
    for index in 0..count.clamp(1, row.len() / ATTRIBUTE_BYTES) {
        let bumped = attribute(row, index).wrapping_add(1);
        row[index * ATTRIBUTE_BYTES..][..ATTRIBUTE_BYTES].copy_from_slice(&bumped.to_le_bytes());
    }
}

/// Sums the first `count` attributes of a row (at least one): the read of an operation.
#[inline]
fn read_attributes(row: &[u8], count: usize) -> u64 {
    let mut sum = attribute(row, 0);
    for index in 1..count.min(row.len() / ATTRIBUTE_BYTES) {
        sum = sum.wrapping_add(attribute(row, index));
    }
    sum
}

/// Engram, through transactions or through raw record access.
#[derive(Debug, Clone)]
pub struct EngramYcsb {
    pub db: Arc<Database>,
    pub table: Option<TableRef>,
    pub mode: Mode,
    /// Secondary indexes the load creates ([`EngramYcsb::index_spec`]).
    pub secondary_indexes: usize,
    /// Rows of non-inline attributes of [`NON_INLINE_ATTRIBUTE_BYTES`] each, so shared
    /// (`None`: rows of 64-bit attributes inline). Wu et al.'s Fig. 11.
    pub non_inline: Option<Sharing>,
}

impl EngramYcsb {
    pub fn open(mode: Mode) -> Result<EngramYcsb, String> {
        Self::open_with(mode, &crate::tpcc::engram::Persistence::default())
    }

    /// A database that logs as `persistence` says.
    pub fn open_with(
        mode: Mode,
        persistence: &crate::tpcc::engram::Persistence,
    ) -> Result<EngramYcsb, String> {
        let db = Database::open(persistence.config()).map_err(|error| error.to_string())?;
        Ok(EngramYcsb {
            db: Arc::new(db),
            table: None,
            mode,
            secondary_indexes: 0,
            non_inline: None,
        })
    }

    /// The same database and table, driven in another mode.
    pub fn with_mode(&self, mode: Mode) -> EngramYcsb {
        EngramYcsb { mode, ..self.clone() }
    }

    fn table(&self) -> &TableRef {
        self.table.as_ref().expect("loaded")
    }
}

impl Db for EngramYcsb {
    type Conn = Worker;

    fn name(&self) -> String {
        match self.db.config().protocol {
            engram_engine::Protocol::Silo => "engram".into(),
            protocol => format!("engram-{protocol}"),
        }
    }

    fn settings(&self) -> String {
        let config = self.db.config();
        format!(
            "mode {}, protocol {}, gc {}, {} storage, {}{} secondary index(es) ({} pointers), \
             serializable, epoch {} ms, snapshot every {} epochs, {}, {}",
            self.mode.name(),
            config.protocol,
            config.gc,
            config.version_storage,
            match self.non_inline {
                Some(sharing) => format!(
                    "non-inline attributes of {NON_INLINE_ATTRIBUTE_BYTES} bytes ({}), ",
                    sharing.name()
                ),
                None => String::new(),
            },
            self.secondary_indexes,
            config.index_pointers,
            config.epoch_interval_ms,
            config.snapshot_interval_epochs,
            match config.memory_spaces {
                0 => "a memory space per worker".to_string(),
                spaces => format!("{spaces} shared memory space(s)"),
            },
            match (&config.data_dir, config.durability) {
                (Some(dir), engram_engine::Durability::Epoch) => {
                    format!("durability epoch (log in {})", dir.display())
                }
                _ => "nothing logged".to_string(),
            }
        )
    }

    fn connect(&self) -> Result<Worker, String> {
        self.db.worker().map_err(|error| error.to_string())
    }
}

fn key_bytes(key: u64) -> [u8; 8] {
    key.to_be_bytes()
}

impl YcsbDb for EngramYcsb {
    fn load(&mut self, rows: u64, value_bytes: usize, threads: usize) -> Result<(), String> {
        assert!(value_bytes >= 16, "rows hold two attributes at least");
        self.load_rows(rows, value_bytes, threads)
    }

    fn execute(
        &self,
        worker: &mut Worker,
        ops: &[Op],
        read_only: bool,
        touch: Touch,
        scratch: &mut Vec<u8>,
    ) -> Outcome {
        let table = self.table();
        let isolation = if read_only { Isolation::Snapshot } else { Isolation::Serializable };
        if self.non_inline.is_some() {
            let result = worker
                .transaction_once(isolation, |txn| non_inline_operations(txn, table, ops, scratch));
            return outcome(result);
        }
        let result = match self.mode {
            Mode::Txn => worker.transaction_once(isolation, |txn| {
                for op in ops {
                    let key = key_bytes(op.key);
                    let row = txn.get(table, &key)?.ok_or(Error::NotFound)?;
                    if op.kind == OpKind::Update {
                        scratch.clear();
                        scratch.extend_from_slice(row);
                        modify(scratch, touch.modified);
                        txn.update(table, &key, scratch)?;
                    } else {
                        std::hint::black_box(read_attributes(row, touch.read));
                    }
                }
                Ok(())
            }),
            Mode::Raw => worker
                .raw(|raw| {
                    for op in ops {
                        let key = key_bytes(op.key);
                        let row = raw.get(table, &key).ok_or(Error::NotFound)?;
                        if op.kind == OpKind::Update {
                            scratch.clear();
                            scratch.extend_from_slice(row);
                            modify(scratch, touch.modified);
                            raw.update(table, &key, scratch)?;
                        } else {
                            std::hint::black_box(read_attributes(row, touch.read));
                        }
                    }
                    Ok(())
                })
                .and_then(|result| result),
        };
        outcome(result)
    }
}

fn outcome(result: Result<(), Error>) -> Outcome {
    match result {
        Ok(()) => Outcome::Committed,
        Err(Error::Aborted(reason)) => Outcome::Aborted(reason.name()),
        Err(error) => panic!("YCSB transaction failed: {error}"),
    }
}

/// Bytes of a non-inline attribute: the paper's VARCHAR(100).
pub const NON_INLINE_ATTRIBUTE_BYTES: usize = 100;

/// The attribute operation `position` of a transaction touches in row `key` of
/// `attributes` non-inline ones: one of them, spread over the row.
fn non_inline_attribute(key: u64, position: usize, attributes: usize) -> usize {
    let mixed = (key ^ (position as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_mul(0xD6E8_FEB8_6659_FD93);
    ((mixed >> 32) % attributes as u64) as usize
}

/// The operations of a transaction on a table of non-inline attributes: each reads one
/// attribute, and an update writes it back with its first 8 bytes counted up (Wu et al.'s
/// Fig. 11: every operation accesses one attribute).
fn non_inline_operations(
    txn: &mut Txn<'_>,
    table: &TableRef,
    ops: &[Op],
    scratch: &mut Vec<u8>,
) -> Result<(), Error> {
    let attributes = table.non_inline.map_or(1, |layout| layout.attributes);
    for (position, op) in ops.iter().enumerate() {
        let key = key_bytes(op.key);
        let index = non_inline_attribute(op.key, position, attributes);
        if !txn.get_attribute(table, &key, index, scratch)? {
            return Err(Error::NotFound);
        }
        if op.kind == OpKind::Update {
            let count = u64::from_le_bytes(scratch[..8].try_into().expect("8 bytes"));
            scratch[..8].copy_from_slice(&count.wrapping_add(1).to_le_bytes());
            txn.update_attribute(table, &key, index, scratch)?;
        } else {
            std::hint::black_box(scratch[0]);
        }
    }
    Ok(())
}

impl EngramYcsb {
    /// Secondary index `number`: non-unique, on attribute `2 + number % (attributes - 2)`,
    /// which the load fills with a hash of the key and that attribute's number and which no
    /// update modifies (updates bump attributes from the first; the second is the key).
    fn index_spec(number: usize, attributes: usize) -> IndexSpec {
        let attribute = 2 + number % attributes.saturating_sub(2).max(1);
        IndexSpec::new(
            format!("attribute_{number}"),
            false,
            move |row: &[u8], out: &mut Vec<u8>| {
                let at = attribute * ATTRIBUTE_BYTES;
                match row.get(at..at + ATTRIBUTE_BYTES) {
                    Some(bytes) => {
                        out.extend_from_slice(bytes);
                        true
                    }
                    None => false,
                }
            },
        )
    }

    fn load_rows(&mut self, rows: u64, value_bytes: usize, threads: usize) -> Result<(), String> {
        if let Some(sharing) = self.non_inline {
            return self.load_non_inline(
                rows,
                value_bytes / NON_INLINE_ATTRIBUTE_BYTES,
                sharing,
                threads,
            );
        }
        let attributes = value_bytes / ATTRIBUTE_BYTES;
        if self.secondary_indexes > 0 && attributes < 3 {
            return Err("secondary indexes need rows of three attributes at least".into());
        }
        let spec = (0..self.secondary_indexes).fold(TableSpec::new("usertable"), |spec, number| {
            spec.index(Self::index_spec(number, attributes))
        });
        let table = self.db.create_table(spec).map_err(|error| error.to_string())?;
        // Abort diagnostics find a read row's key in its second attribute.
        self.db.set_row_keys(Arc::new(|_, row: &[u8], out: &mut Vec<u8>| {
            let Some(key) = row.get(8..16) else { return false };
            let key = u64::from_le_bytes(key.try_into().expect("8 bytes"));
            out.extend_from_slice(&key_bytes(key));
            true
        }));
        let indexed = self.secondary_indexes > 0;
        self.fill(table, rows, threads, || {
            let mut value = vec![0u8; value_bytes];
            move |txn: &mut Txn<'_>, table: &TableRef, key: u64| {
                // The first attribute counts updates; the second is the key.
                value[8..16].copy_from_slice(&key.to_le_bytes());
                if indexed {
                    // The indexed attributes: spread, fixed per row.
                    for (number, attribute) in
                        value.chunks_exact_mut(ATTRIBUTE_BYTES).enumerate().skip(2)
                    {
                        let hash =
                            (key ^ ((number as u64) << 56)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                        attribute.copy_from_slice(&hash.to_be_bytes());
                    }
                }
                txn.insert(table, &key_bytes(key), &value)
            }
        })
    }

    /// Creates `table`'s `rows` rows on `threads` threads, in transactions of 1,000 rows:
    /// `inserter()` makes each thread's function that inserts row `key`.
    fn fill<F>(
        &mut self,
        table: TableRef,
        rows: u64,
        threads: usize,
        inserter: impl Fn() -> F + Sync,
    ) -> Result<(), String>
    where
        F: FnMut(&mut Txn<'_>, &TableRef, u64) -> Result<(), Error>,
    {
        let threads = threads.max(1) as u64;
        std::thread::scope(|scope| -> Result<(), String> {
            let handles: Vec<_> = (0..threads)
                .map(|thread| {
                    let (db, table, inserter) =
                        (Arc::clone(&self.db), Arc::clone(&table), &inserter);
                    scope.spawn(move || -> Result<(), String> {
                        let mut worker = db.worker().map_err(|error| error.to_string())?;
                        let mut insert = inserter();
                        let (start, end) = (rows * thread / threads, rows * (thread + 1) / threads);
                        for first in (start..end).step_by(1000) {
                            worker
                                .transaction(Isolation::Serializable, |txn| {
                                    (first..(first + 1000).min(end))
                                        .try_for_each(|key| insert(txn, &table, key))
                                })
                                .map_err(|error| error.to_string())?;
                        }
                        Ok(())
                    })
                })
                .collect();
            handles.into_iter().try_for_each(|handle| handle.join().expect("loader"))
        })?;
        self.table = Some(table);
        // Declared read-only transactions read a snapshot a little in the past: it must hold
        // the rows before they run (`engram bench paper --figure 9`).
        crate::tpcc::engram::settle_after_load(&self.db, 0)
    }

    /// [`EngramYcsb::load_rows`] of rows of `attributes` non-inline attributes.
    fn load_non_inline(
        &mut self,
        rows: u64,
        attributes: usize,
        sharing: Sharing,
        threads: usize,
    ) -> Result<(), String> {
        if self.mode == Mode::Raw || self.secondary_indexes > 0 {
            return Err("non-inline attributes are read and written in transactions, with no \
                        secondary index"
                .into());
        }
        let layout = NonInline { attributes: attributes.max(1), sharing };
        let spec = TableSpec::new("usertable").non_inline(layout);
        let table = self.db.create_table(spec).map_err(|error| error.to_string())?;
        self.fill(table, rows, threads, || {
            let mut values = vec![vec![0u8; NON_INLINE_ATTRIBUTE_BYTES]; layout.attributes];
            move |txn: &mut Txn<'_>, table: &TableRef, key: u64| {
                for value in values.iter_mut() {
                    value[8..16].copy_from_slice(&key.to_le_bytes());
                }
                let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                txn.insert_attributes(table, &key_bytes(key), &refs)
            }
        })
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub workload: Workload,
    pub rows: u64,
    pub ops_per_txn: usize,
    pub theta: f64,
    pub threads: usize,
    pub duration: Duration,
    pub seed: u64,
    pub progress: bool,
    /// Run exactly this many transactions per thread instead of for `duration`, with no
    /// warm-up: for instruction counts (`valgrind --tool=callgrind`), which need a fixed amount
    /// of work rather than a fixed time.
    pub transactions: Option<u64>,
    /// Where and how commits are logged (`None` data directory: nothing is).
    pub persistence: crate::tpcc::engram::Persistence,
    /// 64-bit attributes per row (`None`: the workload's rows).
    pub attributes: Option<usize>,
    /// The attributes each read and update touches.
    pub touch: Touch,
    /// Non-unique secondary indexes on the table (Wu et al.'s Figs. 22 and 23).
    pub secondary_indexes: usize,
    /// Rows of non-inline attributes of [`NON_INLINE_ATTRIBUTE_BYTES`], so shared (Wu et al.'s
    /// Fig. 11; `None`: 64-bit attributes inline).
    pub non_inline: Option<Sharing>,
}

/// The result of measuring one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub benchmark: &'static str,
    pub db: String,
    pub settings: String,
    pub workload: Workload,
    pub mode: Mode,
    pub rows: u64,
    pub theta: f64,
    pub ops_per_txn: usize,
    /// Bytes of a row, and the 64-bit attributes each read reads and each update modifies.
    pub value_bytes: usize,
    pub attributes_read: usize,
    pub attributes_modified: usize,
    pub threads: usize,
    pub duration_s: f64,
    pub throughput_txn_per_s: f64,
    pub committed: u64,
    pub aborted: u64,
    pub aborts_by_reason: BTreeMap<String, u64>,
    /// The keys that aborted most transactions (Engram only).
    pub contended_keys: Vec<crate::report::ContendedKey>,
    pub latency_us: Percentiles,
    pub latency_sampling: String,
    /// Throughput of each round, when the run alternated configurations in rounds.
    pub rounds_txn_per_s: Vec<f64>,
    pub machine: Machine,
}

/// Counts of one measurement, before they become a report.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub committed: u64,
    pub aborted: u64,
    pub aborts_by_reason: BTreeMap<String, u64>,
    /// Aborts per (table, key, reason), where the database reports them.
    pub contended: BTreeMap<(String, String, String), u64>,
    pub latency: Latency,
    pub elapsed: Duration,
    /// Throughput of each merged measurement, in order.
    pub rounds: Vec<f64>,
}

impl Tally {
    pub fn merge(&mut self, other: &Tally) {
        self.committed += other.committed;
        self.aborted += other.aborted;
        for (reason, count) in &other.aborts_by_reason {
            *self.aborts_by_reason.entry(reason.clone()).or_default() += count;
        }
        crate::report::merge_contention(&mut self.contended, &other.contended);
        self.latency.merge(&other.latency);
        self.elapsed += other.elapsed;
        self.rounds.push(other.committed as f64 / other.elapsed.as_secs_f64());
    }
}

/// A group of driver threads that run one kind of transaction. Wu et al.'s heterogeneous
/// workload runs a read-write class and a read-only class side by side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Class {
    pub threads: usize,
    pub ops_per_txn: usize,
    pub update_fraction: f64,
    /// Declared read-only: every transaction runs as a snapshot transaction.
    pub declared_read_only: bool,
    /// The attributes each read and update touches.
    pub touch: Touch,
}

impl Class {
    /// `threads` threads of `workload`'s mix, `ops_per_txn` operations per transaction, not
    /// declared read-only.
    pub fn of(workload: Workload, threads: usize, ops_per_txn: usize) -> Class {
        Class {
            threads,
            ops_per_txn,
            update_fraction: workload.update_fraction(),
            declared_read_only: false,
            touch: Touch::ONE,
        }
    }
}

impl Options {
    /// The one class of a plain run: `threads` threads of the workload's transactions.
    pub fn class(&self) -> Class {
        Class { touch: self.touch, ..Class::of(self.workload, self.threads, self.ops_per_txn) }
    }

    /// Bytes of a row.
    pub fn value_bytes(&self) -> usize {
        let inline = self.attributes.map_or(self.workload.value_bytes(), |n| n * ATTRIBUTE_BYTES);
        match self.non_inline {
            // As many attributes, each of the non-inline size.
            Some(_) => inline / ATTRIBUTE_BYTES * NON_INLINE_ATTRIBUTE_BYTES,
            None => inline,
        }
    }
}

/// Runs `db` for `duration` on `options.threads` threads and tallies what happened.
pub fn measure<D: YcsbDb>(
    db: &D,
    options: &Options,
    duration: Duration,
    label: &str,
) -> Result<Tally, String> {
    let mut tallies = measure_classes(db, options, &[options.class()], duration, label)?;
    Ok(tallies.remove(0))
}

/// Runs every class of `classes` at once for `duration`, keys chosen as `options` says, and
/// tallies each class on its own.
pub fn measure_classes<D: YcsbDb>(
    db: &D,
    options: &Options,
    classes: &[Class],
    duration: Duration,
    label: &str,
) -> Result<Vec<Tally>, String> {
    let chooser = KeyChooser::new(options.rows, options.theta)?;
    let stop = AtomicBool::new(false);
    // Thread `i` runs class `of_thread[i]`.
    let of_thread: Vec<usize> = classes
        .iter()
        .enumerate()
        .flat_map(|(index, class)| std::iter::repeat_n(index, class.threads))
        .collect();
    let counters: Vec<PaddedCounter> = of_thread.iter().map(|_| PaddedCounter::default()).collect();
    let started = Instant::now();
    let tallies = std::thread::scope(|scope| -> Result<Vec<(usize, Tally)>, String> {
        let handles: Vec<_> = of_thread
            .iter()
            .enumerate()
            .map(|(thread, &class_index)| {
                let (chooser, stop, counter) = (chooser.clone(), &stop, &counters[thread]);
                let class = classes[class_index];
                scope.spawn(move || -> Result<(usize, Tally), String> {
                    let mut conn = db.connect()?;
                    let mut random = SmallRng::seed_from_u64(
                        options.seed.wrapping_mul(1_000_003) + thread as u64,
                    );
                    let mut tally = Tally::default();
                    let mut ops = Vec::with_capacity(class.ops_per_txn);
                    let mut scratch = Vec::with_capacity(options.value_bytes());
                    let quota = options.transactions.unwrap_or(u64::MAX);
                    while !stop.load(Ordering::Relaxed) && tally.committed < quota {
                        ops.clear();
                        for _ in 0..class.ops_per_txn {
                            let kind = if random.random::<f64>() < class.update_fraction {
                                OpKind::Update
                            } else {
                                OpKind::Read
                            };
                            ops.push(Op { key: chooser.next(&mut random), kind });
                        }
                        let sampled = tally.committed % LATENCY_SAMPLE_EVERY == 0;
                        let begun = sampled.then(Instant::now);
                        let committed = loop {
                            match db.execute(
                                &mut conn,
                                &ops,
                                class.declared_read_only,
                                class.touch,
                                &mut scratch,
                            ) {
                                Outcome::Committed | Outcome::RolledBack => break true,
                                Outcome::Aborted(reason) => {
                                    tally.aborted += 1;
                                    *tally
                                        .aborts_by_reason
                                        .entry(reason.to_string())
                                        .or_default() += 1;
                                }
                            }
                            // A timed run that ends mid-retry stops retrying.
                            if stop.load(Ordering::Relaxed) {
                                break false;
                            }
                        };
                        if !committed {
                            break;
                        }
                        if let Some(begun) = begun {
                            tally.latency.record(begun.elapsed());
                        }
                        tally.committed += 1;
                        if tally.committed % 64 == 0 {
                            counter.0.store(tally.committed, Ordering::Relaxed);
                        }
                    }
                    Ok((class_index, tally))
                })
            })
            .collect();
        if options.transactions.is_none() {
            Progress::new(label, duration, options.progress).watch(&counters, duration);
            stop.store(true, Ordering::Relaxed);
        }
        handles.into_iter().map(|handle| handle.join().expect("driver thread")).collect()
    })?;
    let elapsed = started.elapsed();
    let mut totals: Vec<Tally> = classes.iter().map(|_| Tally::default()).collect();
    for (class_index, tally) in &tallies {
        totals[*class_index].merge(tally);
    }
    for total in &mut totals {
        total.elapsed = elapsed;
        total.rounds.clear();
    }
    Ok(totals)
}

pub fn report<D: Db>(db: &D, options: &Options, mode: Mode, tally: &Tally) -> Report {
    let seconds = tally.elapsed.as_secs_f64();
    Report {
        benchmark: "ycsb",
        db: db.name(),
        settings: db.settings(),
        workload: options.workload,
        mode,
        rows: options.rows,
        theta: options.theta,
        ops_per_txn: options.ops_per_txn,
        value_bytes: options.value_bytes(),
        attributes_read: options.touch.read,
        attributes_modified: options.touch.modified,
        threads: options.threads,
        duration_s: seconds,
        throughput_txn_per_s: tally.committed as f64 / seconds,
        committed: tally.committed,
        aborted: tally.aborted,
        aborts_by_reason: tally.aborts_by_reason.clone(),
        contended_keys: crate::report::contended_keys(&tally.contended),
        latency_us: tally.latency.summary(),
        latency_sampling: format!("one transaction in {LATENCY_SAMPLE_EVERY}"),
        rounds_txn_per_s: if tally.rounds.len() > 1 { tally.rounds.clone() } else { Vec::new() },
        machine: Machine::describe(),
    }
}

/// Loads the table and measures every combination of `modes` and `thread_counts`. With more
/// than one combination the run alternates them in `rounds` rounds (raw, txn; txn, raw; ...:
/// `report::round_order`), so that drift in the shared machine's speed touches them alike;
/// each figure sums its rounds.
pub fn run(
    options: &Options,
    modes: &[Mode],
    thread_counts: &[usize],
    rounds: u32,
) -> Result<Vec<Report>, String> {
    let mut engram = EngramYcsb::open_with(modes[0], &options.persistence)?;
    engram.secondary_indexes = options.secondary_indexes;
    engram.non_inline = options.non_inline;
    let load_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loading = Instant::now();
    engram.load(options.rows, options.value_bytes(), load_threads)?;
    if options.progress {
        eprintln!("loaded {} rows in {:.1} s", options.rows, loading.elapsed().as_secs_f64());
    }
    let combinations: Vec<(Mode, usize)> = thread_counts
        .iter()
        .flat_map(|&threads| modes.iter().map(move |&mode| (mode, threads)))
        .collect();
    let configured = |threads: usize| Options { threads, ..options.clone() };
    if options.transactions.is_none() {
        // A short uncounted run of every combination first: caches, free lists and the index
        // are in the same state for whichever is measured first.
        let warm_up =
            (options.duration / 10).clamp(Duration::from_millis(200), Duration::from_secs(2));
        for &(mode, threads) in &combinations {
            measure(
                &engram.with_mode(mode),
                &configured(threads),
                warm_up,
                &format!("warm-up {}", mode.name()),
            )?;
        }
    }
    let rounds =
        if combinations.len() > 1 && options.transactions.is_none() { rounds.max(1) } else { 1 };
    let per_round = options.duration / rounds;
    let mut tallies: Vec<Tally> = combinations.iter().map(|_| Tally::default()).collect();
    for round in 0..rounds {
        for index in crate::report::round_order(round, combinations.len()) {
            let (mode, threads) = combinations[index];
            let label = format!(
                "ycsb {} {} x{} {}/{}",
                options.workload.name(),
                mode.name(),
                threads,
                round + 1,
                rounds
            );
            let before = engram.db.conflict_stats();
            let mut tally =
                measure(&engram.with_mode(mode), &configured(threads), per_round, &label)?;
            let render = |key: &[u8]| match <[u8; 8]>::try_from(key) {
                Ok(bytes) => u64::from_be_bytes(bytes).to_string(),
                Err(_) => crate::report::hex_key(key),
            };
            crate::report::note_contention(&engram.db, &before, render, &mut tally.contended);
            tallies[index].merge(&tally);
        }
    }
    Ok(combinations
        .iter()
        .zip(&tallies)
        .map(|(&(mode, threads), tally)| {
            report(&engram.with_mode(mode), &configured(threads), mode, tally)
        })
        .collect())
}
