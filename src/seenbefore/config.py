"""Settings: defaults work with no configuration; env vars ``SEENBEFORE_*``; an optional TOML file.

The TOML file is ``$SEENBEFORE_CONFIG`` if set, else ``<home>/config.toml`` if it exists. Environment
variables win over the file.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from seenbefore.errors import ConfigError
from seenbefore.types import DEFAULT_TIER

# the sampled investigation log, <home>/logs/<this> (written by the service's sampler, purged of
# a deleted postmortem's text by seenbefore.lifecycle)
SAMPLED_LOG_NAME = "investigations.jsonl"

# the built-in choices of the `embedder` setting; any other name is a plugin embedder's
BUILTIN_EMBEDDERS = ("auto", "minilm", "lsa", "none")
EMBEDDER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


ENV_PREFIX = "SEENBEFORE_"
# settings whose environment value is JSON (a table in the TOML file)
JSON_SETTINGS = frozenset({"embedder_options", "notify"})


def _environment() -> dict[str, str]:
    """``SEENBEFORE_*`` variables by setting name, the prefix matched in any case."""
    size = len(ENV_PREFIX)
    return {
        key[size:].lower(): value
        for key, value in os.environ.items()
        if key[:size].upper() == ENV_PREFIX
    }


class Settings(BaseModel):
    """All knobs, with defaults that work out of the box. Each reads ``SEENBEFORE_<NAME>`` from
    the environment (any case) unless given; a table setting's value there is JSON; a list
    setting's is ``a,b`` or a JSON list. (pydantic-settings did this until its import, a tenth
    of a second, was most of what every ``seenbefore`` command spent on its settings.)"""

    model_config = ConfigDict(extra="ignore", validate_default=True)

    home: Path = Field(default=Path(".seenbefore"), description="data directory")
    chunk_words: int = Field(default=160, ge=20, le=400, description="max words of chunk content")
    chunk_overlap_words: int = Field(default=30, ge=0, le=200)
    max_file_bytes: int = Field(default=1_000_000, ge=1_000)
    tiers: tuple[str, ...] = Field(default=(DEFAULT_TIER,), description="caller's access tiers")
    embedder: str = Field(
        default="auto",
        description="dense embedder: auto (MiniLM if loadable, else LSA, else sparse-only), "
        "minilm, lsa, none, or the name of an embedder plugin (entry-point group "
        "seenbefore.embedders, e.g. the built-in hashing)",
    )
    embedder_options: dict[str, Any] = Field(
        default_factory=dict,
        description="options passed to a plugin embedder's factory ([embedder_options] table, "
        "or SEENBEFORE_EMBEDDER_OPTIONS='{\"dim\": 64}')",
    )
    stem: bool = Field(
        default=False, description="Porter-stem BM25 terms (helped SciFact, hurt incidents)"
    )
    lsa_dim: int = Field(default=128, ge=2, le=1024)
    lsa_refit_fraction: float = Field(default=0.2, gt=0, le=10)
    rrf_k: int = Field(default=60, ge=0)
    recency_half_life_days: float | None = Field(default=None, gt=0)
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint")
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    # 60 s: the slowest draft with SmolLM2-135M on two cores took 47.7 s when chosen, 54.0 s in
    # the latest run (a reply run to its 800-token limit); benchmarks/results/llm_drafts.json
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_context_tokens: int | None = Field(
        default=None,
        ge=256,
        description="the model's context window in tokens; unset: learned from the server "
        "when a prompt does not fit (the prompt is then cut to it)",
    )
    llm_response_format: Literal[
        "auto", "json_schema", "json_object+schema", "json_object", "prompt-only"
    ] = Field(
        default="auto",
        description="how the draft's JSON schema is asked for; auto: the first form the "
        "endpoint accepts",
    )
    llm_rewrite_queries: bool = Field(
        default=False,
        description="let the LLM rewrite anomalies into postmortem-vocabulary queries (fused); "
        "off until `seenbefore eval` shows it helps on your cases",
    )
    llm_allowed_hosts: tuple[str, ...] = Field(
        default=(), description="hosts that may receive evidence from local-only tiers"
    )
    llm_local_only_tiers: tuple[str, ...] = Field(
        default=(), description="tiers whose evidence never goes to a non-allowed LLM host"
    )
    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql://... selects the PostgreSQL backend; unset: SQLite. `serve`"
        " logs in with it: give it a service login (docs/postgres.md)",
    )
    database_admin_url: SecretStr | None = Field(
        default=None,
        description="postgresql://... of the maintenance login (migrations, ingest, reindex, the"
        " admin CLI); unset: the CLI uses SEENBEFORE_DATABASE_URL, which is then no boundary",
    )
    database_tier_key: SecretStr | None = Field(
        default=None,
        description="the tier key a service login binds tiers with (`seenbefore database key`)",
    )
    audit_key: SecretStr | None = Field(
        default=None,
        description="the audit chain's key on PostgreSQL: the value `seenbefore audit key` "
        "printed, given to every replica from a secret store (SQLite keeps its key in audit.key "
        "beside the store file and ignores this)",
    )
    database_pool_max: int = Field(default=10, ge=1, le=200, description="PostgreSQL connections")
    database_statement_timeout_s: float = Field(
        default=30.0, gt=0, description="PostgreSQL statement timeout (maintenance runs unbounded)"
    )
    serve_host: str = Field(default="127.0.0.1", description="address `seenbefore serve` binds")
    serve_port: int = Field(default=8000, ge=1, le=65535)
    public_url: str | None = Field(
        default=None,
        description="the address people and agents reach the service at "
        "(https://seenbefore.example.com); MCP results then link to "
        "<public_url>/v1/postmortems/<id>; unset: no links",
    )
    service_tiers: tuple[str, ...] = Field(
        default=(DEFAULT_TIER,),
        description="tiers of the service principal that runs alert-triggered investigations",
    )
    review_max_rounds: int = Field(
        default=2, ge=1, le=10, description="dismissals before a review closes as no precedent"
    )
    log_sample_fraction: float = Field(
        default=0.1, ge=0, le=1, description="share of investigations logged with full context"
    )
    max_request_bytes: int = Field(
        default=1_048_576,
        ge=1_024,
        description="largest HTTP request body (bytes); 413 beyond, before parsing and auth",
    )
    rate_limit_per_minute: int = Field(
        default=600, ge=1, description="requests per minute per API token (429 beyond)"
    )
    auth_failures_per_minute: int = Field(
        default=20,
        ge=1,
        description="failed authentications (bad token, failed login) per minute per client "
        "address before it is refused with 429 without a token check",
    )
    detect_concurrency: int = Field(
        default=2, ge=1, le=64, description="POST /v1/detect requests run at once (503 beyond)"
    )
    detect_memory_mib: int = Field(
        default=512,
        ge=64,
        description="memory the running /v1/detect requests may hold together, by estimate "
        "(service/work_budget.py; 503 while taken, 400 for one request over it)",
    )
    detect_max_investigations: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="investigations one POST /v1/detect request may start (the rest skipped)",
    )
    investigations_per_minute: int = Field(
        default=30,
        ge=1,
        description="investigations one principal may start a minute through /v1/detect "
        "(the rest skipped)",
    )
    notify: dict[str, Any] = Field(
        default_factory=dict, description="[notify] table: routes, slack, pagerduty, retry"
    )

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, data: Any) -> Any:
        """Given values win; the rest come from ``SEENBEFORE_*`` variables, then defaults."""
        if not isinstance(data, dict):
            return data
        values = dict(data)
        environment = _environment()
        for name in cls.model_fields:
            raw = environment.get(name)
            if name in values or raw is None:
                continue
            if name in JSON_SETTINGS:
                try:
                    values[name] = json.loads(raw)
                except json.JSONDecodeError:
                    values[name] = raw  # validation then says it is not a table, and where
            else:
                values[name] = raw
        return values

    @field_validator("embedder", mode="before")
    @classmethod
    def _embedder_name(cls, value: Any) -> Any:
        # which names exist is known only once plugins are scanned (the knowledge base does it,
        # and its error lists them); here only the shape of a name
        if isinstance(value, str):
            name = value.strip().lower()
            if not EMBEDDER_NAME.fullmatch(name):
                raise ValueError(
                    "expected auto, minilm, lsa, none or a plugin embedder's name "
                    "(letters, digits, '-', '_', '.')"
                )
            return name
        return value

    @field_validator("public_url", mode="before")
    @classmethod
    def _public_url(cls, value: Any) -> Any:
        if isinstance(value, str):
            url = value.strip().rstrip("/")
            if not url:
                return None
            if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
                raise ValueError(
                    "expected an http(s) address such as https://seenbefore.example.com"
                )
            return url
        return value

    @field_validator(
        "tiers", "llm_allowed_hosts", "llm_local_only_tiers", "service_tiers", mode="before"
    )
    @classmethod
    def _split_tiers(cls, value: Any) -> Any:
        # An environment value arrives as text: "a,b" or a JSON list '["a", "b"]'.
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                try:
                    return json.loads(value)
                except json.JSONDecodeError as exc:
                    raise ValueError(f'not a JSON list ({exc}); use a,b or ["a", "b"]') from exc
            return tuple(t.strip() for t in value.split(",") if t.strip())
        return value

    @property
    def db_path(self) -> Path:
        return self.home / "kb.sqlite"


def _toml_values(home_hint: Path) -> dict[str, Any]:
    explicit = os.environ.get("SEENBEFORE_CONFIG")
    path = Path(explicit) if explicit else home_hint / "config.toml"
    if not path.exists():
        if explicit:
            raise ConfigError(
                f"SEENBEFORE_CONFIG is '{explicit}', which does not exist; "
                "point it at a TOML file or unset it"
            )
        return {}
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:  # a binary is not UTF-8
        raise ConfigError(f"config file {path}: not valid TOML ({exc}); fix the syntax") from exc
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read it ({exc.strerror or exc})") from exc
    section = data.get("seenbefore", data)
    if not isinstance(section, dict):
        raise ConfigError(f"config file {path}: expected a table of settings")
    return dict(section)


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the TOML file, then env vars, then explicit overrides."""
    environment = _environment()
    home_hint = Path(environment.get("home", ".seenbefore"))
    file_values = _toml_values(home_hint)
    init = {k: v for k, v in file_values.items() if k not in environment}
    init.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**init)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"setting '{loc}' is {first.get('input')!r}: {first['msg']}; "
            f"set SEENBEFORE_{loc.upper()} or fix the config file"
        ) from exc
