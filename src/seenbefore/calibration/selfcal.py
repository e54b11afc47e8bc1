"""A knowledge base that calibrates itself.

When a KB is ingested or changes materially (``MATERIAL_CHANGE`` of its documents, or on
``reindex``), it makes labelled cases from its own documents and fits ``p_precedent`` and the
verdict's thresholds with the one fit pipeline (calibration/fitting.py), for every mode it can
serve (sparse-only always; the gated hybrid when vectors exist):

* **queries in several styles** per document (calibration/styles.py: a pager line, a vague status
  update, the opening with collection words mixed in, another section), each searched with the
  document present and with it left out, and off-domain text (``offdomain.txt``) that no
  postmortem is a precedent for;
* **labels by the one definition of a precedent** (labels.py): the top result is a precedent
  when it is the document itself or one of its known precedents -- linked by people or by the
  text (``cited``, ``related``, ``supersedes``, an id or title written in the body), or of the
  same failure mode (the author's ``type``, else a confidently inferred one). A left-out
  document's query is shaped like a recurrence: its precedents are the known ones that remain.
  When its top result is not one of them, the case is a negative only when that result is
  confidently of another failure mode; otherwise nothing says whether it is a precedent, and
  the case stays out of the fit;
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

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from seenbefore.calibration import fitting, labels, people, record, styles
from seenbefore.calibration.cases import Case
from seenbefore.calibration.runs import CaseRun, reciprocal_rank, timed_search
from seenbefore.calibration.weights import WEIGHT_GRID, pick_weight
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.retrieval.embedders import Embedder, Matrix
from seenbefore.retrieval.hybrid import SearchOptions

if TYPE_CHECKING:
    from seenbefore.kb import KnowledgeBase

MIN_DOCUMENTS = 20  # below this the KB is too small to split into fit and check halves
MATERIAL_CHANGE = 0.10  # share of documents added, changed or removed that triggers a refit
MAX_DOCUMENTS = 150  # documents sampled for cases (keeps ingest of a large KB bounded)
# The prior a fit assumes: two of three queries have a precedent in the KB (an on-call engineer
# mostly asks about what has happened before). Each document gives one case with it present and
# one with it left out, so a left-out case weighs half (the level of p_precedent follows it).
PRESENT_SHARE = 1 / 3
SELF = "self-calibration"  # who the record says wrote what self-calibration kept
__all__ = ["maybe_self_calibrate", "self_calibrate", "self_cases"]
Progress = Callable[[int, int], None]  # (searches done, searches in all)


@dataclass(frozen=True)
class SelfCase:
    case: Case
    style: str
    document: str  # the document it was made from (the split is by document)
    mode: str | None = None  # its failure mode when known (labels.mode)


def self_cases(
    kb: KnowledgeBase, *, seed: int = 0, noise: bool = True
) -> tuple[list[SelfCase], list[SelfCase], list[str]]:
    """(fit cases, held-out cases, tiers): each sampled document's queries in every style it
    gives, with the document present, left out, and (when dated) against only the documents
    dated before it -- the KB as it stood when that incident happened -- plus the off-domain
    lines; split by document. ``noise``: False keeps the openings as written (for the gate)."""
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
    known = labels.known(everyone)
    dated = {d: metas[d].postmortem.date for d in current}
    fit: list[SelfCase] = []
    held: list[SelfCase] = []
    chosen = styles.STYLES if noise else ("opening",)
    for doc in sampled:
        pm = metas[doc].postmortem
        others = sorted(known[doc].precedents)
        mode = known[doc].mode
        # the KB as it stood when this incident happened: only documents dated before it
        later = tuple(
            sorted(
                d
                for d, when in dated.items()
                if pm.date is not None and (when is None or when >= pm.date) and d != doc
            )
        )
        earlier = [o for o in others if o not in later]
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
            if later and len(later) < len(current) - 1:
                pair.append(
                    Case(
                        id=f"self-before:{style}:{doc}",
                        query=query,
                        expected=tuple(earlier),
                        expect_novel=not earlier,
                        exclude=(doc, *later),
                    )
                )
            (fit if doc in fit_ids else held).extend(SelfCase(c, style, doc, mode) for c in pair)
    if noise:
        for i, line in enumerate(styles.off_domain_lines()):
            case = Case(id=f"off-domain:{i}", query=line, expect_novel=True)
            (fit if i % 2 == 0 else held).append(SelfCase(case, styles.OFF_DOMAIN, f"off:{i}"))
    return fit, held, tiers


def modes_of(kb: KnowledgeBase) -> dict[str, str | None]:
    """Every current document's failure mode when known (labels.mode)."""
    metas = kb.store.documents_meta(kb.store.list_ids(None))
    return {d: labels.mode(m.postmortem) for d, m in metas.items()}


