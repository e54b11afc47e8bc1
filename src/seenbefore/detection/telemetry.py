"""Telemetry series: the data types every detector reads (:class:`Telemetry`: per-service metric
series on a shared time axis, with :class:`ServiceSpec` and, for simulated runs, the injected
:class:`Incident` ground truth) and the readers of real series: CSV, a Prometheus
``query_range`` response (saved or live), and the values ``POST /v1/detect`` is given.

The telemetry simulator is an experiment and demo tool: :mod:`seenbefore.lab.simulator`.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.detection.values import MAX_MAGNITUDE, in_range
from seenbefore.errors import InputError
from seenbefore.parsing import load_json, read_text

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
    """One service's metrics as Telemetry (:func:`_finish_services`)."""
    return _finish_services({service: points}, source)


def _finish_services(
    by_service: Mapping[str, dict[str, dict[dt.datetime, float]]], source: str
) -> Telemetry:
    """Align every service's metrics on the union of timestamps (sorted, duplicates averaged);
    gaps are filled by carrying the last value forward (documented repair), and a metric's
    first value stands for the points before it."""
    if not any(per for points in by_service.values() for per in points.values()):
        raise InputError(f"{source}: no data points")
    times = sorted({t for points in by_service.values() for per in points.values() for t in per})
    series: dict[str, dict[str, Array]] = {}
    for service, points in by_service.items():
        for metric, per in points.items():
            if not per:
                continue
            values, last = [], float("nan")
            for t in times:
                last = per.get(t, last)
                values.append(last)
            arr = np.asarray(values, dtype=np.float64)
            first = np.flatnonzero(~np.isnan(arr))
            if len(first):
                arr[: first[0]] = arr[first[0]]
            series.setdefault(service, {})[metric] = arr
    specs = {service: ServiceSpec(service, "unknown", "unknown") for service in series}
    return Telemetry(times, series, specs)


# what a CSV's time column may be called (case aside), the first found is used; and the column
# that, when present, names each row's service
TIME_COLUMNS = ("timestamp", "time", "ts", "datetime", "date", "@timestamp")
SERVICE_COLUMN = "service"


def read_csv(path: Path, *, service: str | None = None) -> Telemetry:
    """CSV with a time column (:data:`TIME_COLUMNS`: ``timestamp``, ``time``, ...) and one
    column per metric, or ``metric,value`` rows; a ``service`` column splits the rows into
    services (long format: several services in one file). Without one, the service is
    ``service`` or the file's name."""
    text = read_text(path, what="telemetry CSV")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV file ({exc}); save it as plain CSV") from None
    if not rows:
        if text.strip():  # a header and nothing under it
            raise InputError(
                f"{path}: a header and no rows of data; give at least one row under it "
                "(a timestamp and a value per metric column)"
            )
        raise InputError(
            f"{path}: empty file; expected a header with 'timestamp' and metric columns"
        )
    named = {str(c).strip().lower(): c for c in rows[0] if c is not None}
    when = next((named[n] for n in TIME_COLUMNS if n in named), None)
    if when is None:
        shown = [str(c)[:40] for c in list(rows[0])[:10]]
        raise InputError(
            f"{path}: no time column (one named {', '.join(TIME_COLUMNS)}); columns are "
            f"{shown}; add one or rename yours"
        )
    by = named.get(SERVICE_COLUMN)
    fallback = service or path.stem
    points: dict[str, dict[str, dict[dt.datetime, list[float]]]] = {}
    for number, row in enumerate(rows, start=2):
        if None in row:
            raise InputError(
                f"{path}:{number}: more fields than the header has columns; "
                "give every row the same columns as the header"
            )
        t = _parse_time(row[when], f"{path}:{number}")
        owner = (str(row[by] or "").strip() if by is not None else "") or fallback
        pairs = (
            [(row["metric"], row["value"])]
            if "metric" in row and "value" in row
            else [(k, v) for k, v in row.items() if k not in (when, by)]
        )
        for metric, raw in pairs:
            if raw in (None, ""):
                continue
            try:
                value = float(raw)
            except ValueError:
                raise InputError(
                    f"{path}:{number}: {str(metric)[:40]} is {raw[:40]!r}, not a number"
                    + (
                        "; a column naming each row's service must be called 'service'"
                        if by is None
                        else ""
                    )
                ) from None
            if not in_range(value):
                raise InputError(
                    f"{path}:{number}: {str(metric)[:40]} is {raw[:40]!r}; the detector takes "
                    f"finite values within ±{MAX_MAGNITUDE:g}: rescale the unit or drop the row"
                )
            per = points.setdefault(owner, {}).setdefault(str(metric), {})
            per.setdefault(t, []).append(value)
    averaged = {
        owner: {m: {t: float(np.mean(v)) for t, v in per.items()} for m, per in metrics.items()}
        for owner, metrics in points.items()
    }
    return _finish_services(averaged or {fallback: {}}, str(path))


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
