//! Installing a new state into a locked record, keeping the old one as a version when a
//! reader may need it, and pruning the chain of what no reader can read any more (the
//! writers', the vacuum's and the readers' cooperative cleaning).

use super::version::prunable_from;
use super::*;

impl Head {
    /// Installs a new state on a head this thread has locked; the caller unlocks it with
    /// `new_word` afterwards (after fixing secondary entries). `value` is the new row, or `None`
    /// for a delete. The state being replaced is kept as an older version if `retention` says a
    /// snapshot may read it, and then older versions no snapshot can read any more are pruned.
    /// Versions dropped from the chain are retired and appended to `dropped` (still readable
    /// while the caller is pinned). Returns whether the replaced state was kept.
    pub fn install(
        &self,
        value: Option<&[u8]>,
        new_word: TidWord,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> bool {
        if self.oldest_first() {
            return self.install_oldest_first(value, new_word, retention, arena, garbage, dropped);
        }
        let old_word = TidWord::from_raw(self.word.load(Ordering::Relaxed));
        debug_assert!(old_word.is_locked());
        let new_tid = new_word.tid();
        let old_overflow = self.overflow.load(Ordering::Relaxed);
        let keep = retention.needed(old_word.tid(), new_tid);
        if self.deltas() {
            let kept = keep.then_some((new_tid, retention));
            self.chain_delta(old_word, value.unwrap_or(&[]), kept, arena, garbage, dropped);
        } else if keep {
            let kept = if !old_overflow.is_null() && !old_word.is_absent() {
                old_overflow
            } else if old_word.is_absent() {
                Version::alloc(arena, old_word, &[])
            } else {
                self.inline_to_version(old_word, arena)
            };
            if kept == old_overflow {
                self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
            } else if !old_overflow.is_null() {
                self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
                Version::retire(old_overflow, garbage);
            }
            self.link_newest(kept, new_tid, retention);
        } else if !old_overflow.is_null() {
            self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
            Version::retire(old_overflow, garbage);
        }
        match value {
            None => self.len.store(0, Ordering::Relaxed),
            Some(bytes) if bytes.len().div_ceil(8) <= self.capacity_words() => {
                let inline = self.inline();
                let mut chunks = bytes.chunks_exact(8);
                for (word, chunk) in inline.iter().zip(&mut chunks) {
                    word.store(
                        u64::from_le_bytes(chunk.try_into().expect("8 bytes")),
                        Ordering::Relaxed,
                    );
                }
                let tail = chunks.remainder();
                if !tail.is_empty() {
                    let mut buffer = [0u8; 8];
                    buffer[..tail.len()].copy_from_slice(tail);
                    inline[bytes.len() / 8].store(u64::from_le_bytes(buffer), Ordering::Relaxed);
                }
                self.len.store(bytes.len() as u32, Ordering::Relaxed);
            }
            Some(bytes) => {
                let version = self.new_version(arena, new_word, bytes);
                self.overflow.store(version, Ordering::Release);
                self.len.store(bytes.len() as u32 | OVERFLOW, Ordering::Relaxed);
            }
        }
        // The chain grows only when a state is kept, so pruning then keeps it bounded; pruning
        // at every install would also read the older versions, which are cold, on every
        // update of the record (measured in docs/performance.md). Under a multi-version
        // protocol almost every update keeps a version, and a hot record's chain may hold
        // hundreds that readers still need: pruning walks the chain only when it has doubled
        // since the last prune, so the walks cost a constant per update.
        if keep && retention.prune && self.prune_due(retention) {
            self.prune(new_tid, retention, arena, garbage, dropped);
        }
        keep
    }

    /// Links `kept`, the replaced state's new version, at the front of a newest-first chain;
    /// `successor` is the TID of the state that replaced it. Locked head.
    pub(super) fn link_newest(&self, kept: *mut Version, successor: Tid, retention: Retention) {
        let older = self.older.load(Ordering::Relaxed);
        // SAFETY: `kept` is ours until published by the store below; `older`, if any, is
        // allocated while linked, and we hold the lock.
        unsafe {
            if let Some(stamps) = self.stamps() {
                (*kept).creator_pi.store(stamps.creator_pi().as_u64(), Ordering::Relaxed);
            }
            (*kept).link.store(older, Ordering::Relaxed);
            let depth = if older.is_null() { 0 } else { (*older).depth.load(Ordering::Relaxed) };
            let depth = if retention.multiversion() {
                let (length, pruned) = (depth & 0xffff, depth >> 16);
                ((length + 1).min(0xffff)) | (pruned << 16)
            } else if older.is_null() {
                // `kept` is the chain's oldest version.
                prunable_from(successor, retention)
            } else {
                // The oldest version, which the bound follows from, is the same.
                depth
            };
            (*kept).depth.store(depth, Ordering::Relaxed);
        }
        // Release pairs with the Acquire loads of chain walkers.
        self.older.store(kept, Ordering::Release);
    }

    /// Under `delta` storage, before the master version becomes `newer` (empty for a delete):
    /// keeps the replaced state as a delta against `newer` at the chain's front if `kept` is
    /// given (the new state's TID and the install's retention), and otherwise makes the
    /// chain's first delta, which was made against the replaced state, a delta against
    /// `newer`. Retires a replaced overflow version. Locked head.
    pub(super) fn chain_delta(
        &self,
        old_word: TidWord,
        newer: &[u8],
        kept: Option<(Tid, Retention)>,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        let first = self.older.load(Ordering::Relaxed);
        if kept.is_some() || !first.is_null() {
            let replaced = &mut dropped.replaced;
            replaced.clear();
            if !old_word.is_absent() {
                let consistent = self.copy_value(replaced);
                debug_assert!(consistent, "a locked head is never torn");
            }
            if let Some((successor, retention)) = kept {
                let kept = Version::alloc_delta(arena, old_word, newer, replaced);
                self.link_newest(kept, successor, retention);
            } else {
                // SAFETY: linked, and we hold the lock.
                let first_ref = unsafe { &*first };
                let row = &mut dropped.rebuilt;
                row.clear();
                if !first_ref.word().is_absent() {
                    row.extend_from_slice(replaced);
                    delta::apply(first_ref.data(), row);
                }
                let again = Version::alloc_delta(arena, first_ref.word(), newer, row);
                // SAFETY: ours until published by the store below.
                unsafe {
                    let again = &*again;
                    again.link.store(first_ref.link.load(Ordering::Relaxed), Ordering::Relaxed);
                    again.depth.store(first_ref.depth.load(Ordering::Relaxed), Ordering::Relaxed);
                    again
                        .creator_pi
                        .store(first_ref.creator_pi.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                // Release pairs with the Acquire loads of chain walkers. A reader that holds
                // the replaced delta read it with the replaced master, so it still applies.
                self.older.store(again, Ordering::Release);
                Version::retire(first, garbage);
            }
        }
        let old_overflow = self.overflow.load(Ordering::Relaxed);
        if !old_overflow.is_null() {
            self.overflow.store(std::ptr::null_mut(), Ordering::Relaxed);
            Version::retire(old_overflow, garbage);
        }
    }

    /// [`Head::install`] on an oldest-to-newest chain (`append-o2n`). The current row, if any,
    /// is the chain's last version: the install walks the whole chain to it, drops it if no
    /// reader needs it, and links the new row after it. Writers prune (when `retention` says
    /// so) at every install that keeps a state, since the walk is paid anyway.
    #[cold]
    pub(super) fn install_oldest_first(
        &self,
        value: Option<&[u8]>,
        new_word: TidWord,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> bool {
        let old_word = TidWord::from_raw(self.word.load(Ordering::Relaxed));
        debug_assert!(old_word.is_locked());
        let keep = retention.needed(old_word.tid(), new_word.tid());
        // The link that ends the chain, and the one that points to its last version.
        let (mut end, mut to_last) = (&self.older, &self.older);
        let mut last: *mut Version = std::ptr::null_mut();
        let mut version = self.older.load(Ordering::Relaxed);
        while !version.is_null() {
            (to_last, last) = (end, version);
            // SAFETY: chain versions are allocated while linked, and we hold the lock.
            end = unsafe { &(*version).link };
            version = end.load(Ordering::Relaxed);
        }
        let creator_pi = self.stamps().map_or(0, |stamps| stamps.creator_pi().as_u64());
        if !old_word.is_absent() {
            // SAFETY: a present row is the chain's last version (module invariant).
            let current = unsafe { &*last };
            assert_eq!(current.word().tid(), old_word.tid(), "the row is the chain's last version");
            if keep {
                current.creator_pi.store(creator_pi, Ordering::Relaxed);
            } else {
                to_last.store(std::ptr::null_mut(), Ordering::Release);
                Version::retire(last, garbage);
                end = to_last;
            }
        } else if keep {
            let marker = Version::alloc(arena, old_word, &[]);
            // SAFETY: ours until the release store below publishes it.
            unsafe { (*marker).creator_pi.store(creator_pi, Ordering::Relaxed) };
            // Release pairs with the Acquire loads of chain walkers.
            end.store(marker, Ordering::Release);
            // SAFETY: just linked, and we hold the lock.
            end = unsafe { &(*marker).link };
        }
        match value {
            Some(bytes) => {
                let version = self.new_version(arena, new_word, bytes);
                // Release pairs with the Acquire loads of chain walkers.
                end.store(version, Ordering::Release);
                self.len.store(OVERFLOW, Ordering::Relaxed);
            }
            None => self.len.store(0, Ordering::Relaxed),
        }
        if keep && retention.prune {
            self.prune_oldest_first(new_word.tid(), value.is_some(), retention, garbage, dropped);
        }
        keep
    }

    /// Drops the versions of an oldest-to-newest chain that no reader at or above the
    /// retention bounds can read: each version's successor is the next along the chain, or
    /// the current state (at `newest`) for the last version when `row_last` is false. The
    /// current row (the last version when `row_last`) always stays. Locked head.
    pub(super) fn prune_oldest_first(
        &self,
        newest: Tid,
        row_last: bool,
        retention: Retention,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        let mut link = &self.older;
        let mut version = link.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked; we hold the lock.
            let current = unsafe { &*version };
            let next = current.link.load(Ordering::Relaxed);
            if next.is_null() && row_last {
                break;
            }
            // SAFETY: as above.
            let successor = if next.is_null() { newest } else { unsafe { (*next).word().tid() } };
            if retention.needed(current.word().tid(), successor) {
                link = &current.link;
            } else {
                // Release pairs with the Acquire loads of chain walkers.
                link.store(next, Ordering::Release);
                dropped.push(version);
                Version::retire(version, garbage);
            }
            version = next;
        }
    }

    /// Copies the current value of a head this thread has locked into `out`; returns whether
    /// a row is present.
    pub fn value_locked(&self, out: &mut Vec<u8>) -> bool {
        let word = TidWord::from_raw(self.word.load(Ordering::Relaxed));
        debug_assert!(word.is_locked());
        out.clear();
        if word.is_absent() {
            return false;
        }
        let consistent = self.copy_value(out);
        debug_assert!(consistent, "a locked head is never torn");
        true
    }

    /// The current value of this locked head where it lies, for comparing it with `new_len`
    /// bytes that are to replace it (the log's patch, `wal::format::diff_rows`), with no copy.
    /// `None` where the row is absent or not inline, its length differs from `new_len`, or on
    /// big-endian targets, whose words do not lie as the value's bytes.
    pub fn value_in_place_locked(&self, new_len: usize) -> Option<&[u8]> {
        let word = TidWord::from_raw(self.word.load(Ordering::Relaxed));
        debug_assert!(word.is_locked());
        let len = self.len.load(Ordering::Relaxed);
        if cfg!(target_endian = "big")
            || word.is_absent()
            || len & OVERFLOW != 0
            || len as usize != new_len
        {
            return None;
        }
        if new_len.div_ceil(8) > self.capacity_words() {
            return None;
        }
        // SAFETY: the value's words were initialised at `alloc`, and this thread holds the
        // lock, so no one writes them while they are read (readers only read); as bytes they
        // are the value in order, since values are stored little-endian (`copy_value`).
        Some(unsafe { std::slice::from_raw_parts(Self::inline_ptr(self) as *const u8, new_len) })
    }

    /// Calls `visit` with each older version's word and row, newest first. The caller holds
    /// the lock, or is pinned and tolerates a chain that changes while it walks (and, under
    /// `delta` storage, rows rebuilt from a master version that changed under it).
    /// (Oldest first under `append-o2n`, where the current row's version is not visited.)
    /// `row` is scratch space for `delta` storage's rebuilt rows.
    pub fn for_each_older(&self, row: &mut Vec<u8>, visit: impl FnMut(TidWord, &[u8])) {
        self.for_each_older_than(!self.word().is_absent(), row, visit);
    }

    /// [`Head::for_each_older`] for a locked head whose word does not show its state yet (an
    /// install's, before the unlock): `present` says whether the state it now holds is a row,
    /// which under `append-o2n` is the chain's last version and not visited.
    pub(crate) fn for_each_older_than(
        &self,
        present: bool,
        row: &mut Vec<u8>,
        mut visit: impl FnMut(TidWord, &[u8]),
    ) {
        if self.deltas() {
            // The master version is copied as it is now: under the lock, the row just
            // installed (a delete leaves it empty), which the chain's first delta is made
            // against.
            row.clear();
            if !self.copy_value(row) {
                return;
            }
            let mut version = self.older.load(Ordering::Acquire);
            while !version.is_null() {
                // SAFETY: chain versions reached while pinned stay allocated until we unpin.
                let current = unsafe { &*version };
                if current.word().is_absent() {
                    row.clear();
                } else {
                    delta::apply(current.data(), row);
                }
                visit(current.word(), row);
                version = current.link.load(Ordering::Acquire);
            }
            return;
        }
        // Under `append-o2n` the last version is the row's own when a row is present.
        let row_last = self.oldest_first() && present;
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin.
            let current = unsafe { &*version };
            let next = current.link.load(Ordering::Acquire);
            if next.is_null() && row_last {
                break;
            }
            visit(current.word(), current.data());
            version = next;
        }
    }

    /// A new version holding the inline value of a locked head, with `word`.
    pub(super) fn inline_to_version(&self, word: TidWord, arena: &mut Arena) -> *mut Version {
        let len = self.len.load(Ordering::Relaxed) as usize;
        debug_assert!(len <= self.capacity_words() * 8);
        let version = Version::alloc_header(arena, word, len);
        // SAFETY: a fresh block with room for `len` bytes; the inline words hold `len` bytes,
        // little-endian, and we hold the lock so they do not change.
        unsafe {
            let data = Version::data_ptr(version);
            for (index, word) in self.inline()[..len / 8].iter().enumerate() {
                let bytes = word.load(Ordering::Relaxed).to_le_bytes();
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(index * 8), 8);
            }
            let tail = len % 8;
            if tail > 0 {
                let bytes = self.inline()[len / 8].load(Ordering::Relaxed).to_le_bytes();
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(len - tail), tail);
            }
        }
        version
    }

