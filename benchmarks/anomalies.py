"""Anomalies from the detector against the sample knowledge base: does the right incident type
come first, and does confidence tell a precedent from none?

Cases: every scenario of the simulator, once per seed, detected; each matched anomaly is a case
whose relevant documents are the sample postmortems of its type (gpu_fault has none: no-precedent).
Leave-type-out copies (the type hidden) are the no-precedent cases a confidence model needs.

Prints type Hit@1 per retrieval mode (BM25, MiniLM, the structured signals retriever and their
weighted RRF fusions), then chooses the anomaly profile's weights by 5-fold cross-validation
(signals weight with dense off, then dense weight on top, kept only if it gains > 0.01 held out),
fits the anomaly confidence model on even seeds and reports it on odd seeds.
Writes the figures to benchmarks/results/anomalies.json (command, commit, machine, date);
``--write`` stores the profile and the model in src/seenbefore/retrieval/defaults.json.

    python benchmarks/anomalies.py --seeds 16 [--write]

Caveat: the simulator and the sample postmortems come from the same project (see
seenbefore.evaluation.anomalies.CAVEAT).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results
from seenbefore.calibration.labelled import calibration_metrics, fit_confidence
from seenbefore.calibration.runs import CaseRun
from seenbefore.calibration.weights import pick_weight_cv
from seenbefore.config import Settings
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.fusion import ranked, rrf
from seenbefore.evaluation.anomalies import (
    CAVEAT,
    AnomalyCase,
    cases_from,
    leave_type_out,
    run_anomaly,
    signal_ranking,
)
from seenbefore.investigation.investigator import Investigator
from seenbefore.kb import KnowledgeBase
from seenbefore.lab.simulator import anomaly_records
from seenbefore.retrieval.cache import CachingEmbedder
from seenbefore.retrieval.embedders import load_neural_embedder
from verdict_cells import group_shares

REPO = Path(__file__).resolve().parents[1]
TIERS = ("general",)
console = Console(width=150)


def load_records(seeds: int, cache_dir: Path, fresh: bool = False) -> list[dict[str, Any]]:
    cache = cache_dir / f"anomaly_cases_{seeds}.json"
    if cache.exists() and not fresh:
        console.print(f"detected anomalies read from {cache} (--fresh to simulate again)")
        return list(json.loads(cache.read_text()))
    with console.status(f"simulating and detecting {seeds} seeds x 7 scenarios") as status:
        records = anomaly_records(
            range(seeds), progress=lambda d, n: status.update(f"simulated {d}/{n} seeds")
        )
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(records))
    return records


def build_kb(home: Path, embedding_cache: Path) -> KnowledgeBase:
    neural = load_neural_embedder()
    if neural is None:
        kb = KnowledgeBase(Settings(home=home, embedder="none"))
    else:
        cached = CachingEmbedder(neural, embedding_cache)
        kb = KnowledgeBase(Settings(home=home, embedder="minilm"), embedder=cached)
        kb.query_embedder = cached.inner
    kb.ingest([REPO / "examples/postmortems"])
    return kb


def shipped_anomaly_model(defaults: Path) -> ConfidenceModel | None:
    """The anomaly confidence model ``defaults`` (defaults.json) ships, if any."""
    models = json.loads(defaults.read_text()).get("confidence", {})
    key = next((k for k in sorted(models) if k.startswith("anomaly:")), None)
    return ConfidenceModel.from_dict(models[key]) if key else None


def verdict_states(model: ConfidenceModel, runs: Sequence[CaseRun]) -> dict[str, Any]:
    """The verdicts ``model`` gives ``runs`` as a search would (each query shape's thresholds),
    as shares per group: top right, top wrong, no precedent in the KB."""
    return group_shares(
        (
            _group(run.case.expect_novel, bool(run.top_correct)),
            model.for_shape(run.shape).verdict_for(model.predict(run.signals), run.signals),
        )
        for run in runs
    )


def investigator_states(kb: KnowledgeBase, cases: Sequence[AnomalyCase]) -> dict[str, Any]:
    """The verdict of the draft ``detect --investigate`` writes for each case (the Investigator:
    the shipped model, then its own checks), as shares per group like :func:`verdict_states`."""
    told = []
    for c in cases:
        found = Investigator(kb, tiers=TIERS, exclude=c.case.exclude).investigate(c.request)
        right = bool(found.items) and found.items[0].doc_id in c.case.relevant
        told.append((_group(c.case.expect_novel, right), found.verdict))
    return group_shares(told)


def _group(novel: bool, right: bool) -> str:
    """verdict_cells.GROUPS: no precedent in the KB, else whether the top result is one."""
    return "no_precedent" if novel else "top_right" if right else "top_wrong"


def states_line(states: dict[str, Any]) -> str:
    return "; ".join(
        f"{g.replace('_', ' ')} (n {s['n']}) found/possible/none "
        + "/".join(
            "-" if s[k] is None else f"{100 * s[k]:.0f}%" for k in ("found", "possible", "none")
        )
        for g, s in states.items()
    )


def type_hit(ranking: list[str], case: AnomalyCase) -> int:
    return int(bool(ranking) and ranking[0] in case.case.relevant)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--write", action="store_true", help="update the shipped defaults")
    parser.add_argument("--out", type=Path, default=REPO / "src/seenbefore/retrieval/defaults.json")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks/results")
    parser.add_argument(
        "--fresh", action="store_true", help="simulate and detect again, ignoring the cache"
    )
    args = parser.parse_args(argv)
    records = load_records(args.seeds, args.results / "cache", args.fresh)
    with tempfile.TemporaryDirectory() as tmp:
        kb = build_kb(Path(tmp) / "kb", args.results / "cache/embeddings.sqlite")
        cases = cases_from(records, kb)
        precedent = [c for c in cases if not c.case.expect_novel]
        console.print(
            f"{len(cases)} anomaly cases from {args.seeds} seeds ({len(precedent)} with a "
            f"precedent); embedder {kb.dense_family()}. [dim]{CAVEAT}[/]"
        )
        with console.status("ranking each case with each retriever"):
            runs = {
                c.case.id: {
                    # each retriever alone as the anomaly profile runs it (BM25 by best
                    # chunk, evaluation/anomalies.run_anomaly), then fused offline below
                    "sparse": run_anomaly(kb, c, tiers=TIERS, mode="sparse", k=100).ranking,
                    "dense": (
                        run_anomaly(kb, c, tiers=TIERS, mode="dense", k=100).ranking
                        if kb.store.embedder_info()
                        else []
                    ),
                    "signals": signal_ranking(kb, c, tiers=TIERS)[:100],
                }
                for c in precedent
            }

        def fused(case: AnomalyCase, weights: dict[str, float]) -> list[str]:
            return ranked(rrf({n: runs[case.case.id][n] for n in weights}, weights=weights))

        def hit_at_1(weights: dict[str, float], subset: list[AnomalyCase]) -> float:
            if not subset:
                return 0.0
            return sum(type_hit(fused(c, weights), c) for c in subset) / len(subset)

        table = Table(title="anomaly -> right incident type first (type Hit@1)")
        kinds = sorted({c.kind for c in precedent})
        table.add_column("ranking")
        table.add_column("all", justify="right")
        for kind in kinds:
            table.add_column(kind, justify="right")
        shown = {
            "BM25": {"sparse": 1.0},
            "MiniLM": {"dense": 1.0},
            "signals": {"signals": 1.0},
            "BM25 + MiniLM (text default 0.3)": {"sparse": 0.7, "dense": 0.3},
            "BM25 + signals (1 : 0.5)": {"sparse": 1.0, "signals": 0.5},
            "BM25 + MiniLM 0.3 + signals 0.5": {"sparse": 0.7, "dense": 0.3, "signals": 0.5},
        }
        rankings: dict[str, dict[str, Any]] = {}

        def type_row(name: str, weights: dict[str, float]) -> None:
            per = {k: hit_at_1(weights, [c for c in precedent if c.kind == k]) for k in kinds}
            rankings[name] = {"weights": weights, "all": hit_at_1(weights, precedent), **per}
            table.add_row(name, f"{rankings[name]['all']:.3f}", *(f"{v:.2f}" for v in per.values()))

        for name, weights in shown.items():
            if "dense" in weights and not kb.store.embedder_info():
                continue
            type_row(name, weights)
        console.print(table)

        signals_choice = pick_weight_cv(
            precedent,
            lambda w, subset: hit_at_1({"sparse": 1.0, "signals": w}, subset),
            metric="type Hit@1",
        )
        w_signals = signals_choice.dense  # pick_weight_cv names the swept weight "dense"
        console.print(f"signals weight {w_signals}: {signals_choice.source}")
        dense_choice = None
        w_dense = 0.0
        if kb.store.embedder_info():
            dense_choice = pick_weight_cv(
                precedent,
                lambda w, subset: hit_at_1(
                    {"sparse": 1.0 - w, "dense": w, "signals": w_signals}, subset
                ),
                metric="type Hit@1",
            )
            w_dense = dense_choice.dense
            console.print(f"dense weight on anomalies {w_dense}: {dense_choice.source}")
        table = Table(title="anomaly profiles: shipped, and chosen now on these same cases")
        table.add_column("ranking")
        table.add_column("all", justify="right")
        for kind in kinds:
            table.add_column(kind, justify="right")
        shipped = json.loads(args.out.read_text())["profiles"]["anomaly"]
        for name, (d, s) in {
            "shipped profile": (shipped["dense"], shipped["signals"]),
            "chosen profile": (w_dense, w_signals),
        }.items():
            if d and not kb.store.embedder_info():
                continue
            type_row(name, {"sparse": 1.0 - d, "signals": s, **({"dense": d} if d else {})})
        console.print(table)

        # confidence for anomaly queries: positives and leave-type-out / no-precedent negatives
        everything = cases + leave_type_out(cases)
        with console.status("searching with the chosen anomaly profile"):
            scored = {
                c.case.id: run_anomaly(
                    kb, c, tiers=TIERS, signal_weight=w_signals, dense_weight=w_dense
                )
                for c in everything
            }
        fit_runs = [scored[c.case.id] for c in everything if c.seed % 2 == 0]
        held_runs = [scored[c.case.id] for c in everything if c.seed % 2 == 1]
        model = fit_confidence(
            fit_runs,
            f"fitted on {len(fit_runs)} simulated anomaly cases (even seeds, incl. "
            "leave-type-out negatives)",
        )
        held = calibration_metrics(model, held_runs)
        table = Table(title="anomaly confidence, held out (odd seeds)")
        for col in (
            "cases",
            "no-precedent",
            "hit@1",
            "ECE",
            "Brier",
            "AUROC",
            "novel P",
            "novel R",
        ):
            table.add_column(col)
        table.add_row(
            *(
                str(held[k])
                for k in (
                    "cases",
                    "no_precedent_cases",
                    "hit_at_1",
                    "ece",
                    "brier",
                    "auroc_precedent_vs_none",
                    "novel_precision",
                    "novel_recall",
                )
            )
        )
        console.print(table)
        console.print(
            f"model: weights {dict(model.weights)}, bias {model.bias:.3f}, lo {model.lo}, hi {model.hi}"
        )
        per_kind: dict[str, list[int]] = defaultdict(list)
        for c in cases:
            run = scored[c.case.id]
            novel = model.is_novel(model.predict(run.signals))
            per_kind[c.kind].append(
                int(novel) if c.case.expect_novel else int(not novel and run.top_correct)
            )
        console.print(
            "reported right by the fitted model, all seeds (type first and not novel; novel "
            "when no precedent): "
            + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(per_kind.items()))
        )
        # the verdicts a user is shown (detect --investigate, POST /v1/detect): the model the
        # product ships (defaults.json as this run found it) beside the one fitted now, and the
        # Investigator's (the shipped model and its own checks: what a draft says)
        shipped_model = shipped_anomaly_model(args.out)
        verdicts = {
            "shipped": (
                verdict_states(shipped_model, [scored[c.case.id] for c in cases])
                if shipped_model
                else None
            ),
            "fitted_now, odd seeds": verdict_states(model, held_runs),
            "investigator, with leave-type-out copies": investigator_states(kb, everything),
        }
        for name, states in verdicts.items():
            if states:
                console.print(f"verdicts, {name}: {states_line(states)}")
        family = kb.dense_family()
        record: dict[str, Any] = {
            **provenance("benchmarks/anomalies.py", argv),
            "caveat": CAVEAT,
            "seeds": args.seeds,
            "cases": len(cases),
            "precedent_cases": len(precedent),
            "embedder": family,
            "type_hit_at_1": rankings,
            "shipped_profile": {"dense": shipped["dense"], "signals": shipped["signals"]},
            "profile": {
                "signals": w_signals,
                "dense": w_dense,
                "signals_choice": {
                    "source": signals_choice.source,
                    "evidence": dict(signals_choice.evidence),
                },
                "dense_choice": (
                    {"source": dense_choice.source, "evidence": dict(dense_choice.evidence)}
                    if dense_choice
                    else None
                ),
            },
            "confidence": {
                "fitted_on": model.source,
                "held_out_odd_seeds": held,
            },
            "verdicts": {
                "meaning": "the verdict a user is shown per anomaly (its query shape's "
                "thresholds), split by top right / top wrong / no precedent in the KB: "
                "shipped = defaults.json's anomaly model as this run found it, on every seed's "
                "anomalies (no leave-type-out copies); fitted_now = this run's fit, on the "
                "odd seeds' cases it was not fitted on; investigator = the verdict of the draft "
                "detect --investigate writes (the shipped model, then the Investigator's own "
                "checks), every seed, leave-type-out copies included",
                **verdicts,
            },
            "reported_right_all_seeds": {
                k: {"right": sum(v), "cases": len(v)} for k, v in sorted(per_kind.items())
            },
        }
        console.print(f"wrote {write_results(args.results / 'anomalies.json', record)}")
        kb.close()

    if args.write:
        defaults = json.loads(args.out.read_text())
        base = "sparse" if w_dense == 0 else f"hybrid:{family}"
        key = f"anomaly:{base}" + ("+signals" if w_signals > 0 else "")
        defaults.setdefault("profiles", {})["anomaly"] = {
            "dense": w_dense,
            "signals": w_signals,
            "source": f"benchmarks/anomalies.py, {args.seeds} seeds, 5-fold CV on type Hit@1",
            "evidence": {
                "signals": dict(signals_choice.evidence),
                "dense": dict(dense_choice.evidence) if dense_choice else None,
                "caveat": CAVEAT,
            },
        }
        data = model.as_dict()
        data["metrics"] = {"held_out": {"simulated anomalies (odd seeds)": held}}
        defaults["confidence"] = {
            k: v for k, v in defaults["confidence"].items() if not k.startswith("anomaly:")
        }
        defaults["confidence"][key] = data
        args.out.write_text(json.dumps(defaults, indent=2, sort_keys=True) + "\n")
        console.print(f"wrote profile and {key} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
