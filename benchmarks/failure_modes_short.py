"""How sure the failure-mode classifier is on short text, against how often it is right, held out.

The classifier (src/seenbefore/knowledge/failure_modes.py) tempers its posterior by a fixed
temperature, capped by ``max_evidence`` for long text: a text with few known features gets a flat
posterior. Queries are short -- a pager line, a title, one sentence -- and ``mode_match``,
``mode_consistency``, the same failure first and the "another failure" sentence all read the
query's posterior. This probe measures, with the training script's own 5-fold cross-validation
(benchmarks/fit_failure_modes.py: folds by incident, the model refitted without the fold), how
the posterior does on the held-out incidents' *short* texts:

  * graphrca ``root_cause`` alone (one sentence; the fit reads it with the postmortem);
  * graphrca's postmortem heading (a title);
  * danluu's ``summary`` cut to its first sentence.

Per text kind: the share whose top mode lies in the label's set, the mean top probability
(beside it: a flat posterior says less than it knows), the held-out log-probability of the label
set, and the same for posteriors sharpened below ``e0`` features by ``(e0 / evidence) ** gamma``
(gamma 0 is the shipped classifier). Nothing here changes the product; the sample KB is never
read.

    .venv/bin/python benchmarks/failure_modes_short.py [--shared ../shared/data] [--write]

Writes benchmarks/results/failure_modes_short.json with --write (command, commit, machine, date).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from fit_failure_modes import FOLDS, _rows, fit, folds, training_docs
from provenance import RESULTS, provenance, write_results
from seenbefore.knowledge.failure_features import Features, text_features
from seenbefore.knowledge.failure_modes import Model, shipped_model
from seenbefore.knowledge.failure_taxonomy import taxonomy

console = Console(width=160)
SHARPER = tuple((g, e) for g in (0.25, 0.5, 0.75, 1.0) for e in (20.0, 40.0, 80.0))
VARIANTS: tuple[tuple[float, float], ...] = ((0.0, 0.0), *SHARPER)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def posterior(model: Model, features: Features, gamma: float, e0: float) -> np.ndarray:
    """``Model.posterior``, sharpened by ``(e0 / evidence) ** gamma`` below ``e0`` features:
    scaling its logits by a factor is raising its probabilities to that power, renormalised."""
    p = model.posterior(features)
    evidence = float(sum(n for f, n in features.items() if f in model.index))
    if not gamma or not 0 < evidence < e0:
        return p
    sharp = p ** ((e0 / evidence) ** gamma)
    return np.asarray(sharp / sharp.sum())


def short_texts(shared: Path) -> dict[str, list[tuple[str, str]]]:
    """Per incident key (the training script's fold key): (kind, text) of its short texts."""
    folder = shared / "postmortems"
    out: dict[str, list[tuple[str, str]]] = {}
    graphrca = _rows(folder / "graphrca_incidents.jsonl")
    for row in graphrca:
        heading = row["postmortem"].strip().splitlines()[0].lstrip("# ").strip()
        out.setdefault(row["id"], []).extend(
            [("root cause, one sentence", row["root_cause"]), ("postmortem heading", heading)]
        )
    linked = {row["danluu_id"]: row["id"] for row in graphrca if row["danluu_id"]}
    for row in _rows(folder / "danluu_postmortems.jsonl"):
        first = _SENTENCE.split(row["summary"].strip())[0]
        key = linked.get(row["id"], row["id"])
        out.setdefault(f"danluu:{key}", []).append(("danluu summary, first sentence", first))
    return out


def measure(shared: Path) -> dict[str, Any]:
    tax = taxonomy()
    shipped = shipped_model()
    hp = {
        "alpha": shipped.alpha,
        "mu": 20000.0,
        "taxonomy_weight": 5.0,
        "max_evidence": shipped.max_evidence,
    }
    docs = training_docs(tax, shared, hp["taxonomy_weight"])
    slugs = list(shipped.slugs)
    fold = folds(docs)
    texts = short_texts(shared)
    tally: dict[tuple[str, tuple[float, float]], dict[str, list[float]]] = {}
    for k in range(FOLDS):
        model, _ = fit([d for d, f in zip(docs, fold, strict=True) if f != k], slugs, hp)
        for d, f in zip(docs, fold, strict=True):
            if f != k or d.source == "taxonomy":
                continue
            key = d.key if d.source == "graphrca" else f"danluu:{d.key}"
            for kind, text in texts.get(key, []):
                features = text_features("", text)
                evidence = float(sum(n for f_, n in features.items() if f_ in model.index))
                for variant in VARIANTS:
                    p = posterior(model, features, *variant)
                    top = int(np.argmax(p))
                    mass = sum(float(p[slugs.index(s)]) for s in d.allowed)
                    t = tally.setdefault((kind, variant), {"in": [], "p": [], "lp": [], "ev": []})
                    t["in"].append(float(slugs[top] in d.allowed))
                    t["p"].append(float(p[top]))
                    t["lp"].append(math.log(max(mass, 1e-12)))
                    t["ev"].append(evidence)
    out: dict[str, Any] = {}
    for (kind, (gamma, e0)), t in sorted(tally.items()):
        entry = out.setdefault(kind, {"texts": len(t["in"]), "variants": []})
        entry["median_evidence"] = float(np.median(t["ev"]))
        entry["variants"].append(
            {
                "gamma": gamma,
                "e0": e0,
                "top1_in_label_set": round(float(np.mean(t["in"])), 4),
                "mean_top_p": round(float(np.mean(t["p"])), 4),
                "log_prob_of_label_set": round(float(np.mean(t["lp"])), 4),
            }
        )
    for entry in out.values():
        entry["shipped"] = entry["variants"][0]
        entry["best_by_log_prob"] = max(entry["variants"], key=lambda v: v["log_prob_of_label_set"])
    return out


def show(out: dict[str, Any]) -> None:
    table = Table(title="failure-mode classifier on short held-out text (5-fold, by incident)")
    for col in ("text", "n", "median features", "variant", "top-1 in set", "mean top p", "log p"):
        table.add_column(col)
    for kind, entry in out.items():
        for label, v in (("shipped", entry["shipped"]), ("best", entry["best_by_log_prob"])):
            table.add_row(
                kind,
                str(entry["texts"]),
                f"{entry['median_evidence']:.0f}",
                f"{label} (gamma {v['gamma']}, e0 {v['e0']:.0f})",
                f"{v['top1_in_label_set']:.3f}",
                f"{v['mean_top_p']:.3f}",
                f"{v['log_prob_of_label_set']:.3f}",
            )
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    out = measure(args.shared)
    show(out)
    if args.write:
        record = {**provenance("benchmarks/failure_modes_short.py", argv), "kinds": out}
        console.print(f"wrote {write_results(RESULTS / 'failure_modes_short.json', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
