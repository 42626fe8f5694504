//! The B+tree: point operations and structure changes under optimistic lock coupling.
//!
//! READ. Descend from the root noting each node's version; read the child pointer, validate
//! the node, note the child's version, move down. Any failed validation restarts the
//! operation from the root. After `INDEX_RESTARTS_OPTIMISTIC_MAX` failed attempts the
//! operation runs pessimistically instead: it takes each latch on the path (parent before
//! child, holding at most two), which always succeeds because latches are only ever taken
//! top-down. Restarts therefore stay inside the index and are bounded.
//!
//! WRITE. A leaf insert or removal upgrades the leaf's noted version to a lock, changes the
//! leaf in place and unlocks, which publishes a new version: this is the version change a
//! transaction's node set detects.
//!
//! STRUCTURE CHANGES are copy-on-write: a split, a merge or a change of node kind builds new
//! nodes, swaps them into the parent (both latched), and marks the old nodes obsolete before
//! retiring them to the epoch-based garbage list. A leaf's key range therefore never changes
//! while it is live, so a noted leaf version covers both its keys and its range. Inserts split
//! full inner nodes on the way down, so the parent of a splitting child always has room.
//! Merges are best effort: a node left underfull by a removal is merged with a sibling if the
//! latches can be had at once, and otherwise stays as it is.
//!
//! INVARIANTS (checked by `check_invariants` in tests and under `--features paranoid`)
//! - Keys strictly increase within a node and lie within the node's fence keys.
//! - All leaves are at level 0; a child's level is its parent's minus one.
//! - The root is never obsolete while it is the root.

use super::node::{Fit, HEAP_WORDS, MERGED_COUNT_MAX, Node, SLOTS_MAX, SearchKey, UNDERFULL_COUNT};
use crate::limits::{INDEX_KEY_BYTES_MAX, INDEX_RESTARTS_OPTIMISTIC_MAX};
use crate::sync::Garbage;
use crate::sync::{Pin, Restart, VersionLatch};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering, fence};

mod build;
mod reshape;

use build::*;

/// Structure changes a single operation may make before it must have reached its leaf: one
/// per level plus a few for leaves split more than once by long keys.
const STRUCTURE_CHANGES_MAX: u32 = 64;

/// Keys [`BTree::get_group`] looks up together: each level prefetches a node (17 lines) per
/// key, and a core keeps a few dozen misses in flight.
pub const GROUP_KEYS: usize = 8;

/// A leaf and the version a reader saw, as recorded in a transaction's node set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafVersion {
    node: *const Node,
    version: u64,
}

// SAFETY: a `LeafVersion` is an address and a number; dereferencing it requires a `Pin`.
unsafe impl Send for LeafVersion {}

impl LeafVersion {
    pub(super) fn new(node: *const Node, version: u64) -> Self {
        LeafVersion { node, version }
    }

    /// Whether the leaf still has the recorded version: no key entered or left it and it was
    /// not replaced. The caller must have been pinned since the version was recorded.
    #[inline]
    pub fn is_current(&self, _pin: &Pin<'_>) -> bool {
        // SAFETY: the node was reachable when recorded, and the caller has stayed pinned, so
        // it has not been freed even if it was retired since (sync::reclaim).
        unsafe { (*self.node).latch.current() == self.version }
    }

    pub fn node_address(&self) -> usize {
        self.node as usize
    }

    /// Raises the leaf's pstamp to `stamp` (a raw TID) and orders that before the caller's
    /// next load (its node validation): a leaf change that validation misses reads the stamp
    /// (`BTree::replace`, and inserters at commit).
    #[inline]
    pub fn publish_pstamp(&self, stamp: u64, _pin: &Pin<'_>) {
        // SAFETY: as in `is_current`.
        unsafe { (*self.node).pstamp.fetch_max(stamp, Ordering::Relaxed) };
        fence(Ordering::SeqCst);
    }

