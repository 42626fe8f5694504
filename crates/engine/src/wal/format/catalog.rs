//! Catalog records: table creations and drops with their index definitions, and rows of the
//! catalog's own tables, as the catalog log holds them.

use super::*;

pub const CATALOG_CREATE: u8 = 1;
pub const CATALOG_DROP: u8 = 2;
pub const CATALOG_ROWS_TAG: u8 = 3;

/// A secondary index as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRecord {
    pub name: String,
    pub unique: bool,
    pub definition: Vec<u8>,
}

/// A row a catalog log holds (`CatalogRecord::Rows`): its key, and its value or `None` for a
/// deletion.
pub type CatalogRow = (Vec<u8>, Option<Vec<u8>>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogRecord {
    Create {
        table: u32,
        name: String,
        indexes: Vec<IndexRecord>,
    },
    Drop {
        table: u32,
    },
    /// Rows of `table` that a transaction with TID `tid` committed ([`CATALOG_ROWS`]).
    Rows {
        table: u32,
        tid: u64,
        rows: Vec<CatalogRow>,
    },
}

fn put_sized(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

pub fn encode_catalog(record: &CatalogRecord) -> Vec<u8> {
    let mut out = Vec::new();
    match record {
        CatalogRecord::Create { table, name, indexes } => {
            out.push(CATALOG_CREATE);
            out.extend_from_slice(&table.to_le_bytes());
            put_sized(&mut out, name.as_bytes());
            out.extend_from_slice(&(indexes.len() as u32).to_le_bytes());
            for index in indexes {
                put_sized(&mut out, index.name.as_bytes());
                out.push(u8::from(index.unique));
                put_sized(&mut out, &index.definition);
            }
        }
        CatalogRecord::Drop { table } => {
            out.push(CATALOG_DROP);
            out.extend_from_slice(&table.to_le_bytes());
        }
        CatalogRecord::Rows { table, tid, rows } => {
            out.push(CATALOG_ROWS_TAG);
            out.extend_from_slice(&table.to_le_bytes());
            out.extend_from_slice(&tid.to_le_bytes());
            out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
            for (key, value) in rows {
                put_sized(&mut out, key);
                match value {
                    Some(value) => {
                        out.push(1);
                        put_sized(&mut out, value);
                    }
                    None => out.push(0),
                }
            }
        }
    }
    out
}

pub fn decode_catalog(payload: &[u8]) -> Option<CatalogRecord> {
    let mut cursor = Cursor::new(payload);
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).ok();
    let record = match cursor.u8()? {
        CATALOG_CREATE => {
            let table = cursor.u32()?;
            let name = text(cursor.sized()?)?;
            let count = cursor.u32()?;
            let mut indexes = Vec::new();
            for _ in 0..count {
                let name = text(cursor.sized()?)?;
                let unique = cursor.u8()? != 0;
                let definition = cursor.sized()?.to_vec();
                indexes.push(IndexRecord { name, unique, definition });
            }
            CatalogRecord::Create { table, name, indexes }
        }
        CATALOG_DROP => CatalogRecord::Drop { table: cursor.u32()? },
        CATALOG_ROWS_TAG => {
            let table = cursor.u32()?;
            let tid = cursor.u64()?;
            let count = cursor.u32()?;
            let mut rows = Vec::new();
            for _ in 0..count {
                let key = cursor.sized()?;
                if !key_fits(key) {
                    return None;
                }
                let value = match cursor.u8()? {
                    0 => None,
                    1 => Some(cursor.sized()?.to_vec()),
                    _ => return None,
                };
                rows.push((key.to_vec(), value));
            }
            CatalogRecord::Rows { table, tid, rows }
        }
        _ => return None,
    };
    cursor.is_empty().then_some(record)
}
