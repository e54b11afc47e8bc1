"""Fit the shipped defaults: the trust gate's dense weight per embedder family and the confidence
models, on named data, and write src/seenbefore/retrieval/defaults.json with their provenance.

Data (nothing hand-set):
  * the sample KB (examples/postmortems), self-test cases (query = Detection section, leave-one-out,
    relevant = same incident type; types with one member are no-precedent cases);
  * graphrca_incidents.jsonl (../shared/data/postmortems): query = the incident's postmortem text
    without its root-cause lines, relevant = other incidents of the same category; the categories
    HELD_OUT are kept out of the index, so their incidents are no-precedent cases.
The dense weight is chosen by 5-fold cross-validation over both data sets. Each data set is split
50/50 (seeded, stratified by novelty); confidence models are fitted on the fit halves together and
reported on each held-out half -- except the text-search models a KB too small to calibrate
itself reads (SMALL_KB_KEYS), which benchmarks/small_kb.py --fit fits on small KBs afterwards.

    python benchmarks/fit_defaults.py --shared ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from seenbefore.calibration.labelled import calibration_metrics, fit_confidence, mean_rr
from seenbefore.calibration.runs import CaseRun, run_case
from seenbefore.calibration.selftest import self_test_cases
from seenbefore.calibration.weights import pick_weight_cv
from seenbefore.config import Settings
from seenbefore.evaluation.cases import Case, split
from seenbefore.evaluation.external import category_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.jsonl import FieldMapping
from seenbefore.retrieval.cache import CachingEmbedder
from seenbefore.retrieval.embedders import load_neural_embedder, neural_failure

# the text models a KB too small to calibrate itself reads are benchmarks/small_kb.py --fit's
# (run after this script: it reads the dense weight shipped here)
from small_kb import KEYS as SMALL_KB_KEYS

REPO = Path(__file__).resolve().parents[1]
HELD_OUT = ("Security", "Memory", "Cloud", "CI-CD", "Configuration")
ALL_TIERS = ("general", "restricted", "security")
console = Console(width=200)  # whole figures in a log, not "0.94…"


def build(
    home: Path, embedder: str, paths: list[Path], mapping: str | None, cache: Path
) -> KnowledgeBase:
    explicit = None
    if embedder == "minilm":
        neural = load_neural_embedder()
        if neural is None:
            raise SystemExit(f"MiniLM unavailable: {neural_failure()}")
        explicit = CachingEmbedder(neural, cache)
    kb = KnowledgeBase(Settings(home=home, embedder=embedder), embedder=explicit)  # type: ignore[arg-type]
    if explicit is not None:
        kb.query_embedder = explicit.inner
    kb.ingest(paths, mapping=FieldMapping.parse(mapping) if mapping else None)
    if kb.store.embedder_info() is None:
        kb.reindex()
    return kb


def runs_for(
    kb: KnowledgeBase, cases: list[Case], mode: str, weight: float | None = None
) -> dict[str, CaseRun]:
    return {c.id: run_case(kb, c, mode, tiers=ALL_TIERS, dense_weight=weight) for c in cases}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO / "src/seenbefore/retrieval/defaults.json")
    parser.add_argument("--families", default="minilm,lsa")
    parser.add_argument(
        "--cache", type=Path, default=REPO / "benchmarks/results/cache/embeddings.sqlite"
    )
    args = parser.parse_args()
    graphrca = args.shared / "postmortems" / "graphrca_incidents.jsonl"
    if not graphrca.exists():
        console.print(f"[red]shared data not found: {graphrca}[/]")
        return 2
    defaults: dict[str, Any] = {
        "fusion": {},
        "confidence": {},
        "provenance": {
            "script": "benchmarks/fit_defaults.py",
            "held_out_categories": list(HELD_OUT),
            "data": ["examples/postmortems self-test", "graphrca_incidents.jsonl leave-one-out"],
        },
    }
    table = Table(title="held-out calibration of the shipped defaults")
    for col in ("model", "data", "cases", "hit@1", "ECE", "Brier", "AUROC", "novel P", "novel R"):
        table.add_column(col)
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families.split(","):
            sets = []
            for name, paths, mapping in (
                ("sample-kb", [REPO / "examples/postmortems"], None),
                ("graphrca", [graphrca], "graphrca"),
            ):
                console.print(f"building {name} with {family} ...")
                kb = build(Path(tmp) / f"{family}-{name}", family, paths, mapping, args.cache)
                cases = (
                    self_test_cases(kb.store, ALL_TIERS)
                    if name == "sample-kb"
                    else category_cases(graphrca, held_out=HELD_OUT)
                )
                fit, held = split(cases, seed=0)
                sets.append((name, kb, cases, fit, held))
            name_key = sets[0][1].dense_family()
            runs = {
                n: (runs_for(kb, cases, "sparse"), runs_for(kb, cases, "dense"))
                for n, kb, cases, _, _ in sets
            }
            pairs = [
                (runs[n][0][c.id], runs[n][1][c.id])
                for n, _, cases, _, _ in sets
                for c in cases
                if not c.expect_novel
            ]
            weights = pick_weight_cv(pairs, lambda w, rs: mean_rr(rs, w))
            defaults["fusion"][name_key] = {
                "dense": weights.dense,
                "source": f"shipped default, {weights.source} on the sample KB self-test and graphrca",
                "evidence": dict(weights.evidence),
            }
            console.print(f"{name_key}: dense weight {weights.dense} — {weights.source}")
            # the text models (SMALL_KB_KEYS) are fitted on small KBs, the way a KB fits
            # itself, by small_kb.py; only what they do not cover is fitted here
            per_mode = {f"dense:{name_key}": {n: runs[n][1] for n in runs}}
            hybrid = f"hybrid:{name_key}"
            if weights.dense > 0 and hybrid not in SMALL_KB_KEYS:
                per_mode[hybrid] = {
                    n: runs_for(kb, cases, "hybrid", weights.dense) for n, kb, cases, _, _ in sets
                }
            for key, by_set in per_mode.items():
                fit_runs = [by_set[n][c.id] for n, _, _, fit, _ in sets for c in fit]
                model = fit_confidence(
                    fit_runs,
                    f"shipped default fitted on {len(fit_runs)} cases "
                    "(sample KB self-test + graphrca, fit halves)",
                )
                held_metrics = {
                    n: calibration_metrics(model, [by_set[n][c.id] for c in held])
                    for n, _, _, _, held in sets
                }
                data = model.as_dict()
                data["metrics"] = {"held_out": held_metrics}
                defaults["confidence"][key] = data
                for n, m in held_metrics.items():
                    table.add_row(
                        key,
                        n,
                        str(m["cases"]),
                        str(m["hit_at_1"]),
                        str(m["ece"]),
                        str(m["brier"]),
                        str(m["auroc_precedent_vs_none"]),
                        str(m["novel_precision"]),
                        str(m["novel_recall"]),
                    )
            for _, kb, *_ in sets:
                kb.close()
    console.print(table)
    # what other scripts fitted into the same file (the anomaly profile and its confidence,
    # benchmarks/anomalies.py) is kept as it was
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    for key, value in previous.get("confidence", {}).items():
        defaults["confidence"].setdefault(key, value)
    # and so is what those scripts wrote of where their models came from (small_kb.py's entry)
    for key, value in previous.get("provenance", {}).items():
        defaults["provenance"].setdefault(key, value)
    for key, value in previous.items():
        defaults.setdefault(key, value)
    args.out.write_text(json.dumps(defaults, indent=2, sort_keys=True) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