    /// The leaf's pstamp (a raw TID). The caller made its change to the leaf and then a
    /// sequentially consistent fence.
    #[inline]
    pub fn pstamp(&self, _pin: &Pin<'_>) -> u64 {
        // SAFETY: as in `is_current`.
        unsafe { (*self.node).pstamp.load(Ordering::Relaxed) }
    }

    pub fn version(&self) -> u64 {
        self.version
    }
}

/// Told about changes an operation made to leaves, so that a transaction that inserts into a
/// leaf it scanned can keep its node set valid (Silo §4.6).
pub trait LeafObserver {
    /// Leaf `node`, which had version `before`, now stands as the leaves in `after`: itself
    /// with a new version after an insert, or the new nodes that replaced it.
    fn leaf_changed(&mut self, node: usize, before: u64, after: &[LeafVersion]);
}

impl LeafObserver for () {
    fn leaf_changed(&mut self, _node: usize, _before: u64, _after: &[LeafVersion]) {}
}

/// The answer to a point lookup, with the leaf that holds (or would hold) the key.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub value: Option<u64>,
    pub leaf: LeafVersion,
}

/// Operation counters, for tests and benchmarks.
#[derive(Debug, Default)]
pub struct TreeStats {
    pub restarts: AtomicU64,
    pub pessimistic: AtomicU64,
}

/// The parent of the node being changed: the root pointer (guarded by `root_latch`) or an
/// inner node.
#[derive(Clone, Copy)]
enum Parent<'t> {
    Root(u64),
    Inner(&'t Node, u64),
}

/// What a failed attempt should do next.
enum Step<T> {
    Done(T),
    /// A structure change was made; descend again (progress, not a conflict).
    Again,
}

/// The value an insert puts in the leaf, asked for only once the insert is sure to happen
/// (the leaf is latched and has room).
trait ValueSource {
    fn value(&mut self) -> u64;
}

impl ValueSource for u64 {
    #[inline]
    fn value(&mut self) -> u64 {
        *self
    }
}

/// A value made on demand ([`BTree::insert_near`]).
struct Make<F>(Option<F>);

impl<F: FnOnce() -> u64> ValueSource for Make<F> {
    #[inline]
    fn value(&mut self) -> u64 {
        (self.0.take().expect("an insert makes its value once"))()
    }
}

/// What an optimistic descent reports of its path (nothing, for most operations).
trait PathNotes {
    /// A descent starts at the root.
    fn descend(&mut self) {}
    /// It routed through slot `route` of `inner`, whose version `version` it validated.
    fn inner(&mut self, _inner: *mut Node, _route: usize, _version: u64) {}
    /// It reached `leaf` of `tree`.
    fn leaf(&mut self, _tree: &BTree, _leaf: *mut Node) {}
}

impl PathNotes for () {}

/// Levels a [`Finger`] notes; a deeper path (never met: a level holds dozens of keys) leaves
/// the finger empty.
const FINGER_LEVELS_MAX: usize = 16;

