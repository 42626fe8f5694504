//! The crash harness: a child process runs a workload on a data directory and prints a line
//! for every commit once it is durable (acknowledged); the parent kills it with SIGKILL at a
//! random moment, recovers the directory in-process, and checks that every acknowledged commit
//! is there and that no partial transaction is visible. Then the next child recovers the same
//! directory and goes on, so every cycle also recovers what earlier recoveries wrote.
//!
//! Workloads: `bank` (transfers between 64 accounts; each transfer also inserts a row naming
//! its accounts and amount, so the balances must equal the initial ones plus the transfer rows,
//! exactly) and `tpcc` (one small warehouse, the standard mix; TPC-C's consistency conditions
//! 1-4 must hold and every acknowledged NewOrder's order must exist). The child also takes
//! checkpoints now and then, so crashes hit them too.

use clap::Args;
use engram_bench::db::{Db, Outcome};
use engram_bench::tpcc::TpccDb;
use engram_bench::tpcc::engram::{EngramTpcc, ReadOnlyLevels};
use engram_bench::tpcc::spec::{
    Constants, DeliveryInput, NewOrderInput, OrderStatusInput, Output, PaymentInput, Scale,
    StockLevelInput,
};
use engram_engine::{
    Config, Database, Durability, Error, Isolation, KeyBuilder, TableRef, TableSpec,
};
use rand::{RngExt, SeedableRng, rngs::SmallRng};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACCOUNTS: u64 = 64;
const INITIAL_BALANCE: i64 = 1_000;
const WORKERS: u64 = 2;

#[derive(Args)]
pub struct CrashArgs {
    /// Kill-and-recover cycles per workload.
    #[arg(long, default_value_t = 10)]
    cycles: u32,
    /// bank | tpcc | both
    #[arg(long, default_value = "both")]
    workload: String,
    /// Where the data directories go (default: a fresh directory under the system's temp
    /// directory, removed afterwards unless --keep).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Longest a child runs before it is killed, in milliseconds (each run is random, from a
    /// tenth of this up).
    #[arg(long, default_value_t = 800)]
    max_run_ms: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the data directories.
    #[arg(long)]
    keep: bool,
}

#[derive(Args)]
pub struct ChildArgs {
    #[arg(long)]
    data: PathBuf,
    #[arg(long)]
    workload: String,
    /// The cycle number: keys written by this child include it.
    #[arg(long)]
    cycle: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn config(data: &Path) -> Config {
    Config {
        data_dir: Some(data.to_path_buf()),
        durability: Durability::Epoch,
        epoch_interval_ms: 10,
        snapshot_interval_epochs: 5,
        segment_bytes: 1 << 20,
        checkpoint_log_bytes: 0,
        // Small parts on two threads, so that the checkpoints the harness takes split their
        // larger tables into key ranges, and recovery loads them in parallel.
        checkpoint_part_rows: 16 << 10,
        checkpoint_threads: 2,
        index_keys: Some(engram_bench::tpcc::engram::index_keys()),
        ..Config::default()
    }
}

fn tpcc_scale() -> Scale {
    Scale {
        warehouses: 1,
        items: 1_000,
        customers_per_district: 30,
        orders_per_district: 30,
        new_orders_per_district: 9,
    }
}

fn account_key(id: u64) -> Vec<u8> {
    KeyBuilder::new().u64(id).finish()
}

fn transfer_key(cycle: u32, worker: u64, sequence: u64) -> Vec<u8> {
    KeyBuilder::new().u64(u64::from(cycle)).u64(worker).u64(sequence).finish()
}

/// Prints acknowledgements (one line each) as commits become durable.
struct Acks {
    waiting: VecDeque<(u64, String)>,
}

impl Acks {
    fn settle(&mut self, db: &Database, out: &Mutex<std::io::Stdout>) {
        let durable = db.durable_epoch().0;
        let mut lines = String::new();
        while let Some((epoch, _)) = self.waiting.front() {
            if *epoch > durable {
                break;
            }
            lines += &self.waiting.pop_front().expect("front").1;
            lines.push('\n');
        }
        if !lines.is_empty() {
            let mut out = out.lock().unwrap();
            // A failed write means the parent is gone: nothing to acknowledge to.
            let _ = out.write_all(lines.as_bytes());
            let _ = out.flush();
        }
    }
}

/// The workload process.
pub fn child(args: ChildArgs) -> Result<(), String> {
    // Odd cycles log updates as patches (format 4), even ones as whole rows, so that every
    // recovery after the first replays a log holding both.
    let config = Config { log_patches: args.cycle % 2 == 1, ..config(&args.data) };
    let db = Arc::new(Database::open(config).map_err(|error| error.to_string())?);
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let stop = Arc::new(AtomicBool::new(false));
    // Checkpoints now and then, so that crashes land in them too.
    let checkpointer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(150));
                let _ = db.checkpoint();
            }
        })
    };
    let result = match args.workload.as_str() {
        "bank" => bank_child(&db, &out, args.cycle, args.seed),
        "tpcc" => tpcc_child(&db, &out, args.cycle, args.seed),
        other => Err(format!("unknown workload {other:?}")),
    };
    stop.store(true, Ordering::Relaxed);
    let _ = checkpointer.join();
    result
}

