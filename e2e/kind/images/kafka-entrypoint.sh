#!/bin/sh
# One Kafka node in KRaft mode from the environment: each KAFKA_FOO_BAR=v becomes foo.bar=v in
# server.properties (the convention of the Apache Kafka image; set KAFKA_CONTROLLER_QUORUM_VOTERS
# for a static quorum), and an unformatted log directory is formatted on first start with
# KAFKA_CLUSTER_ID (a fixed id by default: one node, a test fixture).
set -eu
# the configuration goes to KAFKA_CONF_DIR (default /tmp: the root filesystem is the image's)
conf="${KAFKA_CONF_DIR:-/tmp}/server.properties" log4j="${KAFKA_CONF_DIR:-/tmp}/log4j2.properties"
env | sed -n 's/^KAFKA_\([A-Z0-9_]*\)=\(.*\)$/\1=\2/p' \
  | grep -vE '^(CLUSTER_ID|HEAP_OPTS|CONF_DIR)=' | while IFS='=' read -r key value; do
  printf '%s=%s\n' "$(echo "$key" | tr 'A-Z_' 'a-z.')" "$value"
done > "$conf"
cat > "$log4j" <<'PROPS'
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.cfg.name = org.apache.kafka.common.config.AbstractConfig
logger.cfg.level = WARN
PROPS
logdirs="$(sed -n 's/^log\.dirs=//p' "$conf")"
[ -n "$logdirs" ] || { echo "kafka-entrypoint: set KAFKA_LOG_DIRS" >&2; exit 2; }
java -Dlog4j2.configurationFile="$log4j" -cp "/opt/kafka/lib/*" kafka.tools.StorageTool format \
  --ignore-formatted --cluster-id="${KAFKA_CLUSTER_ID:-c3RyZWFtc2hpZnQta2luZA}" -c "$conf"
# shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM flags
exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} -XX:+UseG1GC -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$log4j" -cp "/opt/kafka/lib/*" kafka.Kafka "$conf"