/// A leaf of one tree and its fence keys, kept between the inserts of
/// [`BTree::insert_near`]: the separators above the leaf bound the keys it may hold, lower
/// inclusive and upper exclusive (a child's range in `Node::route`), and as structure changes
/// are copy-on-write, that range holds for as long as the leaf is live. The leaf's address is
/// used only under the pin the finger was made with, and every tree the finger is used with
/// outlives it (`insert_near` borrows the tree for the finger's lifetime), so a tree dropped
/// and another made at its address cannot be mistaken for it.
///
/// ```
/// use engram_engine::index::{BTree, Finger};
/// # let db = engram_engine::Database::open(engram_engine::Config::default()).unwrap();
/// # let mut worker = db.worker().unwrap();
/// let tree = BTree::new();
/// let hits = worker.pinned(|pin, garbage| {
///     let mut finger = Finger::new(pin);
///     for i in 0u64..1000 {
///         tree.insert_near(&mut finger, &i.to_be_bytes(), || i, pin, garbage, &mut ()).unwrap();
///     }
///     finger.hits()
/// });
/// assert!(hits.unwrap() > 900);
/// ```
///
/// A tree must outlive the fingers used with it:
///
/// ```compile_fail,E0597
/// use engram_engine::index::{BTree, Finger};
/// # let db = engram_engine::Database::open(engram_engine::Config::default()).unwrap();
/// # let mut worker = db.worker().unwrap();
/// worker.pinned(|pin, garbage| {
///     let mut finger = Finger::new(pin);
///     {
///         let tree = BTree::new();
///         tree.insert_near(&mut finger, b"key", || 1, pin, garbage, &mut ()).unwrap();
///     }
///     finger.hits()
/// });
/// ```
pub struct Finger<'p> {
    tree: *const BTree,
    leaf: *mut Node,
    /// The fences, when the leaf has them (the first leaf has no lower one, the last no upper).
    lower: Vec<u8>,
    upper: Vec<u8>,
    bounded_below: bool,
    bounded_above: bool,
    /// The inner nodes of the descent in progress: node, route and validated version.
    path: [(*mut Node, usize, u64); FINGER_LEVELS_MAX],
    depth: usize,
    /// Inserts that started at the remembered leaf.
    hits: u64,
    _pin: PhantomData<&'p Pin<'p>>,
}

impl std::fmt::Debug for Finger<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finger")
            .field("leaf", &self.leaf)
            .field("lower", &self.bounded_below.then_some(&self.lower))
            .field("upper", &self.bounded_above.then_some(&self.upper))
            .finish()
    }
}

impl<'p> Finger<'p> {
    pub fn new(_pin: &'p Pin<'_>) -> Finger<'p> {
        Finger {
            tree: std::ptr::null(),
            leaf: std::ptr::null_mut(),
            lower: Vec::with_capacity(INDEX_KEY_BYTES_MAX),
            upper: Vec::with_capacity(INDEX_KEY_BYTES_MAX),
            bounded_below: false,
            bounded_above: false,
            path: [(std::ptr::null_mut(), 0, 0); FINGER_LEVELS_MAX],
            depth: 0,
            hits: 0,
            _pin: PhantomData,
        }
    }

    /// How many inserts started at the remembered leaf instead of the root.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Whether the remembered leaf is of `tree` and its range holds `key`.
    #[inline]
    fn covers(&self, tree: &BTree, key: &[u8]) -> bool {
        std::ptr::eq(self.tree, tree)
            && (!self.bounded_below || self.lower.as_slice() <= key)
            && (!self.bounded_above || key < self.upper.as_slice())
    }

    fn forget(&mut self) {
        self.tree = std::ptr::null();
    }
}

impl PathNotes for Finger<'_> {
    #[inline]
    fn descend(&mut self) {
        self.depth = 0;
        self.forget();
    }

    #[inline]
    fn inner(&mut self, inner: *mut Node, route: usize, version: u64) {
        if self.depth < FINGER_LEVELS_MAX {
            self.path[self.depth] = (inner, route, version);
        }
        self.depth += 1;
    }

    /// Reads the leaf's fences, the nearest separators on each side along the path, and
    /// keeps the leaf if the nodes they came from are unchanged.
    fn leaf(&mut self, tree: &BTree, leaf: *mut Node) {
        if self.depth > FINGER_LEVELS_MAX {
            return;
        }
        self.bounded_below = false;
        self.bounded_above = false;
        for &(inner, route, version) in self.path[..self.depth].iter().rev() {
            let here = node(inner);
            if !self.bounded_above && route < here.count() {
                self.upper.clear();
                here.read_key(route, &mut self.upper);
                self.bounded_above = true;
            }
            if !self.bounded_below && route > 0 {
                self.lower.clear();
                here.read_key(route - 1, &mut self.lower);
                self.bounded_below = true;
            }
            if here.latch.read_validate(version).is_err() {
                return;
            }
            if self.bounded_below && self.bounded_above {
                break;
            }
        }
        self.tree = tree;
        self.leaf = leaf;
    }
}

