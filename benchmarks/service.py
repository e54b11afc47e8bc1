"""Throughput and latency of the HTTP service under bounded concurrent load.

Starts `seenbefore serve` on loopback in a subprocess (a fresh data directory with the sample
knowledge base; rate limit lifted) or targets a running service (--url, --token). N clients
(threads, one HTTP connection each) send a mix of POST /v1/search and POST /v1/investigations
built from the packaged golden-case queries, until --duration seconds or --max-requests have
passed, whichever is first. Prints throughput, p50/p95/p99 per kind and the error count; writes
JSON under benchmarks/results/. Never fails on time.

    python benchmarks/service.py [--clients 16] [--duration 60] [--investigate-share 0.2]
                                 [--embedder minilm|lsa|none] [--url URL --token TOKEN]
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results
from seenbefore.evaluation.cases import load_cases

REPO = Path(__file__).resolve().parents[1]
console = Console()


@dataclass
class Results:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, seconds: float, status: str, ok: bool) -> None:
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds * 1000)
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if not ok:
                self.errors[kind] = self.errors.get(kind, 0) + 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def own_service(embedder: str, startup_timeout_s: float) -> Iterator[tuple[str, str]]:
    """`seenbefore serve` in a subprocess on a free loopback port; yields (url, admin token)."""
    token = "sb_" + secrets.token_urlsafe(32)
    port = _free_port()
    with tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            "SEENBEFORE_HOME": home,
            "SEENBEFORE_EMBEDDER": embedder,
            "SEENBEFORE_ADMIN_TOKEN": token,
            "SEENBEFORE_RATE_LIMIT_PER_MINUTE": str(10**9),
            "HF_HUB_OFFLINE": "1",
        }
        log = Path(home) / "serve.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "seenbefore",
                    "serve",
                    "--sample",
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                ],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + startup_timeout_s
            with console.status(f"starting the service ({embedder}; ingesting the sample KB)"):
                while True:
                    if process.poll() is not None:
                        raise SystemExit(f"the service exited:\n{log.read_text()[-2000:]}")
                    try:
                        if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise SystemExit(f"the service was not ready in {startup_timeout_s:.0f} s")
                    time.sleep(0.5)
            yield url, token
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def client_loop(
    url: str,
    token: str,
    queries: list[str],
    share: float,
    stop_at: float,
    budget: list[int],
    results: Results,
    seed: int,
    timeout_s: float,
) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=timeout_s) as client:
        while time.monotonic() < stop_at:
            with results.lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            query = rng.choice(queries)
            if rng.random() < share:
                kind, path, body = "investigate", "/v1/investigations", {"text": query}
            else:
                kind, path, body = "search", "/v1/search", {"query": query, "k": 5}
            started = time.perf_counter()
            try:
                response = client.post(path, json=body)
                status, ok = str(response.status_code), response.is_success
            except httpx.HTTPError as exc:
                status, ok = type(exc).__name__, False
            results.add(kind, time.perf_counter() - started, status, ok)


def run_load(url: str, token: str, args: argparse.Namespace) -> tuple[Results, float]:
    queries = [c.query for c in load_cases()]
    results = Results()
    budget = [args.max_requests]
    warm = httpx.post(
        f"{url}/v1/search",
        json={"query": queries[0]},
        headers={"Authorization": f"Bearer {token}"},
        timeout=args.timeout,
    )
    if not warm.is_success:
        raise SystemExit(f"warm-up search failed: HTTP {warm.status_code} {warm.text[:300]}")
    started = time.monotonic()
    stop_at = started + args.duration
    threads = [
        threading.Thread(
            target=client_loop,
            args=(
                url,
                token,
                queries,
                args.investigate_share,
                stop_at,
                budget,
                results,
                args.seed + i,
                args.timeout,
            ),
            daemon=True,
        )
        for i in range(args.clients)
    ]
    with console.status(f"{args.clients} clients for {args.duration:.0f} s"):
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=args.duration + args.timeout + 30)
    return results, time.monotonic() - started


def report(results: Results, elapsed: float, args: argparse.Namespace, target: str) -> None:
    table = Table(
        title=f"service load: {args.clients} clients, {elapsed:.1f} s, "
        f"{args.investigate_share:.0%} investigations ({target})"
    )
    for col in ("kind", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors"):
        table.add_column(col, justify="right")
    rows = {}
    every: list[float] = []
    for kind, values in sorted(results.latencies.items()):
        every += values
        rows[kind] = {
            "requests": len(values),
            "throughput_rps": round(len(values) / elapsed, 2),
            **{f"p{q}_ms": round(float(np.percentile(values, q)), 2) for q in (50, 95, 99)},
            "errors": results.errors.get(kind, 0),
        }
    if every:
        rows["all"] = {
            "requests": len(every),
            "throughput_rps": round(len(every) / elapsed, 2),
            **{f"p{q}_ms": round(float(np.percentile(every, q)), 2) for q in (50, 95, 99)},
            "errors": sum(results.errors.values()),
        }
    for kind, row in rows.items():
        table.add_row(kind, *(str(v) for v in row.values()))
    console.print(table)
    console.print(f"statuses: {dict(sorted(results.statuses.items()))}")
    record = {
        **provenance("benchmarks/service.py"),
        "target": target,
        "clients": args.clients,
        "duration_s": round(elapsed, 2),
        "investigate_share": args.investigate_share,
        "embedder": args.embedder if not args.url else None,
        "cpus": os.cpu_count(),
        "kinds": rows,
        "statuses": results.statuses,
    }
    console.print(f"written to {write_results(args.out, record)}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--max-requests", type=int, default=200_000, help="hard cap")
    parser.add_argument("--investigate-share", type=float, default=0.2)
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "lsa", "none"))
    parser.add_argument("--url", help="a running service (else one is started on loopback)")
    parser.add_argument("--token", help="API token (responder or above) for --url")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-request seconds")
    parser.add_argument("--startup-timeout", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/service.json")
    args = parser.parse_args()
    if not 1 <= args.clients <= 256 or args.duration <= 0 or not 0 <= args.investigate_share <= 1:
        parser.error("--clients 1..256, --duration > 0, --investigate-share 0..1")
    if args.url:
        if not args.token:
            parser.error("--url needs --token (a responder token or above)")
        results, elapsed = run_load(args.url.rstrip("/"), args.token, args)
        report(results, elapsed, args, args.url)
        return 0
    with own_service(args.embedder, args.startup_timeout) as (url, token):
        results, elapsed = run_load(url, token, args)
    report(results, elapsed, args, f"seenbefore serve on loopback, {args.embedder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
