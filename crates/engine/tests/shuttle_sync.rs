//! Randomized-schedule tests of the version latch, the epoch logic, the lock words of the
//! pessimistic protocols (`sync::lockword`) and the reference counts of non-inline values
//! (`storage::shared`), under shuttle's
//! scheduler (`cargo test -p engram-engine --features shuttle --test shuttle_sync`). Shuttle
//! runs the real `sync` code with its own atomics and threads and explores thousands of
//! interleavings, including preemption between any two atomic operations.
#![cfg(feature = "shuttle")]

use engram_engine::storage::Tid;
use engram_engine::sync::lockword::{Refused, TimestampWords, TwoPhaseWord};
use engram_engine::sync::shim::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use engram_engine::sync::{Epoch, EpochManager, StatementSnapshot, VersionLatch};
use shuttle::sync::Arc;
use shuttle::thread;

const ITERATIONS: usize = 3_000;

#[test]
fn optimistic_readers_never_accept_a_torn_write() {
    shuttle::check_random(
        || {
            let latch = Arc::new(VersionLatch::new());
            let pair = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
            let writers: Vec<_> = (1..=2u64)
                .map(|writer| {
                    let (latch, pair) = (Arc::clone(&latch), Arc::clone(&pair));
                    thread::spawn(move || {
                        for round in 0..2 {
                            // Alternate pessimistic locks and optimistic upgrades.
                            if round % 2 == 0 {
                                latch.lock().unwrap();
                            } else {
                                loop {
                                    if let Ok(version) = latch.read_begin()
                                        && latch.try_upgrade(version).is_ok()
                                    {
                                        break;
                                    }
                                    thread::yield_now();
                                }
                            }
                            let value = writer * 100 + round;
                            pair.0.store(value, Ordering::Relaxed);
                            pair.1.store(value, Ordering::Relaxed);
                            latch.unlock();
                        }
                    })
                })
                .collect();
            let reader = {
                let (latch, pair) = (Arc::clone(&latch), Arc::clone(&pair));
                thread::spawn(move || {
                    for _ in 0..4 {
                        if let Ok(version) = latch.read_begin() {
                            let (first, second) =
                                (pair.0.load(Ordering::Relaxed), pair.1.load(Ordering::Relaxed));
                            if latch.read_validate(version).is_ok() {
                                assert_eq!(first, second, "a validated read saw half a write");
                            }
                        }
                    }
                })
            };
            for writer in writers {
                writer.join().unwrap();
            }
            reader.join().unwrap();
            assert!(!latch.is_locked());
        },
        ITERATIONS,
    );
}

