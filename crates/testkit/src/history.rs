//! A history checker for multi-threaded workloads, after Elle's list-append model.
//!
//! Every value is a list of transaction ids; a transaction appends by reading a key's list and
//! writing it back with its own id at the end. The final list of a key is then the key's whole
//! version order: version `i` is the prefix of length `i`, written by the transaction whose id
//! is at position `i - 1`. From each committed transaction's reads (which prefix it saw) and
//! appends, the checker derives the dependency graph of Adya's formalism:
//!
//! - ww: the writer of version `i` precedes the writer of version `i + 1`;
//! - wr: the writer of the version a transaction read precedes the reader;
//! - rw: a reader of version `i` precedes the writer of version `i + 1` (anti-dependency);
//!
//! and checks it for cycles (serializability: no G0, G1c or G2 cycle). It also checks that
//! every list read is a prefix of the final list and that only committed transactions'
//! appends appear, once each (no dirty or aborted reads, G1a/G1b, and no lost appends).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

pub type Key = u64;
pub type TxnId = u64;

/// A committed transaction's observations.
#[derive(Debug, Clone, Default)]
pub struct Committed {
    pub id: TxnId,
    /// Key and the list it read (a read of a key it also appends to is the read it appended to).
    pub reads: Vec<(Key, Vec<TxnId>)>,
    /// Keys it appended its id to.
    pub appends: Vec<Key>,
}

/// Encodes a list value.
pub fn encode(list: &[TxnId]) -> Vec<u8> {
    list.iter().flat_map(|id| id.to_le_bytes()).collect()
}

