"""The offline draft's words match its verdict (issue 34): "precedent found" may say "this
resembles"; "possible — check" says what to check and offers past fixes as what was done there
(may not apply); no fragment ending in a colon, no raw Markdown, no item in both the checks and
the missing information; signals named in the alert's words count as named."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from seenbefore.config import Settings
from seenbefore.core.confidence import FOUND, POSSIBLE
from seenbefore.investigation.evidence import Evidence, EvidenceItem
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import InvestigationRequest, from_text, named_in
from seenbefore.investigation.reporter import Draft, OfflineReporter, plain
from seenbefore.kb import KnowledgeBase
from seenbefore.review.models import evidence_from_dict, evidence_to_dict
from tests.service.conftest import write_kb

SECTIONS = {
    "detection": (
        "What the on-call found:\n- **p99 latency** rose to `8x` baseline.\n"
        "- [PgBouncer](https://wiki.example/pgb) showed waiting clients piling up."
    ),
    "root_cause": "**Trigger**: a fraud call held `connections` open inside a transaction.",
    "resolution": "- Disabled inline fraud scoring via flag.\n- Moved the call before the transaction.",
}


def item(shared: tuple[str, ...] = ()) -> EvidenceItem:
    return EvidenceItem(
        doc_id="INC-7",
        title="Checkout stalls on a held pool",
        date=dt.date(2025, 5, 1),
        type="connection-pool-exhaustion",
        status="current",
        superseded_by=None,
        access_tier="general",
        matched_by="sparse",
        retrievers={"sparse": {"rank": 1, "score": 7.5}},
        score=0.03,
        matched_section="detection",
        sections=dict(SECTIONS),
        signals_shared=shared,
        signals_not_in_precedent=(),
        signals_only_in_precedent=tuple(
            x
            for x in (
                "db_connections_in_use",
                "p99_latency",
                "error_rate",
                "pgbouncer_waiting",
                "cpu_usage",
            )
            if x not in shared
        ),
    )


def evidence(verdict: str, query: str, shared: tuple[str, ...] = ()) -> Evidence:
    return Evidence(
        request=InvestigationRequest(query=query, source="text"),
        items=(item(shared),),
        confidence=0.9 if verdict == FOUND else 0.3,
        confidence_label="high",
        novel=False,
        searched={"query": query, "mode": "sparse", "tiers": ["general"]},
        gate={},
        verdict=verdict,
    )


POOL = "checkout db connections in use at 100% of pool, p99 latency 8x"


def every_text(draft: Draft) -> list[str]:
    return [
        draft.summary,
        draft.hypothesis,
        *draft.suggested_checks,
        *draft.mitigations,
        *draft.missing_information,
    ]


def test_found_says_it_resembles_and_gives_the_fix_as_it_was() -> None:
    draft = OfflineReporter().draft(evidence(FOUND, POOL))
    assert draft.hypothesis.startswith("This resembles INC-7")
    assert draft.mitigations[0] == "Disabled inline fraud scoring via flag."


def test_possible_says_what_to_check_and_that_the_fix_may_not_apply() -> None:
    draft = OfflineReporter().draft(evidence(POSSIBLE, POOL))
    assert "resembles" not in draft.hypothesis
    assert "may be a precedent" in draft.hypothesis and "check before trusting" in draft.hypothesis
    assert draft.mitigations and all(
        m.startswith("What was done in INC-7 (may not apply): ") for m in draft.mitigations
    )
    assert any(c.startswith("Compare with how INC-7 showed itself") for c in draft.suggested_checks)


def test_no_fragment_no_markdown_no_repeats() -> None:
    draft = OfflineReporter().draft(evidence(POSSIBLE, POOL))
    for text in every_text(draft):
        assert not text.rstrip().endswith(":"), text
        assert "**" not in text and "`" not in text and "](" not in text, text
    assert "What the on-call found" not in " ".join(draft.suggested_checks)
    assert "a fraud call held connections open" in draft.hypothesis
    checked = {c.split()[1] for c in draft.suggested_checks if c.startswith("Check ")}
    assert checked and not any(any(x in m for x in checked) for m in draft.missing_information)


def test_shared_signals_are_said_and_not_asked_for_again() -> None:
    draft = OfflineReporter().draft(evidence(POSSIBLE, POOL, ("db_connections_in_use",)))
    assert "Signals shared with it: db_connections_in_use." in draft.hypothesis
    rest = " ".join(draft.suggested_checks + draft.missing_information)
    assert "db_connections_in_use" not in rest and "error_rate" in rest
    other = OfflineReporter().draft(evidence(POSSIBLE, "checkout is slow"))
    assert "the alert names none of them" in other.hypothesis
    assert "none of the observed signals" not in other.hypothesis


def test_the_investigator_counts_signals_the_alert_names_in_words(tmp_path: Path) -> None:
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([write_kb(tmp_path / "docs")])
        ev = Investigator(kb, tiers=("general",)).investigate(from_text(POOL))
    top = ev.items[0]
    assert top.doc_id == "POOL-1"
    assert top.signals_shared == ("db_connections_in_use", "p99_latency")
    assert top.signals_only_in_precedent == ("error_rate",)


def test_named_in_and_plain() -> None:
    assert named_in("db_connections_in_use", "DB connections in use at 100%")
    assert not named_in("db_connections_in_use", "db connections at the limit")
    assert not named_in("cpu", "cpus busy")  # whole words only
    assert plain("**Trigger**: `x` and [a](https://h/p)") == "Trigger: x and a (https://h/p)"


def test_an_untyped_precedent_is_named_by_its_inferred_failure_mode(tmp_path: Path) -> None:
    # real postmortems carry no type: the draft names the mode inferred from the text, marked
    # so (as show and search do), where it said "untyped"
    docs = write_kb(tmp_path / "docs")
    for path in docs.glob("*.md"):
        text = path.read_text()
        path.write_text("\n".join(x for x in text.splitlines() if not x.startswith("type:")))
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        kb.ingest([docs])
        ev = Investigator(kb, tiers=("general",)).investigate(from_text(POOL))
    top = ev.items[0]
    assert top.doc_id == "POOL-1" and top.type == ""
    assert top.inferred_type.startswith("connection-pool-exhaustion (inferred, p ")
    draft = OfflineReporter().draft(replace(ev, verdict=POSSIBLE, novel=False))
    assert "untyped" not in draft.summary
    assert f"POOL-1, {top.inferred_type};" in draft.summary
    kept = evidence_from_dict(evidence_to_dict(ev), ev.request)  # what a review stores
    assert kept.items[0].inferred_type == top.inferred_type
    # an author's type is shown as written, with nothing inferred beside it
    assert item().inferred_type == ""


def test_a_precedent_without_a_root_cause_is_told_by_its_summary_not_an_empty_quote() -> None:
    # danluu's entries are one summary each: the draft said "In that incident the root cause
    # was: (the precedent records no root cause section)"
    summary = "A leap second made the kernel livelock. Servers spun at full CPU."
    base = evidence(POSSIBLE, "leap second, servers at 100% cpu")
    only = replace(item(), sections={"summary": summary})
    draft = OfflineReporter().draft(replace(base, items=(only,)))
    assert "root cause was:" not in draft.hypothesis
    assert f"It records no root cause section; its summary: {summary}" in draft.hypothesis
    # when the title already says it, the draft does not say it twice
    titled = replace(only, title=f"Linux: {summary}")
    again = OfflineReporter().draft(replace(base, items=(titled,)))
    assert "It records no root cause section; read INC-7 itself." in again.hypothesis
    assert again.hypothesis.count("livelock") == 1


def test_a_title_that_is_a_sentence_loses_its_full_stop_before_the_date() -> None:
    base = evidence(FOUND, POOL)
    titled = replace(item(), title="Disruption in the power at the primary datacenter.")
    draft = OfflineReporter().draft(replace(base, items=(titled,)))
    assert "(Disruption in the power at the primary datacenter, 2025-05-01)" in draft.hypothesis
