"""The change log (issue 26.2), on both backends: every corpus write records, under the
generation it moved to, the documents it wrote or deleted and those whose supersession it may
have moved, so an index at an older generation learns what to re-read; and the log says when it
cannot tell (pruned, re-embedded, a generation it never saw)."""

from __future__ import annotations

import numpy as np

from seenbefore.retrieval.embedders import MINILM_NAME
from seenbefore.storage.base import CorpusChanges
from seenbefore.storage.ports import Store
from tests.storage.test_contract import put


def test_each_write_records_what_it_changed(any_store: Store) -> None:
    start = any_store.generation()
    put(any_store, "OLD", "kafka lag grew")
    put(any_store, "NEW", "kafka lag grew again", supersedes="OLD")
    assert any_store.changes_since(start) == CorpusChanges(
        start, start + 2, ("NEW", "OLD"), ()
    )  # OLD was written in the range, so it is re-read whole
    middle = any_store.generation()
    assert any_store.changes_since(middle - 1) == CorpusChanges(
        middle - 1, middle, ("NEW",), ("OLD",)
    )  # only OLD's supersession moved
    any_store.delete("NEW")
    assert any_store.changes_since(middle) == CorpusChanges(middle, middle + 1, ("NEW",), ("OLD",))
    any_store.quarantine("bad.md", "front matter is not YAML", None, "0" * 64)
    assert any_store.changes_since(middle + 1) == CorpusChanges(middle + 1, middle + 2, (), ())
    now = any_store.generation()
    assert any_store.changes_since(now) == CorpusChanges(now, now, (), ())


def test_the_log_cannot_tell_across_a_re_embedding_a_gap_or_another_history(
    any_store: Store,
) -> None:
    put(any_store, "A", "redis failover stalled writes")
    before = any_store.generation()
    assert any_store.changes_since(before - 1) is not None
    ids = any_store.chunk_rows().ids
    any_store.replace_vectors(MINILM_NAME, ids.tolist(), np.ones((len(ids), 4), np.float32))
    assert any_store.changes_since(before) is None  # every vector changed: rebuild
    after = any_store.generation()
    put(any_store, "B", "disk iowait climbed")
    assert any_store.changes_since(after) == CorpusChanges(after, after + 1, ("B",), ())
    assert any_store.changes_since(-5) is None  # generations the log never saw
    assert any_store.changes_since(after + 2) is None  # ahead of this store


def test_erasing_a_document_from_the_log_leaves_markers_that_force_a_rebuild(
    any_store: Store,
) -> None:
    start = any_store.generation()
    put(any_store, "GONE", "the ledger writer stalled")
    put(any_store, "KEPT", "dns servfail")
    any_store.delete("GONE")
    any_store.erase_from_change_log("GONE")
    assert any_store.changes_since(start) is None  # GONE's generations now say: everything
    assert any_store.changes_since(start + 1) is None
    assert any_store.changes_since(start + 3) == CorpusChanges(start + 3, start + 3, (), ())
    rows = any_store.query("SELECT doc_id FROM changes WHERE doc_id = ?", ["GONE"])
    assert rows == []
