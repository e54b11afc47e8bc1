"""Every ``--tier`` option takes comma lists (``--tier general,restricted``) and repeats, the way
``token create --tiers`` does, and checks each name with the rule ``--tiers`` uses; an empty or
malformed tier is one clear error (exit 2), never a tier nobody holds that shows nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from seenbefore.cli.app import app
from seenbefore.cli.common import caller_tiers
from seenbefore.config import Settings
from seenbefore.errors import InputError
from tests.conftest import postmortem_text

runner = CliRunner()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.delenv("SEENBEFORE_TIERS", raising=False)
    return tmp_path / "home"


def refused(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line, result.stderr
    for needle in needles:
        assert needle in line, (needle, line)


COMMA_LISTS = [
    (["general,restricted"], ("general", "restricted")),
    (["general", "restricted"], ("general", "restricted")),
    (["general, Restricted", "security"], ("general", "restricted", "security")),
    (["general,restricted", "general"], ("general", "restricted")),  # de-duplicated
    (["general,"], ("general",)),  # a trailing comma, as --tiers allows
]


def test_comma_lists_and_repeats() -> None:
    cfg = Settings(tiers=("general", "security"))
    assert [caller_tiers(given, cfg) for given, _ in COMMA_LISTS] == [t for _, t in COMMA_LISTS]
    # no --tier at all: the configured tiers (SEENBEFORE_TIERS)
    assert caller_tiers(None, cfg) == caller_tiers([], cfg) == ("general", "security")


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ([""], "--tier is empty"),
        (["  "], "--tier is empty"),
        ([","], "--tier is empty"),
        (["general", ""], "--tier is empty"),
        (["a b"], "'a b' is not a tier name"),
        (["general,re/stricted"], "'re/stricted' is not a tier name"),
        (["x" * 65], "is not a tier name"),
    ],
)
def test_empty_and_malformed_tiers_are_refused(given: list[str], needle: str) -> None:
    with pytest.raises(InputError, match=needle) as caught:
        caller_tiers(given, Settings())
    assert "e.g. --tier general" in str(caught.value) or "lower-case letters" in str(caught.value)


def _kb(folder: Path) -> None:
    folder.mkdir()
    (folder / "open.md").write_text(postmortem_text("OPEN-1", title="Pool drained in checkout"))
    (folder / "closed.md").write_text(
        postmortem_text("SECRET-1", title="Pool drained in payments", access_tier="restricted")
    )
    result = runner.invoke(app, ["ingest", str(folder), "--json"])
    assert result.exit_code == 0, result.output


def test_search_show_and_stats_take_comma_lists(tmp_path: Path) -> None:
    _kb(tmp_path / "kb")
    for flags in (["--tier", "general,restricted"], ["--tier", "general", "--tier", "restricted"]):
        _sees_both(flags)


def _sees_both(flags: list[str]) -> None:
    result = runner.invoke(app, ["search", "pool drained", "-k", "5", *flags, "--json"])
    assert result.exit_code == 0, result.output
    assert {r["id"] for r in json.loads(result.stdout)["results"]} == {"OPEN-1", "SECRET-1"}
    shown = runner.invoke(app, ["show", "SECRET-1", *flags, "--json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout)["access_tier"] == "restricted"
    stats = runner.invoke(app, ["stats", *flags, "--json"])
    assert stats.exit_code == 0 and json.loads(stats.stdout)["documents"] == 2


@pytest.mark.parametrize(
    ("command", "value", "needle"),
    [
        (["search", "pool"], "", "--tier is empty"),
        (["search", "pool"], "a b", "'a b' is not a tier name"),
        (["show", "OPEN-1"], "", "--tier is empty"),
        (["stats"], "general,a b", "'a b' is not a tier name"),
        (["review", "list"], "", "--tier is empty"),
        (["review", "list"], "a b", "'a b' is not a tier name"),
    ],
)
def test_every_tier_option_refuses_bad_names(command: list[str], value: str, needle: str) -> None:
    refused(runner.invoke(app, [*command, "--tier", value]), needle)
