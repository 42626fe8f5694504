//! The merge of a log segment's images into the tables: images grouped by table into runs,
//! each run sorted by key (radix sort on key prefixes where it pays) and inserted in key
//! order, so replay descends the index once per leaf.

use super::*;
use crate::wal::format;

/// The row images of a segment, applied sorted by row (see `ReplayBatch::apply`).
///
/// Batches of two and four segments were measured too (docs/performance.md): they took 5 to
/// 7% less CPU but no less time, as the last batches left a thread idle.
#[derive(Default)]
pub(super) struct ReplayBatch {
    /// The segment's buffer and the part of it that holds the file.
    pub(super) segment: Vec<u8>,
    pub(super) range: std::ops::Range<usize>,
    pub(super) images: Images,
    /// The images in the order they are applied: an entry per image (`RunSort::entry`),
    /// grouped by table, each table's entries then sorted.
    pub(super) order: Vec<u128>,
    /// The radix sort's second buffer, as long as the longest batch so far.
    pub(super) scratch: Vec<u128>,
}

/// A segment's row images in log order, and per table what grouping and sorting them needs,
/// gathered as they are added, so that no pass over the images is spent on it.
#[derive(Default)]
pub(super) struct Images {
    pub(super) list: Vec<Image>,
    /// Keys and values that do not lie in the segment's buffer (decompressed blocks), laid
    /// out as the log lays them out: a key, four length bytes, a value.
    pub(super) spill: Vec<u8>,
    /// The segment's tables, in order of first appearance.
    pub(super) runs: Vec<TableRun>,
    /// Per table id, its index in `runs` (`NO_RUN`: none yet).
    pub(super) run_of: Vec<u32>,
}

pub(super) const NO_RUN: u32 = u32::MAX;

/// The images of one table in a segment.
pub(super) struct TableRun {
    pub(super) table: u32,
    pub(super) count: usize,
    /// The OR and the AND of the images' key prefixes: their XOR has the bits that differ.
    pub(super) ones: u128,
    pub(super) all: u128,
}

/// One row image: the sort key (the first 16 key bytes, the key's length, the TID) and where
/// the key and value lie, so that the sort and the apply read no other memory for the image.
/// The images stay in log order: the sort moves 16-byte entries that name them (`RunSort`).
#[derive(Clone, Copy, Default)]
pub(super) struct Image {
    pub(super) high: u64,
    pub(super) low: u64,
    pub(super) tid: u64,
    /// Where the key starts, in the segment's bytes or in the spill (the low `AT_BITS` bits),
    /// the key's length (the 16 bits above them), and the `SPILLED` and `DELETE` flags.
    pub(super) place: u64,
    /// The table's index in `Images::runs`.
    pub(super) run: u32,
    pub(super) value_len: u32,
}

const _: () = assert!(size_of::<Image>() == 40);
const _: () = assert!(crate::limits::INDEX_KEY_BYTES_MAX < 1 << Image::KEY_LEN_BITS);

impl Image {
    /// Keys longer than this compare their remaining bytes where they lie.
    pub(super) const SHORT: usize = 16;
    /// Offsets in a buffer of up to 64 TiB.
    pub(super) const AT_BITS: u32 = 46;
    pub(super) const KEY_LEN_BITS: u32 = 16;
    pub(super) const SPILLED: u64 = 1 << 62;
    pub(super) const DELETE: u64 = 1 << 63;

    #[inline]
    pub(super) fn key_at(&self) -> usize {
        (self.place & ((1 << Image::AT_BITS) - 1)) as usize
    }

    #[inline]
    pub(super) fn key_len(&self) -> usize {
        ((self.place >> Image::AT_BITS) & ((1 << Image::KEY_LEN_BITS) - 1)) as usize
    }

    /// In the log a value follows its key and its own four length bytes; the spill keeps
    /// that layout.
    #[inline]
    pub(super) fn value_at(&self) -> usize {
        self.key_at() + self.key_len() + 4
    }

    #[inline]
    pub(super) fn spilled(&self) -> bool {
        self.place & Image::SPILLED != 0
    }

    #[inline]
    pub(super) fn delete(&self) -> bool {
        self.place & Image::DELETE != 0
    }

    /// The first 16 key bytes as one number (zeros after a shorter key), which orders keys as
    /// their bytes do up to keys that share those bytes (one a zero-padded prefix of the other,
    /// or long keys): one comparison in the sort instead of three.
    #[inline]
    pub(super) fn prefix(&self) -> u128 {
        (u128::from(self.high) << 64) | u128::from(self.low)
    }

