//! Files, blocks, log and catalog records, the manifest: round trips and damage.

use super::*;
use crate::limits::INDEX_KEY_BYTES_MAX;

/// CRC32C one bit at a time, from its definition (reflected polynomial 0x82F63B78,
/// inverted before and after).
fn crc32c_by_bits(crc: u32, data: &[u8]) -> u32 {
    let mut state = !crc;
    for &byte in data {
        state ^= u32::from(byte);
        for _ in 0..8 {
            state = (state >> 1) ^ (0x82F6_3B78 & (state & 1).wrapping_neg());
        }
    }
    !state
}

#[test]
fn the_checksum_is_crc32c_for_every_length_alignment_and_split() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283, "the catalogue's check value");
    let data: Vec<u8> =
        (0..9_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    for len in (0..600).chain([1_000, 2_800, 4_096, 4_097, 8_191]) {
        for offset in [0, 1, 3, 8, 13] {
            let bytes = &data[offset..offset + len];
            let expected = crc32c_by_bits(0, bytes);
            assert_eq!(crc32c(bytes), expected, "length {len} at offset {offset}");
            for split in [0, len / 3, len / 2, len.saturating_sub(1), len] {
                let first = crc32c_append(0, &bytes[..split]);
                assert_eq!(crc32c_append(first, &bytes[split..]), expected, "split at {split}");
            }
        }
    }
}

#[test]
fn writes_encode_every_key_length_and_decode_back() {
    let value: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
    for key_len in 0..=40usize {
        let key: Vec<u8> = (0..key_len).map(|i| (i * 13 + 5) as u8).collect();
        let mut payload = Vec::new();
        encode_txn_head(&mut payload, 5, 2);
        encode_write(&mut payload, 9, &key, Some(&value[..key_len * 7]));
        encode_write(&mut payload, 10, &key, None);
        let mut seen = 0;
        decode_log_payload(&payload, FORMAT_VERSION, |_, writes| {
            seen += 1;
            assert_eq!(writes.len(), 2);
            assert_eq!((writes[0].table, writes[0].key), (9, &key[..]));
            assert!(matches!(writes[0].change, Change::Put(put) if put == &value[..key_len * 7]));
            assert_eq!((writes[1].table, writes[1].key), (10, &key[..]));
            assert!(matches!(writes[1].change, Change::Delete));
        })
        .unwrap();
        assert_eq!(seen, 1, "key of {key_len} bytes");
    }
}

#[test]
fn a_header_from_the_payloads_checksum_equals_one_computed_over_it() {
    for len in [0usize, 1, 7, 64, 4099] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        assert_eq!(
            block_header_of_checksummed(BlockKind::Log, 0, 42, len, crc32c(&payload)),
            block_header(BlockKind::Log, 42, &payload)
        );
    }
}

#[test]
fn blocks_round_trip_with_and_without_lz4() {
    for lz4 in [false, true] {
        let mut file =
            encode_file_header(FileKind::Segment, FileHeader { a: 1, b: 2, c: 3 }).to_vec();
        let payload: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 7).to_le_bytes()).collect();
        encode_block(&mut file, BlockKind::Log, 42, &payload, lz4);
        encode_block(&mut file, BlockKind::Log, 43, b"", lz4);
        let header = decode_file_header(FileKind::Segment, &file, "f").unwrap();
        assert_eq!(header, FileHeader { a: 1, b: 2, c: 3 });
        let mut reader = BlockReader::new(&file);
        let block = reader.next_block().unwrap().unwrap();
        assert_eq!((block.kind, block.mark, &*block.payload), (BlockKind::Log, 42, &payload[..]));
        assert_eq!(reader.next_block().unwrap().unwrap().mark, 43);
        assert!(reader.next_block().unwrap().is_none());
    }
}

