"""What the user is told, measured on text the project did not write: the verdict ("precedent
found" / "possible precedent — check" / "no precedent"), the calibrated ``p_precedent`` beside
it, and the ranking of the default mode against its own best single retriever, over a matrix of
knowledge bases x query styles x {precedent present, left out, off-topic}.

    .venv/bin/python benchmarks/verdict.py --shared ../shared/data [--write] [--markdown FILE]
        [--dump FILE] [--quick] [--sets a,b]

A precedent is a postmortem an on-call engineer would want to read for this alert: the same
incident (a duplicate or follow-up report), a recurrence (the same failure on the same service
or subsystem), or the same failure mode met elsewhere in the organisation. Off-topic text has
none. A recurrence is a different document. Per set, written down before measuring:

* ``sample``: the packaged golden cases over examples/postmortems (their ``expected`` and
  ``alternates`` are the precedents; ``expect_novel`` cases have none).
* ``sample-untyped``: the same golden cases over a copy of examples/postmortems with every
  ``type:`` front-matter line removed (the effect of hiding the incident types alone).
* ``sample-replay``: the untyped copy replayed in date order (benchmarks/replays.py): each dated
  postmortem searched with ``--until`` the day before its date; its precedents are the earlier
  documents of its hidden type and the ones it links (``supersedes``, ids in its body). Styles
  ``summary`` (its Summary section) and ``title``; off-topic text runs against the whole KB.
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
  summary; none means "no precedent". Styles ``first-update`` and ``alert-line``.
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
ours: a threshold on the top BM25 score fitted on the KB's own self-made cases. A second table
splits the three verdict states by top right / top wrong / no precedent in the KB, ours and the
baseline's (benchmarks/verdict_cells.py); ``--markdown`` writes the docs' table of them
(benchmarks/verdict_table.py). ``probes`` records single queries' top five, verdict and p.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results
from realtext import aws_events, aws_markdown, build_kb, novelty_split
from replays import (
    aws_precedents,
    aws_replay_queries,
    aws_text,
    sample_replay_queries,
    unjudged_tops,
    untyped_copy,
)
from seenbefore.calibration.fitting import FALSE_NONE
from seenbefore.evaluation.cases import Case, load_cases
from seenbefore.evaluation.external import category_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters
from verdict_cells import GROUPS, Outcome, Query, cell
from verdict_table import markdown_table

if TYPE_CHECKING:
    from seenbefore.calibration.selfcal import SelfCase

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "examples" / "postmortems"
OFFTOPIC = REPO / "benchmarks" / "data" / "offtopic_dev.txt"
TIERS = ("general", "restricted", "security")
HELD_OUT = ("Security", "Memory", "Cloud", "CI-CD", "Configuration")  # as fit_defaults.py
ALL_SETS = "sample,sample-untyped,sample-replay,aws,aws-half,aws-replay,graphrca,scifact-kb"
QUICK_SETS = "sample-replay,aws-replay"
POOL_QUERY = (
    "payments-api (aws/us-east-1): db_connections_in_use at 100% of pool, p99 latency 8x "
    "baseline, error rate 12%, CPU normal"
)
console = Console(width=220)


def own_cases(kb: KnowledgeBase) -> tuple[list[SelfCase], list[SelfCase], list[str]]:
    """The KB's self-made cases, as its self-calibration makes them (fit half, held half, tiers).
    The one import of the self-calibration module in this benchmark: change it here when it
    moves."""
    from seenbefore.calibration.selfcal import self_cases

    return self_cases(kb)


def aws_queries(
    events: Sequence[dict[str, Any]], present: set[str], *, styles: Sequence[str]
) -> list[Query]:
    rule = aws_precedents(events)
    return [
        Query(f"{style}:{e['id']}", aws_text(e, style), style, frozenset(rule[e["id"]] & present))
        for e in events
        for style in styles
    ]


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
    fit, held, tiers = own_cases(kb)
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
def run(
    kb: KnowledgeBase, queries: Sequence[Query], dense: bool, *, others: bool = True
) -> list[Outcome]:
    """Each query searched in the default mode (its verdict, p and signals) and, with
    ``others``, sparse-only and (``dense``, when the KB has vectors) dense-only too: their tops
    and the naive baseline's BM25 score. A caller reading only the verdict leaves them out."""
    modes = {"default": SearchOptions(k=10)}
    if others:
        modes["sparse"] = SearchOptions(k=20, mode="sparse")
    if others and dense and kb.index().dense is not None:
        modes["dense"] = SearchOptions(k=20, mode="dense")
    out = []
    for q in queries:
        filters = SearchFilters(tiers=TIERS, exclude_ids=q.exclude, date_to=q.until)
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
                o.verdict = result.verdict
                o.signals = dict(result.signals)
        out.append(o)
    return out


