//! What a session's statements need of sequences ([`Sequences`]): durable reservations, the
//! named sequences of the catalog, and the session's own last values (`currval`, `lastval`).

use crate::SqlDb;
use crate::catalog::{Sequence, SequenceDef};
use crate::error::{SqlError, SqlResult};
use crate::expr::Sequences;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

/// The values a session was last handed: per sequence (by key), and of any sequence.
#[derive(Debug, Default)]
pub(crate) struct SessionValues {
    by_key: RefCell<HashMap<String, i64>>,
    last: Cell<Option<i64>>,
}

pub(crate) struct SessionSequences<'a> {
    pub db: &'a SqlDb,
    pub values: &'a SessionValues,
}

impl Sequences for SessionSequences<'_> {
    fn reserve(&self, sequence: &Sequence, limit: i64) -> SqlResult<()> {
        self.db.reserve(sequence, limit)
    }

    fn find(&self, name: &str) -> SqlResult<(Arc<SequenceDef>, Arc<Sequence>)> {
        // Statements run after their plan has let the catalog go (`Session::plan_for`).
        self.db
            .catalog
            .read()
            .named_sequence(name)
            .map_err(|_| SqlError::new("42P01", format!("relation \"{name}\" does not exist")))
    }

    fn note(&self, sequence: &Sequence, value: i64) {
        self.values.by_key.borrow_mut().insert(sequence.key.clone(), value);
        self.values.last.set(Some(value));
    }

    fn current(&self, sequence: &Sequence) -> Option<i64> {
        self.values.by_key.borrow().get(&sequence.key).copied()
    }

    fn last(&self) -> Option<i64> {
        self.values.last.get()
    }

    fn with_catalog(&self, f: &mut dyn FnMut(&crate::catalog::Catalog)) {
        f(&self.db.catalog.read());
    }
}
