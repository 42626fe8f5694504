//! Versions: the immutable blocks of a record's chain of older states (and of a value too
//! long for the head), what a prune or an install dropped from a chain, and the bound below
//! which a prune can drop nothing.

use super::*;

impl Version {
    pub(super) fn bytes_for(len: usize) -> usize {
        size_of::<Version>() + len
    }

    /// Bytes of data.
    pub(super) fn data_len(&self) -> usize {
        (self.len & !HANDLES) as usize
    }

    /// Marks a version of a non-inline table, before it is published: its data are handles
    /// whose values it holds.
    pub(super) fn mark_handles(version: *mut Version) {
        // SAFETY: the caller's fresh, unpublished version.
        unsafe { (*version).len |= HANDLES };
    }

    /// A new, unlinked version with `word` and room for `len` bytes of data, which the caller
    /// writes before publishing it.
    pub(super) fn alloc_header(arena: &mut Arena, word: TidWord, len: usize) -> *mut Version {
        let block = arena.alloc(Self::bytes_for(len)) as *mut Version;
        // SAFETY: a fresh block large enough for the header and the data, suitably aligned.
        unsafe {
            block.write(Version {
                word: word.without(TidWord::LOCK).raw(),
                link: AtomicPtr::new(std::ptr::null_mut()),
                len: len as u32,
                depth: AtomicU32::new(0),
                creator_pi: AtomicU64::new(0),
            });
        }
        block
    }

    pub(super) fn alloc(arena: &mut Arena, word: TidWord, data: &[u8]) -> *mut Version {
        let block = Self::alloc_header(arena, word, data.len());
        // SAFETY: the block has room for `data` after its header, and is not yet published.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), Self::data_ptr(block), data.len()) };
        block
    }

    /// A delta version (`delta` storage) with `word`, holding what turns `newer`, the state
    /// that replaced it, into `older`, its own row.
    pub(super) fn alloc_delta(
        arena: &mut Arena,
        word: TidWord,
        newer: &[u8],
        older: &[u8],
    ) -> *mut Version {
        let plan = delta::plan(newer, older);
        let len = plan.len();
        let block = Self::alloc_header(arena, word, len);
        // SAFETY: the delta is written into the block's `len` bytes of data before the
        // version is published.
        unsafe {
            let data = std::slice::from_raw_parts_mut(Self::data_ptr(block), len);
            delta::write(&plan, newer, older, data);
        }
        block
    }

    pub(super) fn data_ptr(version: *mut Version) -> *mut u8 {
        // SAFETY: the data follows the header in the same block.
        unsafe { (version as *mut u8).add(size_of::<Version>()) }
    }

    /// The version's bytes: its row, or under `delta` storage the delta to its row. Versions
    /// are immutable once published.
    pub fn data(&self) -> &[u8] {
        // SAFETY: `len` bytes were written after the header before the version was published.
        unsafe {
            std::slice::from_raw_parts(Self::data_ptr(self as *const _ as *mut _), self.data_len())
        }
    }

    pub fn word(&self) -> TidWord {
        TidWord::from_raw(self.word)
    }

    pub(super) fn retire(version: *mut Version, garbage: &mut Garbage) {
        // SAFETY: the caller unlinked `version`; its length is immutable.
        let raw = unsafe { (*version).len };
        garbage.retire(if raw & HANDLES != 0 {
            Retired::new(version as *mut u8, 0, Version::free_retired)
        } else {
            Retired::block(version as *mut u8, Self::bytes_for(raw as usize))
        });
    }

    /// Frees a retired version that holds value handles (`sync::reclaim::Free`).
    ///
    /// # Safety
    /// As [`Version::free`].
    pub(super) unsafe fn free_retired(version: *mut u8, _bytes: usize, arena: &mut Arena) {
        // SAFETY: guaranteed by the caller.
        unsafe { Version::free(version as *mut Version, arena) }
    }

