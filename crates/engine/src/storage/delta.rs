//! Delta records of `delta` version storage (Wu et al. §4.3, MySQL's and Oracle's rollback
//! segments, HyPer's undo buffers): an older version is kept as the bytes in which it differs
//! from the state that replaced it, not as a whole row.
//!
//! The engine stores rows as opaque bytes, so a delta holds changed byte runs rather than
//! changed columns. For rows of fixed-width columns (YCSB's 64-bit attributes, TPC-C's rows in
//! `bench::tpcc`) an update that changes k columns keeps about k columns' bytes, which is what
//! the paper's column deltas keep; a run may cover a few unchanged bytes between changed ones,
//! since a run's header costs as much as [`MERGE_GAP_BYTES`] bytes of data.
//!
//! FORMAT (little-endian; also in docs/format.md)
//!
//! | bytes  | field                                               |
//! |--------|-----------------------------------------------------|
//! | 4      | the older row's length                              |
//! | then, per run:                                               |
//! | 4      | offset of the run in the older row                  |
//! | 4      | run length n                                        |
//! | n      | the older row's bytes at that offset                |
//!
//! Applying a delta to the newer row gives the older one: cut or extend (with zeros) the row to
//! the older length, then copy each run in. Every byte past the newer row's end lies in a run,
//! so the zeros never survive. A delta against an empty row (the newer state was a delete) is
//! the whole older row in one run.
//!
//! INVARIANTS
//! - Runs are in offset order, do not overlap, and lie within the older row's length.
//! - A delta is immutable once its version is published, so a reader applies it without any
//!   check beyond the slicing bounds that `apply` keeps anyway.

/// Bytes of a delta's header (the older row's length).
const HEADER_BYTES: usize = 4;

/// Bytes of a run's header (offset and length).
const RUN_HEADER_BYTES: usize = 8;

/// Two runs closer than this many unchanged bytes are stored as one: the unchanged bytes cost
/// no more than a second run's header would.
const MERGE_GAP_BYTES: usize = RUN_HEADER_BYTES;

/// Calls `run(offset, length)` for each run of bytes in which `older` differs from `newer`, or
/// lies past its end, in offset order, merging runs less than [`MERGE_GAP_BYTES`] apart.
fn for_each_run(newer: &[u8], older: &[u8], mut run: impl FnMut(usize, usize)) {
    let common = newer.len().min(older.len());
    // The run being grown: [start, end).
    let mut current: Option<(usize, usize)> = None;
    let mut extend = |from: usize, to: usize, run: &mut dyn FnMut(usize, usize)| match current {
        Some((start, end)) if from - end < MERGE_GAP_BYTES => current = Some((start, to)),
        Some((start, end)) => {
            run(start, end - start);
            current = Some((from, to));
        }
        None => current = Some((from, to)),
    };
    // Eight bytes at a time: a differing word adds its first to its last differing byte.
    let mut at = 0;
    while at + 8 <= common {
        let word = |bytes: &[u8]| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let differ = word(newer) ^ word(older);
        if differ != 0 {
            let first = (differ.trailing_zeros() / 8) as usize;
            let last = 7 - (differ.leading_zeros() / 8) as usize;
            extend(at + first, at + last + 1, &mut run);
        }
        at += 8;
    }
    while at < common {
        if newer[at] != older[at] {
            extend(at, at + 1, &mut run);
        }
        at += 1;
    }
    if older.len() > common {
        extend(common, older.len(), &mut run);
    }
    if let Some((start, end)) = current {
        run(start, end - start);
    }
}

/// Runs a [`Plan`] remembers; a delta with more is found again while it is written.
const PLANNED_RUNS_MAX: usize = 16;

/// The delta that turns one row into another, found but not yet written: its length (to
/// allocate its block) and its first runs, so that writing it seldom compares the rows again.
#[derive(Debug)]
pub struct Plan {
    len: usize,
    runs: [(u32, u32); PLANNED_RUNS_MAX],
    count: usize,
}

impl Plan {
    /// Bytes of the delta.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the delta has no runs: the rows are equal.
    pub fn is_empty(&self) -> bool {
        self.len == HEADER_BYTES
    }
}

/// Finds the delta that turns `newer` into `older`.
pub fn plan(newer: &[u8], older: &[u8]) -> Plan {
    let mut plan = Plan { len: HEADER_BYTES, runs: [(0, 0); PLANNED_RUNS_MAX], count: 0 };
    for_each_run(newer, older, |offset, length| {
        plan.len += RUN_HEADER_BYTES + length;
        if plan.count < PLANNED_RUNS_MAX {
            plan.runs[plan.count] = (offset as u32, length as u32);
        }
        plan.count += 1;
    });
    plan
}

