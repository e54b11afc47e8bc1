from pathlib import Path

import pytest

from seenbefore.errors import NotFoundError
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.retrieval.sparse import sparse_search
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters
from tests.conftest import WriteDoc, postmortem_text

SECRET_WORD = "zanzibarquux"


@pytest.fixture
def kb(ingestor: Ingestor, write_doc: WriteDoc, kb_dir: Path) -> SQLiteStore:
    docs = {
        "pool": (
            "POOL",
            "Connection pool exhausted",
            "database connections hit the pool limit",
            {"services": "[checkout-api]", "date": "2024-01-10"},
        ),
        "dns": (
            "DNS",
            "Resolver outage",
            "name resolution failed with SERVFAIL",
            {"services": "[api-gateway]", "date": "2023-06-01"},
        ),
        "leak": (
            "LEAK",
            "Heap growth",
            "resident memory grew until OOMKilled",
            {"services": "[search]", "date": "2022-02-02"},
        ),
        "secret": (
            "SECRET",
            "Restricted breach",
            f"{SECRET_WORD} database pool leak of keys",
            {"access_tier": "restricted", "date": "2024-02-02"},
        ),
        "old": (
            "OLDPOOL",
            "Pool exhausted (first analysis)",
            "database pool limit reached",
            {"date": "2024-01-09"},
        ),
        "newer": (
            "NEWPOOL",
            "Pool exhausted by slow fraud calls",
            "fraud calls held connections",
            {"supersedes": "OLDPOOL", "date": "2024-01-11"},
        ),
    }
    for name, (doc_id, title, text, front) in docs.items():
        body = f"## Summary\n{text}.\n\n## Root cause\n{text} because of a bug.\n"
        write_doc(f"{name}.md", postmortem_text(doc_id, title=title, body=body, **front))
    ingestor.ingest([kb_dir])
    return ingestor.store  # type: ignore[return-value]


def ids(store: SQLiteStore, text: str, **filters: object) -> list[str]:
    result = sparse_search(store, text, SearchFilters(**filters), k=10)  # type: ignore[arg-type]
    return [c.doc_id for c in result.candidates]


def test_long_query_matches_documents_sharing_some_words(kb: SQLiteStore) -> None:
    query = (
        "twelve words: SERVFAIL connections OOMKilled memory resolution pool limit database "
        "grew failed name"
    )
    assert len(query.split()) >= 12
    found = ids(kb, query)
    assert {"POOL", "DNS", "LEAK"} <= set(found)


@pytest.mark.parametrize(
    "text",
    [
        '"',
        "*",
        "(",
        ")",
        "NEAR",
        "OR",
        "AND NOT",
        'pool" OR "x',
        "NEAR(pool database, 2)",
        "col:pool",
        "^pool",
        "pool*",
        "-pool",
        "{pool}",
        "pool + database",
        "'",
        ":",
        "\\",
        "\x00",
    ],
)
def test_fts_syntax_in_user_text_never_raises(kb: SQLiteStore, text: str) -> None:
    result = sparse_search(kb, text, SearchFilters(), k=5)
    assert isinstance(result.candidates, tuple)


def test_fts_operators_are_plain_words(kb: SQLiteStore) -> None:
    assert query_terms('pool" OR "x NEAR(a)') == ["pool", "x", "near"]
    assert "POOL" in ids(kb, "NEAR(pool database, 2)")


def test_restricted_documents_never_reach_unauthorised_callers(kb: SQLiteStore) -> None:
    assert ids(kb, SECRET_WORD) == []
    assert "SECRET" not in ids(kb, "database pool leak keys")
    everything = sparse_search(kb, f"{SECRET_WORD} pool leak database", SearchFilters(), k=10)
    assert all(
        SECRET_WORD not in c.snippet and c.access_tier == "general" for c in everything.candidates
    )
    assert kb.stats(["general"]).documents == 5  # counts shown to the caller exclude it
    assert "restricted" not in kb.stats(["general"]).by_tier
    with pytest.raises(NotFoundError) as hidden:
        kb.get("SECRET", ["general"])
    with pytest.raises(NotFoundError) as absent:
        kb.get("NO-SUCH-DOC", ["general"])
    assert str(hidden.value).replace("SECRET", "X") == str(absent.value).replace("NO-SUCH-DOC", "X")
    assert ids(kb, SECRET_WORD, tiers=("general", "restricted")) == ["SECRET"]
    assert ids(kb, SECRET_WORD, tiers=()) == []


