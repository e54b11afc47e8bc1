"""`seenbefore serve`: the HTTP service and the web review queue (uvicorn).

With no configuration it binds 127.0.0.1:8000 and, when no admin token exists, creates one and
shows it once on the terminal (never in a log: without a terminal it is not created; set
SEENBEFORE_ADMIN_TOKEN instead). SEENBEFORE_ADMIN_TOKEN, when set, is registered as the admin
token. An empty store stays empty, and the start says how to fill it (``seenbefore ingest
PATH``): the sample knowledge base, fictional incidents that would otherwise be cited as a
team's own, is ingested only with ``--sample`` (``make serve``, for trying it out).

The socket is served at once: ``/healthz`` answers from the first second and ``/readyz`` is 503,
with the reason, until the embedder and the index are loaded (and the sample ingested, when
asked); a startup that fails for good stops the process with the reason.

With SEENBEFORE_DATABASE_URL the store is that PostgreSQL database, which any number of
``seenbefore serve`` replicas share (each with its own SEENBEFORE_HOME for local files). If the
database does not answer at start, the service starts anyway, not ready, and bootstraps once it
does (a new admin token is then never shown: use SEENBEFORE_ADMIN_TOKEN)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from seenbefore.cli.common import console, err_console, settings
from seenbefore.config import Settings
from seenbefore.errors import ConfigError, StoreError
from seenbefore.extras import requires
from seenbefore.kb import KnowledgeBase
from seenbefore.storage.factory import open_store

ADMIN_TOKEN_ENV = "SEENBEFORE_ADMIN_TOKEN"
ADMIN_NAME = "admin"


@dataclass(frozen=True)
class Bootstrap:
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


def sample_tiers(samples: Path) -> set[str]:
    """The access tiers of the sample postmortems, read as ingest reads them (without storing)."""
    from seenbefore.knowledge.validate import postmortem_from_markdown

    return {
        postmortem_from_markdown(str(path), path.read_text(encoding="utf-8")).access_tier
        for path in sorted(samples.glob("*.md"))
    }


def admin_tiers(kb: KnowledgeBase, cfg: Settings, samples: Path | None = None) -> tuple[str, ...]:
    """Every tier the configuration, the store or the sample about to be ingested knows: the
    first admin sees everything."""
    known = {*cfg.tiers, *cfg.service_tiers, *kb.store.document_rows().tiers}
    if samples is not None:
        known |= sample_tiers(samples)
    return tuple(sorted(known))


def ingest_samples(kb: KnowledgeBase, samples: Path) -> int:
    """Ingest the sample knowledge base into an empty store; how many were added (0 when the
    store holds documents: a team's postmortems never get fictional ones beside them)."""
    if kb.store.list_ids():
        return 0
    return len(kb.ingest([samples]).added)


def bootstrap(
    kb: KnowledgeBase,
    cfg: Settings,
    *,
    env_token: str | None,
    can_show: bool,
    samples: Path | None = None,
) -> Bootstrap:
    """The admin token: from the environment, or a new one to show (its tiers include those of
    ``samples``, the sample about to be ingested, if any)."""
    from seenbefore.security.audit import AuditLog
    from seenbefore.security.tokens import TokenStore, local_principal

    tiers = admin_tiers(kb, cfg, samples)
    tokens = TokenStore(kb.store)
    audit = AuditLog(kb.store)
    actor = local_principal(tiers)
    if env_token:
        principal = tokens.ensure(env_token, ADMIN_NAME, "admin", tiers)
        audit.record(actor, "token.ensure", detail={"token_id": principal.token_id, "env": True})
        return Bootstrap(None, tiers, f"admin token from {ADMIN_TOKEN_ENV}")
    if tokens.has_admin():
        return Bootstrap(None, tiers, "an admin token exists")
    if not can_show:
        return Bootstrap(
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
    return Bootstrap(plaintext, tiers, "new admin token")


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
        bool,
        typer.Option(
            "--sample/--no-sample",
            help="ingest the sample knowledge base (examples/postmortems: fictional incidents, "
            "for trying seenbefore) when the store is empty",
        ),
    ] = False,
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
    samples = _samples() if sample else None
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
        boot = bootstrap(kb, cfg, env_token=env_token, can_show=show is not None, samples=samples)
        empty = not kb.store.list_ids()
    except BaseException:
        kb.close()
        raise
    if boot.admin_token and show is not None:
        err_console.print(
            f"admin token (tiers {', '.join(boot.admin_tiers)}); shown once, store it now:"
        )
        show(boot.admin_token)
    elif boot.note and not boot.admin_token:
        err_console.print(f"[dim]{boot.note}[/]")
    on_open = None
    if empty and samples is not None:
        err_console.print(f"ingesting the sample knowledge base ({samples}) behind the socket")
        on_open = functools.partial(_report_samples, samples=samples, cfg=cfg)
    elif empty:
        err_console.print(EMPTY_NOTE, soft_wrap=True)
    _run(cfg, log_level, kb=kb, on_open=on_open)


EMPTY_NOTE = (
    "the knowledge base is empty: add your postmortems with `seenbefore ingest PATH` (Markdown "
    "with front matter, or JSONL with --map); searches answer 'no precedent' until then. To try "
    "seenbefore on fictional incidents instead: `seenbefore serve --sample`"
)


def _samples() -> Path:
    found = sample_dir()
    if found is None:
        raise ConfigError(
            "--sample: the sample knowledge base (examples/postmortems) is not here; it ships "
            "with a source checkout and the container image. Ingest your own postmortems with "
            "`seenbefore ingest PATH` instead"
        )
    return found


def _report_samples(kb: KnowledgeBase, samples: Path, cfg: Settings) -> None:
    added = ingest_samples(kb, samples)
    if added:
        err_console.print(f"ingested {added} sample postmortems into {cfg.db_path}")


def _late_bootstrap(
    kb: KnowledgeBase, cfg: Settings, samples: Path | None, env_token: str | None
) -> None:
    """The bootstrap, once a database that was down at start answers (no terminal then)."""
    boot = bootstrap(kb, cfg, env_token=env_token, can_show=False, samples=samples)
    if samples is not None:
        ingest_samples(kb, samples)
    err_console.print(f"database answers; {boot.note or 'bootstrapped'}")


def _run(
    cfg: Settings,
    log_level: str,
    *,
    kb: KnowledgeBase | None,
    on_open: Callable[[KnowledgeBase], None] | None = None,
) -> None:
    """uvicorn on the app, the socket served at once while startup work runs behind it; a
    startup that fails for good stops the server and exits 1 with the reason."""
    import uvicorn

    from seenbefore.service.app import create_app

    stop: list[Callable[[], None]] = []

    def on_fatal() -> None:
        for halt in stop:
            halt()

    app = create_app(cfg, kb=kb, on_open=on_open, background_start=True, on_fatal=on_fatal)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host=cfg.serve_host, port=cfg.serve_port, log_level=log_level, proxy_headers=False
        )
    )
    stop.append(lambda: setattr(server, "should_exit", True))
    url = f"http://{cfg.serve_host}:{cfg.serve_port}/"
    err_console.print(f"review queue: {url}  API docs: {url}docs")
    run_server(server)
    failed = app.state.service.startup_error
    if failed:
        err_console.print(f"error: {failed}", markup=False, soft_wrap=True)
        raise typer.Exit(1)


def run_server(server: Any) -> None:
    """uvicorn's own loop (tests replace this)."""
    server.run()
