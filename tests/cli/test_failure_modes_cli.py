"""`show` and `search` carry each postmortem's failure mode: the author's type plainly, an
inferred one marked as inferred; `search --type` keeps only postmortems of that mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from tests.conftest import cli_home, postmortem_text
from tests.knowledge.test_failure_modes import TLS_POSTMORTEM

runner = CliRunner()


@pytest.fixture(autouse=True)
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_home(tmp_path, monkeypatch)
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "tls.md").write_text(TLS_POSTMORTEM)  # untyped
    (folder / "pool.md").write_text(postmortem_text("POOL-1", type="connection-pool-exhaustion"))
    (folder / "oom.md").write_text(
        postmortem_text(
            "OOM-1",
            title="Search nodes restarted by the OOM killer",
            type="OOM",  # an alias: its failure mode is memory-leak
            body="## Summary\nHeap grew until the kernel killed the search nodes.\n",
        )
    )
    assert runner.invoke(app, ["ingest", str(folder)]).exit_code == 0


def run(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_show_marks_an_inferred_type_and_prints_the_authors_plainly() -> None:
    shown = runner.invoke(app, ["show", "T-1"])
    assert shown.exit_code == 0, shown.output
    line = next(ln for ln in shown.stdout.splitlines() if " type " in f" {ln} ")
    mode = run("show", "T-1")["failure_mode"]
    assert f"certificate-expiry (inferred, p {mode['p']:.2f})" in line
    typed = runner.invoke(app, ["show", "OOM-1"]).stdout
    type_line = next(ln for ln in typed.splitlines() if " type " in f" {ln} ")
    assert "oom" in type_line and "inferred" not in type_line  # the author's word, as written


def test_show_json_keeps_type_and_adds_the_failure_mode() -> None:
    untyped = run("show", "T-1")
    assert untyped["type"] == ""
    mode = untyped["failure_mode"]
    assert mode["slug"] == "certificate-expiry" and mode["inferred"] is True
    assert 0.5 <= mode["p"] <= 1.0 and mode["known"] is True
    typed = run("show", "OOM-1")
    assert typed["type"] == "oom"
    assert typed["failure_mode"] == {
        "slug": "memory-leak",
        "inferred": False,
        "p": 1.0,
        "known": True,
    }


def test_search_json_carries_each_results_failure_mode() -> None:
    found = run("search", "certificate expired, TLS handshake failures", "-k", "3")
    by_id = {r["id"]: r for r in found["results"]}
    assert by_id["T-1"]["type"] == "" and by_id["T-1"]["failure_mode"]["inferred"] is True
    assert by_id["T-1"]["failure_mode"]["slug"] == "certificate-expiry"
    for r in found["results"]:
        assert set(r["failure_mode"]) == {"slug", "inferred", "p", "known"}


def test_search_type_keeps_only_postmortems_of_that_failure_mode() -> None:
    query = ("errors for twenty minutes after the expiry", "-k", "5")
    everything = {r["id"] for r in run("search", *query)["results"]}
    assert {"T-1", "POOL-1"} <= everything
    inferred = run("search", *query, "--type", "certificate-expiry")["results"]
    assert [r["id"] for r in inferred] == ["T-1"]
    by_alias = run("search", "heap grew", "--type", "memory")["results"]  # alias of memory-leak
    assert [r["id"] for r in by_alias] == ["OOM-1"]
    none = runner.invoke(app, ["search", *query, "--type", "dns-failure"])
    assert none.exit_code == 2
    assert "no postmortem you may see has failure mode 'dns-failure'" in none.output


def test_search_text_output_marks_inferred_types() -> None:
    out = runner.invoke(app, ["search", "certificate expired TLS", "-k", "2"]).stdout
    line = next(ln for ln in out.splitlines() if "T-1" in ln)
    assert "certificate-expiry (inferred)" in line


def test_a_stored_catch_all_type_is_shown_as_the_inferred_mode() -> None:
    # a KB ingested before the validator set "uncategorized" aside still stores it; the failure
    # mode ignores it, and the terminal says what the failure mode says, not the stored word
    from seenbefore.cli.search import _kind

    inferred = {"slug": "disk-full", "inferred": True, "known": True, "p": 0.9}
    assert _kind("uncategorized", inferred) == "disk-full (inferred)"
    assert (
        _kind("oom", {"slug": "memory-leak", "inferred": False, "known": True, "p": 1.0}) == "oom"
    )
    assert _kind("", None) == "-"


def test_type_finds_the_mode_the_text_names_under_an_authors_coarse_word(tmp_path: Path) -> None:
    """graphrca files Azure's leap-day certificate outage under "Software": an author's word
    that is no failure mode hid the mode its text names from `--type certificate-expiry`."""
    coarse = tmp_path / "coarse"
    coarse.mkdir()
    tls = TLS_POSTMORTEM.replace("id: T-1", "id: T-2\ntype: Software")
    (coarse / "tls2.md").write_text(tls)
    assert runner.invoke(app, ["ingest", str(coarse)]).exit_code == 0
    query = ("certificate expired TLS handshake", "-k", "5")
    found = {r["id"] for r in run("search", *query, "--type", "certificate-expiry")["results"]}
    assert found == {"T-1", "T-2"}
    by_word = {r["id"] for r in run("search", *query, "--type", "software")["results"]}
    assert by_word == {"T-2"}  # the author's word still passes a filter for itself
    one = runner.invoke(app, ["search", *query, "--type", "software"]).stdout
    assert " search, 1 result — " in one  # not "1 results"


def test_a_query_that_names_another_failure_is_told_so_beside_the_verdict() -> None:
    shown = runner.invoke(
        app, ["search", "disk full: no space left on device, every write to the volume failed"]
    )
    assert shown.exit_code == 0, shown.output
    out = " ".join(shown.stdout.split())
    assert "precedent found" not in out
    first = run("search", "disk full: no space left on device, every write to the volume failed")
    top = first["results"][0]["failure_mode"]
    named = top["slug"] + (f" (inferred, p {top['p']:.2f})" if top["inferred"] else "")
    assert "the query reads as disk-full (inferred, p 0." in out
    assert f"the first postmortem is {named}: another failure" in out
    # the JSON says the same, with the query's own mode
    assert first["query_failure_mode"]["slug"] == "disk-full"
    assert first["query_failure_mode"]["inferred"] is True
    assert first["another_failure"] is not None and "reads as disk-full" in first["another_failure"]


def test_a_query_of_the_first_postmortems_own_failure_or_none_is_not_told_so() -> None:
    pool = runner.invoke(
        app, ["search", "connection pool exhausted, all connections in use, requests wait"]
    )
    assert pool.exit_code == 0, pool.output
    assert "the query reads as" not in pool.stdout
    vague = runner.invoke(app, ["search", "some requests are slower than usual"])
    assert vague.exit_code == 0, vague.output
    assert "the query reads as" not in vague.stdout  # it names no failure: nothing to say
