#!/usr/bin/env bash
# A plain install works: `pip install .` (no extras) into a fresh venv, then the default CLI path
# (ingest the sample KB, search it with --mode sparse) must succeed, none of the extras' packages
# may have been installed, and each optional path (LSA, an LLM, the server, MCP, the Isolation
# Forest detector) must
# exit non-zero with the `pip install 'seenbefore[X]'` hint. tests/test_extras.py checks the same
# inside the suite's venv by blocking the imports; this one proves the packaging itself.
# The install reaches the package index (or the configured local one); the checks do not.
# Installs the committed tree (git archive HEAD) so half-edited files are not what is checked.
# Usage: scripts/plain_install_check.sh [--keep]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
keep=0
for arg in "$@"; do
    case $arg in
        --keep) keep=1 ;;
        *) echo "unknown option '$arg'; expected --keep" >&2; exit 2 ;;
    esac
done
PYTHON="${PYTHON:-python3}"
work="$(mktemp -d -t seenbefore-plain-XXXXXX)"
[[ $keep -eq 1 ]] || trap 'rm -rf "$work"' EXIT
mkdir "$work/src" "$work/home"
if git -C "$here" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$here" archive HEAD | tar -x -C "$work/src"
    echo "== plain install of $(git -C "$here" rev-parse --short HEAD) in $work"
else
    tar -C "$here" --exclude=./.venv --exclude=./build --exclude='*.egg-info' -cf - . \
        | tar -x -C "$work/src"
    echo "== plain install of $here in $work"
fi
"$PYTHON" -m venv "$work/venv"
bin="$work/venv/bin"
"$bin/pip" install --quiet --disable-pip-version-check "$work/src"

echo "== no extra came with it"
"$bin/python" - <<'EOF'
import importlib.util
extras = ["scipy", "sklearn", "openai", "jinja2", "onnxruntime", "sentence_transformers", "torch",
          "fastapi", "uvicorn", "langgraph", "mcp", "psycopg", "ranx", "matplotlib", "hypothesis"]
found = [m for m in extras if importlib.util.find_spec(m) is not None]
if found:
    raise SystemExit(f"a plain install pulled in {found}: move them to an extra in pyproject.toml")
print("none of", " ".join(extras))
EOF

export SEENBEFORE_HOME="$work/home" SEENBEFORE_MODEL_CACHE="$work/models"
unset SEENBEFORE_EMBEDDER SEENBEFORE_LLM_BASE_URL SEENBEFORE_LLM_MODEL SEENBEFORE_DATABASE_URL
cd "$work"
echo "== seenbefore ingest examples/postmortems"
"$bin/seenbefore" ingest "$work/src/examples/postmortems"
echo "== seenbefore search --mode sparse 'expired certificate'"
out="$("$bin/seenbefore" search --mode sparse "expired certificate")"
printf '%s\n' "$out" | head -3
grep -q "INC-2023-020" <<<"$out" || { echo "FAIL: the expired-certificate postmortem is not found" >&2; exit 1; }

failures=0
expect_hint() {  # name extra command...: non-zero exit and the install hint for that extra
    local name=$1 extra=$2 rc=0 said
    shift 2
    said="$("$@" 2>&1 </dev/null)" || rc=$?
    said="$(tr -s ' \n' ' ' <<<"$said")"
    if [[ $rc -ne 0 && $said == *"pip install 'seenbefore[$extra]'"* ]]; then
        echo "ok   $name: exit $rc, ${said:0:300}"
    else
        echo "FAIL $name: exit $rc, expected non-zero and pip install 'seenbefore[$extra]'; got: ${said:0:600}" >&2
        failures=$((failures + 1))
    fi
}
echo "== each optional path names its extra"
expect_hint "LSA (reindex)" lsa env SEENBEFORE_EMBEDDER=lsa "$bin/seenbefore" reindex
expect_hint "LLM (investigate)" llm env SEENBEFORE_LLM_BASE_URL=http://127.0.0.1:9/v1 \
    SEENBEFORE_LLM_MODEL=m "$bin/seenbefore" investigate "expired certificate"
expect_hint "serve" server "$bin/seenbefore" serve --port 9
expect_hint "mcp" server "$bin/seenbefore" mcp
expect_hint "detect (Isolation Forest)" detect "$bin/seenbefore" detect --detector iforest \
    --scenario cpu_saturation --hours 30
if [[ $failures -ne 0 ]]; then
    echo "== plain install check FAILED ($failures)" >&2
    exit 1
fi
echo "== plain install check passed"
