"""One query path: a search on an unchanged store makes one read of the store's metadata (the
corpus and settings generations); a settings write moves the settings generation and the next
search re-reads the weights and models (the index stays), a corpus write moves the generation and
rebuilds the index, so a changed weight or confidence model is live at once. Both backends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from seenbefore.calibration.record import keep_gate, keep_model
from seenbefore.config import Settings
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import FusionWeights
from seenbefore.errors import InputError
from seenbefore.kb import KnowledgeBase, shipped_defaults
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.retrieval.hybrid import HybridRetriever, SearchOptions
from seenbefore.storage.ports import Store
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters
from tests.conftest import postmortem_text
from tests.storage.test_contract import put

# every Store method that reads the store's metadata (meta table, blobs, counters)
METADATA_READS = (
    "generations",
    "generation",
    "settings_generation",
    "get_meta",
    "get_json",
    "embedder_info",
    "get_blob",
    "chunks_changed",
)
TEXTS = {
    "POOL": "database connections hit the pool limit during checkout",
    "DNS": "name resolution failed with servfail from the resolvers",
    "LEAK": "resident memory grew until the pods were oomkilled",
    "DISK": "iowait climbed on the volume during compaction",
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        with SQLiteStore(tmp_path / "home" / "kb.sqlite") as store:
            yield store
        return
    with PostgresStore(request.getfixturevalue("pg_url")) as pg:
        yield pg


def spy(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each metadata read made by a caller of ``store`` (a method the store calls
    inside another, e.g. embedder_info's get_meta, counts once, as the caller's)."""
    calls: list[str] = []
    depth = [0]
    for name in METADATA_READS:
        inner: Callable[..., Any] = getattr(store, name)

        def wrapped(*args: Any, _inner: Callable[..., Any] = inner, _name: str = name) -> Any:
            if depth[0] == 0:
                calls.append(_name)
            depth[0] += 1
            try:
                return _inner(*args)
            finally:
                depth[0] -= 1

        monkeypatch.setattr(store, name, wrapped)
    return calls


def make_kb(store: Store, tmp_path: Path) -> KnowledgeBase:
    folder = tmp_path / "docs"
    folder.mkdir()
    for doc_id, text in TEXTS.items():
        (folder / f"{doc_id}.md").write_text(
            postmortem_text(doc_id, title=doc_id.lower(), body=f"## Summary\n{text}.\n")
        )
    kb = KnowledgeBase(Settings(home=tmp_path / "home"), store=store, embedder=HashingEmbedder(64))
    kb.ingest([folder])
    keep_gate(kb.store, "hashing-64", FusionWeights(0.5, "test"), who="test")
    return kb


def search(kb: KnowledgeBase, mode: str = "hybrid") -> Any:
    return kb.search("pool limit connections", SearchFilters(), SearchOptions(k=3, mode=mode))


