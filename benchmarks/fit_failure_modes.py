"""Fit the failure-mode classifier the package ships, and say how well it does on text it never saw.

Training data (never the sample knowledge base, examples/postmortems: another benchmark replays it
with `type` hidden, and must not see its labels through the classifier):

  * the taxonomy's own words (src/seenbefore/knowledge/failure_modes.yaml), one document per mode;
  * graphrca_incidents.jsonl: `root_cause` + `postmortem`, its `subcategory` (else `category`)
    mapped by the taxonomy's `graphrca:` table to one mode or a set of modes; labels it does not
    map (bare "Infrastructure", which covers nearly every mode) are left out;
  * danluu_postmortems.jsonl: `summary`, its README section mapped by the `danluu:` table
    ("Uncategorized" is left out).

A document labelled with a set of modes is assigned among them by expectation-maximisation (its
share of each mode is the model's posterior restricted to the set, re-estimated ten times).
aws_status_events.jsonl is not used: its summaries name symptoms ("Increased Error Rates"), not
causes, and labelling them by keyword rules would only teach the rules' own words back.

Hyperparameters (posterior temperature alpha, smoothing strength mu, taxonomy-word weight, the
evidence cap max_evidence) are
chosen by 5-fold cross-validation on graphrca + danluu (folds by incident: a danluu entry goes with
the graphrca row that links to it), maximising the held-out log-probability of the label's set.

Reports, beside the majority-class baseline:
  (a) the sample KB's typed postmortems, read with the product's parser, `type` hidden, classified
      and compared with the alias-mapped type: top-1, top-3, and at CONFIDENT coverage and accuracy
      among the confident;
  (b) graphrca by the same cross-validation: top-1/top-3 on rows whose label names one mode, and
      for every mapped row whether the top mode lies in the label's set.

Writes src/seenbefore/knowledge/failure_modes_model.json and benchmarks/results/failure_modes.json.

    python benchmarks/fit_failure_modes.py [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results
from seenbefore.knowledge.failure_features import (
    Features,
    phrase_features,
    postmortem_text,
    text_features,
)
from seenbefore.knowledge.failure_modes import (
    CONFIDENT,
    MODEL_FILE,
    Model,
    build_model,
    model_from_json,
)
from seenbefore.knowledge.failure_taxonomy import Taxonomy, taxonomy
from seenbefore.knowledge.validate import postmortem_from_markdown

REPO = Path(__file__).resolve().parents[1]
MODEL_PATH = REPO / "src/seenbefore/knowledge" / MODEL_FILE
FOLDS = 5
EM_ROUNDS = 10
MIN_DOCS = 2  # a feature is kept when this many training documents have it (or the taxonomy)
GRID = {
    "alpha": (0.2, 0.4, 0.8, 1.6),  # posterior temperature
    "mu": (5000.0, 20000.0, 80000.0),  # smoothing towards the background distribution
    "taxonomy_weight": (2.0, 5.0),  # how many times a taxonomy word counts
    "max_evidence": (50.0, 100.0, 200.0),  # features beyond this many temper the posterior
}
CV_SUMMARY = ("log_prob_of_label_set", "top1_in_label_set", "single_top1", "single_top3")
console = Console()


@dataclass(frozen=True)
class Doc:
    key: str  # the incident, for folds
    source: str  # taxonomy | graphrca | danluu
    features: Features
    allowed: tuple[str, ...]
    label: str


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def training_docs(tax: Taxonomy, shared: Path, taxonomy_weight: float) -> list[Doc]:
    docs = [
        Doc(f"mode:{m.slug}", "taxonomy", phrase_features(m.words, taxonomy_weight), (m.slug,), "")
        for m in tax.modes
    ]
    folder = shared / "postmortems"
    graphrca = _rows(folder / "graphrca_incidents.jsonl")
    for row in graphrca:
        label = row["subcategory"] if row["subcategory"] in tax.graphrca else row["category"]
        if label not in tax.graphrca:
            continue
        text = f"{row['root_cause']}\n{row['postmortem']}"
        docs.append(Doc(row["id"], "graphrca", text_features("", text), tax.graphrca[label], label))
    linked = {row["danluu_id"]: row["id"] for row in graphrca if row["danluu_id"]}
    for row in _rows(folder / "danluu_postmortems.jsonl"):
        if row["category"] not in tax.danluu:
            continue
        key = linked.get(row["id"], row["id"])
        docs.append(
            Doc(
                key,
                "danluu",
                text_features("", row["summary"]),
                tax.danluu[row["category"]],
                row["category"],
            )
        )
    return docs


def fit(
    docs: Sequence[Doc], slugs: Sequence[str], hp: dict[str, float]
) -> tuple[Model, np.ndarray]:
    """EM over ``docs``: single-mode documents count for their mode; set-labelled ones are
    shared among their set by the current model's restricted posterior. Returns the model and
    its counts (features x modes)."""
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d.features))
    taxonomy_features = {f for d in docs if d.source == "taxonomy" for f in d.features}
    features = sorted(f for f, n in df.items() if n >= MIN_DOCS or f in taxonomy_features)
    col = {f: i for i, f in enumerate(features)}
    slot = {s: i for i, s in enumerate(slugs)}
    x = np.zeros((len(docs), len(features)))
    allowed = np.zeros((len(docs), len(slugs)), dtype=bool)
    for r, d in enumerate(docs):
        for f, n in d.features.items():
            if f in col:
                x[r, col[f]] = n
        allowed[r, [slot[s] for s in d.allowed]] = True
    resp = allowed / allowed.sum(axis=1, keepdims=True)
    single = allowed.sum(axis=1) == 1
    resp[~single] = 0.0  # round 0: the single-mode documents alone
    for _ in range(EM_ROUNDS):
        model = build_model(
            slugs,
            features,
            x.T @ resp,
            mu=hp["mu"],
            alpha=hp["alpha"],
            max_evidence=hp["max_evidence"],
        )
        restricted = np.where(allowed, posteriors(model, x), 0.0)
        restricted /= restricted.sum(axis=1, keepdims=True)
        resp = np.where(single[:, None], allowed.astype(float), restricted)
    counts = x.T @ resp
    model = build_model(
        slugs, features, counts, mu=hp["mu"], alpha=hp["alpha"], max_evidence=hp["max_evidence"]
    )
    return model, counts


def posteriors(model: Model, x: np.ndarray) -> np.ndarray:
    """Model.posterior for the rows of a features matrix in the model's feature order."""
    evidence = x.sum(axis=1)
    scale = model.alpha * np.minimum(1.0, model.max_evidence / np.maximum(evidence, 1e-12))
    logits = scale[:, None] * (x @ model.log_ratio)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def folds(docs: Sequence[Doc]) -> list[int]:
    """A fold per incident key, deterministic: incidents in sorted order dealt round-robin."""
    keys = sorted({d.key for d in docs if d.source != "taxonomy"})
    fold_of = {k: i % FOLDS for i, k in enumerate(keys)}
    return [fold_of.get(d.key, -1) for d in docs]


