"""Frozen values that cross module lines."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal, cast

Status = Literal["current", "superseded"]
MatchedBy = Literal["sparse", "dense", "both", "signals"]  # signals: by recorded signals alone
ChangeKind = Literal["added", "updated", "unchanged", "quarantined", "pruned"]

DEFAULT_TIER = "general"


@dataclass(frozen=True)
class Section:
    """One body section of a postmortem: canonical key (e.g. ``root_cause``) and its own heading."""

    key: str
    heading: str
    text: str
    position: int


@dataclass(frozen=True)
class Postmortem:
    """A validated postmortem, ready to chunk and store."""

    id: str
    title: str
    date: dt.date | None
    body: str
    sections: tuple[Section, ...]
    services: tuple[str, ...] = ()
    severity: str = ""
    status: Status = "current"
    supersedes: str | None = None
    access_tier: str = DEFAULT_TIER
    type: str = ""
    tags: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    content_hash: str = ""

    def section(self, key: str) -> Section | None:
        """The first section with canonical ``key``, or None."""
        return next((s for s in self.sections if s.key == key), None)


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of one section; fits the dense model's input window."""

    doc_id: str
    section_key: str
    section_heading: str
    section_position: int
    position: int
    text: str

    @property
    def word_count(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True)
class SearchFilters:
    """Pre-filters applied before any scoring. ``tiers`` are the caller's access tiers."""

    tiers: tuple[str, ...] = (DEFAULT_TIER,)
    include_superseded: bool = False
    services: tuple[str, ...] = ()
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    exclude_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RetrieverHit:
    """One retriever's view of a document: its rank (1-based) and raw score."""

    rank: int
    score: float


@dataclass(frozen=True)
class Candidate:
    """A document in a result list, with the chunk that matched best as its snippet."""

    doc_id: str
    title: str
    date: dt.date | None
    type: str
    status: Status
    access_tier: str
    services: tuple[str, ...]
    score: float
    snippet: str
    section_key: str
    chunk_id: int
    matched_by: MatchedBy = "sparse"
    retrievers: dict[str, RetrieverHit] = field(default_factory=dict)
    superseded_by: str | None = None


@dataclass(frozen=True)
class GateReport:
    """The trust gate's decision as a search result reports it."""

    dense_trusted: bool
    reason: str
    weights_source: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dense_trusted": self.dense_trusted,
            "reason": self.reason,
            "weights_source": self.weights_source,
            "evidence": dict(self.evidence),
        }


@dataclass(frozen=True)
class ModeFirst:
    """A search whose query named a failure mode with the classifier's confidence while sparse
    was unsure of its top document: the documents of that mode (and of the query's other likely
    modes, by how likely) among the first ``pool`` were moved up by up to ``weight`` of a first
    place (retrieval/hybrid.py). ``documents``: how many of the pool are of ``mode`` itself."""

    mode: str
    p: float  # the query's probability of ``mode``
    weight: float
    pool: int
    documents: int

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ModelFit:
    """Which confidence model scored a search: its verdict thresholds, held-out figures and
    the one line that says how the live model was fitted."""

    lo: float
    hi: float
    held_out: Any
    live: str
    # the shape of query (core/confidence.SHAPES) whose own thresholds lo and hi are; None:
    # the model's overall pair (it holds none for this query's shape)
    shape: str | None = None


@dataclass(frozen=True)
class Downweighted:
    """One query word weighed down as saying where an alert fired, not what failed, and why
    (``"service payments-api"``, ``"region us-east-1"``, ``"cloud"``, ``"environment"``,
    ``"alert word"``): retrieval/identity.py."""

    term: str
    weight: float
    why: str


