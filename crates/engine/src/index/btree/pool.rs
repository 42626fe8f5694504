//! Memory for index nodes: blocks from the huge-page chunks of `mem::chunks`. Node
//! allocation happens only on splits and merges, so nodes take and give single blocks.

use crate::mem::chunks;

/// An uninitialised, 64-byte-aligned block of `bytes` (a node size).
pub(crate) fn alloc_node(bytes: usize) -> *mut u8 {
    debug_assert!(bytes.is_multiple_of(64));
    chunks::alloc_block(bytes)
}

/// Returns a block from [`alloc_node`] of the same size.
///
/// # Safety
/// Nothing reaches `block` any more.
pub(crate) unsafe fn free_node(block: *mut u8, bytes: usize) {
    // SAFETY: guaranteed by the caller.
    unsafe { chunks::free_block(block, bytes) }
}
