//! `FaultyStorage`: an in-memory data directory for tests, which can fail any write or sync
//! on demand, fill up like a disk, and crash: what a crash leaves of each file (the synced
//! bytes, a torn tail, freed blocks' old contents) is chosen the way a real file system may
//! leave it.

use super::*;

// ----- faults and crashes ----------------------------------------------------------------------

#[derive(Debug, Default, Clone)]
struct MemFile {
    /// Bytes known to be on the device (written, then synced).
    synced: Vec<u8>,
    /// Bytes written since the last sync: a crash keeps a random prefix of them.
    pending: Vec<u8>,
    /// A reused log file's old bytes (`Storage::reuse_log`): those beyond what was written
    /// since are still in the file.
    stale: Vec<u8>,
    /// A log segment's: its space was preallocated (`fallocate`) or is a spare's, so space
    /// not yet written reads as zeros or its old bytes, never as another file's.
    preallocated: bool,
}

impl MemFile {
    /// The file's length: the bytes written, or the old ones where they reach further.
    fn len(&self) -> usize {
        (self.synced.len() + self.pending.len()).max(self.stale.len())
    }

    /// What a reader sees: the bytes written, then the old ones beyond them.
    fn contents(&self) -> Vec<u8> {
        let mut all = self.synced.clone();
        all.extend_from_slice(&self.pending);
        if self.stale.len() > all.len() {
            all.extend_from_slice(&self.stale[all.len()..]);
        }
        all
    }
}

/// What a directory entry names.
#[derive(Debug, Clone)]
enum Entry {
    File(Arc<Mutex<MemFile>>),
    Dir,
}

/// A change to a directory entry not yet made durable by a sync of its directory: `path`
/// names `entry` from now on, or nothing.
#[derive(Debug, Clone)]
struct EntryChange {
    path: String,
    entry: Option<Entry>,
}

/// The directory a path's entry lives in ("" for the data directory's own entries).
fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |at| &path[..at])
}

/// The directories above `path`, outermost first ("" left out).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(at, _)| &path[..at])
}

#[derive(Debug, Default)]
struct MemState {
    /// Every file, by path, as the process sees them.
    files: BTreeMap<String, Arc<Mutex<MemFile>>>,
    /// The directories the process has made (a file's parents, made by `create`).
    dirs: BTreeSet<String>,
    /// The entries a crash keeps for certain: each directory's as of its last sync.
    durable: BTreeMap<String, Entry>,
    /// Changes of entries since their directory's last sync, oldest first. A crash keeps each
    /// or not, at random: a file system without a journal (ext4 without one, as on the
    /// development machine) orders none of them (`Storage::sync_dir`).
    unsynced: Vec<EntryChange>,
    /// Every write or sync counts one operation; operation number `fail_at` and every later one
    /// fails (a full or broken disk stays broken).
    operations: u64,
    fail_at: Option<u64>,
    failures: u64,
    /// Whether removing a file fails (`FaultyStorage::refuse_removals`).
    removals_refused: bool,
    /// Whether every sync fails, writes still succeeding (`FaultyStorage::fail_syncs`).
    syncs_fail: bool,
    /// The most bytes the files may hold (`FaultyStorage::limit_space`): a write past it fails.
    space: Option<u64>,
    /// The bytes of files whose last name went (removed, or renamed over), newest last: the
    /// file system may give their blocks to a file that grows, and a crash before that file's
    /// sync can leave their old bytes in it (`FaultyStorage::torn`).
    freed: Vec<Vec<u8>>,
}

/// How many freed files `MemState::freed` keeps, and how many of each one's first bytes.
const FREED_FILES_MAX: usize = 8;
const FREED_BYTES_MAX: usize = 1 << 20;

