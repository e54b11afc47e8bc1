"""Where a results file came from: the command as run, the git commit, the machine and the date.

Every benchmark that writes JSON under benchmarks/results/ starts its record with
``provenance("benchmarks/x.py", argv)`` and writes it with ``write_results``, so each file the
README quotes says how to make it again (tests/test_readme_figures.py checks the ``command``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def commit() -> str:
    """The checked-out commit, with ``+dirty`` when tracked files differ from it (results
    files aside: one benchmark writing its JSON does not make the next one's code dirty)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)benchmarks/results",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load:.1f} at start"
    )


def provenance(script: str, argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The head of a results record: ``python <script> <args as given>``, commit, machine, date."""
    args = list(sys.argv[1:] if argv is None else argv)
    return {
        "command": " ".join(["python", script, *args]),
        "commit": commit(),
        "machine": machine(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (JSON has no NaN: a metric that is
    undefined, such as AUROC over one class, is written as null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def write_results(path: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` as strict JSON (undefined metrics as null) and return the path. With
    ``SEENBEFORE_RESULTS_TO`` set (benchmarks/recheck.py) the file goes to that folder under its
    own name instead, and the committed one is left as it is."""
    elsewhere = os.environ.get("SEENBEFORE_RESULTS_TO")
    if elsewhere:
        path = Path(elsewhere) / path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(finite(record), indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path
