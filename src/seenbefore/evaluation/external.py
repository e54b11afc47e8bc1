"""Cases from data the project did not write: graphrca_incidents.jsonl (public incident reports,
one cause category each). Query = the incident's postmortem text without its root-cause lines;
relevant = the other incidents of the same category. Categories in ``held_out`` are meant to be
kept out of the index (every case excludes them), so their incidents are no-precedent cases."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from seenbefore.errors import InputError
from seenbefore.evaluation.cases import Case

_ROOT_CAUSE = re.compile(r"root\s*cause", re.IGNORECASE)


def category_cases(path: Path, *, held_out: Sequence[str] = ()) -> list[Case]:
    if not path.is_file():
        raise InputError(f"{path} does not exist; pass the shared data directory")
    records = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    held = tuple(sorted(r["id"] for r in records if r["category"] in held_out))
    cases = []
    for r in records:
        query = "\n".join(
            line for line in r["postmortem"].splitlines() if not _ROOT_CAUSE.search(line)
        )
        novel = r["id"] in held
        relevant = tuple(
            o["id"]
            for o in records
            if o["category"] == r["category"] and o["id"] != r["id"] and o["id"] not in held
        )
        if not novel and not relevant:
            continue
        cases.append(
            Case(
                id=f"graphrca-{r['id']}",
                query=query,
                expected=() if novel else relevant,
                expect_novel=novel,
                tags=("graphrca", r["category"]),
                exclude=tuple(sorted(set(held) | {r["id"]})),
            )
        )
    return cases