#[derive(Debug)]
pub struct BTree {
    root_latch: VersionLatch,
    root: AtomicPtr<Node>,
    stats: TreeStats,
    /// Leaves reachable from the root: one more at each leaf split, one fewer at each merge
    /// of two leaves (`leaves`).
    leaves: AtomicU64,
}

// SAFETY: all shared state is reached through atomics and latches; nodes are freed only
// through epoch-based reclamation or by `Drop`, which has exclusive access.
unsafe impl Send for BTree {}
// SAFETY: see above.
unsafe impl Sync for BTree {}

impl Default for BTree {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn node<'t>(pointer: *mut Node) -> &'t Node {
    // SAFETY: every pointer passed here was read from the root or a child slot while the
    // caller was pinned, so the node is allocated (perhaps obsolete, which the latch tells).
    unsafe { &*pointer }
}

impl BTree {
    pub fn new() -> Self {
        BTree {
            root_latch: VersionLatch::new(),
            root: AtomicPtr::new(Node::alloc(0, 0)),
            stats: TreeStats::default(),
            leaves: AtomicU64::new(1),
        }
    }

    /// How many leaves the tree has: exact while no structure change runs, and otherwise off
    /// by at most the changes under way. Unlike [`BTree::node_counts`] it walks nothing, so
    /// any thread may ask at any time (the checkpointer does, to estimate the database's
    /// size).
    pub fn leaves(&self) -> u64 {
        self.leaves.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> &TreeStats {
        &self.stats
    }

    fn count_restart(&self) {
        self.stats.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes the root latch and the root node's version.
    #[inline]
    fn read_root(&self) -> Result<(u64, *mut Node, u64), Restart> {
        let root_version = self.root_latch.read_begin()?;
        // Acquire pairs with the Release store that published a new root.
        let root = self.root.load(Ordering::Acquire);
        let version = node(root).latch.read_begin()?;
        Ok((root_version, root, version))
    }

    // ----- point lookup -------------------------------------------------------------------

    /// Looks `key` up.
    pub fn get(&self, key: &[u8], _pin: &Pin<'_>) -> Probe {
        let key = SearchKey::new(key);
        for _ in 0..INDEX_RESTARTS_OPTIMISTIC_MAX {
            match self.try_get(&key) {
                Ok(probe) => return probe,
                Err(Restart) => self.count_restart(),
            }
        }
        self.get_locked(&key)
    }

    #[inline]
    fn try_get(&self, key: &SearchKey<'_>) -> Result<Probe, Restart> {
        let (_, mut current, mut version) = self.read_root()?;
        loop {
            let here = node(current);
            if here.is_leaf() {
                let (index, exact) = here.lower_bound(key);
                let value = exact.then(|| here.value(index));
                here.latch.read_validate(version)?;
                return Ok(Probe { value, leaf: LeafVersion { node: current, version } });
            }
            let child = here.child(here.route(key));
            Node::prefetch(child);
            here.latch.read_validate(version)?;
            version = node(child).latch.read_begin()?;
            current = child;
        }
    }

    /// Gives the leaf that holds (or would hold) `key` a new version without changing its
    /// contents, as an insert would, and tells `observer`. Transactions that recorded the leaf
    /// in their node set then fail node validation: this is how a deleted record still in the
    /// index that an insert brings back reaches scans, which skip such records unrecorded.
    pub fn touch(&self, key: &[u8], _pin: &Pin<'_>, observer: &mut impl LeafObserver) {
        let key = SearchKey::new(key);
        loop {
            match self.try_touch(&key, observer) {
                Ok(()) => return,
                Err(Restart) => {
                    self.count_restart();
                    std::hint::spin_loop();
                }
            }
        }
    }

    fn try_touch(
        &self,
        key: &SearchKey<'_>,
        observer: &mut impl LeafObserver,
    ) -> Result<(), Restart> {
        let (_, mut current, mut version) = self.read_root()?;
        loop {
            let here = node(current);
            if here.is_leaf() {
                // An unchanged version means this live leaf still covers the key (structure
                // changes are copy-on-write and make the old leaf obsolete).
                here.latch.try_upgrade(version)?;
                let after = LeafVersion { node: current, version: here.latch.unlock_returning() };
                observer.leaf_changed(current as usize, version, &[after]);
                return Ok(());
            }
            let child = here.child(here.route(key));
            here.latch.read_validate(version)?;
            version = node(child).latch.read_begin()?;
            current = child;
        }
    }

    /// Looks up to [`GROUP_KEYS`] keys up together: their paths descend a level at a time,
    /// each node prefetched a round before it is searched, so that the cache misses of
    /// different keys overlap instead of following one another (group prefetching). Calls
    /// `probed(i, probe)` for each key `keys[i]` whose descent met no concurrent change, in
    /// no particular order, as soon as its leaf is read; the caller looks the others up alone.
    pub fn get_group<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        _pin: &Pin<'_>,
        mut probed: impl FnMut(usize, Probe),
    ) {
        assert!(keys.len() <= GROUP_KEYS, "at most {GROUP_KEYS} keys in a group");
        let Ok((_, root, _)) = self.read_root() else { return };
        let mut paths = [root; GROUP_KEYS];
        let mut active: [usize; GROUP_KEYS] = std::array::from_fn(|index| index);
        let mut live = keys.len();
        while live > 0 {
            let mut next = 0;
            for slot in 0..live {
                let index = active[slot];
                let here = node(paths[index]);
                let Ok(version) = here.latch.read_begin() else { continue };
                let key = SearchKey::new(keys[index].as_ref());
                if here.is_leaf() {
                    let (position, exact) = here.lower_bound(&key);
                    let value = exact.then(|| here.value(position));
                    if here.latch.read_validate(version).is_ok() {
                        let leaf = LeafVersion { node: paths[index], version };
                        probed(index, Probe { value, leaf });
                    }
                    continue;
                }
                let child = here.child(here.route(&key));
                if here.latch.read_validate(version).is_err() {
                    continue;
                }
                Node::prefetch(child);
                paths[index] = child;
                active[next] = index;
                next += 1;
            }
            live = next;
        }
    }

    /// Pessimistic descent: latches each node on the path, parent before child. Returns the
    /// leaf locked.
    fn descend_locked(&self, key: &SearchKey<'_>) -> *mut Node {
        self.stats.pessimistic.fetch_add(1, Ordering::Relaxed);
        loop {
            if self.root_latch.lock().is_err() {
                unreachable!("the root latch is never obsolete");
            }
            let mut current = self.root.load(Ordering::Acquire);
            let locked = node(current).latch.lock();
            self.root_latch.unlock();
            if locked.is_err() {
                continue;
            }
            loop {
                let here = node(current);
                if here.is_leaf() {
                    return current;
                }
                let child = here.child(here.route(key));
                // The child cannot be replaced while its parent is latched.
                node(child).latch.lock().expect("a child of a latched parent is live");
                here.latch.unlock();
                current = child;
            }
        }
    }

    fn get_locked(&self, key: &SearchKey<'_>) -> Probe {
        let leaf = self.descend_locked(key);
        let here = node(leaf);
        let (index, exact) = here.lower_bound(key);
        let value = exact.then(|| here.value(index));
        let version = here.latch.unlock_returning();
        Probe { value, leaf: LeafVersion { node: leaf, version } }
    }

    // ----- insert -------------------------------------------------------------------------

    /// Inserts `key -> value` if `key` is absent. Returns the leaf version after the insert,
    /// or the existing value.
    pub fn insert(
        &self,
        key: &[u8],
        mut value: u64,
        _pin: &Pin<'_>,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) -> Result<LeafVersion, u64> {
        assert!(key.len() <= INDEX_KEY_BYTES_MAX, "callers check key lengths");
        self.insert_from_root(&SearchKey::new(key), &mut value, garbage, observer, &mut ())
    }

    /// Optimistic descents from the root (telling `path` of each), then a pessimistic one.
    #[inline]
    fn insert_from_root(
        &self,
        key: &SearchKey<'_>,
        value: &mut impl ValueSource,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
        path: &mut impl PathNotes,
    ) -> Result<LeafVersion, u64> {
        let mut conflicts = 0;
        let mut changes = 0;
        while conflicts < INDEX_RESTARTS_OPTIMISTIC_MAX && changes < STRUCTURE_CHANGES_MAX {
            match self.try_insert(key, value, garbage, observer, path) {
                Ok(Step::Done(result)) => return result,
                Ok(Step::Again) => changes += 1,
                Err(Restart) => {
                    conflicts += 1;
                    self.count_restart();
                }
            }
        }
        self.insert_locked(key, value, garbage, observer)
    }

    #[inline]
    fn try_insert(
        &self,
        key: &SearchKey<'_>,
        value: &mut impl ValueSource,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
        path: &mut impl PathNotes,
    ) -> Result<Step<Result<LeafVersion, u64>>, Restart> {
        let (root_version, mut current, mut version) = self.read_root()?;
        let mut parent = Parent::Root(root_version);
        path.descend();
        loop {
            let here = node(current);
            if !here.is_leaf() {
                if here.inner_is_full() {
                    self.lock_pair(parent, here, version)?;
                    self.replace(parent, current, version, None, None, garbage, observer);
                    return Ok(Step::Again);
                }
                let route = here.route(key);
                let child = here.child(route);
                here.latch.read_validate(version)?;
                path.inner(current, route, version);
                let child_version = node(child).latch.read_begin()?;
                parent = Parent::Inner(here, version);
                current = child;
                version = child_version;
                continue;
            }
            path.leaf(self, current);
            let (index, exact) = here.lower_bound(key);
            if exact {
                let existing = here.value(index);
                here.latch.read_validate(version)?;
                return Ok(Step::Done(Err(existing)));
            }
            if here.fits(key.bytes.len()) == Fit::No {
                self.lock_pair(parent, here, version)?;
                let ascending = here.follows_last_insert(index).then_some(index);
                self.replace(
                    parent,
                    current,
                    version,
                    Some(key.bytes.len()),
                    ascending,
                    garbage,
                    observer,
                );
                return Ok(Step::Again);
            }
            // An unchanged version means `index` and the fit are still right.
            here.latch.try_upgrade(version)?;
            here.leaf_insert(index, key.bytes, value.value());
            let after = LeafVersion { node: current, version: here.latch.unlock_returning() };
            observer.leaf_changed(current as usize, version, &[after]);
            return Ok(Step::Done(Ok(after)));
        }
    }

    /// Inserts `key -> make()` if `key` is absent, as [`BTree::insert`] does, starting at the
    /// leaf `finger` remembers when that leaf's range holds `key`: a run of keys in ascending
    /// order (recovery's sorted replay, a checkpoint's rows) then descends once per leaf
    /// instead of once per key. Otherwise it descends from the root and remembers the leaf it
    /// reaches and that leaf's fence keys. `make` is called once, under the leaf's latch, only
    /// when the key is inserted, so a caller that finds its key present made nothing.
    pub fn insert_near<'a>(
        &'a self,
        finger: &mut Finger<'a>,
        key: &[u8],
        make: impl FnOnce() -> u64,
        _pin: &Pin<'_>,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) -> Result<LeafVersion, u64> {
        assert!(key.len() <= INDEX_KEY_BYTES_MAX, "callers check key lengths");
        let search = SearchKey::new(key);
        let mut value = Make(Some(make));
        if finger.covers(self, key)
            && let Some(result) = self.try_insert_at(finger.leaf, &search, &mut value, observer)
        {
            finger.hits += 1;
            return result;
        }
        // A leaf the finger notes on a descent that then restarts still covers what its
        // fences say (they were validated), so the pessimistic insert leaves it be.
        self.insert_from_root(&search, &mut value, garbage, observer, finger)
    }

