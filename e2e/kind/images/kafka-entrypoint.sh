#!/bin/sh
# The kind image's Kafka: one KRaft node configured from the environment by kafka-config.sh
# (dev/lib/kafka-config.sh --env, the local stack's configuration too; each KAFKA_FOO_BAR=v becomes
# foo.bar=v, an unformatted log directory is formatted on first start), then run.
set -eu
here=$(dirname "$0")
config="$here/kafka-config.sh" # beside this script in the image
[ -f "$config" ] || config="$here/../../../dev/lib/kafka-config.sh" # in the repository
# the configuration goes to KAFKA_CONF_DIR (default /tmp: the root filesystem is the image's)
conf="${KAFKA_CONF_DIR:-/tmp}"
sh "$config" --env "$conf" /opt/kafka
# shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM flags
exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} -XX:+UseG1GC -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$conf/log4j2.properties" -cp "/opt/kafka/lib/*" kafka.Kafka \
  "$conf/server.properties"
