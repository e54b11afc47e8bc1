"""Cases built from the knowledge base itself, so a team can measure recall on its own history.

For each postmortem with a Detection/Symptoms section: the query is that section, the postmortem
is left out (leave-one-out, by pre-filter: it is never a candidate, though its words still count
in corpus statistics), and the relevant answers are the other current postmortems of the same
incident type. A postmortem whose type has no other member is an expected-novel case.
"""

from __future__ import annotations

from collections.abc import Sequence

from seenbefore.calibration.cases import Case
from seenbefore.storage.ports import DocumentReads


def self_test_cases(store: DocumentReads, tiers: Sequence[str]) -> list[Case]:
    docs = store.documents_meta(store.list_ids(list(tiers)))
    current = {d: s for d, s in docs.items() if s.effective_status == "current"}
    by_type: dict[str, set[str]] = {}
    for doc_id, stored in current.items():
        if stored.postmortem.type:
            by_type.setdefault(stored.postmortem.type, set()).add(doc_id)
    cases = []
    for doc_id, stored in sorted(current.items()):
        pm = stored.postmortem
        detection = pm.section("detection")
        if detection is None or not pm.type:
            continue
        siblings = sorted(by_type[pm.type] - {doc_id})
        cases.append(
            Case(
                id=f"self-{doc_id}",
                query=detection.text,
                expected=tuple(siblings),
                expect_novel=not siblings,
                tags=("self-test", pm.type),
                exclude=(doc_id,),
                source=f"self-test:{doc_id}",
            )
        )
    return cases
