"""The NAB-scored streaming ensemble as the detector of a service with several metrics, run one
point at a time (the batch ``detect`` is a loop over what ``watch`` runs live).

Per metric, :class:`~seenbefore.detection.online.OnlineEnsemble` with its shipped configuration
as events use it (``EVENT_PARAMS``: the range seen so far, sequence novelty through its anomaly
likelihood, and ARTime; no rest after a fire, see ``EVENT_PARAMS``) scores every point, from the
first. The range member reports 1.0 for a break, the likelihood NAB's log scale (0.5 = a tail of
1e-5), ARTime its confidence in a new cluster; all on [0, 1], combined by max.

**Learning period** (:func:`learning_period`): ``DEFAULT_LEARNING`` points unless given, the same
for every length of series (a longer window never moves it, so never swallows a change a shorter
one reported): scored, but no anomaly or rule hit opens in it.

**Service score = the maximum of its metrics' scores at each point**: an anomaly on any one
metric is one on the service; no correction for the number of metrics is made in the score.
What keeps ten metrics' noise from paging is the confirmation below.

**Events and confirmation**: :mod:`~seenbefore.detection.confirm` (one rule for ``detect``,
``POST /v1/detect`` and ``watch``): events open at ``DEFAULT_THRESHOLD`` (the NAB threshold of
the shipped configuration on the 51 dev files) after the learning period; one becomes an
anomaly when a metric is |robust z| >= 4 from the window before the fire on 2 points and, once a
day of points has been seen, also from the same time one day earlier. On the simulator's six
services of ten metrics each, without these two conditions single-point noise on one metric of
ten (a new extreme, a blip of network errors) and the daily ramp made 8-13 false alarms per 48 h
run (``benchmarks/detection.py`` prints the detectors, several seeds). Fires left unconfirmed
are reported with the reason (``detect`` prints them; ``detect --json``: ``unconfirmed``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seenbefore.detection import ensemble
from seenbefore.detection.confirm import (
    Confirmed,
    Confirmer,
    Described,
    Ended,
    Outcome,
    Rule,
    Unconfirmed,
)
from seenbefore.detection.ensemble import DEFAULT_THRESHOLD, EVENT_PARAMS
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import Array
from seenbefore.detection.online import OnlineEnsemble
from seenbefore.detection.units import UNITS
from seenbefore.types import Anomaly, MetricDeviation

ENSEMBLE_POLICY = EventPolicy(open_at=DEFAULT_THRESHOLD, sustain=2)
COMBINE = "max over metrics of the per-metric ensemble score"
DEFAULT_LEARNING = 30
"""Points learned from before anything can open, for ``detect``, ``POST /v1/detect`` and
``watch`` alike (``watch --learning`` changes it). Short, and the same for every length of
series: a 56-point CSV must report a step at its 57th point. What it costs, on NAB's files we
hold (``benchmarks/results/learning_period.json``): more false alarms early in a series (a daily
ramp before a day has been seen), where the rule before issue 32 reported nothing."""
WARMUP = 750
"""Points the ensemble's members calibrate over (its ``probation``: NAB's cap on its 15 %), never
fewer than the learning period: until then the likelihood members report nothing and only the
range and ARTime members can fire. Fixed for the same reason as the learning period."""
WINDOW = 240  # points before a fire its baseline is read from
LEAD = 60  # points after a fire a deviation is looked for in
MIN_POINTS = 20


def learning_period(probation: int | None = None) -> int:
    """The given learning period, else ``DEFAULT_LEARNING``: never a function of the series'
    length, so a longer window learns exactly what a shorter one did."""
    return max(1, int(probation)) if probation is not None else DEFAULT_LEARNING


def duration_text(seconds: float) -> str:
    """A span a person reads at a glance: 45 s, 3 min, 5 h 20 min, 2 d 3 h."""
    s = max(0.0, float(seconds))
    if s < 120:
        return f"{s:.0f} s" if s >= 1 or s == 0 else f"{s * 1000:.0f} ms"
    if s < 600 and round(s) % 60:
        return f"{int(s // 60)} min {round(s) % 60} s"
    if s < 7200:
        return f"{round(s / 60)} min"
    if s < 2 * 86_400:
        hours, minutes = divmod(round(s / 60), 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(round(s / 3600), 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def learning_text(learned: int, learning: int, step_seconds: float | None) -> str:
    """``learning: 12 of 25 points, 3 min left`` (or ``learned: 25 points (6 min)`` when
    done): the learning period in points and in time."""
    if learned >= learning:
        span = f" ({duration_text(learning * step_seconds)})" if step_seconds else ""
        return f"learned: {learning} points{span}"
    left = f", {duration_text((learning - learned) * step_seconds)} left" if step_seconds else ""
    return f"learning: {learned} of {learning} points{left}"


def confirmation_day(step_seconds: float | None) -> int | None:
    """Points per day for the same-time-yesterday check (None when the step is unknown); the
    check applies from the point a day of points has been seen."""
    return ensemble.points_per_day(step_seconds)


def rule(
    learning: int,
    step_seconds: float | None,
    *,
    open_at: float = DEFAULT_THRESHOLD,
    join_any: bool = True,
) -> Rule:
    """The confirmation rule ``detect``, ``POST /v1/detect`` and ``watch`` run; ``open_at``
    is the score that opens an event (another detector's scale: the Isolation Forest's 0.5)."""
    return Rule(
        policy=dataclasses.replace(ENSEMBLE_POLICY, open_at=open_at),
        learning=learning,
        window=WINDOW,
        lead=LEAD,
        day=confirmation_day(step_seconds),
        join_any=join_any,
    )


@dataclass
class ServiceRun:
    """What one service's run found: the score per point, the anomalies, the unconfirmed fires."""

    scores: Array
    per_metric: Array
    anomalies: list[Anomaly] = field(default_factory=list)
    unconfirmed: list[dict[str, Any]] = field(default_factory=list)
    confirmed_at: dict[str, int] = field(default_factory=dict)  # anomaly id -> point confirmed
    joined: int = 0  # events confirmed while an anomaly lasted, merged into it
    lasting: str | None = None  # id of the anomaly that still lasts at the last point
    joined_at: list[int] = field(default_factory=list)  # the points that confirmed those


