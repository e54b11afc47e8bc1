"""`detect --prometheus URL` learns from a day of history before ``--since`` (cli/detect_live.py):
a daily cycle has been seen before the first point reported, so its afternoon rise is no anomaly;
what is confirmed in the history goes apart (``DetectionReport.history``, not routed) unless it
still lasts at the last point. Checked on the pipeline with fixed series, and through the CLI
against a fake Prometheus (``fetch_series`` replaced: no network)."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from typing import Any

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.detection import prometheus_live
from seenbefore.detection.pipeline import DetectionParams, DetectionReport, detect
from seenbefore.detection.prometheus_live import parse_query_range

T0 = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
STEP = 60  # seconds
DAY_S = 86_400
SINCE = dt.timedelta(hours=6)
HOURS = 30  # a day of history, then --since's six hours
JUMP = 30.0  # a step three times the cycle's amplitude


def _value(t: float, phase: float, steps: list[tuple[float, float | None]]) -> float:
    """A daily cycle (amplitude 10, noise 1) plus +JUMP over each (start, end) of ``steps``."""
    cycle = 100.0 + 10.0 * math.sin(2 * math.pi * ((t + phase) % DAY_S) / DAY_S)
    up = any(t >= a and (b is None or t < b) for a, b in steps)
    return cycle + (JUMP if up else 0.0) + random.Random(round(t)).gauss(0, 1)


def _run(
    phase: float,
    steps: list[tuple[float, float | None]] = (),  # type: ignore[assignment]
    *,
    history: bool = True,
    split: bool = True,
) -> DetectionReport:
    """detect over HOURS of the cycle (history: the last SINCE reported; without ``split``,
    all of it) or over SINCE and the learning period alone (no history: as detect read
    Prometheus before)."""
    start = T0.timestamp()
    end = start + HOURS * 3600
    first = start if history else end - SINCE.total_seconds() - 30 * STEP
    stamps = [first + k * STEP for k in range(int((end - first) // STEP) + 1)]
    values = [[t, f"{_value(t, phase, list(steps)):.3f}"] for t in stamps]
    data = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"__name__": "orders", "service": "orders"}, "values": values}],
        },
    }
    telemetry = parse_query_range(data, "test")
    report_from = dt.datetime.fromtimestamp(end, dt.UTC) - SINCE if history and split else None
    return detect(telemetry, params=DetectionParams(report_from=report_from))


PHASES = [k * DAY_S / 8 for k in range(8)]


def test_a_day_of_history_makes_the_cycle_normal_where_six_hours_alone_reported_it() -> None:
    with_history = [len(_run(p).anomalies) for p in PHASES]
    alone = [_run(p, history=False) for p in PHASES]
    assert with_history == [0] * len(PHASES)
    # the same six hours read without the day before: the cycle's swing is reported somewhere,
    # and each such anomaly says it was not compared with a day earlier
    found = [a for report in alone for a in report.anomalies]
    assert len(found) >= 2, [len(r.anomalies) for r in alone]
    assert all(r.detector["day_check_from"] is None for r in alone)
    assert not any(r.day_checked(a) for r in alone for a in r.anomalies)


@pytest.mark.parametrize("phase", PHASES[::2])
def test_a_step_in_the_window_is_reported_at_its_first_point(phase: float) -> None:
    at = T0.timestamp() + (HOURS - 2) * 3600  # two hours before the end
    report = _run(phase, [(at, None)])
    [found] = report.anomalies
    assert abs(found.start.timestamp() - at) <= 2 * STEP
    assert report.day_checked(found)  # judged against the same time yesterday too
    # the history's first day has no day before it: a swing of the cycle found there is listed
    report_from = T0 + dt.timedelta(hours=HOURS) - SINCE
    assert all(a.end < report_from for a in report.history)


def test_an_old_incident_that_ended_is_history_and_one_still_going_is_reported() -> None:
    """At a phase whose first day reports no swing of the cycle (the history's first day has
    no day before it to compare with: elsewhere such a swing can hold an incident in it)."""
    start, phase = T0.timestamp(), DAY_S / 2
    assert _run(phase).history == []
    ended = (start + 8 * 3600, start + 9 * 3600)  # in the history, over long before the window
    report = _run(phase, [ended])
    assert report.anomalies == []
    assert [abs(a.start.timestamp() - ended[0]) <= 2 * STEP for a in report.history] == [True]
    ongoing = _run(phase, [(start + 8 * 3600, None)])  # began in the history, still up at the end
    [found] = ongoing.anomalies
    assert abs(found.start.timestamp() - (start + 8 * 3600)) <= 2 * STEP
    assert ongoing.history == []
    told = ongoing.detector["history"]
    assert told["points"] == 24 * 3600 // STEP and told["anomalies"] == 0


# -- through the CLI, against a fake Prometheus ---------------------------------------------------


class _Prometheus:
    """``fetch_series`` over the cycle, with a step two hours before the first request's end."""

    def __init__(self, jump: bool) -> None:
        self.jump = jump
        self.asked: list[tuple[dt.datetime, dt.datetime]] = []

    def __call__(
        self, base_url: str, query: str, *, start: dt.datetime, end: dt.datetime, **kw: Any
    ) -> list[dict[str, Any]]:
        self.asked.append((start, end))
        at = end.timestamp() - 2 * 3600
        steps = [(at, None)] if self.jump else []
        first = math.ceil(start.timestamp() / STEP) * STEP
        stamps = range(first, int(end.timestamp()) + 1, STEP)
        values = [[t, f"{_value(t, 0.0, steps):.3f}"] for t in stamps]
        return [{"metric": {"__name__": "orders", "service": "orders"}, "values": values}]


