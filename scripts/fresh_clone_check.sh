#!/usr/bin/env bash
# The newcomer's check: clone this checkout into a fresh directory that other users cannot enter
# (mktemp -d is 0700), put ../shared beside it as a read-only data link, and run `make test` there
# with no other step, as a user of a fresh machine: HOME and XDG_CACHE_HOME are new empty folders,
# so nothing an earlier run left in ~/.cache (the MiniLM ONNX export, model or tool caches) can
# hide a missing install step. Only pip's download cache is kept (it holds what PyPI serves). With --without-system-packages (root only), first remove Debian's chromium,
# prometheus-alertmanager and prometheus so `make test` must install them itself.
# Usage: scripts/fresh_clone_check.sh [--without-system-packages] [--keep]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
purge=0 keep=0
for arg in "$@"; do
    case $arg in
        --without-system-packages) purge=1 ;;
        --keep) keep=1 ;;
        *) echo "unknown option '$arg'; expected --without-system-packages or --keep" >&2; exit 2 ;;
    esac
done
work="$(mktemp -d -t seenbefore-fresh-XXXXXX)"
[[ $keep -eq 1 ]] || trap 'rm -rf "$work"' EXIT
chmod 0700 "$work"
if [[ $purge -eq 1 ]]; then
    [[ $(id -u) -eq 0 ]] || { echo "--without-system-packages needs root" >&2; exit 2; }
    echo "== removing chromium, prometheus-alertmanager and prometheus first"
    DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq chromium prometheus-alertmanager prometheus >/dev/null 2>&1 || true
fi
echo "== fresh clone of $here in $work (mode $(stat -c %a "$work"))"
git clone --quiet --no-hardlinks "$here" "$work/seenbefore"
if [[ -d $here/../shared ]]; then
    ln -s "$(cd "$here/../shared" && pwd)" "$work/shared"
fi
# pip's download cache, found before HOME moves (empty when pip has none)
pip_cache="$(python3 -m pip cache dir 2>/dev/null || true)"
export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" XDG_CONFIG_HOME="$work/home/.config"
export XDG_DATA_HOME="$work/home/.local/share"
unset SEENBEFORE_MODEL_CACHE
mkdir -m 0700 "$HOME"
if [[ -n $pip_cache && -d $pip_cache ]]; then export PIP_CACHE_DIR="$pip_cache"; fi
echo "== empty HOME $HOME (pip download cache: ${PIP_CACHE_DIR:-none})"
cd "$work/seenbefore"
echo "== make test (nothing installed first: it sets up .venv and the system packages itself)"
make test
