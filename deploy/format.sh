#!/usr/bin/env bash
# Formatting of the project's own C++ with clang-format 14 (style in .clang-format).
#   deploy/format.sh [--check]        checks the C++ files changed since the lint base
#                                     (.ci/lint-base, the base deploy/lint.sh uses), and every
#                                     file when the base is missing from the history; exits
#                                     non-zero naming the files that need formatting
#   deploy/format.sh --fix            formats those files in place
#   deploy/format.sh [--check|--fix] --all       the whole tree
#   deploy/format.sh [--check|--fix] FILE...     those files
# C++ files: tracked *.cpp, *.hpp, *.h and the *.cpp.in templates of cmake/Embed.cmake (clang-format
# reads those as C++; the placeholder line stays between clang-format off and on).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

mode=check
case "${1:-}" in
  --check) shift ;;
  --fix) mode=fix; shift ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
if ! version=$("$clang_format" --version 2>/dev/null); then
  echo "format: $clang_format is missing (deploy/install-deps.sh installs it)" >&2
  exit 2
fi
# Another major version formats differently: the tree is formatted with 14.
if [[ ! "$version" =~ version\ 14\. ]]; then
  echo "format: $clang_format is not clang-format 14 ($version)" >&2
  exit 2
fi

patterns=('*.cpp' '*.hpp' '*.h' '*.cpp.in')

files=()
if [[ $# -gt 0 && "$1" == "--all" ]]; then
  mapfile -t files < <(git ls-files -- "${patterns[@]}")
elif [[ $# -gt 0 ]]; then
  files=("$@")
else
  base=$(cat .ci/lint-base 2>/dev/null || true)
  if [[ -n "$base" ]] && git cat-file -e "$base^{commit}" 2>/dev/null; then
    mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- "${patterns[@]}")
  else
    mapfile -t files < <(git ls-files -- "${patterns[@]}")
  fi
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "format: nothing to check"
  exit 0
fi

if [[ $mode == fix ]]; then
  "$clang_format" --style=file -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  "$clang_format" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format: ${#bad[@]} of ${#files[@]} files need formatting (deploy/format.sh --fix formats them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files clean"