#[test]
fn the_latch_excludes_writers() {
    shuttle::check_random(
        || {
            let latch = Arc::new(VersionLatch::new());
            let counter = Arc::new(AtomicU64::new(0));
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let (latch, counter) = (Arc::clone(&latch), Arc::clone(&counter));
                    thread::spawn(move || {
                        for _ in 0..2 {
                            latch.lock().unwrap();
                            // A read-modify-write that loses counts unless the latch excludes.
                            let seen = counter.load(Ordering::Relaxed);
                            thread::yield_now();
                            counter.store(seen + 1, Ordering::Relaxed);
                            latch.unlock();
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            assert_eq!(counter.load(Ordering::Relaxed), 6);
        },
        ITERATIONS,
    );
}

/// A shared object that records whether it was "freed" instead of freeing it, so that a
/// premature free is an assertion failure rather than undefined behaviour.
struct Object {
    freed: AtomicBool,
}

fn leak_object() -> *mut Object {
    Box::into_raw(Box::new(Object { freed: AtomicBool::new(false) }))
}

/// One run: a writer replaces the shared object and frees what the bound allows; readers pin,
/// hold the object across a few scheduling points, and check it was not freed; a ticker
/// advances epochs.
fn reclamation_scenario() {
    let manager = Arc::new(EpochManager::new(4, 1, 1_000));
    let current = Arc::new(AtomicPtr::new(leak_object()));
    let writer = {
        let (manager, current) = (Arc::clone(&manager), Arc::clone(&current));
        thread::spawn(move || {
            let slot = manager.register().unwrap();
            let mut retired: Vec<(Epoch, usize)> = Vec::new();
            for _ in 0..6 {
                manager.pin(slot);
                let old = current.swap(leak_object(), Ordering::AcqRel);
                // Tag after the unlink, as `Garbage::seal` does, then unpin.
                retired.push((manager.retire_tag(), old as usize));
                manager.unpin(slot);
                // Free what the published bound allows, as `Garbage::collect` does.
                let bound = manager.reclaim_bound();
                retired.retain(|&(tag, object)| {
                    if tag < bound {
                        // SAFETY: objects are leaked, never really freed.
                        unsafe { (*(object as *mut Object)).freed.store(true, Ordering::Relaxed) };
                        false
                    } else {
                        true
                    }
                });
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (manager, current) = (Arc::clone(&manager), Arc::clone(&current));
            thread::spawn(move || {
                let slot = manager.register().unwrap();
                for _ in 0..2 {
                    manager.pin(slot);
                    let object = current.load(Ordering::Acquire);
                    for _ in 0..3 {
                        thread::yield_now();
                        // SAFETY: objects are leaked, never really freed.
                        let freed = unsafe { (*object).freed.load(Ordering::Relaxed) };
                        assert!(!freed, "an object was reclaimed while a pinned reader held it");
                    }
                    manager.unpin(slot);
                }
            })
        })
        .collect();
    let ticker = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            for _ in 0..8 {
                manager.advance();
                thread::yield_now();
            }
        })
    };
    writer.join().unwrap();
    for reader in readers {
        reader.join().unwrap();
    }
    ticker.join().unwrap();
}

#[test]
fn reclamation_waits_for_every_reader_that_could_hold_a_pointer() {
    shuttle::check_random(reclamation_scenario, ITERATIONS);
    shuttle::check_pct(reclamation_scenario, ITERATIONS, 3);
}

/// One run: committers announce their commit, take an epoch and install after a scheduling
/// point; a reader checks that the snapshot epoch never covers a commit not yet installed.
fn snapshot_scenario() {
    let manager = Arc::new(EpochManager::new(4, 1, 1_000));
    // Per committer: the epoch its commit took (0 until known) and whether it installed.
    let commits: Arc<Vec<(AtomicU64, AtomicBool)>> =
        Arc::new((0..2).map(|_| (AtomicU64::new(0), AtomicBool::new(false))).collect());
    let committers: Vec<_> = (0..2)
        .map(|index| {
            let (manager, commits) = (Arc::clone(&manager), Arc::clone(&commits));
            thread::spawn(move || {
                let slot = manager.register().unwrap();
                let pinned = manager.pin(slot);
                manager.enter_commit(slot, pinned);
                engram_engine::sync::shim::fence(Ordering::SeqCst);
                let epoch = manager.global();
                commits[index].0.store(epoch.0, Ordering::SeqCst);
                for _ in 0..3 {
                    thread::yield_now();
                }
                commits[index].1.store(true, Ordering::SeqCst);
                manager.leave_commit(slot);
                manager.unpin(slot);
            })
        })
        .collect();
    let ticker = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            for _ in 0..6 {
                manager.advance();
                thread::yield_now();
            }
        })
    };
    let reader = {
        let (manager, commits) = (Arc::clone(&manager), Arc::clone(&commits));
        thread::spawn(move || {
            for _ in 0..6 {
                let snapshot = manager.snapshot();
                for (epoch, installed) in commits.iter() {
                    let epoch = epoch.load(Ordering::SeqCst);
                    if epoch != 0 && epoch <= snapshot.0 {
                        assert!(
                            installed.load(Ordering::SeqCst),
                            "snapshot {snapshot:?} covers an uninstalled commit"
                        );
                    }
                }
                thread::yield_now();
            }
        })
    };
    for committer in committers {
        committer.join().unwrap();
    }
    ticker.join().unwrap();
    reader.join().unwrap();
}

