"""Inverse-cloze cases for the verdict (evaluation/cloze.py)."""

import datetime as dt
from pathlib import Path

from seenbefore.config import Settings
from seenbefore.evaluation.cloze import (
    CLOZE_RATIO,
    TAG,
    cloze_cases,
    opening_section,
    shadow_kb,
    without_opening,
)
from seenbefore.evaluation.selfcal import self_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import Postmortem, SearchFilters, Section
from tests.conftest import postmortem_text


def _pm(detection: str, rest: str) -> Postmortem:
    sections = (
        Section("detection", "Detection", detection, 0),
        Section("root_cause", "Root cause", rest, 1),
    )
    return Postmortem("P1", "t", dt.date(2024, 1, 1), "", sections, content_hash="h")


def test_the_opening_is_cut_from_its_own_section_and_nothing_else() -> None:
    pm = _pm("alpha beta gamma delta. more words here", " ".join(["w"] * 40))
    cut = without_opening(pm, "alpha beta gamma")
    assert cut is not None
    assert cut.sections[0].text == "delta. more words here"
    assert cut.sections[1] == pm.sections[1]
    assert cut.content_hash != pm.content_hash  # the shadow store sees a changed document
    assert opening_section(pm) is pm.sections[0]


def test_no_cloze_when_the_rest_is_too_short_or_the_query_is_not_the_opening() -> None:
    opening = "alpha beta gamma delta"
    short = _pm(opening, " ".join(["w"] * (int(CLOZE_RATIO * 4) - 1)))
    assert without_opening(short, opening) is None  # 11 words left for a 4-word opening
    enough = _pm(opening, " ".join(["w"] * int(CLOZE_RATIO * 4)))
    assert without_opening(enough, opening) is not None
    assert without_opening(enough, "beta gamma") is None  # not where the section starts
    assert without_opening(enough, "") is None


def _corpus(folder: Path, n: int, long_from: int) -> None:
    """``n`` documents of their own made-up words; from ``long_from`` on, long enough that
    losing the opening leaves most of the write-up."""
    folder.mkdir(parents=True)
    for i in range(n):
        words = [f"w{i}x{j}" for j in range(200 if i >= long_from else 14)]
        body = f"## Detection\n{' '.join(words[:12])}.\n\n## Root cause\n{' '.join(words[12:])}.\n"
        (folder / f"D{i:02d}.md").write_text(postmortem_text(f"D{i:02d}", title=f"t{i}", body=body))


def test_cloze_cases_cut_long_documents_and_the_shadow_kb_leaves_the_real_one_alone(
    tmp_path: Path,
) -> None:
    _corpus(tmp_path / "docs", 24, long_from=12)
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([tmp_path / "docs"])
        generation, files = kb.store.generation(), sorted((tmp_path / "home").rglob("*"))
        fit, held, _ = self_cases(kb, noise=0.3)
        clean_fit, clean_held, _ = self_cases(kb, noise=0.0)
        stored = kb.store.documents_meta(kb.store.list_ids(None))
        postmortems = {doc: s.postmortem for doc, s in stored.items()}
        cases, cut = cloze_cases(postmortems, [*fit, *held], [*clean_fit, *clean_held])
        assert sorted(cut) == [f"D{i:02d}" for i in range(12, 24)]  # only the long ones
        cloze = [c for c in cases if TAG in c.tags]
        assert len(cloze) == 2 * len(cut)  # each one's precedent and left-out case
        clean = {c.id: c.query for c in [*clean_fit, *clean_held]}
        assert all(c.query == clean[c.id] for c in cloze)  # the opening as written
        shadow = shadow_kb(kb.settings, {**postmortems, **cut})
        try:
            assert shadow.store.list_ids(None) == kb.store.list_ids(None)
            everyone = SearchFilters(tiers=("general",))
            sparse = SearchOptions(k=3, mode="sparse")
            for case in cloze:
                if case.expect_novel:
                    continue
                doc = case.id.split(":", 1)[1]
                # the query's words are gone from its document in the shadow copy only
                assert doc not in [
                    c.doc_id for c in shadow.search(case.query, everyone, sparse).candidates
                ]
                assert kb.search(case.query, everyone, sparse).candidates[0].doc_id == doc
        finally:
            shadow.close()
        assert kb.store.generation() == generation  # the real KB did not move
        assert sorted((tmp_path / "home").rglob("*")) == files  # nor did its files


def test_self_calibration_fits_the_verdict_on_cloze_cases_and_says_so(tmp_path: Path) -> None:
    _corpus(tmp_path / "docs", 24, long_from=12)
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([tmp_path / "docs"])
        record = kb.store.get_json("self_calibration")
        assert record["verdict_cases"].startswith("inverse cloze for 12 of 24 documents")
        assert "verdict fitted on inverse cloze for 12 of 24 documents" in kb.live_model_line()


def test_a_document_without_sections_has_no_opening_to_cut() -> None:
    pm = Postmortem("P2", "only a title", None, "", (), content_hash="h")
    assert opening_section(pm) is None
    assert without_opening(pm, "only a title") is None
