"""A knowledge base that calibrates itself.

When a KB is ingested or changes materially (``MATERIAL_CHANGE`` of its documents, or on
``reindex``), it makes labelled cases from its own documents and fits ``p_precedent`` and the
verdict's thresholds with the one fit pipeline (evaluation/fitting.py), for every mode it can
serve (sparse-only always; the gated hybrid when vectors exist):

* **queries in several styles** per document (evaluation/styles.py: a pager line, a vague status
  update, the opening with collection words mixed in, another section), each searched with the
  document present and with it left out, and off-domain text (``offdomain.txt``) that no
  postmortem is a precedent for;
* **labels by the one definition of a precedent**: the top result is a precedent when it is the
  document itself, or another of the same incident type, or of the same title (a recurrence);
  a left-out document's query has a precedent only through the latter two;
* documents (and off-domain lines) split in two halves: the model is fitted on one, its
  thresholds set and its figures measured on the other, and it replaces the live model (a
  previous fit, ``seenbefore calibrate``'s, or the shipped one) only when its style-balanced
  log-loss there is lower (fitting.beats).

The dense weight of the gate is chosen on the openings as written (collection words dropped into
a query garble a sentence embedding far more than BM25) and can only be raised here: self-made
queries are the documents' own words, which favours BM25. Per query, dense votes only when sparse
is unsure (retrieval/hybrid.py), which is how the default turns dense down where it hurts.
A smaller KB than ``MIN_DOCUMENTS`` keeps the shipped defaults and says why.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import WEIGHT_GRID
from seenbefore.evaluation import fitting, styles
from seenbefore.evaluation.cases import Case
from seenbefore.retrieval.calibration_record import RECORD, describe, self_gate
from seenbefore.retrieval.embedders import Embedder, Matrix
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import Postmortem

if TYPE_CHECKING:
    from seenbefore.evaluation.runner import CaseRun
    from seenbefore.kb import KnowledgeBase

MIN_DOCUMENTS = 20  # below this the KB is too small to split into fit and check halves
MATERIAL_CHANGE = 0.10  # share of documents added, changed or removed that triggers a refit
MAX_DOCUMENTS = 150  # documents sampled for cases (keeps ingest of a large KB bounded)
MIN_GAIN = 0.01  # held-out MRR gain dense must show to get a larger weight
# The prior a fit assumes: two of three queries have a precedent in the KB (an on-call engineer
# mostly asks about what has happened before). Each document gives one case with it present and
# one with it left out, so a left-out case weighs half (the level of p_precedent follows it).
PRESENT_SHARE = 2 / 3
__all__ = ["describe", "maybe_self_calibrate", "self_calibrate", "self_cases", "self_gate"]


@dataclass(frozen=True)
class SelfCase:
    case: Case
    style: str
    document: str  # the document it was made from (the split is by document)


def precedents(pm: Postmortem, others: Sequence[Postmortem]) -> set[str]:
    """The other documents that count as ``pm``'s precedents: the same incident type, or the
    same title (a recurrence)."""
    title = " ".join(pm.title.lower().split())
    return {
        o.id
        for o in others
        if o.id != pm.id
        and ((pm.type and o.type == pm.type) or " ".join(o.title.lower().split()) == title)
    }


def self_cases(
    kb: KnowledgeBase, *, seed: int = 0, noise: bool = True
) -> tuple[list[SelfCase], list[SelfCase], list[str]]:
    """(fit cases, held-out cases, tiers): each sampled document's queries in every style it
    gives, with the document present and left out, plus the off-domain lines; split by
    document. ``noise``: False keeps the openings as written (for the gate)."""
    ids = kb.store.list_ids(None)
    metas = kb.store.documents_meta(ids)
    current = sorted(d for d, s in metas.items() if s.effective_status == "current")
    tiers = sorted({s.postmortem.access_tier for s in metas.values()}) or ["general"]
    rng = random.Random(seed)
    sampled = (
        sorted(rng.sample(current, MAX_DOCUMENTS)) if len(current) > MAX_DOCUMENTS else current
    )
    order = list(sampled)
    rng.shuffle(order)
    fit_ids = set(order[: len(order) // 2])
    collection = [t for t in kb.store.chunk_rows().texts if t.strip()]
    everyone = [metas[d].postmortem for d in current]
    fit: list[SelfCase] = []
    held: list[SelfCase] = []
    chosen = styles.STYLES if noise else ("opening",)
    for doc in sampled:
        pm = metas[doc].postmortem
        others = sorted(precedents(pm, everyone))
        for style in chosen:
            draw = random.Random(f"{seed}:{doc}:{style}")
            query = styles.style_query(pm, style, collection, draw, noise=noise)
            if not query:
                continue
            pair = [
                Case(
                    id=f"self:{style}:{doc}", query=query, expected=(doc,), alternates=tuple(others)
                ),
                Case(
                    id=f"self-out:{style}:{doc}",
                    query=query,
                    expected=tuple(others),
                    expect_novel=not others,
                    exclude=(doc,),
                ),
            ]
            (fit if doc in fit_ids else held).extend(SelfCase(c, style, doc) for c in pair)
    if noise:
        for i, line in enumerate(styles.off_domain_lines()):
            case = Case(id=f"off-domain:{i}", query=line, expect_novel=True)
            (fit if i % 2 == 0 else held).append(SelfCase(case, styles.OFF_DOMAIN, f"off:{i}"))
    return fit, held, tiers


def fingerprint(kb: KnowledgeBase) -> dict[str, str]:
    return {d: h for d, (h, _) in kb.store.fingerprints().items()}


def changed_share(kb: KnowledgeBase) -> float | None:
    """Share of documents added, changed or removed since the last self-calibration."""
    record = kb.store.get_json(RECORD)
    if not record or "fingerprint" not in record:
        return None
    before: dict[str, str] = record["fingerprint"]
    now = fingerprint(kb)
    changed = sum(before.get(d) != h for d, h in now.items()) + len(set(before) - set(now))
    return changed / max(1, len(before), len(now))


def maybe_self_calibrate(kb: KnowledgeBase, *, force: bool = False) -> dict[str, Any] | None:
    """Self-calibrate when never done, when ``MATERIAL_CHANGE`` of documents changed, or when
    ``force`` (reindex). Returns the new record, or None when nothing needed doing."""
    share = changed_share(kb)
    if not force and share is not None and share < MATERIAL_CHANGE:
        return None
    return self_calibrate(kb, force=True)


class _Memo:
    """Embeds each distinct query once while calibration repeats searches."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self._seen: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Matrix:
        import numpy as np

        missing = [t for t in texts if t not in self._seen]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self._seen[t] = v
        return np.stack([self._seen[t] for t in texts])


