//! Reading a record: Silo's read protocol on the TID word, as of an epoch or a timestamp,
//! through the version chain (and its deltas) for older states.

use super::*;

impl Head {
    /// Silo's read protocol: a consistent copy of the current value (if any) into `out`, and
    /// the TID word it belongs to. Waits, bounded, while the record is locked.
    #[inline]
    pub fn read(&self, out: &mut Vec<u8>) -> Result<TidWord, Busy> {
        let mut backoff = Backoff::new(RECORD_WAIT_STEPS_MAX);
        loop {
            // Acquire pairs with the release store that ended the last install.
            let before = TidWord::from_raw(self.word.load(Ordering::Acquire));
            if before.is_locked() {
                if !backoff.wait() {
                    return Err(Busy);
                }
                continue;
            }
            out.clear();
            let consistent = before.is_absent() || self.copy_value(out);
            // Keeps the copy above the re-check (seqlock reader; pairs with the fence after
            // `lock`, which orders the lock bit before an installer's stores).
            fence(Ordering::Acquire);
            if consistent && self.word.load(Ordering::Relaxed) == before.raw() {
                return Ok(before);
            }
            shim::spin_hint();
        }
    }

    /// Copies the current value; `false` if a torn read made it unreadable.
    #[inline]
    pub(super) fn copy_value(&self, out: &mut Vec<u8>) -> bool {
        let len = self.len.load(Ordering::Relaxed);
        if len & OVERFLOW != 0 {
            if self.oldest_first() {
                return self.copy_last(out);
            }
            let version = self.overflow.load(Ordering::Acquire);
            if version.is_null() {
                return false;
            }
            // SAFETY: a non-null overflow pointer read while pinned points to a published,
            // immutable version that is freed only after the reader unpins.
            out.extend_from_slice(unsafe { (*version).data() });
            return true;
        }
        let len = len as usize;
        let inline = self.inline();
        let words = len.div_ceil(8);
        if words > inline.len() {
            return false;
        }
        out.reserve(words * 8);
        let start = out.len();
        let target = out.spare_capacity_mut().as_mut_ptr() as *mut u8;
        for (index, word) in inline[..words].iter().enumerate() {
            let bytes = word.load(Ordering::Relaxed).to_le_bytes();
            // SAFETY: `reserve` made room for `words * 8` bytes past `start`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), target.add(index * 8), 8) };
        }
        // SAFETY: the first `len <= words * 8` spare bytes were just written.
        unsafe { out.set_len(start + len) };
        true
    }

    /// Copies the value of an oldest-to-newest chain's last version, walking the chain to it;
    /// `false` if the chain was empty (a torn read).
    #[cold]
    pub(super) fn copy_last(&self, out: &mut Vec<u8>) -> bool {
        let mut last: *const Version = std::ptr::null();
        // Acquire pairs with the release stores that link versions in `install_oldest_first`.
        let mut version = self.older.load(Ordering::Acquire);
        while !version.is_null() {
            last = version;
            // SAFETY: chain versions reached while pinned stay allocated until we unpin, and a
            // dropped version's link still leads along the chain.
            version = unsafe { (*version).link.load(Ordering::Acquire) };
        }
        if last.is_null() {
            return false;
        }
        // SAFETY: as above; versions are immutable once linked.
        out.extend_from_slice(unsafe { (*last).data() });
        true
    }

    /// The value as of snapshot epoch `at`, copied into `out`. Returns whether a row existed,
    /// and the epoch of the state read (the row's, or its deletion's), which a snapshot
    /// transaction waits to be durable (`txn::read_snapshot`).
    #[inline]
    pub fn read_at_noting(&self, at: Epoch, out: &mut Vec<u8>) -> Result<(bool, Epoch), Busy> {
        self.read_as_of(Tid::last_of(at), out).map(|seen| (seen.present, seen.tid.epoch()))
    }

    /// [`Head::read_at_noting`] without the epoch (the tests' reads).
    #[cfg(test)]
    pub fn read_at(&self, at: Epoch, out: &mut Vec<u8>) -> Result<bool, Busy> {
        self.read_at_noting(at, out).map(|(present, _)| present)
    }