#[test]
fn snapshots_never_include_an_epoch_still_being_installed() {
    shuttle::check_random(snapshot_scenario, ITERATIONS);
    shuttle::check_pct(snapshot_scenario, ITERATIONS, 3);
}

/// One run: a snapshot reader registers (`enter_snapshot`) while the ticker publishes new
/// snapshot epochs; for as long as it stays registered, the low-water mark that installs
/// prune by never passes the epoch it reads. (The ticker once read the slots before it
/// published a new epoch, and a reader registering in between was not counted.)
fn snapshot_low_scenario() {
    let manager = ticked_manager();
    let ticker = spawn_ticker(&manager, 4);
    let reader = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            for _ in 0..2 {
                read_a_snapshot(&manager, 3, |reading| {
                    assert!(reading > Epoch::NEVER);
                    let low = manager.snapshot_low();
                    assert!(
                        low <= reading,
                        "low-water mark {low:?} passed a reader at {reading:?}"
                    );
                });
            }
        })
    };
    ticker.join().unwrap();
    reader.join().unwrap();
}

/// A manager with a snapshot at every epoch boundary, so every tick publishes a new one,
/// ticked once: epoch 0 holds no commit, and a reader at it is never counted (nothing is kept
/// for it).
fn ticked_manager() -> Arc<EpochManager> {
    let manager = Arc::new(EpochManager::new(4, 1, 1_000));
    manager.advance();
    manager
}

/// The ticker: `ticks` ticks, yielding between them.
fn spawn_ticker(manager: &Arc<EpochManager>, ticks: usize) -> thread::JoinHandle<()> {
    let manager = Arc::clone(manager);
    thread::spawn(move || {
        for _ in 0..ticks {
            manager.advance();
            thread::yield_now();
        }
    })
}

/// A snapshot transaction on a slot of its own: registers at the published snapshot epoch,
/// calls `check` with it `checks` times (yielding after each), and leaves.
fn read_a_snapshot(manager: &EpochManager, checks: usize, check: impl Fn(Epoch)) {
    let slot = manager.register().unwrap();
    manager.pin(slot);
    let reading = manager.enter_snapshot(slot);
    for _ in 0..checks {
        check(reading);
        thread::yield_now();
    }
    manager.leave_snapshot(slot);
    manager.unpin(slot);
    manager.unregister(slot);
}

#[test]
fn the_snapshot_low_water_mark_never_passes_a_registered_reader() {
    shuttle::check_random(snapshot_low_scenario, ITERATIONS);
    shuttle::check_pct(snapshot_low_scenario, ITERATIONS, 3);
}

/// Whether installs under the manager's retention now keep the state at `reading`: the one
/// at `low`, or every boundary from `low_unheld` on (`Retention::needed`).
fn retention_keeps(manager: &EpochManager, reading: Epoch) -> bool {
    let retention = manager.retention();
    retention.low == reading || retention.low_unheld <= reading
}

/// One run: an ordinary snapshot reader registers at an old epoch; while it reads, the
/// ticker publishes newer ones, a checkpoint holds one of them (`hold_snapshot`) and reads
/// at it from a slot, and the reader leaves, so that the mark moves up to the held epoch and
/// the unheld mark past it. For as long as each stays registered, the retention installs
/// prune by keeps what it reads (a retention that paired a new unheld mark with an old mark
/// lost the checkpoint's epoch); the checkpoint then lets its hold go.
fn held_snapshot_scenario() {
    let manager = ticked_manager();
    let ticker = spawn_ticker(&manager, 6);
    let reader = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            read_a_snapshot(&manager, 3, |reading| {
                assert!(
                    retention_keeps(&manager, reading),
                    "a reader at {reading:?} lost its versions"
                );
            });
        })
    };
    let checkpoint = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            thread::yield_now();
            let at = manager.hold_snapshot();
            let slot = manager.register().unwrap();
            manager.pin(slot);
            manager.enter_snapshot_at(slot, at);
            for _ in 0..4 {
                assert!(
                    retention_keeps(&manager, at),
                    "a held checkpoint at {at:?} lost its versions"
                );
                thread::yield_now();
            }
            manager.leave_snapshot(slot);
            manager.unpin(slot);
            manager.unregister(slot);
            manager.release_snapshot_hold();
        })
    };
    ticker.join().unwrap();
    checkpoint.join().unwrap();
    reader.join().unwrap();
}

