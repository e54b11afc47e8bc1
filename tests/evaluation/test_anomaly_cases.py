from __future__ import annotations

from pathlib import Path

import pytest

from seenbefore.config import Settings
from seenbefore.evaluation.anomalies import cases_from, leave_type_out, run_anomaly
from seenbefore.kb import KnowledgeBase
from seenbefore.lab.simulator import anomaly_records

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_simulated_anomaly_cases_are_labelled_against_the_kb(tmp_path: Path) -> None:
    records = anomaly_records([1])
    assert {r["kind"] for r in records} >= {"cpu_saturation", "gpu_fault"}
    with KnowledgeBase(Settings(home=tmp_path / "h", embedder="none")) as kb:
        kb.ingest([REPO / "examples/postmortems"])
        cases = cases_from(records, kb)
        types = {
            d: m.postmortem.type for d, m in kb.store.documents_meta(kb.store.list_ids()).items()
        }
        for c in cases:
            expected_type = c.kind.replace("_", "-")
            assert all(types[d] == expected_type for d in c.case.expected)
            assert c.case.expect_novel == (c.kind == "gpu_fault")
        hidden = leave_type_out(cases)
        assert len(hidden) == sum(not c.case.expect_novel for c in cases)
        assert all(h.case.expect_novel and h.case.exclude for h in hidden)
        run = run_anomaly(kb, hidden[0], tiers=("general",))
        assert not set(run.ranking) & set(hidden[0].case.exclude)  # hidden means hidden
        shown = run_anomaly(kb, cases[0], tiers=("general",))
        assert shown.signals["signal_overlap"] > 0
