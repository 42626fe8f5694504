#!/usr/bin/env bash
# Engram's test suite: what CI runs (through .ci/run) and what to run before a commit.
# Needs only a Rust toolchain (1.95); every crate comes from crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== formatting"
cargo fmt --all -- --check

if cargo clippy --version >/dev/null 2>&1; then
  echo "== lints (clippy)"
  cargo clippy --workspace --all-targets --locked -- -D warnings
else
  echo "== lints skipped: this toolchain has no clippy"
fi

echo "== unit, property, integration and end-to-end tests"
cargo test --workspace --locked

echo "== randomized-schedule tests of the latch and epochs (shuttle)"
cargo test --locked -p engram-engine --features shuttle --test shuttle_sync

echo "== all tests passed"