    /// The insert of `insert_near` in a leaf known to cover `key`: `None` when the leaf is
    /// latched, obsolete, changed while read, or full (the caller descends from the root).
    #[inline]
    fn try_insert_at(
        &self,
        leaf: *mut Node,
        key: &SearchKey<'_>,
        value: &mut impl ValueSource,
        observer: &mut impl LeafObserver,
    ) -> Option<Result<LeafVersion, u64>> {
        let here = node(leaf);
        let version = here.latch.read_begin().ok()?;
        let (index, exact) = here.lower_bound(key);
        if exact {
            let existing = here.value(index);
            here.latch.read_validate(version).ok()?;
            return Some(Err(existing));
        }
        if here.fits(key.bytes.len()) == Fit::No {
            return None;
        }
        // A live leaf's range never changes (structure changes are copy-on-write), and an
        // unchanged version means `index` and the fit are still right.
        here.latch.try_upgrade(version).ok()?;
        here.leaf_insert(index, key.bytes, value.value());
        let after = LeafVersion { node: leaf, version: here.latch.unlock_returning() };
        observer.leaf_changed(leaf as usize, version, &[after]);
        Some(Ok(after))
    }

    /// Upgrades the parent, then the node; on failure releases what it took.
    fn lock_pair(&self, parent: Parent<'_>, here: &Node, version: u64) -> Result<(), Restart> {
        match parent {
            Parent::Root(root_version) => self.root_latch.try_upgrade(root_version)?,
            Parent::Inner(above, above_version) => above.latch.try_upgrade(above_version)?,
        }
        if here.latch.try_upgrade(version).is_err() {
            self.unlock_parent(parent);
            return Err(Restart);
        }
        Ok(())
    }

