"""Evaluation reports (Markdown, JSON, reliability diagram) and the history that catches drift."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seenbefore.evaluation.harness import EvalReport
from seenbefore.extras import requires

COLUMNS: tuple[tuple[str, str], ...] = (
    ("hit@1", "Hit@1"),
    ("hit@3", "Hit@3"),
    ("mrr", "MRR"),
    ("novel_precision", "novel P"),
    ("novel_recall", "novel R"),
    ("shipped_ece", "ECE"),
    ("shipped_brier", "Brier"),
    ("shipped_auroc", "AUROC"),
    ("refit_ece", "ECE held-out"),
    ("refit_brier", "Brier held-out"),
    ("latency_p50_ms", "p50 ms"),
    ("latency_p95_ms", "p95 ms"),
)
# metric -> +1 when higher is better, -1 when lower is better (latency is not a quality metric)
DIRECTION: dict[str, int] = {
    "hit@1": 1,
    "hit@3": 1,
    "mrr": 1,
    "novel_precision": 1,
    "novel_recall": 1,
    "shipped_ece": -1,
    "shipped_brier": -1,
    "shipped_auroc": 1,
}


def fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def strict(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None, so ``json.dumps(...,
    allow_nan=False)`` writes strict JSON (NaN is not JSON; parsers other than Python's reject it)."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value


def per_case(report: EvalReport) -> list[dict[str, Any]]:
    """Each case under each mode: rank of the first relevant document (None: not in the
    ranking), confidence, verdict, and the top three ids."""
    out = []
    for case in report.cases:
        modes = {}
        for name, mode in report.modes.items():
            o = mode.outputs[case.id]
            rank = next((i for i, d in enumerate(o.ranking, 1) if d in case.relevant), None)
            modes[name] = {
                "rank": rank,
                "confidence": round(o.confidence, 4),
                "verdict": "no precedent" if o.novel else "precedent",
                "top": o.ranking[:3],
            }
        out.append(
            {
                "case": case.id,
                "expected": list(case.expected),
                "expect_novel": case.expect_novel,
                "modes": modes,
            }
        )
    return out


def summary(report: EvalReport) -> dict[str, dict[str, Any]]:
    return {
        name: {k: mode.metrics.get(k) for k, _ in COLUMNS}
        | {
            "graded_root_cause": mode.metrics.get("graded_root_cause"),
            "tokens_per_case": mode.metrics.get("tokens_per_case"),
        }
        for name, mode in report.modes.items()
    }


def misses(report: EvalReport, mode: str, titles: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    for case in report.cases:
        output = report.modes[mode].outputs[case.id]
        if case.expect_novel:
            wrong = not output.novel
        else:
            wrong = not output.ranking or output.ranking[0] not in case.relevant
        if wrong:
            out.append(
                {
                    "case": case.id,
                    "expected": list(case.expected) or ["(no precedent)"],
                    "retrieved": [f"{d} {titles.get(d, '')}".strip() for d in output.ranking[:3]],
                    "confidence": round(output.confidence, 3),
                    "novel": output.novel,
                }
            )
    return out


def reliability_png(report: EvalReport, path: Path, bins: int = 10) -> None:
    with requires("eval", "the reliability plot (matplotlib)"):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfectly calibrated")
    for name, mode in report.modes.items():
        points = []
        for b in range(bins):
            lo, hi = b / bins, (b + 1) / bins
            members = [
                (o.confidence, int(bool(o.ranking) and o.ranking[0] in c.relevant))
                for c in report.cases
                for o in [mode.outputs[c.id]]
                if lo <= o.confidence < hi or (b == bins - 1 and o.confidence == 1)
            ]
            if members:
                points.append(
                    (
                        sum(p for p, _ in members) / len(members),
                        sum(y for _, y in members) / len(members),
                    )
                )
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=name)
    ax.set_xlabel("confidence (predicted probability the top hit is a precedent)")
    ax.set_ylabel("observed share of correct top hits")
    ax.set_title("reliability of confidence")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(
    report: EvalReport,
    header: Mapping[str, Any],
    overlaps: Mapping[str, float],
    titles: Mapping[str, str],
    png_name: str | None,
) -> str:
    lines = [f"# seenbefore evaluation — {header.get('label', '')}", ""]
    for key, value in header.items():
        lines.append(f"- **{key}**: {value}")
    lines += [
        "",
        "| mode | " + " | ".join(title for _, title in COLUMNS) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
    ]
    for name, metrics in summary(report).items():
        lines.append(f"| {name} | " + " | ".join(fmt(metrics[k]) for k, _ in COLUMNS) + " |")
    lines += ["", f"Best mode by MRR: **{report.best_mode()}**.", ""]
    if overlaps:
        mean = sum(overlaps.values()) / len(overlaps)
        lines += [
            f"Mean query/expected-postmortem token overlap: {mean:.2f} "
            "(share of query terms found in the expected postmortem).",
            "",
        ]
    if png_name:
        lines += [f"![reliability diagram]({png_name})", ""]
    best = report.best_mode()
    lines += [
        f"## Misses of {best}",
        "",
        "| case | expected | retrieved instead | confidence |",
        "|---|---|---|---|",
    ]
    for miss in misses(report, best, titles):
        lines.append(
            f"| {miss['case']} | {', '.join(miss['expected'])} | "
            f"{'<br>'.join(miss['retrieved']) or '(nothing)'} | {miss['confidence']} |"
        )
    return "\n".join(lines) + "\n"


# -- history -------------------------------------------------------------------------------
def git_commit(cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=cwd,
            check=False,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def fingerprint(items: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()[:16]


def history_record(
    report: EvalReport, *, config: Mapping[str, Any], corpus: str, cases: str
) -> dict[str, Any]:
    return {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "config": dict(config),
        "corpus_fingerprint": corpus,
        "cases_fingerprint": cases,
        "metrics": {
            name: {k: _finite(v) for k, v in m.items()} for name, m in summary(report).items()
        },
    }


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def append_history(path: Path, record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Append ``record``; return the last earlier run over the same cases and corpus, if any
    (runs over other cases or another knowledge base are not comparable)."""
    previous = None
    same = ("cases_fingerprint", "corpus_fingerprint")
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                earlier = json.loads(line)
                if all(earlier.get(k) == record.get(k) for k in same):
                    previous = earlier
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
    return previous


@dataclass(frozen=True)
class Regression:
    mode: str
    metric: str
    before: float
    after: float

    def __str__(self) -> str:
        return f"{self.mode}: {self.metric} {self.before:.3f} -> {self.after:.3f}"


def regressions(
    previous: Mapping[str, Any], current: Mapping[str, Any], tolerance: float = 0.02
) -> list[Regression]:
    """Quality metrics that got worse by more than ``tolerance`` (absolute) since ``previous``."""
    found = []
    for mode, metrics in current["metrics"].items():
        before = previous.get("metrics", {}).get(mode)
        if not before:
            continue
        for metric, direction in DIRECTION.items():
            old, new = before.get(metric), metrics.get(metric)
            if old is None or new is None:
                continue
            if (old - new) * direction > tolerance:
                found.append(Regression(mode, metric, float(old), float(new)))
    return found
