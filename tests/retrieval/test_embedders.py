import numpy as np
import pytest

from seenbefore.retrieval.bm25 import BM25Index
from seenbefore.retrieval.embedders import HashingEmbedder, LSAEmbedder, MiniLMEmbedder

TEXTS = [
    "database connection pool exhausted at checkout",
    "the pool of database connections ran out",
    "dns resolver returned servfail for internal names",
    "name resolution failures from the resolver",
    "memory leak in the worker until oomkilled",
    "heap grew and the container was killed out of memory",
]


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    a = HashingEmbedder(32).embed(TEXTS)
    assert np.allclose(a, HashingEmbedder(32).embed(TEXTS))
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)


def test_lsa_roundtrip_without_pickle() -> None:
    lsa = LSAEmbedder.fit(TEXTS, dim=4)
    again = LSAEmbedder.from_bytes(lsa.to_bytes())
    assert again.name == lsa.name == "lsa-4"
    assert np.allclose(again.embed(TEXTS), lsa.embed(TEXTS), atol=1e-6)


def test_bm25_hand_worked_and_filtered_rows_unscored() -> None:
    index = BM25Index.build(["a b c", "a a", "b"])
    idf = np.log1p((3 - 2 + 0.5) / (2 + 0.5))
    row0 = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / 2))
    scores = index.scores(["a", "b"], None)
    assert scores[0] == pytest.approx(2 * row0, rel=1e-6)
    masked = index.scores(["a", "b"], np.array([False, True, True]))
    assert masked[0] == 0 and masked[1] == pytest.approx(scores[1])
    assert index.coverage(["a", "b"], 1) == pytest.approx(0.5)


@pytest.mark.slow
def test_minilm_loads_offline_and_ranks_paraphrases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = MiniLMEmbedder()
    vectors = model.embed(TEXTS)
    assert vectors.shape == (6, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    for i in range(0, 6, 2):  # each paraphrase pair is closer than any other text
        others = [sims[i, j] for j in range(6) if j not in (i, i + 1)]
        assert sims[i, i + 1] > max(others)
    assert model.count_tokens("one two three") == 5