#[test]
fn a_held_checkpoint_epoch_and_its_readers_keep_what_they_read() {
    shuttle::check_random(held_snapshot_scenario, 4 * ITERATIONS);
    shuttle::check_pct(held_snapshot_scenario, 4 * ITERATIONS, 3);
}

/// One run: readers of a multi-version protocol register (and one renews, as READ COMMITTED
/// does per statement) while a committer takes timestamps and recomputes `readers_low`, and
/// the ticker advances. A reader's timestamp must never be below the published bound, or an
/// install could drop the version it reads.
fn readers_scenario() {
    let mut manager = EpochManager::new(4, 1, 1_000);
    manager.enable_multiversion();
    let manager = Arc::new(manager);
    let readers: Vec<_> = (0..2)
        .map(|index| {
            let manager = Arc::clone(&manager);
            thread::spawn(move || {
                let slot = manager.register().unwrap();
                manager.pin(slot);
                let mut at = manager.enter_reader(slot);
                for round in 0..3 {
                    let low = manager.readers_low().as_u64();
                    assert!(low <= at, "readers_low {low} passed a reader at {at}");
                    thread::yield_now();
                    if index == 1 && round == 1 {
                        let renewed = manager.renew_reader(slot);
                        assert!(renewed >= at, "a renewed timestamp went back");
                        at = renewed;
                    }
                }
                manager.leave_reader(slot);
                manager.unpin(slot);
            })
        })
        .collect();
    let committer = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            let mut last = 0;
            for _ in 0..4 {
                let tid = manager.next_timestamp(manager.global()).unwrap().as_u64();
                assert!(tid > last, "timestamps go up");
                last = tid;
                manager.refresh_readers_low();
                thread::yield_now();
            }
        })
    };
    let ticker = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            for _ in 0..3 {
                manager.advance();
                thread::yield_now();
            }
        })
    };
    for reader in readers {
        reader.join().unwrap();
    }
    committer.join().unwrap();
    ticker.join().unwrap();
}

#[test]
fn readers_low_never_passes_a_registered_reader() {
    shuttle::check_random(readers_scenario, ITERATIONS);
    shuttle::check_pct(readers_scenario, ITERATIONS, 3);
}

/// A record's TID word in `statement_snapshot_scenario`: the TID of its current version, with
/// this bit while a committer holds it.
const LOCKED: u64 = 1 << 63;

/// Runs of each statement-snapshot scenario per scheduler. The races need one thread to stop
/// for most of another's steps, which 3,000 runs seldom show. With 20,000, each of these
/// mutations failed the test in every try (2 or 3 each): `refresh_readers_low` reading the
/// slots once, the statement's first swap left out, PENDING read as no transaction (without
/// the statement timestamp that makes the writer take a later one).
const STATEMENT_ITERATIONS: usize = 20_000;

