//! Epochs: pins, the reclaim bound, stable and snapshot epochs, statement snapshots.

use super::*;

#[test]
fn bounds_follow_pins() {
    let manager = EpochManager::new(4, 1, 4);
    let a = manager.register().unwrap();
    let b = manager.register().unwrap();
    let pinned = manager.pin(a);
    for _ in 0..3 {
        manager.advance();
    }
    assert_eq!(manager.reclaim_bound(), pinned, "a pinned worker holds reclamation back");
    assert_eq!(manager.stable(), Epoch(manager.global().0 - 1), "but not the stable epoch");
    manager.enter_commit(a, pinned);
    manager.advance();
    assert_eq!(manager.stable(), Epoch(pinned.0 - 1), "a commit in progress does");
    manager.leave_commit(a);
    manager.unpin(a);
    let tick = manager.advance().unwrap();
    assert_eq!(tick.reclaim_bound, tick.global);
    assert_eq!(tick.stable, Epoch(tick.global.0 - 1));
    let _ = manager.pin(b);
    manager.unpin(b);
}

#[test]
fn garbage_retired_under_a_pinned_reader_waits_for_it() {
    let manager = EpochManager::new(4, 1, 100);
    let (reader, writer) = (manager.register().unwrap(), manager.register().unwrap());
    manager.pin(reader);
    // The reader may hold a pointer to what the writer now unlinks and retires.
    manager.pin(writer);
    let tag = manager.retire_tag();
    manager.unpin(writer);
    for _ in 0..5 {
        manager.advance();
        assert!(tag >= manager.reclaim_bound(), "freed under a pinned reader");
    }
    manager.unpin(reader);
    manager.advance();
    assert!(tag < manager.reclaim_bound(), "freed once the reader is gone");
}

#[test]
fn idle_interactive_transactions_are_kicked() {
    let manager = EpochManager::new(2, 1, 3);
    let slot = manager.register().unwrap();
    let epoch = manager.pin(slot);
    manager.suspend(slot, epoch);
    manager.resume(slot, epoch).expect("not idle long enough to be kicked");
    for _ in 0..10 {
        manager.advance();
    }
    assert_eq!(manager.reclaim_bound(), epoch, "in a call: never kicked");
    manager.suspend(slot, epoch);
    let mut kicked = 0;
    for _ in 0..10 {
        kicked += manager.advance().unwrap().kicked;
    }
    assert_eq!(kicked, 1);
    assert!(manager.reclaim_bound() > epoch);
    assert_eq!(manager.resume(slot, epoch), Err(Kicked));
    manager.unpin(slot);
}

#[test]
fn snapshots_move_in_interval_steps_and_hold_the_low_mark() {
    let manager = EpochManager::new(2, 5, 100);
    for _ in 0..12 {
        manager.advance();
    }
    let snapshot = manager.snapshot();
    assert_eq!(snapshot.0 % 5, 0);
    assert!(snapshot <= manager.stable());
    let slot = manager.register().unwrap();
    manager.pin(slot);
    let reading = manager.enter_snapshot(slot);
    assert_eq!(reading, snapshot);
    for _ in 0..20 {
        manager.advance();
    }
    assert_eq!(manager.snapshot_low(), reading);
    manager.leave_snapshot(slot);
    manager.unpin(slot);
    manager.advance();
    assert!(manager.snapshot_low() > reading);
}

/// A statement snapshot leaves out the ordered transactions at or below its timestamp that
/// have not started installing (a busy one and an idle one), publishes a bound below them,
/// and stops leaving one out once it installs or is kicked.
#[test]
fn statement_snapshots_leave_out_ordered_transactions_still_to_install() {
    let mut manager = EpochManager::new(4, 1, 3);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let [busy, idle, reader, late] = [(); 4].map(|()| manager.register().unwrap());
    let ordered = |slot| {
        let epoch = manager.pin(slot);
        manager.enter_reader(slot);
        (epoch, manager.enter_ordered(slot, epoch).unwrap())
    };
    let (_, t) = ordered(busy);
    let (idle_epoch, u) = ordered(idle);
    manager.suspend(idle, idle_epoch);
    manager.pin(reader);
    let mut snapshot = StatementSnapshot::with_capacity(4);
    manager.take_statement_snapshot(reader, &mut snapshot);
    assert!(t < u && u <= snapshot.at());
    assert_eq!(snapshot.in_progress(), [t, u]);
    let before = Tid::from_u64(t.as_u64() - 1);
    assert!(snapshot.hides(t) && snapshot.hides(u) && !snapshot.hides(before));
    assert_eq!(snapshot.retention_bound(), before);
    manager.refresh_readers_low();
    assert!(manager.readers_low() <= snapshot.retention_bound());
    // One that takes its timestamp after the statement's is not left out.
    let (_, v) = ordered(late);
    assert!(v > snapshot.at() && !snapshot.hides(v));
    // The busy one locks its writes; the idle one is kicked.
    manager.leave_ordered(busy);
    let mut kicked = 0;
    for _ in 0..10 {
        kicked += manager.advance().unwrap().kicked;
    }
    assert_eq!(kicked, 1);
    manager.take_statement_snapshot(reader, &mut snapshot);
    assert_eq!(snapshot.in_progress(), [v]);
    assert_eq!(snapshot.retention_bound(), Tid::from_u64(v.as_u64() - 1));
    manager.leave_ordered(late);
    manager.take_statement_snapshot(reader, &mut snapshot);
    assert!(snapshot.in_progress().is_empty() && !snapshot.hides(v));
    assert_eq!(snapshot.retention_bound(), snapshot.at());
}

