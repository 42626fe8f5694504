//! SQL golden scripts: `tests/scripts/*.sql` hold statements, each followed by its expected
//! result after a line `----`; blocks are separated by blank lines. A result is the rows (one
//! per line, columns separated by ` | `, NULL as `NULL`), `ok <command tag>`, or
//! `error <SQLSTATE>`. Lines starting with `--` are comments. `ENGRAM_BLESS=1` prints the
//! actual results instead of comparing (to review by hand, never to accept blindly).

use engram_sql::{Outcome, SqlDb};
use std::fmt::Write as _;

fn render(result: &Result<Outcome, engram_sql::SqlError>) -> String {
    match result {
        Err(error) => format!("error {}", error.code),
        Ok(Outcome::Command { tag }) => format!("ok {tag}"),
        Ok(outcome) => {
            let mut out = String::new();
            for row in outcome.text_rows() {
                let cells: Vec<String> =
                    row.into_iter().map(|v| v.unwrap_or_else(|| "NULL".into())).collect();
                // Trailing blanks (CHAR padding) are not compared.
                let _ = writeln!(out, "{}", cells.join(" | ").trim_end());
            }
            out.trim_end().to_string()
        }
    }
}

fn run_script(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let db = SqlDb::open(engram_engine::Config::default()).unwrap();
    let mut sessions = std::collections::HashMap::new();
    let mut failures = Vec::new();
    let bless = std::env::var_os("ENGRAM_BLESS").is_some();
    for block in text.split("\n\n") {
        let lines: Vec<&str> = block
            .lines()
            .filter(|l| !l.trim_start().starts_with("--") || l.starts_with("----"))
            .collect();
        if lines.iter().all(|l| l.trim().is_empty()) {
            continue;
        }
        let split = lines
            .iter()
            .position(|l| *l == "----")
            .unwrap_or_else(|| panic!("{}: block without ----: {block}", path.display()));
        let mut sql = lines[..split].join("\n");
        // `@name` at the start selects a session (default `a`).
        let mut session_name = "a".to_string();
        if let Some(rest) = sql.strip_prefix('@') {
            let (name, statement) = rest.split_once(char::is_whitespace).unwrap();
            session_name = name.to_string();
            sql = statement.to_string();
        }
        let expected = lines[split + 1..].join("\n").trim_end().to_string();
        let session = sessions.entry(session_name).or_insert_with(|| db.session().unwrap());
        let result = session.execute_one(&sql);
        let actual = render(&result);
        if bless {
            println!("{sql}\n----\n{actual}\n");
        } else if actual != expected {
            failures.push(format!(
                "{}:\n{sql}\nexpected:\n{expected}\nactual:\n{actual}\n{result:?}",
                path.display()
            ));
        }
    }
    failures
}

#[test]
fn golden_scripts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    assert!(!paths.is_empty());
    let mut failures = Vec::new();
    for path in paths {
        failures.extend(run_script(&path));
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}
