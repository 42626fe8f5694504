//! Sequences: CREATE and ALTER SEQUENCE, read here from their words (sqlparser takes CREATE
//! SEQUENCE's options in one order only and has no ALTER SEQUENCE), and identity columns'
//! options.

use super::*;

/// An option's number: an integer literal, maybe negative.
fn number(expr: &sp::Expr) -> SqlResult<i64> {
    let text = match expr {
        sp::Expr::Value(v) => v.value.to_string(),
        sp::Expr::UnaryOp { op: sp::UnaryOperator::Minus, expr } => format!("-{expr}"),
        sp::Expr::UnaryOp { op: sp::UnaryOperator::Plus, expr } => expr.to_string(),
        other => other.to_string(),
    };
    text.parse().map_err(|_| SqlError::syntax(format!("invalid sequence option value {text}")))
}

pub(super) fn options_from(options: &[sp::SequenceOptions]) -> SqlResult<Vec<SequenceOption>> {
    options
        .iter()
        .map(|option| {
            Ok(match option {
                sp::SequenceOptions::IncrementBy(n, _) => SequenceOption::Increment(number(n)?),
                sp::SequenceOptions::MinValue(n) => {
                    SequenceOption::Min(n.as_ref().map(number).transpose()?)
                }
                sp::SequenceOptions::MaxValue(n) => {
                    SequenceOption::Max(n.as_ref().map(number).transpose()?)
                }
                sp::SequenceOptions::StartWith(n, _) => SequenceOption::Start(number(n)?),
                sp::SequenceOptions::Cache(n) => SequenceOption::Cache(number(n)?),
                sp::SequenceOptions::Cycle(no) => SequenceOption::Cycle(!*no),
            })
        })
        .collect()
}

/// Whether `text` is a CREATE or ALTER SEQUENCE statement (read here: sqlparser takes the
/// options in one order only, PostgreSQL in any).
pub(super) fn is_sequence_statement(text: &str) -> bool {
    let text = without_comments(text);
    let words: Vec<String> = text.split_whitespace().take(3).map(str::to_ascii_lowercase).collect();
    match words.as_slice() {
        [verb, object, ..] if verb == "alter" || verb == "create" => {
            object == "sequence"
                || (verb == "create"
                    && matches!(object.as_str(), "temp" | "temporary")
                    && words.get(2).is_some_and(|w| w == "sequence"))
        }
        _ => false,
    }
}

/// `text` after the comments that precede it (`-- ...` lines, `/* ... */`).
fn without_comments(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix("--") {
            text = rest.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.split_once("*/").map_or("", |(_, after)| after);
        } else {
            return text;
        }
    }
}

/// The words of a statement, and their lower-case forms.
fn words(text: &str) -> (Vec<String>, Vec<String>) {
    let words: Vec<String> = without_comments(text)
        .split_whitespace()
        .map(|w| w.trim_end_matches(';').to_string())
        .filter(|w| !w.is_empty())
        .collect();
    let lower = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    (words, lower)
}

/// A relation's name as written (`"Name"` keeps its case, `public.` is dropped).
fn relation_name(raw: &str) -> String {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(quoted) => quoted.to_string(),
        None => {
            let lower = raw.to_lowercase();
            lower.strip_prefix("public.").map_or(lower.clone(), str::to_string)
        }
    }
}

