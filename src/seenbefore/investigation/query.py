"""Build the retrieval query from an Anomaly, an Alertmanager webhook (payload version 4) or text."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from seenbefore.detection.signature import render_signature
from seenbefore.errors import InputError
from seenbefore.types import Anomaly

# the labels whose values an alert's query holds (values only: the keys, and a severity, say
# nothing of what failed)
LABELS_IN_QUERY = ("alertname", "service", "job", "namespace", "container")

# How postmortems describe each metric moving, in symptoms (never causes): the anomaly's query
# is written in the knowledge base's vocabulary, not in metric identifiers and numbers.
METRIC_WORDS: dict[tuple[str, str], str] = {
    ("cpu_utilization", "up"): "CPU utilization high, CPU pegged, cores saturated",
    ("memory_utilization", "up"): "memory usage climbing, heap and RSS growing, OOM",
    ("disk_io_wait", "up"): "disk I/O wait high, slow disk, IOPS throughput latency on the volume",
    ("network_errors", "up"): "network errors, connection timeouts, packet loss, unreachable",
    ("network_latency", "up"): "network latency up between zones, round-trip time",
    ("request_rate", "down"): "traffic dropped, request rate down",
    ("request_rate", "up"): "traffic surge, request rate up",
    ("error_rate", "up"): "error rate up, 5xx errors, failed requests",
    ("p99_latency", "up"): "p99 latency up, slow responses, timeouts",
    ("db_connections_in_use", "up"): "database connections in use at the pool limit, waiting for "
    "a connection",
    ("queue_depth", "up"): "queue depth growing, backlog",
    ("gpu_utilization", "down"): "GPU utilization dropped",
    ("gpu_temperature", "up"): "GPU temperature high",
}


@dataclass(frozen=True)
class InvestigationRequest:
    query: str  # what retrieval searches with
    source: str  # anomaly | alertmanager | text
    services: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()  # metric names / anomaly kinds observed
    started_at: dt.datetime | None = None
    fingerprint: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    display: str = ""  # what a person reads (the anomaly's signature); the query when empty
    # how far each observed signal moved (|z|): the structured half of an anomaly's query
    signal_strengths: Mapping[str, float] = field(default_factory=dict)


def from_text(text: str) -> InvestigationRequest:
    if not text.strip():
        raise InputError("investigation text is empty; describe the symptoms or paste the alert")
    return InvestigationRequest(query=" ".join(text.split()), source="text")


# Column names that say nothing of what is measured: a one-column series (NAB's CSVs, a
# ``timestamp,value`` export) is named for its metric, so its series name says it instead.
GENERIC_METRICS = frozenset({"value", "values", "y", "metric", "series"})


def anomaly_query(anomaly: Anomaly) -> str:
    """The anomaly in postmortem vocabulary, strongest deviation first, without the numbers."""
    ordered = sorted(anomaly.deviations, key=lambda d: -abs(d.zscore))
    words = [metric_words(d.metric, d.direction, anomaly.service) for d in ordered]
    return f"{anomaly.service}: " + "; ".join(dict.fromkeys(words or ["anomalous behaviour"]))


KNOWN_METRICS = tuple(dict.fromkeys(metric for metric, _ in METRIC_WORDS))


def measured(metric: str, service: str = "") -> str:
    """What ``metric`` measures, as a metric name: a named metric as it is (postmortems may
    record it by that very name); a generic column (``value``) read by its series' name, as the
    known metric that name holds (``rds_cpu_utilization_cc0c53``: ``cpu_utilization``, the
    signal postmortems record) or else as the name itself."""
    if metric.lower() not in GENERIC_METRICS or not service:
        return metric
    key = service.lower().replace("-", "_").replace(" ", "_")
    for known in KNOWN_METRICS:
        if re.search(rf"(?:^|_){re.escape(known)}(?:_|$)", key):
            return known
    return service


def metric_words(metric: str, direction: str, service: str = "") -> str:
    """How postmortems say ``metric`` moved ``direction``: the words of a known metric
    (:func:`measured`), else the name in words."""
    name = measured(metric, service)
    return METRIC_WORDS.get((name, direction), f"{name.replace('_', ' ')} {direction}")


def from_anomaly(
    anomaly: Anomaly, capacity: Mapping[str, float] | None = None
) -> InvestigationRequest:
    return InvestigationRequest(
        query=anomaly_query(anomaly),
        display=render_signature(anomaly, capacity),
        source="anomaly",
        services=(anomaly.service,),
        signals=tuple(
            dict.fromkeys(measured(d.metric, anomaly.service) for d in anomaly.deviations)
        ),
        signal_strengths=_strengths(anomaly),
        started_at=anomaly.start,
        fingerprint=anomaly.fingerprint,
        labels={  # where it happened, for people reading the queue (not searched)
            k: v for k, v in (("cloud", anomaly.cloud), ("region", anomaly.region)) if v
        },
    )


def _strengths(anomaly: Anomaly) -> dict[str, float]:
    """|z| per metric; a metric a rule flagged without a measured z counts as present (1)."""
    strengths: dict[str, float] = {}
    for d in anomaly.deviations:
        z = abs(float(d.zscore))
        metric = measured(d.metric, anomaly.service)
        strengths[metric] = max(strengths.get(metric, 0.0), z if z > 0 else 1.0)
    return strengths


def from_alertmanager(payload: Any) -> list[InvestigationRequest]:
    """One request per firing alert; resolved alerts are skipped (they close investigations)."""
    if not isinstance(payload, dict) or "alerts" not in payload:
        raise InputError("not an Alertmanager webhook: expected a JSON object with 'alerts'")
    if str(payload.get("version", "")) != "4":
        raise InputError(
            f"Alertmanager webhook version is {payload.get('version')!r}; "
            "seenbefore reads version 4"
        )
    requests = []
    for index, alert in enumerate(payload["alerts"]):
        if not isinstance(alert, dict):
            raise InputError(f"alerts[{index}] is not an object")
        if alert.get("status") != "firing":
            continue
        labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
        notes = alert.get("annotations") or {}
        parts = [str(notes.get(k, "")).strip() for k in ("summary", "description")]
        parts += [alert_words(labels[k]) for k in LABELS_IN_QUERY if k in labels]
        query = ". ".join(p for p in parts if p)
        if not query:
            raise InputError(
                f"alerts[{index}] has no summary, description or labels to search with"
            )
        service = labels.get("service") or labels.get("job")
        started = _time(alert.get("startsAt"), index)
        requests.append(
            InvestigationRequest(
                query=query,
                source="alertmanager",
                services=(service,) if service else (),
                signals=(labels["alertname"],) if "alertname" in labels else (),
                started_at=started,
                fingerprint=str(alert.get("fingerprint") or "") or None,
                labels=labels,
            )
        )
    return requests


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+[a-z]*")


def alert_words(name: str) -> str:
    """An alert or label name as it is written and in words, where it runs words together:
    ``NodeFilesystemAlmostOutOfSpace (Node Filesystem Almost Out Of Space)``. Postmortems quote
    the name (the keyword index keeps it as one token) and describe it in words."""
    words = _CAMEL.findall(name)
    if len(words) < 2 or " " in name or not any(c.isupper() for c in name[1:]):
        return name
    return f"{name} ({' '.join(words)})"


def _time(value: Any, index: int) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"alerts[{index}].startsAt is {value!r}, not an RFC 3339 time") from None


def named_in(signal: str, text: str) -> bool:
    """Whether ``text`` names ``signal`` in words: ``db_connections_in_use`` in "db connections
    in use at 100%" (its parts in order, as whole words)."""
    parts = [w for w in re.split(r"[^a-z0-9]+", signal.lower()) if w]
    words = re.findall(r"[a-z0-9]+", text.lower())
    n = len(parts)
    return n > 0 and any(words[i : i + n] == parts for i in range(len(words) - n + 1))