def fingerprint(kb: KnowledgeBase) -> dict[str, str]:
    return {d: h for d, (h, _) in kb.store.fingerprints().items()}


def changed_share(kb: KnowledgeBase) -> float | None:
    """Share of documents added, changed or removed since the last self-calibration."""
    before: dict[str, str] | None = record.load(kb.store).self_run.get("fingerprint")
    if before is None:
        return None
    now = fingerprint(kb)
    changed = sum(before.get(d) != h for d, h in now.items()) + len(set(before) - set(now))
    return changed / max(1, len(before), len(now))


def maybe_self_calibrate(
    kb: KnowledgeBase, *, force: bool = False, progress: Progress | None = None
) -> dict[str, Any] | None:
    """Self-calibrate when never done, when ``MATERIAL_CHANGE`` of documents changed, or when
    ``force`` (reindex). Returns the new record, or None when nothing needed doing.
    ``progress(done, total)``: searches run (they are the time it takes)."""
    share = changed_share(kb)
    if not force and share is not None and share < MATERIAL_CHANGE:
        return None
    return self_calibrate(kb, force=True, progress=progress)


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


class _Searches:
    """Counts the searches a self-calibration runs for a progress callback ``(done, total)``:
    the total is estimated up front (the gate's sweep and each mode's cases) and follows the
    count when more run; :meth:`finish` reports the run complete."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.done, self.total = progress, 0, max(1, total)

    def tick(self) -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        if self.progress is not None:
            self.progress(self.done, self.total)

    def expect(self, more: int) -> None:
        """What is left is now known: ``more`` searches."""
        self.total = max(1, self.done + more)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.done)


def _runs(
    kb: KnowledgeBase,
    cases: Sequence[Case],
    tiers: Sequence[str],
    options: SearchOptions,
    searches: _Searches | None = None,
) -> list[CaseRun]:
    out = []
    for c in cases:
        out.append(timed_search(kb, c, c.query, tiers=tiers, options=options))
        if searches is not None:
            searches.tick()
    return out


def mode_options(base: SearchOptions, family: str, weight: float) -> dict[str, SearchOptions]:
    """The searches a KB's confidence models score, by model key: sparse-only always, and the
    gated hybrid of ``family`` when dense has a ``weight`` (voting only while sparse is unsure,
    as a search is served)."""
    options = {"sparse": replace(base, mode="sparse")}
    if weight > 0:
        options[f"hybrid:{family}"] = replace(
            base, mode="hybrid", dense_weight=weight, dense_vote=True
        )
    return options


def labelled_searches(
    kb: KnowledgeBase,
    made: Sequence[SelfCase],
    tiers: Sequence[str],
    options: SearchOptions,
    modes: Mapping[str, str | None],
    searches: _Searches | None = None,
) -> list[fitting.Labelled]:
    """``made``'s cases searched with ``options`` and labelled (:func:`labelled`)."""
    return labelled(_runs(kb, [s.case for s in made], tiers, options, searches), made, modes)


