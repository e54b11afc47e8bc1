"""Review checkpoints in PostgreSQL: a graph interrupted in one process resumes in another."""

from __future__ import annotations

from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from seenbefore.storage.postgres.checkpoint import postgres_checkpointer
from seenbefore.storage.postgres.store import PostgresStore

pytestmark = pytest.mark.integration


class State(TypedDict, total=False):
    draft: str
    decision: str


def _graph(saver: object):  # type: ignore[no-untyped-def]
    def draft(state: State) -> State:
        return {"draft": "pool exhausted"}

    def review(state: State) -> State:
        return {"decision": interrupt({"draft": state["draft"]})}

    builder = StateGraph(State)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver)  # type: ignore[arg-type]


def test_a_review_paused_by_one_replica_is_resumed_by_another(pg_url: str) -> None:
    PostgresStore(pg_url).close()  # the store creates the schema and roles first
    config = {"configurable": {"thread_id": "R-1"}}
    with postgres_checkpointer(pg_url) as first:
        paused = _graph(first).invoke({}, config)
        assert paused["__interrupt__"][0].value == {"draft": "pool exhausted"}
    with postgres_checkpointer(pg_url) as second:  # another process, same database
        graph = _graph(second)
        assert graph.get_state(config).next == ("review",)
        done = graph.invoke(Command(resume="approve"), config)
        assert done == {"draft": "pool exhausted", "decision": "approve"}
