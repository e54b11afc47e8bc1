"""Calibration labels from review decisions, and refitting confidence from them.

Confidence estimates the probability that the TOP result of a search is a true precedent, so a
label is about the top result of the round a reviewer decided on, with the retrieval signals that
round measured:

- approval of a draft that cites the top result: label 1;
- approval of a "no precedent" draft (or of one that cites other results only): label 0;
- dismissal: label 0, with the structured reason and the reviewer's note.

``fit_from_reviews`` refits the confidence model of each retrieval mode with labels, through the
one fit pipeline (evaluation/fitting.py): fitted on every other label, checked on the rest, and
kept only when it beats the live model there (the precedence rule). A dismissal for
``right_precedent_wrong_cause`` is recorded (label 0, as for every dismissal) but left out of the
fit: the reviewer confirmed the top result WAS the precedent, so it is not evidence that the
retrieval was wrong. When a mode has fewer than ``MIN_REVIEW_LABELS`` usable labels, or labels of
one class only, the fit adds the self-test cases of this knowledge base (the sample-KB half of the
recipe behind the shipped defaults, benchmarks/fit_defaults.py) and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from seenbefore.evaluation.calibrate import as_labelled, fit_confidence
from seenbefore.evaluation.cases import Case
from seenbefore.evaluation.fitting import beats
from seenbefore.evaluation.runner import CaseRun, run_case
from seenbefore.evaluation.selftest import self_test_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.review.models import DismissReason
from seenbefore.review.records import now
from seenbefore.storage.sqlport import SqlConn

MIN_REVIEW_LABELS = 20  # per retrieval mode, before review labels are fitted on their own
REFIT_EVERY = 10  # new labels (decisions, feedback) after which the next decision refits
REFIT_RECORD = "review_refit"  # the store's settings key: labels counted at the last refit
MIN_PER_CLASS = 3
NOT_AGAINST_RETRIEVAL = (DismissReason.RIGHT_PRECEDENT_WRONG_CAUSE.value,)


def top_label(evidence: dict[str, Any], draft: dict[str, Any], approved: bool) -> int | None:
    """The label of a decision about ``evidence``'s top result; None when there was none."""
    candidates = evidence.get("candidates") or []
    if not candidates:
        return None
    if not approved:
        return 0
    cited = draft.get("cited_incidents") or []
    return int(not draft.get("novel", False) and candidates[0]["doc_id"] in cited)


def record_label(
    conn: SqlConn,
    review_id: str,
    round_: int,
    evidence: dict[str, Any],
    label: int,
    *,
    reason: str,
    note: str = "",
) -> None:
    """Inside the decision's transaction: one label for the round's top result."""
    top = evidence["candidates"][0]
    conn.execute(
        "INSERT INTO calibration_labels (review_id, round, doc_id, model_key, signals, label,"
        " reason, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            review_id,
            round_,
            top["doc_id"],
            str(evidence.get("confidence_model_key") or "sparse"),
            json.dumps(evidence.get("signals") or {}),
            label,
            reason,
            note,
            now(),
        ),
    )


def labels(kb: KnowledgeBase) -> list[dict[str, Any]]:
    rows = kb.store.query(
        "SELECT review_id, round, doc_id, model_key, signals, label, reason, note"
        " FROM calibration_labels ORDER BY id"
    )
    return [{**dict(r), "signals": json.loads(r["signals"])} for r in rows]


def _label_run(row: dict[str, Any]) -> CaseRun:
    case = Case(
        id=f"review-{row['review_id']}-{row['round']}",
        query="",
        expected=(row["doc_id"],) if row["label"] else (),
        source=f"review:{row['review_id']}",
    )
    signals = {k: float(v) for k, v in row["signals"].items()}
    return CaseRun(case, row["model_key"], [row["doc_id"]], signals)


def _mode(key: str) -> str:
    return key.split(":", 1)[0]


