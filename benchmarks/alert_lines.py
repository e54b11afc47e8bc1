"""Alert lines as an on-call engineer pastes them: does the failure evidence, not the service and
region the alert names, decide which postmortem comes first? Measures the identity weight
(retrieval/identity.py) on text searches (the text profile, what ``seenbefore search`` runs).

    python benchmarks/alert_lines.py [--seeds 16] [--write]

Cases: the detector's anomalies over simulated telemetry (benchmarks/anomalies.py's cases, the
same seeds), each rendered as the detector prints it (detection/signature.py): ``payments-api
(aws/us-east-1): error_rate 12% (baseline 0.4%), p99_latency 4x baseline (1050 ms), ...``. The
relevant documents are the sample postmortems of the injected incident's type (type Hit@1, MRR),
searched with the default mode and each retriever alone, at each identity weight. Beside them,
the query ``make demo`` features, on the sample KB with and without its ``type:`` lines: its top
result and verdict at identity weight 1 (every word the same) and at the shipped weight.

Caveat: the simulator and the sample postmortems come from the same project; the seven scenarios
give seven distinct alert shapes, each repeated over seeds (the cases are not independent). The
figures say which way the weight moves rankings of alert-style text, not how far it generalises.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from anomalies import load_records
from provenance import RESULTS, provenance, write_results
from seenbefore.config import Settings
from seenbefore.detection.signature import render_signature
from seenbefore.evaluation.anomalies import CAVEAT, cases_from
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.cache import CachingEmbedder
from seenbefore.retrieval.embedders import load_neural_embedder, neural_failure
from seenbefore.retrieval.identity import IDENTITY_WEIGHT
from seenbefore.retrieval.plan import SearchOptions
from seenbefore.types import SearchFilters, anomaly_from_dict

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "postmortems"
WEIGHTS = (1.0, 0.5, 0.25, 0.1, 0.0)
MODES = ("hybrid", "sparse", "dense")
FILTERS = SearchFilters(tiers=("general",))
DEMO_QUERY = (
    "payments-api (aws/us-east-1): db_connections_in_use at 100% of pool, p99 latency 8x "
    "baseline, error rate 12%, CPU normal"
)
console = Console(width=160)


def alert_cases(
    kb: KnowledgeBase, records: Sequence[dict[str, Any]]
) -> list[tuple[str, str, set[str]]]:
    """(kind, rendered alert line, relevant ids) of each detected anomaly with a precedent."""
    out = []
    for record, case in zip(records, cases_from(records, kb), strict=True):
        if not case.case.expect_novel:
            text = render_signature(anomaly_from_dict(dict(record["anomaly"])))
            out.append((case.kind, text, set(case.case.relevant)))
    return out


def measure(kb: KnowledgeBase, cases: list[tuple[str, str, set[str]]]) -> dict[str, Any]:
    """Type Hit@1 and MRR per mode and identity weight, overall and per scenario."""
    out: dict[str, Any] = {}
    for mode in MODES:
        for weight in WEIGHTS:
            hits: dict[str, list[float]] = defaultdict(list)
            reciprocal = []
            for kind, text, relevant in cases:
                options = SearchOptions(k=10, mode=mode, identity_weight=weight)
                ids = [c.doc_id for c in kb.search(text, FILTERS, options).candidates]
                rank = next((i for i, d in enumerate(ids, 1) if d in relevant), None)
                hits[kind].append(float(rank == 1))
                reciprocal.append(1.0 / rank if rank else 0.0)
            n = len(cases)
            out[f"{mode} w={weight:g}"] = {
                "mode": mode,
                "identity_weight": weight,
                "type_hit_at_1": round(sum(sum(v) for v in hits.values()) / n, 4),
                "mrr": round(sum(reciprocal) / n, 4),
                "per_kind": {k: round(sum(v) / len(v), 4) for k, v in sorted(hits.items())},
            }
    return out


def demo(kb: KnowledgeBase) -> dict[str, Any]:
    """The demo's query at weight 1 and at the shipped weight: top result and verdict."""
    types = {d: m.postmortem.type for d, m in kb.store.documents_meta(kb.store.list_ids()).items()}
    out = {}
    for weight in (1.0, IDENTITY_WEIGHT):
        result = kb.search(DEMO_QUERY, FILTERS, SearchOptions(k=5, identity_weight=weight))
        fit = result.confidence_model_fit
        out[f"w={weight:g}"] = {
            "top": [c.doc_id for c in result.candidates],
            "top_types": [types.get(c.doc_id) for c in result.candidates],
            "verdict": result.verdict,
            "p_precedent": result.confidence,
            "lo": fit.lo if fit else None,
            "hi": fit.hi if fit else None,
        }
    return out


def build_kb(home: Path, embeddings: Path, docs: Path = EXAMPLES) -> KnowledgeBase:
    """``docs`` ingested with MiniLM (document vectors cached), as ``seenbefore ingest`` does."""
    neural = load_neural_embedder()
    if neural is None:
        raise SystemExit(f"MiniLM unavailable: {neural_failure()}")
    kb = KnowledgeBase(
        Settings(home=home, embedder="minilm"), embedder=CachingEmbedder(neural, embeddings)
    )
    kb.query_embedder = neural
    kb.ingest([docs])
    return kb


def untyped_copy(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for path in EXAMPLES.glob("*.md"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        (folder / path.name).write_text(
            "".join(ln for ln in lines if not ln.startswith("type:")), encoding="utf-8"
        )
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--write", action="store_true", help="write results/alert_lines.json")
    args = parser.parse_args(argv)
    records = load_records(args.seeds, RESULTS / "cache")
    embeddings = RESULTS / "cache" / "embeddings.sqlite"
    with tempfile.TemporaryDirectory(prefix="seenbefore-alerts-") as scratch:
        root = Path(scratch)
        kb = build_kb(root / "typed", embeddings)
        cases = alert_cases(kb, records)
        console.print(f"{len(cases)} alert lines with a precedent, e.g. {cases[0][1]}")
        console.print(f"[dim]{CAVEAT}[/]")
        figures = measure(kb, cases)
        demos = {"typed": demo(kb)}
        kb.close()
        kb2 = build_kb(root / "untyped", embeddings, docs=untyped_copy(root / "untyped-docs"))
        demos["untyped"] = demo(kb2)
        kb2.close()
    table = Table(title="alert lines -> right incident type first (type Hit@1 / MRR)")
    table.add_column("mode, identity weight")
    table.add_column("Hit@1", justify="right")
    table.add_column("MRR", justify="right")
    kinds = sorted(next(iter(figures.values()))["per_kind"])
    for kind in kinds:
        table.add_column(kind[:12], justify="right")
    for name, row in figures.items():
        table.add_row(
            name,
            f"{row['type_hit_at_1']:.3f}",
            f"{row['mrr']:.3f}",
            *(f"{row['per_kind'][k]:.2f}" for k in kinds),
        )
    console.print(table)
    for name, rows in demos.items():
        for weight, row in rows.items():
            console.print(
                f"demo query, {name} KB, {weight}: {row['verdict']} (p {row['p_precedent']}, "
                f"lo {row['lo']}); top {list(zip(row['top'], row['top_types'], strict=True))[:3]}"
            )
    if args.write:
        record = {
            **provenance("benchmarks/alert_lines.py", argv),
            "caveat": CAVEAT,
            "shipped_identity_weight": IDENTITY_WEIGHT,
            "cases": len(cases),
            "figures": figures,
            "demo_query": DEMO_QUERY,
            "demo": demos,
        }
        console.print(f"wrote {write_results(RESULTS / 'alert_lines.json', record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
