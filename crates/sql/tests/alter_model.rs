//! ALTER TABLE against a model: random sequences of ADD COLUMN (with and without defaults),
//! DROP COLUMN, RENAME COLUMN, type widenings and rewrites, SET/DROP DEFAULT, interleaved with
//! INSERT, UPDATE and DELETE, and restarts from the data directory. After every step the table
//! reads as the model says; a second session that began before the steps keeps reading the
//! version it began with.

use engram_sql::{Outcome, SqlDb};
use proptest::prelude::*;

/// A column of the model: its name, whether it holds text, and its default.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    text: bool,
    default: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Model {
    columns: Vec<Column>,
    /// id -> the other columns' values as the database prints them.
    rows: std::collections::BTreeMap<i64, Vec<Option<String>>>,
    next_name: usize,
}

#[derive(Debug, Clone)]
enum Step {
    Add { text: bool, default: Option<i64> },
    Drop(usize),
    Rename(usize),
    Widen(usize),
    ToText(usize),
    SetDefault(usize, Option<i64>),
    Insert(i64, Vec<Option<i64>>),
    Update(i64, usize, Option<i64>),
    Delete(i64),
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (any::<bool>(), proptest::option::of(0..100i64))
            .prop_map(|(text, default)| Step::Add { text, default }),
        1 => (0..8usize).prop_map(Step::Drop),
        1 => (0..8usize).prop_map(Step::Rename),
        1 => (0..8usize).prop_map(Step::Widen),
        1 => (0..8usize).prop_map(Step::ToText),
        1 => (0..8usize, proptest::option::of(0..100i64)).prop_map(|(c, d)| Step::SetDefault(c, d)),
        4 => (0..20i64, proptest::collection::vec(proptest::option::of(0..1000i64), 0..8))
            .prop_map(|(id, values)| Step::Insert(id, values)),
        3 => (0..20i64, 0..8usize, proptest::option::of(0..1000i64))
            .prop_map(|(id, c, v)| Step::Update(id, c, v)),
        1 => (0..20i64).prop_map(Step::Delete),
        1 => Just(Step::Restart),
    ]
}

fn literal(value: Option<i64>, text: bool) -> String {
    match (value, text) {
        (None, _) => "NULL".into(),
        (Some(v), true) => format!("'s{v}'"),
        (Some(v), false) => v.to_string(),
    }
}

fn printed(value: Option<i64>, text: bool) -> Option<String> {
    value.map(|v| if text { format!("s{v}") } else { v.to_string() })
}

