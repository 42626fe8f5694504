//! Range scans, forward and reverse, one leaf at a time.
//!
//! A scan never holds a position inside the tree between leaves. For each leaf it descends from
//! the root to the leaf that holds the cursor, noting the tightest fence key on the way (the
//! separator just above the leaf's range going forward, just below it going backward), copies
//! the leaf's entries in range into the caller's buffer (for the first leaf, no more than the
//! caller expects to use), validates, and reports the leaf and its version before handing out
//! the entries. The next leaf is found by descending again to
//! the fence. Re-descending costs a few cached node visits per leaf, and in exchange leaves
//! need no sibling pointers, which keeps copy-on-write splits and merges simple and lets every
//! scan step restart on its own.
//!
//! The (leaf, version) pairs reported are exactly the leaves whose key ranges cover the scanned
//! interval, which is what Silo's node set needs to detect phantoms at commit.

use super::node::{Node, SearchKey};
use super::tree::{BTree, LeafVersion};
use crate::limits::INDEX_RESTARTS_OPTIMISTIC_MAX;
use crate::sync::{Pin, Restart};
use std::ops::Bound;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// Receives a scan's leaves and entries, in order.
pub trait ScanVisitor {
    /// A leaf the scan read, with the version it had; called before the leaf's entries.
    fn leaf(&mut self, leaf: LeafVersion);
    /// An entry in range. Return `false` to stop the scan.
    fn entry(&mut self, key: &[u8], value: u64) -> bool;
    /// The value of the entry the scan will hand to `entry` [`SCAN_PREFETCH_DISTANCE`]
    /// entries from now, if the visitor goes on. A hint: a visitor that follows values as
    /// pointers can start loading what this one points to.
    #[inline]
    fn upcoming(&mut self, _value: u64) {}
}

/// How many entries ahead of the one visited a scan names to `ScanVisitor::upcoming`.
pub const SCAN_PREFETCH_DISTANCE: usize = 4;

/// Reusable memory for scans: no allocation once it has grown to the largest leaf.
#[derive(Debug, Default)]
pub struct ScanBuffer {
    keys: Vec<u8>,
    entries: Vec<(u32, u32, u64)>,
    cursor: Vec<u8>,
    fence: Vec<u8>,
}

impl ScanBuffer {
    pub fn new() -> Self {
        ScanBuffer::default()
    }
}

#[derive(Clone, Copy)]
enum Cursor {
    Start,
    Included,
    Excluded,
}

/// Where a scan goes after a leaf.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Nowhere: the range ends in this leaf.
    Done,
    /// To the leaf beyond the fence.
    Fence,
    /// On in this leaf, past the last entry taken: the step took as many as it was asked for.
    PastLast,
}

#[inline]
fn node<'t>(pointer: *mut Node) -> &'t Node {
    // SAFETY: pointers come from the root or child slots read while pinned (see tree.rs).
    unsafe { &*pointer }
}

impl BTree {
    /// Visits the entries with keys in `(low, high)` in `direction` order until the visitor
    /// stops or the range ends.
    pub fn scan(
        &self,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        direction: Direction,
        pin: &Pin<'_>,
        buffer: &mut ScanBuffer,
        visitor: &mut impl ScanVisitor,
    ) {
        self.scan_expecting(low, high, direction, usize::MAX, pin, buffer, visitor);
    }

