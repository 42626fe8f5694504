//! What a statement returns: rows or a command tag, and the tag type that holds its text
//! without allocating.

use crate::plan::OutputColumn;
use crate::types::Value;
use std::sync::Arc;

/// What a statement returned.
#[derive(Debug, Clone)]
pub enum Outcome {
    Rows { columns: Arc<[OutputColumn]>, rows: Vec<Vec<Value>>, tag: Tag },
    Command { tag: Tag },
}

/// Bytes a [`Tag`] holds without allocating: every tag Engram produces fits.
const TAG_INLINE_MAX: usize = 30;

/// A command tag ("UPDATE 1", "COMMIT", "SELECT 42"), read as a `&str`. Held inline, so that a
/// statement does not allocate one; a longer tag is kept on the heap.
#[derive(Clone, PartialEq, Eq)]
pub struct Tag(TagText);

#[derive(Clone, PartialEq, Eq)]
enum TagText {
    Inline { len: u8, bytes: [u8; TAG_INLINE_MAX] },
    Heap(String),
}

impl Tag {
    /// `verb` followed by `count` in decimal, written without the formatting machinery.
    pub fn counted(verb: &str, count: u64) -> Tag {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = count;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let digits = &digits[at..];
        let len = verb.len() + digits.len();
        if len > TAG_INLINE_MAX {
            // The digits are ASCII.
            return Tag(TagText::Heap(format!("{verb}{}", String::from_utf8_lossy(digits))));
        }
        let mut bytes = [0u8; TAG_INLINE_MAX];
        bytes[..verb.len()].copy_from_slice(verb.as_bytes());
        bytes[verb.len()..len].copy_from_slice(digits);
        Tag(TagText::Inline { len: len as u8, bytes })
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Whole `str`s and ASCII digits went in: always valid.
            TagText::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            TagText::Heap(text) => text,
        }
    }
}

impl From<&str> for Tag {
    fn from(text: &str) -> Tag {
        if text.len() > TAG_INLINE_MAX {
            return Tag(TagText::Heap(text.to_owned()));
        }
        let mut bytes = [0u8; TAG_INLINE_MAX];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Tag(TagText::Inline { len: text.len() as u8, bytes })
    }
}

impl From<String> for Tag {
    fn from(text: String) -> Tag {
        Tag::from(text.as_str())
    }
}

impl From<Tag> for String {
    fn from(tag: Tag) -> String {
        tag.as_str().to_owned()
    }
}

impl std::ops::Deref for Tag {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl std::fmt::Debug for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for Tag {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Tag {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Outcome {
    pub fn tag(&self) -> &str {
        match self {
            Outcome::Rows { tag, .. } | Outcome::Command { tag } => tag,
        }
    }

    pub fn rows(&self) -> &[Vec<Value>] {
        match self {
            Outcome::Rows { rows, .. } => rows,
            Outcome::Command { .. } => &[],
        }
    }

    /// The rows in PostgreSQL's text format (what psql prints, and the wire protocol's text
    /// results); `None` is NULL.
    pub fn text_rows(&self) -> Vec<Vec<Option<String>>> {
        match self {
            Outcome::Rows { columns, rows, .. } => rows
                .iter()
                .map(|row| row.iter().zip(columns.iter()).map(|(v, c)| v.to_text(c.ty)).collect())
                .collect(),
            Outcome::Command { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tag;

    #[test]
    fn tags_read_as_the_text_they_were_made_from() {
        for (verb, count) in
            [("UPDATE ", 0), ("INSERT 0 ", 1), ("SELECT ", u64::MAX), ("SHOW ", 42)]
        {
            let tag = Tag::counted(verb, count);
            assert_eq!(tag.as_str(), format!("{verb}{count}"));
            assert_eq!(String::from(tag.clone()), format!("{verb}{count}"));
        }
        // A count that makes the tag longer than the inline room goes to the heap.
        let long = Tag::counted("A VERY LONG COMMAND TAG ", u64::MAX);
        assert_eq!(long, format!("A VERY LONG COMMAND TAG {}", u64::MAX).as_str());
        let text = "ALTER DEFAULT PRIVILEGES IN SCHEMA";
        assert_eq!(Tag::from(text), text);
        assert_eq!(Tag::from("COMMIT"), "COMMIT");
        assert_eq!(format!("{} {:?}", Tag::from("BEGIN"), Tag::from("BEGIN")), "BEGIN \"BEGIN\"");
    }
}
