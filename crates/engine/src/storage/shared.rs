//! Non-inline attributes (Wu et al. §4.2, their Fig. 11): a table whose rows are a fixed number
//! of attributes, each stored in its own heap block (a *value*) rather than in the version.
//!
//! A version of such a table holds one 8-byte handle per attribute: the address of a value.
//! How an update treats the attributes it does not change is the table's [`Sharing`]:
//!
//! - `RefCount`: the new version points at the same values as the one it replaces, and each
//!   value counts the versions (and transactions) that hold it. An update allocates one value,
//!   for the attribute it changes.
//! - `Copy` (the paper's "full tuple copy"): every attribute of the new version is a new value,
//!   a copy of the old one where the update did not change it.
//!
//! Only the append-only storages may hold such tables (`Database::create_table` says why): a
//! version there is an immutable block, freed once by epoch-based reclamation, and freeing it
//! releases its values.
//!
//! PATCHES. A transaction's write of such a row is not the new version's handles but a patch,
//! turned into handles when commit installs it under the record's lock:
//!
//! | bytes        | field                                                            |
//! |--------------|------------------------------------------------------------------|
//! | 0..4         | `retained`: where the patch's kept handles start in the transaction's list of held references |
//! | 4..4+4n      | one slot per attribute: the new value's length, or [`KEEP`]      |
//! | 4+4n..       | each slot's payload in slot order: the new value's bytes, or the kept value's 8-byte handle |
//!
//! A kept handle is a reference the transaction took when it wrote the patch (so that the value
//! outlives the version it was read from, across calls); it is listed in the transaction's
//! `retained` list. Installing the patch hands those references to the new version (their
//! entries in the list become 0); the transaction's end releases the rest (a patch replaced by
//! a later write of the same row, a deleted row, an abort).
//!
//! INVARIANTS
//! - A value's count is the number of versions whose handles name it plus the number of
//!   entries naming it in transactions' `retained` lists. It is freed when the count reaches 0.
//! - A count is only incremented by a holder of another reference, or by a reader that found
//!   the handle in a version while pinned (the version, and so the value, cannot be freed before
//!   the reader unpins).

use crate::sync::shim::{AtomicU32, Ordering, fence};
use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};

/// How updates treat the attributes they do not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Every new version gets a copy of every attribute (the paper's full tuple copy).
    Copy,
    /// Versions share unchanged attributes' values, which count their holders.
    RefCount,
}

impl Sharing {
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Copy => "copy",
            Sharing::RefCount => "refcount",
        }
    }
}

impl std::str::FromStr for Sharing {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "copy" => Ok(Sharing::Copy),
            "refcount" => Ok(Sharing::RefCount),
            other => Err(format!("unknown sharing \"{other}\": use copy or refcount")),
        }
    }
}

/// A table of non-inline attributes (`TableSpec::non_inline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonInline {
    /// Attributes per row, each its own value.
    pub attributes: usize,
    pub sharing: Sharing,
}

/// The most attributes a non-inline row may have.
pub const ATTRIBUTES_MAX: usize = 4096;

/// A slot of a patch whose attribute keeps a value the transaction holds.
pub const KEEP: u32 = u32::MAX;

/// Bytes of a handle in a version or a patch.
pub const HANDLE_BYTES: usize = 8;

#[repr(C)]
struct Header {
    refs: AtomicU32,
    len: u32,
}

const HEADER_BYTES: usize = size_of::<Header>();

fn layout(len: usize) -> Layout {
    Layout::from_size_align(HEADER_BYTES + len, align_of::<Header>()).expect("value layout")
}

#[cfg(debug_assertions)]
static LIVE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Values allocated and not yet freed, process-wide (debug builds only: a shared counter would
/// make every allocation contend in a release build). For leak tests.
pub fn live_values() -> Option<i64> {
    #[cfg(debug_assertions)]
    return Some(LIVE.load(std::sync::atomic::Ordering::SeqCst));
    #[cfg(not(debug_assertions))]
    None
}

/// A new value holding `bytes`, with one reference (the caller's). Returns its handle.
pub fn new_value(bytes: &[u8]) -> u64 {
    let layout = layout(bytes.len());
    // SAFETY: the layout has a nonzero size (the header).
    let block = unsafe { alloc(layout) };
    if block.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: the block has room for the header and `bytes`, and is aligned for the header.
    unsafe {
        (block as *mut Header).write(Header { refs: AtomicU32::new(1), len: bytes.len() as u32 });
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), block.add(HEADER_BYTES), bytes.len());
    }
    #[cfg(debug_assertions)]
    LIVE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    block as u64
}

