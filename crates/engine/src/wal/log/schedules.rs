//! Randomized schedules (shuttle) of group commit: loggers, flushers and waiters.

use super::*;
use crate::sync::Tid;
use crate::sync::shim::fence;
use crate::wal::storage::FaultyStorage;
use shuttle::thread;
use std::collections::BTreeSet;

/// Every transaction that has left its commit, acknowledged or not yet: `(epoch, key)`.
type Committed = Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

const WORKERS: usize = 2;
const COMMITS: u8 = 6;
const TABLE: u32 = 9;

/// What a crash now recovers for certain: the durable epoch recovery would compute, and
/// the keys of the records at or below it.
fn recoverable(storage: &FaultyStorage, loggers: usize) -> (u64, BTreeSet<Vec<u8>>) {
    let mut durable = u64::MAX;
    let mut records = Vec::new();
    for logger in 0..loggers {
        let mut segments: Vec<(u64, Vec<u8>)> = storage
            .paths()
            .into_iter()
            .filter_map(|path| {
                let (_, of, sequence) = parse_segment_name(path.strip_prefix("wal/")?)?;
                let bytes = storage.durable_bytes(&path)?;
                (of == logger).then_some((sequence, bytes))
            })
            .collect();
        segments.sort();
        let mut last_mark = None;
        for (_, data) in &segments {
            let version = format::file_version(data);
            let mut reader = format::BlockReader::segment(data);
            while let Some(block) = reader.next_block().expect("synced blocks are whole") {
                last_mark = Some(block.mark);
                format::decode_log_payload(&block.payload, version, |tid, writes| {
                    let epoch = Tid::from_u64(tid).epoch().0;
                    records.extend(writes.iter().map(|write| (epoch, write.key.to_vec())));
                })
                .expect("logged records parse");
            }
        }
        durable = durable.min(last_mark.expect("a logger's first segment holds a mark"));
    }
    let keys = records.into_iter().filter(|&(epoch, _)| epoch <= durable);
    (durable, keys.map(|(_, key)| key).collect())
}