    /// [`BTree::scan`] for a visitor expected to stop after about `expected` entries (a scan
    /// under `LIMIT 1`): the first leaf hands out at most that many before the scan looks at
    /// the rest, so a short scan does not copy a whole leaf. A visitor that wants more gets
    /// them: the scan goes on past the last entry taken, reading the same leaf again (which
    /// it reports again, with the version it has then).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_expecting(
        &self,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        direction: Direction,
        expected: usize,
        _pin: &Pin<'_>,
        buffer: &mut ScanBuffer,
        visitor: &mut impl ScanVisitor,
    ) {
        let (start, stop) = match direction {
            Direction::Forward => (low, high),
            Direction::Reverse => (high, low),
        };
        let mut cursor = match start {
            Bound::Unbounded => Cursor::Start,
            Bound::Included(key) => {
                buffer.cursor.clear();
                buffer.cursor.extend_from_slice(key);
                Cursor::Included
            }
            Bound::Excluded(key) => {
                buffer.cursor.clear();
                buffer.cursor.extend_from_slice(key);
                Cursor::Excluded
            }
        };
        let mut most = expected.max(1);
        loop {
            let (leaf, next) = self.leaf_step(direction, cursor, stop, most, buffer);
            visitor.leaf(leaf);
            let entries = &buffer.entries;
            for &(_, _, value) in entries.iter().take(SCAN_PREFETCH_DISTANCE) {
                visitor.upcoming(value);
            }
            for (index, &(start, len, value)) in entries.iter().enumerate() {
                if let Some(&(_, _, ahead)) = entries.get(index + SCAN_PREFETCH_DISTANCE) {
                    visitor.upcoming(ahead);
                }
                let key = &buffer.keys[start as usize..(start + len) as usize];
                if !visitor.entry(key, value) {
                    return;
                }
            }
            match next {
                Next::Done => return,
                Next::Fence => {}
                Next::PastLast => {
                    // Strictly beyond every entry handed out, in either direction.
                    let &(start, len, _) = buffer.entries.last().expect("a step took entries");
                    buffer.cursor.clear();
                    buffer.cursor.extend_from_slice(&buffer.keys[start as usize..][..len as usize]);
                    cursor = Cursor::Excluded;
                    most = usize::MAX;
                    continue;
                }
            }
            // The next leaf starts strictly beyond where this one started: a scan always ends.
            // (Going backward from an inclusive bound, the fence may equal it: the next cursor
            // excludes it, which is progress.)
            let progressed = match (cursor, direction) {
                (Cursor::Start, _) => true,
                (_, Direction::Forward) => buffer.fence > buffer.cursor,
                (Cursor::Included, Direction::Reverse) => buffer.fence <= buffer.cursor,
                (Cursor::Excluded, Direction::Reverse) => buffer.fence < buffer.cursor,
            };
            assert!(progressed, "scan fence does not advance: the tree is corrupt");
            std::mem::swap(&mut buffer.cursor, &mut buffer.fence);
            cursor = match direction {
                Direction::Forward => Cursor::Included,
                Direction::Reverse => Cursor::Excluded,
            };
        }
    }

    /// Reads at most `most` entries of one leaf of a scan: optimistically, then with latches
    /// after repeated restarts. Returns the leaf and where the scan goes next.
    fn leaf_step(
        &self,
        direction: Direction,
        cursor: Cursor,
        stop: Bound<&[u8]>,
        most: usize,
        buffer: &mut ScanBuffer,
    ) -> (LeafVersion, Next) {
        for _ in 0..INDEX_RESTARTS_OPTIMISTIC_MAX {
            match self.try_leaf_step(direction, cursor, stop, most, buffer, false) {
                Ok(step) => return step,
                Err(Restart) => self.note_restart(),
            }
        }
        self.try_leaf_step(direction, cursor, stop, most, buffer, true)
            .expect("a latched descent does not restart")
    }

    fn try_leaf_step(
        &self,
        direction: Direction,
        cursor: Cursor,
        stop: Bound<&[u8]>,
        most: usize,
        buffer: &mut ScanBuffer,
        locked: bool,
    ) -> Result<(LeafVersion, Next), Restart> {
        let ScanBuffer { keys, entries, cursor: cursor_key, fence } = buffer;
        keys.clear();
        entries.clear();
        fence.clear();
        let mut has_fence = false;
        let search = SearchKey::new(cursor_key);
        let (mut current, mut version) =
            if locked { (self.root_locked(), 0) } else { self.root_for_scan()? };
        loop {
            let here = node(current);
            if !here.is_leaf() {
                let count = here.count();
                let index = match (direction, cursor) {
                    (Direction::Forward, Cursor::Start) => 0,
                    (Direction::Forward, _) => here.route(&search),
                    (Direction::Reverse, Cursor::Start) => count,
                    (Direction::Reverse, Cursor::Included) => here.route_below(&search, true),
                    (Direction::Reverse, Cursor::Excluded) => here.route_below(&search, false),
                };
                let fence_slot = match direction {
                    Direction::Forward => (index < count).then_some(index),
                    Direction::Reverse => index.checked_sub(1),
                };
                if let Some(slot) = fence_slot {
                    fence.clear();
                    here.read_key(slot, fence);
                    has_fence = true;
                }
                let child = here.child(index);
                if locked {
                    node(child).latch.lock().expect("a child of a latched parent is live");
                    here.latch.unlock();
                } else {
                    here.latch.read_validate(version)?;
                    version = node(child).latch.read_begin()?;
                }
                current = child;
                continue;
            }
            let count = here.count();
            let (mut last, mut full, mut taken) = (false, false, 0);
            let mut take = |index: usize, keys: &mut Vec<u8>| -> bool {
                let start = keys.len();
                here.read_key(index, keys);
                let key = &keys[start..];
                let beyond = match (direction, stop) {
                    (_, Bound::Unbounded) => false,
                    (Direction::Forward, Bound::Included(high)) => key > high,
                    (Direction::Forward, Bound::Excluded(high)) => key >= high,
                    (Direction::Reverse, Bound::Included(low)) => key < low,
                    (Direction::Reverse, Bound::Excluded(low)) => key <= low,
                };
                if beyond {
                    keys.truncate(start);
                    return false;
                }
                entries.push((start as u32, (keys.len() - start) as u32, here.value(index)));
                true
            };
            match direction {
                Direction::Forward => {
                    let first = match cursor {
                        Cursor::Start => 0,
                        Cursor::Included => here.lower_bound(&search).0,
                        Cursor::Excluded => {
                            let (index, exact) = here.lower_bound(&search);
                            index + exact as usize
                        }
                    };
                    for index in first..count {
                        if taken == most {
                            full = true;
                            break;
                        }
                        if !take(index, keys) {
                            last = true;
                            break;
                        }
                        taken += 1;
                    }
                }
                Direction::Reverse => {
                    let end = match cursor {
                        Cursor::Start => count,
                        Cursor::Included => {
                            let (index, exact) = here.lower_bound(&search);
                            index + exact as usize
                        }
                        Cursor::Excluded => here.lower_bound(&search).0,
                    };
                    for index in (0..end.min(count)).rev() {
                        if taken == most {
                            full = true;
                            break;
                        }
                        if !take(index, keys) {
                            last = true;
                            break;
                        }
                        taken += 1;
                    }
                }
            }
            let version = if locked {
                here.latch.unlock_returning()
            } else {
                here.latch.read_validate(version)?;
                version
            };
            // The next leaf starts at the fence; it is needed only if the fence is in range.
            let fence_in_range = has_fence
                && match (direction, stop) {
                    (_, Bound::Unbounded) => true,
                    (Direction::Forward, Bound::Included(high)) => fence.as_slice() <= high,
                    (Direction::Forward, Bound::Excluded(high)) => fence.as_slice() < high,
                    (Direction::Reverse, Bound::Included(low) | Bound::Excluded(low)) => {
                        fence.as_slice() > low
                    }
                };
            let next = if full {
                Next::PastLast
            } else if last || !fence_in_range {
                Next::Done
            } else {
                Next::Fence
            };
            return Ok((LeafVersion::new(current, version), next));
        }
    }
}