    /// A short key, rebuilt from its prefix.
    #[inline]
    pub(super) fn short_key<'b>(&self, buffer: &'b mut [u8; 16]) -> &'b [u8] {
        *buffer = self.prefix().to_be_bytes();
        &buffer[..self.key_len()]
    }
}

/// The first 16 bytes of the `len`-byte key at `at` in `bytes`, as `Image::prefix` holds them.
/// Sixteen bytes are loaded at once where the buffer has them (it nearly always does: a value
/// follows the key), and the bytes after a shorter key masked off: copying just the key's
/// bytes into a zeroed buffer and loading that back stalled on the copy's narrower stores.
#[inline]
pub(super) fn prefix_of(bytes: &[u8], at: usize, len: usize) -> u128 {
    let keep = len.min(16);
    // The masks that keep the first 0 to 16 bytes of 16 (a variable shift of a `u128` costs
    // a dozen instructions).
    pub(super) const KEEP: [u128; 17] = {
        let mut masks = [0u128; 17];
        let mut keep = 1;
        while keep <= 16 {
            masks[keep] = u128::MAX << (8 * (16 - keep));
            keep += 1;
        }
        masks
    };
    let word = match bytes.get(at..at + 16) {
        Some(sixteen) => u128::from_be_bytes(sixteen.try_into().expect("16 bytes")),
        None => {
            let mut buffer = [0u8; 16];
            buffer[..keep].copy_from_slice(&bytes[at..at + keep]);
            u128::from_be_bytes(buffer)
        }
    };
    word & KEEP[keep]
}

impl Images {
    /// Adds a write of a transaction of the segment, whose bytes are `data`.
    pub(super) fn push(
        &mut self,
        data: &[u8],
        tid: u64,
        write: &format::LoggedWrite<'_>,
        value: Option<&[u8]>,
    ) {
        let table = write.table as usize;
        if table >= self.run_of.len() {
            self.run_of.resize(table + 1, NO_RUN);
        }
        if self.run_of[table] == NO_RUN {
            self.run_of[table] = self.runs.len() as u32;
            self.runs.push(TableRun { table: write.table, count: 0, ones: 0, all: u128::MAX });
        }
        let run = self.run_of[table];
        let delete = if value.is_none() { Image::DELETE } else { 0 };
        let value = value.unwrap_or(&[]);
        let base = data.as_ptr() as usize;
        let key_at = (write.key.as_ptr() as usize).wrapping_sub(base);
        let in_place = key_at < data.len()
            && (value.is_empty() || value.as_ptr() as usize == base + key_at + write.key.len() + 4);
        let (bytes, key_at, spilled) = if in_place {
            (data, key_at, 0)
        } else {
            let at = self.spill.len();
            self.spill.extend_from_slice(write.key);
            self.spill.extend_from_slice(&(value.len() as u32).to_le_bytes());
            self.spill.extend_from_slice(value);
            (&self.spill[..], at, Image::SPILLED)
        };
        assert!(key_at < 1 << Image::AT_BITS, "a replay buffer of 64 TiB");
        let prefix = prefix_of(bytes, key_at, write.key.len());
        let entry = &mut self.runs[run as usize];
        entry.count += 1;
        entry.ones |= prefix;
        entry.all &= prefix;
        self.list.push(Image {
            high: (prefix >> 64) as u64,
            low: prefix as u64,
            tid,
            place: key_at as u64 | ((write.key.len() as u64) << Image::AT_BITS) | spilled | delete,
            run,
            value_len: value.len() as u32,
        });
    }

    pub(super) fn clear(&mut self) {
        for run in self.runs.drain(..) {
            self.run_of[run.table as usize] = NO_RUN;
        }
        self.list.clear();
        self.spill.clear();
    }
}

