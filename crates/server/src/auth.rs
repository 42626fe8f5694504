//! Startup: protocol version, the connection limit, authentication (trust or SCRAM-SHA-256
//! with pgwire's SCRAM state machine), the session, the cancel key.

use crate::codec::{Wire, error_fields};
use crate::config::{AuthMethod, User};
use crate::shared::Shared;
use base64::Engine as _;
use bytes::Bytes;
use engram_sql::Session;
use futures::{SinkExt, StreamExt};
use pgwire::api::auth::sasl::scram::{ScramSecret, ScramServerAuth, gen_salted_password};
use pgwire::messages::response::{ErrorResponse, SslResponse};
use pgwire::messages::startup::Startup;
use pgwire::messages::startup::{Authentication, NegotiateProtocolVersion};
use pgwire::messages::{
    PgWireBackendMessage as B, PgWireFrontendMessage as F, ProtocolVersion,
    SslNegotiationMetaMessage,
};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// SCRAM iterations for passwords given in clear text in the configuration.
const SCRAM_ITERATIONS: usize = 4096;

/// A user's SCRAM secret, from a PostgreSQL verifier string
/// (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, what `pg_authid` holds) or
/// a clear-text password.
pub(crate) fn secret(user: &User) -> Result<ScramSecret, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(verifier) = &user.scram_verifier {
        let parse = || -> Option<ScramSecret> {
            let rest = verifier.strip_prefix("SCRAM-SHA-256$")?;
            let (params, keys) = rest.split_once('$')?;
            let (iterations, salt) = params.split_once(':')?;
            let (stored, server) = keys.split_once(':')?;
            Some(ScramSecret::Verifier {
                salt: b64.decode(salt).ok()?,
                iterations: iterations.parse().ok()?,
                stored_key: b64.decode(stored).ok()?,
                server_key: b64.decode(server).ok()?,
            })
        };
        return parse().ok_or_else(|| format!("user \"{}\": malformed scram_verifier", user.name));
    }
    let Some(password) = &user.password else {
        return Err(format!("user \"{}\" has neither password nor scram_verifier", user.name));
    };
    let salt: [u8; 16] = rand::random();
    let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
    Ok(ScramSecret::verifier_from_salted_password(salt.to_vec(), salted, SCRAM_ITERATIONS))
}

/// pgwire's secret type is not `Clone`; each exchange consumes one.
fn copy_secret(secret: &ScramSecret) -> ScramSecret {
    match secret {
        ScramSecret::SaltedPassword { salt, salted_password } => ScramSecret::SaltedPassword {
            salt: salt.clone(),
            salted_password: salted_password.clone(),
        },
        ScramSecret::Verifier { salt, iterations, stored_key, server_key } => {
            ScramSecret::Verifier {
                salt: salt.clone(),
                iterations: *iterations,
                stored_key: stored_key.clone(),
                server_key: server_key.clone(),
            }
        }
    }
}

async fn fatal(wire: &mut Wire, code: &str, message: &str) -> io::Result<()> {
    wire.send(B::ErrorResponse(ErrorResponse::new(error_fields("FATAL", code, message)))).await
}

