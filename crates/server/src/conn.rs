//! One client connection: startup and authentication, then the simple and extended query
//! protocols over an Engram [`Session`].
//!
//! Replies are fed into the connection's write buffer and sent when the client needs them:
//! at Sync, Flush, the end of a simple query, or when COPY waits for data. Before anything
//! that acknowledges a commit leaves, the connection awaits the commit's epoch being durable
//! (a future woken by the logger, so waiting commits hold no thread).
//!
//! Statement execution runs on the event-loop thread: engine calls take microseconds and
//! never wait, except DDL (and statements that meet a running DDL transaction), which may
//! wait for the schema lock and run under `block_in_place`, and row-lock waits
//! (`block_here`), which hand the thread's other work away first the same way.

use crate::auth::{self, Started};
use crate::codec::{Codec, Wire, error_fields, protocol_error};
use crate::shared::Shared;
use crate::wire::{decode_param, put_field, result_oid};
use bytes::BytesMut;
use engram_engine::Epoch;
use engram_sql::ast::CopyFrom;
use engram_sql::ast::Statement;
use engram_sql::{
    Notice, Outcome, OutputColumn, Prepared, Session, SqlError, TransactionStatus, Type, Value,
};
use futures::future::FusedFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::messages::copy::CopyInResponse;
use pgwire::messages::data::{
    DataRow, FieldDescription, NoData, ParameterDescription, RowDescription,
};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery,
    TransactionStatus as WireStatus,
};
use pgwire::messages::startup::{BackendKeyData, ParameterStatus, SecretKey, Startup};
use pgwire::messages::{PgWireBackendMessage as B, PgWireFrontendMessage as F};
use pgwire::tokio::server::MaybeTls;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::watch;
use tokio_util::codec::{Framed, FramedParts};

type StopFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A statement running this long on an event-loop thread hands the loop to another thread.
pub(crate) const LONG_STATEMENT: std::time::Duration = std::time::Duration::from_millis(2);

/// Called from inside a long statement. A tokio worker that is running a task polls no
/// sockets, and a parked worker does not take over polling them by itself: without this, one
/// long scan would keep every other connection's I/O waiting, cancel requests included.
/// Spawning two empty tasks from here pushes one into this worker's stealable queue, which
/// wakes a parked worker; it steals and runs it, then parks polling the sockets.
pub(crate) fn hand_off_event_loop() {
    if let Ok(handle) = tokio::runtime::Handle::try_current()
        && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
    {
        handle.spawn(async {});
        handle.spawn(async {});
    }
}

/// Runs a row-lock wait on this thread: on the multi-threaded runtime after handing the
/// thread's other connections to another worker (`block_in_place`), so that they go on while
/// this one waits; elsewhere (a current-thread runtime, no runtime) as it is.
pub(crate) fn block_here(wait: &mut dyn FnMut()) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

/// A bound statement with its parameters, and the rows of a suspended execution.
struct Portal {
    prepared: Arc<Prepared>,
    params: Vec<Value>,
    /// Result formats per column (true: binary).
    binary: Vec<bool>,
    pending: Option<PendingRows>,
}

struct PendingRows {
    columns: Arc<[OutputColumn]>,
    rows: std::vec::IntoIter<Vec<Value>>,
    tag: engram_sql::Tag,
    sent: usize,
}

