"""SciFact (BEIR) retrieval quality of the project's retrievers, next to published figures.

    .venv/bin/python benchmarks/beir.py --data ../shared/data/beir/scifact

One text per document (title + " " + text, the BEIR convention). Each retriever ranks 100
documents per query; RRF fuses those lists (k=60). The gated row's dense weight is chosen with
``seenbefore.calibration.weights.pick_weight_cv`` on the TRAIN queries (5-fold cross-validation, seed 0,
nDCG@10: chosen on four folds, checked on the fifth) and then scored on the test queries. Metrics
come from ranx. Corpus embeddings are cached under benchmarks/results/cache/. Prints a table and
writes benchmarks/results/beir.json.

Those rows rank BEIR's texts directly. The "KB as served" rows (``--kb``, the default) instead
ingest SciFact into a knowledge base and search it with ``KnowledgeBase.search``: what a user
of seenbefore gets, shipped settings and self-calibrated gate included.

The PostgreSQL store searches with the same in-memory index, so these rows are its quality too.
``--backend postgres`` used to add the database's own search (full text ranked by
``ts_rank_cd``, pgvector HNSW, their RRF); PostgreSQL migration 8 removed that search (nothing
read it; docs/decisions.md), and ``benchmarks/results/beir_postgres.json`` keeps its last run
(commit c831c95).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from provenance import provenance
from seenbefore.calibration.weights import WEIGHT_GRID, pick_weight_cv
from seenbefore.core.fusion import RRF_K, ranked, rrf
from seenbefore.core.trust import FusionWeights
from seenbefore.retrieval.bm25 import BM25Index, phrases
from seenbefore.retrieval.corpus import PHRASE_WEIGHT
from seenbefore.retrieval.embedders import LSAEmbedder, MiniLMEmbedder
from seenbefore.retrieval.tokenize import query_terms

RESULTS = Path(__file__).resolve().parent / "results"
DEPTH = 100  # documents each retriever contributes, and the depth of every evaluated run
METRICS = ("ndcg@10", "recall@100")
LSA_DIM = 128  # Settings.lsa_dim default
BACKENDS = {"sqlite": "the in-memory BM25Index and numpy brute-force dense (every backend's)"}
LANCEDB = 0.716  # LanceDB hybrid on SciFact, measured by peers here
ORIGIN_FUSION = 0.436  # the origin design's TF-IDF+LSA fusion
PUBLISHED: dict[str, tuple[float | None, str]] = {  # configuration: (nDCG@10, source)
    "BM25 unstemmed": (0.665, "BEIR paper (ES)"),
    "BM25 stemmed": (0.679, "Anserini flat"),
    "MiniLM": (0.645, "MTEB"),
    f"LSA-{LSA_DIM}": (None, "-"),
    "RRF equal w=0.5": (LANCEDB, "LanceDB (peers)"),
    "RRF gated": (LANCEDB, "LanceDB (peers)"),
    "BM25 stemmed + word pairs": (0.679, "vs Anserini flat"),
    "KB as served: sparse": (0.665, "BEIR paper (ES)"),
    "KB as served: default hybrid": (LANCEDB, "LanceDB (peers)"),
    "RRF gated, word pairs": (LANCEDB, "LanceDB (peers)"),
}

Qrels = dict[str, dict[str, int]]
Rankings = dict[str, list[str]]  # query id -> document ids, best first
Matrix = npt.NDArray[np.float32]
console = Console()


def load_data(root: Path) -> tuple[list[str], list[str], dict[str, str], Qrels, Qrels]:
    doc_ids, texts = [], []
    with (root / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            doc_ids.append(str(row["_id"]))
            texts.append(f"{row.get('title') or ''} {row.get('text') or ''}".strip())
    with (root / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = {str(r["_id"]): str(r["text"]) for r in map(json.loads, fh)}
    qrels = {split: load_qrels(root / f"qrels/{split}.tsv") for split in ("test", "train")}
    return doc_ids, texts, queries, qrels["test"], qrels["train"]


def load_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    with path.open(encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = [cell.strip() for cell in next(rows)]
        if header != ["query-id", "corpus-id", "score"]:
            raise ValueError(f"{path}: header is {header}, expected query-id corpus-id score")
        for row in rows:
            if row:
                qid, doc, score = (cell.strip() for cell in row)
                qrels.setdefault(qid, {})[doc] = int(score)
    return qrels


def top(scores: npt.NDArray[Any], doc_ids: Sequence[str], *, positive: bool) -> list[str]:
    """The DEPTH best rows (ties by row order); BM25 returns only rows that match a term."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:DEPTH]
    return [doc_ids[i] for i in order if not positive or scores[i] > 0]


