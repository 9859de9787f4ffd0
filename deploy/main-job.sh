#!/usr/bin/env bash
# The main job, on a fresh Debian 12 machine: installs what is missing, builds, starts the local
# stack, migrates, creates the queues, submits samples/, runs the worker (ingestion and matching)
# until every document is processed and matched, prints what was extracted and how the documents
# cluster, and stops what it started. Safe to run again (the samples are duplicates
# then, and their earlier results are shown).
#
# Environment: INGESTD_BINARY (use this binary: skips install and build), INGESTD_DATABASE__URL
# and INGESTD_STORAGE__ROOT (another database/schema or storage root), MAIN_JOB_DEADLINE (s, 900),
# INGESTD_REVIEW__ENABLED (true: the review desk is served; its address is printed),
# MAIN_JOB_REVIEW=keep (at the end, keep the worker and its review desk running until Ctrl-C).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
deadline=${MAIN_JOB_DEADLINE:-900}

if [[ -z "${INGESTD_BINARY:-}" ]]; then
  echo "== installing missing packages"
  deploy/install-deps.sh
  echo "== building (cmake preset 'default', build/)"
  cmake --preset default >/dev/null
  cmake --build --preset default --target ingestd
  INGESTD_BINARY=$here/build/app/ingestd
fi
ingestd=$INGESTD_BINARY

started_stack=0
stack_status=$(deploy/local-stack.sh status)  # captured first: grep -q would cut the pipe
if [[ "$stack_status" != *"postgres: running"* ]]; then
  echo "== starting the local stack"
  deploy/local-stack.sh start
  started_stack=1
fi
worker=""
cleanup() {
  if [[ -n "$worker" ]] && kill -0 "$worker" 2>/dev/null; then
    kill -TERM "$worker"; wait "$worker" || true
  fi
  if ((started_stack)); then deploy/local-stack.sh stop >/dev/null || true; fi
}
trap cleanup EXIT

# The embedded default: Postgres queue, filesystem storage, Tesseract, the local extractor.
export INGESTD_QUEUE__WAIT_TIME_SECONDS=${INGESTD_QUEUE__WAIT_TIME_SECONDS:-1}
export INGESTD_ADMIN__PORT=${INGESTD_ADMIN__PORT:-0}
export INGESTD_LOG__FORMAT=${INGESTD_LOG__FORMAT:-text}
export INGESTD_LOG__LEVEL=${INGESTD_LOG__LEVEL:-warn}
export INGESTD_STORAGE__ROOT=${INGESTD_STORAGE__ROOT:-$here/.local/storage}
# The review desk on the admin endpoint (loopback, no token: sign in with a name). It needs an
# admin port: a free one unless INGESTD_ADMIN__PORT names one.
export INGESTD_REVIEW__ENABLED=${INGESTD_REVIEW__ENABLED:-true}
if [[ "$INGESTD_REVIEW__ENABLED" == true && "$INGESTD_ADMIN__PORT" == 0 ]]; then
  INGESTD_ADMIN__PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
review_url="http://127.0.0.1:$INGESTD_ADMIN__PORT/review"

echo "== migrating"
"$ingestd" migrate
echo "== creating the queues"
"$ingestd" queues create
echo "== submitting samples/"
"$ingestd" submit samples/

echo "== processing"
log=$(mktemp /tmp/ingestd-main-job.XXXXXX.log)
"$ingestd" run >"$log" 2>&1 &
worker=$!
[[ "$INGESTD_REVIEW__ENABLED" == true ]] && echo "review desk: $review_url (while the worker runs)"
end=$((SECONDS + deadline))
while :; do
  # Ingestions in progress, and documents whose matching is pending or in progress.
  left=$("$ingestd" status --json | python3 -c 'import json,sys; s=json.load(sys.stdin); m=s.get("matching",{}); print(s["ingestions"]["in_progress"] + m.get("pending",0) + m.get("in-progress",0))')
  [[ "$left" == 0 ]] && break
  if ((SECONDS > end)); then echo "main job: $left ingestion(s) or matching job(s) still in progress after ${deadline}s; worker log: $log" >&2; exit 1; fi
  if ! kill -0 "$worker" 2>/dev/null; then echo "main job: the worker stopped; log: $log" >&2; exit 1; fi
  sleep 1
done
kill -TERM "$worker"; wait "$worker" || true
worker=""

echo "== results"
"$ingestd" status --documents
echo
echo "== documents that belong together (matching)"
# Every document that shares its cluster with another, with its edges and the cluster's members.
"$ingestd" status --documents --json | python3 -c '
import collections, json, sys
docs = json.load(sys.stdin)["documents"]
clusters = collections.Counter(d["cluster_id"] for d in docs if d.get("cluster_id"))
for d in docs:
    if d.get("cluster_id") and clusters[d["cluster_id"]] > 1:
        print(d["document_id"])' | while read -r id; do
  "$ingestd" matches "$id"
  echo
done

if [[ "$INGESTD_REVIEW__ENABLED" == true ]]; then
  echo
  echo "== review desk"
  waiting=$("$ingestd" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["documents_needing_review"])')
  echo "$waiting document(s) need a person."
  if [[ "${MAIN_JOB_REVIEW:-}" == keep ]]; then
    "$ingestd" run >>"$log" 2>&1 &
    worker=$!
    echo "review desk open at $review_url (sign in with your name); Ctrl-C stops the worker"
    wait "$worker" || true
    worker=""
  else
    echo "To resolve them in the browser: MAIN_JOB_REVIEW=keep deploy/main-job.sh, then open $review_url"
  fi
fi
