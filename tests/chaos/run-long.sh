#!/usr/bin/env bash
# The long chaos run: the chaos test with 10 minutes of faults (or SECONDS given), against the
# local stack, with the built binaries of build/. VARIANT is pg (the default: the Postgres queue
# with database faults) or sqs (the fauxqs emulator, kill -9 and SIGSTOP).
#   tests/chaos/run-long.sh [SECONDS] [SEED] [VARIANT]
set -euo pipefail
variant=${3:-pg}
[[ "$variant" == pg || "$variant" == sqs ]] || { echo "run-long.sh: VARIANT is pg or sqs, not '$variant'" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
deploy/local-stack.sh start >/dev/null
eval "$(deploy/local-stack.sh env)"
export INGESTD_SOURCE_DIR="$root" INGESTD_BINARY="$root/build/app/ingestd"
export INGESTD_CHAOS_SECONDS=${1:-600}
[[ -z "${2:-}" ]] || export INGESTD_CHAOS_SEED=$2
exec "build/tests/chaos/chaos_$variant"
