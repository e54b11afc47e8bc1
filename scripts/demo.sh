#!/usr/bin/env bash
# The main job on the embedded default: ingest the sample knowledge base (with MiniLM vectors),
# then ask it what an on-call engineer asks at 3 a.m. -- including one question it has no
# precedent for, which it must say plainly.
set -euo pipefail
cd "$(dirname "$0")/.."
SB=".venv/bin/seenbefore"
export SEENBEFORE_HOME="${SEENBEFORE_HOME:-.seenbefore-demo}"

rm -rf "$SEENBEFORE_HOME"  # a demo starts from nothing
echo "== ingesting examples/postmortems into $SEENBEFORE_HOME (embedding with MiniLM takes a minute)"
$SB ingest examples/postmortems --prune
$SB stats
echo "== live confidence model: $($SB stats --json | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["confidence_model"])')"

echo
echo "== seenbefore detect --scenario all --investigate"
echo "   (48 h of simulated AWS/Azure/GCP telemetry with seven injected incidents; for each"
echo "    anomaly: triage, then a drafted, cited hypothesis -- or a plain 'no precedent')"
$SB detect --scenario all --investigate

ask() {
  echo
  echo "== seenbefore search \"$1\" ${2:-}"
  $SB search "$1" -k 3 ${2:-}
}
ask "payments-api (aws/us-east-1): db_connections_in_use at 100% of pool, p99 latency 8x baseline, error rate 12%, CPU normal" --explain
ask "pods OOMKilled every few hours, heap keeps growing after each deploy"
ask "SERVFAIL from resolvers, services cannot look up internal hostnames"
ask "TLS handshake failures from clients right after midnight, browsers show expired certificate"
ask "nvidia-smi shows Xid 79 on two training nodes, GPU fell off the bus, jobs hang"