impl ReplayBatch {
    /// Applies the batch: by table, in key order, and of each row only the newest image.
    /// Consecutive descents of a tree in key order meet the nodes the last one loaded, rows
    /// inserted in key order go to the leaf the last insert used, and a row written many times
    /// in the segment costs one descent. Order-free replay (module comment) makes any order
    /// correct.
    ///
    /// The images themselves stay where they are; what moves is a 16-byte entry per image
    /// (`RunSort`). One pass puts each image's entry in its table's run and counts the radix
    /// sort's digits, the radix passes (or a comparison sort) order each run, and the apply
    /// walks the entries, reading each image a few entries ahead and putting the images of
    /// equal prefixes in key and TID order as it meets them.
    pub(super) fn apply<'t>(
        &mut self,
        applier: &mut Applier,
        table_of: impl Fn(u32) -> Option<&'t Table>,
        pin: &Pin<'_>,
    ) {
        let ReplayBatch { segment, range, images, order, scratch } = self;
        let data = &segment[range.clone()];
        let Images { list, spill, runs, .. } = images;
        let list = &list[..];
        let bytes = |image: &Image| -> &[u8] { if image.spilled() { spill } else { data } };
        let key = |image: &Image| &bytes(image)[image.key_at()..image.key_at() + image.key_len()];
        let image_of = |entry: u128| &list[RunSort::index(entry)];
        assert!(list.len() <= 1 << 32, "an entry holds an image's index in 32 bits");
        let mut plans: Vec<(usize, RunSort)> = Vec::with_capacity(runs.len());
        let mut start = 0;
        for run in runs.iter() {
            plans.push((start, RunSort::plan(run.count, run.ones ^ run.all)));
            start += run.count;
        }
        let mut next: Vec<usize> = plans.iter().map(|(start, _)| *start).collect();
        order.clear();
        order.reserve(list.len());
        let slots = &mut order.spare_capacity_mut()[..list.len()];
        for (index, image) in list.iter().enumerate() {
            let run = image.run as usize;
            slots[next[run]].write(plans[run].1.entry(image, index));
            next[run] += 1;
        }
        // SAFETY: the runs' slots tile `0..list.len()` (each run's count of them, from its
        // start), and every image's entry was written to the next slot of its run, so each
        // slot was written once.
        unsafe { order.set_len(list.len()) };
        if scratch.len() < list.len() {
            scratch.resize(list.len(), 0);
        }
        for ((start, plan), end) in plans.iter().zip(next) {
            plan.sort(&mut order[*start..end], &mut scratch[*start..end], list);
        }
        // The images, and the row bytes in the segment's buffer, lie out of the order they
        // are now visited in: they are fetched some entries ahead so that the misses overlap,
        // an image twice as far ahead as its value (which the image says where to find).
        const AHEAD: usize = 8;
        let prefetch_image = |entry: u128| {
            let at = image_of(entry) as *const Image as *const u8;
            prefetch(at, 1);
            prefetch(at.wrapping_add(size_of::<Image>() - 1), 1);
        };
        for &entry in order.iter().take(2 * AHEAD) {
            prefetch_image(entry);
        }
        for &entry in order.iter().take(AHEAD) {
            let image = image_of(entry);
            prefetch_value(bytes(image), image);
        }
        let mut buffer = [0u8; 16];
        let mut finger = Finger::new(pin);
        // Rows already in the index wait here for `FOUND_LAG` more found rows before their
        // heads are read: the head is a line nothing else brings into the cache (a third of
        // the apply's time went to reading its TID), fetched meanwhile. Deferring is
        // safe as any order is: a row appears once here (its newest image in the batch), and
        // heads stay where they are during replay.
        const FOUND_LAG: usize = 8;
        let mut found: [Option<FoundRow<'_>>; FOUND_LAG] = [None; FOUND_LAG];
        let mut found_count = 0usize;
        let mut at = 0;
        while at < order.len() {
            // A group of one table's images with one prefix: one row's (a row written many
            // times), or those of keys that are zero-padded prefixes of each other or long
            // keys that share their first 16 bytes. In key and TID order, the newest image
            // of a row is the last of its own.
            let first = *image_of(order[at]);
            let end = at
                + 1
                + order[at + 1..]
                    .iter()
                    .take_while(|&&entry| {
                        let image = image_of(entry);
                        image.run == first.run && image.prefix() == first.prefix()
                    })
                    .count();
            let group = &mut order[at..end];
            if group.len() > 1 {
                if first.key_len() <= Image::SHORT
                    && group.iter().all(|&entry| image_of(entry).key_len() == first.key_len())
                {
                    group.sort_unstable_by_key(|&entry| image_of(entry).tid);
                } else {
                    group.sort_unstable_by(|&a, &b| {
                        let (a, b) = (image_of(a), image_of(b));
                        key(a).cmp(key(b)).then(a.tid.cmp(&b.tid))
                    });
                }
            }
            let table = table_of(runs[first.run as usize].table);
            let group = &order[at..end];
            for (offset, &entry) in group.iter().enumerate() {
                if let Some(&ahead) = order.get(at + offset + 2 * AHEAD) {
                    prefetch_image(ahead);
                }
                if let Some(&ahead) = order.get(at + offset + AHEAD) {
                    let ahead = image_of(ahead);
                    prefetch_value(bytes(ahead), ahead);
                }
                let Some(table) = table else { continue };
                let image = image_of(entry);
                if let Some(&next) = group.get(offset + 1) {
                    let next = image_of(next);
                    if next.key_len() == image.key_len()
                        && (image.key_len() <= Image::SHORT || key(next) == key(image))
                    {
                        continue;
                    }
                }
                let key = if image.key_len() <= Image::SHORT {
                    image.short_key(&mut buffer)
                } else {
                    key(image)
                };
                let value = (!image.delete()).then(|| {
                    &bytes(image)[image.value_at()..image.value_at() + image.value_len as usize]
                });
                let tid = Tid::from_u64(image.tid);
                if let Some(head) = applier.locate(table, key, tid, value, &mut finger, pin) {
                    prefetch(head as *const Head as *const u8, 1);
                    let slot = &mut found[found_count % FOUND_LAG];
                    if let Some(due) = slot.replace(FoundRow { head, tid, value }) {
                        applier.apply_found(due.head, due.tid, due.value);
                    }
                    found_count += 1;
                }
            }
            at = end;
        }
        for due in found.iter_mut().filter_map(Option::take) {
            applier.apply_found(due.head, due.tid, due.value);
        }
        images.clear();
    }
}

