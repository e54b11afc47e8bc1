"""`seenbefore <command>` builds an app holding that command alone; it must behave as the whole
app does for that command (help, parsing, errors), and the registry must name every command."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from seenbefore.cli import app as cli_app
from seenbefore.cli.app import COMMANDS, build_app

runner = CliRunner()


def _commands(built: typer.Typer) -> dict[str, object]:
    group = get_command(built)
    commands = getattr(group, "commands", None)  # typer's own Group, not click's
    assert isinstance(commands, dict)
    return dict(commands)


def test_the_whole_app_holds_every_registered_command() -> None:
    assert sorted(_commands(cli_app.app)) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_one_command_app_helps_as_the_whole_app(name: str) -> None:
    alone = build_app(only=name)
    assert list(_commands(alone)) == [name]
    whole = runner.invoke(cli_app.app, [name, "--help"], terminal_width=80)
    single = runner.invoke(alone, [name, "--help"], terminal_width=80)
    assert whole.exit_code == single.exit_code == 0
    assert single.output == whole.output


def test_a_one_command_app_refuses_a_bad_option_as_the_whole_app() -> None:
    args = ["search", "checkout slow", "--mode", "psychic"]
    whole = runner.invoke(cli_app.app, args, terminal_width=80)
    single = runner.invoke(build_app(only="search"), args, terminal_width=80)
    assert whole.exit_code == single.exit_code == 2
    assert single.output == whole.output and "psychic" in single.output


def test_search_imports_neither_the_detector_nor_the_service() -> None:
    # what the per-command app is for: a search loads the search path, not the rest
    code = (
        "import sys; sys.argv = ['seenbefore', 'search', '--help']\n"
        "from seenbefore.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('seenbefore.detection', 'seenbefore.service', 'fastapi',"
        " 'seenbefore.evaluation') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout, out.stdout[-2000:]


def test_an_unknown_command_gets_the_whole_apps_suggestion() -> None:
    code = (
        "import sys; sys.argv = ['seenbefore', 'serch', 'x']\n"
        "from seenbefore.cli.app import main\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2
    assert "serch" in out.stderr and "search" in out.stderr
