"""Numbers on the command line: every numeric option of detect, watch and review list is range
checked before anything is simulated, fitted or read, and refused with exit code 2 and one line
``error: ...`` that names the option, the value and the range (no traceback, no MemoryError).

The simulated runs take ``--hours`` from 25 (24 hours of training, then at least one hour to
score) to 336 (two weeks of one-minute points, 20,160 per metric)."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from seenbefore.cli import detect as detect_cli
from seenbefore.cli.app import app
from seenbefore.detection.pipeline import DetectionParams, DetectionReport
from seenbefore.detection.telemetry import Telemetry
from seenbefore.detection.triage import TriageResult

runner = CliRunner()
BAD_HOURS = ["1", "0", "-1", "24", "nan", "inf", "-inf", "1e9", "336.5"]
SHOWN = {"1e9": "1e+09", "-inf": "-inf", "336.5": "336.5"}  # the value as the message prints it


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.delenv("SEENBEFORE_TIERS", raising=False)
    return tmp_path / "home"


def refused(result: Result, *needles: str) -> str:
    """A clean refusal: exit 2, a SystemExit (not another exception), one ``error:`` line."""
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def invoke_bounded(args: list[str]) -> tuple[Result, int, float]:
    """Run the CLI; also the peak memory Python allocated and the seconds it took."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = runner.invoke(app, args)
        return result, tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", ["detect", "watch"])
@pytest.mark.parametrize("value", BAD_HOURS)
def test_hours_out_of_range_is_refused_before_anything_is_built(command: str, value: str) -> None:
    result, peak, seconds = invoke_bounded([command, f"--hours={value}"])
    line = refused(result, "--hours", SHOWN.get(value, value), "25", "336")
    assert "24" in line  # says why the floor is 25: the first 24 hours train the detector
    assert peak < 5_000_000 and seconds < 10  # refused by the range check, not by a MemoryError


class FakeDetect:
    """Stands in for the (slow) detector: records what it was given, finds nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, telemetry: Telemetry, *, params: DetectionParams, **_: Any) -> Any:
        self.calls.append((len(telemetry.timestamps), params.train_minutes))
        n = len(telemetry.timestamps)
        return DetectionReport(
            triage=TriageResult(),
            hits=[],
            scores={name: np.zeros(n) for name in telemetry.series},
            signatures={},
            truth=telemetry.incidents,
            matches={},
        )


@pytest.fixture
def fake_detect(monkeypatch: pytest.MonkeyPatch) -> FakeDetect:
    fake = FakeDetect()
    monkeypatch.setattr(detect_cli, "detect", fake)
    monkeypatch.setattr(detect_cli.time, "sleep", lambda _: None)
    return fake


@pytest.mark.parametrize("hours", ["25", "336"])
def test_the_smallest_and_largest_hours_are_simulated(hours: str, fake_detect: FakeDetect) -> None:
    result = runner.invoke(app, ["detect", "--scenario", "all", "--hours", hours, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert fake_detect.calls == [(int(hours) * 60, 24 * 60)]


@pytest.mark.parametrize("hours", ["25", "336"])
def test_watch_plays_the_smallest_and_largest_runs(hours: str, fake_detect: FakeDetect) -> None:
    result = runner.invoke(app, ["watch", "--hours", hours, "--speed", "10000"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert fake_detect.calls == [(int(hours) * 60, 24 * 60)]
    assert "anomalies opened" in result.output


@pytest.mark.slow
def test_detect_at_the_smallest_run_finds_what_was_injected() -> None:
    result = runner.invoke(app, ["detect", "--scenario", "bad_deploy", "--hours", "25"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "over 1 injected incidents" in result.output


@pytest.mark.parametrize("value", ["-1", "4294967296", str(10**30)])
def test_seed_out_of_range_is_refused(value: str, fake_detect: FakeDetect) -> None:
    refused(runner.invoke(app, ["detect", "--seed", value]), "--seed", value, "4294967295")
    refused(runner.invoke(app, ["watch", "--seed", value]), "--seed", value, "4294967295")
    assert fake_detect.calls == []


@pytest.mark.parametrize("value", ["4294967295", "0"])
def test_seed_edges_are_accepted(value: str, fake_detect: FakeDetect) -> None:
    result = runner.invoke(app, ["detect", "--seed", value, "--hours", "25", "--json"])
    assert result.exit_code == 0, (result.output, result.exception)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "0.5", "10001"])
def test_watch_speed_out_of_range_is_refused(value: str, fake_detect: FakeDetect) -> None:
    refused(runner.invoke(app, ["watch", f"--speed={value}"]), "--speed", value, "1", "10000")
    assert fake_detect.calls == []


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--since", "99999999999999d", "365d"),  # a timedelta overflow before
        ("--since", "400d", "365d"),
        ("--step", "99999999999999w", "--step"),
        ("--step", "2d", "--since"),  # longer than the whole window: no point at all
        ("--step", "1ms", "100,000"),  # 6 h at 1 ms: 21.6 million points per series
    ],
)
def test_live_prometheus_durations_are_bounded_before_any_request(
    option: str, value: str, needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seenbefore.detection import prometheus_live

    def no_network(*_: Any, **__: Any) -> Any:
        raise AssertionError("the server was asked")

    monkeypatch.setattr(prometheus_live, "query_range", no_network)
    args = ["detect", "--prometheus", "http://127.0.0.1:9", "--query", "up", option, value]
    refused(runner.invoke(app, args), option, value, needle)


@pytest.mark.parametrize("value", ["0", "-1", "1001", str(10**30)])
def test_review_list_limit_out_of_range_is_refused(value: str) -> None:
    refused(runner.invoke(app, ["review", "list", "--limit", value]), "--limit", value, "1000")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_search_recency_half_life_must_be_finite(value: str) -> None:
    args = ["search", "pool exhausted", "--recency-half-life", value, "--json"]
    refused(runner.invoke(app, args), "--recency-half-life", value)


def test_watch_at_full_speed_still_plays_to_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """At --speed 10000 a frame is 2,500 simulated minutes: the first step from 24:00 went past
    a 30-hour run's end, so the memory leak that `detect` finds in it was never opened."""
    monkeypatch.setattr(detect_cli.time, "sleep", lambda _: None)
    found = runner.invoke(app, ["detect", "--scenario", "memory_leak", "--hours", "30", "--json"])
    assert found.exit_code == 0 and len(json.loads(found.output)["anomalies"]) == 1
    result = runner.invoke(
        app, ["watch", "--scenario", "memory_leak", "--hours", "30", "--speed", "10000"]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert "1 anomaly opened" in result.output
    assert "\n1 anomaly opened" in result.output  # on a line of its own, off a terminal
