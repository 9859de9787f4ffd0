#!/usr/bin/env bash
# The container image end to end: builds it the fast way (deploy/image.sh --binary with this
# build's ingestd), checks that `ingestd --version` in it names the source's commit and that it
# runs as a non-root user, starts `ingestd run` in it and checks the image's HEALTHCHECK and that
# SIGTERM (through tini) drains it to exit 0, then runs the main job with every ingestd command
# inside a container on the host network (tests/e2e/main_job/check_main_job.sh, with
# in_container.sh as the binary), against the local stack, in fresh schemas.
# Exit 77 (CTest: skipped), after one line saying why, where podman is missing or cannot run a
# container.
set -euo pipefail
: "${INGESTD_TEST_DATABASE_URL:?set it (eval \"\$(deploy/local-stack.sh env)\")}"
src=${INGESTD_SOURCE_DIR:?}
binary=${INGESTD_HOST_BINARY:?}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
image=localhost/ingestd:e2e
start=$SECONDS

if ! command -v podman >/dev/null; then
  echo "SKIPPED: podman is not installed (deploy/install-deps.sh installs it)"
  exit 77
fi

tmp=$(mktemp -d)
schema=image_$(date +%s)_$$
worker=ingestd-e2e-health-$$
cleanup() {
  podman rm --force --ignore "$worker" >/dev/null 2>&1 || true
  psql "$INGESTD_TEST_DATABASE_URL" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

status=0
"$src/deploy/image.sh" --binary "$binary" --tag "$image" >"$tmp/image.log" 2>&1 || status=$?
if ((status == 77)); then
  echo "SKIPPED: $(grep '^image: ' "$tmp/image.log" | tail -n 1)"
  exit 77
elif ((status != 0)); then
  cat "$tmp/image.log"; echo "FAIL: deploy/image.sh exited $status"; exit 1
fi
tail -n 2 "$tmp/image.log"
echo "image built in $((SECONDS - start)) s"

run=(podman --runtime runc run --rm --no-healthcheck --network host
     --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
fail() { echo "FAIL: $*"; exit 1; }

# The version names the commit of the sources this binary was built from.
commit=$(git -C "$src" rev-parse --short HEAD)
version=$("${run[@]}" "$image" --version)
echo "in the image: $version"
[[ "$version" =~ ^ingestd\ [0-9.]+\ \(commit\ $commit(-dirty)?\)$ ]] ||
  fail "ingestd --version in the image does not name the commit $commit: $version"
label=$(podman image inspect --format '{{index .Labels "org.opencontainers.image.revision"}}' "$image")
[[ "$label" == "$commit" || "$label" == "$commit-dirty" ]] ||
  fail "the label org.opencontainers.image.revision is \"$label\", not $commit"
user=$("${run[@]}" --entrypoint id "$image" -u)
[[ "$user" != 0 ]] || fail "the image runs as root"

# The daemon in the image: its HEALTHCHECK, and SIGTERM through tini drains it to exit 0.
psql "$INGESTD_TEST_DATABASE_URL" -qc "CREATE SCHEMA $schema"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env=(--env "INGESTD_DATABASE__URL=${INGESTD_TEST_DATABASE_URL}?options=-csearch_path%3D${schema}"
     --env "INGESTD_QUEUE__NAME=$schema" --env "INGESTD_MATCHING__QUEUE_NAME=$schema-match"
     --env "INGESTD_ADMIN__PORT=$port" --env INGESTD_QUEUE__WAIT_TIME_SECONDS=1)
"${run[@]}" "${env[@]}" "$image" migrate >/dev/null
"${run[@]}" "${env[@]}" "$image" queues create >/dev/null
# Detached, the health check is defined but not scheduled (podman would need systemd's timers for
# that): `podman healthcheck run` runs it once.
podman --runtime runc run --detach --name "$worker" --network host --read-only \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --health-interval disable \
  "${env[@]}" "$image" >/dev/null 2>"$tmp/run.err" || { cat "$tmp/run.err"; fail "podman run --detach"; }
healthy=0
for _ in $(seq 1 60); do
  if podman healthcheck run "$worker" >/dev/null 2>&1; then healthy=1; break; fi
  [[ "$(podman inspect --format '{{.State.Running}}' "$worker")" == true ]] || break
  sleep 0.5
done
((healthy)) || { podman logs "$worker" | tail -n 20; fail "the image's HEALTHCHECK never passed"; }
podman stop --time 60 "$worker" >/dev/null 2>&1
code=$(podman inspect --format '{{.State.ExitCode}}' "$worker")
[[ "$code" == 0 ]] || { podman logs "$worker" | tail -n 20; fail "ingestd run exited $code on SIGTERM"; }
podman rm "$worker" >/dev/null 2>&1
echo "health check passed; SIGTERM: exit 0"

# The main job, every ingestd command in a container.
INGESTD_BINARY=$here/in_container.sh INGESTD_IMAGE=$image \
  bash "$src/tests/e2e/main_job/check_main_job.sh" >"$tmp/main_job.txt" 2>&1 ||
  { cat "$tmp/main_job.txt"; fail "the main job in the image"; }
grep -E '^submitted ' "$tmp/main_job.txt"
echo "e2e_image: passed in $((SECONDS - start)) s"
