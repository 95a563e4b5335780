#!/usr/bin/env bash
# The Spark image's entrypoint (engine-image/Dockerfile, target spark): the two roles Spark on
# Kubernetes gives its pods, as Spark's own image entrypoint does. A driver pod (cluster mode)
# gets `driver --properties-file ... --class ... APP ARGS` and runs spark-submit in client mode
# bound to the pod's IP; an executor pod gets `executor` and the SPARK_* variables naming its
# driver. Anything else runs as given (e.g. `spark-submit ...` from a submitter pod).
set -euo pipefail
case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client "$@"
    ;;
  executor)
    mapfile -t java_opts < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
    exec java "${java_opts[@]}" -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
      -cp "$SPARK_HOME/jars/*:/opt/streamshift/spark-jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
      --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *) exec "$@" ;;
esac
