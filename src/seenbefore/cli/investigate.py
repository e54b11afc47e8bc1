"""`seenbefore investigate`: from text, an Alertmanager webhook or an anomaly to a draft."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel

from seenbefore.cli.common import caller_tiers, console, open_kb, print_json, settings
from seenbefore.cli.search import TierOption
from seenbefore.cli.security import record_local
from seenbefore.core.confidence import FOUND, NONE, verdict_of
from seenbefore.errors import InputError
from seenbefore.investigation.factory import make_reporter, make_rewriter
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import (
    InvestigationRequest,
    from_alertmanager,
    from_anomaly,
    from_text,
)
from seenbefore.investigation.reporter import Draft
from seenbefore.limits import check_k, check_query
from seenbefore.parsing import load_json
from seenbefore.security.alert_caps import cap_webhook

__all__ = ["investigate", "make_reporter", "make_rewriter", "render_draft", "requests_from"]


def _check_webhook(path: Path, payload: Any) -> None:
    """The shape from_alertmanager relies on: alerts is a list of objects whose labels and
    annotations are objects of plain values (the API checks the same with its pydantic model)."""
    alerts = payload.get("alerts") if isinstance(payload, dict) else None
    if not isinstance(alerts, list):
        raise InputError(
            f"{path}: not an Alertmanager webhook: expected a JSON object whose 'alerts' is a "
            "list (the body Alertmanager POSTs, version 4)"
        )
    for index, alert in enumerate(alerts):
        if not isinstance(alert, dict):
            raise InputError(f"{path}: alerts[{index}] is not an object")
        for key in ("labels", "annotations"):
            value = alert.get(key)
            if value is None:
                continue
            if not isinstance(value, dict) or any(
                isinstance(v, dict | list) for v in value.values()
            ):
                raise InputError(
                    f"{path}: alerts[{index}].{key} must be an object of text values, "
                    'e.g. {"service": "checkout-api"}'
                )


def requests_from(
    text: str | None, alert: Path | None, anomaly: Path | None
) -> list[InvestigationRequest]:
    given = [x for x in (text, alert, anomaly) if x]
    if len(given) != 1:
        raise InputError("give exactly one of: TEXT, --alert FILE, --anomaly FILE")
    if text:
        check_query(text)
        return [from_text(text)]
    if alert:
        payload = load_json(alert, what="Alertmanager webhook JSON")
        _check_webhook(alert, payload)
        try:
            found = from_alertmanager(cap_webhook(payload)[0])  # the service's caps
        except InputError as exc:
            raise InputError(f"{alert}: {exc}") from None
        if not found:
            raise InputError(f"{alert}: no firing alerts to investigate")
        return found
    from seenbefore.types import anomaly_from_dict

    record = load_json(anomaly, what="anomaly JSON")  # type: ignore[arg-type]
    if not isinstance(record, dict):
        raise InputError(
            f"{anomaly}: not an anomaly record: expected a JSON object as `detect --json` "
            "writes for each anomaly"
        )
    from pydantic import ValidationError

    from seenbefore.service.models import AnomalyIn  # the API's check, so both doors agree

    try:
        checked = AnomalyIn.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the record"
        raise InputError(
            f"{anomaly}: not an anomaly record: {where}: {first['msg']} "
            f"({len(exc.errors())} problem(s)); give one anomaly object as `detect --json` "
            "writes it"
        ) from None
    return [from_anomaly(anomaly_from_dict(checked.model_dump(mode="json")))]


def _evidence_line(trace: dict[str, Any]) -> str:
    """Which retrievers found each candidate, at which rank: the evidence behind the draft."""
    parts = []
    for c in trace.get("candidates", [])[:3]:
        ranks = ", ".join(
            f"{name} #{hit['rank']}" for name, hit in (c.get("retrievers") or {}).items()
        )
        parts.append(f"{c['id']} ({ranks or c.get('matched_by', '?')})")
    return " · ".join(parts)


def render_draft(draft: Draft) -> None:
    verdict = verdict_of(draft.model_dump())
    style = {NONE: "red", FOUND: "green"}.get(verdict, "yellow")
    body = [f"[bold]{escape(draft.summary)}[/]", "", escape(draft.hypothesis)]
    if draft.withheld:  # flagged as possible prompt injection: not quoted, said so
        body += [""] + [f"[yellow]⚠ {escape(w.note)}[/]" for w in draft.withheld]
    if draft.mitigations:
        body += ["", "[bold]mitigations used before[/]"] + [
            f"- {escape(m)}" for m in draft.mitigations
        ]
    if draft.suggested_checks:
        body += ["", "[bold]checks[/]"] + [f"- {escape(c)}" for c in draft.suggested_checks]
    if draft.missing_information:
        body += ["", "[bold]missing to confirm[/]"] + [
            f"- {escape(m)}" for m in draft.missing_information
        ]
    if draft.staleness_note:
        body += ["", f"[yellow]{escape(draft.staleness_note)}[/]"]
    evidence = _evidence_line(draft.retrieval_trace)
    if evidence:
        body += ["", f"[dim]evidence: {escape(evidence)}[/]"]
    body += [
        "",
        f"[dim]cited: {', '.join(draft.cited_incidents) or '-'}; "
        f"p_precedent {draft.confidence:.2f} ({verdict}); {escape(draft.drafted_by)}. "
        f"{escape(draft.advisory)}[/]",
    ]
    console.print(
        Panel(
            "\n".join(body),
            border_style=style,
            title=verdict,
        )
    )


def investigate(
    text: Annotated[str | None, typer.Argument(help="alert text or on-call note")] = None,
    alert: Annotated[
        Path | None, typer.Option(help="Alertmanager webhook JSON (version 4)")
    ] = None,
    anomaly: Annotated[Path | None, typer.Option(help="anomaly JSON record")] = None,
    k: Annotated[int, typer.Option("-k", help="precedents to gather")] = 3,
    tier: TierOption = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Draft a cited, advisory root-cause hypothesis from past postmortems."""
    check_k(k)
    requests = requests_from(text, alert, anomaly)
    cfg = settings()
    with open_kb(cfg) as kb:
        tiers = caller_tiers(tier, cfg)
        investigator = Investigator(kb, tiers=tiers, k=k, rewriter=make_rewriter(cfg))
        reporter = make_reporter(cfg)
        drafts: list[Draft] = []
        try:
            for request in requests:
                evidence = investigator.investigate(request)
                drafts.append(reporter.draft(evidence))
                record_local(
                    kb.store,
                    "investigate",
                    tiers,
                    query=request.query,
                    doc_ids=[i.doc_id for i in evidence.items],
                    tiers=[i.access_tier for i in evidence.items],
                    detail={
                        "cited": list(drafts[-1].cited_incidents),
                        "novel": drafts[-1].novel,
                        "confidence": round(drafts[-1].confidence, 4),
                    },
                )
        finally:
            close = getattr(getattr(reporter, "llm", None), "close", None)
            if close is not None:
                close()
    if as_json:
        print_json({"drafts": [d.model_dump(mode="json") for d in drafts]})
        return
    for draft in drafts:
        render_draft(draft)
