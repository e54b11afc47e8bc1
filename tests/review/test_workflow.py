from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import yaml

from seenbefore.config import Settings
from seenbefore.errors import ConflictError, ForbiddenError, InputError, NotFoundError
from seenbefore.investigation.investigator import Evidence
from seenbefore.investigation.query import from_text
from seenbefore.investigation.reporter import Draft, OfflineReporter
from seenbefore.kb import KnowledgeBase
from seenbefore.review import DismissReason, DraftEdits, ReviewWorkflow
from seenbefore.security.tokens import Principal
from seenbefore.types import SearchFilters
from tests.review.conftest import ALL_TIERS, CERT, WEBHOOK, make_settings


def front_matter(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    data: dict[str, object] = yaml.safe_load(text.split("---\n")[1])
    return data


def test_start_drafts_and_waits(workflow: ReviewWorkflow, alice: Principal) -> None:
    review = workflow.start(from_text(CERT), principal=alice, severity="SEV2", source_key="fp:t0")
    assert review.status == "pending" and review.round == 1 and review.awaiting_decision
    assert review.draft["cited_incidents"][0] == "INC-2021-007" and not review.draft["novel"]
    assert review.evidence["candidates"][0]["doc_id"] == "INC-2021-007"
    assert review.evidence["confidence_model_key"] == "sparse"
    assert set(review.evidence["signals"]) >= {"sparse_coverage", "sparse_margin"}
    assert review.access_tier == "general" and review.tiers == ["general"]
    assert [e.action for e in review.history] == ["started", "drafted"]
    assert review.history[1].actor == "reporter:offline"
    # the graph waits at human_review in reviews.sqlite
    assert workflow.graph.get_state(workflow._config(review.id)).next == ("human_review",)
    # idempotent on source_key: the same review, no second investigation
    again = workflow.start(from_text("something else"), principal=alice, source_key="fp:t0")
    assert again.id == review.id and len(workflow.list(tiers=ALL_TIERS)) == 1


def test_list_orders_by_severity_and_filters_status(
    workflow: ReviewWorkflow, alice: Principal
) -> None:
    low = workflow.start(from_text(CERT), principal=alice, severity="SEV4")
    high = workflow.start(from_text(CERT), principal=alice, severity="critical")
    none = workflow.start(from_text(CERT), principal=alice)
    mid = workflow.start(from_text(CERT), principal=alice, severity="SEV2")
    assert [r.id for r in workflow.list(tiers=ALL_TIERS)] == [high.id, mid.id, low.id, none.id]
    workflow.approve(mid.id, reviewer=alice)
    assert [r.id for r in workflow.list(tiers=ALL_TIERS, status="approved")] == [mid.id]
    assert len(workflow.list(tiers=ALL_TIERS, status=None)) == 4
    with pytest.raises(InputError, match="expected pending, approved or closed"):
        workflow.list(tiers=ALL_TIERS, status="done")


def test_approve_writes_a_retrievable_postmortem_with_provenance(
    workflow: ReviewWorkflow, kb: KnowledgeBase, alice: Principal
) -> None:
    review = workflow.start(
        from_text(CERT), principal=alice, severity="SEV2", source_key="fp1:2026-01-01T00:00:00Z"
    )
    edits = DraftEdits(
        title="Partner API handshakes failed: intermediate certificate quokka expired",
        root_cause="The quokka intermediate certificate expired; renewal was manual.",
    )
    approved = workflow.approve(review.id, reviewer=alice, edits=edits)
    assert approved.status == "approved" and approved.outcome == "approved"
    assert approved.postmortem_id == f"PM-{review.id}"
    assert [e.action for e in approved.history][-2:] == ["approved", "postmortem_written"]
    path = workflow.approved_dir / f"{approved.postmortem_id}.md"
    front = front_matter(path)
    assert front["provenance"] == "approved-draft" and front["reviewer"] == "alice"
    assert front["review_id"] == review.id and front["source_key"] == "fp1:2026-01-01T00:00:00Z"
    assert front["status"] == "current" and front["access_tier"] == "general"
    # the precedent the reviewer confirmed, not the draft's other neighbours
    assert len(review.draft["cited_incidents"]) > 1
    assert front["cited"] == ["INC-2021-007"] and front["type"] == "certificate-expiry"
    stored = kb.store.get(approved.postmortem_id, ["general"]).postmortem
    assert stored.title == edits.title and stored.severity == "SEV2"
    # no Summary (the drafted one is verdict prose), no Resolution (none was written)
    assert [s.heading for s in stored.sections] == ["Symptoms", "Root cause", "Cited precedents"]
    assert stored.section("root_cause").text == edits.root_cause  # type: ignore[union-attr]
    cited_section = next(s for s in stored.sections if s.heading == "Cited precedents")
    title = review.evidence["candidates"][0]["title"]
    assert cited_section.text == f"- INC-2021-007: {title}"
    # immediately retrievable through the normal search path
    hits = kb.search("quokka intermediate certificate", SearchFilters(tiers=("general",)))
    assert hits.candidates[0].doc_id == approved.postmortem_id
    # a positive label for the cited top result
    rows = kb.store.query("SELECT doc_id, label, reason FROM calibration_labels")
    assert [tuple(r) for r in rows] == [("INC-2021-007", 1, "approved")]


def test_approve_is_exactly_once(workflow: ReviewWorkflow, alice: Principal) -> None:
    review = workflow.start(from_text(CERT), principal=alice)
    workflow.approve(review.id, reviewer=alice)
    with pytest.raises(ConflictError, match="already approved"):
        workflow.approve(review.id, reviewer=alice)
    with pytest.raises(ConflictError, match="already approved"):
        workflow.dismiss(review.id, reviewer=alice, reason="other")


def test_two_racing_approvals_one_wins(settings: Settings, alice: Principal) -> None:
    """Two workflows (own connections, as two processes have) approve at the same instant."""
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        review_id = wf.start(from_text(CERT), principal=alice).id
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def approve(name: str) -> None:
        with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
            barrier.wait()
            try:
                wf.approve(review_id, reviewer=Principal(name, "reviewer", ALL_TIERS))
                outcomes.append(f"won:{name}")
            except ConflictError:
                outcomes.append("conflict")

    threads = [threading.Thread(target=approve, args=(n,)) for n in ("ann", "ben")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o.split(":")[0] for o in outcomes) == ["conflict", "won"]
    winner = next(o for o in outcomes if o.startswith("won")).split(":")[1]
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        review = wf.get(review_id, tiers=ALL_TIERS)
        assert [e.actor for e in review.history if e.action == "approved"] == [winner]
        assert kb.store.query("SELECT count(*) FROM calibration_labels")[0][0] == 1
        assert kb.store.get(f"PM-{review_id}", ALL_TIERS).postmortem.extra["reviewer"] == winner


def test_dismiss_reinvestigates_without_the_precedent_then_closes(
    workflow: ReviewWorkflow, kb: KnowledgeBase, alice: Principal
) -> None:
    review = workflow.start(from_text(CERT), principal=alice)
    top = review.draft["cited_incidents"][0]
    second = workflow.dismiss(
        review.id,
        reviewer=alice,
        reason=DismissReason.WRONG_PRECEDENT,
        note="the chain was fine, the partner pinned an old root",
    )
    assert second.status == "pending" and second.round == 2 and second.awaiting_decision
    assert second.excluded_doc_ids == [top]
    cited = {c["doc_id"] for c in second.evidence["candidates"]}
    assert top not in cited
    assert second.evidence["searched"]["query"] == (
        CERT + " the chain was fine, the partner pinned an old root"
    )
    dismissed = next(e for e in second.history if e.action == "dismissed")
    assert (dismissed.reason, dismissed.note, dismissed.round) == (
        "wrong_precedent",
        "the chain was fine, the partner pinned an old root",
        1,
    )
    # round 2 == review_max_rounds (default 2): the next dismissal closes it
    closed = workflow.dismiss(review.id, reviewer=alice, reason="not_enough_evidence")
    assert closed.status == "closed" and closed.outcome == "no_precedent" and closed.round == 2
    assert workflow.graph.get_state(workflow._config(review.id)).next == ()
    labels = kb.store.query("SELECT round, label, reason FROM calibration_labels ORDER BY id")
    assert [tuple(r) for r in labels] == [(1, 0, "wrong_precedent"), (2, 0, "not_enough_evidence")]
    with pytest.raises(ConflictError, match="already closed"):
        workflow.approve(review.id, reviewer=alice)
    with pytest.raises(InputError, match="expected one of wrong_precedent"):
        workflow.dismiss(review.id, reviewer=alice, reason="meh")


def test_right_precedent_keeps_it_and_max_rounds_one_closes_at_once(
    home: Path, alice: Principal
) -> None:
    settings = make_settings(home, review_max_rounds=1)
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        review = wf.start(from_text(CERT), principal=alice)
        closed = wf.dismiss(
            review.id, reviewer=alice, reason=DismissReason.RIGHT_PRECEDENT_WRONG_CAUSE
        )
        assert closed.status == "closed" and closed.outcome == "no_precedent"
        assert closed.excluded_doc_ids == []  # the reviewer said the precedent was right


def test_reviewers_see_only_reviews_whose_tiers_they_hold(
    workflow: ReviewWorkflow, alice: Principal, bob: Principal
) -> None:
    secret = workflow.start(from_text(WEBHOOK), principal=alice)
    public = workflow.start(from_text(CERT), principal=alice)
    assert secret.tiers == ["general", "restricted", "security"]
    assert secret.access_tier == "security"  # the most restrictive of its evidence
    assert [r.id for r in workflow.list(tiers=bob.tiers)] == [public.id]
    with pytest.raises(NotFoundError, match=secret.id):
        workflow.get(secret.id, tiers=bob.tiers)
    with pytest.raises(NotFoundError):
        workflow.approve(secret.id, reviewer=bob)
    with pytest.raises(NotFoundError):
        workflow.get("rev-does-not-exist", tiers=ALL_TIERS)
    restricted_only = ("general", "restricted")
    assert secret.id not in {r.id for r in workflow.list(tiers=restricted_only)}
    # approved: the postmortem takes the most restrictive tier of the evidence
    approved = workflow.approve(secret.id, reviewer=alice)
    pm = workflow.kb.store.get(approved.postmortem_id or "", ALL_TIERS).postmortem
    assert pm.access_tier == "security"
    with pytest.raises(NotFoundError):
        workflow.kb.store.get(pm.id, restricted_only)


def test_roles_are_enforced(workflow: ReviewWorkflow, alice: Principal) -> None:
    review = workflow.start(from_text(CERT), principal=alice)
    viewer = Principal("vic", "viewer", ALL_TIERS)
    with pytest.raises(ForbiddenError):
        workflow.approve(review.id, reviewer=viewer)
    with pytest.raises(ForbiddenError):
        workflow.dismiss(review.id, reviewer=viewer, reason="other")


def test_close_by_source(workflow: ReviewWorkflow, alice: Principal) -> None:
    review = workflow.start(from_text(CERT), principal=alice, source_key="abc:2026-01-01")
    [closed] = workflow.close_by_source("abc:2026-01-01")
    assert closed.id == review.id and closed.status == "closed"
    assert closed.outcome == "alert_resolved"
    assert workflow.graph.get_state(workflow._config(review.id)).next == ()
    assert workflow.close_by_source("abc:2026-01-01") == []  # already closed
    assert workflow.close_by_source("unknown") == []
    with pytest.raises(ConflictError):
        workflow.approve(review.id, reviewer=alice)


def test_a_failed_start_leaves_nothing(
    kb: KnowledgeBase, settings: Settings, alice: Principal
) -> None:
    class Broken:
        def draft(self, evidence: Evidence) -> Draft:
            raise RuntimeError("reporter down")

    with ReviewWorkflow(kb, settings, reporter_factory=Broken) as wf:
        with pytest.raises(RuntimeError, match="reporter down"):
            wf.start(from_text(CERT), principal=alice, source_key="k:1")
        assert wf.list(tiers=ALL_TIERS, status=None) == []
    with ReviewWorkflow(kb, settings, reporter_factory=OfflineReporter) as wf:
        assert wf.start(from_text(CERT), principal=alice, source_key="k:1").awaiting_decision


def test_recover_finishes_a_decision_whose_process_died(
    settings: Settings, alice: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        review = wf.start(from_text(CERT), principal=alice)
        monkeypatch.setattr(wf, "_resume", lambda review_id, payload: None)  # dies here
        wf.approve(review.id, reviewer=alice)
        assert wf.get(review.id, tiers=ALL_TIERS).postmortem_id is None
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        assert wf.recover() == [review.id]
        assert wf.get(review.id, tiers=ALL_TIERS).postmortem_id == f"PM-{review.id}"
        assert wf.recover() == []


def test_purge_document_leaves_no_text_behind(
    workflow: ReviewWorkflow, kb: KnowledgeBase, alice: Principal
) -> None:
    quoting = workflow.start(from_text(CERT), principal=alice)
    other = workflow.start(from_text(WEBHOOK), principal=alice)
    top = quoting.evidence["candidates"][0]
    workflow.dismiss(quoting.id, reviewer=alice, reason="wrong_precedent", note="n")
    phrase = top["sections"]["root_cause"].split("\n")[0][:60].encode()
    checkpoints = workflow.checkpoint_path
    assert phrase in checkpoints.read_bytes() + _wal(checkpoints)

    assert workflow.purge_document(top["doc_id"]) == 1
    with pytest.raises(NotFoundError):
        workflow.get(quoting.id, tiers=ALL_TIERS)
    assert workflow.get(other.id, tiers=ALL_TIERS).id == other.id
    assert list(workflow.saver.list(workflow._config(quoting.id))) == []
    assert list(workflow.saver.list(workflow._config(other.id)))
    assert (
        kb.store.query(
            "SELECT count(*) FROM calibration_labels WHERE doc_id = ?", (top["doc_id"],)
        )[0][0]
        == 0
    )
    assert (
        kb.store.query("SELECT count(*) FROM review_events WHERE review_id = ?", (quoting.id,))[0][
            0
        ]
        == 0
    )
    assert phrase not in checkpoints.read_bytes() + _wal(checkpoints)


def _wal(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def test_checkpoints_live_in_reviews_sqlite_only(
    workflow: ReviewWorkflow, alice: Principal
) -> None:
    workflow.start(from_text(CERT), principal=alice)
    assert workflow.checkpoint_path == workflow.settings.home / "reviews.sqlite"
    with sqlite3.connect(workflow.checkpoint_path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"checkpoints", "writes"} <= tables and "store" not in tables


def test_the_claim_itself_is_conditional(workflow: ReviewWorkflow, alice: Principal) -> None:
    """The guard that decides races: a second claim on the same round changes no row."""
    review = workflow.start(from_text(CERT), principal=alice)
    store = workflow.kb.store
    with store.transaction() as conn:
        workflow.records.claim(conn, review.id, 1, status="approved", outcome="approved")
    with pytest.raises(ConflictError, match="already approved"), store.transaction() as conn:
        workflow.records.claim(conn, review.id, 1, status="closed", outcome="no_precedent")
    assert workflow.get(review.id, tiers=ALL_TIERS).status == "approved"
