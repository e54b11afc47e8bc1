"""The review graph: LangGraph nodes over an investigation, its SQLite checkpointer, the reporter.

::

    START -> investigate -> draft -> human_review --approve--> write_postmortem -> END
                 ^                     |   (interrupt)
                 +-----dismiss---------+--dismiss, last round / close--> END

The checkpoints live in ``<home>/reviews.sqlite`` (LangGraph's ``SqliteSaver``; not its
``SqliteStore``, which needs SQLite loadable extensions), or, over the PostgreSQL store, in its
database (``PostgresSaver``, storage/postgres/checkpoint.py), so every replica sees every thread. The
state is plain JSON, so any process can resume a thread. Thread id == review id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from seenbefore.config import Settings
from seenbefore.errors import StoreError
from seenbefore.investigation.investigator import Evidence, Investigator
from seenbefore.investigation.query import InvestigationRequest
from seenbefore.investigation.reporter import Draft
from seenbefore.kb import KnowledgeBase
from seenbefore.review.models import (
    DraftEdits,
    evidence_from_dict,
    evidence_to_dict,
    request_from_dict,
)
from seenbefore.review.postmortem import postmortem_id, render
from seenbefore.review.records import ReviewRecords
from seenbefore.review.tiers import most_restrictive

CHECKPOINT_FILE = "reviews.sqlite"
APPROVED_DIR = "approved"  # <home>/approved/PM-<review id>.md: the ingested source of each


class Reporter(Protocol):
    def draft(self, evidence: Evidence) -> Draft: ...


ReporterFactory = Callable[[], Reporter]


class ReviewState(TypedDict, total=False):
    """The graph's working data (plain JSON, so any process can resume it)."""

    review_id: str
    request: dict[str, Any]
    tiers: list[str]  # the tiers the investigation runs with (the starting principal's)
    k: int
    round: int
    excluded: list[str]
    notes: list[str]
    evidence: dict[str, Any]
    draft: dict[str, Any]
    published: bool
    decision: dict[str, Any]
    postmortem_id: str | None


def _default_factory(settings: Settings) -> ReporterFactory:
    def make() -> Reporter:
        from seenbefore.investigation.factory import make_reporter

        reporter: Reporter = make_reporter(settings)
        return reporter

    return make


