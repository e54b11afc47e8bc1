"""Does what people say fix the verdict that self-made cases could not? The dev replays of
benchmarks/verdict.py replayed as a team would live them: half of the incidents (every other
one in date order) are searched, and a reviewer labels each search's top result -- a precedent
or not, by the replay's own labels (benchmarks/replays.py), as approving or dismissing its draft
would; then the KB refits with those labels (calibration/people.py ``refit``, the product's own
refit: people's labels one style among the self-made ones, kept only when it beats the live
model on the self-made held-out half), and the other half of the incidents is searched with
whatever model is live; then the halves swap, on a fresh KB. Their verdicts (the two halves
pooled) are split as benchmarks/verdict.py splits them (found / possible / none % of right
tops, wrong tops, no precedent in the KB), beside the same queries before the refit. Each
self-calibration seed of benchmarks/verdict_seeds.py is run, so the gain is read against the
seed spread.

A reviewer here is never wrong and labels every search, so this is what the loop can do at
best; a team labels fewer, and sometimes wrongly.

    .venv/bin/python benchmarks/verdict_reviews.py --shared ../shared/data [--seeds 0,1,2,3,4,5]
        [--sets sample-replay,aws-replay] [--write]

Writes benchmarks/results/verdict_reviews.json with --write (command, commit, machine, date).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results
from seenbefore.calibration import people
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters
from verdict import TIERS
from verdict_cells import Query
from verdict_seeds import (
    GROUPS,
    KEY,
    calibrated,
    over_seeds,
    reopen,
    seed_parser,
    seeds_of,
    shares,
)

console = Console(width=160)
REVIEWER = "bench:reviewer"


def searched(kb: KnowledgeBase, queries: Sequence[Query]) -> list[tuple[Query, Any]]:
    """Each query's default search, as the user gets it."""
    out = []
    for q in queries:
        filters = SearchFilters(tiers=TIERS, exclude_ids=q.exclude, date_to=q.until)
        out.append((q, kb.search(q.text, filters, SearchOptions(k=10))))
    return out


def group(q: Query, result: Any) -> str:
    if not q.has_precedent:
        return "none"
    top = result.candidates[0].doc_id if result.candidates else None
    return "right" if top in q.precedents else "wrong"


def states(rows: Sequence[tuple[Query, Any]]) -> dict[str, dict[str, Any]]:
    return shares((q.style, group(q, r), r.verdict) for q, r in rows)


def labels_of(rows: Sequence[tuple[Query, Any]]) -> list[people.PersonLabel]:
    """The reviewer's label on every search's top result: 1 when it is a precedent."""
    out = []
    for i, (q, r) in enumerate(rows):
        if not r.candidates:
            continue
        top = r.candidates[0].doc_id
        out.append(
            people.PersonLabel(
                f"bench-{i}",
                1,
                top,
                KEY,
                dict(r.signals),
                int(top in q.precedents),
                "",
                REVIEWER,
                "reviewer",
            )
        )
    return out


def halves(queries: Sequence[Query], fold: int) -> tuple[list[Query], list[Query]]:
    """(reviewed, searched after): the incidents in date order dealt alternately, ``fold``
    choosing which of the two are reviewed (every style of an incident goes with it)."""
    incidents = list(dict.fromkeys(q.id.split(":", 1)[1] for q in queries))
    reviewed = {d for i, d in enumerate(incidents) if i % 2 == fold}
    early = [q for q in queries if q.id.split(":", 1)[1] in reviewed]
    late = [q for q in queries if q.id.split(":", 1)[1] not in reviewed]
    return early, late


