//! Structure changes, all copy-on-write: a full node replaced by its split halves (and the
//! parent by a copy with the new separator), removal of a key, and the merge of an empty leaf
//! with its sibling. The old nodes are marked obsolete and retired.

use super::*;

impl BTree {
    /// Replaces the latched node `current` (whose pre-lock version was `version`) under its
    /// latched parent with one rebuilt node, or two halves and a separator. `incoming` is the
    /// length of a key about to be inserted into a leaf, so the rebuilt leaf can take it;
    /// `ascending` is its slot when it directly follows the key the leaf's previous insert
    /// added. Unlocks the parent, marks `current` obsolete and retires it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn replace(
        &self,
        parent: Parent<'_>,
        current: *mut Node,
        version: u64,
        incoming: Option<usize>,
        ascending: Option<usize>,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) {
        let old = node(current);
        let count = old.count();
        let level = old.level();
        let incoming_long = incoming.is_some_and(|len| len > 8);
        let (left, split) = if old.is_leaf() {
            let everything_fits = count < SLOTS_MAX
                && old.tail_words_of(0..count) + incoming.map_or(0, |len| len.div_ceil(8))
                    <= HEAP_WORDS;
            if everything_fits && (count < SLOTS_MAX / 2 || old.heap_words() == 0) {
                // A leaf with room but the wrong kind (or a fragmented heap): rebuild it whole.
                let heap =
                    if incoming_long || old.has_long_keys(0..count) { HEAP_WORDS } else { 0 };
                (build_leaf(old, 0..count, heap), None)
            } else {
                // Keys arriving in ascending order at one point (orders, order lines and
                // history of each district, a queue's tail) split the leaf where they arrive,
                // so the part before keeps filling (the keys after it, often the start of the
                // next district's, move out of the way); halving would leave every such leaf
                // half full for good: twice the memory, twice the splits. An eighth of the
                // leaf stays on each side, so a random insert that happens to follow the last
                // one costs little.
                let margin = (count / 8).max(1);
                let middle = ascending.map_or(count / 2, |at| at.clamp(margin, count - margin));
                let heap_for = |range: std::ops::Range<usize>| {
                    if incoming_long || old.has_long_keys(range) { HEAP_WORDS } else { 0 }
                };
                let left = build_leaf(old, 0..middle, heap_for(0..middle));
                let right = build_leaf(old, middle..count, heap_for(middle..count));
                let separator = leaf_separator(old, middle);
                (left, Some((separator, right)))
            }
        } else {
            assert!(count >= 2, "a full inner node has several separators");
            let middle = count / 2;
            let left = Node::alloc(level, HEAP_WORDS);
            for index in 0..middle {
                node(left).push_from(old, index);
            }
            node(left).set_last_child(old.child(middle));
            let right = Node::alloc(level, HEAP_WORDS);
            for index in middle + 1..count {
                node(right).push_from(old, index);
            }
            node(right).set_last_child(old.child(count));
            let mut separator = Vec::with_capacity(INDEX_KEY_BYTES_MAX);
            old.read_key(middle, &mut separator);
            (left, Some((separator, right)))
        };
        match parent {
            Parent::Root(_) => {
                let new_root = match &split {
                    Some((separator, right)) => {
                        let root = Node::alloc(level + 1, HEAP_WORDS);
                        node(root).push_key(separator, left as u64);
                        node(root).set_last_child(*right);
                        root
                    }
                    None => left,
                };
                // Release: the new nodes' contents happen before anyone can load them.
                self.root.store(new_root, Ordering::Release);
                self.root_latch.unlock();
            }
            Parent::Inner(above, _) => {
                let index = above.child_index(current).expect("the parent holds the child");
                above.set_value(index, left as u64);
                if let Some((separator, right)) = &split {
                    above.inner_insert(index, separator, *right);
                }
                above.latch.unlock();
            }
        }
        old.latch.unlock_obsolete();
        garbage.retire(Node::retired(current));
        if old.is_leaf() {
            if split.is_some() {
                self.leaves.fetch_add(1, Ordering::Relaxed);
            }
            let left_version = LeafVersion { node: left, version: 0 };
            match split {
                Some((_, right)) => observer.leaf_changed(
                    current as usize,
                    version,
                    &[left_version, LeafVersion { node: right, version: 0 }],
                ),
                None => observer.leaf_changed(current as usize, version, &[left_version]),
            }
        }
        #[cfg(feature = "paranoid")]
        self.check_invariants();
    }

    // ----- remove -------------------------------------------------------------------------

    /// Removes `key` if it maps to `expected` (or to anything, when `expected` is `None`).
    /// Returns the removed value. The observer hears of the leaf change and of any merge.
    pub fn remove(
        &self,
        key: &[u8],
        expected: Option<u64>,
        _pin: &Pin<'_>,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) -> Option<u64> {
        let search = SearchKey::new(key);
        let mut outcome = None;
        for _ in 0..INDEX_RESTARTS_OPTIMISTIC_MAX {
            match self.try_remove(&search, expected, observer) {
                Ok(result) => {
                    outcome = Some(result);
                    break;
                }
                Err(Restart) => self.count_restart(),
            }
        }
        let removed = match outcome {
            Some(removed) => removed,
            None => {
                let leaf = self.descend_locked(&search);
                let here = node(leaf);
                let before = here.latch.current() - 2;
                let (index, exact) = here.lower_bound(&search);
                let removed = (exact && expected.is_none_or(|value| value == here.value(index)))
                    .then(|| here.value(index));
                if removed.is_some() {
                    here.leaf_remove(index);
                }
                let after = here.latch.unlock_returning();
                observer.leaf_changed(
                    leaf as usize,
                    before,
                    &[LeafVersion { node: leaf, version: after }],
                );
                removed
            }
        };
        if removed.is_some() {
            // Best effort: a few attempts, then leave the node underfull.
            for _ in 0..4 {
                if self.try_merge(&search, garbage, observer).is_ok() {
                    break;
                }
            }
        }
        removed
    }

    pub(super) fn try_remove(
        &self,
        key: &SearchKey<'_>,
        expected: Option<u64>,
        observer: &mut impl LeafObserver,
    ) -> Result<Option<u64>, Restart> {
        let (_, mut current, mut version) = self.read_root()?;
        loop {
            let here = node(current);
            if !here.is_leaf() {
                let child = here.child(here.route(key));
                here.latch.read_validate(version)?;
                version = node(child).latch.read_begin()?;
                current = child;
                continue;
            }
            let (index, exact) = here.lower_bound(key);
            let value = here.value(index);
            if !exact || expected.is_some_and(|wanted| wanted != value) {
                here.latch.read_validate(version)?;
                return Ok(None);
            }
            here.latch.try_upgrade(version)?;
            here.leaf_remove(index);
            let after = LeafVersion { node: current, version: here.latch.unlock_returning() };
            observer.leaf_changed(current as usize, version, &[after]);
            return Ok(Some(value));
        }
    }

    /// Merges the first underfull node on `key`'s path with a sibling, or collapses a root
    /// with a single child. Gives up (with `Restart`) on any conflict.
    pub(super) fn try_merge(
        &self,
        key: &SearchKey<'_>,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) -> Result<(), Restart> {
        let (root_version, mut current, mut version) = self.read_root()?;
        let mut parent: Option<(&Node, u64, usize)> = None;
        loop {
            let here = node(current);
            let count = here.count();
            match parent {
                None if !here.is_leaf() && count == 0 => {
                    let child = here.child(0);
                    here.latch.read_validate(version)?;
                    self.lock_pair(Parent::Root(root_version), here, version)?;
                    self.root.store(child, Ordering::Release);
                    self.root_latch.unlock();
                    here.latch.unlock_obsolete();
                    garbage.retire(Node::retired(current));
                    return Ok(());
                }
                Some((above, above_version, index)) if count < UNDERFULL_COUNT => {
                    return self.merge_children(above, above_version, index, garbage, observer);
                }
                _ => {}
            }
            if here.is_leaf() {
                return Ok(());
            }
            let index = here.route(key);
            let child = here.child(index);
            here.latch.read_validate(version)?;
            let child_version = node(child).latch.read_begin()?;
            parent = Some((here, version, index));
            current = child;
            version = child_version;
        }
    }

    /// Merges child `index` of `above` with its right sibling (or its left one, for the last
    /// child) if the two fit in one node.
    pub(super) fn merge_children(
        &self,
        above: &Node,
        above_version: u64,
        index: usize,
        garbage: &mut Garbage,
        observer: &mut impl LeafObserver,
    ) -> Result<(), Restart> {
        let separators = above.count();
        if separators == 0 {
            return Ok(());
        }
        let left_index = if index < separators { index } else { index - 1 };
        let (left, right) = (above.child(left_index), above.child(left_index + 1));
        above.latch.read_validate(above_version)?;
        let (left_node, right_node) = (node(left), node(right));
        let left_version = left_node.latch.read_begin()?;
        let right_version = right_node.latch.read_begin()?;
        let inner = !left_node.is_leaf();
        let (left_count, right_count) = (left_node.count(), right_node.count());
        let merged_count = left_count + right_count + inner as usize;
        let mut separator = Vec::new();
        if inner {
            above.read_key(left_index, &mut separator);
        }
        let tails = left_node.tail_words_of(0..left_count)
            + right_node.tail_words_of(0..right_count)
            + separator.len().div_ceil(8).saturating_sub(1);
        // An empty node always goes, whatever its sibling holds: leaves split where ascending
        // keys arrive stay 7/8 full, and a queue's head leaf, emptied by deletes next to such a
        // sibling, would otherwise stay in the tree for good.
        let one_empty = (left_count == 0 || right_count == 0) && merged_count < SLOTS_MAX;
        let fits = (merged_count <= MERGED_COUNT_MAX || one_empty) && tails <= HEAP_WORDS;
        left_node.latch.read_validate(left_version)?;
        right_node.latch.read_validate(right_version)?;
        above.latch.read_validate(above_version)?;
        if !fits {
            return Ok(());
        }
        above.latch.try_upgrade(above_version)?;
        if left_node.latch.try_upgrade(left_version).is_err() {
            above.latch.unlock();
            return Err(Restart);
        }
        if right_node.latch.try_upgrade(right_version).is_err() {
            left_node.latch.unlock();
            above.latch.unlock();
            return Err(Restart);
        }
        let heap = if inner || tails > 0 { HEAP_WORDS } else { 0 };
        let merged = Node::alloc(left_node.level(), heap);
        for slot in 0..left_count {
            node(merged).push_from(left_node, slot);
        }
        if inner {
            node(merged).push_key(&separator, left_node.child(left_count) as u64);
        }
        for slot in 0..right_count {
            node(merged).push_from(right_node, slot);
        }
        if inner {
            node(merged).set_last_child(right_node.child(right_count));
        } else {
            inherit_pstamp(merged, &[left_node, right_node]);
        }
        above.set_value(left_index, merged as u64);
        above.inner_remove(left_index);
        above.latch.unlock();
        left_node.latch.unlock_obsolete();
        right_node.latch.unlock_obsolete();
        garbage.retire(Node::retired(left));
        garbage.retire(Node::retired(right));
        if !inner {
            self.leaves.fetch_sub(1, Ordering::Relaxed);
            let merged_version = [LeafVersion { node: merged, version: 0 }];
            observer.leaf_changed(left as usize, left_version, &merged_version);
            observer.leaf_changed(right as usize, right_version, &merged_version);
        }
        #[cfg(feature = "paranoid")]
        self.check_invariants();
        Ok(())
    }
}
