#!/usr/bin/env bash
# The executor branch of the Spark image's /opt/entrypoint.sh, for the process node agent, which
# runs a pod's command (never an image entrypoint) as a local process with the pod's env. Spark
# sets the SPARK_* variables on the executor pod; SPARK_HOME is the venv's pyspark, and the
# executor's scratch space is the pod's working directory (the agent mounts no volumes).
set -euo pipefail
[ "${1:-executor}" = executor ] || { echo "only the executor role runs here, not $1" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${PYSPARK_PYTHON:-$here/.venv/bin/python}"
spark_home="${SPARK_HOME:-$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export SPARK_LOCAL_DIRS="$PWD" SPARK_LOCAL_IP="$SPARK_EXECUTOR_POD_IP" PYSPARK_PYTHON="$python"
mapfile -t java_opts < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
exec java "${java_opts[@]}" -Xms"${SPARK_EXECUTOR_MEMORY:-1g}" -Xmx"${SPARK_EXECUTOR_MEMORY:-1g}" \
  -cp "$spark_home/jars/*" org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
  --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" \
  --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID" \
  --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
  --podName "$SPARK_EXECUTOR_POD_NAME"
