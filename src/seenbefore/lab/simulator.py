"""Simulated multi-cloud telemetry with injectable incidents (ground truth included): the demo's
and the experiments' data (``seenbefore detect`` and ``watch`` without ``--csv`` or
``--prometheus``, the benchmarks, the anomaly cases).

Each service emits the canonical metrics once a minute with daily seasonality, noise and slow
trends. Incident scenarios overlay realistic multi-metric signatures. Deterministic by seed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from seenbefore.detection.telemetry import Array, Incident, ServiceSpec, Telemetry
from seenbefore.errors import InputError
from seenbefore.lab.simbounds import simulated_minutes

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
STEP = dt.timedelta(minutes=1)

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


def anomaly_records(
    seeds: Sequence[int],
    *,
    hours: float = 48.0,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Simulate every scenario once per seed, detect, and keep each anomaly that matched an
    injected incident, as JSON-ready records ``{seed, kind, anomaly}``."""
    from seenbefore.detection.pipeline import DetectionParams, detect
    from seenbefore.types import anomaly_to_dict

    records: list[dict[str, Any]] = []
    for done, seed in enumerate(seeds, 1):
        telemetry = simulate(scenarios=list(SCENARIOS), hours=hours, seed=seed, warmup_hours=24.0)
        report = detect(telemetry, params=DetectionParams(train_minutes=24 * 60, probation=24 * 60))
        for anomaly in report.triage.kept:
            matched = report.matches.get(anomaly.id)
            if matched:
                records.append(
                    {
                        "seed": seed,
                        "kind": matched.split("@")[0],
                        "anomaly": anomaly_to_dict(anomaly),
                    }
                )
        if progress:
            progress(done, len(seeds))
    return records
