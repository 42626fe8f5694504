#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, cargo-fuzz with libFuzzer) for a while, each from its seeds
# and its corpus so far (fuzz/corpus/<target>, kept between runs, not committed). Needs a
# nightly toolchain; installs cargo-fuzz from crates.io when it is missing. CI does not run
# this: the property tests named in each target run the same code on the stable toolchain.
# Usage: scripts/fuzz.sh [seconds per target (default 60)] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(wire_messages wire_connection sql_text wal_recovery)
rustup run nightly rustc --version >/dev/null 2>&1 || { echo "a nightly toolchain is needed (rustup toolchain install nightly)"; exit 1; }
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
for target in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$target"
  seeds=()
  [ -d "fuzz/seeds/$target" ] && seeds=("fuzz/seeds/$target")
  echo "== $target ($seconds s)"
  cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "${seeds[@]}" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=8192 -print_final_stats=1 2>&1 |
    grep -E '^(Done|stat::number_of_executed_units|SUMMARY|==[0-9]+== ERROR)|panicked' || true
  if ls "fuzz/artifacts/$target"/crash-* "fuzz/artifacts/$target"/timeout-* >/dev/null 2>&1; then
    echo "$target: findings in fuzz/artifacts/$target"; exit 1
  fi
done
