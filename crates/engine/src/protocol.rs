//! What a database's concurrency control promises: the protocol chosen when it opens
//! ([`Protocol`]), the isolation level of each transaction ([`Isolation`]), and what the
//! protocol re-checks at each level ([`Rules`], worked out once when the database opens). The
//! protocols themselves are `cc`'s.

use crate::storage::record::HeadWords;

/// The concurrency-control protocol of a database, chosen when it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Protocol {
    /// Silo's single-version optimistic protocol (`cc/silo.rs`); the default.
    #[default]
    Silo,
    /// Snapshot isolation: reads at the transaction's start, first committer wins.
    Si,
    /// Multi-version optimistic concurrency control: snapshot reads validated at commit.
    Mvocc,
    /// Snapshot isolation with the serial safety net (`cc/ssn.rs`) at SERIALIZABLE.
    Ssn,
    /// Multi-version timestamp ordering (`cc/mvto.rs`).
    Mvto,
    /// Multi-version two-phase locking, no-wait (`cc/mv2pl.rs`).
    Mv2pl,
}

/// The protocol names, for messages.
const NAMES: &str = "silo, si, mvocc, ssn, mvto and mv2pl";

impl Protocol {
    pub const ALL: [Protocol; 6] = [
        Protocol::Silo,
        Protocol::Si,
        Protocol::Mvocc,
        Protocol::Ssn,
        Protocol::Mvto,
        Protocol::Mv2pl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Silo => "silo",
            Protocol::Si => "si",
            Protocol::Mvocc => "mvocc",
            Protocol::Ssn => "ssn",
            Protocol::Mvto => "mvto",
            Protocol::Mv2pl => "mv2pl",
        }
    }

    /// The protocol named `name`, or a message that says why there is none.
    pub fn parse(name: &str) -> Result<Protocol, String> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("unknown protocol {name:?}; the protocols are {NAMES}"))
    }

    /// The protocol words record heads carry (`storage::record::HeadWords`).
    pub fn head_words(self) -> HeadWords {
        match self {
            Protocol::Silo | Protocol::Si | Protocol::Mvocc => HeadWords::None,
            Protocol::Ssn => HeadWords::Stamps,
            Protocol::Mvto => HeadWords::Timestamps,
            Protocol::Mv2pl => HeadWords::TwoPhase,
        }
    }

    /// Whether transactions read versions by timestamp (and the clock runs).
    pub fn multiversion(self) -> bool {
        self != Protocol::Silo
    }

    /// How a transaction at `isolation` behaves under this protocol (the table above and in
    /// `silo.rs`, `mvto.rs` and `mv2pl.rs`).
    pub(crate) fn rules(self, isolation: Isolation) -> Rules {
        let optimistic = |validate_reads, validate_nodes, first_committer_wins, ssn| Rules {
            validate_reads,
            validate_nodes,
            first_committer_wins,
            ssn,
            locking: Locking::None,
            lock_reads: false,
            commit_at_begin: false,
            statement_snapshots: false,
        };
        let locking = match self {
            Protocol::Mvto => Locking::Timestamps,
            Protocol::Mv2pl => Locking::TwoPhase,
            _ => Locking::None,
        };
        match (self, isolation) {
            (Protocol::Silo, _) | (_, Isolation::Snapshot) => {
                optimistic(isolation.validates_reads(), isolation.validates_nodes(), false, false)
            }
            (_, Isolation::ReadCommitted) => Rules {
                locking,
                statement_snapshots: self == Protocol::Mvto,
                ..optimistic(false, false, false, false)
            },
            (Protocol::Si | Protocol::Ssn, Isolation::RepeatableRead) => {
                optimistic(false, false, true, false)
            }
            (Protocol::Mvocc, Isolation::RepeatableRead) => optimistic(true, false, true, false),
            (Protocol::Ssn, Isolation::Serializable) => optimistic(false, true, true, true),
            (Protocol::Si | Protocol::Mvocc, Isolation::Serializable) => {
                optimistic(true, true, true, false)
            }
            (Protocol::Mvto, _) => Rules {
                locking,
                lock_reads: true,
                commit_at_begin: true,
                ..optimistic(false, isolation.validates_nodes(), true, false)
            },
            (Protocol::Mv2pl, _) => Rules {
                locking,
                lock_reads: true,
                ..optimistic(false, isolation.validates_nodes(), false, false)
            },
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a transaction re-checks and how its reads and writes meet concurrent commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Records read are recorded and re-checked at commit.
    pub validate_reads: bool,
    /// Leaves scanned (and those of failed lookups) are re-checked at commit.
    pub validate_nodes: bool,
    /// Under a multi-version protocol: a write to a record changed since the read timestamp
    /// aborts, and so does a validated read of one.
    pub first_committer_wins: bool,
    /// The serial safety net (`cc/ssn.rs`): every read is recorded, the leaves the transaction
    /// changes are remembered, and commit runs the exclusion-window check.
    pub ssn: bool,
    /// The no-wait locks writes take at once (`mvto`, `mv2pl`), at every level.
    pub locking: Locking,
    /// Reads take the protocol's lock too: MV2PL's read lock, MVTO's read timestamp.
    pub lock_reads: bool,
    /// MVTO: the transaction's timestamp, taken when it begins, is its commit TID.
    pub commit_at_begin: bool,
    /// MVTO at READ COMMITTED: each statement reads a snapshot that leaves out the
    /// transactions committing at earlier begin timestamps that had not yet started installing
    /// (`mvto.rs`, READ; `sync::epoch`, statement snapshots).
    pub statement_snapshots: bool,
}

impl Rules {
    /// Whether the transaction remembers the leaves its inserts change, to read their stamps
    /// at commit (`ssn.rs`, `mvto.rs`).
    pub fn tracks_leaf_changes(&self) -> bool {
        self.ssn || self.commit_at_begin
    }
}

/// The no-wait locks of the pessimistic protocols (`sync::lockword`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locking {
    /// None: writes are locked only while they commit (the optimistic protocols).
    None,
    /// MVTO's owner and read timestamp (`mvto.rs`).
    Timestamps,
    /// MV2PL's write bit and reader count (`mv2pl.rs`).
    TwoPhase,
}

impl Default for Rules {
    fn default() -> Self {
        Protocol::Silo.rules(Isolation::Serializable)
    }
}

/// The isolation level of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isolation {
    /// Reads see committed data; nothing read is re-checked at commit (MOT's READ COMMITTED).
    ReadCommitted,
    /// Records read are re-checked at commit; ranges are not (phantoms are possible).
    RepeatableRead,
    /// Silo's protocol: records and scanned ranges are re-checked at commit.
    Serializable,
    /// Read-only: reads a consistent snapshot at a recent epoch boundary and never aborts.
    Snapshot,
}

impl Isolation {
    pub const ALL: [Isolation; 4] = [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
        Isolation::Snapshot,
    ];

    /// Dense index, in [`Isolation::ALL`] order.
    #[inline]
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub(crate) fn validates_reads(self) -> bool {
        matches!(self, Isolation::RepeatableRead | Isolation::Serializable)
    }

    #[inline]
    pub(crate) fn validates_nodes(self) -> bool {
        self == Isolation::Serializable
    }

    /// The name used in scripts, reports and SQL (`SET TRANSACTION ISOLATION LEVEL ...`).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
            Isolation::Snapshot => "snapshot",
        }
    }

    pub fn parse(name: &str) -> Option<Isolation> {
        Isolation::ALL.into_iter().find(|level| level.name() == name)
    }
}
