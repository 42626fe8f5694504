//! Framing: pgwire's message decoder behind a size check, and its encoder.
//!
//! pgwire decodes a message only once all of it is buffered and accepts up to 1 GiB, so a
//! client announcing a huge message would make the server buffer it; the length header is
//! checked first against `max_message_bytes` (08P01, connection closed). A malformed body
//! that makes pgwire's decoder panic (found by the property test below) is caught and treated
//! as a protocol violation.

use bytes::BytesMut;
use pgwire::messages::{DecodeContext, PgWireBackendMessage, PgWireFrontendMessage};
use std::io;
use tokio_util::codec::{Decoder, Encoder};

#[derive(Debug)]
pub(crate) struct Codec {
    pub(crate) context: DecodeContext,
    max_message_bytes: usize,
}

impl Codec {
    /// A codec for a connection past SSL negotiation, waiting for its startup message.
    pub(crate) fn new(max_message_bytes: usize) -> Self {
        let mut context = DecodeContext::default();
        context.awaiting_frontend_ssl = false;
        context.awaiting_frontend_startup = true;
        Codec { context, max_message_bytes }
    }

    /// A codec for a connection that starts without pgwire's TLS negotiation (a Unix
    /// socket): an SSL or GSS encryption request decodes as such, and startup refuses it.
    pub(crate) fn refusing_ssl(mut self) -> Self {
        self.context.awaiting_frontend_ssl = true;
        self
    }

    /// Startup is over: regular, typed messages follow.
    pub(crate) fn started(&mut self) {
        self.context.awaiting_frontend_startup = false;
    }
}

/// A protocol violation: the client gets an error and the connection is closed.
pub(crate) fn protocol_error(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

impl Decoder for Codec {
    type Item = PgWireFrontendMessage;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<PgWireFrontendMessage>> {
        let header = if self.context.awaiting_frontend_startup { 0 } else { 1 };
        if src.len() >= header + 4 {
            let len = u32::from_be_bytes([
                src[header],
                src[header + 1],
                src[header + 2],
                src[header + 3],
            ]) as usize;
            if len < 4 {
                return Err(protocol_error(format!("invalid message length {len}")));
            }
            if len > self.max_message_bytes {
                return Err(protocol_error(format!(
                    "message of {len} bytes exceeds the maximum of {} (max_message_bytes)",
                    self.max_message_bytes
                )));
            }
        }
        // pgwire 0.42.1's body decoders index past the end of some malformed messages (an
        // empty Parse body panics): a panic there is a malformed message, not a server fault.
        let context = &self.context;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            PgWireFrontendMessage::decode(src, context)
        })) {
            Ok(decoded) => {
                decoded.map_err(|error| protocol_error(format!("invalid message: {error}")))
            }
            Err(_) => Err(protocol_error("malformed message")),
        }
    }
}

impl Encoder<PgWireBackendMessage> for Codec {
    type Error = io::Error;

    fn encode(&mut self, item: PgWireBackendMessage, dst: &mut BytesMut) -> io::Result<()> {
        item.encode(dst).map_err(|error| io::Error::other(error.to_string()))
    }
}

/// A client connection, framed.
pub(crate) type Wire = tokio_util::codec::Framed<pgwire::tokio::server::MaybeTls, Codec>;

/// The fields of an ErrorResponse or NoticeResponse.
pub(crate) fn error_fields(severity: &str, code: &str, message: &str) -> Vec<(u8, String)> {
    vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', code.to_string()),
        (b'M', message.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_and_undersized_lengths_are_refused_before_buffering() {
        let mut codec = Codec::new(1024);
        codec.started();
        let mut huge = BytesMut::from(&[b'Q', 0x10, 0, 0, 0][..]);
        assert!(codec.decode(&mut huge).is_err());
        let mut tiny = BytesMut::from(&[b'Q', 0, 0, 0, 2][..]);
        assert!(codec.decode(&mut tiny).is_err());
        let mut partial = BytesMut::from(&[b'Q', 0, 0, 0, 9, b's'][..]);
        assert!(codec.decode(&mut partial).unwrap().is_none());
    }
}

/// The decoder on arbitrary bytes: it returns messages or errors and never panics, at
/// startup and after it. The same function is the cargo-fuzz target `wire_messages`
/// (`fuzz/`); this runs it on the stable toolchain.
#[cfg(test)]
mod fuzz {
    use crate::fuzzing::decode_messages;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), chunk in 1usize..64) {
            decode_messages(&bytes, chunk);
        }

        #[test]
        fn well_framed_messages_with_arbitrary_bodies_never_panic(
            kind in proptest::sample::select(b"QPBEDCSHXdcfp".to_vec()),
            body in proptest::collection::vec(any::<u8>(), 0..256),
        ) {
            let mut bytes = vec![kind];
            bytes.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
            bytes.extend_from_slice(&body);
            decode_messages(&bytes, 7);
        }
    }
}
