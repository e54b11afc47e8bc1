"""Request and response bodies of the HTTP API (pydantic, so the OpenAPI document is complete).
Reviews and investigations are :class:`seenbefore.review.models.Review` as they are."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seenbefore.errors import InputError
from seenbefore.limits import MAX_K, MAX_QUERY_CHARS, MAX_SERVICES, check_filters  # as the CLI
from seenbefore.review.models import DismissReason, DraftEdits, Review
from seenbefore.types import SearchFilters

MAX_MARKDOWN_CHARS = 1_000_000
# the version of the search JSON shape, the same number the CLI's --json prints
# (cli/common.JSON_SCHEMA_VERSION; tests/service/test_body_limit.py keeps them equal)
SEARCH_JSON_VERSION = 1


class Problem(BaseModel):
    """An RFC 9457 problem: every error answer has this shape (application/problem+json)."""

    type: str = Field(examples=["urn:seenbefore:problem:not-found"])
    title: str
    status: int
    detail: str
    instance: str
    errors: list[dict[str, Any]] | None = None
    missing: list[str] | None = Field(
        default=None,
        description="account-required only: the fields still to write (root_cause, "
        "resolution, type)",
    )
    why: str | None = Field(default=None, description="account-required only: why they are needed")


class Health(BaseModel):
    status: Literal["ok"] = "ok"


IndexState = Literal["current", "stale", "not built"]


class Readiness(BaseModel):
    status: Literal["ready", "not ready"]
    reason: str = ""
    generation: int | None = None
    index: IndexState | None = Field(
        default=None,
        description="the in-memory search index against the store's generation: 'stale' or "
        "'not built' is rebuilt by the next search (a probe never builds it)",
    )


# -- search --------------------------------------------------------------------------------------
class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    k: int = Field(default=5, ge=1, le=MAX_K)
    mode: Literal["hybrid", "sparse", "dense"] = "hybrid"
    services: list[str] = Field(default_factory=list, max_length=MAX_SERVICES)
    since: dt.date | None = None
    until: dt.date | None = None
    include_superseded: bool = False

    @model_validator(mode="after")
    def _dates_in_order(self) -> SearchIn:
        """since after until can match nothing: 422, as the CLI refuses it (check_filters)."""
        try:
            check_filters(SearchFilters(date_from=self.since, date_to=self.until))
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return self


class RetrieverScore(BaseModel):
    rank: int
    score: float


class FailureModeOut(BaseModel):
    """seenbefore.knowledge.failure_modes.FailureMode: the author's type, or the inferred one."""

    slug: str = Field(description="a failure mode slug (docs/postmortem-format.md)")
    inferred: bool = Field(description="false: the author's type; true: inferred from the text")
    p: float = Field(ge=0.0, le=1.0, description="1.0 for the author's type; else P(slug | text)")
    known: bool = Field(
        description="the author's type, or inferred with p >= 0.5; else the mode is unknown and "
        "slug is only the nearest guess"
    )


class CandidateOut(BaseModel):
    rank: int
    id: str
    title: str
    date: dt.date | None
    type: str = Field(description="the author's type, as written ('' when none)")
    failure_mode: FailureModeOut | None = Field(
        default=None, description="the author's type, or the mode inferred from the text"
    )
    status: str
    superseded_by: str | None
    access_tier: str
    services: list[str]
    score: float
    matched_by: str
    retrievers: dict[str, RetrieverScore]
    section: str
    chunk_id: int
    snippet: str


