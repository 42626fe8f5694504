//! `uuid`: sixteen bytes, read in PostgreSQL's accepted spellings and written in the standard
//! one, and version-4 random values for `gen_random_uuid()`.

use super::*;

/// Parses `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`, with or without hyphens (after any group of
/// four digits), upper or lower case, optionally in braces.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let text = text.trim();
    let text = match text.strip_prefix('{') {
        Some(inner) => inner.strip_suffix('}')?,
        None => text,
    };
    let mut bytes = [0u8; 16];
    let mut digits = 0;
    let mut after_hyphen = true;
    for (at, c) in text.char_indices() {
        if c == '-' {
            // A hyphen only between groups of four digits, never two in a row or at the end.
            if after_hyphen || digits % 4 != 0 || at + 1 == text.len() {
                return None;
            }
            after_hyphen = true;
            continue;
        }
        let nibble = c.to_digit(16)? as u8;
        if digits == 32 {
            return None;
        }
        bytes[digits / 2] |= nibble << if digits % 2 == 0 { 4 } else { 0 };
        digits += 1;
        after_hyphen = false;
    }
    (digits == 32).then_some(bytes)
}

pub(super) fn write_uuid(bytes: &[u8; 16], out: &mut String) {
    for (at, byte) in bytes.iter().enumerate() {
        if matches!(at, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        let _ = write!(out, "{byte:02x}");
    }
}

/// A random (version 4, RFC 4122 variant) UUID from the thread's cryptographically seeded
/// generator.
pub fn random_uuid() -> [u8; 16] {
    use rand::RngExt;
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes
}
