"""Why issue 31's verdict targets are unmet, measured: four probes on the dev replays of
benchmarks/verdict.py (the untyped sample KB replayed in date order, the AWS events replay), with
the golden cases, the AWS events and graphrca beside them where a change to the ranking could
cost them. Nothing here changes the product; each probe asks whether a change would help.

1. **ceiling**: how well the signals the confidence model reads separate "the top result is a
   precedent" from "there is none in the KB", on each replay's own queries: the AUROC of the
   shipped ``p_precedent`` beside a logistic regression fitted on that same set's signals
   (5-fold cross-validated, scikit-learn; an upper bound no KB-made fit can reach).
2. **thresholds**: on each replay cell, the share of right tops and of no-precedent queries
   below each ``lo`` (target: <= 10 % of right tops, >= 60 % of no-precedent), and of right and
   wrong tops at or above each ``hi`` (target: >= 40 % of right tops, <= 5 % of wrong tops):
   whether any threshold on the p we have meets both; ``best`` does it whatever the KB's scale
   of p (the sample KB's ``lo`` is near 0.04, the AWS one's near 0.6): the best ``lo`` and
   ``hi`` for the right tops' targets and what they give the others; ``live``, the pair the
   KB's own model gives that style's queries, by the shape of query each pair is for.
3. **mode rerank**: the default ranking's top 20 reordered by score x (1 + lambda x the
   agreement of the query's and each document's inferred failure modes, sum_m q(m) d(m)), the
   shipped classifier (never fitted on the sample KB); Hit@1 per lambda.
4. **dense weight**: Hit@1 of the default with the dense weight forced (the vote kept) beside
   the gate's and sparse alone.

    .venv/bin/python benchmarks/verdict_probes.py --shared ../shared/data [--write]

Writes benchmarks/results/verdict_probes.json with --write (command, commit, machine, date).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from provenance import RESULTS, provenance, write_results
from realtext import aws_events, aws_markdown, build_kb
from replays import aws_replay_queries, sample_replay_queries, untyped_copy
from seenbefore.core.confidence import SHAPES, auroc
from seenbefore.evaluation.cases import load_cases
from seenbefore.evaluation.external import category_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.failure_modes import ranked as mode_posterior
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters
from verdict import HELD_OUT, SAMPLE, TIERS, aws_queries, from_cases, run
from verdict_cells import Outcome, Query

LOS = (0.3, 0.4, 0.45, 0.5, 0.55, 0.575, 0.6, 0.65)
HIS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
LAMBDAS = (0.0, 0.05, 0.1, 0.25, 0.5)
DENSE = (None, 0.4, 0.3, 0.2, 0.1)


def _share(values: np.ndarray, test: np.ndarray) -> float | None:
    return round(float(np.mean(test)), 4) if len(values) else None


def ceiling(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    rows = [o for o in outcomes if not o.query.has_precedent or o.right()]
    names = sorted({k for o in rows for k in o.signals})
    x = np.array([[o.signals.get(k, 0.0) for k in names] for o in rows])
    y = np.array([o.query.has_precedent for o in rows], dtype=float)
    fitted = cross_val_predict(
        LogisticRegression(max_iter=2000), x, y, cv=5, method="predict_proba"
    )
    labels = [int(v) for v in y]
    ours = auroc([o.p for o in rows], labels)
    best = auroc([float(v) for v in fitted[:, 1]], labels)
    return {
        "right_first": int(y.sum()),
        "no_precedent": int(len(y) - y.sum()),
        "auroc_ours": round(ours, 4),
        "auroc_fitted_on_this_set_cv5": round(best, 4),
    }


def best(right: np.ndarray, wrong: np.ndarray, none: np.ndarray) -> dict[str, Any]:
    """Whatever the scale of a KB's p: the highest ``lo`` with at most 10 % of right tops below
    it and the share of no-precedent queries below that, and the lowest ``hi`` with at least
    40 % of right tops at or above it and the shares of wrong tops and no-precedent queries
    there -- whether *any* pair of thresholds on this p meets the Done-when's targets."""
    if not len(right):
        return {}
    ordered = np.sort(right)
    lo = float(ordered[math.floor(0.10 * len(ordered))])
    hi = float(ordered[::-1][math.ceil(0.40 * len(ordered)) - 1])
    none_below = _share(none, none < lo)
    none_above = _share(none, none >= hi)
    return {
        "lo": round(lo, 4),
        "right_below": _share(right, right < lo),
        "none_below": none_below,
        "hi": round(hi, 4),
        "right_at_or_above": _share(right, right >= hi),
        "wrong_at_or_above": _share(wrong, wrong >= hi),
        "none_at_or_above": none_above,
        "lo_targets_met": none_below is not None and none_below >= 0.6,
        "hi_targets_met": none_above is None or none_above <= 0.05,
    }