#[test]
fn a_cut_or_zeroed_tail_is_torn_and_a_flipped_byte_in_the_middle_is_corrupt() {
    let mut file = encode_file_header(FileKind::Segment, FileHeader { a: 0, b: 0, c: 0 }).to_vec();
    encode_block(&mut file, BlockKind::Log, 1, &[7u8; 100], false);
    let second = file.len();
    encode_block(&mut file, BlockKind::Log, 2, &[8u8; 100], false);
    for cut in second + 1..file.len() {
        let mut reader = BlockReader::new(&file[..cut]);
        reader.next_block().unwrap().unwrap();
        assert!(
            matches!(reader.next_block(), Err(Damage::Torn { offset, .. }) if offset == second)
        );
    }
    let mut zeroed = file.clone();
    zeroed[second..].fill(0);
    let mut reader = BlockReader::new(&zeroed);
    reader.next_block().unwrap().unwrap();
    assert!(reader.next_block().unwrap().is_none(), "zeros after the last block: a clean end");
    let mut garbage = file.clone();
    garbage[second + 40..].fill(0xEE);
    let mut reader = BlockReader::new(&garbage);
    reader.next_block().unwrap().unwrap();
    assert!(
        matches!(reader.next_block(), Err(Damage::Torn { .. })),
        "garbage with nothing valid after it"
    );
    let mut flipped = file.clone();
    flipped[FILE_HEADER_BYTES + BLOCK_HEADER_BYTES + 5] ^= 1;
    assert!(matches!(
        BlockReader::new(&flipped).next_block(),
        Err(Damage::Corrupt { offset: FILE_HEADER_BYTES, .. })
    ));
    let mut last = file.clone();
    let end = last.len();
    last[end - 1] ^= 1;
    let mut reader = BlockReader::new(&last);
    reader.next_block().unwrap().unwrap();
    assert!(
        matches!(reader.next_block(), Err(Damage::Torn { .. })),
        "a bad last block is a torn write"
    );
}

/// A segment of `salt` holding blocks with marks `marks`, each salted.
fn salted_segment(salt: u32, sequence: u64, marks: &[u64]) -> Vec<u8> {
    let header = FileHeader { a: 1, b: 2, c: sequence };
    let mut file = encode_salted_file_header(FileKind::Segment, header, salt).to_vec();
    for &mark in marks {
        let payload = [mark as u8; 300];
        file.extend_from_slice(&salted(block_header(BlockKind::Log, mark, &payload), salt));
        file.extend_from_slice(&payload);
    }
    file
}

fn marks(file: &[u8]) -> (Vec<u64>, Result<(), Damage>) {
    let mut reader = BlockReader::new(file);
    let mut marks = Vec::new();
    loop {
        match reader.next_block() {
            Ok(Some(block)) => marks.push(block.mark),
            Ok(None) => return (marks, Ok(())),
            Err(damage) => return (marks, Err(damage)),
        }
    }
}

/// A segment file taken over from an older one keeps the old blocks after the new: they
/// fail the new salt, so reading stops at the new blocks' end as a torn tail (a crash's),
/// never reading an old block as new and never calling the old ones corruption. Unsalted
/// (the same salt), the old blocks would be read as the segment's own.
#[test]
fn a_reused_segments_old_blocks_fail_its_salt() {
    let old = salted_segment(0xA5A5_0001, 1, &[1, 2, 3, 4, 5, 6]);
    assert_eq!(file_salt(&old), 0xA5A5_0001);
    assert_eq!(marks(&old), (vec![1, 2, 3, 4, 5, 6], Ok(())));
    let new = salted_segment(0x0BAD_CAFE, 9, &[10, 11]);
    let mut reused = old.clone();
    reused[..new.len()].copy_from_slice(&new);
    let (read, end) = marks(&reused);
    assert_eq!(read, vec![10, 11], "only the new segment's blocks");
    assert!(
        matches!(end, Err(Damage::Torn { offset, .. }) if offset == new.len()),
        "the old blocks read as a torn tail: {end:?}"
    );
    // A block of the new segment after damage is still found: corruption.
    let mut damaged = reused.clone();
    damaged[FILE_HEADER_BYTES + 40] ^= 1;
    assert!(matches!(marks(&damaged).1, Err(Damage::Corrupt { offset: FILE_HEADER_BYTES, .. })));
    // Without a salt to tell them apart, the old blocks pass for the new segment's.
    let mut same = salted_segment(0x0BAD_CAFE, 1, &[1, 2, 3, 4, 5, 6]);
    same[..new.len()].copy_from_slice(&new);
    assert_eq!(marks(&same).0, vec![10, 11, 3, 4, 5, 6]);
    // Files of format 4 and checkpoint files have no salt.
    let plain = encode_file_header(FileKind::Checkpoint, FileHeader { a: 0, b: 0, c: 0 });
    assert_eq!(file_salt(&plain), 0);
    let mut v4 = plain;
    v4[8..12].copy_from_slice(&4u32.to_le_bytes());
    v4[32..36].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(file_salt(&v4), 0, "bytes 32..36 mean nothing before format 5");
}

