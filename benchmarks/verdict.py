"""What the user is told, measured on text the project did not write: the verdict ("precedent
found" / "possible precedent — check" / "no precedent"), the calibrated ``p_precedent`` beside
it, and the ranking of the default mode against its own best single retriever, over a matrix of
knowledge bases x query styles x {precedent present, left out, off-topic}.

    .venv/bin/python benchmarks/verdict.py --shared ../shared/data [--write] [--dump FILE]

A precedent is a postmortem an on-call engineer would want to read for this alert: the same
incident (a duplicate or follow-up report), a recurrence (the same failure on the same service
or subsystem), or the same failure mode met elsewhere in the organisation. Off-topic text has
none. Per set, written down before measuring:

* ``sample``: the packaged golden cases over examples/postmortems (their ``expected`` and
  ``alternates`` are the precedents; ``expect_novel`` cases have none).
* ``aws``: the 527 AWS Health events with 2+ updates, one document each (service + summary +
  last update). An event's precedents are itself, any event first posted within an hour of it
  (the same outage posted under another service), and any event of the same service with the
  same summary (a recurrence). Styles: ``first-update`` (the event's first update, what is
  known while it happens) and ``alert-line`` (``"<service>: <summary>"``, e.g. "Amazon EC2:
  Increased API Error Rates", the shape of a pager title).
* ``aws-half``: the same queries against a KB holding half the events (seed 0): precedents are
  the kept ones of the above.
* ``aws-replay``: time-ordered replay: each event searched against the events first posted
  before it only; its precedents are the earlier ones within the hour or of the same service and
  summary; none means "no precedent".
* ``graphrca``: real incidents (graphrca), query = the postmortem text without its root-cause
  lines, precedents = incidents of the same cause category; five categories are held out of the
  KB (their incidents have none), as in benchmarks/fit_defaults.py.
* ``scifact-kb``: an off-domain KB (1,000 SciFact abstracts): incident queries (AWS first
  updates, golden queries) have no precedent in it.
* off-topic styles on every incident KB: ``off-topic`` (benchmarks/data/offtopic_dev.txt, 40
  lines of office, HR and everyday text written for this benchmark and never fitted on) and
  ``scifact-claim`` (40 SciFact claims, text nobody here wrote).

Cells print: queries; Hit@1 of the default mode, of sparse and of dense (the best single
retriever's, and the default's gap to it); among queries whose precedent is ranked first, the
share told "no precedent" (target <= 5 %); among queries with no precedent (left out,
off-topic), the share told "no precedent" (>= 70 %, >= 90 % off-topic) and "precedent found"
(<= 10 %, 0 off-topic); ECE of p_precedent against "the top result is a precedent"; AUROC of
p_precedent between queries with and without a precedent. A naive baseline is printed beside
ours: a threshold on the top BM25 score fitted on the KB's own self-made cases.
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results
from realtext import aws_events, aws_markdown, build_kb, novelty_split
from seenbefore.calibration.fitting import FALSE_NONE
from seenbefore.calibration.selfcal import self_cases
from seenbefore.core.confidence import auroc, expected_calibration_error
from seenbefore.evaluation.cases import Case, load_cases
from seenbefore.evaluation.external import category_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters

REPO = Path(__file__).resolve().parents[1]
OFFTOPIC = REPO / "benchmarks" / "data" / "offtopic_dev.txt"
TIERS = ("general", "restricted", "security")
HELD_OUT = ("Security", "Memory", "Cloud", "CI-CD", "Configuration")  # as fit_defaults.py
HOUR = 3600
console = Console(width=220)


@dataclass(frozen=True)
class Query:
    """One dev query: its text, style, precedents in the KB it runs against, excluded docs."""

    id: str
    text: str
    style: str
    precedents: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()

    @property
    def has_precedent(self) -> bool:
        return bool(self.precedents)


@dataclass
class Outcome:
    query: Query
    tops: dict[str, str | None] = field(default_factory=dict)  # mode -> top id
    rankings: dict[str, list[str]] = field(default_factory=dict)  # mode -> ranked ids
    p: float = 0.0
    verdict: str = ""
    novel: bool = False
    signals: dict[str, float] = field(default_factory=dict)
    top_bm25: float = 0.0  # the sparse mode's top score (what the naive baseline thresholds)
    naive: str = ""  # the naive baseline's verdict

    def right(self, mode: str = "default") -> bool:
        return self.tops.get(mode) in self.query.precedents


# -- the precedent rule for AWS events ---------------------------------------------------------
def _title(e: dict[str, Any]) -> tuple[str, str]:
    return e["service_name"], e["summary"].strip().lower()


def aws_precedents(events: Sequence[dict[str, Any]]) -> dict[str, set[str]]:
    """Each event's precedents among ``events``: itself, events first posted within an hour of
    it, events of the same service and summary."""
    by_time = sorted(events, key=lambda e: int(e["date"]))
    times = [int(e["date"]) for e in by_time]
    by_title: dict[tuple[str, str], set[str]] = {}
    for e in events:
        by_title.setdefault(_title(e), set()).add(e["id"])
    out: dict[str, set[str]] = {}
    for e in events:
        t = int(e["date"])
        lo, hi = bisect.bisect_left(times, t - HOUR), bisect.bisect_right(times, t + HOUR)
        out[e["id"]] = {e["id"], *(o["id"] for o in by_time[lo:hi])} | by_title[_title(e)]
    return out


def aws_queries(
    events: Sequence[dict[str, Any]], present: set[str], *, styles: Iterable[str]
) -> list[Query]:
    rule = aws_precedents(events)
    out = []
    for e in events:
        found = frozenset(rule[e["id"]] & present)
        for style in styles:
            text = (
                e["updates"][0]["text"]
                if style == "first-update"
                else f"{e['service_name']}: {e['summary']}"
            )
            out.append(Query(f"{style}:{e['id']}", text, style, found))
    return out


def replay_queries(events: Sequence[dict[str, Any]]) -> list[Query]:
    """Each event against the events posted before it (later ones and itself excluded)."""
    ordered = sorted(events, key=lambda e: (int(e["date"]), e["id"]))
    rule = aws_precedents(events)
    out = []
    for i, e in enumerate(ordered):
        earlier = {o["id"] for o in ordered[:i] if int(o["date"]) < int(e["date"])}
        later = tuple(sorted({o["id"] for o in ordered} - earlier))
        found = frozenset((rule[e["id"]] - {e["id"]}) & earlier)
        out.append(
            Query(f"replay:{e['id']}", e["updates"][0]["text"], "first-update", found, later)
        )
    return out


def offtopic_queries(claims: Sequence[str]) -> list[Query]:
    lines = [
        ln.strip()
        for ln in OFFTOPIC.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    return [Query(f"off-topic:{i}", t, "off-topic") for i, t in enumerate(lines)] + [
        Query(f"scifact-claim:{i}", t, "scifact-claim") for i, t in enumerate(claims)
    ]


def from_cases(cases: Sequence[Case], style: str) -> list[Query]:
    return [
        Query(c.id, c.query, style, frozenset() if c.expect_novel else c.relevant, c.exclude)
        for c in cases
    ]


def scifact_claims(data: Path, n: int = 40) -> list[str]:
    path = data / "beir" / "scifact" / "queries.jsonl"
    rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    rng = random.Random(0)
    return [r["text"] for r in rng.sample(rows, n)]


def scifact_docs(data: Path, folder: Path, n: int = 1000) -> Path:
    path = data / "beir" / "scifact" / "corpus.jsonl"
    rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    folder.mkdir(parents=True)
    for r in random.Random(0).sample(rows, n):
        title = json.dumps(r.get("title") or f"abstract {r['_id']}")
        (folder / f"sf-{r['_id']}.md").write_text(
            f"---\nid: SF-{r['_id']}\ntitle: {title}\n---\n## Summary\n{r['text']}\n",
            encoding="utf-8",
        )
    return folder


# -- the naive baseline -------------------------------------------------------------------------
def naive_threshold(kb: KnowledgeBase) -> float:
    """A threshold on the top BM25 score fitted on the KB's own self-made cases (the same
    cases, styles and operating point our model is fitted with): the score below which only
    ``FALSE_NONE`` of the cases whose precedent sparse ranks first fall. Above it the baseline
    says "precedent found", below it "no precedent"."""
    fit, held, tiers = self_cases(kb)
    scores = []
    for made in (*fit, *held):
        c = made.case
        filters = SearchFilters(tiers=tuple(tiers), exclude_ids=c.exclude)
        result = kb.search(c.query, filters, SearchOptions(k=1, mode="sparse"))
        if result.candidates and result.candidates[0].doc_id in c.relevant:
            hit = result.candidates[0].retrievers.get("sparse")
            scores.append(hit.score if hit is not None else 0.0)
    if not scores:
        return float("inf")
    scores.sort()
    return scores[int(FALSE_NONE * len(scores))]


def apply_naive(outcomes: Sequence[Outcome], threshold: float) -> None:
    for o in outcomes:
        o.naive = "precedent found" if o.top_bm25 >= threshold else "no precedent"


# -- running -----------------------------------------------------------------------------------
def run(kb: KnowledgeBase, queries: Sequence[Query], dense: bool) -> list[Outcome]:
    modes = {"default": SearchOptions(k=10), "sparse": SearchOptions(k=20, mode="sparse")}
    if dense and kb.index().dense is not None:
        modes["dense"] = SearchOptions(k=20, mode="dense")
    out = []
    for q in queries:
        filters = SearchFilters(tiers=TIERS, exclude_ids=q.exclude)
        o = Outcome(q)
        for mode, options in modes.items():
            result = kb.search(q.text, filters, options)
            o.tops[mode] = result.candidates[0].doc_id if result.candidates else None
            o.rankings[mode] = [c.doc_id for c in result.candidates]
            if mode == "sparse" and result.candidates:
                hit = result.candidates[0].retrievers.get("sparse")
                o.top_bm25 = hit.score if hit is not None else 0.0
            if mode == "default":
                o.p = result.confidence
                o.novel = result.novel
                o.verdict = getattr(result, "verdict", "") or (
                    "no precedent" if result.novel else "precedent found"
                )
                o.signals = dict(result.signals)
        out.append(o)
    return out


def cell(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    with_p = [o for o in outcomes if o.query.has_precedent]
    without = [o for o in outcomes if not o.query.has_precedent]
    first = [o for o in with_p if o.right()]
    hit = {
        m: round(sum(o.right(m) for o in with_p) / len(with_p), 4)
        for m in ("default", "sparse", "dense")
        if with_p and all(m in o.tops for o in with_p)
    }
    best_single = max((v for m, v in hit.items() if m != "default"), default=None)
    labels = [int(o.right()) for o in outcomes]
    ps = [o.p for o in outcomes]
    area = auroc(ps, [int(o.query.has_precedent) for o in outcomes])

    def share(rows: Sequence[Outcome], verdict: str) -> float | None:
        return round(sum(o.verdict == verdict for o in rows) / len(rows), 4) if rows else None

    return {
        "queries": n,
        "with_precedent": len(with_p),
        "hit_at_1": hit,
        "default_minus_best_single": (
            round(hit["default"] - best_single, 4)
            if best_single is not None and "default" in hit
            else None
        ),
        "false_no_precedent_when_first": share(first, "no precedent"),
        "no_precedent_when_none": share(without, "no precedent"),
        "found_when_none": share(without, "precedent found"),
        "possible_when_first": share(first, "possible precedent — check"),
        "ece": round(expected_calibration_error(ps, labels), 4) if n else None,
        "auroc": None if area != area else round(area, 4),
        "mean_p": round(sum(ps) / n, 4) if n else None,
        "naive": {  # the top-BM25-threshold baseline on the same queries (sparse's top result)
            "false_no_precedent_when_first": naive_share(
                [o for o in with_p if o.right("sparse")], "no precedent"
            ),
            "no_precedent_when_none": naive_share(without, "no precedent"),
            "found_when_none": naive_share(without, "precedent found"),
        },
    }


def naive_share(rows: Sequence[Outcome], verdict: str) -> float | None:
    return round(sum(o.naive == verdict for o in rows) / len(rows), 4) if rows else None


def dump(path: Path, name: str, outcomes: Sequence[Outcome]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for o in outcomes:
            fh.write(
                json.dumps(
                    {
                        "set": name,
                        "style": o.query.style,
                        "id": o.query.id,
                        "has_precedent": o.query.has_precedent,
                        "right": {m: o.right(m) for m in o.tops},
                        "p": o.p,
                        "verdict": o.verdict,
                        "signals": o.signals,
                        "top_bm25": o.top_bm25,
                        "naive": o.naive,
                        "precedents": sorted(o.query.precedents),
                        "rankings": o.rankings,
                    }
                )
                + "\n"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache")
    parser.add_argument("--no-dense", action="store_true", help="sparse KBs only (fast)")
    parser.add_argument("--sets", default="sample,aws,aws-half,aws-replay,graphrca,scifact-kb")
    parser.add_argument("--dump", type=Path, help="write every query's signals here (JSONL)")
    parser.add_argument("--write", action="store_true", help="write results/verdict.json")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        console.print(f"no shared data at {args.shared}; pass --shared", style="yellow")
        return 2
    dense = not args.no_dense
    wanted = args.sets.split(",")
    claims = scifact_claims(args.shared)
    off = offtopic_queries(claims)
    events = aws_events(args.shared / "postmortems" / "aws_status_events.jsonl")
    cells: dict[str, dict[str, Any]] = {}
    naive: dict[str, float] = {}  # per KB: the baseline's fitted top-BM25 threshold
    if args.dump:
        args.dump.write_text("")
    with tempfile.TemporaryDirectory(prefix="seenbefore-verdict-") as scratch:
        root = Path(scratch)

        def measure(name: str, kb: KnowledgeBase, queries: Sequence[Query]) -> None:
            console.print(f"[bold]{name}[/]: {len(queries)} queries")
            outcomes = run(kb, queries, dense)
            threshold = naive_threshold(kb)
            apply_naive(outcomes, threshold)
            naive[name] = round(threshold, 4)
            if args.dump:
                dump(args.dump, name, outcomes)
            for style in sorted({o.query.style for o in outcomes}):
                rows = [o for o in outcomes if o.query.style == style]
                kinds = {
                    "present": [o for o in rows if o.query.has_precedent],
                    "none": [o for o in rows if not o.query.has_precedent],
                }
                cells[f"{name}/{style}"] = cell(rows)
                for kind, part in kinds.items():
                    if part and len(part) < len(rows):
                        cells[f"{name}/{style}/{kind}"] = cell(part)

        if "sample" in wanted:
            kb = build_kb(
                root / "sample", [REPO / "examples" / "postmortems"], None, dense, args.cache
            )
            measure("sample", kb, from_cases(load_cases(), "golden") + off)
            kb.close()
        if {"aws", "aws-replay"} & set(wanted):
            folder = root / "aws-docs"
            folder.mkdir()
            for e in events:
                (folder / f"{e['id']}.md").write_text(aws_markdown(e), encoding="utf-8")
            kb = build_kb(root / "aws", [folder], None, dense, args.cache)
            present = {e["id"] for e in events}
            if "aws" in wanted:
                styles = ("first-update", "alert-line")
                measure("aws", kb, aws_queries(events, present, styles=styles) + off)
            if "aws-replay" in wanted:
                measure("aws-replay", kb, replay_queries(events))
            kb.close()
        if "aws-half" in wanted:
            keep = novelty_split(events, 0)
            folder = root / "half-docs"
            folder.mkdir()
            for e in keep:
                (folder / f"{e['id']}.md").write_text(aws_markdown(e), encoding="utf-8")
            kb = build_kb(root / "half", [folder], None, dense, args.cache)
            present = {e["id"] for e in keep}
            measure("aws-half", kb, aws_queries(events, present, styles=("first-update",)))
            kb.close()
        if "graphrca" in wanted:
            path = args.shared / "postmortems" / "graphrca_incidents.jsonl"
            kb = build_kb(root / "graphrca", [path], "graphrca", dense, args.cache)
            measure(
                "graphrca", kb, from_cases(category_cases(path, held_out=HELD_OUT), "report") + off
            )
            kb.close()
        if "scifact-kb" in wanted:
            folder = scifact_docs(args.shared, root / "scifact-docs")
            kb = build_kb(root / "scifact", [folder], None, dense, args.cache)
            incident = [
                Query(f"aws:{e['id']}", e["updates"][0]["text"], "first-update")
                for e in random.Random(0).sample(list(events), 100)
            ] + [Query(c.id, c.query, "golden") for c in load_cases()]
            measure("scifact-kb", kb, incident)
            kb.close()
    show(cells)
    if args.write:
        record = {
            **provenance("benchmarks/verdict.py", argv),
            "naive_thresholds": naive,
            "cells": cells,
        }
        console.print(f"wrote {write_results(RESULTS / 'verdict.json', record)}")
    return 0


def show(cells: dict[str, dict[str, Any]]) -> None:
    table = Table(title="what the user is told (dev sets)")
    cols = (
        "cell",
        "n",
        "Hit@1 def/sparse/dense",
        "def-best",
        "false NP|first",
        "NP|none",
        "found|none",
        "ECE",
        "AUROC",
        "mean p",
        "naive fNP/NP/found",
    )
    for c in cols:
        table.add_column(c, justify="right" if c != "cell" else "left")

    def f(v: Any) -> str:
        return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    for name, c in cells.items():
        hit = c["hit_at_1"]
        table.add_row(
            name,
            str(c["queries"]),
            "/".join(f(hit.get(m)) for m in ("default", "sparse", "dense")) if hit else "-",
            f(c["default_minus_best_single"]),
            f(c["false_no_precedent_when_first"]),
            f(c["no_precedent_when_none"]),
            f(c["found_when_none"]),
            f(c["ece"]),
            f(c["auroc"]),
            f(c["mean_p"]),
            "/".join(
                f(c["naive"][k])
                for k in (
                    "false_no_precedent_when_first",
                    "no_precedent_when_none",
                    "found_when_none",
                )
            ),
        )
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