/// Takes one more reference to the value `handle`.
///
/// # Safety
/// `handle` names a live value, and the caller holds a reference to it or read it from a
/// version while pinned.
pub unsafe fn retain(handle: u64) {
    // SAFETY: guaranteed by the caller.
    let header = unsafe { &*(handle as *const Header) };
    let before = header.refs.fetch_add(1, Ordering::Relaxed);
    debug_assert!(before > 0 && before < u32::MAX, "retain of a dead value");
}

/// Gives up one reference to the value `handle`, freeing it with the last.
///
/// # Safety
/// The caller holds the reference it gives up.
pub unsafe fn release(handle: u64) {
    // SAFETY: guaranteed by the caller.
    let header = unsafe { &*(handle as *const Header) };
    if header.refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    // Every other holder's release happened before this free.
    fence(Ordering::Acquire);
    let len = header.len as usize;
    // SAFETY: the last reference is gone; the block was allocated with this layout.
    unsafe { dealloc(handle as *mut u8, layout(len)) };
    #[cfg(debug_assertions)]
    LIVE.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}

/// The bytes of the value `handle`.
///
/// # Safety
/// `handle` names a value that stays live while the result is used (as for [`retain`]).
pub unsafe fn value<'a>(handle: u64) -> &'a [u8] {
    // SAFETY: guaranteed by the caller; values are immutable.
    unsafe {
        let header = &*(handle as *const Header);
        std::slice::from_raw_parts((handle as *const u8).add(HEADER_BYTES), header.len as usize)
    }
}

/// The `index`th handle of a version's row.
pub fn handle_at(row: &[u8], index: usize) -> u64 {
    let at = index * HANDLE_BYTES;
    u64::from_le_bytes(row[at..at + HANDLE_BYTES].try_into().expect("a handle"))
}

/// Releases the values a freed version held.
///
/// # Safety
/// `row` is the data of a version of a non-inline table that nothing can read any more.
pub unsafe fn release_row(row: &[u8]) {
    for handle in row.chunks_exact(HANDLE_BYTES) {
        // SAFETY: the version held one reference to each of its values.
        unsafe { release(u64::from_le_bytes(handle.try_into().expect("8 bytes"))) };
    }
}

/// One attribute of a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot<'a> {
    New(&'a [u8]),
    Keep(u64),
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// The slots of a patch of `attributes` attributes, in order.
pub fn slots(patch: &[u8], attributes: usize) -> impl Iterator<Item = Slot<'_>> {
    let mut payload = 4 + 4 * attributes;
    (0..attributes).map(move |index| {
        let slot = read_u32(patch, 4 + 4 * index);
        let len = if slot == KEEP { HANDLE_BYTES } else { slot as usize };
        let bytes = &patch[payload..payload + len];
        payload += len;
        if slot == KEEP { Slot::Keep(handle_at(bytes, 0)) } else { Slot::New(bytes) }
    })
}

/// The `index`th slot of a patch.
pub fn slot(patch: &[u8], attributes: usize, index: usize) -> Slot<'_> {
    slots(patch, attributes).nth(index).expect("an attribute of the row")
}

/// Writes the patch of an insert: every attribute new.
pub fn insert_patch(values: &[&[u8]], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&0u32.to_le_bytes());
    for value in values {
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    }
    for value in values {
        out.extend_from_slice(value);
    }
}