def labelled(
    runs: Sequence[CaseRun], made: Sequence[SelfCase], modes: Mapping[str, str | None]
) -> list[fitting.Labelled]:
    """The fit's rows: a present case is right when its top result is the document or a known
    precedent; a left-out one likewise, and wrong only when its top result is confidently of
    another failure mode (else it is left out: nothing says whether the top is a precedent).
    Left-out cases weigh by the prior (``PRESENT_SHARE``)."""
    left_out = (1 - PRESENT_SHARE) / PRESENT_SHARE
    rows = []
    for r, s in zip(runs, made, strict=True):
        right = bool(r.top_correct)
        out = bool(s.case.exclude)
        unknown = out and not right and r.ranking
        if unknown and not labels.mode_differs(s.mode, modes.get(r.ranking[0])):
            continue
        rows.append(
            fitting.Labelled(
                r.signals,
                right,
                s.style,
                bool(r.case.relevant),
                left_out if out else 1.0,
                recurrence=out and right,
            )
        )
    return rows


def _mrr(runs: Sequence[CaseRun]) -> float:
    scored = [r for r in runs if not r.case.expect_novel]
    return sum(reciprocal_rank(r.ranking, r.case.relevant) for r in scored) / max(1, len(scored))


def self_calibrate(
    kb: KnowledgeBase, *, force: bool = False, seed: int = 0, progress: Progress | None = None
) -> dict[str, Any]:
    """Fit on self-made cases, check on the other half, keep what wins (see module doc).
    Returns the run's summary (also stored as the record's ``self_run``)."""
    documents = len(kb.store.list_ids(None))
    run: dict[str, Any] = {"documents": documents, "fingerprint": fingerprint(kb)}
    if documents < MIN_DOCUMENTS:
        run["live"] = "shipped defaults"
        run["reason"] = (
            f"{documents} documents, below MIN_DOCUMENTS = {MIN_DOCUMENTS}: too few to fit on "
            "one half and check on the other; shipped defaults stay live"
        )
        record.save_run(kb.store, run)
        return run
    fit, held, tiers = self_cases(kb, seed=seed)
    modes = modes_of(kb)
    run.update(
        {
            "fit_cases": len(fit),
            "held_out_cases": len(held),
            "seed": seed,
            "styles": sorted({s.style for s in fit}),
            "fitted_at": record.now(),
            "known_modes": sum(m is not None for m in modes.values()),
        }
    )
    saved_embedder = kb.query_embedder
    family = kb.dense_family()
    run["family"] = family
    has_dense = family != "none" and kb.index().dense is not None and kb.embedder() is not None
    if has_dense:
        inner = saved_embedder or kb.embedder()
        if inner is not None:
            kb.query_embedder = _Memo(inner)
    modes_fitted: dict[str, Any] = {}
    said = people.trusted(people.labels(kb.store))
    rows_by_key: dict[str, Any] = {}
    searches = _Searches(progress, 0)
    try:
        # the gate is chosen on the openings as written: every weight on the fit half's, at
        # most three held out
        clean_fit, clean_held = (
            self_cases(kb, seed=seed, noise=False)[:2] if has_dense else ([], [])
        )
        sweep = (
            sum(s.case.id.startswith("self:") for s in clean_fit) * len(WEIGHT_GRID)
            + sum(s.case.id.startswith("self:") for s in clean_held) * 3
        )
        searches.expect((len(fit) + len(held)) * (2 if has_dense else 1) + sweep)
        base = SearchOptions(k=10)
        weight = 0.0
        if has_dense:
            weight, modes_fitted["gate"] = _fit_gate(
                kb, clean_fit, clean_held, tiers, base, searches
            )
        options = mode_options(base, family, weight)
        searches.expect((len(fit) + len(held)) * len(options))
        for key, opts in options.items():
            described = (
                f"self-calibrated on {len(fit)} cases made from this KB ({documents} documents; "
                f"styles {', '.join(run['styles'])}"
                f"{'; dense weight ' + str(weight) if key != 'sparse' else ''})"
            )
            fit_rows = labelled_searches(kb, fit, tiers, opts, modes, searches)
            held_rows = labelled_searches(kb, held, tiers, opts, modes, searches)
            rows_by_key[key] = (fit_rows, held_rows)
            # people's labels on this mode's searches: half fitted, half checked (every
            # principal weighing the same, none more than people.MAX_PRINCIPAL_SHARE)
            said_rows = people.as_rows([p for p in said if p.model_key == key])
            fit_rows = [*fit_rows, *said_rows[::2]]
            held_rows = [*held_rows, *said_rows[1::2]]
            modes_fitted[key] = fit_mode(
                key, fit_rows, held_rows, kb.confidence_model(key), described
            )
    finally:
        kb.query_embedder = saved_embedder
    searches.finish()
    kept = [k for k, m in modes_fitted.items() if k != "gate" and m.get("kept")]
    run["modes"] = {
        k: {x: v for x, v in m.items() if x not in ("model", "weights")}
        for k, m in modes_fitted.items()
    }
    run["live"] = "self-calibrated: " + ", ".join(kept) if kept else "shipped or earlier models"
    run["reason"] = "; ".join(f"{k}: {m['reason']}" for k, m in modes_fitted.items())
    # the run's summary and whatever won, in one write of the record
    rec = replace(record.load(kb.store), self_run=run)
    gate = modes_fitted.get("gate")
    if gate and gate["kept"]:
        rec = rec.with_gate(family, record.gate_of(gate["weights"]), SELF, record.now())
    for key in kept:
        m = modes_fitted[key]
        rec = rec.with_model(
            key, record.live(m["model"], by=SELF, line=describe(run, key, m)), SELF
        )
    record.save(kb.store, rec)
    people.keep_cases(kb.store, run["fingerprint"], rows_by_key)
    return run


