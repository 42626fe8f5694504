//! Engram's PostgreSQL wire-protocol server: psql, pgbench, sysbench and drivers talk to an
//! Engram database as if it were PostgreSQL 15.
//!
//! ```text
//! TcpListener / UnixListener --accept--> conn::serve (one tokio task per connection)
//!    negotiate TLS (pgwire) -> auth::startup (trust / SCRAM) -> Session (engram-sql)
//!    Query | Parse/Bind/Describe/Execute/Sync | COPY  ->  Session  ->  rows
//!    replies buffered until Sync/Flush/end of query; commits acknowledged once durable
//! ```
//!
//! pgwire provides the message types, their codec, TLS negotiation and SCRAM; the loop is
//! Engram's own, because pgwire's handler loop flushes the socket after every message of the
//! extended protocol (four system calls per prepared execution instead of one) and knows
//! nothing of waiting for a durable epoch without blocking a thread.

#![warn(missing_debug_implementations)]

mod auth;
mod codec;
pub mod config;
mod conn;
#[doc(hidden)]
pub mod fuzzing;
pub mod metrics;
mod pg_catalog;
mod shared;
mod wire;

pub use config::{AuthMethod, ServerConfig, User};
use shared::{Shared, stopped};

use engram_sql::SqlDb;
use metrics::Metrics;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicI32;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

