#!/usr/bin/env bash
# Installs everything ingestd's build, daemon and tests need: Debian 12 packages, the SQS/S3
# emulator (npm package fauxqs) under deploy/emulators/, and the npm packages of the offline checks
# and of the test files. Safe to run again: it installs only what is missing and prints nothing
# when nothing is.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

packages=(
  build-essential cmake ninja-build ccache lld pkg-config git curl ca-certificates
  libcaf-dev libpq-dev postgresql-15 postgresql-client-15
  libopencv-dev rapidjson-dev libcurl4-openssl-dev libssl-dev libspdlog-dev libfmt-dev
  libtesseract-dev tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu
  tesseract-ocr-fra tesseract-ocr-nld tesseract-ocr-spa tesseract-ocr-ita tesseract-ocr-pol
  libpoppler-cpp-dev poppler-utils libgtest-dev libgmock-dev
  libarchive-dev libgmime-3.0-dev libgsf-1-dev libpst-dev libseccomp-dev libjemalloc-dev
  python3 python3-boto3 libcpp-httplib-dev libmicrohttpd-dev zlib1g-dev prometheus
  clang-tidy clang-format cppcheck clang-14 libclang-rt-14-dev
)
# Office and web documents (DOCX, XLSX, ODT, ODS, RTF, HTML) are converted to PDF by LibreOffice.
packages+=(libreoffice-writer-nogui libreoffice-calc-nogui)
# Mailbox intake's tests: a Dovecot IMAP server of their own on loopback.
packages+=(dovecot-imapd)
# The review desk's browser test: headless Chromium driven by Selenium (system packages).
packages+=(chromium chromium-driver python3-selenium)
# TLS and HTTP/2 in front of the HTTP engine's test server and bench/slow_io's stub, as hosted
# providers speak them: nghttpx.
packages+=(nghttp2-proxy)
# The OCI image (deploy/image.sh, tests/e2e/image): podman with runc (crun refuses cgroups in
# hybrid mode), and mmdebstrap for the local Debian 12 base image.
packages+=(podman runc mmdebstrap)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The emulator, pinned by package-lock.json.
if [[ ! -x "$here/emulators/node_modules/.bin/fauxqs" ]]; then
  echo "install-deps: installing the fauxqs emulator under deploy/emulators/"
  (cd "$here/emulators" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# Outlook data files for the tests (no Debian tool writes a .pst): pst-extractor's example data,
# pinned likewise.
if [[ ! -d "$here/../tests/fixtures/outlook/node_modules/pst-extractor/example/testdata" ]]; then
  echo "install-deps: installing the Outlook test files under tests/fixtures/outlook/"
  (cd "$here/../tests/fixtures/outlook" \
     && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi

# The offline Kubernetes schema check of deploy/kubernetes (kubernetes-models), pinned likewise.
if [[ ! -d "$here/kubernetes/validate/node_modules/kubernetes-models" ]]; then
  echo "install-deps: installing kubernetes-models under deploy/kubernetes/validate/"
  (cd "$here/kubernetes/validate" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# The offline check of the Grafana dashboard (deploy/grafana): @grafana/schema's types with the
# TypeScript compiler, and the PromQL grammar of @prometheus-io/lezer-promql, pinned likewise.
grafana_validate="$here/grafana/validate/node_modules"
if [[ ! -d "$grafana_validate/@grafana/schema" || ! -d "$grafana_validate/typescript" \
      || ! -d "$grafana_validate/@prometheus-io/lezer-promql" ]]; then
  echo "install-deps: installing @grafana/schema and typescript under deploy/grafana/validate/"
  (cd "$here/grafana/validate" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
