"""`seenbefore review list --tier general,restricted` reads two tiers (as `token create --tiers`
does), not one tier named "general,restricted" that no review is in."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.investigation.query import from_text
from seenbefore.kb import KnowledgeBase
from seenbefore.review import ReviewWorkflow
from seenbefore.security.tokens import Principal
from tests.review.conftest import make_settings

SPLIT_BRAIN = "Redis split brain during zone isolation: sessions and consent writes discarded"


def test_review_list_takes_a_comma_list_of_tiers(home: Path) -> None:
    settings = make_settings(home)
    carol = Principal("carol", "reviewer", ("general", "restricted"))
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as workflow:
        review = workflow.start(from_text(SPLIT_BRAIN), principal=carol)
    assert review.access_tier == "restricted"  # its evidence holds a restricted postmortem

    env = {
        "SEENBEFORE_HOME": str(home),
        "SEENBEFORE_EMBEDDER": "none",
        "SEENBEFORE_TIERS": "general",
    }
    runner = CliRunner()
    for flags in (["--tier", "general,restricted"], ["--tier", "general", "--tier", "restricted"]):
        result = runner.invoke(app, ["review", "list", *flags, "--json"], env=env)
        assert result.exit_code == 0, result.output
        assert [r["id"] for r in json.loads(result.stdout)["reviews"]] == [review.id], flags
        shown = runner.invoke(app, ["review", "show", review.id, *flags, "--json"], env=env)
        assert shown.exit_code == 0, shown.output
    hidden = runner.invoke(app, ["review", "list", "--tier", "general", "--json"], env=env)
    assert hidden.exit_code == 0 and json.loads(hidden.stdout)["reviews"] == []
