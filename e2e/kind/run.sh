#!/usr/bin/env bash
# `make e2e-kind`: streamshift end to end on a real kind cluster, as a user would run it.
#   1. podman installed and configured (podman-setup.sh), every image built here (images.sh),
#      the kind node image assembled from locally built Kubernetes binaries (node-image.sh); no
#      image registry is reachable, so nothing is pulled. Go builds are cached by version.
#   2. The cluster (cluster.yaml), the images loaded with `kind load image-archive`.
#   3. Kafka (KRaft) and MinIO (infra.yaml), then the chart with Helm (values.yaml).
#   4. The Nexmark generator as a Spark-on-Kubernetes job in cluster mode (spark-submit from the
#      host's pyspark, driver and executor pods of the spark image) feeding Kafka at a steady rate.
#   5. Nexmark q5 as a StreamQuery; one Migration per protocol with verify: true, the operator pod
#      deleted in the middle of one of them; `kubectl scale` of Nexmark q8 (keyed state; q5 keeps
#      global state and runs on one instance only) from one worker to two.
# Passes only when every Migration Succeeded with verified-exact output and the scale and the
# operator restart completed; its last line is the summary. KEEP_CLUSTER=1 keeps the cluster
# (and a second run reuses it); otherwise the script deletes the cluster it created.
set -euo pipefail

BEGAN=$SECONDS
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../dev/lib/common.sh"
source "$HERE/versions.sh"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/pyproject.toml")"
CLUSTER="${KIND_CLUSTER:-streamshift-e2e}"
NS=e2e
SPARK_NS=streamshift
PROTOCOLS=(unimico parallel-track moving-state state-transfer savepoint-restart)
RESTART_DURING=savepoint-restart   # the Migration whose protocol steps the operator restart interrupts
export KIND_EXPERIMENTAL_PROVIDER=podman

say() { printf 'e2e-kind: %s (%d s)\n' "$*" "$((SECONDS - BEGAN))"; }
die() { printf 'e2e-kind: FAILED: %s\n' "$1" >&2; exit 1; }

# 1. Engine, images, node image, tools.
"$HERE/podman-setup.sh"
command -v go >/dev/null || die "Go is needed to build kind and the Kubernetes binaries (install Go 1.26+)"
"$REPO/dev/setup.sh"            # kube-apiserver, kube-controller-manager, etcd, Kafka, MinIO, kubectl, helm
"$REPO/dev/setup-spark.sh"      # pyspark in .venv (spark-submit) and the Kafka connector jars
"$HERE/images.sh"
NODE_IMAGE="$("$HERE/node-image.sh")"
KIND="$OPT/kind-$KIND_VERSION/kind"
HELM="$BIN/helm"
say "images ready"

# 2. The cluster, with the images loaded.
KUBECONFIG="$(mktemp)"
export KUBECONFIG
created=0
cleanup() {
  local status=$?
  [ -z "${SPARK_PID:-}" ] || kill "$SPARK_PID" 2>/dev/null || true
  if [ "$status" != 0 ] && [ -s "$KUBECONFIG" ]; then
    echo "e2e-kind: state at failure:" >&2
    kubectl get pods -A -o wide >&2 2>/dev/null || true
    kubectl -n "$NS" get streamqueries,migrations >&2 2>/dev/null || true
  fi
  rm -f "$KUBECONFIG"
  if [ "$created" = 1 ] && [ "${KEEP_CLUSTER:-0}" != 1 ]; then
    "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  exit "$status"
}
trap cleanup EXIT
if ! "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  created=1
  "$KIND" create cluster --name "$CLUSTER" --image "$NODE_IMAGE" --config "$HERE/cluster.yaml" --wait 240s
fi
"$KIND" export kubeconfig --name "$CLUSTER" --kubeconfig "$KUBECONFIG"
kubectl() { "$BIN/kubectl" "$@"; }
say "cluster $CLUSTER ready"
archive="$(mktemp --suffix .tar)"
podman save -q -m --format docker-archive -o "$archive" \
  "localhost/streamshift/engine:$VERSION" "localhost/streamshift/spark:$VERSION" \
  "localhost/streamshift/operator:$VERSION" "localhost/streamshift/kafka:$KAFKA_VERSION" \
  "localhost/streamshift/minio:$MINIO_VERSION"
