//! Session settings: `SET`, `RESET` and `SHOW`, their values as PostgreSQL spells them
//! (isolation levels, Booleans, durations), and the settings a session starts with.

use super::{Outcome, Session, Tag, TransactionStatus};
use crate::error::{SqlError, SqlResult};
use crate::plan::OutputColumn;
use crate::types::{Type, Value};
use engram_engine::Isolation;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) fn default_settings() -> BTreeMap<String, String> {
    [
        ("server_version", "15.0"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("timezone", "UTC"),
        ("intervalstyle", "postgres"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("application_name", ""),
        ("search_path", "public"),
        ("synchronous_commit", "on"),
        ("statement_timeout", "0"),
        ("lock_timeout", "0"),
        ("extra_float_digits", "1"),
        ("client_min_messages", "notice"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The SQL name of an isolation level, as `BEGIN ISOLATION LEVEL` and `SHOW` spell it.
pub fn isolation_sql(level: Isolation) -> &'static str {
    match level {
        Isolation::ReadCommitted => "read committed",
        Isolation::RepeatableRead => "repeatable read",
        Isolation::Serializable => "serializable",
        Isolation::Snapshot => "snapshot",
    }
}

/// A timeout setting's value (`None`: off, as 0 is), or 22023 naming the setting.
fn parse_timeout(name: &str, text: &str) -> SqlResult<Option<std::time::Duration>> {
    let ms = parse_duration_ms(text).ok_or_else(|| {
        SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{text}\""))
    })?;
    Ok(ms.filter(|ms| *ms > 0).map(std::time::Duration::from_millis))
}

/// A PostgreSQL time setting in milliseconds: `500`, `500ms`, `2s`, `1min`, `1h`.
fn parse_duration_ms(text: &str) -> Option<Option<u64>> {
    let text = text.trim().trim_matches('\'').to_ascii_lowercase();
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let number: u64 = digits.parse().ok()?;
    let unit = text[digits.len()..].trim();
    let factor = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    Some(Some(number.checked_mul(factor)?))
}

fn parse_isolation(text: &str) -> Option<Isolation> {
    match text.trim().to_ascii_lowercase().replace('-', " ").as_str() {
        "read committed" | "read uncommitted" => Some(Isolation::ReadCommitted),
        "repeatable read" => Some(Isolation::RepeatableRead),
        "serializable" => Some(Isolation::Serializable),
        "snapshot" => Some(Isolation::Snapshot),
        _ => None,
    }
}

/// A Boolean setting's value as PostgreSQL takes it (`on`, `true`, `yes`, `1` and prefixes).
fn parse_bool(text: &str) -> Option<bool> {
    let text = text.trim().to_ascii_lowercase();
    match text.as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" | "tr" | "tru" | "ye" => Some(true),
        "off" | "false" | "no" | "0" | "f" | "n" | "of" | "fa" | "fal" | "fals" => Some(false),
        _ => None,
    }
}

fn on_off(value: bool) -> &'static str {
    if value { "on" } else { "off" }
}

impl Session {
    /// Makes this session's settings the thread's (its `TimeZone`, which reading and writing
    /// `timestamptz` values uses, its `IntervalStyle`, and its transaction's start, which
    /// `'now'` reads): every statement entry point calls it, and a server calls it before it
    /// converts parameters or writes rows of this session. When the thread already holds them
    /// (the same session and settings), it costs one comparison; the transaction's start is
    /// set where a transaction begins and ends.
    pub fn enter(&self) {
        crate::types::zone::enter((self.id, self.settings_changes), || {
            crate::types::zone::install(&self.zone);
            crate::types::set_interval_style(self.interval_style);
            crate::types::set_transaction_start(
                self.id,
                self.engine_open.then_some(self.txn_started),
            );
        });
    }

    /// `DISCARD SEQUENCES`, or `DISCARD ALL` (also the prepared statements and settings).
    pub(super) fn discard(&mut self, all: bool) -> SqlResult<Outcome> {
        if all && self.status != TransactionStatus::Idle {
            return Err(SqlError::new(
                "25001",
                "DISCARD ALL cannot run inside a transaction block",
            ));
        }
        self.sequence_values = Default::default();
        if all {
            self.prepared.clear();
            self.set("all", None)?;
        }
        let tag = if all { "DISCARD ALL" } else { "DISCARD SEQUENCES" };
        Ok(Outcome::Command { tag: tag.into() })
    }