class ReviewGraph:
    """The compiled graph, its checkpointer and the reporter it drafts with."""

    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        records: ReviewRecords,
        reporter_factory: ReporterFactory | None = None,
    ) -> None:
        self.kb = kb
        self.settings = settings
        self.records = records
        self._factory = reporter_factory or _default_factory(settings)
        self._reporter: Reporter | None = None
        self._reporter_lock = threading.Lock()
        settings.home.mkdir(parents=True, exist_ok=True)
        self.checkpoint_path = settings.home / CHECKPOINT_FILE
        self.approved_dir = settings.home / APPROVED_DIR
        self._stack = contextlib.ExitStack()
        # the file beside kb.sqlite, or the server database (the store decides; SQLite ignores
        # leases: one file, processes take turns on its lock)
        self.checkpoints = self._stack.enter_context(kb.store.checkpointer(self.checkpoint_path))
        self.saver: Any = self.checkpoints.saver
        self.checkpoint_location = self.checkpoints.location
        self._lease: Callable[[str], contextlib.AbstractContextManager[bool]] = kb.store.lease
        self.graph = self._build().compile(checkpointer=self.saver)

    def close(self) -> None:
        reporter, self._reporter = self._reporter, None
        close = getattr(getattr(reporter, "llm", None), "close", None)
        if close is not None:
            close()
        self._stack.close()

    def _build(self) -> StateGraph[ReviewState]:
        graph = StateGraph(ReviewState)
        graph.add_node("investigate", self._investigate)
        graph.add_node("draft", self._draft)
        graph.add_node("human_review", self._human_review)
        graph.add_node("write_postmortem", self._write_postmortem)
        graph.add_edge(START, "investigate")
        graph.add_edge("investigate", "draft")
        graph.add_conditional_edges("draft", _after_draft, ["human_review", END])
        graph.add_conditional_edges(
            "human_review", _after_review, ["investigate", "write_postmortem", END]
        )
        graph.add_edge("write_postmortem", END)
        return graph

    def _investigate(self, state: ReviewState) -> dict[str, Any]:
        investigator = Investigator(
            self.kb, tiers=state["tiers"], k=state["k"], exclude=state["excluded"]
        )
        evidence = investigator.investigate(_effective_request(state))
        return {"evidence": evidence_to_dict(evidence)}

    def _draft(self, state: ReviewState) -> dict[str, Any]:
        evidence = evidence_from_dict(state["evidence"], _effective_request(state))
        reporter = self.reporter()
        draft = reporter.draft(evidence).model_dump(mode="json")
        tiers = sorted({i.access_tier for i in evidence.items})
        published = self.records.publish(
            state["review_id"],
            round_=state["round"],
            draft=draft,
            evidence=state["evidence"],
            access_tier=most_restrictive(tiers, self.settings.tiers),
            tiers=tiers,
            doc_ids=[i.doc_id for i in evidence.items],
            actor=f"reporter:{getattr(reporter, 'name', type(reporter).__name__)}",
        )
        return {"draft": draft, "published": published}

    def _human_review(self, state: ReviewState) -> dict[str, Any]:
        decision: dict[str, Any] = interrupt(
            {"review_id": state["review_id"], "round": state["round"]}
        )
        update: dict[str, Any] = {"decision": decision}
        if decision.get("action") == "dismiss" and decision.get("reinvestigate"):
            note = str(decision.get("note") or "")
            update |= {
                "round": state["round"] + 1,
                "excluded": sorted(set(state["excluded"]) | set(decision.get("exclude") or [])),
                "notes": [*state.get("notes", []), note] if note else state.get("notes", []),
                "k": int(decision.get("k") or state["k"]),
            }
        return update

    def _write_postmortem(self, state: ReviewState) -> dict[str, Any]:
        review_id = state["review_id"]
        decision = state["decision"]
        review = self.records.get(review_id, None)
        cited = review.draft.get("cited_incidents") or []
        now_tiers = [m.postmortem.access_tier for m in self.kb.store.documents_meta(cited).values()]
        tier = most_restrictive([review.access_tier, *now_tiers], self.settings.tiers)
        edits = DraftEdits.model_validate(decision["edits"]) if decision.get("edits") else None
        text = render(
            review,
            reviewer=str(decision["reviewer"]),
            edits=edits,
            access_tier=tier,
            approved_at=str(decision["approved_at"]),
        )
        doc_id = postmortem_id(review_id)
        path = self.approved_dir / f"{doc_id}.md"
        _write_atomically(path, text)
        report = self.kb.ingest([path])
        if report.quarantined:
            raise StoreError(
                f"approved postmortem {path} was quarantined ({report.quarantined[0][1]}); "
                "fix it and run `seenbefore quarantine retry`"
            )
        self.records.set_postmortem(review_id, doc_id)
        return {"postmortem_id": doc_id}

    def reporter(self) -> Reporter:
        with self._reporter_lock:
            if self._reporter is None:
                self._reporter = self._factory()
            return self._reporter

    def drive(self, review_id: str) -> contextlib.AbstractContextManager[bool]:
        """True inside the block when this process may run the thread now; False while another
        replica (or thread) runs it. Over SQLite always True."""
        return self._lease(review_id)

    @staticmethod
    def config(review_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": review_id}}

    def next(self, review_id: str) -> tuple[str, ...]:
        """The nodes the thread runs next: ("human_review",) while it waits for a decision."""
        return tuple(self.graph.get_state(self.config(review_id)).next)

    def waiting(self, review_id: str) -> bool:
        return self.next(review_id) == ("human_review",)

    def run(self, state: ReviewState) -> None:
        """Start a thread: investigate and draft, up to the interrupt."""
        self.graph.invoke(state, self.config(state["review_id"]))

    def proceed(self, review_id: str) -> None:
        """Continue a thread from its last checkpoint (after a crash)."""
        self.graph.invoke(None, self.config(review_id))

    def resume(self, review_id: str, payload: dict[str, Any]) -> None:
        """Hand a decision to the waiting thread."""
        self.graph.invoke(Command(resume=payload), self.config(review_id))

    def delete(self, review_id: str) -> None:
        self.saver.delete_thread(review_id)

    def compact(self) -> None:
        """Cut deleted checkpoints out of the SQLite WAL (PostgreSQL: nothing to do here)."""
        self.checkpoints.compact()


def _effective_request(state: ReviewState) -> InvestigationRequest:
    """The request with the reviewers' notes appended to the query."""
    request = request_from_dict(state["request"])
    notes = [n for n in state.get("notes", []) if n]
    if not notes:
        return request
    return dataclasses.replace(request, query=" ".join([request.query, *notes]))


def _after_draft(state: ReviewState) -> str:
    return "human_review" if state.get("published") else END


def _after_review(state: ReviewState) -> str:
    decision = state.get("decision") or {}
    if decision.get("action") == "approve":
        return "write_postmortem"
    if decision.get("action") == "dismiss" and decision.get("reinvestigate"):
        return "investigate"
    return END


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
