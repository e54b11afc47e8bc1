"""Text from outside, made safe for a channel before any sender lays it out (issue 33).

Everything in a notification can come from someone else: an alert's labels (a Prometheus
``service`` label such as ``[Open the runbook](http://x/phish)``), an anomaly posted to the API,
a postmortem quoted in a draft, a model's words. :func:`safe_message` returns the notification
with every such string made plain: control and format characters removed (the bidi overrides
and isolates such as U+202E, the marks U+200E/U+200F/U+061C, zero-width and tag characters;
C0/C1 controls but newline and tab), line and paragraph separators made newlines, labels kept on
one line, and every link made inert (textlinks.inert_links: ``label (hxxp://x[.]y/z)``). Each
sender then escapes for its own markup: Slack puts outside text in ``plain_text`` objects and
escapes its mrkdwn fallback, Teams puts it in RichTextBlock TextRuns (never read as Markdown),
PagerDuty and Opsgenie take plain text.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Any

from seenbefore.notify.base import Notification
from seenbefore.textlinks import inert_links
from seenbefore.types import Anomaly, MetricDeviation

_SEPARATORS = re.compile("[\u2028\u2029\u0085]")


def plain(text: str) -> str:
    """``text`` without control or format characters (newline and tab kept), links inert."""
    text = _SEPARATORS.sub("\n", str(text).replace("\r\n", "\n").replace("\r", "\n"))
    kept = "".join(
        ch
        for ch in text
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs", "Cn")
    )
    return inert_links(kept)


def label(text: str) -> str:
    """A label or name: :func:`plain`, on one line."""
    return " ".join(plain(text).split())


def _deep(value: Any) -> Any:
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, dict):
        return {key: _deep(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_deep(item) for item in value]
    return value


def safe_anomaly(anomaly: Anomaly) -> Anomaly:
    return dataclasses.replace(
        anomaly,
        id=label(anomaly.id),
        service=label(anomaly.service),
        cloud=label(anomaly.cloud),
        region=label(anomaly.region),
        deviations=tuple(
            dataclasses.replace(d, metric=label(d.metric), unit=label(d.unit))
            if isinstance(d, MetricDeviation)
            else d
            for d in anomaly.deviations
        ),
        normal=tuple(label(n) for n in anomaly.normal),
        rules=tuple(label(r) for r in anomaly.rules),
    )


def safe_message(message: Notification) -> Notification:
    """``message`` with every string from outside made plain (module docstring)."""
    return dataclasses.replace(
        message,
        anomaly=safe_anomaly(message.anomaly),
        summary=plain(message.summary),
        draft=_deep(message.draft) if message.draft is not None else None,
    )
