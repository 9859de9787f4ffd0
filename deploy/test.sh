#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, checks the format,
# starts the local stack (reusing a running one) and runs every CTest entry. Beside the suite, at
# the lowest CPU priority (the suite mostly waits on daemons, databases and timers), the static
# analysis (deploy/lint.sh on the files changed since .ci/lint-base) and tests/sanitize/run.sh: the
# sanitizer build (build-sanitize/: ASan, UBSan, _GLIBCXX_ASSERTIONS), its unit and actor tests and
# a short run of every libFuzzer target; their output follows the suite's. Safe to run again.
#   deploy/test.sh                   everything
#   deploy/test.sh -L unit           extra arguments go to ctest (here: only the unit tests; no
#                                    static analysis or sanitizer build beside them)
#   INGESTD_LINT=0 deploy/test.sh    skips the format check and the static analysis (a quick local run)
#   INGESTD_SANITIZE=0               skips the sanitizer build, its tests and the fuzz runs
#   INGESTD_FUZZ_SECONDS=N           each libFuzzer target runs N seconds (default 5; 0 skips the
#                                    fuzz runs; tests/fuzz/run.sh 600 is a campaign)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$(date +%s)
# Seconds since the start, for the times each part ends at.
elapsed() { echo "$(( $(date +%s) - start )) s"; }

deploy/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
echo "test: installed and built at $(elapsed)"
lint=${INGESTD_LINT:-1}
sanitize=${INGESTD_SANITIZE:-1}
fuzz_seconds=${INGESTD_FUZZ_SECONDS:-5}
if [[ "$lint" != 0 ]]; then
  deploy/format.sh --check
fi

# The checks beside the suite (only with the whole suite), in a log of their own.
beside_log=build/beside-the-suite.log
beside_pid=
if [[ $# -eq 0 && ( "$lint" != 0 || "$sanitize" != 0 ) ]]; then
  (
    status=0
    if [[ "$lint" != 0 ]]; then
      nice -n 19 deploy/lint.sh || status=1
      echo "test: static analysis ended at $(elapsed)"
    fi
    if [[ "$sanitize" != 0 ]]; then
      tests/sanitize/run.sh "$fuzz_seconds" || status=1
      echo "test: sanitizer build, tests and fuzz runs ended at $(elapsed)"
    fi
    exit $status
  ) >"$beside_log" 2>&1 &
  beside_pid=$!
fi

deploy/local-stack.sh start
eval "$(deploy/local-stack.sh env)"
suite=0
ctest --preset default "$@" || suite=$?
echo "test: the suite ended at $(elapsed)"

beside=0
if [[ -n "$beside_pid" ]]; then
  echo "test: waiting for the static analysis and the sanitizer tests and fuzz runs ($beside_log)"
  wait "$beside_pid" || beside=$?
  cat "$beside_log"
  echo "test: all ended at $(elapsed)"
fi
if [[ $suite -ne 0 || $beside -ne 0 ]]; then
  echo "test: FAILED (suite exit $suite, static analysis and sanitizer build exit $beside)" >&2
  exit 1
fi
