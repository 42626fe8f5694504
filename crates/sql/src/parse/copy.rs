//! `COPY table [(columns)] FROM STDIN`, the statement: sqlparser does not take PostgreSQL's
//! option list (e.g. pgbench's `with (freeze on)`), so it is parsed here. The data formats are
//! `crate::copy`'s.

use crate::ast::{CopyFrom, CopyOptions, Statement};
use crate::error::{SqlError, SqlResult};

/// Parses `COPY name [(col, ...)] FROM STDIN [[WITH] (option [value], ...)]` and the older
/// option spellings (`CSV`, `HEADER`, `DELIMITER 'x'`, `NULL 'x'`, `BINARY` is refused).
pub fn parse_copy(sql: &str) -> SqlResult<Statement> {
    let tokens = tokenize(sql)?;
    let mut at = 0;
    let next = |at: &mut usize| -> Option<Token> {
        let token = tokens.get(*at).cloned();
        *at += 1;
        token
    };
    let word = |token: &Option<Token>, expected: &str| matches!(token, Some(Token::Word(w)) if w.eq_ignore_ascii_case(expected));
    if !word(&next(&mut at), "copy") {
        return Err(SqlError::syntax("syntax error: COPY expected"));
    }
    let table = match next(&mut at) {
        Some(Token::Word(name)) | Some(Token::Quoted(name)) => name,
        _ => return Err(SqlError::syntax("syntax error: a table name is expected after COPY")),
    };
    let table = match table.split_once('.') {
        Some(("public", name)) => name.to_string(),
        Some(_) => return Err(SqlError::unsupported("COPY of a table in another schema")),
        None => table,
    };
    let mut columns = Vec::new();
    let mut token = next(&mut at);
    if token == Some(Token::Punct('(')) {
        loop {
            match next(&mut at) {
                Some(Token::Word(name)) => columns.push(name.to_ascii_lowercase()),
                Some(Token::Quoted(name)) => columns.push(name),
                _ => return Err(SqlError::syntax("syntax error: a column name is expected")),
            }
            match next(&mut at) {
                Some(Token::Punct(',')) => continue,
                Some(Token::Punct(')')) => break,
                _ => return Err(SqlError::syntax("syntax error: ',' or ')' expected")),
            }
        }
        token = next(&mut at);
    }
    if word(&token, "to") {
        return Err(SqlError::unsupported("COPY TO (only COPY FROM STDIN)"));
    }
    if !word(&token, "from") {
        return Err(SqlError::syntax("syntax error: FROM expected in COPY"));
    }
    let source = next(&mut at);
    if !word(&source, "stdin") {
        return Err(SqlError::unsupported(
            "COPY FROM a file or program (only COPY FROM STDIN, as psql's \\copy sends)",
        ));
    }
    let mut options = CopyOptions::text();
    let mut token = next(&mut at);
    if word(&token, "with") {
        token = next(&mut at);
    }
    let mut set = |name: &str, value: Option<Token>| -> SqlResult<()> {
        let text = |value: Option<Token>| match value {
            Some(Token::String(s) | Token::Word(s)) => Ok(s),
            _ => Err(SqlError::syntax(format!("syntax error: COPY option {name} needs a value"))),
        };
        let single_byte = |value: String, what: &str| {
            let bytes = value.as_bytes();
            if bytes.len() == 1 {
                Ok(bytes[0])
            } else {
                Err(SqlError::new(
                    "22023",
                    format!("COPY {what} must be a single one-byte character"),
                ))
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "format" => match text(value)?.to_ascii_lowercase().as_str() {
                "csv" => options.set_csv(),
                "text" => {}
                "binary" => return Err(SqlError::unsupported("COPY in binary format")),
                other => {
                    return Err(SqlError::new(
                        "22023",
                        format!("COPY format \"{other}\" not recognized"),
                    ));
                }
            },
            "csv" => options.set_csv(),
            "binary" => return Err(SqlError::unsupported("COPY in binary format")),
            "delimiter" => options.delimiter = single_byte(text(value)?, "delimiter")?,
            "null" => options.null = text(value)?,
            "header" => {
                options.header = match value {
                    None => true,
                    Some(value) => {
                        matches!(
                            text(Some(value))?.to_ascii_lowercase().as_str(),
                            "true" | "on" | "1"
                        )
                    }
                }
            }
            "quote" => options.quote = single_byte(text(value)?, "quote")?,
            "escape" => options.escape = single_byte(text(value)?, "escape")?,
            // Hints that change nothing in memory (FREEZE: pgbench -i), or encodings (UTF-8 only).
            "freeze" | "encoding" => {}
            other => return Err(SqlError::unsupported(format!("the COPY option \"{other}\""))),
        }
        Ok(())
    };
    if token == Some(Token::Punct('(')) {
        loop {
            let name = match next(&mut at) {
                Some(Token::Word(name)) => name,
                _ => return Err(SqlError::syntax("syntax error: a COPY option is expected")),
            };
            let value = match tokens.get(at) {
                Some(Token::Punct(',' | ')')) | None => None,
                Some(_) => next(&mut at),
            };
            set(&name, value)?;
            match next(&mut at) {
                Some(Token::Punct(',')) => continue,
                Some(Token::Punct(')')) => break,
                _ => {
                    return Err(SqlError::syntax(
                        "syntax error: ',' or ')' expected in COPY options",
                    ));
                }
            }
        }
    } else {
        // The pre-9.0 spelling: `CSV HEADER DELIMITER ',' NULL ''`.
        while let Some(Token::Word(name)) = token {
            let takes_value = matches!(
                name.to_ascii_lowercase().as_str(),
                "delimiter" | "null" | "quote" | "escape" | "encoding"
            );
            let value = if takes_value {
                let mut value = next(&mut at);
                if word(&value, "as") {
                    value = next(&mut at);
                }
                value
            } else {
                None
            };
            set(&name, value)?;
            token = next(&mut at);
        }
        if token.is_some() {
            return Err(SqlError::syntax("syntax error at the end of COPY"));
        }
    }
    if at < tokens.len() {
        return Err(SqlError::syntax("syntax error at the end of COPY"));
    }
    if options.csv && options.null.is_empty() && options.delimiter == options.quote {
        return Err(SqlError::new("22023", "COPY delimiter and quote must be different"));
    }
    Ok(Statement::Copy(Box::new(CopyFrom { table, columns, options })))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    String(String),
    Punct(char),
}

fn tokenize(sql: &str) -> SqlResult<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = sql.trim().trim_end_matches(';').chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_alphanumeric() || c == '_' || c == '.' {
                    word.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(Token::Word(word.to_ascii_lowercase()));
        } else if c == '\'' || c == '"' || c == 'E' {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next() {
                    Some(q) if q == c => {
                        if chars.peek() == Some(&c) {
                            text.push(c);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    Some(other) => text.push(other),
                    None => return Err(SqlError::syntax("unterminated quoted string in COPY")),
                }
            }
            tokens.push(if c == '"' { Token::Quoted(text) } else { Token::String(text) });
        } else if matches!(c, '(' | ')' | ',') {
            tokens.push(Token::Punct(c));
            chars.next();
        } else {
            return Err(SqlError::syntax(format!("syntax error at or near \"{c}\" in COPY")));
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_of(sql: &str) -> CopyFrom {
        match parse_copy(sql).unwrap() {
            Statement::Copy(copy) => *copy,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn statements_parse_with_both_option_spellings() {
        let copy = copy_of("copy pgbench_accounts from stdin with (freeze on)");
        assert_eq!(copy.table, "pgbench_accounts");
        assert!(!copy.options.csv);
        let copy =
            copy_of("COPY t (a, \"B\") FROM STDIN WITH (FORMAT csv, HEADER true, DELIMITER ';')");
        assert_eq!(copy.columns, vec!["a".to_string(), "B".to_string()]);
        assert!(copy.options.csv && copy.options.header);
        assert_eq!(copy.options.delimiter, b';');
        assert_eq!(copy.options.null, "");
        let copy = copy_of("copy public.t from stdin csv header null 'NA'");
        assert!(copy.options.csv && copy.options.header);
        assert_eq!(copy.options.null, "NA");
        assert_eq!(parse_copy("copy t to stdout").unwrap_err().code, "0A000");
        assert_eq!(parse_copy("copy t from '/etc/passwd'").unwrap_err().code, "0A000");
        assert_eq!(parse_copy("copy t from stdin (format binary)").unwrap_err().code, "0A000");
        assert_eq!(parse_copy("copy t from stdin (bogus 1)").unwrap_err().code, "0A000");
        assert_eq!(parse_copy("copy t (a from stdin").unwrap_err().code, "42601");
    }
}
