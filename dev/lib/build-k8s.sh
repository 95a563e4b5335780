#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager and etcd from their published Go modules.
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0
# and points them at ./staging with replace directives, which Go ignores in a dependency. A
# scratch module that requires k8s.io/kubernetes and replaces every staging module with its
# published v0.X.Y version builds the commands. etcd is built in the same module, so it is the
# version Kubernetes itself is tested against.
#
# usage: build-k8s.sh K8S_VERSION OUT_DIR     (writes OUT_DIR/{kube-apiserver,kube-controller-manager,etcd})
set -euo pipefail
ver="$1"       # e.g. v1.37.2
out="$2"
minor="${ver#v1.}"  # 37.2
staging_ver="v0.${minor}"
work="$(dirname "$out")/build/k8s-${ver}"
mkdir -p "$work" "$out"
cd "$work"

if [ ! -f go.mod ]; then
  go mod init streamshift.local/k8sbuild >/dev/null 2>&1
fi
go mod edit -require="k8s.io/kubernetes@${ver}"
modfile="$(go mod download -json "k8s.io/kubernetes@${ver}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
# every staging module is required at v0.0.0 in Kubernetes' go.mod
for m in $(awk '/^\tk8s.io\/[a-z0-9-]+ v0\.0\.0$/ {print $1}' "$modfile"); do
  go mod edit -replace="${m}=${m}@${staging_ver}"
done
etcd_ver="$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$modfile")"
go mod edit -require="go.etcd.io/etcd/server/v3@${etcd_ver}"
cat > tools.go <<'GO'
//go:build tools

// Package tools pins the commands this module builds.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)
GO
go mod tidy -e >/dev/null 2>tidy.log || { cat tidy.log >&2; exit 1; }
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${ver} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
echo "building kube-apiserver ${ver}"
go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
echo "building kube-controller-manager ${ver}"
go build -trimpath -ldflags "$ldflags" -o "$out/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
mv "$out/kube-controller-manager.tmp" "$out/kube-controller-manager"
echo "building etcd ${etcd_ver}"
go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$out/etcd.tmp" "$out/etcd"
echo "$etcd_ver" > "$out/etcd.version"