@dataclass(frozen=True)
class QueryWeights:
    """Each query term's weight in the sparse query (terms not listed weigh 1), the words
    weighed down and why, the identity words kept at full weight because the query held
    nothing else, and the text the dense retriever embeds. ``alert``: what made the text
    alert-style (its metric names, its ``(cloud/region)``, a pager line's service head); empty
    for prose, whose words all weigh 1."""

    alert: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)
    downweighted: tuple[Downweighted, ...] = ()
    kept: tuple[Downweighted, ...] = ()
    dense_text: str = ""
    # whether the sparse ranking reads ``weights`` too (the coverage signals always do): not for
    # a pager line, whose service picks which document is nearest (a recurrence on the same
    # service reads better than the same symptom elsewhere) while the evidence alone decides
    # whether it is a precedent
    ranked: bool = True

    def of(self, term: str) -> float:
        return self.weights.get(term, 1.0)

    @property
    def ranking(self) -> dict[str, float]:
        """The weights the sparse ranking reads."""
        return self.weights if self.ranked else {}

    @property
    def shape(self) -> str:
        """The query's shape for the verdict's thresholds (core/confidence.SHAPES)."""
        return "alert" if self.alert else "prose"

    def as_dict(self) -> dict[str, Any]:
        return {
            "alert_style": list(self.alert),
            "downweighted": {d.term: {"weight": d.weight, "why": d.why} for d in self.downweighted},
            "kept_at_full_weight": {d.term: d.why for d in self.kept},
            "dense_text": self.dense_text,
            "ranking_reads_weights": self.ranked,
        }


@dataclass(frozen=True)
class SearchResult:
    """A ranked list of candidates for one query, with how it was scored.

    The hybrid retriever fills every field; the FTS path (``retrieval/sparse.py``) scores
    nothing and leaves ``gate`` None (``scored`` is False). Figures are rounded as reported:
    confidence and signals to 4 places, timings (ms) to 3."""

    query: str
    mode: str
    candidates: tuple[Candidate, ...]
    terms: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)  # per ranking fused
    rrf_k: int = 0
    sparse_unit: str | None = None  # None when the sparse half did not run
    gate: GateReport | None = None
    confidence: float = 0.0  # p_precedent: calibrated P(the top result is a precedent)
    confidence_label: str = ""
    novel: bool = False  # True exactly when the verdict is "no precedent"
    verdict: str = ""  # core.confidence.VERDICTS: found / possible — check / none
    signals: dict[str, float] = field(default_factory=dict)
    confidence_model: str | None = None  # the model's source
    recency: dict[str, float] = field(default_factory=dict)  # doc id -> boost, top k only
    timings: dict[str, float] = field(default_factory=dict)  # stage -> ms
    dense_embedder: str | None = None
    confidence_model_key: str | None = None
    confidence_model_fit: ModelFit | None = None
    # the documents the caller's filters leave (supersession as their tiers see it), and, when
    # nothing was found, which filter left nothing to search (None: the query matched nothing)
    documents_visible: int = 0
    empty_because: str | None = None
    query_weights: QueryWeights | None = None  # how the query's words were weighed (hybrid)
    mode_first: ModeFirst | None = None  # the query's failure mode moved its documents up

    @property
    def scored(self) -> bool:
        return self.gate is not None

    def explain(self) -> dict[str, Any]:
        """Everything but the candidates as plain JSON (``search --explain --json``)."""
        if self.gate is None:
            return {"terms": list(self.terms)}
        out: dict[str, Any] = {
            "terms": list(self.terms),
            "weights": dict(self.weights),
            "rrf_k": self.rrf_k,
            "sparse_unit": self.sparse_unit,
            "gate": self.gate.as_dict(),
            "confidence": self.confidence,
            "p_precedent": self.confidence,
            "confidence_label": self.confidence_label,
            "verdict": self.verdict,
            "novel": self.novel,
            "signals": dict(self.signals),
            "confidence_model": self.confidence_model,
            "recency": dict(self.recency),
            "timings": dict(self.timings),
            "dense_embedder": self.dense_embedder,
            "confidence_model_key": self.confidence_model_key,
        }
        if self.query_weights is not None:
            out["query_weights"] = self.query_weights.as_dict()
        out["mode_first"] = self.mode_first.as_dict() if self.mode_first is not None else None
        if self.confidence_model_fit is not None:
            fit = self.confidence_model_fit
            out["confidence_model_fit"] = {
                "lo": fit.lo,
                "hi": fit.hi,
                "thresholds_for": fit.shape or "every query",
                "held_out": fit.held_out,
                "live": fit.live,
            }
        return out