def cross_validate(
    docs: Sequence[Doc], slugs: Sequence[str], hp: dict[str, float]
) -> dict[str, Any]:
    fold = folds(docs)
    rows: list[dict[str, Any]] = []
    for k in range(FOLDS):
        train = [d for d, f in zip(docs, fold, strict=True) if f != k]
        model, _ = fit(train, slugs, hp)
        for d, f in zip(docs, fold, strict=True):
            if f != k or d.source != "graphrca":
                continue
            p = model.posterior(d.features)
            order = sorted(range(len(p)), key=lambda i: (-p[i], i))
            top = [model.slugs[i] for i in order]
            mass = sum(p[model.slugs.index(s)] for s in d.allowed)
            rows.append(
                {"allowed": d.allowed, "top": top[:3], "p": float(p[order[0]]), "mass": mass}
            )
    single = [r for r in rows if len(r["allowed"]) == 1]
    in_set = Counter(s for r in rows for s in r["allowed"])
    best_constant, constant_hits = in_set.most_common(1)[0]
    single_counts = Counter(r["allowed"][0] for r in single)
    confident = [r for r in rows if r["p"] >= CONFIDENT]
    return {
        "rows": len(rows),
        "log_prob_of_label_set": float(np.mean([np.log(max(r["mass"], 1e-12)) for r in rows])),
        "top1_in_label_set": float(np.mean([r["top"][0] in r["allowed"] for r in rows])),
        "majority_in_label_set": constant_hits / len(rows),
        "majority_slug": best_constant,
        "mean_label_set_size": float(np.mean([len(r["allowed"]) for r in rows])),
        "single_mode_rows": len(single),
        "single_top1": float(np.mean([r["top"][0] == r["allowed"][0] for r in single])),
        "single_top3": float(np.mean([r["allowed"][0] in r["top"] for r in single])),
        "single_majority": single_counts.most_common(1)[0][1] / len(single),
        "confident_coverage": len(confident) / len(rows),
        "confident_in_label_set": (
            float(np.mean([r["top"][0] in r["allowed"] for r in confident])) if confident else None
        ),
    }


