"""How much the verdict on the dev replays owes to the luck of one self-calibration: the same
knowledge base self-calibrated with other seeds (calibration/selfcal.py ``self_calibrate(seed=)``:
which documents fall in the fit half and which queries each style draws), each seed on a fresh
record (the shipped defaults live before it, as on a new KB), then the replay's queries searched
and their verdicts split as benchmarks/verdict.py splits them: found / possible / none % of the
queries whose right postmortem is first, whose first is wrong, and that have no precedent in the
KB. Issue 31's Done-when cells (right: none <= 10 %, found >= 40 %; no precedent: found <= 5 %,
none >= 60 %) are counted per seed. Seed 0 is what every other benchmark reports.

Beside them, per seed and style, what ANY pair of thresholds could do with that seed's p
(verdict_probes.best, set on the replay's own answers, so no product could reach it): the share
of the queries with none in the KB below the highest lo that leaves at most 10 % of right tops
below it, and at or above the lowest hi that leaves at least 40 % of right tops at or above it;
whether that pair meets all four cells, and the AUROC of p between right tops and none. Where
it does not, no placement of lo and hi does: only a p that separates better can.

    .venv/bin/python benchmarks/verdict_seeds.py --shared ../shared/data [--seeds 0,1,2,3,4,5]
        [--sets sample-replay,aws-replay] [--without SIGNAL] [--recurrence-share Q] [--write]

Writes benchmarks/results/verdict_seeds.json with --write (command, commit, machine, date).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results
from realtext import aws_events, aws_markdown, build_kb
from replays import aws_replay_queries, sample_replay_queries, untyped_copy
from seenbefore.calibration import fitting, record, selfcal
from seenbefore.config import Settings
from seenbefore.core.calibration import CalibrationRecord
from seenbefore.core.confidence import auroc
from seenbefore.kb import KnowledgeBase
from verdict import SAMPLE, run
from verdict_cells import Query
from verdict_probes import best

console = Console(width=160)
KEY = "hybrid:all-MiniLM-L6-v2"
GROUPS = ("right", "wrong", "none")
STATES = {
    "precedent found": "found",
    "possible precedent — check": "possible",
    "no precedent": "none",
}


def reopen(home: Path, like: KnowledgeBase) -> KnowledgeBase:
    """The KB at ``home`` opened afresh (so nothing read before the new record is kept)."""
    kb = KnowledgeBase(Settings(home=home, embedder="minilm"), embedder=like.embedder())
    kb.query_embedder = like.query_embedder
    return kb


def calibrated(home: Path, paths: list[Path], seed: int, cache: Path) -> KnowledgeBase:
    """A KB of ``paths`` self-calibrated with ``seed`` from a fresh record."""
    kb = build_kb(home, paths, None, True, cache)  # ingest self-calibrates with seed 0
    if seed == 0:
        return kb
    record.save(kb.store, CalibrationRecord())  # as new: the shipped defaults live
    selfcal.self_calibrate(kb, force=True, seed=seed)
    fresh = reopen(home, kb)
    kb.close()
    return fresh


def states(kb: KnowledgeBase, queries: Sequence[Query]) -> dict[str, dict[str, Any]]:
    """Per style and group: n and the share of each verdict state; per style, its ceiling."""
    grouped = [
        (o, "none" if not o.query.has_precedent else ("right" if o.right() else "wrong"))
        for o in run(kb, queries, True, others=False)
    ]
    found = shares((o.query.style, g, o.verdict) for o, g in grouped)
    for style, groups in found.items():
        p = {g: [o.p for o, h in grouped if o.query.style == style and h == g] for g in GROUPS}
        groups["ceiling"] = ceiling(p["right"], p["wrong"], p["none"])
    return found


def ceiling(
    right: Sequence[float], wrong: Sequence[float], none: Sequence[float]
) -> dict[str, Any]:
    """verdict_probes.best on one seed's p (the best ``lo`` and ``hi`` for the right tops'
    targets, and what they give the queries with none in the KB), with the AUROC of p between
    right tops and none, and whether one pair meets all four cells."""
    found = best(np.array(right), np.array(wrong), np.array(none))
    if not found or not none:
        return {}
    scores = [*right, *none]
    return found | {
        "auroc": round(auroc(scores, [1] * len(right) + [0] * len(none)), 4),
        "reachable": bool(
            found["lo_targets_met"] and found["hi_targets_met"] and found["lo"] < found["hi"]
        ),
    }


def shares(searches: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, Any]]:
    """(style, group, verdict) of each search, as n and the share of each verdict state per
    style and group (GROUPS)."""
    counts: dict[str, dict[str, Counter[str]]] = {}
    for style, group, verdict in searches:
        counts.setdefault(style, {}).setdefault(group, Counter())[STATES[verdict]] += 1
    out: dict[str, dict[str, Any]] = {}
    for style, groups in sorted(counts.items()):
        out[style] = {}
        for g in GROUPS:
            c = groups.get(g, Counter())
            n = sum(c.values())
            out[style][g] = {"n": n} | {
                s: round(c[s] / n, 4) if n else None for s in ("found", "possible", "none")
            }
    return out


def replay_sets(
    root: Path, wanted: Sequence[str], shared: Path
) -> dict[str, tuple[list[Path], list[Query]]]:
    """The dev replays named in ``wanted``, written under ``root``: each one's document folders
    and its queries."""
    sets: dict[str, tuple[list[Path], list[Query]]] = {}
    if "sample-replay" in wanted:
        docs = untyped_copy(SAMPLE, root / "untyped-docs")
        sets["sample-replay"] = ([root / "untyped-docs"], sample_replay_queries(docs))
    if "aws-replay" in wanted:
        events = aws_events(shared / "postmortems" / "aws_status_events.jsonl")
        folder = root / "aws-docs"
        folder.mkdir()
        for e in events:
            (folder / f"{e['id']}.md").write_text(aws_markdown(e), encoding="utf-8")
        sets["aws-replay"] = ([folder], aws_replay_queries(events))
    return sets


def cells_met(style: dict[str, Any]) -> dict[str, bool]:
    right, none = style["right"], style["none"]
    return {
        "right_none<=10%": right["none"] is not None and right["none"] <= 0.10,
        "right_found>=40%": right["found"] is not None and right["found"] >= 0.40,
        "none_found<=5%": none["found"] is not None and none["found"] <= 0.05,
        "none_none>=60%": none["none"] is not None and none["none"] >= 0.60,
    }


def model_line(kb: KnowledgeBase) -> dict[str, Any]:
    m = kb.confidence_model(KEY)
    if m is None:
        return {}
    return {"lo": m.lo, "hi": m.hi, "shapes": {k: list(v) for k, v in m.shapes.items()}}


def seed_parser(description: str) -> argparse.ArgumentParser:
    """The options of a benchmark that replays the dev sets under several seeds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    parser.add_argument("--sets", default="sample-replay,aws-replay")
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache" / "embeddings.sqlite")
    parser.add_argument("--write", action="store_true")
    return parser


