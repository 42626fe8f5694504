#!/usr/bin/env bash
# Profiles a TPC-C run and attributes the samples to transaction types and engine calls.
#   scripts/profile-tpcc.sh SECONDS [engram bench tpcc arguments...]
# Needs perf (linux-perf). Uses the cpu-clock event, which works where hardware counters
# do not (virtual machines), and DWARF call graphs so inlined frames are named.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/profile-tpcc.sh SECONDS [tpcc arguments...]}
shift
out=$(mktemp -d)
cargo build --release --quiet
./target/release/engram bench tpcc "$@" >"$out/run.log" 2>&1 &
pid=$!
# Sample after loading, once the workers run.
until grep -q '^loaded' "$out/run.log" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { cat "$out/run.log"; exit 1; }
  sleep 0.2
done
sleep 1
perf record -q -e cpu-clock -F 2000 --call-graph dwarf,16384 -o "$out/perf.data" -p "$pid" \
  -- sleep "$seconds" >/dev/null 2>&1
wait "$pid"
grep '^total' "$out/run.log"
perf script -i "$out/perf.data" 2>/dev/null | python3 scripts/tpcc_attribution.py
rm -rf "$out"
