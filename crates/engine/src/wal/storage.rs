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

mod faulty;

pub use faulty::FaultyStorage;

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
                .next_multiple_of(crate::mem::chunks::CHUNK_BYTES);
            out.reserve_exact(capacity);
            // Replay reads the rows of a segment in key order, all over the buffer.
            crate::mem::chunks::advise_huge_pages_inside(out.as_ptr(), out.capacity());
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