"$KIND" load image-archive --name "$CLUSTER" "$archive"
rm -f "$archive"
say "images loaded"

# 3. Kafka and MinIO (new and empty on every run, also on a kept cluster: q5's verification reads
# its input topics whole), then the chart.
kubectl delete namespace "$NS" "$SPARK_NS" --ignore-not-found --wait --timeout=300s
kubectl delete namespace streamshift-infra --ignore-not-found --wait --timeout=300s
sed -e "s|@KAFKA_VERSION@|$KAFKA_VERSION|" -e "s|@MINIO_VERSION@|$MINIO_VERSION|" "$HERE/infra.yaml" \
  | kubectl apply -f -
kubectl -n streamshift-infra rollout status statefulset/kafka --timeout=300s
kubectl -n streamshift-infra rollout status deployment/minio --timeout=300s
"$HELM" upgrade --install streamshift "$REPO/helm/streamshift" --namespace streamshift-system \
  --create-namespace -f "$HERE/values.yaml" --wait --timeout 300s
say "Kafka, MinIO and the operator running"

# 4. The Nexmark generator on Spark, cluster mode: driver and executor pods in $SPARK_NS.
kubectl create namespace "$SPARK_NS"
kubectl apply -f "$REPO/deploy/spark/rbac.yaml"
api="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
SPARK_HOME="$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
# the command line of streamshift_engine.spark.k8s.submit_command (its pods' CPU requests, image
# jars and settings), smaller JVMs for the kind node
generate=(generate --event-rate 500 --duration 3600 --partitions 4
  --topic-prefix "$NS-" --bootstrap kafka.streamshift-infra.svc:9092 --master "")
mapfile -d '' -t submit < <("$VENV/bin/python" - "$api" "$SPARK_NS" "$SPARK_HOME/bin/spark-submit" \
  "localhost/streamshift/spark:$VERSION" "$CACHE/spark-jars" "${generate[@]}" <<'PY'
import pathlib, sys
from streamshift_engine.spark.k8s import submit_command
api, namespace, spark_submit, image, jars, *generate = sys.argv[1:]
extra = {
    "spark.kubernetes.container.image.pullPolicy": "Never",
    "spark.kubernetes.driver.label.app": "e2e-nexmark",
}
names = sorted(jar.name for jar in pathlib.Path(jars).glob("*.jar"))
argv = submit_command(api, namespace, generate, names, "e2e-nexmark", image, 1, spark_submit,
                      "768m", extra)
sys.stdout.write("".join(f"{arg}\0" for arg in argv))
PY
)
[ "${#submit[@]}" -gt 0 ] || die "no spark-submit command line"
"${submit[@]}" >"$LOG/e2e-kind-spark-submit.log" 2>&1 \
  || { cat "$LOG/e2e-kind-spark-submit.log" >&2; die "spark-submit failed"; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
  local deadline=$((SECONDS + $1)) what="$2"
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out waiting for $what"
    sleep 2
  done
}
executor_running() {
  kubectl -n "$SPARK_NS" get pods -l spark-role=executor \
    -o jsonpath='{.items[*].status.phase}' | grep -qw Running
}
wait_for 300 "the Spark driver pod Running" kubectl -n "$SPARK_NS" wait --for=condition=Ready \
  pod -l spark-role=driver --timeout=5s
wait_for 300 "a Spark executor pod Running" executor_running
driver="$(kubectl -n "$SPARK_NS" get pods -l spark-role=driver -o jsonpath='{.items[0].metadata.name}')"
say "Spark generator running (driver $driver, executors $(kubectl -n "$SPARK_NS" get pods -l spark-role=executor -o name | paste -sd' '))"

# 5. q5, the Migrations, the operator restart, the scale.
kubectl create namespace "$NS"
kubectl -n "$NS" create secret generic control --from-literal=token="$(head -c 24 /dev/urandom | base64)"
kubectl -n "$NS" create secret generic s3 --from-literal=access=streamshift --from-literal=secret=streamshift-secret
kubectl apply -f "$HERE/q5.yaml" -f "$HERE/q8.yaml"
field() { kubectl -n "$NS" get "$1" -o "jsonpath={$2}" 2>/dev/null; }
query_running() { [ "$(field "streamquery/$1" .status.phase)" = Running ] && [ -n "$(field "streamquery/$1" .status.watermark)" ]; }
for query in q5 q8; do
  wait_for 300 "StreamQuery $query Running with a watermark (input from Spark)" query_running "$query"
