"""Offline investigation latency on the sample knowledge base, per stage (p50/p95/p99).

Queries: the packaged golden cases (alert texts and on-call notes). Each investigation runs
retrieval (query embedding included when the gate uses dense), gathers evidence and drafts with
the offline reporter. Model load and index build happen before timing. Prints figures and
writes benchmarks/results/investigate_<embedder>.json (command, commit, machine); never asserts.

    python benchmarks/investigate.py [--embedder minilm|lsa|none]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results
from seenbefore.config import Settings
from seenbefore.evaluation.cases import load_cases
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_text
from seenbefore.investigation.reporter import OfflineReporter
from seenbefore.kb import KnowledgeBase

REPO = Path(__file__).resolve().parents[1]
console = Console()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "lsa", "none"))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, help="default: benchmarks/results/investigate_<embedder>.json"
    )
    args = parser.parse_args(argv)
    cases = load_cases()
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase(Settings(home=Path(tmp), embedder=args.embedder))
        with console.status(f"ingesting the sample KB ({args.embedder})"):
            kb.ingest([REPO / "examples/postmortems"])
        investigator = Investigator(kb, tiers=("general", "restricted", "security"))
        reporter = OfflineReporter()
        investigator.investigate(from_text("warm up the index and the model"))
        stages: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for case in cases:
                clock = time.perf_counter()
                request = from_text(case.query)
                build = (time.perf_counter() - clock) * 1000
                evidence = investigator.investigate(request)
                clock = time.perf_counter()
                reporter.draft(evidence)
                draft = (time.perf_counter() - clock) * 1000
                timings = {**evidence.timings, "query_build_ms": build, "draft_ms": draft}
                timings["end_to_end_ms"] = build + evidence.timings["investigate_ms"] + draft
                for name, value in timings.items():
                    stages.setdefault(name, []).append(value)
        gate = kb.gate().reason
        kb.close()
    table = Table(
        title=f"offline investigations, {len(cases)} golden cases x {args.repeat} ({args.embedder})"
    )
    for col in ("stage", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(col, justify="right")
    rows = {}
    for name, values in stages.items():
        rows[name] = {f"p{q}": round(float(np.percentile(values, q)), 3) for q in (50, 95, 99)}
        table.add_row(name, *(str(v) for v in rows[name].values()))
    console.print(table)
    console.print(f"gate: {gate}")
    record: dict[str, Any] = {
        **provenance("benchmarks/investigate.py", argv),
        "embedder": args.embedder,
        "cases": len(cases),
        "repeat": args.repeat,
        "gate": gate,
        "stages": rows,
    }
    out = args.out or RESULTS / f"investigate_{args.embedder}.json"
    console.print(f"wrote {write_results(out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