    fn unlock_parent(&self, parent: Parent<'_>) {
        match parent {
            Parent::Root(_) => self.root_latch.unlock(),
            Parent::Inner(above, _) => above.latch.unlock(),
        }
    }

    fn insert_locked(
        &self,
        key: &SearchKey<'_>,
        value: &mut impl ValueSource,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) -> Result<LeafVersion, u64> {
        self.stats.pessimistic.fetch_add(1, Ordering::Relaxed);
        for _ in 0..STRUCTURE_CHANGES_MAX {
            // Lock coupling that keeps the parent latched, so structure changes can be made
            // on the way down. Latch words are read after locking: `before` versions below
            // are the words this thread upgraded from.
            self.root_latch.lock().expect("the root latch is never obsolete");
            let mut parent = Parent::Root(0);
            let mut current = self.root.load(Ordering::Acquire);
            let mut version = node(current).latch.lock_returning().expect("the root is live");
            loop {
                let here = node(current);
                if !here.is_leaf() {
                    if here.inner_is_full() {
                        self.replace(parent, current, version, None, None, garbage, observer);
                        break;
                    }
                    let child = here.child(here.route(key));
                    let child_version =
                        node(child).latch.lock_returning().expect("child of a latched parent");
                    self.unlock_parent(parent);
                    parent = Parent::Inner(here, version);
                    current = child;
                    version = child_version;
                    continue;
                }
                let (index, exact) = here.lower_bound(key);
                if exact {
                    let existing = here.value(index);
                    here.latch.unlock();
                    self.unlock_parent(parent);
                    return Err(existing);
                }
                if here.fits(key.bytes.len()) == Fit::No {
                    self.replace(
                        parent,
                        current,
                        version,
                        Some(key.bytes.len()),
                        here.follows_last_insert(index).then_some(index),
                        garbage,
                        observer,
                    );
                    break;
                }
                here.leaf_insert(index, key.bytes, value.value());
                let after = LeafVersion { node: current, version: here.latch.unlock_returning() };
                self.unlock_parent(parent);
                observer.leaf_changed(current as usize, version, &[after]);
                return Ok(after);
            }
        }
        panic!(
            "an insert made {STRUCTURE_CHANGES_MAX} structure changes without fitting: the tree is corrupt"
        );
    }

