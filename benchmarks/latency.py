"""Search latency p50/p95/p99 for sparse, dense and hybrid at 1k, 10k and 100k chunks.

Text is the SciFact corpus replicated (documents re-identified per copy), queried with SciFact's
test queries and 30-word alert-length variants, filtered to the `general` tier (about 1/3 of the
corpus). The dense half uses random unit vectors (384-d, the MiniLM shape): exact search cost does
not depend on their values, and embedding 100k chunks with MiniLM on two CPU cores takes hours.
Query embedding is timed separately with the real MiniLM. Search timings exclude it. FTS5 (the
store's keyword path) is shown beside the in-memory BM25 index. Prints figures; asserts nothing.

``--backend postgres`` also loads each size into PostgreSQL (a throwaway local server unless
``--database-url``; the store logs in as the app role, so row-level security is in force) and
times the knowledge base's in-memory hybrid and sparse search over the PostgreSQL store next to
the SQLite figures (the database itself does not search: PostgreSQL migration 8 removed its full
text and HNSW search, whose latency ``benchmarks/results/latency.json`` of commit 3853933 holds).
For 1M chunks, ingest 100k and copy it inside the database:

    python benchmarks/latency.py --scifact ../shared/data/beir/scifact
    python benchmarks/latency.py --backend postgres --sizes 100000
    python benchmarks/latency.py --backend postgres --pg-only --sizes 1000000 --pg-replicate 10 \
        --queries 30

The bounded run whose figures the results file keeps (``summary``: KnowledgeBase.search p50/p95
per backend, hybrid and sparse, both query sets pooled; a few hundred searches, loopback
PostgreSQL):

    python benchmarks/latency.py --backend postgres --sizes 1000 --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import alert_length, chunk_counts, plan, scifact_markdown, scifact_queries
from ingest import ingest_scifact
from seenbefore.calibration.record import keep_gate
from seenbefore.config import Settings
from seenbefore.core.trust import FusionWeights
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.embedders import MINILM_NAME, normalise
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.types import SearchFilters

REPO = Path(__file__).resolve().parents[1]
FILTER = SearchFilters(tiers=("general",))
console = Console()


class RandomQueries:
    """Stands in for the query embedder so search timings exclude embedding."""

    name, dim = MINILM_NAME, 384

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)

    def embed(self, texts: list[str]) -> Any:
        return normalise(self.rng.standard_normal((len(texts), self.dim)))


def pct(ms: list[float]) -> dict[str, float]:
    return {f"p{q}": round(float(np.percentile(ms, q)), 2) for q in (50, 95, 99)}


def run_size(
    tmp: Path, scifact: Path, target: int, queries: dict[str, list[str]], counts: list[int]
) -> dict[str, Any]:
    copies, docs = plan(counts, target)
    home = tmp / f"{target}"
    ingest_scifact(home / "kb.sqlite", scifact_markdown(scifact, copies, limit=docs), docs)
    kb = KnowledgeBase(Settings(home=home, embedder="none"))
    rows = kb.store.chunk_rows()
    vectors = normalise(np.random.default_rng(0).standard_normal((len(rows.ids), 384)))
    kb.store.replace_vectors(MINILM_NAME, rows.ids.tolist(), vectors)
    keep_gate(kb.store, MINILM_NAME, FusionWeights(0.5, "benchmark"), who="benchmark")
    kb.query_embedder = RandomQueries()  # type: ignore[assignment]
    started = time.perf_counter()
    kb.index()
    out: dict[str, Any] = {
        "chunks": len(rows.ids),
        "index_build_s": round(time.perf_counter() - started, 2),
    }
    pooled: dict[str, list[float]] = {"hybrid": [], "sparse": []}
    for label, texts in queries.items():
        for mode in ("sparse", "dense", "hybrid"):
            ms = []
            for text in texts:
                clock = time.perf_counter()
                kb.search(text, FILTER, SearchOptions(k=10, mode=mode))
                ms.append((time.perf_counter() - clock) * 1000)
            out[f"{label} {mode}"] = pct(ms)
            pooled.get(mode, []).extend(ms)
        ms = []
        for text in texts:
            clock = time.perf_counter()
            kb.store.sparse_search(query_terms(text), FILTER, 10)
            ms.append((time.perf_counter() - clock) * 1000)
        out[f"{label} sparse (FTS5)"] = pct(ms)
    kb.close()
    out["_pooled"] = pooled
    return out


def run_postgres(
    scifact: Path,
    target: int,
    queries: dict[str, list[str]],
    counts: list[int],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The PostgreSQL store at one size: the knowledge base's in-memory search over it."""
    from pgstore import replicate, server_store
    from seenbefore.knowledge.chunking import chunk_postmortem
    from seenbefore.knowledge.validate import postmortem_from_markdown

    factor = max(1, args.pg_replicate)
    copies, docs = plan(counts, target // factor)
    out: dict[str, Any] = {}
    with server_store(args.database_url) as store:
        clock = time.perf_counter()
        for source, text in scifact_markdown(scifact, copies, limit=docs):
            pm = postmortem_from_markdown(source, text)
            store.upsert(pm, chunk_postmortem(pm))
        out["ingest_s"] = round(time.perf_counter() - clock, 1)
        if factor > 1:
            clock = time.perf_counter()
            replicate(store, factor)
            out[f"replicate x{factor} in the database_s"] = round(time.perf_counter() - clock, 1)
        rows = store.chunk_rows()
        out["chunks"] = len(rows.ids)
        vectors = normalise(np.random.default_rng(0).standard_normal((len(rows.ids), 384)))
        clock = time.perf_counter()
        store.replace_vectors(MINILM_NAME, rows.ids.tolist(), vectors)
        out["vectors_s"] = round(time.perf_counter() - clock, 1)
        keep_gate(store, MINILM_NAME, FusionWeights(0.5, "benchmark"), who="benchmark")
        with tempfile.TemporaryDirectory() as home:
            kb = KnowledgeBase(Settings(home=Path(home), embedder="none"), store=store)  # type: ignore[arg-type]
            kb.query_embedder = RandomQueries()  # type: ignore[assignment]
            clock = time.perf_counter()
            kb.index()
            out["in-memory index_build_s"] = round(time.perf_counter() - clock, 2)
            pooled: dict[str, list[float]] = {"hybrid": [], "sparse": []}
            for label, texts in queries.items():
                for mode in ("hybrid", "sparse"):
                    ms = []
                    for text in texts:
                        clock = time.perf_counter()
                        kb.search(text, FILTER, SearchOptions(k=10, mode=mode))
                        ms.append((time.perf_counter() - clock) * 1000)
                    out[f"{label} {mode} (in-memory index)"] = pct(ms)
                    pooled[mode].extend(ms)
            out["_pooled"] = pooled
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, default=REPO.parent / "shared/data/beir/scifact")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/latency.json")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--database-url", help="postgres: this database (default: a local one)")
    parser.add_argument(
        "--pg-replicate",
        type=int,
        default=1,
        metavar="N",
        help="postgres: ingest 1/N of the size, then copy it N times inside the database",
    )
    parser.add_argument("--pg-only", action="store_true", help="skip the SQLite runs")
    args = parser.parse_args()
    if not (args.scifact / "corpus.jsonl").exists():
        console.print(f"[red]SciFact not found at {args.scifact}: the shared data is absent[/]")
        return 2
    real = scifact_queries(args.scifact)[: args.queries]
    queries = {"scifact": real, "alert-30w": alert_length(real)}
    results: dict[str, Any] = {}
    try:
        from seenbefore.retrieval.embedders import MiniLMEmbedder

        model = MiniLMEmbedder()
        model.embed(real[:2])
        ms = []
        for text in real:
            clock = time.perf_counter()
            model.embed([text])
            ms.append((time.perf_counter() - clock) * 1000)
        results["query embedding (MiniLM, 1 query)"] = pct(ms)
    except Exception as exc:  # the benchmark still reports search latency without the model
        results["query embedding (MiniLM, 1 query)"] = {"error": str(exc)}
    counts = chunk_counts(args.scifact)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            if not args.pg_only:
                results[f"{size} chunks"] = run_size(Path(tmp), args.scifact, size, queries, counts)
            if args.backend == "postgres":
                results[f"{size} chunks, postgres"] = run_postgres(
                    args.scifact, size, queries, counts, args
                )
    summary = {}  # KnowledgeBase.search per backend, both query sets pooled
    for corpus, rows in results.items():
        pooled = rows.pop("_pooled", None) if isinstance(rows, dict) else None
        if pooled:
            summary[corpus] = {f"kb.search {mode}": pct(ms) for mode, ms in pooled.items() if ms}
    table = Table(title="search latency, filter keeps ~1/3 (ms; query embedding excluded)")
    for col in ("corpus", "what", "p50", "p95", "p99"):
        table.add_column(col, justify="right")
    for corpus, rows in results.items():
        if "p50" in rows:
            table.add_row("-", corpus, *(str(rows[k]) for k in ("p50", "p95", "p99")))
            continue
        for what, r in rows.items():
            if isinstance(r, dict):
                table.add_row(corpus, what, *(str(r[k]) for k in ("p50", "p95", "p99")))
            else:
                table.add_row(corpus, what, str(r), "", "")
    for corpus, rows in summary.items():
        for what, r in rows.items():
            table.add_row(f"{corpus} (summary)", what, *(str(r[k]) for k in ("p50", "p95", "p99")))
    console.print(table)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "command": "python benchmarks/latency.py " + " ".join(sys.argv[1:]),
        "commit": commit,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "note": "KnowledgeBase.search wall time, query embedding excluded (random query "
        "vectors); other jobs may share the machine",
        "summary": summary,
        "results": results,
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
