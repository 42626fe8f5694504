//! Runs every anomaly script at every level it names, and checks that docs/isolation.md's
//! table says exactly what the scripts show.

use engram_testkit::script::{Script, load_folder, parse_table};
use std::path::Path;

fn scripts() -> Vec<(String, Script)> {
    load_folder(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/anomalies"))
}

#[test]
fn every_script_behaves_as_written_at_every_level() {
    let mut failures = Vec::new();
    for (file, script) in scripts() {
        for &level in &script.levels {
            let run = script.run(level);
            failures.extend(script.failures(&file, &run, false));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_documented_table_matches_the_scripts() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/isolation.md"),
    )
    .expect("docs/isolation.md");
    let table = parse_table(&doc);
    let scripts = scripts();
    for (file, script) in &scripts {
        let row = table
            .get(&script.row)
            .unwrap_or_else(|| panic!("{file}: docs/isolation.md has no row {:?}", script.row));
        for &level in &script.levels {
            let documented = row.get(&level).copied();
            let shown = script.allowed.contains(&level);
            assert_eq!(
                documented,
                Some(shown),
                "{file}: row {:?}, level {}",
                script.row,
                level.name()
            );
        }
        for level in row.keys() {
            assert!(
                script.levels.contains(level),
                "{file}: the table has {} but the script does not run it",
                level.name()
            );
        }
    }
    for row in table.keys() {
        assert!(
            scripts.iter().any(|(_, script)| &script.row == row),
            "no script decides the row {row:?}"
        );
    }
}
