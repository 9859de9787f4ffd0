# shellcheck shell=bash
# shellcheck disable=SC2154  # pg_bin, cluster_parent, cluster_name and root: the sourcing script's
# Shell functions for a PostgreSQL 15 cluster of the project's own, sourced by deploy/local-stack.sh
# (the development stack) and bench/peers/run.sh (the durable cluster of the peer comparison).
# The caller sets pg_bin (PostgreSQL's programs), cluster_parent (the folder the cluster's folder
# goes in) and cluster_name (its name under /tmp when that folder is out of reach).

# PostgreSQL refuses to run as root: as root the cluster belongs to the system user "postgres".
run_as_db_user() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# The cluster's folder. Its files must be reachable by the user it runs as; under a private home
# directory they are not, so it falls back to a folder under /tmp named after the project path.
pg_dir() {
  local dir="$cluster_parent/postgres"
  if [[ $(id -u) -eq 0 ]]; then
    mkdir -p "$cluster_parent"
    if ! runuser -u postgres -- test -x "$cluster_parent"; then
      dir="/tmp/ingestd-$cluster_name-$(echo -n "$root" | sha1sum | cut -c1-12)/postgres"
    fi
  fi
  echo "$dir"
}

# The cluster's folder, made (and given to the user it runs as) if it is not there yet.
pg_make_dir() {
  local dir
  dir=$(pg_dir)
  mkdir -p "$dir"
  [[ $(id -u) -ne 0 ]] || chown postgres: "$dir"
  echo "$dir"
}

# A new cluster in $1/data: the superuser ingestd, trusted on loopback (its settings are the
# caller's to append).
pg_initdb() {
  run_as_db_user "$pg_bin/initdb" -D "$1/data" -U ingestd --auth=trust -E UTF8 \
    --locale=C.UTF-8 >"$1/initdb.log" 2>&1 ||
    { cat "$1/initdb.log" >&2; exit 1; }
}

pg_running() { run_as_db_user "$pg_bin/pg_ctl" -D "$1/data" status >/dev/null 2>&1; }
