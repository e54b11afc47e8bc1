"""What an engineer waits for: `seenbefore search` wall time, process start to exit, and ingest speed,
with MiniLM on ONNX Runtime (the default) beside the sentence-transformers reference path.

Each path gets its own knowledge base of the shipped sample postmortems (ingest timed, chunks/s from
the store's own count), then the same queries run as fresh processes (`--mode hybrid`, so the
embedder loads every time, as it does for a person at a shell). Prints figures; asserts nothing.

    python benchmarks/cli_latency.py [--runs 7] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "examples" / "postmortems"
RESULTS = ROOT / "benchmarks" / "results" / "cli_latency.json"
CLI = str(Path(sys.executable).with_name("seenbefore"))
QUERIES = (
    "TLS handshake failures from clients right after midnight, browsers show expired certificate",
    "p99 latency up, db connections at pool max, threads blocked waiting",
    "pods OOMKilled every few hours, heap keeps growing after each deploy",
)


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - started, done.stdout


def chunk_count(home: Path) -> int:
    with sqlite3.connect(home / "kb.sqlite") as conn:
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


def measure(runtime: str, runs: int, scratch: Path) -> dict[str, Any]:
    home = scratch / runtime
    env = {**os.environ, "SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER_RUNTIME": runtime}
    ingest_s, _ = timed([CLI, "ingest", str(SAMPLES)], env)
    chunks = chunk_count(home)
    walls, dense_weights = [], set()
    for i in range(runs):
        query = QUERIES[i % len(QUERIES)]
        args = [CLI, "search", query, "-k", "3", "--mode", "hybrid", "--json", "--explain"]
        wall, out = timed(args, env)
        walls.append(wall)
        explain = json.loads(out)["explain"]
        if "embed_ms" not in explain.get("timings", {}):
            raise SystemExit(f"{runtime}: the search did not embed the query; nothing to time")
        dense_weights.add(explain.get("weights", {}).get("dense"))
    walls.sort()
    return {
        "runtime": runtime,
        "ingest_s": round(ingest_s, 2),
        "chunks": chunks,
        "ingest_chunks_per_s": round(chunks / ingest_s, 1),
        "search_wall_s": [round(w, 3) for w in walls],
        "search_wall_p50_s": round(statistics.median(walls), 3),
        "search_wall_max_s": round(walls[-1], 3),
        "dense_weights_seen": sorted(w for w in dense_weights if w is not None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="searches per runtime")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    parser.add_argument(
        "--demo", action="store_true", help="also time scripts/demo.sh end to end (make demo)"
    )
    args = parser.parse_args()
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory(prefix="seenbefore-cli-latency-") as scratch:
        for runtime in ("onnx", "torch"):
            console.print(f"[bold]{runtime}[/]: ingest {SAMPLES.name}, then {args.runs} searches")
            rows.append(measure(runtime, args.runs, Path(scratch)))
    demo_s = None
    if args.demo:
        console.print("[bold]demo[/]: scripts/demo.sh in a scratch SEENBEFORE_HOME")
        with tempfile.TemporaryDirectory(prefix="seenbefore-demo-") as home:
            env = {**os.environ, "SEENBEFORE_HOME": home}
            demo_s, _ = timed(["bash", str(ROOT / "scripts" / "demo.sh")], env)
        console.print(f"make demo (after installation): {demo_s:.1f} s")
    table = Table(title="seenbefore CLI wall time (process start to exit), MiniLM hybrid")
    for column in ("runtime", "search p50 s", "search max s", "ingest s", "chunks/s"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            row["runtime"],
            f"{row['search_wall_p50_s']:.2f}",
            f"{row['search_wall_max_s']:.2f}",
            f"{row['ingest_s']:.1f}",
            f"{row['ingest_chunks_per_s']:.1f}",
        )
    console.print(table)
    if args.write:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "command": "python benchmarks/cli_latency.py "
                    f"--runs {args.runs}{' --demo' if args.demo else ''} --write",
                    "commit": commit,
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
                    "note": "wall time from process start to exit; other jobs may share the machine",
                    "results": rows,
                    "demo_s": round(demo_s, 1) if demo_s is not None else None,
                },
                indent=2,
            )
            + "\n"
        )
        console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