#[test]
fn format_1_tids_keep_their_epoch_and_sequence() {
    let v1 = |epoch: u64, sequence: u64| (epoch << 24) | sequence;
    for (epoch, sequence) in
        [(0, 0), (1, 1), (5, 7), (123_456, Tid::SEQUENCE_MAX), ((1 << 36) - 1, 3)]
    {
        let tid = Tid::from_u64(tid_from_file(1, v1(epoch, sequence)).unwrap());
        assert_eq!((tid.epoch().0, tid.sequence()), (epoch, sequence));
    }
    assert!(tid_from_file(1, v1(9, Tid::SEQUENCE_MAX + 1)).is_err());
    assert_eq!(tid_from_file(2, 12345), Ok(12345));
    // Order is kept: v1 TIDs compare as their conversions do.
    let (a, b) = (v1(3, 900), v1(4, 2));
    assert!(tid_from_file(1, a).unwrap() < tid_from_file(1, b).unwrap());
}

#[test]
fn log_and_catalog_records_round_trip() {
    let mut payload = Vec::new();
    encode_txn_head(&mut payload, 99, 2);
    encode_write(&mut payload, 3, b"k", Some(b"value"));
    encode_write(&mut payload, 4, b"gone", None);
    let mut seen = Vec::new();
    decode_log_payload(&payload, FORMAT_VERSION, |tid, writes| {
        seen.push((
            tid,
            writes
                .iter()
                .map(|w| {
                    let value = match w.change {
                        Change::Put(value) => Some(value.to_vec()),
                        Change::Delete => None,
                        Change::Patch(_) => panic!("no patch was written"),
                    };
                    (w.table, w.key.to_vec(), value)
                })
                .collect::<Vec<_>>(),
        ));
    })
    .unwrap();
    assert_eq!(
        seen,
        vec![(99, vec![(3, b"k".to_vec(), Some(b"value".to_vec())), (4, b"gone".to_vec(), None)])]
    );
    assert!(decode_log_payload(&payload[..payload.len() - 1], FORMAT_VERSION, |_, _| {}).is_err());
    // A key longer than any index holds is a malformed record (the index would refuse it).
    for (len, fits) in [(INDEX_KEY_BYTES_MAX, true), (INDEX_KEY_BYTES_MAX + 1, false)] {
        let mut payload = Vec::new();
        encode_txn_head(&mut payload, 99, 1);
        let key = vec![1u8; len];
        encode_write(&mut payload, 3, &key, Some(b"v"));
        assert_eq!(decode_log_payload(&payload, FORMAT_VERSION, |_, _| {}).is_ok(), fits);
    }
    let record = CatalogRecord::Create {
        table: 7,
        name: "t".into(),
        indexes: vec![IndexRecord { name: "i".into(), unique: true, definition: vec![1, 2] }],
    };
    assert_eq!(decode_catalog(&encode_catalog(&record)), Some(record));
    assert_eq!(
        decode_catalog(&encode_catalog(&CatalogRecord::Drop { table: 2 })),
        Some(CatalogRecord::Drop { table: 2 })
    );
    let record = CatalogRecord::Rows {
        table: 4,
        tid: 1 << 40,
        rows: vec![(b"table:t".to_vec(), Some(b"{}".to_vec())), (b"table:u".to_vec(), None)],
    };
    let encoded = encode_catalog(&record);
    assert_eq!(decode_catalog(&encoded), Some(record));
    assert_eq!(decode_catalog(&encoded[..encoded.len() - 1]), None);
    // A key longer than any index holds is a malformed record here too.
    let long = CatalogRecord::Rows {
        table: 4,
        tid: 1,
        rows: vec![(vec![1u8; INDEX_KEY_BYTES_MAX + 1], None)],
    };
    assert_eq!(decode_catalog(&encode_catalog(&long)), None);
}