fn ready(out: &Mutex<std::io::Stdout>) {
    let mut out = out.lock().unwrap();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
}

fn bank_child(
    db: &Arc<Database>,
    out: &Arc<Mutex<std::io::Stdout>>,
    cycle: u32,
    seed: u64,
) -> Result<(), String> {
    let (accounts, transfers) = match (db.table("accounts"), db.table("transfers")) {
        (Ok(accounts), Ok(transfers)) => (accounts, transfers),
        _ => {
            let accounts =
                db.create_table(TableSpec::new("accounts")).map_err(|e| e.to_string())?;
            let transfers =
                db.create_table(TableSpec::new("transfers")).map_err(|e| e.to_string())?;
            let mut worker = db.worker().map_err(|e| e.to_string())?;
            worker
                .transaction(Isolation::Serializable, |txn| {
                    for id in 0..ACCOUNTS {
                        txn.insert(&accounts, &account_key(id), &INITIAL_BALANCE.to_le_bytes())?;
                    }
                    Ok(())
                })
                .map_err(|e| e.to_string())?;
            worker.wait_durable().map_err(|e| e.to_string())?;
            (accounts, transfers)
        }
    };
    ready(out);
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (db, out, accounts, transfers) =
                (Arc::clone(db), Arc::clone(out), Arc::clone(&accounts), Arc::clone(&transfers));
            std::thread::spawn(move || -> Result<(), String> {
                let mut worker = db.worker().map_err(|e| e.to_string())?;
                let mut random = SmallRng::seed_from_u64(seed ^ (u64::from(cycle) << 8) ^ w);
                let mut acks = Acks { waiting: VecDeque::new() };
                for sequence in 0.. {
                    let from = random.random_range(0..ACCOUNTS);
                    let to = (from + random.random_range(1..ACCOUNTS)) % ACCOUNTS;
                    let amount: i64 = random.random_range(1..=50);
                    let mut record = Vec::with_capacity(24);
                    record.extend_from_slice(&from.to_le_bytes());
                    record.extend_from_slice(&to.to_le_bytes());
                    record.extend_from_slice(&amount.to_le_bytes());
                    let key = transfer_key(cycle, w, sequence);
                    worker
                        .transaction(Isolation::Serializable, |txn| {
                            for (account, delta) in [(from, -amount), (to, amount)] {
                                let key = account_key(account);
                                let balance = i64::from_le_bytes(
                                    txn.get(&accounts, &key)?
                                        .ok_or(Error::NotFound)?
                                        .try_into()
                                        .unwrap(),
                                );
                                txn.update(&accounts, &key, &(balance + delta).to_le_bytes())?;
                            }
                            txn.insert(&transfers, &key, &record)
                        })
                        .map_err(|e| e.to_string())?;
                    acks.waiting.push_back((
                        worker.last_commit().epoch.0,
                        format!("ack bank {cycle} {w} {sequence}"),
                    ));
                    if sequence % 64 == 63 {
                        // Paced by durability, like a client that waits for its commits: the
                        // tables stay small enough to check after every one of many crashes.
                        worker.wait_durable().map_err(|e| e.to_string())?;
                    }
                    acks.settle(&db, &out);
                }
                Ok(())
            })
        })
        .collect();
    for handle in handles {
        handle.join().map_err(|_| "worker panicked".to_string())??;
    }
    Ok(())
}

fn constants() -> Constants {
    Constants::generate(&mut SmallRng::seed_from_u64(42))
}

