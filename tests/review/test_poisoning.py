"""Labels cannot outvote the truth (issue 33): a ``general`` responder's hostile feedback --
off-topic queries marked helpful, exact-title queries marked unhelpful -- is kept and counted,
but it moves no one's verdict: below the reviewer role, labels are fitted only when an admin
accepts them, and a refit that is not kept writes nothing."""

from __future__ import annotations

import pytest

from seenbefore.calibration.people import labels, maybe_refit, refit
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.review.feedback import record_feedback
from seenbefore.review.records import ReviewRecords
from seenbefore.types import SearchFilters
from tests.review.conftest import ALL_TIERS

OFF_TOPIC = ("the printer on floor 3 is out of toner", "book the big meeting room for thursday")
OTHER_USERS = (
    "TLS certificate expired on the partner integration, handshake errors",
    "inventory-api pods OOMKilled after unbounded per-request cache growth, heap climbing",
    "what is the capital of australia",
    "orders-db EBS burst balance depleted, disk I/O wait high, slow queries",
)


def verdicts(kb: KnowledgeBase) -> list[tuple[str, float]]:
    out = []
    for q in OTHER_USERS:
        r = kb.search(q, SearchFilters(tiers=ALL_TIERS), SearchOptions(k=3))
        out.append((r.verdict, round(r.confidence, 6)))
    return out


def attack(kb: KnowledgeBase, n: int, *, role: str = "responder") -> None:
    records = ReviewRecords(kb.store)
    titles = [m.postmortem.title for m in kb.store.documents_meta(kb.store.list_ids(None)).values()]
    for i in range(n):
        hostile_helpful = i % 5 != 4  # 4 of 5: off-topic marked helpful; 1 of 5: a title, unhelpful
        query = OFF_TOPIC[i % 2] if hostile_helpful else titles[i % len(titles)]
        r = kb.search(query, SearchFilters(tiers=ALL_TIERS), SearchOptions(k=3))
        top = r.candidates[0].doc_id
        evidence = {
            "candidates": [{"doc_id": top}],
            "signals": dict(r.signals),
            "confidence_model_key": r.confidence_model_key,
        }
        record_feedback(
            records,
            requested_by="mallory",
            query=query,
            evidence=evidence,
            label=int(hostile_helpful),
            reason="feedback:helpful" if hostile_helpful else "feedback:not_helpful",
            access_tier="general",
            tiers=["general"],
            doc_ids=[top],
            detail={"doc_id": top, "helpful": hostile_helpful, "channel": "mcp", "role": role},
        )


@pytest.mark.parametrize("n", [20, 50, 200])
def test_a_responders_hostile_labels_leave_every_other_users_verdicts_unchanged(
    kb: KnowledgeBase, n: int
) -> None:
    before_record = kb.store.get_json("calibration")
    before = verdicts(kb)
    attack(kb, n)
    said = labels(kb.store)
    assert len(said) == n and {p.role for p in said} == {"responder"}  # kept, with provenance
    assert maybe_refit(kb, every=10) is None  # no label here may move the shared model
    report = refit(kb)  # an explicit refit without an admin's acceptance fits none of them
    assert any("below the reviewer role" in note for note in report["notes"])
    assert kb.store.get_json("calibration") == before_record  # byte-for-byte: nothing written
    assert verdicts(kb) == before


def test_an_accepted_refit_that_loses_on_data_others_wrote_writes_nothing(
    kb: KnowledgeBase,
) -> None:
    attack(kb, 30)
    before_record = kb.store.get_json("calibration")
    report = refit(kb, all_roles=True, by=["mallory"])  # accepted, but judged without mallory
    for key, model in report["models"].items():
        if not model.get("kept"):
            continue
        pytest.fail(f"{key}: a refit on hostile labels was kept: {model.get('precedence')}")
    assert kb.store.get_json("calibration") == before_record