OneSeed = Callable[[Path, list[Path], list[Query], int, Path], dict[str, Any]]


def over_seeds(args: argparse.Namespace, prefix: str, one: OneSeed) -> dict[str, Any]:
    """``one(home, document folders, queries, seed, cache)`` for every replay set and seed of
    ``args`` (seed_parser), each in its own home under one scratch folder, with progress:
    {set: {seed: what it returned}}."""
    started = time.perf_counter()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        root = Path(scratch)
        for name, (paths, queries) in replay_sets(root, args.sets.split(","), args.shared).items():
            results[name] = {}
            for seed in seeds_of(args):
                home = root / f"{name}-{seed}"
                results[name][str(seed)] = one(home, paths, queries, seed, args.cache)
                console.print(f"{name} seed {seed}: done ({time.perf_counter() - started:.0f} s)")
    return results


def seeds_of(args: argparse.Namespace) -> list[int]:
    return [int(s) for s in args.seeds.split(",")]


def one_seed(
    home: Path, paths: list[Path], queries: list[Query], seed: int, cache: Path
) -> dict[str, Any]:
    """The verdict states of one seed's self-calibration, per style, with its thresholds."""
    kb = calibrated(home, paths, seed, cache)
    out = {
        "model": model_line(kb),
        "styles": {s: v | {"met": cells_met(v)} for s, v in states(kb, queries).items()},
    }
    kb.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = seed_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--without",
        metavar="SIGNAL",
        help="fit without this signal (calibration/fitting.FEATURES less it): what it adds, "
        "measured over the same seeds; written to verdict_seeds_without_SIGNAL.json",
    )
    parser.add_argument(
        "--recurrence-share",
        type=float,
        metavar="Q",
        help="place lo so that at most Q of the recurrence-shaped cases fall to it "
        "(calibration/fitting.FALSE_NONE_RECURRENCE, shipped 0.05); written to "
        "verdict_seeds_recurrence_Q.json",
    )
    args = parser.parse_args(argv)
    if args.recurrence_share is not None:
        if not 0.0 < args.recurrence_share < 1.0:
            parser.error(f"--recurrence-share {args.recurrence_share}: a share between 0 and 1")
        fitting.FALSE_NONE_RECURRENCE = args.recurrence_share
    if args.without:
        if args.without not in fitting.FEATURES:
            parser.error(f"--without {args.without}: the fit's signals are {fitting.FEATURES}")
        fitting.FEATURES = tuple(f for f in fitting.FEATURES if f != args.without)
    started = time.perf_counter()
    results = over_seeds(args, "seenbefore-seeds-", one_seed)
    show(results)
    spread = summary(results)
    console.print(spread)
    if args.write:
        out = {
            **provenance("benchmarks/verdict_seeds.py", argv),
            "seconds": round(time.perf_counter() - started, 1),
            "seeds": seeds_of(args),
            "without": args.without,
            "recurrence_share": fitting.FALSE_NONE_RECURRENCE,
            "summary": spread,
            "results": results,
        }
        name = "verdict_seeds"
        if args.without:
            name += f"_without_{args.without}"
        if args.recurrence_share is not None:
            name += f"_recurrence_{args.recurrence_share:g}"
        console.print(f"wrote {write_results(RESULTS / f'{name}.json', out)}")
    return 0


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """Per set and style: the range over seeds of the four Done-when shares, and in how many
    seeds each cell, and all four, are met."""
    out: dict[str, Any] = {}
    for name, by_seed in results.items():
        styles = sorted({s for r in by_seed.values() for s in r["styles"]})
        for style in styles:
            runs = [r["styles"][style] for r in by_seed.values() if style in r["styles"]]
            if not runs or runs[0]["right"]["n"] == 0:
                continue
            shares = {
                "right_found": [r["right"]["found"] for r in runs],
                "right_none": [r["right"]["none"] for r in runs],
                "none_found": [r["none"]["found"] for r in runs],
                "none_none": [r["none"]["none"] for r in runs],
            }
            out[f"{name}/{style}"] = {
                "seeds": len(runs),
                "range": {k: [min(v), max(v)] for k, v in shares.items()},
                "mean": {k: round(sum(v) / len(v), 4) for k, v in shares.items()},
                "per_seed": shares,
                "met": {c: sum(r["met"][c] for r in runs) for c in runs[0]["met"]},
                "all_four_met": sum(all(r["met"].values()) for r in runs),
            }
            tops = [r["ceiling"] for r in runs if r.get("ceiling")]
            if tops:
                out[f"{name}/{style}"]["ceiling"] = {
                    k: [min(c[k] for c in tops), max(c[k] for c in tops)]
                    for k in ("none_below", "none_at_or_above", "auroc")
                } | {"reachable": sum(c["reachable"] for c in tops)}
    return out


