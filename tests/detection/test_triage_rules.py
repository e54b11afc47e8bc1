"""Rule hits and the detector's anomalies in triage: a rule that fired before the detector
confirmed the same incident joins its anomaly (one incident, one anomaly)."""

from __future__ import annotations

import datetime as dt

from seenbefore.detection.rules import Rule, RuleHit
from seenbefore.detection.triage import Triage
from seenbefore.types import Anomaly, MetricDeviation

T0 = dt.datetime(2026, 11, 3, 14, 0, tzinfo=dt.UTC)
RULE = Rule(name="error rate above 5%", kind="threshold", metric="error_rate", severity="SEV2")


def _minutes(m: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=m)


def _anomaly(start: int, end: int) -> Anomaly:
    deviation = MetricDeviation("error_rate", "up", 0.2, 0.01, 12.0)
    return Anomaly(
        id="anom-1",
        service="checkout-api",
        cloud="aws",
        region="us-east-1",
        start=_minutes(start),
        end=_minutes(end),
        score=0.9,
        deviations=(deviation,),
    )


def _hit(start: int, end: int) -> RuleHit:
    return RuleHit(RULE, "checkout-api", _minutes(start), _minutes(end), index=start)


def test_a_rule_that_fired_before_the_detector_joins_its_anomaly() -> None:
    """The simulator's bad deploy with the Isolation Forest: the error-rate rule fired at
    14:13, the detector confirmed at 14:26, both until 14:48, and triage kept two anomalies
    (the rule's only joined an anomaly it began within 5 minutes of)."""
    kept = Triage().process([_anomaly(26, 48)], [_hit(13, 48)]).kept
    assert len(kept) == 1
    assert kept[0].id == "anom-1" and kept[0].start == _minutes(13)
    assert kept[0].rules == (RULE.name,)


def test_a_rule_hit_that_ended_before_the_anomaly_stays_its_own() -> None:
    kept = Triage().process([_anomaly(26, 48)], [_hit(0, 10)]).kept
    assert sorted(a.start for a in kept) == [_minutes(0), _minutes(26)]
    assert [a.rules for a in kept if a.id == "anom-1"] == [()]
