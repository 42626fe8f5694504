//! `engram bench ddl`: the time of each ALTER TABLE on tables of the given sizes, on Engram,
//! SQLite and servers over the wire (`engram_bench::ddl`).

use clap::Args;
use engram_bench::ddl::{self, Target};
use engram_bench::report::{Machine, write_json};
use std::path::PathBuf;

#[derive(Args)]
pub struct DdlArgs {
    /// Table sizes in rows, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000000")]
    rows: Vec<u64>,
    /// Databases, comma-separated: engram (in process), sqlite (in process, in memory), or
    /// postgres://user@host:port/db (PostgreSQL, or engram serve, over the wire).
    #[arg(long, value_delimiter = ',', default_value = "engram,sqlite")]
    db: Vec<String>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn target(name: &str) -> Result<Box<dyn Target>, String> {
    Ok(match name {
        "engram" => Box::new(ddl::Engram::open()?),
        "sqlite" => Box::new(ddl::Sqlite::open()?),
        url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Box::new(ddl::Wire::connect(url)?)
        }
        other => return Err(format!("unknown --db {other:?}: engram, sqlite or postgres://...")),
    })
}

pub fn run(args: DdlArgs) -> Result<(), String> {
    let mut runs = Vec::new();
    for &rows in &args.rows {
        for name in &args.db {
            let mut target = target(name)?;
            let run = ddl::run(target.as_mut(), rows)?;
            println!("{} | {} rows (loaded in {:.1} s)", run.db, rows, run.load_s);
            for timing in &run.timings {
                let time = match (&timing.ms, &timing.error) {
                    (Some(ms), _) => format!("{ms:>10.3} ms"),
                    (None, Some(error)) => format!("     error: {error}"),
                    (None, None) => "         -   (no such statement)".to_string(),
                };
                println!("  {time}  {}", timing.statement);
            }
            runs.push(run);
        }
    }
    if let Some(path) = &args.json {
        write_json(path, &ddl::Report { benchmark: "ddl", runs, machine: Machine::describe() })?;
    }
    Ok(())
}
