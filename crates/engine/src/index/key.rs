//! Memcomparable key encoding: byte strings whose unsigned lexicographic order is the order of
//! the values they encode, so the index compares keys as bytes and never knows their types.
//!
//! | type                  | encoding                                                        |
//! |-----------------------|-----------------------------------------------------------------|
//! | unsigned integer      | big-endian, fixed width                                         |
//! | signed integer        | big-endian, fixed width, sign bit flipped                       |
//! | byte string in a      | groups of 8 bytes, each followed by a marker byte: 0xFF when    |
//! | composite key         | more groups follow, else 0xF7 + the group's used length (0..8); |
//! |                       | the last group is zero-padded. Self-delimiting, order-preserving|
//! | last byte string      | raw bytes (nothing follows, so no delimiter is needed)          |
//!
//! The group encoding (as in MyRocks and TiKV) costs 9/8 of the string instead of the 2x worst
//! case of escaping zero bytes, and a prefix of a composite key is a prefix of its encoding, so
//! composite-key prefix scans are byte-prefix scans.

use std::fmt;

const GROUP_BYTES: usize = 8;
const MARKER_MORE: u8 = 0xFF;
const MARKER_LAST_BASE: u8 = 0xF7;

/// Length of the group encoding of a byte string of `len` bytes.
pub const fn encoded_bytes_len(len: usize) -> usize {
    (len / GROUP_BYTES + 1) * (GROUP_BYTES + 1)
}

// The longest index entry key (`limits`) is that of the longest secondary key's encoding.
const _: () = assert!(
    crate::limits::INDEX_KEY_BYTES_MAX
        == encoded_bytes_len(crate::limits::KEY_BYTES_MAX)
            + crate::limits::KEY_BYTES_MAX
            + crate::limits::VERSION_SUFFIX_BYTES
);

/// Appends the self-delimiting, order-preserving encoding of `bytes` to `out`.
pub fn encode_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    let mut chunks = bytes.chunks_exact(GROUP_BYTES);
    for chunk in &mut chunks {
        out.extend_from_slice(chunk);
        out.push(MARKER_MORE);
    }
    let rest = chunks.remainder();
    out.extend_from_slice(rest);
    out.extend(std::iter::repeat_n(0u8, GROUP_BYTES - rest.len()));
    out.push(MARKER_LAST_BASE + rest.len() as u8);
}

/// Decodes a string written by [`encode_bytes`] at the start of `input`; returns it and the
/// number of input bytes consumed, or `None` if `input` is not such an encoding.
pub fn decode_bytes(input: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let mut consumed = 0;
    loop {
        let group = input.get(consumed..consumed + GROUP_BYTES + 1)?;
        let marker = group[GROUP_BYTES];
        consumed += GROUP_BYTES + 1;
        if marker == MARKER_MORE {
            out.extend_from_slice(&group[..GROUP_BYTES]);
            continue;
        }
        let used = marker.checked_sub(MARKER_LAST_BASE)? as usize;
        if used >= GROUP_BYTES || group[used..GROUP_BYTES].iter().any(|&b| b != 0) {
            return None;
        }
        out.extend_from_slice(&group[..used]);
        return Some(consumed);
    }
}

/// Builds a composite memcomparable key.
///
/// ```
/// use engram_engine::index::key::KeyBuilder;
/// let a = KeyBuilder::new().u16(1).u8(3).u32(10).finish();
/// let b = KeyBuilder::new().u16(1).u8(3).u32(200).finish();
/// assert!(a < b);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyBuilder {
    bytes: Vec<u8>,
}

impl KeyBuilder {
    pub fn new() -> Self {
        KeyBuilder { bytes: Vec::with_capacity(16) }
    }

    /// Reuses a buffer (cleared first): no allocation once it has grown.
    pub fn reuse(mut bytes: Vec<u8>) -> Self {
        bytes.clear();
        KeyBuilder { bytes }
    }

    pub fn u8(mut self, value: u8) -> Self {
        self.bytes.push(value);
        self
    }
    pub fn u16(mut self, value: u16) -> Self {
        self.bytes.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub fn u32(mut self, value: u32) -> Self {
        self.bytes.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub fn u64(mut self, value: u64) -> Self {
        self.bytes.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub fn i32(mut self, value: i32) -> Self {
        self.bytes.extend_from_slice(&((value as u32) ^ (1 << 31)).to_be_bytes());
        self
    }
    pub fn i64(mut self, value: i64) -> Self {
        self.bytes.extend_from_slice(&((value as u64) ^ (1 << 63)).to_be_bytes());
        self
    }
    /// A string that other components may follow.
    pub fn bytes(mut self, value: &[u8]) -> Self {
        encode_bytes(value, &mut self.bytes);
        self
    }
    pub fn str(self, value: &str) -> Self {
        self.bytes(value.as_bytes())
    }
    /// Raw bytes appended as they are: only for the last component.
    pub fn raw(mut self, value: &[u8]) -> Self {
        self.bytes.extend_from_slice(value);
        self
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

impl fmt::Debug for KeyBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:02x?})", self.bytes)
    }
}

/// The smallest key greater than every key that starts with `prefix`, or `None` if there is
/// none (the prefix is all 0xFF): the exclusive upper bound of a prefix scan.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last != u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_bytes(bytes, &mut out);
        out
    }

    proptest! {
        #[test]
        fn byte_encoding_preserves_order_and_round_trips(
            a in proptest::collection::vec(any::<u8>(), 0..40),
            b in proptest::collection::vec(any::<u8>(), 0..40),
            tail_a in proptest::collection::vec(any::<u8>(), 0..4),
            tail_b in proptest::collection::vec(any::<u8>(), 0..4),
        ) {
            let (ea, eb) = (enc(&a), enc(&b));
            prop_assert_eq!(ea.len(), encoded_bytes_len(a.len()));
            prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
            // Self-delimiting: what follows the string does not change the order of the strings.
            let mut ca = ea.clone(); ca.extend_from_slice(&tail_a);
            let mut cb = eb.clone(); cb.extend_from_slice(&tail_b);
            if a != b { prop_assert_eq!(a.cmp(&b), ca.cmp(&cb)); }
            let mut decoded = Vec::new();
            prop_assert_eq!(decode_bytes(&ca, &mut decoded), Some(ea.len()));
            prop_assert_eq!(decoded, a);
        }

        #[test]
        fn signed_integers_keep_their_order(a in any::<i64>(), b in any::<i64>(), c in any::<i32>(), d in any::<i32>()) {
            prop_assert_eq!(a.cmp(&b), KeyBuilder::new().i64(a).finish().cmp(&KeyBuilder::new().i64(b).finish()));
            prop_assert_eq!(c.cmp(&d), KeyBuilder::new().i32(c).finish().cmp(&KeyBuilder::new().i32(d).finish()));
        }
    }

    #[test]
    fn prefix_successor_bounds_the_prefix() {
        assert_eq!(prefix_successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        assert!(decode_bytes(&[1, 2, 3], &mut Vec::new()).is_none());
    }
}
