#!/usr/bin/env bash
# Static analysis of the project's own C++: clang-tidy (checks in .clang-tidy) and cppcheck.
# Exits non-zero on any finding.
#   deploy/lint.sh            files changed since the lint base (.ci/lint-base), and every file
#                             when the base is missing from the history
#   deploy/lint.sh --all      the whole tree
#   deploy/lint.sh FILE...    those files
# Needs a configured build (build/compile_commands.json; deploy/test.sh makes it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dirs=(actors adapters admin app config intake messages review stages tests bench)
build=${INGESTD_BUILD_DIR:-build}
jobs=${INGESTD_LINT_JOBS:-$(nproc)}

if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "lint: $build/compile_commands.json is missing: run 'cmake --preset default' first" >&2
  exit 2
fi

all_sources() { git ls-files -- "${dirs[@]/%//*.cpp}"; }

files=()
if [[ $# -gt 0 && "$1" == "--all" ]]; then
  mapfile -t files < <(all_sources)
elif [[ $# -gt 0 ]]; then
  files=("$@")
else
  base=$(cat .ci/lint-base 2>/dev/null || true)
  if [[ -n "$base" ]] && git cat-file -e "$base^{commit}" 2>/dev/null; then
    # A changed header lints the sources that include it (by name; good enough for this tree).
    mapfile -t changed < <(git diff --name-only "$base" -- "${dirs[@]}" | grep -E '\.(cpp|hpp)$' || true)
    declare -A pick=()
    for f in "${changed[@]}"; do
      [[ -f "$f" ]] || continue
      if [[ "$f" == *.cpp ]]; then pick["$f"]=1; continue; fi
      while read -r user; do pick["$user"]=1; done < <(git grep -l "#include \"$f\"" -- "${dirs[@]/%//*.cpp}" || true)
    done
    files=("${!pick[@]}")
  else
    mapfile -t files < <(all_sources)
  fi
fi
# Only sources the build knows (a test or bench not built is skipped by clang-tidy's database).
if [[ ${#files[@]} -eq 0 ]]; then
  echo "lint: nothing to check"
  exit 0
fi

# clang-tidy reads GCC's compile commands: drop the GCC precompiled header (clang cannot read it;
# the header it was made from is included instead) and GCC-only warning flags. A unity batch's
# command (the product's libraries, INGESTD_UNITY_BUILD) becomes one command per source it holds.
db="$build/lint"
mkdir -p "$db"
python3 - "$build/compile_commands.json" "$db" <<'PY'
import json, os, re, shutil, sys
entries = []
for e in json.load(open(sys.argv[1])):
    if "/Unity/unity_" not in e["file"]:
        entries.append(e)
        continue
    for line in open(e["file"]):
        m = re.match(r'#include "(.+)"', line)
        if m:
            entries.append(dict(e, file=m.group(1), command=e["command"].replace(e["file"], m.group(1))))
for e in entries:
    c = e["command"]
    m = re.search(r"-include (\S+/([^/]+)\.dir/cmake_pch\.hxx)", c)
    if m:
        copy = os.path.join(os.path.abspath(sys.argv[2]), m.group(2) + ".hxx")
        shutil.copyfile(m.group(1), copy)
        c = c.replace(m.group(0), "-include " + copy)
    c = re.sub(r"-Winvalid-pch|-Wno-maybe-uninitialized", "", c)
    e["command"] = c
json.dump(entries, open(os.path.join(sys.argv[2], "compile_commands.json"), "w"))
PY

status=0
echo "lint: clang-tidy on ${#files[@]} files ($jobs jobs)"
if ! printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 4 clang-tidy -p "$db" --quiet \
      --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-ambiguous-reversed-operator \
      2>/dev/null; then
  status=1
fi

# cppcheck only on the daemon's sources: 2.10 cannot parse the gtest/CAF test macros or chrono
# literals (syntaxError, internalError on tests/ and bench/); clang-tidy covers those.
cpp_files=()
for f in "${files[@]}"; do
  f=${f#"$root"/}
  f=${f#./}
  [[ "$f" =~ ^(actors|adapters|admin|app|config|intake|messages|review|stages)/ ]] && cpp_files+=("$f")
done
if [[ ${#cpp_files[@]} -gt 0 ]]; then
  echo "lint: cppcheck on ${#cpp_files[@]} files"
  if ! cppcheck -q -j "$jobs" --std=c++20 --language=c++ --enable=warning,performance,portability \
        --inline-suppr --error-exitcode=1 -I . --suppress=missingIncludeSystem \
        --suppress=missingInclude "${cpp_files[@]}"; then
    status=1
  fi
fi
[[ $status -eq 0 ]] && echo "lint: clean" || echo "lint: findings above" >&2
exit $status
