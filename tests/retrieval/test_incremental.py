"""Issue 26.2: a write updates the index, it does not rebuild it. After each of a random run of
single-document writes (new documents, new versions, deletions, supersede links, unchanged
re-ingests, quarantine rows), the knowledge base that has followed every write by applying the
change log answers every query exactly as a knowledge base built afresh from the same store:
the same candidates, scores, per-retriever ranks, signals and p_precedent, to the last bit, on
SQLite and PostgreSQL. Its index was built from every row once; every write after that was an
update. A compaction changes no answer either, and leaves the arrays a fresh build has."""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seenbefore.calibration.record import keep_gate
from seenbefore.config import Settings
from seenbefore.core.trust import FusionWeights
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.retrieval import neighbours, updates
from seenbefore.retrieval.bm25 import BM25Index
from seenbefore.retrieval.corpus import CorpusIndex
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.ports import Store
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters, SearchResult
from tests.conftest import postmortem_text

WORDS = [
    "pool",
    "connections",
    "exhausted",
    "checkout",
    "latency",
    "dns",
    "servfail",
    "resolver",
    "memory",
    "leak",
    "oomkilled",
    "disk",
    "iowait",
    "compaction",
    "kafka",
    "lag",
    "partition",
    "cert",
    "expired",
    "tls",
    "redis",
    "failover",
    "queue",
    "backlog",
]
SERVICES = ("checkout", "payments", "search", "edge")
SIGNALS = ("cpu_utilization", "error_rate", "db_connections_in_use", "memory_rss", "disk_iops")
TIERS = ("general", "general", "restricted")
EVERY_TIER = ("general", "restricted")
QUERIES = ("pool connections exhausted", "dns resolver servfail latency", "kafka lag", "zebra")
FILTERS = (
    SearchFilters(),
    SearchFilters(tiers=EVERY_TIER, include_superseded=True),
    SearchFilters(tiers=EVERY_TIER, services=("checkout", "edge")),
)
OPTIONS = (
    SearchOptions(k=5, mode="hybrid"),
    SearchOptions(k=3, mode="sparse", sparse_unit="both"),
    SearchOptions(k=5, mode="dense"),
    SearchOptions(k=4, mode="sparse", sparse_unit="chunk", depth=3),
    SearchOptions(profile="anomaly", signals={"error_rate": 3.0, "disk_iops": 1.5}),
)
EMBEDDER = HashingEmbedder(32)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        with SQLiteStore(tmp_path / "home" / "kb.sqlite") as sqlite:
            yield sqlite
        return
    with PostgresStore(request.getfixturevalue("pg_url")) as pg:
        yield pg


def knowledge_base(store: Store, home: Path) -> KnowledgeBase:
    return KnowledgeBase(Settings(home=home), store=store, embedder=EMBEDDER)


def write(store: Store, rng: random.Random, doc_id: str, existing: list[str]) -> None:
    """A random version of ``doc_id``: words (so ties happen), tier, services, date, signals,
    now and then a supersede link to another document."""
    words = " ".join(rng.choices(WORDS, k=rng.randint(3, 40)))
    body = f"## Summary\n{words}.\n\n## Root cause\n{' '.join(rng.choices(WORDS, k=5))}.\n"
    front: dict[str, object] = {
        "access_tier": rng.choice(TIERS),
        "services": list(rng.sample(SERVICES, rng.randint(0, 2))),
        "date": rng.choice([None, "2023-05-01", "2024-02-29", "2024-11-30"]),
        "signals": list(rng.sample(SIGNALS, rng.randint(0, 3))),
    }
    others = [d for d in existing if d != doc_id]
    if others and rng.random() < 0.25:
        front["supersedes"] = rng.choice(others)
    text = postmortem_text(doc_id, title=f"{doc_id} {rng.choice(WORDS)}", body=body, **front)
    pm = postmortem_from_markdown(f"{doc_id}.md", text)
    chunks = chunk_postmortem(pm)
    store.upsert(
        pm, chunks, EmbeddedVectors(EMBEDDER.name, EMBEDDER.embed([c.text for c in chunks]))
    )