/// One run: an MVTO writer takes its timestamp when it begins and later, at commit, locks two
/// records, stops being left out of statement snapshots and installs both at that timestamp
/// (`cc::commit` steps 1 and 6); a READ COMMITTED reader takes two statement snapshots around
/// it and reads both records in each; a committer moves the clock and recomputes
/// `readers_low`. Each statement sees the writer on both records or on neither, and
/// `readers_low` never passes the bound of what a statement reads (the version before the
/// writer's, when it leaves the writer out).
fn statement_snapshot_scenario() {
    let mut manager = EpochManager::new(4, 1, 1_000);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let manager = Arc::new(manager);
    let old = manager.next_timestamp(manager.global()).unwrap().as_u64();
    let records = Arc::new([AtomicU64::new(old), AtomicU64::new(old)]);
    // The reader's slot first: a computation of `readers_low` reads it before the writer's, the
    // order in which a single pass could miss both (`sync::epoch`, ORDERING).
    let (reader_slot, writer_slot) = (manager.register().unwrap(), manager.register().unwrap());
    let writer = {
        let (manager, records) = (Arc::clone(&manager), Arc::clone(&records));
        thread::spawn(move || {
            let slot = writer_slot;
            let epoch = manager.pin(slot);
            manager.enter_commit(slot, epoch);
            manager.enter_reader(slot);
            let ts = manager.enter_ordered(slot, manager.global()).unwrap().as_u64();
            thread::yield_now();
            for record in records.iter() {
                record.fetch_or(LOCKED, Ordering::SeqCst);
            }
            manager.leave_ordered(slot);
            for record in records.iter() {
                thread::yield_now();
                record.store(ts, Ordering::Release);
            }
            manager.leave_commit(slot);
            manager.leave_reader(slot);
            manager.unpin(slot);
        })
    };
    let reader = {
        let (manager, records) = (Arc::clone(&manager), Arc::clone(&records));
        thread::spawn(move || {
            let slot = reader_slot;
            manager.pin(slot);
            let mut snapshot = StatementSnapshot::with_capacity(4);
            for _ in 0..2 {
                // A writer taking its timestamp meanwhile is made to take one above this
                // statement's (`EpochManager::enter_ordered`): it waits for nobody.
                manager.take_statement_snapshot(slot, &mut snapshot);
                let mut seen = [false; 2];
                for (index, record) in records.iter().enumerate() {
                    let tid = loop {
                        let word = record.load(Ordering::Acquire);
                        if word & LOCKED == 0 {
                            break word;
                        }
                        thread::yield_now();
                    };
                    seen[index] = tid != old
                        && Tid::from_u64(tid) <= snapshot.at()
                        && !snapshot.hides(Tid::from_u64(tid));
                }
                for _ in 0..3 {
                    let low = manager.readers_low();
                    assert!(
                        low <= snapshot.retention_bound(),
                        "readers_low {low:?} passed a statement bound {:?}",
                        snapshot.retention_bound()
                    );
                    thread::yield_now();
                }
                assert_eq!(seen[0], seen[1], "a statement saw half of the writer");
            }
            manager.leave_reader(slot);
            manager.unpin(slot);
        })
    };
    let committer = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            for _ in 0..4 {
                manager.next_timestamp(manager.global()).unwrap();
                manager.refresh_readers_low();
            }
        })
    };
    for handle in [writer, reader, committer] {
        handle.join().unwrap();
    }
}

/// One run of the retention half of `statement_snapshot_scenario` alone, in fewer steps, so
/// that its race shows more often: a writer that commits at its begin timestamp runs from begin
/// to end, a reader takes a statement snapshot and checks `readers_low` against it, a
/// committer recomputes `readers_low`.
fn statement_retention_scenario() {
    let mut manager = EpochManager::new(4, 1, 1_000);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let manager = Arc::new(manager);
    let (reader_slot, writer_slot) = (manager.register().unwrap(), manager.register().unwrap());
    let writer = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            manager.pin(writer_slot);
            manager.enter_reader(writer_slot);
            manager.enter_ordered(writer_slot, manager.global()).unwrap();
            manager.leave_ordered(writer_slot);
            manager.leave_reader(writer_slot);
            manager.unpin(writer_slot);
        })
    };
    let reader = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            manager.pin(reader_slot);
            let mut snapshot = StatementSnapshot::with_capacity(4);
            manager.take_statement_snapshot(reader_slot, &mut snapshot);
            for _ in 0..3 {
                let low = manager.readers_low();
                assert!(
                    low <= snapshot.retention_bound(),
                    "readers_low {low:?} passed a statement bound {:?}",
                    snapshot.retention_bound()
                );
                thread::yield_now();
            }
            manager.leave_reader(reader_slot);
            manager.unpin(reader_slot);
        })
    };
    let committer = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            for _ in 0..3 {
                manager.next_timestamp(manager.global()).unwrap();
                manager.refresh_readers_low();
            }
        })
    };
    for handle in [writer, reader, committer] {
        handle.join().unwrap();
    }
}

