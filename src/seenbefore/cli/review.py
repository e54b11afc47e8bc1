"""`seenbefore review`: the review queue from the terminal (start, list, show, approve, dismiss).

The person at the terminal acts as ``local:<user>`` with the tiers given by ``--tier`` (default
``SEENBEFORE_TIERS``); every decision is audited.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from seenbefore.cli.common import caller_tiers, console, open_kb, print_json, settings
from seenbefore.cli.investigate import render_draft, requests_from
from seenbefore.cli.search import TierOption
from seenbefore.cli.security import record_local
from seenbefore.errors import InputError
from seenbefore.extras import requires
from seenbefore.investigation.reporter import Draft
from seenbefore.knowledge.failure_taxonomy import taxonomy
from seenbefore.limits import check_range
from seenbefore.review import account
from seenbefore.review.models import DismissReason, DraftEdits, Review
from seenbefore.security.tokens import Principal, local_principal

if TYPE_CHECKING:
    from seenbefore.review.workflow import ReviewWorkflow

review_app = typer.Typer(
    help="Review drafts: approve one into the knowledge base, or dismiss it with a reason.",
    no_args_is_help=True,
)
JsonOption = Annotated[bool, typer.Option("--json")]
MAX_LISTED = 1000  # reviews `review list` prints at most
QUERY_SHOWN = 160  # characters of a review's alert or note in `review list`
ACCOUNT_OPTIONS = {
    "root_cause": "--root-cause (what it was)",
    "resolution": "--resolution (what fixed it)",
    "type": "--type (the failure mode, e.g. connection-pool-exhaustion; a new one is allowed)",
}
ACCOUNT_PROMPTS = {
    "root_cause": "root cause (what was it?)",
    "resolution": "what fixed it?",
    "type": "type (failure mode)",
}


@contextmanager
def _workflow(tier: list[str] | None) -> Iterator[tuple[ReviewWorkflow, Principal]]:
    with requires("server", "the review workflow (LangGraph)"):
        from seenbefore.review.workflow import ReviewWorkflow
    cfg = settings()
    principal = local_principal(caller_tiers(tier, cfg))
    with open_kb(cfg) as kb, ReviewWorkflow(kb, cfg) as workflow:
        yield workflow, principal


def _audit(workflow: ReviewWorkflow, principal: Principal, action: str, review: Review) -> None:
    candidates = review.evidence.get("candidates") or []
    record_local(
        workflow.kb.store,
        action,
        principal.tiers,
        draft_id=review.id,
        decision=review.outcome or review.status,
        doc_ids=[c["doc_id"] for c in candidates],
        tiers=review.tiers,
        detail={"round": review.round, "postmortem_id": review.postmortem_id},
    )


def _summary(review: Review) -> None:
    state = review.status if review.status != "pending" else f"pending, round {review.round}"
    if review.outcome and review.outcome != review.status:  # not "approved (approved)"
        state += f" ({review.outcome})"
    console.print(
        f"[bold]{review.id}[/] {state}; tier {review.access_tier}; severity "
        f"{escape(review.severity or '-')}; requested by {escape(review.requested_by)}"
        + (f"; postmortem {review.postmortem_id}" if review.postmortem_id else "")
        + (f"; excluded {', '.join(review.excluded_doc_ids)}" if review.excluded_doc_ids else "")
    )


@review_app.command("start")
def start(
    text: Annotated[str | None, typer.Argument(help="alert text or on-call note")] = None,
    alert: Annotated[Path | None, typer.Option(help="Alertmanager webhook JSON")] = None,
    anomaly: Annotated[Path | None, typer.Option(help="anomaly JSON record")] = None,
    severity: Annotated[str | None, typer.Option(help="e.g. SEV2; orders the queue")] = None,
    k: Annotated[int, typer.Option("-k", help="precedents to gather")] = 3,
    tier: TierOption = None,
    as_json: JsonOption = False,
) -> None:
    """Investigate and draft; the draft then waits in the queue for a decision."""
    requests = requests_from(text, alert, anomaly)
    with _workflow(tier) as (workflow, principal):
        reviews = []
        for request in requests:
            key = None
            if request.fingerprint and request.started_at:
                key = f"{request.fingerprint}:{request.started_at.isoformat()}"
            review = workflow.start(
                request, principal=principal, severity=severity, source_key=key, k=k
            )
            _audit(workflow, principal, "review.start", review)
            reviews.append(review)
    if as_json:
        print_json({"reviews": [r.model_dump(mode="json") for r in reviews]})
        return
    for review in reviews:
        _summary(review)
        if review.draft:
            render_draft(Draft.model_validate(review.draft))


@review_app.command("list")
def list_reviews(
    status: Annotated[str, typer.Option(help="pending, approved, closed or all")] = "pending",
    limit: Annotated[int, typer.Option(help=f"at most this many, 1 to {MAX_LISTED:,}")] = 50,
    tier: TierOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reviews visible to your tiers, most severe first."""
    check_range("--limit", limit, 1, MAX_LISTED, what="a number of reviews")
    with _workflow(tier) as (workflow, principal):
        reviews = workflow.list(
            tiers=principal.tiers, status=None if status == "all" else status, limit=limit
        )
    if as_json:
        print_json({"reviews": [r.model_dump(mode="json") for r in reviews]})
        return
    # the id whole (it is what `review show` takes), and the rest in one column: a line of
    # facts, then the draft's summary wrapped in the width left (seven columns at 80 gave the
    # summary a few letters a line and cut the id to "rev-d0d49…")
    table = Table(title=f"reviews ({status}): {len(reviews)}")
    table.add_column("id", no_wrap=True, min_width=max((len(r.id) for r in reviews), default=2))
    table.add_column("severity · status · round · tier · p; the alert; the draft")
    for r in reviews:
        facts = " · ".join(
            (
                r.severity or "-",
                r.status + (f" ({r.outcome})" if r.outcome not in (None, r.status) else ""),
                f"round {r.round}",
                r.access_tier,
                f"p {r.draft['confidence']:.2f}" if "confidence" in r.draft else "p -",
            )
        )
        # what it is about, as the web queue shows it: every "no precedent" draft's summary
        # is the same sentence, so the rows could not be told apart
        asked = " ".join(str(r.request.get("display") or r.request.get("query") or "").split())
        about = f"\n{asked[:QUERY_SHOWN]}{'…' if len(asked) > QUERY_SHOWN else ''}" if asked else ""
        summary = r.draft.get("summary", "(drafting)")
        table.add_row(r.id, escape(f"{facts}{about}\n{summary}"))
    console.print(table)


