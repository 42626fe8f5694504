#!/usr/bin/env bash
# Real PostgreSQL clients against `engram serve`: psql (golden output), pgbench (initialise,
# then the TPC-B-like script in simple, extended and prepared mode, then pgbench's balance
# invariants, then a restart that must keep every committed transaction), TLS with SCRAM and
# /metrics, psycopg, SQLAlchemy's ORM, asyncpg, Django (migrate, then a model flow) and
# sysbench. Installs postgresql-client, sysbench (apt-get, as root), psycopg, SQLAlchemy,
# asyncpg and Django (pip) when missing; a test whose client cannot be installed is skipped
# with a note.
# Usage: scripts/client-tests.sh [path/to/engram]
set -euo pipefail
cd "$(dirname "$0")/.."
engram=${1:-target/debug/engram}
[ -x "$engram" ] || cargo build --locked -p engram-cli
if ! command -v pgbench >/dev/null || ! command -v psql >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing postgresql-client (psql, pgbench)"
    apt-get install -y -q postgresql-client >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q postgresql-client >/dev/null; }
  else
    echo "== client tests skipped: psql/pgbench missing and cannot be installed" >&2
    exit 1
  fi
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v sysbench >/dev/null; then
  echo "== installing sysbench"
  apt-get install -y -q sysbench >/dev/null 2>&1 || echo "   (sysbench could not be installed; its test is skipped)"
fi
if ! python3 -c "import psycopg" 2>/dev/null; then
  echo "== installing psycopg"
  python3 -m pip install -q "psycopg[binary]" >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages "psycopg[binary]" >/dev/null 2>&1 \
    || echo "   (psycopg could not be installed; its test is skipped)"