/// A row the index already had, waiting in `ReplayBatch::apply` for `Applier::apply_found`.
#[derive(Clone, Copy)]
pub(super) struct FoundRow<'a> {
    pub(super) head: &'a Head,
    pub(super) tid: Tid,
    pub(super) value: Option<&'a [u8]>,
}

/// Runs of more images than this may be radix sorted.
pub(super) const RADIX_SORT_IMAGES_MIN: usize = 512;
/// Byte passes beyond which the comparison sort is used instead: each pass moves every
/// entry once, against about log2(n) comparisons an entry for the comparison sort (a bound
/// chosen from that count, not tuned by measurement).
pub(super) const RADIX_SORT_PASSES_MAX: usize = 6;
/// The most differing prefix bytes an entry holds (with the image's index, 32 bits, below).
pub(super) const ENTRY_KEY_BYTES_MAX: usize = 12;

/// How one table's images of a segment are put in prefix order. Each image gets an entry, a
/// `u128` holding the prefix bytes that differ among them, the most significant first (up to
/// `ENTRY_KEY_BYTES_MAX`), above the image's index in the segment's list; the entries are
/// sorted, not the 40-byte images. A table's keys in one segment differ in a few of their 16
/// prefix bytes (TPC-C's: a warehouse's low byte, a district, two or three bytes of an order
/// or item number), so the sort is mostly a least-significant-digit radix sort over those
/// bytes, which moves each entry a few times with no comparisons; the comparison sort it
/// replaced made about log2(n) comparisons an image and took about a quarter of recovery's
/// instructions (docs/performance.md).
pub(super) struct RunSort {
    /// The prefix bytes that differ, as indexes into `Image::prefix`'s little-endian bytes,
    /// the most significant first.
    pub(super) bytes: [u8; ENTRY_KEY_BYTES_MAX],
    pub(super) len: usize,
    /// More bytes differ than an entry holds: entries whose keys tie are ordered by their
    /// images' prefixes.
    pub(super) truncated: bool,
    /// The radix sort's digit counts per pass (the entry key's least significant byte
    /// first), when the radix sort is the one used.
    pub(super) radix: Option<Box<[[usize; 256]; RADIX_SORT_PASSES_MAX]>>,
}

impl RunSort {
    /// The sort for `count` images whose prefixes differ in the bits of `differ`.
    pub(super) fn plan(count: usize, differ: u128) -> RunSort {
        let mut bytes = [0; ENTRY_KEY_BYTES_MAX];
        let mut len = 0;
        let mut truncated = false;
        for (byte, bits) in differ.to_le_bytes().into_iter().enumerate().rev() {
            if bits != 0 {
                if len == ENTRY_KEY_BYTES_MAX {
                    truncated = true;
                    break;
                }
                bytes[len] = byte as u8;
                len += 1;
            }
        }
        let radix = (count >= RADIX_SORT_IMAGES_MIN && len <= RADIX_SORT_PASSES_MAX)
            .then(|| Box::new([[0; 256]; RADIX_SORT_PASSES_MAX]));
        RunSort { bytes, len, truncated, radix }
    }

