"""The verdict table docs/retrieval.md shows, made from the ``cells`` of
benchmarks/results/verdict.json (benchmarks/verdict.py writes both). Standard library only, so
any script can import :func:`markdown_table`; run alone it prints the table of a results file:

    python benchmarks/verdict_table.py [benchmarks/results/verdict.json]

One row per set/style (the ``/present`` and ``/none`` sub-cells are left out): queries, Hit@1 of
the default mode / sparse / dense, then for each group of queries (the top result is a precedent,
the top result is not one, no precedent in the KB) the percentages told "precedent found" /
"possible precedent — check" / "no precedent", with the group's size in brackets.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

GROUPS = ("top_right", "top_wrong", "no_precedent")
HEADER = (
    "| set/style | n | Hit@1 default / sparse / dense | top right: found/possible/none % (n) "
    "| top wrong: found/possible/none % (n) | no precedent in KB: found/possible/none % (n) |"
)


def _hit(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def _triple(group: Mapping[str, Any] | None) -> str:
    if not group or not group.get("n"):
        return "–"
    shares = "/".join(f"{100 * group[k]:.0f}" for k in ("found", "possible", "none"))
    return f"{shares} ({group['n']})"


def markdown_table(cells: Mapping[str, Mapping[str, Any]]) -> str:
    """The Markdown table of ``cells`` (verdict.json's ``cells``), one row per set/style in the
    order given, ending with a newline. A cell without ``states`` (written before they were
    recorded) is refused with the fix."""
    lines = [HEADER, "|" + " --- |" * HEADER.count(" | ") + " --- |"]
    for name, c in cells.items():
        if name.count("/") != 1:
            continue
        if "states" not in c:
            raise ValueError(
                f"cell {name!r} has no 'states' (keys: {', '.join(sorted(c))}); it was written "
                "before benchmarks/verdict.py recorded the verdict states: rerun it with --write"
            )
        hit = c.get("hit_at_1") or {}
        hits = " / ".join(_hit(hit.get(m)) for m in ("default", "sparse", "dense")) if hit else "–"
        groups = " | ".join(_triple(c["states"].get(g)) for g in GROUPS)
        lines.append(f"| {name} | {c['queries']} | {hits} | {groups} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[0]) if args else Path(__file__).parent / "results" / "verdict.json"
    sys.stdout.write(markdown_table(json.loads(path.read_text(encoding="utf-8"))["cells"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