/// The row a write's patch is made from: a committed version's handles, or the transaction's
/// own earlier patch of the row.
#[derive(Debug, Clone, Copy)]
pub enum Base<'a> {
    Handles(&'a [u8]),
    Patch(&'a [u8]),
}

/// Writes the patch that sets attribute `index` of `base` to `bytes`. Under `RefCount` the
/// other attributes are kept: a reference to each is taken and listed in `retained`. Under
/// `Copy` they are copied.
///
/// # Safety
/// `base`'s handles name live values (read from a version while pinned, or held by the
/// transaction).
pub unsafe fn update_patch(
    layout: NonInline,
    base: Base<'_>,
    index: usize,
    bytes: &[u8],
    retained: &mut Vec<u64>,
    out: &mut Vec<u8>,
) {
    let attributes = layout.attributes;
    let old = |at: usize| -> Slot<'_> {
        match base {
            Base::Handles(row) => Slot::Keep(handle_at(row, at)),
            Base::Patch(patch) => slot(patch, attributes, at),
        }
    };
    out.clear();
    out.extend_from_slice(&(retained.len() as u32).to_le_bytes());
    let mut each = |out: &mut Vec<u8>, payload: bool| {
        for at in 0..attributes {
            let new = match old(at) {
                _ if at == index => Slot::New(bytes),
                Slot::Keep(handle) if layout.sharing == Sharing::Copy => {
                    // SAFETY: guaranteed by the caller.
                    let bytes = unsafe { value(handle) };
                    Slot::New(bytes)
                }
                kept => kept,
            };
            match (new, payload) {
                (Slot::New(bytes), false) => {
                    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes())
                }
                (Slot::Keep(_), false) => out.extend_from_slice(&KEEP.to_le_bytes()),
                (Slot::New(bytes), true) => out.extend_from_slice(bytes),
                (Slot::Keep(handle), true) => {
                    // SAFETY: guaranteed by the caller.
                    unsafe { retain(handle) };
                    retained.push(handle);
                    out.extend_from_slice(&handle.to_le_bytes());
                }
            }
        }
    };
    each(out, false);
    each(out, true);
}

/// Turns a patch into the handles of the version commit installs: a new value for each new
/// attribute; kept ones hand their references from `retained` to the version.
pub fn materialize(patch: &[u8], attributes: usize, retained: &mut [u64], out: &mut Vec<u8>) {
    out.clear();
    let mut next = read_u32(patch, 0) as usize;
    for slot in slots(patch, attributes) {
        let handle = match slot {
            Slot::New(bytes) => new_value(bytes),
            Slot::Keep(handle) => {
                debug_assert_eq!(retained[next], handle, "a patch installed twice");
                retained[next] = 0;
                next += 1;
                handle
            }
        };
        out.extend_from_slice(&handle.to_le_bytes());
    }
}

/// Releases the references a transaction still holds at its end.
pub fn release_retained(retained: &mut Vec<u64>) {
    for handle in retained.drain(..) {
        if handle != 0 {
            // SAFETY: the transaction took this reference and did not hand it on.
            unsafe { release(handle) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values_of(row: &[u8]) -> Vec<Vec<u8>> {
        row.chunks_exact(8)
            // SAFETY: the row's values are held by the test.
            .map(|h| unsafe { value(u64::from_le_bytes(h.try_into().unwrap())) }.to_vec())
            .collect()
    }

    /// A row made, patched twice (the second patch on the first, as a transaction writing the
    /// same row twice does) and installed holds the right bytes under both sharings, shares
    /// exactly the unchanged values under `RefCount`, and frees every value in the end.
    #[test]
    fn patches_make_the_right_row_and_release_everything() {
        for sharing in [Sharing::Copy, Sharing::RefCount] {
            let layout = NonInline { attributes: 3, sharing };
            let mut patch = Vec::new();
            insert_patch(&[b"a", b"bb", b""], &mut patch);
            let mut retained = Vec::new();
            let mut first = Vec::new();
            materialize(&patch, 3, &mut retained, &mut first);
            assert_eq!(values_of(&first), [b"a".to_vec(), b"bb".to_vec(), Vec::new()]);

            let (mut one, mut two) = (Vec::new(), Vec::new());
            // SAFETY: `first`'s values are live.
            unsafe {
                update_patch(layout, Base::Handles(&first), 1, b"X", &mut retained, &mut one);
                update_patch(layout, Base::Patch(&one), 2, b"YY", &mut retained, &mut two);
            }
            assert_eq!(slot(&two, 3, 1), Slot::New(b"X"));
            assert_eq!(slot(&two, 3, 2), Slot::New(b"YY"));
            let mut second = Vec::new();
            materialize(&two, 3, &mut retained, &mut second);
            assert_eq!(values_of(&second), [b"a".to_vec(), b"X".to_vec(), b"YY".to_vec()]);
            assert_eq!(handle_at(&first, 0) == handle_at(&second, 0), sharing == Sharing::RefCount);
            // The transaction ends (the first patch's references go), then both versions die.
            release_retained(&mut retained);
            // SAFETY: nothing reads the versions any more.
            unsafe {
                release_row(&first);
                release_row(&second);
            }
        }
    }
}
