#!/usr/bin/env bash
# The local stack for development and tests, on loopback only, under one project-local folder:
#   a PostgreSQL 15 cluster   (port INGESTD_PG_PORT, default 55432)
#   the fauxqs SQS/S3 emulator (port INGESTD_FAUXQS_PORT, default 54566)
#
#   deploy/local-stack.sh start   start what is not running (reuses what is), print where
#   deploy/local-stack.sh stop    stop both cleanly
#   deploy/local-stack.sh status  say what runs where
#   deploy/local-stack.sh env     print the environment the tests and the daemon use
#
# The folder is INGESTD_STACK_DIR (default: .local/stack in the project). PostgreSQL refuses to
# run as root, so as root the cluster belongs to the system user "postgres".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

pg_port=${INGESTD_PG_PORT:-55432}
fq_port=${INGESTD_FAUXQS_PORT:-54566}
stack_dir=${INGESTD_STACK_DIR:-$root/.local/stack}
pg_bin=${INGESTD_PG_BIN:-/usr/lib/postgresql/15/bin}
fauxqs_cli="$here/emulators/node_modules/fauxqs/dist/cli.js"

cluster_parent=$stack_dir
cluster_name=stack
# shellcheck source=deploy/pg-cluster.sh
source "$here/pg-cluster.sh"

database_url() { echo "postgresql://ingestd@127.0.0.1:$pg_port/ingestd"; }
fauxqs_url() { echo "http://127.0.0.1:$fq_port"; }

start_postgres() {
  local dir
  dir=$(pg_make_dir)
  if pg_running "$dir"; then
    echo "postgres: running, reused   $(database_url)   data $dir/data"
    return
  fi
  if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" &&
     "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U ingestd -d ingestd -tAc 'SELECT 1' >/dev/null 2>&1; then
    echo "postgres: another ingestd stack answers on port $pg_port, reused   $(database_url)"
    return
  fi
  if [[ ! -f "$dir/data/PG_VERSION" ]]; then
    pg_initdb "$dir"
    cat >>"$dir/data/postgresql.conf" <<CONF
# ingestd local stack: loopback only, tuned for tests and benchmarks, not for durability.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
shared_buffers = 512MB
fsync = off
synchronous_commit = off
full_page_writes = off
# The queue table's own autovacuum settings only help if the launcher looks often.
autovacuum_naptime = 1s
CONF
  fi
  run_as_db_user "$pg_bin/pg_ctl" -D "$dir/data" -o "-p $pg_port" -l "$dir/postgres.log" -w -t 60 \
    start >/dev/null || { tail -20 "$dir/postgres.log" >&2; exit 1; }
  if ! "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U ingestd -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'ingestd'" | grep -q 1; then
    "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U ingestd ingestd
  fi
  echo "postgres: started           $(database_url)   data $dir/data   log $dir/postgres.log"
}

stop_postgres() {
  local dir
  dir=$(pg_dir)
  if pg_running "$dir"; then
    run_as_db_user "$pg_bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    echo "postgres: stopped           data $dir/data"
  else
    echo "postgres: not running"
  fi
}

fauxqs_running() { curl -fsS -m 2 "$(fauxqs_url)/health" >/dev/null 2>&1; }

start_fauxqs() {
  mkdir -p "$stack_dir"
  if fauxqs_running; then
    echo "fauxqs:   running, reused   $(fauxqs_url)"
    return
  fi
  [[ -f "$fauxqs_cli" ]] || "$here/install-deps.sh"
  FAUXQS_PORT=$fq_port FAUXQS_LOGGER=false FAUXQS_HOST=127.0.0.1 \
    nohup node --require "$here/emulators/loopback.cjs" "$fauxqs_cli" \
    >"$stack_dir/fauxqs.log" 2>&1 </dev/null &
  echo $! >"$stack_dir/fauxqs.pid"
  for _ in $(seq 1 100); do
    fauxqs_running && break
    kill -0 "$(cat "$stack_dir/fauxqs.pid")" 2>/dev/null || { cat "$stack_dir/fauxqs.log" >&2; exit 1; }
    sleep 0.1
  done
  fauxqs_running || { echo "fauxqs did not answer on $(fauxqs_url)" >&2; exit 1; }
  echo "fauxqs:   started           $(fauxqs_url)   log $stack_dir/fauxqs.log"
}

stop_fauxqs() {
  local pidfile="$stack_dir/fauxqs.pid"
  if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")"
    for _ in $(seq 1 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile"
    echo "fauxqs:   stopped"
  else
    rm -f "$pidfile"
    echo "fauxqs:   not running"
  fi
}

print_env() {
  echo "export INGESTD_TEST_DATABASE_URL=$(database_url)"
  echo "export INGESTD_TEST_FAUXQS_ENDPOINT=$(fauxqs_url)"
}

case "${1:-}" in
  start) start_postgres; start_fauxqs ;;
  stop) stop_fauxqs; stop_postgres ;;
  status)
    if pg_running "$(pg_dir)"; then echo "postgres: running   $(database_url)"; else echo "postgres: stopped"; fi
    if fauxqs_running; then echo "fauxqs:   running   $(fauxqs_url)"; else echo "fauxqs:   stopped"; fi ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
