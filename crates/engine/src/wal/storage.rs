//! Where the data directory's files live: the file system ([`DirStorage`]), or memory with
//! injected faults and simulated crashes ([`FaultyStorage`], for tests).
//!
//! Paths are relative to the data directory and use `/`. Everything the log, checkpoints and
//! recovery do to files goes through [`Storage`], so a test can fail any write or fsync and then
//! "crash": keep only what was synced, plus a random part of what was not, as a file system
//! without a journal may (`FaultyStorage::crash`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A directory of files, as the log, checkpoints and recovery see it.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Names of the files directly in `dir` ("" is the data directory itself), sorted.
    fn list(&self, dir: &str) -> io::Result<Vec<String>>;
    /// The whole file.
    fn read(&self, path: &str) -> io::Result<Vec<u8>>;
    /// Reads a whole log segment into `out` (its memory reused), returning the part of `out`
    /// that holds the file. The file system version reads around the page cache (`O_DIRECT`,
    /// as segments are written) in large aligned requests: the device's speed without the
    /// kernel's copy.
    fn read_log(&self, path: &str, out: &mut Vec<u8>) -> io::Result<std::ops::Range<usize>> {
        *out = self.read(path)?;
        Ok(0..out.len())
    }
    /// Creates (or truncates) a file for appending. Parent directories are created, each
    /// durably (its own parent synced); the file's entry is durable once its directory is
    /// synced (`sync_dir`).
    fn create(&self, path: &str) -> io::Result<Box<dyn StorageFile>>;
    /// Creates a log segment expected to grow to about `expected_bytes`: the file system
    /// version preallocates it and writes around the page cache (`O_DIRECT`). Readers see the
    /// appended bytes followed by zeros.
    fn create_log(&self, path: &str, expected_bytes: u64) -> io::Result<Box<dyn StorageFile>> {
        let _ = expected_bytes;
        self.create(path)
    }
    /// Takes over the file `spare` as the new log segment `path`: writes `first` (whole pages)
    /// over its start, syncs it, and renames it to `path`, durably. The rest of the old file
    /// stays until the segment's appends overwrite it (`wal::log`, SPARE SEGMENTS). This
    /// version removes the spare and creates `path` afresh.
    fn reuse_log(
        &self,
        spare: &str,
        path: &str,
        first: &[u8],
        expected_bytes: u64,
    ) -> io::Result<Box<dyn StorageFile>> {
        fresh_log(self, spare, path, first, expected_bytes)
    }
    /// Writes a spare log file at `path` of `bytes` zeros, synced, for a later `reuse_log`.
    fn prepare_log(&self, path: &str, bytes: u64) -> io::Result<()> {
        let mut file = self.create(path)?;
        let zeros = vec![0u8; 1 << 20];
        let mut left = bytes as usize;
        while left > 0 {
            let piece = left.min(zeros.len());
            file.append(&zeros[..piece])?;
            left -= piece;
        }
        file.sync()?;
        self.sync_dir("wal")
    }
    /// Makes the directory entries of `dir` durable (new, renamed and removed files).
    fn sync_dir(&self, dir: &str) -> io::Result<()>;
    /// Atomically replaces `to` with `from`, durably.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    fn remove(&self, path: &str) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, dir: &str) -> io::Result<()>;
    /// Cuts a file to `len` bytes, durably.
    fn truncate(&self, path: &str, len: u64) -> io::Result<()>;
    /// Where the files are, for messages.
    fn describe(&self, path: &str) -> String;
}

/// `reuse_log` without reuse: removes the spare, then creates `path` with `first` in it,
/// synced and announced.
fn fresh_log<S: Storage + ?Sized>(
    storage: &S,
    spare: &str,
    path: &str,
    first: &[u8],
    expected_bytes: u64,
) -> io::Result<Box<dyn StorageFile>> {
    let _ = storage.remove(spare);
    new_log(storage, path, first, expected_bytes)
}

/// Creates the log segment `path` (`Storage::create_log`) with `first` in it, synced and
/// announced (the directory synced).
pub(crate) fn new_log<S: Storage + ?Sized>(
    storage: &S,
    path: &str,
    first: &[u8],
    expected_bytes: u64,
) -> io::Result<Box<dyn StorageFile>> {
    let mut file = storage.create_log(path, expected_bytes)?;
    file.append(first)?;
    file.sync()?;
    storage.sync_dir("wal")?;
    Ok(file)
}