def bm25_rankings(
    index: BM25Index, queries: dict[str, str], qids: Sequence[str], doc_ids: Sequence[str]
) -> Rankings:
    return {
        q: top(index.scores(query_terms(queries[q]), None), doc_ids, positive=True) for q in qids
    }


def dense_rankings(
    docs: Matrix, query_vecs: Matrix, qids: Sequence[str], doc_ids: Sequence[str]
) -> Rankings:
    sims = query_vecs @ docs.T
    return {q: top(sims[i], doc_ids, positive=False) for i, q in enumerate(qids)}


@lru_cache(maxsize=1)
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def embed_cached(texts: Sequence[str], what: str, cache: Path) -> Matrix:
    """MiniLM embeddings of ``texts``, cached as .npy keyed by model name + texts."""
    digest = hashlib.sha256(MiniLMEmbedder.name.encode())
    for text in texts:
        digest.update(b"\x1e" + text.encode())
    path = cache / f"{MiniLMEmbedder.name}-{digest.hexdigest()[:20]}.npy"
    if path.exists():
        console.print(f"[dim]{what}: cached embeddings {path.name}[/dim]")
        cached: Matrix = np.load(path).astype(np.float32)
        return cached
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task(f"MiniLM {what}", total=len(texts))
        matrix = minilm().embed(
            texts, progress=lambda done, _: progress.update(task, completed=done)
        )
    cache.mkdir(parents=True, exist_ok=True)
    (cache / ".gitignore").write_text("*\n")
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, matrix)
    tmp.replace(path)
    return matrix


def fuse(sparse: Rankings, dense: Rankings, dense_weight: float, qids: Sequence[str]) -> Rankings:
    weights = FusionWeights(dense_weight, "benchmark").as_dict()
    return {
        q: ranked(rrf({"sparse": sparse[q], "dense": dense[q]}, k=RRF_K, weights=weights))[:DEPTH]
        for q in qids
    }


def evaluate_run(qrels: Qrels, rankings: Rankings, qids: Sequence[str]) -> dict[str, float]:
    """ranx metrics over ``qids``; scores fall with rank so ranx sees exactly our order."""
    from ranx import Qrels as RanxQrels
    from ranx import Run, evaluate

    run = {q: {d: float(DEPTH - i) for i, d in enumerate(rankings[q])} for q in qids}
    run = {q: docs for q, docs in run.items() if docs}  # ranx scores a missing query as 0
    result = evaluate(
        RanxQrels.from_dict({q: qrels[q] for q in qids}),
        Run.from_dict(run),
        list(METRICS),
        make_comparable=True,
    )
    return {m: float(result[m]) for m in METRICS}


