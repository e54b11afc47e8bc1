"""Detection end to end: score each service, build anomalies, apply rules, triage, and (for
simulated data) match against the injected ground truth.

Two detectors (``DetectionParams.detector``): ``"iforest"`` fits a
:class:`WindowIsolationForest` per service on the first ``train_minutes`` points (clean
history; those points are not scored) and scores the rest; ``"ensemble"`` runs the NAB-scored
streaming ensemble per metric on every point and takes the service score as the maximum over
its metrics (:mod:`seenbefore.detection.service_ensemble` states the rule and the score scale).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seenbefore.detection import service_ensemble as ens
from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.detection.ensemble import median_step
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import Array
from seenbefore.detection.rules import Rule, RuleHit, evaluate_rules, load_rules
from seenbefore.detection.signature import render_signature
from seenbefore.detection.telemetry import Incident, Telemetry
from seenbefore.detection.triage import Triage, TriageResult
from seenbefore.detection.units import UNITS
from seenbefore.detection.values import check_series
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
    detector: str = "ensemble"  # or "iforest"
    probation: int | None = (
        None  # ensemble learning period; None: service_ensemble.DEFAULT_LEARNING
    )
    # points before it are history learned from (detect --prometheus reads a day back): an
    # anomaly that ended before it goes to DetectionReport.history, not to the report
    report_from: dt.datetime | None = None


@dataclass
class DetectionReport:
    triage: TriageResult
    hits: list[RuleHit]
    scores: dict[str, Array]
    signatures: dict[str, str]
    truth: list[Incident]
    matches: dict[str, str | None]  # anomaly id -> incident kind it matches (None: false alarm)
    detector: dict[str, Any] = field(default_factory=dict)  # what ran (service_ensemble.describe)
    # anomalies that ended before DetectionParams.report_from: learned from, not reported
    history: list[Anomaly] = field(default_factory=list)

    @property
    def anomalies(self) -> list[Anomaly]:
        return self.triage.kept

    @property
    def merged(self) -> int:
        """Reports folded into another: fires of a service confirmed while one of its anomalies
        lasted (the rule joins them) and repeats triage merged (same fingerprint)."""
        return len(self.triage.duplicates) + int(self.detector.get("joined_fires", 0))

    def day_checked(self, anomaly: Anomaly) -> bool:
        """Whether the anomaly began after a day of its series had been seen, so the rule
        compared it with the same time a day earlier (``detector["day_check_from"]``)."""
        since = self.detector.get("day_check_from")
        return since is not None and anomaly.start >= dt.datetime.fromisoformat(since)

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
    if params.detector not in ("iforest", "ensemble"):
        raise InputError(f"detector is {params.detector!r}; use 'ensemble' or 'iforest'")
    ensemble = params.detector == "ensemble"
    needed = ens.MIN_POINTS if ensemble else params.train_minutes + 10
    if n < needed:
        raise InputError(
            f"{n} points of telemetry; the {params.detector} detector needs at least {needed}"
            + ("" if ensemble else f" ({params.train_minutes} of clean history plus 10 to score)")
            + ": give a longer series (more rows, a longer --since, or more --hours when "
            "simulating)"
        )
    check_series(telemetry.series)  # finite and within ±MAX_MAGNITUDE, or a clear refusal
    step = median_step(telemetry.timestamps)
    learning = ens.learning_period(params.probation) if ensemble else params.train_minutes
    anomalies: list[Anomaly] = []
    hits: list[RuleHit] = []
    scores: dict[str, Array] = {}
    unconfirmed: list[dict[str, Any]] = []
    joined = 0
    confirmed: dict[str, dt.datetime] = {}  # anomaly id -> when it was confirmed
    lasting: set[str] = set()  # ids of anomalies that last at the last point
    for service in sorted(telemetry.series):
        spec = telemetry.services[service]
        metrics, X = telemetry.matrix(service)
        if ensemble:  # point by point: the rule of detection/confirm.py, as `watch` runs it
            run = ens.run_service(
                service=service,
                cloud=spec.cloud,
                region=spec.region,
                timestamps=telemetry.timestamps,
                metrics=metrics,
                X=X,
                learning=learning,
                step_seconds=step,
            )
            scores[service] = run.scores
            anomalies += run.anomalies
            unconfirmed += run.unconfirmed
            joined += _reported(run.joined_at, telemetry.timestamps, params.report_from)
            confirmed |= {k: telemetry.timestamps[i] for k, i in run.confirmed_at.items()}
            lasting |= {run.lasting} if run.lasting else set()
        else:
            detector = WindowIsolationForest(
                window=params.window, n_estimators=params.n_estimators, random_state=params.seed
            ).fit(X[:learning])
            s = np.zeros(n)
            s[learning:] = detector.anomaly_score(X, start=learning)
            scores[service] = s
            # the one confirmation rule, events opening at the forest's own threshold
            run = ens.confirm_service(
                service=service,
                cloud=spec.cloud,
                region=spec.region,
                timestamps=telemetry.timestamps,
                metrics=metrics,
                X=X,
                scores=s,
                rule=ens.rule(learning, step, open_at=params.events.open_at),
            )
            anomalies += run.anomalies
            unconfirmed += run.unconfirmed
            joined += _reported(run.joined_at, telemetry.timestamps, params.report_from)
            confirmed |= {k: telemetry.timestamps[i] for k, i in run.confirmed_at.items()}
            lasting |= {run.lasting} if run.lasting else set()
        hits += [
            h
            for h in evaluate_rules(
                rules,
                service=service,
                timestamps=telemetry.timestamps,
                series=telemetry.series[service],
                capacity=capacity_of(telemetry, service),
                step=dt.timedelta(seconds=step) if step else dt.timedelta(minutes=1),
            )
            if h.index >= learning
        ]
    result = triage.process(anomalies, hits)
    metric_of = {r.name: r.metric for r in rules}
    result.kept = [_locate(a, telemetry, metric_of, params.window) for a in result.kept]
    history, result, unconfirmed = _split_history(
        params.report_from, result, unconfirmed, confirmed, lasting, telemetry.timestamps[-1]
    )
    shown = [*result.kept, *history]
    signatures = {a.id: render_signature(a, capacity_of(telemetry, a.service)) for a in shown}
    matches = {a.id: _match(a, telemetry.incidents) for a in result.kept}
    ran = _describe(params, telemetry.timestamps, learning)
    ran["unconfirmed_fires"] = len(unconfirmed)
    ran["unconfirmed"] = unconfirmed
    ran["joined_fires"] = joined
    # the same-time-yesterday check applies from the point a day of points has been seen: an
    # anomaly before it was not compared with a day earlier (a daily cycle's swing can pass)
    day = ens.confirmation_day(step)
    ran["day_check_from"] = telemetry.timestamps[day].isoformat() if day and day < n else None
    if params.report_from is not None:
        ran["history"] = _history_text(params.report_from, telemetry.timestamps, history)
    return DetectionReport(
        result, hits, scores, signatures, telemetry.incidents, matches, ran, history
    )


def _reported(
    points: Sequence[int], timestamps: Sequence[dt.datetime], report_from: dt.datetime | None
) -> int:
    """How many of ``points`` (indices) fall in the reported window (all without history)."""
    return sum(report_from is None or timestamps[i] >= report_from for i in points)


def _split_history(
    report_from: dt.datetime | None,
    result: TriageResult,
    unconfirmed: list[dict[str, Any]],
    confirmed: dict[str, dt.datetime],
    lasting: set[str],
    last: dt.datetime,
) -> tuple[list[Anomaly], TriageResult, list[dict[str, Any]]]:
    """The history learned from (``detect --prometheus URL``: what was read before
    ``report_from``), as ``watch``'s first poll splits it: an anomaly confirmed before
    ``report_from`` goes apart unless it still lasts at the last point (an incident older than
    the window that is still going is news); fires, duplicates and suppressions that began
    before it are left out of the report."""
    if report_from is None:
        return [], result, unconfirmed
    ongoing = set(lasting) | {into for dup, into in result.duplicates if dup.id in lasting}
    ongoing |= {a.id for a in result.kept if a.end >= last}  # a rule's hit to the end

    def old(a: Anomaly) -> bool:
        return confirmed.get(a.id, a.start) < report_from and a.id not in ongoing

    history = [a for a in result.kept if old(a)]
    result.kept = [a for a in result.kept if not old(a)]
    result.duplicates = [(a, into) for a, into in result.duplicates if a.start >= report_from]
    result.suppressed = [(a, why) for a, why in result.suppressed if a.start >= report_from]
    fires = [f for f in unconfirmed if dt.datetime.fromisoformat(f["start"]) >= report_from]
    return history, result, fires


def _history_text(
    report_from: dt.datetime, timestamps: Sequence[dt.datetime], history: Sequence[Anomaly]
) -> dict[str, Any]:
    """For ``detect --json``: the history read before the reported window."""
    before = sum(t < report_from for t in timestamps)
    return {
        "read_from": timestamps[0].isoformat() if timestamps else None,
        "report_from": report_from.isoformat(),
        "points": before,
        "anomalies": len(history),
    }


def _describe(params: DetectionParams, timestamps: Sequence[dt.datetime], learning: int) -> Any:
    if params.detector == "ensemble":
        return ens.describe(
            "ensemble",
            timestamps=timestamps,
            learning=learning,
            parameters=ens.ensemble_parameters(learning),
            note="scored (the likelihood reports 0.5 there); anomalies open only after it",
        )
    forest = {"window": params.window, "n_estimators": params.n_estimators, "seed": params.seed}
    return ens.describe(
        "iforest",
        timestamps=timestamps,
        learning=learning,
        parameters={**forest, "event_policy": dataclasses.asdict(params.events)},
        note="not scored: the Isolation Forest trains on it",
    )


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


def report_json(report: DetectionReport) -> dict[str, Any]:
    """The report as `seenbefore detect --json` writes it and ``POST /v1/detect`` answers."""
    precision, recall = report.precision_recall()
    return {
        "anomalies": [_anomaly_json(report, a) for a in report.anomalies],
        # ended before the reported window: learned from, not routed (detect --prometheus)
        "history": [_anomaly_json(report, a) for a in report.history],
        "duplicates": report.merged,
        "suppressed": [{"id": a.id, "reason": r} for a, r in report.triage.suppressed],
        "truth": [
            {
                "kind": i.kind,
                "service": i.service,
                "start": i.start.isoformat(),
                "end": i.end.isoformat(),
                "detected": f"{i.kind}@{i.service}" in set(report.matches.values()),
            }
            for i in report.truth
        ],
        "precision": precision,
        "recall": recall,
        "detector": report.detector,
    }


def _anomaly_json(report: DetectionReport, a: Anomaly) -> dict[str, Any]:
    return {
        "id": a.id,
        "service": a.service,
        "cloud": a.cloud,
        "region": a.region,
        "start": a.start.isoformat(),
        "end": a.end.isoformat(),
        "score": a.score,
        "severity": a.severity,
        "severity_reasons": report.triage.reasons.get(a.id, []),
        "rules": list(a.rules),
        "signature": report.signatures[a.id],
        "deviations": [
            {
                "metric": d.metric,
                "direction": d.direction,
                "value": round(d.value, 4),
                "baseline": round(d.baseline, 4),
                "zscore": d.zscore,
            }
            for d in a.deviations
        ],
        "normal": list(a.normal),
        "truth": report.matches.get(a.id),
        "compared_with_a_day_earlier": report.day_checked(a),
    }
