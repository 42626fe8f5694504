//! B+tree nodes: fixed-capacity slot arrays for cache-friendly search, plus an optional heap
//! for the bytes of keys longer than one word (SYSTEM.md §7: keys of a node stored together,
//! small offsets instead of pointers).
//!
//! LAYOUT (one allocation, 64-byte aligned)
//!
//! | field          | type                 | meaning                                          |
//! |----------------|----------------------|--------------------------------------------------|
//! | `latch`        | `VersionLatch`       | optimistic lock coupling (`sync::latch`)         |
//! | `count`        | u32                  | keys in the node (leaf entries / separators)     |
//! | `heap_used`    | u32                  | heap words handed out (bump allocation)          |
//! | `heap_garbage` | u32                  | heap words of removed keys, freed by compaction  |
//! | `heap_words`   | u32, immutable       | heap capacity: 0 (short node) or `HEAP_WORDS`    |
//! | `level`        | u32, immutable       | 0 for a leaf, parent = child + 1                 |
//! | `last_insert`  | u32                  | leaf: slot after the last inserted key (a hint)  |
//! | `heads`        | u64 x `SLOTS_MAX`    | first 8 key bytes, big-endian, zero-padded       |
//! | `metas`        | u32 x `SLOTS_MAX`    | key length << 16 \| heap offset of the rest      |
//! | `values`       | u64 x (`SLOTS_MAX`+1)| leaf: record references; inner: child pointers   |
//! | heap           | u64 x `heap_words`   | key bytes 8.. as big-endian zero-padded words    |
//!
//! Keys compare as their `heads` first, which decides almost every comparison with one load
//! from a dense array; ties fall through to the heap words and then to the lengths. Because
//! words are big-endian and zero-padded, word-wise unsigned comparison followed by the length
//! is exactly lexicographic byte order.
//!
//! Every field is an atomic so that optimistic readers, which race with writers by design,
//! perform no data race; readers clamp every count and offset they read, because a torn node
//! must never lead them out of bounds, and validate the latch before using what they read.
//! Inner node `i` routes keys in `[sep[i-1], sep[i])` to child `i`.

use super::pool::{alloc_node, free_node};
use crate::limits::INDEX_KEY_BYTES_MAX;
use crate::sync::VersionLatch;
use std::cmp::Ordering as Cmp;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Keys per node. 64 heads are 512 bytes (8 cache lines): a binary search touches about four of
/// them, and a tree of 10 million keys is four levels deep.
pub(crate) const SLOTS_MAX: usize = 64;

/// Words of one key at most.
pub(crate) const KEY_WORDS_MAX: usize = INDEX_KEY_BYTES_MAX.div_ceil(8);

/// Heap capacity of a long node: room for the tails of 64 keys of 64 bytes, and always for at
/// least four of the longest keys, so that a split node accepts the key that split it.
pub(crate) const HEAP_WORDS: usize = 512;

/// A leaf with fewer keys than this after a removal is merged with a sibling when they fit.
pub(crate) const UNDERFULL_COUNT: usize = SLOTS_MAX / 4;

/// Two nodes merge only if the result leaves room for a quarter of a node of inserts, so that
/// a merge is not undone by the next split.
pub(crate) const MERGED_COUNT_MAX: usize = SLOTS_MAX * 3 / 4;

const _: () = assert!(HEAP_WORDS >= 4 * (KEY_WORDS_MAX - 1));
const _: () = assert!(HEAP_WORDS <= u16::MAX as usize);
const _: () = assert!(SLOTS_MAX >= 8 && SLOTS_MAX.is_power_of_two());

/// Words a key of `len` bytes occupies (at least one: the head).
#[inline]
pub(crate) fn key_words(len: usize) -> usize {
    len.div_ceil(8).max(1)
}

/// A key prepared for comparison against node slots.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchKey<'a> {
    pub bytes: &'a [u8],
    pub head: u64,
    /// Word 1, which every comparison with a slot of the same head reads first (keys of 9 to
    /// 16 bytes that share their first 8, such as composite integer keys, are common).
    pub second: u64,
}

impl<'a> SearchKey<'a> {
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Self {
        let second = if bytes.len() > 8 { word_at(bytes, 1) } else { 0 };
        SearchKey { bytes, head: word_at(bytes, 0), second }
    }

