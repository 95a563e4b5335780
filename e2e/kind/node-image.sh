#!/usr/bin/env bash
# Build the kind node image from local binaries: `kind build node-image` cannot run here (it calls
# the docker CLI and pulls etcd, coredns, pause and kindnetd from a registry, and none is
# reachable). Instead, what that command does, by hand:
#   1. kind's images/base recipe on the local Debian base (images/kind-base.Containerfile).
#   2. The control plane images kubeadm deploys, one tiny image per binary, on the Debian base,
#      tagged with the names `kubeadm config images list` prints: kube-apiserver,
#      kube-controller-manager, etcd (dev/setup.sh builds them), kube-scheduler, kube-proxy,
#      coredns and pause (build-node-bins.sh).
#   3. The node: the base run with containerd, kubelet/kubeadm/kubectl copied in, the images
#      imported into containerd's k8s.io namespace (unpacked when the node starts), a static
#      bridge CNI config (one node: no kindnetd image needed; create the cluster with
#      networking.disableDefaultCNI), then committed.
# Cached: the node image carries a label with the hash of its inputs and is rebuilt only when
# they change. Prints the node image's name.
#
# usage: node-image.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../dev/lib/common.sh"
source "$HERE/versions.sh"
NODE_IMAGE="localhost/streamshift/kind-node:$K8S_VERSION"
BASE_IMAGE="localhost/streamshift/kind-base:$KIND_VERSION"
DEBIAN_IMAGE="localhost/streamshift/debian:$DEBIAN_SUITE"
say() { printf 'node-image: %s\n' "$*" >&2; }

# The binaries, built (or found in the cache) first.
[ -x "$OPT/k8s-$K8S_VERSION/etcd" ] || "$REPO/dev/setup.sh" >&2
declare -A bin
while read -r name path; do bin[$name]="$path"; done < <("$HERE/build-node-bins.sh")
for b in kube-apiserver kube-controller-manager etcd; do bin[$b]="$OPT/k8s-$K8S_VERSION/$b"; done
podman image exists "$DEBIAN_IMAGE" || "$HERE/images.sh" debian >&2
kind_files="$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')/images/base/files"

inputs="$( {
  for name in $(printf '%s\n' "${!bin[@]}" | sort); do echo "$name $(stat -c '%s %Y' "${bin[$name]}")"; done
  cat "$HERE/images/kind-base.Containerfile" "$0"
  podman image inspect --format '{{.Id}}' "$DEBIAN_IMAGE"
} | sha256sum | cut -c1-16)"
if [ "$(podman image inspect --format '{{index .Labels "streamshift.inputs"}}' "$NODE_IMAGE" 2>/dev/null)" = "$inputs" ]; then
  say "$NODE_IMAGE is up to date (inputs $inputs)"
  echo "$NODE_IMAGE"
  exit 0
fi

t0=$SECONDS
work="$(mktemp -d)"
node=""
cleanup() {
  [ -z "$node" ] || podman rm -f "$node" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# 1. the base
mkdir -p "$work/crictl" && cp "${bin[crictl]}" "$work/crictl/"
nice -n 10 podman build -q --build-arg "DEBIAN=$DEBIAN_IMAGE" --build-context "kind=$kind_files" \
  --build-context "crictl=$work/crictl" -f "$HERE/images/kind-base.Containerfile" \
  -t "$BASE_IMAGE" "$HERE/images" >/dev/null
say "kind base image $BASE_IMAGE built"

# 2. the control plane images, under the names kubeadm of this version pulls
mapfile -t wanted < <("${bin[kubeadm]}" config images list --kubernetes-version "$K8S_VERSION")
component_image() {  # component_image NAME TAG: the binary NAME on the Debian base
  local name="$1" tag="$2" ctx="$work/img-$1" entry extra=""
  mkdir -p "$ctx" && cp "${bin[$name]}" "$ctx/$name"
  case "$name" in
    coredns) entry='["/usr/local/bin/coredns"]' ;;
    pause) entry='["/usr/local/bin/pause"]' ;;
    kube-proxy)
      # kube-proxy programs iptables (legacy, as the node's kube-proxy expects) and conntrack
      extra='RUN apt-get update && apt-get install -y --no-install-recommends iptables conntrack nftables \
 && update-alternatives --set iptables /usr/sbin/iptables-legacy \
 && update-alternatives --set ip6tables /usr/sbin/ip6tables-legacy && rm -rf /var/lib/apt/lists/*'
      entry='["/usr/local/bin/kube-proxy"]' ;;
    *) entry="[\"/usr/local/bin/$name\"]" ;;
  esac
  printf 'FROM %s\n%s\nCOPY --chmod=0755 %s /usr/local/bin/%s\nENTRYPOINT %s\n' \
    "$DEBIAN_IMAGE" "$extra" "$name" "$name" "$entry" > "$ctx/Containerfile"
  nice -n 10 podman build -q -t "$tag" "$ctx" >/dev/null
}
for tag in "${wanted[@]}"; do
  repo="${tag%:*}"
  name="${repo##*/}"
  [ -n "${bin[$name]:-}" ] || { say "no local binary for $tag"; exit 1; }
  component_image "$name" "$tag"
done
podman save -q -m --format docker-archive -o "$work/images.tar" "${wanted[@]}" >/dev/null
say "control plane images: ${wanted[*]}"

# 3. the node
pause_image="$(printf '%s\n' "${wanted[@]}" | grep '/pause:')"
node="$(podman run -d --privileged --entrypoint sleep "$BASE_IMAGE" infinity)"
for b in kubelet kubeadm kubectl; do podman cp "${bin[$b]}" "$node:/usr/bin/$b"; done
podman cp "$work/images.tar" "$node:/images.tar"
podman exec "$node" bash -ec "
  sed -i 's|sandbox_image = .*|sandbox_image = \"$pause_image\"|' /etc/containerd/config.toml
  mkdir -p /kind/manifests /etc/cni/net.d
  echo '$K8S_VERSION' > /kind/version
  containerd >/var/log/containerd-import.log 2>&1 &
  for i in \$(seq 1 50); do ctr version >/dev/null 2>&1 && break; sleep 0.2; done
  ctr -n k8s.io images import --all-platforms --no-unpack /images.tar >/dev/null
  ctr -n k8s.io images ls -q | grep -v '^sha256:' | sort > /kind/images
  kill %1 && wait || true
  rm -f /images.tar /var/log/containerd-import.log
"
# one node, so a bridge with host-local addresses is all the pod network needs
cat > "$work/10-bridge.conflist" <<'JSON'
{
  "cniVersion": "1.0.0",
  "name": "kind-bridge",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/16"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
podman cp "$work/10-bridge.conflist" "$node:/etc/cni/net.d/10-bridge.conflist"
podman exec "$node" cat /kind/images | sed 's/^/node-image:   /' >&2
podman stop -t 2 "$node" >/dev/null
podman commit -q --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' --change 'CMD []' \
  --change "LABEL streamshift.inputs=$inputs" "$node" "$NODE_IMAGE" >/dev/null
size="$(podman image inspect --format '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%.0f", $1 / 1e6}')"
say "$NODE_IMAGE built in $((SECONDS - t0)) s ($size MB)"
echo "$NODE_IMAGE"