class SearchOut(BaseModel):
    version: int = Field(
        default=SEARCH_JSON_VERSION, description="the JSON shape's version, as the CLI's --json"
    )
    query: str
    mode: str
    verdict: Literal["precedent found", "possible precedent — check", "no precedent"] = Field(
        description="derived from p_precedent alone: found at >= thresholds.hi, no precedent at "
        "<= thresholds.lo, possible in between (the results are then the nearest postmortems)"
    )
    p_precedent: float = Field(
        description="calibrated probability that the top result is a precedent"
    )
    thresholds: dict[str, float] | None = Field(
        default=None, description="the verdict's thresholds: {lo, hi}"
    )
    confidence: float = Field(description="p_precedent, under its older name")
    confidence_label: str
    novel: bool = Field(description="true exactly when the verdict is 'no precedent'")
    dense_trusted: bool
    weights: dict[str, float]
    results: list[CandidateOut]
    empty_because: str | None = Field(
        default=None,
        description="with no results: which filter left nothing to search (null when the "
        "query's words matched nothing); seenbefore.limits.empty_reason",
    )
    query_failure_mode: FailureModeOut | None = Field(
        default=None, description="the query's own failure mode as the classifier reads it"
    )
    another_failure: str | None = Field(
        default=None,
        description="when the verdict is not 'precedent found' and the query plainly names a "
        "failure mode the first postmortem is known not to be: that, in words (else null)",
    )


# -- investigations, anomalies, alerts -----------------------------------------------------------
class InvestigationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="alert text or note")
    severity: Literal["SEV1", "SEV2", "SEV3", "SEV4"] | None = None
    services: list[str] = Field(default_factory=list, max_length=MAX_SERVICES)


class DeviationIn(BaseModel):
    metric: str
    direction: Literal["up", "down"]
    value: float
    baseline: float
    zscore: float
    unit: str = ""


class AnomalyIn(BaseModel):
    """An anomaly record as `seenbefore detect --json` writes it."""

    id: str = Field(min_length=1, max_length=200)
    service: str = Field(min_length=1, max_length=200)
    cloud: str = ""
    region: str = ""
    start: dt.datetime
    end: dt.datetime
    score: float = Field(ge=0.0, le=1.0)
    deviations: list[DeviationIn] = Field(default_factory=list, max_length=100)
    normal: list[str] = Field(default_factory=list)
    severity: Literal["SEV1", "SEV2", "SEV3", "SEV4"] | None = None
    rules: list[str] = Field(default_factory=list)
    rules_severity: list[str] = Field(default_factory=list)
    truth_kind: str | None = None


MAX_DETECT_POINTS = 20_000  # two weeks of one-minute points; the body limit bounds it too
MAX_DETECT_METRICS = 50


class DetectIn(BaseModel):
    """One service's series for ``POST /v1/detect``: a value per timestamp for each metric
    (null where a sample is missing)."""

    model_config = ConfigDict(extra="forbid")

    service: str = Field(min_length=1, max_length=200)
    timestamps: list[dt.datetime] = Field(min_length=1, max_length=MAX_DETECT_POINTS)
    metrics: dict[str, list[float | None]] = Field(min_length=1, max_length=MAX_DETECT_METRICS)
    investigate: bool = False


class DetectedAnomaly(AnomalyIn):
    """An anomaly the detector found, as `seenbefore detect --json` writes it."""

    signature: str
    severity_reasons: list[str] = Field(default_factory=list)
    review_id: str | None = None  # with ``investigate``: the investigation started for it
    investigation_skipped: str | None = None  # with ``investigate``: why none was started
    # False when it began before a day of the series had been seen: not compared with the same
    # time a day earlier, so a daily cycle's swing can look like it
    compared_with_a_day_earlier: bool | None = None


class DetectOut(BaseModel):
    """What ``POST /v1/detect`` found: the detector that ran (its settings and learning period),
    the anomalies after triage, and what triage merged or suppressed."""

    detector: dict[str, Any]
    points: int
    anomalies: list[DetectedAnomaly]
    duplicates: int
    suppressed: list[dict[str, str]]
    investigations_started: int = 0  # with ``investigate``: new ones (repeats are found)
    investigations_skipped: int = 0  # past the per-request or per-minute cap


class AlertmanagerAlert(BaseModel):
    status: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: str = ""
    endsAt: str = ""
    generatorURL: str = ""
    fingerprint: str = ""


