//! `COPY table [(columns)] FROM STDIN`: the statement (sqlparser does not take PostgreSQL's
//! option list, e.g. pgbench's `with (freeze on)`) and the two data formats, text and CSV.
//!
//! The data arrives in chunks that split records anywhere; [`CopyIn`] keeps the unfinished
//! tail and inserts each complete record through one prepared INSERT, inside one transaction
//! (the session's block, or one of its own when none is open), so a COPY is all or nothing.

pub use crate::ast::{CopyFrom, CopyOptions};
use crate::ast::{Expr, Insert, InsertSource, Statement, TableRef};
use crate::error::{SqlError, SqlResult};
use crate::session::{Prepared, Session};
use crate::types::{Type, Value, parse_text};
use std::sync::Arc;

/// Splits one complete record off the front of `data`: its fields (`None` is NULL) and the
/// bytes it took, or `None` when the record is not complete yet (`last`: no more data comes,
/// so a final line without a newline is complete). `\.` alone on a line ends the data.
pub fn next_record(data: &[u8], options: &CopyOptions, last: bool) -> SqlResult<Record> {
    if data.is_empty() {
        return Ok(None);
    }
    if options.csv { csv_record(data, options, last) } else { text_record(data, options, last) }
}

fn line_end(data: &[u8], last: bool) -> Option<(usize, usize)> {
    match data.iter().position(|&b| b == b'\n') {
        Some(at) => {
            let end = if at > 0 && data[at - 1] == b'\r' { at - 1 } else { at };
            Some((end, at + 1))
        }
        None if last => Some((data.len(), data.len())),
        None => None,
    }
}

fn utf8(bytes: Vec<u8>) -> SqlResult<String> {
    String::from_utf8(bytes).map_err(|_| {
        SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\" in COPY data")
    })
}

/// One record's fields (`None` is NULL; no fields: the `\.` end marker) and the bytes it
/// took, or `None` when incomplete.
pub type Record = Option<(Option<Vec<Option<String>>>, usize)>;