/// Decodes a list value.
pub fn decode(bytes: &[u8]) -> Vec<TxnId> {
    bytes
        .chunks_exact(8)
        .map(|chunk| u64::from_le_bytes(chunk.try_into().expect("8 bytes")))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// An id that no committed transaction appended appears in a final list (aborted or
    /// never-committed write).
    PhantomAppend { key: Key, id: TxnId },
    /// An id appears twice in a key's final list.
    DuplicateAppend { key: Key, id: TxnId },
    /// A committed append is missing from the final list (a lost update).
    LostAppend { key: Key, id: TxnId },
    /// A read list is not a prefix of the final list.
    NotAPrefix { key: Key, reader: TxnId },
    /// A dependency cycle among committed transactions.
    Cycle(Vec<(TxnId, Edge, TxnId)>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    WriteWrite,
    WriteRead,
    ReadWrite,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// The graph and what was checked, for reports.
#[derive(Debug, Default)]
pub struct Summary {
    pub transactions: usize,
    pub edges: usize,
    pub read_write_edges: usize,
}

/// Checks committed transactions against the final lists of every key.
pub fn check(
    committed: &[Committed],
    finals: &BTreeMap<Key, Vec<TxnId>>,
) -> Result<Summary, Violation> {
    let by_id: HashMap<TxnId, &Committed> = committed.iter().map(|txn| (txn.id, txn)).collect();
    // Position of each append in its key's final list.
    let mut writer_of: HashMap<(Key, usize), TxnId> = HashMap::new();
    for (&key, list) in finals {
        let mut seen = HashSet::new();
        for (position, &id) in list.iter().enumerate() {
            if !seen.insert(id) {
                return Err(Violation::DuplicateAppend { key, id });
            }
            if !by_id.get(&id).is_some_and(|txn| txn.appends.contains(&key)) {
                return Err(Violation::PhantomAppend { key, id });
            }
            writer_of.insert((key, position + 1), id);
        }
    }
    for txn in committed {
        for &key in &txn.appends {
            if !finals.get(&key).is_some_and(|list| list.contains(&txn.id)) {
                return Err(Violation::LostAppend { key, id: txn.id });
            }
        }
    }
    let mut edges: HashMap<TxnId, Vec<(TxnId, Edge)>> = HashMap::new();
    let mut summary = Summary { transactions: committed.len(), ..Summary::default() };
    let mut add = |from: TxnId, edge: Edge, to: TxnId, summary: &mut Summary| {
        if from != to {
            edges.entry(from).or_default().push((to, edge));
            summary.edges += 1;
            if edge == Edge::ReadWrite {
                summary.read_write_edges += 1;
            }
        }
    };
    for list in finals.values() {
        for pair in list.windows(2) {
            add(pair[0], Edge::WriteWrite, pair[1], &mut summary);
        }
    }
    for txn in committed {
        for (key, read) in &txn.reads {
            let empty = Vec::new();
            let list = finals.get(key).unwrap_or(&empty);
            if read.len() > list.len() || list[..read.len()] != read[..] {
                return Err(Violation::NotAPrefix { key: *key, reader: txn.id });
            }
            if let Some(&writer) = writer_of.get(&(*key, read.len())) {
                add(writer, Edge::WriteRead, txn.id, &mut summary);
            }
            if let Some(&next) = writer_of.get(&(*key, read.len() + 1)) {
                add(txn.id, Edge::ReadWrite, next, &mut summary);
            }
        }
    }
    // Iterative depth-first search for a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Fresh,
        Open,
        Done,
    }
    let mut marks: HashMap<TxnId, Mark> =
        committed.iter().map(|txn| (txn.id, Mark::Fresh)).collect();
    for txn in committed {
        if marks[&txn.id] != Mark::Fresh {
            continue;
        }
        let mut stack: Vec<(TxnId, usize)> = vec![(txn.id, 0)];
        let mut path: Vec<(TxnId, Edge, TxnId)> = Vec::new();
        marks.insert(txn.id, Mark::Open);
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let out = edges.get(&node).map(Vec::as_slice).unwrap_or(&[]);
            if *next < out.len() {
                let (to, edge) = out[*next];
                *next += 1;
                match marks.get(&to).copied().unwrap_or(Mark::Done) {
                    Mark::Open => {
                        let start = path.iter().position(|(from, _, _)| *from == to).unwrap_or(0);
                        let mut cycle = path[start..].to_vec();
                        cycle.push((node, edge, to));
                        return Err(Violation::Cycle(cycle));
                    }
                    Mark::Fresh => {
                        marks.insert(to, Mark::Open);
                        path.push((node, edge, to));
                        stack.push((to, 0));
                    }
                    Mark::Done => {}
                }
            } else {
                marks.insert(node, Mark::Done);
                stack.pop();
                path.pop();
            }
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(id: TxnId, reads: &[(Key, &[TxnId])], appends: &[Key]) -> Committed {
        Committed {
            id,
            reads: reads.iter().map(|(key, list)| (*key, list.to_vec())).collect(),
            appends: appends.to_vec(),
        }
    }

    #[test]
    fn serial_histories_pass_and_write_skew_is_a_cycle() {
        // T1 appends to x, T2 reads x after T1 and appends to y.
        let committed = vec![txn(1, &[(1, &[])], &[1]), txn(2, &[(1, &[1]), (2, &[])], &[2])];
        let finals = BTreeMap::from([(1, vec![1]), (2, vec![2])]);
        assert!(check(&committed, &finals).is_ok());
        // Write skew: each reads both keys empty and appends to a different one.
        let committed =
            vec![txn(1, &[(1, &[]), (2, &[])], &[1]), txn(2, &[(1, &[]), (2, &[])], &[2])];
        let finals = BTreeMap::from([(1, vec![1]), (2, vec![2])]);
        assert!(matches!(check(&committed, &finals), Err(Violation::Cycle(_))));
    }

    #[test]
    fn lost_and_aborted_appends_are_caught() {
        let committed = vec![txn(1, &[(1, &[])], &[1]), txn(2, &[(1, &[])], &[1])];
        let finals = BTreeMap::from([(1, vec![2])]);
        assert_eq!(
            check(&committed, &finals).unwrap_err(),
            Violation::LostAppend { key: 1, id: 1 }
        );
        let finals = BTreeMap::from([(1, vec![1, 2, 3])]);
        assert_eq!(
            check(&committed, &finals).unwrap_err(),
            Violation::PhantomAppend { key: 1, id: 3 }
        );
        // Both read the empty list and both appends survive: a lost update in disguise, which
        // shows up as a cycle (each read the version before the other's write).
        let finals = BTreeMap::from([(1, vec![1, 2])]);
        assert!(matches!(
            check(&committed, &finals),
            Err(Violation::NotAPrefix { .. } | Violation::Cycle(_))
        ));
    }
}
