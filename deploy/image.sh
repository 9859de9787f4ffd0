#!/usr/bin/env bash
# Builds ingestd's container image (Dockerfile) with podman, tagged localhost/ingestd:VERSION and
# localhost/ingestd:latest, and prints its size. Safe to run again: the base image is made only
# when missing, and podman's layer cache reuses the unchanged stages.
#
#   deploy/image.sh                  the full build: the image's build stage compiles ingestd
#                                    (about 30 minutes on 2 cores)
#   deploy/image.sh --binary PATH    the fast build: PATH, a build of ingestd on Debian 12 (e.g.
#                                    build/app/ingestd), goes into the runtime stage, stripped;
#                                    the version and commit of the labels are the binary's own
#   --tag NAME                       tag NAME instead (repeatable)
#   --build-arg NAME=VALUE           a Dockerfile build argument (repeatable), e.g.
#                                    OFFICE_FORMATS=true (LibreOffice for office documents) or
#                                    OCR_LANGUAGES="eng deu"
#
# Environment: INGESTD_IMAGE_BASE (the base, default localhost/debian:12-slim: made when missing
# with mmdebstrap from Debian's package registry and `podman import`), INGESTD_IMAGE_JOBS (the
# full build's parallel compile jobs; default: ninja's).
# Exit 77 (after one line saying why) when podman is missing or cannot run a container here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

binary=""
tags=()
build_args=()
while (($#)); do
  case "$1" in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --tag) tags+=("${2:?--tag needs a name}"); shift 2 ;;
    --build-arg) build_args+=(--build-arg "${2:?--build-arg needs NAME=VALUE}"); shift 2 ;;
    -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

base=${INGESTD_IMAGE_BASE:-localhost/debian:12-slim}
# runc, not crun: crun refuses these machines' cgroups (hybrid mode). The hosts' open-file and
# process limits are above what runc may set in a container, hence the explicit ones.
podman_opts=(--runtime runc)
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
  "$root/deploy/install-deps.sh"
fi
if ! command -v podman >/dev/null; then
  echo "image: podman is not installed; it cannot be built here" >&2
  exit 77
fi

# The base: Debian 12 minbase without documentation, manual pages and translations (as
# debian:12-slim), merged /usr without the usrmerge package (which would bring perl).
if [[ "$base" == localhost/debian:12-slim ]] && ! podman image exists "$base"; then
  echo "== making the base image $base (mmdebstrap)"
  scratch=$(mktemp -d /tmp/ingestd-base.XXXXXX)
  trap 'rm -rf "$scratch"' EXIT
  mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    bookworm "$scratch/rootfs.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  podman import --quiet "$scratch/rootfs.tar" "$base" >/dev/null
  rm -rf "$scratch"
  trap - EXIT
fi

# Can podman run a container at all (kernel, cgroups, runtime)?
if ! probe=$(podman "${podman_opts[@]}" run --rm --network host "${limits[@]}" "$base" true 2>&1); then
  echo "image: podman cannot run a container here: $(echo "$probe" | grep -v '^$' | tail -n 1)" >&2
  exit 77
fi

staged=$root/.local/image/ingestd
rm -f "$staged"
if [[ -n "$binary" ]]; then
  [[ -x "$binary" ]] || { echo "image: $binary is not an executable" >&2; exit 2; }
  # ingestd 0.2.0 (commit 1a2b3c4)
  read -r _ version _ revision < <("$binary" --version)
  revision=${revision%)}
  revision=${revision:-unknown}
  mkdir -p "$(dirname "$staged")"
  trap 'rm -f "$staged"' EXIT
  if command -v strip >/dev/null; then
    strip --strip-unneeded -o "$staged" "$binary"
  else
    cp "$binary" "$staged"
  fi
  target=fast
else
  version=$(sed -nE 's/^project\(ingestd VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
  revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [[ "$revision" != unknown ]] && ! git diff --quiet HEAD --; then revision+=-dirty; fi
  target=full
fi
((${#tags[@]})) || tags=("localhost/ingestd:$version" localhost/ingestd:latest)

args=(--target "$target" --build-arg "BASE=$base"
      --build-arg "VERSION=$version" --build-arg "REVISION=$revision")
[[ -n "${INGESTD_IMAGE_JOBS:-}" ]] && args+=(--build-arg "JOBS=$INGESTD_IMAGE_JOBS")
((${#build_args[@]})) && args+=("${build_args[@]}")
for t in "${tags[@]}"; do args+=(--tag "$t"); done
# The host's downloaded Debian packages (same release) save most of the runtime stage's
# downloads: mounted as an overlay, so what apt writes there stays out of the host and the image.
if [[ -d /var/cache/apt/archives ]]; then
  args+=(--volume /var/cache/apt/archives:/var/cache/apt/archives:O)
fi

echo "== building ${tags[*]} ($([[ $target == full ]] && echo "full build" || echo "fast build: $binary"), ingestd $version, commit $revision)"
start=$SECONDS
# Docker format: the OCI image format has no HEALTHCHECK.
podman "${podman_opts[@]}" build "${limits[@]}" --network host --format docker --layers \
  "${args[@]}" --file Dockerfile .
# podman build ends 0 when it is stopped by a signal: the label tells whether this build made it.
made=$(podman image inspect --format '{{index .Labels "org.opencontainers.image.revision"}}' "${tags[0]}" 2>/dev/null || true)
if [[ "$made" != "$revision" ]]; then
  echo "image: ${tags[0]} is not of commit $revision (${made:-no such image}): the build did not finish" >&2
  exit 1
fi
echo "== built ${tags[*]} in $((SECONDS - start)) s"
podman image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' "${tags[0]}"
