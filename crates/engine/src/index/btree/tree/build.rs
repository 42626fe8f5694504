//! Building the new nodes of a structure change.

use super::*;

/// Builds a leaf holding slots `range` of `source`.
pub(super) fn build_leaf(
    source: &Node,
    range: std::ops::Range<usize>,
    heap_words: usize,
) -> *mut Node {
    let leaf = Node::alloc(0, heap_words);
    for index in range {
        node(leaf).push_from(source, index);
    }
    inherit_pstamp(leaf, &[source]);
    leaf
}

/// Gives a new leaf the pstamps of the locked leaves it replaces. The fence pairs with the one
/// in `LeafVersion::publish_pstamp`: a scan whose validation did not see the lock taken on a
/// source leaf published its stamp before this load.
pub(super) fn inherit_pstamp(leaf: *mut Node, sources: &[&Node]) {
    fence(Ordering::SeqCst);
    let stamp =
        sources.iter().map(|source| source.pstamp.load(Ordering::Relaxed)).max().unwrap_or(0);
    node(leaf).pstamp.store(stamp, Ordering::Relaxed);
    trace_ev!(crate::trace::Ev::Inherit {
        leaf: leaf as u64,
        stamp,
        sources: [
            sources.first().map_or(0, |s| *s as *const Node as u64),
            sources.get(1).map_or(0, |s| *s as *const Node as u64),
        ],
    });
}

/// The shortest key that separates slot `middle - 1` from slot `middle` of a leaf: the
/// shortest prefix of the right key that is greater than the left key (suffix truncation).
pub(super) fn leaf_separator(leaf: &Node, middle: usize) -> Vec<u8> {
    let mut left = Vec::with_capacity(INDEX_KEY_BYTES_MAX);
    let mut right = Vec::with_capacity(INDEX_KEY_BYTES_MAX);
    leaf.read_key(middle - 1, &mut left);
    leaf.read_key(middle, &mut right);
    let common = left.iter().zip(&right).take_while(|(a, b)| a == b).count();
    right.truncate(common + 1);
    debug_assert!(left < right);
    right
}