/// A statement that finds a transaction taking its timestamp neither waits for it nor
/// leaves it out: the transaction, if the timestamp it took is at or below the statement's,
/// takes a later one; one it took above keeps it.
#[test]
fn a_statement_makes_a_transaction_taking_its_timestamp_take_a_later_one() {
    let mut manager = EpochManager::new(4, 1, 3);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let [writer, reader] = [(); 2].map(|()| manager.register().unwrap());
    let epoch = manager.pin(writer);
    manager.enter_reader(writer);
    manager.pin(reader);
    let mut snapshot = StatementSnapshot::with_capacity(4);
    for first_at_or_below in [true, false] {
        // The first half of `enter_ordered`, and its clock step before the statement's or
        // after it.
        manager.slots[writer.index()].ordered.store(PENDING, Ordering::Relaxed);
        let mut first = None;
        if first_at_or_below {
            first = manager.next_timestamp(epoch);
        }
        manager.take_statement_snapshot(reader, &mut snapshot);
        if !first_at_or_below {
            first = manager.next_timestamp(epoch);
        }
        assert!(snapshot.in_progress().is_empty());
        let ts = manager.publish_ordered(writer, epoch, first).unwrap();
        if first_at_or_below {
            assert!(first.unwrap() <= snapshot.at() && ts > snapshot.at());
        } else {
            assert_eq!(Some(ts), first);
            assert!(ts > snapshot.at());
        }
        assert!(!snapshot.hides(ts));
        manager.leave_ordered(writer);
    }
}

/// A later statement of a transaction never leaves out a kicked transaction that an earlier
/// one took, and so never lowers its slot's bound for `readers_low`, when the kicked
/// transaction's worker comes back to roll it back: `repin_kicked` clears its word before
/// the pin clears KICKED. (A plain pin left the word set: the later statement left the
/// transaction out and published a bound one below its timestamp.)
#[test]
fn a_later_statement_never_leaves_out_a_kicked_transaction_an_earlier_one_took() {
    let mut manager = EpochManager::new(4, 1, 3);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let [idle, reader] = [(); 2].map(|()| manager.register().unwrap());
    let epoch = manager.pin(idle);
    manager.enter_commit(idle, epoch);
    manager.enter_reader(idle);
    let t = manager.enter_ordered(idle, epoch).unwrap();
    manager.suspend(idle, epoch);
    let mut kicked = 0;
    for _ in 0..10 {
        kicked += manager.advance().unwrap().kicked;
    }
    assert_eq!(kicked, 1);
    manager.pin(reader);
    let mut snapshot = StatementSnapshot::with_capacity(4);
    manager.take_statement_snapshot(reader, &mut snapshot);
    assert!(t <= snapshot.at() && !snapshot.hides(t), "a kicked transaction is taken");
    let bound = snapshot.retention_bound();
    assert_eq!(manager.resume(idle, epoch), Err(Kicked));
    manager.repin_kicked(idle);
    manager.take_statement_snapshot(reader, &mut snapshot);
    assert!(!snapshot.hides(t), "left out by a later statement while it rolls back");
    assert!(snapshot.retention_bound() >= bound);
    manager.leave_ordered(idle);
    manager.leave_commit(idle);
    manager.leave_reader(idle);
    manager.unpin(idle);
    manager.leave_reader(reader);
    manager.unpin(reader);
}

/// A held epoch and the readers at it keep the mark, not the unheld mark, which follows
/// the other readers and the newest snapshot; without a hold the two are one.
#[test]
fn the_unheld_mark_passes_a_held_epoch_and_stops_at_other_readers() {
    let manager = EpochManager::new(3, 5, 100);
    for _ in 0..12 {
        manager.advance();
    }
    let held = manager.hold_snapshot();
    let checkpoint = manager.register().unwrap();
    manager.pin(checkpoint);
    manager.enter_snapshot_at(checkpoint, held);
    for _ in 0..10 {
        manager.advance();
    }
    let retention = manager.retention();
    assert_eq!(retention.low, held);
    assert_eq!(retention.low_unheld, manager.snapshot());
    assert!(retention.low_unheld > held);
    // A reader at a newer epoch stops the unheld mark; the hold still keeps the mark.
    let reader = manager.register().unwrap();
    manager.pin(reader);
    let reading = manager.enter_snapshot(reader);
    for _ in 0..10 {
        manager.advance();
    }
    let retention = manager.retention();
    assert_eq!((retention.low, retention.low_unheld), (held, reading));
    assert!(manager.snapshot() > reading);
    // The hold goes: the mark is the reader's too.
    manager.leave_snapshot(checkpoint);
    manager.unpin(checkpoint);
    manager.release_snapshot_hold();
    manager.advance();
    let retention = manager.retention();
    assert_eq!((retention.low, retention.low_unheld), (reading, reading));
}
