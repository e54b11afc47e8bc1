"""Ids are unique regardless of case, on both backends: a write whose id differs only in case
from a stored one is refused unless the caller names that document as one it replaces (ingest
--replace, or the same file re-spelling its id); a lookup finds the stored spelling."""

from __future__ import annotations

import pytest

from seenbefore.errors import ConflictError, NotFoundError
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.storage.ports import Store
from tests.conftest import postmortem_text
from tests.storage.test_contract import hits

ALL = ("general", "restricted")


def write(
    store: Store, doc_id: str, text: str, *, replaces: tuple[str, ...] = (), **front: object
) -> str:
    pm = postmortem_from_markdown(
        f"/kb/{doc_id}.md", postmortem_text(doc_id, body=f"## Summary\n{text}\n", **front)
    )
    return store.upsert(pm, chunk_postmortem(pm), replaces=replaces)


def test_a_write_differing_only_in_case_is_refused(any_store: Store) -> None:
    assert write(any_store, "INC-2021-001", "the kafka consumer lag grew") == "added"
    generation = any_store.generation()
    with pytest.raises(ConflictError) as caught:
        write(any_store, "inc-2021-001", "the redis failover stalled writes")
    message = str(caught.value)
    assert "'inc-2021-001'" in message and "only in case" in message
    assert "INC-2021-001" not in message  # the holder may be in a tier the writer cannot see
    assert any_store.list_ids() == ["INC-2021-001"]
    assert any_store.generation() == generation  # nothing was written
    assert hits(any_store, "kafka", tiers=ALL) == ["INC-2021-001"]


def test_a_named_variant_is_replaced_in_the_same_transaction(any_store: Store) -> None:
    write(any_store, "INC-2021-001", "the kafka consumer lag grew", supersedes="OLD-1")
    write(any_store, "OLD-1", "an older kafka incident")
    assert any_store.get("OLD-1", ALL).effective_status == "superseded"
    chunks_before = len(any_store.chunk_rows().ids)
    assert write(any_store, "inc-2021-001", "the redis failover", replaces=("INC-2021-001",)) == (
        "updated"
    )
    assert any_store.list_ids() == ["OLD-1", "inc-2021-001"]
    assert len(any_store.chunk_rows().ids) == chunks_before  # the old chunks went with it
    assert hits(any_store, "kafka", tiers=ALL) == ["OLD-1"]
    assert any_store.get("OLD-1", ALL).effective_status == "current"  # its superseder is gone


def test_lookup_ignores_case_and_keeps_the_stored_spelling(any_store: Store) -> None:
    write(any_store, "INC-2021-001", "the kafka consumer lag grew")
    write(any_store, "SECRET-7", "a restricted one", access_tier="restricted")
    for asked in ("inc-2021-001", "Inc-2021-001", "INC-2021-001"):
        assert any_store.get(asked, ["general"]).postmortem.id == "INC-2021-001"
    assert any_store.get("secret-7", ALL).postmortem.id == "SECRET-7"
    with pytest.raises(NotFoundError, match="no postmortem with id 'secret-7'"):
        any_store.get("secret-7", ["general"])  # hidden reads exactly as absent
    with pytest.raises(NotFoundError, match="no postmortem with id 'inc-2021-002'"):
        any_store.get("inc-2021-002", ALL)
