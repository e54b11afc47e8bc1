#!/usr/bin/env bash
# The newcomer's check: clone this checkout into a fresh directory that other users cannot enter
# (mktemp -d is 0700), put ../shared beside it as a read-only data link, and run `make test` there
# with no other step. With --without-system-packages (root only), first remove Debian's chromium,
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
cd "$work/seenbefore"
echo "== make test (nothing installed first: it sets up .venv and the system packages itself)"
make test