    pub(super) fn set(&mut self, name: &str, value: Option<&str>) -> SqlResult<()> {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "transaction_isolation" => {
                let level = value.and_then(parse_isolation).ok_or_else(|| {
                    SqlError::new("22023", "invalid value for transaction_isolation")
                })?;
                self.txn_isolation = Some(level);
            }
            "all" if value.is_none() => {
                // RESET ALL.
                self.default_isolation = Isolation::ReadCommitted;
                self.default_read_only = false;
                self.statement_timeout = None;
                self.lock_timeout = None;
                self.synchronous_commit = true;
                self.settings = default_settings();
                self.zone = crate::types::Zone::utc();
                self.interval_style = crate::types::IntervalStyle::Postgres;
                self.settings_changes += 1;
                self.enter();
            }
            "transaction_read_only" => {
                let read_only =
                    value.map_or(Some(self.default_read_only), parse_bool).ok_or_else(|| {
                        SqlError::new(
                            "22023",
                            "invalid value for parameter \"transaction_read_only\"",
                        )
                    })?;
                if self.status == TransactionStatus::Idle {
                    // Outside a transaction block the setting lasts for no statement.
                    return Ok(());
                }
                self.set_transaction_read_only(read_only)?;
            }
            "default_transaction_read_only" => {
                self.default_read_only =
                    value.map_or(Some(false), parse_bool).ok_or_else(|| {
                        SqlError::new(
                            "22023",
                            "parameter \"default_transaction_read_only\" requires a Boolean value",
                        )
                    })?;
            }
            "default_transaction_isolation" => {
                self.default_isolation = match value {
                    None => Isolation::ReadCommitted,
                    Some(text) => parse_isolation(text).ok_or_else(|| {
                        SqlError::new("22023", format!("invalid value for parameter \"default_transaction_isolation\": \"{text}\""))
                    })?,
                };
            }
            "statement_timeout" | "lock_timeout" => {
                let text = value.unwrap_or("0");
                let limit = parse_timeout(&name, text)?;
                match name.as_str() {
                    "statement_timeout" => self.statement_timeout = limit,
                    _ => self.lock_timeout = limit,
                }
                self.settings.insert(name, text.to_string());
            }
            "intervalstyle" => {
                let style = match value {
                    None => crate::types::IntervalStyle::Postgres,
                    Some(text) => crate::types::IntervalStyle::named(text.trim_matches('\''))
                        .ok_or_else(|| {
                            SqlError::new(
                                "22023",
                                format!(
                                    "invalid value for parameter \"IntervalStyle\": \"{text}\""
                                ),
                            )
                        })?,
                };
                self.settings.insert(name, style.name().to_string());
                self.interval_style = style;
                self.settings_changes += 1;
                self.enter();
            }
            "timezone" => {
                let zone = match value {
                    None => crate::types::Zone::utc(),
                    Some(text) => {
                        let text = text.trim().trim_matches('\'');
                        let text = if text.eq_ignore_ascii_case("local")
                            || text.eq_ignore_ascii_case("default")
                        {
                            "UTC"
                        } else {
                            text
                        };
                        crate::types::Zone::named(text).ok_or_else(|| {
                            SqlError::new(
                                "22023",
                                format!("invalid value for parameter \"TimeZone\": \"{text}\""),
                            )
                        })?
                    }
                };
                self.settings.insert(name, zone.name().to_string());
                self.zone = zone;
                self.settings_changes += 1;
                self.enter();
            }
            "synchronous_commit" => {
                let on = !matches!(
                    value.map(str::to_ascii_lowercase).as_deref(),
                    Some("off" | "false" | "0" | "local")
                );
                self.synchronous_commit = on;
                self.settings.insert(name, if on { "on" } else { "off" }.into());
            }
            _ => match value {
                Some(value) => {
                    self.settings.insert(name, value.to_string());
                }
                None => {
                    let default = default_settings().remove(&name);
                    match default {
                        Some(default) => {
                            self.settings.insert(name, default);
                        }
                        None => {
                            self.settings.remove(&name);
                        }
                    }
                }
            },
        }
        Ok(())
    }

    /// `SHOW name`, and `SHOW ALL`.
    pub(super) fn show(&self, name: &str) -> SqlResult<Outcome> {
        let name = name.to_ascii_lowercase();
        let value = match name.as_str() {
            "transaction isolation level" | "transaction_isolation" => {
                isolation_sql(self.isolation()).to_string()
            }
            "default_transaction_isolation" => isolation_sql(self.default_isolation).to_string(),
            "transaction_read_only" => on_off(self.read_only()).to_string(),
            "default_transaction_read_only" => on_off(self.default_read_only).to_string(),
            "all" => {
                let rows = self
                    .settings
                    .iter()
                    .map(|(k, v)| {
                        vec![Value::Text(k.clone().into()), Value::Text(v.clone().into())]
                    })
                    .collect::<Vec<_>>();
                return Ok(Outcome::Rows {
                    columns: Arc::new([
                        OutputColumn { name: "name".into(), ty: Type::Text },
                        OutputColumn { name: "setting".into(), ty: Type::Text },
                    ]),
                    tag: Tag::counted("SHOW ", rows.len() as u64),
                    rows,
                });
            }
            other => self.settings.get(other).cloned().ok_or_else(|| {
                SqlError::new("42704", format!("unrecognized configuration parameter \"{other}\""))
            })?,
        };
        let column = name.replace(' ', "_");
        Ok(Outcome::Rows {
            columns: Arc::new([OutputColumn { name: column, ty: Type::Text }]),
            rows: vec![vec![Value::Text(value.into())]],
            tag: "SHOW".into(),
        })
    }
}