fn tpcc_child(
    db: &Arc<Database>,
    out: &Arc<Mutex<std::io::Stdout>>,
    cycle: u32,
    seed: u64,
) -> Result<(), String> {
    let scale = tpcc_scale();
    let constants = constants();
    let mut tpcc = EngramTpcc::over(Arc::clone(db), ReadOnlyLevels::Specification);
    if db.table("warehouse").is_ok() {
        tpcc.attach(&scale, (cycle as u16).wrapping_mul(WORKERS as u16))?;
    } else {
        tpcc.load(&scale, &constants, 1)?;
        tpcc.attach(&scale, (cycle as u16).wrapping_mul(WORKERS as u16))?;
        db.checkpoint().map_err(|e| e.to_string())?;
    }
    ready(out);
    let tpcc = Arc::new(tpcc);
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (db, out, tpcc) = (Arc::clone(db), Arc::clone(out), Arc::clone(&tpcc));
            std::thread::spawn(move || -> Result<(), String> {
                let mut conn = tpcc.connect()?;
                let mut random = SmallRng::seed_from_u64(seed ^ (u64::from(cycle) << 8) ^ w);
                let mut acks = Acks { waiting: VecDeque::new() };
                let mut output = Output::default();
                loop {
                    let choice = random.random_range(0..100);
                    let (outcome, order) = if choice < 45 {
                        let input = NewOrderInput::generate(&mut random, &scale, &constants, 1);
                        let outcome = tpcc.new_order(&mut conn, &input, &mut output);
                        (outcome, Some((input.district, output.order)))
                    } else if choice < 88 {
                        let input = PaymentInput::generate(&mut random, &scale, &constants, 1);
                        (tpcc.payment(&mut conn, &input, &mut output), None)
                    } else if choice < 92 {
                        let input = OrderStatusInput::generate(&mut random, &scale, &constants, 1);
                        (tpcc.order_status(&mut conn, &input, &mut output), None)
                    } else if choice < 96 {
                        let input = DeliveryInput::generate(&mut random, 1);
                        (tpcc.delivery(&mut conn, &input, &mut output), None)
                    } else {
                        let input = StockLevelInput::generate(&mut random, 1);
                        (tpcc.stock_level(&mut conn, &input, &mut output), None)
                    };
                    if outcome != Outcome::Committed {
                        continue;
                    }
                    if let Some((district, order)) = order {
                        let epoch = tpcc.last_commit_epoch(&conn).unwrap_or(0);
                        acks.waiting
                            .push_back((epoch, format!("ack tpcc {cycle} 1 {district} {order}")));
                    }
                    acks.settle(&db, &out);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().map_err(|_| "worker panicked".to_string())??;
    }
    Ok(())
}

/// What the parent collected from one child.
#[derive(Default)]
struct Collected {
    ready: bool,
    acks: Vec<String>,
}

/// The parent: cycles of run, kill, recover, check.
pub fn run(args: CrashArgs) -> Result<(), String> {
    let workloads: Vec<&str> = match args.workload.as_str() {
        "both" => vec!["bank", "tpcc"],
        "bank" => vec!["bank"],
        "tpcc" => vec!["tpcc"],
        other => return Err(format!("unknown workload {other:?}: use bank, tpcc or both")),
    };
    let root = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("engram-crash-{}-{}", std::process::id(), args.seed))
    });
    let exe = std::env::current_exe().map_err(|error| error.to_string())?;
    let mut random = SmallRng::seed_from_u64(args.seed);
    for workload in workloads {
        let data = root.join(workload);
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).map_err(|error| error.to_string())?;
        let mut acknowledged: Vec<String> = Vec::new();
        let mut totals = (0u64, 0u64);
        for cycle in 0..args.cycles {
            let mut child = Command::new(&exe)
                .args([
                    "crash-child",
                    "--workload",
                    workload,
                    "--cycle",
                    &cycle.to_string(),
                    "--seed",
                    &args.seed.to_string(),
                    "--data",
                ])
                .arg(&data)
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|error| format!("cannot start the child: {error}"))?;
            let stdout = child.stdout.take().expect("piped");
            let collected = Arc::new(Mutex::new(Collected::default()));
            let reader = {
                let collected = Arc::clone(&collected);
                std::thread::spawn(move || {
                    for line in BufReader::new(stdout).lines() {
                        let Ok(line) = line else { break };
                        let mut collected = collected.lock().unwrap();
                        if line == "ready" {
                            collected.ready = true;
                        } else if line.starts_with("ack ") {
                            collected.acks.push(line);
                        }
                    }
                })
            };
            let started = Instant::now();
            while !collected.lock().unwrap().ready {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "{workload} cycle {cycle}: the child exited before it was ready: {status}"
                    ));
                }
                if started.elapsed() > Duration::from_secs(120) {
                    let _ = child.kill();
                    return Err(format!("{workload} cycle {cycle}: the child never became ready"));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let run_ms = random.random_range(args.max_run_ms / 10..=args.max_run_ms.max(1));
            std::thread::sleep(Duration::from_millis(run_ms));
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "{workload} cycle {cycle}: the child died on its own: {status}"
                ));
            }
            child.kill().map_err(|error| error.to_string())?; // SIGKILL
            let _ = child.wait();
            let _ = reader.join();
            let new_acks = std::mem::take(&mut collected.lock().unwrap().acks);
            totals.0 += new_acks.len() as u64;
            acknowledged.extend(new_acks);
            let verified = verify(workload, &data, &acknowledged).map_err(|error| {
                format!("{workload} cycle {cycle} (killed after {run_ms} ms): {error}")
            })?;
            totals.1 = verified;
            println!(
                "{workload} cycle {}/{}: killed after {run_ms} ms; {} commits acknowledged so far, all present; {verified} rows checked",
                cycle + 1,
                args.cycles,
                acknowledged.len()
            );
        }
        println!(
            "{workload}: {} cycles, {} acknowledged commits survived every crash",
            args.cycles, totals.0
        );
    }
    if !args.keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}

