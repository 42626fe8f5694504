//! Entry points for the fuzz targets in `fuzz/` (cargo-fuzz, which needs a nightly toolchain)
//! and for the property tests that run the same code on the stable toolchain in CI.
//!
//! Two depths: [`decode_messages`] is the message decoder alone (framing, the size check,
//! pgwire's body decoders), fed in pieces as a socket delivers bytes; [`ConnectionHarness`]
//! is a whole connection of an in-memory server, fed over one end of a Unix socket pair, so
//! that startup, authentication, the simple and extended query protocols, COPY and every SQL
//! statement a message carries run as they do for a client. Either must return for every
//! input: no panic, no hang past the harness's limits, and the server still answering.

use crate::codec::Codec;
use crate::conn::{self, Accepted};
use crate::shared::Shared;
use crate::{Server, ServerConfig};
use bytes::BytesMut;
use engram_engine::{Config, Durability};
use engram_sql::SqlDb;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::watch;
use tokio_util::codec::Decoder;

/// The largest message the harness's server takes (the decoder refuses longer ones first).
const FUZZ_MESSAGE_BYTES_MAX: usize = 1 << 20;
/// How long one conversation may take before the harness gives up on it.
const CONVERSATION_TIMEOUT: Duration = Duration::from_secs(5);
/// The most reply bytes one conversation keeps (a fuzzer's input can ask for large results).
const REPLY_BYTES_MAX: usize = 1 << 20;

/// Decodes every message in `bytes`, delivered `chunk` bytes at a time, once as a connection
/// waiting for its startup packet and once as one past it; stops at the first error, as a
/// connection does.
pub fn decode_messages(bytes: &[u8], chunk: usize) {
    for started in [false, true] {
        let mut codec = Codec::new(FUZZ_MESSAGE_BYTES_MAX);
        if started {
            codec.started();
        }
        let mut buffer = BytesMut::new();
        'pieces: for piece in bytes.chunks(chunk.max(1)) {
            buffer.extend_from_slice(piece);
            loop {
                match codec.decode(&mut buffer) {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => break 'pieces,
                }
            }
        }
    }
}

/// For a fuzz target's start: panics unwind again instead of aborting the process at once
/// (libFuzzer's hook), so that the codec can catch the panics of pgwire's body decoders
/// (and of the `bytes` calls they make) and answer them as protocol violations, as it does in
/// the server; those are not printed. A panic nothing catches still ends the run: the
/// fuzz target's wrapper aborts when one reaches it.
pub fn unwind_on_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let file = info.location().map_or("", |location| location.file());
        if !(file.contains("/pgwire-") || file.contains("/bytes-")) {
            default(info);
        }
    }));
}

/// A startup packet for `user` on database `engram`, protocol 3.0.
pub fn startup_packet(user: &str) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for (name, value) in [("user", user), ("database", "engram")] {
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut packet = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    packet.extend_from_slice(&body);
    packet
}

/// A server on an in-memory database that serves conversations given as bytes.
pub struct ConnectionHarness {
    runtime: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    /// Kept so that connections do not see a shutdown.
    stop: watch::Sender<bool>,
}

impl std::fmt::Debug for ConnectionHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionHarness").finish_non_exhaustive()
    }
}

impl ConnectionHarness {
    /// A server with trust authentication and a 1 MiB message limit, on two event-loop
    /// threads (DDL runs under `block_in_place`, which needs the multi-threaded runtime).
    pub fn new() -> std::io::Result<ConnectionHarness> {
        let runtime = crate::runtime(2)?;
        let db = SqlDb::open(Config { durability: Durability::Off, ..Config::default() })
            .map_err(|error| std::io::Error::other(error.message))?;
        let config = ServerConfig {
            listen: "127.0.0.1:0".into(),
            max_message_bytes: FUZZ_MESSAGE_BYTES_MAX,
            startup_timeout_ms: CONVERSATION_TIMEOUT.as_millis() as u64,
            ..ServerConfig::default()
        };
        let server = runtime.block_on(Server::bind(db, config))?;
        let shared = Arc::clone(&server.shared);
        drop(server);
        let (stop, _) = watch::channel(false);
        Ok(ConnectionHarness { runtime, shared, stop })
    }

