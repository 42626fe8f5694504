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

/// The dependency graph of a history: edges out of each transaction.
type Graph = HashMap<TxnId, Vec<(TxnId, Edge)>>;

/// Checks the lists (no duplicate, phantom or lost append, every read a prefix of the final
/// list) and builds the dependency graph.
fn graph(
    committed: &[Committed],
    finals: &BTreeMap<Key, Vec<TxnId>>,
) -> Result<(Graph, Summary), Violation> {
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
    let mut edges: Graph = HashMap::new();
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
    Ok((edges, summary))
}

/// Checks committed transactions against the final lists of every key: serializability.
pub fn check(
    committed: &[Committed],
    finals: &BTreeMap<Key, Vec<TxnId>>,
) -> Result<Summary, Violation> {
    let (edges, summary) = graph(committed, finals)?;
    match find_cycle(committed, &edges, |_| true) {
        Some(cycle) => Err(Violation::Cycle(cycle)),
        None => Ok(summary),
    }
}

/// Checks a history against snapshot isolation (Adya's PL-SI, as far as a history without
/// start times shows it): the list checks of [`check`] (first committer wins loses no
/// append), no cycle of write-write and write-read edges (G0, G1c), and no cycle with exactly
/// one anti-dependency (G-single: a transaction that missed a change while seeing one made
/// after it). Cycles with two or more anti-dependencies (write skew) are allowed.
pub fn check_snapshot_isolation(
    committed: &[Committed],
    finals: &BTreeMap<Key, Vec<TxnId>>,
) -> Result<Summary, Violation> {
    let (edges, summary) = graph(committed, finals)?;
    let dependency = |edge: Edge| edge != Edge::ReadWrite;
    if let Some(cycle) = find_cycle(committed, &edges, dependency) {
        return Err(Violation::Cycle(cycle));
    }
    // G-single: an anti-dependency a -> b closed by a path of dependencies from b back to a.
    // Dependencies are acyclic now, so a path from b to a exists only if b comes before a in
    // a topological order, and it stays among the nodes not after a.
    let order = topological_order(committed, &edges, dependency);
    // Reachability by dependencies as bit sets, built in reverse topological order.
    let mut by_position = vec![0; order.len()];
    for (&id, &position) in &order {
        by_position[position] = id;
    }
    let words = order.len().div_ceil(64);
    let mut reach = vec![0u64; order.len() * words];
    for position in (0..order.len()).rev() {
        for &(to, edge) in edges.get(&by_position[position]).map(Vec::as_slice).unwrap_or(&[]) {
            if !dependency(edge) {
                continue;
            }
            let child = order[&to];
            // Children come later in the order, so their sets are complete.
            let (low, high) = reach.split_at_mut(child * words);
            let own = &mut low[position * words..(position + 1) * words];
            own[child / 64] |= 1 << (child % 64);
            for (mine, theirs) in own.iter_mut().zip(&high[..words]) {
                *mine |= theirs;
            }
        }
    }
    for (&from, out) in &edges {
        for &(to, edge) in out {
            let (source, target) = (order[&from], order[&to]);
            if edge != Edge::ReadWrite
                || reach[target * words + source / 64] & (1 << (source % 64)) == 0
            {
                continue;
            }
            if let Some(mut path) = dependency_path(&edges, &order, to, from) {
                path.insert(0, (from, Edge::ReadWrite, to));
                return Err(Violation::Cycle(path));
            }
        }
    }
    Ok(summary)
}

/// Positions of the transactions in a topological order of the edges `keep` accepts (which
/// must be acyclic), by Kahn's algorithm.
fn topological_order(
    committed: &[Committed],
    edges: &Graph,
    keep: impl Fn(Edge) -> bool,
) -> HashMap<TxnId, usize> {
    let mut incoming: HashMap<TxnId, usize> = committed.iter().map(|txn| (txn.id, 0)).collect();
    for out in edges.values() {
        for &(to, edge) in out {
            if keep(edge) {
                *incoming.entry(to).or_default() += 1;
            }
        }
    }
    let mut ready: Vec<TxnId> =
        incoming.iter().filter(|(_, count)| **count == 0).map(|(id, _)| *id).collect();
    let mut order = HashMap::with_capacity(incoming.len());
    while let Some(node) = ready.pop() {
        order.insert(node, order.len());
        for &(to, edge) in edges.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
            if keep(edge) {
                let count = incoming.get_mut(&to).expect("counted");
                *count -= 1;
                if *count == 0 {
                    ready.push(to);
                }
            }
        }
    }
    order
}

/// A path of write-write and write-read edges from `start` to `goal`, breadth first, through
/// nodes no later than `goal` in `order`.
fn dependency_path(
    edges: &Graph,
    order: &HashMap<TxnId, usize>,
    start: TxnId,
    goal: TxnId,
) -> Option<Vec<(TxnId, Edge, TxnId)>> {
    let limit = order[&goal];
    let mut came_from: HashMap<TxnId, (TxnId, Edge)> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut seen = HashSet::from([start]);
    while let Some(node) = queue.pop_front() {
        if node == goal {
            let mut path = Vec::new();
            let mut at = goal;
            while at != start {
                let (previous, edge) = came_from[&at];
                path.push((previous, edge, at));
                at = previous;
            }
            path.reverse();
            return Some(path);
        }
        for &(to, edge) in edges.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
            if edge != Edge::ReadWrite && order[&to] <= limit && seen.insert(to) {
                came_from.insert(to, (node, edge));
                queue.push_back(to);
            }
        }
    }
    None
}

/// A cycle among the edges `keep` accepts, by iterative depth-first search.
fn find_cycle(
    committed: &[Committed],
    edges: &Graph,
    keep: impl Fn(Edge) -> bool,
) -> Option<Vec<(TxnId, Edge, TxnId)>> {
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
                if !keep(edge) {
                    continue;
                }
                match marks.get(&to).copied().unwrap_or(Mark::Done) {
                    Mark::Open => {
                        let start = path.iter().position(|(from, _, _)| *from == to).unwrap_or(0);
                        let mut cycle = path[start..].to_vec();
                        cycle.push((node, edge, to));
                        return Some(cycle);
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
    None
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
    fn snapshot_isolation_allows_write_skew_and_catches_read_skew() {
        // Write skew (two anti-dependencies) is snapshot isolation.
        let committed =
            vec![txn(1, &[(1, &[]), (2, &[])], &[1]), txn(2, &[(1, &[]), (2, &[])], &[2])];
        let finals = BTreeMap::from([(1, vec![1]), (2, vec![2])]);
        assert!(check_snapshot_isolation(&committed, &finals).is_ok());
        // A fractured read: T2 appends to keys 1 and 2, and T3 sees the first append but not
        // the second. T2 -wr-> T3 and T3 -rw-> T2: a cycle with one anti-dependency.
        let committed =
            vec![txn(2, &[(1, &[]), (2, &[])], &[1, 2]), txn(3, &[(1, &[2]), (2, &[])], &[])];
        let finals = BTreeMap::from([(1, vec![2]), (2, vec![2])]);
        assert!(matches!(
            check_snapshot_isolation(&committed, &finals),
            Err(Violation::Cycle(cycle)) if cycle.len() == 2
        ));
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