#[test]
fn statement_snapshots_see_a_writer_whole_and_keep_what_they_read() {
    shuttle::check_random(statement_retention_scenario, STATEMENT_ITERATIONS);
    shuttle::check_pct(statement_retention_scenario, STATEMENT_ITERATIONS, 3);
    shuttle::check_random(statement_snapshot_scenario, STATEMENT_ITERATIONS);
    shuttle::check_pct(statement_snapshot_scenario, STATEMENT_ITERATIONS, 3);
}

/// One run: `chain` MVTO writers, in slots in the order of the chain, each of which took its
/// timestamp before the statement below took its own, commit one after another, each reading
/// what the one before it installed (`record`: the timestamp of its newest version) before it
/// stops being left out of statement snapshots (`cc::commit` step 6) and installs. A READ
/// COMMITTED statement takes its snapshot meanwhile. Whatever it leaves out, it leaves out
/// every later writer of the chain too: it never takes a writer without the one it read from.
/// Reading every slot once, a statement read the first writer's slot still set, stopped, and
/// read the second's already cleared; leaving out what either of two
/// passes saw fails with a third writer, which the first pass reads still set and the second
/// already cleared, after the second writer.
fn dependent_writers_scenario(chain: usize) {
    let mut manager = EpochManager::new(4, 1, 1_000);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let manager = Arc::new(manager);
    let writer_slots: Vec<_> = (0..chain).map(|_| manager.register().unwrap()).collect();
    let reader_slot = manager.register().unwrap();
    let timestamps: Vec<u64> = writer_slots
        .iter()
        .map(|&slot| {
            let epoch = manager.pin(slot);
            manager.enter_commit(slot, epoch);
            manager.enter_reader(slot);
            manager.enter_ordered(slot, manager.global()).unwrap().as_u64()
        })
        .collect();
    let record = Arc::new(AtomicU64::new(0));
    let mut handles: Vec<_> = (0..chain)
        .map(|position| {
            let (manager, record) = (Arc::clone(&manager), Arc::clone(&record));
            let (slot, ts) = (writer_slots[position], timestamps[position]);
            let read_from = if position == 0 { 0 } else { timestamps[position - 1] };
            thread::spawn(move || {
                // It reads the record only once the writer before it installed it (MVTO: that
                // writer's owner word refuses it before).
                while record.load(Ordering::SeqCst) != read_from {
                    thread::yield_now();
                }
                manager.leave_ordered(slot);
                record.store(ts, Ordering::SeqCst);
                manager.leave_commit(slot);
                manager.leave_reader(slot);
                manager.unpin(slot);
            })
        })
        .collect();
    handles.push({
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            manager.pin(reader_slot);
            let mut snapshot = StatementSnapshot::with_capacity(4);
            manager.take_statement_snapshot(reader_slot, &mut snapshot);
            let hidden: Vec<bool> =
                timestamps.iter().map(|&ts| snapshot.hides(Tid::from_u64(ts))).collect();
            assert!(timestamps.iter().all(|&ts| Tid::from_u64(ts) <= snapshot.at()));
            assert!(
                hidden.windows(2).all(|pair| !pair[0] || pair[1]),
                "the statement takes a writer but leaves out the one it read from: {:?}",
                snapshot.in_progress()
            );
            manager.leave_reader(reader_slot);
            manager.unpin(reader_slot);
        })
    });
    for handle in handles {
        handle.join().unwrap();
    }
}

/// With the slots read once, 6 and 21 of 2,000 random runs failed (chains of 2 and 3), so the
/// 20,000 runs here all but surely find the race; PCT at depth 3 found it in none of 2,000.
#[test]
fn a_statement_never_takes_a_transaction_without_one_it_read_from() {
    for chain in [2, 3] {
        shuttle::check_random(move || dependent_writers_scenario(chain), STATEMENT_ITERATIONS);
    }
}

