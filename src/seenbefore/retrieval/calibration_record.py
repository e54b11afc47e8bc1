"""Reading a knowledge base's self-calibration record (written by evaluation/selfcal.py): the
dense weight it measured and the one line that says which confidence model is live. Pure
functions on the stored dict, below kb so that searching never imports the fitting code."""

from __future__ import annotations

from typing import Any

RECORD = "self_calibration"  # the store's meta key holding the record


def self_gate(record: dict[str, Any] | None, family: str) -> dict[str, Any] | None:
    """The dense weight self-calibration measured for ``family`` (None when it did not)."""
    gate = ((record or {}).get("modes") or {}).get("gate")
    if not gate or not gate.get("kept") or record is None or record.get("family") != family:
        return None
    return {"dense": gate["dense"], "source": gate["source"]}


def describe(record: dict[str, Any] | None, key: str | None = None) -> str:
    """One line: which confidence model is live for ``key`` (default: the first kept mode),
    fitted on what, with its held-out figures -- for ``stats``, ``search --explain``, the demo."""
    if not record:
        return "shipped defaults (this KB was never self-calibrated: run `seenbefore reindex`)"
    modes = {k: m for k, m in (record.get("modes") or {}).items() if k != "gate"}
    if key is None:
        key = next((k for k, m in modes.items() if m.get("kept")), next(iter(modes), None))
    mode = modes.get(key or "")
    if mode is None:
        return f"shipped defaults: {record.get('reason', 'no self-calibration for this mode')}"
    h = mode.get("held_out") or {}
    figures = (
        f"held-out self-test AUROC {h.get('auroc_precedent_vs_none')}, novel precision "
        f"{h.get('novel_precision')} recall {h.get('novel_recall')}, ECE {h.get('ece')}, "
        f"Hit@1 {h.get('hit_at_1')}"
    )
    if not mode.get("kept"):
        return f"shipped default for {key} ({mode.get('reason')}; the fit had {figures})"
    model = mode.get("model") or {}
    precedent = model.get("precedent") or {}
    verdict = (
        f"novel when P(precedent) < {precedent['threshold']}"
        if precedent
        else f"novel below confidence {model.get('threshold')}"
    )
    if record.get("verdict_cases"):
        verdict += f" (verdict fitted on {record['verdict_cases']})"
    return (
        f"{key}: self-calibrated on {record.get('fit_cases')} cases made from this KB's "
        f"{record.get('documents')} documents, {verdict}; {figures}"
    )