    /// Frees a version, releasing the values it holds (non-inline tables).
    ///
    /// # Safety
    /// Nothing can reach `version` any more, and it was allocated from `arena`'s spaces.
    pub(crate) unsafe fn free(version: *mut Version, arena: &mut Arena) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let this = &*version;
            if this.len & HANDLES != 0 {
                crate::storage::shared::release_row(this.data());
            }
            arena.free(version as *mut u8, Self::bytes_for(this.data_len()));
        }
    }

    /// Retires `first` and every version older than it.
    pub(super) fn retire_chain(mut version: *mut Version, garbage: &mut Garbage) {
        while !version.is_null() {
            // SAFETY: the chain was unlinked by the caller and is still allocated.
            let link = unsafe { (*version).link.load(Ordering::Relaxed) };
            Self::retire(version, garbage);
            version = link;
        }
    }

    /// # Safety
    /// Exclusive access to the chain.
    pub(super) unsafe fn free_chain(mut version: *mut Version, arena: &mut Arena) {
        while !version.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe {
                let link = (*version).link.load(Ordering::Relaxed);
                Self::free(version, arena);
                version = link;
            }
        }
    }
}

impl Dropped {
    /// Forgets what was dropped; `rows_wanted`: whether the next drop records rows.
    pub fn reset(&mut self, rows_wanted: bool) {
        self.versions.clear();
        self.rows.clear();
        self.spans.clear();
        self.rows_wanted = rows_wanted;
    }

    pub fn len(&self) -> usize {
        self.versions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.versions.is_empty()
    }

    pub(super) fn push(&mut self, version: *const Version) {
        self.versions.push(version);
    }

    pub(super) fn push_rebuilt(&mut self, version: *const Version, row: &[u8]) {
        self.spans.push((self.rows.len() as u32, row.len() as u32));
        self.rows.extend_from_slice(row);
        self.versions.push(version);
    }

    /// Each dropped state's word and row (empty for an absent state), if rows were wanted.
    pub fn states(&self) -> impl Iterator<Item = (TidWord, &[u8])> + '_ {
        assert!(self.rows_wanted, "rows are recorded only when wanted");
        debug_assert!(self.spans.is_empty() || self.spans.len() == self.versions.len());
        self.versions.iter().enumerate().map(move |(index, &version)| {
            // SAFETY: dropped versions are retired and stay allocated while the owner is
            // pinned, which it is from the drop until it is done with them.
            let version = unsafe { &*version };
            let row = match self.spans.get(index) {
                Some(&(start, len)) => &self.rows[start as usize..(start + len) as usize],
                None => version.data(),
            };
            (version.word(), row)
        })
    }
}

/// The lowest snapshot low-water mark (`Retention::low_unheld`) at which a prune under a
/// single-version protocol (no `readers_low`) can drop anything from a newest-first chain
/// whose oldest version was superseded at `successor`, saturated at `u32::MAX`. (The version
/// a held `low` reads is kept besides, which only keeps more: the bound stays a bound.) Only
/// the work depends on it: a prune that comes early drops nothing, and one that comes late
/// keeps garbage a little longer, never less than a reader needs.
///
/// Let B be the last snapshot boundary before `successor`'s epoch. A prune drops a version v
/// only if no reader needs it, or if a version newer than v is visible to every reader:
/// - v was kept because a boundary at or above v's epoch lay below its successor, so it is
///   needed while the low-water mark is at most the last such boundary, which is at least B
///   (v's successor is at least the oldest version's);
/// - a version newer than the oldest one is at least `successor`, so it is visible to every
///   reader only once the low-water mark reaches `successor`'s epoch, which is above B.
///
/// So nothing goes while the mark is at most B, and the bound is B + 1. Linking a newer
/// version leaves it as it was, and so does replacing a state without keeping it (the chain's
/// newest version's successor grows, which can only raise the bound).
pub(super) fn prunable_from(successor: Tid, retention: Retention) -> u32 {
    let epoch = successor.epoch().0;
    if epoch == 0 {
        return 0;
    }
    let last_boundary = (epoch - 1) / retention.interval * retention.interval;
    (last_boundary + 1).min(u64::from(u32::MAX)) as u32
}