    /// Word `index` of the key: bytes `8*index..8*index+8`, big-endian, zero-padded.
    #[inline]
    pub fn word(&self, index: usize) -> u64 {
        word_at(self.bytes, index)
    }
}

#[inline]
fn word_at(bytes: &[u8], index: usize) -> u64 {
    let start = index * 8;
    match bytes.get(start..start + 8) {
        Some(chunk) => u64::from_be_bytes(chunk.try_into().expect("eight bytes")),
        None => {
            let mut buffer = [0u8; 8];
            if start < bytes.len() {
                let tail = &bytes[start..];
                buffer[..tail.len()].copy_from_slice(tail);
            }
            u64::from_be_bytes(buffer)
        }
    }
}

#[repr(C, align(64))]
pub(crate) struct Node {
    pub latch: VersionLatch,
    count: AtomicU32,
    heap_used: AtomicU32,
    heap_garbage: AtomicU32,
    heap_words: u32,
    level: u32,
    last_insert: AtomicU32,
    heads: [AtomicU64; SLOTS_MAX],
    metas: [AtomicU32; SLOTS_MAX],
    values: [AtomicU64; SLOTS_MAX + 1],
    /// Leaves under the `ssn` protocol: the newest commit timestamp of a transaction whose
    /// scan saw this leaf (or a leaf it replaced), as a raw TID (`cc/ssn.rs`, phantoms). In
    /// what was the struct's tail padding: the node keeps its size.
    pub pstamp: AtomicU64,
}

/// Whether a key fits into a node as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    Yes,
    /// Fits once the heap is compacted.
    AfterCompaction,
    No,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("level", &self.level)
            .field("count", &self.count())
            .field("heap_words", &self.heap_words)
            .finish()
    }
}

impl Node {
    fn bytes(heap_words: usize) -> usize {
        const _: () = assert!(size_of::<Node>().is_multiple_of(64) && align_of::<Node>() == 64);
        size_of::<Node>() + heap_words * 8
    }

    /// Allocates an empty node. Short leaves (`heap_words == 0`) hold keys of up to 8 bytes.
    pub fn alloc(level: u32, heap_words: usize) -> *mut Node {
        debug_assert!(heap_words == 0 || heap_words == HEAP_WORDS);
        let bytes = Self::bytes(heap_words);
        let raw = alloc_node(bytes) as *mut Node;
        // SAFETY: `raw` is a block of `bytes` for a `Node` and its heap, 64-byte aligned. Zeroed,
        // the std atomics are valid; the latch and the immutable fields are written explicitly
        // so that the latch may be any type (shuttle's under `--features shuttle`).
        unsafe {
            std::ptr::write_bytes(raw as *mut u8, 0, bytes);
            std::ptr::write(&raw mut (*raw).latch, VersionLatch::new());
            (*raw).heap_words = heap_words as u32;
            (*raw).level = level;
        }
        raw
    }

    /// A node unlinked by a split, a merge or a root change, for the worker's garbage list.
    pub(crate) fn retired(node: *mut Node) -> crate::sync::Retired {
        crate::sync::Retired::new(node as *mut u8, 0, Node::free_retired)
    }

    /// # Safety
    /// As [`Node::free`] (`sync::reclaim::Free`).
    unsafe fn free_retired(node: *mut u8, _bytes: usize, _arena: &mut crate::mem::arena::Arena) {
        // SAFETY: guaranteed by the caller.
        unsafe { Node::free(node as *mut Node) }
    }

    /// # Safety
    /// `node` came from [`Node::alloc`] and no thread can reach it any more.
    pub unsafe fn free(node: *mut Node) {
        // SAFETY: the caller guarantees exclusive ownership of a node from `alloc`.
        unsafe {
            let bytes = Self::bytes((*node).heap_words as usize);
            std::ptr::drop_in_place(&raw mut (*node).latch);
            free_node(node as *mut u8, bytes);
        }
    }

    #[inline]
    fn heap(&self) -> &[AtomicU64] {
        // SAFETY: `alloc` reserved `heap_words` atomics right after the struct, zero-initialised;
        // `heap_words` never changes.
        unsafe {
            let start = (self as *const Node as *const u8).add(size_of::<Node>());
            std::slice::from_raw_parts(start as *const AtomicU64, self.heap_words as usize)
        }
    }

