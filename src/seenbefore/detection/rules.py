"""Declarative rules (YAML): thresholds, rate of change and absence of data."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.detection.features import Array
from seenbefore.errors import ConfigError
from seenbefore.parsing import YAML_MAX_BYTES, YAMLProblem, load_yaml, read_text
from seenbefore.types import SEVERITIES

DEFAULT_RULES = Path(__file__).with_name("rules.yaml")
OPS: dict[str, Callable[[Any, Any], Any]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
KINDS = ("threshold", "rate_of_change", "absence")


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    metric: str
    severity: str
    op: str = ">"
    value: float = 0.0
    consecutive: int = 1
    factor: float = 2.0
    over: int = 5
    relative_to: str | None = None


@dataclass(frozen=True)
class RuleHit:
    rule: Rule
    service: str
    start: dt.datetime
    end: dt.datetime
    index: int  # first point where it fired


def load_rules(path: Path | None = None) -> list[Rule]:
    path = path or DEFAULT_RULES
    try:
        data = load_yaml(
            read_text(path, what="rules file", error=ConfigError, max_bytes=YAML_MAX_BYTES)
        )
    except YAMLProblem as exc:
        raise ConfigError(f"rules file {path}: {exc}") from exc
    items = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ConfigError(f"rules file {path}: expected a top-level 'rules:' list")
    return [_rule(path, i, item) for i, item in enumerate(items, 1)]


def _rule(path: Path, number: int, item: Any) -> Rule:
    where = f"rules file {path}, rule {number}"
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: expected a mapping")
    kind = item.get("kind", "threshold")
    if kind not in KINDS:
        raise ConfigError(f"{where}: kind is {kind!r}, expected one of {', '.join(KINDS)}")
    for key in ("name", "metric"):
        if not item.get(key):
            raise ConfigError(f"{where}: '{key}' is missing")
        if isinstance(item[key], list | dict):
            raise ConfigError(f"{where}: '{key}' is {item[key]!r}, expected text")
    severity = item.get("severity", "SEV3")
    if severity not in SEVERITIES:
        raise ConfigError(f"{where}: severity is {severity!r}, expected one of {SEVERITIES}")
    op = item.get("op", ">")
    if not isinstance(op, str) or op not in OPS:
        raise ConfigError(f"{where}: op is {op!r}, expected one of {', '.join(OPS)}")
    try:
        return Rule(
            name=str(item["name"]),
            kind=kind,
            metric=str(item["metric"]),
            severity=severity,
            op=op,
            value=float(item.get("value", 0.0)),
            consecutive=int(item.get("for", 1)),
            factor=float(item.get("factor", 2.0)),
            over=int(item.get("over", 5)),
            relative_to=item.get("relative_to"),
        )
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: `for: .inf`
        raise ConfigError(f"{where}: a numeric field is not a number ({exc})") from exc


def _runs(condition: npt.NDArray[Any], length: int) -> list[tuple[int, int]]:
    """[start, end) of runs where ``condition`` holds for at least ``length`` points."""
    out, start = [], None
    for i, ok in enumerate(np.append(condition.astype(bool), False)):
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            if i - start >= length:
                out.append((start, i))
            start = None
    return out


def evaluate_rules(
    rules: Sequence[Rule],
    *,
    service: str,
    timestamps: Sequence[dt.datetime],
    series: Mapping[str, Array],
    capacity: Mapping[str, float] | None = None,
    step: dt.timedelta = dt.timedelta(minutes=1),
) -> list[RuleHit]:
    hits = []
    for rule in rules:
        values = series.get(rule.metric)
        if values is None:  # a series without the metric says nothing of it, nor of its absence
            continue
        if rule.kind == "absence":
            runs = _absence(timestamps, values, step, rule.consecutive)
        elif rule.kind == "threshold":
            threshold = rule.value
            if rule.relative_to == "pool":
                cap = (capacity or {}).get(rule.metric)
                if not cap:
                    continue
                threshold = cap * rule.value / 100.0
            runs = _runs(OPS[rule.op](values, threshold), rule.consecutive)
        else:  # rate_of_change
            ratio = np.zeros_like(values)
            prior = values[: -rule.over] if rule.over < len(values) else np.array([])
            if len(prior):
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio[rule.over :] = np.where(prior > 0, values[rule.over :] / prior, 0.0)
            runs = _runs(ratio >= rule.factor, rule.consecutive)
        for a, b in runs:
            hits.append(
                RuleHit(rule, service, timestamps[a], timestamps[min(b, len(timestamps) - 1)], a)
            )
    return hits


def _absence(
    timestamps: Sequence[dt.datetime], values: Array, step: dt.timedelta, length: int
) -> list[tuple[int, int]]:
    """Where at least ``length`` points are missing: runs of NaN, or gaps in the timestamps of
    ``step`` (reported at the first point after the gap)."""
    runs = _runs(np.isnan(values).astype(np.float64), length)
    for i in range(1, len(timestamps)):
        missing = round((timestamps[i] - timestamps[i - 1]) / step) - 1
        if missing >= length:
            runs.append((i, i + 1))
    return sorted(runs)
