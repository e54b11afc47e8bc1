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
    result = runner.invoke(
        app,
        [
            "nab",
            "--data",
            str(tmp_path / "data"),
            "--labels",
            str(labels),
            "--out",
            str(tmp_path / "out"),
            "--json",
        ],
    )
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
