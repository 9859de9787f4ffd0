#!/usr/bin/env bash
# Peer comparison: pg-boss and graphile-worker (no-op jobs, batched) next to ingestd's whole ingest
# lifecycle (bench_orchestration), all on one dedicated, durable PostgreSQL 15 cluster
# (fsync, synchronous_commit and full_page_writes on), in rounds, with the cluster's CPU per job.
#
#   bash bench/peers/run.sh [--jobs N] [--rounds N]   run it (defaults: 20000 jobs, 2 rounds)
#   bash bench/peers/run.sh stop                      stop the peers' cluster
#
# Environment:
#   INGESTD_PEERS_PG_PORT      the cluster's port on 127.0.0.1 (default 55433)
#   INGESTD_PEERS_DIR          its folder (default .local/peers in the project)
#   INGESTD_PG_BIN             PostgreSQL's programs (default /usr/lib/postgresql/15/bin)
#   INGESTD_BENCH_BINARY       bench_orchestration (default build/bench/orchestration/bench_orchestration)
#   INGESTD_BENCH_ARGS         more of its options, e.g. "--max-messages 100"
#   INGESTD_PEERS_QUIET_WAIT   seconds each run waits, at most, for other work to leave the CPU (30)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

pg_port=${INGESTD_PEERS_PG_PORT:-55433}
peers_dir=${INGESTD_PEERS_DIR:-$root/.local/peers}
pg_bin=${INGESTD_PG_BIN:-/usr/lib/postgresql/15/bin}
bench_binary=${INGESTD_BENCH_BINARY:-$root/build/bench/orchestration/bench_orchestration}
database_url="postgresql://ingestd@127.0.0.1:$pg_port/ingestd"

usage() {
  echo "usage: $0 [--jobs N] [--rounds N]   |   $0 stop" >&2
  exit 2
}

cluster_parent=$peers_dir
cluster_name=peers
# shellcheck source=deploy/pg-cluster.sh
source "$root/deploy/pg-cluster.sh"

