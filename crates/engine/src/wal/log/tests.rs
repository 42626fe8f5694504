//! The log: group commit, segments, spares, durability waits and write failures.

use super::*;

fn append(chunk: &mut LogChunk, record: &[u8]) {
    let before = chunk.records().len();
    chunk.put(record);
    chunk.checksum_from(before);
}

#[test]
fn chunks_are_aligned_huge_pages_full_at_half_that_grow_past_a_record_that_does_not_fit() {
    let mut chunk = new_chunk();
    assert_eq!(chunk.capacity, CHUNK_CAPACITY);
    assert!((chunk.start.as_ptr() as usize).is_multiple_of(CHUNK_CAPACITY));
    let small: Vec<u8> = (0..3_000u32).map(|i| (i * 7) as u8).collect();
    let mut expected = Vec::new();
    while !chunk.is_full() {
        append(&mut chunk, &small);
        expected.extend_from_slice(&small);
    }
    assert!(chunk.records().len() >= (1 << 20) - LogChunk::HEADER);
    assert_eq!(chunk.capacity, CHUNK_CAPACITY, "a full chunk's records fit without growing");
    // A record bigger than the room left: the chunk grows, keeping records and checksum.
    let big: Vec<u8> = (0..1_500_000u32).map(|i| (i * 13 + 1) as u8).collect();
    append(&mut chunk, &big);
    expected.extend_from_slice(&big);
    assert_eq!(chunk.capacity, 2 * CHUNK_CAPACITY);
    assert!((chunk.start.as_ptr() as usize).is_multiple_of(CHUNK_CAPACITY));
    assert_eq!(chunk.records(), &expected[..]);
    assert_eq!(chunk.crc, format::crc32c(&expected));
    let header = chunk.block_header(0, 7, 0);
    assert_eq!(header, format::block_header(BlockKind::Log, 7, &expected));
    let salted = chunk.block_header(0, 7, 0x1234_5678);
    assert_eq!(salted, format::salted(header, 0x1234_5678));
    assert_ne!(salted, header);
    chunk.seal(header);
    assert!(chunk.sealed().len().is_multiple_of(format::PAGE_BYTES));
    assert_eq!(&chunk.sealed()[..LogChunk::HEADER], &header[..]);
    assert_eq!(&chunk.sealed()[LogChunk::HEADER..][..expected.len()], &expected[..]);
    assert!(chunk.sealed()[LogChunk::HEADER + expected.len()..].iter().all(|&byte| byte == 0));
    // A slot's first chunk, and the one replacing a chunk taken before it filled, is small
    // and of ordinary pages.
    let first = small_chunk();
    assert_eq!(first.capacity, SMALL_CHUNK_CAPACITY);
    assert_eq!(SlotBuffers::default().current.capacity, SMALL_CHUNK_CAPACITY);
    // Cleared, it is reused at its size.
    chunk.clear();
    assert!(chunk.is_empty());
    assert_eq!(chunk.crc, 0);
}