    /// Asks the CPU to start loading what a search of `node` reads: its header, its heads and
    /// its values (the child pointers of an inner node, the record references of a leaf). They
    /// arrive together instead of as one dependent miss per binary-search step and one more for
    /// the value (measured in docs/performance.md).
    #[inline(always)]
    pub fn prefetch(node: *const Node) {
        #[cfg(target_arch = "x86_64")]
        {
            const HEADS_END: usize = std::mem::offset_of!(Node, metas);
            const VALUES: usize = std::mem::offset_of!(Node, values);
            const VALUES_END: usize = VALUES + 8 * (SLOTS_MAX + 1);
            let start = node as *const i8;
            let line = |offset: usize| {
                // SAFETY: prefetching is a hint that never faults; the addresses lie within
                // the node, which the caller reached while pinned.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        start.add(offset),
                    );
                }
            };
            (0..HEADS_END).step_by(64).for_each(line);
            (VALUES & !63..VALUES_END).step_by(64).for_each(line);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = node;
    }

    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }

    pub fn level(&self) -> u32 {
        self.level
    }

    pub fn heap_words(&self) -> usize {
        self.heap_words as usize
    }

    /// Keys in the node, clamped so a torn read stays in bounds.
    #[inline]
    pub fn count(&self) -> usize {
        (self.count.load(Relaxed) as usize).min(SLOTS_MAX)
    }

    #[inline]
    pub fn value(&self, index: usize) -> u64 {
        self.values[index.min(SLOTS_MAX)].load(Relaxed)
    }

    #[inline]
    pub fn set_value(&self, index: usize, value: u64) {
        self.values[index].store(value, Relaxed);
    }

    #[inline]
    pub fn child(&self, index: usize) -> *mut Node {
        self.value(index) as *mut Node
    }

    #[inline]
    fn key_len(&self, index: usize) -> usize {
        ((self.metas[index].load(Relaxed) >> 16) as usize).min(INDEX_KEY_BYTES_MAX)
    }

    #[inline]
    fn heap_offset(&self, index: usize) -> usize {
        (self.metas[index].load(Relaxed) & 0xFFFF) as usize
    }

    /// Heap word `offset`, or 0 when a torn read points outside the heap.
    #[inline]
    fn heap_word(&self, offset: usize) -> u64 {
        self.heap().get(offset).map_or(0, |word| word.load(Relaxed))
    }

    /// Compares the key in slot `index` with `key`.
    #[inline]
    pub fn compare(&self, index: usize, key: &SearchKey<'_>) -> Cmp {
        let head = self.heads[index].load(Relaxed);
        if head != key.head {
            return head.cmp(&key.head);
        }
        let meta = self.metas[index].load(Relaxed);
        let len = ((meta >> 16) as usize).min(INDEX_KEY_BYTES_MAX);
        let key_len = key.bytes.len();
        if len <= 8 || key_len <= 8 {
            // Equal heads, and one key fits in its head: it is a prefix of the other (heads are
            // zero-padded), so the shorter is the lesser.
            return len.cmp(&key_len);
        }
        // Keys of 9 to 16 bytes sharing their first 8 (composite integer keys) end here,
        // without the general loop.
        let mine = self.heap_word((meta & 0xFFFF) as usize);
        if mine != key.second {
            return mine.cmp(&key.second);
        }
        if len <= 16 || key_len <= 16 {
            return len.cmp(&key_len);
        }
        self.compare_tail(index, key)
    }

    /// Compares the tails word by word (keys of more than 16 bytes that share 16).
    #[cold]
    fn compare_tail(&self, index: usize, key: &SearchKey<'_>) -> Cmp {
        let len = self.key_len(index);
        let offset = self.heap_offset(index);
        let tail_words = key_words(len).min(key_words(key.bytes.len())) - 1;
        for word in 0..tail_words {
            let mine = self.heap_word(offset + word);
            let theirs = if word == 0 { key.second } else { key.word(word + 1) };
            if mine != theirs {
                return mine.cmp(&theirs);
            }
        }
        len.cmp(&key.bytes.len())
    }

    /// First slot whose head is not less than `head`, among the first `count` slots.
    ///
    /// Branch-free binary search (Khuong and Morin's layout-independent variant): the loop
    /// always runs log2(count) times and the comparison becomes a conditional move, so random
    /// keys cost no branch mispredictions.
    #[inline]
    fn lower_bound_heads(&self, head: u64, count: usize) -> usize {
        if count == 0 {
            return 0;
        }
        let mut base = 0;
        let mut remaining = count;
        while remaining > 1 {
            let half = remaining / 2;
            let probe = self.heads[base + half].load(Relaxed);
            base = std::hint::select_unpredictable(probe < head, base + half, base);
            remaining -= half;
        }
        base + (self.heads[base].load(Relaxed) < head) as usize
    }

    /// First slot whose key is not less than `key`, and whether it equals `key`.
    #[inline]
    pub fn lower_bound(&self, key: &SearchKey<'_>) -> (usize, bool) {
        let count = self.count();
        let first = self.lower_bound_heads(key.head, count);
        if first == count || self.heads[first].load(Relaxed) != key.head {
            return (first, false);
        }
        match self.compare(first, key) {
            Cmp::Equal => (first, true),
            Cmp::Greater => (first, false),
            // Several keys share this head (long keys with a common prefix): search the rest
            // comparing whole keys.
            Cmp::Less => self.lower_bound_from(first + 1, count, key),
        }
    }

    #[cold]
    fn lower_bound_from(&self, from: usize, count: usize, key: &SearchKey<'_>) -> (usize, bool) {
        let (mut low, mut high) = (from, count);
        while low < high {
            let middle = (low + high) / 2;
            match self.compare(middle, key) {
                Cmp::Less => low = middle + 1,
                Cmp::Equal => return (middle, true),
                Cmp::Greater => high = middle,
            }
        }
        (low, false)
    }

    /// The child of an inner node whose range holds `key`: the number of separators <= `key`.
    #[inline]
    pub fn route(&self, key: &SearchKey<'_>) -> usize {
        let (index, exact) = self.lower_bound(key);
        index + exact as usize
    }

    /// The child holding the greatest keys below `key` (`inclusive`: at or below).
    #[inline]
    pub fn route_below(&self, key: &SearchKey<'_>, inclusive: bool) -> usize {
        let (index, exact) = self.lower_bound(key);
        index + (exact && inclusive) as usize
    }

    /// Appends the key in slot `index` to `out`.
    pub fn read_key(&self, index: usize, out: &mut Vec<u8>) {
        let len = self.key_len(index);
        let head = self.heads[index].load(Relaxed).to_be_bytes();
        out.extend_from_slice(&head[..len.min(8)]);
        let offset = self.heap_offset(index);
        let mut remaining = len.saturating_sub(8);
        let mut word = 0;
        while remaining > 0 {
            let bytes = self.heap_word(offset + word).to_be_bytes();
            let take = remaining.min(8);
            out.extend_from_slice(&bytes[..take]);
            remaining -= take;
            word += 1;
        }
    }

    /// Heap words a key of `len` bytes needs.
    #[inline]
    fn tail_words(len: usize) -> usize {
        key_words(len) - 1
    }

    fn live_heap_words(&self) -> usize {
        (self.heap_used.load(Relaxed) as usize)
            .saturating_sub(self.heap_garbage.load(Relaxed) as usize)
    }

    /// Whether a key of `len` bytes can be added.
    pub fn fits(&self, len: usize) -> Fit {
        if self.count() >= SLOTS_MAX {
            return Fit::No;
        }
        let need = Self::tail_words(len);
        if need == 0 {
            return Fit::Yes;
        }
        let capacity = self.heap_words();
        if self.heap_used.load(Relaxed) as usize + need <= capacity {
            Fit::Yes
        } else if self.live_heap_words() + need <= capacity {
            Fit::AfterCompaction
        } else {
            Fit::No
        }
    }

    /// An inner node is full when it might not take one more separator of the longest kind;
    /// inserts split such nodes on the way down so that a child split always finds room.
    pub fn inner_is_full(&self) -> bool {
        self.count() >= SLOTS_MAX || self.live_heap_words() + KEY_WORDS_MAX > self.heap_words()
    }

    /// Compacts the heap if a key of `len` bytes does not fit after the words in use. Called
    /// before an insert moves any slot: compaction walks the `count` slots, so it must see
    /// them whole (with a gap opened, one key would be walked twice and the last one missed,
    /// its tail overwritten). Locked node.
    fn make_room(&self, len: usize) {
        let need = Self::tail_words(len);
        if need > 0 && self.heap_used.load(Relaxed) as usize + need > self.heap_words() {
            self.compact_heap();
        }
    }

    /// Stores the tail of `key` in the heap and returns its offset. Locked or unshared node,
    /// with room made ([`Node::make_room`]) or sized for its keys.
    fn store_tail(&self, key: &[u8]) -> usize {
        let need = Self::tail_words(key.len());
        if need == 0 {
            return 0;
        }
        let offset = self.heap_used.load(Relaxed) as usize;
        assert!(offset + need <= self.heap_words(), "caller made room for the key");
        let heap = self.heap();
        for word in 0..need {
            heap[offset + word].store(word_at(key, word + 1), Relaxed);
        }
        self.heap_used.store((offset + need) as u32, Relaxed);
        offset
    }

    /// Rewrites the heap without the words of removed keys. Locked node.
    fn compact_heap(&self) {
        let count = self.count();
        let mut scratch = [0u64; HEAP_WORDS];
        let mut used = 0;
        for index in 0..count {
            let words = Self::tail_words(self.key_len(index));
            let offset = self.heap_offset(index);
            for word in 0..words {
                scratch[used + word] = self.heap_word(offset + word);
            }
            self.metas[index].store(((self.key_len(index) as u32) << 16) | used as u32, Relaxed);
            used += words;
        }
        let heap = self.heap();
        for (word, value) in scratch[..used].iter().enumerate() {
            heap[word].store(*value, Relaxed);
        }
        self.heap_used.store(used as u32, Relaxed);
        self.heap_garbage.store(0, Relaxed);
    }

    /// Shifts slots `from..count` one place right (values shifted with an extra offset for
    /// inner nodes, whose value `i + 1` goes with separator `i`).
    fn open_gap(&self, from: usize, value_offset: usize) {
        let count = self.count();
        for index in (from..count).rev() {
            self.heads[index + 1].store(self.heads[index].load(Relaxed), Relaxed);
            self.metas[index + 1].store(self.metas[index].load(Relaxed), Relaxed);
            let value = self.values[index + value_offset].load(Relaxed);
            self.values[index + value_offset + 1].store(value, Relaxed);
        }
    }

    fn close_gap(&self, at: usize, value_offset: usize) {
        let count = self.count();
        for index in at..count - 1 {
            self.heads[index].store(self.heads[index + 1].load(Relaxed), Relaxed);
            self.metas[index].store(self.metas[index + 1].load(Relaxed), Relaxed);
            let value = self.values[index + value_offset + 1].load(Relaxed);
            self.values[index + value_offset].store(value, Relaxed);
        }
    }

    fn write_slot(&self, index: usize, key: &[u8]) {
        let offset = self.store_tail(key);
        self.heads[index].store(word_at(key, 0), Relaxed);
        self.metas[index].store(((key.len() as u32) << 16) | offset as u32, Relaxed);
    }

    /// Inserts an entry into a locked leaf at `index` (from `lower_bound`). The caller checked
    /// [`Node::fits`].
    pub fn leaf_insert(&self, index: usize, key: &[u8], value: u64) {
        debug_assert!(self.is_leaf() && self.fits(key.len()) != Fit::No);
        self.make_room(key.len());
        self.open_gap(index, 0);
        self.write_slot(index, key);
        self.values[index].store(value, Relaxed);
        self.set_count(self.count() + 1);
        self.last_insert.store(index as u32 + 1, Relaxed);
    }

    /// Whether a key inserted at `index` of a leaf would directly follow the key the previous
    /// insert added: keys arriving in ascending order at this point of the tree.
    pub fn follows_last_insert(&self, index: usize) -> bool {
        index > 0 && self.last_insert.load(Relaxed) as usize == index
    }

    /// Sets the count of a locked node. Only the latch holder writes the node, so a load and
    /// a store do: an atomic read-modify-write (a `lock`ed instruction on x86) waited for
    /// every slot store before it (bench/results/history.md, "Recovery frees what it replaces").
    #[inline]
    fn set_count(&self, count: usize) {
        self.count.store(count as u32, Relaxed);
    }

    /// Counts `words` more heap words of removed keys in a locked node (as `set_count`).
    #[inline]
    fn add_heap_garbage(&self, words: u32) {
        self.heap_garbage.store(self.heap_garbage.load(Relaxed) + words, Relaxed);
    }

    /// Removes the entry at `index` from a locked leaf.
    pub fn leaf_remove(&self, index: usize) {
        debug_assert!(self.is_leaf() && index < self.count());
        let garbage = Self::tail_words(self.key_len(index)) as u32;
        self.add_heap_garbage(garbage);
        self.close_gap(index, 0);
        self.set_count(self.count() - 1);
    }

    /// Inserts separator `key` at `index` of a locked inner node, with `right` as the child
    /// for keys at or above it.
    pub fn inner_insert(&self, index: usize, key: &[u8], right: *mut Node) {
        debug_assert!(!self.is_leaf() && !self.inner_is_full());
        self.make_room(key.len());
        self.open_gap(index, 1);
        self.write_slot(index, key);
        self.values[index + 1].store(right as u64, Relaxed);
        self.set_count(self.count() + 1);
    }

    /// Removes separator `index` and the child to its right from a locked inner node.
    pub fn inner_remove(&self, index: usize) {
        debug_assert!(!self.is_leaf() && index < self.count());
        let garbage = Self::tail_words(self.key_len(index)) as u32;
        self.add_heap_garbage(garbage);
        self.close_gap(index, 1);
        self.set_count(self.count() - 1);
    }

    /// The slot of child pointer `child` in this inner node.
    pub fn child_index(&self, child: *mut Node) -> Option<usize> {
        (0..=self.count()).find(|&index| self.child(index) == child)
    }

    /// Total heap words the keys of slots `range` need.
    pub fn tail_words_of(&self, range: std::ops::Range<usize>) -> usize {
        range.map(|index| Self::tail_words(self.key_len(index))).sum()
    }

    /// Appends slot `index` of `source` to this unshared node being built.
    pub fn push_from(&self, source: &Node, index: usize) {
        let at = self.count();
        let len = source.key_len(index);
        let words = Self::tail_words(len);
        let offset = self.heap_used.load(Relaxed) as usize;
        assert!(offset + words <= self.heap_words(), "builder sized the heap");
        let source_offset = source.heap_offset(index);
        for word in 0..words {
            self.heap()[offset + word].store(source.heap_word(source_offset + word), Relaxed);
        }
        self.heap_used.store((offset + words) as u32, Relaxed);
        self.heads[at].store(source.heads[index].load(Relaxed), Relaxed);
        self.metas[at].store(((len as u32) << 16) | offset as u32, Relaxed);
        self.values[at].store(source.values[index].load(Relaxed), Relaxed);
        self.count.store(at as u32 + 1, Relaxed);
    }

    /// Appends separator `key` to this unshared inner node being built; `value` is stored
    /// at the key's slot (the child to its left when building inner nodes).
    pub fn push_key(&self, key: &[u8], value: u64) {
        let at = self.count();
        self.write_slot(at, key);
        self.values[at].store(value, Relaxed);
        self.count.store(at as u32 + 1, Relaxed);
    }

    /// Sets the value (child) one past the last key of an unshared inner node being built.
    pub fn set_last_child(&self, child: *mut Node) {
        self.values[self.count()].store(child as u64, Relaxed);
    }

    /// Whether any of the slots `range` holds a key longer than a word.
    pub fn has_long_keys(&self, range: std::ops::Range<usize>) -> bool {
        range.into_iter().any(|index| self.key_len(index) > 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_with(keys: &[&[u8]]) -> *mut Node {
        let node = Node::alloc(0, HEAP_WORDS);
        // SAFETY: fresh node, owned by the test.
        let leaf = unsafe { &*node };
        for (value, key) in keys.iter().enumerate() {
            let (index, exact) = leaf.lower_bound(&SearchKey::new(key));
            assert!(!exact);
            leaf.leaf_insert(index, key, value as u64);
        }
        node
    }

    #[test]
    fn slots_stay_sorted_by_byte_order() {
        let keys: Vec<&[u8]> = vec![
            b"abcdefghij",
            b"abcdefgh",
            b"abc",
            b"",
            b"abcdefgh\0",
            b"abcdefghia",
            b"b",
            b"abcdefghijklmnopqrstuvwxyz0123456789",
            b"abcdefghijklmnopqrstuvwxyz012345678",
        ];
        let node = leaf_with(&keys);
        // SAFETY: owned by the test.
        let leaf = unsafe { &*node };
        let mut sorted = keys.clone();
        sorted.sort();
        let mut read = Vec::new();
        for (index, key) in sorted.iter().enumerate() {
            read.clear();
            leaf.read_key(index, &mut read);
            assert_eq!(&read[..], *key);
            assert_eq!(leaf.lower_bound(&SearchKey::new(key)), (index, true));
        }
        leaf.leaf_remove(3);
        leaf.leaf_remove(0);
        leaf.compact_heap();
        assert_eq!(leaf.count(), sorted.len() - 2);
        for key in sorted.iter().skip(1).filter(|key| **key != sorted[3]) {
            assert!(leaf.lower_bound(&SearchKey::new(key)).1);
        }
        // SAFETY: owned by the test and unshared.
        unsafe { Node::free(node) };
    }

    /// Removed keys leave their tails in the heap until an insert needs the room and compacts
    /// it. That compaction once ran after the insert had opened its gap: it walked one key
    /// twice and missed the last, whose tail the new key then overwrote (a secondary index of
    /// long keys with many updates corrupted its leaves that way).
    #[test]
    fn an_insert_that_compacts_the_heap_keeps_every_key() {
        // 26-byte keys (three tail words each), as the secondary entry of an 8-byte key with
        // an 8-byte primary key is: 48 of them hold 144 of the 512 heap words, and every move
        // below leaves three more words of garbage, so an insert compacts every 100 or so.
        let key = |group: u8, row: u8| {
            let mut key = vec![0u8; 26];
            key[7] = group;
            key[8] = 0xFF;
            key[17] = 0xF7;
            key[25] = row;
            key
        };
        let node = Node::alloc(0, HEAP_WORDS);
        // SAFETY: fresh node, owned by the test.
        let leaf = unsafe { &*node };
        let mut model = std::collections::BTreeMap::new();
        for row in 0..48u8 {
            let key = key(row % 4, row);
            let (index, exact) = leaf.lower_bound(&SearchKey::new(&key));
            assert!(!exact);
            leaf.leaf_insert(index, &key, row as u64);
            model.insert(key, row as u64);
        }
        // Move rows between groups: each move removes a key and inserts one, so garbage
        // builds up and inserts compact the heap, at every position of the leaf.
        let mut random = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..4000u32 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let row = (random % 48) as u8;
            let old = model.iter().find(|(_, value)| **value == row as u64).unwrap().0.clone();
            let new = key((old[7] + 1 + (random >> 8) as u8 % 3) % 4, row);
            let (index, exact) = leaf.lower_bound(&SearchKey::new(&old));
            assert!(exact, "step {step}: row {row} is in the leaf");
            leaf.leaf_remove(index);
            model.remove(&old);
            let (index, exact) = leaf.lower_bound(&SearchKey::new(&new));
            assert!(!exact, "step {step}: the new key is new");
            assert_ne!(leaf.fits(new.len()), Fit::No);
            leaf.leaf_insert(index, &new, row as u64);
            model.insert(new, row as u64);
            let mut read = Vec::new();
            for (index, (key, value)) in model.iter().enumerate() {
                read.clear();
                leaf.read_key(index, &mut read);
                assert_eq!(&read, key, "step {step}: slot {index}");
                assert_eq!(leaf.value(index), *value, "step {step}: slot {index}");
            }
        }
        // SAFETY: owned by the test and unshared.
        unsafe { Node::free(node) };
    }
}

#[cfg(test)]
mod layout {
    use super::*;

    /// docs/format.md draws this layout; keep the two in step.
    #[test]
    fn offsets_match_the_format_document() {
        assert_eq!(std::mem::offset_of!(Node, count), 8);
        assert_eq!(std::mem::offset_of!(Node, level), 24);
        assert_eq!(std::mem::offset_of!(Node, heads), 32);
        assert_eq!(std::mem::offset_of!(Node, metas), 32 + 8 * SLOTS_MAX);
        assert_eq!(std::mem::offset_of!(Node, values), 32 + 12 * SLOTS_MAX);
        assert_eq!(std::mem::offset_of!(Node, pstamp), 32 + 20 * SLOTS_MAX + 8);
        assert_eq!(size_of::<Node>(), 1344);
    }
}
