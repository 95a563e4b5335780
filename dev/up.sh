#!/usr/bin/env bash
# Start the local stack on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager, Kafka (KRaft),
# MinIO and the process node agent. Each part gets its own session (so `down` can stop its whole
# process group), a pid file in run/pids and a log in log/. Waits until every part is healthy,
# within a bounded time, and names the part that failed. With the stack already up it does nothing.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
TIMEOUT="${STREAMSHIFT_UP_TIMEOUT:-120}"

for b in etcd kube-apiserver kube-controller-manager minio kubectl; do
  [ -x "$BIN/$b" ] || die "$b" "$BIN/$b is missing" "run 'make setup'"
done
[ -f "$OPT/kafka/lib/kafka_2.13-$KAFKA_VERSION.jar" ] || die kafka "Kafka $KAFKA_VERSION jars are missing" "run 'make setup'"
[ -x "$VENV/bin/streamshift-dev" ] || die node-agent "$VENV/bin/streamshift-dev is missing" "run 'make venv'"
command -v java >/dev/null || die kafka "java is not on PATH" "apt-get install -y openjdk-17-jre-headless"
mkdir -p "$RUN/pids" "$LOG/pods" "$DATA"
"$REPO/dev/lib/pki.sh" "$PKI" || die pki "could not create certificates in $PKI" "check that openssl works"

cat > "$KUBECONFIG_PATH" <<KC
apiVersion: v1
kind: Config
clusters:
- name: streamshift-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: streamshift-admin
  user:
    client-certificate: $PKI/admin.crt
    client-key: $PKI/admin.key
contexts:
- name: streamshift-local
  context: {cluster: streamshift-local, user: streamshift-admin, namespace: default}
current-context: streamshift-local
KC

ports_of() {
  case "$1" in
    etcd) echo "$ETCD_PORT $ETCD_PEER_PORT" ;;
    kube-apiserver) echo "$APISERVER_PORT" ;;
    kube-controller-manager) echo "$KCM_PORT" ;;
    kafka) echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT" ;;
    minio) echo "$MINIO_PORT" ;;
    node-agent) echo "" ;;
  esac
}

port_var() {
  case "$1" in
    "$ETCD_PORT") echo STREAMSHIFT_ETCD_PORT ;; "$ETCD_PEER_PORT") echo STREAMSHIFT_ETCD_PEER_PORT ;;
    "$APISERVER_PORT") echo STREAMSHIFT_APISERVER_PORT ;; "$KCM_PORT") echo STREAMSHIFT_KCM_PORT ;;
    "$KAFKA_PORT") echo STREAMSHIFT_KAFKA_PORT ;; "$KAFKA_CONTROLLER_PORT") echo STREAMSHIFT_KAFKA_CONTROLLER_PORT ;;
    "$MINIO_PORT") echo STREAMSHIFT_MINIO_PORT ;;
  esac
}

STARTED=()
launch() {  # launch PART COMMAND...: start PART in its own session unless it already runs
  local part="$1"; shift
  if part_pid "$part" >/dev/null; then say "$part: already running (pid $(part_pid "$part"))"; return 0; fi
  local p owner
  for p in $(ports_of "$part"); do
    owner="$(port_owner "$p")"
    [ -z "$owner" ] || die "$part" "port 127.0.0.1:$p is already taken: $owner" \
      "stop that process, or pick another port: export $(port_var "$p")=<free port>"
  done
  setsid "$@" >"$LOG/$part.log" 2>&1 </dev/null &
  echo $! > "$(pidfile "$part")"
  STARTED+=("$part")
}

launched_alive() {  # launched_alive PART: PART's recorded process still exists
  local f state
  f="$(pidfile "$1")"
  [ -f "$f" ] || return 1
  state="$(ps -o stat= -p "$(cat "$f")" 2>/dev/null)" || return 1
  [[ "$state" != Z* ]]
}

wait_healthy() {  # wait_healthy PART...: until each is healthy, its process dies, or TIMEOUT
  local part deadline=$((SECONDS + TIMEOUT))
  for part in "$@"; do
    until healthy "$part"; do
      # the pid this run just wrote: alive is enough (its command line is still the forking shell's
      # until exec, so part_pid's marker check would call a slow start an exit)
      launched_alive "$part" || { tail -n 15 "$LOG/$part.log" >&2; die "$part" "exited while starting; log: $LOG/$part.log" "read the log; then 'make down && make up'"; }
      [ $SECONDS -lt $deadline ] || { tail -n 15 "$LOG/$part.log" >&2; die "$part" "not healthy after ${TIMEOUT}s; log: $LOG/$part.log" "read the log; 'make down' stops what started"; }
      sleep 0.5
    done
    say "$part: healthy ($((SECONDS - t0)) s)"
  done
}

