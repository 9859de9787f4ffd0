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
# command (the product's libraries, INGESTD_UNITY_BUILD, by absolute paths; a test executable's
# batches, cmake/IngestdTest.cmake, by paths in the source tree) becomes one command per source it
# holds.
db="$build/lint"
mkdir -p "$db"
python3 - "$build/compile_commands.json" "$db" "$root" <<'PY'
import json, os, re, shutil, sys
entries = []
for e in json.load(open(sys.argv[1])):
    if "/Unity/unity_" not in e["file"] and not re.search(r"_unity/batch_[0-9]+\.cpp$", e["file"]):
        entries.append(e)
        continue
    for line in open(e["file"]):
        m = re.match(r'#include "(.+)"', line)
        if m:
            source = os.path.join(sys.argv[3], m.group(1))
            entries.append(dict(e, file=source, command=e["command"].replace(e["file"], source)))
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
# A file clang-tidy found clean is not checked again while what it reads is the same: the key is
# its preprocessed text with comments (its own and every header's, NOLINT included), its compile
# command, .clang-tidy, clang-tidy's version and this script. Findings are never cached.
cache=${INGESTD_LINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ingestd/lint}
mkdir -p "$cache"
printf '%s\n' "${files[@]}" >"$db/files"
if ! python3 - "$root" "$db" "$cache" "$jobs" <<'PY'
import concurrent.futures, hashlib, json, os, shlex, subprocess, sys
root, db, cache, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
entries = {os.path.realpath(e["file"]): e for e in json.load(open(os.path.join(db, "compile_commands.json")))}
tidy = ["clang-tidy", "-p", db, "--quiet", "--extra-arg=-Wno-unknown-warning-option",
        "--extra-arg=-Wno-ambiguous-reversed-operator"]
common = hashlib.sha256()
common.update(subprocess.run(["clang-tidy", "--version"], capture_output=True).stdout)
for f in (".clang-tidy", "deploy/lint.sh"):
    common.update(open(os.path.join(root, f), "rb").read())

def key(path):
    path = os.path.realpath(path)
    e = entries.get(path)
    if e is None:
        return None
    args = shlex.split(e["command"])
    pre = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c" and os.path.realpath(os.path.join(e["directory"], a)) != path:
            pre.append(a)
    out = subprocess.run(pre + ["-E", "-P", "-C", path], cwd=e["directory"], capture_output=True)
    if out.returncode != 0:
        return None
    h = common.copy()
    # The clone's own path appears in the command and in __FILE__: a fresh clone elsewhere hits.
    h.update(" ".join(pre).replace(root, "@").encode())
    h.update(out.stdout.replace(root.encode(), b"@"))
    return h.hexdigest()

def check(path):
    k = key(path)
    if k is not None and os.path.exists(os.path.join(cache, k)):
        return path, 0, b"", True
    r = subprocess.run(tidy + [path], capture_output=True)
    if r.returncode == 0 and k is not None:
        open(os.path.join(cache, k), "w").close()
    return path, r.returncode, r.stdout or r.stderr, False

files = [l.strip() for l in open(os.path.join(db, "files")) if l.strip()]
failed = 0
cached = 0
with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    for path, rc, out, hit in pool.map(check, files):
        cached += hit
        if rc != 0:
            failed += 1
            sys.stdout.buffer.write(out)
            print(f"lint: clang-tidy: findings in {path}", flush=True)
print(f"lint: clang-tidy: {cached} of {len(files)} files unchanged since clang-tidy found them clean")
sys.exit(1 if failed else 0)
PY
then
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
