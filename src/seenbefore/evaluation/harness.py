"""The evaluation harness: run cases through pipelines and measure them side by side.

A pipeline is any function ``Case -> PipelineOutput``; the knowledge base's modes are pipelines,
and so can be anything else (an investigation that also returns a draft, a competitor).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seenbefore.calibration.labelled import calibration_metrics, fit_confidence
from seenbefore.calibration.runs import CaseRun, run_case
from seenbefore.evaluation.cases import Case, split
from seenbefore.evaluation.metrics import abstention, calibration, ir_metrics, percentile
from seenbefore.kb import KnowledgeBase


@dataclass
class PipelineOutput:
    ranking: list[str]
    confidence: float = 0.0
    novel: bool = False
    signals: dict[str, float] = field(default_factory=dict)
    draft: Any = None  # a drafted hypothesis, when the pipeline produces one
    graded_score: float | None = None  # model-graded root cause (0-5), when an LLM judge is set
    tokens: int | None = None
    shape: str | None = None  # the query's shape as the search saw it (CaseRun.shape)


Pipeline = Callable[[Case], PipelineOutput]


def kb_pipeline(
    kb: KnowledgeBase,
    mode: str,
    *,
    tiers: Sequence[str],
    dense_weight: float | None = None,
    k: int = 10,
) -> Pipeline:
    def run(case: Case) -> PipelineOutput:
        r = run_case(kb, case, mode, tiers=tiers, dense_weight=dense_weight, k=k)
        return PipelineOutput(r.ranking, r.confidence, r.novel, r.signals, shape=r.shape)

    return run


@dataclass
class ModeReport:
    name: str
    outputs: dict[str, PipelineOutput]
    latencies_ms: list[float]
    metrics: dict[str, Any]


@dataclass
class EvalReport:
    cases: list[Case]
    modes: dict[str, ModeReport]
    fit_ids: list[str]
    held_ids: list[str]
    notes: list[str] = field(default_factory=list)

    def best_mode(self, metric: str = "mrr") -> str:
        return max(self.modes, key=lambda m: self.modes[m].metrics.get(metric) or 0.0)


def evaluate(
    cases: Sequence[Case],
    pipelines: Mapping[str, Pipeline],
    *,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> EvalReport:
    fit, held = split(cases, seed=seed)
    report = EvalReport(list(cases), {}, [c.id for c in fit], [c.id for c in held])
    for name, pipeline in pipelines.items():
        outputs: dict[str, PipelineOutput] = {}
        latencies = []
        for index, case in enumerate(cases, 1):
            started = time.perf_counter()
            outputs[case.id] = pipeline(case)
            latencies.append((time.perf_counter() - started) * 1000)
            if progress:
                progress(name, index, len(cases))
        report.modes[name] = ModeReport(
            name, outputs, latencies, _metrics(cases, outputs, latencies, fit, held)
        )
    return report


def _metrics(
    cases: Sequence[Case],
    outputs: Mapping[str, PipelineOutput],
    latencies: list[float],
    fit: Sequence[Case],
    held: Sequence[Case],
) -> dict[str, Any]:
    rankings = {c.id: outputs[c.id].ranking for c in cases}
    relevant = {c.id: (frozenset() if c.expect_novel else c.relevant) for c in cases}
    metrics: dict[str, Any] = ir_metrics(rankings, relevant)
    metrics.update(
        abstention([outputs[c.id].novel for c in cases], [c.expect_novel for c in cases])
    )
    correct = [
        int(bool(outputs[c.id].ranking) and outputs[c.id].ranking[0] in c.relevant) for c in cases
    ]
    metrics.update(
        {
            f"shipped_{k}": v
            for k, v in calibration(
                [outputs[c.id].confidence for c in cases],
                correct,
                [int(not c.expect_novel) for c in cases],
            ).items()
        }
    )
    metrics["latency_p50_ms"] = percentile(latencies, 50)
    metrics["latency_p95_ms"] = percentile(latencies, 95)
    graded = [o.graded_score for o in outputs.values() if o.graded_score is not None]
    metrics["graded_root_cause"] = sum(graded) / len(graded) if graded else None
    tokens = [o.tokens for o in outputs.values() if o.tokens is not None]
    metrics["tokens_per_case"] = sum(tokens) / len(tokens) if tokens else None
    runs = {
        c.id: CaseRun(
            c, "", outputs[c.id].ranking, outputs[c.id].signals, shape=outputs[c.id].shape
        )
        for c in cases
    }
    try:
        model = fit_confidence([runs[c.id] for c in fit], "refit on the fit split")
        held_metrics = calibration_metrics(model, [runs[c.id] for c in held])
        metrics.update(
            {
                f"refit_{k}": held_metrics[k]
                for k in (
                    "ece",
                    "brier",
                    "auroc_precedent_vs_none",
                    "novel_precision",
                    "novel_recall",
                )
            }
        )
    except ValueError as exc:
        metrics["refit_error"] = str(exc)
    return metrics
