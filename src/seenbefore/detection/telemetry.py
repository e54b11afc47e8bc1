"""Simulated multi-cloud telemetry with injectable incidents (ground truth included).

Each service emits the canonical metrics once a minute with daily seasonality, noise and slow
trends. Incident scenarios overlay realistic multi-metric signatures. Deterministic by seed.
Also reads real series from CSV or a Prometheus ``query_range`` JSON response.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.detection.simbounds import simulated_minutes
from seenbefore.detection.values import MAX_MAGNITUDE, in_range
from seenbefore.errors import InputError
from seenbefore.parsing import load_json, read_text

METRICS: tuple[str, ...] = (
    "cpu_utilization",
    "memory_utilization",
    "disk_io_wait",
    "network_errors",
    "network_latency",
    "request_rate",
    "error_rate",
    "p99_latency",
    "db_connections_in_use",
    "queue_depth",
)
UNITS = {
    "cpu_utilization": "%",
    "memory_utilization": "%",
    "disk_io_wait": "%",
    "network_errors": "/s",
    "network_latency": "ms",
    "request_rate": "rps",
    "error_rate": "%",
    "p99_latency": "ms",
    "db_connections_in_use": "",
    "queue_depth": "",
    "gpu_utilization": "%",
    "gpu_temperature": "C",
}
STEP = dt.timedelta(minutes=1)
Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    cloud: str
    region: str
    criticality: str = "medium"  # high | medium | low
    base_rps: float = 200.0
    pool_size: int = 100
    extra_metrics: tuple[str, ...] = ()


SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("payments-api", "aws", "us-east-1", "high", 320.0, 100),
    ServiceSpec("checkout-api", "aws", "us-east-1", "high", 450.0, 120),
    ServiceSpec("search-service", "gcp", "us-central1", "medium", 600.0, 60),
    ServiceSpec("notifications-worker", "azure", "westeurope", "low", 120.0, 40),
    ServiceSpec("ledger-service", "azure", "eastus", "high", 90.0, 80),
    ServiceSpec(
        "ml-inference",
        "gcp",
        "us-central1",
        "medium",
        60.0,
        20,
        ("gpu_utilization", "gpu_temperature"),
    ),
)


@dataclass(frozen=True)
class Incident:
    """Ground truth: what was injected, where and when (``end`` exclusive)."""

    kind: str
    service: str
    start: dt.datetime
    end: dt.datetime


@dataclass
class Telemetry:
    """Per-service metric series on a shared, regular time axis."""

    timestamps: list[dt.datetime]
    series: dict[str, dict[str, Array]]  # service -> metric -> values
    services: dict[str, ServiceSpec] = field(default_factory=dict)
    incidents: list[Incident] = field(default_factory=list)

    def matrix(self, service: str) -> tuple[list[str], Array]:
        metrics = sorted(self.series[service])
        return metrics, np.column_stack([self.series[service][m] for m in metrics])


def _baseline(
    spec: ServiceSpec, minutes: int, start: dt.datetime, rng: np.random.Generator
) -> dict[str, Array]:
    t = np.arange(minutes, dtype=np.float64)
    hour = ((start.hour * 60 + start.minute + t) / 60.0) % 24
    daily = 0.6 + 0.4 * np.sin((hour - 9) / 24 * 2 * np.pi)  # peak mid-afternoon
    rps = spec.base_rps * daily * (1 + 0.0002 * t / 60) * rng.normal(1, 0.04, minutes)
    load = rps / spec.base_rps

    def noise(scale: float) -> Array:
        return rng.normal(0, scale, minutes)

    s = {
        "request_rate": rps,
        "cpu_utilization": np.clip(22 + 30 * load + noise(2.5), 1, 100),
        "memory_utilization": np.clip(48 + 4 * load + noise(0.8), 1, 100),
        "disk_io_wait": np.clip(1.5 + 1.0 * load + np.abs(noise(0.6)), 0, 100),
        "network_errors": np.abs(noise(0.3)) + 0.2,
        "network_latency": np.clip(2.0 + 0.6 * load + np.abs(noise(0.3)), 0.1, None),
        "error_rate": np.clip(0.3 + 0.1 * load + np.abs(noise(0.08)), 0, 100),
        "p99_latency": np.clip(180 + 60 * load + noise(12), 20, None),
        "db_connections_in_use": np.clip(
            spec.pool_size * (0.18 + 0.14 * load) + noise(2), 0, spec.pool_size
        ),
        "queue_depth": np.clip(20 + 15 * load + noise(4), 0, None),
    }
    if "gpu_utilization" in spec.extra_metrics:
        s["gpu_utilization"] = np.clip(55 + 25 * load + noise(3), 0, 100)
        s["gpu_temperature"] = np.clip(62 + 8 * load + noise(1), 20, 110)
    return s


def _ramp(n: int, start: int, end: int, rise: int = 5) -> Array:
    """0 outside [start, end); rises to 1 over ``rise`` points."""
    out = np.zeros(n)
    idx = np.arange(start, min(end, n))
    out[idx] = np.minimum(1.0, (idx - start + 1) / max(1, rise))
    return out


Scenario = Callable[[dict[str, Array], ServiceSpec, int, int, np.random.Generator], None]


def _cpu_saturation(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    w = _ramp(len(s["cpu_utilization"]), a, b, 8)
    s["cpu_utilization"] = np.clip(
        s["cpu_utilization"] * (1 - w) + w * r.normal(97, 1.5, len(w)), 0, 100
    )
    s["p99_latency"] *= 1 + 3.5 * w
    s["error_rate"] += 2.5 * w
    s["queue_depth"] *= 1 + 2 * w


def _memory_leak(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    n = len(s["memory_utilization"])
    climb = np.zeros(n)
    idx = np.arange(a, min(b, n))
    climb[idx] = (idx - a + 1) / max(1, b - a)
    s["memory_utilization"] = np.clip(s["memory_utilization"] + 48 * climb, 0, 99.5)
    late = np.clip((climb - 0.6) / 0.4, 0, 1)
    s["p99_latency"] *= 1 + 2.0 * late  # GC pressure near the end
    s["cpu_utilization"] = np.clip(s["cpu_utilization"] + 12 * late, 0, 100)
    s["error_rate"] += 4 * (late > 0.9)  # OOM kills at the top


def _network_partition(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    w = _ramp(len(s["network_errors"]), a, b, 2)
    s["network_errors"] += 80 * w * r.uniform(0.7, 1.3, len(w))
    s["network_latency"] *= 1 + 40 * w
    s["error_rate"] += 18 * w
    s["request_rate"] *= 1 - 0.55 * w


def _disk_io(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    w = _ramp(len(s["disk_io_wait"]), a, b, 6)
    s["disk_io_wait"] = np.clip(s["disk_io_wait"] + 38 * w * r.uniform(0.8, 1.2, len(w)), 0, 100)
    s["p99_latency"] *= 1 + 4 * w
    s["queue_depth"] *= 1 + 3 * w


def _bad_deploy(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    w = _ramp(len(s["error_rate"]), a, b, 1)
    s["error_rate"] += 14 * w * r.uniform(0.8, 1.2, len(w))
    s["p99_latency"] *= 1 + 0.8 * w


def _pool_exhaustion(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    w = _ramp(len(s["db_connections_in_use"]), a, b, 4)
    s["db_connections_in_use"] = s["db_connections_in_use"] * (1 - w) + w * spec.pool_size
    s["p99_latency"] *= 1 + 7 * w
    s["error_rate"] += 11 * w
    s["queue_depth"] *= 1 + 4 * w


def _gpu_fault(
    s: dict[str, Array], spec: ServiceSpec, a: int, b: int, r: np.random.Generator
) -> None:
    """Absent from the sample knowledge base on purpose: the novel case."""
    if "gpu_utilization" not in s:
        raise InputError(f"scenario gpu_fault needs a service with GPU metrics, not {spec.name}")
    w = _ramp(len(s["gpu_utilization"]), a, b, 2)
    s["gpu_utilization"] = s["gpu_utilization"] * (1 - w)
    s["gpu_temperature"] = s["gpu_temperature"] * (1 - w) + w * 96
    s["p99_latency"] *= 1 + 5 * w
    s["queue_depth"] *= 1 + 6 * w


SCENARIOS: dict[str, tuple[Scenario, str, int]] = {  # kind -> (overlay, default service, minutes)
    "cpu_saturation": (_cpu_saturation, "search-service", 45),
    "memory_leak": (_memory_leak, "notifications-worker", 240),
    "network_partition": (_network_partition, "ledger-service", 30),
    "disk_io_contention": (_disk_io, "search-service", 50),
    "bad_deploy": (_bad_deploy, "checkout-api", 35),
    "connection_pool_exhaustion": (_pool_exhaustion, "payments-api", 40),
    "gpu_fault": (_gpu_fault, "ml-inference", 30),
}


def simulate(
    *,
    scenarios: Sequence[str] = (),
    hours: float = 24.0,
    seed: int = 0,
    start: dt.datetime | None = None,
    warmup_hours: float = 6.0,
    services: Sequence[ServiceSpec] = SERVICES,
) -> Telemetry:
    """``hours`` of telemetry; scenarios are spread evenly after ``warmup_hours`` of clean data."""
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        raise InputError(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    minutes, warm = simulated_minutes(hours, warmup_hours, seed, len(scenarios))
    rng = np.random.default_rng(seed)
    start = start or dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    specs = {s.name: s for s in services}
    series = {name: _baseline(spec, minutes, start, rng) for name, spec in specs.items()}
    timestamps = [start + i * STEP for i in range(minutes)]
    incidents = []
    slots = max(1, len(scenarios))
    span = (minutes - warm) // slots
    for i, kind in enumerate(scenarios):
        overlay, service, length = SCENARIOS[kind]
        if service not in specs:
            raise InputError(f"scenario {kind} needs service {service}, which is not simulated")
        a = warm + i * span + int(rng.integers(0, max(1, span - length)))
        b = min(minutes, a + length)
        overlay(series[service], specs[service], a, b, rng)
        incidents.append(Incident(kind, service, timestamps[a], start + b * STEP))
    return Telemetry(timestamps, series, specs, incidents)


# -- reading real series ------------------------------------------------------------------------
def _parse_time(text: object, where: str) -> dt.datetime:
    raw = str(text or "").strip()
    try:
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        try:
            value = dt.datetime.fromtimestamp(float(raw), tz=dt.UTC)
        except (ValueError, OverflowError, OSError):
            raise InputError(
                f"{where}: timestamp {raw[:40]!r} is neither ISO 8601 nor epoch seconds; "
                "write e.g. 2024-03-14T09:30:00Z or 1710408600"
            ) from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _finish(points: dict[str, dict[dt.datetime, float]], service: str, source: str) -> Telemetry:
    """Align metrics on the union of timestamps (sorted, duplicates averaged); gaps are filled by
    carrying the last value forward (documented repair)."""
    if not points or not any(points.values()):
        raise InputError(f"{source}: no data points")
    times = sorted({t for per in points.values() for t in per})
    series: dict[str, Array] = {}
    for metric, per in points.items():
        values, last = [], float("nan")
        for t in times:
            last = per.get(t, last)
            values.append(last)
        arr = np.asarray(values, dtype=np.float64)
        first = np.flatnonzero(~np.isnan(arr))
        if len(first):
            arr[: first[0]] = arr[first[0]]
        series[metric] = arr
    return Telemetry(
        times, {service: series}, {service: ServiceSpec(service, "unknown", "unknown")}
    )


def read_csv(path: Path, *, service: str | None = None) -> Telemetry:
    """CSV with a ``timestamp`` column and one column per metric (or ``metric,value`` rows)."""
    text = read_text(path, what="telemetry CSV")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV file ({exc}); save it as plain CSV") from None
    if not rows:
        raise InputError(
            f"{path}: empty file; expected a header with 'timestamp' and metric columns"
        )
    if "timestamp" not in rows[0]:
        shown = [str(c)[:40] for c in list(rows[0])[:10]]
        raise InputError(f"{path}: no 'timestamp' column; columns are {shown}; add one")
    points: dict[str, dict[dt.datetime, list[float]]] = {}
    for number, row in enumerate(rows, start=2):
        if None in row:
            raise InputError(
                f"{path}:{number}: more fields than the header has columns; "
                "give every row the same columns as the header"
            )
        t = _parse_time(row["timestamp"], f"{path}:{number}")
        pairs = (
            [(row["metric"], row["value"])]
            if "metric" in row and "value" in row
            else [(k, v) for k, v in row.items() if k != "timestamp"]
        )
        for metric, raw in pairs:
            if raw in (None, ""):
                continue
            try:
                value = float(raw)
            except ValueError:
                raise InputError(
                    f"{path}:{number}: {str(metric)[:40]} is {raw[:40]!r}, not a number"
                ) from None
            if not in_range(value):
                raise InputError(
                    f"{path}:{number}: {str(metric)[:40]} is {raw[:40]!r}; the detector takes "
                    f"finite values within ±{MAX_MAGNITUDE:g}: rescale the unit or drop the row"
                )
            points.setdefault(str(metric), {}).setdefault(t, []).append(value)
    averaged = {m: {t: float(np.mean(v)) for t, v in per.items()} for m, per in points.items()}
    return _finish(averaged, service or path.stem, str(path))


def parse_series(
    timestamps: Sequence[dt.datetime],
    metrics: Mapping[str, Sequence[float | None]],
    *,
    service: str,
    source: str,
) -> Telemetry:
    """Telemetry from one service's series given as values (``POST /v1/detect``): a value per
    timestamp for each metric, None (or NaN) where a sample is missing (carried forward, as
    :func:`_finish` repairs gaps); a repeated timestamp keeps its last value. ``source`` names
    the input in errors."""
    if not metrics:
        raise InputError(f"{source}: no metrics; give at least one, e.g. {{'latency_ms': [...]}}")
    points: dict[str, dict[dt.datetime, float]] = {}
    for metric, values in metrics.items():
        if len(values) != len(timestamps):
            raise InputError(
                f"{source}: metric {metric[:40]!r} has {len(values)} values for"
                f" {len(timestamps)} timestamps; give one value per timestamp (null where missing)"
            )
        per = points.setdefault(metric, {})
        for when, value in zip(timestamps, values, strict=True):
            if value is not None and math.isfinite(value):
                stamp = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
                per[stamp] = float(value)
    return _finish(points, service, source)


def read_prometheus(path: Path, *, service: str | None = None) -> Telemetry:
    """A Prometheus ``/api/v1/query_range`` response (resultType matrix); the metric name is the
    series' ``__name__`` label (or ``metric``)."""
    data = load_json(path, what="Prometheus query_range JSON")
    return parse_query_range(data, str(path), service=service, default_service=path.stem)