# every port first, so a taken one stops the start before anything runs
for part in "${PARTS[@]}"; do
  part_pid "$part" >/dev/null && continue
  for p in $(ports_of "$part"); do
    owner="$(port_owner "$p")"
    [ -z "$owner" ] || die "$part" "port 127.0.0.1:$p is already taken: $owner" \
      "stop that process, or pick another port: export $(port_var "$p")=<free port>"
  done
done

t0=$SECONDS
launch etcd "$BIN/etcd" --name streamshift --data-dir "$DATA/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "streamshift=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --quota-backend-bytes 2147483648

"$REPO/dev/lib/kafka-config.sh" "$DATA/kafka" "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" "$OPT/kafka" >"$LOG/kafka-format.log" 2>&1 \
  || die kafka "could not format the KRaft storage; log: $LOG/kafka-format.log" "read the log; 'dev/down.sh --purge' wipes the data"
kept=$(find "$DATA/kafka/logs" -mindepth 1 -maxdepth 1 -type d -name '*-[0-9]*' 2>/dev/null | wc -l)
[ "$kept" -lt 1000 ] || say "kafka: loading $kept partitions kept from earlier runs (slow; 'dev/down.sh --purge' wipes the data)"
launch kafka java -Xms128m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$DATA/kafka/log4j2.properties" -cp "$OPT/kafka/lib/*" kafka.Kafka "$DATA/kafka/server.properties"

mkdir -p "$DATA/minio"
launch minio env MINIO_ROOT_USER="$S3_ACCESS_KEY" MINIO_ROOT_PASSWORD="$S3_SECRET_KEY" MINIO_BROWSER=off \
  MINIO_UPDATE=off "$BIN/minio" server --quiet --address "127.0.0.1:$MINIO_PORT" "$DATA/minio"

wait_healthy etcd
launch kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local --api-audiences https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range 10.96.0.0/16 --authorization-mode RBAC --endpoint-reconciler-type none \
  --disable-admission-plugins ServiceAccount --allow-privileged --profiling=false --cert-dir "$DATA/apiserver"
wait_healthy kube-apiserver

launch kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG_PATH" \
  --authentication-kubeconfig "$KUBECONFIG_PATH" --authorization-kubeconfig "$KUBECONFIG_PATH" \
  --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false --cert-dir "$DATA/kcm" \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --controllers '*,-node-lifecycle-controller,-node-ipam-controller,-taint-eviction-controller,-persistentvolume-attach-detach-controller' \
  --profiling=false
launch node-agent "$VENV/bin/streamshift-dev" node-agent --kubeconfig "$KUBECONFIG_PATH" --node "$NODE_NAME" \
  --log-dir "$LOG/pods" --work-dir "$DATA/pods" --path "$VENV/bin"

wait_healthy kube-controller-manager kafka minio node-agent

cat > "$STACK_ENV.tmp" <<ENV
# written by dev/up.sh; the local stack's endpoints (shell and dotenv syntax)
KAFKA_BOOTSTRAP=127.0.0.1:$KAFKA_PORT
S3_ENDPOINT=http://127.0.0.1:$MINIO_PORT
S3_ACCESS_KEY=$S3_ACCESS_KEY
S3_SECRET_KEY=$S3_SECRET_KEY
KUBECONFIG=$KUBECONFIG_PATH
KUBECTL=$BIN/kubectl
HELM=$BIN/helm
STREAMSHIFT_NODE=$NODE_NAME
STREAMSHIFT_POD_LOGS=$LOG/pods
STREAMSHIFT_CACHE=$CACHE
ENV
mv "$STACK_ENV.tmp" "$STACK_ENV"

if [ ${#STARTED[@]} -eq 0 ]; then
  say "the stack was already up; nothing started"
else
  say "started ${STARTED[*]} in $((SECONDS - t0)) s"
fi
say "kubeconfig: $KUBECONFIG_PATH    (export KUBECONFIG=$KUBECONFIG_PATH; kubectl is $BIN/kubectl)"
say "endpoints:  $STACK_ENV    logs: $LOG/    pod logs: $LOG/pods/"
