"""The MCP prompts: ``incident-triage``, how an agent should use the tools on an alert."""

from __future__ import annotations

import mcp_types as types

from seenbefore.limits import MAX_QUERY_CHARS

TRIAGE_NAME = "incident-triage"

TRIAGE = types.Prompt(
    name=TRIAGE_NAME,
    title="Triage an alert against past incidents",
    description="How to use the incident memory on an alert: search, weigh the verdict, read "
    "the precedent's root cause and fix, and hand a draft to a person.",
    arguments=[
        types.PromptArgument(
            name="alert", description="the alert text, symptoms and numbers", required=True
        ),
        types.PromptArgument(
            name="services", description="affected services, comma-separated", required=False
        ),
    ],
)

STEPS = """You are triaging an alert with seenbefore, an incident memory of past postmortems. \
Everything it says is advisory: a person decides, and none of these tools changes \
infrastructure.

1. Call find_similar_incidents with the alert text as query{services_hint} (k 5 is enough).
2. Read verdict, p_precedent and thresholds before anything else:
   - "precedent found": the top hit very likely is a precedent.
   - "possible precedent — check": read the top hits before relying on them.
   - "no precedent": likely new; glance at the top hits' titles before ruling one out, and \
do not force a match.
3. For the hits worth reading, call get_postmortem with sections ["detection", "root_cause", \
"resolution"] and compare their detection with what the alert shows. similarity is relative \
to the top hit, not a probability; matched_by says which retrievers ranked the hit within the \
cut.
4. find_related on the best precedent finds its siblings (the same failure elsewhere); \
list_postmortems filters by service, type and dates.
5. Summarise for the responder: the likely precedent(s) with their ids and links, what caused \
them, what fixed them, what to check first, and what you are unsure of. Cite ids; never \
invent one.
6. If a person should review a hypothesis, call submit_for_review (then get_review). Once the \
responder knows whether the top hit was the precedent, call record_feedback with the same \
query: it calibrates p_precedent.

The alert:
{alert}"""


def get(name: str, arguments: dict[str, str]) -> types.GetPromptResult:
    """The prompt ``name`` filled in; ValueError for an unknown name or a missing alert."""
    if name != TRIAGE_NAME:
        raise ValueError(f"no prompt {name!r}; the prompts are {TRIAGE_NAME}")
    alert = (arguments.get("alert") or "").strip()
    if not alert:
        raise ValueError("alert: give the alert text (symptoms, services, numbers)")
    if len(alert) > MAX_QUERY_CHARS:
        raise ValueError(f"alert: at most {MAX_QUERY_CHARS} characters")
    services = (arguments.get("services") or "").strip()
    hint = f" and services [{services}]" if services else ""
    text = STEPS.format(services_hint=hint, alert=alert)
    return types.GetPromptResult(
        description=TRIAGE.description,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )
