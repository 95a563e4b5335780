#!/usr/bin/env bash
# Build, from their published Go modules, every binary a kind node needs besides what
# `dev/setup.sh` builds (kube-apiserver, kube-controller-manager, etcd): kubelet, kubeadm,
# kube-scheduler, kube-proxy and kubectl of Kubernetes K8S_VERSION, the CoreDNS that kubeadm of that
# version deploys, crictl, the pause binary (a static C build of the source Kubernetes ships) and
# kind itself. No image registry is reachable here, so `kind build node-image` (which pulls etcd,
# coredns, pause, kindnetd) cannot be used; node-image.sh assembles the node from these instead.
#
# Each artifact is cached under $STREAMSHIFT_CACHE/opt, keyed by version, and skipped when present,
# so a second run takes seconds. Builds run one at a time (`nice`), each timed into the log.
#
# usage: build-node-bins.sh   (prints the directory holding the binaries, one per line: name path)
set -euo pipefail
source "$(dirname "$0")/../../dev/lib/common.sh"
source "$(dirname "$0")/versions.sh"

node_dir="$OPT/k8s-node-$K8S_VERSION"
work="$OPT/build/k8s-node-$K8S_VERSION"
mkdir -p "$node_dir" "$work" "$BIN"
minor="${K8S_VERSION#v1.}"

timed() {  # timed NAME COMMAND...: run COMMAND, report its seconds on stderr
  local name="$1" t0=$SECONDS
  shift
  "$@"
  printf 'build-node-bins: %s built in %d s\n' "$name" "$((SECONDS - t0))" >&2
}

# The scratch module requiring k8s.io/kubernetes with every staging module replaced by its
# published version (the way dev/lib/build-k8s.sh builds kube-apiserver).
k8s_module() {
  cd "$work"
  [ -f go.mod ] || go mod init streamshift.local/k8snode >/dev/null 2>&1
  go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}"
  local modfile m
  modfile="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  for m in $(awk '/^\tk8s.io\/[a-z0-9-]+ v0\.0\.0$/ {print $1}' "$modfile"); do
    go mod edit -replace="${m}=${m}@v0.${minor}"
  done
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubeadm/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
	_ "k8s.io/kubectl/pkg/cmd"
)
GO
  go mod tidy -e >/dev/null 2>tidy.log || { cat tidy.log >&2; exit 1; }
}

k8s_src() {  # the k8s.io/kubernetes module's source directory
  (cd "$work" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
}

build_k8s() {  # build_k8s NAME: cmd/NAME of k8s.io/kubernetes into $node_dir/NAME
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
  # kubectl's version package is client-go's as well
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION}"
  (cd "$work" && CGO_ENABLED=0 nice -n 15 go build -trimpath -ldflags "$ldflags" \
    -o "$node_dir/$1.tmp" "k8s.io/kubernetes/cmd/$1")
  mv "$node_dir/$1.tmp" "$node_dir/$1"
}

go_install() {  # go_install DIR MODULE_PATH@VERSION: a command of a module without replace directives
  local dir="$1" pkg="$2" tmp
  tmp="$(mktemp -d)"
  GOBIN="$tmp" CGO_ENABLED=0 nice -n 15 go install -trimpath -ldflags "-s -w" "$pkg"
  mkdir -p "$dir" && mv "$tmp"/* "$dir/" && rmdir "$tmp"
}

if [ ! -x "$node_dir/kubelet" ] || [ ! -x "$node_dir/kubectl" ]; then k8s_module; fi
for cmd in kubeadm kube-scheduler kube-proxy kubectl kubelet; do
  [ -x "$node_dir/$cmd" ] || timed "$cmd" build_k8s "$cmd"
done

# The CoreDNS and pause versions kubeadm of this version deploys.
src="$(k8s_src 2>/dev/null || true)"
[ -n "$src" ] || { k8s_module; src="$(k8s_src)"; }
consts="$src/cmd/kubeadm/app/constants/constants.go"
coredns_ver="$(sed -n 's/^\s*CoreDNSVersion = "\(v[0-9.]*\)"/\1/p' "$consts")"
[ -n "$coredns_ver" ] || { echo "build-node-bins: no CoreDNSVersion in $consts" >&2; exit 1; }
coredns_dir="$OPT/coredns-$coredns_ver"
[ -x "$coredns_dir/coredns" ] || timed coredns go_install "$coredns_dir" "github.com/coredns/coredns@$coredns_ver"

crictl_dir="$OPT/crictl-$CRICTL_VERSION"
[ -x "$crictl_dir/crictl" ] || timed crictl go_install "$crictl_dir" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"

kind_dir="$OPT/kind-$KIND_VERSION"
[ -x "$kind_dir/kind" ] || timed kind go_install "$kind_dir" "sigs.k8s.io/kind@$KIND_VERSION"

# pause: the tiny static init process of every pod sandbox
if [ ! -x "$node_dir/pause" ]; then
  timed pause gcc -Os -static -DVERSION="${K8S_VERSION}" -o "$node_dir/pause" "$src/build/pause/linux/pause.c"
  strip "$node_dir/pause"
fi

ln -sfn "$kind_dir/kind" "$BIN/kind"
for b in kubeadm kube-scheduler kube-proxy kubectl kubelet pause; do echo "$b $node_dir/$b"; done
echo "coredns $coredns_dir/coredns"
echo "crictl $crictl_dir/crictl"
echo "kind $kind_dir/kind"