/// The patch of `old` to `new` through the log's bytes, if `diff_rows` makes one.
fn logged_patch(old: &[u8], new: &[u8], version: u32) -> Option<Vec<u8>> {
    let mut edits = Vec::new();
    let body = diff_rows(old, new, &mut edits)?;
    let mut payload = Vec::new();
    encode_txn_head(&mut payload, 7, 1);
    encode_patch(&mut payload, 2, b"key", new, &edits, body);
    let mut patched = None;
    decode_log_payload(&payload, version, |_, writes| {
        let Change::Patch(patch) = writes[0].change else { panic!("a patch was written") };
        let mut row = old.to_vec();
        patch.apply(&mut row);
        assert_eq!(patch.body_len(), body, "diff_rows tells the body's length");
        let mut copy = vec![0; patch.body_len()];
        patch.write_body_into(&mut copy);
        assert_eq!(Patch::decode(&copy), Some(patch));
        patched = Some(row);
    })
    .unwrap();
    patched
}

#[test]
fn patches_carry_the_changed_words_and_no_more_than_half_a_row() {
    let old: Vec<u8> = (0..204u8).collect();
    let mut new = old.clone();
    new[3] = 250;
    new[13] = 251; // one equal word between: one edit
    new[203] = 252; // the last, short word, after the last whole block
    let mut edits = Vec::new();
    assert_eq!(diff_rows(&old, &new, &mut edits), Some(8 + (8 + 16) + (8 + 4)));
    assert_eq!(edits, vec![(0, 16), (200, 4)]);
    assert_eq!(logged_patch(&old, &new, FORMAT_VERSION), Some(new.clone()));
    // An unchanged row is a patch of no edits.
    assert_eq!(logged_patch(&old, &old, FORMAT_VERSION), Some(old.clone()));
    // Most of the row, a changed length, or a short row: the whole row instead.
    let mut most = old.clone();
    most[..120].fill(0xee);
    assert_eq!(diff_rows(&old, &most, &mut edits), None);
    assert_eq!(diff_rows(&old, &old[..203], &mut edits), None);
    let short = &old[..PATCH_ROW_BYTES_MIN - 1];
    let mut changed = short.to_vec();
    changed[0] = 0xee;
    assert_eq!(diff_rows(short, &changed, &mut edits), None);
    assert_eq!(edits, vec![(0, 16), (200, 4)], "a refused diff leaves the edits as they were");
    // Formats before 4 have no patches: one there is a malformed record.
    let mut payload = Vec::new();
    encode_txn_head(&mut payload, 7, 1);
    encode_patch(&mut payload, 2, b"key", &new, &[(0, 16), (200, 4)], 44);
    assert!(decode_log_payload(&payload, PATCHES - 1, |_, _| {}).is_err());
    assert!(decode_log_payload(&payload, PATCHES, |_, _| {}).is_ok());
}

#[test]
fn patches_whose_edits_leave_the_row_or_overlap_are_malformed() {
    let body = |row_len: u32, edits: &[(u32, &[u8])]| {
        let mut body = Vec::new();
        body.extend_from_slice(&row_len.to_le_bytes());
        body.extend_from_slice(&(edits.len() as u32).to_le_bytes());
        for (offset, bytes) in edits {
            body.extend_from_slice(&offset.to_le_bytes());
            body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            body.extend_from_slice(bytes);
        }
        body
    };
    assert!(Patch::decode(&body(16, &[(0, b"ab"), (8, b"cdefghij")])).is_some());
    assert!(Patch::decode(&body(16, &[(9, b"cdefghij")])).is_none(), "past the row's end");
    assert!(Patch::decode(&body(16, &[(4, b"abc"), (6, b"d")])).is_none(), "overlapping");
    assert!(Patch::decode(&body(16, &[(8, b"ab"), (0, b"c")])).is_none(), "out of order");
    assert!(Patch::decode(&body(16, &[(2, b"")])).is_none(), "empty edit");
    assert!(Patch::decode(&body(u32::MAX, &[(u32::MAX - 1, b"ab")])).is_none());
    let mut long = body(16, &[(0, b"ab")]);
    long.push(0);
    assert!(Patch::decode(&long).is_none(), "bytes after the last edit");
    assert!(Patch::decode(&long[..7]).is_none(), "a cut head");
}

