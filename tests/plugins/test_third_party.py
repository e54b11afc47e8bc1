"""A third-party plugin installs as its own package and is found by entry point.

pip installs tests/plugins/seenbefore_echo_notifier (no index, no dependencies: offline) into a
target folder; a fresh interpreter with that folder on PYTHONPATH must find its notifier,
embedder and LLM client by name, build the notifier from a ``[notify.echo]`` table and route an
anomaly to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).parent / "seenbefore_echo_notifier"

CHECK = textwrap.dedent(
    """
    import json, sys
    from seenbefore import plugins
    from seenbefore.errors import ConfigError
    from seenbefore.notify import build_router
    from tests.notify.conftest import make_anomaly

    out, outbox = sys.argv[1], sys.argv[2]
    report = {"notifiers": plugins.names(plugins.NOTIFIERS),
              "embedders": plugins.names(plugins.EMBEDDERS),
              "llm_clients": plugins.names(plugins.LLM_CLIENTS),
              "imported_before": "seenbefore_echo_notifier" in sys.modules}
    config = {"echo": {"path": out, "prefix": "got "}, "routes": {"SEV1": ["echo"]}}
    with build_router(config, outbox_path=outbox) as router:
        report["lazy"] = "seenbefore.notify.teams" not in sys.modules
        result = router.notify(make_anomaly(), "latency up")["echo"]
    report["result"] = [result.ok, result.body]
    vectors = plugins.embedder_factory("echo")({}).embed(["ab", "b"])
    report["vector"] = [round(float(v), 4) for v in vectors[0][:3]]
    from seenbefore.investigation.llm import llm_from_settings
    report["llm"] = llm_from_settings({"llm_client": "echo"}).complete([]).text
    try:
        build_router({"echo-broken": {}}, outbox_path=outbox)
    except ConfigError as exc:
        report["broken"] = str(exc)
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The echo plugin pip-installed (offline) into a target folder; its path."""
    root = tmp_path_factory.mktemp("echo-plugin")
    source = root / "src"
    shutil.copytree(PACKAGE, source)  # setuptools writes build/ and egg-info beside the source
    target = root / "target"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--quiet",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PIP_NO_INPUT": "1"},
    )
    return target


def _run_child(script: str, args: list[str], env: dict[str, str], cwd: Path) -> Any:
    """Run ``script`` in a fresh interpreter; the JSON object its last output line holds."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pip_installed_plugin_is_found_built_and_reached(installed: Path, tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "echo.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(repo)])}
    report = _run_child(CHECK, [str(out), str(tmp_path / "outbox.sqlite")], env, tmp_path)
    assert report["notifiers"] == [
        "echo",
        "echo-broken",
        "jsm",
        "opsgenie",
        "pagerduty",
        "slack",
        "teams",
    ]
    assert report["embedders"] == ["echo", "hashing", "minilm"]
    assert report["llm_clients"] == ["echo", "openai"]
    assert report["imported_before"] is False  # listing names imports no plugin
    assert report["lazy"] is True  # building echo imported no other notifier module
    assert report["result"] == [True, "got A-1"]
    [line] = out.read_text().splitlines()
    assert (
        json.loads(line)["anomaly"]["id"] == "A-1" and json.loads(line)["summary"] == "latency up"
    )
    assert report["vector"] == [round(1 / 2**0.5, 4), round(1 / 2**0.5, 4), 0.0]  # "ab"
    assert report["llm"] == '{"summary": "echo"}'
    assert report["broken"].startswith("notifier plugin 'echo-broken' (entry point echo-broken =")
    assert "package seenbefore-echo-notifier 0.1.0" in report["broken"]
    assert "ModuleNotFoundError" in report["broken"]


def test_without_the_plugin_the_name_is_unknown_and_the_error_says_how_to_install(
    tmp_path: Path,
) -> None:
    from seenbefore.errors import ConfigError
    from seenbefore.notify import build_router

    with pytest.raises(ConfigError) as caught:
        build_router({"echo": {"path": "x"}}, outbox_path=tmp_path / "outbox.sqlite")
    message = str(caught.value)
    assert "unknown keys ['echo']" in message
    assert "registered: jsm, opsgenie, pagerduty, slack, teams" in message
    assert "'seenbefore.notifiers'" in message and "pip install" in message


SELECT = textwrap.dedent(
    """
    import json, sys
    from typer.testing import CliRunner
    from seenbefore.cli.app import app

    runner = CliRunner()
    env = {"SEENBEFORE_EMBEDDER": "echo"}
    out = {"ingest": runner.invoke(app, ["ingest", sys.argv[1]], env=env).exit_code}
    out["stats"] = json.loads(runner.invoke(app, ["stats", "--json"], env=env).output)
    dense = runner.invoke(
        app, ["search", "--mode", "dense", "--json", "expired certificate"], env=env
    )
    out["dense"] = json.loads(dense.output)
    print(json.dumps(out))
    """
)


def test_the_embedder_setting_selects_the_installed_plugin_embedder(
    installed: Path, tmp_path: Path
) -> None:
    samples = Path(__file__).resolve().parents[2] / "examples" / "postmortems"
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("INC-2021-007-partner-api-cert-expired.md", "INC-2021-001-inventory-cache-oom.md"):
        shutil.copy(samples / name, docs / name)
    repo = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(installed), str(repo / "src")]),
        "SEENBEFORE_HOME": str(tmp_path / "home"),
    }
    report = _run_child(SELECT, [str(docs)], env, tmp_path)
    assert report["ingest"] == 0
    stats = report["stats"]
    # every chunk was embedded by the plugin's letter counter, found by entry point
    assert stats["active_dense_embedder_name"] == "echo-letters-26"
    assert stats["chunks_without_vectors"] == 0 and stats["documents"] == 2
    results = report["dense"]["results"]
    assert {r["id"] for r in results} == {"INC-2021-007", "INC-2021-001"}
    assert all(r["matched_by"] == "dense" for r in results)
