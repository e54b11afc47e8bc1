"""Ingest throughput and sparse (FTS5 BM25) search latency.

    .venv/bin/python benchmarks/ingest.py --scifact ../shared/data/beir/scifact

Corpora: the sample knowledge base in examples/postmortems (ingested with the real Ingestor),
and SciFact abstracts replicated to about 10k and 100k chunks (see corpora.py), each document
parsed, chunked and upserted one transaction at a time. Searches run with the caller holding
only ``general`` (about a third of the corpus visible) and with every tier. Prints tables and
writes benchmarks/results/ingest.json. Figures only: nothing here asserts on time; a search run
stops after ``--budget`` seconds and the table's ``n`` column says how many queries it timed.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from corpora import alert_length, chunk_counts, plan, scifact_markdown, scifact_queries
from provenance import provenance, write_results
from seenbefore.cli.progress import progress_bar
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.retrieval.sparse import sparse_search
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB = ROOT / "examples" / "postmortems"
RESULTS = ROOT / "benchmarks" / "results" / "ingest.json"
FILTERS = {
    "general": SearchFilters(tiers=("general",)),
    "all tiers": SearchFilters(tiers=("general", "restricted", "security")),
}
SAMPLE_REPEATS = 10
SAMPLE_QUERIES = [
    "payments-api db_connections_in_use at 100% of pool, p99 latency 8x baseline, error rate 12%",
    "pods OOMKilled every few hours, container memory keeps growing after each deploy",
    "SERVFAIL from resolvers, services cannot resolve internal hostnames, DNS timeouts",
    "TLS handshake failures right after midnight, clients report expired certificate",
    "HTTP 502 spikes from api-gateway, upstream connection reset by peer on idle connections",
    "orders-db write latency p99 above 2s, disk IOPS at ceiling, burst balance 0",
    "redis failover detected, pricing-service thread pool exhausted, requests timing out",
    "kafka consumer lag growing on order-events, one partition stuck on poison message",
    "webhook deliveries rejected with 401 invalid signature timestamp outside tolerance",
    "node NotReady flapping, disk pressure on boot disk, pods evicted",
    "login error rate 30%, auth-service CPU saturated at 100%, HPA at max replicas",
    "HTTP 429 too many requests from api-gateway after rate limit config change",
]

console = Console()
if not console.is_terminal:
    console.width = 120


def percentiles(ms: list[float]) -> dict[str, float]:
    p50, p95, p99 = np.percentile(np.asarray(ms), [50, 95, 99])
    return {"n": len(ms), "p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99)}


def time_queries(
    store: SQLiteStore, label: str, queries: list[str], budget: float, repeats: int = 1
) -> dict[str, dict[str, Any]]:
    """Latency of ``sparse_search`` per filter, each query ``repeats`` times, after a warm-up.
    Stops early once ``budget`` seconds are spent on one filter (``n`` says how many ran)."""
    out: dict[str, dict[str, Any]] = {}
    runs = [q for _ in range(repeats) for q in queries]
    for name, filters in FILTERS.items():
        sparse_search(store, queries[0], filters, k=10)  # warm the page cache
        ms: list[float] = []
        hits = 0
        with progress_bar(disable=False) as bar:
            task = bar.add_task(f"{label}, {name}", total=len(runs))
            for q in runs:
                start = time.perf_counter()
                hits += len(sparse_search(store, q, filters, k=10).candidates)
                ms.append((time.perf_counter() - start) * 1000)
                bar.advance(task)
                if sum(ms) > budget * 1000:
                    break
        if len(ms) < len(runs):
            console.print(f"[yellow]{label}, {name}: budget spent after {len(ms)}/{len(runs)}")
        out[name] = {**percentiles(ms), "mean_results": hits / len(ms), "planned": len(runs)}
    return out


def db_mb(path: Path) -> float:
    files = [path, path.with_name(path.name + "-wal")]
    return sum(f.stat().st_size for f in files if f.exists()) / 1e6


def throughput(docs: int, chunks: int, seconds: float, path: Path) -> dict[str, Any]:
    return {
        "documents": docs,
        "chunks": chunks,
        "seconds": seconds,
        "docs_per_s": docs / seconds,
        "chunks_per_s": chunks / seconds,
        "db_mb": db_mb(path),
    }


def bench_sample(tmp: Path, budget: float) -> dict[str, Any]:
    """Ingest examples/postmortems with the real Ingestor (3 fresh stores, median time)."""
    runs: list[tuple[float, int, int]] = []
    for i in range(3):
        store = SQLiteStore(tmp / f"sample-{i}.sqlite")
        start = time.perf_counter()
        report = Ingestor(store).ingest([SAMPLE_KB])
        runs.append((time.perf_counter() - start, len(report.added), report.chunks_written))
        if report.quarantined:
            console.print(f"[yellow]sample KB: {len(report.quarantined)} quarantined")
        store.close()
    seconds, docs, chunks = sorted(runs)[1]
    store = SQLiteStore(tmp / "sample-0.sqlite")
    result = {
        "ingest": throughput(docs, chunks, seconds, tmp / "sample-0.sqlite"),
        "search": {
            "alert": time_queries(store, "sample KB", SAMPLE_QUERIES, budget, SAMPLE_REPEATS)
        },
    }
    store.close()
    return result


def ingest_scifact(path: Path, items: Iterable[tuple[str, str]], total: int) -> dict[str, Any]:
    """Parse, chunk and upsert each document; only those steps are timed."""
    store = SQLiteStore(path)
    docs = chunks = 0
    seconds = 0.0
    with progress_bar(disable=False) as bar:
        task = bar.add_task(f"ingest {path.stem}", total=total)
        for source, text in items:
            start = time.perf_counter()
            pm = postmortem_from_markdown(source, text)
            pieces = chunk_postmortem(pm)
            store.upsert(pm, pieces)
            seconds += time.perf_counter() - start
            docs += 1
            chunks += len(pieces)
            bar.advance(task)
    store.close()
    return throughput(docs, chunks, seconds, path)


def bench_scifact(
    path: Path,
    args: argparse.Namespace,
    target: int,
    counts: list[int],
    queries: dict[str, list[str]],
) -> dict[str, Any]:
    copies, n_docs = plan(counts, target)
    ingest = ingest_scifact(path, scifact_markdown(args.scifact, copies, limit=n_docs), n_docs)
    store = SQLiteStore(path)
    search = {
        k: time_queries(store, f"{path.stem} {k}", q, args.budget) for k, q in queries.items()
    }
    store.close()
    return {"copies": copies, "ingest": ingest, "search": search}


def environment() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "loadavg_1m": os.getloadavg()[0],
    }


def tables(results: dict[str, Any]) -> tuple[Table, Table]:
    ingest = Table(title="Ingest throughput")
    search = Table(title="Sparse search latency (FTS5 via sparse_search, k=10)")
    for col in ("corpus", "documents", "chunks", "seconds", "docs/s", "chunks/s", "DB MB"):
        ingest.add_column(col, justify="left" if col == "corpus" else "right")
    for col in ("corpus", "queries", "visible", "n", "p50 ms", "p95 ms", "p99 ms", "results"):
        search.add_column(
            col, justify="left" if col in ("corpus", "queries", "visible") else "right"
        )
    for name, r in results["corpora"].items():
        i = r["ingest"]
        ingest.add_row(
            name,
            *(f"{i[key]:,}" for key in ("documents", "chunks")),
            f"{i['seconds']:.2f}",
            *(f"{i[key]:,.0f}" for key in ("docs_per_s", "chunks_per_s")),
            f"{i['db_mb']:.1f}",
        )
        for kind, by_filter in r["search"].items():
            for visible, t in by_filter.items():
                ms = (f"{t[key]:,.1f}" for key in ("p50_ms", "p95_ms", "p99_ms"))
                n = f"{t['n']}" if t["n"] == t["planned"] else f"{t['n']}/{t['planned']}"
                search.add_row(name, kind, visible, n, *ms, f"{t['mean_results']:.1f}")
    return ingest, search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/beir/scifact")
    parser.add_argument(
        "--sizes", default="10000,100000", help="target chunk counts, comma-separated"
    )
    parser.add_argument("--queries", type=int, default=300, help="cap on SciFact queries")
    parser.add_argument("--budget", type=float, default=120, help="max seconds per search run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results: dict[str, Any] = {
        **provenance("benchmarks/ingest.py", argv),
        "environment": environment(),
        "args": {k: str(v) for k, v in vars(args).items()},
        "corpora": {},
    }
    with tempfile.TemporaryDirectory(prefix="seenbefore-bench-") as tmpdir:
        tmp = Path(tmpdir)
        console.rule("sample KB: examples/postmortems")
        results["corpora"]["sample KB"] = bench_sample(tmp, args.budget)
        if not (args.scifact / "corpus.jsonl").is_file():
            console.print(
                f"[yellow]SciFact not found at {args.scifact}: the shared data is absent, so the "
                "SciFact corpora are skipped. Pass --scifact PATH to the BEIR scifact directory."
            )
        else:
            short = scifact_queries(args.scifact)[: args.queries]
            queries = {"scifact": short, "alert (30 words)": alert_length(short)}
            counts = chunk_counts(args.scifact)
            console.rule(f"SciFact: {len(counts)} docs, {sum(counts)} chunks per copy")
            for target in sizes:
                console.rule(f"SciFact corpus of ~{target:,} chunks")
                name = f"scifact-{target / 1000:g}k"
                results["corpora"][name] = bench_scifact(
                    tmp / f"{name}.sqlite", args, target, counts, queries
                )
    ingest, search = tables(results)
    console.print(ingest, search)
    out = write_results(args.out, results)
    m = results["environment"]
    console.print(f"nproc {m['nproc']}, Python {m['python']}, SQLite {m['sqlite']}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
