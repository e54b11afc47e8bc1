"""`seenbefore search` and `seenbefore show`."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from seenbefore.cli.common import (
    caller_tiers,
    console,
    counted,
    empty_store,
    indented,
    open_kb,
    open_store,
    print_json,
)
from seenbefore.cli.explain import legend, render_explain
from seenbefore.cli.security import record_local
from seenbefore.core.confidence import FOUND, NONE, POSSIBLE
from seenbefore.errors import InputError
from seenbefore.knowledge.failure_modes import (
    CONFIDENT,
    failure_mode,
    failure_modes_json,
    has_mode,
    query_mode_json,
    wanted_slug,
)
from seenbefore.knowledge.failure_taxonomy import taxonomy
from seenbefore.limits import check_filters, check_k, check_query
from seenbefore.retrieval.hybrid import MODES, SearchOptions
from seenbefore.retrieval.output import another_failure, result_json
from seenbefore.types import SearchFilters, SearchResult

if TYPE_CHECKING:
    from seenbefore.storage.ports import Store

TYPE_BATCH = 200  # documents read at a time to match --type

TierOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tier",
        help="access tiers you hold, comma-separated or repeated (general,restricted); "
        "default SEENBEFORE_TIERS or general",
    ),
]


def _date(value: str | None, name: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"--{name} is {value!r}, expected YYYY-MM-DD") from None


def search(
    text: Annotated[str, typer.Argument(help="alert text, symptoms or keywords")],
    k: Annotated[int, typer.Option("-k", help="number of postmortems to return")] = 5,
    tier: TierOption = None,
    service: Annotated[
        list[str] | None, typer.Option("--service", help="only these services")
    ] = None,
    since: Annotated[str | None, typer.Option(help="only incidents on/after YYYY-MM-DD")] = None,
    until: Annotated[str | None, typer.Option(help="only incidents on/before YYYY-MM-DD")] = None,
    type_: Annotated[
        str | None,
        typer.Option(
            "--type",
            help="only postmortems of this failure mode: the author's type, or one inferred "
            "with p >= 0.5 (slugs: docs/postmortem-format.md)",
        ),
    ] = None,
    # one name, no --no- twin: at 80 columns the pair was cut to "--include-superse…"
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="also show superseded versions")
    ] = False,
    mode: Annotated[str, typer.Option(help="hybrid | sparse | dense")] = "hybrid",
    dense_weight: Annotated[
        float | None, typer.Option(help="override the gate's dense weight (0..1) for this query")
    ] = None,
    recency_half_life: Annotated[
        float | None,
        typer.Option(help="boost recent incidents: half-life in days (off by default)"),
    ] = None,
    explain: Annotated[
        bool, typer.Option(help="per-retriever ranks and scores, gate, signals")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="stable JSON output (see README)")
    ] = False,
) -> None:
    """Find past postmortems that resemble TEXT."""
    if not text.strip():
        raise InputError("search text is empty; describe the symptoms or paste the alert")
    check_query(text, name="search text")
    check_k(k)
    if recency_half_life is not None and not math.isfinite(recency_half_life):
        raise InputError(
            f"--recency-half-life is {recency_half_life}; give a half-life in days greater "
            "than 0, e.g. 365, or leave it out for no recency boost"
        )
    filters = SearchFilters(
        tiers=caller_tiers(tier),
        include_superseded=include_superseded,
        services=tuple(service or ()),
        date_from=_date(since, "since"),
        date_to=_date(until, "until"),
    )
    check_filters(filters, since="--since", until="--until")
    if mode not in MODES:
        raise InputError(f"--mode is {mode!r}, expected one of {', '.join(MODES)}")
    options = SearchOptions(
        k=k,
        mode=mode,
        dense_weight=dense_weight,
        recency_half_life_days=recency_half_life,
    )
    with open_kb() as kb:
        if type_ is not None:
            filters = _of_type(kb.store, filters, type_)
        result = kb.search(text, filters, options)
        if result.empty_because:  # nothing at all to search is not a matter of tiers
            result = replace(result, empty_because=empty_store(kb.store) or result.empty_because)
        modes = failure_modes_json(kb.store, [c.doc_id for c in result.candidates])
        query_mode = query_mode_json(text)
        record_local(
            kb.store,
            "search",
            filters.tiers,
            query=text,
            doc_ids=[c.doc_id for c in result.candidates],
            tiers=[c.access_tier for c in result.candidates],
            detail={"mode": result.mode, "k": k},
        )
    if as_json:
        payload = result_json(result, explain=explain, failure_modes=modes, query_mode=query_mode)
        print_json({**payload, "empty_because": result.empty_because})
        return
    render_result(result, result.empty_because, modes, query_mode)
    if explain:
        render_explain(result)


def _of_type(store: Store, filters: SearchFilters, wanted: str) -> SearchFilters:
    """``filters`` that also leave out every postmortem whose failure mode is not ``wanted``
    (the author's type, or an inferred one at p >= CONFIDENT): a filter applied before scoring,
    as the others are. InputError when no postmortem the caller may see has that mode."""
    slug = wanted_slug(wanted)
    if not slug:
        raise InputError(f"--type is {wanted!r}; give a failure mode slug such as bad-deploy")
    ids = store.list_ids(filters.tiers)
    other: list[str] = []
    for start in range(0, len(ids), TYPE_BATCH):
        docs = store.documents_meta(ids[start : start + TYPE_BATCH])
        other += [i for i, d in docs.items() if not has_mode(d.postmortem, slug)]
    if len(other) == len(ids):
        known = (
            ""
            if slug in taxonomy().slugs
            else (
                f"; {slug!r} is not a failure mode the taxonomy knows (slugs: "
                "docs/postmortem-format.md), and no author wrote it as a type"
            )
        )
        raise InputError(
            f"--type {wanted}: no postmortem you may see has failure mode {slug!r} (as its "
            f"author's type or inferred with p >= {CONFIDENT}){known}; drop --type or pick another mode"
        )
    return replace(filters, exclude_ids=tuple(sorted({*filters.exclude_ids, *other})))


def verdict_markup(verdict: str) -> str:
    """The verdict's words, the same on every surface, coloured for the terminal."""
    style = {FOUND: "bold green", POSSIBLE: "bold yellow", NONE: "bold red"}.get(verdict, "bold")
    return f"[{style}]{verdict.upper() if verdict == NONE else verdict}[/]"


def render_result(
    result: SearchResult,
    emptied: str | None = None,
    modes: Mapping[str, Mapping[str, Any]] | None = None,
    query_mode: Mapping[str, Any] | None = None,
) -> None:
    """``emptied``: which filter left nothing to search (:func:`seenbefore.limits.empty_reason`);
    ``modes``: each result's failure mode (FailureMode.as_dict), shown where it has no type;
    ``query_mode``: the query's, for the line that says it names another failure."""
    if not result.candidates:
        if emptied:
            console.print(f"no matching postmortems: {emptied}")
        else:
            console.print("no matching postmortems (nothing shared enough words with the query)")
        return
    console.print(
        f"[dim]{result.mode} search, {counted(len(result.candidates), 'result', 'results')}[/] — "
        f"{verdict_markup(result.verdict)}, p_precedent {result.confidence:.2f}",
        soft_wrap=True,
    )
    if result.verdict == NONE:
        console.print(
            "[dim]the nearest postmortems (none scored as a match; read before ruling out):[/]"
        )
    top = (modes or {}).get(result.candidates[0].doc_id)
    other = another_failure(result.verdict, query_mode, top) if result.scored else None
    if other:
        console.print(f"[dim]{escape(other)}[/]", soft_wrap=True)
    for rank, c in enumerate(result.candidates, 1):
        when = c.date.isoformat() if c.date else "undated"
        stale = (
            f" [yellow](superseded by {c.superseded_by or '?'})[/]" if c.status != "current" else ""
        )
        kind = _kind(c.type, (modes or {}).get(c.doc_id))
        console.print(
            f"[bold]{rank}. {c.doc_id}[/]  {c.score:.4f}  [cyan]{escape(kind)}[/]  {when}  "
            f"[dim]({c.matched_by})[/] {escape(c.title)}{stale}",
            soft_wrap=True,
        )
        snippet = " ".join(c.snippet.split())
        if c.section_key == "metadata":
            snippet = "(matched its title, type, tags or signals)"
        console.print(indented(snippet[:200], f"{c.section_key}:"), soft_wrap=True)
    console.print(f"[dim]{legend(result.candidates)}[/]")


def _cell(value: Any) -> str:
    """A front-matter value for people: a list as "a, b", extra fields as "key: value" lines
    (not a Python dict's repr)."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"  # an empty list, as a null: "-"
    if isinstance(value, dict):
        return "\n".join(f"{k}: {_cell(v)}" for k, v in value.items())
    return "-" if value is None else str(value)


def _kind(author: str, mode: Mapping[str, Any] | None) -> str:
    """A result's type for the terminal: the author's, else the inferred mode marked so (which
    of the two: ``mode``, knowledge.failure_modes.failure_mode's, which also sets aside an author's
    type that names none, such as "uncategorized")."""
    if mode is None or not mode["inferred"]:
        return author or "-"
    if mode["known"]:
        return f"{mode['slug']} (inferred)"
    return "- (type unknown)"


def show(
    doc_id: Annotated[str, typer.Argument(help="postmortem id")],
    tier: TierOption = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show one postmortem with its metadata."""
    tiers = caller_tiers(tier)
    with open_store() as store:
        doc = store.get(doc_id, tiers)
        record_local(
            store, "show", tiers, doc_ids=[doc.postmortem.id], tiers=[doc.postmortem.access_tier]
        )
    pm = doc.postmortem
    mode = failure_mode(pm)
    meta = {
        "id": pm.id,
        "title": pm.title,
        "date": pm.date.isoformat() if pm.date else None,
        "type": pm.type,
        "failure_mode": mode.as_dict(),
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
    shown = {**meta, "type": mode.label() if mode.inferred else pm.type}  # inferred: marked
    del shown["failure_mode"]
    for key, value in shown.items():
        if value not in (None, [], {}, ""):
            table.add_row(
                f"[bold]{key}[/]",
                escape(_cell(value)),
            )
    console.print(Panel(table, title=pm.id))
    from rich.markdown import Markdown  # markdown-it: only `show` renders Markdown

    console.print(Markdown(pm.body))