def parse_query_range(
    data: Any, source: str, *, service: str | None = None, default_service: str = "prometheus"
) -> Telemetry:
    """Telemetry from a decoded ``query_range`` response (a saved file or a live server's);
    ``source`` names it in errors. The service is the given one, else the series' ``service``
    or ``job`` label, else ``default_service``."""
    path = source
    given = service
    service = None
    body = data.get("data") if isinstance(data, dict) else None
    result = body.get("result") if isinstance(body, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("status") != "success"
        or not isinstance(body, dict)
        or body.get("resultType") != "matrix"
        or not isinstance(result, list)
    ):
        raise InputError(
            f"{path}: expected a query_range response with status success and resultType "
            "matrix (the JSON of GET /api/v1/query_range)"
        )
    points: dict[str, dict[dt.datetime, float]] = {}
    for number, item in enumerate(result):
        where = f"{path}: data.result[{number}]"
        labels = item.get("metric", {}) if isinstance(item, dict) else None
        values = item.get("values", []) if isinstance(item, dict) else None
        if not isinstance(labels, dict) or not isinstance(values, list):
            raise InputError(f"{where}: expected {{'metric': {{labels}}, 'values': [[t, v], ...]}}")
        name = str(labels.get("__name__") or labels.get("metric") or "value")
        found = labels.get("service") or labels.get("job")
        service = given or service or (str(found) if found else None)
        for pair in values:
            try:
                ts, raw = pair
                when = dt.datetime.fromtimestamp(float(ts), tz=dt.UTC)
                points.setdefault(name, {})[when] = float(raw)
            except (TypeError, ValueError, OverflowError, OSError):
                raise InputError(
                    f"{where}: {name[:40]} has a sample {str(pair)[:60]} that is not "
                    '[epoch seconds, "number"]'
                ) from None
    return _finish(points, service or default_service, source)