    /// The entry of the image at `index` of the segment's list, counted for the radix sort.
    #[inline]
    pub(super) fn entry(&mut self, image: &Image, index: usize) -> u128 {
        let prefix = image.prefix().to_le_bytes();
        let mut key = 0u128;
        for &byte in &self.bytes[..self.len] {
            key = (key << 8) | u128::from(prefix[usize::from(byte)]);
        }
        let entry = (key << 32) | index as u128;
        if let Some(counts) = &mut self.radix {
            for (pass, counts) in counts.iter_mut().enumerate().take(self.len) {
                counts[usize::from(RunSort::digit(entry, pass))] += 1;
            }
        }
        entry
    }

    /// The index in the segment's list of the image an entry stands for.
    #[inline]
    pub(super) fn index(entry: u128) -> usize {
        entry as u32 as usize
    }

    /// The entry key's byte that radix pass `pass` orders by (its least significant first).
    #[inline(always)]
    pub(super) fn digit(entry: u128, pass: usize) -> u8 {
        // Shifts of one 64-bit word: a variable shift of a `u128` costs a dozen
        // instructions.
        let bit = 32 + 8 * pass;
        if bit < 64 {
            (entry as u64 >> bit) as u8
        } else {
            ((entry >> 64) as u64 >> (bit - 64)) as u8
        }
    }

    /// Sorts `run`, the entries of this table (each made by `entry`), using `scratch` (as
    /// long); `list` holds the images.
    pub(super) fn sort(&self, run: &mut [u128], scratch: &mut [u128], list: &[Image]) {
        debug_assert_eq!(run.len(), scratch.len());
        match &self.radix {
            Some(counts) => {
                let (mut from, mut to) = (run, scratch);
                for (pass, counts) in counts.iter().enumerate().take(self.len) {
                    let mut next = [0usize; 256];
                    let mut start = 0;
                    for (slot, count) in next.iter_mut().zip(counts) {
                        *slot = start;
                        start += count;
                    }
                    // The pass's word and the byte's place in it, fixed for the pass.
                    let bit = 32 + 8 * pass;
                    if bit < 64 {
                        RunSort::scatter(from, to, &mut next, |entry| (entry as u64 >> bit) as u8);
                    } else {
                        let shift = bit - 64;
                        RunSort::scatter(from, to, &mut next, |entry| {
                            ((entry >> 64) as u64 >> shift) as u8
                        });
                    }
                    std::mem::swap(&mut from, &mut to);
                }
                if self.len % 2 == 1 {
                    // The sorted entries are in `scratch`.
                    to.copy_from_slice(from);
                }
            }
            // Distinct indexes make the entries distinct, and equal keys are equal prefixes.
            None if !self.truncated => run.sort_unstable(),
            None => run.sort_unstable_by(|&a, &b| {
                (a >> 32).cmp(&(b >> 32)).then_with(|| {
                    list[RunSort::index(a)].prefix().cmp(&list[RunSort::index(b)].prefix())
                })
            }),
        }
    }

    #[inline(always)]
    pub(super) fn scatter(
        from: &[u128],
        to: &mut [u128],
        next: &mut [usize; 256],
        digit: impl Fn(u128) -> u8,
    ) {
        for &entry in from {
            let slot = &mut next[usize::from(digit(entry))];
            to[*slot] = entry;
            *slot += 1;
        }
    }
}

/// Asks the processor to load the `lines` cache lines from `at`. Never faults.
#[inline(always)]
pub(super) fn prefetch(at: *const u8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..lines {
        // SAFETY: a prefetch is a hint that never faults, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                at.wrapping_add(line * 64) as *const i8,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, lines);
}

/// Prefetches the start of an image's value (long keys are read where they lie as well).
#[inline(always)]
pub(super) fn prefetch_value(bytes: &[u8], image: &Image) {
    let source = bytes.as_ptr();
    if image.key_len() > Image::SHORT {
        prefetch(source.wrapping_add(image.key_at()), 1);
    }
    prefetch(source.wrapping_add(image.value_at()), (image.value_len as usize).div_ceil(64).min(4));
}