fn tls_acceptor(config: &ServerConfig) -> io::Result<Option<pgwire::tokio::TlsAcceptor>> {
    use pgwire::tokio::tokio_rustls::rustls;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => (cert, key),
        (None, None) => return Ok(None),
        _ => return Err(io::Error::other("tls_cert and tls_key go together")),
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|error| io::Error::other(format!("{}: {error}", cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|error| io::Error::other(format!("{}: {error}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(io::Error::other)?;
    server.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(pgwire::tokio::TlsAcceptor::from(Arc::new(server))))
}

/// A running server (see [`Server::start`]).
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
    unix: Option<UnixSocket>,
    metrics_listener: Option<TcpListener>,
}

/// The Unix-domain socket a server listens on; its file is removed when the server stops.
struct UnixSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl UnixSocket {
    /// Binds `<dir>/.s.PGSQL.<port>`, libpq's name for it. A socket file nobody answers on
    /// is left from a server that did not stop cleanly and is replaced; anything else in its
    /// place is an error. The socket is open to every local user (PostgreSQL's default
    /// `unix_socket_permissions`); authentication decides who gets in.
    async fn bind(dir: &Path, port: u16) -> io::Result<UnixSocket> {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let path = dir.join(format!(".s.PGSQL.{port}"));
        if let Ok(metadata) = std::fs::symlink_metadata(&path) {
            let in_use = || io::Error::new(io::ErrorKind::AddrInUse, path.display().to_string());
            if !metadata.file_type().is_socket() || UnixStream::connect(&path).await.is_ok() {
                return Err(in_use());
            }
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path).map_err(|error| {
            io::Error::new(error.kind(), format!("{}: {error}", path.display()))
        })?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        Ok(UnixSocket { listener, path })
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The next connection on `unix`; never completes without one.
async fn accept_unix(unix: Option<&UnixSocket>) -> io::Result<UnixStream> {
    match unix {
        Some(unix) => unix.listener.accept().await.map(|(stream, _)| stream),
        None => std::future::pending().await,
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.listener.local_addr().ok()).finish()
    }
}

impl Server {
    /// Binds the listeners (inside a tokio runtime) and prepares authentication and TLS.
    pub async fn bind(db: Arc<SqlDb>, config: ServerConfig) -> io::Result<Server> {
        let listener = TcpListener::bind(&config.listen).await?;
        let addr = listener.local_addr()?;
        let unix = match &config.unix_socket_dir {
            Some(dir) => Some(UnixSocket::bind(dir, addr.port()).await?),
            None => None,
        };
        let auth = config.auth_method(&addr);
        let mut secrets = HashMap::new();
        for user in &config.users {
            secrets.insert(user.name.clone(), auth::secret(user).map_err(io::Error::other)?);
        }
        if auth == AuthMethod::Scram && secrets.is_empty() {
            tracing::warn!("SCRAM authentication with no users configured: nobody can connect");
        }
        let metrics_listener = match &config.metrics_listen {
            Some(listen) => Some(TcpListener::bind(listen).await?),
            None => None,
        };
        let tls = tls_acceptor(&config)?;
        let watcher = db.database().durability_watcher();
        let shared = Arc::new(Shared {
            db,
            config,
            auth,
            secrets,
            tls,
            watcher,
            metrics: Arc::new(Metrics::default()),
            cancels: Mutex::new(HashMap::new()),
            next_pid: AtomicI32::new(std::process::id() as i32 & 0x3fff_ffff),
        });
        Ok(Server { shared, listener, unix, metrics_listener })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// The Unix-domain socket's path, when the configuration names a directory for it.
    pub fn unix_socket_path(&self) -> Option<&Path> {
        self.unix.as_ref().map(|unix| unix.path.as_path())
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn auth(&self) -> AuthMethod {
        self.shared.auth
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }

    /// Serves until `shutdown` turns true; then stops accepting, tells every connection
    /// (open transactions are rolled back) and waits up to `grace` for them to close.
    pub async fn run(self, shutdown: watch::Receiver<bool>, grace: Duration) {
        let Server { shared, listener, unix, metrics_listener } = self;
        if let Some(metrics) = metrics_listener {
            tokio::spawn(serve_metrics(metrics, Arc::clone(&shared), shutdown.clone()));
        }
        let mut connections = JoinSet::new();
        let stop = stopped(shutdown.clone());
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        let stream = conn::Accepted::Tcp(stream);
                        connections.spawn(conn::serve(stream, Arc::clone(&shared), shutdown.clone()));
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                accepted = accept_unix(unix.as_ref()) => match accepted {
                    Ok(stream) => {
                        let stream = conn::Accepted::Unix(stream);
                        connections.spawn(conn::serve(stream, Arc::clone(&shared), shutdown.clone()));
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accept on the Unix socket failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        drop(unix);
        let deadline = tokio::time::sleep(grace);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => {
                    tracing::warn!(open = connections.len(), "connections still open at shutdown; closing them");
                    connections.abort_all();
                    break;
                }
                next = connections.join_next() => if next.is_none() { break },
            }
        }
    }

    /// Starts a server on its own runtime thread (tests, embedding). The handle stops it.
    pub fn start(db: Arc<SqlDb>, config: ServerConfig) -> io::Result<ServerHandle> {
        // The runtime is built and entered on the server's own thread, so that this works
        // from inside another runtime too.
        let (stop, shutdown) = watch::channel(false);
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new().name("engram-server".into()).spawn(move || {
            let runtime = match runtime(config.threads) {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = bound_tx.send(Err(error));
                    return;
                }
            };
            runtime.block_on(async move {
                match Server::bind(db, config).await {
                    Ok(server) => {
                        let _ = bound_tx.send(Ok((
                            server.local_addr(),
                            server.unix_socket_path().map(Path::to_path_buf),
                            server.metrics_addr(),
                            server.metrics(),
                        )));
                        server.run(shutdown, Duration::from_secs(5)).await;
                    }
                    Err(error) => {
                        let _ = bound_tx.send(Err(error));
                    }
                }
            });
        })?;
        let (addr, unix_socket, metrics_addr, metrics) =
            bound_rx.recv().map_err(|_| io::Error::other("the server thread ended at start"))??;
        Ok(ServerHandle { addr, unix_socket, metrics_addr, metrics, stop, thread: Some(thread) })
    }
}

/// The multi-threaded runtime a server runs on (`threads` 0: one per core).
pub fn runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if threads > 0 {
        builder.worker_threads(threads);
    }
    builder.enable_all().thread_name("engram-net").build()
}

/// A server started with [`Server::start`]; stopping it (or dropping the handle) shuts it
/// down gracefully.
#[derive(Debug)]
pub struct ServerHandle {
    pub addr: SocketAddr,
    /// The Unix-domain socket's path, when configured.
    pub unix_socket: Option<PathBuf>,
    pub metrics_addr: Option<SocketAddr>,
    pub metrics: Arc<Metrics>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A minimal HTTP/1.1 endpoint: `GET /metrics` answers the Prometheus text format.
async fn serve_metrics(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    let stop = stopped(shutdown);
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else { continue };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
                match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => request.extend_from_slice(&buf[..n]),
                    _ => return,
                }
            }
            let line = String::from_utf8_lossy(&request);
            let path = line.split_whitespace().nth(1).unwrap_or("");
            let response = if line.starts_with("GET ")
                && (path == "/metrics" || path.starts_with("/metrics?"))
            {
                let body = shared.metrics.render(&shared.gauges());
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}
