"""What an engineer waits for: `seenbefore search` wall time, process start to exit, and ingest speed,
with MiniLM on ONNX Runtime (the default) beside the sentence-transformers reference path; and
what an agent's client and an orchestrator wait for: a cold `seenbefore mcp` (new home, empty
model cache) until it answers `initialize`, `tools/list` and the first tool call, and a new
`seenbefore serve` until `/healthz` and `/readyz` answer 200.

Each path gets its own knowledge base of the shipped sample postmortems (ingest timed, chunks/s from
the store's own count), then the same queries run as fresh processes (`--mode hybrid`, so the
embedder loads every time, as it does for a person at a shell). Prints figures; asserts nothing.

    python benchmarks/cli_latency.py [--runs 7] [--demo] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "examples" / "postmortems"
RESULTS = ROOT / "benchmarks" / "results" / "cli_latency.json"
CLI = str(Path(sys.executable).with_name("seenbefore"))
MCP_PAUSE_S = 2.0  # a client's model deciding on its first tool call
QUERIES = (
    "TLS handshake failures from clients right after midnight, browsers show expired certificate",
    "p99 latency up, db connections at pool max, threads blocked waiting",
    "pods OOMKilled every few hours, heap keeps growing after each deploy",
)


def user_env(**extra: str) -> dict[str, str]:
    """The environment a person's shell gives the command: this one, without
    PYTHONDONTWRITEBYTECODE (a sandbox setting; without cached bytecode every run recompiles
    seenbefore's modules, about 0.15 s a command that a user does not pay)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def python_floor(runs: int) -> float:
    """The same interpreter doing nothing (``python -c pass``): the floor every command stands on."""
    walls = [timed([sys.executable, "-c", "pass"], user_env())[0] for _ in range(runs)]
    return round(statistics.median(walls), 3)


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - started, done.stdout


def chunk_count(home: Path) -> int:
    with sqlite3.connect(home / "kb.sqlite") as conn:
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


def measure(runtime: str, runs: int, scratch: Path) -> dict[str, Any]:
    home = scratch / runtime
    env = user_env(SEENBEFORE_HOME=str(home), SEENBEFORE_EMBEDDER_RUNTIME=runtime)
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


def _rpc(method: str, request_id: int | None, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


def mcp_start(home: Path, models: Path | None, pause_s: float = 0.0) -> dict[str, Any]:
    """One new `seenbefore mcp` (handshake-era client, as the MCP Inspector and Claude Desktop
    speak): seconds from process start to each answer, and how long the first tool call itself
    waited (``first_call_wait_s``, from sending it). ``models``: a model cache of its own (empty:
    the first call exports MiniLM), or None for the user's (exported by `make install`).
    ``pause_s``: the client waits this long after ``tools/list`` before its first call, as an
    agent's client does while its model decides (0: back to back, the worst case)."""
    env = user_env(SEENBEFORE_HOME=str(home))
    if models is not None:
        env["SEENBEFORE_MODEL_CACHE"] = str(models)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [CLI, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    marks: dict[str, float] = {}
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "1"},
    }
    steps = [
        ("initialize_s", _rpc("initialize", 1, init) + _rpc("notifications/initialized", None)),
        ("tools_list_s", _rpc("tools/list", 2)),
        (
            "first_call_s",
            _rpc(
                "tools/call",
                3,
                {"name": "find_similar_incidents", "arguments": {"query": QUERIES[0]}},
            ),
        ),
    ]
    for name, text in steps:
        if name == "first_call_s" and pause_s:
            time.sleep(pause_s)
        sent = time.perf_counter()
        proc.stdin.write(text)
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        if "error" in answer:
            raise SystemExit(f"mcp {name}: {answer['error']}")
        marks[name] = round(time.perf_counter() - started, 3)
    marks["first_call_wait_s"] = round(time.perf_counter() - sent, 3)
    marks["pause_s"] = pause_s
    proc.stdin.close()
    proc.wait(60)
    if models is not None:
        marks["model_exported_on_first_call"] = any(models.glob("*.onnx"))
    marks["first_call_results"] = len(answer["result"]["structuredContent"].get("results", []))
    return marks


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_start(scratch: Path, sample: bool) -> dict[str, Any]:
    """A new `seenbefore serve` (fresh home): seconds until /healthz and /readyz answer 200."""
    port = _free_port()
    env = user_env(SEENBEFORE_HOME=str(scratch / f"serve-{sample}"))
    env["SEENBEFORE_ADMIN_TOKEN"] = "sb_" + "B" * 43
    args = [CLI, "serve", "--port", str(port), "--log-level", "warning"] + (
        ["--sample"] if sample else []
    )
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marks: dict[str, Any] = {"sample": sample}
    try:
        for path, key in (("/healthz", "healthz_s"), ("/readyz", "readyz_s")):
            while key not in marks:
                if proc.poll() is not None or time.perf_counter() - started > 600:
                    raise SystemExit(f"serve exited or never answered {path}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                        if r.status == 200:
                            marks[key] = round(time.perf_counter() - started, 3)
                except (urllib.error.URLError, OSError):
                    time.sleep(0.02)
    finally:
        proc.terminate()
        proc.wait(30)
    return marks


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
        console.print("[bold]mcp[/]: 3 cold starts (new home, empty model cache)")
        mcp_runs = [
            mcp_start(Path(scratch) / f"mcp-home-{run}", Path(scratch) / f"mcp-models-{run}")
            for run in range(3)
        ]
        console.print("[bold]mcp[/]: 3 starts on the sample KB, MiniLM already exported")
        mcp_warm_runs = [mcp_start(Path(scratch) / "onnx", None) for _ in range(3)]
        console.print(f"[bold]mcp[/]: the same, first call {MCP_PAUSE_S:.0f} s after tools/list")
        mcp_paused_runs = [
            mcp_start(Path(scratch) / "onnx", None, pause_s=MCP_PAUSE_S) for _ in range(3)
        ]
        console.print("[bold]serve[/]: a new home, empty and with --sample")
        serve_runs = [serve_start(Path(scratch), sample) for sample in (False, True)]
    mcp = {
        key: round(statistics.median(r[key] for r in mcp_runs), 3)
        for key in ("initialize_s", "tools_list_s", "first_call_s")
    }
    mcp["runs"] = mcp_runs
    mcp_warm = {
        key: round(statistics.median(r[key] for r in mcp_warm_runs), 3)
        for key in ("initialize_s", "tools_list_s", "first_call_s")
    }
    mcp_warm["runs"] = mcp_warm_runs
    mcp_paused = {
        "first_call_wait_s": round(
            statistics.median(r["first_call_wait_s"] for r in mcp_paused_runs), 3
        ),
        "pause_s": MCP_PAUSE_S,
        "runs": mcp_paused_runs,
    }
    mcp_warm["first_call_wait_s"] = round(
        statistics.median(r["first_call_wait_s"] for r in mcp_warm_runs), 3
    )
    floor = python_floor(args.runs)
    mcp_table = Table(title="new `seenbefore mcp`: seconds from process start to the answer (p50)")
    for column in ("start", "initialize", "tools/list", "first tool call"):
        mcp_table.add_column(column, justify="right")
    keys = ("initialize_s", "tools_list_s", "first_call_s")
    mcp_table.add_row("cold: empty KB, exports MiniLM", *(f"{mcp[k]:.2f}" for k in keys))
    mcp_table.add_row("sample KB, MiniLM exported", *(f"{mcp_warm[k]:.2f}" for k in keys))
    mcp_table.add_row(
        f"the same, call {MCP_PAUSE_S:.0f} s after tools/list",
        "",
        "",
        f"{mcp_paused['first_call_wait_s']:.2f} (from sending it)",
    )
    mcp_table.add_row("python -c pass", f"{floor:.2f}", "", "")
    console.print(mcp_table)
    serve_table = Table(title="new `seenbefore serve`: seconds from process start")
    for column in ("store", "/healthz 200", "/readyz 200"):
        serve_table.add_column(column, justify="right")
    for run in serve_runs:
        serve_table.add_row(
            "--sample" if run["sample"] else "empty",
            f"{run['healthz_s']:.2f}",
            f"{run['readyz_s']:.2f}",
        )
    serve_table.add_row("python -c pass", f"{floor:.2f}", f"{floor:.2f}")
    console.print(serve_table)
    demo_s = None
    if args.demo:
        console.print("[bold]demo[/]: scripts/demo.sh in a scratch SEENBEFORE_HOME")
        with tempfile.TemporaryDirectory(prefix="seenbefore-demo-") as home:
            env = user_env(SEENBEFORE_HOME=home)
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
    table.add_row("python -c pass", f"{floor:.2f}", "", "", "")
    console.print(table)
    if args.write:
        record = {
            **provenance("benchmarks/cli_latency.py"),
            "note": "wall time from process start; other jobs may share the machine. Children run "
            "without PYTHONDONTWRITEBYTECODE (as from a user's shell), so bytecode is cached.",
            "python_pass_s": floor,
            "results": rows,
            "mcp_cold": mcp,
            "mcp_exported": mcp_warm,
            "mcp_exported_call_after_pause": mcp_paused,
            "serve_start": serve_runs,
            "demo_s": round(demo_s, 1) if demo_s is not None else None,
        }
        console.print(f"wrote {write_results(RESULTS, record)}")


if __name__ == "__main__":
    main()
