import pytest

from seenbefore.core.fusion import ranked, rrf


def test_rrf_hand_worked_values() -> None:
    fused = rrf({"sparse": ["d1", "d2", "d3"], "dense": ["d3", "d1"]})
    assert fused["d1"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2))
    assert fused["d2"] == pytest.approx(1 / (60 + 2))  # missing from dense: nothing from it
    assert fused["d3"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert ranked(fused) == ["d1", "d3", "d2"]


def test_weighted_rrf_and_k() -> None:
    fused = rrf(
        {"sparse": ["a", "b"], "dense": ["b", "a"]}, k=10, weights={"sparse": 0.7, "dense": 0.3}
    )
    assert fused["a"] == pytest.approx(0.7 / 11 + 0.3 / 12)
    assert fused["b"] == pytest.approx(0.7 / 12 + 0.3 / 11)
    assert ranked(fused) == ["a", "b"]
    only_sparse = rrf({"sparse": ["a"], "dense": ["z"]}, weights={"sparse": 1.0, "dense": 0.0})
    assert only_sparse == {"a": pytest.approx(1 / 61)}  # weight 0 contributes nothing at all


def test_rrf_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="k >= 0"):
        rrf({"a": ["x"]}, k=-1)
    with pytest.raises(ValueError, match="expected a number >= 0"):
        rrf({"a": ["x"]}, weights={"a": -0.5})


def test_ties_break_by_id() -> None:
    assert ranked({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]
