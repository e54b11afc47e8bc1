"""`seenbefore database ...`: the server database's set-up on the maintenance login: migrations,
the review checkpoint tables, tier keys, and which logins are boundaries (docs/postgres.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from urllib.parse import unquote, urlsplit

import typer
from rich.markup import escape
from rich.table import Table

from seenbefore.cli.common import console, err_console, print_json, settings
from seenbefore.errors import InputError
from seenbefore.security.tokens import check_tiers
from seenbefore.storage.factory import open_maintenance

if TYPE_CHECKING:
    from seenbefore.storage.postgres.maintenance import Login

database_app = typer.Typer(
    help="The PostgreSQL database: set-up, tier keys, logins (run with the maintenance login).",
    no_args_is_help=True,
)
DEFAULT_KEY_NAME = "service"


def _service_login() -> str | None:
    """The user SEENBEFORE_DATABASE_URL logs in as, when it is set."""
    url = settings().database_url
    if url is None or not url.get_secret_value().strip():
        return None
    user = urlsplit(url.get_secret_value().strip()).username
    return unquote(user) if user else None


@database_app.command("setup")
def setup(
    key_name: Annotated[
        str, typer.Option("--key-name", help="name for SEENBEFORE_DATABASE_TIER_KEY's row")
    ] = DEFAULT_KEY_NAME,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Migrate the schema, create the review checkpoint tables, register
    SEENBEFORE_DATABASE_TIER_KEY (every tier) when it is set, and report the logins. Safe to
    run again; a deployment runs it before the service starts."""
    cfg = settings()
    with open_maintenance(cfg) as db:
        db.setup_checkpoints()
        registered = None
        if cfg.database_tier_key is not None and cfg.database_tier_key.get_secret_value():
            _, info, new = db.make_key(key_name, None, cfg.database_tier_key.get_secret_value())
            registered = {"id": info.id, "name": info.name, "new": new}
        logins = db.logins()
        where, version = db.display, db.schema_version
    service = _service_login()
    if as_json:
        print_json(
            {
                "database": where,
                "schema_version": version,
                "tier_key": registered,
                "logins": [_login_dict(x) for x in logins],
                "service_login": service,
            }
        )
        return
    console.print(f"{where}: schema version {version}; review checkpoint tables ready")
    if registered is not None:
        state = "registered" if registered["new"] else "already registered"
        console.print(f"tier key {registered['id']} ({registered['name']}, every tier) {state}")
    _show_logins(logins, service)


@database_app.command("key")
def key_create(
    name: Annotated[str, typer.Option("--name", help="who or what holds the key")],
    tiers: Annotated[
        str | None,
        typer.Option("--tiers", help="tiers it may bind, comma-separated (default: every tier)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Make a tier key: a service login binds tiers with it (SEENBEFORE_DATABASE_TIER_KEY). It
    is printed once; the database keeps its hash."""
    granted = None if tiers is None else check_tiers(tiers)
    with open_maintenance(settings()) as db:
        plaintext, info, _ = db.make_key(name, granted)
    if as_json:
        print_json({"id": info.id, "name": info.name, "tiers": granted, "key": plaintext})
        return
    err_console.print(
        f"tier key {info.id} for {info.name} ({'tiers ' + ', '.join(granted) if granted else 'every tier'})."
        " It is shown once: store it now."
    )
    console.print(plaintext, soft_wrap=True)


@database_app.command("keys")
def key_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Tier keys with what they grant (never the key itself)."""
    with open_maintenance(settings()) as db:
        infos = db.tier_keys()
    if as_json:
        print_json(
            {
                "keys": [
                    {
                        "id": k.id,
                        "name": k.name,
                        "tiers": None if k.tiers is None else list(k.tiers),
                        "created_at": k.created_at,
                        "revoked_at": k.revoked_at,
                    }
                    for k in infos
                ]
            }
        )
        return
    table = Table(title=f"{len(infos)} tier keys")
    for col in ("id", "name", "tiers", "created", "revoked"):
        table.add_column(col, overflow="fold")
    for k in infos:
        table.add_row(
            k.id,
            escape(k.name),
            "every tier" if k.tiers is None else ",".join(k.tiers),
            k.created_at,
            f"[red]{k.revoked_at}[/]" if k.revoked_at else "-",
        )
    console.print(table)


@database_app.command("revoke-key")
def key_revoke(key_id: Annotated[str, typer.Argument(help="id from `database keys`")]) -> None:
    """Revoke a tier key: transactions started with it after this fail to bind."""
    if not key_id.strip():
        raise InputError("give the id of a tier key; `seenbefore database keys` lists them")
    with open_maintenance(settings()) as db:
        db.revoke_key(key_id.strip())
    console.print(f"revoked {key_id.strip()}")


def _login_dict(login: Login) -> dict[str, object]:
    return {
        "name": login.name,
        "may_set_role_owner": login.owner,
        "superuser": login.superuser,
        "bypass_rls": login.bypass_rls,
        "boundary": login.boundary,
    }


def _show_logins(logins: list[Login], service: str | None) -> None:
    table = Table(title="logins with the app role's privileges")
    for col in ("login", "may SET ROLE owner", "superuser / BYPASSRLS", "tiers a boundary"):
        table.add_column(col)
    for x in logins:
        table.add_row(
            x.name + (" (SEENBEFORE_DATABASE_URL)" if x.name == service else ""),
            "yes" if x.owner else "no",
            "yes" if x.superuser or x.bypass_rls else "no",
            "[green]yes[/]" if x.boundary else "[yellow]no[/]",
        )
    console.print(table)
    weak = [x for x in logins if x.name == service and not x.boundary]
    if weak:
        err_console.print(
            f"[yellow]warning:[/] the service logs in as {service}, which may SET ROLE to the"
            " owner (or bypasses row-level security): tiers are no boundary for it. Give the"
            " service a login that is only a member of seenbefore_app (docs/postgres.md)."
        )