/// A connection as accepted: over TCP (TLS may follow) or on the Unix-domain socket.
pub(crate) enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// Serves one accepted connection until the client leaves, a fatal error, or shutdown.
pub(crate) async fn serve(stream: Accepted, shared: Arc<Shared>, shutdown: watch::Receiver<bool>) {
    let peer = match &stream {
        Accepted::Tcp(stream) => stream.peer_addr().ok(),
        Accepted::Unix(_) => None,
    };
    let startup = tokio::time::timeout(shared.config.startup_timeout(), async {
        let codec = Codec::new(shared.config.max_message_bytes);
        let mut wire = match stream {
            Accepted::Tcp(stream) => {
                let negotiated =
                    pgwire::tokio::server::negotiate_tls::<()>(stream, shared.tls.clone()).await?;
                let Some(framed) = negotiated else { return Ok(None) };
                let old = framed.into_parts();
                let mut parts = FramedParts::new(old.io, codec);
                parts.read_buf = old.read_buf;
                parts.write_buf = old.write_buf;
                Framed::from_parts(parts)
            }
            // No TLS on a Unix socket: startup answers an SSL request with 'N' (auth.rs).
            Accepted::Unix(stream) => Framed::new(MaybeTls::Unix(stream), codec.refusing_ssl()),
        };
        auth::startup(&mut wire, &shared).await.map(|started| started.map(|s| (wire, s)))
    })
    .await;
    let (wire, mut started) = match startup {
        Ok(Ok(Some(started))) => started,
        Ok(Ok(None)) => return,
        Ok(Err(error)) => {
            tracing::debug!(?peer, %error, "connection ended during startup");
            return;
        }
        Err(_) => {
            tracing::debug!(?peer, "startup timed out");
            return;
        }
    };
    started.session.set_long_statement_hook(LONG_STATEMENT, hand_off_event_loop);
    started.session.set_blocking(block_here);
    let mut connection = Connection {
        wire,
        session: started.session,
        shared: Arc::clone(&shared),
        unnamed: None,
        portals: HashMap::new(),
        skip_until_sync: false,
        implicit_until_sync: false,
        durable_wait: Epoch::NEVER,
        cancel: started.cancel,
        stop: FutureExt::fuse(Box::pin(crate::shared::stopped(shutdown)) as StopFuture),
        pending_notices: Vec::new(),
        text: String::new(),
    };
    let Started { pid, secret, startup, user, slot, .. } = started;
    let result = connection.run(startup, pid, secret, &user).await;
    if let Err(error) = result {
        tracing::debug!(?peer, %error, "connection closed");
    }
    shared.cancels.lock().remove(&pid);
    drop(slot);
    // Dropping the session rolls back an open transaction.
}

pub(crate) struct Connection {
    wire: Wire,
    session: Session,
    shared: Arc<Shared>,
    /// The unnamed prepared statement (named ones live in the session, shared with SQL
    /// PREPARE as in PostgreSQL).
    unnamed: Option<Arc<Prepared>>,
    portals: HashMap<String, Portal>,
    /// An extended-protocol error: discard messages until Sync.
    skip_until_sync: bool,
    /// The statements executed since the last Sync run in one implicit transaction, which the
    /// Sync commits (or rolls back after an error), as PostgreSQL runs a pipeline.
    implicit_until_sync: bool,
    /// The newest commit epoch not yet known durable; replies wait for it.
    durable_wait: Epoch,
    cancel: Arc<std::sync::atomic::AtomicBool>,
    /// Completes when the server shuts down (made once per connection, not per message).
    stop: futures::future::Fuse<StopFuture>,
    /// Notices of the connection itself (ignored startup options).
    pending_notices: Vec<String>,
    /// A reused buffer for values' text form.
    text: String,
}