/// Recovers `data` and checks it against the acknowledged commits; returns rows checked.
fn verify(workload: &str, data: &Path, acknowledged: &[String]) -> Result<u64, String> {
    let db = Arc::new(
        Database::open(config(data)).map_err(|error| format!("recovery failed: {error}"))?,
    );
    match workload {
        "bank" => verify_bank(&db, acknowledged),
        _ => verify_tpcc(&db, acknowledged),
    }
}

fn verify_bank(db: &Database, acknowledged: &[String]) -> Result<u64, String> {
    let accounts: TableRef = db.table("accounts").map_err(|e| e.to_string())?;
    let transfers: TableRef = db.table("transfers").map_err(|e| e.to_string())?;
    let mut worker = db.worker().map_err(|e| e.to_string())?;
    let (balances, moved) = worker
        .transaction(Isolation::Serializable, |txn| {
            let mut balances = HashMap::new();
            txn.scan(
                &accounts,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                engram_engine::Direction::Forward,
                usize::MAX,
                |key, value| {
                    balances.insert(key.to_vec(), i64::from_le_bytes(value.try_into().unwrap()));
                    true
                },
            )?;
            let mut moved: Vec<(Vec<u8>, u64, u64, i64)> = Vec::new();
            txn.scan(
                &transfers,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                engram_engine::Direction::Forward,
                usize::MAX,
                |key, value| {
                    let field =
                        |at: usize| u64::from_le_bytes(value[at..at + 8].try_into().unwrap());
                    moved.push((key.to_vec(), field(0), field(8), field(16) as i64));
                    true
                },
            )?;
            Ok((balances, moved))
        })
        .map_err(|e| e.to_string())?;
    if balances.len() as u64 != ACCOUNTS {
        return Err(format!("{} accounts instead of {ACCOUNTS}", balances.len()));
    }
    let mut expected: HashMap<Vec<u8>, i64> =
        (0..ACCOUNTS).map(|id| (account_key(id), INITIAL_BALANCE)).collect();
    for (_, from, to, amount) in &moved {
        *expected.get_mut(&account_key(*from)).ok_or("a transfer names an unknown account")? -=
            amount;
        *expected.get_mut(&account_key(*to)).ok_or("a transfer names an unknown account")? +=
            amount;
    }
    if expected != balances {
        return Err("balances differ from the initial ones plus the recorded transfers: a partial transaction".into());
    }
    let total: i64 = balances.values().sum();
    if total != ACCOUNTS as i64 * INITIAL_BALANCE {
        return Err(format!("total balance {total}"));
    }
    let present: HashSet<Vec<u8>> = moved.into_iter().map(|(key, ..)| key).collect();
    // A worker's commits are acknowledged in order: the newest acknowledgement of each
    // (cycle, worker) implies all of its earlier transfers.
    let mut newest: HashMap<(u64, u64), u64> = HashMap::new();
    for ack in acknowledged {
        let fields: Vec<u64> =
            ack.split(' ').skip(2).map(|field| field.parse().unwrap_or(u64::MAX)).collect();
        let entry = newest.entry((fields[0], fields[1])).or_default();
        *entry = (*entry).max(fields[2]);
    }
    for ((cycle, worker), last) in newest {
        for sequence in 0..=last {
            if !present.contains(&transfer_key(cycle as u32, worker, sequence)) {
                return Err(format!(
                    "acknowledged commit lost: transfer {sequence} of worker {worker} in cycle {cycle}"
                ));
            }
        }
    }
    Ok(present.len() as u64 + ACCOUNTS)
}

fn verify_tpcc(db: &Arc<Database>, acknowledged: &[String]) -> Result<u64, String> {
    let mut tpcc = EngramTpcc::over(Arc::clone(db), ReadOnlyLevels::Specification);
    tpcc.attach(&tpcc_scale(), u16::MAX - 8)?;
    let mut conn = tpcc.connect()?;
    let facts = tpcc.facts(&mut conn)?;
    let violations = facts.violations();
    if !violations.is_empty() {
        return Err(format!("TPC-C consistency: {}", violations.join("; ")));
    }
    for ack in acknowledged {
        let fields: Vec<u32> =
            ack.split(' ').skip(3).map(|field| field.parse().unwrap_or(u32::MAX)).collect();
        if !tpcc.order_exists(&mut conn, fields[0] as u16, fields[1] as u8, fields[2])? {
            return Err(format!("acknowledged NewOrder lost: {ack}"));
        }
    }
    Ok(acknowledged.len() as u64)
}
