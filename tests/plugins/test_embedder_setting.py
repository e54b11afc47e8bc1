"""The ``embedder`` setting picks a plugin embedder by name (the built-in ``hashing`` here; the
pip-installed third-party one is in test_third_party.py), built with ``embedder_options``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seenbefore import plugins
from seenbefore.config import Settings, load_settings
from seenbefore.errors import ConfigError
from seenbefore.kb import KnowledgeBase
from seenbefore.types import SearchFilters

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "examples" / "postmortems"


def test_a_plugin_name_in_the_setting_builds_that_embedder(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, embedder="hashing", embedder_options={"dim": 16})
    with KnowledgeBase(settings) as kb:
        kb.ingest([SAMPLES / "INC-2021-007-partner-api-cert-expired.md"])
        embedder = kb.embedder()
        assert embedder is not None and embedder.name == "hashing-16"
        assert kb.store.embedder_info() == ("hashing-16", 16)
        assert kb.dense_family() == "hashing-16"
        result = kb.search("certificate expired", SearchFilters())
        assert [c.doc_id for c in result.candidates] == ["INC-2021-007"]
        # the vector stored is the hashing embedder's own, unit length
        vector = embedder.embed(["certificate expired"])[0]
        assert vector.shape == (16,) and np.isclose(float(np.linalg.norm(vector)), 1.0)


def test_the_setting_reads_env_and_normalises_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", " Hashing ")
    monkeypatch.setenv("SEENBEFORE_EMBEDDER_OPTIONS", '{"dim": 8}')
    settings = load_settings()
    assert (settings.embedder, settings.embedder_options) == ("hashing", {"dim": 8})
    assert plugins.configured_embedder(settings).name == "hashing-8"  # type: ignore[union-attr]


def test_an_unknown_plugin_name_lists_the_known_ones(tmp_path: Path) -> None:
    plugins.refresh()
    with pytest.raises(ConfigError) as caught:
        KnowledgeBase(Settings(home=tmp_path, embedder="nosuch"))
    message = str(caught.value)
    assert message.startswith("no embedder named 'nosuch' is registered (known: ")
    assert "hashing" in message and "minilm" in message
    assert "the embedder setting (SEENBEFORE_EMBEDDER)" in message


def test_options_for_a_built_in_choice_and_bad_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"embedder_options \['dim'\] are set but the embedder"):
        plugins.configured_embedder(Settings(home=tmp_path, embedder_options={"dim": 8}))
    with pytest.raises(ConfigError, match="hashing embedder dim is 0; expected a positive"):
        KnowledgeBase(Settings(home=tmp_path, embedder="hashing", embedder_options={"dim": 0}))
    with pytest.raises(ConfigError, match="setting 'embedder' is 'no spaces!'"):
        load_settings(embedder="no spaces!")
    for name in ("auto", "minilm", "lsa", "none"):
        assert plugins.configured_embedder(Settings(home=tmp_path, embedder=name)) is None


def test_a_factory_that_builds_no_embedder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plugins, "embedder_factory", lambda name: lambda options: object())
    with pytest.raises(ConfigError, match="embedder plugin 'odd' built a object, which lacks"):
        plugins.configured_embedder(Settings(home=tmp_path, embedder="odd"))