    /// Opens a connection, sends `bytes` as the client, closes the client's sending side and
    /// returns what the server sent until it closed the connection (at most
    /// [`REPLY_BYTES_MAX`] bytes; `None` when the conversation did not end in
    /// [`CONVERSATION_TIMEOUT`]).
    pub fn converse(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let shared = Arc::clone(&self.shared);
        let shutdown = self.stop.subscribe();
        self.runtime.block_on(async move {
            let (mut client, server) = UnixStream::pair().ok()?;
            let served = tokio::spawn(conn::serve(Accepted::Unix(server), shared, shutdown));
            let talk = async {
                let (mut reader, mut writer) = client.split();
                let send = async {
                    // The server may close the connection before taking everything.
                    let _ = writer.write_all(bytes).await;
                    let _ = writer.shutdown().await;
                };
                let receive = async {
                    let mut reply = Vec::new();
                    let mut buffer = [0u8; 8192];
                    while let Ok(read) = reader.read(&mut buffer).await {
                        if read == 0 {
                            break;
                        }
                        if reply.len() + read <= REPLY_BYTES_MAX {
                            reply.extend_from_slice(&buffer[..read]);
                        }
                    }
                    reply
                };
                let ((), reply) = tokio::join!(send, receive);
                reply
            };
            let reply = tokio::time::timeout(CONVERSATION_TIMEOUT, talk).await;
            drop(client);
            let ended = tokio::time::timeout(CONVERSATION_TIMEOUT, served).await;
            match (reply, ended) {
                (Ok(reply), Ok(Ok(()))) => Some(reply),
                // A panic inside the connection is a bug the fuzzer must see.
                (_, Ok(Err(error))) if error.is_panic() => {
                    std::panic::resume_unwind(error.into_panic())
                }
                _ => None,
            }
        })
    }

    /// Whether a fresh, well-behaved client still gets an answer to `SELECT 1`.
    pub fn still_serving(&self) -> bool {
        let mut bytes = startup_packet("postgres");
        bytes.extend_from_slice(b"Q\0\0\0\x0dSELECT 1\0X\0\0\0\x04");
        let answered = |reply: Vec<u8>| reply.windows(9).any(|tag| tag == b"SELECT 1\0");
        self.converse(&bytes).is_some_and(answered)
    }
}

/// Frontend messages as bytes, to build conversations (seed inputs, property tests).
pub mod message {
    fn framed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn cstring(out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(text.as_bytes());
        out.push(0);
    }

    /// A simple query.
    pub fn query(sql: &str) -> Vec<u8> {
        let mut body = Vec::new();
        cstring(&mut body, sql);
        framed(b'Q', &body)
    }

    /// Parse of `sql` as statement `name` with parameter type OIDs `types` (0: infer).
    pub fn parse(name: &str, sql: &str, types: &[u32]) -> Vec<u8> {
        let mut body = Vec::new();
        cstring(&mut body, name);
        cstring(&mut body, sql);
        body.extend_from_slice(&(types.len() as i16).to_be_bytes());
        for oid in types {
            body.extend_from_slice(&oid.to_be_bytes());
        }
        framed(b'P', &body)
    }

