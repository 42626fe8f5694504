//! SQL text to Engram's syntax tree: sqlparser (PostgreSQL dialect) parses, and this module
//! keeps what Engram supports, rejecting the rest with SQLSTATE 0A000 and the feature's name.

use crate::ast::*;
use crate::depth;
use crate::error::{SqlError, SqlResult};

use crate::types::{NUMERIC_PRECISION_MAX, Type};
use engram_engine::Isolation;
use sqlparser::ast as sp;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

mod copy;
mod ddl;
mod expr;
mod sequence;

use ddl::{alter_action, create_table_from};

pub use expr::expr_from;

/// Parses a string of one or more statements separated by semicolons.
pub fn parse(sql: &str) -> SqlResult<Vec<Statement>> {
    let mut statements = Vec::new();
    for piece in split_utilities(sql) {
        match piece {
            Piece::Utility(statement) => statements.push(statement),
            Piece::Error(error) => return Err(error),
            Piece::Sql(text) => {
                let reordered = (text.contains("IDENTITY") || text.contains("identity"))
                    .then(|| sequence::identity_options_in_order(text))
                    .flatten();
                let text = reordered.as_deref().unwrap_or(text);
                let (parser, weaker) = match weaker_locks(text) {
                    Some((parser, weaker)) => (Ok(parser), weaker),
                    None => (parser(text), Weaker::default()),
                };
                let mut parsed =
                    parser.and_then(|mut parser| parser.parse_statements()).map_err(parse_error)?;
                if text.len() > depth::NORMALIZE_MIN_BYTES {
                    parsed = depth::normalize(parsed)?;
                }
                // On its own stack segment if need be, with what is left after an error.
                depth::grow(|| {
                    for statement in parsed {
                        let mut statement = statement_from(statement)?;
                        if let Statement::Query(query) = &mut statement {
                            weaker.apply(&mut query.lock.0);
                        }
                        statements.push(statement);
                    }
                    Ok::<_, SqlError>(())
                })?;
            }
        }
    }
    Ok(statements)
}

/// Parses a default expression kept in the catalog.
pub fn parse_expr(sql: &str) -> SqlResult<Expr> {
    let expr = parser(sql).and_then(|mut parser| parser.parse_expr()).map_err(parse_error)?;
    let expr = if sql.len() > depth::NORMALIZE_MIN_BYTES { depth::normalize(expr)? } else { expr };
    depth::grow(|| expr_from(expr))
}

