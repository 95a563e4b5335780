#!/usr/bin/env bash
# `make e2e-kind`: streamshift end to end on a kind cluster. Builds the engine and operator images,
# creates the kind cluster (pinned node image), loads the images, installs Kafka and MinIO
# (infra.yaml: one Apache Kafka broker in KRaft mode, one MinIO server), installs the Helm chart,
# then runs the demo driver in the cluster (demo-job.yaml: Nexmark q5 and a unimico Migration with
# verify: true) and asserts the Migration Succeeded with missing=0 duplicates=0.
#
# Needs a running container engine (Docker; KIND_EXPERIMENTAL_PROVIDER=podman for podman) and
# fails at once without one. kind is built from its Go module into $STREAMSHIFT_CACHE/bin; helm
# and kubectl are the ones dev/setup.sh installs. KEEP_CLUSTER=1 leaves the cluster up.
set -euo pipefail

KIND_VERSION=v0.33.0
NODE_IMAGE="kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"
CLUSTER="${KIND_CLUSTER:-streamshift-e2e}"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/e2e/kind"
CACHE="${STREAMSHIFT_CACHE:-$HOME/.cache/streamshift}"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/pyproject.toml")"
ENGINE="${KIND_EXPERIMENTAL_PROVIDER:-docker}"

say() { printf 'e2e-kind: %s\n' "$*"; }
die() { printf 'e2e-kind: %s\n' "$1" >&2; exit "${2:-1}"; }

# 1. A container engine, before anything else.
if ! command -v "$ENGINE" >/dev/null 2>&1; then
  die "no container engine: \`$ENGINE\` is not installed; kind runs its nodes as containers (install Docker, or set KIND_EXPERIMENTAL_PROVIDER=podman)" 2
fi
if ! "$ENGINE" info >/dev/null 2>&1; then
  die "no container engine: \`$ENGINE info\` cannot reach a running $ENGINE daemon; kind runs its nodes as containers (start it, or run this where one runs)" 2
fi

# 2. The tools.
KIND="$CACHE/bin/kind-$KIND_VERSION"
if [ ! -x "$KIND" ]; then
  say "building kind $KIND_VERSION from its Go module"
  mkdir -p "$CACHE/bin"
  gobin="$(mktemp -d)"
  GOBIN="$gobin" go install "sigs.k8s.io/kind@$KIND_VERSION"
  mv "$gobin/kind" "$KIND"
fi
HELM="$CACHE/bin/helm" KUBECTL="$CACHE/bin/kubectl"
[ -x "$HELM" ] && [ -x "$KUBECTL" ] || "$REPO/dev/setup.sh"  # they come with the local stack's parts
[ -f "$CACHE/spark-jars/.complete-4.2.0" ] || "$REPO/dev/setup-spark.sh"

# 3. The images.
say "building streamshift/operator:$VERSION and streamshift/engine:$VERSION"
"$ENGINE" build -f "$REPO/operator/Dockerfile" -t "streamshift/operator:$VERSION" "$REPO"
"$ENGINE" build -f "$REPO/engine-image/Dockerfile" --build-context "spark-jars=$CACHE/spark-jars" \
  -t "streamshift/engine:$VERSION" "$REPO"

# 4. The cluster, with the images loaded.
KUBECONFIG="$(mktemp)"
export KUBECONFIG
cleanup() {
  rm -f "$KUBECONFIG"
  [ "${KEEP_CLUSTER:-0}" = 1 ] || "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
}
trap cleanup EXIT
if ! "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  "$KIND" create cluster --name "$CLUSTER" --image "$NODE_IMAGE" --wait 180s
fi
"$KIND" export kubeconfig --name "$CLUSTER" --kubeconfig "$KUBECONFIG"
"$KIND" load docker-image --name "$CLUSTER" "streamshift/operator:$VERSION" "streamshift/engine:$VERSION"

# 5. Kafka and MinIO, then the chart.
"$KUBECTL" apply -f "$HERE/infra.yaml"
"$KUBECTL" -n streamshift-infra rollout status statefulset/kafka --timeout=300s
"$KUBECTL" -n streamshift-infra rollout status deployment/minio --timeout=300s
"$HELM" upgrade --install streamshift "$REPO/helm/streamshift" --namespace streamshift-system \
  --create-namespace -f "$HERE/values.yaml" --wait --timeout 180s

# 6. The demo, in the cluster.
"$KUBECTL" -n streamshift-system delete job e2e-demo --ignore-not-found
"$KUBECTL" delete namespace e2e-demo --ignore-not-found --wait
"$KUBECTL" -n streamshift-system create configmap e2e-demo --from-file="$REPO/e2e/demo.py" \
  --dry-run=client -o yaml | "$KUBECTL" apply -f -
"$KUBECTL" apply -f "$HERE/demo-job.yaml"
say "demo running (its log follows)"
"$KUBECTL" -n streamshift-system wait --for=condition=Ready pod -l job-name=e2e-demo --timeout=300s || true
"$KUBECTL" -n streamshift-system logs -f job/e2e-demo || true
"$KUBECTL" -n streamshift-system wait --for=condition=Complete job/e2e-demo --timeout=60s \
  || die "the demo Job failed (its log above says why)"

# 7. What the Migration's status records.
status() {
  "$KUBECTL" -n e2e-demo get migration q5-unimico -o "jsonpath={.status.$1}"
}
phase="$(status phase)" missing="$(status verification.missing)" duplicate="$(status verification.duplicate)"
say "Migration q5-unimico: phase=$phase missing=$missing duplicates=$duplicate"
[ "$phase" = Succeeded ] && [ "$missing" = 0 ] && [ "$duplicate" = 0 ] \
  || die "expected Succeeded with missing=0 duplicates=0"
say "passed"