def _runs(
    kb: KnowledgeBase, cases: Sequence[Case], tiers: Sequence[str], options: SearchOptions
) -> list[CaseRun]:
    from seenbefore.evaluation.runner import timed_search

    return [timed_search(kb, c, c.query, tiers=tiers, options=options) for c in cases]


def labelled(runs: Sequence[CaseRun], made: Sequence[SelfCase]) -> list[fitting.Labelled]:
    left_out = (1 - PRESENT_SHARE) / PRESENT_SHARE
    return [
        fitting.Labelled(
            r.signals,
            bool(r.top_correct),
            s.style,
            bool(r.case.relevant),
            left_out if s.case.exclude else 1.0,
        )
        for r, s in zip(runs, made, strict=True)
    ]


def _mrr(runs: Sequence[CaseRun]) -> float:
    from seenbefore.evaluation.runner import reciprocal_rank

    scored = [r for r in runs if not r.case.expect_novel]
    return sum(reciprocal_rank(r.ranking, r.case.relevant) for r in scored) / max(1, len(scored))


def self_calibrate(kb: KnowledgeBase, *, force: bool = False, seed: int = 0) -> dict[str, Any]:
    """Fit on self-made cases, check on the other half, persist what wins (see module doc)."""
    documents = len(kb.store.list_ids(None))
    record: dict[str, Any] = {"documents": documents, "fingerprint": fingerprint(kb)}
    if documents < MIN_DOCUMENTS:
        record["live"] = "shipped defaults"
        record["reason"] = (
            f"{documents} documents, below MIN_DOCUMENTS = {MIN_DOCUMENTS}: too few to fit on "
            "one half and check on the other; shipped defaults stay live"
        )
        kb.store.set_json(RECORD, record)
        return record
    fit, held, tiers = self_cases(kb, seed=seed)
    record.update(
        {
            "fit_cases": len(fit),
            "held_out_cases": len(held),
            "seed": seed,
            "styles": sorted({s.style for s in fit}),
            "fitted_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )
    saved_embedder = kb.query_embedder
    family = kb.dense_family()
    record["family"] = family
    has_dense = family != "none" and kb.index().dense is not None and kb.embedder() is not None
    if has_dense:
        inner = saved_embedder or kb.embedder()
        if inner is not None:
            kb.query_embedder = _Memo(inner)
    modes: dict[str, Any] = {}
    try:
        base = SearchOptions(k=10)
        weight = 0.0
        if has_dense:
            clean_fit, clean_held, _ = self_cases(kb, seed=seed, noise=False)
            weight, modes["gate"] = _fit_gate(kb, clean_fit, clean_held, tiers, base)
        options = {"sparse": replace(base, mode="sparse")}
        if weight > 0:
            options[f"hybrid:{family}"] = replace(
                base, mode="hybrid", dense_weight=weight, dense_vote=True
            )
        for key, opts in options.items():
            described = (
                f"self-calibrated on {len(fit)} cases made from this KB ({documents} documents; "
                f"styles {', '.join(record['styles'])}"
                f"{'; dense weight ' + str(weight) if key != 'sparse' else ''})"
            )
            fit_rows = labelled(_runs(kb, [s.case for s in fit], tiers, opts), fit)
            held_rows = labelled(_runs(kb, [s.case for s in held], tiers, opts), held)
            modes[key] = fit_mode(key, fit_rows, held_rows, kb.confidence_model(key), described)
    finally:
        kb.query_embedder = saved_embedder
    record["modes"] = modes
    kept = [k for k, m in modes.items() if k != "gate" and m.get("kept")]
    record["live"] = "self-calibrated: " + ", ".join(kept) if kept else "shipped defaults"
    record["reason"] = "; ".join(f"{k}: {m['reason']}" for k, m in modes.items())
    kb.store.set_json(RECORD, record)
    return record


def fit_mode(
    key: str,
    fit_rows: Sequence[fitting.Labelled],
    held_rows: Sequence[fitting.Labelled],
    live: ConfidenceModel | None,
    described: str,
) -> dict[str, Any]:
    """One mode's fit, kept only when it beats ``live`` on the held-out half."""
    try:
        made = fitting.fit(fit_rows, held_rows, source=described)
    except ValueError as exc:
        return {"key": key, "kept": False, "reason": f"could not fit: {exc}"}
    kept, reason = fitting.beats(made.model, live, held_rows)
    return {
        "key": key,
        "kept": kept,
        "reason": reason,
        "model": made.model.as_dict(),
        "held_out": made.held_out,
        "rule": made.rule,
    }


def _fit_gate(
    kb: KnowledgeBase,
    fit: Sequence[SelfCase],
    held: Sequence[SelfCase],
    tiers: Sequence[str],
    base: SearchOptions,
) -> tuple[float, dict[str, Any]]:
    """Dense weight by MRR of the production hybrid search (fuser and depth as served), chosen
    on the fit half's present cases; kept when, held out, it beats sparse-only by MIN_GAIN;
    otherwise the shipped weight stays (self-made cases are biased toward BM25)."""
    positives = [s.case for s in fit if s.case.id.startswith("self:")]
    held_pos = [s.case for s in held if s.case.id.startswith("self:")]

    def mrr(cases: Sequence[Case], weight: float) -> float:
        options = replace(base, mode="hybrid", dense_weight=weight, dense_vote=True)
        return _mrr(_runs(kb, cases, tiers, options))

    sweep = {w: mrr(positives, w) for w in WEIGHT_GRID}
    best = max(sweep, key=lambda w: (sweep[w], -w))
    shipped = kb.gate_default().dense
    at, sparse = mrr(held_pos, best), mrr(held_pos, 0.0)
    at_shipped = at if shipped == best else mrr(held_pos, shipped)
    figures = (
        f"dense weight {best} chosen on {len(positives)} self-made cases; held-out MRR "
        f"{at:.3f} vs sparse-only {sparse:.3f} and shipped weight {shipped} {at_shipped:.3f} "
        f"on {len(held_pos)}"
    )
    if best > shipped and at - max(sparse, at_shipped) > MIN_GAIN:
        weight, kept, source = best, True, f"self-calibrated: {figures}"
    else:
        weight, kept = shipped, False
        source = f"shipped weight kept: self-made cases did not show more dense helping ({figures})"
    return weight, {
        "kept": kept,
        "dense": weight,
        "source": source,
        "reason": source,
        "fit_sweep": {str(w): round(v, 4) for w, v in sweep.items()},
    }