fn text_record(data: &[u8], options: &CopyOptions, last: bool) -> SqlResult<Record> {
    let Some((end, consumed)) = line_end(data, last) else { return Ok(None) };
    let line = &data[..end];
    if line == b"\\." {
        return Ok(Some((None, consumed)));
    }
    let mut fields = Vec::new();
    let mut field = Vec::new();
    let mut raw_start = 0;
    let mut i = 0;
    let finish = |field: &mut Vec<u8>, raw: &[u8], fields: &mut Vec<Option<String>>| {
        let value =
            if raw == options.null.as_bytes() { None } else { Some(utf8(std::mem::take(field))?) };
        field.clear();
        fields.push(value);
        Ok::<(), SqlError>(())
    };
    while i < line.len() {
        let b = line[i];
        if b == options.delimiter {
            finish(&mut field, &line[raw_start..i], &mut fields)?;
            i += 1;
            raw_start = i;
            continue;
        }
        if b == b'\\' && i + 1 < line.len() {
            let e = line[i + 1];
            i += 2;
            match e {
                b'b' => field.push(8),
                b'f' => field.push(12),
                b'n' => field.push(b'\n'),
                b'r' => field.push(b'\r'),
                b't' => field.push(b'\t'),
                b'v' => field.push(11),
                b'0'..=b'7' => {
                    let mut value = u32::from(e - b'0');
                    for _ in 0..2 {
                        match line.get(i) {
                            Some(&d @ b'0'..=b'7') => {
                                value = value * 8 + u32::from(d - b'0');
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    field.push(value as u8);
                }
                b'x' => {
                    let mut value = 0u32;
                    let mut digits = 0;
                    while digits < 2 {
                        match line.get(i).and_then(|d| (*d as char).to_digit(16)) {
                            Some(d) => {
                                value = value * 16 + d;
                                i += 1;
                                digits += 1;
                            }
                            None => break,
                        }
                    }
                    if digits == 0 {
                        field.push(b'x');
                    } else {
                        field.push(value as u8);
                    }
                }
                other => field.push(other),
            }
            continue;
        }
        field.push(b);
        i += 1;
    }
    finish(&mut field, &line[raw_start..], &mut fields)?;
    Ok(Some((Some(fields), consumed)))
}

fn csv_record(data: &[u8], options: &CopyOptions, last: bool) -> SqlResult<Record> {
    let mut fields = Vec::new();
    let mut field = Vec::new();
    let mut quoted_field = false;
    let mut in_quotes = false;
    let mut i = 0;
    // `\.` alone on a line ends CSV data too.
    if let Some((end, consumed)) = line_end(data, last)
        && &data[..end] == b"\\."
    {
        return Ok(Some((None, consumed)));
    }
    loop {
        let Some(&b) = data.get(i) else {
            if !last {
                return Ok(None);
            }
            if in_quotes {
                return Err(SqlError::new("22P04", "unterminated CSV quoted field"));
            }
            push_csv(&mut fields, &mut field, quoted_field, options)?;
            return Ok(Some((Some(fields), i)));
        };
        if in_quotes {
            if b == options.escape && data.get(i + 1) == Some(&options.quote) {
                field.push(options.quote);
                i += 2;
            } else if b == options.escape && i + 1 == data.len() && !last {
                // Cannot tell an escape from a closing quote before the next byte arrives.
                return Ok(None);
            } else if b == options.quote {
                in_quotes = false;
                i += 1;
            } else {
                field.push(b);
                i += 1;
            }
            continue;
        }
        if b == options.quote {
            in_quotes = true;
            quoted_field = true;
            i += 1;
        } else if b == options.delimiter {
            push_csv(&mut fields, &mut field, quoted_field, options)?;
            quoted_field = false;
            i += 1;
        } else if b == b'\n' || (b == b'\r' && data.get(i + 1) == Some(&b'\n')) {
            push_csv(&mut fields, &mut field, quoted_field, options)?;
            let consumed = if b == b'\r' { i + 2 } else { i + 1 };
            return Ok(Some((Some(fields), consumed)));
        } else {
            field.push(b);
            i += 1;
        }
    }
}

fn push_csv(
    fields: &mut Vec<Option<String>>,
    field: &mut Vec<u8>,
    quoted: bool,
    options: &CopyOptions,
) -> SqlResult<()> {
    let bytes = std::mem::take(field);
    if !quoted && bytes == options.null.as_bytes() {
        fields.push(None);
    } else {
        fields.push(Some(utf8(bytes)?));
    }
    Ok(())
}

/// A COPY FROM STDIN in progress: rows are inserted as their records complete.
#[derive(Debug)]
pub struct CopyIn {
    copy: CopyFrom,
    insert: Arc<Prepared>,
    types: Vec<Type>,
    pending: Vec<u8>,
    /// The COPY opened its own transaction (the session was idle).
    own_transaction: bool,
    rows: u64,
    line: u64,
    header_skipped: bool,
    ended: bool,
    /// A record failed; the COPY's transaction is already rolled back (or its block failed).
    failed: bool,
    values: Vec<Value>,
}

impl CopyIn {
    /// Prepares the INSERT a COPY runs per record and opens its transaction.
    pub(crate) fn begin(session: &mut Session, copy: &CopyFrom) -> SqlResult<CopyIn> {
        let insert = Statement::Insert(Box::new(Insert {
            table: TableRef::named(copy.table.clone()),
            columns: copy.columns.clone(),
            source: InsertSource::Values(vec![
                (1..=copy_width(session, copy)?).map(Expr::Param).collect(),
            ]),
            on_conflict: None,
            returning: Vec::new(),
        }));
        let prepared = session.prepare_parsed("COPY", insert)?;
        let types = prepared.param_types.clone();
        let own_transaction = session.begin_copy_transaction()?;
        Ok(CopyIn {
            copy: copy.clone(),
            insert: prepared,
            types,
            pending: Vec::new(),
            own_transaction,
            rows: 0,
            line: 0,
            header_skipped: false,
            ended: false,
            failed: false,
            values: Vec::new(),
        })
    }

    /// Columns per record (what CopyInResponse announces).
    pub fn columns(&self) -> usize {
        self.types.len()
    }

    /// Rows inserted so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Takes the next chunk of data. An error ends the COPY (rolled back).
    pub fn feed(&mut self, session: &mut Session, data: &[u8]) -> SqlResult<()> {
        self.pending.extend_from_slice(data);
        if self.failed {
            return Err(SqlError::new("57014", "COPY has already failed"));
        }
        let result = self.drain(session, false);
        if result.is_err() {
            self.failed = true;
            // A rollback has nothing to report.
            let _ = session.end_copy(self.own_transaction, false);
        }
        result
    }

    /// The end of the data: inserts the last record and commits (when the COPY has its own
    /// transaction). Returns the command tag.
    pub fn finish(mut self, session: &mut Session) -> SqlResult<String> {
        if self.failed {
            return Err(SqlError::new("57014", "COPY has already failed"));
        }
        let result = self.drain(session, true);
        if let Err(error) = result {
            let _ = session.end_copy(self.own_transaction, false);
            return Err(error);
        }
        session.end_copy(self.own_transaction, true).map(|()| format!("COPY {}", self.rows))
    }

    /// The client gave up (`CopyFail`) or went away.
    pub fn fail(self, session: &mut Session, message: &str) -> SqlError {
        if self.failed {
            return SqlError::new("57014", format!("COPY from stdin failed: {message}"));
        }
        let _ = session.end_copy(self.own_transaction, false);
        SqlError::new("57014", format!("COPY from stdin failed: {message}"))
    }

    fn drain(&mut self, session: &mut Session, last: bool) -> SqlResult<()> {
        // Text fields of `timestamptz` are read in the session's zone; other sessions may
        // have run on this thread since the last chunk.
        session.enter();
        let mut start = 0;
        let result = loop {
            if self.ended {
                break Ok(());
            }
            let record = match next_record(&self.pending[start..], &self.copy.options, last) {
                Ok(Some(record)) => record,
                Ok(None) => break Ok(()),
                Err(error) => break Err(error),
            };
            let (fields, consumed) = record;
            start += consumed;
            self.line += 1;
            let Some(fields) = fields else {
                self.ended = true;
                break Ok(());
            };
            if self.copy.options.header && !self.header_skipped {
                self.header_skipped = true;
                continue;
            }
            if let Err(error) = self.insert_record(session, fields) {
                break Err(error);
            }
        };
        self.pending.drain(..start);
        result.map_err(|error| SqlError {
            message: format!("{} (COPY {}, line {})", error.message, self.copy.table, self.line),
            ..error
        })
    }

    fn insert_record(
        &mut self,
        session: &mut Session,
        fields: Vec<Option<String>>,
    ) -> SqlResult<()> {
        if fields.len() != self.types.len() {
            return Err(SqlError::new(
                "22P04",
                if fields.len() < self.types.len() {
                    "missing data for a column".to_string()
                } else {
                    "extra data after last expected column".to_string()
                },
            ));
        }
        self.values.clear();
        for (field, ty) in fields.into_iter().zip(&self.types) {
            self.values.push(match field {
                None => Value::Null,
                Some(text) => parse_text(&text, *ty)?,
            });
        }
        session.copy_row(&self.insert, &self.values)?;
        self.rows += 1;
        Ok(())
    }
}

/// How many values a record of `copy` holds.
fn copy_width(session: &Session, copy: &CopyFrom) -> SqlResult<usize> {
    if !copy.columns.is_empty() {
        return Ok(copy.columns.len());
    }
    let table = session.database().catalog.read().table_in(&copy.table, session.view())?.0;
    Ok(table.schema.visible().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(data: &[u8], options: &CopyOptions) -> Vec<Vec<Option<String>>> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some((fields, consumed)) = next_record(&data[at..], options, true).unwrap() {
            at += consumed;
            match fields {
                Some(fields) => out.push(fields),
                None => break,
            }
        }
        out
    }

    #[test]
    fn text_format_escapes_and_nulls() {
        let options = CopyOptions::text();
        let data = b"1\tone\t\\N\n2\ta\\tb\\nc\\\\\t\\101\\x41\r\n\\.\nignored\n";
        assert_eq!(
            records(data, &options),
            vec![
                vec![Some("1".into()), Some("one".into()), None],
                vec![Some("2".into()), Some("a\tb\nc\\".into()), Some("AA".into())],
            ]
        );
        // An empty field is the empty string, not NULL.
        assert_eq!(records(b"1\t\n", &options), vec![vec![Some("1".into()), Some(String::new())]]);
    }

    #[test]
    fn csv_quotes_span_lines_and_chunks() {
        let mut options = CopyOptions::text();
        options.set_csv();
        let data = b"1,\"a,b\",\n2,\"line\nbreak \"\"q\"\"\",\"\"\n";
        assert_eq!(
            records(data, &options),
            vec![
                vec![Some("1".into()), Some("a,b".into()), None],
                vec![Some("2".into()), Some("line\nbreak \"q\"".into()), Some(String::new())],
            ]
        );
        // A record split inside quotes is not complete until its end arrives.
        assert_eq!(next_record(b"3,\"open", &options, false).unwrap(), None);
        assert_eq!(next_record(b"3,\"open\"", &options, false).unwrap(), None);
        assert!(next_record(b"3,\"open", &options, true).is_err());
    }
}
