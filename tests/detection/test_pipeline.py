import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest

from seenbefore.detection import confirm
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.pipeline import DetectionParams, detect
from seenbefore.detection.rules import Rule, evaluate_rules, load_rules
from seenbefore.detection.signature import render_signature
from seenbefore.detection.telemetry import read_csv, read_prometheus
from seenbefore.detection.triage import Triage, TriagePolicy, severity
from seenbefore.errors import ConfigError, InputError
from seenbefore.lab.simulator import SCENARIOS, simulate
from seenbefore.types import Anomaly, MetricDeviation

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def anomaly(
    service: str = "payments-api",
    minute: int = 0,
    score: float = 0.8,
    metrics: tuple[str, ...] = ("error_rate",),
    **kw: object,
) -> Anomaly:
    devs = tuple(MetricDeviation(m, "up", 10.0, 1.0, 8.0) for m in metrics)
    return Anomaly(
        id=f"a{minute}{service}",
        service=service,
        cloud="aws",
        region="us-east-1",
        start=T0 + dt.timedelta(minutes=minute),
        end=T0 + dt.timedelta(minutes=minute + 5),
        score=score,
        deviations=devs,
        **kw,
    )  # type: ignore[arg-type]


def test_severity_tiers_from_points() -> None:
    assert severity(anomaly(score=0.95, rules_severity=("SEV1",)), "high")[0] == "SEV1"  # 2+4+2
    assert severity(anomaly(score=0.95), "high")[0] == "SEV2"  # 2+2
    assert severity(anomaly(score=0.75), "medium")[0] == "SEV3"  # 1+1
    assert severity(anomaly(score=0.5), "low")[0] == "SEV4"  # 0
    tier, reasons = severity(anomaly(score=0.5, metrics=("a", "b", "c")), "medium")
    assert tier == "SEV3" and any("3 metrics" in r for r in reasons)


def test_dedupe_within_window_and_flapping_suppression() -> None:
    triage = Triage(
        policy=TriagePolicy(
            dedupe_window=dt.timedelta(minutes=30), flap_window=dt.timedelta(hours=3), flap_limit=3
        )
    )
    first = triage.process([anomaly(minute=0), anomaly(minute=20), anomaly("checkout-api", 20)])
    assert [a.service for a in first.kept] == ["payments-api", "checkout-api"]
    assert len(first.duplicates) == 1 and first.kept[0].end == T0 + dt.timedelta(minutes=25)
    later = triage.process([anomaly(minute=80)])  # outside the dedupe window: a 3rd opening
    assert len(later.kept) == 1
    flapping = triage.process([anomaly(minute=140)])  # a 4th opening within 3 h: suppressed
    assert flapping.kept == [] and "flapping" in flapping.suppressed[0][1]
    assert set(first.by_service()) == {"payments-api", "checkout-api"}


def test_rules_threshold_rate_of_change_and_absence() -> None:
    ts = [T0 + dt.timedelta(minutes=i) for i in range(20)]
    values = np.array([1.0] * 10 + [12.0] * 5 + [1.0] * 5)
    rules = [
        Rule("hi", "threshold", "error_rate", "SEV2", op=">", value=5, consecutive=3),
        Rule("jump", "rate_of_change", "error_rate", "SEV3", factor=3, over=2),
        Rule("pool", "threshold", "db", "SEV2", op=">=", value=95, relative_to="pool"),
    ]
    hits = evaluate_rules(
        rules,
        service="s",
        timestamps=ts,
        series={"error_rate": values, "db": np.full(20, 96.0)},
        capacity={"db": 100.0},
    )
    assert [(h.rule.name, h.index) for h in hits] == [("hi", 10), ("jump", 10), ("pool", 0)]
    gappy = ts[:5] + ts[11:]
    absence = Rule("gone", "absence", "request_rate", "SEV2", consecutive=5)
    traffic = {"request_rate": np.ones(len(gappy))}
    hit = evaluate_rules([absence], service="s", timestamps=gappy, series=traffic)
    assert [h.index for h in hit] == [5]  # 5 minutes missing between points 4 and 5
    # a series without the metric says nothing of its absence (a CSV of CPU alone)
    assert evaluate_rules([absence], service="s", timestamps=gappy, series={}) == []
    # at a 5-minute step one missing point is not 5: the gap is counted in the series' step
    five = [T0 + dt.timedelta(minutes=5 * i) for i in range(20) if i != 8]
    step = dt.timedelta(minutes=5)
    kept = {"request_rate": np.ones(len(five))}
    assert evaluate_rules([absence], service="s", timestamps=five, series=kept, step=step) == []
    assert {r.name for r in load_rules()} >= {"error-rate-high", "db-pool-saturated"}