def step(store: Store, rng: random.Random, ids: list[str], serial: list[int]) -> str:
    """One random single-document write; returns what it was."""
    roll = rng.random()
    if not ids or roll < 0.35:
        serial[0] += 1
        doc_id = f"D-{serial[0]:03d}"
        write(store, rng, doc_id, ids)
        ids.append(doc_id)
        return "add"
    doc_id = rng.choice(ids)
    if roll < 0.65:
        write(store, rng, doc_id, ids)
        return "update"
    if roll < 0.85:
        store.delete(doc_id)
        ids.remove(doc_id)
        return "delete"
    if roll < 0.92:
        store.quarantine(f"bad-{serial[0]}.md", "front matter is not YAML", None, "0" * 64)
        return "quarantine"
    store.upsert(*_same(store, doc_id))
    return "unchanged"


def _same(store: Store, doc_id: str) -> tuple[Any, Any]:
    pm = store.get(doc_id, EVERY_TIER).postmortem
    chunks = store.chunks_by_id(store.chunk_rows([doc_id]).ids.tolist())
    return pm, [chunks[i] for i in sorted(chunks)]


def answers(kb: KnowledgeBase) -> list[SearchResult]:
    out = []
    for text in QUERIES:
        for filters in FILTERS:
            for options in OPTIONS:
                result = kb.search(text, filters, options)
                out.append(dataclasses.replace(result, timings={}))
    return out


def same_answers(followed: KnowledgeBase, store: Store, home: Path) -> None:
    fresh = knowledge_base(store, home)
    expected = answers(fresh)
    got = answers(followed)
    for want, have in zip(expected, got, strict=True):
        assert have == want, (want.query, want.mode)
    assert followed.status(EVERY_TIER) == fresh.status(EVERY_TIER)
    assert followed.index().neighbour_cosine() == fresh.index().neighbour_cosine()


@pytest.mark.parametrize(("seed", "sample"), [(1, neighbours.SAMPLE), (2, 4)])
def test_an_updated_index_answers_exactly_as_a_fresh_build(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, sample: int
) -> None:
    """``sample`` 4: fewer documents than there are, so writes move documents in and out of
    the neighbour sample."""
    monkeypatch.setattr(neighbours, "SAMPLE", sample)
    rng = random.Random(seed)
    ids: list[str] = []
    serial = [0]
    for _ in range(6):
        step(store, rng, ids, serial)
    keep_gate(store, EMBEDDER.name, FusionWeights(0.5, "test"), who="test")
    kb = knowledge_base(store, tmp_path / "home")
    same_answers(kb, store, tmp_path / "home")
    assert (kb.index_rebuilds, kb.index_updates) == (1, 0)
    done, moved = [], 0
    for _ in range(25 if isinstance(store, SQLiteStore) else 14):
        before = store.generation()
        done.append(step(store, rng, ids, serial))
        moved += store.generation() != before  # PostgreSQL: an unchanged write moves nothing
        same_answers(kb, store, tmp_path / "home")
        assert (kb.index_rebuilds, kb.index_updates) == (1, moved), done  # no write rebuilt it
    assert {"add", "update", "delete"} <= set(done)


