"""`seenbefore serve`: the HTTP service and the web review queue (uvicorn).

With no configuration it binds 127.0.0.1:8000, ingests the sample knowledge base when the store
is empty, and, when no admin token exists, creates one and shows it once on the terminal (never
in a log: without a terminal it is not created; set SEENBEFORE_ADMIN_TOKEN instead).
SEENBEFORE_ADMIN_TOKEN, when set, is registered as the admin token.

With SEENBEFORE_DATABASE_URL the store is that PostgreSQL database, which any number of
``seenbefore serve`` replicas share (each with its own SEENBEFORE_HOME for local files). If the
database does not answer at start, the service starts anyway, not ready, and bootstraps once it
does (a new admin token is then never shown: use SEENBEFORE_ADMIN_TOKEN)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from seenbefore.cli.common import console, err_console, settings
from seenbefore.config import Settings
from seenbefore.errors import StoreError
from seenbefore.extras import requires
from seenbefore.kb import KnowledgeBase
from seenbefore.storage.factory import open_store

ADMIN_TOKEN_ENV = "SEENBEFORE_ADMIN_TOKEN"
ADMIN_NAME = "admin"


@dataclass(frozen=True)
class Bootstrap:
    ingested: int  # sample postmortems ingested (0 when the store had documents)
    admin_token: str | None  # a new admin token, to show once
    admin_tiers: tuple[str, ...]
    note: str = ""


def sample_dir() -> Path | None:
    """The sample knowledge base shipped with the project (a source checkout's examples/)."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[3] / "examples" / "postmortems", Path("examples/postmortems")):
        if candidate.is_dir():
            return candidate
    return None


def admin_tiers(kb: KnowledgeBase, cfg: Settings) -> tuple[str, ...]:
    """Every tier the configuration or the store knows: the first admin sees everything."""
    known = {*cfg.tiers, *cfg.service_tiers, *kb.store.document_rows().tiers}
    return tuple(sorted(known))


def bootstrap(
    kb: KnowledgeBase,
    cfg: Settings,
    *,
    samples: Path | None,
    env_token: str | None,
    can_show: bool,
) -> Bootstrap:
    """Sample KB when empty; the admin token (from the environment, or a new one to show)."""
    from seenbefore.security.audit import AuditLog
    from seenbefore.security.tokens import TokenStore, local_principal

    ingested = 0
    if not kb.store.list_ids() and samples is not None:
        report = kb.ingest([samples])
        ingested = len(report.added)
    tiers = admin_tiers(kb, cfg)
    tokens = TokenStore(kb.store)
    audit = AuditLog(kb.store)
    actor = local_principal(tiers)
    if env_token:
        principal = tokens.ensure(env_token, ADMIN_NAME, "admin", tiers)
        audit.record(actor, "token.ensure", detail={"token_id": principal.token_id, "env": True})
        return Bootstrap(ingested, None, tiers, f"admin token from {ADMIN_TOKEN_ENV}")
    if tokens.has_admin():
        return Bootstrap(ingested, None, tiers, "an admin token exists")
    if not can_show:
        return Bootstrap(
            ingested,
            None,
            tiers,
            f"no admin token exists and there is no terminal to show a new one on; set "
            f"{ADMIN_TOKEN_ENV} or run `seenbefore token create --name NAME --role admin "
            "--tiers ...`",
        )
    plaintext, principal = tokens.create(ADMIN_NAME, "admin", tiers)
    audit.record(
        actor,
        "token.create",
        detail={"token_id": principal.token_id, "token_role": "admin", "token_tiers": list(tiers)},
    )
    return Bootstrap(ingested, plaintext, tiers, "new admin token")


def _terminal() -> Callable[[str], None] | None:
    """A writer to the user's terminal, or None when stdout is not one (a log)."""
    if sys.stdout.isatty():
        return lambda text: console.print(text, soft_wrap=True, markup=False, highlight=False)
    return None


def serve(
    host: Annotated[
        str | None, typer.Option(help="address to bind (SEENBEFORE_SERVE_HOST)")
    ] = None,
    port: Annotated[int | None, typer.Option(help="port (SEENBEFORE_SERVE_PORT)")] = None,
    sample: Annotated[
        bool, typer.Option(help="ingest the sample knowledge base when the store is empty")
    ] = True,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Run the HTTP API and the web review queue (http://127.0.0.1:8000/ by default)."""
    with requires("server", "`seenbefore serve` (the HTTP service and review queue)"):
        import uvicorn  # noqa: F401  (checked before the store is opened or bootstrapped)

        import seenbefore.service.app  # noqa: F401
    cfg = settings()
    overrides = {"serve_host": host, "serve_port": port}
    cfg = cfg.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    show = _terminal()
    samples = sample_dir() if sample else None
    env_token = os.environ.get(ADMIN_TOKEN_ENV) or None
    try:
        kb = KnowledgeBase(cfg, store=open_store(cfg))
    except StoreError as exc:
        if not cfg.database_url:
            raise
        err_console.print(str(exc), style="yellow", markup=False)
        err_console.print("serving anyway: not ready until the database answers")
        _run(
            cfg,
            log_level,
            kb=None,
            on_open=lambda base: _late_bootstrap(base, cfg, samples, env_token),
        )
        return
    try:
        with console.status("loading the knowledge base…"):
            boot = bootstrap(
                kb, cfg, samples=samples, env_token=env_token, can_show=show is not None
            )
    except BaseException:
        kb.close()
        raise
    if boot.ingested:
        err_console.print(f"ingested {boot.ingested} sample postmortems into {cfg.db_path}")
    if boot.admin_token and show is not None:
        err_console.print(
            f"admin token (tiers {', '.join(boot.admin_tiers)}); shown once, store it now:"
        )
        show(boot.admin_token)
    elif boot.note and not boot.admin_token:
        err_console.print(f"[dim]{boot.note}[/]")
    _run(cfg, log_level, kb=kb)


def _late_bootstrap(
    kb: KnowledgeBase, cfg: Settings, samples: Path | None, env_token: str | None
) -> None:
    """The bootstrap, once a database that was down at start answers (no terminal then)."""
    boot = bootstrap(kb, cfg, samples=samples, env_token=env_token, can_show=False)
    err_console.print(f"database answers; {boot.note or 'bootstrapped'}")


def _run(
    cfg: Settings,
    log_level: str,
    *,
    kb: KnowledgeBase | None,
    on_open: Callable[[KnowledgeBase], None] | None = None,
) -> None:
    import uvicorn

    from seenbefore.service.app import create_app

    url = f"http://{cfg.serve_host}:{cfg.serve_port}/"
    err_console.print(f"review queue: {url}  API docs: {url}docs")
    uvicorn.run(
        create_app(cfg, kb=kb, on_open=on_open),
        host=cfg.serve_host,
        port=cfg.serve_port,
        log_level=log_level,
        proxy_headers=False,
    )