def _detect(monkeypatch: pytest.MonkeyPatch, *extra: str, jump: bool = True) -> Any:
    fake = _Prometheus(jump)
    monkeypatch.setattr(prometheus_live, "fetch_series", fake)
    args = ["detect", "--prometheus", "http://127.0.0.1:9", "--query", "orders", *extra]
    return CliRunner().invoke(app, args), fake


def test_detect_reads_a_day_before_since_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    result, fake = _detect(monkeypatch, "--since", "6h", "--json")
    assert result.exit_code == 0, result.output
    [(start, end)] = fake.asked
    assert end - start == SINCE + dt.timedelta(days=1)
    report = json.loads(result.stdout)
    told = report["detector"]["history"]
    assert told["points"] == DAY_S // STEP
    assert dt.datetime.fromisoformat(told["report_from"]) == end - SINCE
    [found] = report["anomalies"]
    jumped = end.timestamp() - 2 * 3600
    assert abs(dt.datetime.fromisoformat(found["start"]).timestamp() - jumped) <= 2 * STEP
    assert "history" in report

    text, _ = _detect(monkeypatch, "--since", "6h")
    assert text.exit_code == 0, text.output
    said = " ".join(text.output.split())
    assert "history: 1,440 points a series learned from before the last 6h" in said


def test_history_zero_reads_since_alone_and_a_bad_one_is_refused_before_asking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result, fake = _detect(monkeypatch, "--since", "6h", "--history", "0", "--json")
    assert result.exit_code == 0, result.output
    [(start, end)] = fake.asked
    assert end - start == SINCE
    assert "history" not in json.loads(result.stdout)["detector"]
    refused, fake = _detect(monkeypatch, "--history", "yesterday")
    assert refused.exit_code != 0 and fake.asked == []
    said = " ".join(refused.output.split())
    assert "--history is 'yesterday'" in said and "1d" in said


def test_detect_on_a_csv_shorter_than_a_day_says_an_anomaly_was_not_compared_with_one(
    tmp_path: Any,
) -> None:
    """Six hours of the cycle in a CSV, at phases where its swing is reported: each such
    anomaly is marked (--json) and explained (text) as not compared with a day earlier."""
    marked = 0
    for phase in PHASES:
        path = tmp_path / f"cycle-{int(phase)}.csv"
        start = T0.timestamp()
        rows = ["timestamp,orders"]
        for k in range(int(SINCE.total_seconds()) // STEP):
            t = start + k * STEP
            stamp = dt.datetime.fromtimestamp(t, dt.UTC).isoformat()
            rows.append(f"{stamp},{_value(t, phase, []):.3f}")
        path.write_text("\n".join(rows) + "\n")
        runner = CliRunner()
        result = runner.invoke(app, ["detect", "--csv", str(path), "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["detector"]["day_check_from"] is None
        if not report["anomalies"]:
            continue
        assert [a["compared_with_a_day_earlier"] for a in report["anomalies"]] == [False] * len(
            report["anomalies"]
        )
        text = runner.invoke(app, ["detect", "--csv", str(path)])
        said = " ".join(text.output.split())
        assert "no day of this series before it: not compared with the same time a day" in said
        marked += 1
    assert marked >= 2


def test_history_is_refused_where_there_is_no_server_to_read_it_from(tmp_path: Any) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text("timestamp,x\n2026-01-01T00:00:00Z,1\n")
    saved = tmp_path / "q.json"
    saved.write_text('{"status": "success", "data": {"resultType": "matrix", "result": []}}')
    for source in (["--csv", str(csv)], ["--prometheus", str(saved)], ["--hours", "30"]):
        result = CliRunner().invoke(app, ["detect", *source, "--history", "2d"])
        said = " ".join(result.output.split())
        assert result.exit_code != 0 and "--history 2d reads a" in said, said


def test_the_history_and_the_learning_period_stay_within_the_points_a_read_may_bring(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A learning period longer than the day is read from history too, but --since and what
    is read before it stay within MAX_LIVE_POINTS a series (the server is asked nothing more)."""
    from seenbefore.cli.detect_live import MAX_LIVE_POINTS

    asked: list[dt.timedelta] = []

    def empty(base_url: str, query: str, *, start: dt.datetime, end: dt.datetime, **kw: Any) -> Any:
        asked.append(end - start)
        return []

    monkeypatch.setattr(prometheus_live, "fetch_series", empty)
    args = ["detect", "--prometheus", "http://127.0.0.1:9", "--query", "orders"]
    CliRunner().invoke(app, [*args, "--since", "6h", "--step", "1s", "--learning", "100000"])
    CliRunner().invoke(app, [*args, "--since", "6h", "--learning", "3000"])
    assert asked == [
        dt.timedelta(seconds=MAX_LIVE_POINTS),  # 6 h and 100,000 points before: capped
        dt.timedelta(hours=6) + dt.timedelta(minutes=3000),  # the learning period, not the day
    ]


def test_fires_merged_in_the_history_are_not_counted_as_the_reports_duplicates() -> None:
    """The swings of the history's first day repeat while they last and join them: over the
    whole read those joins are counted, with the history split off they are not."""
    whole = [_run(p, split=False).detector["joined_fires"] for p in PHASES]
    reported = [_run(p).merged for p in PHASES]
    assert sum(whole) >= 3, whole
    assert reported == [0] * len(PHASES)