def pool_coverage(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """How many of the replay's top results (every mode's) are labelled: a precedent by the
    rule or a judgment, or judged not one; the rest count as wrong unseen."""
    tops = [
        (o.query.id.split(":", 1)[1], t)
        for o in outcomes
        for t in o.tops.values()
        if t is not None and t not in o.query.precedents
    ]
    missing = unjudged_tops(tops)
    return {
        "tops": sum(t is not None for o in outcomes for t in o.tops.values()),
        "unjudged": len(missing),
        "unjudged_examples": [list(p) for p in missing[:10]],
    }


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


def probe(kb: KnowledgeBase, text: str, labels: dict[str, str]) -> dict[str, Any]:
    """One query on the whole KB (default mode): its top five with their incident types (the
    hidden labels where the KB holds none), the verdict and ``p_precedent``."""
    result = kb.search(text, SearchFilters(tiers=TIERS), SearchOptions(k=5))
    return {
        "query": text,
        "top": [
            {"id": c.doc_id, "type": c.type or labels.get(c.doc_id, "")} for c in result.candidates
        ],
        "verdict": result.verdict,
        "p": result.confidence,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    # the embedding cache, a SQLite file in the results' cache folder (which other benchmarks
    # use too: a file in its place broke them)
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache" / "embeddings.sqlite")
    parser.add_argument("--no-dense", action="store_true", help="sparse KBs only (fast)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"sparse KBs only, and unless --sets says otherwise only {QUICK_SETS}",
    )
    parser.add_argument("--sets", help=f"comma-separated, of {ALL_SETS} (default: all)")
    parser.add_argument("--dump", type=Path, help="write every query's signals here (JSONL)")
    parser.add_argument("--write", action="store_true", help="write results/verdict.json")
    parser.add_argument(
        "--markdown", type=Path, help="write the docs' verdict-state table here (Markdown)"
    )
    args = parser.parse_args(argv)
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    if not args.shared.is_dir():
        console.print(f"no shared data at {args.shared}; pass --shared", style="yellow")
        return 2
    dense = not (args.no_dense or args.quick)
    wanted = (args.sets or (QUICK_SETS if args.quick else ALL_SETS)).split(",")
    unknown = sorted(set(wanted) - set(ALL_SETS.split(",")))
    if unknown:
        console.print(f"--sets names {', '.join(unknown)}; known sets: {ALL_SETS}", style="red")
        return 2
    started = time.perf_counter()
    claims = scifact_claims(args.shared)
    off = offtopic_queries(claims)
    events = aws_events(args.shared / "postmortems" / "aws_status_events.jsonl")
    cells: dict[str, dict[str, Any]] = {}
    naive: dict[str, float] = {}  # per KB: the baseline's fitted top-BM25 threshold
    probes: dict[str, dict[str, Any]] = {}
    pool: dict[str, Any] = {}  # how far the AWS replay's judged pairs cover this run's tops
    if args.dump:
        args.dump.write_text("")
    with tempfile.TemporaryDirectory(prefix="seenbefore-verdict-") as scratch:
        root = Path(scratch)

        def measure(
            name: str,
            kb: KnowledgeBase,
            queries: Sequence[Query],
            coverage: dict[str, Any] | None = None,
        ) -> None:
            console.print(f"[bold]{name}[/]: {len(queries)} queries")
            outcomes = run(kb, queries, dense)
            if coverage is not None:
                coverage.update(pool_coverage(outcomes))
                console.print(
                    f"{name}: {coverage['unjudged']} of {coverage['tops']} top results neither "
                    "labelled by the rule nor judged (counted as wrong)"
                )
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

        if "sample" in wanted or "sample-replay" in wanted or "sample-untyped" in wanted:
            kb = build_kb(root / "sample", [SAMPLE], None, dense, args.cache)
            probes["sample"] = probe(kb, POOL_QUERY, {})
            if "sample" in wanted:
                measure("sample", kb, from_cases(load_cases(), "golden") + off)
            kb.close()
            docs = untyped_copy(SAMPLE, root / "untyped-docs")
            labels = {d.id: d.type for d in docs}
            kb = build_kb(root / "untyped", [root / "untyped-docs"], None, dense, args.cache)
            probes["sample-untyped"] = probe(kb, POOL_QUERY, labels)
            if "sample-untyped" in wanted:
                measure("sample-untyped", kb, from_cases(load_cases(), "golden"))
            if "sample-replay" in wanted:
                measure("sample-replay", kb, sample_replay_queries(docs) + off)
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
                measure("aws-replay", kb, aws_replay_queries(events), pool)
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
    seconds = round(time.perf_counter() - started, 1)
    show(cells)
    show_states(cells)
    show_probes(probes)
    console.print(f"{seconds} s ({'dense and sparse' if dense else 'sparse only'})")
    if args.markdown:
        args.markdown.write_text(markdown_table(cells), encoding="utf-8")
        console.print(f"wrote {args.markdown}")
    if args.write:
        record = {
            **provenance("benchmarks/verdict.py", argv),
            "seconds": seconds,
            "dense": dense,
            "naive_thresholds": naive,
            "probes": probes,
            "aws_replay_pool": pool,
            "cells": cells,
        }
        console.print(f"wrote {write_results(RESULTS / 'verdict.json', record)}")
    return 0


def _f(v: Any) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


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
    for col in cols:
        table.add_column(col, justify="right" if col != "cell" else "left")
    for name, c in cells.items():
        hit = c["hit_at_1"]
        table.add_row(
            name,
            str(c["queries"]),
            "/".join(_f(hit.get(m)) for m in ("default", "sparse", "dense")) if hit else "-",
            _f(c["default_minus_best_single"]),
            _f(c["false_no_precedent_when_first"]),
            _f(c["no_precedent_when_none"]),
            _f(c["found_when_none"]),
            _f(c["ece"]),
            _f(c["auroc"]),
            _f(c["mean_p"]),
            "/".join(
                _f(c["naive"][k])
                for k in (
                    "false_no_precedent_when_first",
                    "no_precedent_when_none",
                    "found_when_none",
                )
            ),
        )
    console.print(table)


def show_states(cells: dict[str, dict[str, Any]]) -> None:
    """The verdict states by top right / top wrong / no precedent in the KB: shares told found /
    possible / none and the group's size, ours (default's top) and the naive baseline's
    (sparse's top; it never says "possible")."""
    table = Table(title="verdict states: found/possible/none (n) by group")
    table.add_column("cell")
    for who in ("ours", "naive"):
        for group in GROUPS:
            table.add_column(f"{who} {group.replace('_', ' ')}", justify="right")

    def triple(g: dict[str, Any]) -> str:
        if not g["n"]:
            return "-"
        return "/".join(_f(g[k]) for k in ("found", "possible", "none")) + f" ({g['n']})"

    for name, c in cells.items():
        ours, base = c["states"], c["naive"]["states"]
        table.add_row(name, *(triple(ours[g]) for g in GROUPS), *(triple(base[g]) for g in GROUPS))
    console.print(table)


def show_probes(probes: dict[str, dict[str, Any]]) -> None:
    for kb, p in probes.items():
        tops = ", ".join(f"{t['id']} ({t['type'] or '?'})" for t in p["top"])
        console.print(f"probe on {kb}: {p['verdict']} (p {p['p']:.3f}); top five: {tops}")


if __name__ == "__main__":
    sys.exit(main())
