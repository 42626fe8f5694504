#!/usr/bin/env bash
# Engram and a throwaway local PostgreSQL 15, side by side, with the same clients and the same
# configurations, run back to back: pgbench select-only and TPC-B-like (scale 10, 8 clients,
# 2 threads, prepared), sysbench oltp_point_select and oltp_read_write (4 tables x 100k rows,
# 8 threads). Durability is on for both (PostgreSQL: fsync and synchronous_commit on;
# Engram: --durability epoch). Prints each figure and the ratio Engram / PostgreSQL.
# Usage: scripts/compare-postgres.sh [seconds per run (default 20)] [rounds (default 1)]
#        [transport: tcp (default, loopback) or unix (both servers' Unix-domain sockets)]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
rounds=${2:-1}
transport=${3:-tcp}
case $transport in tcp | unix) ;; *) echo "transport: tcp or unix, not $transport"; exit 1 ;; esac
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)"; exit 1; }
command -v sysbench >/dev/null || { echo "sysbench missing (apt-get install sysbench)"; exit 1; }
cargo build --release --locked -p engram-cli
engram=target/release/engram
work=$(mktemp -d)
chmod 755 "$work"
pg_port=$((30000 + RANDOM % 10000))
en_port=$((pg_port + 1))
en_pid=
source scripts/lib/postgres.sh
cleanup() {
  [ -n "$en_pid" ] && kill "$en_pid" 2>/dev/null
  pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT
pg_start "$work" "$pg_port" "-c max_connections=100 -c shared_buffers=1GB"
"$engram" serve --data "$work/engram" --listen "127.0.0.1:$en_port" --unix-socket-dir "$work" >"$work/engram.log" 2>&1 &
en_pid=$!
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p "$en_port" && break; sleep 0.1; done
# Where the clients connect: the loopback address, or the directory holding both sockets.
host=127.0.0.1
[ "$transport" = unix ] && host=$work
psql -X -q -h "$host" -p "$pg_port" -U postgres -c "CREATE DATABASE bench"

figure() { grep -oE "$1" | grep -oE "[0-9]+\.[0-9]+" | head -1; }
pgbench_run() { # port extra-args
  pgbench -h "$host" -p "$1" -U postgres -n -c 8 -j 2 -T "$seconds" -M prepared --max-tries=1000 $2 bench 2>&1 | figure "tps = [0-9.]+"
}
sysbench_run() { # port test
  sysbench --db-driver=pgsql --pgsql-host="$host" --pgsql-port="$1" --pgsql-user=postgres --pgsql-db=bench \
    --tables=4 --table-size=100000 --threads=8 --time="$seconds" --db-ps-mode=auto "$2" run 2>&1 | figure "transactions: +[0-9]+ +\([0-9.]+"
}
echo "== loading (pgbench scale 10, sysbench 4 x 100k) on both"
for port in $pg_port $en_port; do
  pgbench -h "$host" -p "$port" -U postgres -i -s 10 -q bench >/dev/null 2>&1
  sysbench --db-driver=pgsql --pgsql-host="$host" --pgsql-port="$port" --pgsql-user=postgres --pgsql-db=bench \
    --tables=4 --table-size=100000 oltp_read_write prepare >/dev/null
done
printf "%-34s %12s %12s %8s\n" "benchmark ($seconds s, round)" "PostgreSQL" "Engram" "ratio"
for round in $(seq "$rounds"); do
  for bench in "pgbench -S" "pgbench tpcb" "sysbench oltp_point_select" "sysbench oltp_read_write"; do
    case $bench in
      "pgbench -S") pg=$(pgbench_run $pg_port -S); en=$(pgbench_run $en_port -S) ;;
      "pgbench tpcb") pg=$(pgbench_run $pg_port ""); en=$(pgbench_run $en_port "") ;;
      sysbench*) pg=$(sysbench_run $pg_port "${bench#sysbench }"); en=$(sysbench_run $en_port "${bench#sysbench }") ;;
    esac
    printf "%-34s %12s %12s %8s\n" "$bench ($round)" "$pg" "$en" "$(echo "scale=2; $en / $pg" | bc)"
  done
done
echo "(pgbench: tps; sysbench: transactions per second; over $transport; $(nproc) cores, $(date -u +%F))"
