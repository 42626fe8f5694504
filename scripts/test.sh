#!/usr/bin/env bash
# Engram's test suite: what CI runs (through .ci/run) and what to run before a commit.
# Needs a Rust toolchain (1.95) and crates.io; the client tests install postgresql-client
# (psql, pgbench) with apt-get when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== formatting"
cargo fmt --all -- --check

if cargo clippy --version >/dev/null 2>&1; then
  echo "== lints (clippy)"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  # The serial safety net's debug trace, so that it still builds when it is needed.
  cargo clippy -p engram-engine --all-targets --locked --features ssn-trace -- -D warnings
else
  echo "== lints skipped: this toolchain has no clippy"
fi

echo "== unit, property, integration and end-to-end tests"
cargo test --workspace --locked

echo "== randomized-schedule tests of the latch, epochs and group commit (shuttle)"
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy -p engram-engine --lib --tests --locked --features shuttle -- -D warnings
fi
cargo test --locked -p engram-engine --features shuttle --test shuttle_sync
# The log's group commit and recovery's reclamation, whose types are the crate's own: their
# unit tests under shuttle.
cargo test --locked -p engram-engine --features shuttle --lib wal::log::schedules
cargo test --locked -p engram-engine --features shuttle --lib recovery::quiescence_schedules

echo "== real clients against engram serve (psql, pgbench, psycopg and sysbench when present)"
cargo build --locked -p engram-cli
scripts/client-tests.sh target/debug/engram

echo "== differential run against PostgreSQL 15's regression files (docs/sql.md; fails when Engram drops a connection)"
ENGRAM=target/debug/engram scripts/differential.sh

echo "== all tests passed"