    /// The newest committed state with a TID at or below `bound`, copied into `out` when it
    /// holds a row, and the record's current word. Waits, bounded ([`LONG_WAIT_STEPS_MAX`]),
    /// while the record is locked: the holder's TID may be at or below `bound`.
    pub fn read_as_of(&self, bound: Tid, out: &mut Vec<u8>) -> Result<AsOf, Busy> {
        let mut backoff = Backoff::new(LONG_WAIT_STEPS_MAX);
        loop {
            let before = TidWord::from_raw(self.word.load(Ordering::Acquire));
            if before.is_locked() {
                if !backoff.wait() {
                    return Err(Busy);
                }
                continue;
            }
            if before.tid() <= bound {
                out.clear();
                let consistent = before.is_absent() || self.copy_value(out);
                fence(Ordering::Acquire);
                if consistent && self.word.load(Ordering::Relaxed) == before.raw() {
                    return Ok(AsOf {
                        current: before,
                        present: !before.is_absent(),
                        tid: before.tid(),
                    });
                }
                continue;
            }
            if self.deltas() {
                match self.read_deltas_as_of(before, bound, out) {
                    Some(found) => return Ok(found),
                    None => continue,
                }
            }
            let mut version = self.older.load(Ordering::Acquire);
            fence(Ordering::Acquire);
            if self.word.load(Ordering::Relaxed) != before.raw() {
                continue;
            }
            // The chain belongs to `before`. Its versions are immutable, and pruning removes
            // only versions that no reader at or above the retention bounds reads.
            let mut present = false;
            let mut tid = Tid::ZERO;
            if self.oldest_first() {
                // Oldest first: the last version at or below `bound`. Versions appended since
                // `before` are newer than it, so above `bound`.
                let mut found: *const Version = std::ptr::null();
                while !version.is_null() {
                    // SAFETY: chain versions reached while pinned stay allocated until we
                    // unpin, and a dropped version's link still leads along the chain.
                    let current = unsafe { &*version };
                    if current.word().tid() > bound {
                        break;
                    }
                    found = version;
                    version = current.link.load(Ordering::Acquire);
                }
                if !found.is_null() {
                    // SAFETY: as above.
                    let found = unsafe { &*found };
                    out.clear();
                    tid = found.word().tid();
                    present = !found.word().is_absent();
                    if present {
                        out.extend_from_slice(found.data());
                    }
                }
                return Ok(AsOf { current: before, present, tid });
            }
            while !version.is_null() {
                // SAFETY: chain versions reached while pinned stay allocated until we unpin.
                let current = unsafe { &*version };
                if current.word().tid() <= bound {
                    out.clear();
                    tid = current.word().tid();
                    present = !current.word().is_absent();
                    if present {
                        out.extend_from_slice(current.data());
                    }
                    break;
                }
                version = current.link.load(Ordering::Acquire);
            }
            return Ok(AsOf { current: before, present, tid });
        }
    }

    /// [`Head::read_as_of`] of a state older than `before`, the unlocked current word, under
    /// `delta` storage: copies the master version and applies the chain's deltas down to the
    /// newest state at or below `bound`. `None` if the head changed while it read (the caller
    /// retries).
    pub(super) fn read_deltas_as_of(
        &self,
        before: TidWord,
        bound: Tid,
        out: &mut Vec<u8>,
    ) -> Option<AsOf> {
        out.clear();
        // The master version and the chain's first delta (made against it) must belong to the
        // same state: both are read between two loads of the same unlocked word.
        let consistent = before.is_absent() || self.copy_value(out);
        let mut version = self.older.load(Ordering::Acquire);
        fence(Ordering::Acquire);
        if !consistent || self.word.load(Ordering::Relaxed) != before.raw() {
            return None;
        }
        while !version.is_null() {
            // SAFETY: chain versions reached while pinned stay allocated until we unpin. Each
            // is immutable, and a dropped one's link still leads along the chain, so each delta
            // reached applies to the row rebuilt so far.
            let current = unsafe { &*version };
            let word = current.word();
            if word.is_absent() {
                out.clear();
            } else {
                delta::apply(current.data(), out);
            }
            if word.tid() <= bound {
                return Some(AsOf { current: before, present: !word.is_absent(), tid: word.tid() });
            }
            version = current.link.load(Ordering::Acquire);
        }
        out.clear();
        Some(AsOf { current: before, present: false, tid: Tid::ZERO })
    }
}
