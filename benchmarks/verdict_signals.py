"""Which signal could tell a recurrence from no precedent? Per-signal separation on the replays,
read from a ``benchmarks/verdict.py --dump`` file: the evidence behind what the verdict can and
cannot do on the issue-31 dev sets.

    .venv/bin/python benchmarks/verdict.py --shared ../shared/data \\
        --sets sample-replay,aws-replay --dump /tmp/replays.jsonl
    .venv/bin/python benchmarks/verdict_signals.py /tmp/replays.jsonl [--write]

Each query of a set and style falls in one group (benchmarks/verdict_cells.py's split): **right**
(a precedent is in the KB and the default mode ranks one first), **wrong** (a precedent is in the
KB, another document is first) or **none** (no precedent in the KB); the set's off-topic lines
are a fourth group. For every signal the confidence model can read, and for ``p_precedent``
itself, it prints the AUROC of right against none, against wrong and against off-topic (0.5: the
signal cannot tell them apart; ties count half), with the medians.

The verdict's targets need "precedent found" for >= 40 % of right tops and <= 5 % of queries with
none, and "no precedent" for <= 10 % of right tops: that needs a signal (or the model over them)
that puts most right tops above every none query, an AUROC near 1 where the targets are read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from provenance import RESULTS, provenance, write_results
from seenbefore.core.confidence import auroc

OFF_STYLES = ("off-topic", "scifact-claim")
DUMP_COMMAND = (
    "python benchmarks/verdict.py --shared ../shared/data "
    "--sets sample-replay,aws-replay --dump FILE"
)
PAIRS = (("right", "none"), ("right", "wrong"), ("right", "off-topic"))


def group(row: dict[str, Any]) -> str:
    if row["style"] in OFF_STYLES:
        return "off-topic" if row["style"] == "off-topic" else "scifact-claim"
    if not row["has_precedent"]:
        return "none"
    return "right" if row["right"]["default"] else "wrong"


def value(row: dict[str, Any], name: str) -> float:
    return float(row["p"] if name == "p_precedent" else row["signals"].get(name, 0.0))


def separation(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per set/style: group sizes, and per signal the AUROCs of :data:`PAIRS` and medians."""
    by_set: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_set[r["set"]].append(r)
    out: dict[str, Any] = {}
    for name, part in sorted(by_set.items()):
        off = [r for r in part if r["style"] == "off-topic"]
        for style in sorted({r["style"] for r in part} - set(OFF_STYLES)):
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in part:
                if r["style"] == style:
                    groups[group(r)].append(r)
            groups["off-topic"] = off
            signals = ["p_precedent", *sorted({k for r in part for k in r["signals"]})]
            table: dict[str, Any] = {}
            for s in signals:
                values = {g: [value(r, s) for r in groups[g]] for g in groups}
                if all(v == 0.0 for vs in values.values() for v in vs):
                    continue  # a signal this mode never fills (dense ones in a sparse run)
                entry: dict[str, Any] = {}
                for a, b in PAIRS:
                    if values.get(a) and values.get(b):
                        scores = values[a] + values[b]
                        labels = [1] * len(values[a]) + [0] * len(values[b])
                        entry[f"auroc_{a}_vs_{b}"] = round(auroc(scores, labels), 3)
                entry["median"] = {
                    g: round(statistics.median(v), 4) for g, v in values.items() if v
                }
                table[s] = entry
            out[f"{name}/{style}"] = {
                "groups": {g: len(v) for g, v in groups.items()},
                "signals": table,
            }
    return out


def show(result: dict[str, Any]) -> None:
    for cell, c in result.items():
        sizes = ", ".join(f"{g} {n}" for g, n in c["groups"].items())
        print(f"\n{cell} ({sizes})")
        print(f"  {'signal':<18} {'R-vs-none':>9} {'R-vs-wrong':>10} {'R-vs-off':>8}  medians")
        for s, e in c["signals"].items():
            cols = [e.get(f"auroc_{a}_vs_{b}") for a, b in PAIRS]
            text = " ".join(
                f"{'-' if v is None else format(v, '.2f'):>{w}}"
                for v, w in zip(cols, (9, 10, 8), strict=True)
            )
            med = ", ".join(f"{g} {v:.3g}" for g, v in e["median"].items())
            print(f"  {s:<18} {text}  {med}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path, help="a benchmarks/verdict.py --dump file (JSONL)")
    parser.add_argument("--write", action="store_true", help="write results/verdict_signals.json")
    args = parser.parse_args(argv)
    if not args.dump.is_file():
        print(
            f"no dump at {args.dump}: make one with benchmarks/verdict.py --dump", file=sys.stderr
        )
        return 2
    rows = [json.loads(line) for line in args.dump.read_text().splitlines() if line.strip()]
    result = separation(rows)
    show(result)
    if args.write:
        record = provenance("benchmarks/verdict_signals.py", argv)
        record["dump"] = {"path": str(args.dump), "queries": len(rows), "made_by": DUMP_COMMAND}
        record["cells"] = result
        write_results(RESULTS / "verdict_signals.json", record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
