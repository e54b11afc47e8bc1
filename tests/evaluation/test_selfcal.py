import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from seenbefore.config import Settings
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.evaluation.cases import Case
from seenbefore.evaluation.runner import CaseRun
from seenbefore.evaluation.selfcal import (
    MIN_DOCUMENTS,
    changed_share,
    fit_mode,
    novel_threshold,
    self_query,
    simulate,
)
from seenbefore.kb import KnowledgeBase, shipped_defaults
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters
from tests.conftest import postmortem_text

TIERS = SearchFilters(tiers=("general",))


def _write(folder: Path, n: int, seed: int = 7) -> dict[str, str]:
    """``n`` postmortems of made-up words, each its own vocabulary: exact precedents only."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "qu", "fo", "py"]
    openings = {}
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        words = ["".join(rng.choice(syllables) for _ in range(3)) for _ in range(40)]
        opening = " ".join(words[:12]) + "."
        openings[f"D{i:02d}"] = opening
        body = f"## Detection\n{opening}\n\n## Root cause\n{' '.join(words[12:])}.\n"
        (folder / f"D{i:02d}.md").write_text(
            postmortem_text(f"D{i:02d}", title=" ".join(words[30:34]), body=body)
        )
    return openings


@pytest.fixture
def exact_kb(tmp_path: Path) -> Iterator[tuple[KnowledgeBase, dict[str, str]]]:
    openings = _write(tmp_path / "docs", 30)
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([tmp_path / "docs"])
        yield kb, openings


def test_a_six_document_kb_keeps_the_shipped_defaults_and_says_why(tmp_path: Path) -> None:
    _write(tmp_path / "docs", 6)
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([tmp_path / "docs"])
        record = kb.store.get_json("self_calibration")
        assert record["live"] == "shipped defaults"
        assert f"6 documents, below MIN_DOCUMENTS = {MIN_DOCUMENTS}" in record["reason"]
        model = kb.confidence_model("sparse")
        assert model is not None
        assert (
            model.as_dict()
            == ConfidenceModel.from_dict(shipped_defaults()["confidence"]["sparse"]).as_dict()
        )
        assert "6 documents, below" in kb.status()["confidence_model"]


def _run(case_id: str, coverage: float, correct: bool, novel: bool = False) -> CaseRun:
    case = Case(id=case_id, query="q", expected=() if novel else ("A",), expect_novel=novel)
    return CaseRun(case, "sparse", ["A" if correct else "B"], {"sparse_coverage": coverage})


def test_calibration_refuses_a_fit_that_is_worse_than_the_default_on_held_out() -> None:
    # fit half: high coverage means right; held-out half: the opposite
    fit = [_run(f"f{i}", 1.0, True) for i in range(5)] + [
        _run(f"g{i}", 0.0, False, novel=True) for i in range(5)
    ]
    held = [_run(f"h{i}", 1.0, False, novel=True) for i in range(5)] + [
        _run(f"k{i}", 0.0, True) for i in range(5)
    ]
    default = ConfidenceModel({}, 0.0)  # p = 0.5 everywhere: Brier 0.25
    out = fit_mode("sparse", fit, held, default, "test")
    assert out["default_held_out"]["brier"] == 0.25
    assert out["held_out"]["brier"] > 0.25
    assert out["kept"] is False
    assert "shipped default kept" in out["reason"]
    # the same data the right way round is kept
    assert fit_mode("sparse", fit, fit, default, "test")["kept"] is True


def test_a_refused_fit_leaves_the_shipped_model_live(
    exact_kb: tuple[KnowledgeBase, dict[str, str]],
) -> None:
    kb, _ = exact_kb
    record = kb.store.get_json("self_calibration")
    record["modes"]["sparse"]["kept"] = False
    kb.store.set_json("self_calibration", record)
    model = kb.confidence_model("sparse")
    assert model is not None
    assert model.bias == shipped_defaults()["confidence"]["sparse"]["bias"]


def test_novel_rate_on_a_kb_of_exact_precedents_is_bounded(
    exact_kb: tuple[KnowledgeBase, dict[str, str]],
) -> None:
    kb, openings = exact_kb
    record = kb.store.get_json("self_calibration")
    assert record["live"] == "self-calibrated: sparse"
    results = [kb.search(q, TIERS, SearchOptions(k=3)) for q in openings.values()]
    top = [r.candidates[0].doc_id for r in results]
    assert top == list(openings)
    novel = [r.novel for r in results]
    assert sum(novel) / len(novel) <= 0.1
    assert any(r.confidence_label == "high" for r in results)
    # and left out, the same queries are mostly "no precedent" (recall target 0.6)
    left_out = [
        kb.search(q, SearchFilters(tiers=("general",), exclude_ids=(d,)), SearchOptions(k=3))
        for d, q in openings.items()
    ]
    assert sum(r.novel for r in left_out) / len(left_out) >= 0.6


def test_material_change_is_measured_on_documents(
    exact_kb: tuple[KnowledgeBase, dict[str, str]], tmp_path: Path
) -> None:
    kb, _ = exact_kb
    assert changed_share(kb) == 0.0
    assert kb.maybe_self_calibrate() is None  # nothing changed: no refit
    _write(tmp_path / "more", 34, seed=9)  # D00..D33 with new text: every document changes
    kb.ingest([tmp_path / "more"])
    assert kb.store.get_json("self_calibration")["documents"] == 34


def test_novel_threshold_is_the_largest_recall_at_precision_0_8() -> None:
    # flagging p < 0.2001 catches both novel cases and nothing else; going to 0.3 adds a
    # precedent (precision 2/3 < 0.8)
    t, why = novel_threshold([0.1, 0.2, 0.3, 0.9], [True, True, False, False])
    assert t == 0.2001
    assert "recall 1.00" in why
    t, why = novel_threshold([0.1, 0.2], [False, False])
    assert t == 0.0 and "verdict off" in why


def test_self_query_takes_the_opening_of_detection() -> None:
    from seenbefore.knowledge.validate import postmortem_from_markdown

    body = "## Summary\nA summary.\n\n## Detection\nFirst sentence here. Second one.\n"
    pm = postmortem_from_markdown("x.md", postmortem_text("X", body=body))
    assert self_query(pm) == "First sentence here. Second one."
    assert simulate("a b c", ["z"], "s", noise=0.0) == "a b c"
    assert simulate("a b c d e f", ["z"], "s", noise=1.0) == "z z z z z z"


def test_report_json_is_strict() -> None:
    import json

    from seenbefore.evaluation.report import strict

    value = strict({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": float("-inf")}})
    assert value == {"a": None, "b": [None, 1.5], "c": {"d": None}}
    json.dumps(value, allow_nan=False)
