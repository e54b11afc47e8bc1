"""Prometheus metrics, in a registry of the app's own (two apps in one process never clash).

- ``seenbefore_http_request_duration_seconds{method,route,status}``: latency per route
  template (``/v1/postmortems/{doc_id}``, never the id), unmatched paths as ``unmatched``;
- ``seenbefore_investigations_total{source,outcome}``: outcome ``precedent``, ``novel``, ``failed``;
- ``seenbefore_retrieval_stage_seconds{stage}``: the investigation trace's per-stage timings;
- ``seenbefore_review_decisions_total{decision,reason}``;
- drift gauges over the last ``window`` investigations: mean top-1 confidence, novelty rate,
  sparse/dense agreement (the fused top-1 is rank 1 in both retrievers; only investigations
  where dense retrieval ran count), and the share whose evidence carried injection flags;
- ``seenbefore_rate_limited_total``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
DRIFT_WINDOW = 200


@dataclass(frozen=True)
class Observation:
    """What one investigation says about drift."""

    confidence: float
    novel: bool
    agreement: bool | None  # None when dense retrieval did not run
    injection: bool
    timings_ms: Mapping[str, float]

    @classmethod
    def from_review(cls, draft: Mapping[str, Any], evidence: Mapping[str, Any]) -> Observation:
        trace = draft.get("retrieval_trace") or {}
        candidates = trace.get("candidates") or []
        agreement: bool | None = None
        if any("dense" in (c.get("retrievers") or {}) for c in candidates):
            top = candidates[0].get("retrievers") or {}
            agreement = all(
                int((top.get(name) or {}).get("rank", 0)) == 1 for name in ("sparse", "dense")
            )
        timings = {
            str(k): float(v)
            for k, v in (trace.get("timings_ms") or {}).items()
            if isinstance(v, int | float)
        }
        return cls(
            confidence=float(draft.get("confidence") or 0.0),
            novel=bool(draft.get("novel")),
            agreement=agreement,
            injection=_has_injection_flags(evidence),
            timings_ms=timings,
        )


def _has_injection_flags(value: Any) -> bool:
    """True if any ``injection_flags`` list anywhere in the evidence record is non-empty."""
    if isinstance(value, Mapping):
        if value.get("injection_flags"):
            return True
        return any(_has_injection_flags(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_injection_flags(v) for v in value)
    return False


class ServiceMetrics:
    def __init__(self, *, window: int = DRIFT_WINDOW) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.latency = Histogram(
            "seenbefore_http_request_duration_seconds",
            "HTTP request latency by route template",
            ("method", "route", "status"),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.investigations = Counter(
            "seenbefore_investigations",
            "investigations started, by source and outcome",
            ("source", "outcome"),
            registry=r,
        )
        self.stages = Histogram(
            "seenbefore_retrieval_stage_seconds",
            "retrieval and investigation stage timings from the investigation trace",
            ("stage",),
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.decisions = Counter(
            "seenbefore_review_decisions",
            "review decisions, by decision and dismissal reason",
            ("decision", "reason"),
            registry=r,
        )
        self.rate_limited = Counter(
            "seenbefore_rate_limited", "requests refused by the per-token rate limit", registry=r
        )
        self.top1 = Gauge(
            "seenbefore_drift_top1_confidence_mean",
            "mean top-1 confidence over the recent investigations",
            registry=r,
        )
        self.novelty = Gauge(
            "seenbefore_drift_novelty_rate",
            "share of recent investigations judged novel",
            registry=r,
        )
        self.agreement = Gauge(
            "seenbefore_drift_sparse_dense_agreement",
            "share of recent investigations (dense ran) whose fused top-1 is rank 1 in both",
            registry=r,
        )
        self.injection = Gauge(
            "seenbefore_drift_injection_flag_rate",
            "share of recent investigations whose evidence carried prompt-injection flags",
            registry=r,
        )
        self.window_size = Gauge(
            "seenbefore_drift_window_investigations",
            "investigations in the drift window",
            registry=r,
        )
        self._window: deque[Observation] = deque(maxlen=window)
        self._lock = threading.Lock()

    # -- recording ----------------------------------------------------------------------------
    def observe_investigation(self, source: str, obs: Observation) -> None:
        self.investigations.labels(source, "novel" if obs.novel else "precedent").inc()
        for name, ms in obs.timings_ms.items():
            self.stages.labels(name.removesuffix("_ms")).observe(ms / 1000.0)
        with self._lock:
            self._window.append(obs)
            items = list(self._window)
        n = len(items)
        self.window_size.set(n)
        self.top1.set(sum(o.confidence for o in items) / n)
        self.novelty.set(sum(o.novel for o in items) / n)
        self.injection.set(sum(o.injection for o in items) / n)
        agreeing = [o.agreement for o in items if o.agreement is not None]
        self.agreement.set(sum(agreeing) / len(agreeing) if agreeing else 0.0)

    def investigation_failed(self, source: str) -> None:
        self.investigations.labels(source, "failed").inc()

    def observe_decision(self, decision: str, reason: str = "") -> None:
        self.decisions.labels(decision, reason or "-").inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class LatencyMiddleware:
    """Times every HTTP request and labels it with the matched route's template."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = str(getattr(route, "path", "")) or "unmatched"
            self.metrics.latency.labels(scope.get("method", ""), template, str(status)).observe(
                time.perf_counter() - started
            )
