"""Fixtures: the sample knowledge base ingested once (embedder "none"), copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from seenbefore.config import Settings
from seenbefore.kb import KnowledgeBase
from seenbefore.review import ReviewWorkflow
from seenbefore.security.tokens import Principal
from tests.conftest import EXAMPLES

ALL_TIERS = ("general", "restricted", "security")  # least to most restrictive (configured order)
# Queries against the sample KB (sparse retrieval):
CERT = "partner API TLS certificate expired, handshake failures"  # precedent INC-2021-007
WEBHOOK = "webhook signature verification failing after secret rotation"  # security evidence


def make_settings(home: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"home": home, "embedder": "none", "tiers": ALL_TIERS}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("sample") / "home"
    with KnowledgeBase(make_settings(home)) as kb:
        kb.ingest([EXAMPLES])
        kb.index()  # writes the BM25 file beside the store, so copies start warm
    return home


@pytest.fixture
def home(tmp_path: Path, sample_home: Path) -> Path:
    target = tmp_path / "home"
    shutil.copytree(sample_home, target)
    return target


@pytest.fixture
def settings(home: Path) -> Settings:
    return make_settings(home)


@pytest.fixture
def kb(settings: Settings) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(settings) as base:
        yield base


@pytest.fixture
def workflow(kb: KnowledgeBase, settings: Settings) -> Iterator[ReviewWorkflow]:
    with ReviewWorkflow(kb, settings) as wf:
        yield wf


@pytest.fixture
def alice() -> Principal:
    return Principal("alice", "reviewer", ALL_TIERS)


@pytest.fixture
def bob() -> Principal:
    """A reviewer who holds the general tier only."""
    return Principal("bob", "reviewer", ("general",))