def test_restricted_rows_are_filtered_before_ranking(kb: SQLiteStore) -> None:
    # with k=1 a post-filter would return nothing when the restricted doc scores best
    result = sparse_search(kb, f"{SECRET_WORD} database pool", SearchFilters(), k=1)
    assert [c.doc_id for c in result.candidates] in (["POOL"], ["NEWPOOL"])


def test_superseded_excluded_by_default_and_ranked_below_successor(kb: SQLiteStore) -> None:
    assert "OLDPOOL" not in ids(kb, "database pool limit reached first analysis")
    with_old = ids(kb, "database pool limit reached first analysis", include_superseded=True)
    assert "OLDPOOL" in with_old
    assert with_old.index("OLDPOOL") > with_old.index("NEWPOOL")
    result = sparse_search(kb, "first analysis", SearchFilters(include_superseded=True), k=5)
    old = next(c for c in result.candidates if c.doc_id == "OLDPOOL")
    assert old.status == "superseded" and old.superseded_by == "NEWPOOL"


def test_service_and_date_filters(kb: SQLiteStore) -> None:
    assert ids(kb, "pool database memory name", services=("checkout-api",)) == ["POOL"]
    import datetime as dt

    in_2024 = ids(kb, "pool database memory name resolution", date_from=dt.date(2024, 1, 1))
    assert set(in_2024) <= {"POOL", "NEWPOOL"} and "POOL" in in_2024
    assert "LEAK" in ids(kb, "memory", date_to=dt.date(2022, 12, 31))
    assert "POOL" not in ids(kb, "pool", exclude_ids=("POOL",))


def test_snippet_is_the_best_chunk_and_scores_descend(kb: SQLiteStore) -> None:
    result = sparse_search(kb, "OOMKilled resident memory", SearchFilters(), k=5)
    top = result.candidates[0]
    assert top.doc_id == "LEAK" and "OOMKilled" in top.snippet
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)
    assert top.retrievers["sparse"].rank == 1 and top.matched_by == "sparse"


def test_bm25f_scores_a_document_over_its_weighted_fields() -> None:
    import math

    from seenbefore.retrieval.bm25 import BM25Index

    index = BM25Index.build_fields(
        [("pool", "pool pool disk"), ("dns", "disk")], (2.0, 1.0), k1=1.2, b=0.75
    )
    # "pool": df 1 of 2 documents; field lengths (1, 3) against averages (1, 2)
    tf = 2.0 * 1 / (0.25 + 0.75 * 1 / 1) + 1.0 * 2 / (0.25 + 0.75 * 3 / 2)
    expected = math.log(2.0) * tf * 2.2 / (tf + 1.2)
    scores = index.scores(["pool"], None)
    assert scores[0] == pytest.approx(expected, rel=1e-6)
    assert scores[1] == 0.0
    assert index.coverage(["pool", "dns"], 1) == pytest.approx(0.5)


def test_word_pairs_are_adjacent_content_words_never_across_a_stop_word() -> None:
    from seenbefore.retrieval.bm25 import analyse, phrases

    assert analyse("error rates in the US-EAST-1 Region", stem=False, ngram=2) == [
        "error rates",
        "us east",
        "east 1",
        "1 region",
    ]
    assert analyse("Connections were refused", stem=True, ngram=2) == []
    assert analyse("connection pools exhausted", stem=True, ngram=2) == [
        "connect pool",
        "pool exhaust",
    ]
    assert phrases("x y x y", stem=False) == ["x y", "y x"]


def test_join_chunks_drops_the_overlap_each_chunk_repeats() -> None:
    from seenbefore.retrieval.corpus import join_chunks

    assert join_chunks(["one two three four", "three four five", "six"]) == (
        "one two three four five six"
    )
    assert join_chunks(["a b", "c d"]) == "a b c d"
