"""The MCP tools' contract, as data: each tool's arguments as a pydantic model (bounds, enums,
dates; an argument it does not know is refused, never dropped), its description and its
annotations. ``mcp/server.py`` serves exactly this; the stdio front lists it from
``handshake.json``, which is recorded from that server (``mcp/stdio.py``).

No MCP SDK import here: the schemas are pydantic's, the same JSON Schema whichever door serves
them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seenbefore.errors import InputError
from seenbefore.limits import MAX_K, MAX_QUERY_CHARS, MAX_SERVICES, check_filters
from seenbefore.types import SearchFilters

MAX_ID_CHARS = 200
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
    since: Annotated[
        dt.date | None, Field(description="only incidents on or after (YYYY-MM-DD)")
    ] = None
    until: Annotated[
        dt.date | None, Field(description="only incidents on or before (YYYY-MM-DD)")
    ] = None

    @model_validator(mode="after")
    def _dates_in_order(self) -> FindSimilarIncidents:
        try:
            check_filters(SearchFilters(date_from=self.since, date_to=self.until))
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return self


class Investigate(Arguments):
    text: Text
    services: Services = []
    k: Annotated[int, Field(ge=1, le=MAX_K, description="precedents to gather")] = 3


class GetPostmortem(Arguments):
    doc_id: Annotated[
        str,
        Field(min_length=1, max_length=MAX_ID_CHARS, description="a postmortem id (INC-2021-001)"),
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
    read_only: bool
    idempotent: bool

    def input_schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema()

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
            "Past postmortems that resemble an incident, best first, each with how it matched "
            "(keywords, meaning, recorded signals); p_precedent, the calibrated probability "
            "that the top one is a precedent, and the verdict derived from it alone: 'precedent "
            "found', 'possible precedent — check' or 'no precedent'.",
            FindSimilarIncidents,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "investigate",
            "Draft a root-cause hypothesis",
            "A cited, advisory root-cause hypothesis drafted from the closest precedents (or a "
            "plain 'no precedent'), with mitigations used before and checks to run. Not queued.",
            Investigate,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "get_postmortem",
            "Read one postmortem",
            "One postmortem by id (e.g. INC-2021-001): metadata, sections and body.",
            GetPostmortem,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "submit_for_review",
            "Queue a draft for a person",
            "Start an investigation whose draft waits in the review queue for a person to "
            "approve (it then becomes a postmortem) or dismiss. Needs role responder; never "
            "approves.",
            SubmitForReview,
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