/// Reads the startup message and authenticates. `None`: the connection is over (a cancel
/// request, a refused client: it was told why).
pub(crate) async fn startup(wire: &mut Wire, shared: &Arc<Shared>) -> io::Result<Option<Started>> {
    let Some(mut message) = wire.next().await.transpose()? else { return Ok(None) };
    // A connection that did not go through pgwire's TLS negotiation (a Unix socket) may
    // still ask for encryption first: refused with 'N', as PostgreSQL answers on a Unix
    // socket, and the client goes on in the clear. At most one SSL and one GSS request.
    for _ in 0..3 {
        let F::SslNegotiation(request) = message else { break };
        match request {
            SslNegotiationMetaMessage::None => {
                wire.codec_mut().context.awaiting_frontend_ssl = false
            }
            _ => wire.send(B::SslResponse(SslResponse::Refuse)).await?,
        }
        let Some(next) = wire.next().await.transpose()? else { return Ok(None) };
        message = next;
    }
    let startup = match message {
        F::CancelRequest(cancel) => {
            shared.cancel(cancel.pid, &cancel.secret_key);
            return Ok(None);
        }
        F::Startup(startup) => startup,
        _ => {
            fatal(wire, "08P01", "invalid startup packet").await?;
            return Ok(None);
        }
    };
    match protocol(&startup) {
        Some(version) => wire.codec_mut().context.protocol_version = version,
        None if startup.protocol_number_major == 3 => {
            // A newer 3.x client: offer the newest minor version this server speaks.
            let version = ProtocolVersion::PROTOCOL3_2;
            wire.send(B::NegotiateProtocolVersion(NegotiateProtocolVersion::new(
                version.into(),
                vec![],
            )))
            .await?;
            wire.codec_mut().context.protocol_version = version;
        }
        None => {
            let (major, minor) = (startup.protocol_number_major, startup.protocol_number_minor);
            fatal(wire, "0A000", &format!("unsupported frontend protocol {major}.{minor}")).await?;
            return Ok(None);
        }
    }
    wire.codec_mut().started();
    let Some(user) = startup.parameters.get("user").cloned() else {
        fatal(wire, "28000", "no PostgreSQL user name specified in startup packet").await?;
        return Ok(None);
    };
    let Some(slot) = shared.metrics.open_connection(shared.config.max_connections) else {
        fatal(wire, "53300", "sorry, too many clients already").await?;
        return Ok(None);
    };
    let authenticated = match shared.auth {
        AuthMethod::Trust => true,
        AuthMethod::Scram => scram(wire, shared, &user).await?,
    };
    if !authenticated {
        shared.metrics.auth_failed();
        fatal(wire, "28P01", &format!("password authentication failed for user \"{user}\""))
            .await?;
        return Ok(None);
    }
    let mut session = match shared.db.session() {
        Ok(session) => session,
        Err(error) => {
            fatal(wire, "53300", &format!("cannot open a session: {}", error.message)).await?;
            return Ok(None);
        }
    };
    // The connection waits for durability itself, asynchronously.
    session.set_wait_durable(false);
    wire.feed(B::Authentication(Authentication::Ok)).await?;
    let pid = shared.next_pid.fetch_add(1, Ordering::Relaxed);
    let secret: i32 = rand::random();
    let cancel = Arc::new(AtomicBool::new(false));
    session.set_cancel_flag(Arc::clone(&cancel));
    shared.cancels.lock().insert(pid, (secret, Arc::clone(&cancel)));
    Ok(Some(Started { session, pid, secret, cancel, startup, user, slot }))
}

/// SCRAM-SHA-256 (RFC 5802 / 7677), as PostgreSQL does it; `false` when the proof is wrong,
/// the user unknown or the exchange malformed.
async fn scram(wire: &mut Wire, shared: &Shared, user: &str) -> io::Result<bool> {
    wire.send(B::Authentication(Authentication::SASL(vec!["SCRAM-SHA-256".into()]))).await?;
    let Some(Ok(F::PasswordMessageFamily(first))) = wire.next().await else { return Ok(false) };
    let Ok(initial) = first.into_sasl_initial_response() else { return Ok(false) };
    if initial.auth_method != "SCRAM-SHA-256" {
        return Ok(false);
    }
    let Some(secret) = shared.secrets.get(user).map(copy_secret) else { return Ok(false) };
    let client_first = initial.data.unwrap_or_default();
    let Ok((server_first, waiting)) =
        ScramServerAuth::new().on_client_first_message_with_secret(&client_first, secret)
    else {
        return Ok(false);
    };
    wire.send(B::Authentication(Authentication::SASLContinue(Bytes::from(server_first)))).await?;
    let Some(Ok(F::PasswordMessageFamily(next))) = wire.next().await else { return Ok(false) };
    let Ok(response) = next.into_sasl_response() else { return Ok(false) };
    match waiting.on_client_final_message(&response.data) {
        Ok(server_final) => {
            wire.feed(B::Authentication(Authentication::SASLFinal(Bytes::from(server_final))))
                .await?;
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// What startup produced.
pub(crate) struct Started {
    pub(crate) session: Session,
    pub(crate) pid: i32,
    pub(crate) secret: i32,
    pub(crate) cancel: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) startup: Startup,
    pub(crate) user: String,
    /// Counts the connection against `max_connections` while it lives.
    pub(crate) slot: crate::metrics::Slot,
}

pub(crate) fn protocol(startup: &Startup) -> Option<ProtocolVersion> {
    ProtocolVersion::from_version_number(
        startup.protocol_number_major,
        startup.protocol_number_minor,
    )
}