/// Keeps the bytes of `file`, whose last name went, in `freed` (`MemState::freed`): blocks
/// that files may be given.
fn free(freed: &mut Vec<Vec<u8>>, file: &Mutex<MemFile>) {
    let mut bytes = file.lock().unwrap_or_else(|poison| poison.into_inner()).contents();
    bytes.truncate(FREED_BYTES_MAX);
    if bytes.iter().any(|&byte| byte != 0) {
        if freed.len() == FREED_FILES_MAX {
            freed.remove(0);
        }
        freed.push(bytes);
    }
}

impl MemState {
    /// Records that `path` now names `entry` (or nothing); durable once its directory is synced.
    fn change(&mut self, path: &str, entry: Option<Entry>) {
        self.unsynced.push(EntryChange { path: path.to_string(), entry });
    }

    /// Makes the directories above `path` that do not exist yet, each synced into its parent,
    /// as `create` does.
    fn make_parents(&mut self, path: &str) -> io::Result<()> {
        for dir in ancestors(path) {
            if !self.dirs.contains(dir) {
                FaultyStorage::operation(self)?;
                self.dirs.insert(dir.to_string());
                self.change(dir, Some(Entry::Dir));
                self.sync_dir(parent(dir));
            }
        }
        Ok(())
    }

    /// Makes every change of `dir`'s entries durable (`fsync` of the directory).
    fn sync_dir(&mut self, dir: &str) {
        let (synced, left): (Vec<EntryChange>, Vec<EntryChange>) =
            std::mem::take(&mut self.unsynced)
                .into_iter()
                .partition(|change| parent(&change.path) == dir);
        self.unsynced = left;
        for change in synced {
            apply(&mut self.durable, change);
        }
    }

    /// The bytes every file holds.
    fn used_bytes(&self) -> u64 {
        self.files
            .values()
            .map(|file| file.lock().unwrap_or_else(|poison| poison.into_inner()).len() as u64)
            .sum()
    }

    /// Fails with "no space left on device" when `more` bytes written to `file` would take the
    /// files past the space limit. (It locks every file: the caller holds none of them.)
    fn check_space(&self, file: &Mutex<MemFile>, more: usize) -> io::Result<()> {
        let Some(space) = self.space else { return Ok(()) };
        let used = self.used_bytes();
        let file = file.lock().unwrap_or_else(|poison| poison.into_inner());
        let written = file.synced.len() + file.pending.len();
        let growth = (written + more).saturating_sub(file.len());
        if growth > 0 && used + growth as u64 > space {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }
}

/// What a crash leaves of a file's bytes, given the freed files' (`FaultyStorage::crash`).
type LeaveAfterCrash = dyn Fn(&FaultyStorage, &MemFile, &[Vec<u8>]) -> Vec<u8>;

/// A freed file's bytes and where in them a block starts, or nothing (zeros).
type FreedBlock<'f> = Option<(&'f [u8], usize)>;

/// An in-memory data directory that fails on command and can simulate a crash. For tests.
#[derive(Debug, Clone, Default)]
pub struct FaultyStorage {
    state: Arc<Mutex<MemState>>,
    seed: Arc<AtomicU64>,
}

impl FaultyStorage {
    pub fn new(seed: u64) -> FaultyStorage {
        FaultyStorage { state: Arc::default(), seed: Arc::new(AtomicU64::new(seed | 1)) }
    }

    /// Write or sync number `operations_from_now` (0: the next one) and all later ones fail
    /// with "no space left on device".
    pub fn fail_after(&self, operations_from_now: u64) {
        let mut state = self.lock();
        state.fail_at = Some(state.operations + operations_from_now);
    }

    /// Writes and syncs succeed again (space was freed).
    pub fn heal(&self) {
        self.lock().fail_at = None;
    }

    /// While `failing`, every sync (of a file or a directory, and the sync of a cut) fails
    /// with "no space left on device", as an fsync may on a thin-provisioned or network disk,
    /// while writes succeed: what a failed fsync leaves is unknown, unlike a write refused.
    pub fn fail_syncs(&self, failing: bool) {
        self.lock().syncs_fail = failing;
    }

