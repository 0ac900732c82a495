#!/usr/bin/env bash
# make s3proxy: S3Proxy (org.gaul:s3proxy, Apache-2.0), a Java S3 API server, for tests/s3 and
# bench/bench_s3.py: one jar-with-dependencies from Maven Central into the git-ignored
# .kafka-ref/s3proxy-<S3PROXY_VERSION>/ (KAFKA_REF_DIR overrides .kafka-ref). Idempotent.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
S3PROXY_VERSION="${S3PROXY_VERSION:-2.6.0}"
REF="${KAFKA_REF_DIR:-$ROOT/.kafka-ref}"
DIR="$REF/s3proxy-$S3PROXY_VERSION"
JAR="$DIR/s3proxy-$S3PROXY_VERSION-jar-with-dependencies.jar"

log() { printf 's3proxy: %s\n' "$*" >&2; }
die() { printf 's3proxy: ERROR: %s\n' "$*" >&2; exit 1; }
for tool in java mvn; do
  command -v "$tool" >/dev/null || die "'$tool' not found on PATH"
done

if [ -s "$JAR" ]; then
  log "S3Proxy $S3PROXY_VERSION already present ($JAR)"
  exit 0
fi
log "fetching org.gaul:s3proxy:$S3PROXY_VERSION:jar-with-dependencies from Maven Central"
tmp="$DIR/tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
if ! mvn -q -B -Dstyle.color=never dependency:copy \
     -Dartifact="org.gaul:s3proxy:$S3PROXY_VERSION:jar:jar-with-dependencies" \
     -DoutputDirectory="$tmp" >"$DIR/mvn.log" 2>&1; then
  cat "$DIR/mvn.log" >&2; rm -rf "$tmp"; die "maven failed (log above)"
fi
# it must be the server: its main class, runnable on this Java
jar tf "$tmp/$(basename "$JAR")" | grep -qx 'org/gaul/s3proxy/Main.class' \
  || { rm -rf "$tmp"; die "the jar has no org.gaul.s3proxy.Main"; }
mv "$tmp/$(basename "$JAR")" "$JAR"
rm -rf "$tmp"
log "ok: $JAR"