proptest::proptest! {
    #[test]
    fn a_logged_patch_rebuilds_the_new_row(
        old in proptest::collection::vec(proptest::num::u8::ANY, 100..400),
        changes in proptest::collection::vec(
            (proptest::num::usize::ANY, proptest::num::u8::ANY),
            0..12,
        ),
    ) {
        let mut new = old.clone();
        for (at, byte) in changes {
            if !new.is_empty() {
                let len = new.len();
                new[at % len] = byte;
            }
        }
        if let Some(row) = logged_patch(&old, &new, FORMAT_VERSION) {
            proptest::prop_assert_eq!(row, new);
        }
    }
}

#[test]
fn manifests_round_trip_and_detect_damage() {
    let manifest = Manifest { run: 3, checkpoint: Some((100, 4)), voids: vec![(5, 6)] };
    let text = manifest.encode();
    assert_eq!(Manifest::decode(text.as_bytes(), "m").unwrap(), manifest);
    let damaged = text.replace("run 3", "run 4");
    assert!(matches!(Manifest::decode(damaged.as_bytes(), "m"), Err(Error::Corrupt { .. })));
    assert!(manifest.is_void(5) && manifest.is_void(6) && !manifest.is_void(7));
}

/// A padded, salted segment of version `version`: its first block (round 0, ending it),
/// then a page-padded block of 100 bytes for each `(round, ends the round)`.
fn segment_of_rounds(version: u32, blocks: &[(u64, bool)]) -> Vec<u8> {
    let salt = 0x5EED_F00D;
    let header = FileHeader { a: 1, b: 1, c: 0 };
    let mut data = encode_salted_file_header(FileKind::Segment, header, salt).to_vec();
    data[8..12].copy_from_slice(&version.to_le_bytes());
    let crc = crc32c(&data[0..36]);
    data[36..40].copy_from_slice(&crc.to_le_bytes());
    data.extend_from_slice(&salted(log_block_header(round_flags(0, true), 1, &[]), salt));
    data.resize(PAGE_BYTES, 0);
    for (index, &(round, end)) in blocks.iter().enumerate() {
        let payload = vec![index as u8 + 1; 100];
        let header = log_block_header(round_flags(round, end), round, &payload);
        data.extend_from_slice(&salted(header, salt));
        data.extend_from_slice(&payload);
        data.resize(data.len().next_multiple_of(PAGE_BYTES), 0);
    }
    data
}

/// The blocks read before the damage, and the damage.
fn read_until_damage(data: &[u8]) -> (usize, Option<Damage>) {
    let mut reader = BlockReader::segment(data);
    let mut blocks = 0;
    loop {
        match reader.next_block() {
            Ok(Some(_)) => blocks += 1,
            Ok(None) => return (blocks, None),
            Err(damage) => return (blocks, Some(damage)),
        }
    }
}

