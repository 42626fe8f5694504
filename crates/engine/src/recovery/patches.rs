//! Patches (format 4): updates logged as the words they changed, bucketed by row while the
//! log is read and applied once every image is in, in TID order per row.

use super::*;
use crate::wal::format;

/// The patches of the log (format 4), copied out of the segments as they are read, and
/// applied once every segment's images are in (step 3b of `run`).
///
/// A patch holds the bytes an update changed, so it applies only to the row as the write
/// before it left it: unlike an image, its place in the row's history matters. After the
/// images, each row holds its newest image (or the checkpoint's row), with that image's TID;
/// the patches newer than it are exactly those written since, and applying them in TID order
/// rebuilds the row. Older patches are skipped, as older images are.
///
/// Each patch is copied into one of `PATCH_BUCKETS` buckets by its row's hash, so that a
/// row's patches from every replay thread meet in one bucket, and the apply step sorts and
/// reads one bucket at a time, a few megabytes that stay in the cache. (A single list sorted
/// whole, then read in row order all over its gigabyte, spent most of its time in cache and
/// TLB misses: bench/results/history.md, "Patches replayed by bucket".)
pub(super) struct Patches {
    /// Per bucket, its patches one after another: a `PatchHead`'s bytes, the key, the body
    /// (`format::Patch::write_body_into`).
    pub(super) buckets: Vec<Vec<u8>>,
    pub(super) count: u64,
}

/// Buckets of `Patches`: enough that a bucket of a large log fits in the cache.
pub(super) const PATCH_BUCKETS: usize = 1024;

/// A bucketed patch's head, as its bytes lie in the bucket.
#[derive(Clone, Copy)]
pub(super) struct PatchHead {
    /// Of the table and key (`row_hash`): it groups a row's patches, and its top bits choose
    /// the bucket.
    pub(super) hash: u64,
    pub(super) tid: u64,
    pub(super) table: u32,
    pub(super) key_len: u32,
    pub(super) body_len: u32,
}

impl PatchHead {
    pub(super) const BYTES: usize = 28;

    pub(super) fn write(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.hash.to_le_bytes());
        out[8..16].copy_from_slice(&self.tid.to_le_bytes());
        out[16..20].copy_from_slice(&self.table.to_le_bytes());
        out[20..24].copy_from_slice(&self.key_len.to_le_bytes());
        out[24..28].copy_from_slice(&self.body_len.to_le_bytes());
    }

    pub(super) fn read(bytes: &[u8]) -> PatchHead {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        PatchHead {
            hash: u64_at(0),
            tid: u64_at(8),
            table: u32_at(16),
            key_len: u32_at(20),
            body_len: u32_at(24),
        }
    }

    /// The bytes of the patch this head starts, head included.
    pub(super) fn len(&self) -> usize {
        PatchHead::BYTES + self.key_len as usize + self.body_len as usize
    }
}

impl Default for Patches {
    fn default() -> Patches {
        Patches { buckets: (0..PATCH_BUCKETS).map(|_| Vec::new()).collect(), count: 0 }
    }
}

impl Patches {
    pub(super) fn bucket_of(hash: u64) -> usize {
        const _: () = assert!(PATCH_BUCKETS.is_power_of_two());
        (hash >> (64 - PATCH_BUCKETS.trailing_zeros())) as usize
    }

    pub(super) fn push(&mut self, tid: u64, table: u32, key: &[u8], patch: &format::Patch<'_>) {
        let hash = row_hash(table, key);
        let body_len = patch.body_len();
        let head =
            PatchHead { hash, tid, table, key_len: key.len() as u32, body_len: body_len as u32 };
        let bucket = &mut self.buckets[Patches::bucket_of(hash)];
        let at = bucket.len();
        if bucket.capacity() < at + head.len() {
            // At least 64 KiB at once: a bucket that holds anything soon holds much more.
            bucket.reserve((at + head.len()).max(2 * bucket.capacity()).max(64 << 10) - at);
        }
        bucket.resize(at + head.len(), 0);
        let out = &mut bucket[at..];
        head.write(out);
        out[PatchHead::BYTES..PatchHead::BYTES + key.len()].copy_from_slice(key);
        patch.write_body_into(&mut out[PatchHead::BYTES + key.len()..]);
        self.count += 1;
    }
}

/// A 64-bit hash of a row's table and key (FxHash's multiply-rotate over 8-byte words: rows
/// only need spreading and grouping, equal keys are compared where hashes tie). Its top bits,
/// the best mixed by the last multiply, choose a row's bucket.
pub(crate) fn row_hash(table: u32, key: &[u8]) -> u64 {
    pub(super) const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let word = |at: usize| u64::from_le_bytes(key[at..at + 8].try_into().expect("8 bytes"));
    let mut hash = mix(0, u64::from(table) | (key.len() as u64) << 32);
    let len = key.len();
    let mut at = 0;
    while at + 8 <= len {
        hash = mix(hash, word(at));
        at += 8;
    }
    // The last bytes: the key's last word again if it has one (a copy into a zeroed word
    // called `memcpy` and stalled the load after it), else up to 7 bytes by 4-byte halves.
    let last = if at == len {
        return hash;
    } else if len >= 8 {
        word(len - 8)
    } else if len >= 4 {
        let half =
            |at: usize| u64::from(u32::from_le_bytes(key[at..at + 4].try_into().expect("4")));
        half(0) | half(len - 4) << 32
    } else {
        u64::from(key[0]) | u64::from(key[len / 2]) << 8 | u64::from(key[len - 1]) << 16
    };
    mix(hash, last)
}

