"""The plugin registry: entry points found in real package metadata (dist-info folders written
to a temporary sys.path entry), the built-in fallback, and what each failure says."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoints
from pathlib import Path

import pytest

from seenbefore import plugins
from seenbefore.errors import ConfigError
from seenbefore.investigation.llm import OpenAICompatibleLLM, llm_from_settings
from seenbefore.notify import build_notifiers, slack
from seenbefore.retrieval.embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    plugins.refresh()
    yield
    plugins.refresh()


def fake_dist(root: Path, name: str, entry_points: str, module: str = "") -> None:
    """A minimal installed distribution: METADATA, entry_points.txt and one module."""
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    if module:
        (root / f"{name.replace('-', '_')}.py").write_text(module)


def test_the_built_ins_declared_in_pyproject_match_the_fallback_table() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    assert {group: dict(table) for group, table in declared.items()} == {
        group: dict(table) for group, table in plugins.BUILTINS.items()
    }


def test_built_ins_load_without_entry_point_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: EntryPoints(()))
    assert plugins.notifier_factory("slack") is slack.from_config
    assert plugins.names(plugins.NOTIFIERS) == ["jsm", "opsgenie", "pagerduty", "slack", "teams"]
    notifier = build_notifiers({"slack": {"webhook_url": "https://chat.example.test/h/SECRET1"}})
    assert type(notifier["slack"]).__name__ == "SlackNotifier"


def test_an_installed_entry_point_replaces_a_built_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dist(
        tmp_path,
        "my-slack",
        "[seenbefore.notifiers]\nslack = my_slack:build\n",
        "def build(table, *, client=None):\n    return ('mine', dict(table))\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert build_notifiers({"slack": {"x": 1}}) == {"slack": ("mine", {"x": 1})}


def test_two_packages_registering_one_name_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dist(tmp_path / "a", "pager-a", "[seenbefore.notifiers]\npager = pager_a:build\n")
    fake_dist(tmp_path / "b", "pager-b", "[seenbefore.notifiers]\npager = pager_b:build\n")
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    with pytest.raises(ConfigError, match="registered more than once") as caught:
        plugins.notifier_factory("pager")
    assert "package pager-a 1.0" in str(caught.value) and "package pager-b 1.0" in str(caught.value)


def test_an_entry_point_that_is_not_callable_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dist(tmp_path, "odd", "[seenbefore.embedders]\nodd = odd:VALUE\n", "VALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"embedder plugin 'odd' .* is a int, not a factory"):
        plugins.embedder_factory("odd")


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        plugins.load(plugins.LLM_CLIENTS, "anthropic")
    message = str(caught.value)
    assert message.startswith("no LLM client named 'anthropic' is registered (known: openai)")
    assert "'seenbefore.llm_clients'" in message and "SEENBEFORE_LLM_CLIENT" in message
    with pytest.raises(ConfigError, match=r"plugin group 'seenbefore\.nope' is not one of"):
        plugins.names("seenbefore.nope")


def test_llm_client_is_chosen_by_setting_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "m"}
    assert isinstance(llm_from_settings(settings), OpenAICompatibleLLM)
    assert llm_from_settings({}) is None  # openai, not configured
    monkeypatch.setenv("SEENBEFORE_LLM_CLIENT", "nope")
    with pytest.raises(ConfigError, match="no LLM client named 'nope'"):
        llm_from_settings(settings)
    assert isinstance(llm_from_settings({**settings, "llm_client": "openai"}), OpenAICompatibleLLM)


def test_built_in_embedder_factories() -> None:
    embedder = plugins.embedder_factory("hashing")({"dim": 8})
    assert isinstance(embedder, HashingEmbedder) and embedder.dim == 8
    with pytest.raises(ConfigError, match="hashing embedder dim is 0; expected a positive"):
        plugins.embedder_factory("hashing")({"dim": 0})
    with pytest.raises(ConfigError, match=r"options \['size'\] are unknown"):
        plugins.embedder_factory("hashing")({"size": 8})


def test_a_failing_factory_closes_the_notifiers_already_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dist(
        tmp_path,
        "boom",
        "[seenbefore.notifiers]\nboom = boom:build\n",
        "from seenbefore.errors import ConfigError\n"
        "def build(table, *, client=None):\n    raise ConfigError('notify.boom.level is bad')\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    closed: list[str] = []
    monkeypatch.setattr(slack.SlackNotifier, "close", lambda self: closed.append("slack"))
    config = {"slack": {"webhook_url": "https://chat.example.test/h/SECRET2"}, "boom": {}}
    with pytest.raises(ConfigError, match=r"notify\.boom\.level is bad"):
        build_notifiers(config)
    assert closed == ["slack"]
