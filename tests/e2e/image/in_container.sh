#!/usr/bin/env bash
# `ingestd ARGS` inside the image INGESTD_IMAGE, as deploy/main-job.sh and check_main_job.sh call
# the binary they are given (INGESTD_BINARY): on the host network, with every INGESTD_* variable,
# the current directory read-only at the same path (`submit samples/`), the filesystem store's root
# (INGESTD_STORAGE__ROOT) writable at its path, a read-only root filesystem as on Kubernetes. Its
# exit code is ingestd's; SIGTERM reaches ingestd through podman and tini. No periodic health check
# (podman would need systemd's timers for it).
set -euo pipefail
: "${INGESTD_IMAGE:?the image to run}"
opts=(--rm --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --read-only
      --no-healthcheck --env 'INGESTD_*' --volume "$PWD:$PWD:ro" --workdir "$PWD")
if [[ -n "${INGESTD_STORAGE__ROOT:-}" ]]; then
  mkdir -p "$INGESTD_STORAGE__ROOT"
  opts+=(--volume "$INGESTD_STORAGE__ROOT:$INGESTD_STORAGE__ROOT:U")  # U: owned by the image's user
fi
exec podman --runtime runc run "${opts[@]}" "$INGESTD_IMAGE" "$@"
