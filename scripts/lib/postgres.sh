# A throwaway PostgreSQL server for the scripts that measure or compare Engram against it.
# Source this file with `pgbin` set to PostgreSQL's bin directory, then:
#   pg_start DIR PORT 'server options' [initdb options]   (initdb in DIR/pg, start, wait)
#   pg_stop DIR                                           (immediate stop; safe to call twice)
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else bash -c "$*"; fi; }
pg_start() {
  local dir=$1 port=$2 options=$3 initdb_options=${4:-}
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "$pgbin/initdb -D $dir/pg -U postgres --auth=trust -E UTF8 $initdb_options" >/dev/null
  as_pg "$pgbin/pg_ctl -D $dir/pg -l $dir/pg.log -o '-p $port -k $dir -c listen_addresses=127.0.0.1 $options' start" >/dev/null
  for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p "$port" && return 0; sleep 0.1; done
  cat "$dir/pg.log" >&2
  return 1
}
pg_stop() { as_pg "$pgbin/pg_ctl -D $1/pg -m immediate stop" >/dev/null 2>&1 || true; }