def describe(run: Mapping[str, Any], key: str, mode: Mapping[str, Any]) -> str:
    """One line for ``stats``, ``search --explain`` and the demo: which model is live for
    ``key``, fitted on what, with its held-out figures and what they were measured on."""
    h = (mode.get("held_out") or {}).get("all") or {}
    model: ConfidenceModel = mode["model"]
    return (
        f"{key}: self-calibrated on {run.get('fit_cases')} cases made from this KB's "
        f"{run.get('documents')} documents in {len(run.get('styles') or [])} styles; "
        f"'no precedent' at p <= {model.lo}, 'precedent found' at p >= {model.hi}"
        + (
            " (per shape of query, lo / hi: "
            + ", ".join(f"{s} {lo} / {hi}" for s, (lo, hi) in sorted(model.shapes.items()))
            + ")"
            if model.shapes
            else ""
        )
        + "; "
        f"held-out on self-made cases: false 'no precedent' "
        f"{_pct(h.get('false_no_precedent_when_first'))} when the precedent is first "
        f"({_pct(h.get('false_no_precedent_when_recurrence_first'))} for a recurrence), "
        f"'no precedent' {_pct(h.get('no_precedent_when_wrong'))} and 'precedent found' "
        f"{_pct(h.get('found_when_wrong'))} when the top result is not one, ECE {h.get('ece')}, "
        f"AUROC {h.get('auroc')} (self-made cases flatter: what people type scores lower)"
    )


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * float(value):.0f}%"


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
        "model": made.model,
        "held_out": made.held_out,
        "rule": made.rule,
    }


def _fit_gate(
    kb: KnowledgeBase,
    fit: Sequence[SelfCase],
    held: Sequence[SelfCase],
    tiers: Sequence[str],
    base: SearchOptions,
    searches: _Searches | None = None,
) -> tuple[float, dict[str, Any]]:
    """Dense weight by MRR of the production hybrid search (fuser and depth as served), chosen
    on the fit half's present cases and raised above the shipped weight only when, held out, it
    beats both sparse-only and the shipped weight (self-made cases are biased toward BM25)."""
    positives = [s.case for s in fit if s.case.id.startswith("self:")]
    held_pos = [s.case for s in held if s.case.id.startswith("self:")]

    def mrr(cases: Sequence[Case], weight: float) -> float:
        options = replace(base, mode="hybrid", dense_weight=weight, dense_vote=True)
        return _mrr(_runs(kb, cases, tiers, options, searches))

    shipped = kb.gate_default().dense
    weights, kept = pick_weight(
        positives,
        held_pos,
        lambda w, cases: mrr(cases, w),
        baseline=shipped,
        label="self-made cases",
    )
    return weights.dense, {
        "kept": kept,
        "dense": weights.dense,
        "source": weights.source,
        "reason": weights.source,
        "weights": weights,
        "fit_sweep": weights.evidence.get("fit_sweep"),
    }
