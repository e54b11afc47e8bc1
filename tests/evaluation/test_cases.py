import math
from pathlib import Path

import numpy as np
import pytest

from seenbefore.calibration.labelled import calibration_metrics, fit_confidence, mean_rr
from seenbefore.calibration.logistic import fit_logistic_nonnegative
from seenbefore.calibration.runs import CaseRun, fuse_offline, reciprocal_rank
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.errors import InputError
from seenbefore.evaluation.cases import Case, load_cases, split


def write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.yaml").write_text(text)


def test_load_cases_and_validation(tmp_path: Path) -> None:
    write(tmp_path, "a", "query: pool full\nexpected: [INC-1]\nalternates: INC-2\ntags: [x]\n")
    write(tmp_path, "b", "query: gpu on fire\nexpect_novel: true\n")
    cases = load_cases(tmp_path)
    assert [c.id for c in cases] == ["a", "b"]
    assert cases[0].relevant == {"INC-1", "INC-2"} and cases[1].expect_novel
    bad = {
        "noquery": ("expected: [A]\n", "'query' is missing"),
        "both": ("query: q\nexpected: [A]\nexpect_novel: true\n", "expect_novel is true"),
        "neither": ("query: q\n", "give 'expected' ids"),
        "list": ("query: q\nexpected: {a: 1}\n", "expected a list"),
        "yaml": ("query: [unclosed\n", "not valid YAML"),
    }
    for name, (text, message) in bad.items():
        folder = tmp_path / name
        folder.mkdir()
        write(folder, name, text)
        with pytest.raises(InputError, match=message):
            load_cases(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no \*\.yaml"):
        load_cases(empty)
    with pytest.raises(InputError, match="does not exist"):
        load_cases(tmp_path / "missing")


def test_split_is_deterministic_stratified_and_disjoint() -> None:
    cases = [Case(f"c{i}", "q", expected=("A",)) for i in range(10)] + [
        Case(f"n{i}", "q", expect_novel=True) for i in range(4)
    ]
    fit, held = split(cases, seed=3)
    assert split(cases, seed=3) == (fit, held)
    assert {c.id for c in fit}.isdisjoint({c.id for c in held})
    assert len(fit) + len(held) == 14
    assert sum(c.expect_novel for c in fit) == 2 and sum(c.expect_novel for c in held) == 2


def test_reciprocal_rank_and_offline_fusion() -> None:
    case = Case("c", "q", expected=("B",))
    sparse = CaseRun(case, "sparse", ["A", "B", "C"])
    dense = CaseRun(case, "dense", ["B", "C", "A"])
    assert reciprocal_rank(["A", "B"], case.relevant) == 0.5
    assert fuse_offline(sparse, dense, 0.0) == ["A", "B", "C"]
    assert fuse_offline(sparse, dense, 1.0) == ["B", "C", "A"]
    assert mean_rr([(sparse, dense)], 0.0) == 0.5 and mean_rr([(sparse, dense)], 1.0) == 1.0


def test_nonnegative_logistic_fit() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((200, 2))
    y = (x[:, 0] + 0.1 * rng.standard_normal(200) > 0.5).astype(float)  # only feature 0 matters
    w, b = fit_logistic_nonnegative(x, y, 0.01)
    assert w[0] > 2 and w[1] >= 0 and b < 0
    # an anti-correlated feature cannot get a negative weight
    w2, _ = fit_logistic_nonnegative(1 - x[:, :1], y, 0.01)
    assert w2[0] == pytest.approx(0.0, abs=1e-6)


def test_fit_confidence_separates_good_and_bad_runs() -> None:
    case_ok, case_novel = Case("ok", "q", expected=("A",)), Case("nv", "q", expect_novel=True)
    runs = [
        CaseRun(case_ok, "sparse", ["A"], {"passage_coverage": 0.8 + i / 100}) for i in range(10)
    ]
    runs += [
        CaseRun(case_novel, "sparse", ["Z"], {"passage_coverage": 0.2 + i / 100}) for i in range(10)
    ]
    model = fit_confidence(runs, "test")
    assert (
        model.predict({"passage_coverage": 0.9})
        > 0.7
        > 0.3
        > model.predict({"passage_coverage": 0.2})
    )
    assert not model.is_novel(model.predict({"passage_coverage": 0.85}))
    assert model.is_novel(model.predict({"passage_coverage": 0.2}))
    with pytest.raises(ValueError, match="is a precedent and cases where not"):
        fit_confidence(runs[:10], "only good")


def test_calibration_metrics_judge_each_case_by_its_query_shapes_thresholds() -> None:
    """A verdict recomputed for the metrics is the one the search gave: a pager line's
    thresholds for an alert-shaped query, the overall pair for the rest."""
    model = ConfidenceModel(
        weights={}, bias=math.log(0.4 / 0.6), lo=0.1, hi=0.5, shapes={"alert": (0.45, 0.9)}
    )
    none = Case("nv", "orders-api: p99 latency 8x", expect_novel=True)
    as_alert = calibration_metrics(model, [CaseRun(none, "hybrid", ["Z"], shape="alert")])
    as_prose = calibration_metrics(model, [CaseRun(none, "hybrid", ["Z"], shape="prose")])
    assert model.predict({}) == pytest.approx(0.4)
    assert as_alert["novel_recall"] == 1.0  # 0.4 <= the alert lo 0.45: "no precedent"
    assert as_prose["novel_recall"] == 0.0  # above the overall lo 0.1: "possible"
