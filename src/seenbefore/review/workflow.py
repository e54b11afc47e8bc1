"""The durable review workflow: what the CLI, the HTTP service and the web queue call.

A review's working data lives in its LangGraph thread (:mod:`seenbefore.review.graph`,
``<home>/reviews.sqlite``, or the PostgreSQL store's database), so it survives a restart and is
decided from any process (any replica, over PostgreSQL). What people see, and every status
change, lives in the ``reviews`` rows of the store: a decision is claimed there first by one
conditional UPDATE (exactly once; ConflictError for the loser), recorded with its calibration
label in the same transaction, and only then handed to the waiting graph with
``Command(resume=...)``. Thread id == review id == investigation id.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seenbefore.calibration.people import maybe_refit
from seenbefore.config import Settings
from seenbefore.errors import ConflictError, InputError, NotFoundError, StoreError
from seenbefore.investigation.query import InvestigationRequest
from seenbefore.kb import KnowledgeBase
from seenbefore.review import account
from seenbefore.review.labels import record_label, top_label
from seenbefore.review.models import DismissReason, DraftEdits, Review, request_to_dict
from seenbefore.review.postmortem import postmortem_id, render, validate
from seenbefore.review.records import ReviewRecords, add_event, now, visible_sql
from seenbefore.review.tiers import most_restrictive
from seenbefore.security.tokens import Principal

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from seenbefore.review.graph import ReporterFactory, ReviewGraph, ReviewState

log = logging.getLogger(__name__)

EXCLUDING_REASONS = (DismissReason.WRONG_PRECEDENT, DismissReason.OTHER)
MAX_NOTE_CHARS = 2000
MAX_K = 10
CLOSE_OUTCOMES = ("alert_resolved", "no_precedent")


def new_review_id() -> str:
    return "rev-" + secrets.token_hex(6)


class ReviewWorkflow:
    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        *,
        reporter_factory: ReporterFactory | None = None,
    ) -> None:
        self.kb = kb
        self.settings = settings
        self.records = ReviewRecords(kb.store)
        self._reporter_factory = reporter_factory
        self._engine: ReviewGraph | None = None
        self._engine_lock = threading.Lock()
        self._closed = False

    @property
    def engine(self) -> ReviewGraph:
        """The LangGraph engine and its checkpoints, built on first use (once, under a lock).
        Importing LangGraph takes about 0.4 s, and a service whose store holds no unfinished
        review needs none of it to be ready; ``seenbefore serve`` builds it in the background
        once ready (``service/app.py``), so the first review rarely waits for it."""
        engine = self._engine
        if engine is None:
            with self._engine_lock:
                if self._closed:
                    raise StoreError("the review workflow is closed (the service is stopping)")
                if self._engine is None:
                    from seenbefore.review.graph import ReviewGraph

                    self._engine = ReviewGraph(
                        self.kb, self.settings, self.records, self._reporter_factory
                    )
                engine = self._engine
        return engine

    @property
    def graph(self) -> Any:
        return self.engine.graph

    @property
    def saver(self) -> Any:
        return self.engine.saver

    @property
    def checkpoint_path(self) -> Path:  # SQLite checkpoints only
        return self.engine.checkpoint_path

    @property
    def approved_dir(self) -> Path:
        return self.engine.approved_dir

    def warm(self) -> None:
        """Build the engine now (a background thread of the service calls this once it is
        ready); a failure is logged, and the first review that needs the engine reports it."""
        try:
            self.engine  # noqa: B018 (built for its side effect)
        except Exception as exc:
            if not self._closed:  # closed meanwhile (the service stopping): nothing to say
                log.warning("review engine not ready: %s: %s", type(exc).__name__, exc)

    def close(self) -> None:
        with self._engine_lock:
            engine, self._engine, self._closed = self._engine, None, True
        if engine is not None:
            engine.close()

    def __enter__(self) -> ReviewWorkflow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _config(review_id: str) -> RunnableConfig:
        from seenbefore.review.graph import ReviewGraph

        return ReviewGraph.config(review_id)

    def _resume(self, review_id: str, payload: dict[str, Any]) -> None:
        """Hand a claimed decision to the thread. If another replica is driving the thread
        (recovering it after a restart), it finishes the decision recorded with the claim."""
        with self.engine.drive(review_id) as mine:
            if mine:
                self.engine.resume(review_id, payload)
            else:
                log.info("review %s is being driven by another process; it resumes it", review_id)

    # -- the interface -------------------------------------------------------------------------
    def start(
        self,
        request: InvestigationRequest,
        *,
        principal: Principal,
        severity: str | None = None,
        source_key: str | None = None,
        source: dict[str, Any] | None = None,
        k: int = 3,
        on_behalf: bool = False,
    ) -> Review:
        """Investigate and draft; the review then waits for a decision. Idempotent on
        ``source_key`` (an alert's ``fingerprint:startsAt``). ``on_behalf`` (for an alert's
        token): readable only with all of ``principal``'s tiers, which its search used."""
        if not 1 <= k <= MAX_K:
            raise InputError(f"k is {k}; gather between 1 and {MAX_K} precedents")
        if source_key is not None:
            existing = self.records.by_source(source_key)
            if existing is not None:
                return self._existing(existing["id"], source_key, principal)
        review_id = new_review_id()
        tiers = list(principal.tiers)
        inserted = self.records.insert(
            review_id,
            request=request_to_dict(request),
            requested_by=principal.name,
            severity=severity or request.labels.get("severity"),
            source_key=source_key,
            source=source,
            access_tier=most_restrictive([], self.settings.tiers),
            detail={"tiers": tiers, "k": k},
            tiers=tiers if on_behalf else (),
        )
        if not inserted and source_key is not None:
            row = self.records.by_source(source_key)
            if row is not None:
                return self._existing(row["id"], source_key, principal)
        state: ReviewState = {
            "review_id": review_id,
            "request": request_to_dict(request),
            "tiers": tiers,
            "k": k,
            "round": 1,
            "excluded": [],
            "notes": [],
        }
        try:
            with self.engine.drive(review_id):  # a new id: no one else drives it yet
                self.engine.run(state)
        except BaseException:
            self.records.delete(review_id)
            self.engine.delete(review_id)
            raise
        return self.records.get(review_id, None)

    def _existing(self, review_id: str, source_key: str, principal: Principal) -> Review:
        try:
            return self.records.get(review_id, principal.tiers)
        except NotFoundError:
            raise ConflictError(
                f"an investigation for source key {source_key!r} already exists; "
                "it is not visible to your tiers"
            ) from None

    def get(self, review_id: str, *, tiers: Sequence[str]) -> Review:
        """The review, if every tier of its evidence is among ``tiers``; else NotFoundError."""
        return self.records.get(review_id, tuple(tiers))

    def list(
        self, *, tiers: Sequence[str], status: str | None = "pending", limit: int | None = None
    ) -> list[Review]:
        """Reviews visible to ``tiers``, most severe first, then oldest first."""
        if status is not None and status not in ("pending", "approved", "closed"):
            raise InputError(f"status is {status!r}, expected pending, approved or closed")
        return self.records.select(tuple(tiers), status, limit)

    def approve(
        self, review_id: str, *, reviewer: Principal, edits: DraftEdits | None = None
    ) -> Review:
        """Approve the current draft (exactly once) and write it into the knowledge base. A
        draft that needs a person's account (no precedent, or a precedent already dismissed)
        is refused with AccountRequired unless ``edits`` gives root cause, resolution and type."""
        reviewer.require("reviewer", "approve a review")
        review = self._decidable(review_id, reviewer)
        edits = account.check(review, edits)
        approved_at = now()
        validate(
            render(
                review,
                reviewer=reviewer.name,
                edits=edits,
                access_tier=review.access_tier,
                approved_at=approved_at,
            ),
            str(self.approved_dir / f"{postmortem_id(review_id)}.md"),
        )
        payload = {
            "action": "approve",
            "reviewer": reviewer.name,
            "edits": edits.model_dump(exclude_none=True) if edits else None,
            "approved_at": approved_at,
        }
        label = top_label(review.evidence, review.draft, approved=True)
        with self.kb.store.transaction() as conn:
            self.records.claim(conn, review_id, review.round, status="approved", outcome="approved")
            add_event(
                conn,
                review_id,
                reviewer.name,
                "approved",
                review.round,
                detail={
                    "resume": payload,
                    "edited": sorted(payload["edits"] or {}),
                    "role": reviewer.role,  # whose label may move the shared model
                },
            )
            if label is not None:
                record_label(
                    conn, review_id, review.round, review.evidence, label, reason="approved"
                )
        self._resume(review_id, payload)
        self.refit_if_due()
        return self._visible_or_redacted(review_id, reviewer)

    def dismiss(
        self,
        review_id: str,
        *,
        reviewer: Principal,
        reason: DismissReason | str,
        note: str = "",
    ) -> Review:
        """Dismiss the current draft: re-investigate (the dismissed precedent excluded, the note
        added to the query) or, after ``review_max_rounds`` rounds, close as no precedent."""
        reviewer.require("reviewer", "dismiss a review")
        try:
            why = DismissReason(reason)
        except ValueError:
            allowed = ", ".join(r.value for r in DismissReason)
            raise InputError(f"dismiss reason is {reason!r}, expected one of {allowed}") from None
        note = " ".join(note.split())
        if len(note) > MAX_NOTE_CHARS:
            raise InputError(f"the note has {len(note)} characters; keep it under {MAX_NOTE_CHARS}")
        review = self._decidable(review_id, reviewer)
        candidates = review.evidence.get("candidates") or []
        top = candidates[0]["doc_id"] if candidates else None
        exclude = [top] if top and why in EXCLUDING_REASONS else []
        reinvestigate = review.round < self.settings.review_max_rounds
        k = int((review.evidence.get("searched") or {}).get("k", 3))
        if why is DismissReason.NOT_ENOUGH_EVIDENCE:
            k = min(MAX_K, k + 2)
        payload = {
            "action": "dismiss",
            "reinvestigate": reinvestigate,
            "exclude": exclude,
            "note": note,
            "k": k,
            "reviewer": reviewer.name,
        }
        label = top_label(review.evidence, review.draft, approved=False)
        with self.kb.store.transaction() as conn:
            self.records.claim(
                conn,
                review_id,
                review.round,
                status="pending" if reinvestigate else "closed",
                outcome=None if reinvestigate else "no_precedent",
                excluded=[*review.excluded_doc_ids, *exclude],
            )
            add_event(
                conn,
                review_id,
                reviewer.name,
                "dismissed",
                review.round,
                reason=why.value,
                note=note or None,
                detail={"resume": payload, "excluded": exclude, "role": reviewer.role},
            )
            if not reinvestigate:
                add_event(
                    conn,
                    review_id,
                    "workflow",
                    "closed",
                    review.round,
                    detail={"outcome": "no_precedent", "rounds": review.round},
                )
            if label is not None:
                record_label(
                    conn, review_id, review.round, review.evidence, 0, reason=why.value, note=note
                )
        self._resume(review_id, payload)
        self.refit_if_due()
        return self._visible_or_redacted(review_id, reviewer)

    def refit_if_due(self) -> None:
        """Every ``REFIT_EVERY`` new labels (calibration/people.py), refit the confidence model
        with them (kept only if it beats the live one on data their principals did not write);
        a failure is logged, never raised: the decision is already recorded."""
        try:
            report = maybe_refit(self.kb)
        except Exception:  # the decision stands whatever the refit does
            log.exception("refit from review labels failed")
            return
        if report is not None:
            log.info("refit from review labels: %s", report.get("error") or report.get("models"))

    def close_by_source(
        self,
        source_key: str,
        outcome: str = "alert_resolved",
        *,
        tiers: Sequence[str] | None = None,
        delivered_by: str | None = None,
    ) -> builtins.list[Review]:
        """Close the pending review of ``source_key`` (a resolved alert); [] when none. With
        ``tiers`` (the delivering token's), a review outside them is left alone and the answer
        is [] as for none — unless that token (``delivered_by``) delivered the firing alert:
        it knows the review exists, and closing it tells nothing of what the review holds."""
        if outcome not in CLOSE_OUTCOMES:
            raise InputError(f"outcome is {outcome!r}, expected one of {', '.join(CLOSE_OUTCOMES)}")
        payload = {"action": "close", "outcome": outcome}
        where, params = ("1 = 1", []) if tiers is None else visible_sql(self.kb.store, tiers)
        with self.kb.store.transaction() as conn:
            row = conn.execute(
                f"SELECT r.id, r.round, r.awaiting, r.source, CASE WHEN {where} THEN 1 ELSE 0"
                " END AS visible FROM reviews r WHERE r.source_key = ? AND r.status = 'pending'",
                (*params, source_key),
            ).fetchone()
            if row is None:
                return []
            source = json.loads(row["source"] or "{}")
            if not row["visible"] and (
                delivered_by is None or source.get("delivered_by") != delivered_by
            ):
                return []
            closed = conn.execute(
                "UPDATE reviews SET status = 'closed', outcome = ?, awaiting = 0, updated_at = ?"
                " WHERE id = ? AND status = 'pending'",
                (outcome, now(), row["id"]),
            )
            if closed.rowcount != 1:  # decided by another replica since the SELECT
                return []
            event = {"outcome": outcome, "source_key": source_key}
            add_event(conn, row["id"], "workflow", "closed", row["round"], detail=event)
        if row["awaiting"] and self.engine.waiting(row["id"]):
            self._resume(row["id"], payload)
        return [self.records.get(row["id"], None)]

    def purge_document(self, doc_id: str) -> int:
        """Delete every review, draft, evidence record, label and checkpoint that quotes
        ``doc_id`` (and, for an approved postmortem, its source file); returns reviews removed.
        Approved postmortems that cite ``doc_id`` are documents of their own and stay."""
        ids = self.records.quoting(doc_id)
        with self.kb.store.erasing():  # SQLite: overwritten, then cut out of the WAL
            self.records.purge(ids, doc_id)
            for review_id in ids:
                self.engine.delete(review_id)  # every checkpoint of the thread, either backend
                if doc_id == postmortem_id(review_id):
                    with contextlib.suppress(FileNotFoundError):
                        (self.approved_dir / f"{doc_id}.md").unlink()
            self.engine.compact()  # the checkpoints' own file, when they have one
        return len(ids)

    def recover(self) -> builtins.list[str]:
        """Finish decisions (and first drafts) that a process recorded but did not complete
        before it stopped. Call once at service start, before serving. Over PostgreSQL a review
        another live replica is driving (it holds the thread's lease) is left to it."""
        resumed = []
        for row in self.records.unfinished():
            with self.engine.drive(row["id"]) as mine:
                if mine and self._still_unfinished(row["id"]) and self._recover_one(row["id"]):
                    resumed.append(row["id"])
        return resumed

    def _still_unfinished(self, review_id: str) -> bool:
        """Re-read under the lease: the driver may have finished since the list was read."""
        return review_id in {r["id"] for r in self.records.unfinished()}

    def _recover_one(self, review_id: str) -> bool:
        upcoming = self.engine.next(review_id)
        if upcoming == ("human_review",):
            event = self.records.last_event(review_id, ("drafted", "approved", "dismissed"))
            if event is None or "resume" not in event.detail:
                return False
            self.engine.resume(review_id, event.detail["resume"])
        elif upcoming:
            self.engine.proceed(review_id)
        else:
            started = self.records.last_event(review_id, ("started",))
            detail = started.detail if started else {}
            state: ReviewState = {
                "review_id": review_id,
                "request": self.records.get(review_id, None).request,
                "tiers": list(detail.get("tiers") or self.settings.service_tiers),
                "k": int(detail.get("k") or 3),
                "round": 1,
                "excluded": [],
                "notes": [],
            }
            self.engine.run(state)
        return True

    # -- helpers -------------------------------------------------------------------------------
    def _decidable(self, review_id: str, reviewer: Principal) -> Review:
        review = self.records.get(review_id, reviewer.tiers)
        if review.status != "pending" or not review.awaiting_decision:
            raise self.records.conflict(review_id, review.round)
        if not self.engine.waiting(review_id):
            # another replica may have decided it since the read above (its claim commits
            # before its graph moves on): then this is the loser's conflict, not a lost file
            latest = self.records.get(review_id, None)
            if latest.status != "pending" or not latest.awaiting_decision:
                raise self.records.conflict(review_id, latest.round)
            raise StoreError(
                f"review {review_id} has no workflow checkpoint waiting for a decision in "
                f"{self.engine.checkpoint_location}; {self.engine.checkpoints.restore_hint}"
            )
        return review

    def _visible_or_redacted(self, review_id: str, reviewer: Principal) -> Review:
        """The review after a decision; if re-investigation found evidence outside the
        reviewer's tiers, its status only."""
        try:
            return self.records.get(review_id, reviewer.tiers)
        except NotFoundError:
            review = self.records.get(review_id, None)
            return review.model_copy(
                update={"draft": {}, "evidence": {}, "tiers": [], "history": []}
            )