def test_a_search_on_an_unchanged_store_reads_only_the_generation(
    backend: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(backend, tmp_path)
    search(kb)  # builds the context for this generation
    calls = spy(kb.store, monkeypatch)
    for mode in ("hybrid", "sparse", "dense", "hybrid"):
        calls.clear()
        result = search(kb, mode)
        assert calls == ["generations"], mode
        assert result.candidates[0].doc_id == "POOL"
    calls.clear()
    assert kb.gate().dense_trusted and kb.index().generation == kb.store.generation()
    assert calls == ["generations", "generations", "generation"]  # one each, nothing more


def test_a_write_rebuilds_the_context_and_the_new_settings_are_live(
    backend: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(backend, tmp_path)
    first = search(kb)
    # the stored weight is the gate's; per query dense votes only while sparse is unsure
    assert kb.gate().weights.dense == 0.5
    assert first.weights in ({"sparse": 0.5, "dense": 0.5}, {"sparse": 1.0, "dense": 0.0})
    assert first.gate is not None and first.gate.weights_source == "test"
    before = kb.store.generations()

    keep_gate(kb.store, "hashing-64", FusionWeights(0.25, "refit"), who="test")
    after = kb.store.generations()  # a settings write moves the settings generation only
    assert after[0] == before[0] and after[1] > before[1]
    second = search(kb)
    assert kb.gate().weights.dense == 0.25
    assert second.weights in ({"sparse": 0.75, "dense": 0.25}, {"sparse": 1.0, "dense": 0.0})
    assert second.gate is not None and second.gate.weights_source == "refit"

    sparse = shipped_defaults()["confidence"]["sparse"]
    assert second.confidence_model_key == "hybrid:hashing-64"
    own = ConfidenceModel.from_dict({**sparse, "source": "labelled by this test"})
    line = "hybrid:hashing-64: fitted by `seenbefore calibrate` on labelled cases"
    keep_model(kb.store, "hybrid:hashing-64", own, by="cases", line=line, who="test")
    third = search(kb)
    assert third.confidence_model == "labelled by this test"
    assert third.confidence_model_fit is not None
    # the thresholds shown are those of the query's shape when the model holds some for it
    shape = third.query_weights.shape if third.query_weights is not None else None
    shown = own.for_shape(shape)
    assert (third.confidence_model_fit.lo, third.confidence_model_fit.hi) == (shown.lo, shown.hi)
    assert third.confidence_model_fit.live == (
        "hybrid:hashing-64: fitted by `seenbefore calibrate` on labelled cases"
    )
    assert third.confidence == pytest.approx(own.predict(dict(third.signals)), abs=1e-3)

    # a new document (a data write) is found by the next search, then reads are back to one
    assert put(kb.store, "POOL2", "the pool limit was hit again: connections exhausted") == "added"
    assert "POOL2" in [c.doc_id for c in search(kb, "sparse").candidates]
    calls = spy(kb.store, monkeypatch)
    search(kb)
    assert calls == ["generations"]


def test_the_options_are_checked_once_by_the_retrievers_plan(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "kb.sqlite") as store:
        kb = make_kb(store, tmp_path)
        gate = kb.gate()
        plan = HybridRetriever.plan(SearchOptions(dense_weight=0.2), gate)
        assert (plan.dense_weight, plan.use_dense, plan.use_sparse) == (0.2, True, True)
        assert plan.model_keys("hashing-64") == ("hybrid:hashing-64",)
        off = HybridRetriever.plan(SearchOptions(dense_weight=0.0), gate)
        assert (off.use_dense, off.model_keys("hashing-64")) == (False, ("sparse",))
        anomaly = HybridRetriever.plan(
            SearchOptions(profile="anomaly", signals={"cpu": 3.0}, signal_weight=2.0), gate
        )
        assert anomaly.options.sparse_unit == "chunk" and anomaly.use_signals
        assert anomaly.model_keys("hashing-64") == (
            "anomaly:hybrid:hashing-64+signals",
            "hybrid:hashing-64",
        )
        for options, message in (
            (SearchOptions(mode="fuzzy"), "mode is 'fuzzy', expected one of sparse, dense"),
            (SearchOptions(dense_weight=1.5), "dense weight is 1.5, expected 0..1"),
            (SearchOptions(k=0), "k is 0, expected at least 1"),
            (SearchOptions(profile="prose"), "query profile is 'prose'"),
        ):
            with pytest.raises(InputError, match=message):
                kb.search("pool", SearchFilters(), options)


def test_self_calibration_can_be_passed_in(tmp_path: Path) -> None:
    seen: list[tuple[KnowledgeBase, bool]] = []

    def hook(kb: KnowledgeBase, *, force: bool = False) -> dict[str, Any] | None:
        seen.append((kb, force))
        return None

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "A.md").write_text(postmortem_text("A", body="## Summary\nkafka lag grew.\n"))
    settings = Settings(home=tmp_path / "home")
    with KnowledgeBase(settings, embedder=HashingEmbedder(16), self_calibration=hook) as kb:
        kb.ingest([folder])
        kb.reindex()
        assert seen == [(kb, False), (kb, True)]
        assert kb.store.get_json("calibration") is None  # the subsystem's own did not run