/// Writes the delta `plan` found from `newer` to `older` into `out`, which is exactly
/// [`Plan::len`] bytes long.
pub fn write(plan: &Plan, newer: &[u8], older: &[u8], out: &mut [u8]) {
    let older_len = u32::try_from(older.len()).expect("rows are shorter than 4 GiB");
    out[..HEADER_BYTES].copy_from_slice(&older_len.to_le_bytes());
    let mut at = HEADER_BYTES;
    let mut put = |offset: usize, length: usize| {
        out[at..at + 4].copy_from_slice(&(offset as u32).to_le_bytes());
        out[at + 4..at + 8].copy_from_slice(&(length as u32).to_le_bytes());
        at += RUN_HEADER_BYTES;
        out[at..at + length].copy_from_slice(&older[offset..offset + length]);
        at += length;
    };
    if plan.count <= PLANNED_RUNS_MAX {
        for &(offset, length) in &plan.runs[..plan.count] {
            put(offset as usize, length as usize);
        }
    } else {
        for_each_run(newer, older, put);
    }
    assert_eq!(at, out.len(), "the buffer is the delta's encoded length");
}

fn read_u32(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")) as usize
}

/// Turns `row`, the newer state, into the older state `delta` was made against.
pub fn apply(delta: &[u8], row: &mut Vec<u8>) {
    row.resize(read_u32(delta, 0), 0);
    let mut at = HEADER_BYTES;
    while at < delta.len() {
        let (offset, length) = (read_u32(delta, at), read_u32(delta, at + 4));
        at += RUN_HEADER_BYTES;
        row[offset..offset + length].copy_from_slice(&delta[at..at + length]);
        at += length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn delta(newer: &[u8], older: &[u8]) -> Vec<u8> {
        let plan = plan(newer, older);
        let mut out = vec![0; plan.len()];
        write(&plan, newer, older, &mut out);
        out
    }

    #[test]
    fn a_one_attribute_update_keeps_one_attribute() {
        let older: Vec<u8> = (0..800).map(|byte| byte as u8).collect();
        let mut newer = older.clone();
        newer[400..408].copy_from_slice(&u64::MAX.to_le_bytes());
        let kept = delta(&newer, &older);
        assert_eq!(kept.len(), HEADER_BYTES + RUN_HEADER_BYTES + 8);
        let mut row = newer.clone();
        apply(&kept, &mut row);
        assert_eq!(row, older);
    }

    #[test]
    fn close_runs_merge_and_distant_ones_do_not() {
        let older = vec![0u8; 64];
        let mut newer = older.clone();
        newer[0] = 1;
        newer[5] = 1;
        newer[40] = 1;
        let mut runs = Vec::new();
        for_each_run(&newer, &older, |offset, length| runs.push((offset, length)));
        assert_eq!(runs, [(0, 6), (40, 1)]);
    }

    #[test]
    fn deltas_of_more_runs_than_a_plan_holds_are_written_whole() {
        let older = vec![0u8; 64 * (PLANNED_RUNS_MAX + 3)];
        let mut newer = older.clone();
        for run in 0..PLANNED_RUNS_MAX + 3 {
            newer[run * 64] = 1;
        }
        let kept = delta(&newer, &older);
        assert_eq!(kept.len(), HEADER_BYTES + (PLANNED_RUNS_MAX + 3) * (RUN_HEADER_BYTES + 1));
        let mut row = newer.clone();
        apply(&kept, &mut row);
        assert_eq!(row, older);
    }

    #[test]
    fn a_delta_against_a_delete_is_the_whole_row() {
        let older = b"the row before the delete".to_vec();
        let kept = delta(&[], &older);
        assert_eq!(kept.len(), HEADER_BYTES + RUN_HEADER_BYTES + older.len());
        let mut row = Vec::new();
        apply(&kept, &mut row);
        assert_eq!(row, older);
        // Equal rows: a header and nothing else.
        assert_eq!(delta(&older, &older).len(), HEADER_BYTES);
    }

    proptest! {
        #[test]
        fn applying_a_delta_gives_the_older_row(
            older in proptest::collection::vec(0u8..4, 0..300),
            newer in proptest::collection::vec(0u8..4, 0..300),
            garbage in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let kept = delta(&newer, &older);
            let mut row = newer.clone();
            apply(&kept, &mut row);
            prop_assert_eq!(&row, &older);
            // Runs hold at most the older row's bytes, and are at least a byte long and
            // MERGE_GAP_BYTES apart, so there are at most (len + gap) / (gap + 1) of them.
            let runs_max = (older.len() + MERGE_GAP_BYTES) / (MERGE_GAP_BYTES + 1);
            prop_assert!(kept.len() <= HEADER_BYTES + RUN_HEADER_BYTES * runs_max + older.len());
            // The bytes of `newer` past its common prefix length never leak into the result:
            // applying to a row with other bytes beyond the common length gives the same row.
            let common = newer.len().min(older.len());
            let mut other = newer[..common].to_vec();
            other.extend_from_slice(&garbage);
            apply(&kept, &mut other);
            prop_assert_eq!(&other, &older);
        }
    }
}
