"""The issue's acceptance check on the demo's own input: for each of the six origin incident types
the simulator injects, the draft cites a sample postmortem of that type first; the injected type
the knowledge base has never seen (gpu_fault) is reported novel."""

from __future__ import annotations

from pathlib import Path

import pytest

from seenbefore.config import Settings
from seenbefore.detection.pipeline import DetectionParams, detect
from seenbefore.detection.telemetry import SCENARIOS, simulate
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_anomaly
from seenbefore.investigation.reporter import OfflineReporter
from seenbefore.kb import KnowledgeBase

REPO = Path(__file__).resolve().parents[2]
ORIGIN = (
    "cpu_saturation",
    "memory_leak",
    "network_partition",
    "disk_io_contention",
    "bad_deploy",
    "connection_pool_exhaustion",
)


@pytest.mark.slow
def test_each_origin_type_cites_its_type_first_and_gpu_fault_is_novel(tmp_path: Path) -> None:
    telemetry = simulate(scenarios=list(SCENARIOS), hours=48, seed=0, warmup_hours=24.0)
    report = detect(telemetry, params=DetectionParams(train_minutes=24 * 60))
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
    for kind in ORIGIN:
        assert all(t == kind.replace("_", "-") and not novel for t, novel in first[kind]), (
            kind,
            first[kind],
        )
    assert all(novel and t is None for t, novel in first["gpu_fault"]), first["gpu_fault"]