/// An expression's SQL text with its references to column `from` renamed `to` (with `None`,
/// left as they are), and whether it has any. For CHECK constraints, which the catalog keeps
/// as text, when a column is renamed or dropped.
pub fn rename_column_in(sql: &str, from: &str, to: Option<&str>) -> SqlResult<(String, bool)> {
    use std::ops::ControlFlow;
    let mut expr = parser(sql).and_then(|mut parser| parser.parse_expr()).map_err(parse_error)?;
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions_mut(&mut expr, |node| {
        let ids: &mut [sp::Ident] = match node {
            sp::Expr::Identifier(id) => std::slice::from_mut(id),
            sp::Expr::CompoundIdentifier(ids) => match ids.last_mut() {
                Some(last) => std::slice::from_mut(last),
                None => &mut [],
            },
            _ => &mut [],
        };
        for id in ids {
            if ident(id) == from {
                found = true;
                if let Some(to) = to {
                    *id = sp::Ident::with_quote('"', to);
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    Ok((expr.to_string(), found))
}

/// Which lock clauses of a piece of SQL were PostgreSQL's weaker forms, which sqlparser does
/// not parse: `FOR NO KEY UPDATE` and `FOR KEY SHARE` reach it as `FOR UPDATE` and `FOR SHARE`.
#[derive(Debug, Default, Clone, Copy)]
struct Weaker {
    /// (clauses of the weaker form, clauses of the stronger one) for UPDATE, then SHARE.
    update: (u32, u32),
    share: (u32, u32),
}

impl Weaker {
    /// A query's lock of the stronger form is the weaker one when every such clause was.
    fn apply(&self, mode: &mut RowLockMode) {
        match mode {
            RowLockMode::Update if self.update.0 > 0 && self.update.1 == 0 => {
                *mode = RowLockMode::NoKeyUpdate;
            }
            RowLockMode::Share if self.share.0 > 0 && self.share.1 == 0 => {
                *mode = RowLockMode::KeyShare;
            }
            _ => {}
        }
    }
}

/// A parser over `sql` with `FOR NO KEY UPDATE` and `FOR KEY SHARE` written as `FOR UPDATE`
/// and `FOR SHARE`, and which clauses were which; `None` when `sql` has no `KEY` word at all.
fn weaker_locks(sql: &str) -> Option<(Parser<'static>, Weaker)> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};
    if !sql.as_bytes().windows(3).any(|w| w.eq_ignore_ascii_case(b"key")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().ok()?;
    let word = |token: &Token| match token {
        Token::Word(word) if word.quote_style.is_none() => Some(word.keyword),
        _ => None,
    };
    let mut weaker = Weaker::default();
    let mut kept = Vec::with_capacity(tokens.len());
    let mut index = 0;
    while index < tokens.len() {
        kept.push(tokens[index].clone());
        if word(&tokens[index].token) != Some(Keyword::FOR) {
            index += 1;
            continue;
        }
        // The words after FOR, past whitespace.
        let next: Vec<usize> = (index + 1..tokens.len())
            .filter(|&at| !matches!(tokens[at].token, Token::Whitespace(_)))
            .take(3)
            .collect();
        let at = |n: usize| next.get(n).and_then(|&i| word(&tokens[i].token));
        // Where the clause's UPDATE or SHARE is, when the words between go.
        let resume = match (at(0), at(1), at(2)) {
            (Some(Keyword::NO), Some(Keyword::KEY), Some(Keyword::UPDATE)) => {
                weaker.update.0 += 1;
                Some(next[2])
            }
            (Some(Keyword::KEY), Some(Keyword::SHARE), _) => {
                weaker.share.0 += 1;
                Some(next[1])
            }
            (Some(Keyword::UPDATE), ..) => {
                weaker.update.1 += 1;
                None
            }
            (Some(Keyword::SHARE), ..) => {
                weaker.share.1 += 1;
                None
            }
            _ => None,
        };
        match resume {
            Some(at) => {
                kept.push(TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)));
                index = at;
            }
            None => index += 1,
        }
    }
    let parser = Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(depth::PARSER_RECURSION_MAX)
        .with_tokens_with_locations(kept);
    Some((parser, weaker))
}

/// sqlparser's parser over `sql`, its recursion bounded (`depth.rs`).
fn parser(sql: &str) -> Result<Parser<'static>, sqlparser::parser::ParserError> {
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(depth::PARSER_RECURSION_MAX)
        .try_with_sql(sql)
}

fn parse_error(error: sqlparser::parser::ParserError) -> SqlError {
    match error {
        sqlparser::parser::ParserError::RecursionLimitExceeded => depth::too_deep(),
        other => SqlError::syntax(syntax_message(&other.to_string())),
    }
}

fn syntax_message(message: &str) -> String {
    let message = message.strip_prefix("sql parser error: ").unwrap_or(message);
    format!("syntax error: {message}")
}

enum Piece<'a> {
    Sql(&'a str),
    Utility(Statement),
    Error(SqlError),
}

/// Statements sqlparser does not take in PostgreSQL's form (`VACUUM`, `ANALYZE`, `CHECKPOINT`,
/// `COPY ... WITH (...)`, sent by pgbench and maintenance scripts, and the transaction
/// statements with `DEFERRABLE`) are recognised here; they must be alone in their string or
/// separated by semicolons outside quotes.
fn split_utilities(sql: &str) -> Vec<Piece<'_>> {
    let first_word = |text: &str| {
        text.trim_start()
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or("")
            .to_ascii_uppercase()
    };
    let is_utility = |text: &str| {
        matches!(first_word(text).as_str(), "VACUUM" | "ANALYZE" | "CHECKPOINT" | "COPY")
            || starts_transaction_statement(text)
            || sequence::is_sequence_statement(text)
    };
    if !sql.split(';').any(is_utility) {
        return vec![Piece::Sql(sql)];
    }
    // Only simple strings mix utilities with other statements; split on semicolons outside
    // quotes.
    let mut pieces: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    for (at, c) in sql.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ';') => {
                pieces.push(&sql[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    pieces.push(&sql[start..]);
    pieces
        .into_iter()
        .filter(|piece| !piece.trim().is_empty())
        .map(|piece| {
            let word = first_word(piece);
            match word.as_str() {
                "VACUUM" | "ANALYZE" => {
                    Piece::Utility(Statement::Utility { tag: word, checkpoint: false })
                }
                "CHECKPOINT" => Piece::Utility(Statement::Utility { tag: word, checkpoint: true }),
                "COPY" => match copy::parse_copy(piece) {
                    Ok(statement) => Piece::Utility(statement),
                    Err(error) => Piece::Error(error),
                },
                _ if sequence::is_sequence_statement(piece) => match sequence::sequence_from(piece)
                {
                    Ok(statement) => Piece::Utility(statement),
                    Err(error) => Piece::Error(error),
                },
                _ => match transaction_statement(piece) {
                    Some(Ok(statement)) => Piece::Utility(statement),
                    Some(Err(error)) => Piece::Error(error),
                    None => Piece::Sql(piece),
                },
            }
        })
        .collect()
}

fn ident(ident: &sp::Ident) -> String {
    if ident.quote_style.is_some() { ident.value.clone() } else { ident.value.to_lowercase() }
}

/// A table or index name: `name` or `public.name`; `pg_catalog.name` and
/// `information_schema.name` keep their schema (system views, `system.rs`).
fn object_name(name: &sp::ObjectName) -> SqlResult<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|part| match part {
            sp::ObjectNamePart::Identifier(id) => Ok(ident(id)),
            sp::ObjectNamePart::Function(_) => Err(SqlError::unsupported("a function in a name")),
        })
        .collect::<SqlResult<_>>()?;
    match parts.as_slice() {
        [name] => Ok(name.clone()),
        [schema, name] if schema == "public" => Ok(name.clone()),
        [schema, name] if schema == "pg_catalog" || schema == "information_schema" => {
            Ok(format!("{schema}.{name}"))
        }
        _ => Err(SqlError::unsupported(format!("the qualified name \"{name}\" (schemas)"))),
    }
}

fn statement_from(statement: sp::Statement) -> SqlResult<Statement> {
    use sp::Statement as S;
    Ok(match statement {
        S::Query(query) => Statement::Query(Box::new(query_from(*query)?)),
        S::Insert(insert) => Statement::Insert(Box::new(insert_from(insert)?)),
        S::Update(update) => Statement::Update(Box::new(update_from(update)?)),
        S::Delete(delete) => Statement::Delete(Box::new(delete_from(delete)?)),
        S::CreateTable(create) => Statement::CreateTable(Box::new(create_table_from(create)?)),
        S::CreateView(create) => {
            if create.materialized || create.temporary || create.or_alter || create.if_not_exists {
                return Err(SqlError::unsupported(
                    "materialized or temporary views, CREATE VIEW IF NOT EXISTS",
                ));
            }
            let mut reads = Vec::new();
            let _ = sqlparser::ast::visit_relations(&create.query, |relation| {
                if let Ok(name) = object_name(relation)
                    && !reads.contains(&name)
                {
                    reads.push(name);
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            Statement::CreateView(Box::new(CreateView {
                name: object_name(&create.name)?,
                or_replace: create.or_replace,
                columns: create.columns.iter().map(|c| ident(&c.name)).collect(),
                text: create.query.to_string(),
                query: Box::new(query_from(*create.query)?),
                reads,
            }))
        }
        S::CreateIndex(create) => {
            if create.predicate.is_some() {
                return Err(SqlError::unsupported("a partial index (CREATE INDEX ... WHERE)"));
            }
            if !create.include.is_empty() {
                return Err(SqlError::unsupported("INCLUDE columns of an index"));
            }
            let columns = create
                .columns
                .iter()
                .map(|column| index_column(&column.column))
                .collect::<SqlResult<_>>()?;
            Statement::CreateIndex(Box::new(CreateIndex {
                name: create.name.as_ref().map(object_name).transpose()?,
                table: object_name(&create.table_name)?,
                columns,
                unique: create.unique,
                if_not_exists: create.if_not_exists,
            }))
        }
        S::Drop { object_type, if_exists, names, cascade, .. } => {
            let names = names.iter().map(object_name).collect::<SqlResult<_>>()?;
            match object_type {
                sp::ObjectType::Table => Statement::DropTable { names, if_exists, cascade },
                sp::ObjectType::View => Statement::DropView { names, if_exists, cascade },
                sp::ObjectType::Sequence => Statement::DropSequence { names, if_exists, cascade },
                sp::ObjectType::Index => Statement::DropIndex { names, if_exists },
                other => return Err(SqlError::unsupported(format!("DROP {other}"))),
            }
        }
        S::Comment { object_type, object_name: name, comment, if_exists: false } => {
            use crate::ast::CommentKind;
            let kind = match object_type {
                sp::CommentObject::Table => CommentKind::Table,
                sp::CommentObject::Column => CommentKind::Column,
                sp::CommentObject::View => CommentKind::View,
                sp::CommentObject::Sequence => CommentKind::Sequence,
                sp::CommentObject::Index => CommentKind::Index,
                other => return Err(SqlError::unsupported(format!("COMMENT ON {other}"))),
            };
            let name = match kind {
                // `table.column` or `public.table.column`.
                CommentKind::Column => {
                    let parts: Vec<String> =
                        name.0.iter().filter_map(|part| part.as_ident().map(ident)).collect();
                    match parts.as_slice() {
                        [table, column] => format!("{table}.{column}"),
                        [schema, table, column] if schema == "public" => {
                            format!("{table}.{column}")
                        }
                        _ => return Err(SqlError::syntax("column name must be qualified")),
                    }
                }
                _ => object_name(&name)?,
            };
            Statement::Comment { kind, name, text: comment }
        }
        S::Truncate(truncate) => Statement::Truncate {
            tables: truncate
                .table_names
                .iter()
                .map(|target| object_name(&target.name))
                .collect::<SqlResult<_>>()?,
        },
        S::AlterTable(alter) => {
            if alter.table_type.is_some() || alter.location.is_some() || alter.on_cluster.is_some()
            {
                return Err(SqlError::unsupported("this form of ALTER TABLE"));
            }
            let actions =
                alter.operations.into_iter().map(alter_action).collect::<SqlResult<Vec<_>>>()?;
            Statement::AlterTable(Box::new(AlterTable {
                table: object_name(&alter.name)?,
                if_exists: alter.if_exists,
                actions,
            }))
        }
        S::StartTransaction { modes, .. } => {
            let (isolation, read_only) = transaction_modes(&modes)?;
            Statement::Begin { isolation, read_only }
        }
        S::Reset(reset) => match reset.reset {
            sp::Reset::ConfigurationParameter(name) => {
                Statement::Reset { name: object_name(&name)? }
            }
            sp::Reset::ALL => Statement::Reset { name: "all".into() },
            sp::Reset::SessionAuthorization => {
                return Err(SqlError::unsupported("RESET SESSION AUTHORIZATION"));
            }
        },
        S::Commit { chain, .. } | S::Rollback { chain, savepoint: None } if chain => {
            return Err(SqlError::unsupported("AND CHAIN"));
        }
        S::Commit { .. } => Statement::Commit,
        S::Rollback { savepoint: None, .. } => Statement::Rollback,
        S::Rollback { savepoint: Some(name), .. } => Statement::RollbackTo { name: ident(&name) },
        S::Savepoint { name } => Statement::Savepoint { name: ident(&name) },
        S::ReleaseSavepoint { name } => Statement::Release { name: ident(&name) },
        S::Set(set) => set_from(set)?,
        S::ShowVariable { variable } => {
            Statement::Show { name: variable.iter().map(ident).collect::<Vec<_>>().join(" ") }
        }
        S::Prepare { name, data_types, statement } => Statement::Prepare {
            name: ident(&name),
            types: data_types.iter().map(type_from).collect::<SqlResult<_>>()?,
            statement: Box::new(statement_from(*statement)?),
        },
        S::Execute { name: Some(name), parameters, immediate: false, .. } => Statement::Execute {
            name: object_name(&name)?,
            params: parameters.into_iter().map(expr_from).collect::<SqlResult<_>>()?,
        },
        S::Discard { object_type } => match object_type {
            sp::DiscardObject::ALL => Statement::Discard { all: true },
            sp::DiscardObject::SEQUENCES => Statement::Discard { all: false },
            // No plan is kept apart from its prepared statement, and there are no temporary
            // objects: nothing to discard.
            sp::DiscardObject::PLANS => {
                Statement::Utility { tag: "DISCARD PLANS".into(), checkpoint: false }
            }
            sp::DiscardObject::TEMP => {
                Statement::Utility { tag: "DISCARD TEMP".into(), checkpoint: false }
            }
        },
        S::Deallocate { name, .. } => {
            let name = ident(&name);
            Statement::Deallocate { name: (name != "all").then_some(name) }
        }
        S::Explain { statement, analyze: false, .. } => {
            Statement::Explain(Box::new(statement_from(*statement)?))
        }
        S::Explain { .. } => return Err(SqlError::unsupported("EXPLAIN ANALYZE")),
        other => {
            let text = other.to_string();
            let words: Vec<&str> = text.split_whitespace().take(2).collect();
            return Err(SqlError::unsupported(format!("the statement {}", words.join(" "))));
        }
    })
}

fn index_column(column: &sp::OrderByExpr) -> SqlResult<String> {
    match &column.expr {
        sp::Expr::Identifier(id) => Ok(ident(id)),
        other => Err(SqlError::unsupported(format!("an index on the expression {other}"))),
    }
}

fn isolation_from(level: &sp::TransactionIsolationLevel) -> Isolation {
    match level {
        // PostgreSQL runs READ UNCOMMITTED as READ COMMITTED.
        sp::TransactionIsolationLevel::ReadUncommitted
        | sp::TransactionIsolationLevel::ReadCommitted => Isolation::ReadCommitted,
        sp::TransactionIsolationLevel::RepeatableRead => Isolation::RepeatableRead,
        sp::TransactionIsolationLevel::Serializable => Isolation::Serializable,
        sp::TransactionIsolationLevel::Snapshot => Isolation::Snapshot,
    }
}

fn transaction_modes(
    modes: &[sp::TransactionMode],
) -> SqlResult<(Option<Isolation>, Option<bool>)> {
    let mut isolation = None;
    let mut read_only = None;
    for mode in modes {
        match mode {
            sp::TransactionMode::IsolationLevel(level) => isolation = Some(isolation_from(level)),
            sp::TransactionMode::AccessMode(sp::TransactionAccessMode::ReadOnly) => {
                read_only = Some(true)
            }
            sp::TransactionMode::AccessMode(sp::TransactionAccessMode::ReadWrite) => {
                read_only = Some(false)
            }
        }
    }
    Ok((isolation, read_only))
}

/// Whether `text` starts like a statement [`transaction_statement`] parses (`BEGIN`, `START`,
/// `SET TRANSACTION`, `SET SESSION`): a test without allocating, for every piece of every
/// string.
fn starts_transaction_statement(text: &str) -> bool {
    let starts = |text: &str, word: &str| {
        text.len() >= word.len()
            && text.as_bytes()[..word.len()].eq_ignore_ascii_case(word.as_bytes())
    };
    let text = text.trim_start();
    if starts(text, "BEGIN") || starts(text, "START") {
        return true;
    }
    starts(text, "SET") && {
        let rest = text[3..].trim_start();
        starts(rest, "TRANSACTION") || starts(rest, "SESSION")
    }
}

/// `BEGIN`, `START TRANSACTION`, `SET TRANSACTION` and `SET SESSION CHARACTERISTICS AS
/// TRANSACTION` with PostgreSQL's modes, which sqlparser does not all take (`DEFERRABLE`);
/// `None` when `text` is none of these.
fn transaction_statement(text: &str) -> Option<SqlResult<Statement>> {
    if !starts_transaction_statement(text) {
        return None;
    }
    let upper = text.trim().trim_end_matches(';').to_ascii_uppercase();
    let words: Vec<&str> =
        upper.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let (modes, begin, session) = match words.as_slice() {
        ["BEGIN", "WORK" | "TRANSACTION", rest @ ..] | ["START", "TRANSACTION", rest @ ..] => {
            (rest, true, false)
        }
        ["BEGIN", rest @ ..] => (rest, true, false),
        ["SET", "TRANSACTION", rest @ ..] => (rest, false, false),
        ["SET", "SESSION", "CHARACTERISTICS", "AS", "TRANSACTION", rest @ ..] => {
            (rest, false, true)
        }
        _ => return None,
    };
    let (mut isolation, mut read_only) = (None, None);
    let mut rest = modes;
    let syntax = |near: &str| {
        Some(Err(SqlError::syntax(format!(
            "syntax error at or near \"{near}\" (a transaction mode)"
        ))))
    };
    while !rest.is_empty() {
        rest = match rest {
            ["ISOLATION", "LEVEL", "SERIALIZABLE", more @ ..] => {
                isolation = Some(Isolation::Serializable);
                more
            }
            ["ISOLATION", "LEVEL", "REPEATABLE", "READ", more @ ..] => {
                isolation = Some(Isolation::RepeatableRead);
                more
            }
            ["ISOLATION", "LEVEL", "READ", "COMMITTED" | "UNCOMMITTED", more @ ..] => {
                // PostgreSQL runs READ UNCOMMITTED as READ COMMITTED.
                isolation = Some(Isolation::ReadCommitted);
                more
            }
            ["ISOLATION", "LEVEL", "SNAPSHOT", more @ ..] => {
                isolation = Some(Isolation::Snapshot);
                more
            }
            ["READ", "ONLY", more @ ..] => {
                read_only = Some(true);
                more
            }
            ["READ", "WRITE", more @ ..] => {
                read_only = Some(false);
                more
            }
            // Only SERIALIZABLE READ ONLY transactions defer (to wait for a snapshot that
            // needs no checks); Engram's serializable read-only transactions never wait.
            ["NOT", "DEFERRABLE", more @ ..] | ["DEFERRABLE", more @ ..] => more,
            [word, ..] => return syntax(word),
            [] => unreachable!(),
        };
    }
    if !begin && isolation.is_none() && read_only.is_none() {
        return syntax("TRANSACTION");
    }
    Some(Ok(if begin {
        Statement::Begin { isolation, read_only }
    } else {
        Statement::SetTransaction { isolation, read_only, session }
    }))
}

fn set_from(set: sp::Set) -> SqlResult<Statement> {
    match set {
        sp::Set::SetTransaction { modes, snapshot: None, session } => {
            let (isolation, read_only) = transaction_modes(&modes)?;
            Ok(Statement::SetTransaction { isolation, read_only, session })
        }
        sp::Set::SingleAssignment { variable, values, .. } => {
            let name = object_name(&variable)?;
            let value = match values.as_slice() {
                [sp::Expr::Identifier(id)] if id.value.eq_ignore_ascii_case("default") => None,
                [value] => Some(setting_text(value)),
                values => Some(values.iter().map(setting_text).collect::<Vec<_>>().join(", ")),
            };
            Ok(Statement::Set { name, value })
        }
        sp::Set::SetTimeZone { value, .. } => {
            Ok(Statement::Set { name: "timezone".into(), value: Some(setting_text(&value)) })
        }
        sp::Set::SetNames { charset_name, .. } => {
            Ok(Statement::Set { name: "client_encoding".into(), value: Some(charset_name.value) })
        }
        other => Err(SqlError::unsupported(format!("{other}"))),
    }
}

fn setting_text(value: &sp::Expr) -> String {
    match value {
        sp::Expr::Value(v) => match &v.value {
            sp::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        sp::Expr::Identifier(id) => id.value.clone(),
        other => other.to_string(),
    }
}

/// A column type.
pub fn type_from(ty: &sp::DataType) -> SqlResult<Type> {
    use sp::DataType as D;
    let length = |length: &Option<sp::CharacterLength>, default: u32| -> SqlResult<u32> {
        match length {
            None => Ok(default),
            Some(sp::CharacterLength::IntegerLength { length, .. }) => {
                if *length == 0 || *length > 10_485_760 {
                    Err(SqlError::new(
                        "22023",
                        format!("length for type must be between 1 and 10485760, not {length}"),
                    ))
                } else {
                    Ok(*length as u32)
                }
            }
            Some(sp::CharacterLength::Max) => Err(SqlError::unsupported("length MAX")),
        }
    };
    Ok(match ty {
        D::Bool | D::Boolean => Type::Bool,
        D::SmallInt(_) | D::Int2(_) => Type::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) => Type::Int4,
        D::BigInt(_) | D::Int8(_) => Type::Int8,
        D::Real | D::Float4 => Type::Float4,
        D::DoublePrecision | D::Float8 | D::Double(sp::ExactNumberInfo::None) => Type::Float8,
        D::Float(sp::ExactNumberInfo::Precision(p)) if *p <= 24 => Type::Float4,
        D::Float(_) => Type::Float8,
        D::Numeric(info) | D::Decimal(info) | D::Dec(info) => match info {
            sp::ExactNumberInfo::None => Type::Numeric { precision: 0, scale: 0 },
            sp::ExactNumberInfo::Precision(p) => numeric(*p, 0)?,
            sp::ExactNumberInfo::PrecisionAndScale(p, s) => numeric(*p, *s)?,
        },
        D::Char(len) | D::Character(len) => Type::Char(length(len, 1)?),
        D::Varchar(len) | D::CharacterVarying(len) | D::CharVarying(len) => {
            Type::Varchar(length(len, 0)?)
        }
        D::Text | D::String(None) => Type::Text,
        D::Bytea => Type::Bytea,
        D::Date => Type::Date,
        D::Timestamp(_, sp::TimezoneInfo::None | sp::TimezoneInfo::WithoutTimeZone)
        | D::TimestampNtz(_)
        | D::Datetime(_) => Type::Timestamp,
        D::Timestamp(_, sp::TimezoneInfo::WithTimeZone | sp::TimezoneInfo::Tz) => Type::Timestamptz,
        D::Time(_, sp::TimezoneInfo::None | sp::TimezoneInfo::WithoutTimeZone) => Type::Time,
        D::Interval { .. } => Type::Interval,
        D::Uuid => Type::Uuid,
        D::JSON => Type::Json,
        D::JSONB => Type::Jsonb,
        D::Array(
            sp::ArrayElemTypeDef::SquareBracket(elem, _) | sp::ArrayElemTypeDef::Qualified(elem, _),
        ) => {
            let elem = type_from(elem)?;
            Type::Array(
                crate::types::Elem::of(elem)
                    .ok_or_else(|| SqlError::unsupported("multidimensional arrays"))?,
            )
        }
        // A relation's name, as sequence functions take it (`'seq'::regclass`).
        D::Regclass => Type::Regclass,
        D::Custom(name, modifiers) if modifiers.is_empty() => match object_name(name)?.as_str() {
            "int" | "int4" | "integer" => Type::Int4,
            "int2" | "smallint" => Type::Int2,
            "int8" | "bigint" => Type::Int8,
            "float4" => Type::Float4,
            "float8" => Type::Float8,
            "bpchar" => Type::Char(1),
            "text" | "name" => Type::Text,
            "timestamptz" => Type::Timestamptz,
            "uuid" => Type::Uuid,
            "interval" => Type::Interval,
            "json" => Type::Json,
            "jsonb" => Type::Jsonb,
            "regclass" => Type::Regclass,
            // Object ids of other kinds are integers here.
            "oid" | "regtype" | "regproc" | "regprocedure" | "regnamespace" | "regrole" => {
                Type::Int8
            }
            other => {
                return Err(SqlError::new(
                    "42704",
                    format!("type \"{other}\" does not exist or is not supported"),
                ));
            }
        },
        other => return Err(SqlError::unsupported(format!("the type {other}"))),
    })
}

fn numeric(precision: u64, scale: i64) -> SqlResult<Type> {
    if precision == 0 || precision > u64::from(NUMERIC_PRECISION_MAX) {
        return Err(SqlError::new(
            "22023",
            format!("NUMERIC precision {precision} must be between 1 and {NUMERIC_PRECISION_MAX}"),
        ));
    }
    if scale < 0 || scale as u64 > precision {
        return Err(SqlError::new(
            "22023",
            format!("NUMERIC scale {scale} must be between 0 and precision {precision}"),
        ));
    }
    Ok(Type::Numeric { precision: precision as u8, scale: scale as u8 })
}

fn table_ref(factor: &sp::TableFactor) -> SqlResult<TableRef> {
    let aliased = |alias: &Option<sp::TableAlias>, name: String, source: Option<Source>| TableRef {
        name,
        alias: alias.as_ref().map(|a| ident(&a.name)),
        columns: alias
            .as_ref()
            .map(|a| a.columns.iter().map(|c| ident(&c.name)).collect())
            .unwrap_or_default(),
        source: source.map(Box::new),
        lateral: false,
    };
    match factor {
        sp::TableFactor::Table { name, alias, args: None, .. } => {
            Ok(aliased(alias, object_name(name)?, None))
        }
        sp::TableFactor::UNNEST {
            alias, array_exprs, with_offset: false, with_ordinality, ..
        } => {
            let args =
                array_exprs.iter().map(|e| expr_from(e.clone())).collect::<SqlResult<Vec<_>>>()?;
            let name = "unnest".to_string();
            let source =
                Source::Function { name: name.clone(), args, ordinality: *with_ordinality };
            Ok(aliased(alias, name, Some(source)))
        }
        sp::TableFactor::Table { name, alias, args: Some(args), with_ordinality, .. } => {
            let name = object_name(name)?;
            let args = args
                .args
                .iter()
                .map(|arg| match arg {
                    sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Expr(e)) => expr_from(e.clone()),
                    other => Err(SqlError::unsupported(format!("the argument {other}"))),
                })
                .collect::<SqlResult<Vec<_>>>()?;
            let source =
                Source::Function { name: name.clone(), args, ordinality: *with_ordinality };
            Ok(aliased(alias, name, Some(source)))
        }
        sp::TableFactor::Derived { lateral, subquery, alias, .. } => {
            let query = query_from((**subquery).clone())?;
            // PostgreSQL names an unaliased subquery `unnamed_subquery`.
            let name = alias.as_ref().map_or_else(|| "unnamed_subquery".into(), |a| ident(&a.name));
            Ok(TableRef { lateral: *lateral, ..aliased(alias, name, Some(Source::Query(query))) })
        }
        // `LATERAL f(...)`: a function in FROM reads the items before it anyway.
        sp::TableFactor::Function { name, args, alias, .. } => {
            let name = object_name(name)?;
            let args = args
                .iter()
                .map(|arg| match arg {
                    sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Expr(e)) => expr_from(e.clone()),
                    other => Err(SqlError::unsupported(format!("the argument {other}"))),
                })
                .collect::<SqlResult<Vec<_>>>()?;
            let source = Source::Function { name: name.clone(), args, ordinality: false };
            Ok(aliased(alias, name, Some(source)))
        }
        sp::TableFactor::NestedJoin { .. } => {
            Err(SqlError::unsupported("a parenthesized join in FROM"))
        }
        other => Err(SqlError::unsupported(format!("the FROM item {other}"))),
    }
}

/// `WINDOW name AS (...)`: each `OVER name` of the select list takes the definition.
fn name_windows(select: &mut sp::Select) -> SqlResult<()> {
    use std::ops::ControlFlow;
    let mut windows = std::collections::HashMap::new();
    for sp::NamedWindowDefinition(name, definition) in &select.named_window {
        let spec = match definition {
            sp::NamedWindowExpr::WindowSpec(spec) => spec.clone(),
            sp::NamedWindowExpr::NamedWindow(other) => match windows.get(&ident(other)) {
                Some(spec) => sp::WindowSpec::clone(spec),
                None => {
                    return Err(SqlError::new(
                        "42704",
                        format!("window \"{other}\" does not exist"),
                    ));
                }
            },
        };
        windows.insert(ident(name), spec);
    }
    let _ = sqlparser::ast::visit_expressions_mut(&mut select.projection, |expr| {
        if let sp::Expr::Function(function) = expr
            && let Some(sp::WindowType::NamedWindow(name)) = &function.over
            && let Some(spec) = windows.get(&ident(name))
        {
            function.over = Some(sp::WindowType::WindowSpec(spec.clone()));
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(())
}

/// One item of an ORDER BY (a query's or a window's).
fn order_item_from(item: sp::OrderByExpr) -> SqlResult<OrderItem> {
    Ok(OrderItem {
        expr: expr_from(item.expr)?,
        descending: matches!(item.options.sort, Some(sp::OrderBySort::Desc)),
        nulls_first: item.options.nulls_first,
    })
}

/// A set operation's operand as a query of its own.
fn set_operand(expr: sp::SetExpr) -> SqlResult<Query> {
    query_from(sp::Query {
        with: None,
        body: Box::new(expr),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    })
}

fn query_from(query: sp::Query) -> SqlResult<Query> {
    let (mut with, mut recursive) = (Vec::new(), false);
    if let Some(clause) = query.with {
        recursive = clause.recursive;
        for cte in clause.cte_tables {
            if cte.from.is_some() {
                return Err(SqlError::unsupported("WITH ... FROM"));
            }
            with.push(Cte {
                name: ident(&cte.alias.name),
                columns: cte.alias.columns.iter().map(|c| ident(&c.name)).collect(),
                query: query_from(*cte.query)?,
            });
        }
    }
    if query.fetch.is_some() {
        return Err(SqlError::unsupported("FETCH FIRST"));
    }
    let mut for_update = false;
    let mut lock = (RowLockMode::KeyShare, WaitPolicy::Block);
    for clause in &query.locks {
        if clause.of.is_some() {
            return Err(SqlError::unsupported("FOR UPDATE OF (a lock on some of the tables)"));
        }
        // Several clauses: the strongest mode, and the first that does not wait.
        lock.0 = lock.0.max(match clause.lock_type {
            sp::LockType::Update => RowLockMode::Update,
            sp::LockType::Share => RowLockMode::Share,
        });
        if lock.1 == WaitPolicy::Block {
            lock.1 = match clause.nonblock {
                None => WaitPolicy::Block,
                Some(sp::NonBlock::Nowait) => WaitPolicy::NoWait,
                Some(sp::NonBlock::SkipLocked) => WaitPolicy::SkipLocked,
            };
        }
        for_update = true;
    }
    let body = match *query.body {
        sp::SetExpr::Select(select) => QueryBody::Select(Box::new(select_from(*select)?)),
        sp::SetExpr::Values(values) => QueryBody::Values(
            values
                .rows
                .into_iter()
                .map(|row| row.content.into_iter().map(expr_from).collect::<SqlResult<Vec<_>>>())
                .collect::<SqlResult<_>>()?,
        ),
        sp::SetExpr::Query(inner) => {
            let mut inner = query_from(*inner)?;
            if query.order_by.is_none() && query.limit_clause.is_none() && !for_update {
                inner.with.splice(0..0, with);
                inner.recursive |= recursive;
                return Ok(inner);
            }
            // `(SELECT ... ORDER BY ... LIMIT ...) ORDER BY ...`: the inner query in FROM.
            let source = Source::Query(inner);
            QueryBody::Select(Box::new(Select {
                distinct: false,
                distinct_on: Vec::new(),
                items: vec![SelectItem::Wildcard],
                from: vec![FromItem {
                    table: TableRef {
                        source: Some(Box::new(source)),
                        ..TableRef::named("unnamed_subquery".into())
                    },
                    joins: Vec::new(),
                }],
                filter: None,
                group_by: Vec::new(),
                having: None,
            }))
        }
        sp::SetExpr::SetOperation { op, set_quantifier, left, right } => {
            let op = match op {
                sp::SetOperator::Union => SetOp::Union,
                sp::SetOperator::Intersect => SetOp::Intersect,
                sp::SetOperator::Except => SetOp::Except,
                other => return Err(SqlError::unsupported(format!("the set operation {other}"))),
            };
            let all = match set_quantifier {
                sp::SetQuantifier::All => true,
                sp::SetQuantifier::None | sp::SetQuantifier::Distinct => false,
                other => return Err(SqlError::unsupported(format!("{op:?} {other}"))),
            };
            QueryBody::SetOp {
                op,
                all,
                left: Box::new(set_operand(*left)?),
                right: Box::new(set_operand(*right)?),
            }
        }
        other => return Err(SqlError::unsupported(format!("the query {other}"))),
    };
    let order_by = match query.order_by {
        None => Vec::new(),
        Some(order) => match order.kind {
            sp::OrderByKind::Expressions(items) => {
                items.into_iter().map(order_item_from).collect::<SqlResult<_>>()?
            }
            sp::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        },
    };
    let (limit, offset) = match query.limit_clause {
        None => (None, None),
        Some(sp::LimitClause::LimitOffset { limit, offset, limit_by }) => {
            if !limit_by.is_empty() {
                return Err(SqlError::unsupported("LIMIT BY"));
            }
            (limit.map(expr_from).transpose()?, offset.map(|o| expr_from(o.value)).transpose()?)
        }
        Some(sp::LimitClause::OffsetCommaLimit { .. }) => {
            return Err(SqlError::unsupported("LIMIT offset, count"));
        }
    };
    // `LIMIT ALL` parses as no limit.
    Ok(Query { with, recursive, body, order_by, limit, offset, for_update, lock })
}

fn select_from(mut select: sp::Select) -> SqlResult<Select> {
    if select.into.is_some() {
        return Err(SqlError::unsupported("SELECT INTO"));
    }
    if select.top.is_some() || !select.lateral_views.is_empty() || select.qualify.is_some() {
        return Err(SqlError::unsupported("TOP, LATERAL VIEW or QUALIFY"));
    }
    if !select.named_window.is_empty() {
        name_windows(&mut select)?;
    }
    let (distinct, distinct_on) = match select.distinct {
        None | Some(sp::Distinct::All) => (false, Vec::new()),
        Some(sp::Distinct::Distinct) => (true, Vec::new()),
        Some(sp::Distinct::On(exprs)) => {
            (false, exprs.into_iter().map(expr_from).collect::<SqlResult<_>>()?)
        }
    };
    let items = select
        .projection
        .into_iter()
        .map(|item| select_item(item, "the select item"))
        .collect::<SqlResult<_>>()?;
    let mut from = Vec::new();
    for item in select.from {
        let mut joins = Vec::new();
        for join in item.joins {
            let (kind, constraint) = match join.join_operator {
                sp::JoinOperator::Join(c) | sp::JoinOperator::Inner(c) => (JoinKind::Inner, c),
                sp::JoinOperator::Left(c) | sp::JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
                sp::JoinOperator::Right(c) | sp::JoinOperator::RightOuter(c) => {
                    (JoinKind::Right, c)
                }
                sp::JoinOperator::FullOuter(c) => (JoinKind::Full, c),
                sp::JoinOperator::CrossJoin(c) => (JoinKind::Inner, c),
                other => {
                    return Err(SqlError::unsupported(
                        format!("the join {other:?}").replace("(None)", ""),
                    ));
                }
            };
            let (mut on, mut using, mut natural) = (None, Vec::new(), false);
            match constraint {
                sp::JoinConstraint::On(expr) => on = Some(expr_from(expr)?),
                sp::JoinConstraint::None => {}
                sp::JoinConstraint::Using(names) => {
                    using = names.iter().map(object_name).collect::<SqlResult<_>>()?;
                }
                sp::JoinConstraint::Natural => natural = true,
            }
            joins.push(Join { table: table_ref(&join.relation)?, kind, on, using, natural });
        }
        from.push(FromItem { table: table_ref(&item.relation)?, joins });
    }
    let group_by = match select.group_by {
        sp::GroupByExpr::Expressions(exprs, modifiers) => {
            if !modifiers.is_empty() {
                return Err(SqlError::unsupported("GROUP BY modifiers"));
            }
            exprs.into_iter().map(expr_from).collect::<SqlResult<_>>()?
        }
        sp::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    Ok(Select {
        distinct,
        distinct_on,
        items,
        from,
        filter: select.selection.map(expr_from).transpose()?,
        group_by,
        having: select.having.map(expr_from).transpose()?,
    })
}

fn select_item(item: sp::SelectItem, context: &str) -> SqlResult<SelectItem> {
    Ok(match item {
        sp::SelectItem::UnnamedExpr(expr) => {
            SelectItem::Expr { expr: expr_from(expr)?, alias: None }
        }
        sp::SelectItem::ExprWithAlias { expr, alias } => {
            SelectItem::Expr { expr: expr_from(expr)?, alias: Some(ident(&alias)) }
        }
        sp::SelectItem::Wildcard(_) => SelectItem::Wildcard,
        sp::SelectItem::QualifiedWildcard(
            sp::SelectItemQualifiedWildcardKind::ObjectName(name),
            _,
        ) => SelectItem::QualifiedWildcard(object_name(&name)?),
        other => return Err(SqlError::unsupported(format!("{context} {other}"))),
    })
}

fn returning(items: Option<Vec<sp::SelectItem>>) -> SqlResult<Vec<SelectItem>> {
    let Some(items) = items else { return Ok(Vec::new()) };
    items.into_iter().map(|item| select_item(item, "RETURNING")).collect()
}

fn assignments(list: Vec<sp::Assignment>) -> SqlResult<Vec<(String, Expr)>> {
    list.into_iter()
        .map(|assignment| match assignment.target {
            sp::AssignmentTarget::ColumnName(name) => {
                let column = match name.0.last() {
                    Some(sp::ObjectNamePart::Identifier(id)) => ident(id),
                    _ => return Err(SqlError::syntax("a column name is expected")),
                };
                Ok((column, expr_from(assignment.value)?))
            }
            sp::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported("SET (a, b) = (...)")),
        })
        .collect()
}

fn insert_from(insert: sp::Insert) -> SqlResult<Insert> {
    let sp::TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT INTO a table function"));
    };
    let table = TableRef {
        alias: insert.table_alias.as_ref().map(|alias| ident(&alias.alias)),
        ..TableRef::named(object_name(name)?)
    };
    let columns = insert
        .columns
        .iter()
        .map(|name| match name.0.last() {
            Some(sp::ObjectNamePart::Identifier(id)) => Ok(ident(id)),
            _ => Err(SqlError::syntax("a column name is expected")),
        })
        .collect::<SqlResult<_>>()?;
    let source = match insert.source {
        None => InsertSource::DefaultValues,
        Some(query) => {
            let query = query_from(*query)?;
            match query.body {
                QueryBody::Values(rows) if query.order_by.is_empty() && query.limit.is_none() => {
                    InsertSource::Values(rows)
                }
                _ => InsertSource::Query(Box::new(query)),
            }
        }
    };
    let on_conflict = match insert.on {
        None => None,
        Some(sp::OnInsert::OnConflict(conflict)) => {
            let columns = match conflict.conflict_target {
                None => Vec::new(),
                Some(sp::ConflictTarget::Columns(columns)) => columns.iter().map(ident).collect(),
                Some(sp::ConflictTarget::OnConstraint(_)) => {
                    return Err(SqlError::unsupported("ON CONFLICT ON CONSTRAINT"));
                }
            };
            let action = match conflict.action {
                sp::OnConflictAction::DoNothing => ConflictAction::Nothing,
                sp::OnConflictAction::DoUpdate(update) => ConflictAction::Update {
                    assignments: assignments(update.assignments)?,
                    filter: update.selection.map(expr_from).transpose()?,
                },
            };
            Some(OnConflict { columns, action })
        }
        Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY UPDATE")),
    };
    Ok(Insert { table, columns, source, on_conflict, returning: returning(insert.returning)? })
}

fn update_from(update: sp::Update) -> SqlResult<Update> {
    if !update.table.joins.is_empty() || update.from.is_some() {
        return Err(SqlError::unsupported("UPDATE with FROM or joins"));
    }
    Ok(Update {
        table: table_ref(&update.table.relation)?,
        assignments: assignments(update.assignments)?,
        filter: update.selection.map(expr_from).transpose()?,
        returning: returning(update.returning)?,
    })
}

fn delete_from(delete: sp::Delete) -> SqlResult<Delete> {
    let tables = match delete.from {
        sp::FromTable::WithFromKeyword(tables) | sp::FromTable::WithoutKeyword(tables) => tables,
    };
    if tables.len() != 1 || !tables[0].joins.is_empty() || delete.using.is_some() {
        return Err(SqlError::unsupported("DELETE from several tables or with USING"));
    }
    Ok(Delete {
        table: table_ref(&tables[0].relation)?,
        filter: delete.selection.map(expr_from).transpose()?,
        returning: returning(delete.returning)?,
    })
}

#[cfg(test)]
mod tests;