/// One run with `loggers` loggers and segments of two pages (so loggers move to new
/// segments as they go); with `fail_after`, the disk fails from that operation on.
fn group_commit(loggers: usize, fail_after: Option<u64>) {
    let storage = FaultyStorage::new(7);
    let manager = Arc::new(EpochManager::new(WORKERS, 1, 1_000));
    let segment_bytes = 2 * format::PAGE_BYTES as u64;
    let log = Arc::new(Log::new(
        Arc::new(storage.clone()),
        WORKERS,
        loggers,
        Epoch(0),
        1,
        false,
        segment_bytes,
    ));
    let segments: Vec<Segment> = (0..loggers)
        .map(|me| Segment::create(&log, me, loggers, 0, 0).expect("a first segment"))
        .collect();
    if let Some(operations) = fail_after {
        storage.fail_after(operations);
    }
    let logger_threads: Vec<_> = segments
        .into_iter()
        .enumerate()
        .map(|(me, segment)| {
            let (log, manager) = (Arc::clone(&log), Arc::clone(&manager));
            thread::spawn(move || {
                run_logger(&log, &manager, me, Some(segment), Duration::from_millis(1), &|| Ok(()))
            })
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let committed: Committed = Arc::default();
    let ticker = {
        let (manager, done) = (Arc::clone(&manager), Arc::clone(&done));
        thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                manager.advance();
                thread::yield_now();
            }
        })
    };
    let checker = {
        let (log, storage, done) = (Arc::clone(&log), storage.clone(), Arc::clone(&done));
        let committed = Arc::clone(&committed);
        thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let published = log.durable().0;
                // Commits of epochs up to `published` all left their commit before it
                // was published, whenever they were listed.
                let covered: Vec<(u64, Vec<u8>)> = lock(&committed)
                    .iter()
                    .filter(|(epoch, _)| *epoch <= published)
                    .cloned()
                    .collect();
                let (recovered, keys) = recoverable(&storage, loggers);
                assert!(
                    recovered >= published,
                    "the log published durable epoch {published}, a crash recovers {recovered}"
                );
                for (epoch, key) in covered {
                    assert!(
                        keys.contains(&key),
                        "durable epoch {published} published, but a crash loses commit \
                         {key:?} of epoch {epoch}"
                    );
                }
                thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (0..WORKERS)
        .map(|worker| {
            let (log, manager, storage) = (Arc::clone(&log), Arc::clone(&manager), storage.clone());
            let committed = Arc::clone(&committed);
            thread::spawn(move || {
                let slot = manager.register().expect("a free slot");
                for commit in 0..COMMITS {
                    if log.check().is_err() {
                        break;
                    }
                    let pinned = manager.pin(slot);
                    manager.enter_commit(slot, pinned);
                    fence(Ordering::SeqCst);
                    let epoch = manager.global();
                    let key = vec![worker as u8, commit];
                    let tid = Tid::new(epoch, u64::from(commit) + 1);
                    log.append(slot.index(), |out| {
                        format::encode_txn_head(out, tid.as_u64(), 1);
                        format::encode_write(out, TABLE, &key, Some(b"row"));
                    });
                    manager.leave_commit(slot);
                    manager.unpin(slot);
                    lock(&committed).push((epoch.0, key.clone()));
                    // One worker blocks, the other polls the future, as a server does.
                    let waited = if worker == 0 {
                        log.wait(epoch)
                    } else {
                        let watcher = DurabilityWatcher { log: Some(Arc::clone(&log)) };
                        shuttle::future::block_on(watcher.durable_future(epoch))
                    };
                    if let Err(error) = waited {
                        assert!(fail_after.is_some(), "the log failed on a sound disk: {error}");
                        break;
                    }
                    let (recovered, keys) = recoverable(&storage, loggers);
                    assert!(
                        recovered >= epoch.0 && keys.contains(&key),
                        "commit {key:?} of epoch {epoch:?} acknowledged, but a crash now \
                         recovers durable epoch {recovered} and {} records",
                        keys.len()
                    );
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    done.store(true, Ordering::SeqCst);
    ticker.join().expect("ticker");
    checker.join().expect("checker");
    log.stop.store(true, Ordering::Release);
    for logger in logger_threads {
        logger.join().expect("logger");
    }
    if fail_after.is_none() {
        assert!(log.check().is_ok());
        assert!(log.durable().0 > 0, "the loggers published what the workers waited for");
    }
}

/// One run of the hand-off alone: a blocking waiter and a polling one wait for epoch 1
/// while a logger publishes it (or the log fails). In the whole group commit above, a
/// later round's publication would wake a waiter that a lost wake-up left asleep; here
/// nothing else runs, so shuttle reports it as a deadlock.
fn hand_off(fails: bool) {
    let storage = Arc::new(FaultyStorage::new(1));
    let log = Arc::new(Log::new(storage, 1, 1, Epoch(0), 1, false, 1 << 20));
    let blocking = {
        let log = Arc::clone(&log);
        thread::spawn(move || log.wait(Epoch(1)))
    };
    let polling = {
        let watcher = DurabilityWatcher { log: Some(Arc::clone(&log)) };
        thread::spawn(move || shuttle::future::block_on(watcher.durable_future(Epoch(1))))
    };
    if fails {
        log.fail("no space left on device".into(), true);
    } else {
        log.publish(0, 1);
    }
    for waiter in [blocking, polling] {
        let answer = waiter.join().expect("waiter");
        assert_eq!(answer.is_err(), fails, "{answer:?}");
    }
}

const ITERATIONS: usize = 1_000;

#[test]
fn a_waiter_is_woken_whether_it_waits_before_or_after_the_publication() {
    for fails in [false, true] {
        shuttle::check_random(move || hand_off(fails), ITERATIONS);
        shuttle::check_pct(move || hand_off(fails), ITERATIONS, 3);
    }
}

#[test]
fn one_logger_acknowledges_only_what_a_crash_recovers() {
    shuttle::check_random(|| group_commit(1, None), ITERATIONS);
    shuttle::check_pct(|| group_commit(1, None), ITERATIONS, 3);
}

#[test]
fn two_loggers_acknowledge_only_what_both_marks_cover() {
    shuttle::check_random(|| group_commit(2, None), ITERATIONS);
    shuttle::check_pct(|| group_commit(2, None), ITERATIONS, 3);
}

#[test]
fn a_failing_disk_answers_every_waiter_and_acknowledges_only_what_it_kept() {
    for operations in [0, 1, 2, 4, 7] {
        shuttle::check_random(move || group_commit(2, Some(operations)), ITERATIONS / 3);
    }
}