def run_service(
    *,
    service: str,
    cloud: str,
    region: str,
    timestamps: Sequence[dt.datetime],
    metrics: Sequence[str],
    X: Array,
    learning: int,
    step_seconds: float | None,
    probation: int | None = None,
) -> ServiceRun:
    """Every metric's online ensemble, point by point, then the confirmation rule over the
    service (:func:`confirm_service`); anomalies as :class:`~seenbefore.types.Anomaly`."""
    X = np.asarray(X, dtype=np.float64)
    n, k = X.shape
    warmup = max(learning, WARMUP) if probation is None else probation
    detectors = [OnlineEnsemble(probation=warmup, **EVENT_PARAMS) for _ in range(k)]
    per_metric = np.zeros((n, k))
    for t in range(n):
        for j in range(k):
            per_metric[t, j] = detectors[j].update(X[t, j])
    scores = per_metric.max(axis=1) if k else np.zeros(n)
    return confirm_service(
        service=service,
        cloud=cloud,
        region=region,
        timestamps=timestamps,
        metrics=metrics,
        X=X,
        scores=np.asarray(scores, dtype=np.float64),
        rule=rule(learning, step_seconds),
        per_metric=per_metric,
    )


def confirm_service(
    *,
    service: str,
    cloud: str,
    region: str,
    timestamps: Sequence[dt.datetime],
    metrics: Sequence[str],
    X: Array,
    scores: Array,
    rule: Rule,
    per_metric: Array | None = None,
) -> ServiceRun:
    """The confirmation rule over a service's per-point scores (from any past-only detector:
    the ensemble, or the Isolation Forest), point by point; anomalies start at the first
    deviating point and end at the first point they no longer last, or the last point."""
    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    confirmer = Confirmer(metrics, rule)
    found: dict[int, Anomaly] = {}
    unconfirmed: list[dict[str, Any]] = []
    confirmed_at: dict[int, int] = {}
    joined: list[int] = []
    for t in range(n):
        outcomes: list[Outcome] = confirmer.update(X[t].tolist(), float(scores[t]), t)
        if t == n - 1:
            last = confirmer.finish()
            outcomes += [last] if last is not None else []
        for outcome in outcomes:
            if isinstance(outcome, Confirmed):
                _confirmed(found, outcome, service, cloud, region, timestamps)
                confirmed_at.setdefault(outcome.start, outcome.at)
                joined += [outcome.at] if outcome.joined else []
            elif isinstance(outcome, Described):
                found[outcome.start] = _described(found[outcome.start], outcome)
            elif isinstance(outcome, Ended):
                found[outcome.start] = dataclasses.replace(
                    found[outcome.start], end=timestamps[outcome.at]
                )
            elif isinstance(outcome, Unconfirmed):
                unconfirmed.append(_unconfirmed(outcome, service, timestamps))
    lasting = confirmer.lasting
    if lasting is not None:  # to the end, or to where its metrics came back
        back = confirmer.back_since
        end = timestamps[n - 1 if back is None else back]
        found[lasting] = dataclasses.replace(found[lasting], end=end)
    if confirmer.event is not None and not confirmer.event.confirmed:
        event = confirmer.event
        unconfirmed.append(
            {
                "service": service,
                "start": timestamps[event.stamp].isoformat(),
                "end": None,
                "score": round(event.score, 4),
                "why": "still open at the end of the series: "
                + confirmer._why(event, "").replace("(needs", "so far (needs"),
            }
        )
    return ServiceRun(
        np.asarray(scores, dtype=np.float64),
        scores[:, None] if per_metric is None else per_metric,
        [found[s] for s in sorted(found)],
        unconfirmed,
        {found[s].id: at for s, at in confirmed_at.items()},
        len(joined),
        found[lasting].id if lasting is not None else None,
        joined,
    )


