"""A knowledge base that calibrates itself.

When a KB is ingested or changes materially (``MATERIAL_CHANGE`` of its documents, or on
``reindex``), it makes labelled cases from its own documents -- each document's detection /
summary / first section opening as a query, (a) with the document present: the answer is that
document, and (b) with it left out: the answer is "no precedent" -- and, on one half of the
documents, fits the trust gate's dense weight (production fuser and depth), the confidence model
and the novelty threshold of every mode it can serve (sparse-only always; the gated hybrid when
vectors exist). On the other half it checks them against the shipped defaults and keeps a fit
only if its held-out Brier score beats theirs. The record says what is live and why.

A query copied from a document matches it far better than a real first report does (the real
one is written before the cause is known, in other words), so each self-made query is a
known-item simulation (Azzopardi, de Rijke & Balog, SIGIR 2007): every word of the opening is
kept with probability 1 - ``NOISE`` and otherwise replaced by a word drawn from the whole
collection, and its length is drawn uniformly from ``MIN_QUERY_WORDS`` to ``QUERY_WORDS``
words (alerts are short, first status updates longer). Both are fixed a priori, not tuned on
any dev set.

The novelty threshold is an operating point: the largest recall of the "no precedent" verdict
whose precision on the fit half is at least ``FIT_PRECISION`` (so that held out it holds ``NOVEL_PRECISION``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import WEIGHT_GRID
from seenbefore.evaluation.cases import Case
from seenbefore.evaluation.cloze import cloze_cases, document_of, opening_section, shadow_kb
from seenbefore.evaluation.verdict import (
    FIT_PRECISION,
    FIT_RECALL,
    NOVEL_PRECISION,
    fit_mode,
    held_out_figures,
    novel_threshold,
)
from seenbefore.retrieval.calibration_record import RECORD, describe, self_gate
from seenbefore.retrieval.embedders import Embedder, Matrix
from seenbefore.retrieval.hybrid import SearchOptions

if TYPE_CHECKING:
    from seenbefore.evaluation.runner import CaseRun
    from seenbefore.kb import KnowledgeBase

MIN_DOCUMENTS = 20  # below this the KB is too small to split into fit and check halves
MATERIAL_CHANGE = 0.10  # share of documents added, changed or removed that triggers a refit
MAX_DOCUMENTS = 400  # documents sampled for cases (keeps ingest of a large KB bounded)
QUERY_WORDS = 40
MIN_QUERY_WORDS = 6  # self-made queries run from alert-short to first-update long
NOISE = 0.3  # share of a self-made query's words replaced by collection words
MIN_GAIN = 0.01  # held-out MRR gain dense must show to get a non-zero weight
__all__ = [  # the verdict's pieces are re-exported: callers import them from here
    "FIT_PRECISION",
    "FIT_RECALL",
    "NOVEL_PRECISION",
    "describe",
    "fit_mode",
    "held_out_figures",
    "maybe_self_calibrate",
    "novel_threshold",
    "self_calibrate",
    "self_cases",
    "self_gate",
]
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def self_query(pm: Any) -> str:
    """What an on-call engineer would know first: the opening sentences (up to QUERY_WORDS
    words) of the detection, summary or timeline section, else the first section."""
    section = opening_section(pm)
    text = section.text if section is not None else pm.title
    if section is not None and section.key == "timeline":
        text = next((ln for ln in text.splitlines() if ln.strip()), text)
    words: list[str] = []
    for sentence in _SENTENCE.split(" ".join(text.split())):
        if words and len(words) + len(sentence.split()) > QUERY_WORDS:
            break
        words.extend(sentence.split())
    return " ".join(words[:QUERY_WORDS])


def simulate(query: str, collection: Sequence[str], seed: str, noise: float = NOISE) -> str:
    """``query`` with each word replaced, with probability ``noise``, by a word drawn from the
    collection language model (a random word of a random chunk), deterministically per seed."""
    if not collection or noise <= 0:
        return query
    rng = random.Random(seed)
    out = []
    for word in query.split():
        if rng.random() < noise:
            words = rng.choice(collection).split()
            word = rng.choice(words) if words else word
        out.append(word)
    return " ".join(out)


def self_cases(
    kb: KnowledgeBase, *, seed: int = 0, noise: float = NOISE
) -> tuple[list[Case], list[Case], list[str]]:
    """(fit cases, held-out cases, tiers): a precedent and a no-precedent case per document,
    split by document so a document's two cases fall on the same side."""
    ids = kb.store.list_ids(None)
    metas = kb.store.documents_meta(ids)
    current = sorted(d for d, s in metas.items() if s.effective_status == "current")
    tiers = sorted({s.postmortem.access_tier for s in metas.values()}) or ["general"]
    rng = random.Random(seed)
    if len(current) > MAX_DOCUMENTS:
        current = sorted(rng.sample(current, MAX_DOCUMENTS))
    order = list(current)
    rng.shuffle(order)
    fit_ids = set(order[: len(order) // 2])
    collection = [t for t in kb.store.chunk_rows().texts if t.strip()]
    fit: list[Case] = []
    held: list[Case] = []
    for doc in current:
        opening = self_query(metas[doc].postmortem).split()
        length = random.Random(f"{seed}:{doc}:length").randint(MIN_QUERY_WORDS, QUERY_WORDS)
        query = simulate(" ".join(opening[:length]), collection, f"{seed}:{doc}", noise)
        if not query:
            continue
        pair = [
            Case(id=f"self:{doc}", query=query, expected=(doc,), tags=("self",)),
            Case(
                id=f"self-novel:{doc}",
                query=query,
                expect_novel=True,
                tags=("self", "left-out"),
                exclude=(doc,),
            ),
        ]
        (fit if doc in fit_ids else held).extend(pair)
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


def _mrr(runs: Sequence[CaseRun]) -> float:
    from seenbefore.evaluation.runner import reciprocal_rank

    scored = [r for r in runs if not r.case.expect_novel]
    return sum(reciprocal_rank(r.ranking, r.case.relevant) for r in scored) / max(1, len(scored))


def self_calibrate(kb: KnowledgeBase, *, force: bool = False, seed: int = 0) -> dict[str, Any]:
    """Fit on self-made cases, check on the other half, persist what wins (see module doc)."""
    from seenbefore.kb import shipped_defaults

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
    record.update({"fit_cases": len(fit), "held_out_cases": len(held), "seed": seed})
    # the openings as written: the gate's cases, and the queries of the inverse-cloze ones
    clean_fit, clean_held, _ = self_cases(kb, seed=seed, noise=0.0)
    verdict_fit, verdict_held, record["verdict_cases"] = _verdict_runs(
        kb, (fit, held), clean_fit + clean_held, tiers
    )
    saved_embedder = kb.query_embedder
    family = kb.dense_family()
    record["family"] = family
    has_dense = family != "none" and kb.index().dense is not None and kb.embedder() is not None
    if has_dense:
        inner = saved_embedder or kb.embedder()
        assert inner is not None
        kb.query_embedder = _Memo(inner)
    modes: dict[str, Any] = {}
    try:
        base = SearchOptions(k=10)
        weight = 0.0
        if has_dense:
            # the gate is measured on the openings as written: collection words dropped into a
            # query garble a sentence embedding far more than BM25, so noisy queries would
            # switch dense off where, on real first reports, it helps
            weight, modes["gate"] = _fit_gate(kb, clean_fit, clean_held, tiers, base)
        options = {"sparse": replace(base, mode="sparse")}
        if weight > 0:
            options[f"hybrid:{family}"] = replace(base, mode="hybrid", dense_weight=weight)
        defaults = shipped_defaults()["confidence"]
        for key, opts in options.items():
            described = (
                f"self-calibrated on {len(fit)} cases made from this KB ({documents} documents"
                f"{', dense weight ' + str(weight) if key != 'sparse' else ''})"
            )
            default = defaults.get(key)
            modes[key] = fit_mode(
                key,
                _runs(kb, fit, tiers, opts),
                _runs(kb, held, tiers, opts),
                ConfidenceModel.from_dict(default) if default else None,
                described,
                # the verdict comes from the lexical evidence, fitted on sparse runs: collection
                # words in a self-made query garble its embedding, so a verdict fitted on
                # hybrid runs does not transfer (on the AWS novelty split it flagged none of
                # the 264 left-out events; benchmarks/results/realtext.json)
                precedent_runs=verdict_fit,
                verdict_runs=verdict_held,
            )
    finally:
        kb.query_embedder = saved_embedder
    record["modes"] = modes
    kept = [k for k, m in modes.items() if k != "gate" and m.get("kept")]
    record["live"] = "self-calibrated: " + ", ".join(kept) if kept else "shipped defaults"
    record["reason"] = "; ".join(f"{k}: {m['reason']}" for k, m in modes.items())
    kb.store.set_json(RECORD, record)
    return record


def _verdict_runs(
    kb: KnowledgeBase,
    halves: tuple[Sequence[Case], Sequence[Case]],
    clean: Sequence[Case],
    tiers: Sequence[str],
) -> tuple[list[CaseRun], list[CaseRun], str]:
    """Sparse runs of the verdict's cases on both halves (evaluation/cloze.py: inverse cloze
    where a document's rest is at least CLOZE_RATIO times its opening, else the copied case)
    and a line saying so."""
    fit, held = halves
    stored = kb.store.documents_meta(kb.store.list_ids(None))
    postmortems = {doc: s.postmortem for doc, s in stored.items()}
    cases, cut = cloze_cases(postmortems, [*fit, *held], clean)
    fit_ids = {c.id for c in fit}
    shadow = shadow_kb(kb.settings, {**postmortems, **cut})
    try:
        sparse = SearchOptions(k=10, mode="sparse")
        runs = _runs(shadow, cases, tiers, sparse)
    finally:
        shadow.close()
    documents = len({document_of(c) for c in cases})
    line = f"inverse cloze for {len(cut)} of {documents} documents, copied openings for the rest"
    return (
        [r for r in runs if r.case.id in fit_ids],
        [r for r in runs if r.case.id not in fit_ids],
        line,
    )


def _fit_gate(
    kb: KnowledgeBase,
    fit: Sequence[Case],
    held: Sequence[Case],
    tiers: Sequence[str],
    base: SearchOptions,
) -> tuple[float, dict[str, Any]]:
    """Dense weight by MRR of the production hybrid search (fuser and depth as served), chosen
    on the fit half; kept when, held out, it beats sparse-only by MIN_GAIN; otherwise the
    shipped weight stays (self-made cases are biased toward BM25, see below)."""
    positives = [c for c in fit if not c.expect_novel]
    held_pos = [c for c in held if not c.expect_novel]

    def mrr(cases: Sequence[Case], weight: float) -> float:
        return _mrr(_runs(kb, cases, tiers, replace(base, mode="hybrid", dense_weight=weight)))

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
    if best > 0 and at - sparse > MIN_GAIN:
        weight, kept, source = best, True, f"self-calibrated: {figures}"
    else:
        # self-made queries are the documents' own words, which favours BM25: they can show
        # that dense helps, never that it does not (on real first reports it did; see
        # benchmarks/results/realtext.json), so the shipped weight stays
        weight, kept = shipped, False
        source = f"shipped weight kept: self-made cases did not show dense helping ({figures})"
    return weight, {
        "kept": kept,
        "dense": weight,
        "source": source,
        "reason": source,
        "fit_sweep": {str(w): round(v, 4) for w, v in sweep.items()},
    }
