#!/bin/sh
# The configuration of a single-node KRaft Kafka (broker and controller in one JVM), the one source
# for the local stack (dev/up.sh, tests/runtime/private_kafka.py) and the kind image
# (e2e/kind/images/kafka-entrypoint.sh): writes server.properties and log4j2.properties into a
# configuration directory and formats the storage the first time.
#
# usage: kafka-config.sh DATA_DIR PORT CONTROLLER_PORT KAFKA_DIR
#          the local stack's node on 127.0.0.1: configuration in DATA_DIR, data in DATA_DIR/logs;
#          the environment is not read (the stack exports KAFKA_PORT and such for itself)
#        kafka-config.sh --env CONF_DIR KAFKA_DIR
#          the settings from the environment: each KAFKA_FOO_BAR=v becomes foo.bar=v (the
#          convention of the Apache Kafka image); KAFKA_LOG_DIRS is required; KAFKA_CLUSTER_ID
#          (the storage's cluster id, random by default), KAFKA_HEAP_OPTS and KAFKA_CONF_DIR are
#          the entrypoint's, not properties
# The settings every single node needs (roles, listener names, replication factors of one) come
# first unless the caller gives them.
set -eu

if [ "${1:-}" = "--env" ]; then
  conf=$2 kafka=$3
  settings=$(env | sed -n 's/^KAFKA_\([A-Z0-9_]*\)=\(.*\)$/\1=\2/p' \
    | grep -vE '^(CLUSTER_ID|HEAP_OPTS|CONF_DIR)=' | while IFS='=' read -r key value; do
    printf '%s=%s\n' "$(echo "$key" | tr 'A-Z_' 'a-z.')" "$value"
  done)
  cluster_id=${KAFKA_CLUSTER_ID:-}
else
  conf=$1 port=$2 cport=$3 kafka=$4
  settings="controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
log.dirs=$conf/logs
num.partitions=1
auto.create.topics.enable=true
offsets.topic.num.partitions=4
transaction.state.log.num.partitions=4
log.retention.hours=24
num.network.threads=2
num.io.threads=2
background.threads=2"
  cluster_id=
fi

mkdir -p "$conf"
{
  for default in process.roles=broker,controller node.id=1 controller.listener.names=CONTROLLER \
    listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT \
    inter.broker.listener.name=PLAINTEXT offsets.topic.replication.factor=1 \
    transaction.state.log.replication.factor=1 transaction.state.log.min.isr=1 \
    share.coordinator.state.topic.replication.factor=1 share.coordinator.state.topic.min.isr=1 \
    group.initial.rebalance.delay.ms=0; do
    printf '%s\n' "$settings" | grep -q "^${default%%=*}=" || printf '%s\n' "$default"
  done
  printf '%s\n' "$settings"
} > "$conf/server.properties"

cat > "$conf/log4j2.properties" <<'PROPS'
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

logdirs=$(sed -n 's/^log\.dirs=//p' "$conf/server.properties")
[ -n "$logdirs" ] || { echo "kafka-config: no log.dirs (set KAFKA_LOG_DIRS)" >&2; exit 2; }
mkdir -p "${logdirs%%,*}" 2>/dev/null || true
[ ! -f "${logdirs%%,*}/meta.properties" ] || exit 0
# A random id as Kafka's own Uuid.randomUuid makes it: 16 bytes, URL-safe base64, no leading dash.
while [ -z "$cluster_id" ] || [ "${cluster_id#-}" != "$cluster_id" ]; do
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
done
java -Dlog4j2.configurationFile="$conf/log4j2.properties" -cp "$kafka/lib/*" kafka.tools.StorageTool \
  format --ignore-formatted --cluster-id="$cluster_id" -c "$conf/server.properties"
