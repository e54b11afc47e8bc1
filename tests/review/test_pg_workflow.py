"""The review workflow over the PostgreSQL store: review rows, labels and LangGraph checkpoints in
the database, so a review started by one process (replica) is decided by another, exactly once,
and deleting a postmortem removes its reviews and checkpoint threads there too."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from seenbefore.config import Settings
from seenbefore.errors import ConflictError, NotFoundError
from seenbefore.investigation.query import from_text
from seenbefore.kb import KnowledgeBase
from seenbefore.lifecycle import delete_postmortem, open_workflow
from seenbefore.review import ReviewWorkflow
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import Principal
from seenbefore.storage.factory import open_store
from seenbefore.storage.postgres.store import PostgresStore
from tests.conftest import EXAMPLES
from tests.review.conftest import ALL_TIERS, CERT, WEBHOOK, make_settings

pytestmark = pytest.mark.integration


@pytest.fixture
def pg_settings(pg_url: str, tmp_path: Path) -> Settings:
    settings = make_settings(tmp_path / "home-a", database_url=pg_url)
    with KnowledgeBase(settings, store=open_store(settings)) as kb:
        kb.ingest([EXAMPLES])
    return settings


def replica(settings: Settings, name: str) -> Settings:
    """The same database, another data directory (what a second replica has)."""
    return settings.model_copy(update={"home": settings.home.parent / name})


@pytest.fixture
def pg_kb(pg_settings: Settings) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(pg_settings, store=open_store(pg_settings)) as kb:
        yield kb


def count(kb: KnowledgeBase, sql: str, *params: object) -> int:
    return int(kb.store.query(sql, params)[0][0])


def test_a_review_runs_on_postgres_with_its_checkpoints_in_the_database(
    pg_kb: KnowledgeBase, pg_settings: Settings, pg_url: str, alice: Principal
) -> None:
    assert isinstance(pg_kb.store, PostgresStore)
    with ReviewWorkflow(pg_kb, pg_settings) as wf:
        review = wf.start(from_text(CERT), principal=alice, severity="SEV2", source_key="fp:1")
        assert review.awaiting_decision and review.draft["cited_incidents"][0] == "INC-2021-007"
        assert [e.action for e in review.history] == ["started", "drafted"]
        assert wf.start(from_text("other"), principal=alice, source_key="fp:1").id == review.id
        secret = wf.start(from_text(WEBHOOK), principal=alice)
        assert "security" in secret.tiers  # evidence from the security tier
        assert {r.id for r in wf.list(tiers=ALL_TIERS)} == {review.id, secret.id}
        assert wf.list(tiers=("general",)) == [review]  # every evidence tier must be held
        assert wf.list(tiers=("restricted",)) == []
        with pytest.raises(NotFoundError):
            wf.get(secret.id, tiers=("general",))
    assert not (pg_settings.home / "reviews.sqlite").exists()
    with psycopg.connect(pg_url) as conn:
        threads = conn.execute(
            "SELECT count(DISTINCT thread_id) FROM seenbefore.checkpoints WHERE thread_id = %s",
            (review.id,),
        ).fetchone()
    assert threads == (1,)


def test_a_review_started_on_one_replica_is_decided_on_another(
    pg_settings: Settings, alice: Principal
) -> None:
    other = replica(pg_settings, "home-b")
    with (
        KnowledgeBase(pg_settings, store=open_store(pg_settings)) as kb,
        ReviewWorkflow(kb, pg_settings) as wf,
    ):
        first = wf.start(from_text(CERT), principal=alice).id
        second = wf.start(from_text(CERT), principal=alice).id
    with KnowledgeBase(other, store=open_store(other)) as kb, ReviewWorkflow(kb, other) as wf:
        dismissed = wf.dismiss(first, reviewer=alice, reason="wrong_precedent", note="not certs")
        assert dismissed.round == 2 and dismissed.awaiting_decision
        assert "INC-2021-007" in dismissed.excluded_doc_ids
        approved = wf.approve(second, reviewer=alice)
        assert approved.postmortem_id == f"PM-{second}"
        assert kb.store.get(f"PM-{second}", ALL_TIERS).postmortem.extra["review_id"] == second
        assert (other.home / "approved" / f"PM-{second}.md").is_file()
        labels = kb.store.query("SELECT doc_id, label, reason FROM calibration_labels ORDER BY id")
        assert [tuple(r) for r in labels] == [
            ("INC-2021-007", 0, "wrong_precedent"),
            ("INC-2021-007", 1, "approved"),
        ]
        from seenbefore.calibration.people import labels as said

        # who said each label, and with which role, read the same way on PostgreSQL
        assert [(p.label, p.who, p.role) for p in said(kb.store)] == [
            (0, alice.name, alice.role),
            (1, alice.name, alice.role),
        ]
        with pytest.raises(ConflictError, match="already approved"):
            wf.approve(second, reviewer=alice)


def test_two_replicas_racing_to_approve_decide_once(
    pg_settings: Settings, alice: Principal
) -> None:
    with (
        KnowledgeBase(pg_settings, store=open_store(pg_settings)) as kb,
        ReviewWorkflow(kb, pg_settings) as wf,
    ):
        review_id = wf.start(from_text(CERT), principal=alice).id
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def approve(name: str) -> None:
        settings = replica(pg_settings, f"home-{name}")
        with (
            KnowledgeBase(settings, store=open_store(settings)) as kb,
            ReviewWorkflow(kb, settings) as wf,
        ):
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
    with KnowledgeBase(pg_settings, store=open_store(pg_settings)) as kb:
        assert count(kb, "SELECT count(*) FROM calibration_labels") == 1
        assert count(kb, "SELECT count(*) FROM review_events WHERE action = 'approved'") == 1
        assert [d for d in kb.store.list_ids() if d.startswith("PM-")] == [f"PM-{review_id}"]
        assert kb.store.get(f"PM-{review_id}", ALL_TIERS).postmortem.extra["reviewer"] == winner


def test_deleting_a_postmortem_purges_its_reviews_and_checkpoint_threads(
    pg_kb: KnowledgeBase, pg_settings: Settings, pg_url: str, alice: Principal
) -> None:
    with ReviewWorkflow(pg_kb, pg_settings) as wf:
        quoting = wf.start(from_text(CERT), principal=alice)
        other = wf.start(from_text(WEBHOOK), principal=alice)
        top = quoting.evidence["candidates"][0]["doc_id"]
        wf.dismiss(quoting.id, reviewer=alice, reason="wrong_precedent", note="n")
    workflow = open_workflow(pg_kb)
    assert workflow is not None
    try:
        report = delete_postmortem(
            pg_kb,
            top,
            actor="local:tester",
            audit=AuditLog(pg_kb.store),
            workflow=workflow,
            outbox_path=None,
        )
    finally:
        workflow.close()
    assert report.reviews_purged == 1 and report.files_compacted == ()
    with ReviewWorkflow(pg_kb, pg_settings) as wf:
        with pytest.raises(NotFoundError):
            wf.get(quoting.id, tiers=ALL_TIERS)
        assert wf.get(other.id, tiers=ALL_TIERS).id == other.id
        assert list(wf.saver.list(ReviewWorkflow._config(quoting.id))) == []
        assert list(wf.saver.list(ReviewWorkflow._config(other.id)))
    assert count(pg_kb, "SELECT count(*) FROM calibration_labels WHERE doc_id = ?", top) == 0
    assert count(pg_kb, "SELECT count(*) FROM review_events WHERE review_id = ?", quoting.id) == 0
    with psycopg.connect(pg_url) as conn:
        left = [
            conn.execute(
                f"SELECT count(*) FROM seenbefore.{table} WHERE thread_id = %s", (quoting.id,)
            ).fetchone()
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        ]
    assert left == [(0,), (0,), (0,)]
    assert top not in pg_kb.store.list_ids()
    assert AuditLog(pg_kb.store).read(action="delete")[0].doc_ids == (top,)


def test_migrate_carries_tokens_reviews_labels_and_the_audit_chain(
    kb: KnowledgeBase, settings: Settings, pg_url: str, alice: Principal
) -> None:
    """storage/transfer.py copies the service tables (SERVICE_TABLES) and verifies them."""
    from seenbefore.review.records import ReviewRecords
    from seenbefore.security.tokens import TokenStore
    from seenbefore.storage.transfer import transfer

    plaintext, _ = TokenStore(kb.store).create("carol", "reviewer", ["general"])
    with ReviewWorkflow(kb, settings) as wf:
        approved = wf.approve(wf.start(from_text(CERT), principal=alice).id, reviewer=alice)
        pending = wf.start(from_text(WEBHOOK), principal=alice)
    AuditLog(kb.store).record("local:tester", "review.approve", draft_id=approved.id)
    with PostgresStore(pg_url) as pg:
        report = transfer(kb.store, pg)
        assert report.verified and not report.skipped
        assert report.rows["reviews"] == 2 and report.rows["calibration_labels"] == 1
        assert TokenStore(pg).authenticate(plaintext).name == "carol"
        records = ReviewRecords(pg)
        assert records.get(approved.id, ALL_TIERS) == ReviewRecords(kb.store).get(
            approved.id, ALL_TIERS
        )
        assert [r.id for r in records.select(ALL_TIERS, "pending", None)] == [pending.id]
        assert records.quoting("INC-2021-007") == [approved.id]
        # PostgreSQL keeps no key: the records a SQLite home chained verify under its key
        assert AuditLog(pg, key=AuditLog(kb.store).key()).verify().ok


def test_recover_leaves_a_review_another_replica_is_driving(
    pg_settings: Settings, alice: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decision recorded but not yet resumed: a replica starting meanwhile must not run the
    thread while its driver (holding the lease) still does; once nobody drives it, it does."""
    with (
        KnowledgeBase(pg_settings, store=open_store(pg_settings)) as kb,
        ReviewWorkflow(kb, pg_settings) as wf,
    ):
        review = wf.start(from_text(CERT), principal=alice)
        monkeypatch.setattr(wf, "_resume", lambda review_id, payload: None)  # not yet resumed
        wf.approve(review.id, reviewer=alice)
        assert isinstance(kb.store, PostgresStore)
        other = replica(pg_settings, "home-b")
        with kb.store.lease(review.id) as driving:  # replica A is still driving the thread
            assert driving
            with (
                KnowledgeBase(other, store=open_store(other)) as kb_b,
                ReviewWorkflow(kb_b, other) as wf_b,
            ):
                assert wf_b.recover() == []
                assert wf_b.get(review.id, tiers=ALL_TIERS).postmortem_id is None
            with kb.store.lease(review.id) as twice:  # another thread of the same process
                assert not twice
        with (
            KnowledgeBase(other, store=open_store(other)) as kb_b,
            ReviewWorkflow(kb_b, other) as wf_b,
        ):
            assert wf_b.recover() == [review.id]  # A let go (or died): B finishes it
            assert wf_b.get(review.id, tiers=ALL_TIERS).postmortem_id == f"PM-{review.id}"
            assert wf_b.recover() == []
