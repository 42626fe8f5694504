//! Applying recovered rows: each recovery thread's applier installs a row only over an older
//! one (the newest TID wins, whatever order files are read in), and waits for the others at
//! quiescent points before memory is reclaimed; once replay is done, `finish_table` removes the
//! deleted rows from a table's primary index and rebuilds its secondary indexes.

use super::*;

/// Locks a head another recovery thread may hold for a moment (while it installs a row).
pub(super) fn lock_waiting(head: &Head) -> TidWord {
    loop {
        match head.lock() {
            Ok(word) => return word,
            Err(Busy) => std::hint::spin_loop(),
        }
    }
}

/// Per-thread state for applying rows.
pub(super) struct Applier {
    pub(super) arena: Arena,
    pub(super) garbage: Garbage,
    pub(super) dropped: crate::storage::record::Dropped,
    pub(super) applied: u64,
    /// The protocol words and version storage of new heads (`Config::head_shape`).
    pub(super) shape: HeadShape,
    /// This thread's place in its phase's `Quiescence`.
    pub(super) slot: usize,
    /// What files already finished retired, with their `Quiescence` tags, oldest first.
    pub(super) limbo: std::collections::VecDeque<(u64, Garbage)>,
}

/// Reclamation while the checkpoint loads and the log replays, by quiescent states (QSBR):
/// a thread reaches index nodes only while it works on a file, and starts every file from the
/// trees' roots, so once every other thread has begun a file after a node was unlinked, or is
/// between files, none can reach it. The nodes that splits replace are then freed and made
/// again into new nodes, and the values that newer images replace into new values.
///
/// Before this, nothing was freed until recovery ended: a 10-warehouse TPC-C replay left about
/// 238 thousand replaced nodes (385 MiB), more than half the nodes it made, and every byte of
/// them was memory the kernel had to zero on first touch (docs/performance.md).
///
/// Its atomics come from `sync::shim`, so that `quiescence_schedules` runs it under shuttle.
pub(super) struct Quiescence {
    /// Counts the files begun.
    pub(super) clock: shim::AtomicU64,
    /// Per thread, the clock when it began its current file, or `Quiescence::IDLE`.
    pub(super) working: Box<[shim::AtomicU64]>,
}

impl Quiescence {
    pub(super) const IDLE: u64 = u64::MAX;

    pub(super) fn new(threads: usize) -> Quiescence {
        Quiescence {
            clock: shim::AtomicU64::new(0),
            working: (0..threads).map(|_| shim::AtomicU64::new(Quiescence::IDLE)).collect(),
        }
    }

    /// Thread `slot` begins a file: it reaches no node before this.
    pub(super) fn begin(&self, slot: usize) {
        let now = self.clock.fetch_add(1, Ordering::SeqCst) + 1;
        self.working[slot].store(now, Ordering::SeqCst);
        // Orders the store before the thread's reads of the trees: a thread that then sees
        // this slot idle (or begun after its tag) also sees every unlink made before its tag.
        shim::fence(Ordering::SeqCst);
    }

    /// Thread `slot` has finished a file and reaches no node until it begins another; returns
    /// the tag of what it unlinked so far.
    pub(super) fn end(&self, slot: usize) -> u64 {
        // Orders the unlinks before the tag is read.
        shim::fence(Ordering::SeqCst);
        let tag = self.clock.load(Ordering::SeqCst);
        self.working[slot].store(Quiescence::IDLE, Ordering::SeqCst);
        tag
    }

    /// Whether no thread can reach what was unlinked before `tag` was read: each is between
    /// files, or began its file after.
    pub(super) fn passed(&self, tag: u64) -> bool {
        shim::fence(Ordering::SeqCst);
        self.working.iter().all(|working| {
            let began = working.load(Ordering::SeqCst);
            began == Quiescence::IDLE || began > tag
        })
    }
}