def _metric_deviations(found: Confirmed | Described) -> tuple[MetricDeviation, ...]:
    return tuple(
        MetricDeviation(
            metric=d.metric,
            direction=d.direction,
            value=d.value,
            baseline=d.baseline,
            zscore=d.zscore,
            unit=UNITS.get(d.metric, ""),
        )
        for d in found.deviations
    )


def _described(anomaly: Anomaly, described: Described) -> Anomaly:
    """The anomaly as its event's ``lead`` points describe it: every metric that deviated in
    them at its peak. An event that joined a lasting anomaly (a repeat, or the incident
    spreading to other metrics) adds its score and how long the anomaly lasts, not to its
    description: the anomaly reads as the incident began (what the anomaly confidence model
    was fitted on; the draft searches precedents with it)."""
    score = max(anomaly.score, round(described.score, 4))
    if described.joined:
        return dataclasses.replace(anomaly, score=score)
    return dataclasses.replace(
        anomaly,
        score=score,
        deviations=_metric_deviations(described),
        normal=described.normal,
    )


def _confirmed(
    found: dict[int, Anomaly],
    outcome: Confirmed,
    service: str,
    cloud: str,
    region: str,
    timestamps: Sequence[dt.datetime],
) -> None:
    deviations = _metric_deviations(outcome)
    if outcome.joined and outcome.start in found:  # the same incident: its score, not its face
        held = found[outcome.start]
        found[outcome.start] = dataclasses.replace(
            held, score=max(held.score, round(outcome.score, 4))
        )
        return
    started = timestamps[outcome.start]
    digest = hashlib.sha1(f"{service}{started.isoformat()}".encode()).hexdigest()[:10]
    found[outcome.start] = Anomaly(
        id=f"anom-{digest}",
        service=service,
        cloud=cloud,
        region=region,
        start=started,
        end=timestamps[outcome.at],
        score=round(outcome.score, 4),
        deviations=deviations,
        normal=outcome.normal,
    )


def _unconfirmed(
    outcome: Unconfirmed, service: str, timestamps: Sequence[dt.datetime]
) -> dict[str, Any]:
    return {
        "service": service,
        "start": timestamps[outcome.start].isoformat(),
        "end": timestamps[outcome.end].isoformat(),
        "score": round(outcome.score, 4),
        "why": outcome.why,
    }


def describe(
    name: str,
    *,
    timestamps: Sequence[dt.datetime],
    learning: int,
    parameters: dict[str, Any],
    note: str,
) -> dict[str, Any]:
    """What ran, for ``detect --json``: the detector, its settings and its learning period,
    in points and in time, and how much of it is left when the series is shorter."""
    n = len(timestamps)
    step = ensemble.median_step(timestamps)
    seconds = learning * step if step else 0.0
    learned = min(learning, n)
    period: dict[str, Any] = {
        "points": learning,
        "seconds": seconds,
        "until": timestamps[learning].isoformat() if learning < n else None,
        "learned": learned,
        "left_points": learning - learned,
        "left_seconds": (learning - learned) * step if step else None,
        "note": note,
    }
    return {
        "name": name,
        "parameters": parameters,
        "scored_points": n if name == "ensemble" else max(0, n - learning),
        "learning_period": period,
    }


def ensemble_parameters(learning: int) -> dict[str, Any]:
    return {
        **EVENT_PARAMS,
        "learning": learning,
        "probation": max(learning, WARMUP),
        "combine_metrics": COMBINE,
        "event_policy": dataclasses.asdict(ENSEMBLE_POLICY),
        "window": WINDOW,
        "lead": LEAD,
    }
