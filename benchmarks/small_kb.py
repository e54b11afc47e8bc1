"""Knowledge bases too small to calibrate themselves: the verdict they give, and the shipped
models they give it with.

A KB under ``selfcal.MIN_DOCUMENTS`` documents (a team's first postmortems) keeps the shipped
confidence models (``src/seenbefore/retrieval/defaults.json``). Until 2026-12-08 those were
fitted on the whole sample KB and graphrca (benchmarks/fit_defaults.py) with one threshold, read
as ``lo``: on a twelve-postmortem KB the pool query ranked the PgBouncer postmortem first and
was told "no precedent" at p 0.49.

``--fit`` fits the ``sparse`` and ``hybrid:all-MiniLM-L6-v2`` models (the two a small KB's
default search reads) with the pipeline a large KB uses on itself (calibration/selfcal.py's
self-made cases and labels, calibration/fitting.py's fit, operating point and shapes), on
small KBs made of graphrca's incidents (windows of consecutive incidents in date order, their
categories left out as a team's postmortems carry none: labels come from links and confidently
inferred failure modes), and writes them into defaults.json. Without it, the benchmark measures:
small KBs made of data the fit never saw -- the sample KB with its types hidden, and the AWS
Health events -- each a window of consecutive documents in date order, searched with the
documents that came next (the replays' styles and precedent rules, benchmarks/replays.py) and
with 40 off-topic claims (BEIR SciFact); verdict states split as benchmarks/verdict.py splits
them, per set and style, pooled over the windows.

    .venv/bin/python benchmarks/small_kb.py --shared ../shared/data [--write]
    .venv/bin/python benchmarks/small_kb.py --shared ../shared/data --fit

Writes benchmarks/results/small_kb.json with --write (command, commit, machine, date, and the
source line of the models measured).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import REPO, RESULTS, provenance, write_results
from realtext import aws_events, aws_markdown, build_kb
from replays import AWS_STYLES, aws_precedents, aws_text, replay_precedents, untyped_copy
from seenbefore.calibration import fitting, selfcal
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.jsonl import PRESETS
from seenbefore.retrieval.context import shipped_weights
from seenbefore.retrieval.hybrid import SearchOptions
from verdict import SAMPLE, run, scifact_claims
from verdict_cells import Query
from verdict_seeds import GROUPS, ceiling, shares, states_cell

console = Console(width=160)
FAMILY = "all-MiniLM-L6-v2"
KEYS = ("sparse", f"hybrid:{FAMILY}")  # the models a small KB's default search reads
SIZES = (6, 12, 18)  # documents in a small KB (all under selfcal.MIN_DOCUMENTS)
WINDOWS = 8  # windows of each size per set, spread evenly over the set's dates
NEXT = {"sample": 10, "aws": 25}  # documents after a window searched against it
DEFAULTS = REPO / "src" / "seenbefore" / "retrieval" / "defaults.json"


def starts(total: int, size: int, after: int, windows: int = WINDOWS) -> list[int]:
    """``windows`` offsets spread evenly over ``total`` documents, each leaving ``size`` in the
    window and ``after`` documents to search after it."""
    last = total - size - after
    if last < 0:
        raise ValueError(f"{total} documents cannot hold a window of {size} and {after} after it")
    return sorted({round(i * last / max(1, windows - 1)) for i in range(windows)})


# -- the check sets: data the fit never saw ----------------------------------------------------
def sample_windows(root: Path) -> list[tuple[str, Path, list[Query]]]:
    """The sample KB, types hidden, in date order: each window's folder and the queries of the
    documents after it (summary and title; precedents by the replay's rule, hidden type or an
    explicit link)."""
    docs = sorted(
        (d for d in untyped_copy(SAMPLE, root / "untyped") if d.date is not None),
        key=lambda d: (d.date, d.id),
    )
    out = []
    for size in SIZES:
        for start in starts(len(docs), size, NEXT["sample"]):
            window = docs[start : start + size]
            folder = root / f"sample-{size}-{start}"
            folder.mkdir()
            for d in window:
                (path,) = [
                    *(root / "untyped").glob(f"{d.id}-*.md"),
                    *(root / "untyped").glob(f"{d.id}.md"),
                ]
                (folder / path.name).write_text(path.read_text(encoding="utf-8"), "utf-8")
            queries = []
            for p in docs[start + size : start + size + NEXT["sample"]]:
                found = replay_precedents(p, window)
                queries.append(Query(f"summary:{p.id}", p.summary, "summary", found))
                queries.append(Query(f"title:{p.id}", p.title, "title", found))
            out.append((f"sample/{size}", folder, queries))
    return out


def aws_windows(root: Path, shared: Path) -> list[tuple[str, Path, list[Query]]]:
    """The AWS Health events in date order: each window's folder and the queries of the events
    after it (first update and pager line; precedents by the replay's rule and judgments)."""
    events = sorted(
        aws_events(shared / "postmortems" / "aws_status_events.jsonl"),
        key=lambda e: (int(e["date"]), e["id"]),
    )
    rule = aws_precedents(events)
    out = []
    for size in SIZES:
        for start in starts(len(events), size, NEXT["aws"]):
            window = events[start : start + size]
            ids = {e["id"] for e in window}
            folder = root / f"aws-{size}-{start}"
            folder.mkdir()
            for e in window:
                (folder / f"{e['id']}.md").write_text(aws_markdown(e), encoding="utf-8")
            queries = [
                Query(
                    f"{style}:{e['id']}",
                    aws_text(e, style),
                    style,
                    frozenset((rule[e["id"]] - {e["id"]}) & ids),
                )
                for e in events[start + size : start + size + NEXT["aws"]]
                for style in AWS_STYLES
            ]
            out.append((f"aws/{size}", folder, queries))
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Verdict states per set and style (pooled over windows and sizes, and per size), with the
    source line of the model each small KB scored with."""
    off_topic = [
        Query(f"off-topic:{i}", text, "off-topic")
        for i, text in enumerate(scifact_claims(args.shared))
    ]
    told: list[tuple[str, str, str]] = []
    probs: dict[str, dict[str, list[float]]] = {}
    models: set[str] = set()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seenbefore-small-") as scratch:
        root = Path(scratch)
        windows = sample_windows(root) + aws_windows(root, args.shared)
        for i, (name, folder, queries) in enumerate(windows, 1):
            kb = build_kb(root / f"home-{i}", [folder], None, True, args.cache)
            model = kb.confidence_model(f"hybrid:{FAMILY}")
            models.add(model.source if model is not None else "none")
            kind, size = name.split("/")
            for o in run(kb, [*queries, *off_topic], True, others=False):
                group = "none" if not o.query.has_precedent else ("right" if o.right() else "wrong")
                for label in (f"{kind}/{o.query.style}", f"{kind}/{o.query.style}/{size}"):
                    told.append((label, group, o.verdict))
                probs.setdefault(f"{kind}/{o.query.style}", {}).setdefault(group, []).append(o.p)
            kb.close()
            console.print(
                f"{name} window {i} of {len(windows)}: {len(queries)} queries "
                f"({time.perf_counter() - started:.0f} s)"
            )
    found = shares(told)
    for label, groups in probs.items():
        if "right" in groups and "none" in groups:
            found[label]["ceiling"] = ceiling(
                groups["right"], groups.get("wrong", []), groups["none"]
            )
    return {"states": found, "models": sorted(models)}


# -- the fit: small KBs of graphrca's incidents --------------------------------------------------
def graphrca_windows(root: Path, shared: Path) -> list[Path]:
    path = shared / "postmortems" / "graphrca_incidents.jsonl"
    rows = sorted(
        (json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()),
        key=lambda r: (str(r.get("date") or ""), r["id"]),
    )
    out = []
    for size in SIZES:
        for start in starts(len(rows), size, 0):
            file = root / f"graphrca-{size}-{start}.jsonl"
            file.write_text(
                "".join(json.dumps(r) + "\n" for r in rows[start : start + size]), "utf-8"
            )
            out.append(file)
    return out


# graphrca's preset less its type: what a team's postmortems carry (labels come from links and
# confidently inferred failure modes, as on any untyped KB)
UNTYPED = PRESETS["graphrca"].replace("type=category,", "")


def rows_of(kb: KnowledgeBase, seed: int) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per model key, the labelled fit and held-out rows of ``kb``'s self-made cases, searched
    the way the product searches a small KB (the shipped dense weight, dense voting)."""
    fit_cases, held_cases, tiers = selfcal.self_cases(kb, seed=seed)
    modes = selfcal.modes_of(kb)
    options = selfcal.mode_options(SearchOptions(k=10), FAMILY, shipped_weights(FAMILY).dense)
    return {
        key: (
            selfcal.labelled_searches(kb, fit_cases, tiers, opts, modes),
            selfcal.labelled_searches(kb, held_cases, tiers, opts, modes),
        )
        for key, opts in options.items()
    }


def fit_defaults(args: argparse.Namespace) -> int:
    pooled: dict[str, tuple[list[Any], list[Any]]] = {k: ([], []) for k in KEYS}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seenbefore-small-fit-") as scratch:
        root = Path(scratch)
        files = graphrca_windows(root, args.shared)
        for i, file in enumerate(files):
            kb = build_kb(root / f"home-{i}", [file], UNTYPED, True, args.cache)
            for key, (fit_rows, held_rows) in rows_of(kb, seed=i).items():
                pooled[key][0].extend(fit_rows)
                pooled[key][1].extend(held_rows)
            kb.close()
            console.print(
                f"graphrca window {i + 1} of {len(files)} ({time.perf_counter() - started:.0f} s)"
            )
    defaults = json.loads(DEFAULTS.read_text(encoding="utf-8"))
    for key, (fit_rows, held_rows) in pooled.items():
        before = defaults["confidence"].get(key)
        made = fitting.fit(
            fit_rows,
            held_rows,
            source=(
                f"shipped for KBs under {selfcal.MIN_DOCUMENTS} documents: fitted on "
                f"{len(fit_rows)} self-made cases of {len(files)} small KBs of graphrca's "
                f"incidents, untyped ({', '.join(map(str, SIZES))} documents; "
                "benchmarks/small_kb.py --fit)"
            ),
        )
        data = made.model.as_dict()
        old = ConfidenceModel.from_dict(before) if before is not None else None
        if old is not None and (old.weights, old.bias) == (made.model.weights, made.model.bias):
            # the same fit again: what it replaced the first time is still what it replaced
            if "replaced" in old.metrics:
                data["metrics"]["replaced"] = old.metrics["replaced"]
        elif old is not None:
            data["metrics"]["replaced"] = {
                "balanced_log_loss_held_out": {
                    "before": round(fitting.balanced_log_loss(old, held_rows), 4),
                    "after": round(fitting.balanced_log_loss(made.model, held_rows), 4),
                },
                "source_before": old.source,
            }
        defaults["confidence"][key] = data
        console.print(f"{key}: {made.rule}")
        console.print(f"  held out: {made.held_out}")
    defaults["provenance"]["small_kb_confidence"] = {
        "script": "benchmarks/small_kb.py --fit",
        "keys": list(KEYS),
        "data": (
            "graphrca_incidents.jsonl without its categories, windows of consecutive "
            "incidents in date order"
        ),
    }
    DEFAULTS.write_text(json.dumps(defaults, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    console.print(f"wrote {DEFAULTS}")
    return 0


# -- output ------------------------------------------------------------------------------------
def show(states: dict[str, Any]) -> None:
    table = Table(title="small KBs: verdict states (found/possible/none %)")
    for col in ("set/style", "right top", "wrong top", "none in KB"):
        table.add_column(col)
    for label, groups in states.items():
        table.add_row(label, *(states_cell(groups[g]) for g in GROUPS))
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache" / "embeddings.sqlite")
    parser.add_argument("--fit", action="store_true", help="fit the small-KB defaults")
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--name", default="small_kb", help="the results file's name under benchmarks/results"
    )
    args = parser.parse_args(argv)
    if args.fit:
        return fit_defaults(args)
    started = time.perf_counter()
    found = measure(args)
    show(found["states"])
    if args.write:
        out = {
            **provenance("benchmarks/small_kb.py", argv),
            "seconds": round(time.perf_counter() - started, 1),
            "sizes": list(SIZES),
            "windows": WINDOWS,
            **found,
        }
        console.print(f"wrote {write_results(RESULTS / f'{args.name}.json', out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
