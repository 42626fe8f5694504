//! Whole connections fed by a generator, on the stable toolchain: the code the cargo-fuzz
//! target `wire_connection` runs (`fuzz/`), with the seed conversations it starts from and
//! random message sequences (valid messages with random SQL and parameters, cut short or
//! with bytes flipped). Every conversation must end, and the server must answer a fresh
//! client afterwards.

use engram_server::fuzzing::{ConnectionHarness, message, seed_conversations, startup_packet};
use proptest::prelude::*;
use std::sync::OnceLock;

fn harness() -> &'static ConnectionHarness {
    static HARNESS: OnceLock<ConnectionHarness> = OnceLock::new();
    HARNESS.get_or_init(|| ConnectionHarness::new().expect("a server on an in-memory database"))
}

/// Backend message types in a reply, in order.
fn reply_kinds(reply: &[u8]) -> Vec<u8> {
    let mut kinds = Vec::new();
    let mut at = 0;
    while at + 5 <= reply.len() {
        kinds.push(reply[at]);
        let length =
            u32::from_be_bytes([reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4]]);
        at += 1 + length as usize;
    }
    kinds
}

/// With `ENGRAM_WRITE_FUZZ_SEEDS=1`, the seed conversations are also written where the
/// fuzz target starts from (`fuzz/seeds/wire_connection`, each after an odd first byte: the
/// target adds no startup packet of its own).
#[test]
fn seed_conversations_are_answered_in_full() {
    let harness = harness();
    if std::env::var_os("ENGRAM_WRITE_FUZZ_SEEDS").is_some() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/wire_connection");
        std::fs::create_dir_all(dir).unwrap();
        for (i, seed) in seed_conversations().iter().enumerate() {
            std::fs::write(format!("{dir}/seed-{i}"), [&[1u8][..], seed].concat()).unwrap();
        }
    }
    for (i, seed) in seed_conversations().iter().enumerate() {
        let reply = harness.converse(seed).unwrap_or_else(|| panic!("seed {i} did not end"));
        let kinds = reply_kinds(&reply);
        // Authentication, then one ReadyForQuery per simple query or Sync.
        assert_eq!(kinds.first(), Some(&b'R'), "seed {i}: {kinds:?}");
        assert!(kinds.iter().filter(|k| **k == b'Z').count() >= 3, "seed {i}: {kinds:?}");
        // No internal errors: every error carries a SQLSTATE outside class XX.
        assert!(!reply.windows(3).any(|w| w == b"CXX"), "seed {i}: an internal error");
    }
    // The division by zero failed its block, the COPY inserted its two rows and the failed
    // COPY none.
    let count = [
        startup_packet("postgres"),
        message::query("SELECT count(*) FROM f WHERE id >= 10"),
        message::terminate(),
    ]
    .concat();
    let reply = harness.converse(&count).unwrap();
    let data_row_of_two = b"D\0\0\0\x0b\0\x01\0\0\0\x012";
    assert!(reply.windows(data_row_of_two.len()).any(|w| w == data_row_of_two), "{reply:?}");
    assert!(harness.still_serving());
}

const STATEMENTS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS g (a INT PRIMARY KEY, b TEXT, c BIGINT)",
    "INSERT INTO g VALUES ($1, $2, $3)",
    "INSERT INTO g VALUES (1, 'x', 2) ON CONFLICT (a) DO UPDATE SET c = g.c + 1",
    "SELECT * FROM g WHERE a = $1",
    "SELECT b, count(*) FROM g GROUP BY b ORDER BY 2 DESC LIMIT 3",
    "UPDATE g SET c = c * 2 WHERE a BETWEEN $1 AND 100 RETURNING c",
    "DELETE FROM g WHERE b LIKE $1",
    "BEGIN ISOLATION LEVEL SERIALIZABLE",
    "COMMIT",
    "ROLLBACK",
    "SELECT $1::int + 1",
    "SELECT repeat(b, 3) FROM g",
    "COPY g FROM STDIN",
    "EXPLAIN SELECT * FROM g WHERE a IN (1, 2, $1)",
    "SET statement_timeout = 1000",
    "SHOW transaction_isolation",
    "PREPARE q AS SELECT a FROM g WHERE a > $1",
    "EXECUTE q(0)",
    "SELECT 1; SELECT 2",
    "",
];

fn sql() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(STATEMENTS).prop_map(str::to_string),
        1 => "[ -~]{0,40}",
    ]
}

fn param() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        3 => proptest::sample::select(&["1", "-7", "x", "2.5", "99999999999", "", "%"][..])
            .prop_map(|p| Some(p.as_bytes().to_vec())),
        1 => proptest::collection::vec(any::<u8>(), 0..12).prop_map(Some),
    ]
}

fn one_message() -> impl Strategy<Value = Vec<u8>> {
    let name = proptest::sample::select(&["", "s", "t"][..]);
    prop_oneof![
        3 => sql().prop_map(|sql| message::query(&sql)),
        2 => (name.clone(), sql()).prop_map(|(name, sql)| message::parse(name, &sql, &[])),
        2 => (name.clone(), name.clone(), proptest::collection::vec(param(), 0..4), any::<bool>())
            .prop_map(|(portal, statement, params, binary)| {
                let params: Vec<Option<&[u8]>> = params.iter().map(Option::as_deref).collect();
                message::bind(portal, statement, &params, binary)
            }),
        2 => (name.clone(), 0i32..3).prop_map(|(portal, rows)| message::execute(portal, rows)),
        1 => (proptest::sample::select(&[b'S', b'P', b'x'][..]), name.clone())
            .prop_map(|(target, name)| message::describe(target, name)),
        1 => (proptest::sample::select(&[b'S', b'P'][..]), name)
            .prop_map(|(target, name)| message::close(target, name)),
        2 => Just(message::sync()),
        1 => Just(message::flush()),
        1 => "[ -~\n\t]{0,30}".prop_map(|data| message::copy_data(data.as_bytes())),
        1 => Just(message::copy_done()),
        1 => Just(message::copy_fail("no")),
        1 => proptest::collection::vec(any::<u8>(), 0..16),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random sequences after a valid startup; sometimes cut short, sometimes with one byte
    /// changed.
    #[test]
    fn random_conversations_end_and_leave_the_server_serving(
        messages in proptest::collection::vec(one_message(), 0..12),
        cut in proptest::option::of(0usize..400),
        flip in proptest::option::of((0usize..400, any::<u8>())),
    ) {
        let mut bytes = startup_packet("postgres");
        for message in &messages {
            bytes.extend_from_slice(message);
        }
        if let Some((at, value)) = flip {
            let at = at % bytes.len();
            bytes[at] ^= value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.min(bytes.len()));
        }
        prop_assert!(harness().converse(&bytes).is_some(), "the conversation did not end");
        prop_assert!(harness().still_serving());
    }
}
