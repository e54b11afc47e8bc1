"""`seenbefore detect` and `seenbefore nab` end to end, in-process."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app

runner = CliRunner()


@pytest.mark.slow
def test_detect_all_scenarios_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path))
    result = runner.invoke(app, ["detect", "--scenario", "all", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["recall"] == 1.0 and payload["precision"] >= 0.8
    assert {t["kind"] for t in payload["truth"]} >= {
        "cpu_saturation",
        "memory_leak",
        "network_partition",
        "disk_io_contention",
        "bad_deploy",
        "connection_pool_exhaustion",
    }
    first = payload["anomalies"][0]
    assert first["signature"].startswith(first["service"]) and first["severity"] in (
        "SEV1",
        "SEV2",
        "SEV3",
        "SEV4",
    )


def test_nab_command_on_a_small_labelled_tree(tmp_path: Path) -> None:
    data = tmp_path / "data" / "realAWSCloudwatch"
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    start = dt.datetime(2014, 1, 1)
    values = 50 + rng.normal(0, 1, 1200)
    values[900:910] += 40
    lines = ["timestamp,value"] + [
        f"{(start + dt.timedelta(minutes=5 * i)):%Y-%m-%d %H:%M:%S},{v:.3f}"
        for i, v in enumerate(values)
    ]
    (data / "toy.csv").write_text("\n".join(lines) + "\n")
    window = [
        f"{(start + dt.timedelta(minutes=5 * i)):%Y-%m-%d %H:%M:%S}.000000" for i in (880, 940)
    ]
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"realAWSCloudwatch/toy.csv": [window]}))
    nab = ["nab", "--data", str(tmp_path / "data"), "--labels", str(labels), "--out"]
    result = runner.invoke(app, [*nab, str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["normalised_score"] > 50  # the obvious spike is found inside its window
    assert payload["scoreboard_all58"]["numenta HTM"] == 70.1
    assert set(payload["scopes"]) == {"realAWSCloudwatch", "all"}
    assert set(payload["scopes"]["all"]) == {"standard", "reward_low_FP_rate", "reward_low_FN_rate"}
    written = list((tmp_path / "out").rglob("*.csv"))
    assert len(written) == 1
    header = written[0].read_text().splitlines()[0]
    assert header == "timestamp,value,anomaly_score,label"
    # off a terminal, without --json: progress lines on stderr (Rich drew nothing there)
    shown = runner.invoke(app, [*nab, str(tmp_path / "o2")])
    assert shown.exit_code == 0, shown.output
    assert "realAWSCloudwatch/toy.csv: 0/1" in shown.stderr


def _spiky_csv(path: Path, n: int = 400, spike_at: int = 300) -> Path:
    """Two metrics no packaged rule watches, noise only, and a spike on one of them."""
    rng = np.random.default_rng(3)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    depth = 100 + rng.normal(0, 4, n)
    depth[spike_at : spike_at + 5] += 300
    latency = 20 + rng.normal(0, 1, n)
    lines = ["timestamp,queue_depth,latency_ms"] + [
        f"{(start + dt.timedelta(minutes=i)).isoformat()},{depth[i]:.3f},{latency[i]:.3f}"
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_detect_csv_runs_the_ensemble_on_every_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seenbefore.detection.ensemble import EVENT_PARAMS, StreamingEnsemble
    from seenbefore.detection.pipeline import DetectionParams, detect
    from seenbefore.detection.telemetry import read_csv

    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path))
    csv = _spiky_csv(tmp_path / "svc.csv")
    result = runner.invoke(app, ["detect", "--csv", str(csv), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    ran = payload["detector"]
    assert ran["name"] == "ensemble" and ran["scored_points"] == 400
    assert ran["parameters"]["members"] == ["spatial", "sequence", "artime"]
    # the one default, whatever the series' length (issue 32): 30 points, 30 one-minute steps
    assert ran["learning_period"]["points"] == 30 and ran["learning_period"]["left_points"] == 0
    assert ran["learning_period"]["seconds"] == 1800.0
    assert ran["learning_period"]["until"].startswith("2026-01-01T00:30:00")
    assert ran["parameters"]["probation"] == 750  # the members calibrate longer (WARMUP)
    [spike] = payload["anomalies"]  # the noise alone opens nothing
    assert spike["start"].startswith("2026-01-01T05:00") and spike["score"] >= 0.5
    assert spike["rules"] == [] and [d["metric"] for d in spike["deviations"]] == ["queue_depth"]

    telemetry = read_csv(csv)
    report = detect(telemetry, params=DetectionParams(detector="ensemble"))
    [scores] = report.scores.values()
    _, X = telemetry.matrix(next(iter(telemetry.series)))
    each = [StreamingEnsemble(probation=750, **EVENT_PARAMS).fit(c).scores_ for c in X.T]
    assert len(scores) == 400 and np.array_equal(scores, np.max(each, axis=0))
    # the learning period is scored too (0.5 -> 0.03 on NAB's scale); events' scores never rest
    assert np.count_nonzero(scores[:200]) > 150

    text = runner.invoke(app, ["detect", "--csv", str(csv)])
    assert text.exit_code == 0, text.output
    said = " ".join(text.output.split())
    assert "streaming ensemble" in said and "learning period 30 points (30 min" in said
    assert "1 anomaly (0 duplicates merged" in said and "truth:" not in said  # user data


def test_detect_csv_with_the_isolation_forest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path))
    csv = _spiky_csv(tmp_path / "svc.csv")
    result = runner.invoke(app, ["detect", "--csv", str(csv), "--detector", "iforest", "--json"])
    assert result.exit_code == 0, result.output
    ran = json.loads(result.stdout)["detector"]
    assert ran["name"] == "iforest" and ran["learning_period"]["points"] == 120  # 30 %
    assert ran["scored_points"] == 280 and ran["parameters"]["n_estimators"] == 200
    bad = runner.invoke(app, ["detect", "--csv", str(csv), "--detector", "psychic"])
    assert bad.exit_code != 0 and "ensemble or iforest" in bad.output
