from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from tests.conftest import REPO
from tests.review.conftest import CERT, WEBHOOK
from tests.review.test_account import OFF_TOPIC


def run(home: Path, *args: str, tiers: str = "general,restricted,security") -> tuple[int, str]:
    env = {"SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER": "none", "SEENBEFORE_TIERS": tiers}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.output


def test_review_commands_end_to_end(home: Path) -> None:
    code, out = run(home, "review", "start", CERT, "--severity", "SEV2", "--json")
    assert code == 0, out
    [started] = json.loads(out)["reviews"]
    review_id = started["id"]
    assert started["draft"]["cited_incidents"][0] == "INC-2021-007"
    code, out = run(home, "review", "start", WEBHOOK, "--severity", "SEV1")
    assert code == 0 and "tier security" in out

    code, out = run(home, "review", "list", "--json", tiers="general")
    assert [r["id"] for r in json.loads(out)["reviews"]] == [review_id]
    code, out = run(home, "review", "list")
    assert code == 0 and "reviews (pending): 2" in out
    # at 80 columns the id stays whole (`review show` takes it) and the summary reads in lines
    # of words, not a few letters a line
    assert review_id in out and "…" not in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "Precedent found: INC-2021-007" in " ".join(
        line.split("│")[2].strip() for line in out.splitlines() if line.count("│") == 3
    )

    code, out = run(home, "review", "dismiss", review_id, "--reason", "nope")
    assert code == 2 and "expected one of wrong_precedent" in out
    code, out = run(home, "review", "dismiss", review_id, "--reason", "wrong_precedent", "--note",
                    "pinned root")  # fmt: skip
    assert code == 0 and "re-investigated: round 2" in out

    code, out = run(home, "review", "approve", review_id, "--root-cause", "Pinned root CA",
                    "--json")  # fmt: skip
    assert code == 0, out
    approved = json.loads(out)["review"]
    assert approved["status"] == "approved" and approved["postmortem_id"] == f"PM-{review_id}"
    code, out = run(home, "review", "approve", review_id)
    assert code == 5 and "already approved" in out  # ConflictError's exit code

    code, out = run(home, "review", "show", review_id)
    assert code == 0 and "history" in out
    assert f"{review_id} approved;" in out  # not "approved (approved)"
    # the history at 80 columns: times and actors whole, the dismissal's reason and note read
    history = out[out.index("history") :]
    assert "…" not in history and all(len(line) <= 80 for line in history.splitlines())
    assert "wrong_precedent; pinned root" in history
    code, out = run(home, "review", "show", review_id, "--json")
    assert [e["action"] for e in json.loads(out)["review"]["history"]] == [
        "started",
        "drafted",
        "dismissed",
        "drafted",
        "approved",
        "postmortem_written",
    ]
    code, out = run(home, "review", "show", "rev-missing")
    assert code == 3 and "no review with id 'rev-missing'" in out

    code, out = run(home, "show", f"PM-{review_id}", "--json")
    assert code == 0 and json.loads(out)["extra"]["provenance"] == "approved-draft"
    code, out = run(home, "audit", "--json")
    actions = [r["action"] for r in json.loads(out)["records"]]
    assert actions.count("review.start") == 2 and "review.approve" in actions


def test_approving_no_precedent_asks_for_the_account(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = []
    for _ in range(2):
        code, out = run(home, "review", "start", OFF_TOPIC, "--json")
        assert code == 0, out
        [started] = json.loads(out)["reviews"]
        assert started["draft"]["verdict"] == "no precedent"
        ids.append(started["id"])
    code, out = run(home, "review", "approve", ids[0], "--root-cause", "A firmware timer bug.")
    assert code == 2, out
    flat = " ".join(out.split())
    assert "cannot be approved as drafted: its draft says no precedent" in flat
    assert "Write --resolution (what fixed it), --type (the failure mode" in flat
    code, out = run(home, "review", "approve", ids[0], "--root-cause", "A firmware timer bug.",
                    "--resolution", "Flashed firmware 2.4.", "--type", "hardware-failure",
                    "--json")  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["review"]["status"] == "approved"
    # at a terminal the missing parts are asked for, one prompt each
    monkeypatch.setattr("seenbefore.cli.review._interactive", lambda: True)
    env = {"SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER": "none",
           "SEENBEFORE_TIERS": "general,restricted,security"}  # fmt: skip
    answers = "The reminder timer looped.\nReplaced the control board.\nhardware-failure\n"
    result = CliRunner().invoke(app, ["review", "approve", ids[1]], env=env, input=answers)
    assert result.exit_code == 0, result.output
    assert "root cause (what was it?): " in result.output and "known types: " in result.output
    code, out = run(home, "show", f"PM-{ids[1]}", "--json")
    shown = json.loads(out)
    assert shown["type"] == "hardware-failure"
    assert "The reminder timer looped." in json.dumps(shown)


def test_calibrate_needs_exactly_one_source(home: Path) -> None:
    code, out = run(home, "calibrate", "--self-test", "--from-reviews")
    assert code == 2 and "one of the three" in out
    code, out = run(home, "calibrate", "--from-reviews")
    assert code == 2 and "no review decisions recorded yet" in out


@pytest.mark.integration
def test_the_cli_and_labels_load_without_langgraph() -> None:
    """LangGraph is the `server` extra: the CLI (and calibrate --from-reviews) must not need it."""
    code = (
        "import sys, seenbefore.cli.app, seenbefore.review.labels; "
        "print(sorted(m for m in sys.modules if m.startswith('langgraph')))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"