/// One patch of a bucket being applied: where it lies, and what it is sorted by.
#[derive(Clone, Copy)]
pub(super) struct PatchAt {
    pub(super) hash: u64,
    pub(super) tid: u64,
    /// Which replay thread's bucket holds it, and where in that bucket it starts.
    pub(super) list: u32,
    pub(super) at: usize,
}

/// Applies the patches of bucket `bucket`: each row's in TID order, those newer than the
/// row's TID, to a copy of the row installed once at the end.
pub(super) fn apply_patches<'t>(
    lists: &[&Patches],
    bucket: usize,
    applier: &mut Applier,
    table_of: impl Fn(u32) -> Option<&'t Table>,
    storage: &dyn Storage,
) -> Result<()> {
    let mut mine: Vec<PatchAt> = Vec::new();
    for (list, patches) in lists.iter().enumerate() {
        let bytes = &patches.buckets[bucket];
        let mut at = 0;
        while at < bytes.len() {
            let head = PatchHead::read(&bytes[at..]);
            mine.push(PatchAt { hash: head.hash, tid: head.tid, list: list as u32, at });
            at += head.len();
        }
    }
    mine.sort_unstable_by_key(|patch| (patch.hash, patch.tid));
    // The head, the key and the body of a patch.
    let parts = |patch: &PatchAt| {
        let bytes = &lists[patch.list as usize].buckets[bucket][patch.at..];
        let head = PatchHead::read(bytes);
        let key = &bytes[PatchHead::BYTES..PatchHead::BYTES + head.key_len as usize];
        let body = &bytes[PatchHead::BYTES + key.len()..head.len()];
        (head, key, body)
    };
    let row_of = |patch: &PatchAt| {
        let (head, key, _) = parts(patch);
        (head.table, key)
    };
    let corrupt = |table: u32, key: &[u8], tid: u64, reason: &str| Error::Corrupt {
        file: storage.describe("wal"),
        offset: 0,
        reason: format!(
            "the patch of table {table} key {key:02x?} at TID {tid:#x} {reason}: the log lost the \
             write before it"
        ),
    };
    let pin = recovery_pin();
    let mut row = Vec::new();
    let mut start = 0;
    while start < mine.len() {
        let hash = mine[start].hash;
        let mut end = start + 1;
        while end < mine.len() && mine[end].hash == hash {
            end += 1;
        }
        let group = &mut mine[start..end];
        // Rows whose hashes tie: each row's patches together, still in TID order.
        let first = row_of(&group[0]);
        if group.iter().any(|patch| row_of(patch) != first) {
            group.sort_by(|a, b| row_of(a).cmp(&row_of(b)).then(a.tid.cmp(&b.tid)));
        }
        let mut row_start = 0;
        while row_start < group.len() {
            let (table_id, key) = row_of(&group[row_start]);
            let mut row_end = row_start + 1;
            while row_end < group.len() && row_of(&group[row_end]) == (table_id, key) {
                row_end += 1;
            }
            let patches = &group[row_start..row_end];
            row_start = row_end;
            let Some(table) = table_of(table_id) else { continue };
            let Some(found) = table.primary.get(key, &pin).value else {
                return Err(corrupt(table_id, key, patches[0].tid, "has no row to apply to"));
            };
            // SAFETY: reached through the index; heads are not freed during replay.
            let head = unsafe { &*(found as *mut Head) };
            let word = lock_waiting(head);
            let mut tid = word.tid();
            let present = head.value_locked(&mut row);
            for entry in patches {
                if entry.tid <= tid.as_u64() {
                    continue;
                }
                let (_, _, body) = parts(entry);
                let patch =
                    format::Patch::decode(body).expect("a patch body copied from a decoded one");
                if !present || patch.row_len() != row.len() {
                    head.unlock_to(word);
                    let reason = if present {
                        format!("is for a row of {} bytes, not {}", patch.row_len(), row.len())
                    } else {
                        "applies to a deleted row".to_owned()
                    };
                    return Err(corrupt(table_id, key, entry.tid, &reason));
                }
                patch.apply(&mut row);
                tid = Tid::from_u64(entry.tid);
                applier.applied += 1;
            }
            if tid == word.tid() {
                head.unlock_to(word);
            } else {
                applier.install(head, Some(&row), TidWord::new(tid, TidWord::LATEST));
            }
        }
        start = end;
    }
    Ok(())
}
