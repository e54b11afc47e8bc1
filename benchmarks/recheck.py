"""Rerun the benchmarks that measure what the product does (not how fast it does it) into a
scratch folder, and list every figure that moved against the committed results file.

A results file is a measurement at one commit; the code goes on changing under it. The day
jump (detection/confirm.py, 2026-12-06) raised the confirmed false alarms on NAB's files from
141 to 1,046, and the file that measures them still held the earlier run a day later, because
the change was checked on other figures. Run this before a change that touches detection,
retrieval or calibration lands: a figure that moved is either the change's intended effect
(rerun that benchmark into benchmarks/results and say so) or a regression.

Each benchmark runs as committed (its own arguments, ``SEENBEFORE_RESULTS_TO`` pointing its
``write_results`` at the scratch folder, so nothing under benchmarks/results changes); the
comparison skips provenance and timing (dates, commits, machines, seconds, latencies,
throughputs). It prints; it asserts nothing.

    python benchmarks/recheck.py [--shared ../shared/data] [--only a.json,b.json] [--quick]

``--quick`` skips the three slow ones (``verdict.json``, ``detect_history.json``,
``realtext.json``: the quick run is about eight minutes on two cores, the whole about fifteen).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from provenance import REPO, RESULTS

SLOW = ("verdict.json", "detect_history.json", "realtext.json")
# keys whose values are provenance or timing, never compared (a key containing one of these)
SKIP = (
    "command",
    "commit",
    "machine",
    "date",
    "second",
    "elapsed",
    "wall",
    "latency",
    "throughput",
    "per_s",
    "_ms",
    "ms_",
    "p50",
    "p95",
    "p99",
    "load",
    "fitted_at",
)


def checks(shared: Path) -> dict[str, list[str]]:
    """Results file -> the benchmark command that writes it (as committed)."""
    nab = ["--data", str(shared / "nab" / "data")]
    nab += ["--labels", str(shared / "nab" / "labels" / "combined_windows.json")]
    return {
        "learning_period.json": [
            "benchmarks/learning_period.py",
            *nab,
            "--learning",
            "30,30/30,100,old",
        ],
        "synthetic_families.json": ["benchmarks/synthetic_families.py", "--seeds", "8"],
        "detection.json": ["benchmarks/detection.py", "--seeds", "13"],
        "anomalies.json": ["benchmarks/anomalies.py", "--seeds", "16"],
        "eval_golden.json": ["benchmarks/golden.py"],
        "categories.json": ["benchmarks/categories.py"],
        "selftest.json": ["benchmarks/selftest.py"],
        "alert_lines.json": ["benchmarks/alert_lines.py", "--write"],
        "verdict_probes.json": ["benchmarks/verdict_probes.py", "--shared", str(shared), "--write"],
        "investigate_lsa.json": ["benchmarks/investigate.py", "--embedder", "lsa"],
        "investigate_minilm.json": ["benchmarks/investigate.py", "--embedder", "minilm"],
        "realtext.json": ["benchmarks/realtext.py", "--shared", str(shared), "--dense"],
        "detect_history.json": ["benchmarks/detect_history.py", "--write"],
        "verdict.json": ["benchmarks/verdict.py", "--shared", str(shared), "--write"],
    }


# timing keys too short to find as parts of a name (``at``: when a history entry was written)
EXACT = frozenset({"ms", "s", "took", "at"})


def skipped(key: str) -> bool:
    k = key.lower()
    return k in EXACT or any(s in k for s in SKIP)


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every compared leaf: dict keys and list positions, provenance and
    timing keys left out."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not skipped(str(k)):
                yield from leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def moved(old: Any, new: Any) -> list[str]:
    """Each compared figure that differs, appears or disappears, as ``path: old -> new``."""
    before, after = dict(leaves(old)), dict(leaves(new))
    out = []
    for path in sorted(before.keys() | after.keys()):
        a, b = before.get(path, "(absent)"), after.get(path, "(absent)")
        if not same(a, b):
            out.append(f"{path}: {a} -> {b}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--only", help="comma-separated results files (default: all)")
    parser.add_argument("--quick", action="store_true", help=f"skip {', '.join(SLOW)}")
    parser.add_argument("--show", type=int, default=8, help="moved figures listed per file")
    args = parser.parse_args(argv)
    table = checks(args.shared.resolve())
    names = args.only.split(",") if args.only else list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        parser.error(f"--only {','.join(unknown)}: not a rechecked file; known: {', '.join(table)}")
    if args.quick:
        names = [n for n in names if n not in SLOW]
    summary = []
    with tempfile.TemporaryDirectory(prefix="seenbefore-recheck-") as scratch:
        env = {**os.environ, "SEENBEFORE_RESULTS_TO": scratch}
        for i, name in enumerate(names, 1):
            command = [sys.executable, *table[name]]
            print(f"[{i}/{len(names)}] {' '.join(table[name])}", flush=True)
            start = time.perf_counter()
            run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
            took = time.perf_counter() - start
            fresh = Path(scratch) / name
            if run.returncode != 0 or not fresh.exists():
                tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
                summary.append((name, f"did not run (exit {run.returncode}; {took:.0f} s)", tail))
                continue
            committed = RESULTS / name
            if not committed.exists():
                summary.append((name, f"no committed file to compare ({took:.0f} s)", []))
                continue
            old = json.loads(committed.read_text(encoding="utf-8"))
            diff = moved(old, json.loads(fresh.read_text(encoding="utf-8")))
            said = f"{len(diff)} figures moved" if diff else "the same"
            was = old.get("commit", "?")
            summary.append((name, f"{said} (committed at {str(was)[:9]}; {took:.0f} s)", diff))
    print()
    for name, said, detail in summary:
        print(f"{name}: {said}")
        for line in detail[: args.show]:
            print(f"    {line}")
        if len(detail) > args.show:
            print(f"    ... and {len(detail) - args.show} more")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