class AlertmanagerWebhook(BaseModel):
    """Alertmanager's webhook body, payload version 4."""

    version: str
    status: str = ""
    receiver: str = ""
    groupKey: str = ""
    truncatedAlerts: int = 0
    groupLabels: dict[str, str] = Field(default_factory=dict)
    commonLabels: dict[str, str] = Field(default_factory=dict)
    commonAnnotations: dict[str, str] = Field(default_factory=dict)
    externalURL: str = ""
    alerts: list[AlertmanagerAlert] = Field(max_length=1000)


class AlertStarted(BaseModel):
    source_key: str
    investigation_id: str
    status: str
    round: int


class AlertsOut(BaseModel):
    started: list[AlertStarted]
    closed: list[str] = Field(description="investigation ids closed by resolved alerts")
    ignored: int = Field(description="alerts neither firing nor resolved")


# -- reviews -------------------------------------------------------------------------------------
class ReviewsOut(BaseModel):
    reviews: list[Review]


class ApproveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    edits: DraftEdits | None = None


class DismissIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: DismissReason
    note: str = Field(default="", max_length=5000)


# -- postmortems ---------------------------------------------------------------------------------
class PostmortemIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    markdown: str = Field(
        min_length=1,
        max_length=MAX_MARKDOWN_CHARS,
        description="one postmortem: YAML front matter (id, title, ...) and Markdown sections",
    )


class SectionOut(BaseModel):
    key: str
    heading: str
    text: str


class PostmortemOut(BaseModel):
    id: str
    title: str
    date: dt.date | None
    services: list[str]
    severity: str
    status: str
    effective_status: str
    supersedes: str | None
    superseded_by: str | None
    access_tier: str
    type: str = Field(description="the author's type, as written ('' when none)")
    failure_mode: FailureModeOut = Field(
        description="the author's type, or the mode inferred from the text (marked inferred)"
    )
    tags: list[str]
    signals: list[str]
    extra: dict[str, Any]
    body: str
    sections: list[SectionOut]
    chunk_count: int
    content_hash: str
    ingested_at: str
    updated_at: str


class WriteOut(BaseModel):
    id: str
    outcome: Literal["added", "updated", "unchanged"]
    chunks: int
    injection_flags: list[str] = Field(
        default_factory=list, description="prompt-injection patterns found (kept, flagged)"
    )


class DeletionOut(BaseModel):
    id: str
    sha256: str
    chunks: int
    reviews_purged: int
    notifications_purged: int
    log_lines_purged: int
    derived_deleted: list[str]
    files_compacted: list[str]


# -- audit ---------------------------------------------------------------------------------------
class AuditRecordOut(BaseModel):
    id: int
    time: str
    actor: str
    session: str | None
    action: str
    query_hash: str | None
    doc_ids: list[str]
    tiers: list[str]
    draft_id: str | None
    decision: str | None
    detail: dict[str, Any]
    prev_hash: str
    hash: str


class AuditOut(BaseModel):
    records: list[AuditRecordOut]


PROBLEM_DESCRIPTIONS = {
    400: "bad input (what was received, the rule, the fix)",
    401: "no token, or an unknown or revoked one",
    403: "the token's role may not do this",
    404: "no such resource, or not visible to the caller's tiers (indistinguishable)",
    409: "conflicts with the current state (or an id held by a postmortem outside your tiers)",
    413: "the request body is over SEENBEFORE_MAX_REQUEST_BYTES (checked before parsing and auth)",
    422: "the request body or parameters do not validate; or (account-required) the draft cannot "
    "be approved as drafted and ``missing`` names what to write",
    429: "rate limited: see Retry-After",
    503: "the knowledge base or store is not usable right now",
}


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for error answers (all application/problem+json, RFC 9457)."""
    chosen = codes or (401, 403, 413, 422, 429, 503)
    return {c: {"model": Problem, "description": PROBLEM_DESCRIPTIONS[c]} for c in chosen}
