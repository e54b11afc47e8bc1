from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from seenbefore.notify.redact import register_secret
from seenbefore.service.sampling import RESTRICTED, InvestigationSampler
from tests.service.conftest import Service

DRAFT: dict[str, Any] = {
    "summary": "Possible precedent: VAULT-1.",
    "hypothesis": "The vault key rotation published a key early.",
    "mitigations": ["Roll back the key"],
    "confidence": 0.7,
    "retrieval_trace": {
        "searched": {"query": "vault decrypt errors"},
        "candidates": [{"id": "VAULT-1", "matched_by": "sparse", "score": 1.0}],
    },
}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_restricted_text_and_secrets_are_withheld(tmp_path: Path) -> None:
    register_secret("hunter2-secret-key")
    path = tmp_path / "logs" / "investigations.jsonl"
    sampler = InvestigationSampler(path, 1.0)
    common: dict[str, Any] = {
        "source": "api",
        "principal": "alice",
        "draft": DRAFT,
        "evidence": {"candidates": [{"doc_id": "VAULT-1", "chunk_id": 12}]},
    }
    assert sampler.record(
        investigation_id="rev-1",
        principal_tiers=["general", "restricted"],
        query="vault decrypt errors",
        cited_tiers=["restricted"],
        **common,
    )
    assert sampler.record(
        investigation_id="rev-2",
        principal_tiers=["general"],
        query="token hunter2-secret-key leaked in logs",
        cited_tiers=["general"],
        **common,
    )
    hidden, shown = _records(path)
    assert hidden["query"] == RESTRICTED
    assert hidden["draft"]["hypothesis"] == RESTRICTED
    assert hidden["draft"]["mitigations"] == [RESTRICTED]
    assert hidden["draft"]["retrieval_trace"]["searched"]["query"] == RESTRICTED
    assert hidden["retrieved"] == [
        {
            "doc_id": "VAULT-1",
            "chunk_id": 12,
            "matched_by": "sparse",
            "matched_section": None,
            "score": 1.0,
        }
    ]
    assert "vault key rotation" not in json.dumps(hidden)
    assert shown["query"] == "token [redacted] leaked in logs"
    assert shown["draft"]["hypothesis"] == DRAFT["hypothesis"]
    assert "hunter2" not in path.read_text()


def test_fraction_decides_how_many_are_written(tmp_path: Path) -> None:
    path = tmp_path / "sampled.jsonl"
    sampler = InvestigationSampler(path, 0.25, rng=random.Random(7))
    written = sum(
        sampler.record(
            investigation_id=f"rev-{i}",
            source="api",
            principal="bob",
            principal_tiers=["general"],
            query="q",
            draft=DRAFT,
            evidence={},
            cited_tiers=["general"],
        )
        for i in range(400)
    )
    assert 70 <= written <= 130
    assert len(path.read_text().splitlines()) == written
    never = InvestigationSampler(tmp_path / "none.jsonl", 0.0)
    assert not never.record(
        investigation_id="x",
        source="api",
        principal="p",
        principal_tiers=["general"],
        query="q",
        draft=DRAFT,
        evidence={},
        cited_tiers=[],
    )
    assert not (tmp_path / "none.jsonl").exists()


def test_service_samples_investigations(service: Service) -> None:
    text = {"text": "database connections at the pool limit"}
    rid = service.as_("responder", "post", "/v1/investigations", json=text).json()["id"]
    log = service.settings.home / "logs" / "investigations.jsonl"
    record = _records(log)[-1]
    assert record["investigation_id"] == rid
    assert record["query"] == "database connections at the pool limit"
    assert record["retrieved"][0]["doc_id"] == "POOL-1"
    assert record["draft"]["cited_incidents"][0] == "POOL-1"
    assert record["prompt"] is None  # the offline reporter uses no prompt
