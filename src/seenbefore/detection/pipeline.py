"""Detection end to end: fit per service on clean history, score, build anomalies, apply rules,
triage, and (for simulated data) match against the injected ground truth."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.detection.events import EventPolicy, build_anomalies
from seenbefore.detection.features import Array
from seenbefore.detection.rules import Rule, RuleHit, evaluate_rules, load_rules
from seenbefore.detection.signature import render_signature
from seenbefore.detection.telemetry import UNITS, Incident, Telemetry
from seenbefore.detection.triage import Triage, TriageResult
from seenbefore.errors import InputError
from seenbefore.types import Anomaly, MetricDeviation

MATCH_BEFORE = dt.timedelta(minutes=5)
MATCH_AFTER = dt.timedelta(minutes=30)


@dataclass(frozen=True)
class DetectionParams:
    train_minutes: int = 24 * 60  # clean history the detector learns "normal" from
    window: int = 240
    n_estimators: int = 200
    seed: int = 0
    events: EventPolicy = field(default_factory=EventPolicy)


@dataclass
class DetectionReport:
    triage: TriageResult
    hits: list[RuleHit]
    scores: dict[str, Array]
    signatures: dict[str, str]
    truth: list[Incident]
    matches: dict[str, str | None]  # anomaly id -> incident kind it matches (None: false alarm)

    @property
    def anomalies(self) -> list[Anomaly]:
        return self.triage.kept

    def precision_recall(self) -> tuple[float | None, float | None]:
        """Event-level: share of kept anomalies that match an injected incident, and share of
        incidents matched by at least one kept anomaly."""
        if not self.truth:
            return None, None
        kept = self.triage.kept
        precision = (sum(self.matches[a.id] is not None for a in kept) / len(kept)) if kept else 0.0
        found = {m for m in self.matches.values() if m is not None}
        recall = sum(f"{i.kind}@{i.service}" in found for i in self.truth) / len(self.truth)
        return precision, recall


def capacity_of(telemetry: Telemetry, service: str) -> dict[str, float]:
    spec = telemetry.services.get(service)
    return {"db_connections_in_use": float(spec.pool_size)} if spec and spec.pool_size else {}


def detect(
    telemetry: Telemetry,
    *,
    params: DetectionParams | None = None,
    rules: Sequence[Rule] | None = None,
    triage: Triage | None = None,
) -> DetectionReport:
    params = params or DetectionParams()
    rules = load_rules() if rules is None else rules
    triage = triage or Triage(criticality={n: s.criticality for n, s in telemetry.services.items()})
    n = len(telemetry.timestamps)
    if n < params.train_minutes + 10:
        raise InputError(
            f"{n} points of telemetry; the detector needs {params.train_minutes} points of "
            "clean history plus at least 10 to score: give a longer series (more rows, a "
            "longer --since, or more --hours when simulating)"
        )
    anomalies: list[Anomaly] = []
    hits: list[RuleHit] = []
    scores: dict[str, Array] = {}
    for service in sorted(telemetry.series):
        spec = telemetry.services[service]
        metrics, X = telemetry.matrix(service)
        detector = WindowIsolationForest(
            window=params.window, n_estimators=params.n_estimators, random_state=params.seed
        ).fit(X[: params.train_minutes])
        s = np.zeros(n)
        s[params.train_minutes :] = detector.anomaly_score(X, start=params.train_minutes)
        scores[service] = s
        anomalies += build_anomalies(
            service=service,
            cloud=spec.cloud,
            region=spec.region,
            timestamps=telemetry.timestamps,
            metrics=metrics,
            X=X,
            scores=s,
            window=params.window,
            policy=params.events,
            level_median=detector.level_median_,
            level_scale=detector.level_scale_,
        )
        hits += [
            h
            for h in evaluate_rules(
                rules,
                service=service,
                timestamps=telemetry.timestamps,
                series=telemetry.series[service],
                capacity=capacity_of(telemetry, service),
            )
            if h.index >= params.train_minutes
        ]
    result = triage.process(anomalies, hits)
    metric_of = {r.name: r.metric for r in rules}
    result.kept = [_locate(a, telemetry, metric_of, params.window) for a in result.kept]
    signatures = {a.id: render_signature(a, capacity_of(telemetry, a.service)) for a in result.kept}
    matches = {a.id: _match(a, telemetry.incidents) for a in result.kept}
    return DetectionReport(result, hits, scores, signatures, telemetry.incidents, matches)


def _locate(
    anomaly: Anomaly, telemetry: Telemetry, metric_of: dict[str, str], window: int
) -> Anomaly:
    """Rule-only anomalies get their service's cloud/region and the values of the metrics their
    rules watch, against the median of the ``window`` points before."""
    if anomaly.cloud:
        return anomaly
    spec = telemetry.services[anomaly.service]
    index = telemetry.timestamps.index(anomaly.start)
    deviations = []
    series = telemetry.series[anomaly.service]
    watched = dict.fromkeys(metric_of[name] for name in anomaly.rules if name in metric_of)
    for hit_metric in watched:
        if hit_metric in series:
            values = series[hit_metric]
            baseline = float(
                np.median(values[max(0, index - window) : index] if index else values[:1])
            )
            value = float(values[index])
            deviations.append(
                MetricDeviation(
                    hit_metric,
                    "up" if value >= baseline else "down",
                    value,
                    baseline,
                    0.0,
                    UNITS.get(hit_metric, ""),
                )
            )
    return dataclasses.replace(
        anomaly, cloud=spec.cloud, region=spec.region, deviations=tuple(deviations)
    )


def _match(anomaly: Anomaly, incidents: Sequence[Incident]) -> str | None:
    for incident in incidents:
        if (
            incident.service == anomaly.service
            and incident.start - MATCH_BEFORE <= anomaly.start <= incident.end + MATCH_AFTER
        ):
            return f"{incident.kind}@{incident.service}"
    return None
