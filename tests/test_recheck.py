"""benchmarks/recheck.py: a figure that moved is listed, provenance and timing are not, and a
benchmark's write_results goes to the scratch folder, never over the committed file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_a_moved_figure_is_listed_and_timing_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from recheck import moved

    old = {
        "commit": "a",
        "seconds": 12.6,
        "results": {"30": {"found": 69, "false_alarms": 141, "per_file": [{"ms": 3, "fa": 2}]}},
    }
    new = {
        "commit": "b",
        "seconds": 18.3,
        "results": {"30": {"found": 73, "false_alarms": 1046, "per_file": [{"ms": 9, "fa": 71}]}},
    }
    assert moved(old, new) == [
        "results.30.false_alarms: 141 -> 1046",
        "results.30.found: 69 -> 73",
        "results.30.per_file[0].fa: 2 -> 71",
    ]
    assert moved(old, {**old, "date": "later", "seconds": 1.0}) == []
    assert moved({"x": 1}, {"y": 1}) == ["x: 1 -> (absent)", "y: (absent) -> 1"]
    assert moved({"found": True}, {"found": 1}) == ["found: True -> 1"]


def test_results_go_to_the_scratch_folder_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from provenance import RESULTS, write_results

    monkeypatch.setenv("SEENBEFORE_RESULTS_TO", str(tmp_path))
    written = write_results(RESULTS / "learning_period.json", {"found": 70})
    assert written == tmp_path / "learning_period.json"
    assert json.loads(written.read_text()) == {"found": 70}
    assert json.loads((RESULTS / "learning_period.json").read_text())["command"].startswith(
        "python benchmarks/learning_period.py"
    )


def test_every_rechecked_benchmark_writes_through_write_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A benchmark that wrote its file itself would overwrite the committed one during a
    recheck (realtext.py did, until it was added here)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from recheck import checks

    for name, command in checks(Path("shared")).items():
        script = BENCHMARKS.parent / command[0]
        source = script.read_text(encoding="utf-8")
        # its own code, or a benchmarks/ module it imports (golden.py writes through selftest.py)
        local = re.findall(r"^from (\w+) import", source, flags=re.M)
        for module in local:
            if (BENCHMARKS / f"{module}.py").is_file():
                source += (BENCHMARKS / f"{module}.py").read_text(encoding="utf-8")
        called = re.search(r"(?<!def )\bwrite_results\(", source)
        assert called, f"{command[0]} writes {name} without write_results"