@dataclass(frozen=True)
class QuarantineEntry:
    """A document that failed validation, kept with its reason so nothing is lost silently."""

    id: int
    source: str
    reason: str
    doc_id: str | None
    content_hash: str
    first_seen: str
    last_seen: str
    attempts: int


@dataclass(frozen=True)
class StoredDocument:
    """A document as the store holds it (metadata and body), as shown by ``seenbefore show``."""

    postmortem: Postmortem
    effective_status: Status
    superseded_by: str | None
    chunk_count: int
    ingested_at: str
    updated_at: str


Severity = Literal["SEV1", "SEV2", "SEV3", "SEV4"]
SEVERITIES: tuple[Severity, ...] = ("SEV1", "SEV2", "SEV3", "SEV4")  # SEV1 is the worst


@dataclass(frozen=True)
class MetricDeviation:
    """One metric that deviated during an anomaly: which way, how far, against what baseline."""

    metric: str
    direction: Literal["up", "down"]
    value: float  # observed (peak) value in the window
    baseline: float  # expected value (seasonal profile / recent history)
    zscore: float  # deviation in robust standard deviations
    unit: str = ""

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")


@dataclass(frozen=True)
class Anomaly:
    """A detected anomaly: where, when, how strange, and which metrics deviated."""

    id: str
    service: str
    cloud: str
    region: str
    start: dt.datetime
    end: dt.datetime
    score: float  # detector score in [0, 1], higher is stranger
    deviations: tuple[MetricDeviation, ...] = ()
    normal: tuple[str, ...] = ()  # key metrics that stayed normal (worth saying)
    severity: Severity | None = None
    rules: tuple[str, ...] = ()  # names of rules that fired
    rules_severity: tuple[str, ...] = ()  # the severities those rules carry
    truth_kind: str | None = None  # ground truth from the simulator, when known

    @property
    def fingerprint(self) -> str:
        """Stable identity for dedupe: service plus the metrics that deviated and their direction."""
        parts = sorted(f"{d.metric}:{d.direction}" for d in self.deviations)
        return f"{self.service}|{','.join(parts)}"


def anomaly_to_dict(anomaly: Anomaly) -> dict[str, Any]:
    """An anomaly's one JSON form (``detect --json``, notifications, saved watch state)."""
    data = dataclasses.asdict(anomaly)
    data["start"] = anomaly.start.isoformat()
    data["end"] = anomaly.end.isoformat()
    return data


def anomaly_from_dict(data: dict[str, Any]) -> Anomaly:
    """The anomaly :func:`anomaly_to_dict` wrote. ValueError on an unknown severity."""
    severity = data.get("severity")
    if severity is not None and severity not in SEVERITIES:
        raise ValueError(f"anomaly severity is {severity!r}, expected one of {SEVERITIES} or null")
    return Anomaly(
        id=str(data["id"]),
        service=str(data["service"]),
        cloud=str(data["cloud"]),
        region=str(data["region"]),
        start=dt.datetime.fromisoformat(data["start"]),
        end=dt.datetime.fromisoformat(data["end"]),
        score=float(data["score"]),
        deviations=tuple(MetricDeviation(**d) for d in data.get("deviations", ())),
        normal=tuple(data.get("normal", ())),
        severity=cast(Severity | None, severity),
        rules=tuple(data.get("rules", ())),
        rules_severity=tuple(data.get("rules_severity", ())),
        truth_kind=data.get("truth_kind"),
    )
