#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, checks the format and
# runs the static analysis (deploy/format.sh and deploy/lint.sh on the files changed since
# .ci/lint-base), starts the local stack (reusing a running one), runs every CTest entry. Safe to
# run again.
#   deploy/test.sh                   everything
#   deploy/test.sh -L unit           extra arguments go to ctest (here: only the unit tests)
#   INGESTD_LINT=0 deploy/test.sh    skips the format check and the static analysis (a quick local run)
#   INGESTD_FUZZ_SECONDS=N           after a full run, each libFuzzer target runs N seconds
#                                    (default 5; 0 skips it; tests/fuzz/run.sh 600 is a campaign)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

deploy/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
if [[ "${INGESTD_LINT:-1}" != 0 ]]; then
  deploy/format.sh --check
  deploy/lint.sh
fi
deploy/local-stack.sh start
eval "$(deploy/local-stack.sh env)"
ctest --preset default "$@"
fuzz_seconds=${INGESTD_FUZZ_SECONDS:-5}
if [[ $# -eq 0 && "$fuzz_seconds" != 0 ]]; then
  tests/fuzz/run.sh "$fuzz_seconds"
fi