/// Sequence options from `lower[at..]`, in any order, up to the first word that starts none:
/// the options and where they end.
pub(super) fn options_from_words(
    lower: &[String],
    mut at: usize,
) -> SqlResult<(Vec<SequenceOption>, usize)> {
    let value = |at: usize| -> SqlResult<i64> {
        let text =
            lower.get(at).ok_or_else(|| SqlError::syntax("a sequence option needs a value"))?;
        text.parse().map_err(|_| SqlError::syntax(format!("syntax error at or near \"{text}\"")))
    };
    let mut options = Vec::new();
    while at < lower.len() {
        let word = lower[at].as_str();
        let next = lower.get(at + 1).map(String::as_str);
        let (option, used) = match (word, next) {
            ("increment", Some("by")) => (SequenceOption::Increment(value(at + 2)?), 3),
            ("increment", _) => (SequenceOption::Increment(value(at + 1)?), 2),
            ("minvalue", _) => (SequenceOption::Min(Some(value(at + 1)?)), 2),
            ("maxvalue", _) => (SequenceOption::Max(Some(value(at + 1)?)), 2),
            ("no", Some("minvalue")) => (SequenceOption::Min(None), 2),
            ("no", Some("maxvalue")) => (SequenceOption::Max(None), 2),
            ("no", Some("cycle")) => (SequenceOption::Cycle(false), 2),
            ("cycle", _) => (SequenceOption::Cycle(true), 1),
            ("start", Some("with")) => (SequenceOption::Start(value(at + 2)?), 3),
            ("start", _) => (SequenceOption::Start(value(at + 1)?), 2),
            ("restart", Some("with")) => (SequenceOption::Restart(Some(value(at + 2)?)), 3),
            ("restart", Some(n)) if n.parse::<i64>().is_ok() => {
                (SequenceOption::Restart(Some(value(at + 1)?)), 2)
            }
            ("restart", _) => (SequenceOption::Restart(None), 1),
            ("cache", _) => (SequenceOption::Cache(value(at + 1)?), 2),
            _ => break,
        };
        options.push(option);
        at += used;
    }
    Ok((options, at))
}

/// What `OWNED BY` says: absent (`None`), `NONE` (`Some(None)`), or a table's column.
type Owned = Option<Option<(String, String)>>;

/// `OWNED BY table.column | NONE` at `at`, if there.
fn owned_from_words(words: &[String], lower: &[String], at: usize) -> SqlResult<(Owned, usize)> {
    if lower.get(at).map(String::as_str) != Some("owned") {
        return Ok((None, at));
    }
    if lower.get(at + 1).map(String::as_str) != Some("by") {
        return Err(SqlError::syntax("OWNED needs BY"));
    }
    let target = words.get(at + 2).ok_or_else(|| SqlError::syntax("OWNED BY needs a column"))?;
    if target.eq_ignore_ascii_case("none") {
        return Ok((Some(None), at + 3));
    }
    let parts: Vec<&str> = target.split('.').collect();
    let pair = match parts.as_slice() {
        [table, column] | ["public", table, column] => {
            (relation_name(table), relation_name(column))
        }
        _ => return Err(SqlError::syntax(format!("invalid OWNED BY target {target}"))),
    };
    Ok((Some(Some(pair)), at + 3))
}