fi
# The ORMs' suites and asyncpg (each skipped with a note if pip cannot install it).
for package in sqlalchemy:SQLAlchemy django:Django asyncpg:asyncpg; do
  module=${package%%:*}; name=${package#*:}
  if ! python3 -c "import $module" 2>/dev/null; then
    echo "== installing $name"
    python3 -m pip install -q "$name" >/dev/null 2>&1 \
      || python3 -m pip install -q --break-system-packages "$name" >/dev/null 2>&1 \
      || echo "   ($name could not be installed; its test is skipped)"
  fi
done
work=$(mktemp -d)
# Below Linux's ephemeral range (32768 up), where a client's outgoing socket may hold a port;
# a port still taken is replaced by another (start).
pick_port() { port=$((20000 + RANDOM % 12000)); export PGPORT=$port; }
pick_port
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
trap 'echo "client tests failed at line $LINENO" >&2' ERR
start() {
  for _ in 1 2 3 4 5; do
    "$engram" serve --data "$work/data" --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
      pg_isready -q -h 127.0.0.1 -p "$port" && return 0
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if grep -q "Address already in use" "$work/server.log"; then
      wait "$server_pid" || true
      pick_port
      continue
    fi
    break
  done
  cat "$work/server.log"; exit 1
}
stop() {
  kill -TERM "$server_pid"; wait "$server_pid" || { echo "server exited with $?"; cat "$work/server.log"; exit 1; }
  server_pid=
}
export PGHOST=127.0.0.1 PGUSER=postgres PGDATABASE=engram
start

echo "== psql"
(cd tests/clients && psql -X -q -A -f basic.sql 2>&1 | sed 's/^psql:basic.sql:[0-9]*: //') >"$work/basic.out"
diff -u tests/clients/basic.out "$work/basic.out"

echo "== pgbench -i, then simple / extended / prepared"
pgbench -i -s 2 -q 2>&1 | tail -1
for mode in simple extended prepared; do
  pgbench -n -c 4 -j 2 -T 3 -M "$mode" --max-tries=1000 2>&1 | grep -E "^(tps|number of failed)" | tr '\n' ' '
  echo "($mode)"
  pgbench -n -c 1 -T 1 -M "$mode" 2>&1 | grep -q "number of failed transactions: 0" || { echo "failures with one client in $mode mode"; exit 1; }
done
invariants() {
  psql -X -A -t -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
    AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
    AND (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)"
}
[ "$(invariants)" = t ] || { echo "pgbench balances do not add up"; exit 1; }
history=$(psql -X -A -t -c "SELECT count(*) FROM pgbench_history")
pgbench -n -S -c 4 -j 2 -T 2 -M prepared 2>&1 | grep -E "^tps"

if python3 -c "import psycopg" 2>/dev/null; then
  echo "== psycopg"
  python3 tests/clients/psycopg_smoke.py
else
  echo "== psycopg not installed: skipped (pip install 'psycopg[binary]')"
fi

if python3 -c "import sqlalchemy, psycopg" 2>/dev/null; then
  echo "== SQLAlchemy ORM"
  python3 tests/clients/sqlalchemy_orm.py
else
  echo "== SQLAlchemy not installed: skipped (pip install sqlalchemy)"
fi

if python3 -c "import asyncpg" 2>/dev/null; then
  echo "== asyncpg"
  python3 tests/clients/asyncpg_smoke.py
else
  echo "== asyncpg not installed: skipped (pip install asyncpg)"
fi

if python3 -c "import django, psycopg" 2>/dev/null; then
  echo "== Django: migrate of the built-in apps, then models, atomic blocks, joins, aggregates"
  python3 tests/clients/django/manage.py migrate -v 0
  python3 tests/clients/django/flow.py
else
  echo "== Django not installed: skipped (pip install django)"
fi

echo "== restart: every committed transaction is back"
stop
start
[ "$(psql -X -A -t -c "SELECT count(*) FROM pgbench_history")" = "$history" ] || { echo "history lost rows"; exit 1; }
[ "$(invariants)" = t ] || { echo "balances do not add up after restart"; exit 1; }

if command -v openssl >/dev/null; then
  echo "== TLS (sslmode=require) and SCRAM on a second server"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=localhost" \
    -keyout "$work/server.key" -out "$work/server.crt" >/dev/null 2>&1
  tls_port=$((port + 1))
  cat >"$work/server.toml" <<TOML
listen = "127.0.0.1:$tls_port"
auth = "scram"
tls_cert = "$work/server.crt"
tls_key = "$work/server.key"
metrics_listen = "127.0.0.1:$((port + 2))"
[[users]]
name = "app"
password = "s3cret"
TOML
  "$engram" serve --config "$work/server.toml" >"$work/tls.log" 2>&1 &
  tls_pid=$!
  for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p "$tls_port" && break; sleep 0.1; done
  [ "$(PGPASSWORD=s3cret psql -X -A -t "host=127.0.0.1 port=$tls_port user=app dbname=engram sslmode=require" -c "SELECT 40 + 2")" = 42 ] \
    || { echo "TLS + SCRAM connection failed"; cat "$work/tls.log"; exit 1; }
  failures() { curl -sf "http://127.0.0.1:$((port + 2))/metrics" | sed -n 's/^engram_auth_failures_total //p'; }
  command -v curl >/dev/null && before=$(failures)
  if PGPASSWORD=wrong psql -X "host=127.0.0.1 port=$tls_port user=app dbname=engram sslmode=require" -c "SELECT 1" >/dev/null 2>&1; then
    echo "a wrong password was accepted"; exit 1
  fi
  if command -v curl >/dev/null; then
    [ "$(failures)" = $((before + 1)) ] || { echo "/metrics did not count the failed authentication"; exit 1; }
  fi
  kill -TERM "$tls_pid"; wait "$tls_pid"
fi

if command -v sysbench >/dev/null; then
  echo "== sysbench oltp_read_write (pgsql driver)"
  sb="sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$port --pgsql-user=postgres --pgsql-db=engram --tables=2 --table-size=1000"
  $sb oltp_read_write prepare >/dev/null
  $sb oltp_read_write --threads=2 --time=3 --db-ps-mode=auto run | grep -E "transactions:|ignored errors:"
  $sb oltp_read_write cleanup >/dev/null
else
  echo "== sysbench not installed: skipped (apt-get install sysbench)"
fi
stop
echo "== client tests passed"