def one_seed(
    home: Path, paths: list[Path], queries: Sequence[Query], seed: int, cache: Path
) -> dict[str, Any]:
    """Both folds of one seed: the outcomes of the incidents not reviewed, pooled."""
    before_rows: list[tuple[Query, Any]] = []
    after_rows: list[tuple[Query, Any]] = []
    folds: list[dict[str, Any]] = []
    for fold in (0, 1):
        early, late = halves(queries, fold)
        kb = calibrated(home / f"fold{fold}", paths, seed, cache)
        before_rows += searched(kb, late)
        said = labels_of(searched(kb, early))
        real_labels = people.labels
        people.labels = lambda _store, said=said: said  # type: ignore[assignment]
        try:
            report = people.refit(kb, persist=True, who="bench")
        finally:
            people.labels = real_labels  # type: ignore[assignment]
        fresh = reopen(home / f"fold{fold}", kb)
        kb.close()
        after_rows += searched(fresh, late)
        model = fresh.confidence_model(KEY)
        fresh.close()
        entry = report["models"].get(KEY, {})
        folds.append(
            {
                "labels": len(said),
                "positive": sum(p.label for p in said),
                "kept": bool(entry.get("kept")),
                "precedence": entry.get("precedence"),
                "thresholds": None if model is None else {"lo": model.lo, "hi": model.hi},
            }
        )
    return {
        "labels": sum(f["labels"] for f in folds),
        "positive": sum(f["positive"] for f in folds),
        "kept": sum(f["kept"] for f in folds),
        "folds": folds,
        "before": states(before_rows),
        "after": states(after_rows),
    }


def main(argv: list[str] | None = None) -> int:
    args = seed_parser(__doc__.split("\n\n")[0]).parse_args(argv)
    started = time.perf_counter()
    results = over_seeds(args, "seenbefore-reviews-", one_seed)
    show(results)
    spread = summary(results)
    console.print(spread)
    if args.write:
        out = {
            **provenance("benchmarks/verdict_reviews.py", argv),
            "seconds": round(time.perf_counter() - started, 1),
            "seeds": seeds_of(args),
            "summary": spread,
            "results": results,
        }
        console.print(f"wrote {write_results(RESULTS / 'verdict_reviews.json', out)}")
    return 0


SHARES = {
    "right_found": ("right", "found"),
    "right_none": ("right", "none"),
    "wrong_found": ("wrong", "found"),
    "none_found": ("none", "found"),
    "none_none": ("none", "none"),
}


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """Per set and style, the mean over seeds of each share before and after the refit, and in
    how many seeds the refit was kept."""
    out: dict[str, Any] = {}
    for name, by_seed in results.items():
        runs = list(by_seed.values())
        styles = sorted({s for r in runs for s in r["after"]})
        for style in styles:
            cell: dict[str, Any] = {
                "seeds": len(runs),
                "refits_kept": sum(r["kept"] for r in runs),
                "refits": 2 * len(runs),
            }
            for when in ("before", "after"):
                means = {}
                for key, (g, state) in SHARES.items():
                    vals = [r[when][style][g][state] for r in runs if r[when][style][g]["n"]]
                    means[key] = round(sum(vals) / len(vals), 4) if vals else None
                cell[when] = means
            out[f"{name}/{style}"] = cell
    return out


def _states(c: dict[str, Any]) -> str:
    return "/".join(f"{100 * c[s]:.0f}" for s in ("found", "possible", "none"))


def show(results: dict[str, Any]) -> None:
    table = Table(
        title="the half not reviewed, before -> after a refit on the other half's reviews"
    )
    for col in (
        "set/style",
        "seed",
        "labels (+)",
        "kept",
        *(f"{g} before -> after" for g in GROUPS),
    ):
        table.add_column(col)
    for name, by_seed in results.items():
        for seed, r in by_seed.items():
            for style in r["after"]:
                cells = []
                for g in GROUPS:
                    b, a = r["before"][style][g], r["after"][style][g]
                    if not a["n"]:
                        cells.append("-")
                        continue
                    cells.append(f"{_states(b)} -> {_states(a)} ({a['n']})")
                table.add_row(
                    f"{name}/{style}",
                    seed,
                    f"{r['labels']} ({r['positive']})",
                    str(r["kept"]),
                    *cells,
                )
    console.print(table)


if __name__ == "__main__":
    raise SystemExit(main())