/// One run: an MVTO transaction that the ticker kicked while it sat idle rolls back
/// (`repin_kicked`, then `cc::commit`'s `finish`) while a READ COMMITTED transaction takes two
/// statement snapshots. The second never leaves out the kicked transaction if the first took
/// it, and so never lowers its slot's bound for `readers_low` (`sync::epoch`, ORDERING). With a
/// plain pin, which clears KICKED while the kicked transaction's timestamp is still in its
/// slot, the second statement left it out (in the first runs).
fn kicked_roll_back_scenario() {
    let mut manager = EpochManager::new(4, 1, 2);
    manager.enable_multiversion();
    manager.enable_statement_snapshots();
    let manager = Arc::new(manager);
    let (idle, reader_slot) = (manager.register().unwrap(), manager.register().unwrap());
    let epoch = manager.pin(idle);
    manager.enter_commit(idle, epoch);
    manager.enter_reader(idle);
    let t = manager.enter_ordered(idle, manager.global()).unwrap();
    manager.suspend(idle, epoch);
    while manager.kicked_total() == 0 {
        manager.advance();
    }
    let rolling_back = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            assert!(manager.resume(idle, epoch).is_err());
            manager.repin_kicked(idle);
            manager.leave_ordered(idle);
            manager.leave_commit(idle);
            manager.leave_reader(idle);
            manager.unpin(idle);
        })
    };
    let reader = {
        let manager = Arc::clone(&manager);
        thread::spawn(move || {
            manager.pin(reader_slot);
            let mut snapshot = StatementSnapshot::with_capacity(4);
            manager.take_statement_snapshot(reader_slot, &mut snapshot);
            let (took, bound) = (!snapshot.hides(t), snapshot.retention_bound());
            manager.take_statement_snapshot(reader_slot, &mut snapshot);
            if took {
                assert!(!snapshot.hides(t), "a later statement left out what an earlier took");
            }
            assert!(snapshot.retention_bound() >= bound, "a later statement lowered its bound");
            manager.leave_reader(reader_slot);
            manager.unpin(reader_slot);
        })
    };
    for handle in [rolling_back, reader] {
        handle.join().unwrap();
    }
}

#[test]
fn a_statement_bound_never_drops_while_a_kicked_transaction_rolls_back() {
    shuttle::check_random(kicked_roll_back_scenario, ITERATIONS);
    shuttle::check_pct(kicked_roll_back_scenario, ITERATIONS, 3);
}

#[test]
fn only_idle_transactions_are_kicked() {
    shuttle::check_random(
        || {
            let manager = Arc::new(EpochManager::new(2, 1, 2));
            let slot = manager.register().unwrap();
            let pinned = manager.pin(slot);
            manager.suspend(slot, pinned);
            let ticker = {
                let manager = Arc::clone(&manager);
                thread::spawn(move || {
                    for _ in 0..6 {
                        manager.advance();
                    }
                })
            };
            // The client comes back at some point: either it re-enters before the kick, and
            // from then on holds reclamation back, or it finds itself kicked.
            thread::yield_now();
            match manager.resume(slot, pinned) {
                Ok(()) => {
                    ticker.join().unwrap();
                    assert_eq!(
                        manager.reclaim_bound(),
                        pinned,
                        "a transaction in a call is never kicked"
                    );
                }
                Err(_) => {
                    ticker.join().unwrap();
                    assert!(manager.kicked_total() == 1);
                }
            }
            manager.unpin(slot);
        },
        ITERATIONS,
    );
}

