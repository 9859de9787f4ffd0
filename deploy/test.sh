#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, starts the local
# stack (reusing a running one), runs every CTest entry. Safe to run again.
#   deploy/test.sh              everything
#   deploy/test.sh -L unit      extra arguments go to ctest (here: only the unit tests)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

deploy/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
deploy/local-stack.sh start
eval "$(deploy/local-stack.sh env)"
ctest --preset default "$@"
