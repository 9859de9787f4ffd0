#!/usr/bin/env bash
# Runs deploy/main-job.sh twice against a fresh schema and checks its output: each sample file
# appears in the results table as ready (or marked for review), and the second run submits only
# duplicates. Fails with a clear message when INGESTD_TEST_DATABASE_URL is unset.
set -euo pipefail
: "${INGESTD_TEST_DATABASE_URL:?set it (eval \"\$(deploy/local-stack.sh env)\")}"
src=${INGESTD_SOURCE_DIR:?}
schema=mainjob_$(date +%s)_$$
tmp=$(mktemp -d)
trap 'psql "$INGESTD_TEST_DATABASE_URL" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null; rm -rf "$tmp"' EXIT
psql "$INGESTD_TEST_DATABASE_URL" -qc "CREATE SCHEMA $schema"
export INGESTD_DATABASE__URL="${INGESTD_TEST_DATABASE_URL}?options=-csearch_path%3D${schema}"
export INGESTD_STORAGE__ROOT=$tmp/storage INGESTD_QUEUE__NAME=$schema MAIN_JOB_DEADLINE=600
"$src/deploy/main-job.sh" >"$tmp/first.txt" 2>&1 || { cat "$tmp/first.txt"; exit 1; }
"$src/deploy/main-job.sh" >"$tmp/second.txt" 2>&1 || { cat "$tmp/second.txt"; exit 1; }
n=$(ls "$src/samples" | wc -l)
status=0
for f in "$src"/samples/*; do
  name=$(basename "$f")
  for run in first second; do
    if ! grep -Eq "^${name//./\\.} +(ready|needs_review) " "$tmp/$run.txt"; then
      echo "FAIL: $run run does not list $name as processed"; status=1
    fi
  done
done
grep -q "$n new, 0 reprocessing, 0 duplicate, 0 failed" "$tmp/first.txt" || { echo "FAIL: first run did not submit $n new"; status=1; }
grep -q "0 new, 0 reprocessing, $n duplicate, 0 failed" "$tmp/second.txt" || { echo "FAIL: second run did not find $n duplicates"; status=1; }
((status == 0)) || { echo "--- first run"; cat "$tmp/first.txt"; echo "--- second run"; cat "$tmp/second.txt"; }
cat "$tmp/second.txt"
exit $status
