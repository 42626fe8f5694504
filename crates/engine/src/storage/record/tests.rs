//! The record's read protocol, version storage layouts, install and prune.

use super::*;

fn retention(low: u64, interval: u64) -> Retention {
    Retention {
        low: Epoch(low),
        low_unheld: Epoch(low),
        interval,
        readers_low: Tid::MAX,
        prune: true,
    }
}

fn tid(epoch: u64) -> Tid {
    Tid::new(Epoch(epoch), 1)
}

#[test]
fn commit_tids_grow_within_and_across_epochs() {
    let first = Tid::commit_after(Tid::ZERO, Epoch(5)).unwrap();
    assert_eq!((first.epoch(), first.sequence()), (Epoch(5), 1));
    let second = Tid::commit_after(first, Epoch(5)).unwrap();
    assert!(second > first && second.epoch() == Epoch(5));
    let next_epoch = Tid::commit_after(second, Epoch(6)).unwrap();
    assert!(next_epoch > second);
    assert_eq!(Tid::commit_after(Tid::new(Epoch(7), Tid::SEQUENCE_MAX), Epoch(7)), None);
    let word = TidWord::new(second, TidWord::LATEST | TidWord::ABSENT);
    assert_eq!(word.tid(), second);
    assert!(word.is_latest() && word.is_absent() && !word.is_locked() && !word.is_claimed());
}

#[test]
fn versions_are_kept_only_across_snapshot_boundaries() {
    // interval 1: every epoch is a snapshot boundary.
    assert!(retention(0, 1).needed(tid(3), tid(4)));
    assert!(!retention(0, 1).needed(tid(4), tid(4)));
    assert!(!retention(5, 1).needed(tid(3), tid(5)), "superseded before the low mark");
    assert!(retention(5, 1).needed(tid(3), tid(6)));
    // interval 10: boundaries at 10, 20, ...
    assert!(!retention(0, 10).needed(tid(11), tid(19)));
    assert!(retention(0, 10).needed(tid(11), tid(21)));
    assert!(retention(0, 10).needed(tid(10), tid(11)));
    assert!(!retention(0, 10).needed(Tid::ZERO, tid(11)));
}

fn alloc(arena: &mut Arena, storage: VersionStorage) -> *mut Head {
    Head::alloc_with(
        arena,
        8,
        TidWord::FRESH,
        HeadShape { words: HeadWords::None, storage, shared_values: false },
    )
}

#[test]
fn snapshot_reads_walk_back_and_pruning_keeps_what_they_need() {
    for storage in VersionStorage::ALL {
        snapshot_reads_walk_back_and_pruning_keeps_what_they_need_in(storage);
    }
}