pub(super) const KEEP_NOTHING: Retention = Retention::NOTHING;

impl Applier {
    pub(super) fn new(shape: HeadShape, slot: usize) -> Applier {
        Applier {
            arena: Arena::new(),
            garbage: Garbage::new(),
            dropped: Default::default(),
            applied: 0,
            shape,
            slot,
            limbo: Default::default(),
        }
    }

    /// Makes appliers numbered from 0, one per call, for a phase's `Quiescence`.
    pub(super) fn maker(shape: HeadShape) -> impl FnMut() -> Applier {
        let mut slot = 0;
        move || {
            slot += 1;
            Applier::new(shape, slot - 1)
        }
    }

    /// Begins a file (`Quiescence`).
    pub(super) fn begin_file(&self, quiescence: &Quiescence) {
        quiescence.begin(self.slot);
    }

    /// Ends a file: what it retired waits until no other thread can reach it, and what has
    /// waited long enough is freed, for this thread's next nodes and values.
    pub(super) fn end_file(&mut self, quiescence: &Quiescence) {
        let tag = quiescence.end(self.slot);
        if !self.garbage.is_empty() {
            self.limbo.push_back((tag, std::mem::take(&mut self.garbage)));
        }
        while self.limbo.front().is_some_and(|(tag, _)| quiescence.passed(*tag)) {
            let (_, mut garbage) = self.limbo.pop_front().expect("a front");
            // SAFETY: every other thread began a file after these items were unlinked, or is
            // between files (`Quiescence::passed`), and this one is between files.
            unsafe { garbage.free_all(&mut self.arena) };
        }
    }

    /// Frees what still waits, once the phase's threads have all stopped.
    pub(super) fn end_phase(&mut self) {
        for (_, mut garbage) in self.limbo.drain(..) {
            // SAFETY: the phase's threads have been joined: nothing reaches these items.
            unsafe { garbage.free_all(&mut self.arena) };
        }
    }

    /// Installs `value` (or a deletion) with `new_word` on a head this thread has locked, and
    /// unlocks it.
    pub(super) fn install(&mut self, head: &Head, value: Option<&[u8]>, new_word: TidWord) {
        self.dropped.reset(false);
        head.install(
            value,
            new_word,
            KEEP_NOTHING,
            &mut self.arena,
            &mut self.garbage,
            &mut self.dropped,
        );
        head.unlock_to(new_word);
    }

    /// Makes `value` (or a deletion) the row's state if `tid` is newer than what it has, in two
    /// halves: this one, the index search, installs the image when the key is new; a key the
    /// index has gives back the row's head, for `apply_found`, which the caller may leave for
    /// a few more images while the head's line is fetched (`ReplayBatch::apply`).
    ///
    /// Callers that apply rows in key order (a checkpoint file, a sorted batch) pass the same
    /// `finger` each time, so that the rows of one leaf descend the tree once.
    ///
    /// One index search per image: the index is asked to insert the key, and makes a fresh
    /// locked head for it only when the key is absent; when the key is there it hands back
    /// the row's head. (A lookup followed by an insert cost two descents for every new row;
    /// a head made before the insert was freed again for every row already there.)
    #[inline]
    pub(super) fn locate<'a>(
        &mut self,
        table: &'a Table,
        key: &[u8],
        tid: Tid,
        value: Option<&[u8]>,
        finger: &mut Finger<'a>,
        pin: &Pin<'_>,
    ) -> Option<&'a Head> {
        let (arena, shape) = (&mut self.arena, self.shape);
        let mut fresh = std::ptr::null_mut();
        let make = || {
            fresh = Head::alloc_with(
                arena,
                value.map_or(0, <[u8]>::len),
                TidWord::new(Tid::ZERO, TidWord::LOCK | TidWord::LATEST | TidWord::ABSENT),
                shape,
            );
            fresh as u64
        };
        match table.primary.insert_near(finger, key, make, pin, &mut self.garbage, &mut ()) {
            Ok(_) => {
                // SAFETY: `fresh` was made by the insert and is locked by this thread; other
                // recovery threads that find it wait for the unlock in `install`.
                self.install(unsafe { &*fresh }, value, Applier::word(tid, value));
                self.applied += 1;
                None
            }
            // SAFETY: reached through the index of a table that outlives the replay; heads are
            // not freed during replay (deleted rows leave the index after it, `finish_table`).
            Err(found) => Some(unsafe { &*(found as *const Head) }),
        }
    }

    /// The second half of `locate`, for a row already in the index.
    #[inline]
    pub(super) fn apply_found(&mut self, head: &Head, tid: Tid, value: Option<&[u8]>) {
        // A row's TID only grows during replay, so an image no newer than what the row shows,
        // locked or not, is done with: no lock taken, no line written (the older images of
        // rows, most of those replayed newest segments first).
        if tid <= head.word().tid() {
            return;
        }
        let word = lock_waiting(head);
        if tid > word.tid() {
            self.install(head, value, Applier::word(tid, value));
            self.applied += 1;
        } else {
            head.unlock_to(word);
        }
    }

    pub(super) fn word(tid: Tid, value: Option<&[u8]>) -> TidWord {
        let flags =
            if value.is_some() { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
        TidWord::new(tid, flags)
    }
}

