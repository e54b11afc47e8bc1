"""`seenbefore watch --prometheus URL` against a real Prometheus (Debian's /usr/bin/prometheus) on
loopback, scraping the exporter of test_prometheus_live.py (queue depth 100 -> 400 at 30 s, a
sample every 100 ms): the watcher polls part-way and stops (`--once`), a new watcher continues
from the saved state after the change, and the change is one anomaly; the scores after the
restart equal those of a watcher that read the whole stream at once."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.detection.live_watch import (
    Watcher,
    WatchSettings,
    load_state,
    prometheus_reader,
    save_state,
)
from tests.detection.test_prometheus_live import (  # the fixture: prometheus + exporter
    JUMP_AT_S,
    PROMETHEUS,
    SCRAPE_S,
    _Exporter,
    prometheus,  # noqa: F401
)

QUERY = "demo_queue_depth"
LEARNING = 100  # points: 10 s at 100 ms
STOP_AT_S = 24.0  # the first watcher stops here, before the change
END_AT_S = 45.0  # the second reads up to here


def _wait_until(elapsed_s: float) -> None:
    time.sleep(max(0.0, elapsed_s - (time.monotonic() - _Exporter.started)))


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason=f"{PROMETHEUS} is not installed")
def test_watch_restarts_mid_stream_and_finds_the_change_once(
    prometheus: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    state = tmp_path / "state.json"
    settings = WatchSettings(
        url=prometheus,
        queries=(QUERY,),
        step=dt.timedelta(seconds=SCRAPE_S),
        since=dt.timedelta(minutes=5),  # reaches back before the first sample
        lag=dt.timedelta(seconds=1),
        learning=LEARNING,
    )
    _wait_until(STOP_AT_S)
    args = ["watch", "--prometheus", prometheus, "--query", QUERY, "--step", "100ms"]
    args += ["--since", "5m", "--lag", "1s", "--learning", str(LEARNING)]
    first = CliRunner().invoke(app, [*args, "--state", str(state), "--once"])
    assert first.exit_code == 0, first.output
    assert "bytes per series" in first.output and "0 anomalies over 1 series" in first.output
    saved = load_state(state)
    assert saved is not None
    [before] = saved["series"].values()
    assert before["seen"] > LEARNING  # scored for real, past the learning period, pre-change

    _wait_until(END_AT_S)
    resumed = Watcher.from_state(saved, settings, prometheus_reader(prometheus))  # a new watcher
    after = resumed.poll()
    save_state(state, resumed.to_state())
    [after_scores] = after.scores.values()
    assert len(after_scores) > 100  # the change and the 15 s after it

    whole = Watcher(settings, prometheus_reader(prometheus))  # never stopped: all in one poll
    uninterrupted = whole.poll()
    [whole_scores] = uninterrupted.scores.values()
    scores = dict(whole_scores)
    assert [(ms, scores.get(ms)) for ms, _ in after_scores] == after_scores
    assert len(whole_scores) >= before["seen"] + len(after_scores)

    [anomaly] = after.anomalies  # the change, once, and nothing before the restart
    assert [a.start for a in uninterrupted.anomalies] == [anomaly.start]
    # the exporter's clock: it jumps JUMP_AT_S after it started (wall time of that instant)
    started = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=time.monotonic() - _Exporter.started)
    jump = started + dt.timedelta(seconds=JUMP_AT_S)
    assert jump - dt.timedelta(seconds=1) <= anomaly.start <= jump + dt.timedelta(seconds=3)
    assert anomaly.service == "checkout-api" and anomaly.deviations[0].direction == "up"