    // ----- scans --------------------------------------------------------------------------

    /// Descends to the leaf for a scan position and copies the leaf's entries in `range`
    /// (see `iter.rs`). Optimistic; the caller handles restarts.
    pub(super) fn root_for_scan(&self) -> Result<(*mut Node, u64), Restart> {
        let (_, root, version) = self.read_root()?;
        Ok((root, version))
    }

    pub(super) fn root_locked(&self) -> *mut Node {
        self.stats.pessimistic.fetch_add(1, Ordering::Relaxed);
        loop {
            self.root_latch.lock().expect("the root latch is never obsolete");
            let root = self.root.load(Ordering::Acquire);
            let locked = node(root).latch.lock();
            self.root_latch.unlock();
            if locked.is_ok() {
                return root;
            }
        }
    }

    pub(super) fn note_restart(&self) {
        self.count_restart();
    }

    // ----- whole-tree helpers (single-threaded callers) -----------------------------------

    /// Number of levels (a lone leaf is height 1). Quiescent trees only.
    pub fn height(&self) -> usize {
        node(self.root.load(Ordering::Acquire)).level() as usize + 1
    }

    /// Visits every node. The caller must ensure no concurrent structure changes (tests,
    /// checkpoint-free shutdown, `Drop`).
    fn for_each_node(&self, mut visit: impl FnMut(*mut Node)) {
        let mut stack = vec![self.root.load(Ordering::Acquire)];
        while let Some(current) = stack.pop() {
            let here = node(current);
            if !here.is_leaf() {
                stack.extend((0..=here.count()).map(|index| here.child(index)));
            }
            visit(current);
        }
    }

