"""`seenbefore token ...` and `seenbefore audit [verify]`, and the audit hook the CLI commands use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from seenbefore.cli.common import (
    caller_tiers,
    console,
    counted,
    err_console,
    open_store,
    print_json,
    settings,
    to_the_minute,
)
from seenbefore.errors import InputError
from seenbefore.security.audit import AuditLog, AuditRecord
from seenbefore.security.tokens import ROLES, TokenInfo, TokenStore, local_principal
from seenbefore.storage.ports import AuditStore

token_app = typer.Typer(
    help="API tokens for the HTTP service and the web review queue.", no_args_is_help=True
)
audit_app = typer.Typer(
    help="Read the append-only audit log (`seenbefore audit verify` checks its hash chain)."
)


def record_local(
    store: AuditStore, action: str, caller_tiers: Sequence[str], **fields: Any
) -> AuditRecord:
    """Audit a CLI action as the local user (``local:<user>``, holding ``caller_tiers``)."""
    return AuditLog(store).record(local_principal(caller_tiers), action, **fields)


MAX_AUDIT_IDS = 1_000  # document ids one CLI write record names (the counts are always whole)


def record_write(
    store: Any,
    action: str,
    changed: Mapping[str, Sequence[str]],
    tiers_by_id: Mapping[str, str],
    **detail: Any,
) -> AuditRecord:
    """Audit a CLI write to the knowledge base (``ingest``, ``quarantine``, ``reindex``,
    ``calibrate``): the ids it changed (the first :data:`MAX_AUDIT_IDS`), their tiers (so a
    reader of the audit API who does not hold one never sees the record), and how many of each
    kind (``changed``: kind -> ids, e.g. added, updated, pruned)."""
    ids = list(dict.fromkeys(i for group in changed.values() for i in group))
    shown = ids[:MAX_AUDIT_IDS]
    tiers = sorted({tiers_by_id[i] for i in shown if i in tiers_by_id})
    counts = {kind: len(group) for kind, group in changed.items()}
    more = {"ids_not_listed": len(ids) - len(shown)} if len(ids) > len(shown) else {}
    return record_local(
        store,
        action,
        settings().tiers,
        doc_ids=shown,
        tiers=tiers,
        detail={**counts, **more, **detail},
    )


def tiers_by_id(store: Any) -> dict[str, str]:
    """Every document's access tier, by id (read before a write that may remove some)."""
    rows = store.document_rows()
    return dict(zip(rows.ids, rows.tiers, strict=True))


# -- tokens ---------------------------------------------------------------------------------
@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Option("--name", help="who or what holds the token")],
    role: Annotated[str, typer.Option("--role", help=" < ".join(ROLES))],
    tiers: Annotated[
        str, typer.Option("--tiers", help="access tiers, comma-separated, e.g. general,restricted")
    ],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a token; it is printed once and only its hash is kept."""
    with open_store() as store:
        plaintext, principal = TokenStore(store).create(name, role, tiers.split(","))
        record_local(
            store,
            "token.create",
            settings().tiers,
            detail={
                "token_id": principal.token_id,
                "token_name": principal.name,
                "token_role": principal.role,
                "token_tiers": list(principal.tiers),
            },
        )
    if as_json:
        print_json(
            {
                "id": principal.token_id,
                "name": principal.name,
                "role": principal.role,
                "tiers": list(principal.tiers),
                "token": plaintext,
            }
        )
        return
    err_console.print(
        f"token {principal.token_id} for {escape(principal.name)} (role {principal.role}, tiers "
        f"{', '.join(principal.tiers)}). It is shown once: store it now."
    )
    console.print(plaintext, soft_wrap=True, markup=False, highlight=False)


@token_app.command("list")
def token_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Tokens with their role, tiers and last use (never the token itself)."""
    with open_store() as store:
        infos = TokenStore(store).list()
    if as_json:
        print_json(
            {
                "tokens": [
                    {
                        "id": t.id,
                        "name": t.name,
                        "role": t.role,
                        "tiers": list(t.tiers),
                        "created_at": t.created_at,
                        "last_used_at": t.last_used_at,
                        "revoked_at": t.revoked_at,
                        "active": t.active,
                    }
                    for t in infos
                ]
            }
        )
        return
    console.print(token_table(infos, console.width))


WIDE_TOKEN_TABLE = 100  # columns from which `token list` also shows when each was created
NAME_COLUMNS = 14  # a token's name kept whole up to this long at 80 columns


def token_table(infos: Sequence[TokenInfo], width: int) -> Table:
    """``token list`` that fits ``width`` columns (80 included): ids whole, no borders between
    columns, times to the minute (wrapping at the space, never inside a figure), one state
    word; the creation time only where there is room (``--json`` always has it)."""
    table = Table(
        title=f"{len(infos)} tokens",
        box=None,
        title_justify="left",
        header_style="bold underline",
        padding=(0, 1, 0, 0),
        pad_edge=False,
    )
    table.add_column("id", no_wrap=True, min_width=max((len(t.id) for t in infos), default=2))
    longest = max((len(t.name) for t in infos), default=4)
    table.add_column("name", overflow="fold", min_width=min(longest, NAME_COLUMNS))
    table.add_column("role", no_wrap=True)
    table.add_column("tiers", overflow="fold", min_width=len("restricted"))
    created = width >= WIDE_TOKEN_TABLE
    if created:
        table.add_column("created", min_width=10)
    table.add_column("last used", min_width=10)
    table.add_column("state", min_width=10)
    for t in infos:
        state = f"[red]revoked {to_the_minute(t.revoked_at)}[/]" if t.revoked_at else "active"
        table.add_row(
            t.id,
            escape(t.name),  # the creator's words: "[/]" is not markup
            t.role,
            ", ".join(t.tiers),
            *([to_the_minute(t.created_at)] if created else []),
            to_the_minute(t.last_used_at),
            state,
        )
    return table


