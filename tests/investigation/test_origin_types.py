"""The origin incident types, on simulator seeds the anomaly models were never fitted on.

The anomaly confidence was fitted on even seeds 0-14 and the profile weights cross-validated on
seeds 0-15, so seeds 16 and 17 (the first two after them, not picked by their results) are held
out. What holds there: whenever a draft cites a precedent, the first one is of the injected type;
the type the knowledge base has never seen (gpu_fault) is reported novel; and at least five of the
six origin types get a citation. Measured on seeds 16-22: bad_deploy is called novel on 4 of 7
seeds, which is why the bound is five of six and not six (the known miss)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seenbefore.config import Settings
from seenbefore.detection.pipeline import DetectionParams, detect
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_anomaly
from seenbefore.investigation.reporter import OfflineReporter
from seenbefore.kb import KnowledgeBase
from seenbefore.lab.simulator import SCENARIOS, simulate

REPO = Path(__file__).resolve().parents[2]
ORIGIN = (
    "cpu_saturation",
    "memory_leak",
    "network_partition",
    "disk_io_contention",
    "bad_deploy",
    "connection_pool_exhaustion",
)


HELD_OUT_SEEDS = (16, 17)


@pytest.mark.slow
@pytest.mark.parametrize("seed", HELD_OUT_SEEDS)
def test_held_out_seeds_cite_the_right_type_and_gpu_fault_is_novel(
    tmp_path: Path, seed: int
) -> None:
    telemetry = simulate(scenarios=list(SCENARIOS), hours=48, seed=seed, warmup_hours=24.0)
    # the first 24 h are clean history: the learning period (as `detect --scenario` and
    # benchmarks/detection.py give it), not the default for a user's series
    report = detect(telemetry, params=DetectionParams(train_minutes=24 * 60, probation=24 * 60))
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([REPO / "examples/postmortems"])
        types = {
            d: m.postmortem.type for d, m in kb.store.documents_meta(kb.store.list_ids()).items()
        }
        investigator = Investigator(kb, tiers=("general",))
        reporter = OfflineReporter()
        first: dict[str, list[tuple[str | None, bool]]] = {}
        for anomaly in report.triage.kept:
            kind = (report.matches.get(anomaly.id) or "").split("@")[0]
            if not kind:
                continue
            draft = reporter.draft(investigator.investigate(from_anomaly(anomaly)))
            cited = draft.cited_incidents[0] if draft.cited_incidents else None
            first.setdefault(kind, []).append((types.get(cited) if cited else None, draft.novel))
    assert set(first) == set(SCENARIOS), f"detector missed some injected incidents: {first}"
    for kind in ORIGIN:  # a citation, when made, is of the right type
        assert all(t == kind.replace("_", "-") for t, novel in first[kind] if not novel), (
            kind,
            first[kind],
        )
    cited = [kind for kind in ORIGIN if any(not novel for _, novel in first[kind])]
    assert len(cited) >= 5, first
    assert all(novel and t is None for t, novel in first["gpu_fault"]), first["gpu_fault"]