psql_peers() { PGOPTIONS='-c client_min_messages=warning' "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U ingestd "$@"; }

start_postgres() {
  local dir
  dir=$(pg_make_dir)
  if pg_running "$dir"; then
    echo "postgres: running, reused   $database_url   data $dir/data"
  else
    if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port"; then
      echo "peers: another server answers on port $pg_port; set INGESTD_PEERS_PG_PORT to a free one" >&2
      exit 1
    fi
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
      pg_initdb "$dir"
      cat >>"$dir/data/postgresql.conf" <<CONF
# ingestd peer comparison: loopback only, durable (unlike the local stack's cluster).
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 256MB
fsync = on
synchronous_commit = on
full_page_writes = on
jit = off
CONF
    fi
    run_as_db_user "$pg_bin/pg_ctl" -D "$dir/data" -o "-p $pg_port" -l "$dir/postgres.log" -w -t 60 \
      start >/dev/null || { tail -20 "$dir/postgres.log" >&2; exit 1; }
    echo "postgres: started           $database_url   data $dir/data   log $dir/postgres.log"
  fi
  if ! psql_peers -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'ingestd'" | grep -q 1; then
    "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U ingestd ingestd
  fi
}

stop_postgres() {
  local dir
  dir=$(pg_dir)
  if pg_running "$dir"; then
    run_as_db_user "$pg_bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
    echo "postgres: stopped           data $dir/data"
  else
    echo "postgres: not running"
  fi
}

# The settings the figures depend on, as the running server has them; a cluster that differs
# (its postgresql.conf edited since) is refused rather than measured.
check_settings() {
  local want="fsync=on synchronous_commit=on full_page_writes=on jit=off max_connections=200 shared_buffers=256MB"
  local have
  have=$(psql_peers -d ingestd -tA -c "SELECT string_agg(name || '=' || current_setting(name), ' ' ORDER BY ord)
    FROM unnest(ARRAY['fsync','synchronous_commit','full_page_writes','jit','max_connections','shared_buffers'])
    WITH ORDINALITY AS s(name, ord)")
  echo "settings: $have   ($(psql_peers -d ingestd -tAc 'SHOW server_version'))"
  if [[ "$have" != "$want" ]]; then
    echo "peers: the cluster's settings are not the comparison's ($want); see $(pg_dir)/data/postgresql.conf" >&2
    exit 1
  fi
}

# npm ci when node_modules is missing or package-lock.json changed since the last install.
install_packages() {
  local stamp="$here/node_modules/.peers-package-lock.sha256"
  local sum
  sum=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then
    return
  fi
  echo "npm: installing the peers' packages (package-lock.json)"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$sum" >"$stamp"
}

postmaster_pid() { head -1 "$(pg_dir)/data/postmaster.pid"; }

# Clock ticks of CPU used so far by the peers' cluster: its postmaster and the processes whose
# parent it is (peers.mjs reads the same for its figures).
cluster_ticks() {
  local pm=$1 f total=0 stat rest
  for f in /proc/[0-9]*/stat; do
    { stat=$(<"$f"); } 2>/dev/null || continue # ended meanwhile
    rest=${stat##*) }
    read -r -a rest <<<"$rest"
    # rest[0] is field 3 (state), rest[1] the parent, rest[11] to rest[14] utime, stime, and the
    # postmaster's cutime and cstime (its children that ended)
    if [[ "${f//[^0-9]/}" == "$pm" ]]; then
      total=$((total + rest[11] + rest[12] + rest[13] + rest[14]))
    elif [[ "${rest[1]}" == "$pm" ]]; then
      total=$((total + rest[11] + rest[12]))
    fi
  done
  echo "$total"
}

# Percent of the machine's CPU (all cores) that other work than the peers' cluster used over one
# second: such work makes the comparison's throughput figures low.
machine_busy_pct() {
  local pm=$1 a b c0 c1
  read -r -a a < <(head -1 /proc/stat)
  c0=$(cluster_ticks "$pm")
  sleep 1
  read -r -a b < <(head -1 /proc/stat)
  c1=$(cluster_ticks "$pm")
  # cpu user nice system idle iowait irq softirq steal
  local busy=$(((b[1] + b[2] + b[3] + b[6] + b[7] + b[8]) - (a[1] + a[2] + a[3] + a[6] + a[7] + a[8]) - (c1 - c0)))
  local idle=$(((b[4] + b[5]) - (a[4] + a[5])))
  ((busy >= 0)) || busy=0
  echo $((100 * busy / (busy + idle + (c1 - c0) > 0 ? busy + idle + (c1 - c0) : 1)))
}

# Waits (up to quiet_wait seconds) for a second in which other work uses under 25% of the machine;
# prints how busy it was when the run starts.
wait_for_quiet() {
  local pm=$1 busy until=$((SECONDS + quiet_wait))
  while :; do
    busy=$(machine_busy_pct "$pm")
    ((busy >= 25 && SECONDS < until)) || break
  done
  echo "$busy"
}

jobs=20000
rounds=2
quiet_wait=${INGESTD_PEERS_QUIET_WAIT:-30}
case "${1:-}" in
  stop) [[ $# -eq 1 ]] || usage; stop_postgres; exit 0 ;;
  -h | --help) usage ;;
esac
while (($#)); do
  case "$1" in
    --jobs) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; jobs=$2; shift 2 ;;
    --rounds) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; rounds=$2; shift 2 ;;
    *) usage ;;
  esac
done

command -v node >/dev/null || { echo "peers: node is not installed" >&2; exit 1; }
[[ -x "$bench_binary" ]] || {
  echo "peers: $bench_binary is missing: build the bench_orchestration target first" >&2
  exit 1
}

start_postgres
check_settings
install_packages
# Schemas a stopped run of the ingestd bench left behind (its fixture's unique names).
leftover=$(psql_peers -d ingestd -tA -c "SELECT string_agg(quote_ident(nspname), ', ') FROM pg_namespace
  WHERE nspname ~ '^t_[0-9a-z]+$' OR nspname ~ '^peers_(pgboss|graphile)_r[0-9]+$'")
if [[ -n "$leftover" ]]; then
  echo "dropping schemas a stopped run left: $leftover"
  psql_peers -d ingestd -c "DROP SCHEMA $leftover CASCADE"
fi

log_dir="$peers_dir/logs"
mkdir -p "$log_dir"
results="$log_dir/results.tsv"
: >"$results"
export PEERS_DATABASE_URL=$database_url
export PEERS_POSTMASTER_PID
PEERS_POSTMASTER_PID=$(postmaster_pid)
export PEERS_CLK_TCK
PEERS_CLK_TCK=$(getconf CLK_TCK)
export PEERS_BENCH_BINARY=$bench_binary
export PEERS_BENCH_ARGS=${INGESTD_BENCH_ARGS:-}
export PEERS_LOG_DIR=$log_dir

echo "peers: $jobs jobs, $rounds rounds; machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
echo "  pg-boss $(node -p "require('$here/node_modules/pg-boss/package.json').version"), graphile-worker $(node -p "require('$here/node_modules/graphile-worker/package.json').version"), node $(node --version)"
echo "  bench_orchestration: $bench_binary, built $(date -r "$bench_binary" '+%Y-%m-%d %H:%M:%S')"
echo "  every timed part starts after a CHECKPOINT; database CPU: the peers cluster's processes only"

for ((round = 1; round <= rounds; round++)); do
  for system in pg-boss graphile-worker ingestd; do
    busy=$(wait_for_quiet "$PEERS_POSTMASTER_PID")
    echo "round $round: $system   (other work on the machine just before: $busy% of its CPU)"
    ((busy < 25)) ||
      echo "  warning: other work has used the machine's CPU for $quiet_wait s; this run's figures will be low"
    out="$log_dir/$system-round$round.out"
    node "$here/peers.mjs" "$system" --jobs "$jobs" --round "$round" | tee "$out" | grep -v '^RESULT' || {
      echo "peers: $system round $round failed (its output: $out)" >&2
      exit 1
    }
    grep '^RESULT' "$out" | cut -f2- >>"$results"
  done
done

echo
echo "summary ($jobs jobs per run; PostgreSQL 15 with fsync, synchronous_commit and full_page_writes on, jit off; $(nproc) cores)"
awk -F'\t' '
  BEGIN { printf "%-16s %5s %7s %9s %10s %15s %19s %14s\n", "system", "round", "jobs", "seconds", "jobs/s", "DB CPU us/job", "client CPU us/job", "other work" }
  {
    printf "%-16s %5s %7s %9.2f %10.0f %15.0f %19s %13s%%\n", $1, $2, $3, $4, $5, $6, ($7 == "NaN" ? "-" : sprintf("%.0f", $7)), $8
    rate[$1] += $5; cpu[$1] += $6; n[$1]++
  }
  END {
    if (n["ingestd"] && n["pg-boss"]) {
      r = (rate["ingestd"] / n["ingestd"]) / (rate["pg-boss"] / n["pg-boss"])
      c = (cpu["ingestd"] / n["ingestd"]) / (cpu["pg-boss"] / n["pg-boss"])
      printf "\ningestd / pg-boss (means over the rounds): %.2fx the jobs/s, %.2fx the database CPU per job\n", r, c
    }
  }' "$results"
echo "(pg-boss and graphile-worker: no-op jobs; ingestd: its whole ingest lifecycle per ingestion."
echo " DB CPU: the peers cluster's processes; client CPU: the Node.js process, or bench_orchestration's"
echo " node; other work: the share of the machine's CPU that neither used during the timed part)"
echo "results: $results"
