"""Run the installed ``seenbefore`` CLI as a user does, in a fresh SEENBEFORE_HOME with no LLM
(every other SEENBEFORE_* variable removed), and return what its ``--json`` output says.
Used by the benchmarks that keep a CLI run as a results file (selftest.py, detection.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SEENBEFORE = Path(sys.executable).with_name("seenbefore")


def run_cli_json(args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """``seenbefore ARGS`` (ARGS should include --json) from the repository root; returns the
    command line as a user would type it and the parsed output. Exits with the CLI's stderr
    when it fails."""
    if not SEENBEFORE.exists():
        raise SystemExit(f"{SEENBEFORE} not found: install the project (make install) first")
    with tempfile.TemporaryDirectory(prefix="seenbefore-bench-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEENBEFORE_")}
        env["SEENBEFORE_HOME"] = home
        done = subprocess.run(
            [str(SEENBEFORE), *args], cwd=REPO, env=env, capture_output=True, text=True
        )
    if done.returncode != 0:
        raise SystemExit(
            f"seenbefore {' '.join(args)} exited {done.returncode}; its stderr ends:\n"
            f"{done.stderr[-2000:]}"
        )
    command = " ".join(["seenbefore", *args])
    return f"{command} (SEENBEFORE_HOME a fresh directory, no LLM)", dict(json.loads(done.stdout))
