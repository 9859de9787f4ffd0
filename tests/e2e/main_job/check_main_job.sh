#!/usr/bin/env bash
# Runs deploy/main-job.sh twice against a fresh schema and checks its output: each sample file
# appears in the results table as ready (or marked for review), the second run submits only
# duplicates, the ZIP's two invoices and the e-mail's attachment are documents of their own,
# every document but the two containers is matched, the invoice, its scan and its credit note are
# one cluster, the e-mailed invoice shares its scan's cluster, and the output shows the
# credit-note edge. Fails with a clear message when INGESTD_TEST_DATABASE_URL is unset.
set -euo pipefail
: "${INGESTD_TEST_DATABASE_URL:?set it (eval \"\$(deploy/local-stack.sh env)\")}"
src=${INGESTD_SOURCE_DIR:?}
schema=mainjob_$(date +%s)_$$
tmp=$(mktemp -d)
trap 'psql "$INGESTD_TEST_DATABASE_URL" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null; rm -rf "$tmp"' EXIT
psql "$INGESTD_TEST_DATABASE_URL" -qc "CREATE SCHEMA $schema"
export INGESTD_DATABASE__URL="${INGESTD_TEST_DATABASE_URL}?options=-csearch_path%3D${schema}"
export INGESTD_STORAGE__ROOT=$tmp/storage INGESTD_QUEUE__NAME=$schema INGESTD_MATCHING__QUEUE_NAME=$schema-match
export MAIN_JOB_DEADLINE=600
"$src/deploy/main-job.sh" >"$tmp/first.txt" 2>&1 || { cat "$tmp/first.txt"; exit 1; }
"$src/deploy/main-job.sh" >"$tmp/second.txt" 2>&1 || { cat "$tmp/second.txt"; exit 1; }
n=$(ls "$src/samples" | wc -l)
status=0
for f in "$src"/samples/*; do
  name=$(basename "$f")
  for run in first second; do
    if ! grep -Eq "^([0-9a-f]{8} +)?${name//./\\.} +(ready|needs_review) " "$tmp/$run.txt"; then
      echo "FAIL: $run run does not list $name as processed"; status=1
    fi
  done
done
grep -q "$n new, 0 reprocessing, 0 duplicate, 0 failed" "$tmp/first.txt" || { echo "FAIL: first run did not submit $n new"; status=1; }
grep -q "0 new, 0 reprocessing, $n duplicate, 0 failed" "$tmp/second.txt" || { echo "FAIL: second run did not find $n duplicates"; status=1; }
# Matching: the invoice and its scan in one cluster, the credit note linked to the invoice.
"$INGESTD_BINARY" status --documents --json >"$tmp/documents.json"
python3 - "$tmp/documents.json" <<'PY' || status=1
import json, sys
docs = {d["file_name"]: d for d in json.load(open(sys.argv[1]))["documents"]}
containers = {"invoices_2024-03.zip", "fwd_invoice_4711.eml"}
problems = [f"{n}: matching {d.get('matching_status')}" for n, d in docs.items()
            if n not in containers and d.get("matching_status") != "succeeded"]
# The containers' members and attachments: child documents, each read and matched.
children = {"invoices_2024-03.zip": ["invoices_2024-03/inv03_en_compact.pdf", "invoices_2024-03/inv05_en_modern.pdf"],
            "fwd_invoice_4711.eml": ["inv04_de_classic.pdf"]}
for container, members in children.items():
    parent = docs.get(container, {}).get("document_id")
    for m in members:
        child = next((d for d in docs.values() if d.get("member_name") == m), None)
        if not parent or not child or child.get("parent_id") != parent:
            problems.append(f"{m} is not a child document of {container}")
        elif child.get("state") not in ("ready", "needs_review"):
            problems.append(f"{m}: {child.get('state')}")
attached = next((d for d in docs.values() if d.get("member_name") == "inv04_de_classic.pdf"), {})
scan = docs.get("inv04_de_classic_scan.jpg", {})
if not attached.get("cluster_id") or attached.get("cluster_id") != scan.get("cluster_id"):
    problems.append("the e-mailed inv04_de_classic.pdf and its scan are not in one cluster")
pdf, scan, cn = (docs.get(n, {}) for n in ("inv01_en_classic.pdf", "inv01_en_classic_scan.png", "cn01_en_credit_note.pdf"))
if not pdf.get("cluster_id") or pdf.get("cluster_id") != scan.get("cluster_id"):
    problems.append("inv01_en_classic.pdf and its scan are not in one cluster")
if pdf.get("cluster_id") != cn.get("cluster_id"):
    problems.append("the credit note is not in the invoice's cluster")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
grep -Eq "cn01_en_credit_note\.pdf +credit_note|credit_note .*CN20240031" "$tmp/first.txt" \
  || { echo "FAIL: the first run shows no credit-note edge"; status=1; }
((status == 0)) || { echo "--- first run"; cat "$tmp/first.txt"; echo "--- second run"; cat "$tmp/second.txt"; }
cat "$tmp/second.txt"
exit $status