@review_app.command("show")
def show(
    review_id: Annotated[str, typer.Argument(help="review id, e.g. rev-1a2b3c4d5e6f")],
    tier: TierOption = None,
    as_json: JsonOption = False,
) -> None:
    """One review: its current draft, evidence and history."""
    with _workflow(tier) as (workflow, principal):
        review = workflow.get(review_id, tiers=principal.tiers)
    if as_json:
        print_json({"review": review.model_dump(mode="json")})
        return
    _summary(review)
    if review.draft:
        render_draft(Draft.model_validate(review.draft))
    # the time whole and the rest wrapped between words (six columns at 80 cut the time and
    # the actor: "service:alertmanag…")
    table = Table(title="history")
    table.add_column("at", no_wrap=True)
    table.add_column("round", justify="right")
    table.add_column("who · what; reason, note")
    for e in review.history:
        why = "; ".join(x for x in (e.reason or "", e.note or "") if x)
        what = f"{e.actor} · {e.action}" + (f"\n{why}" if why else "")
        table.add_row(e.at[:19].replace("T", " "), str(e.round), escape(what))
    console.print(table)


@review_app.command("approve")
def approve(
    review_id: Annotated[str, typer.Argument(help="review id")],
    title: Annotated[str | None, typer.Option(help="replace the postmortem's title")] = None,
    summary: Annotated[str | None, typer.Option(help="replace the summary")] = None,
    hypothesis: Annotated[str | None, typer.Option(help="replace the hypothesis")] = None,
    root_cause: Annotated[str | None, typer.Option(help="the confirmed root cause")] = None,
    resolution: Annotated[str | None, typer.Option(help="what resolved it")] = None,
    failure_type: Annotated[
        str | None,
        typer.Option("--type", help="the failure mode, e.g. connection-pool-exhaustion"),
    ] = None,
    tier: TierOption = None,
    as_json: JsonOption = False,
) -> None:
    """Approve the draft (optionally edited): it becomes a postmortem in the knowledge base.

    A "no precedent" draft, or one whose precedent was dismissed before, needs --root-cause,
    --resolution and --type (asked for at a terminal): only what a person writes is stored."""
    edits = DraftEdits(
        title=title,
        summary=summary,
        hypothesis=hypothesis,
        root_cause=root_cause,
        resolution=resolution,
        type=failure_type,
    )
    with _workflow(tier) as (workflow, principal):
        current = workflow.get(review_id, tiers=principal.tiers)
        why = account.reason(current)
        if why is not None:
            edits = account.check(current, _ask(why, edits), names=ACCOUNT_OPTIONS) or edits
        given = edits if any(v is not None for v in edits.model_dump().values()) else None
        review = workflow.approve(review_id, reviewer=principal, edits=given)
        _audit(workflow, principal, "review.approve", review)
    if as_json:
        print_json({"review": review.model_dump(mode="json")})
        return
    _summary(review)
    console.print(f"approved: postmortem {review.postmortem_id} is in the knowledge base")


def _interactive() -> bool:
    return sys.stdin.isatty()


def _ask(why: str, edits: DraftEdits) -> DraftEdits:
    """At a terminal, ask for each part of the account not given as an option."""
    missing = [f for f in account.ACCOUNT_FIELDS if not (getattr(edits, f) or "").strip()]
    if not missing or not _interactive():
        return edits
    console.print(f"This draft cannot be approved as drafted: {why}. Write what happened:")
    if "type" in missing:
        console.print("known types: " + ", ".join(taxonomy().slugs), highlight=False)
    answers = {f: typer.prompt(ACCOUNT_PROMPTS[f]) for f in missing}
    return edits.model_copy(update=answers)


@review_app.command("dismiss")
def dismiss(
    review_id: Annotated[str, typer.Argument(help="review id")],
    reason: Annotated[
        str, typer.Option(help=", ".join(r.value for r in DismissReason), show_default=False)
    ],
    note: Annotated[str, typer.Option(help="what the draft missed (added to the query)")] = "",
    tier: TierOption = None,
    as_json: JsonOption = False,
) -> None:
    """Dismiss the draft: re-investigate without the dismissed precedent, or close it."""
    if reason not in {r.value for r in DismissReason}:
        allowed = ", ".join(r.value for r in DismissReason)
        raise InputError(f"--reason is {reason!r}, expected one of {allowed}")
    with _workflow(tier) as (workflow, principal):
        review = workflow.dismiss(review_id, reviewer=principal, reason=reason, note=note)
        _audit(workflow, principal, "review.dismiss", review)
    if as_json:
        print_json({"review": review.model_dump(mode="json")})
        return
    _summary(review)
    if review.status == "pending" and review.draft:
        console.print(f"re-investigated: round {review.round}")
        render_draft(Draft.model_validate(review.draft))
    else:
        console.print(f"closed: {review.outcome}")
