"""A postmortem's own words reach the terminal as written. Rich reads ``[...]`` as markup: a
title or body holding ``[/]`` (a regex, a log line) made `search`, `show` and `investigate`
die with a MarkupError traceback, and ``[error]`` vanished from the line it was in."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from tests.conftest import cli_home, postmortem_text

runner = CliRunner()
TITLE = "Router regex [/] dropped [error] lines"
BODY = "## Summary\nThe router regex [/] matched every [error] line and dropped routes.\n"


@pytest.fixture(autouse=True)
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_home(tmp_path, monkeypatch)
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "a.md").write_text(postmortem_text("RTR-1", title=f'"{TITLE}"', body=BODY))
    assert runner.invoke(app, ["ingest", str(folder)]).exit_code == 0


def flat(output: str) -> str:
    return " ".join(output.replace("│", " ").split())


@pytest.mark.parametrize(
    "args",
    [
        ["search", "router regex dropped routes"],
        ["show", "RTR-1"],
        ["investigate", "router regex dropped routes"],
        ["review", "start", "router regex [/] dropped routes", "--severity", "SEV[/]2"],
    ],
)
def test_bracketed_words_are_printed_not_read_as_markup(args: list[str]) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "[/]" in result.output and "[error]" in flat(result.output)


def test_the_review_queue_prints_them_too() -> None:
    started = runner.invoke(
        app, ["review", "start", "router regex [/] routes", "--severity", "SEV[/]2"]
    )
    assert started.exit_code == 0, started.output
    listed = runner.invoke(app, ["review", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "SEV[/]2" in listed.output
    # each row names what it is about (every "no precedent" draft's summary is one sentence)
    assert "router regex [/] routes" in listed.output


def test_a_token_named_with_brackets_is_printed_once_and_listed() -> None:
    # `token create --name "ci [/] bot"` stored the token, then died on the name before
    # printing it: the one chance to copy the token was lost
    made = runner.invoke(
        app, ["token", "create", "--name", "ci [/] bot", "--role", "viewer", "--tiers", "general"]
    )
    assert made.exit_code == 0, made.output
    assert "ci [/] bot" in made.output and made.output.strip().splitlines()[-1].strip()
    listed = runner.invoke(app, ["token", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "ci [/] bot" in listed.output


def test_show_prints_extra_fields_as_lines_not_a_dict(tmp_path: Path) -> None:
    folder = tmp_path / "more"
    folder.mkdir()
    text = postmortem_text(
        "X-1", type="Uncategorized", company="Tarsnap", ticket="null", cited="[]"
    )
    (folder / "x.md").write_text(text)
    assert runner.invoke(app, ["ingest", str(folder)]).exit_code == 0
    shown = runner.invoke(app, ["show", "X-1"], env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.output
    assert "{'" not in shown.output  # no Python repr
    lines = [" ".join(ln.replace("│", " ").split()) for ln in shown.output.splitlines()]
    assert any(ln.endswith("company: Tarsnap") for ln in lines)
    assert "type_as_written: Uncategorized" in lines
    assert "ticket: -" in lines  # a YAML null, not Python's "None"
    assert any(
        ln.endswith("cited: -") for ln in lines
    )  # an empty list (an approved draft citing none): not blank