def fit_from_reviews(
    kb: KnowledgeBase,
    *,
    tiers: Sequence[str],
    persist: bool = True,
    min_labels: int = MIN_REVIEW_LABELS,
) -> dict[str, Any]:
    """Refit confidence per retrieval mode from review labels; persist where
    ``KnowledgeBase.confidence_model`` reads. Raises ValueError when there are no labels."""
    rows = labels(kb)
    if not rows:
        raise ValueError("no review decisions recorded yet; approve or dismiss reviews first")
    report: dict[str, Any] = {"labels": len(rows), "models": {}, "notes": []}
    skipped = [r for r in rows if r["reason"] in NOT_AGAINST_RETRIEVAL]
    if skipped:
        report["notes"].append(
            f"{len(skipped)} dismissal(s) for right_precedent_wrong_cause left out: the reviewer "
            "confirmed the top result was the precedent"
        )
    usable = [r for r in rows if r["reason"] not in NOT_AGAINST_RETRIEVAL]
    by_key: dict[str, list[CaseRun]] = {}
    for row in usable:
        by_key.setdefault(row["model_key"], []).append(_label_run(row))
    fitted: dict[str, Any] = {}
    for key, runs in sorted(by_key.items()):
        positives = sum(r.top_correct for r in runs)
        enough = (
            len(runs) >= min_labels
            and positives >= MIN_PER_CLASS
            and len(runs) - positives >= MIN_PER_CLASS
        )
        extra: list[CaseRun] = []
        if not enough:
            extra = _self_test_runs(kb, key, tiers)
        source = f"fitted on {len(runs)} review labels ({positives} approved as precedent)"
        if extra:
            source += f" + {len(extra)} self-test cases of this knowledge base"
            report["notes"].append(
                f"{key}: {len(runs)} review labels ({positives} positive) are too few to fit "
                f"alone (want >= {min_labels}, >= {MIN_PER_CLASS} of each class); combined with "
                f"{len(extra)} self-test cases (the sample-KB recipe of the shipped defaults)"
            )
        fit_half, held_half = runs[::2], runs[1::2] or runs
        model = fit_confidence([*fit_half, *extra], source, held_half)
        kept, why = beats(model, kb.confidence_model(key), as_labelled(held_half, "review"))
        if kept:
            fitted[key] = {**model.as_dict(), "fitted_at": now()}
        report["models"][key] = {
            "kept": kept,
            "precedence": why,
            "review_labels": len(runs),
            "positive": positives,
            "self_test_cases": len(extra),
            "lo": model.lo,
            "hi": model.hi,
            "weights": dict(model.weights),
            "bias": model.bias,
            "source": source,
        }
    if persist and fitted:
        stored = kb.store.get_json("confidence_models") or {}
        stored.update(fitted)
        kb.store.set_json("confidence_models", stored)
    return report


def _self_test_runs(kb: KnowledgeBase, key: str, tiers: Sequence[str]) -> list[CaseRun]:
    mode = _mode(key)
    dense_weight = None
    if mode == "hybrid":
        gate = kb.gate()
        dense_weight = gate.weights.dense if gate.dense_trusted else None
    cases = self_test_cases(kb.store, tiers)
    return [run_case(kb, c, mode, tiers=tiers, dense_weight=dense_weight) for c in cases]


def reviewed_figures(kb: KnowledgeBase) -> dict[str, Any] | None:
    """The live confidence models' figures on the queries reviewers decided on (None before the
    first decision): what people actually typed, against the self-made cases of ``stats``'s
    held-out line. A label is 1 when the reviewer confirmed the top result as the precedent."""
    rows = labels(kb)
    if not rows:
        return None
    from seenbefore.evaluation.fitting import figures

    out: dict[str, Any] = {}
    for key in sorted({r["model_key"] for r in rows}):
        model = kb.confidence_model(key)
        if model is None:
            continue
        mine = [_label_run(r) for r in rows if r["model_key"] == key]
        out[key] = figures(model, as_labelled(mine, "review")).get("all", {})
    return out or None


def maybe_refit(kb: KnowledgeBase, *, every: int | None = None) -> dict[str, Any] | None:
    """Refit from the review labels once ``every`` new ones arrived since the last refit (each
    approval, dismissal and feedback adds one): the same fit as ``calibrate --from-reviews``,
    kept per mode only when it beats the live model on the held-out labels. None when it was not
    due. A fit that cannot run (labels of one class, too few) is recorded with its reason; it
    never fails the decision that triggered it."""
    every = REFIT_EVERY if every is None else every
    count = int(kb.store.query("SELECT COUNT(*) AS n FROM calibration_labels")[0]["n"])
    last = kb.store.get_json(REFIT_RECORD) or {}
    if every <= 0 or count - int(last.get("labels", 0)) < every:
        return None
    metas = kb.store.documents_meta(kb.store.list_ids(None))
    tiers = sorted({m.postmortem.access_tier for m in metas.values()}) or ["general"]
    record: dict[str, Any] = {"labels": count, "at": now()}
    try:
        report = fit_from_reviews(kb, tiers=tiers, persist=True)
        record["kept"] = {k: bool(m["kept"]) for k, m in report["models"].items()}
        record["precedence"] = {k: m["precedence"] for k, m in report["models"].items()}
    except ValueError as exc:
        report = {"error": str(exc)}
        record["error"] = str(exc)
    kb.store.set_json(REFIT_RECORD, record)
    return report