    /// Writes that would take the files past `bytes` in all fail with "no space left on
    /// device" (`None`: no limit). Unlike `fail_after`, removing files makes room again.
    pub fn limit_space(&self, bytes: Option<u64>) {
        self.lock().space = bytes;
    }

    /// The bytes all files hold.
    pub fn used_bytes(&self) -> u64 {
        self.lock().used_bytes()
    }

    /// Operations (writes and syncs) so far.
    pub fn operations(&self) -> u64 {
        self.lock().operations
    }

    /// Operations that failed.
    pub fn failures(&self) -> u64 {
        self.lock().failures
    }

    /// The storage a restarted process would find after a crash now.
    ///
    /// - Entries: each directory keeps what it held at its last sync (`sync_dir`; `rename`
    ///   syncs the target's directory); each change since survives or not, at random and in
    ///   any combination. A file or directory under a directory that did not survive is gone.
    /// - Bytes: each file keeps what was synced. Of what was written since, a crash keeps
    ///   either a random prefix (writes reaching the device in order) or, with the same
    ///   chance, each 512-byte sector up to a random length at random, a sector not written
    ///   keeping the file's bytes from before (a reused file's old bytes; beyond them zeros
    ///   or a freed file's bytes, `torn`): a device that writes the sectors of a request, and
    ///   the requests, in any order, under a file system that may write a file's new size
    ///   before its data.
    pub fn crash(&self) -> FaultyStorage {
        self.crash_leaving(&|storage: &FaultyStorage, file: &MemFile, freed: &[Vec<u8>]| {
            storage.torn(file, freed)
        })
    }

    /// A crash as `crash` makes it for directory entries, leaving the worst bytes a file system
    /// without a journal may: each file written through the page cache keeps the length of
    /// all it was written, and where it was not synced, the bytes a freed file held at the
    /// same offset: the newest freed file of the same kind (the same first 8 bytes, its
    /// magic number) that reaches as far, else the newest that does, else zeros. (A file
    /// system tends to give a file blocks near those it held before, in the same directory.)
    /// Log segments, whose space is preallocated, keep what `crash` leaves them.
    pub fn crash_onto_freed_blocks(&self) -> FaultyStorage {
        self.crash_leaving(&|storage: &FaultyStorage, file: &MemFile, freed: &[Vec<u8>]| {
            if file.preallocated {
                return storage.torn(file, freed);
            }
            let written = file.synced.len() + file.pending.len();
            let mut bytes = file.synced.clone();
            let kind = file.contents().get(..8).map(<[u8]>::to_vec);
            for position in bytes.len()..written {
                let reaching = || freed.iter().rev().filter(|old| old.len() > position);
                let old = reaching()
                    .find(|old| kind.as_deref().is_some_and(|kind| old.starts_with(kind)))
                    .or_else(|| reaching().next());
                bytes.push(old.map_or(0, |old| old[position]));
            }
            bytes
        })
    }