/// A file open for appending.
pub trait StorageFile: Send {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Appends `pages` in order. Each is whole pages, page-aligned in memory, and the file's
    /// length is a whole number of pages (everything appended so far went through here, or
    /// was synced in whole pages): a direct-I/O file writes them from where they lie.
    fn append_pages(&mut self, pages: &[&[u8]]) -> io::Result<()> {
        pages.iter().try_for_each(|page| self.append(page))
    }
    /// Makes everything appended so far durable (fdatasync).
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file to its first `len` bytes, durably, and appends from there: after an
    /// append that failed part way (the disk was full), what it wrote is gone, and cannot be
    /// read after what later appends write. `len` is a length the file had after a `sync`
    /// (whole pages, in a log segment). A file that cannot be cut says so, and a log that
    /// needed the cut stops.
    fn cut(&mut self, len: u64) -> io::Result<()> {
        let _ = len;
        Err(io::Error::new(io::ErrorKind::Unsupported, "this file cannot be cut"))
    }
    /// Starts writing what was appended since the last call to the device, and waits until
    /// what the call before started is written: a file written a little at a time then
    /// reaches its `sync` with at most two calls' worth still in memory, instead of sending
    /// everything to the device at once (a checkpoint's, beside the log). Durable only after
    /// `sync`.
    fn write_back(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A data directory on the file system, locked against other processes for as long as this
/// value lives.
#[derive(Debug)]
pub struct DirStorage {
    root: PathBuf,
    /// Holds the `flock` on `LOCK`; released when closed.
    _lock: File,
}

impl DirStorage {
    /// Opens (creating it if needed) and locks the data directory `root`.
    pub fn open(root: &Path) -> io::Result<DirStorage> {
        make_dirs(root)?;
        let lock =
            OpenOptions::new().create(true).truncate(false).write(true).open(root.join("LOCK"))?;
        // SAFETY: flock on a file descriptor this function owns.
        let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let error = io::Error::last_os_error();
            return Err(if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is in use by another process", root.display()),
                )
            } else {
                error
            });
        }
        Ok(DirStorage { root: root.to_path_buf(), _lock: lock })
    }

    fn path(&self, path: &str) -> PathBuf {
        if path.is_empty() { self.root.clone() } else { self.root.join(path) }
    }

    /// Makes the directories above `path` in the data directory that do not exist yet.
    fn make_parents(&self, path: &str) -> io::Result<()> {
        match self.path(path).parent() {
            Some(parent) => make_dirs(parent),
            None => Ok(()),
        }
    }

    /// Creates (or truncates) `path` for writing with `O_DIRECT`, parent directories too;
    /// `None` where the file system has no direct I/O (tmpfs).
    fn create_direct(&self, path: &str) -> io::Result<Option<File>> {
        use std::os::unix::fs::OpenOptionsExt;
        let full = self.path(path);
        self.make_parents(path)?;
        let direct = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&full);
        match direct {
            Ok(file) => Ok(Some(file)),
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// Makes `dir` and the directories above it that do not exist yet, each made durable by a
/// sync of its parent: without a journal (ext4 without one, as on the development machine)
/// nothing else orders a new directory's entry before the files written into it, and a crash
/// could lose the whole directory with every synced file in it.
fn make_dirs(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|parent| !parent.as_os_str().is_empty());
    if let Some(parent) = parent {
        make_dirs(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => File::open(parent.unwrap_or(Path::new(".")))?.sync_all(),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

struct DirFile {
    file: File,
    /// Bytes appended.
    len: u64,
    /// Where the range the last `write_back` started begins, and where it ends.
    started: (u64, u64),
}

impl StorageFile for DirFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn cut(&mut self, len: u64) -> io::Result<()> {
        use std::io::Seek;
        self.file.set_len(len)?;
        self.file.sync_all()?;
        self.file.seek(io::SeekFrom::Start(len))?;
        self.len = len;
        self.started = (self.started.0.min(len), self.started.1.min(len));
        Ok(())
    }

    /// `sync_file_range`: a hint about when to write. A file system that refuses it, or an
    /// error it reports, is left to `sync`, which writes everything and reports any error.
    fn write_back(&mut self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = self.file.as_raw_fd();
        let range = |(from, to): (u64, u64), flags| {
            if to > from {
                // SAFETY: sync_file_range only reads the descriptor and the numbers.
                unsafe {
                    libc::sync_file_range(
                        fd,
                        from as libc::off64_t,
                        (to - from) as libc::off64_t,
                        flags,
                    )
                };
            }
        };
        let (_, started_to) = self.started;
        range((started_to, self.len), libc::SYNC_FILE_RANGE_WRITE);
        range(
            self.started,
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER,
        );
        self.started = (started_to, self.len);
        Ok(())
    }
}

/// Page size and alignment of direct I/O.
const DIRECT_ALIGN: usize = 4096;

/// The most vectors one `pwritev` takes on Linux (`IOV_MAX`).
const IOV_MAX: usize = 1024;

/// The size of one direct read of a log segment.
const DIRECT_READ_BYTES: usize = 8 << 20;

/// A log segment written with `O_DIRECT`: appends collect in a page-aligned buffer, and each
/// sync writes the whole pages (the partial last one padded with zeros, and rewritten by the
/// next sync) and fdatasyncs. Page-aligned pages (`append_pages`, which the loggers use) are
/// written from where they lie. The kernel copies nothing into the page cache, which on this
/// kind of machine costs more CPU than the rest of logging together (docs/durability.md).
struct DirectFile {
    file: File,
    buffer: *mut u8,
    capacity: usize,
    len: usize,
    /// File offset of `buffer[0]` (page-aligned).
    offset: u64,
}

// SAFETY: the buffer is owned by this value alone.
unsafe impl Send for DirectFile {}

impl DirectFile {
    /// A direct file written from offset 0, with a buffer of a closed segment's if one is
    /// left.
    fn new(file: File) -> DirectFile {
        let (buffer, capacity) = SPARE_BUFFERS
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .pop()
            .map_or((std::ptr::null_mut(), 0), |(buffer, capacity)| (buffer as *mut u8, capacity));
        DirectFile { file, buffer, capacity, len: 0, offset: 0 }
    }

    fn layout(capacity: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(capacity, DIRECT_ALIGN).expect("page-aligned layout")
    }

    fn reserve(&mut self, more: usize) {
        let needed = (self.len + more).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        if needed <= self.capacity {
            return;
        }
        let capacity = needed.max(self.capacity * 2).max(1 << 20);
        // SAFETY: a non-zero, page-aligned layout.
        let buffer = unsafe { std::alloc::alloc_zeroed(Self::layout(capacity)) };
        assert!(!buffer.is_null(), "out of memory for the log buffer");
        if !self.buffer.is_null() {
            // SAFETY: both blocks hold at least `len` bytes; the old one is freed once.
            unsafe {
                std::ptr::copy_nonoverlapping(self.buffer, buffer, self.len);
                std::alloc::dealloc(self.buffer, Self::layout(self.capacity));
            }
        }
        self.buffer = buffer;
        self.capacity = capacity;
    }
}

/// Buffers of closed segments, handed to the next segment of the process: a fresh buffer's
/// pages fault in on first use, which would stall the first write after every rotation.
static SPARE_BUFFERS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

impl Drop for DirectFile {
    fn drop(&mut self) {
        if self.buffer.is_null() {
            return;
        }
        let mut spares = SPARE_BUFFERS.lock().unwrap_or_else(|poison| poison.into_inner());
        if spares.len() < 8 {
            spares.push((self.buffer as usize, self.capacity));
        } else {
            // SAFETY: allocated in `reserve` with this layout.
            unsafe { std::alloc::dealloc(self.buffer, Self::layout(self.capacity)) };
        }
    }
}

impl StorageFile for DirectFile {
    fn append_pages(&mut self, pages: &[&[u8]]) -> io::Result<()> {
        let aligned = |page: &&[u8]| {
            (page.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN)
                && page.len().is_multiple_of(DIRECT_ALIGN)
        };
        if self.len != 0 || !pages.iter().all(aligned) {
            return pages.iter().try_for_each(|page| self.append(page));
        }
        // One vectored write from the pages where they lie: the kernel copies nothing.
        let mut vectors: Vec<libc::iovec> = pages
            .iter()
            .filter(|page| !page.is_empty())
            .map(|page| libc::iovec {
                iov_base: page.as_ptr() as *mut libc::c_void,
                iov_len: page.len(),
            })
            .collect();
        let mut first = 0;
        while first < vectors.len() {
            let count = (vectors.len() - first).min(IOV_MAX);
            // SAFETY: the vectors describe live, readable slices that outlive the call.
            let written = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    vectors[first..].as_ptr(),
                    count as libc::c_int,
                    self.offset as libc::off_t,
                )
            };
            if written < 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            if written == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the log device wrote nothing",
                ));
            }
            self.offset += written as u64;
            // Skip what was written; a short write stops on a page boundary, which direct I/O
            // keeps, and the rest of a vector is written next.
            let mut left = written as usize;
            while left > 0 {
                let vector = &mut vectors[first];
                if left >= vector.iov_len {
                    left -= vector.iov_len;
                    first += 1;
                } else {
                    // SAFETY: advancing within the slice the vector describes.
                    vector.iov_base = unsafe { (vector.iov_base as *mut u8).add(left) } as *mut _;
                    vector.iov_len -= left;
                    left = 0;
                }
            }
        }
        Ok(())
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.reserve(bytes.len());
        // SAFETY: `reserve` made room for `bytes` after `len`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.buffer.add(self.len), bytes.len())
        };
        self.len += bytes.len();
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        if self.len == 0 {
            // Everything went through `append_pages`, or was written before.
            return self.file.sync_data();
        }
        let padded = self.len.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        self.reserve(padded - self.len);
        // SAFETY: the buffer holds `padded` bytes; the padding is zeroed.
        let pages = unsafe {
            std::ptr::write_bytes(self.buffer.add(self.len), 0, padded - self.len);
            std::slice::from_raw_parts(self.buffer, padded)
        };
        self.file.write_all_at(pages, self.offset)?;
        self.file.sync_data()?;
        // Keep the partial last page: the next sync writes it again with what follows.
        let whole = self.len / DIRECT_ALIGN * DIRECT_ALIGN;
        let tail = self.len - whole;
        // SAFETY: moving `tail` bytes within the buffer.
        unsafe { std::ptr::copy(self.buffer.add(whole), self.buffer, tail) };
        self.offset += whole as u64;
        self.len = tail;
        Ok(())
    }

    /// Direct writes start on pages: `len` must be whole pages, with nothing buffered past
    /// a page (a log segment's case: its blocks are whole pages).
    fn cut(&mut self, len: u64) -> io::Result<()> {
        if !len.is_multiple_of(DIRECT_ALIGN as u64) || self.len != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a direct file is cut at whole pages with nothing buffered, not at {len}"),
            ));
        }
        self.file.set_len(len)?;
        self.file.sync_all()?;
        self.offset = len;
        Ok(())
    }
}

