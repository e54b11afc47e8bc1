"""The draft's "no precedent" sentence names the threshold of the model that scored the query
(issue 32: an anomaly's draft said "at or below the calibrated threshold" at p 0.43 while the
threshold shown everywhere else was the text model's 0.10)."""

from __future__ import annotations

from seenbefore.investigation.investigator import novel_reason
from seenbefore.types import ModelFit


def test_the_sentence_carries_the_scoring_models_threshold() -> None:
    fit = ModelFit(lo=0.49, hi=0.8, held_out=None, live="")
    said = novel_reason(0.43, fit, "anomaly:sparse+signals")
    assert said == (
        "p_precedent 0.43 is at or below 0.49, the 'no precedent' threshold of the "
        "anomaly:sparse+signals confidence model that scored this query"
    )
    assert "0.10" not in said
    assert novel_reason(0.05, None, None).endswith("calibrated 'no precedent' threshold")