def test_rules_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "r.yaml"
    bad.write_text("rules:\n  - name: x\n    metric: m\n    kind: psychic\n")
    with pytest.raises(ConfigError, match="kind is 'psychic'"):
        load_rules(bad)
    bad.write_text("nope: 1\n")
    with pytest.raises(ConfigError, match="'rules:' list"):
        load_rules(bad)


def test_events_with_hysteresis() -> None:
    """An event opens at 0.5 and closes after 3 points under 0.3: the fires at 1-4 are one
    event (0.4 keeps it open), 8 another, 12-13 a third; none confirms on flat values."""
    s = [0, 0.6, 0.7, 0.4, 0.6, 0, 0, 0, 0.9, 0, 0, 0, 0.55, 0.6, 0.0, 0, 0]
    policy = EventPolicy(open_at=0.5, close_below=0.3, close_after=3, sustain=2)
    confirmer = confirm.Confirmer(["m"], confirm.Rule(policy=policy, learning=1, window=5))
    closed = [o for t, v in enumerate(s) for o in confirmer.update([1.0], v, t)]
    assert [(o.start, o.end) for o in closed if isinstance(o, confirm.Unconfirmed)] == [
        (1, 7),
        (8, 11),
        (12, 16),
    ]


def test_signature_reads_like_an_alert() -> None:
    a = Anomaly(
        id="x",
        service="payments-api",
        cloud="aws",
        region="us-east-1",
        start=T0,
        end=T0,
        score=0.9,
        normal=("cpu_utilization",),
        deviations=(
            MetricDeviation("db_connections_in_use", "up", 100, 30, 40),
            MetricDeviation("p99_latency", "up", 2400, 300, 30, "ms"),
            MetricDeviation("error_rate", "up", 12, 0.4, 20, "%"),
            MetricDeviation("request_rate", "down", 40, 100, -6, "rps"),
        ),
    )
    text = render_signature(a, {"db_connections_in_use": 100})
    assert text == (
        "payments-api (aws/us-east-1): db_connections_in_use at 100% of pool (100/100), "
        "p99_latency 8x baseline (2400 ms), error_rate 12% (baseline 0.4%), "
        "request_rate down 60% (40 rps), cpu_utilization normal"
    )


@pytest.mark.slow
def test_every_origin_scenario_is_detected_with_a_fitting_signature() -> None:
    telemetry = simulate(scenarios=list(SCENARIOS), hours=48, warmup_hours=24, seed=0)
    # the simulator's clean first day is the learning period, as `detect --scenario` gives it
    report = detect(telemetry, params=DetectionParams(probation=24 * 60))
    precision, recall = report.precision_recall()
    assert recall == 1.0 and precision is not None and precision >= 0.8
    expect = {
        "connection_pool_exhaustion": "db_connections_in_use",
        "memory_leak": "memory_utilization",
        "network_partition": "network_errors",
        "disk_io_contention": "disk_io_wait",
        "bad_deploy": "error_rate",
        "cpu_saturation": "cpu_utilization",
        "gpu_fault": "gpu_utilization",
    }
    for a in report.anomalies:
        kind = (report.matches[a.id] or "@").split("@")[0]
        if kind in expect and a.start <= next(i.end for i in telemetry.incidents if i.kind == kind):
            assert expect[kind] in report.signatures[a.id], (kind, report.signatures[a.id])
    assert all(a.severity in ("SEV1", "SEV2", "SEV3", "SEV4") for a in report.anomalies)


def test_a_long_format_csv_with_a_service_column_is_one_series_per_service(
    tmp_path: Path,
) -> None:
    """An export with a 'time' column and a 'service' column (several services in one file)
    was refused: "no 'timestamp' column", and then "service is 'api', not a number"."""
    csv = tmp_path / "export.csv"
    csv.write_text(
        "Time,service,cpu_utilization\n2026-01-01T00:00:00Z,api,40\n2026-01-01T00:00:00Z,db,70\n"
        "2026-01-01T00:01:00Z,db,71\n2026-01-01T00:02:00Z,api,42\n"
    )
    t = read_csv(csv)
    assert sorted(t.series) == ["api", "db"] and [ts.minute for ts in t.timestamps] == [0, 1, 2]
    assert list(t.series["api"]["cpu_utilization"]) == [40.0, 40.0, 42.0]  # gap carried
    assert list(t.series["db"]["cpu_utilization"]) == [70.0, 71.0, 71.0]
    odd = tmp_path / "odd.csv"
    odd.write_text("when,cpu\n2026-01-01T00:00:00Z,1\n")
    with pytest.raises(InputError, match=r"no time column .*timestamp, time, ts"):
        read_csv(odd)
    named = tmp_path / "named.csv"
    named.write_text("timestamp,host,cpu\n2026-01-01T00:00:00Z,db-1,1\n")
    with pytest.raises(InputError, match="host is 'db-1', not a number; a column naming"):
        read_csv(named)