/// libpq's `options` split as PostgreSQL splits it: on white space, where a backslash keeps
/// the next character (`-c default_transaction_isolation=repeatable\ read`).
fn option_words(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn wire_status(status: TransactionStatus) -> WireStatus {
    match status {
        TransactionStatus::Idle => WireStatus::Idle,
        TransactionStatus::InBlock => WireStatus::Transaction,
        TransactionStatus::Failed => WireStatus::Error,
    }
}

/// Per-column result formats from a Bind's codes (none: text; one: for all).
fn result_formats(codes: &[i16], columns: usize) -> Result<Vec<bool>, SqlError> {
    match codes {
        [] => Ok(vec![false; columns]),
        [one] => Ok(vec![*one == 1; columns]),
        many if many.len() == columns => Ok(many.iter().map(|c| *c == 1).collect()),
        many => Err(SqlError::new(
            "08P01",
            format!(
                "bind message has {} result formats but query has {columns} columns",
                many.len()
            ),
        )),
    }
}

impl Connection {
    async fn run(&mut self, startup: Startup, pid: i32, secret: i32, user: &str) -> io::Result<()> {
        self.apply_startup_options(&startup);
        for status in parameter_statuses(&self.session, user) {
            self.wire.feed(status).await?;
        }
        self.wire.feed(backend_key(pid, secret)).await?;
        self.ready().await?;
        loop {
            let Some(message) = self.next_message().await? else { return Ok(()) };
            if self.skip_until_sync && !matches!(message, F::Sync(_) | F::Terminate(_)) {
                continue;
            }
            match message {
                F::Query(query) => self.simple_query(&query.query).await?,
                F::Parse(parse) => {
                    let result = self.parse(parse);
                    self.extended_reply(result, B::ParseComplete(ParseComplete::new())).await?
                }
                F::Bind(bind) => {
                    let result = self.bind(bind);
                    self.extended_reply(result, B::BindComplete(BindComplete::new())).await?
                }
                F::Describe(describe) => {
                    let result = self.describe(describe).await;
                    self.extended_result(result).await?
                }
                F::Execute(execute) => {
                    let result = self.execute(execute).await;
                    self.extended_result(result).await?
                }
                F::Close(close) => {
                    self.close(close);
                    self.wire.feed(B::CloseComplete(CloseComplete::new())).await?
                }
                F::Flush(_) => self.flush().await?,
                F::Sync(_) => {
                    self.skip_until_sync = false;
                    if self.implicit_until_sync {
                        self.implicit_until_sync = false;
                        let ended = self.on_session(false, |session| session.end_string());
                        self.note_commit();
                        self.send_notices().await?;
                        if let Err(error) = ended {
                            self.send_error(&error).await?;
                        }
                    }
                    if self.session.status() == TransactionStatus::Idle {
                        self.portals.clear();
                    }
                    self.ready().await?
                }
                F::Terminate(_) => return Ok(()),
                // Stray COPY messages after a failed COPY are ignored, as PostgreSQL does.
                F::CopyData(_) | F::CopyDone(_) | F::CopyFail(_) => {}
                other => {
                    self.fatal("08P01", &format!("unexpected message {other:?}")).await?;
                    return Ok(());
                }
            }
        }
    }

    /// The next message; `None` when the client left or the server shuts down (the client
    /// was told). An idle transaction past its timeout is ended here.
    async fn next_message(&mut self) -> io::Result<Option<F>> {
        let idle_limit = match self.session.status() {
            TransactionStatus::Idle => None,
            _ => self.shared.config.idle_in_transaction_timeout(),
        };
        if self.stop.is_terminated() {
            return Ok(None);
        }
        let wire = &mut self.wire;
        let read = async {
            match idle_limit {
                Some(limit) => tokio::time::timeout(limit, wire.next()).await.ok(),
                None => Some(wire.next().await),
            }
        };
        let read = tokio::select! {
            biased;
            () = &mut self.stop => None,
            message = read => Some(message),
        };
        let Some(message) = read else {
            self.fatal("57P01", "terminating connection due to administrator command").await?;
            return Ok(None);
        };
        match message {
            None => {
                self.fatal("25P03", "terminating connection due to idle-in-transaction timeout")
                    .await?;
                Ok(None)
            }
            Some(None) => Ok(None),
            Some(Some(Ok(message))) => Ok(Some(message)),
            Some(Some(Err(error))) => {
                let _ = self.fatal("08P01", &error.to_string()).await;
                Err(error)
            }
        }
    }

    /// Startup parameters become session settings; libpq's `options` carries `-c name=value`.
    fn apply_startup_options(&mut self, startup: &Startup) {
        let mut settings = Vec::new();
        for (name, value) in &startup.parameters {
            match name.as_str() {
                "user" | "database" | "replication" => {}
                "options" => {
                    let words = option_words(value);
                    let mut words = words.iter().map(String::as_str);
                    while let Some(word) = words.next() {
                        let setting = if word == "-c" {
                            words.next().map(str::to_string)
                        } else {
                            word.strip_prefix("-c")
                                .or_else(|| word.strip_prefix("--"))
                                .map(str::to_string)
                        };
                        match setting.as_deref().and_then(|s| s.split_once('=')) {
                            Some((name, value)) => {
                                settings.push((name.replace('-', "_"), value.to_string()))
                            }
                            None => {
                                self.session_notice(format!("startup option \"{word}\" ignored"))
                            }
                        }
                    }
                }
                _ => settings.push((name.to_ascii_lowercase(), value.clone())),
            }
        }
        for (name, value) in settings {
            let set = Statement::Set { name: name.clone(), value: Some(value) };
            if let Err(error) = self.session.execute_statement(&set) {
                self.session_notice(format!(
                    "startup setting \"{name}\" ignored: {}",
                    error.message
                ));
            }
        }
    }

    fn session_notice(&mut self, message: String) {
        self.pending_notices.push(message);
    }

    async fn send_notices(&mut self) -> io::Result<()> {
        let mut notices: Vec<Notice> = self.pending_notices.drain(..).map(Notice::info).collect();
        notices.extend(self.session.take_notices());
        for notice in notices {
            self.wire
                .feed(B::NoticeResponse(NoticeResponse::new(error_fields(
                    notice.severity,
                    notice.code,
                    &notice.message,
                ))))
                .await?;
        }
        Ok(())
    }

    /// After a `SET` of a setting PostgreSQL reports (`TimeZone`, `DateStyle`,
    /// `IntervalStyle`, `application_name`), tells the client its new value, as drivers
    /// read `timestamptz` values in the zone so reported.
    async fn report_settings(&mut self, statement: &Statement) -> io::Result<()> {
        const REPORTED: [(&str, &str); 4] = [
            ("timezone", "TimeZone"),
            ("datestyle", "DateStyle"),
            ("intervalstyle", "IntervalStyle"),
            ("application_name", "application_name"),
        ];
        let Statement::Set { name, .. } = statement else { return Ok(()) };
        let name = name.to_ascii_lowercase();
        for (setting, reported) in REPORTED {
            if name == setting || name == "all" {
                let value = self.session.setting(setting).unwrap_or_default().to_string();
                let status = ParameterStatus::new(reported.to_string(), value);
                self.wire.feed(B::ParameterStatus(status)).await?;
            }
        }
        Ok(())
    }

    async fn send_error(&mut self, error: &SqlError) -> io::Result<()> {
        self.shared.metrics.error(error);
        self.wire
            .feed(B::ErrorResponse(ErrorResponse::new({
                let mut fields = error_fields("ERROR", error.code, &error.message);
                if let Some(detail) = &error.detail {
                    fields.push((b'D', detail.clone()));
                }
                fields
            })))
            .await
    }

    /// A FATAL error: sent at once, and the connection ends.
    async fn fatal(&mut self, code: &str, message: &str) -> io::Result<()> {
        self.wire
            .send(B::ErrorResponse(ErrorResponse::new(error_fields("FATAL", code, message))))
            .await
    }

    /// Notes the session's last commit (or read epoch) for the next reply to wait for.
    fn note_commit(&mut self) {
        let epoch = self.session.last_commit().epoch;
        if epoch > self.durable_wait {
            self.durable_wait = epoch;
        }
    }

    /// Sends what is buffered, once the commits it acknowledges are durable.
    async fn flush(&mut self) -> io::Result<()> {
        if self.durable_wait > Epoch::NEVER {
            let epoch = std::mem::replace(&mut self.durable_wait, Epoch::NEVER);
            let asynchronous = self.session.setting("synchronous_commit") == Some("off");
            if !asynchronous && !self.shared.watcher.is_durable(epoch) {
                let waited = Instant::now();
                if let Err(error) = self.shared.watcher.durable_future(epoch).await {
                    // The log failed: what the buffer acknowledges (a commit, or rows read
                    // from commits not yet durable) may not survive a crash. A full disk is
                    // 53100, as for every later write; another failure 58030.
                    self.wire.write_buffer_mut().clear();
                    let message = format!(
                        "could not make what the transaction wrote or read durable: {error}"
                    );
                    self.fatal(error.sqlstate(), &message).await?;
                    return Err(io::Error::other(error.to_string()));
                }
                self.shared.metrics.durable_wait(waited.elapsed());
            }
        }
        self.wire.flush().await
    }

    async fn ready(&mut self) -> io::Result<()> {
        self.send_notices().await?;
        let status = wire_status(self.session.status());
        self.wire.feed(B::ReadyForQuery(ReadyForQuery::new(status))).await?;
        self.flush().await
    }

    /// Runs `body` on the session; DDL, or anything while DDL runs, where blocking is allowed.
    fn on_session<T>(&mut self, ddl: bool, body: impl FnOnce(&mut Session) -> T) -> T {
        let session = &mut self.session;
        if ddl || session.database().ddl_active() {
            tokio::task::block_in_place(|| body(session))
        } else {
            body(session)
        }
    }

    async fn simple_query(&mut self, sql: &str) -> io::Result<()> {
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        if let Some(outcome) = crate::pg_catalog::answer(sql, self.session.database()) {
            self.send_outcome(outcome, None).await?;
            return self.ready().await;
        }
        let statements = match self.session.parse(sql) {
            Ok(statements) => statements,
            Err(error) => {
                self.send_error(&error).await?;
                return self.ready().await;
            }
        };
        if statements.is_empty() {
            self.wire.feed(B::EmptyQueryResponse(EmptyQueryResponse::new())).await?;
        }
        // Several statements outside a block are one implicit transaction (PostgreSQL's).
        self.session.begin_string(statements.len());
        for statement in &statements {
            if let Statement::Copy(copy) = statement {
                if !self.copy_in(copy).await? {
                    break;
                }
                continue;
            }
            let started = Instant::now();
            let result =
                self.on_session(statement.is_ddl(), |session| session.execute_statement(statement));
            self.note_commit();
            self.shared.metrics.statement(started.elapsed(), &result);
            self.send_notices().await?;
            if result.is_ok() {
                self.report_settings(statement).await?;
            }
            match result {
                Ok(outcome) => self.send_outcome(outcome, None).await?,
                Err(error) => {
                    self.send_error(&error).await?;
                    break;
                }
            }
        }
        let ended = self.on_session(false, Session::end_string);
        self.note_commit();
        if let Err(error) = ended {
            self.send_error(&error).await?;
        }
        self.ready().await
    }

    /// A whole result in text format (simple query).
    async fn send_outcome(&mut self, outcome: Outcome, binary: Option<&[bool]>) -> io::Result<()> {
        match outcome {
            Outcome::Command { tag } if tag == "EMPTY" => {
                self.wire.feed(B::EmptyQueryResponse(EmptyQueryResponse::new())).await
            }
            Outcome::Command { tag } => {
                self.wire.feed(B::CommandComplete(CommandComplete::new(tag.into()))).await
            }
            Outcome::Rows { columns, rows, tag } => {
                let formats = binary.map_or_else(|| vec![false; columns.len()], <[bool]>::to_vec);
                self.wire.feed(B::RowDescription(row_description(&columns, &formats))).await?;
                for row in &rows {
                    let message = self.data_row(row, &columns, &formats);
                    self.wire.feed(message).await?;
                }
                self.wire.feed(B::CommandComplete(CommandComplete::new(tag.into()))).await
            }
        }
    }

    fn data_row(&mut self, row: &[Value], columns: &[OutputColumn], binary: &[bool]) -> B {
        // `timestamptz` values are written in the session's zone. Per row, not per result: the
        // await between rows may run other sessions on this thread.
        self.session.enter();
        let mut data = BytesMut::with_capacity(16 * row.len());
        for (i, value) in row.iter().enumerate() {
            put_field(
                &mut data,
                value,
                columns[i].ty,
                binary.get(i).copied().unwrap_or(false),
                &mut self.text,
            );
        }
        B::DataRow(DataRow::new(data, row.len() as i16))
    }

    /// COPY FROM STDIN: asks for data and inserts it as it comes. `false` when it failed
    /// (the rest of a simple query is skipped).
    async fn copy_in(&mut self, copy: &CopyFrom) -> io::Result<bool> {
        let copy_in = match self.on_session(false, |session| session.copy_in(copy)) {
            Ok(copy_in) => copy_in,
            Err(error) => {
                self.send_error(&error).await?;
                return Ok(false);
            }
        };
        let columns = copy_in.columns() as i16;
        self.wire
            .feed(B::CopyInResponse(CopyInResponse::new(0, columns, vec![0; columns as usize])))
            .await?;
        self.flush().await?;
        // `None` once the COPY failed (rolled back): the rest of the data is drained.
        let mut copy_in = Some(copy_in);
        let mut failure: Option<SqlError> = None;
        loop {
            let Some(message) = self.next_message().await? else {
                if let Some(copy_in) = copy_in.take() {
                    copy_in.fail(&mut self.session, "the connection ended");
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "client left during COPY",
                ));
            };
            match message {
                F::CopyData(data) => {
                    let Some(active) = copy_in.as_mut() else { continue };
                    let result = if self.cancel.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        Err(SqlError::new("57014", "canceling statement due to user request"))
                    } else {
                        active.feed(&mut self.session, &data.data)
                    };
                    if let Err(error) = result {
                        if let Some(copy_in) = copy_in.take() {
                            copy_in.fail(&mut self.session, &error.message);
                        }
                        failure = Some(error);
                    }
                }
                F::CopyDone(_) => {
                    let result = match (copy_in.take(), failure) {
                        (Some(copy_in), None) => copy_in.finish(&mut self.session),
                        (_, Some(error)) => Err(error),
                        (None, None) => Err(SqlError::new("57014", "COPY failed")),
                    };
                    self.note_commit();
                    return match result {
                        Ok(tag) => {
                            self.wire.feed(B::CommandComplete(CommandComplete::new(tag))).await?;
                            Ok(true)
                        }
                        Err(error) => {
                            self.send_error(&error).await?;
                            Ok(false)
                        }
                    };
                }
                F::CopyFail(fail) => {
                    let error = match (copy_in.take(), failure) {
                        (_, Some(error)) => error,
                        (Some(copy_in), None) => copy_in.fail(&mut self.session, &fail.message),
                        (None, None) => SqlError::new("57014", "COPY failed"),
                    };
                    self.send_error(&error).await?;
                    return Ok(false);
                }
                // libpq may send Flush / Sync during COPY; they are ignored.
                F::Flush(_) | F::Sync(_) => {}
                other => {
                    if let Some(copy_in) = copy_in.take() {
                        copy_in.fail(&mut self.session, "unexpected message");
                    }
                    self.fatal("08P01", &format!("unexpected message during COPY: {other:?}"))
                        .await?;
                    return Err(protocol_error("unexpected message during COPY"));
                }
            }
        }
    }

    /// Whether the next message the client sent, already read, is a Sync.
    fn sync_is_next(&self) -> bool {
        const SYNC: [u8; 5] = [b'S', 0, 0, 0, 4];
        self.wire.read_buffer().starts_with(&SYNC)
    }

    /// An extended-protocol step's reply, or its error (then skip to Sync).
    async fn extended_reply(&mut self, result: Result<(), SqlError>, reply: B) -> io::Result<()> {
        match result {
            Ok(()) => self.wire.feed(reply).await,
            Err(error) => {
                self.skip_until_sync = true;
                self.send_error(&error).await
            }
        }
    }

    async fn extended_result(
        &mut self,
        result: io::Result<Result<(), SqlError>>,
    ) -> io::Result<()> {
        match result? {
            Ok(()) => Ok(()),
            Err(error) => {
                self.skip_until_sync = true;
                self.send_error(&error).await
            }
        }
    }

    fn statement(&self, name: Option<&str>) -> Result<Arc<Prepared>, SqlError> {
        match name.unwrap_or("") {
            "" => self
                .unnamed
                .clone()
                .ok_or_else(|| SqlError::new("26000", "unnamed prepared statement does not exist")),
            name => self.session.prepared(name).ok_or_else(|| {
                SqlError::new("26000", format!("prepared statement \"{name}\" does not exist"))
            }),
        }
    }

    fn parse(&mut self, parse: Parse) -> Result<(), SqlError> {
        let types = parse
            .type_oids
            .iter()
            .map(|oid| crate::wire::param_type(*oid))
            .collect::<Result<Vec<Type>, _>>()?;
        let name = parse.name.unwrap_or_default();
        if !name.is_empty() && self.session.prepared(&name).is_some() {
            return Err(SqlError::new(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let prepared = self.on_session(false, |session| session.prepare(&parse.query, &types))?;
        if name.is_empty() {
            self.unnamed = Some(prepared);
        } else {
            self.session.store_prepared(&name, prepared);
        }
        Ok(())
    }

    fn bind(&mut self, bind: Bind) -> Result<(), SqlError> {
        let prepared = self.statement(bind.statement_name.as_deref())?;
        let types = &prepared.param_types;
        if bind.parameters.len() != types.len() {
            return Err(SqlError::new(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{}\" requires {}",
                    bind.parameters.len(),
                    bind.statement_name.as_deref().unwrap_or(""),
                    types.len()
                ),
            ));
        }
        let formats = &bind.parameter_format_codes;
        let mut params = Vec::with_capacity(types.len());
        // Text parameters of `timestamptz` are read in the session's zone.
        self.session.enter();
        for (i, (bytes, ty)) in bind.parameters.iter().zip(types).enumerate() {
            let binary = match formats.as_slice() {
                [] => false,
                [one] => *one == 1,
                many => {
                    *many.get(i).ok_or_else(|| {
                        SqlError::new("08P01", "bind message has too few parameter formats")
                    })? == 1
                }
            };
            params.push(decode_param(bytes.as_deref(), *ty, binary)?);
        }
        let binary = result_formats(&bind.result_column_format_codes, prepared.columns.len())?;
        let name = bind.portal_name.unwrap_or_default();
        self.portals.insert(name, Portal { prepared, params, binary, pending: None });
        Ok(())
    }

    async fn describe(&mut self, describe: Describe) -> io::Result<Result<(), SqlError>> {
        let name = describe.name.as_deref();
        let (columns, binary): (Vec<OutputColumn>, Vec<bool>) = match describe.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                let prepared = match self.statement(name) {
                    Ok(prepared) => prepared,
                    Err(error) => return Ok(Err(error)),
                };
                let types = prepared.param_types.iter().map(|ty| result_oid(*ty)).collect();
                self.wire.feed(B::ParameterDescription(ParameterDescription::new(types))).await?;
                (prepared.columns.clone(), vec![false; prepared.columns.len()])
            }
            TARGET_TYPE_BYTE_PORTAL => match self.portals.get(name.unwrap_or("")) {
                Some(portal) => (portal.prepared.columns.clone(), portal.binary.clone()),
                None => {
                    return Ok(Err(SqlError::new(
                        "34000",
                        format!("portal \"{}\" does not exist", name.unwrap_or("")),
                    )));
                }
            },
            other => {
                return Ok(Err(SqlError::new(
                    "08P01",
                    format!("invalid DESCRIBE message subtype {other}"),
                )));
            }
        };
        if columns.is_empty() {
            self.wire.feed(B::NoData(NoData::new())).await?;
        } else {
            self.wire.feed(B::RowDescription(row_description(&columns, &binary))).await?;
        }
        Ok(Ok(()))
    }

    async fn execute(&mut self, execute: Execute) -> io::Result<Result<(), SqlError>> {
        let name = execute.name.unwrap_or_default();
        let Some(mut portal) = self.portals.remove(&name) else {
            return Ok(Err(SqlError::new("34000", format!("portal \"{name}\" does not exist"))));
        };
        if let Statement::Copy(copy) = portal.prepared.statement() {
            let copy = copy.clone();
            self.portals.insert(name, portal);
            if !self.copy_in(&copy).await? {
                // The error is sent; the rest of the pipeline is skipped up to Sync.
                self.skip_until_sync = true;
            }
            return Ok(Ok(()));
        }
        if portal.pending.is_none() {
            self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
            if !self.implicit_until_sync
                && self.session.status() == TransactionStatus::Idle
                && !self.sync_is_next()
            {
                // More of the pipeline may follow before its Sync: one implicit transaction.
                // An Execute followed at once by Sync commits on its own, as before (and so
                // keeps the session's retries of a single statement).
                self.session.begin_pipeline();
                self.implicit_until_sync = true;
            }
            let started = Instant::now();
            let ddl = portal.prepared.statement().is_ddl();
            let (prepared, params) = (&portal.prepared, &portal.params);
            let result =
                self.on_session(ddl, |session| session.execute_prepared(prepared, params, 0));
            self.note_commit();
            self.shared.metrics.statement(started.elapsed(), &result);
            self.send_notices().await?;
            if result.is_ok() {
                let statement = Arc::clone(&portal.prepared);
                self.report_settings(statement.statement()).await?;
            }
            match result {
                Err(error) => return Ok(Err(error)),
                Ok(Outcome::Command { tag }) => {
                    let reply = if tag == "EMPTY" {
                        B::EmptyQueryResponse(EmptyQueryResponse::new())
                    } else {
                        B::CommandComplete(CommandComplete::new(tag.to_string()))
                    };
                    // Executed once: an Execute of the completed portal only repeats the tag.
                    portal.pending = Some(PendingRows {
                        columns: Arc::new([]),
                        rows: Vec::new().into_iter(),
                        tag,
                        sent: 0,
                    });
                    self.portals.insert(name, portal);
                    self.wire.feed(reply).await?;
                    return Ok(Ok(()));
                }
                Ok(Outcome::Rows { columns, rows, tag }) => {
                    portal.pending =
                        Some(PendingRows { columns, rows: rows.into_iter(), tag, sent: 0 });
                }
            }
        }
        let limit = if execute.max_rows > 0 { execute.max_rows as usize } else { usize::MAX };
        // The portal is out of the map while it runs: its fields and `self` borrow apart.
        if let Portal { binary, pending: Some(pending), .. } = &mut portal {
            let mut sent = 0;
            while sent < limit {
                let Some(row) = pending.rows.next() else { break };
                let message = self.data_row(&row, &pending.columns, binary);
                self.wire.feed(message).await?;
                sent += 1;
            }
            pending.sent += sent;
            if pending.rows.len() > 0 {
                self.wire.feed(B::PortalSuspended(PortalSuspended::new())).await?;
            } else {
                let tag = if pending.tag.starts_with("SELECT") {
                    format!("SELECT {}", pending.sent)
                } else {
                    pending.tag.to_string()
                };
                self.wire.feed(B::CommandComplete(CommandComplete::new(tag))).await?;
            }
        }
        self.portals.insert(name, portal);
        Ok(Ok(()))
    }

    fn close(&mut self, close: Close) {
        let name = close.name.unwrap_or_default();
        match close.target_type {
            TARGET_TYPE_BYTE_STATEMENT if name.is_empty() => self.unnamed = None,
            TARGET_TYPE_BYTE_STATEMENT => {
                self.session.drop_prepared(&name);
            }
            _ => {
                self.portals.remove(&name);
            }
        }
    }
}

