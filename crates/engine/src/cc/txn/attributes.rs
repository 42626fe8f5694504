//! Rows of non-inline attributes (`storage::shared`, Wu et al.'s Fig. 11): inserted whole,
//! updated and read one attribute at a time. A write puts a patch in the transaction's write
//! set; commit turns it into the new version's handles under the record's lock.

use super::{Found, Txn, check_value};
use crate::cc::worker::{TableRef, TxnState};
use crate::error::{Error, Result};
use crate::storage::Table;
use crate::storage::shared::{self, Base, HANDLE_BYTES, NonInline, Slot};

/// The table's layout, if it holds non-inline attributes.
fn layout_of(table: &Table, index: Option<usize>) -> Result<NonInline> {
    let Some(layout) = table.non_inline else {
        return Err(Error::InvalidConfig(format!(
            "table \"{}\" holds rows of bytes, not non-inline attributes",
            table.name()
        )));
    };
    match index {
        Some(index) if index >= layout.attributes => Err(Error::InvalidConfig(format!(
            "table \"{}\" has {} attributes; there is no attribute {index}",
            table.name(),
            layout.attributes
        ))),
        _ => Ok(layout),
    }
}

impl Txn<'_> {
    /// Inserts a row of a non-inline table, `values[i]` being attribute `i`; fails with
    /// `DuplicateKey` if the key exists.
    pub fn insert_attributes(
        &mut self,
        table: &TableRef,
        key: &[u8],
        values: &[&[u8]],
    ) -> Result<()> {
        let layout = layout_of(table, None)?;
        if values.len() != layout.attributes {
            return Err(Error::InvalidConfig(format!(
                "table \"{}\" has {} attributes, not {}",
                table.name(),
                layout.attributes,
                values.len()
            )));
        }
        let mut patch = std::mem::take(&mut self.worker.txn.scratch_entry);
        shared::insert_patch(values, &mut patch);
        let result = check_value(&patch).and_then(|()| self.insert_row(table, key, &patch));
        self.worker.txn.scratch_entry = patch;
        result
    }

    /// Sets attribute `index` of the row with primary key `key` to `value`, leaving the others
    /// as they are (shared with the replaced version, or copied, as the table's `Sharing`
    /// says). The row is read for update, as by [`Txn::get_for_update`]. Returns whether the
    /// row exists.
    pub fn update_attribute(
        &mut self,
        table: &TableRef,
        key: &[u8],
        index: usize,
        value: &[u8],
    ) -> Result<bool> {
        let layout = layout_of(table, Some(index))?;
        self.writable()?;
        let found = self.lookup(table, key, true)?;
        let mut patch = std::mem::take(&mut self.worker.txn.scratch_entry);
        let TxnState { read_buffer, access, retained, .. } = &mut self.worker.txn;
        let base = match found {
            Found::None => {
                self.worker.txn.scratch_entry = patch;
                return Ok(false);
            }
            Found::Buffer => Base::Handles(read_buffer),
            Found::Own(span) => Base::Patch(access.slice(span)),
        };
        debug_assert!(
            !matches!(base, Base::Handles(row) if row.len() != layout.attributes * HANDLE_BYTES)
        );
        // SAFETY: the handles were read from a version in this call, while pinned, or are held
        // by this transaction's own patch of the row.
        unsafe { shared::update_patch(layout, base, index, value, retained, &mut patch) };
        let result = check_value(&patch).and_then(|()| self.write(table, key, Some(&patch), false));
        self.worker.txn.scratch_entry = patch;
        result
    }

    /// Copies attribute `index` of the row with primary key `key` into `out`. Returns whether
    /// the row exists.
    pub fn get_attribute(
        &mut self,
        table: &TableRef,
        key: &[u8],
        index: usize,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let layout = layout_of(table, Some(index))?;
        let found = self.lookup(table, key, false)?;
        let state = &self.worker.txn;
        let bytes = match found {
            Found::None => return Ok(false),
            // SAFETY: the handles were read from a version in this call, while pinned.
            Found::Buffer => unsafe { shared::value(shared::handle_at(&state.read_buffer, index)) },
            Found::Own(span) => {
                match shared::slot(state.access.slice(span), layout.attributes, index) {
                    Slot::New(bytes) => bytes,
                    // SAFETY: this transaction holds the value.
                    Slot::Keep(handle) => unsafe { shared::value(handle) },
                }
            }
        };
        out.clear();
        out.extend_from_slice(bytes);
        Ok(true)
    }
}
