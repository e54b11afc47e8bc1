"""Per-field caps on Alertmanager alerts, shared by ``POST /v1/alerts/alertmanager`` and the
CLI's ``seenbefore investigate --alert``.

An alert's summary, description and labels become the investigation's query and are kept with
the review, so an unbounded field became an unbounded query, draft and web page (a 1 MB summary
was served back as a 4 MB investigation). Each field is cut to its cap here, before anything
reads it, and the cut is marked in the text itself (``… [truncated 1,048,576 → 2,000 chars]``),
so a reader of the investigation sees that the alert said more. The caps keep the whole query
under the 10,000 characters ``POST /v1/investigations`` accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_SUMMARY_CHARS = 2_000
MAX_DESCRIPTION_CHARS = 6_000
MAX_LABELS = 64  # labels kept per alert (Alertmanager sends them sorted by name)
MAX_LABEL_NAME_CHARS = 100
MAX_LABEL_VALUE_CHARS = 200
MAX_ID_CHARS = 200  # fingerprint, startsAt, endsAt: they key the review
MAX_URL_CHARS = 2_000  # generatorURL, kept with the review
ANNOTATION_CAPS = {"summary": MAX_SUMMARY_CHARS, "description": MAX_DESCRIPTION_CHARS}
MAX_OTHER_ANNOTATION_CHARS = 1_000


def truncate(text: str, cap: int) -> tuple[str, bool]:
    """``text`` cut to ``cap`` characters with the cut marked; (text, whether it was cut)."""
    if len(text) <= cap:
        return text, False
    return f"{text[:cap]}… [truncated {len(text):,} → {cap:,} chars]", True


@dataclass(frozen=True)
class CappedAlert:
    alert: dict[str, Any]
    truncated: tuple[str, ...]  # which fields were cut, e.g. "alerts[0].annotations.summary"


def cap_alert(alert: Any, index: int) -> CappedAlert:
    """A copy of one alert with every capped field within its cap (anything that is not an
    object is returned as it is, for the parser to refuse by index)."""
    if not isinstance(alert, Mapping):
        return CappedAlert(alert, ())
    where = f"alerts[{index}]"
    out = dict(alert)
    cut: list[str] = []

    def capped(value: Any, cap: int, path: str) -> str:
        text, was_cut = truncate(value if isinstance(value, str) else str(value), cap)
        if was_cut:
            cut.append(path)
        return text

    labels = alert.get("labels")
    if isinstance(labels, Mapping):
        names = sorted(labels, key=str)
        if len(names) > MAX_LABELS:
            cut.append(f"{where}.labels ({len(names):,} → {MAX_LABELS} labels)")
        out["labels"] = {
            capped(k, MAX_LABEL_NAME_CHARS, f"{where}.labels name"): capped(
                labels[k], MAX_LABEL_VALUE_CHARS, f"{where}.labels.{str(k)[:40]}"
            )
            for k in names[:MAX_LABELS]
        }
    notes = alert.get("annotations")
    if isinstance(notes, Mapping):
        out["annotations"] = {
            str(k)[:MAX_LABEL_NAME_CHARS]: capped(
                v,
                ANNOTATION_CAPS.get(str(k), MAX_OTHER_ANNOTATION_CHARS),
                f"{where}.annotations.{str(k)[:40]}",
            )
            for k, v in notes.items()
        }
    for key, cap in (
        ("fingerprint", MAX_ID_CHARS),
        ("startsAt", MAX_ID_CHARS),
        ("endsAt", MAX_ID_CHARS),
        ("generatorURL", MAX_URL_CHARS),
    ):
        if alert.get(key) is not None:
            out[key] = capped(alert[key], cap, f"{where}.{key}")
    return CappedAlert(out, tuple(cut))


def cap_webhook(payload: Any) -> tuple[Any, list[CappedAlert]]:
    """A webhook body with every alert capped, and what was cut in each (the CLI's path; the
    service caps the alerts pydantic parsed, one by one, the same way)."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("alerts"), list):
        return payload, []
    capped = [cap_alert(a, i) for i, a in enumerate(payload["alerts"])]
    return {**payload, "alerts": [c.alert for c in capped]}, capped
