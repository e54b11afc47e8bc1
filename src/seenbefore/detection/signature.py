"""Render an anomaly as the short text an on-call engineer would write, used as the query.

payments-api (aws/us-east-1): db_connections_in_use at 100% of pool (100/100),
p99_latency 8x baseline (2400 ms), error_rate 12% (baseline 0.4%), cpu_utilization normal
"""

from __future__ import annotations

from collections.abc import Mapping

from seenbefore.detection.units import UNITS
from seenbefore.types import Anomaly, MetricDeviation

PERCENT_METRICS = frozenset(metric for metric, unit in UNITS.items() if unit == "%")
KEY_METRICS = ("cpu_utilization", "memory_utilization", "error_rate", "p99_latency")


def _num(value: float) -> str:
    """Whole numbers from 10, one decimal from 1, two significant digits below: a CPU idling
    at 0.066 % read "0.1", and its baseline of 0.134 the same."""
    if abs(value) >= 10:
        return f"{value:.0f}"
    if abs(value) >= 1 or value == 0:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{value:.2g}"


def describe(d: MetricDeviation, capacity: Mapping[str, float] | None = None) -> str:
    cap = (capacity or {}).get(d.metric)
    if cap and d.direction == "up":
        return f"{d.metric} at {100 * d.value / cap:.0f}% of pool ({_num(d.value)}/{_num(cap)})"
    if d.metric in PERCENT_METRICS:
        return f"{d.metric} {_num(d.value)}% (baseline {_num(d.baseline)}%)"
    unit = d.unit and " " + d.unit
    if d.baseline <= 0:  # no ratio to a zero or negative baseline ("infx baseline")
        return f"{d.metric} {d.direction} from {_num(d.baseline)} to {_num(d.value)}{unit}"
    if d.direction == "down":
        drop = 100 * (1 - d.value / d.baseline)
        return f"{d.metric} down {drop:.0f}% ({_num(d.value)}{unit})"
    ratio = d.ratio
    head = f"{ratio:.0f}x baseline" if ratio >= 2 else f"up {100 * (ratio - 1):.0f}%"
    return f"{d.metric} {head} ({_num(d.value)}{unit})"


def render_signature(anomaly: Anomaly, capacity: Mapping[str, float] | None = None) -> str:
    """``service (cloud/region): deviations..., key metrics that stayed normal`` (the place only
    as far as it is known)."""
    ordered = sorted(anomaly.deviations, key=lambda d: -abs(d.zscore))
    parts = [describe(d, capacity) for d in ordered[:6]]
    parts += [f"{m} normal" for m in anomaly.normal]
    # a place nobody gave ("", or "unknown" for a CSV) is left out, not shown as unknown/unknown
    known = [v for v in (anomaly.cloud, anomaly.region) if v and v != "unknown"]
    where = f"{anomaly.service} ({'/'.join(known)})" if known else anomaly.service
    return f"{where}: {', '.join(parts) or 'anomalous behaviour'}"
