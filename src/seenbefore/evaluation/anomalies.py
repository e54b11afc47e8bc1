"""Anomaly cases: what the detector actually hands the investigator, labelled by the simulator.

Each case is one anomaly the detector raised over simulated telemetry that matched an injected
incident (the records of :func:`seenbefore.lab.simulator.anomaly_records`). Its relevant documents
are the visible postmortems of the incident's type (``cpu_saturation`` -> ``cpu-saturation``); a
kind with no such postmortem is a no-precedent case. ``leave_type_out`` turns every case with a
precedent into a no-precedent one by hiding its type from the index: the negatives a confidence
model for anomalies needs.

Caveat, said wherever figures from these cases are printed: the simulator and the sample
postmortems were written by the same project, so these cases measure the anomaly path end to end
(detector -> query -> retrieval), not generalisation to another organisation's incidents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seenbefore.calibration.runs import CaseRun, timed_search
from seenbefore.evaluation.cases import Case
from seenbefore.investigation.query import InvestigationRequest, from_anomaly
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters

CAVEAT = (
    "simulated anomalies against the project's own sample postmortems: a check of the anomaly "
    "path, not of generalisation"
)


@dataclass(frozen=True)
class AnomalyCase:
    case: Case
    kind: str  # the injected scenario
    seed: int
    request: InvestigationRequest = field(repr=False)


def incident_type(kind: str) -> str:
    return kind.replace("_", "-")


def cases_from(records: Sequence[Mapping[str, Any]], kb: KnowledgeBase) -> list[AnomalyCase]:
    """Label records against the knowledge base: relevant = current postmortems of the type."""
    from seenbefore.types import anomaly_from_dict

    rows = kb.store.document_rows()
    metas = kb.store.documents_meta(rows.ids)
    by_type: dict[str, list[str]] = {}
    for doc_id, current in zip(rows.ids, rows.current, strict=True):
        if current:
            by_type.setdefault(metas[doc_id].postmortem.type, []).append(doc_id)
    out = []
    for n, record in enumerate(records):
        kind = str(record["kind"])
        request = from_anomaly(anomaly_from_dict(dict(record["anomaly"])))
        relevant = tuple(sorted(by_type.get(incident_type(kind), [])))
        case = Case(
            id=f"{kind}-s{record['seed']}-{n}",
            query=request.query,
            expected=relevant,
            expect_novel=not relevant,
            tags=(incident_type(kind), "anomaly"),
            source="simulated anomaly",
        )
        out.append(AnomalyCase(case, kind, int(record["seed"]), request))
    return out


def leave_type_out(cases: Sequence[AnomalyCase]) -> list[AnomalyCase]:
    """Each case with a precedent, its incident type hidden: a no-precedent case."""
    return [
        replace(
            c,
            case=replace(
                c.case,
                id=c.case.id + "-hidden",
                expected=(),
                expect_novel=True,
                exclude=c.case.expected,
                tags=(*c.case.tags, "leave-type-out"),
            ),
        )
        for c in cases
        if not c.case.expect_novel
    ]


def run_anomaly(
    kb: KnowledgeBase,
    case: AnomalyCase,
    *,
    tiers: Sequence[str],
    mode: str = "hybrid",
    signal_weight: float | None = None,
    dense_weight: float | None = None,
    depth: int = 100,
    k: int = 10,
) -> CaseRun:
    """One anomaly through ``kb.search`` with the anomaly profile (weights left unset come
    from the shipped profile)."""
    options = SearchOptions(
        k=k,
        mode=mode,
        depth=depth,
        profile="anomaly",
        signals=dict(case.request.signal_strengths),
        signal_weight=signal_weight,
        dense_weight=dense_weight,
    )
    return timed_search(kb, case.case, case.request.query, tiers=tiers, options=options)


def signal_ranking(kb: KnowledgeBase, case: AnomalyCase, *, tiers: Sequence[str]) -> list[str]:
    """The structured retriever's ranking alone (documents with any signal in common)."""
    index = kb.index()
    if index.signals is None:
        return []
    mask = index.doc_mask(SearchFilters(tiers=tuple(tiers), exclude_ids=case.case.exclude))
    order, _ = index.signals.ranked(case.request.signal_strengths, mask, index.doc_ids)
    return [index.doc_ids[i] for i in order]
