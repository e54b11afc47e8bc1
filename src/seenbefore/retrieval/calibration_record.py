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
    fitted on what, with its held-out figures and what they were measured on -- for ``stats``,
    ``search --explain``, the demo."""
    if not record:
        return "shipped defaults (this KB was never self-calibrated: run `seenbefore reindex`)"
    modes = {k: m for k, m in (record.get("modes") or {}).items() if k != "gate"}
    if key is None:
        key = next((k for k, m in modes.items() if m.get("kept")), next(iter(modes), None))
    mode = modes.get(key or "")
    if mode is None:
        return f"shipped defaults: {record.get('reason', 'no self-calibration for this mode')}"
    h = (mode.get("held_out") or {}).get("all") or {}
    figures = (
        f"held-out on self-made cases: false 'no precedent' "
        f"{_pct(h.get('false_no_precedent_when_first'))} when the precedent is first, "
        f"'no precedent' {_pct(h.get('no_precedent_when_wrong'))} and 'precedent found' "
        f"{_pct(h.get('found_when_wrong'))} when the top result is not one, ECE {h.get('ece')}, "
        f"AUROC {h.get('auroc')} (self-made cases flatter: what people type scores lower)"
    )
    if not mode.get("kept"):
        return f"shipped or earlier model for {key} ({mode.get('reason')}; the fit had {figures})"
    model = mode.get("model") or {}
    return (
        f"{key}: self-calibrated on {record.get('fit_cases')} cases made from this KB's "
        f"{record.get('documents')} documents in {len(record.get('styles') or [])} styles; "
        f"'no precedent' at p <= {model.get('lo')}, 'precedent found' at p >= {model.get('hi')}; "
        f"{figures}"
    )


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * float(value):.0f}%"