/// MV2PL's lock word: a reader under a read lock never sees a writer's half-done change (two
/// words that every writer changes together, with a scheduling point between), writers exclude
/// each other, and an upgrade by the only reader excludes the rest. Refused locks are retried.
#[test]
fn two_phase_words_exclude_writers_from_readers_and_each_other() {
    shuttle::check_random(
        || {
            let lock = Arc::new(TwoPhaseWord::new());
            let pair = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
            let writes = Arc::new(AtomicU64::new(0));
            let threads: Vec<_> = (0..4)
                .map(|thread| {
                    let (lock, pair, writes) =
                        (Arc::clone(&lock), Arc::clone(&pair), Arc::clone(&writes));
                    thread::spawn(move || {
                        for _ in 0..2 {
                            match thread % 3 {
                                // A reader.
                                0 => {
                                    if lock.read_lock().is_ok() {
                                        let first = pair.0.load(Ordering::Relaxed);
                                        thread::yield_now();
                                        assert_eq!(pair.1.load(Ordering::Relaxed), first);
                                        lock.read_unlock();
                                    }
                                }
                                // A writer, or a reader that upgrades.
                                kind => {
                                    let upgrade = kind == 2 && lock.read_lock().is_ok();
                                    match lock.write_lock(upgrade) {
                                        Ok(()) => {
                                            let seen = pair.0.load(Ordering::Relaxed);
                                            pair.0.store(seen + 1, Ordering::Relaxed);
                                            thread::yield_now();
                                            pair.1.store(seen + 1, Ordering::Relaxed);
                                            writes.fetch_add(1, Ordering::Relaxed);
                                            lock.write_unlock();
                                        }
                                        Err(refusal) => {
                                            assert_eq!(refusal, Refused::Held);
                                            if upgrade {
                                                lock.read_unlock();
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            let done = writes.load(Ordering::Relaxed);
            assert_eq!(pair.0.load(Ordering::Relaxed), done, "a write was lost");
            assert_eq!(pair.1.load(Ordering::Relaxed), done);
            assert!(!lock.is_held(), "every lock was given back");
        },
        ITERATIONS,
    );
}

/// MVTO's words: a reader with a later timestamp than a writer either is refused, or reads a
/// state the writer's install cannot replace afterwards (the writer is then refused), so a
/// version read at timestamp 7 is never overwritten by the transaction with timestamp 5.
#[test]
fn timestamp_words_never_let_an_earlier_writer_replace_a_later_read() {
    shuttle::check_random(
        || {
            let words = Arc::new(TimestampWords::new());
            let version = Arc::new(AtomicU64::new(0));
            let writer = {
                let (words, version) = (Arc::clone(&words), Arc::clone(&version));
                thread::spawn(move || match words.write_lock(5, true) {
                    Ok(()) => {
                        thread::yield_now();
                        version.store(5, Ordering::SeqCst);
                        words.write_unlock();
                        true
                    }
                    Err(_) => false,
                })
            };
            let readers: Vec<_> = [3u64, 7]
                .into_iter()
                .map(|ts| {
                    let (words, version) = (Arc::clone(&words), Arc::clone(&version));
                    thread::spawn(move || {
                        words.read_current(ts).ok().map(|()| (ts, version.load(Ordering::SeqCst)))
                    })
                })
                .collect();
            let installed = writer.join().unwrap();
            for reader in readers {
                if let Some((7, seen)) = reader.join().unwrap() {
                    assert!(
                        !(installed && seen == 0),
                        "timestamp 7 read the old version and timestamp 5 replaced it"
                    );
                }
            }
            assert!(!words.is_owned());
            assert!(words.read_ts() <= 7);
        },
        ITERATIONS,
    );
}

/// Threads that each hold a reference to a non-inline value take and drop more, reading the
/// value while they hold one; whatever the interleaving, the value stays intact while held and
/// is freed exactly once, by the last release (the debug build's live-value count).
#[test]
fn a_shared_value_is_freed_once_by_its_last_holder() {
    use engram_engine::storage::shared;
    shuttle::check_random(
        || {
            let before = shared::live_values();
            let handle = shared::new_value(b"attribute");
            // One reference per thread, taken by the creator for each.
            for _ in 1..3 {
                // SAFETY: the creator holds a reference.
                unsafe { shared::retain(handle) };
            }
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    thread::spawn(move || {
                        // SAFETY: this thread holds a reference until its last release.
                        unsafe {
                            shared::retain(handle);
                            assert_eq!(shared::value(handle), b"attribute");
                            shared::release(handle);
                            assert_eq!(shared::value(handle), b"attribute");
                            shared::release(handle);
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            assert_eq!(shared::live_values(), before);
        },
        ITERATIONS,
    );
}
