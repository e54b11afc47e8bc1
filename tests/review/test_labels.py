"""Review decisions become calibration labels with who said them, and `calibrate --from-reviews`
refits confidence with them joined to the KB's own cases, kept only when the refit beats the live
model on held-out data: dismissals of tops the live model trusted lower the confidence the next
investigation reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.calibration import fitting
from seenbefore.calibration.people import (
    REFIT_RECORD,
    STYLE,
    halves,
    labels,
    maybe_refit,
    refit,
    reviewed_figures,
)
from seenbefore.cli.app import app
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_text
from seenbefore.kb import KnowledgeBase
from seenbefore.review import ReviewWorkflow
from seenbefore.security.tokens import Principal
from tests.review.conftest import ALL_TIERS, CERT, make_settings

# queries whose top result the offline draft cites (not novel) in the sample KB
PRECEDENTED = (
    CERT,
    "inventory-api pods OOMKilled after unbounded per-request cache growth, heap climbing",
    "Aurora failover during availability zone isolation, writer unreachable",
    "orders-db EBS burst balance depleted, disk I/O wait high, slow queries",
    "ALB idle timeout shorter than upstream keepalive causing 502s at the api gateway",
)
PROBE = "TLS certificate expired on the partner integration, handshake errors"


def decide(home: Path, alice: Principal, *, approve: bool) -> None:
    settings = make_settings(home, review_max_rounds=1)
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        for text in PRECEDENTED:
            review = wf.start(from_text(text), principal=alice)
            assert not review.draft["novel"], text
            if approve:
                wf.approve(review.id, reviewer=alice)
                # keep the two knowledge bases' documents identical: only the labels differ
                kb.store.delete(f"PM-{review.id}")
            else:
                wf.dismiss(review.id, reviewer=alice, reason="wrong_precedent")
        said = labels(kb.store)
        assert [r.label for r in said] == [int(approve)] * len(PRECEDENTED)
        assert {r.who for r in said} == {alice.name}  # each label knows who said it


def probe(home: Path) -> float:
    with KnowledgeBase(make_settings(home)) as kb:
        return Investigator(kb, tiers=ALL_TIERS).investigate(from_text(PROBE)).confidence


def test_labels_move_the_next_investigations_confidence(
    tmp_path: Path, sample_home: Path, alice: Principal
) -> None:
    homes = {}
    for name, approve in (("approved", True), ("dismissed", False)):
        homes[name] = shutil.copytree(sample_home, tmp_path / name)
        decide(homes[name], alice, approve=approve)
    before = probe(homes["approved"])
    assert probe(homes["dismissed"]) == before  # decisions alone change nothing
    runner = CliRunner()
    outputs = {}
    for name, home in homes.items():
        result = runner.invoke(
            app,
            ["calibrate", "--from-reviews"],
            env={"SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER": "none"},
        )
        assert result.exit_code == 0, result.output
        outputs[name] = result.output
    assert "self-made cases" in outputs["approved"]  # people's labels join the KB's own cases
    after_approved, after_dismissed = probe(homes["approved"]), probe(homes["dismissed"])
    # the precedence rule: a refit replaces the live model only by beating it on the held-out
    # half of the labels. Dismissals contradict the live model (it called those tops precedents),
    # so their refit wins and lowers the probe; approvals agree with it, so it stays and says so
    assert "vs the live model's" in outputs["dismissed"]
    assert after_dismissed < before
    if "the live model stays" in outputs["approved"]:
        assert after_approved == before
    else:
        assert after_approved >= before
    assert after_approved > after_dismissed


def test_fit_report_and_what_is_left_out(kb: KnowledgeBase, alice: Principal) -> None:
    assert reviewed_figures(kb) is None
    with pytest.raises(ValueError, match="no review decisions"):
        refit(kb)
    settings = make_settings(kb.settings.home, review_max_rounds=1)
    with ReviewWorkflow(kb, settings) as wf:
        for reason in ("right_precedent_wrong_cause", "wrong_precedent"):
            review = wf.start(from_text(CERT), principal=alice)
            wf.dismiss(review.id, reviewer=alice, reason=reason)
        review = wf.start(from_text(CERT), principal=alice)
        wf.approve(review.id, reviewer=alice)
    before = kb.store.get_json("calibration")
    report = refit(kb, persist=False)
    assert report["labels"] == 3
    # stats shows the live model on what reviewers decided, beside its self-made figures
    seen = reviewed_figures(kb)
    assert seen is not None and seen["sparse"]["cases"] == 3
    assert seen["sparse"]["right_first"] == 1  # the approval; both dismissals are label 0
    assert any("right_precedent_wrong_cause left out" in n for n in report["notes"])
    model = report["models"]["sparse"]
    assert (model["labels"], model["positive"]) == (2, 1)
    assert model["self_made_cases"] > 0  # people's labels join the KB's own cases
    assert kb.store.get_json("calibration") == before  # persist=False saved nothing


def test_decisions_refit_calibration_once_enough_labels_arrive(
    tmp_path: Path, sample_home: Path, alice: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the workflow refits by itself once REFIT_EVERY labels arrived (here 5: one decide() run)
    monkeypatch.setattr("seenbefore.calibration.people.REFIT_EVERY", 5)
    auto = shutil.copytree(sample_home, tmp_path / "auto")
    decide(auto, alice, approve=False)
    with KnowledgeBase(make_settings(auto)) as kb:
        assert kb.store.get_json(REFIT_RECORD)["labels"] == 5
    monkeypatch.setattr("seenbefore.calibration.people.REFIT_EVERY", 10)
    home = shutil.copytree(sample_home, tmp_path / "refit")
    decide(home, alice, approve=False)  # 5 dismissals: 5 labels, below REFIT_EVERY (10)
    with KnowledgeBase(make_settings(home)) as kb:
        assert kb.store.get_json(REFIT_RECORD) is None  # not due: nothing ran
        assert maybe_refit(kb, every=10) is None
        report = maybe_refit(kb, every=5)  # due at 5: the same fit as calibrate --from-reviews
        assert report is not None and "sparse" in report["models"]
        record = kb.store.get_json(REFIT_RECORD)
        assert record["labels"] == 5 and "sparse" in record["kept"]
        assert "vs the live model's" in record["precedence"]["sparse"]  # the held-out check ran
        assert maybe_refit(kb, every=5) is None  # counted from the last refit


def test_every_label_that_judges_a_refit_was_left_out_of_it(
    tmp_path: Path, sample_home: Path, alice: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a refit checked on labels it was fitted on beats the live model by having seen them: the
    # check folds people's labels in two (by review) and judges each fold's refit on the other
    home = shutil.copytree(sample_home, tmp_path / "folds")
    decide(home, alice, approve=False)
    fits: list[tuple[set[str], set[str]]] = []
    real_fit = fitting.fit

    def spy(fit_rows, held_rows, *, source):  # type: ignore[no-untyped-def]
        def people_rows(rows):  # type: ignore[no-untyped-def]
            return {repr(sorted(r.signals.items())) for r in rows if r.style == STYLE}

        if "people's labels" in source:  # the refit's own fits, not a self-calibration's
            fits.append((people_rows(fit_rows), people_rows(held_rows)))
        return real_fit(fit_rows, held_rows, source=source)

    monkeypatch.setattr(fitting, "fit", spy)
    with KnowledgeBase(make_settings(home)) as kb:
        said = labels(kb.store)
        half = halves(said)
        assert sorted(half.values()) == [0, 0, 0, 1, 1]  # five reviews: alternate halves
        report = refit(kb, persist=False)
    model = report["models"]["sparse"]
    assert "each judging a refit made without it (2 fold(s))" in model["checked_on"]
    assert "vs the live model's" in model["precedence"]
    fitted_on_all, *folds = fits
    assert len(fitted_on_all[0]) == len(said)  # what is kept is fitted on every label
    assert len(folds) == 2
    for seen, judged in folds:
        assert judged and seen and not seen & judged
    assert folds[0][1] | folds[1][1] == fitted_on_all[0]  # every label judges once