def test_a_compacted_index_is_a_fresh_build_and_answers_the_same(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction runs in its own thread; searches meanwhile use the uncompacted index and a
    write meanwhile is applied to it, then to the compacted copy before the swap."""
    release = threading.Event()
    compact = updates.compacted

    def held(index: CorpusIndex) -> CorpusIndex:
        assert release.wait(60)
        return compact(index)

    monkeypatch.setattr(updates, "compacted", held)
    rng = random.Random(7)
    ids: list[str] = []
    for n in range(20):
        write(store, rng, f"D-{n:03d}", ids)
        ids.append(f"D-{n:03d}")
    keep_gate(store, EMBEDDER.name, FusionWeights(0.5, "test"), who="test")
    kb = knowledge_base(store, tmp_path / "home")
    kb.index()
    for doc_id in rng.sample(ids, 7):  # new versions: the old ones become tombstones
        write(store, rng, doc_id, ids)
    updated = kb.index()
    assert updated.tombstoned_share > updates.COMPACT_SHARE  # so compaction has started
    same_answers(kb, store, tmp_path / "home")  # searches during compaction
    write(store, rng, "D-100", ids)  # and a write
    ids.append("D-100")
    assert kb.index() is not updated and kb.index().tombstoned_share > 0
    release.set()
    kb.wait_for_compaction(60)
    assert kb.index().tombstoned_share == 0  # swapped in, caught up, without a rebuild
    assert (kb.index_rebuilds, kb.index_updates) == (1, 2)
    same_answers(kb, store, tmp_path / "home")
    # a compaction leaves what a fresh build holds, array for array (this index has the write
    # made meanwhile appended after its compacted rows: compact it once more)
    same_arrays(compact(kb.index()), CorpusIndex.build(store, stem=False, bm25_path=None))


def same_arrays(compact: CorpusIndex, fresh: CorpusIndex) -> None:
    assert compact.doc_ids == fresh.doc_ids and compact.generation == fresh.generation
    for name in ("tiers", "current", "dates", "chunk_ids", "chunk_doc", "doc_starts", "alive"):
        assert np.array_equal(getattr(compact, name), getattr(fresh, name)), name
    assert compact.dense is not None and fresh.dense is not None
    assert np.array_equal(compact.dense, fresh.dense)
    assert compact.neighbours is not None and fresh.neighbours is not None
    # each sampled document's best cosine (which of two equally close chunks holds it may differ)
    assert {d: b for d, (b, _) in compact.neighbours.best.items()} == {
        d: b for d, (b, _) in fresh.neighbours.best.items()
    }
    for name in ("bm25", "doc_bm25", "doc_phrases"):
        a, b = getattr(compact, name), getattr(fresh, name)
        assert a.vocabulary == b.vocabulary and np.array_equal(a.df, b.df), name
        for part in ("indptr", "rows", "tf", "row_ptr", "row_terms"):
            assert np.array_equal(getattr(a.segments[0], part), getattr(b.segments[0], part))


def test_a_change_log_that_does_not_reach_back_rebuilds_and_says_so(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(3)
    ids: list[str] = []
    serial = [0]
    for _ in range(4):
        step(store, rng, ids, serial)
    kb = knowledge_base(store, tmp_path / "home")
    kb.index()
    start = store.generation()
    step(store, rng, ids, serial)
    assert store.changes_since(start) is not None
    assert store.changes_since(start - 100) is None  # before the log began: cannot say
    assert store.changes_since(store.generation() + 1) is None  # ahead of this store
    kb.index()
    assert (kb.index_rebuilds, kb.index_updates) == (1, 1)
    step(store, rng, ids, serial)
    with store.transaction() as conn:  # the log pruned past the index: it rebuilds
        conn.execute("DELETE FROM changes")
    step(store, rng, ids, serial)
    with caplog.at_level("INFO", logger="seenbefore.kb"):
        kb.index()
    assert (kb.index_rebuilds, kb.index_updates) == (2, 1)
    assert "the change log does not reach back to generation" in caplog.text
    same_answers(kb, store, tmp_path / "home")


@pytest.mark.parametrize("fields", [None, (2.0, 1.0)])
def test_bm25_statistics_stay_exact_under_append_and_tombstone(
    fields: tuple[float, ...] | None,
) -> None:
    """N, each field's average length and each term's document frequency follow every append
    and tombstone: the scores and coverages are a fresh build's over the live rows, bit for bit,
    and compacting leaves a fresh build's arrays (terms numbered as it numbers them)."""
    rng = random.Random(5)

    def text() -> str:
        return " ".join(rng.choices(WORDS[:12], k=rng.randint(0, 12)))

    def row() -> tuple[str, ...]:
        return (text(),) if fields is None else (text(), text())

    def build(rows: list[tuple[str, ...]]) -> BM25Index:
        if fields is None:
            return BM25Index.build([r[0] for r in rows])
        return BM25Index.build_fields(rows, fields)

    texts = [row() for _ in range(30)]
    index, live = build(texts), list(range(30))
    for _ in range(150):
        dead = rng.sample(live, k=min(len(live), rng.randint(0, 2)))
        new = [row() for _ in range(rng.randint(0, 2))]
        index = index.updated(np.asarray(dead, dtype=np.int64), new)
        live = [r for r in live if r not in dead] + list(range(len(texts), len(texts) + len(new)))
        texts += new
        fresh = build([texts[r] for r in live])
        query = [*rng.sample(WORDS[:14], 3), "zebra"]
        assert np.array_equal(index.scores(query, None)[live], fresh.scores(query, None))
        if live:
            at = rng.randrange(len(live))
            assert index.coverage(query, live[at]) == fresh.coverage(query, at)
    assert len(index.segments) < 12  # appended segments merge as a binary counter does
    compact = index.compacted(np.asarray(live, dtype=np.int64))
    fresh = build([texts[r] for r in live])
    assert compact.vocabulary == fresh.vocabulary and np.array_equal(compact.df, fresh.df)
    for part in ("indptr", "rows", "tf", "row_ptr", "row_terms"):
        assert np.array_equal(getattr(compact.segments[0], part), getattr(fresh.segments[0], part))
