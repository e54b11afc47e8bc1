"""What each MCP tool returns, as pydantic models: a tool's ``outputSchema`` in ``tools/list`` is
its model's JSON Schema, and its ``structuredContent`` is an instance of it (extra fields are
refused, so the schema is closed and an agent may rely on it). ``mcp/shaping.py`` builds them."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["precedent found", "possible precedent — check", "no precedent"]
Retriever = Literal["sparse", "dense", "signals"]
Link = Annotated[
    str | None,
    Field(description="where to read it over HTTP (null unless SEENBEFORE_PUBLIC_URL is set)"),
]
Truncated = Annotated[
    str | None,
    Field(description="null, or what was cut to keep the answer under the response byte cap"),
]


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Thresholds(Output):
    lo: float = Field(description="'no precedent' at p_precedent <= lo")
    hi: float = Field(description="'precedent found' at p_precedent >= hi")


class FailureMode(Output):
    """The author's type, or the failure mode inferred from the text (marked inferred)."""

    slug: str = Field(description="a failure mode slug (docs/postmortem-format.md)")
    inferred: bool = Field(description="false: the author's type; true: inferred from the text")
    p: float = Field(ge=0.0, le=1.0, description="1.0 for the author's type; else P(slug | text)")
    known: bool = Field(
        description="the author's type, or inferred with p >= 0.5; else the mode is unknown and "
        "slug is only the nearest guess"
    )


FailureModeField = Annotated[
    FailureMode | None,
    Field(
        description="present only where the author wrote no type: the failure mode inferred "
        "from the text (known: p >= 0.5; else unknown, and slug is only the nearest guess)",
        # left out of the JSON where the author's type stands, so ten typed hits cost no bytes
        # (exclude_if: pydantic >= 2.12, which the mcp package requires)
        exclude_if=lambda mode: mode is None,
    ),
]


class Hit(Output):
    rank: int = Field(ge=1)
    id: str
    title: str
    date: dt.date | None
    services: list[str]
    type: str = Field(description="the author's type, as written ('' when none)")
    failure_mode: FailureModeField = None
    status: str = Field(description="current or superseded")
    superseded_by: str | None = None
    link: Link = None
    similarity: float = Field(
        ge=0.0,
        le=1.0,
        description="the fused (reciprocal-rank) score divided by the top result's: 1.0 for the "
        "first, a relative closeness, not a probability (p_precedent is the probability)",
    )
    matched_by: list[Retriever] = Field(
        description="retrievers that ranked it within the k returned (keywords: sparse, "
        "meaning: dense, recorded signals: signals); empty when it rose by fusion alone"
    )
    ranks: dict[str, int] = Field(description="its rank in each retriever that found it")
    snippet: str = Field(description="from the matched section, detection or root cause")
    snippet_section: str
    root_cause: str | None = Field(description="the root-cause section's opening (<= 300 chars)")
    resolution: str | None = Field(description="the resolution section's opening (<= 300 chars)")


class SimilarIncidents(Output):
    verdict: Verdict | None = Field(
        description="from p_precedent alone: 'precedent found' at >= thresholds.hi, 'no "
        "precedent' at <= thresholds.lo, 'possible precedent — check' in between"
    )
    p_precedent: float | None = Field(
        description="calibrated probability that the top result is a precedent"
    )
    thresholds: Thresholds | None
    another_failure: str | None = Field(
        default=None,
        description="when the verdict is not 'precedent found' and the query plainly names a "
        "failure mode the first postmortem is known not to be: that, in words (else null)",
    )
    results: list[Hit]
    returned: int = Field(description="results here")
    found: int = Field(description="results the search returned, before any truncation")
    empty_because: str | None = Field(
        default=None, description="with no results: which filter left nothing to search"
    )
    truncated: Truncated = None
    advisory: str


class Related(Output):
    related_to: str = Field(description="the postmortem these resemble (never among them)")
    results: list[Hit]
    returned: int
    found: int
    truncated: Truncated = None


class Section(Output):
    key: str = Field(description="canonical key: summary, detection, root_cause, resolution, …")
    heading: str
    text: str


class PostmortemMeta(Output):
    id: str
    title: str
    date: dt.date | None
    services: list[str]
    severity: str
    type: str = Field(description="the author's type, as written ('' when none)")
    failure_mode: FailureModeField = None
    status: str = Field(description="current or superseded (as the caller sees it)")
    link: Link = None


class Postmortem(PostmortemMeta):
    supersedes: str | None
    superseded_by: str | None
    access_tier: str
    tags: list[str]
    signals: list[str]
    section_keys: list[str] = Field(description="every section the postmortem has, in order")
    sections: list[Section] = Field(description="the sections asked for (all by default)")
    absent_sections: list[str] = Field(description="asked for, but the postmortem has none")
    truncated: Truncated = None


class PostmortemList(Output):
    postmortems: list[PostmortemMeta] = Field(description="newest first, then by id")
    total: int = Field(description="postmortems that match the filters, over all pages")
    next_cursor: str | None = Field(
        description="pass as cursor for the next page; null on the last page"
    )


class WithheldText(Output):
    """Text kept out of the draft because the prompt-injection scanner flagged it."""

    doc_id: str | None = Field(description="the postmortem it came from; null: the model's own")
    section: str = Field(description="title, detection, root_cause or resolution (or a field)")
    kinds: list[str] = Field(description="the scanner's finding kinds")
    origin: Literal["evidence", "model"] = "evidence"
    note: str = Field(description="one line for people: what was withheld and why")


class Draft(Output):
    summary: str
    hypothesis: str
    cited_incidents: list[str]
    suggested_checks: list[str]
    mitigations: list[str]
    p_precedent: float = Field(description="calibrated probability the top precedent is one")
    verdict: str
    novel: bool = Field(description="true exactly when the verdict is 'no precedent'")
    missing_information: list[str]
    staleness_note: str | None
    withheld: list[WithheldText] = Field(
        description="text kept out of the draft (prompt-injection flags): where and why"
    )
    drafted_by: str
    advisory: str


class Queued(Output):
    review_id: str
    status: str
    link: Link = None
    draft: Draft | None
    note: str


class ReviewEvent(Output):
    at: str
    actor: str
    action: str
    round: int
    reason: str | None


class Review(Output):
    id: str
    status: Literal["pending", "approved", "closed"]
    outcome: str | None
    round: int
    severity: str | None
    requested_by: str
    created_at: str
    updated_at: str
    query: str
    link: Link = None
    awaiting_decision: bool
    draft: Draft | None
    evidence: list[str] = Field(description="the postmortems its current round cites, best first")
    postmortem_id: str | None = Field(description="the postmortem an approval wrote")
    history: list[ReviewEvent]


class Feedback(Output):
    recorded: bool = Field(description="whether a calibration label was written")
    label: Literal[0, 1] | None = Field(
        description="for the query's TOP result: 1 it was the precedent, 0 it was not"
    )
    top: str | None = Field(description="the query's top result now")
    doc_id: str
    review_id: str | None = Field(description="the closed 'feedback' review holding the label")
    note: str
