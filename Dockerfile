# The ingestd image: Debian 12, the runtime libraries the binary links, Tesseract's English and
# German data (transcription.languages eng+deu), a non-root user, tini as init. deploy/image.sh
# builds it (with podman; see README.md, "Container image"):
#   deploy/image.sh                   the full build (the last stage, "full"): the build stage
#                                     compiles ingestd (slow)
#   deploy/image.sh --binary PATH     the fast build (--target fast): a Debian 12 build of ingestd
#                                     from the context (.local/image/ingestd) instead
# Build arguments: BASE (the Debian 12 base image), VERSION and REVISION (the OCI labels; REVISION
# is also the commit `ingestd --version` names in the full build), JOBS (the build stage's
# parallel compile jobs; empty: ninja's default), OCR_LANGUAGES and OFFICE_FORMATS (the runtime
# stage's Tesseract data and LibreOffice, below).
ARG BASE=debian:12-slim

# The build stage: Debian 12's -dev packages, the daemon only (no tests, no benchmarks).
FROM ${BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libcaf-dev libpq-dev libopencv-dev rapidjson-dev libcurl4-openssl-dev libssl-dev \
      libspdlog-dev libfmt-dev libtesseract-dev libpoppler-cpp-dev libarchive-dev \
      libgmime-3.0-dev libgsf-1-dev libpst-dev libseccomp-dev libjemalloc-dev libcpp-httplib-dev libmicrohttpd-dev zlib1g-dev libgtest-dev libgmock-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG REVISION=unknown
ARG JOBS=
RUN cmake --preset default -DINGESTD_BUILD_TESTS=OFF -DINGESTD_BUILD_BENCH=OFF \
      -DINGESTD_REVISION="${REVISION}" >/dev/null \
 && cmake --build --preset default --target ingestd ${JOBS:+--parallel ${JOBS}} \
 && mkdir /out && strip --strip-unneeded -o /out/ingestd build/app/ingestd

# What the image has besides the binary.
FROM ${BASE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
# The Tesseract languages the configuration reads (transcription.languages and other_languages:
# the seven the rules know by default); --build-arg OCR_LANGUAGES="eng deu" for fewer.
ARG OCR_LANGUAGES="eng deu fra nld spa ita pol"
# Office and web documents (DOCX, XLSX, ODT, ODS, RTF, HTML) need LibreOffice, which adds about
# 300 MB: --build-arg OFFICE_FORMATS=true to include it. Without it such a
# document fails convert.unavailable, naming the packages.
ARG OFFICE_FORMATS=false
# The packages of the libraries the binary links directly (objdump -p build/app/ingestd | grep
# NEEDED, then dpkg -S); apt brings what they need. tini is the init, curl the health check,
# ca-certificates for HTTPS to the LLM, Document AI, SQS and S3. OpenCV's libGLX would bring Mesa's
# DRI drivers (with LLVM, 150 MB) that a daemon opening no OpenGL context never loads: a local
# empty package provides libgl1-mesa-dri instead.
RUN mkdir -p /tmp/no-gl/DEBIAN \
 && printf '%s\n' 'Package: ingestd-no-gl-drivers' 'Version: 1' 'Architecture: all' \
      'Maintainer: ingestd' 'Provides: libgl1-mesa-dri' \
      'Description: stands in for the Mesa DRI drivers, which ingestd does not use' \
      >/tmp/no-gl/DEBIAN/control \
 && dpkg-deb --build /tmp/no-gl /tmp/no-gl.deb >/dev/null && dpkg -i /tmp/no-gl.deb >/dev/null \
 && rm -rf /tmp/no-gl /tmp/no-gl.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      tini curl ca-certificates \
      libcaf-core0.17 libpq5 libcurl4 libssl3 libspdlog1.10 libfmt9 libmicrohttpd12 \
      libopencv-core406 libopencv-imgproc406 libopencv-photo406 \
      libtesseract5 liblept5 libpoppler-cpp0v5 libarchive13 libgmime-3.0-0 libgsf-1-114 libpst4 libglib2.0-0 \
      libseccomp2 libjemalloc2 \
      $(for l in ${OCR_LANGUAGES}; do echo "tesseract-ocr-$l"; done) \
      $([ "${OFFICE_FORMATS}" = true ] && echo libreoffice-writer-nogui libreoffice-calc-nogui) \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old \
 && groupadd --system --gid 10001 ingestd \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/ingestd --create-home \
      --shell /usr/sbin/nologin ingestd
LABEL org.opencontainers.image.title="ingestd" \
      org.opencontainers.image.description="Document-ingestion worker daemon"

# The filesystem store's default root (.local/storage) lands under the user's home; the Kubernetes
# manifest uses S3 and a read-only root filesystem instead.
USER 10001:10001
WORKDIR /var/lib/ingestd
# The admin endpoint (admin.port; 127.0.0.1 by default, so reachable from inside the container:
# set INGESTD_ADMIN__BIND=0.0.0.0 to publish it). The health check asks 127.0.0.1 on
# INGESTD_ADMIN__PORT, else 9464: a configuration file that moves the port needs that variable too.
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${INGESTD_ADMIN__PORT:-9464}/healthz" || exit 1
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/ingestd"]
CMD ["run"]

# The fast way: a binary built on a Debian 12 host, staged by deploy/image.sh.
FROM runtime AS fast
COPY .local/image/ingestd /usr/local/bin/ingestd
ARG VERSION=unknown
ARG REVISION=unknown
# Fails the build when a library is missing. It uses VERSION and REVISION so that podman's layer
# cache, which keys a LABEL by its text before substitution, makes the labels anew when they change.
RUN echo "ingestd ${VERSION}, commit ${REVISION}: $(ingestd --version)"
LABEL org.opencontainers.image.version="${VERSION}" org.opencontainers.image.revision="${REVISION}"

# The full build: the binary of the build stage. The last stage, so the default target.
FROM runtime AS full
COPY --from=build /out/ingestd /usr/local/bin/ingestd
ARG VERSION=unknown
ARG REVISION=unknown
RUN echo "ingestd ${VERSION}, commit ${REVISION}: $(ingestd --version)"
LABEL org.opencontainers.image.version="${VERSION}" org.opencontainers.image.revision="${REVISION}"
