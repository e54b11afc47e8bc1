#!/usr/bin/env bash
# The main job on the embedded default: ingest the sample knowledge base, then ask it questions
# the way an on-call engineer would at 3 a.m.
set -euo pipefail
cd "$(dirname "$0")/.."
SB=".venv/bin/seenbefore"
export SEENBEFORE_HOME="${SEENBEFORE_HOME:-.seenbefore-demo}"

echo "== ingesting examples/postmortems into $SEENBEFORE_HOME"
$SB ingest examples/postmortems --prune
$SB stats

for query in \
  "payments-api: db_connections_in_use at 100% of pool, p99 latency 8x baseline, error rate 12%" \
  "pods OOMKilled every few hours, heap keeps growing after each deploy" \
  "SERVFAIL from resolvers, services cannot look up internal hostnames" \
  "TLS handshake failures from clients right after midnight, browsers show expired certificate"
do
  echo
  echo "== seenbefore search \"$query\""
  $SB search "$query" -k 3
done