    /// Node counts by kind: (inner, leaves, leaves with a heap). Quiescent trees only.
    pub fn node_counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        self.for_each_node(|current| {
            let here = node(current);
            if here.is_leaf() {
                counts.1 += 1;
                counts.2 += (here.heap_words() > 0) as usize;
            } else {
                counts.0 += 1;
            }
        });
        counts
    }

    /// Checks the structural invariants; panics with a description on the first violation.
    /// Quiescent trees only.
    pub fn check_invariants(&self) {
        fn check(current: *mut Node, low: Option<&[u8]>, high: Option<&[u8]>, level: u32) {
            let here = node(current);
            assert_eq!(here.level(), level, "levels decrease by one");
            assert!(!here.latch.is_locked(), "no latch held at rest");
            let mut previous: Option<Vec<u8>> = None;
            for index in 0..here.count() {
                let mut key = Vec::new();
                here.read_key(index, &mut key);
                if let Some(previous) = &previous {
                    assert!(previous < &key, "keys strictly increase in a node");
                }
                assert!(low.is_none_or(|low| key.as_slice() >= low), "key below lower fence");
                assert!(
                    high.is_none_or(|high| key.as_slice() < high),
                    "key at or above upper fence"
                );
                previous = Some(key);
            }
            if !here.is_leaf() {
                let mut separators = Vec::new();
                for index in 0..here.count() {
                    let mut key = Vec::new();
                    here.read_key(index, &mut key);
                    separators.push(key);
                }
                for index in 0..=here.count() {
                    let child_low =
                        if index == 0 { low } else { Some(separators[index - 1].as_slice()) };
                    let child_high = if index == here.count() {
                        high
                    } else {
                        Some(separators[index].as_slice())
                    };
                    check(here.child(index), child_low, child_high, level - 1);
                }
            }
        }
        let root = self.root.load(Ordering::Acquire);
        check(root, None, None, node(root).level());
        let leaves = self.node_counts().1 as u64;
        assert_eq!(self.leaves(), leaves, "the leaf counter counts the leaves");
    }
}

impl Drop for BTree {
    fn drop(&mut self) {
        let mut nodes = Vec::new();
        self.for_each_node(|current| nodes.push(current));
        for current in nodes {
            // SAFETY: `&mut self` means no other thread reaches the tree; every node is freed
            // once. Nodes already retired are not reachable from the root.
            unsafe { Node::free(current) };
        }
    }
}