def sample_kb(model: Model, tax: Taxonomy, folder: Path) -> dict[str, Any]:
    """The sample KB's typed postmortems, `type` hidden, against their alias-mapped type."""
    rows = []
    for path in sorted(folder.glob("*.md")):
        pm = postmortem_from_markdown(str(path), path.read_text("utf-8"))
        if not pm.type:
            continue
        hidden = replace(pm, type="")
        p = model.posterior(text_features(hidden.title, postmortem_text(hidden)))
        order = sorted(range(len(p)), key=lambda i: (-p[i], i))
        rows.append(
            {
                "id": pm.id,
                "truth": tax.canonical(pm.type),
                "top": [model.slugs[i] for i in order[:3]],
                "p": round(float(p[order[0]]), 3),
            }
        )
    truths = Counter(r["truth"] for r in rows)
    confident = [r for r in rows if r["p"] >= CONFIDENT]
    return {
        "postmortems": len(rows),
        "types": len(truths),
        "top1": float(np.mean([r["top"][0] == r["truth"] for r in rows])),
        "top3": float(np.mean([r["truth"] in r["top"] for r in rows])),
        "majority": truths.most_common(1)[0][1] / len(rows),
        "majority_type": truths.most_common(1)[0][0],
        "confident_coverage": len(confident) / len(rows),
        "confident_accuracy": (
            float(np.mean([r["top"][0] == r["truth"] for r in confident])) if confident else None
        ),
        "per_document": rows,
    }


def model_json(
    model: Model, hp: dict[str, float], counts: np.ndarray, command: str
) -> dict[str, Any]:
    features = sorted(model.index, key=model.index.__getitem__)
    return {
        "made_by": command,
        "fitted_on": "failure_modes.yaml words, graphrca_incidents.jsonl and "
        "danluu_postmortems.jsonl (labels mapped by the taxonomy); not examples/postmortems",
        "slugs": list(model.slugs),
        "alpha": hp["alpha"],
        "mu": hp["mu"],
        "taxonomy_weight": hp["taxonomy_weight"],
        "max_evidence": hp["max_evidence"],
        "counts": {
            f: [[int(j), round(float(counts[i, j]), 4)] for j in np.flatnonzero(counts[i] >= 5e-5)]
            for i, f in enumerate(features)
            if np.any(counts[i] >= 5e-5)
        },
    }