    /// Bind of statement `statement` to `portal`: text parameters (`None`: NULL), every
    /// result column in `binary` format or text.
    pub fn bind(portal: &str, statement: &str, params: &[Option<&[u8]>], binary: bool) -> Vec<u8> {
        let mut body = Vec::new();
        cstring(&mut body, portal);
        cstring(&mut body, statement);
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for param in params {
            match param {
                Some(bytes) => {
                    body.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                    body.extend_from_slice(bytes);
                }
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        body.extend_from_slice(&1i16.to_be_bytes());
        body.extend_from_slice(&i16::from(binary).to_be_bytes());
        framed(b'B', &body)
    }

    /// Describe of a statement (`b'S'`) or portal (`b'P'`).
    pub fn describe(target: u8, name: &str) -> Vec<u8> {
        let mut body = vec![target];
        cstring(&mut body, name);
        framed(b'D', &body)
    }

    /// Execute of `portal`, at most `rows` rows (0: all).
    pub fn execute(portal: &str, rows: i32) -> Vec<u8> {
        let mut body = Vec::new();
        cstring(&mut body, portal);
        body.extend_from_slice(&rows.to_be_bytes());
        framed(b'E', &body)
    }

    /// Close of a statement (`b'S'`) or portal (`b'P'`).
    pub fn close(target: u8, name: &str) -> Vec<u8> {
        let mut body = vec![target];
        cstring(&mut body, name);
        framed(b'C', &body)
    }

    pub fn sync() -> Vec<u8> {
        framed(b'S', &[])
    }

    pub fn flush() -> Vec<u8> {
        framed(b'H', &[])
    }

    pub fn copy_data(data: &[u8]) -> Vec<u8> {
        framed(b'd', data)
    }

    pub fn copy_done() -> Vec<u8> {
        framed(b'c', &[])
    }

    pub fn copy_fail(reason: &str) -> Vec<u8> {
        let mut body = Vec::new();
        cstring(&mut body, reason);
        framed(b'f', &body)
    }

    pub fn terminate() -> Vec<u8> {
        framed(b'X', &[])
    }
}

/// Conversations that reach every part of a connection, for a fuzzer to start from and for
/// the tests: DDL and DML in simple queries, an extended-protocol round with parameters and a
/// row limit, a failing statement inside a block, COPY, and a cancelled COPY.
pub fn seed_conversations() -> Vec<Vec<u8>> {
    use message::*;
    let start = || startup_packet("postgres");
    let ddl = "CREATE TABLE IF NOT EXISTS f (id INT PRIMARY KEY, v TEXT, n NUMERIC(8,2)); \
               CREATE INDEX IF NOT EXISTS f_v ON f (v)";
    vec![
        [
            start(),
            query(ddl),
            query("INSERT INTO f VALUES (1, 'a', 1.5) ON CONFLICT DO NOTHING"),
            query("SELECT id, v, n FROM f WHERE id = 1; SELECT count(*) FROM f"),
            terminate(),
        ]
        .concat(),
        [
            start(),
            query(ddl),
            parse("s", "SELECT v FROM f WHERE id > $1 ORDER BY id", &[0]),
            describe(b'S', "s"),
            bind("p", "s", &[Some(b"0")], true),
            describe(b'P', "p"),
            execute("p", 1),
            execute("p", 0),
            close(b'P', "p"),
            sync(),
            parse("", "UPDATE f SET n = n + $1 WHERE id = $2 RETURNING n", &[]),
            bind("", "", &[Some(b"2.25"), Some(b"1")], false),
            execute("", 0),
            flush(),
            sync(),
            terminate(),
        ]
        .concat(),
        [
            start(),
            query(ddl),
            query("BEGIN; INSERT INTO f VALUES (2, 'b', NULL); SELECT 1/0"),
            query("SELECT 1"),
            query("ROLLBACK"),
            terminate(),
        ]
        .concat(),
        [
            start(),
            query(ddl),
            query("COPY f FROM STDIN WITH (FORMAT csv)"),
            copy_data(b"10,x,1.0\n11,\"y\"\"z\",\n"),
            copy_done(),
            query("COPY f FROM STDIN"),
            copy_data(b"12\tq\t\\N\n"),
            copy_fail("stopped"),
            terminate(),
        ]
        .concat(),
    ]
}
