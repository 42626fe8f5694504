//! The server's configuration: a TOML file (`engram serve --config FILE`) and flags over it.
//!
//! ```toml
//! listen = "0.0.0.0:5433"
//! unix_socket_dir = "/tmp"       # also listen on /tmp/.s.PGSQL.5433 (psql -h /tmp -p 5433)
//! auth = "scram"                 # "trust" or "scram"; default: trust on loopback only
//! max_connections = 500
//! max_message_bytes = 67108864
//! idle_in_transaction_session_timeout_ms = 60000
//! metrics_listen = "127.0.0.1:9187"
//! tls_cert = "server.crt"        # PEM; with tls_key, clients may use sslmode=require
//! tls_key = "server.key"
//!
//! [[users]]
//! name = "app"
//! password = "secret"            # or scram_verifier = "SCRAM-SHA-256$4096:...$...:..."
//! ```

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMethod {
    /// Anyone who can connect is who they say they are.
    Trust,
    /// SCRAM-SHA-256 against the configured users.
    Scram,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    /// A clear-text password (salted and hashed when the server starts).
    #[serde(default)]
    pub password: Option<String>,
    /// A PostgreSQL SCRAM verifier, as `pg_authid.rolpassword` holds it.
    #[serde(default)]
    pub scram_verifier: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Where clients connect.
    pub listen: String,
    /// Also listen on the Unix-domain socket `<dir>/.s.PGSQL.<port of listen>`, where libpq
    /// clients connect with `-h <dir> -p <port>` (PostgreSQL's `unix_socket_directories`).
    /// Its connections authenticate as the TCP listener's do.
    pub unix_socket_dir: Option<PathBuf>,
    /// `None`: trust on a loopback address, SCRAM on any other.
    pub auth: Option<AuthMethod>,
    pub users: Vec<User>,
    /// Connections served at once; one more is refused with 53300.
    pub max_connections: usize,
    /// The largest message a client may send (a longer one closes the connection with 08P01).
    pub max_message_bytes: usize,
    /// Ends sessions idle inside a transaction this long (0: never), rolling them back.
    pub idle_in_transaction_session_timeout_ms: u64,
    /// Time a client has to finish startup and authentication.
    pub startup_timeout_ms: u64,
    /// PEM certificate chain and private key for TLS.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Serves Prometheus metrics over HTTP at `/metrics` here.
    pub metrics_listen: Option<String>,
    /// Event-loop threads (0: one per core).
    pub threads: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:5433".into(),
            unix_socket_dir: None,
            auth: None,
            users: Vec::new(),
            max_connections: 500,
            max_message_bytes: 64 << 20,
            idle_in_transaction_session_timeout_ms: 0,
            startup_timeout_ms: 60_000,
            tls_cert: None,
            tls_key: None,
            metrics_listen: None,
            threads: 0,
        }
    }
}

impl ServerConfig {
    /// Reads a TOML configuration file.
    pub fn from_file(path: &std::path::Path) -> Result<ServerConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        toml::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))
    }

    /// The authentication method in force for `listen` (see [`ServerConfig::auth`]).
    pub fn auth_method(&self, listen: &SocketAddr) -> AuthMethod {
        self.auth.unwrap_or(if listen.ip().is_loopback() {
            AuthMethod::Trust
        } else {
            AuthMethod::Scram
        })
    }

    pub(crate) fn idle_in_transaction_timeout(&self) -> Option<Duration> {
        (self.idle_in_transaction_session_timeout_ms > 0)
            .then(|| Duration::from_millis(self.idle_in_transaction_session_timeout_ms))
    }

    pub(crate) fn startup_timeout(&self) -> Duration {
        Duration::from_millis(self.startup_timeout_ms.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_the_default_only_on_loopback() {
        let config = ServerConfig::default();
        assert_eq!(config.auth_method(&"127.0.0.1:5433".parse().unwrap()), AuthMethod::Trust);
        assert_eq!(config.auth_method(&"[::1]:5433".parse().unwrap()), AuthMethod::Trust);
        assert_eq!(config.auth_method(&"0.0.0.0:5433".parse().unwrap()), AuthMethod::Scram);
        let configured: ServerConfig = toml::from_str("auth = \"trust\"").unwrap();
        assert_eq!(configured.auth_method(&"0.0.0.0:5433".parse().unwrap()), AuthMethod::Trust);
    }

    #[test]
    fn files_parse_and_unknown_keys_are_errors() {
        let config: ServerConfig = toml::from_str(
            "listen = \"0.0.0.0:6000\"\nmax_connections = 7\n[[users]]\nname = \"a\"\npassword = \"b\"\n",
        )
        .unwrap();
        assert_eq!(config.max_connections, 7);
        assert_eq!(config.users[0].name, "a");
        assert!(toml::from_str::<ServerConfig>("max_conections = 7").is_err());
    }
}
