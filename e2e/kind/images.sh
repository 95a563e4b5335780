#!/usr/bin/env bash
# `make images`: every image streamshift and its kind end-to-end run use, built here with podman
# from Debian packages (no image registry is reachable, so nothing is pulled):
#   localhost/streamshift/debian:bookworm        mmdebstrap minbase, imported (the base of all)
#   localhost/streamshift/python[-build]:3.11-bookworm   Debian's python3; the build variant adds
#                                                 gcc, headers and this machine's CA certificates
#   localhost/streamshift/engine:VERSION          the worker (engine-image/Dockerfile --target worker)
#   localhost/streamshift/spark:VERSION           Spark driver/executor (--target spark)
#   localhost/streamshift/operator:VERSION        the operator (operator/Dockerfile)
#   localhost/streamshift/kafka:KAFKA_VERSION     KRaft broker from dev/setup.sh's jars, configured by
#                                                 dev/lib/kafka-config.sh (as the local stack's)
#   localhost/streamshift/minio:MINIO_VERSION     dev/setup.sh's Go-built MinIO
# Tags are fully qualified under localhost/ (where podman stores a bare name); pods name them so,
# since kind's containerd would resolve a bare `streamshift/engine:0.1.0` to a registry's.
# podman's layer cache makes a rebuild of unchanged images take seconds. Prints each image's size.
#
# usage: images.sh [IMAGE...]   (names: debian python engine spark operator kafka minio; default all)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../dev/lib/common.sh"
source "$HERE/versions.sh"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/pyproject.toml")"
IMAGES="$HERE/images"

say() { printf 'images: %s\n' "$*"; }
"$HERE/podman-setup.sh" | sed 's/^/images: /'

DEBIAN_IMAGE=localhost/streamshift/debian:$DEBIAN_SUITE
PYTHON_IMAGE=localhost/streamshift/python:3.11-$DEBIAN_SUITE
PYTHON_BUILD_IMAGE=localhost/streamshift/python-build:3.11-$DEBIAN_SUITE
ENGINE_IMAGE=localhost/streamshift/engine:$VERSION
SPARK_IMAGE=localhost/streamshift/spark:$VERSION
OPERATOR_IMAGE=localhost/streamshift/operator:$VERSION
KAFKA_IMAGE=localhost/streamshift/kafka:$KAFKA_VERSION
MINIO_IMAGE=localhost/streamshift/minio:$MINIO_VERSION

timed() {  # timed NAME COMMAND...: run COMMAND quietly (its output on failure), say its seconds
  local name="$1" t0=$SECONDS log
  shift
  log="$LOG/images/$name.log"
  mkdir -p "$LOG/images"
  if ! nice -n 10 "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    say "$name failed; the full log is $log"
    exit 1
  fi
  say "$name built in $((SECONDS - t0)) s"
}

build_debian() {
  podman image exists "$DEBIAN_IMAGE" && return 0
  local tmp
  tmp="$(mktemp -d)"
  # minbase: dpkg, apt and the Essential set; no docs, man pages or translations (but man1, where
  # update-alternatives links the JRE's man pages, must exist). The merged-usr
  # hook lays out /usr itself, so usr-is-merged stands in for usrmerge and its dependency perl
  # (50 MB).
  timed debian mmdebstrap --variant=minbase --aptopt='Acquire::Retries "3"' \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='mkdir -p "$1/usr/share/man/man1"' \
    "$DEBIAN_SUITE" "$tmp/rootfs.tar" \
    "deb http://deb.debian.org/debian $DEBIAN_SUITE main" \
    "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
  podman import --change 'CMD ["/bin/bash"]' "$tmp/rootfs.tar" "$DEBIAN_IMAGE" >/dev/null 2>&1
  rm -rf "$tmp"
}

build_python() {
  local ctx
  ctx="$(mktemp -d)"
  mkdir "$ctx/ca"
  # the CAs this machine trusts beyond Debian's (a TLS-intercepting egress re-signs PyPI)
  cp /usr/local/share/ca-certificates/*.crt "$ctx/ca/" 2>/dev/null || true
  timed python podman build --build-arg "DEBIAN=$DEBIAN_IMAGE" --target runtime \
    -f "$IMAGES/python.Containerfile" -t "$PYTHON_IMAGE" "$ctx"
  timed python-build podman build --build-arg "DEBIAN=$DEBIAN_IMAGE" --target build \
    -f "$IMAGES/python.Containerfile" -t "$PYTHON_BUILD_IMAGE" "$ctx"
  rm -rf "$ctx"
}

engine_build() {  # engine_build NAME TARGET TAG: a target of engine-image/Dockerfile
  timed "$1" podman build --build-arg "PYTHON=$PYTHON_IMAGE" --build-arg "PYTHON_BUILD=$PYTHON_BUILD_IMAGE" \
    --build-context "spark-jars=$CACHE/spark-jars" --target "$2" \
    -f "$REPO/engine-image/Dockerfile" -t "$3" "$REPO"
}

build_engine() { engine_build engine worker "$ENGINE_IMAGE"; }

build_spark() {
  [ -f "$CACHE/spark-jars/.complete-4.2.0" ] || "$REPO/dev/setup-spark.sh"
  engine_build spark spark "$SPARK_IMAGE"
}

build_operator() {
  timed operator podman build --build-arg "PYTHON=$PYTHON_IMAGE" --build-arg "PYTHON_BUILD=$PYTHON_BUILD_IMAGE" \
    -f "$REPO/operator/Dockerfile" -t "$OPERATOR_IMAGE" "$REPO"
}

build_kafka() {
  [ -f "$OPT/kafka-$KAFKA_VERSION/lib/kafka_2.13-$KAFKA_VERSION.jar" ] || "$REPO/dev/setup.sh"
  timed kafka podman build --build-arg "DEBIAN=$DEBIAN_IMAGE" \
    --build-context "kafka=$OPT/kafka-$KAFKA_VERSION" --build-context "lib=$REPO/dev/lib" \
    -f "$IMAGES/kafka.Containerfile" -t "$KAFKA_IMAGE" "$IMAGES"
}

build_minio() {
  [ -x "$OPT/minio-$MINIO_VERSION/minio" ] || "$REPO/dev/setup.sh"
  timed minio podman build --build-arg "DEBIAN=$DEBIAN_IMAGE" \
    --build-context "minio=$OPT/minio-$MINIO_VERSION" \
    -f "$IMAGES/minio.Containerfile" -t "$MINIO_IMAGE" "$IMAGES"
}

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=(debian python engine spark operator kafka minio)
for name in "${wanted[@]}"; do
  case "$name" in
    debian) build_debian ;;
    python) build_debian; build_python ;;
    engine|spark|operator|kafka|minio)
      podman image exists "$PYTHON_BUILD_IMAGE" || { build_debian; build_python; }
      "build_$name" ;;
    *) say "unknown image '$name' (debian python engine spark operator kafka minio)"; exit 2 ;;
  esac
done

say "sizes (uncompressed):"
for image in "$DEBIAN_IMAGE" "$PYTHON_IMAGE" "$ENGINE_IMAGE" "$SPARK_IMAGE" "$OPERATOR_IMAGE" \
  "$KAFKA_IMAGE" "$MINIO_IMAGE"; do
  if podman image exists "$image"; then
    podman image inspect --format '{{.Size}}' "$image" \
      | awk -v name="$image" '{printf "images:   %-60s %6.0f MB\n", name, $1 / 1e6}'
  fi
done
