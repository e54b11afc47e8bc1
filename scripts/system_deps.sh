#!/usr/bin/env bash
# The Debian packages `make test` drives for real (not Python packages): headless Chromium for the
# review-queue browser test, Prometheus Alertmanager for the webhook test and Prometheus for the
# live query_range test. Installs the missing
# ones when run as root; otherwise prints the exact command to run and stops, so `make test` never
# fails later with a missing browser. Usage: scripts/system_deps.sh [--check]
set -euo pipefail
declare -A wanted=(
    [/usr/bin/chromium]=chromium
    [/usr/bin/prometheus-alertmanager]=prometheus-alertmanager
    [/usr/bin/prometheus]=prometheus
)
missing=()
for path in "${!wanted[@]}"; do
    [[ -x $path ]] || missing+=("${wanted[$path]}")
done
((${#missing[@]})) || exit 0
IFS=$'\n' missing=($(sort <<<"${missing[*]}")); unset IFS
command=(apt-get install -y -qq --no-install-recommends "${missing[@]}")
if [[ ${1:-} == --check ]]; then
    echo "missing system packages: ${missing[*]}" >&2
    exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
    {
        echo "make test needs Debian packages that are not installed: ${missing[*]}"
        echo "(the browser and Alertmanager integration tests drive them for real)."
        echo "Install them, then run make test again:"
        echo "    sudo apt-get update && sudo ${command[*]}"
    } >&2
    exit 1
fi
echo "== installing system packages for the integration tests: ${missing[*]}"
log=$(mktemp)
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${command[@]}"; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "installing ${missing[*]} failed (above); run: apt-get update && ${command[*]}" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
echo "   installed: ${missing[*]}"