def timed(label: str, timings: dict[str, float], fn: Callable[[], Any]) -> Any:
    clock = time.perf_counter()
    with console.status(label):
        out = fn()
    timings[label] = round(time.perf_counter() - clock, 2)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")  # ranx/numba
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/beir/scifact"))
    parser.add_argument("--backend", default="sqlite", help=f"one of: {', '.join(BACKENDS)}")
    parser.add_argument("--limit-queries", type=int, metavar="N", help="first N test/train queries")
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache")
    parser.add_argument("--out", type=Path, default=RESULTS / "beir.json")
    parser.add_argument(
        "--kb",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also SciFact ingested into a knowledge base and searched as served (embeds every "
        "chunk with MiniLM once: about 10 minutes on 2 cores; cached in --kb-cache)",
    )
    parser.add_argument(
        "--kb-cache",
        type=Path,
        default=RESULTS / "cache" / "kb-chunks.sqlite",
        help="SQLite cache of the KB rows' chunk and query embeddings",
    )
    args = parser.parse_args(argv)
    if args.backend not in BACKENDS:
        console.print(
            f"[red]--backend is {args.backend!r}, expected one of: {', '.join(BACKENDS)} (the"
            " PostgreSQL store searches the same in-memory index; its in-database search was"
            " removed, see the module doc)[/red]"
        )
        return 2
    needed = ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv"]
    missing = [name for name in needed if not (args.data / name).is_file()]
    if missing:
        console.print(
            f"[yellow]SciFact data not found at {args.data} (missing: "
            f"{', '.join(missing)}); pass --data DIR holding the BEIR SciFact files "
            "(see ../shared/data/README.md). Skipping.[/yellow]"
        )
        return 2
    if args.limit_queries is not None and args.limit_queries < 2:
        console.print(f"[red]--limit-queries is {args.limit_queries}, expected at least 2[/red]")
        return 2

    timings: dict[str, float] = {}
    doc_ids, texts, queries, test_qrels, train_qrels = load_data(args.data)
    test_ids, train_ids = sorted(test_qrels, key=int), sorted(train_qrels, key=int)
    if args.limit_queries:
        test_ids, train_ids = test_ids[: args.limit_queries], train_ids[: args.limit_queries]
    unknown = [q for q in test_ids + train_ids if q not in queries]
    if unknown:
        console.print(f"[red]qrels name queries missing from queries.jsonl: {unknown[:5]}[/red]")
        return 2
    all_ids = test_ids + train_ids
    console.print(
        f"SciFact: {len(doc_ids)} documents, {len(test_ids)} test / "
        f"{len(train_ids)} train queries, backend {args.backend}"
    )

    runs: dict[str, Rankings] = {}
    plain = timed("BM25 unstemmed index", timings, lambda: BM25Index.build(texts, stem=False))
    runs["BM25 unstemmed"] = bm25_rankings(plain, queries, test_ids, doc_ids)
    stemmed = timed("BM25 stemmed index", timings, lambda: BM25Index.build(texts, stem=True))
    sparse = bm25_rankings(stemmed, queries, all_ids, doc_ids)
    runs["BM25 stemmed"] = sparse
    # what the knowledge base ranks documents by: words plus word pairs (retrieval/hybrid.py)
    pair_index = timed(
        "word-pair index",
        timings,
        lambda: BM25Index.build_fields([(t,) for t in texts], (1.0,), stem=True, ngram=2),
    )
    with_pairs = {
        q: top(
            stemmed.scores(query_terms(queries[q]), None)
            + PHRASE_WEIGHT * pair_index.scores(phrases(queries[q], stem=True), None),
            doc_ids,
            positive=True,
        )
        for q in all_ids
    }
    runs["BM25 stemmed + word pairs"] = with_pairs

    clock = time.perf_counter()
    doc_vecs = embed_cached(texts, f"{len(texts)} documents", args.cache)
    query_vecs = embed_cached([queries[q] for q in all_ids], f"{len(all_ids)} queries", args.cache)
    timings["MiniLM embeddings (or cache)"] = round(time.perf_counter() - clock, 2)
    dense = dense_rankings(doc_vecs, query_vecs, all_ids, doc_ids)
    runs["MiniLM"] = dense

    lsa = timed("LSA fit", timings, lambda: LSAEmbedder.fit(texts, dim=LSA_DIM, seed=0))
    lsa_docs, lsa_queries = lsa.embed(texts), lsa.embed([queries[q] for q in test_ids])
    runs[f"LSA-{LSA_DIM}"] = dense_rankings(lsa_docs, lsa_queries, test_ids, doc_ids)
    runs["RRF equal w=0.5"] = fuse(sparse, dense, 0.5, test_ids)

    def score(weight: float, cases: Sequence[str]) -> float:
        return evaluate_run(train_qrels, fuse(sparse, dense, weight, cases), cases)["ndcg@10"]

    gate = timed("gate sweep", timings, lambda: pick_weight_cv(train_ids, score, metric="nDCG@10"))
    runs["RRF gated"] = fuse(sparse, dense, gate.dense, test_ids)

    def score_pairs(weight: float, cases: Sequence[str]) -> float:
        return evaluate_run(train_qrels, fuse(with_pairs, dense, weight, cases), cases)["ndcg@10"]

    gate_pairs = pick_weight_cv(train_ids, score_pairs, metric="nDCG@10")
    runs["RRF gated, word pairs"] = fuse(with_pairs, dense, gate_pairs.dense, test_ids)
    timings["word-pair gate dense weight"] = gate_pairs.dense

    served: dict[str, Any] = {}
    if args.kb:
        kb_rankings, served = kb_runs(args.data, args.kb_cache, queries, test_ids, timings)
        runs.update(kb_rankings)
    rows = [result_row(name, evaluate_run(test_qrels, r, test_ids)) for name, r in runs.items()]
    show(rows, gate, len(test_ids))
    curve = {  # a diagnostic only: the gate never sees test queries
        str(w): round(
            evaluate_run(test_qrels, fuse(sparse, dense, w, test_ids), test_ids)[METRICS[0]], 4
        )
        for w in WEIGHT_GRID
    }
    console.print(
        "Test nDCG@10 by dense weight (diagnostic, not used to choose): "
        + "  ".join(f"{w}: {v:.4f}" for w, v in curve.items())
    )
    gated = next(r["ndcg@10"] for r in rows if r["configuration"] == "RRF gated")
    verdict = "beats" if gated > LANCEDB else "does not beat"
    console.print(
        f"Gated hybrid nDCG@10 {gated:.4f} {verdict} LanceDB's {LANCEDB} ({gated - LANCEDB:+.4f})."
    )
    if args.limit_queries:
        console.print("[yellow]--limit-queries: a subset, not comparable with published figures")

    report = {
        **provenance("benchmarks/beir.py", argv),
        "dataset": "BEIR SciFact",
        "data": str(args.data),
        "backend": args.backend,
        "documents": len(doc_ids),
        "test_queries": len(test_ids),
        "train_queries": {"count": len(train_ids), "folds": 5, "seed": 0},
        "depth": DEPTH,
        "rrf_k": RRF_K,
        "metrics_from": "ranx",
        "results": rows,
        "gate": {"dense_weight": gate.dense, "source": gate.source, "evidence": gate.evidence},
        "gated_beats_lancedb": gated > LANCEDB,
        "test_ndcg@10_by_dense_weight": curve,
        "origin_fusion_ndcg@10": ORIGIN_FUSION,
        "kb_as_served": served,
        "timings_s": timings,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"[dim]wrote {args.out}[/dim]")
    return 0


def kb_runs(
    data: Path, cache: Path, queries: dict[str, str], test_ids: list[str], timings: dict[str, float]
) -> tuple[dict[str, Rankings], dict[str, Any]]:
    """SciFact as a knowledge base serves it, not a simulation of its ranking: every abstract
    ingested as one Markdown postmortem (``corpora.scifact_markdown``: title, one section),
    then ``KnowledgeBase.search`` with the shipped settings -- BM25F over the whole document
    plus word pairs, unstemmed; MiniLM over chunks; the KB's own self-calibrated gate -- over
    every access tier, the top ``DEPTH`` documents per query."""
    import tempfile

    from corpora import scifact_markdown
    from realtext import build_kb  # the dev sets' KB: MiniLM through an embedding cache
    from seenbefore.retrieval.hybrid import SearchOptions
    from seenbefore.types import SearchFilters

    cache.parent.mkdir(parents=True, exist_ok=True)
    everyone = SearchFilters(tiers=("general", "restricted", "security"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for source, text in scifact_markdown(data, 1):
            (folder / Path(source).name).write_text(text, encoding="utf-8")
        clock = time.perf_counter()
        try:
            kb = build_kb(Path(tmp) / "kb", [folder], None, True, cache)
        except SystemExit as exc:  # build_kb's way of saying MiniLM cannot be loaded here
            console.print(f"[yellow]KB rows skipped: {exc}[/]")
            return {}, {"skipped": str(exc)}
        timings["KB ingest + embed + self-calibration"] = round(time.perf_counter() - clock, 2)
        modes = {
            "KB as served: sparse": SearchOptions(k=DEPTH, mode="sparse"),
            "KB as served: default hybrid": SearchOptions(k=DEPTH),
        }
        rankings: dict[str, Rankings] = {}
        clock = time.perf_counter()
        for name, options in modes.items():
            rankings[name] = {
                q: [
                    c.doc_id.split("-", 2)[2]  # sf-<copy>-<BEIR id>
                    for c in kb.search(queries[q], everyone, options).candidates
                ]
                for q in test_ids
            }
        timings["KB searches"] = round(time.perf_counter() - clock, 2)
        served = {"live": kb.live_model_line(), "gate": kb.gate().weights.dense}
        kb.close()
    return rankings, served


def result_row(name: str, metrics: dict[str, float]) -> dict[str, Any]:
    published, source = PUBLISHED[name]
    gap = None if published is None else round(metrics["ndcg@10"] - published, 4)
    return {
        "configuration": name,
        **{m: round(v, 4) for m, v in metrics.items()},
        "published_ndcg@10": published,
        "gap": gap,
        "source": source,
    }


def show(rows: list[dict[str, Any]], gate: FusionWeights, n_queries: int) -> None:
    table = Table(title=f"SciFact test, {n_queries} queries (gap = ours - published nDCG@10)")
    for column in ("configuration", "nDCG@10", "R@100", "published", "gap", "source"):
        table.add_column(
            column, justify="left" if column in ("configuration", "source") else "right"
        )
    for row in rows:
        name = row["configuration"] + (
            f" w={gate.dense}" if row["configuration"] == "RRF gated" else ""
        )
        published = "-" if row["published_ndcg@10"] is None else f"{row['published_ndcg@10']:.3f}"
        gap = "-" if row["gap"] is None else f"{row['gap']:+.4f}"
        table.add_row(
            name, f"{row['ndcg@10']:.4f}", f"{row['recall@100']:.4f}", published, gap, row["source"]
        )
    console.print(table)
    console.print(
        f"RRF rows fuse BM25 stemmed + MiniLM (k={RRF_K}, depth {DEPTH}); "
        f"the origin design's TF-IDF+LSA fusion got {ORIGIN_FUSION}."
    )
    console.print(f"Gate: dense weight {gate.dense}; {gate.source}")


if __name__ == "__main__":
    sys.exit(main())
