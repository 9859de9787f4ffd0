#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that read outside input (tests/fuzz/*_fuzz.cpp).
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# Builds the fuzz targets in the sanitizer build (preset "sanitize": clang-14 with libFuzzer, ASan,
# UBSan and _GLIBCXX_ASSERTIONS; build-sanitize/, shared with the sanitizer tests; build preset
# "fuzz" builds only the fuzz targets), then runs each target
# (all of them unless named: text ids http_headers sqs s3 openai local_extractor document_ai
# transcription_json config matching_features archive mime msg multipart sandbox_protocol known_files
# review_request manifest) for SECONDS seconds (default 20: a smoke run; `tests/fuzz/run.sh 600` is
# a campaign), one per core at a time (INGESTD_FUZZ_JOBS sets how many). Every run is nice'd and
# single-threaded.
#
#   - Random seed: INGESTD_FUZZ_SEED=N tries the same inputs on every run from the same corpus
#     (the test command's smoke run uses 1, so what it finds does not depend on the luck of the
#     draw; a faster machine only gets further along the same sequence). Unset: a random seed,
#     for campaigns.
#   - Optimization: the sanitizer build's -O0 (quickest to build) unless
#     INGESTD_FUZZ_OPTIMIZATION=-O2, for a campaign: 3-5 times more inputs per second, and a
#     rebuild of build-sanitize/ (the test command's next run builds it at -O0 again).
#   - Memory: a C library's malloc of an absurd size answers NULL, as glibc's does and as the
#     decoder helpers run (libarchive's RAR5 reader asks for (size_t)-4 on a crafted window and
#     handles the NULL); C++ `new` of an absurd size is still a finding.
#   - Seeds: the committed corpus tests/fuzz/corpus/<target>/, read only.
#   - New inputs: build-sanitize/fuzz-corpus/<target>/ (scratch, kept between runs, never committed).
#   - Crashes, leaks, timeouts (-timeout=10) and out-of-memory (-rss_limit_mb=2048):
#     tests/fuzz/findings/<target>-* (gitignored), with the log in build-sanitize/fuzz-logs/<target>.log.
#
# Prints executions per target and exits non-zero when any target found a problem. To keep a
# finding as a regression input, fix the bug, copy the file into tests/fuzz/corpus/<target>/
# (a readable name) and the normal build's CTest entry fuzz_<target> replays it from then on.
# Reproduce one: build-sanitize/tests/fuzz/<target>_fuzz tests/fuzz/findings/<file>
set -euo pipefail

seconds=${1:-20}
shift || true
root=$(cd "$(dirname "$0")/../.." && pwd)
all=(text ids http_headers sqs s3 openai local_extractor document_ai transcription_json config
     matching_features archive mime msg multipart sandbox_protocol known_files review_request
     manifest)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")

cd "$root"
nice -n 19 cmake --preset sanitize -DINGESTD_OPTIMIZATION="${INGESTD_FUZZ_OPTIMIZATION:--O0}" >/dev/null
nice -n 19 cmake --build --preset fuzz -j"$(nproc)"

findings=$root/tests/fuzz/findings
mkdir -p "$findings" build-sanitize/fuzz-logs
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitize/ubsan.supp}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitize/lsan.supp}
seed=()
[[ -n ${INGESTD_FUZZ_SEED:-} ]] && seed=(-seed="$INGESTD_FUZZ_SEED")

max_len_of() {
  case $1 in
    ids|text) echo 4096 ;;
    local_extractor|matching_features) echo 16384 ;;
    *) echo 65536 ;;
  esac
}

# One target's run; its line of the table goes to build-sanitize/fuzz-logs/<target>.result.
run_target() {
  local t=$1
  local exe=build-sanitize/tests/fuzz/${t}_fuzz
  local scratch=build-sanitize/fuzz-corpus/$t
  local log=build-sanitize/fuzz-logs/$t.log
  mkdir -p "$scratch"
  local start status=0 took runs result
  start=$(date +%s)
  # libgsf's leak on a damaged OLE2 directory is suppressed by its frame, which only full
  # unwinding shows (tests/sanitize/lsan.supp).
  local unwind=""
  [[ $t == msg ]] && unwind=":fast_unwind_on_malloc=0"
  ASAN_OPTIONS="$ASAN_OPTIONS$unwind" nice -n 19 "$exe" "$scratch" "tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -max_len="$(max_len_of "$t")" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$findings/$t-" -print_final_stats=1 "${seed[@]}" >"$log" 2>&1 \
    || status=$?
  took=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ $status -eq 0 ]]; then
    result=ok
  else
    result="FAILED (exit $status, see $log)"
  fi
  printf '%-20s %10s %8s %s\n' "$t" "${runs:-?}" "$took" "$result" >"build-sanitize/fuzz-logs/$t.result"
}

# INGESTD_FUZZ_JOBS targets at a time (default: one per core).
jobs=${INGESTD_FUZZ_JOBS:-$(nproc)}
running=0
for t in "${targets[@]}"; do
  rm -f "build-sanitize/fuzz-logs/$t.result"
  run_target "$t" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
printf '%-20s %10s %8s %s\n' target executions seconds result
for t in "${targets[@]}"; do
  line=$(cat "build-sanitize/fuzz-logs/$t.result" 2>/dev/null \
         || echo "$t (no result: the run did not finish)")
  echo "$line"
  [[ "$line" == *" ok" ]] || failed=1
done
exit $failed
