# Pinned versions of the container and kind tooling (sourced after dev/lib/common.sh, which pins
# Kubernetes, Kafka and MinIO).
# shellcheck disable=SC2034
KIND_VERSION=v0.33.0       # sigs.k8s.io/kind, built with `go install`
CRICTL_VERSION=v1.37.0     # sigs.k8s.io/cri-tools, the release of the pinned Kubernetes minor
DEBIAN_SUITE=bookworm      # the base of every image (mmdebstrap, no registry)