@token_app.command("revoke")
def token_revoke(token_id: Annotated[str, typer.Argument(help="id from `token list`")]) -> None:
    """Revoke a token: it stops working at once. A unique prefix of the id is enough."""
    with open_store() as store:
        tokens = TokenStore(store)
        token_id = _whole_id(token_id, [t.id for t in tokens.list()])
        tokens.revoke(token_id)
        record_local(store, "token.revoke", settings().tiers, detail={"token_id": token_id})
    console.print(f"revoked {token_id}")


MIN_ID_PREFIX = 8  # "tok_" and 4 hex digits: short enough to type, long enough to mean one


def _whole_id(given: str, ids: Sequence[str]) -> str:
    """The id ``given`` names: itself, or the one id it is a prefix of (a table may have cut it
    short with '…'). Ambiguous prefixes are refused; unknown ones fall through to revoke's
    NotFoundError."""
    text = given.strip().rstrip("…").rstrip(".")
    if text in ids:
        return text
    matches = [i for i in ids if len(text) >= MIN_ID_PREFIX and i.startswith(text)]
    if len(matches) > 1:
        raise InputError(
            f"token id prefix {given!r} matches {len(matches)} tokens ({', '.join(matches)}); "
            "give more of the id"
        )
    return matches[0] if matches else given


# -- audit ----------------------------------------------------------------------------------
@audit_app.callback(invoke_without_command=True)
def audit(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", help="newest N records")] = 20,
    action: Annotated[str | None, typer.Option("--action", help="only this action")] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="only this actor")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show the newest audit records (ids and hashes only; the log keeps no query text)."""
    if ctx.invoked_subcommand is not None:
        return
    with open_store() as store:
        records = AuditLog(store).read(limit=limit, action=action, actor=actor)
    if as_json:
        print_json({"records": [r.to_json() for r in records]})
        return
    # one column of lines, wrapped between words: eight columns at 80 cut every value to a few
    # letters ("2026-12…", "local:r…", "INC-20…")
    table = Table(title=f"audit log: {counted(len(records), 'record', 'records')}")
    table.add_column("id", no_wrap=True, justify="right")
    table.add_column("time · actor · action; query hash, documents, tiers, draft")
    for r in records:
        docs = ", ".join(r.doc_ids[:SHOWN_IDS]) + (
            f" and {len(r.doc_ids) - SHOWN_IDS} more (--json lists them)"
            if len(r.doc_ids) > SHOWN_IDS
            else ""
        )
        what = " · ".join(
            (
                r.time[:19].replace("T", " "),
                r.actor,
                r.action + (f" ({r.decision})" if r.decision else ""),
            )
        )
        detail = [
            f"query {r.query_hash[:12]}" if r.query_hash else "",
            f"documents {docs}" if docs else "",
            f"tiers {', '.join(r.tiers)}" if r.tiers else "",
            f"draft {r.draft_id}" if r.draft_id else "",
        ]
        text = "\n".join([what, "; ".join(d for d in detail if d)]).strip()
        table.add_row(str(r.id), escape(text))
    console.print(table)


SHOWN_IDS = 8  # document ids an audit row shows (an ingest lists every document it wrote)


@audit_app.command("verify")
def audit_verify(
    key: Annotated[
        Path | None,
        typer.Option(
            "--key",
            help="the audit.key to verify under (default: the one beside the store; give the "
            "SQLite home's after `migrate --to` PostgreSQL, whose own chain is unkeyed)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Recompute the hash chain; exit 0 when intact, 1 naming the first bad record when not."""
    from seenbefore.security import audit_key

    given = audit_key.load(key) if key is not None else None
    if key is not None and given is None:
        raise InputError(f"--key {key}: no such audit key file; give the audit.key of a home")
    with open_store() as store:
        result = (AuditLog(store, key=given) if key is not None else AuditLog(store)).verify()
    if as_json:
        print_json(result.to_json())
    elif result.ok:
        console.print(f"audit log {result.reason}; head {result.head_hash or '-'}")
    else:
        where = f"record {result.first_bad_id}: " if result.first_bad_id is not None else ""
        err_console.print(f"[red]audit log NOT intact[/] — {where}{result.reason}")
    if not result.ok:
        raise typer.Exit(1)


@audit_app.command("key")
def audit_key_command(
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Key a PostgreSQL store's audit chain (HMAC-SHA256 from its next record on) and print the
    key, once: give it to every replica as SEENBEFORE_AUDIT_KEY from your secret store. Until a
    replica has it, its writes are refused (it would break the chain). SQLite keys its chain
    itself (audit.key beside the store)."""
    from seenbefore.security import audit_key

    with open_store() as store:
        key = AuditLog(store).key_server_chain()
        # the first keyed record: this process holds the key it just made, not the setting
        AuditLog(store, key=key).record(
            local_principal(caller_tiers(None, settings())),
            "audit.key",
            detail={"from_id": key.from_id},
        )
    value = audit_key.to_text(key)
    if as_json:
        print_json({"from_id": key.from_id, audit_key.SETTING: value})
        return
    console.print(
        f"the audit chain is keyed from record {key.from_id}. Set this on every replica (it is "
        f"shown once; keep a copy with your backups' secrets):\n{audit_key.SETTING}='{value}'",
        soft_wrap=True,
        markup=False,
    )
