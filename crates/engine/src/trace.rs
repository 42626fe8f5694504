//! Debug events of the serial safety net's commits (feature `ssn-trace`, off in every build
//! that ships): what each transaction read and inserted, the leaf and record stamps its commit
//! read and published, and its π and η. The stress test in `tests/history.rs` writes the
//! events around a dependency cycle to a file; docs/isolation.md tells how one was read.
//!
//! Each thread appends to its own buffer, with a time-stamp counter read and no shared atomic
//! on the way: a shared counter or lock would order the very loads and stores whose races the
//! trace is meant to show (a global mutex in the commit once hid such a race).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

/// One event. Heads and nodes are addresses, TIDs and words raw, keys their first 8 bytes.
#[derive(Debug, Clone, Copy)]
pub enum Ev {
    /// The caller's id for the attempt that follows (the history test's transaction id).
    Begin { id: u64 },
    /// An index probe for `key` (`why`: 0 a lookup, 1 a write) found `head` in leaf `node`.
    Probe { key: u64, head: u64, node: u64, ver: u64, why: u8 },
    /// A snapshot read of `head`, and whether the access set recorded it.
    Seen { head: u64, tid: u64, present: bool, word: u64, recorded: bool },
    /// A scan read leaf `node` at version `ver`.
    ScanLeaf { node: u64, ver: u64 },
    /// A scan met `head`.
    ScanHead { key: u64, head: u64, word: u64 },
    /// The scan passed over the head just met as an unclaimed deleted record.
    ScanSkipped { head: u64 },
    /// The transaction's own change of leaf `node` (`n` leaves after it); `entries` of the
    /// node set name the leaf, `at_before` of them at version `before` (those it updates).
    LeafChanged {
        node: u64,
        before: u64,
        after: [u64; 4],
        n: usize,
        entries: usize,
        at_before: usize,
    },
    /// A fresh head for `key`; `existing` is the head the index had instead, if any.
    InsertFresh { key: u64, head: u64, existing: u64 },
    /// An insert claimed the absent head the index had for `key`.
    InsertExisting { key: u64, head: u64, word: u64 },
    /// The commit stamp, and the newest stamp on a leaf the inserts changed.
    Stamp { c: u64, leaves_high: u64 },
    /// The pstamp read on a leaf the inserts changed.
    ChangedPstamp { node: u64, ver: u64, pstamp: u64 },
    /// The commit published its stamp on a scanned leaf, which held `prev`.
    Publish { node: u64, ver: u64, prev: u64 },
    /// Node (and read) validation passed or failed.
    Validated { ok: bool },
    /// An access-set entry in the exclusion check (`kind`: 0 read, 1 update, 2 insert, 3
    /// delete); `succ` is the successor's π of a read state overwritten since.
    Excl { head: u64, kind: u8, observed: u64, prior: u64, pstamp: u64, cur: u64, succ: u64 },
    /// π and η, and whether π > η.
    Check { pi: u64, eta: u64, ok: bool },
    /// A latch let go with `pstamp` (`kind` + 10 after a commit).
    Release { head: u64, kind: u8, pstamp: u64, cur: u64 },
    /// The attempt aborted (`AbortReason` as a number; 255: asked for).
    Abort { reason: u8 },
    /// A leaf made by a split or merge took `stamp` from the leaves it replaces.
    Inherit { leaf: u64, stamp: u64, sources: [u64; 2] },
    /// A head left the primary index (`node`: 0 unlinked after a delete, 1 an insert undone).
    Unlink { head: u64, node: u64 },
}

/// An event with the time it was recorded and the thread that recorded it.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    pub time: u64,
    pub thread: u32,
    pub ev: Ev,
}

type Shared = Arc<Mutex<Vec<Event>>>;

/// Every thread's flushed events.
static REGISTRY: Mutex<Vec<Shared>> = Mutex::new(Vec::new());

/// Events a thread hands over once its buffer fills (or on [`flush`]).
const LOCAL_EVENTS_MAX: usize = 1 << 16;

struct Local {
    events: Vec<Event>,
    shared: Shared,
    thread: u32,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// A clock that orders nothing: the time-stamp counter where there is one.
#[inline]
fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}

/// Appends `ev` to this thread's events.
pub fn record(ev: Ev) {
    let time = now();
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let local = local.get_or_insert_with(|| {
            let shared = Shared::default();
            let mut registry = REGISTRY.lock().unwrap();
            registry.push(Arc::clone(&shared));
            let thread = registry.len() as u32;
            Local { events: Vec::with_capacity(LOCAL_EVENTS_MAX), shared, thread }
        });
        local.events.push(Event { time, thread: local.thread, ev });
        if local.events.len() >= LOCAL_EVENTS_MAX {
            local.shared.lock().unwrap().append(&mut local.events);
        }
    });
}

/// Hands this thread's events over to [`collect`].
pub fn flush() {
    LOCAL.with(|local| {
        if let Some(local) = local.borrow_mut().as_mut() {
            local.shared.lock().unwrap().append(&mut local.events);
        }
    });
}

/// Every handed-over event of every thread, in time order; they are forgotten.
pub fn collect() -> Vec<Event> {
    let registry = REGISTRY.lock().unwrap();
    let mut all = Vec::new();
    for shared in registry.iter() {
        all.append(&mut shared.lock().unwrap());
    }
    all.sort_by_key(|event| event.time);
    all
}

/// The first 8 bytes of `key` as a number (a history test's key is one big-endian `u64`).
#[inline]
pub fn key_u64(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}
