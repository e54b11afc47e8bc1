"""The MCP tools' contract, as data: each tool's arguments as a pydantic model (bounds, enums,
dates; an argument it does not know is refused, never dropped), its description and its
annotations. ``mcp/server.py`` serves exactly this; the stdio front lists it from
``handshake.json``, which is recorded from that server (``mcp/stdio.py``).

No MCP SDK import here: the schemas are pydantic's, the same JSON Schema whichever door serves
them. Each tool's result is a model of ``mcp/outputs.py``, advertised as its ``outputSchema``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seenbefore.errors import InputError
from seenbefore.limits import MAX_K, MAX_QUERY_CHARS, MAX_SERVICES, check_filters
from seenbefore.mcp import outputs
from seenbefore.types import SearchFilters

MAX_ID_CHARS = 200
MAX_PAGE = 100
MAX_CURSOR_CHARS = 400
DocId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ID_CHARS, description="a postmortem id (INC-2021-001)"),
]
SectionKey = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")]
Since = Annotated[dt.date | None, Field(description="only incidents on or after (YYYY-MM-DD)")]
Until = Annotated[dt.date | None, Field(description="only incidents on or before (YYYY-MM-DD)")]
Service = Annotated[str, Field(min_length=1, max_length=200)]
Services = Annotated[
    list[Service],
    Field(
        max_length=MAX_SERVICES,
        description=f"only postmortems of these services (at most {MAX_SERVICES})",
    ),
]
Text = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="what is happening now: alert text, symptoms, services, numbers",
    ),
]


class Arguments(BaseModel):
    """A tool's arguments: unknown names are an error, so a misspelt option is never ignored."""

    model_config = ConfigDict(extra="forbid")


class FindSimilarIncidents(Arguments):
    query: Text
    k: Annotated[int, Field(ge=1, le=MAX_K, description="postmortems to return")] = 5
    services: Services = []
    since: Since = None
    until: Until = None

    @model_validator(mode="after")
    def _dates_in_order(self) -> FindSimilarIncidents:
        _check_dates(self.since, self.until)
        return self


def _check_dates(since: dt.date | None, until: dt.date | None) -> None:
    try:
        check_filters(SearchFilters(date_from=since, date_to=until))
    except InputError as exc:
        raise ValueError(str(exc)) from None


class Investigate(Arguments):
    text: Text
    services: Services = []
    k: Annotated[int, Field(ge=1, le=MAX_K, description="precedents to gather")] = 3


class GetPostmortem(Arguments):
    doc_id: DocId
    sections: Annotated[
        list[SectionKey],
        Field(
            max_length=20,
            description="section keys to return (summary, impact, detection, timeline, "
            "root_cause, resolution, action_items, lessons, or the postmortem's own); "
            "empty: every section",
        ),
    ] = []


class ListPostmortems(Arguments):
    service: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    type: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=200,
            description="failure mode slug (dns-failure, credential-rotation, …; aliases such as "
            "dns accepted): the author's type, or one inferred from the text with p >= 0.5",
        ),
    ] = None
    since: Since = None
    until: Until = None
    cursor: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MAX_CURSOR_CHARS,
            description="next_cursor of the previous page, with the same filters",
        ),
    ] = None
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="postmortems per page")] = 20

    @model_validator(mode="after")
    def _dates_in_order(self) -> ListPostmortems:
        _check_dates(self.since, self.until)
        return self


class FindRelated(Arguments):
    doc_id: DocId
    k: Annotated[int, Field(ge=1, le=MAX_K, description="postmortems to return")] = 5


class GetReview(Arguments):
    review_id: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_ID_CHARS,
            description="a review (= investigation) id, as submit_for_review returns",
        ),
    ]


class RecordFeedback(Arguments):
    query: Text
    doc_id: DocId
    helpful: Annotated[
        bool, Field(description="whether doc_id was the precedent of what the query describes")
    ]


class SubmitForReview(Arguments):
    text: Text
    services: Services = []
    severity: Annotated[
        Literal["SEV1", "SEV2", "SEV3", "SEV4"] | None,
        Field(description="the incident's severity, SEV1 (worst) to SEV4"),
    ] = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    arguments: type[Arguments]
    output: type[outputs.Output]
    read_only: bool
    idempotent: bool

    def input_schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema()

    def output_schema(self) -> dict[str, Any]:
        return self.output.model_json_schema(mode="serialization")

    def annotations(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": False,  # nothing here deletes, or touches infrastructure
            "idempotentHint": self.idempotent,
            "openWorldHint": False,  # only the knowledge base
        }


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "find_similar_incidents",
            "Find similar past incidents",
            "Past postmortems that resemble what is happening now, best first: per hit its id, "
            "date, services, type (the author's; failure_mode when inferred instead), link, "
            "similarity (0-1, relative to the top hit), the "
            "retrievers that ranked it within the k returned, a snippet and root-cause and "
            "resolution excerpts. The verdict ('precedent found', 'possible precedent — check' "
            "or 'no precedent') comes from p_precedent, the calibrated probability that the top "
            "hit is a precedent, through the thresholds shown.",
            FindSimilarIncidents,
            outputs.SimilarIncidents,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "investigate",
            "Draft a root-cause hypothesis",
            "A cited, advisory root-cause hypothesis drafted from the closest precedents (or a "
            "plain 'no precedent'), with the mitigations used before and checks to run. It is "
            "returned, not queued: submit_for_review queues one for a person.",
            Investigate,
            outputs.Draft,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "get_postmortem",
            "Read one postmortem",
            "One postmortem by id (e.g. INC-2021-001): its metadata and its sections, or only "
            "the sections named in 'sections' (root_cause and resolution, say).",
            GetPostmortem,
            outputs.Postmortem,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "list_postmortems",
            "List postmortems",
            "The postmortems the caller may read, newest first, filtered by service, type and "
            "date range, a page at a time: pass next_cursor back as cursor for the next page.",
            ListPostmortems,
            outputs.PostmortemList,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "find_related",
            "Find postmortems related to one",
            "Postmortems that resemble a given one (searched by its title and summary), best "
            "first, the postmortem itself left out; each hit as find_similar_incidents gives it.",
            FindRelated,
            outputs.Related,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "submit_for_review",
            "Queue a draft for a person",
            "Start an investigation whose draft waits in the review queue for a person to "
            "approve (it then becomes a postmortem) or dismiss. Needs role responder; it never "
            "approves. get_review follows it.",
            SubmitForReview,
            outputs.Queued,
            read_only=False,
            idempotent=False,
        ),
        ToolSpec(
            "get_review",
            "Read one review",
            "One review (an investigation queued for a person) by id: its status and outcome, "
            "its current draft, the postmortems it cites, and its history of decisions.",
            GetReview,
            outputs.Review,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "record_feedback",
            "Say whether a result was the precedent",
            "Tell the incident memory whether doc_id was the precedent for query: the query is "
            "searched again and a calibration label is recorded for its top result (1 when "
            "doc_id is the top and helpful, 0 when the top was not the precedent), which the "
            "next refit of p_precedent learns from. The answer says what was recorded. Needs "
            "role responder.",
            RecordFeedback,
            outputs.Feedback,
            read_only=False,
            idempotent=False,
        ),
    )
}


def problem(spec: ToolSpec, exc: ValidationError) -> str:
    """A tool's argument errors as ``field: message`` (no pydantic internals or links)."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "extra_forbidden":
            known = ", ".join(spec.arguments.model_fields)
            message = f"not an argument of {spec.name} (its arguments: {known})"
        lines.append(f"{where}: {message}")
    return "; ".join(lines)
