"""Settings read ``SEENBEFORE_<NAME>`` as they did under pydantic-settings: any case, tables as
JSON, lists as ``a,b`` or JSON; a given value or override beats the environment, and the
environment beats the config file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seenbefore.config import Settings, load_settings
from seenbefore.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("SEENBEFORE_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path))


def test_any_case_of_the_name_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("seenbefore_rrf_k", "7")
    monkeypatch.setenv("SeenBefore_Chunk_Words", "90")
    settings = Settings()
    assert settings.rrf_k == 7 and settings.chunk_words == 90


def test_tables_are_json_and_lists_are_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEENBEFORE_EMBEDDER_OPTIONS", '{"dim": 64}')
    monkeypatch.setenv("SEENBEFORE_NOTIFY", '{"routes": []}')
    monkeypatch.setenv("SEENBEFORE_TIERS", "general, ops")
    settings = Settings()
    assert settings.embedder_options == {"dim": 64}
    assert settings.notify == {"routes": []}
    assert settings.tiers == ("general", "ops")


def test_a_table_that_is_not_json_is_refused_with_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEENBEFORE_EMBEDDER_OPTIONS", "dim=64")
    with pytest.raises(ConfigError, match=re.escape("setting 'embedder_options' is 'dim=64'")):
        load_settings()


def test_a_bad_number_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEENBEFORE_RRF_K", "many")
    with pytest.raises(ConfigError, match="SEENBEFORE_RRF_K"):
        load_settings()


def test_given_beats_environment_beats_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "config.toml").write_text("rrf_k = 11\nchunk_words = 99\nlsa_dim = 64\n")
    monkeypatch.setenv("seenbefore_rrf_k", "22")  # lower case still beats the file
    monkeypatch.setenv("SEENBEFORE_CHUNK_WORDS", "120")
    settings = load_settings(chunk_words=140)
    assert (settings.rrf_k, settings.chunk_words, settings.lsa_dim) == (22, 140, 64)
    assert Settings(rrf_k=3).rrf_k == 3


def test_unknown_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEENBEFORE_NOT_A_SETTING", "x")
    assert Settings().rrf_k == 60


def test_lazy_guard_patterns_match_as_compiled_ones() -> None:
    # the guard's patterns compile on first use; they must behave as re.compile'd ones
    from seenbefore import textguard_lexicon as lex

    pattern = lex.rx("ignore previous instructions")
    compiled = re.compile(r"ignore[\s>*_]+previous[\s>*_]+instructions", re.I | re.M)
    text = "Please IGNORE\n> previous *instructions* now"
    assert pattern.search(text) is not None
    assert pattern.search(text).span() == compiled.search(text).span()  # type: ignore[union-attr]
    assert pattern.pattern == compiled.pattern and pattern.flags == compiled.flags
    assert pattern.sub("-", "ignore previous instructions") == "-"