def table(title: str, rows: list[tuple[str, str, str]]) -> Table:
    out = Table(title=title)
    for col in ("measure", "classifier", "majority class"):
        out.add_column(col)
    for row in rows:
        out.add_row(*row)
    return out


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--shared",
        type=Path,
        default=Path(os.environ.get("SEENBEFORE_SHARED", REPO.parent / "shared")) / "data",
        help="the shared data folder (default: $SEENBEFORE_SHARED/data, else ../shared/data)",
    )
    parser.add_argument("--kb", type=Path, default=REPO / "examples/postmortems")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/failure_modes.json")
    parser.add_argument("--model-out", type=Path, default=MODEL_PATH)
    args = parser.parse_args(argv)
    if not (args.shared / "postmortems/graphrca_incidents.jsonl").exists():
        console.print(
            f"[red]{args.shared}/postmortems/graphrca_incidents.jsonl not found: pass --shared "
            "with the shared data folder[/]"
        )
        return 2
    tax = taxonomy()
    record = provenance("benchmarks/fit_failure_modes.py", argv)
    grid = []
    for values in itertools.product(*GRID.values()):
        hp = dict(zip(GRID, values, strict=True))
        cv = cross_validate(training_docs(tax, args.shared, hp["taxonomy_weight"]), tax.slugs, hp)
        grid.append({"hyperparameters": hp, **{k: cv[k] for k in CV_SUMMARY}})
        console.print(
            f"[dim]{hp}: log P(label set) {cv['log_prob_of_label_set']:.3f}, top-1 in set "
            f"{cv['top1_in_label_set']:.3f}, single-mode top-1 {cv['single_top1']:.3f}[/]"
        )
    best = max(grid, key=lambda g: g["log_prob_of_label_set"])["hyperparameters"]
    docs = training_docs(tax, args.shared, best["taxonomy_weight"])
    cv = cross_validate(docs, tax.slugs, best)
    model, counts = fit(docs, tax.slugs, best)
    shipped = model_json(model, best, counts, record["command"])
    args.model_out.write_text(json.dumps(shipped, separators=(",", ":")) + "\n", "utf-8")
    kb = sample_kb(model_from_json(shipped), tax, args.kb)  # the shipped (rounded) parameters
    console.print(
        table(
            f"(a) sample KB, {kb['postmortems']} typed postmortems ({kb['types']} types), type "
            f"hidden; never fitted on",
            [
                ("top-1", pct(kb["top1"]), f"{pct(kb['majority'])} ({kb['majority_type']})"),
                ("top-3", pct(kb["top3"]), "-"),
                (f"coverage at p >= {CONFIDENT}", pct(kb["confident_coverage"]), "-"),
                ("top-1 among the confident", pct(kb["confident_accuracy"]), "-"),
            ],
        )
    )
    console.print(
        table(
            f"(b) graphrca, {FOLDS}-fold cross-validation by incident, {cv['rows']} mapped rows",
            [
                (
                    f"top-1 in the label's set (mean {cv['mean_label_set_size']:.1f} modes)",
                    pct(cv["top1_in_label_set"]),
                    f"{pct(cv['majority_in_label_set'])} ({cv['majority_slug']})",
                ),
                (
                    f"top-1, {cv['single_mode_rows']} rows labelled with one mode",
                    pct(cv["single_top1"]),
                    pct(cv["single_majority"]),
                ),
                ("top-3, the same rows", pct(cv["single_top3"]), "-"),
                (f"coverage at p >= {CONFIDENT}", pct(cv["confident_coverage"]), "-"),
                ("top-1 in set among the confident", pct(cv["confident_in_label_set"]), "-"),
            ],
        )
    )
    console.print(f"chosen by cross-validated log P(label set): {best}")
    record.update(
        {
            "data": str(args.shared / "postmortems"),
            "confident": CONFIDENT,
            "modes": len(tax.slugs),
            "training_documents": dict(Counter(d.source for d in docs)),
            "features": len(model.index),
            "hyperparameters": best,
            "grid": grid,
            "sample_kb": kb,
            "graphrca_cv": cv,
            "model_file": str(args.model_out.relative_to(REPO))
            if args.model_out.is_relative_to(REPO)
            else str(args.model_out),
        }
    )
    console.print(f"wrote {write_results(args.out, record)} and {args.model_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
