#!/usr/bin/env bash
# The differential runner: SQL files run statement by statement on a throwaway PostgreSQL 15 and
# on an in-memory Engram (scripts/differential.py says how statements are compared), with each
# file's rate of statements giving PostgreSQL's result or error class. Without file arguments
# it runs the selection of PostgreSQL 15's regression tests that docs/sql.md tracks, after their
# test_setup.sql, and the project's own SQL scripts. The regression files come from the
# PostgreSQL 15 source package on Debian's mirror (checked against its checksum), kept in
# ${ENGRAM_CACHE:-~/.cache/engram}.
# Usage: scripts/differential.sh [--json OUT] [--show N] [--regress-setup] [FILE.sql...]
#        (--regress-setup: the given files too run after the regression tests' test_setup.sql)
#        (ENGRAM=path/to/engram runs that binary instead of building the release one)
# Exit status 2 when Engram dropped a connection or crashed on some statement.
set -euo pipefail
cd "$(dirname "$0")/.."
REGRESS_FILES="select join aggregates subselect with window union case strings numeric int4 int8
  boolean date timestamp timestamptz interval uuid json jsonb arrays sequence foreign_key
  transactions create_view"
pg_version=15.18
pg_tarball=postgresql-15_$pg_version.orig.tar.bz2
pg_md5=bcf6d9b634d0950e74cdf332dee32ef8
options=()
files=()
with_setup=
while [ $# -gt 0 ]; do
  case $1 in
    --json | --show) options+=("$1" "$2"); shift 2 ;;
    --regress-setup) with_setup=1; shift ;;
    *) files+=("$1"); shift ;;
  esac
done
pgbin=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)
if [ ! -x "$pgbin/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing postgresql-15"
  apt-get install -y -q postgresql-15 >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q postgresql-15 >/dev/null; }
  pgbin=/usr/lib/postgresql/15/bin
fi
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL 15's server binaries are missing (apt-get install postgresql-15)" >&2; exit 1; }
if ! python3 -c "import psycopg" 2>/dev/null; then
  echo "== installing psycopg"
  python3 -m pip install -q "psycopg[binary]" >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages "psycopg[binary]" >/dev/null
fi
cache=${ENGRAM_CACHE:-$HOME/.cache/engram}
regress=$cache/postgresql-$pg_version/src/test/regress
if [ ! -f "$regress/sql/test_setup.sql" ]; then
  echo "== fetching PostgreSQL $pg_version's regression tests"
  mkdir -p "$cache"
  curl -fsS -o "$cache/$pg_tarball" "http://deb.debian.org/debian/pool/main/p/postgresql-15/$pg_tarball"
  echo "$pg_md5  $cache/$pg_tarball" | md5sum -c --quiet
  tar -C "$cache" -xjf "$cache/$pg_tarball" "postgresql-$pg_version/src/test/regress/sql" \
    "postgresql-$pg_version/src/test/regress/data" "postgresql-$pg_version/src/test/regress/expected"
  rm "$cache/$pg_tarball"
fi
engram=${ENGRAM:-target/release/engram}
[ -n "${ENGRAM:-}" ] || cargo build --release --locked -q -p engram-cli
work=$(mktemp -d)
chmod 755 "$work"
port=$((30000 + RANDOM % 10000))
source scripts/lib/postgres.sh
cleanup() {
  pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT
pg_start "$work" "$port" "-c fsync=off" "--locale=C"
setup=()
if [ ${#files[@]} -eq 0 ]; then
  with_setup=1
  for f in $REGRESS_FILES; do files+=("$regress/sql/$f.sql"); done
fi
[ -n "$with_setup" ] && setup=(--setup "$regress/sql/test_setup.sql")
export PG_ABS_SRCDIR=$regress PG_LIBDIR=$work PG_DLSUFFIX=.so
python3 scripts/differential.py --pg-admin "host=127.0.0.1 port=$port user=postgres dbname=postgres" \
  --pg "host=127.0.0.1 port=$port user=postgres dbname=regress" --engram "$engram" \
  --log "$work/engram.log" "${setup[@]}" "${options[@]}" "${files[@]}"