    /// The storage after a crash whose files keep what `leave` makes of each.
    fn crash_leaving(&self, leave: &LeaveAfterCrash) -> FaultyStorage {
        let state = self.lock();
        let mut entries = state.durable.clone();
        for change in &state.unsynced {
            if self.coin() {
                apply(&mut entries, change.clone());
            }
        }
        let present =
            |path: &str| ancestors(path).all(|dir| matches!(entries.get(dir), Some(Entry::Dir)));
        let mut files = BTreeMap::new();
        let mut dirs = BTreeSet::new();
        let mut durable = BTreeMap::new();
        for (path, entry) in &entries {
            if !present(path) {
                continue;
            }
            match entry {
                Entry::Dir => {
                    dirs.insert(path.clone());
                    durable.insert(path.clone(), Entry::Dir);
                }
                Entry::File(file) => {
                    let file = file.lock().unwrap_or_else(|poison| poison.into_inner());
                    let kept = Arc::new(Mutex::new(MemFile {
                        synced: leave(self, &file, &state.freed),
                        pending: Vec::new(),
                        stale: file.stale.clone(),
                        preallocated: file.preallocated,
                    }));
                    files.insert(path.clone(), Arc::clone(&kept));
                    durable.insert(path.clone(), Entry::File(kept));
                }
            }
        }
        // What was written and not kept may be on the device, in blocks that are free now.
        let mut freed = state.freed.clone();
        for file in state.files.values() {
            if !file.lock().unwrap_or_else(|poison| poison.into_inner()).pending.is_empty() {
                free(&mut freed, file);
            }
        }
        FaultyStorage {
            state: Arc::new(Mutex::new(MemState {
                files,
                dirs,
                durable,
                freed,
                ..MemState::default()
            })),
            seed: Arc::new(AtomicU64::new(self.next_random() | 1)),
        }
    }

    /// What a crash leaves of `file`'s bytes (`crash`). A sector not written keeps what the
    /// file held there before (`MemFile::stale`); where it held nothing, the block the file
    /// system gave it holds zeros or, with even chances, a freed file's old bytes (`freed`): a
    /// file system without a journal may write a file's new size before its data.
    fn torn(&self, file: &MemFile, freed: &[Vec<u8>]) -> Vec<u8> {
        const SECTOR: usize = 512;
        const BLOCK: usize = 4096;
        let mut bytes = file.synced.clone();
        let start = bytes.len();
        let kept = (self.next_random() % (file.pending.len() as u64 + 1)) as usize;
        bytes.extend_from_slice(&file.pending[..kept]);
        if self.coin() {
            return bytes;
        }
        // The file block last looked at, and the freed bytes it was given (`freed_block`).
        let mut block_given: Option<usize> = None;
        let mut source: FreedBlock<'_> = None;
        let mut at = start;
        while at < bytes.len() {
            let end = (at / SECTOR + 1) * SECTOR;
            let end = end.min(bytes.len());
            if self.coin() {
                let block = at / BLOCK;
                if block_given != Some(block) {
                    block_given = Some(block);
                    source = if file.preallocated {
                        None
                    } else {
                        self.freed_block(freed, block, BLOCK)
                    };
                }
                for (offset, byte) in bytes[at..end].iter_mut().enumerate() {
                    let position = at + offset;
                    *byte = match file.stale.get(position) {
                        Some(&old) => old,
                        None => source.map_or(0, |(old, from)| {
                            old.get(from + position % BLOCK).copied().unwrap_or(0)
                        }),
                    };
                }
            }
            at = end;
        }
        bytes
    }

