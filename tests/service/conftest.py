"""A small knowledge base (two general postmortems, one restricted), tokens for every role, and
the app under FastAPI's TestClient (the lifespan runs: the KB is loaded before the first call)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from seenbefore.config import Settings
from seenbefore.kb import KnowledgeBase
from seenbefore.security.tokens import TokenStore
from seenbefore.service.app import create_app
from tests.conftest import postmortem_text

POOL_BODY = """## Summary
Checkout failed for forty minutes.

## Detection
p99 latency rose eightfold and database connections sat at the pool limit.

## Root cause
A fraud check held database connections open during slow calls, exhausting the pool.

## Resolution
- Restarted the checkout pods to release connections.
- Moved the fraud call outside the transaction.
"""

DNS_BODY = """## Summary
Internal name resolution failed for twelve minutes.

## Detection
SERVFAIL from the cluster resolvers; services could not look up internal hostnames.

## Root cause
The resolver pods were overloaded after a cache flush and dropped queries.

## Resolution
Scaled the resolver deployment and added a node-local DNS cache.
"""

VAULT_BODY = """## Summary
Payment vault tokens could not be decrypted for nine minutes.

## Detection
Card payments failed with decryption errors from the vault service.

## Root cause
The vault's key rotation job published a new key before replicas had loaded it.

## Resolution
Rolled back the key version and staged rotations behind a replica readiness check.
"""


def write_kb(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pool.md").write_text(
        postmortem_text(
            "POOL-1",
            title="Checkout pool exhaustion",
            body=POOL_BODY,
            date="2025-06-01",
            signals="[db_connections_in_use, p99_latency, error_rate]",
            services="[checkout-api]",
            type="connection-pool-exhaustion",
        )
    )
    (folder / "dns.md").write_text(
        postmortem_text(
            "DNS-1",
            title="Cluster resolver outage",
            body=DNS_BODY,
            date="2024-02-01",
            type="dns",
        )
    )
    (folder / "vault.md").write_text(
        postmortem_text(
            "VAULT-1",
            title="Payment vault key rotation broke decryption",
            body=VAULT_BODY,
            date="2024-09-09",
            access_tier="restricted",
            type="key-rotation",
        )
    )
    return folder


def service_settings(home: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home,
        "embedder": "none",
        "log_sample_fraction": 1.0,
        "rate_limit_per_minute": 100_000,
        "tiers": ("general",),
        "service_tiers": ("general",),
    }
    values.update(overrides)
    return Settings(**values)


ROLES = ("viewer", "responder", "reviewer", "admin")


@dataclass
class Service:
    client: TestClient
    app: FastAPI
    settings: Settings
    tokens: dict[str, str]  # role (and "restricted_admin") -> plaintext

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def as_(self, who: str, method: str, url: str, **kwargs: Any) -> Any:
        return self.client.request(method, url, headers=self.headers(who), **kwargs)


def prepare_home(home: Path, docs: Path, settings: Settings) -> dict[str, str]:
    """Ingest the small KB and create one token per role (general) plus a restricted admin."""
    tokens: dict[str, str] = {}
    with KnowledgeBase(settings) as kb:
        kb.ingest([write_kb(docs)])
        store = TokenStore(kb.store)
        for role in ROLES:
            tokens[role], _ = store.create(f"{role}-user", role, ["general"])
        tokens["restricted_admin"], _ = store.create(
            "root-user", "admin", ["general", "restricted"]
        )
        tokens["restricted_viewer"], _ = store.create(
            "vault-viewer", "viewer", ["general", "restricted"]
        )
    return tokens


MakeService = Callable[..., Service]


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[MakeService]:
    opened: list[TestClient] = []

    def make(**overrides: Any) -> Service:
        home = tmp_path / f"home{len(opened)}"
        settings = service_settings(home, **overrides)
        tokens = prepare_home(home, tmp_path / f"docs{len(opened)}", settings)
        app = create_app(settings)
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        opened.append(client)
        return Service(client, app, settings, tokens)

    yield make
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def service(make_service: MakeService) -> Service:
    return make_service()


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` whose labels include ``labels``."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total
