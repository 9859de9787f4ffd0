#!/usr/bin/env bash
# Recovery after kill -9: builds bench_recovery and ingestd, starts the local stack (reusing a
# running one) and kills ROUNDS nodes (default 20) while they hold a one-page scan's claim, each
# beside an idle node, with the default lease and wake-ups. Prints the time from each kill to the
# other node's claim and to the completion, then the median and the worst.
#   deploy/recovery.sh [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cmake --preset default >/dev/null
cmake --build --preset default --target ingestd bench_recovery
deploy/local-stack.sh start >/dev/null
eval "$(deploy/local-stack.sh env)"
INGESTD_BINARY=$root/build/app/ingestd build/bench/recovery/bench_recovery "${1:-20}"