done
say "q5 and q8 running and emitting"
sleep 15  # steady output before the first migration

operator_pod() {  # the operator pod that is not being deleted
  kubectl -n streamshift-system get pods -l app.kubernetes.io/name=streamshift-operator \
    -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' \
    | awk 'NF == 1 {print $1; exit}'
}
terminal() { case "$(field "migration/$1" .status.phase)" in Succeeded|Failed|RolledBack) return 0 ;; esac; return 1; }
exact=0 restart=failed
for protocol in "${PROTOCOLS[@]}"; do
  name="q5-$protocol"
  kubectl apply -f - <<YAML
apiVersion: streamshift.io/v1alpha1
kind: Migration
metadata: {name: $name, namespace: $NS}
spec:
  queryRef: {name: q5}
  protocol: $protocol
  target: {moveInstances: [0]}
  verify: true
YAML
  if [ "$protocol" = "$RESTART_DURING" ]; then
    # past Preparing: inside the protocol's own steps
    in_flight() { case "$(field "migration/$name" .status.phase)" in ""|Queued|Preparing|Succeeded|Failed|RolledBack) return 1 ;; esac; }
    wait_for 300 "Migration $name under way" in_flight
    old="$(operator_pod)"
    say "deleting the operator pod $old during $name (phase $(field "migration/$name" .status.phase))"
    kubectl -n streamshift-system delete pod "$old" --wait=false
    new_operator() { local p; p="$(operator_pod)"; [ -n "$p" ] && [ "$p" != "$old" ] \
      && kubectl -n streamshift-system wait --for=condition=Ready "pod/$p" --timeout=5s; }
    wait_for 300 "a new operator pod Ready" new_operator
    say "operator pod $(operator_pod) took over"
  fi
  wait_for 900 "Migration $name to finish" terminal "$name"
  phase="$(field "migration/$name" .status.phase)"
  verification="$(field "migration/$name" .status.verification)"
  say "Migration $name: $phase, verification $verification, cost $(field "migration/$name" .status.cost)"
  if [ "$phase" = Succeeded ] && [ "$(field "migration/$name" .status.verification.exact)" = true ]; then
    exact=$((exact + 1))
    [ "$protocol" != "$RESTART_DURING" ] || restart=ok
  else
    say "Migration $name: $(field "migration/$name" .status.message)"
  fi
done

# q8 (keyed state) from one worker to two; q5 keeps global state and stays on one
scale=failed
before="$(kubectl -n "$NS" get migrations -o name | sort)"
kubectl -n "$NS" scale streamquery q8 --replicas=2
rescale_migration() { comm -13 <(echo "$before") <(kubectl -n "$NS" get migrations -o name | sort) | head -1; }
has_rescale() { [ -n "$(rescale_migration)" ]; }
wait_for 120 "the Migration kubectl scale makes" has_rescale
rescale="$(rescale_migration)"
rescale="${rescale#*/}"
wait_for 900 "the rescale Migration $rescale to finish" terminal "$rescale"
scaled() { [ "$(field streamquery/q8 .status.replicas)" = 2 ] && [ "$(field streamquery/q8 .status.phase)" = Running ]; }
if [ "$(field "migration/$rescale" .status.phase)" = Succeeded ] && wait_for 120 "q8 at 2 replicas" scaled; then
  scale=ok
fi
say "kubectl scale q8: Migration $rescale $(field "migration/$rescale" .status.phase), q8 replicas $(field streamquery/q8 .status.replicas)"

spark=failed
driver_phase="$(kubectl -n "$SPARK_NS" get pod "$driver" -o jsonpath='{.status.phase}')"
if [ "$driver_phase" = Running ] && executor_running; then spark=ok; fi
say "Spark driver $driver: $driver_phase"

summary="e2e-kind protocols=$exact/${#PROTOCOLS[@]} exact scale=$scale operator-restart=$restart spark=$spark seconds=$((SECONDS - BEGAN))"
echo "$summary"
[ "$exact" = "${#PROTOCOLS[@]}" ] && [ "$scale" = ok ] && [ "$restart" = ok ] && [ "$spark" = ok ]