    /// Whether the chain (just grown by one) should be pruned now. Locked head.
    ///
    /// Under a multi-version protocol, when it has more than doubled since its last prune.
    /// Otherwise, when the snapshot low-water mark has reached the bound `prunable_from`
    /// recorded for it: below that bound a prune walks the chain and drops nothing. That is
    /// the case of every chain written while a checkpoint holds its snapshot epoch (the
    /// low-water mark stays put, and each row keeps one version per snapshot interval), where
    /// the walks were 4.8% of the workers' time in TPC-C (docs/performance.md).
    pub(super) fn prune_due(&self, retention: Retention) -> bool {
        let newest = self.older.load(Ordering::Relaxed);
        // SAFETY: the newest version was just linked by the lock holder.
        let depth = unsafe { (*newest).depth.load(Ordering::Relaxed) };
        if !retention.multiversion() {
            return retention.low_unheld.0 >= u64::from(depth);
        }
        let (length, pruned) = (depth & 0xffff, depth >> 16);
        length > 2 * pruned + PRUNE_SLACK
    }

    /// Drops chain versions no reader at or above the retention bounds can read. Locked head.
    pub(super) fn prune(
        &self,
        newest: Tid,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        if self.deltas() {
            return self.prune_deltas(newest, retention, arena, garbage, dropped);
        }
        let mut successor = newest;
        let mut link = &self.older;
        let mut version = link.load(Ordering::Relaxed);
        let mut remaining = 0u32;
        // The TID of the last state kept (the head's first), and the successor of the last
        // version kept in the pruned chain, the oldest when the walk ends.
        let (mut last_kept, mut oldest_successor) = (newest, newest);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked; we hold the lock.
            let current = unsafe { &*version };
            let tid = current.word().tid();
            let next = current.link.load(Ordering::Relaxed);
            if retention.needed(tid, successor) {
                remaining += 1;
                (oldest_successor, last_kept) = (last_kept, tid);
                if retention.visible_to_all(tid) {
                    // Visible to every reader: nothing older is readable.
                    Self::drop_tail(&current.link, garbage, dropped);
                    break;
                }
                link = &current.link;
            } else {
                link.store(next, Ordering::Release);
                dropped.push(version);
                Version::retire(version, garbage);
            }
            successor = tid;
            version = next;
        }
        self.pruned_to(remaining, oldest_successor, retention);
    }

    /// [`Head::prune`] under `delta` storage. Each delta turns the state above it into its own,
    /// so dropping a version in the middle of the chain means making the next version kept a
    /// delta against the last one kept above it: a new block, linked in place of the old one
    /// only when it is complete, so a reader sees either the old path (the dropped version
    /// and the old delta, whose links do not change) or the new one. The walk rebuilds each
    /// version's row from the master version, and gives the dropped versions' rows to
    /// `dropped` if it wants them. Locked head.
    pub(super) fn prune_deltas(
        &self,
        newest: Tid,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        if !dropped.rows_wanted && self.prune_delta_tail(newest, retention, garbage, dropped) {
            return;
        }
        // `row`: the state of the version visited; `kept_row`: of the last one kept above it
        // (the master version first).
        let mut kept_row = std::mem::take(&mut dropped.replaced);
        let mut row = std::mem::take(&mut dropped.rebuilt);
        kept_row.clear();
        let consistent = self.copy_value(&mut kept_row);
        debug_assert!(consistent, "a locked head is never torn");
        row.clear();
        row.extend_from_slice(&kept_row);
        let mut successor = newest;
        // The link of the last version kept, and whether versions were dropped below it.
        let (mut link, mut gap) = (&self.older, false);
        let mut remaining = 0u32;
        // As in `prune`.
        let (mut last_kept, mut oldest_successor) = (newest, newest);
        let mut version = self.older.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked (a dropped one until the
            // caller unpins); we hold the lock.
            let current = unsafe { &*version };
            let (word, next) = (current.word(), current.link.load(Ordering::Relaxed));
            if word.is_absent() {
                row.clear();
            } else {
                delta::apply(current.data(), &mut row);
            }
            if !retention.needed(word.tid(), successor) {
                if dropped.rows_wanted {
                    dropped.push_rebuilt(version, &row);
                } else {
                    dropped.push(version);
                }
                Version::retire(version, garbage);
                gap = true;
                successor = word.tid();
                version = next;
                continue;
            }
            remaining += 1;
            (oldest_successor, last_kept) = (last_kept, word.tid());
            // Visible to every reader: nothing older is readable, and the chain ends here.
            let last = retention.visible_to_all(word.tid());
            let kept = if gap {
                let again = Version::alloc_delta(arena, word, &kept_row, &row);
                // SAFETY: ours until published by the store below.
                unsafe {
                    let again = &*again;
                    again
                        .link
                        .store(if last { std::ptr::null_mut() } else { next }, Ordering::Relaxed);
                    again
                        .creator_pi
                        .store(current.creator_pi.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                // Release pairs with the Acquire loads of chain walkers.
                link.store(again, Ordering::Release);
                Version::retire(version, garbage);
                again
            } else {
                if last {
                    current.link.store(std::ptr::null_mut(), Ordering::Release);
                }
                version
            };
            // SAFETY: linked, and we hold the lock.
            link = unsafe { &(*kept).link };
            gap = false;
            kept_row.clear();
            kept_row.extend_from_slice(&row);
            successor = word.tid();
            version = next;
            if last {
                // The tail: every version below goes.
                while !version.is_null() {
                    // SAFETY: as above.
                    let current = unsafe { &*version };
                    if current.word().is_absent() {
                        row.clear();
                    } else if dropped.rows_wanted {
                        delta::apply(current.data(), &mut row);
                    }
                    if dropped.rows_wanted {
                        dropped.push_rebuilt(version, &row);
                    } else {
                        dropped.push(version);
                    }
                    let next = current.link.load(Ordering::Relaxed);
                    Version::retire(version, garbage);
                    version = next;
                }
                break;
            }
        }
        if gap {
            // The chain ended in dropped versions.
            link.store(std::ptr::null_mut(), Ordering::Release);
        }
        dropped.replaced = kept_row;
        dropped.rebuilt = row;
        self.pruned_to(remaining, oldest_successor, retention);
    }

    /// [`Head::prune_deltas`] without rebuilding any row, when that is enough: if every
    /// version to drop lies below the last one kept (the chain's tail), cuts the chain there
    /// and returns true; otherwise changes nothing and returns false. A walk over the words
    /// alone. Locked head.
    pub(super) fn prune_delta_tail(
        &self,
        newest: Tid,
        retention: Retention,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> bool {
        let mut successor = newest;
        let (mut cut, mut gap, mut remaining) = (&self.older, false, 0u32);
        // The successor of the last version kept (no version above it is dropped).
        let mut oldest_successor = newest;
        let mut version = self.older.load(Ordering::Relaxed);
        while !version.is_null() {
            // SAFETY: chain versions are allocated while linked; we hold the lock.
            let current = unsafe { &*version };
            let tid = current.word().tid();
            if retention.needed(tid, successor) {
                if gap {
                    // A kept version below a dropped one must be made anew.
                    return false;
                }
                remaining += 1;
                oldest_successor = successor;
                cut = &current.link;
                if retention.visible_to_all(tid) {
                    break;
                }
            } else {
                gap = true;
            }
            successor = tid;
            version = current.link.load(Ordering::Relaxed);
        }
        Self::drop_tail(cut, garbage, dropped);
        self.pruned_to(remaining, oldest_successor, retention);
        true
    }

    /// Ends a chain at `cut`, a link of a locked head's chain: retires every version below it
    /// and adds them to `dropped`.
    pub(super) fn drop_tail(
        cut: &AtomicPtr<Version>,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) {
        let tail = cut.load(Ordering::Relaxed);
        if tail.is_null() {
            return;
        }
        // Release pairs with the Acquire loads of chain walkers; a reader already in the tail
        // still walks it, its links unchanged.
        cut.store(std::ptr::null_mut(), Ordering::Release);
        let mut version = tail;
        while !version.is_null() {
            dropped.push(version);
            // SAFETY: unlinked above, still allocated until the caller unpins.
            version = unsafe { (*version).link.load(Ordering::Relaxed) };
        }
        Version::retire_chain(tail, garbage);
    }

    /// Records on a locked head's newest version what `Head::prune_due` needs after a prune
    /// under `retention` that left `remaining` versions, the oldest superseded at
    /// `oldest_successor`.
    pub(super) fn pruned_to(&self, remaining: u32, oldest_successor: Tid, retention: Retention) {
        let newest_version = self.older.load(Ordering::Relaxed);
        if !newest_version.is_null() {
            let depth = if retention.multiversion() {
                let remaining = remaining.min(0xffff);
                remaining | (remaining << 16)
            } else {
                prunable_from(oldest_successor, retention)
            };
            // SAFETY: linked, and we hold the lock.
            unsafe { (*newest_version).depth.store(depth, Ordering::Relaxed) };
        }
    }

    /// Whether the record has versions other than its current row (racy: a hint for the
    /// vacuum). Pinned.
    #[inline]
    pub fn has_older(&self) -> bool {
        let first = self.older.load(Ordering::Acquire);
        if first.is_null() || !self.oldest_first() || self.word().is_absent() {
            return !first.is_null();
        }
        // Oldest first with a row: more than the row's own version. SAFETY: the caller is
        // pinned, so a version reached through the chain stays allocated.
        !unsafe { (*first).link.load(Ordering::Relaxed) }.is_null()
    }

    /// The pruning of the vacuum and of cooperative cleaning (`vacuum`,
    /// `cc::cooperative`) of a head the caller has locked: drops the chain versions no reader
    /// at or above `retention` can read, retiring them and appending them to `dropped`.
    /// Returns how many it dropped.
    pub(crate) fn vacuum_locked(
        &self,
        retention: Retention,
        arena: &mut Arena,
        garbage: &mut Garbage,
        dropped: &mut Dropped,
    ) -> usize {
        debug_assert!(self.word().is_locked());
        let before = dropped.len();
        let word = self.word();
        if self.oldest_first() {
            self.prune_oldest_first(word.tid(), !word.is_absent(), retention, garbage, dropped);
        } else {
            self.prune(word.tid(), retention, arena, garbage, dropped);
        }
        dropped.len() - before
    }

    /// Number of older versions (tests and statistics; racy but memory-safe while pinned).
    pub fn chain_len(&self) -> usize {
        let mut count = 0;
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            count += 1;
            // SAFETY: chain versions reached while pinned stay allocated until we unpin.
            version = unsafe { (*version).link.load(Ordering::Acquire) };
        }
        // Under `append-o2n` the last version is the row's own when a row is present.
        if self.oldest_first() && !self.word().is_absent() && count > 0 {
            count -= 1;
        }
        count
    }
}
