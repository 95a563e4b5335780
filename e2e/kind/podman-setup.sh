#!/usr/bin/env bash
# Install and configure podman, the container engine of `make images` and `make e2e-kind`
# (idempotent: a second run changes nothing and takes a second).
#
# Debian's podman 4.3 with runc: crun cannot run here (cgroups are v1 "hybrid" and root lacks
# CAP_SYS_RESOURCE, so crun's setrlimit of RLIMIT_NOFILE/NPROC above the hard limit fails). So
# containers.conf names runc and caps the default ulimits at this machine's hard nofile limit.
# Debian's Docker package cannot serve kind (--privileged fails: "unable to apply caps"), hence podman.
# mmdebstrap makes the Debian base image (no image registry is reachable); kind bind-mounts
# /lib/modules, which this VM lacks.
set -euo pipefail
say() { printf 'podman-setup: %s\n' "$*"; }

packages=(podman runc conmon containernetworking-plugins golang-github-containers-common
  slirp4netns fuse-overlayfs uidmap iptables mmdebstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { say "installing ${missing[*]} needs root (run as root, or install them)"; exit 1; }
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

nofile="$(ulimit -Hn)"
[ "$nofile" = unlimited ] && nofile=1048576
conf=/etc/containers/containers.conf
want="$(cat <<CONF
# Written by streamshift e2e/kind/podman-setup.sh: runc (crun fails on this VM's cgroup v1
# hybrid mode) and ulimits no higher than the hard limits the engine itself runs under.
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=32768:32768"]

[engine]
runtime = "runc"
CONF
)"
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
  if [ -f "$conf" ] && ! grep -q 'streamshift e2e/kind/podman-setup.sh' "$conf"; then
    cp "$conf" "$conf.before-streamshift"
    say "kept the previous $conf as $conf.before-streamshift"
  fi
  mkdir -p "$(dirname "$conf")"
  printf '%s\n' "$want" > "$conf"
  say "wrote $conf (runtime runc, nofile=$nofile)"
fi
mkdir -p /lib/modules

podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.CgroupsVersion}}' >/dev/null \
  || { say "podman is installed but 'podman info' fails (its output above says why)"; exit 1; }
say "podman $(podman version --format '{{.Client.Version}}') ready (runtime $(podman info --format '{{.Host.OCIRuntime.Name}}'), cgroups $(podman info --format '{{.Host.CgroupsVersion}}'))"