fn rows(outcome: Outcome) -> Vec<String> {
    outcome
        .text_rows()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn expected(model: &Model) -> Vec<String> {
    model
        .rows
        .iter()
        .map(|(id, values)| {
            std::iter::once(id.to_string())
                .chain(values.iter().map(|v| v.clone().unwrap_or_else(|| "NULL".into())))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn run(steps: Vec<Step>, dir: &std::path::Path) -> Result<(), TestCaseError> {
    let _ = std::fs::remove_dir_all(dir);
    let config =
        || engram_engine::Config { data_dir: Some(dir.to_path_buf()), ..Default::default() };
    let mut db = SqlDb::open(config()).unwrap();
    let mut session = db.session().unwrap();
    session.execute_one("CREATE TABLE m (id INT PRIMARY KEY)").unwrap();
    let mut model = Model::default();
    // A transaction that began before any ALTER: it reads the first version throughout.
    let mut old = db.session().unwrap();
    old.execute_one("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    let mut first = rows(old.execute_one("SELECT * FROM m ORDER BY id").unwrap());
    for step in steps {
        let live = |model: &Model| model.columns.len();
        match step {
            Step::Add { text, default } => {
                let name = format!("c{}", model.next_name);
                model.next_name += 1;
                let ty = if text { "TEXT" } else { "INT" };
                let clause = default
                    .map_or(String::new(), |d| format!(" DEFAULT {}", literal(Some(d), text)));
                session
                    .execute_one(&format!("ALTER TABLE m ADD COLUMN {name} {ty}{clause}"))
                    .unwrap();
                for values in model.rows.values_mut() {
                    values.push(printed(default, text));
                }
                model.columns.push(Column {
                    name,
                    text,
                    default: default.map(|d| literal(Some(d), text)),
                });
            }
            Step::Drop(c) if c < live(&model) => {
                let name = model.columns.remove(c).name;
                session.execute_one(&format!("ALTER TABLE m DROP COLUMN {name}")).unwrap();
                for values in model.rows.values_mut() {
                    values.remove(c);
                }
            }
            Step::Rename(c) if c < live(&model) => {
                let name = format!("c{}", model.next_name);
                model.next_name += 1;
                session
                    .execute_one(&format!(
                        "ALTER TABLE m RENAME COLUMN {} TO {name}",
                        model.columns[c].name
                    ))
                    .unwrap();
                model.columns[c].name = name;
            }
            Step::Widen(c) if c < live(&model) && !model.columns[c].text => {
                session
                    .execute_one(&format!(
                        "ALTER TABLE m ALTER COLUMN {} TYPE BIGINT",
                        model.columns[c].name
                    ))
                    .unwrap();
            }
            Step::ToText(c) if c < live(&model) && !model.columns[c].text => {
                // Not a widening: the table is rewritten, values become their text, under the
                // exclusive schema lock, which waits for the older transaction: it ends first.
                old.execute_one("ROLLBACK").unwrap();
                session
                    .execute_one(&format!(
                        "ALTER TABLE m ALTER COLUMN {} TYPE TEXT",
                        model.columns[c].name
                    ))
                    .unwrap();
                model.columns[c].text = true;
                model.columns[c].default = None;
                session
                    .execute_one(&format!(
                        "ALTER TABLE m ALTER COLUMN {} DROP DEFAULT",
                        model.columns[c].name
                    ))
                    .unwrap();
                old.execute_one("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
                first = rows(old.execute_one("SELECT * FROM m ORDER BY id").unwrap());
            }
            Step::SetDefault(c, default) if c < live(&model) => {
                let column = &mut model.columns[c];
                let sql = match default {
                    Some(d) => format!(
                        "ALTER TABLE m ALTER COLUMN {} SET DEFAULT {}",
                        column.name,
                        literal(Some(d), column.text)
                    ),
                    None => format!("ALTER TABLE m ALTER COLUMN {} DROP DEFAULT", column.name),
                };
                session.execute_one(&sql).unwrap();
                column.default = default.map(|d| literal(Some(d), column.text));
            }
            Step::Insert(id, values) => {
                let n = values.len().min(live(&model));
                let mut names = vec!["id".to_string()];
                let mut sql_values = vec![id.to_string()];
                let mut row = Vec::new();
                for (c, column) in model.columns.iter().enumerate() {
                    if c < n {
                        names.push(column.name.clone());
                        sql_values.push(literal(values[c], column.text));
                        row.push(printed(values[c], column.text));
                    } else {
                        row.push(column.default.as_ref().map(|d| d.trim_matches('\'').to_string()));
                    }
                }
                let result = session.execute_one(&format!(
                    "INSERT INTO m ({}) VALUES ({})",
                    names.join(", "),
                    sql_values.join(", ")
                ));
                match model.rows.entry(id) {
                    std::collections::btree_map::Entry::Occupied(_) => {
                        prop_assert_eq!(result.unwrap_err().code, "23505");
                    }
                    std::collections::btree_map::Entry::Vacant(entry) => {
                        result.unwrap();
                        entry.insert(row);
                    }
                }
            }
            Step::Update(id, c, value) if c < live(&model) => {
                let column = &model.columns[c];
                session
                    .execute_one(&format!(
                        "UPDATE m SET {} = {} WHERE id = {id}",
                        column.name,
                        literal(value, column.text)
                    ))
                    .unwrap();
                let text = column.text;
                if let Some(values) = model.rows.get_mut(&id) {
                    values[c] = printed(value, text);
                }
            }
            Step::Delete(id) => {
                session.execute_one(&format!("DELETE FROM m WHERE id = {id}")).unwrap();
                model.rows.remove(&id);
            }
            Step::Restart => {
                drop(old);
                drop(session);
                drop(db);
                db = SqlDb::open(config()).unwrap();
                session = db.session().unwrap();
                old = db.session().unwrap();
                old.execute_one("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
                first = rows(old.execute_one("SELECT * FROM m ORDER BY id").unwrap());
            }
            _ => continue,
        }
        prop_assert_eq!(
            rows(session.execute_one("SELECT * FROM m ORDER BY id").unwrap()),
            expected(&model)
        );
        // Each row's columns also read one by one, through the point-lookup path.
        if let Some((id, values)) = model.rows.iter().next() {
            for (c, column) in model.columns.iter().enumerate() {
                let got = rows(
                    session
                        .execute_one(&format!("SELECT {} FROM m WHERE id = {id}", column.name))
                        .unwrap(),
                );
                prop_assert_eq!(got, vec![values[c].clone().unwrap_or_else(|| "NULL".into())]);
            }
        }
    }
    // The transaction that began first still reads its own version's columns (or, under
    // Silo, aborts because rows changed since it read them: never a decoding error).
    match old.execute_one("SELECT * FROM m ORDER BY id") {
        Ok(outcome) => {
            let width = |row: &String| row.split('|').count();
            if let (Some(then), Some(now)) = (first.first(), rows(outcome).first()) {
                prop_assert_eq!(width(then), width(now));
            }
        }
        Err(error) => prop_assert!(error.abort.is_some(), "{error:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn alter_table_agrees_with_the_model(steps in proptest::collection::vec(step(), 1..40)) {
        let dir = std::env::temp_dir()
            .join(format!("engram-alter-model-{}-{:?}", std::process::id(), std::thread::current().id()));
        let result = run(steps, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        result?;
    }
}
