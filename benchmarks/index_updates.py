"""What a write costs the search index, at 100k chunks, on SQLite and PostgreSQL (issue 26).

For each backend: SciFact abstracts replicated to ``--chunks`` chunks are loaded one document
per transaction (the load time is the store's write cost as the corpus grows), each chunk gets a
random 384-d unit vector (the MiniLM shape; cost does not depend on the values), and the
knowledge base builds its index from every row: the **full rebuild** every write used to cost
every replica. Then ``--writes`` single-document writes (new documents, new versions of stored
ones, deletions, in a fixed random mix) each time, one after the other:

- the store's write (``upsert`` or ``delete``): the **write cost per document**;
- the next search's **incremental update** (``changes_since`` + reading the changed rows +
  appending and tombstoning), counted so the JSON shows no write rebuilt the index;
- that first search (hybrid, k=10, filter keeps ~1/3; it also refills the dense filter cache).

Then search latency on the updated index (``KnowledgeBase.search`` hybrid and sparse over
SciFact's test queries) and what a compaction of that index costs (it runs in the background
once tombstones pass 20% of the rows). On PostgreSQL, while the store still has its in-database
search (full text ``keyword_hits`` and pgvector HNSW), the in-database hybrid is timed beside
the in-memory one, so one run before and one after removing it give the write cost and search
latency with and without that machinery.

Prints a table and writes JSON with the command that made it; asserts nothing. Every timed loop
stops after ``--budget`` seconds (the JSON's ``n`` says how many ran); the PostgreSQL server is
a throwaway local one (tests/pg.py) unless ``--database-url``.

    python benchmarks/index_updates.py --chunks 100000 --writes 40 --queries 50
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import chunk_counts, load_corpus, markdown, plan, scifact_markdown, scifact_queries
from provenance import RESULTS, provenance, write_results
from seenbefore.calibration.record import keep_gate
from seenbefore.config import Settings
from seenbefore.core.trust import FusionWeights
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.retrieval import updates
from seenbefore.retrieval.embedders import MINILM_NAME, normalise
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.ports import Store
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters

REPO = Path(__file__).resolve().parents[1]
FILTER = SearchFilters(tiers=("general",))
DIM = 384
MIX = (("add", 0.5), ("update", 0.3), ("delete", 0.2))
console = Console()
if not console.is_terminal:
    console.width = 130


class RandomQueries:
    """Stands in for the query embedder, so timings exclude embedding."""

    name, dim = MINILM_NAME, DIM

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)

    def embed(self, texts: list[str]) -> Any:
        return normalise(self.rng.standard_normal((len(texts), self.dim)))


def pct(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"n": 0}
    p50, p95 = np.percentile(ms, [50, 95])
    return {"n": len(ms), "p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2)}


def vectors(rng: np.random.Generator, n: int) -> EmbeddedVectors:
    return EmbeddedVectors(MINILM_NAME, normalise(rng.standard_normal((n, DIM))))


def load(
    store: Store, items: Iterator[tuple[str, str]], rng: np.random.Generator
) -> dict[str, Any]:
    """One document per transaction, as ingest writes them (vectors come after, in one go)."""
    docs = chunks = 0
    clock = time.perf_counter()
    for source, text in items:
        pm = postmortem_from_markdown(source, text)
        pieces = chunk_postmortem(pm)
        store.upsert(pm, pieces)
        docs += 1
        chunks += len(pieces)
        if docs % 2000 == 0:
            console.print(f"  loaded {docs} documents, {chunks} chunks")
    seconds = time.perf_counter() - clock
    rows = store.chunk_rows()
    clock = time.perf_counter()
    matrix = normalise(rng.standard_normal((len(rows.ids), DIM)))
    store.replace_vectors(MINILM_NAME, rows.ids.tolist(), matrix)
    return {
        "documents": docs,
        "chunks": len(rows.ids),
        "load_s": round(seconds, 1),
        "load_ms_per_document": round(seconds * 1000 / max(docs, 1), 2),
        "vectors_s": round(time.perf_counter() - clock, 1),
    }


def writes(
    kb: KnowledgeBase, args: argparse.Namespace, stored: list[str], queries: list[str]
) -> dict[str, Any]:
    """``--writes`` single-document writes, each followed by the search that applies it."""
    kinds, rng = random.Random(7), random.Random(8)  # one for the mix, one for the picks
    vec = np.random.default_rng(3)
    corpus = load_corpus(args.scifact)
    by_op: dict[str, list[float]] = {op: [] for op, _ in MIX}
    update_ms: list[float] = []
    search_ms: list[float] = []
    budget = time.perf_counter() + args.budget
    for n in range(args.writes):
        if time.perf_counter() > budget:
            break
        op = kinds.choices([o for o, _ in MIX], [w for _, w in MIX])[0]
        sid, title, text = corpus[rng.randrange(len(corpus))]
        clock = time.perf_counter()
        if op == "delete":
            kb.store.delete(stored.pop(rng.randrange(len(stored))))
        else:
            doc_id = f"new-{n}-{sid}" if op == "add" else rng.choice(stored)
            pm = postmortem_from_markdown(f"{doc_id}.md", markdown(doc_id, title, text))
            pieces = chunk_postmortem(pm)
            kb.store.upsert(pm, pieces, vectors(vec, len(pieces)))
            if op == "add":
                stored.append(doc_id)
        by_op[op].append((time.perf_counter() - clock) * 1000)
        clock = time.perf_counter()
        kb.index()
        update_ms.append((time.perf_counter() - clock) * 1000)
        clock = time.perf_counter()
        kb.search(queries[n % len(queries)], FILTER, SearchOptions(k=10, mode="hybrid"))
        search_ms.append((time.perf_counter() - clock) * 1000)
    every = [ms for values in by_op.values() for ms in values]
    return {
        "writes": len(update_ms),
        "store_write": pct(every),
        **{f"store_write ({op})": pct(ms) for op, ms in by_op.items()},
        "index_update": pct(update_ms),
        "first_search_after_write": pct(search_ms),
    }


def timed(fn: Callable[[str], object], texts: list[str], budget: float) -> dict[str, float]:
    ms: list[float] = []
    stop = time.perf_counter() + budget
    for text in texts:
        clock = time.perf_counter()
        fn(text)
        ms.append((time.perf_counter() - clock) * 1000)
        if time.perf_counter() > stop:
            break
    return pct(ms)


def run(store: Store, home: Path, args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    counts = chunk_counts(args.scifact)
    copies, n_docs = plan(counts, args.chunks)
    out = load(
        store, scifact_markdown(args.scifact, copies, limit=n_docs), np.random.default_rng(0)
    )
    console.print(f"  loaded: {out}")
    keep_gate(store, MINILM_NAME, FusionWeights(0.5, "benchmark"), who="benchmark")
    kb = KnowledgeBase(Settings(home=home, embedder="none"), store=store)
    kb.query_embedder = RandomQueries()  # type: ignore[assignment]
    clock = time.perf_counter()
    kb.index()
    out["full_rebuild_s"] = round(time.perf_counter() - clock, 2)
    console.print(f"  full rebuild: {out['full_rebuild_s']} s")
    for text in queries[:3]:  # warm the filter caches
        kb.search(text, FILTER, SearchOptions(k=10, mode="hybrid"))
    stored = store.list_ids()
    out.update(writes(kb, args, stored, queries))
    out["rebuilds_during_writes"] = kb.index_rebuilds - 1
    out["incremental_updates"] = kb.index_updates
    out["tombstoned_share"] = round(kb.index().tombstoned_share, 4)
    for mode in ("hybrid", "sparse"):
        out[f"search {mode} (in-memory index)"] = timed(
            lambda t, m=mode: kb.search(t, FILTER, SearchOptions(k=10, mode=m)),  # type: ignore[misc]
            queries,
            args.budget,
        )
    clock = time.perf_counter()
    updates.compacted(kb.index())
    out["compaction_s"] = round(time.perf_counter() - clock, 2)
    if hasattr(store, "dense_search"):  # the in-database search, while the store has it
        from pgstore import hybrid

        rng = np.random.default_rng(4)

        def in_database(text: str) -> object:
            vector = normalise(rng.standard_normal((1, DIM)))[0]
            return hybrid(store, query_terms(text), vector, FILTER, k=10, depth=100)  # type: ignore[arg-type]

        out["search hybrid (in database: full text + HNSW)"] = timed(
            in_database, queries, args.budget
        )
    kb.wait_for_compaction()
    return out


@contextmanager
def postgres(url: str | None) -> Iterator[Store]:
    from pgstore import server_store

    with server_store(url) as store:
        yield store  # type: ignore[misc]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, default=REPO.parent / "shared/data/beir/scifact")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="postgres: this database (default: a local one)")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per timed loop")
    parser.add_argument("--out", type=Path, default=RESULTS / "index_updates.json")
    args = parser.parse_args()
    if not (args.scifact / "corpus.jsonl").exists():
        console.print(f"[red]SciFact not found at {args.scifact}: the shared data is absent[/]")
        return 2
    queries = scifact_queries(args.scifact)[: args.queries]
    record: dict[str, Any] = {
        **provenance("benchmarks/index_updates.py"),
        "note": "wall times on a shared machine; vectors random (embedding excluded); "
        "the filter keeps the general tier, about 1/3 of the corpus",
        "results": {},
    }
    for backend in args.backends.split(","):
        console.print(f"[bold]{backend}[/]")
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            if backend == "sqlite":
                with SQLiteStore(home / "kb.sqlite") as store:
                    record["results"][backend] = run(store, home, args, queries)
            else:
                with postgres(args.database_url) as pg:
                    record["results"][backend] = run(pg, home, args, queries)
        write_results(args.out, record)  # what has run so far, if a later backend fails
    table = Table(title=f"index costs at {args.chunks} chunks (ms unless named)")
    for col in ("backend", "what", "value"):
        table.add_column(col)
    for backend, rows in record["results"].items():
        for what, value in rows.items():
            shown = (
                f"p50 {value['p50_ms']}  p95 {value['p95_ms']}  (n {value['n']})"
                if isinstance(value, dict) and "p50_ms" in value
                else str(value)
            )
            table.add_row(backend, what, shown)
    console.print(table)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