def thresholds(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    right = np.array([o.p for o in outcomes if o.query.has_precedent and o.right()])
    wrong = np.array([o.p for o in outcomes if o.query.has_precedent and not o.right()])
    none = np.array([o.p for o in outcomes if not o.query.has_precedent])
    return {
        "n": {"right": len(right), "wrong": len(wrong), "none": len(none)},
        "best": best(right, wrong, none),
        "lo": {
            str(lo): {
                "right_below": _share(right, right < lo),
                "none_below": _share(none, none < lo),
            }
            for lo in LOS
        },
        "hi": {
            str(hi): {
                "right_at_or_above": _share(right, right >= hi),
                "wrong_at_or_above": _share(wrong, wrong >= hi),
            }
            for hi in HIS
        },
    }


def live(kb: KnowledgeBase, queries: Sequence[Query], style: str) -> dict[str, Any]:
    """The thresholds the KB's live model gives queries of ``style``, by the shape of query
    each pair is for ("every query": the model's overall pair), read from searches of that
    style's queries until every shape has been seen."""
    out: dict[str, Any] = {}
    for q in queries:
        if q.style != style:
            continue
        filters = SearchFilters(tiers=TIERS, exclude_ids=q.exclude, date_to=q.until)
        fit = kb.search(q.text, filters, SearchOptions(k=1)).confidence_model_fit
        if fit is not None:
            out.setdefault(fit.shape or "every query", {"lo": fit.lo, "hi": fit.hi})
        if len(out) > len(SHAPES):
            break
    return out


class _Modes:
    """Each document's failure-mode distribution, once."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.seen: dict[str, dict[str, float]] = {}

    def __call__(self, ids: list[str]) -> list[dict[str, float]]:
        need = [i for i in ids if i not in self.seen]
        for doc, stored in self.kb.store.documents_meta(need).items():
            pm = stored.postmortem
            self.seen[doc] = dict(mode_posterior(pm.title, pm.body))
        return [self.seen.get(i, {}) for i in ids]


def mode_rerank(kb: KnowledgeBase, queries: Sequence[Query]) -> dict[str, Any]:
    modes, hits = _Modes(kb), {}
    for q in queries:
        if not q.has_precedent:
            continue
        filters = SearchFilters(tiers=TIERS, exclude_ids=q.exclude, date_to=q.until)
        found = kb.search(q.text, filters, SearchOptions(k=20)).candidates
        row = [0] * len(LAMBDAS)
        if found:
            posterior = dict(mode_posterior("", q.text))
            agree = np.array(
                [
                    sum(posterior.get(m, 0.0) * p for m, p in d.items())
                    for d in modes([c.doc_id for c in found])
                ]
            )
            score = np.array([c.score for c in found])
            for i, lam in enumerate(LAMBDAS):
                row[i] = int(
                    found[int(np.argmax(score * (1 + lam * agree)))].doc_id in q.precedents
                )
        hits.setdefault(q.style, []).append(row)
    return {
        style: {
            "n": len(rows),
            **{
                str(lam): round(float(v), 4)
                for lam, v in zip(LAMBDAS, np.mean(rows, axis=0), strict=True)
            },
        }
        for style, rows in hits.items()
    }


def dense_weight(kb: KnowledgeBase, queries: Sequence[Query]) -> dict[str, Any]:
    hits: dict[str, list[list[int]]] = {}
    for q in queries:
        if not q.has_precedent:
            continue
        filters = SearchFilters(tiers=TIERS, exclude_ids=q.exclude, date_to=q.until)
        row = []
        for w in (*DENSE, "sparse"):
            if w == "sparse":
                options = SearchOptions(k=5, mode="sparse")
            elif w is None:
                options = SearchOptions(k=5)
            else:
                options = SearchOptions(k=5, dense_weight=float(w), dense_vote=True)
            found = kb.search(q.text, filters, options).candidates
            row.append(int(bool(found) and found[0].doc_id in q.precedents))
        hits.setdefault(q.style, []).append(row)
    names = ["gate" if w is None else str(w) for w in DENSE] + ["sparse"]
    return {
        style: {
            "n": len(rows),
            **{n: round(float(v), 4) for n, v in zip(names, np.mean(rows, axis=0), strict=True)},
        }
        for style, rows in hits.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache" / "embeddings.sqlite")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    events = aws_events(args.shared / "postmortems" / "aws_status_events.jsonl")
    out: dict[str, Any] = {"ceiling": {}, "thresholds": {}, "mode_rerank": {}, "dense_weight": {}}
    with tempfile.TemporaryDirectory(prefix="seenbefore-probes-") as scratch:
        root = Path(scratch)
        docs = untyped_copy(SAMPLE, root / "untyped-docs")
        kb = build_kb(root / "untyped", [root / "untyped-docs"], None, True, args.cache)
        replay = sample_replay_queries(docs)
        outcomes = run(kb, replay, True)
        for style in ("summary", "title"):
            rows = [o for o in outcomes if o.query.style == style]
            out["ceiling"][f"sample-replay/{style}"] = ceiling(rows)
            out["thresholds"][f"sample-replay/{style}"] = {
                "live": live(kb, replay, style),
                **thresholds(rows),
            }
        golden = from_cases(load_cases(), "golden")
        out["mode_rerank"]["sample-replay"] = mode_rerank(kb, replay)
        out["mode_rerank"]["sample-untyped"] = mode_rerank(kb, golden)
        out["dense_weight"]["sample-replay"] = dense_weight(kb, replay)
        out["dense_weight"]["sample-untyped"] = dense_weight(kb, golden)
        kb.close()
        folder = root / "aws-docs"
        folder.mkdir()
        for e in events:
            (folder / f"{e['id']}.md").write_text(aws_markdown(e), encoding="utf-8")
        kb = build_kb(root / "aws", [folder], None, True, args.cache)
        replay = aws_replay_queries(events)
        outcomes = run(kb, replay, True)
        for style in ("alert-line", "first-update"):
            rows = [o for o in outcomes if o.query.style == style]
            out["ceiling"][f"aws-replay/{style}"] = ceiling(rows)
            out["thresholds"][f"aws-replay/{style}"] = {
                "live": live(kb, replay, style),
                **thresholds(rows),
            }
        same = aws_queries(events, {e["id"] for e in events}, styles=("first-update", "alert-line"))
        out["mode_rerank"]["aws-replay"] = mode_rerank(kb, replay)
        out["mode_rerank"]["aws"] = mode_rerank(kb, same)
        out["dense_weight"]["aws-replay"] = dense_weight(kb, replay)
        out["dense_weight"]["aws"] = dense_weight(kb, same)
        kb.close()
        path = args.shared / "postmortems" / "graphrca_incidents.jsonl"
        kb = build_kb(root / "graphrca", [path], "graphrca", True, args.cache)
        reports = from_cases(category_cases(path, held_out=HELD_OUT), "report")
        out["dense_weight"]["graphrca"] = dense_weight(kb, reports)
        kb.close()
    seconds = round(time.perf_counter() - started, 1)
    for probe, cells in out.items():
        for name, value in cells.items():
            print(f"{probe} {name}: {value}")
    print(f"{seconds} s")
    if args.write:
        record = {
            **provenance("benchmarks/verdict_probes.py", argv),
            "seconds": seconds,
            "note": "graphrca is left out of the mode rerank: the failure-mode classifier was fitted on it",
            **out,
        }
        print(f"wrote {write_results(RESULTS / 'verdict_probes.json', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