def test_readers_repair_or_refuse_bad_input(tmp_path: Path) -> None:
    good = tmp_path / "m.csv"
    good.write_text(
        "timestamp,cpu_utilization,error_rate\n2026-01-01T00:02:00Z,3,1\n2026-01-01T00:00:00Z,1,1\n"
        "2026-01-01T00:00:00Z,3,1\n2026-01-01T00:03:00Z,,2\n"
    )
    t = read_csv(good, service="svc")
    assert [ts.minute for ts in t.timestamps] == [0, 2, 3]  # sorted
    assert list(t.series["svc"]["cpu_utilization"]) == [
        2.0,
        3.0,
        3.0,
    ]  # dupes averaged, gap carried
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,cpu\n2026-01-01T00:00:00Z,high\n")
    with pytest.raises(InputError, match="not a number"):
        read_csv(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_csv(empty)
    prom = tmp_path / "p.json"
    prom.write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {
                            "metric": {"__name__": "error_rate", "service": "api"},
                            "values": [[1767225600, "1.5"], [1767225660, "2"]],
                        }
                    ],
                },
            }
        )
    )
    pt = read_prometheus(prom)
    assert list(pt.series) == ["api"] and list(pt.series["api"]["error_rate"]) == [1.5, 2.0]
    prom.write_text(json.dumps({"status": "error"}))
    with pytest.raises(InputError, match="query_range"):
        read_prometheus(prom)


def test_detect_counts_a_gap_in_the_series_own_step(tmp_path: Path) -> None:
    # a 5-minute series missing one point (as NAB's rds_cpu_utilization_cc0c53 is at 07:10):
    # one point gone is not the 5 the no-traffic-data rule needs; five gone are
    rng = np.random.default_rng(0)
    for gone, expected in ((range(300, 301), []), (range(300, 305), [300])):
        times = [T0 + dt.timedelta(minutes=5 * i) for i in range(600) if i not in gone]
        rows = [f"{t:%Y-%m-%d %H:%M:%S},{100 + rng.normal():.3f}" for t in times]
        csv = tmp_path / f"gap{len(gone)}.csv"
        csv.write_text("timestamp,request_rate\n" + "\n".join(rows) + "\n")
        report = detect(read_csv(csv, service="svc"), params=DetectionParams())
        hits = [h for h in report.hits if h.rule.name == "no-traffic-data"]
        assert [h.index for h in hits] == expected


def test_a_signature_against_a_zero_or_negative_baseline_has_no_ratio() -> None:
    # NAB's ec2_disk_write_bytes_1ef3de read "value infx baseline (20765900)": its baseline is 0
    from seenbefore.detection.signature import describe

    up = MetricDeviation("disk_write_bytes", "up", 20765900.0, 0.0, 9.0, "B")
    assert describe(up) == "disk_write_bytes up from 0 to 20765900 B"
    down = MetricDeviation("temperature", "down", -12.0, -2.0, 5.0)
    assert describe(down) == "temperature down from -2 to -12"
    assert describe(MetricDeviation("rps", "up", 300.0, 100.0, 5.0)) == "rps 3x baseline (300)"


def test_a_signature_keeps_small_values_apart() -> None:
    # NAB's ec2_cpu_utilization_24ae8d idles at 0.066-0.134 %: its tick down read "value down
    # 51% (0.1)", the value rounded to its baseline's first decimal
    from seenbefore.detection.signature import describe

    assert describe(MetricDeviation("value", "down", 0.066, 0.134, 9.0)) == "value down 51% (0.066)"
    cpu = MetricDeviation("cpu_utilization", "up", 0.9, 0.134, 9.0)
    assert describe(cpu) == "cpu_utilization 0.9% (baseline 0.13%)"
    assert describe(MetricDeviation("latency", "up", 2.25, 1.0, 9.0, "s")) == (
        "latency 2x baseline (2.2 s)"
    )