fn row_description(columns: &[OutputColumn], binary: &[bool]) -> RowDescription {
    RowDescription::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                FieldDescription::new(
                    column.name.clone(),
                    0,
                    0,
                    result_oid(column.ty),
                    column.ty.pg_length(),
                    column.ty.pg_modifier(),
                    i16::from(binary.get(i).copied().unwrap_or(false)),
                )
            })
            .collect(),
    )
}

/// The parameters every session reports at startup.
pub(crate) fn parameter_statuses(session: &Session, user: &str) -> Vec<B> {
    let get = |name: &str, default: &str| session.setting(name).unwrap_or(default).to_string();
    [
        ("server_version", get("server_version", "15.0")),
        ("server_encoding", "UTF8".to_string()),
        ("client_encoding", "UTF8".to_string()),
        ("DateStyle", get("datestyle", "ISO, MDY")),
        ("TimeZone", get("timezone", "UTC")),
        ("IntervalStyle", "postgres".to_string()),
        ("integer_datetimes", "on".to_string()),
        ("standard_conforming_strings", "on".to_string()),
        ("is_superuser", "on".to_string()),
        ("session_authorization", user.to_string()),
        ("application_name", get("application_name", "")),
    ]
    .into_iter()
    .map(|(name, value)| B::ParameterStatus(ParameterStatus::new(name.to_string(), value)))
    .collect()
}

pub(crate) fn backend_key(pid: i32, secret: i32) -> B {
    B::BackendKeyData(BackendKeyData::new(pid, SecretKey::I32(secret)))
}