def states_cell(g: dict[str, Any]) -> str:
    """One group's found/possible/none % and its count: "64/29/7 (14)"."""
    pct = [f"{100 * g[s]:.0f}" if g[s] is not None else "-" for s in ("found", "possible", "none")]
    return "/".join(pct) + f" ({g['n']})"


def _ceiling(c: dict[str, Any] | None) -> str:
    if not c:
        return "-"
    met = "all four" if c["reachable"] else "not all four"
    return (
        f"{100 * c['none_below']:.0f} / {100 * c['none_at_or_above']:.0f} % ({met}; "
        f"AUROC {c['auroc']:.3f})"
    )


def show(results: dict[str, Any]) -> None:
    table = Table(title="verdict states per self-calibration seed (found/possible/none %)")
    for col in (
        "set/style",
        "seed",
        "lo / hi (shapes)",
        *GROUPS,
        "Done-when cells met",
        "best lo / hi: none below / none at or above",
    ):
        table.add_column(col)
    for name, by_seed in results.items():
        for seed, r in by_seed.items():
            m = r["model"]
            shapes = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(m.get("shapes", {}).items()))
            for style, v in r["styles"].items():
                if v["right"]["n"] == 0:  # off-topic and claims: none in KB only
                    continue
                table.add_row(
                    f"{name}/{style}",
                    seed,
                    f"{m.get('lo')} / {m.get('hi')} ({shapes})",
                    *(states_cell(v[g]) for g in GROUPS),
                    f"{sum(v['met'].values())} of 4",
                    _ceiling(v.get("ceiling")),
                )
    console.print(table)


if __name__ == "__main__":
    raise SystemExit(main())