/// Removes deleted rows from a table's primary index and builds its secondary indexes.
pub(super) fn finish_table(table: &Table, applier: &mut Applier, pin: &Pin<'_>) {
    /// Builds the secondary entries of live rows as the scan passes them (other trees than
    /// the one scanned), and keeps only the deleted rows, which leave the primary index after
    /// the scan: copying every key first cost one allocation per row.
    struct Finish<'a> {
        table: &'a Table,
        applier: &'a mut Applier,
        pin: &'a Pin<'a>,
        deleted: Vec<(Vec<u8>, u64)>,
        value: Vec<u8>,
        entry: Vec<u8>,
        scratch: Vec<u8>,
    }
    impl crate::index::ScanVisitor for Finish<'_> {
        fn leaf(&mut self, _leaf: crate::index::LeafVersion) {}
        fn entry(&mut self, key: &[u8], head: u64) -> bool {
            // SAFETY: in the index; recovery is the only user.
            let head_ref = unsafe { &*(head as *mut Head) };
            if head_ref.word().is_absent() {
                self.deleted.push((key.to_vec(), head));
                return true;
            }
            if !self.table.has_secondaries() {
                return true;
            }
            self.value.clear();
            let Ok(word) = head_ref.read(&mut self.value) else {
                unreachable!("nothing holds a lock during recovery");
            };
            for index in self.table.secondaries.iter() {
                self.entry.clear();
                if index.entry_of(&self.value, key, &mut self.entry, &mut self.scratch) {
                    if self.table.physical {
                        push_version(&mut self.entry, word.tid().as_u64());
                    }
                    let garbage = &mut self.applier.garbage;
                    let _ = index.tree.insert(&self.entry, head, self.pin, garbage, &mut ());
                }
            }
            true
        }
    }
    let mut finish = Finish {
        table,
        applier,
        pin,
        deleted: Vec::new(),
        value: Vec::new(),
        entry: Vec::new(),
        scratch: Vec::new(),
    };
    table.primary.scan(
        Bound::Unbounded,
        Bound::Unbounded,
        crate::index::Direction::Forward,
        pin,
        &mut crate::index::ScanBuffer::new(),
        &mut finish,
    );
    let Finish { deleted, applier, .. } = finish;
    for (key, head) in deleted {
        table.primary.remove(&key, Some(head), pin, &mut applier.garbage, &mut ());
        // SAFETY: just unlinked; no other thread can reach it during recovery.
        unsafe { Head::free_now(head as *mut Head, &mut applier.arena) };
    }
}
