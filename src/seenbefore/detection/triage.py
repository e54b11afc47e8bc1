"""Triage: one of four severity tiers per anomaly, dedupe, flapping suppression, grouping.

Severity comes from points: the detector score, the worst rule that fired, the service's
criticality and the breadth of the deviation. SEV1 is the worst.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seenbefore.detection.rules import RuleHit
from seenbefore.errors import InputError
from seenbefore.types import Anomaly, Severity, anomaly_from_dict, anomaly_to_dict

TRIAGE_STATE_VERSION = 1

RULE_POINTS = {"SEV1": 4, "SEV2": 3, "SEV3": 1, "SEV4": 0}
CRITICALITY_POINTS = {"high": 2, "medium": 1, "low": 0}


@dataclass(frozen=True)
class TriagePolicy:
    dedupe_window: dt.timedelta = dt.timedelta(minutes=30)
    flap_window: dt.timedelta = dt.timedelta(hours=1)
    flap_limit: int = 3  # openings of one fingerprint within flap_window before suppression
    rule_slack: dt.timedelta = dt.timedelta(minutes=5)


def severity(anomaly: Anomaly, criticality: str = "medium") -> tuple[Severity, list[str]]:
    """The tier and the reasons that added up to it."""
    points = 0
    reasons: list[str] = []
    if anomaly.score >= 0.9:
        points += 2
        reasons.append(f"score {anomaly.score:.2f} >= 0.9 (+2)")
    elif anomaly.score >= 0.7:
        points += 1
        reasons.append(f"score {anomaly.score:.2f} >= 0.7 (+1)")
    worst = min(anomaly.rules_severity or ["SEV4"])
    if RULE_POINTS[worst]:
        points += RULE_POINTS[worst]
        reasons.append(f"rule at {worst} (+{RULE_POINTS[worst]})")
    crit = CRITICALITY_POINTS.get(criticality, 1)
    if crit:
        points += crit
        reasons.append(f"{criticality}-criticality service (+{crit})")
    if len(anomaly.deviations) >= 3:
        points += 1
        reasons.append(f"{len(anomaly.deviations)} metrics deviated (+1)")
    tier: Severity = (
        "SEV1" if points >= 6 else "SEV2" if points >= 4 else "SEV3" if points >= 2 else "SEV4"
    )
    return tier, reasons


@dataclass
class TriageResult:
    kept: list[Anomaly] = field(default_factory=list)
    duplicates: list[tuple[Anomaly, str]] = field(default_factory=list)  # (dup, kept id)
    suppressed: list[tuple[Anomaly, str]] = field(default_factory=list)  # (anomaly, reason)
    reasons: dict[str, list[str]] = field(default_factory=dict)  # anomaly id -> severity reasons

    def by_service(self) -> dict[str, list[Anomaly]]:
        groups: dict[str, list[Anomaly]] = defaultdict(list)
        for anomaly in self.kept:
            groups[anomaly.service].append(anomaly)
        return dict(groups)


class Triage:
    """Stateful across calls, so a stream of detections dedupes against earlier ones."""

    def __init__(
        self, *, criticality: Mapping[str, str] | None = None, policy: TriagePolicy | None = None
    ) -> None:
        self.criticality = dict(criticality or {})
        self.policy = policy or TriagePolicy()
        self._last: dict[str, Anomaly] = {}
        self._openings: dict[str, list[dt.datetime]] = defaultdict(list)

    def to_state(self) -> dict[str, object]:
        """The dedupe and flapping memory as JSON values, so a restarted watcher merges a repeat
        of an anomaly it already reported (``from_state`` reads it back)."""
        return {
            "version": TRIAGE_STATE_VERSION,
            "last": {key: anomaly_to_dict(a) for key, a in self._last.items()},
            "openings": {k: [t.isoformat() for t in v] for k, v in self._openings.items() if v},
        }

    @classmethod
    def from_state(
        cls,
        state: Mapping[str, object] | None,
        *,
        criticality: Mapping[str, str] | None = None,
        policy: TriagePolicy | None = None,
    ) -> Triage:
        """A triage with the memory ``to_state`` saved (a fresh one for None or another
        version: losing dedupe memory repeats a report, it never hides one); InputError for a
        state of this version that is not what ``to_state`` writes."""
        triage = cls(criticality=criticality, policy=policy)
        if not state or state.get("version") != TRIAGE_STATE_VERSION:
            return triage
        last = state.get("last") or {}
        openings = state.get("openings") or {}
        try:
            if not isinstance(last, dict) or not isinstance(openings, dict):
                raise TypeError("last and openings are objects")
            triage._last = {str(k): _typed(anomaly_from_dict(dict(v))) for k, v in last.items()}
            for key, times in openings.items():
                if not isinstance(times, list):
                    raise TypeError(f"openings[{str(key)[:40]!r}] is a list of times")
                triage._openings[str(key)] = [_aware(t) for t in times]
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
            raise InputError(
                f"the state: triage memory is not what this build saves ({str(exc)[:120]}); the "
                "file is damaged, edited or from another build: give another --state or delete it"
            ) from None
        return triage

    def process(self, anomalies: Sequence[Anomaly], hits: Sequence[RuleHit] = ()) -> TriageResult:
        result = TriageResult()
        merged = attach_rules(anomalies, hits, self.policy.rule_slack)
        for anomaly in sorted(merged, key=lambda a: a.start):
            key = anomaly.fingerprint
            openings = [
                t for t in self._openings[key] if anomaly.start - t <= self.policy.flap_window
            ]
            openings.append(anomaly.start)
            self._openings[key] = openings
            last = self._last.get(key)
            if last is not None and anomaly.start - last.end <= self.policy.dedupe_window:
                extended = dataclasses.replace(
                    last, end=max(last.end, anomaly.end), score=max(last.score, anomaly.score)
                )
                self._last[key] = extended
                result.kept = [extended if a.id == last.id else a for a in result.kept]
                result.duplicates.append((anomaly, last.id))
                continue
            if len(openings) > self.policy.flap_limit:
                result.suppressed.append(
                    (
                        anomaly,
                        f"flapping: {len(openings)} openings of "
                        f"{key} within {self.policy.flap_window}",
                    )
                )
                continue
            tier, reasons = severity(anomaly, self.criticality.get(anomaly.service, "medium"))
            triaged = dataclasses.replace(anomaly, severity=tier)
            self._last[key] = triaged
            result.kept.append(triaged)
            result.reasons[triaged.id] = reasons
        return result


def attach_rules(
    anomalies: Sequence[Anomaly], hits: Sequence[RuleHit], slack: dt.timedelta
) -> list[Anomaly]:
    """Rule hits join the anomalies they overlap, within ``slack`` (same service): one that
    began earlier too, and the anomaly then begins where the rule fired (a rule on error rate
    fired 13 minutes before the detector confirmed the same bad deploy, and the two were kept
    as two anomalies). The others become anomalies of their own, so a rule catches what the
    detector missed."""
    out = list(anomalies)
    for hit in hits:
        for i, anomaly in enumerate(out):
            if (
                anomaly.service == hit.service
                and hit.start <= anomaly.end + slack
                and hit.end >= anomaly.start - slack
            ):
                out[i] = dataclasses.replace(
                    anomaly,
                    start=min(anomaly.start, hit.start),
                    rules=tuple(dict.fromkeys((*anomaly.rules, hit.rule.name))),
                    rules_severity=tuple(
                        dict.fromkeys((*anomaly.rules_severity, hit.rule.severity))
                    ),
                )
                break
        else:
            digest = hashlib.sha1(f"{hit.service}{hit.rule.name}{hit.start}".encode()).hexdigest()[
                :10
            ]
            out.append(
                Anomaly(
                    id=f"rule-{digest}",
                    service=hit.service,
                    cloud="",
                    region="",
                    start=hit.start,
                    end=hit.end,
                    score=0.0,
                    rules=(hit.rule.name,),
                    rules_severity=(hit.rule.severity,),
                )
            )
    return out


def _aware(text: object) -> dt.datetime:
    """One saved opening time: ISO 8601 with its offset (compared with aware times)."""
    if not isinstance(text, str):
        raise TypeError(f"an opening time is {str(text)[:40]!r}, not ISO 8601 text")
    when = dt.datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError(f"the opening time {text[:40]!r} has no offset")
    return when


def _typed(a: Anomaly) -> Anomaly:
    """The anomaly, once every field has the type triage compares it by (a saved one is read
    from a file anyone could have edited)."""
    numbers = [a.score] + [x for d in a.deviations for x in (d.value, d.baseline, d.zscore)]
    texts = [*a.normal, *a.rules, *a.rules_severity] + [
        x for d in a.deviations for x in (d.metric, d.unit)
    ]
    if (
        a.start.tzinfo is None
        or a.end.tzinfo is None
        or not all(type(x) in (int, float) and math.isfinite(x) for x in numbers)
        or not all(isinstance(x, str) for x in texts)
        or not all(d.direction in ("up", "down") for d in a.deviations)
    ):
        raise TypeError(f"anomaly {a.id[:40]!r} has a field of the wrong type")
    return a