    /// The freed bytes a file's block number `block` may be given: none (zeros), or a random
    /// freed file's block at the same number or at a random one (where it starts).
    fn freed_block<'f>(
        &self,
        freed: &'f [Vec<u8>],
        block: usize,
        block_bytes: usize,
    ) -> FreedBlock<'f> {
        if freed.is_empty() || self.coin() {
            return None;
        }
        let old = &freed[(self.next_random() % freed.len() as u64) as usize];
        let blocks = old.len().div_ceil(block_bytes) as u64;
        let number =
            if self.coin() { block } else { (self.next_random() % blocks.max(1)) as usize };
        Some((old, number * block_bytes))
    }

    /// Overwrites one byte of a file (to test that corruption is found).
    pub fn corrupt(&self, path: &str, offset: usize) {
        self.damage(path, offset, 0x5A, None);
    }

    /// Flips the bits `mask` of the byte at `offset` (taken modulo the file's length; nothing
    /// in an empty file), then cuts the file to `keep` bytes when given: for tests and fuzz
    /// targets that damage a data directory.
    pub fn damage(&self, path: &str, offset: usize, mask: u8, keep: Option<usize>) {
        let state = self.lock();
        let mut file = state.files.get(path).expect("file to damage exists").lock().unwrap();
        let mut all = file.contents();
        file.pending.clear();
        file.stale.clear();
        if !all.is_empty() {
            let at = offset % all.len();
            all[at] ^= mask;
        }
        if let Some(keep) = keep {
            all.truncate(keep);
        }
        file.synced = all;
    }

    /// Makes every removal of a file fail (permission denied) while `refused` is true; writes
    /// and syncs still succeed.
    pub fn refuse_removals(&self, refused: bool) {
        self.lock().removals_refused = refused;
    }

    /// Every file's path, directories included in the name (`wal/...`, `checkpoint/E/...`).
    pub fn paths(&self) -> Vec<String> {
        self.lock().files.keys().cloned().collect()
    }

    /// What every crash keeps of the file at `path`: its synced bytes, if its directory entry
    /// and those of the directories above it were synced too; otherwise `None`. (For the
    /// group commit's randomized schedules, `wal::log::schedules`.)
    #[cfg(all(test, feature = "shuttle"))]
    pub(crate) fn durable_bytes(&self, path: &str) -> Option<Vec<u8>> {
        let state = self.lock();
        if !ancestors(path).all(|dir| matches!(state.durable.get(dir), Some(Entry::Dir))) {
            return None;
        }
        let Some(Entry::File(file)) = state.durable.get(path) else { return None };
        Some(file.lock().unwrap_or_else(|poison| poison.into_inner()).synced.clone())
    }

    /// True or false, with even chances.
    fn coin(&self) -> bool {
        self.next_random() >> 63 == 1
    }

    fn next_random(&self) -> u64 {
        let mut x = self.seed.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed.store(x, Ordering::Relaxed);
        x
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// `Storage::create`, of a file whose space is preallocated or not (`MemFile`).
    fn create_file(&self, path: &str, preallocated: bool) -> io::Result<Box<dyn StorageFile>> {
        let mut state = self.lock();
        FaultyStorage::operation(&mut state)?;
        let file = Arc::new(Mutex::new(MemFile { preallocated, ..MemFile::default() }));
        state.make_parents(path)?;
        state.files.insert(path.to_string(), Arc::clone(&file));
        state.change(path, Some(Entry::File(Arc::clone(&file))));
        Ok(Box::new(FaultyFile { storage: self.clone(), file }))
    }

    fn operation(state: &mut MemState) -> io::Result<()> {
        state.operations += 1;
        if state.fail_at.is_some_and(|at| state.operations > at) {
            state.failures += 1;
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }

    /// An operation that syncs: fails as every operation may, or while syncs fail.
    fn sync_operation(state: &mut MemState) -> io::Result<()> {
        FaultyStorage::operation(state)?;
        if state.syncs_fail {
            state.failures += 1;
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }
}

struct FaultyFile {
    storage: FaultyStorage,
    file: Arc<Mutex<MemFile>>,
}

impl FaultyFile {
    fn file(&self) -> std::sync::MutexGuard<'_, MemFile> {
        self.file.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

impl StorageFile for FaultyFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.storage.lock();
        FaultyStorage::operation(&mut state)?;
        // Under the state's lock, so that no other write changes the space used meanwhile.
        if let Err(error) = state.check_space(&self.file, bytes.len()) {
            state.failures += 1;
            return Err(error);
        }
        self.file().pending.extend_from_slice(bytes);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        FaultyStorage::sync_operation(&mut self.storage.lock())?;
        let mut file = self.file();
        let mut pending = std::mem::take(&mut file.pending);
        file.synced.append(&mut pending);
        Ok(())
    }

    fn cut(&mut self, len: u64) -> io::Result<()> {
        FaultyStorage::sync_operation(&mut self.storage.lock())?;
        let mut file = self.file();
        let mut all = file.contents();
        all.truncate(len as usize);
        *file = MemFile { synced: all, preallocated: file.preallocated, ..MemFile::default() };
        Ok(())
    }
}

/// Applies an entry change to a namespace.
fn apply(entries: &mut BTreeMap<String, Entry>, change: EntryChange) {
    match change.entry {
        Some(entry) => entries.insert(change.path, entry),
        None => entries.remove(&change.path),
    };
}

fn in_dir(path: &str, dir: &str) -> Option<String> {
    let rest = if dir.is_empty() { path } else { path.strip_prefix(dir)?.strip_prefix('/')? };
    (!rest.is_empty()).then(|| rest.split('/').next().unwrap_or(rest).to_string())
}

impl Storage for FaultyStorage {
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let state = self.lock();
        let mut names: Vec<String> =
            state.files.keys().filter_map(|path| in_dir(path, dir)).collect();
        names.dedup();
        Ok(names)
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        let state = self.lock();
        let file = state.files.get(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let file = file.lock().unwrap_or_else(|poison| poison.into_inner());
        Ok(file.contents())
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn StorageFile>> {
        self.create_file(path, false)
    }

    fn create_log(&self, path: &str, _expected_bytes: u64) -> io::Result<Box<dyn StorageFile>> {
        self.create_file(path, true)
    }

    fn reuse_log(
        &self,
        spare: &str,
        path: &str,
        first: &[u8],
        _expected_bytes: u64,
    ) -> io::Result<Box<dyn StorageFile>> {
        let mut state = self.lock();
        if !state.files.contains_key(spare) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        // The write and sync of the first page, then the rename.
        for _ in 0..3 {
            FaultyStorage::operation(&mut state)?;
        }
        let old = state.files.remove(spare).expect("checked above");
        let stale = old.lock().unwrap_or_else(|poison| poison.into_inner()).contents();
        let file = Arc::new(Mutex::new(MemFile {
            synced: first.to_vec(),
            stale,
            preallocated: true,
            ..MemFile::default()
        }));
        state.files.insert(path.to_string(), Arc::clone(&file));
        state.change(spare, None);
        state.change(path, Some(Entry::File(Arc::clone(&file))));
        state.sync_dir(parent(path));
        Ok(Box::new(FaultyFile { storage: self.clone(), file }))
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        let mut state = self.lock();
        FaultyStorage::sync_operation(&mut state)?;
        state.sync_dir(dir);
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut state = self.lock();
        FaultyStorage::operation(&mut state)?;
        let target_dir = parent(to);
        if !target_dir.is_empty() && !state.dirs.contains(target_dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        let file =
            state.files.remove(from).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        if let Some(replaced) = state.files.insert(to.to_string(), Arc::clone(&file)) {
            free(&mut state.freed, &replaced);
        }
        state.change(from, None);
        state.change(to, Some(Entry::File(file)));
        // As the file system version does: the rename, then a sync of the target's directory.
        state.sync_dir(parent(to));
        Ok(())
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        let mut state = self.lock();
        if state.removals_refused {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let file =
            state.files.remove(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        free(&mut state.freed, &file);
        state.change(path, None);
        Ok(())
    }

    fn remove_dir(&self, dir: &str) -> io::Result<()> {
        let mut state = self.lock();
        if state.files.keys().any(|path| path.starts_with(&format!("{dir}/"))) {
            return Err(io::Error::from_raw_os_error(libc::ENOTEMPTY));
        }
        if state.dirs.remove(dir) {
            state.change(dir, None);
        }
        Ok(())
    }

    fn truncate(&self, path: &str, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        FaultyStorage::sync_operation(&mut state)?;
        let file = state.files.get(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let mut file = file.lock().unwrap_or_else(|poison| poison.into_inner());
        let mut all = file.contents();
        all.truncate(len as usize);
        *file = MemFile { synced: all, preallocated: file.preallocated, ..MemFile::default() };
        Ok(())
    }

    fn describe(&self, path: &str) -> String {
        format!("memory:/{path}")
    }
}
