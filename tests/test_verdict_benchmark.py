"""The yardstick of benchmarks/verdict.py: which queries a replay makes and what counts as their
precedents (benchmarks/replays.py), how a cell's verdict states are split
(benchmarks/verdict_cells.py) and the docs' table made from them (benchmarks/verdict_table.py).
Hand-made inputs, hand-worked values; no KB is built."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> dict[str, ModuleType]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import replays
    import verdict_cells
    import verdict_table

    return {"replays": replays, "cells": verdict_cells, "table": verdict_table}


def _doc(pid: str, date: str, kind: str, *, extra: str = "", body: str = "") -> str:
    return (
        f'---\nid: {pid}\ntitle: "{pid} title"\ndate: {date}\ntype: {kind}\n{extra}---\n\n'
        f"## Summary\n\n{pid} summary. {body}\n\n## Notes\n\ntype: not front matter\n"
    )


def test_strip_type_removes_only_the_front_matter_line(bench: dict[str, ModuleType]) -> None:
    text = _doc("INC-1", "2021-01-01", "disk-full")
    out = bench["replays"].strip_type(text, "a.md")
    assert "type: disk-full" not in out
    assert "type: not front matter" in out  # the body's line stays
    assert len(out.splitlines()) == len(text.splitlines()) - 1
    with pytest.raises(ValueError, match="0 'type:' lines"):
        bench["replays"].strip_type(out, "a.md")


def test_sample_replay_precedents_are_earlier_same_type_or_linked(
    tmp_path: Path, bench: dict[str, ModuleType]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    files = {
        # the first of its day: nothing is earlier
        "a.md": _doc("INC-A", "2021-01-01", "memory-leak"),
        # superseded by INC-S: hidden from a default search, so nobody's precedent
        "b.md": _doc("INC-B", "2021-02-01", "disk-full", extra="status: superseded\n"),
        "s.md": _doc("INC-S", "2021-02-01", "disk-full", extra="supersedes: INC-B\n"),
        # same type as A; names INC-S in its body (a link across types counts)
        "c.md": _doc("INC-C", "2021-03-01", "memory-leak", body="See INC-S."),
        # same day as C: C is not earlier than it; different type, names INC-B (hidden)
        "d.md": _doc("INC-D", "2021-03-01", "cpu-saturation", body="Like INC-B and INC-C."),
    }
    for name, text in files.items():
        (src / name).write_text(text, encoding="utf-8")
    docs = bench["replays"].untyped_copy(src, tmp_path / "untyped")
    assert {d.id: d.hidden for d in docs} == {
        "INC-A": False,
        "INC-B": True,
        "INC-S": False,
        "INC-C": False,
        "INC-D": False,
    }
    assert all(
        "type:" not in p.read_text().split("---")[1] for p in (tmp_path / "untyped").iterdir()
    )
    queries = bench["replays"].sample_replay_queries(docs)
    got = {q.id: (sorted(q.precedents), q.until, q.exclude) for q in queries}
    day = dt.date
    assert got == {
        "summary:INC-A": ([], day(2020, 12, 31), ("INC-A",)),
        "title:INC-A": ([], day(2020, 12, 31), ("INC-A",)),
        "summary:INC-B": ([], day(2021, 1, 31), ("INC-B",)),
        "title:INC-B": ([], day(2021, 1, 31), ("INC-B",)),
        "summary:INC-S": ([], day(2021, 1, 31), ("INC-S",)),
        "title:INC-S": ([], day(2021, 1, 31), ("INC-S",)),
        "summary:INC-C": (["INC-A", "INC-S"], day(2021, 2, 28), ("INC-C",)),
        "title:INC-C": (["INC-A", "INC-S"], day(2021, 2, 28), ("INC-C",)),
        "summary:INC-D": ([], day(2021, 2, 28), ("INC-D",)),
        "title:INC-D": ([], day(2021, 2, 28), ("INC-D",)),
    }
    texts = {q.id: q.text for q in queries}
    assert texts["title:INC-C"] == "INC-C title"
    assert texts["summary:INC-C"] == "INC-C summary. See INC-S."


def test_aws_replay_counts_the_same_outage_a_recurrence_and_judged_pairs(
    bench: dict[str, ModuleType],
) -> None:
    def event(eid: str, t: int, service: str, summary: str) -> dict[str, Any]:
        return {"id": eid, "date": str(t), "service_name": service, "summary": summary,
                "updates": [{"text": f"{eid} first"}, {"text": f"{eid} last"}]}  # fmt: skip

    day = 86_400
    events = [
        event("e1", 0, "Amazon EC2 (Oregon)", "Increased API Error Rates"),
        event("e2", 1800, "Amazon S3", "Elevated errors"),  # within the hour of e1
        # e1's failure again in another region: a recurrence
        event("e3", 2 * day, "Amazon EC2 (London)", "elevated api error rate in eu-west-2"),
        event("e4", 3 * day, "AWS Lambda", "Delays"),  # alone
        event("e5", 4 * day, "Amazon EC2 (Oregon)", "Instance connectivity"),  # another failure
        event("e6", 5 * day, "Amazon ECS", "Task launch delays"),  # judged: e4 is a precedent
        event("e7", 6 * day, "AWS Lambda", "Invoke delays"),  # judged: e4 is not
    ]
    judged = {frozenset(("e6", "e4")): True, frozenset(("e7", "e4")): False}
    queries = bench["replays"].aws_replay_queries(events, judged=judged)
    got = {q.id: (sorted(q.precedents), q.exclude) for q in queries}
    assert got["first-update:e1"] == ([], ("e1", "e2", "e3", "e4", "e5", "e6", "e7"))
    assert got["alert-line:e2"] == (["e1"], ("e2", "e3", "e4", "e5", "e6", "e7"))
    assert got["first-update:e3"] == (["e1"], ("e3", "e4", "e5", "e6", "e7"))  # not e2
    assert got["alert-line:e4"] == ([], ("e4", "e5", "e6", "e7"))
    assert got["alert-line:e5"] == ([], ("e5", "e6", "e7"))  # same service, other failure
    assert got["alert-line:e6"] == (["e4"], ("e6", "e7"))
    assert got["alert-line:e7"] == ([], ("e7",))
    texts = {q.id: q.text for q in queries}
    assert texts["alert-line:e1"] == "Amazon EC2 (Oregon): Increased API Error Rates"
    assert texts["first-update:e3"] == "e3 first"


def test_the_committed_judgments_load_and_name_real_events(bench: dict[str, ModuleType]) -> None:
    judged = bench["replays"].load_judgments()
    assert len(judged) == 1439
    assert 0 < sum(judged.values()) < len(judged)
    assert all(len(pair) == 2 and all(i.startswith("aws-") for i in pair) for pair in judged)


def _outcome(cells: ModuleType, qid: str, precedents: set[str], top: str, said: str) -> Any:
    q = cells.Query(qid, "text", "style", frozenset(precedents))
    return cells.Outcome(q, tops={"default": top, "sparse": top}, verdict=said, naive=said)


def test_states_split_by_top_right_top_wrong_and_no_precedent(
    bench: dict[str, ModuleType],
) -> None:
    cells = bench["cells"]
    found, possible, none = cells.FOUND, cells.POSSIBLE, cells.NONE
    rows = [
        _outcome(cells, "q1", {"a"}, "a", none),  # top right, told none
        _outcome(cells, "q2", {"a"}, "a", possible),  # top right
        _outcome(cells, "q3", {"a"}, "a", none),  # top right
        _outcome(cells, "q4", {"a"}, "b", found),  # top wrong
        _outcome(cells, "q5", set(), "b", none),  # no precedent in the KB
        _outcome(cells, "q6", set(), "b", possible),
    ]
    got = cells.states(rows, "default", lambda o: o.verdict)
    assert got == {
        "top_right": {"n": 3, "found": 0.0, "possible": 0.3333, "none": 0.6667},
        "top_wrong": {"n": 1, "found": 1.0, "possible": 0.0, "none": 0.0},
        "no_precedent": {"n": 2, "found": 0.0, "possible": 0.5, "none": 0.5},
    }
    whole = cells.cell(rows)
    assert whole["states"] == got
    assert whole["false_no_precedent_when_first"] == 0.6667
    assert cells.states(rows[4:], "default", lambda o: o.verdict)["top_right"] == {
        "n": 0, "found": None, "possible": None, "none": None,
    }  # fmt: skip


def test_markdown_table_one_row_per_set_and_style(bench: dict[str, ModuleType]) -> None:
    def group(n: int, f: float, p: float, x: float) -> dict[str, Any]:
        return {"n": n, "found": f, "possible": p, "none": x}

    empty = {"n": 0, "found": None, "possible": None, "none": None}
    cells = {
        "s/summary": {
            "queries": 71,
            "hit_at_1": {"default": 0.2917, "sparse": 0.25},
            "states": {
                "top_right": group(14, 0.0, 0.2857, 0.7143),
                "top_wrong": group(34, 0.0, 0.1471, 0.8529),
                "no_precedent": group(23, 0.0, 0.0, 1.0),
            },
        },
        "s/summary/present": {"queries": 48},  # a sub-cell: not a row
        "s/off-topic": {
            "queries": 40,
            "hit_at_1": {},
            "states": {
                "top_right": empty,
                "top_wrong": empty,
                "no_precedent": group(40, 0.025, 0.0, 0.975),
            },
        },
    }
    lines = bench["table"].markdown_table(cells).splitlines()
    assert len(lines) == 4
    assert lines[1] == "| --- | --- | --- | --- | --- | --- |"
    assert lines[2] == (
        "| s/summary | 71 | 0.292 / 0.250 / – | 0/29/71 (14) | 0/15/85 (34) | 0/0/100 (23) |"
    )
    assert lines[3] == "| s/off-topic | 40 | – | – | – | 2/0/98 (40) |"
    with pytest.raises(ValueError, match="rerun it with --write"):
        bench["table"].markdown_table({"old/cell": {"queries": 3}})


def test_docs_show_the_table_of_the_committed_results(bench: dict[str, ModuleType]) -> None:
    # rerunning benchmarks/verdict.py --write means re-copying its table into docs/retrieval.md
    # (`python benchmarks/verdict_table.py` prints it)
    record = json.loads((BENCHMARKS / "results" / "verdict.json").read_text(encoding="utf-8"))
    table = bench["table"].markdown_table(record["cells"])
    assert len(table.splitlines()) == 2 + sum(n.count("/") == 1 for n in record["cells"])
    page = (BENCHMARKS.parent / "docs" / "retrieval.md").read_text(encoding="utf-8")
    assert table in page, "docs/retrieval.md: re-copy `python benchmarks/verdict_table.py`"


def test_tops_neither_labelled_nor_judged_are_counted(bench: dict[str, ModuleType]) -> None:
    judged = {frozenset(("e2", "e1")): False, frozenset(("e3", "e1")): True}
    tops = [("e2", "e1"), ("e3", "e1"), ("e4", "e1"), ("e4", "e2")]
    # judged either way counts as labelled; the order of a pair does not matter
    assert bench["replays"].unjudged_tops(tops, judged) == [("e4", "e1"), ("e4", "e2")]
