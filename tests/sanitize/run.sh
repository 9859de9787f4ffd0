#!/usr/bin/env bash
# The sanitizer build's part of the test command: builds build-sanitize/ (preset "sanitize":
# clang-14 with AddressSanitizer, UndefinedBehaviorSanitizer, libstdc++'s assertions
# (_GLIBCXX_ASSERTIONS) and libFuzzer's instrumentation; the product libraries compiled once for
# the tests and the fuzz targets), runs the unit and actor tests in it, then every libFuzzer
# target of tests/fuzz for SECONDS seconds (tests/fuzz/run.sh; 0 skips the fuzz runs).
#
#   tests/sanitize/run.sh [SECONDS]      default 5, as deploy/test.sh runs it beside the suite
#
# Everything runs at the lowest CPU priority. The integration tests under the sanitizers need the
# local stack: `cmake --build --preset sanitize && ctest --preset sanitize` (see README.md).
# Suppressions (third-party findings only, each with its reason): tests/sanitize/*.supp.
set -euo pipefail

seconds=${1:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
nice -n 19 cmake --preset sanitize >/dev/null
nice -n 19 cmake --build --preset sanitize -j"$(nproc)" \
  --target ingestd_fuzz_targets ingestd_tests_unit ingestd_tests_actors

status=0
echo "sanitize: the unit and actor tests under ASan, UBSan and _GLIBCXX_ASSERTIONS"
nice -n 19 ctest --preset sanitize -L '^(unit|actors)$' || status=1
if [[ "$seconds" != 0 ]]; then
  # Seed 1 unless told otherwise: the same inputs on every run (tests/fuzz/run.sh).
  INGESTD_FUZZ_SEED=${INGESTD_FUZZ_SEED:-1} tests/fuzz/run.sh "$seconds" || status=1
fi
exit $status
