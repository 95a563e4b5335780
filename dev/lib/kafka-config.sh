#!/usr/bin/env bash
# Write the single KRaft broker's configuration (broker and controller in one JVM, 127.0.0.1 only)
# and format its storage the first time. usage: kafka-config.sh DATA_DIR PORT CONTROLLER_PORT KAFKA_DIR
set -euo pipefail
dir="$1" port="$2" cport="$3" kafka="$4"
mkdir -p "$dir/logs"
cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/logs
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=24
num.network.threads=2
num.io.threads=2
background.threads=2
PROPS
cat > "$dir/log4j2.properties" <<PROPS
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
if [ ! -f "$dir/logs/meta.properties" ]; then
  java -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$kafka/lib/*" kafka.tools.StorageTool \
    format --ignore-formatted --cluster-id="$(python3 -c '
import base64, uuid
ids = (base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=") for _ in iter(int, 1))
print(next(i for i in ids if not i.startswith("-")))  # as Kafka'"'"'s own Uuid.randomUuid: no leading dash
')" \
    -c "$dir/server.properties"
fi