fn snapshot_reads_walk_back_and_pruning_keeps_what_they_need_in(storage: VersionStorage) {
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, storage);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let keep_all = retention(0, 1);
    let write =
        |value: Option<&[u8]>, epoch: u64, arena: &mut Arena, garbage: &mut Garbage, keep| {
            head.lock().unwrap();
            let flags =
                if value.is_some() { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
            let word = TidWord::new(Tid::new(Epoch(epoch), 1), flags);
            head.install(value, word, keep, arena, garbage, &mut Dropped::default());
            head.unlock_to(word);
        };
    write(Some(b"one"), 2, &mut arena, &mut garbage, keep_all);
    write(Some(b"two, longer than eight bytes"), 4, &mut arena, &mut garbage, keep_all);
    write(None, 6, &mut arena, &mut garbage, keep_all);
    write(Some(b"three"), 8, &mut arena, &mut garbage, keep_all);
    let mut out = Vec::new();
    let at =
        |epoch, out: &mut Vec<u8>| head.read_at(Epoch(epoch), out).unwrap().then(|| out.clone());
    assert_eq!(at(1, &mut out), None);
    assert_eq!(at(2, &mut out).as_deref(), Some(&b"one"[..]));
    assert_eq!(at(5, &mut out).as_deref(), Some(&b"two, longer than eight bytes"[..]));
    assert_eq!(at(7, &mut out), None, "deleted at 6");
    assert_eq!(at(9, &mut out).as_deref(), Some(&b"three"[..]));
    assert_eq!(head.read(&mut out).unwrap().epoch(), Epoch(8));
    assert_eq!(out, b"three");
    assert_eq!(head.chain_len(), 3);
    // Snapshots at 7 and later only: versions below are pruned on the next write.
    write(Some(b"four"), 10, &mut arena, &mut garbage, retention(7, 1));
    assert_eq!(at(7, &mut out), None);
    assert_eq!(at(9, &mut out).as_deref(), Some(&b"three"[..]));
    assert_eq!(head.chain_len(), 2, "the delete (visible at 7) and 'three' remain");
    assert!(garbage.len() >= 2);
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

/// Installs `row` at `tid` on an unpublished head, as a commit would; whether the replaced
/// state was kept.
fn install_row(
    head: &Head,
    tid: Tid,
    row: &[u8],
    retention: Retention,
    arena: &mut Arena,
    garbage: &mut Garbage,
) -> bool {
    head.lock().unwrap();
    let word = TidWord::new(tid, TidWord::LATEST);
    let kept = head.install(Some(row), word, retention, arena, garbage, &mut Dropped::default());
    head.unlock_to(word);
    kept
}

/// A checkpoint holding an old snapshot epoch (`low` below `low_unheld`) keeps the state
/// it reads and the newest boundary's, and none of the boundaries in between, under every
/// version storage: a row updated in every epoch of a long checkpoint keeps a short chain,
/// where the mark alone (`low` for both) keeps a version per epoch.
#[test]
fn a_held_epoch_keeps_its_state_and_not_the_boundaries_after_it() {
    for storage in VersionStorage::ALL {
        assert!(held_epoch_chain_len(storage, true) <= 3, "{storage}");
        assert!(held_epoch_chain_len(storage, false) >= 30, "{storage}");
    }
}

/// Writes epochs 2 and 4 to 40 of a row while epoch 3 is held and snapshots read at the
/// newest boundary; checks both readers' states after every write and returns the final
/// chain length. `unheld`: whether the retention tells the held epoch apart.
fn held_epoch_chain_len(storage: VersionStorage, unheld: bool) -> usize {
    const HELD: u64 = 3;
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, storage);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let value = |epoch: u64| format!("the row as of epoch {epoch}").into_bytes();
    let mut out = Vec::new();
    for epoch in std::iter::once(2).chain(4..=40) {
        // Snapshots start at the newest boundary below this epoch.
        let newest = epoch - 1;
        let retention = Retention {
            low_unheld: Epoch(if unheld { newest.max(HELD) } else { HELD }),
            ..retention(HELD.min(newest), 1)
        };
        let tid = Tid::new(Epoch(epoch), 1);
        install_row(head, tid, &value(epoch), retention, &mut arena, &mut garbage);
        if epoch > HELD {
            assert!(head.read_at(Epoch(HELD), &mut out).unwrap(), "{storage}: epoch {epoch}");
            assert_eq!(out, value(2), "{storage}: the held epoch, after epoch {epoch}");
        }
        assert!(head.read_at(Epoch(newest), &mut out).unwrap() || newest < 2);
        if newest >= 2 {
            let expected = if newest == HELD { 2 } else { newest };
            assert_eq!(out, value(expected), "{storage}: the newest boundary, after {epoch}");
        }
    }
    let len = head.chain_len();
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
    len
}