#[test]
fn damage_followed_only_by_its_own_round_is_a_torn_tail_and_by_a_later_round_corruption() {
    let blocks = [(1, false), (1, true), (2, false), (2, false), (2, true)];
    let torn = |damage: &Option<Damage>| matches!(damage, Some(Damage::Torn { .. }));
    let corrupt = |damage: &Option<Damage>| matches!(damage, Some(Damage::Corrupt { .. }));
    // `damaged` is the index of the block (after the segment's first) whose first sector
    // is lost; `None` damages the segment's first block.
    let read = |version: u32, blocks: &[(u64, bool)], damaged: Option<usize>| {
        let mut data = segment_of_rounds(version, blocks);
        let at = damaged.map_or(FILE_HEADER_BYTES, |index| (index + 1) * PAGE_BYTES);
        data[at..at + 512].fill(0);
        read_until_damage(&data)
    };
    assert_eq!(read_until_damage(&segment_of_rounds(ROUNDS, &blocks)), (6, None));
    // Within the last round, before its last block: torn, whatever came through after.
    let (read_blocks, damage) = read(ROUNDS, &blocks, Some(3));
    assert!(torn(&damage) && read_blocks == 4, "{damage:?}");
    // The first block of the last round (the block before it ended round 1).
    let (read_blocks, damage) = read(ROUNDS, &blocks, Some(2));
    assert!(torn(&damage) && read_blocks == 3, "{damage:?}");
    // A block of round 1, which was synced before round 2 was written: corruption.
    assert!(corrupt(&read(ROUNDS, &blocks, Some(1)).1));
    assert!(corrupt(&read(ROUNDS, &blocks, Some(0)).1));
    // The segment's first block is synced alone, before any other.
    assert!(corrupt(&read(ROUNDS, &blocks, None).1));
    // The last block lost reads as the end; one of its bytes wrong, as a torn tail.
    assert_eq!(read(ROUNDS, &blocks, Some(4)), (5, None));
    let mut data = segment_of_rounds(ROUNDS, &blocks);
    data[5 * PAGE_BYTES + BLOCK_HEADER_BYTES + 7] ^= 1;
    let (read_blocks, damage) = read_until_damage(&data);
    assert!(torn(&damage) && read_blocks == 5, "{damage:?}");
    // Round numbers wrap: round 2^14 is round 0 again.
    let wrapping = [(16_383, true), (16_384, false), (16_384, true)];
    assert!(torn(&read(ROUNDS, &wrapping, Some(1)).1));
    assert!(corrupt(&read(ROUNDS, &wrapping, Some(0)).1));
    // Segments of earlier formats carry no rounds: any valid block after damage is
    // corruption, as those formats were read before.
    let older: Vec<(u64, bool)> = blocks.iter().map(|_| (0, false)).collect();
    assert!(corrupt(&read(SALTED_SEGMENTS, &older, Some(3)).1));
    let mut data = segment_of_rounds(SALTED_SEGMENTS, &older);
    data[5 * PAGE_BYTES + BLOCK_HEADER_BYTES + 7] ^= 1;
    assert!(torn(&read_until_damage(&data).1));
}

/// Random segments of rounds: any loss of sectors of the last round reads as every
/// earlier block and then a clean end or a torn tail; a flipped byte in a block of an
/// earlier round is corruption.
#[test]
fn random_tears_of_the_last_round_are_torn_tails_and_flips_before_it_corruption() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let salt = 0xA5A5_0101;
    for _ in 0..400 {
        let header = FileHeader { a: 1, b: 1, c: 0 };
        let mut data = encode_salted_file_header(FileKind::Segment, header, salt).to_vec();
        data.extend_from_slice(&salted(log_block_header(round_flags(0, true), 1, &[]), salt));
        data.resize(PAGE_BYTES, 0);
        // (round, start, payload start, end) of each block after the first.
        let mut blocks = Vec::new();
        let rounds = 1 + next(5);
        for round in 1..=rounds {
            let count = 1 + next(4);
            for index in 0..count {
                let len = 1 + next(3 * PAGE_BYTES as u64) as usize;
                let payload: Vec<u8> = (0..len).map(|_| 1 + next(255) as u8).collect();
                let flags = round_flags(round, index + 1 == count);
                let start = data.len();
                data.extend_from_slice(&salted(log_block_header(flags, round, &payload), salt));
                data.extend_from_slice(&payload);
                blocks.push((round, start, start + BLOCK_HEADER_BYTES, data.len()));
                data.resize(data.len().next_multiple_of(PAGE_BYTES), 0);
            }
        }
        let before_last = blocks.iter().filter(|block| block.0 < rounds).count();
        let last_start = blocks[before_last].1;
        // A torn last round: sectors lost at random (a fresh file reads zeros there).
        let mut torn = data.clone();
        let lose = 1 + next(8);
        for sector in (last_start..torn.len()).step_by(512) {
            if next(lose) == 0 {
                let end = (sector + 512).min(torn.len());
                torn[sector..end].fill(0);
            }
        }
        let (read, damage) = read_until_damage(&torn);
        assert!(read > before_last, "every block before the last round, and the first");
        assert!(!matches!(damage, Some(Damage::Corrupt { .. })), "{damage:?}");
        // A flip in a block before the last round, where a later round's blocks follow.
        if before_last > 0 {
            let (_, _, payload, end) = blocks[next(before_last as u64) as usize];
            let at = payload + next((end - payload) as u64) as usize;
            let mut flipped = data.clone();
            flipped[at] ^= 1 << next(8);
            let (_, damage) = read_until_damage(&flipped);
            assert!(matches!(damage, Some(Damage::Corrupt { .. })), "{damage:?}");
        }
    }
}