/// CREATE [TEMP] SEQUENCE [IF NOT EXISTS] name [AS type] options [OWNED BY t.c], or ALTER
/// SEQUENCE [IF EXISTS] name options.
pub(super) fn sequence_from(text: &str) -> SqlResult<Statement> {
    let (words, lower) = words(text);
    let create = lower[0] == "create";
    let mut at = if lower[1] == "sequence" { 2 } else { 3 };
    if create && at == 3 {
        return Err(SqlError::unsupported("temporary sequences"));
    }
    let guard: &[&str] = if create { &["if", "not", "exists"] } else { &["if", "exists"] };
    let guarded = lower.len() > at + guard.len() && lower[at..at + guard.len()] == *guard;
    if guarded {
        at += guard.len();
    }
    let name =
        relation_name(words.get(at).ok_or_else(|| SqlError::syntax("a sequence needs a name"))?);
    at += 1;
    if !create && lower.get(at).map(String::as_str) == Some("rename") {
        if lower.get(at + 1).map(String::as_str) != Some("to") || words.len() != at + 3 {
            return Err(SqlError::syntax("ALTER SEQUENCE ... RENAME TO needs one name"));
        }
        let rename = Some(relation_name(&words[at + 2]));
        return Ok(Statement::AlterSequence {
            name,
            if_exists: guarded,
            ty: None,
            options: Vec::new(),
            rename,
        });
    }
    let mut ty = None;
    if lower.get(at).map(String::as_str) == Some("as") {
        let word = lower.get(at + 1).ok_or_else(|| SqlError::syntax("AS needs a type"))?;
        ty = Some(match word.as_str() {
            "smallint" | "int2" => Type::Int2,
            "integer" | "int" | "int4" => Type::Int4,
            "bigint" | "int8" => Type::Int8,
            "numeric" | "text" | "real" | "boolean" | "double" | "date" => {
                return Err(SqlError::new(
                    "22023",
                    "sequence type must be smallint, integer, or bigint",
                ));
            }
            other => {
                return Err(SqlError::new("42704", format!("type \"{other}\" does not exist")));
            }
        });
        at += 2;
    }
    let (options, at) = options_from_words(&lower, at)?;
    let (owned, at) = owned_from_words(&words, &lower, at)?;
    if at < words.len() {
        return Err(SqlError::syntax(format!("syntax error at or near \"{}\"", words[at])));
    }
    if create {
        return Ok(Statement::CreateSequence(Box::new(CreateSequence {
            name,
            if_not_exists: guarded,
            ty,
            options,
            owned_by: owned.flatten(),
        })));
    }
    if owned.is_some() {
        return Err(SqlError::unsupported("ALTER SEQUENCE ... OWNED BY"));
    }
    Ok(Statement::AlterSequence { name, if_exists: guarded, ty, options, rename: None })
}

/// CREATE TABLE text with each `AS IDENTITY (options)` written in the one order sqlparser
/// reads (PostgreSQL takes any).
pub(super) fn identity_options_in_order(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let mut out = String::new();
    let mut from = 0;
    let mut changed = false;
    while let Some(found) = lower[from..].find("identity") {
        let start = from + found + "identity".len();
        let rest = &lower[start..];
        let open = rest.len() - rest.trim_start().len();
        if !rest.trim_start().starts_with('(') {
            out.push_str(&text[from..start]);
            from = start;
            continue;
        }
        let inner_start = start + open + 1;
        let close = inner_start + lower[inner_start..].find(')')?;
        let inner: Vec<String> =
            lower[inner_start..close].split_whitespace().map(str::to_string).collect();
        let (options, used) = options_from_words(&inner, 0).ok()?;
        if used < inner.len() {
            return None;
        }
        let rank = |option: &SequenceOption| match option {
            SequenceOption::Increment(_) => 0,
            SequenceOption::Min(_) => 1,
            SequenceOption::Max(_) => 2,
            SequenceOption::Start(_) | SequenceOption::Restart(_) => 3,
            SequenceOption::Cache(_) => 4,
            SequenceOption::Cycle(_) => 5,
        };
        let mut sorted = options.clone();
        sorted.sort_by_key(rank);
        let written: Vec<String> = sorted
            .iter()
            .map(|option| match option {
                SequenceOption::Increment(n) => format!("INCREMENT BY {n}"),
                SequenceOption::Min(Some(n)) => format!("MINVALUE {n}"),
                SequenceOption::Min(None) => "NO MINVALUE".into(),
                SequenceOption::Max(Some(n)) => format!("MAXVALUE {n}"),
                SequenceOption::Max(None) => "NO MAXVALUE".into(),
                SequenceOption::Start(n) | SequenceOption::Restart(Some(n)) => {
                    format!("START WITH {n}")
                }
                SequenceOption::Restart(None) => String::new(),
                SequenceOption::Cache(n) => format!("CACHE {n}"),
                SequenceOption::Cycle(true) => "CYCLE".into(),
                SequenceOption::Cycle(false) => "NO CYCLE".into(),
            })
            .collect();
        out.push_str(&text[from..inner_start]);
        out.push_str(&written.join(" "));
        from = close;
        changed |= sorted != options;
    }
    out.push_str(&text[from..]);
    changed.then_some(out)
}
