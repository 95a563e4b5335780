#!/usr/bin/env bash
# Install pyspark into .venv and cache the Spark Kafka connector jars (idempotent).
#
# The connector `spark-sql-kafka-0-10_2.13` (same version as pyspark) and its runtime
# dependencies are resolved by Maven from a generated pom and copied, flat, into
# $STREAMSHIFT_CACHE/spark-jars/. Spark sessions load them with `spark.jars`, so nothing is
# downloaded when a job runs.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
SPARK_VERSION="4.3.0"
# Maven Central has no spark-sql-kafka-0-10 4.3.0 (its newest is 4.2.0 while PyPI has pyspark
# 4.3.0); the 4.2.0 connector runs on Spark 4.3.0 (checked by tests/spark). Switch to
# $SPARK_VERSION once Central has it.
CONNECTOR_VERSION="${SPARK_CONNECTOR_VERSION:-4.2.0}"
SCALA="2.13"
CACHE="${STREAMSHIFT_CACHE:-$HOME/.cache/streamshift}"
JARS="$CACHE/spark-jars"
STAMP="$JARS/.complete-$CONNECTOR_VERSION"

if ! "$PY" -c "import pandas, pyspark, sys; sys.exit(pyspark.__version__ != '$SPARK_VERSION')" 2>/dev/null; then
  echo "setup-spark: installing the spark extra: pyspark==$SPARK_VERSION and pandas (about a minute)"
  "$PY" -m pip install -q -e "$ROOT[spark]"
fi

if [[ -f "$STAMP" ]]; then
  echo "setup-spark: connector jars cached in $JARS"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.streamshift</groupId>
  <artifactId>spark-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.spark</groupId>
      <artifactId>spark-sql-kafka-0-10_$SCALA</artifactId>
      <version>$CONNECTOR_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM

echo "setup-spark: resolving spark-sql-kafka-0-10_$SCALA:$CONNECTOR_VERSION with Maven"
mvn -q -B -f "$WORK/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$WORK/jars"

# pyspark already ships Spark itself, Scala, Hadoop client and the logging jars; keep only the
# connector and the jars pyspark lacks, so two copies of a class never meet on the classpath.
SPARK_HOME_JARS="$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
mkdir -p "$JARS"
rm -f "$JARS"/*.jar "$JARS"/.complete-*
for jar in "$WORK"/jars/*.jar; do
  name="$(basename "$jar")"
  artifact="${name%-*.jar}"
  if [[ "$name" == spark-sql-kafka-* || "$name" == spark-token-provider-kafka-* ]] \
    || ! compgen -G "$SPARK_HOME_JARS/$artifact-[0-9]*.jar" >/dev/null; then
    cp "$jar" "$JARS/"
  fi
done
touch "$STAMP"
echo "setup-spark: $(ls "$JARS"/*.jar | wc -l) jars in $JARS"
