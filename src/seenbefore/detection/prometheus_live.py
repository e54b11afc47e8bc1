"""Telemetry from a live Prometheus: ``GET /api/v1/query_range`` over HTTP, parsed exactly like a
saved response (``telemetry.parse_query_range``).

Prometheus caps a range query at 11,000 points per series, so a long window is fetched in pieces
of at most ``MAX_POINTS`` steps and joined. Errors say what the server answered and what to change
(an unreachable URL, a PromQL error, an empty result)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import httpx

from seenbefore.detection.telemetry import Telemetry, parse_query_range
from seenbefore.errors import InputError

MAX_POINTS = 10_000  # below Prometheus' 11,000-points-per-series limit
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str, what: str) -> dt.timedelta:
    """Prometheus-style durations: ``90s``, ``15m``, ``6h``, ``2d``, ``1w``."""
    found = _DURATION.match(text.strip())
    if not found:
        raise InputError(f"{what} is {text!r}; expected a duration such as 30s, 15m, 6h or 2d")
    seconds = float(found.group(1)) * _UNIT_S[found.group(2)]
    if seconds <= 0:
        raise InputError(f"{what} is {text!r}; it must be longer than zero")
    return dt.timedelta(seconds=seconds)


def series_name(query: str, labels: dict[str, Any]) -> str:
    rest = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in ("service", "job"))
    name = " ".join(query.split())[:80]
    return f"{name}{{{rest}}}" if rest else name


def _get(client: httpx.Client, url: str, params: dict[str, str]) -> Any:
    try:
        response = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise InputError(
            f"Prometheus at {url} did not answer ({type(exc).__name__}: {exc}); check the URL "
            "(e.g. http://127.0.0.1:9090) and that the server is up"
        ) from None
    try:
        body = response.json()
    except ValueError:
        raise InputError(
            f"{url} answered HTTP {response.status_code} with a body that is not JSON; is this "
            "a Prometheus server (its /api/v1/query_range)?"
        ) from None
    if response.status_code != 200 or not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error") if isinstance(body, dict) else None
        raise InputError(
            f"Prometheus refused the query (HTTP {response.status_code}): {error or body!s:.300}; "
            "check the PromQL expression"
        )
    return body


def query_range(
    base_url: str,
    query: str,
    *,
    since: dt.timedelta,
    step: dt.timedelta,
    end: dt.datetime | None = None,
    service: str | None = None,
    timeout_s: float = 30.0,
    transport: httpx.BaseTransport | None = None,
) -> Telemetry:
    """The last ``since`` of ``query`` at resolution ``step``, as Telemetry."""
    if not query.strip():
        raise InputError(
            "--query is empty; give a PromQL expression, e.g. 'rate(http_requests_total[1m])'"
        )
    if step.total_seconds() < 0.001:
        raise InputError(f"--step is {step}; Prometheus steps are 1ms or longer")
    end = end or dt.datetime.now(dt.UTC)
    merged = fetch_series(
        base_url,
        query,
        start=end - since,
        end=end,
        step=step,
        timeout_s=timeout_s,
        transport=transport,
    )
    if not merged:
        raise InputError(
            f"Prometheus returned no series for {query!r} over the last {since}; check the "
            "expression in Prometheus' own UI, or widen --since"
        )
    data = {"status": "success", "data": {"resultType": "matrix", "result": merged}}
    url = base_url.rstrip("/") + "/api/v1/query_range"
    return parse_query_range(data, f"{url}?query={query}", service=service)


def fetch_series(
    base_url: str,
    query: str,
    *,
    start: dt.datetime,
    end: dt.datetime,
    step: dt.timedelta,
    timeout_s: float = 30.0,
    transport: httpx.BaseTransport | None = None,
) -> list[dict[str, Any]]:
    """``query`` evaluated at ``start``, ``start + step``, ... up to ``end``: one
    ``{"metric": labels, "values": [[t, "v"], ...]}`` per series, as Prometheus answers, the
    pieces of a long window joined. An expression's series (no ``__name__``) is named by the
    query (:func:`series_name`); an empty result is an empty list."""
    url = base_url.rstrip("/") + "/api/v1/query_range"
    merged: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    with httpx.Client(timeout=timeout_s, transport=transport) as client:
        piece_start = start
        while piece_start <= end:
            piece_end = min(end, piece_start + step * MAX_POINTS)
            body = _get(
                client,
                url,
                {
                    "query": query,
                    "start": f"{piece_start.timestamp():.3f}",
                    "end": f"{piece_end.timestamp():.3f}",
                    "step": f"{step.total_seconds():g}",
                },
            )
            result = body.get("data", {}).get("result", [])
            for series in result if isinstance(result, list) else []:
                labels = dict(series.get("metric", {})) if isinstance(series, dict) else {}
                # an expression's result (rate(), sum by ...) has no __name__: name it by the
                # query, so each series keeps a metric name of its own
                labels.setdefault("__name__", series_name(query, labels))
                key = tuple(sorted((str(k), str(v)) for k, v in labels.items()))
                slot = merged.setdefault(key, {"metric": labels, "values": []})
                slot["values"].extend(series.get("values", []))
            if piece_end >= end:
                break
            piece_start = piece_end + step
    return list(merged.values())