impl Storage for DirStorage {
    fn create_log(&self, path: &str, expected_bytes: u64) -> io::Result<Box<dyn StorageFile>> {
        // Some file systems (tmpfs) have no direct I/O: use the page cache.
        let Some(file) = self.create_direct(path)? else {
            return self.create(path);
        };
        // SAFETY: fallocate on a file descriptor this function owns.
        let preallocated =
            unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, expected_bytes as libc::off_t) };
        if preallocated != 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(error);
            }
        }
        Ok(Box::new(DirectFile::new(file)))
    }

    fn reuse_log(
        &self,
        spare: &str,
        path: &str,
        first: &[u8],
        expected_bytes: u64,
    ) -> io::Result<Box<dyn StorageFile>> {
        use std::os::unix::fs::OpenOptionsExt;
        let opened =
            OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(self.path(spare));
        let file = match opened {
            Ok(file) => file,
            // No direct I/O here (tmpfs), where writing over old blocks gains nothing.
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {
                return fresh_log(self, spare, path, first, expected_bytes);
            }
            Err(error) => return Err(error),
        };
        let mut file = DirectFile::new(file);
        file.append(first)?;
        file.sync()?;
        self.rename(spare, path)?;
        Ok(Box::new(file))
    }

    fn prepare_log(&self, path: &str, bytes: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let file = match self.create_direct(path)? {
            Some(file) => file,
            None => {
                OpenOptions::new().create(true).truncate(true).write(true).open(self.path(path))?
            }
        };
        const PIECE: usize = 8 << 20;
        let layout = std::alloc::Layout::from_size_align(PIECE, DIRECT_ALIGN).expect("layout");
        // SAFETY: a non-zero, page-aligned layout.
        let zeros = unsafe { std::alloc::alloc_zeroed(layout) };
        if zeros.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let bytes = bytes.next_multiple_of(DIRECT_ALIGN as u64);
        let mut written = 0u64;
        let result = loop {
            if written >= bytes {
                break file.sync_data();
            }
            let piece = PIECE.min((bytes - written) as usize);
            // SAFETY: `zeros` holds PIECE zeroed bytes until it is freed below.
            let slice = unsafe { std::slice::from_raw_parts(zeros, piece) };
            if let Err(error) = file.write_all_at(slice, written) {
                break Err(error);
            }
            written += piece as u64;
        };
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(zeros, layout) };
        result?;
        self.sync_dir("wal")
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        match fs::read_dir(self.path(dir)) {
            Ok(entries) => {
                for entry in entries {
                    let entry = entry?;
                    if let Some(name) = entry.file_name().to_str() {
                        names.push(name.to_string());
                    }
                }
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        names.sort();
        Ok(names)
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        fs::read(self.path(path))
    }

    fn read_log(&self, path: &str, out: &mut Vec<u8>) -> io::Result<std::ops::Range<usize>> {
        use std::os::unix::fs::OpenOptionsExt;
        let full = self.path(path);
        let file = match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&full) {
            Ok(file) => file,
            // No direct I/O here (tmpfs): through the page cache.
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {
                use std::io::Read;
                out.clear();
                File::open(&full)?.read_to_end(out)?;
                return Ok(0..out.len());
            }
            Err(error) => return Err(error),
        };
        let len = file.metadata()?.len() as usize;
        let padded = len.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        out.clear();
        if out.capacity() < padded + DIRECT_ALIGN {
            // A new buffer, not a grown one: growing copied the old buffer's bytes, which are
            // about to be overwritten, into pages touched for the first time one by one (40%
            // of a 10-warehouse replay's page faults, docs/performance.md). A quarter more than
            // this file needs, so that the segments after it, of about the same size, fit.
            *out = Vec::new();
            let capacity = (padded + DIRECT_ALIGN + padded / 4)
                .next_multiple_of(crate::storage::chunks::CHUNK_BYTES);
            out.reserve_exact(capacity);
            // Replay reads the rows of a segment in key order, all over the buffer.
            crate::storage::chunks::advise_huge_pages_inside(out.as_ptr(), out.capacity());
        }
        let base = out.as_mut_ptr();
        let start = (DIRECT_ALIGN - base as usize % DIRECT_ALIGN) % DIRECT_ALIGN;
        // SAFETY: `reserve` made room for `start + padded` bytes; the bytes before `start` are
        // zeroed so that everything up to the final length is initialised.
        unsafe { std::ptr::write_bytes(base, 0, start) };
        let mut read = 0usize;
        while read < padded {
            let want = (padded - read).min(DIRECT_READ_BYTES);
            // SAFETY: `base + start + read .. + want` lies within the reserved capacity, and
            // the address, length and file offset are multiples of the alignment.
            let got = unsafe {
                libc::pread(
                    file.as_raw_fd(),
                    base.add(start + read) as *mut libc::c_void,
                    want,
                    read as libc::off_t,
                )
            };
            if got < 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            read += got as usize;
            // The end of the file: a short read (only the last request can be one).
            if got == 0 || !read.is_multiple_of(DIRECT_ALIGN) {
                break;
            }
        }
        let got = read.min(len);
        // SAFETY: `start + got` bytes are initialised (zeros, then what the reads returned).
        unsafe { out.set_len(start + got) };
        if got < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read {got} of {len} bytes"),
            ));
        }
        Ok(start..start + got)
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn StorageFile>> {
        let full = self.path(path);
        self.make_parents(path)?;
        let file = OpenOptions::new().create(true).truncate(true).write(true).open(full)?;
        Ok(Box::new(DirFile { file, len: 0, started: (0, 0) }))
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        File::open(self.path(dir))?.sync_all()
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        fs::rename(self.path(from), self.path(to))?;
        let parent = Path::new(to).parent().and_then(Path::to_str).unwrap_or("");
        self.sync_dir(parent)
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        fs::remove_file(self.path(path))
    }

    fn remove_dir(&self, dir: &str) -> io::Result<()> {
        fs::remove_dir(self.path(dir))
    }

    fn truncate(&self, path: &str, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path(path))?;
        file.set_len(len)?;
        file.sync_all()
    }

    fn describe(&self, path: &str) -> String {
        self.path(path).display().to_string()
    }
}

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