/// Under `delta` storage every kept state is rebuilt from the master version and the
/// deltas above it: after installs that keep nothing (the chain's first delta is made again
/// against the new master), across deletes and re-inserts, and after pruning drops versions
/// from the top, the middle or the tail of the chain (whose rows it rebuilds for the
/// secondary entries).
#[test]
fn delta_chains_rebuild_every_kept_state_whatever_is_pruned() {
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    // Inline room for 8 bytes: the longer rows below are overflow versions.
    let head_ptr = alloc(&mut arena, VersionStorage::Delta);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let row = |fill: u8, len: usize| {
        let mut row: Vec<u8> = (0..len).map(|byte| byte as u8).collect();
        row[len / 2] = fill;
        row
    };
    let (a, b, c, e, f) = (row(1, 100), row(2, 100), row(3, 60), row(5, 3000), row(6, 8));
    let snapshots = retention(0, 10);
    let write = |value: Option<&[u8]>, epoch: u64, arena: &mut Arena, garbage: &mut Garbage| {
        head.lock().unwrap();
        let flags =
            if value.is_some() { TidWord::LATEST } else { TidWord::LATEST | TidWord::ABSENT };
        let word = TidWord::new(Tid::new(Epoch(epoch), 1), flags);
        let kept = head.install(value, word, snapshots, arena, garbage, &mut Dropped::default());
        head.unlock_to(word);
        kept
    };
    let mut out = Vec::new();
    let at =
        |epoch, out: &mut Vec<u8>| head.read_at(Epoch(epoch), out).unwrap().then(|| out.clone());
    // Snapshot boundaries at 10, 20, 30 and 40.
    assert!(!write(Some(&a), 5, &mut arena, &mut garbage));
    assert!(write(Some(&b), 15, &mut arena, &mut garbage), "a is visible at 10");
    assert!(!write(Some(&c), 16, &mut arena, &mut garbage), "b is visible at no boundary");
    assert_eq!(at(10, &mut out), Some(a.clone()), "a's delta was made again against c");
    assert!(write(Some(&b), 25, &mut arena, &mut garbage));
    assert!(!write(Some(&e), 26, &mut arena, &mut garbage));
    assert!(write(None, 35, &mut arena, &mut garbage), "e is visible at 30");
    assert!(write(Some(&f), 45, &mut arena, &mut garbage), "the delete is visible at 40");
    let expected = [(10, Some(&a)), (20, Some(&c)), (30, Some(&e)), (40, None), (50, Some(&f))];
    for (epoch, row) in expected {
        assert_eq!(at(epoch, &mut out).as_ref(), row, "as of {epoch}");
    }
    assert_eq!(head.chain_len(), 4);
    let mut states = Vec::new();
    head.for_each_older(&mut out, |word, row| states.push((word.epoch().0, row.to_vec())));
    assert_eq!(states, [(35, vec![]), (26, e.clone()), (16, c.clone()), (5, a.clone())]);
    // Snapshots at 30 and later: a and c are no longer read, and as the tail they go.
    let gone = vacuum_rows(head, retention(25, 10), &mut arena, &mut garbage);
    assert_eq!(gone, [(16, c.clone()), (5, a.clone())]);
    assert_eq!(head.chain_len(), 2);
    assert_eq!(at(30, &mut out), Some(e.clone()));
    assert_eq!(at(40, &mut out), None);
    // Versions at epochs 1 to 5 under a master at 6, every one kept; then snapshots only at
    // even epochs: 5, 3 and 1 go, and 4 and 2 are made anew against the versions above.
    let second_ptr = alloc(&mut arena, VersionStorage::Delta);
    // SAFETY: owned by the test.
    let second = unsafe { &*second_ptr };
    let rows: Vec<Vec<u8>> = (0..=6).map(|epoch| row(epoch as u8, 40 + 8 * epoch)).collect();
    for epoch in 1..=6u64 {
        second.lock().unwrap();
        let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
        let value = Some(&rows[epoch as usize][..]);
        let dropped = &mut Dropped::default();
        second.install(value, word, retention(0, 1), &mut arena, &mut garbage, dropped);
        second.unlock_to(word);
    }
    assert_eq!(second.chain_len(), 5);
    let gone = vacuum_rows(second, retention(0, 2), &mut arena, &mut garbage);
    assert_eq!(gone, [(5, rows[5].clone()), (3, rows[3].clone()), (1, rows[1].clone())]);
    assert_eq!(second.chain_len(), 2);
    for epoch in [2, 4, 6] {
        assert_eq!(second.read_at(Epoch(epoch), &mut out), Ok(true));
        assert_eq!(out, rows[epoch as usize], "as of {epoch}");
    }
    // SAFETY: the heads were never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        Head::retire(second_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

/// Prunes `head` as the vacuum does; returns the epochs and rows of the states it dropped.
fn vacuum_rows(
    head: &Head,
    retention: Retention,
    arena: &mut Arena,
    garbage: &mut Garbage,
) -> Vec<(u64, Vec<u8>)> {
    let mut dropped = Dropped::default();
    dropped.reset(true);
    head.lock().unwrap();
    let count = head.vacuum_locked(retention, arena, garbage, &mut dropped);
    head.unlock_to(head.word().without(TidWord::LOCK));
    let gone: Vec<_> = dropped.states().map(|(word, row)| (word.epoch().0, row.to_vec())).collect();
    assert_eq!(gone.len(), count);
    gone
}

/// Readers racing a writer under `delta` storage (the writer keeping, making again and
/// pruning deltas from the chain's middle and tail, rows moving between inline and
/// overflow) always rebuild the whole state
/// at their snapshot: a master version and a first delta that do not belong together
/// would show as a row that is not the one its TID wrote.
#[test]
fn delta_reads_racing_installs_rebuild_whole_states() {
    const WRITES: u64 = 4_000;
    const PER_EPOCH: u64 = 4;
    // Snapshot boundaries every 3 epochs from `LOW` on; the state at each is kept.
    const LOW: u64 = 60;
    let tid_of = |write: u64| Tid::new(Epoch(write / PER_EPOCH + 1), write % PER_EPOCH + 1);
    // Rows of 16 to 136 bytes (inline up to 64): the first word is the TID, one other word
    // changes, the rest stay.
    let row_of = |tid: Tid| {
        let words = 2 + (tid.as_u64() % 16) as usize;
        let mut row: Vec<u8> = (0..words * 8).map(|byte| byte as u8).collect();
        row[..8].copy_from_slice(&tid.as_u64().to_le_bytes());
        let changed = 1 + (tid.as_u64() as usize % (words - 1));
        row[changed * 8..changed * 8 + 8].copy_from_slice(&(!tid.as_u64()).to_le_bytes());
        row
    };
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = Head::alloc_with(
        &mut arena,
        64,
        TidWord::FRESH,
        HeadShape { words: HeadWords::None, storage: VersionStorage::Delta, shared_values: false },
    );
    // SAFETY: owned by the test; nothing retired is freed before the threads end.
    let head = unsafe { &*head_ptr };
    let done = std::sync::atomic::AtomicBool::new(false);
    // Installs keep every epoch's last state from `LOW` on; every 16th write a vacuum pass
    // keeps only the readers' (every third epoch's), dropping versions in the middle.
    let installs = retention(LOW, 1);
    let readers = Retention { interval: 3, ..installs };
    std::thread::scope(|scope| {
        for reader in 0..2u64 {
            let done = &done;
            scope.spawn(move || {
                let mut out = Vec::new();
                let mut boundary = LOW.div_ceil(3) * 3 + 3 * reader;
                let mut checked = 0;
                while !done.load(Ordering::Acquire) || checked < 2_000 {
                    let bound = Tid::last_of(Epoch(boundary));
                    // A writer descheduled while it holds the lock makes a reader give
                    // up (bounded waits); it tries again.
                    let Ok(seen) = head.read_as_of(bound, &mut out) else { continue };
                    if seen.present {
                        assert_eq!(out, row_of(seen.tid), "the row its TID wrote");
                    }
                    if seen.current.tid() > bound {
                        let last = Tid::new(Epoch(boundary), PER_EPOCH);
                        assert_eq!(seen.tid, last, "the state at the boundary");
                        assert!(seen.present);
                    }
                    checked += 1;
                    boundary += 3;
                    if boundary > WRITES / PER_EPOCH {
                        boundary = LOW.div_ceil(3) * 3;
                    }
                }
            });
        }
        let mut dropped = Dropped::default();
        for write in 0..WRITES {
            let tid = tid_of(write);
            head.lock().unwrap();
            let word = TidWord::new(tid, TidWord::LATEST);
            let rows_wanted = write % 2 == 0;
            dropped.reset(rows_wanted);
            head.install(
                Some(&row_of(tid)),
                word,
                installs,
                &mut arena,
                &mut garbage,
                &mut dropped,
            );
            if write % 16 == 15 {
                head.vacuum_locked(readers, &mut arena, &mut garbage, &mut dropped);
            }
            if rows_wanted {
                for (word, row) in dropped.states() {
                    assert_eq!(row, row_of(word.tid()), "a dropped state's rebuilt row");
                }
            }
            head.unlock_to(word);
        }
        done.store(true, Ordering::Release);
    });
    // SAFETY: the threads are gone; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

/// Cooperative cleaning's cue sees an expired version behind one a snapshot still needs.
#[test]
fn an_expired_version_behind_a_needed_one_is_seen() {
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, VersionStorage::AppendO2n);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let keep_all = retention(0, 1);
    for epoch in [9, 11, 12, 14] {
        head.lock().unwrap();
        let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
        head.install(
            Some(b"row"),
            word,
            keep_all,
            &mut arena,
            &mut garbage,
            &mut Dropped::default(),
        );
        head.unlock_to(word);
    }
    assert_eq!(head.chain_len(), 3);
    // Snapshots at 10, 20, ...: 9 is visible at 10 and needed; 11 and 12 are not.
    assert!(retention(0, 10).needed(tid(9), tid(11)));
    assert!(head.has_expired(retention(0, 10)));
    assert!(!head.has_expired(keep_all), "every version is visible at some boundary");
    head.lock().unwrap();
    assert_eq!(
        head.vacuum_locked(retention(0, 10), &mut arena, &mut garbage, &mut Dropped::default()),
        2
    );
    head.unlock_to(head.word().without(TidWord::LOCK));
    assert!(!head.has_expired(retention(0, 10)));
    assert!(!alloc_time_travel_has_expired(&mut arena));
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

/// Newest-first chains never give the cue.
fn alloc_time_travel_has_expired(arena: &mut Arena) -> bool {
    let head_ptr = alloc(arena, VersionStorage::TimeTravel);
    // SAFETY: owned by the test.
    let expired = unsafe { &*head_ptr }.has_expired(retention(0, 10));
    // SAFETY: never published, no versions.
    unsafe { Head::free_now(head_ptr, arena) };
    expired
}

#[test]
fn the_chain_is_pruned_whenever_it_grows() {
    for storage in VersionStorage::ALL {
        the_chain_is_pruned_whenever_it_grows_in(storage);
    }
}

fn the_chain_is_pruned_whenever_it_grows_in(storage: VersionStorage) {
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, storage);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let write = |value: &[u8], epoch: u64, low: u64, arena: &mut Arena, garbage: &mut Garbage| {
        head.lock().unwrap();
        let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
        let kept = head.install(
            Some(value),
            word,
            retention(low, 10),
            arena,
            garbage,
            &mut Dropped::default(),
        );
        head.unlock_to(word);
        kept
    };
    let mut out = Vec::new();
    // Snapshot boundaries at 10, 20, 30.
    assert!(!write(b"a", 11, 0, &mut arena, &mut garbage));
    assert!(write(b"b", 21, 0, &mut arena, &mut garbage), "'a' is visible at 20");
    assert_eq!(head.chain_len(), 1);
    // Snapshots from 25 on only: 'a' is no longer needed, and 'b' (superseded at 23) never
    // was. The chain did not grow, so it is left as it is.
    assert!(!write(b"c", 23, 25, &mut arena, &mut garbage));
    assert_eq!(head.chain_len(), 1);
    // 'c' is visible at 30 and kept; the install that grows the chain drops 'a'.
    assert!(write(b"d", 31, 25, &mut arena, &mut garbage));
    assert_eq!(head.chain_len(), 1);
    assert!(head.read_at(Epoch(30), &mut out).unwrap());
    assert_eq!(out, b"c");
    assert!(head.read_at(Epoch(31), &mut out).unwrap());
    assert_eq!(out, b"d");
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

/// Whether a prune of `head`'s newest-first chain under `retention` would drop anything
/// (the walk of `Head::prune`, dropping nothing).
fn prune_would_drop(head: &Head, retention: Retention) -> bool {
    let mut successor = head.word().tid();
    let mut version = head.older.load(Ordering::Relaxed);
    while !version.is_null() {
        // SAFETY: the test owns the head; nothing is retired while it looks.
        let current = unsafe { &*version };
        let (tid, next) = (current.word().tid(), current.link.load(Ordering::Relaxed));
        if !retention.needed(tid, successor) || (retention.visible_to_all(tid) && !next.is_null()) {
            return true;
        }
        successor = tid;
        version = next;
    }
    false
}

/// While the snapshot low-water mark stays put (a checkpoint holding its epoch), the
/// chain grows by a version per snapshot interval and installs do not walk it; once the
/// mark passes the last boundary before the oldest version's successor, the next install
/// that keeps a version prunes.
#[test]
fn a_held_low_water_mark_stops_the_walks() {
    for storage in [VersionStorage::TimeTravel, VersionStorage::AppendN2o, VersionStorage::Delta] {
        a_held_low_water_mark_stops_the_walks_in(storage);
    }
}

fn a_held_low_water_mark_stops_the_walks_in(storage: VersionStorage) {
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, storage);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let write = |epoch: u64, low: u64, arena: &mut Arena, garbage: &mut Garbage| {
        head.lock().unwrap();
        let word = TidWord::new(Tid::new(Epoch(epoch), 1), TidWord::LATEST);
        let retention = retention(low, 5);
        let due = !head.older.load(Ordering::Relaxed).is_null() && {
            // What the install would decide if it kept a version now.
            head.prune_due(retention)
        };
        let value = epoch.to_le_bytes();
        head.install(Some(&value), word, retention, arena, garbage, &mut Dropped::default());
        head.unlock_to(word);
        due
    };
    // Boundaries every 5 epochs; the mark is held at 10 while the record is written at
    // 11, 16, 21, ...: each write keeps the state before it.
    write(11, 10, &mut arena, &mut garbage);
    for (written, epoch) in (16..=51).step_by(5).enumerate() {
        let due = write(epoch, 10, &mut arena, &mut garbage);
        assert!(!due, "a held mark drops nothing, so nothing is walked (epoch {epoch})");
        assert_eq!(head.chain_len(), written + 1);
    }
    let mut out = Vec::new();
    for boundary in (15..=50).step_by(5) {
        assert!(head.read_at(Epoch(boundary), &mut out).unwrap());
        assert_eq!(out, (boundary - 4).to_le_bytes(), "the state at boundary {boundary}");
    }
    // The oldest version (11) was superseded at 16: once the mark passes 15 a prune can
    // drop it. The mark moves to 40: the install prunes everything below 36.
    assert!(write(56, 40, &mut arena, &mut garbage));
    assert_eq!(head.chain_len(), 4, "36 (visible at 40), 41, 46 and 51 are left");
    assert!(head.read_at(Epoch(40), &mut out).unwrap());
    assert_eq!(out, 36u64.to_le_bytes());
    // The bound follows the new oldest version (superseded at 41): not due at 40.
    assert!(!write(61, 40, &mut arena, &mut garbage));
    assert!(write(66, 41, &mut arena, &mut garbage));
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

/// Random writes under a snapshot low-water mark that is sometimes held and sometimes
/// moves: after every install that keeps a version, a full prune under the same bounds
/// would drop nothing (the installs that skipped the walk were right to), and every
/// snapshot boundary at or above the mark reads the state the model says.
#[test]
fn skipped_prunes_never_leave_garbage_a_prune_would_drop() {
    for storage in [VersionStorage::TimeTravel, VersionStorage::AppendN2o, VersionStorage::Delta] {
        for seed in 0..24u64 {
            skipped_prunes_never_leave_garbage_in(storage, seed, 1 + seed % 6);
        }
    }
}

fn skipped_prunes_never_leave_garbage_in(storage: VersionStorage, seed: u64, interval: u64) {
    use rand::{RngExt, SeedableRng, rngs::SmallRng};
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, storage);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    // The model: every write, (TID, row).
    let mut history: Vec<(Tid, Vec<u8>)> = Vec::new();
    let (mut epoch, mut low, mut sequence) = (1u64, 0u64, 0u64);
    let mut out = Vec::new();
    for write in 0..600u32 {
        let step = rng.random_range(0..4u64);
        if step > 0 {
            (epoch, sequence) = (epoch + step, 0);
        }
        sequence += 1;
        // The mark is held for a while (a checkpoint) or moves up to a boundary the
        // epoch has passed.
        if rng.random_bool(0.1) {
            low = low.max(epoch.saturating_sub(rng.random_range(0..3 * interval)));
        }
        let tid = Tid::new(Epoch(epoch), sequence);
        let row = format!("{write} written at {epoch}").into_bytes();
        let retention = retention(low, interval);
        let kept = install_row(head, tid, &row, retention, &mut arena, &mut garbage);
        history.push((tid, row));
        if kept {
            assert!(!prune_would_drop(head, retention), "seed {seed}, write {write}");
        }
        let first = low.div_ceil(interval) * interval;
        for boundary in (first..epoch).step_by(interval as usize) {
            let bound = Tid::last_of(Epoch(boundary));
            let Some((_, expected)) = history.iter().rev().find(|(tid, _)| *tid <= bound) else {
                continue;
            };
            assert!(head.read_at(Epoch(boundary), &mut out).unwrap());
            assert_eq!(&out, expected, "seed {seed}, boundary {boundary}");
        }
    }
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}

#[test]
fn timestamp_reads_find_their_version_and_long_chains_are_pruned_in_batches() {
    for storage in VersionStorage::ALL {
        timestamp_reads_find_their_version_in(storage);
    }
}

/// Newest-first chains are pruned when they have doubled; oldest-first ones, whose
/// installs walk the chain anyway, at every install that keeps a version.
fn timestamp_reads_find_their_version_in(storage: VersionStorage) {
    let mut arena = Arena::new();
    let mut garbage = Garbage::new();
    let head_ptr = alloc(&mut arena, storage);
    // SAFETY: owned by the test.
    let head = unsafe { &*head_ptr };
    let at = |sequence: u64| Tid::new(Epoch(3), sequence);
    // Returns whether the install dropped versions (pruned).
    let mut write = |sequence: u64, readers_low: Tid, garbage: &mut Garbage| {
        head.lock().unwrap();
        let word = TidWord::new(at(sequence), TidWord::LATEST);
        let retention = Retention { readers_low, ..Retention::NOTHING };
        let mut dropped = Dropped::default();
        head.install(
            Some(&sequence.to_le_bytes()),
            word,
            retention,
            &mut arena,
            garbage,
            &mut dropped,
        );
        head.unlock_to(word);
        !dropped.is_empty()
    };
    // A reader at sequence 1 holds every later version: the chain grows with each update.
    for sequence in 1..=40 {
        write(sequence, at(1), &mut garbage);
    }
    assert_eq!(head.chain_len(), 39);
    let mut out = Vec::new();
    for sequence in [1, 17, 39] {
        let seen = head.read_as_of(at(sequence), &mut out).unwrap();
        assert!(seen.present && seen.current.tid() == at(40));
        assert_eq!(out, sequence.to_le_bytes());
    }
    assert!(!head.read_as_of(Tid::new(Epoch(2), 1), &mut out).unwrap().present);
    // Readers now trail the writer by five versions, so each update makes one more version
    // garbage. The chain is pruned only when it has doubled since its last prune (which
    // left 35 versions): it never exceeds twice that, it is walked every few updates
    // rather than at each one, and once pruned it stays near the five readers need.
    let mut walks = 0;
    for sequence in 41..=120 {
        walks += usize::from(write(sequence, at(sequence - 5), &mut garbage));
        assert!(head.chain_len() <= 2 * 35 + PRUNE_SLACK as usize + 1, "{}", head.chain_len());
        if storage.oldest_first() {
            assert!(head.chain_len() <= 5, "{storage}: {}", head.chain_len());
        }
    }
    if !storage.oldest_first() {
        assert!(walks <= 10, "pruned {walks} times in 80 updates");
    }
    assert!(head.chain_len() <= 2 * 5 + PRUNE_SLACK as usize + 1, "{}", head.chain_len());
    let seen = head.read_as_of(at(115), &mut out).unwrap();
    assert!(seen.present);
    assert_eq!(out, 115u64.to_le_bytes());
    // SAFETY: the head was never published; nothing else can reach what is retired.
    unsafe {
        Head::retire(head_ptr, &mut garbage);
        garbage.free_all(&mut arena);
    }
}
