"""Leave-one-out category retrieval on data we did not write: graphrca_incidents.jsonl.

Query = an incident's postmortem text without its root-cause lines; relevant = the other incidents
with the same cause `category`. Prints precision@1 / @3 per mode: sparse (BM25), dense MiniLM,
dense LSA, equal-weight RRF (MiniLM), and gated (the weights the knowledge base would use).
Writes benchmarks/results/categories.json with the command, commit and machine.

    python benchmarks/categories.py --data ../shared/data/postmortems/graphrca_incidents.jsonl
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results
from seenbefore.calibration.runs import run_case
from seenbefore.config import Settings
from seenbefore.evaluation.external import category_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.jsonl import FieldMapping

REPO = Path(__file__).resolve().parents[1]
TIERS = ("general",)
console = Console()


def precision(rankings: list[list[str]], relevant: list[frozenset[str]], k: int) -> float:
    return sum(
        sum(d in rel for d in r[:k]) / k for r, rel in zip(rankings, relevant, strict=True)
    ) / len(rankings)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=REPO.parent / "shared/data/postmortems/graphrca_incidents.jsonl",
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/categories.json")
    args = parser.parse_args(argv)
    if not args.data.exists():
        console.print(f"[red]{args.data} not found: the shared data is absent; pass --data[/]")
        return 2
    cases = category_cases(args.data)
    counts = Counter(c.tags[1] for c in cases)
    majority = max(counts.values()) / len(cases)
    results: dict[str, dict[str, float]] = {}
    gate = ""
    with tempfile.TemporaryDirectory() as tmp:
        for family in ("minilm", "lsa"):
            kb = KnowledgeBase(Settings(home=Path(tmp) / family, embedder=family))  # type: ignore[arg-type]
            with console.status(f"ingesting graphrca with {family} ..."):
                kb.ingest([args.data], mapping=FieldMapping.parse("graphrca"))
            modes: list[tuple[str, str, float | None]] = [(f"dense ({family})", "dense", None)]
            if family == "minilm":
                gate = kb.gate().reason
                modes = [
                    ("sparse (BM25)", "sparse", None),
                    *modes,
                    ("RRF equal weights (MiniLM)", "hybrid", 0.5),
                    ("gated", "hybrid", None),
                ]
            for name, mode, weight in modes:
                runs = [run_case(kb, c, mode, tiers=TIERS, dense_weight=weight) for c in cases]
                rankings = [r.ranking for r in runs]
                relevant = [c.relevant for c in cases]
                results[name] = {
                    "p@1": precision(rankings, relevant, 1),
                    "p@3": precision(rankings, relevant, 3),
                    "latency_p50_ms": sorted(r.latency_ms for r in runs)[len(runs) // 2],
                }
            kb.close()
    table = Table(
        title=f"graphrca leave-one-out, {len(cases)} queries (majority-class share {majority:.3f})"
    )
    for col in ("mode", "precision@1", "precision@3", "p50 ms"):
        table.add_column(col)
    for name, r in results.items():
        table.add_row(name, f"{r['p@1']:.3f}", f"{r['p@3']:.3f}", f"{r['latency_p50_ms']:.1f}")
    console.print(table)
    console.print(f"gated: {gate}")
    record: dict[str, Any] = {
        **provenance("benchmarks/categories.py", argv),
        "data": str(args.data),
        "queries": len(cases),
        "categories": len(counts),
        "majority_share": majority,
        "gate": gate,
        "modes": results,
    }
    console.print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
