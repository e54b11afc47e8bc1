"""`seenbefore search` and `seenbefore show`."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table

from seenbefore.cli.common import caller_tiers, console, open_store, print_json
from seenbefore.errors import InputError
from seenbefore.retrieval.sparse import sparse_search
from seenbefore.types import Candidate, SearchFilters, SearchResult

TierOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tier", help="access tier you hold (repeat); default SEENBEFORE_TIERS or general"
    ),
]


def _date(value: str | None, name: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"--{name} is {value!r}, expected YYYY-MM-DD") from None


def candidate_json(rank: int, c: Candidate) -> dict[str, Any]:
    return {
        "rank": rank,
        "id": c.doc_id,
        "title": c.title,
        "date": c.date.isoformat() if c.date else None,
        "type": c.type,
        "status": c.status,
        "superseded_by": c.superseded_by,
        "access_tier": c.access_tier,
        "services": list(c.services),
        "score": round(c.score, 6),
        "matched_by": c.matched_by,
        "retrievers": {
            k: {"rank": v.rank, "score": round(v.score, 6)} for k, v in c.retrievers.items()
        },
        "section": c.section_key,
        "chunk_id": c.chunk_id,
        "snippet": c.snippet,
    }


def result_json(result: SearchResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "mode": result.mode,
        "results": [candidate_json(i, c) for i, c in enumerate(result.candidates, 1)],
    }


def search(
    text: Annotated[str, typer.Argument(help="alert text, symptoms or keywords")],
    k: Annotated[int, typer.Option("-k", help="number of postmortems to return")] = 5,
    tier: TierOption = None,
    service: Annotated[
        list[str] | None, typer.Option("--service", help="only these services")
    ] = None,
    since: Annotated[str | None, typer.Option(help="only incidents on/after YYYY-MM-DD")] = None,
    until: Annotated[str | None, typer.Option(help="only incidents on/before YYYY-MM-DD")] = None,
    include_superseded: Annotated[bool, typer.Option(help="also show superseded versions")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="stable JSON output (see README)")
    ] = False,
) -> None:
    """Find past postmortems that resemble TEXT."""
    if not text.strip():
        raise InputError("search text is empty; describe the symptoms or paste the alert")
    filters = SearchFilters(
        tiers=caller_tiers(tier),
        include_superseded=include_superseded,
        services=tuple(service or ()),
        date_from=_date(since, "since"),
        date_to=_date(until, "until"),
    )
    with open_store() as store:
        result = sparse_search(store, text, filters, k=k)
    if as_json:
        print_json(result_json(result))
        return
    render_result(result)


def render_result(result: SearchResult) -> None:
    if not result.candidates:
        console.print("no matching postmortems (nothing shared enough words with the query)")
        return
    console.print(f"[dim]{result.mode} search, {len(result.candidates)} results[/]")
    for rank, c in enumerate(result.candidates, 1):
        when = c.date.isoformat() if c.date else "undated"
        stale = f" [yellow](superseded by {c.superseded_by or '?'})[/]" if c.status != "current" else ""
        console.print(
            f"[bold]{rank}. {c.doc_id}[/]  {c.score:7.3f}  [cyan]{c.type or '-'}[/]  {when}  "
            f"{c.title}{stale}",
            soft_wrap=True,
        )
        snippet = " ".join(c.snippet.split())
        if c.section_key == "metadata":
            snippet = "(matched its title, type, tags or signals)"
        console.print(f"     [dim]{c.section_key}:[/] {snippet[:200]}", soft_wrap=False)


def show(
    doc_id: Annotated[str, typer.Argument(help="postmortem id")],
    tier: TierOption = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show one postmortem with its metadata."""
    with open_store() as store:
        doc = store.get(doc_id, caller_tiers(tier))
    pm = doc.postmortem
    meta = {
        "id": pm.id,
        "title": pm.title,
        "date": pm.date.isoformat() if pm.date else None,
        "type": pm.type,
        "severity": pm.severity,
        "status": doc.effective_status,
        "superseded_by": doc.superseded_by,
        "supersedes": pm.supersedes,
        "access_tier": pm.access_tier,
        "services": list(pm.services),
        "tags": list(pm.tags),
        "signals": list(pm.signals),
        "source": pm.source,
        "chunks": doc.chunk_count,
        "sections": [s.key for s in pm.sections],
        "extra": pm.extra,
    }
    if as_json:
        print_json({**meta, "body": pm.body})
        return
    table = Table.grid(padding=(0, 2))
    for key, value in meta.items():
        if value not in (None, [], {}, ""):
            table.add_row(
                f"[bold]{key}[/]", ", ".join(value) if isinstance(value, list) else str(value)
            )
    console.print(Panel(table, title=pm.id))
    console.print(Markdown(pm.body))
