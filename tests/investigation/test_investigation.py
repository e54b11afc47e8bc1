import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.config import Settings
from seenbefore.errors import InputError
from seenbefore.investigation.evidence import EvidenceItem
from seenbefore.investigation.investigator import Investigator, uncorroborated
from seenbefore.investigation.query import (
    alert_words,
    from_alertmanager,
    from_anomaly,
    from_text,
    measured,
)
from seenbefore.investigation.reporter import OFFLINE_LABEL, Draft, OfflineReporter
from seenbefore.kb import KnowledgeBase
from seenbefore.types import Anomaly, MetricDeviation
from tests.conftest import postmortem_text

POOL_BODY = """## Summary
Checkout failed for forty minutes.

## Detection
p99 latency rose eightfold and database connections sat at the pool limit.

## Root cause
A fraud check held database connections open during slow calls, exhausting the pool.

## Resolution
- Restarted the checkout pods to release connections.
- Moved the fraud call outside the transaction.
"""


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pool.md").write_text(
        postmortem_text(
            "POOL",
            title="Checkout pool exhaustion",
            body=POOL_BODY,
            date="2025-06-01",
            signals="[db_connections_in_use, p99_latency, error_rate]",
            type="connection-pool-exhaustion",
        )
    )
    (folder / "dns.md").write_text(
        postmortem_text(
            "DNS",
            title="Resolver outage",
            date="2020-01-01",
            body="## Summary\nname resolution failed.\n\n## Root cause\nresolver overload.\n",
        )
    )
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as base:
        base.ingest([folder])
        yield base


def test_query_from_the_real_alertmanager_webhook(shared_data: Path) -> None:
    payload = json.loads((shared_data / "alertmanager" / "webhook_v4_firing.json").read_text())
    [request] = from_alertmanager(payload)
    assert request.source == "alertmanager" and request.services == ("payments-api",)
    assert "5xx error rate anomaly on payments-api" in request.query
    # the alert's name in words too, and no label keys or severity: they say nothing of what
    # failed (the query was "... alertname HighErrorRate. service payments-api. severity critical")
    assert "HighErrorRate (High Error Rate)" in request.query
    assert not {"alertname", "service", "severity", "critical"} & set(request.query.split())
    assert request.fingerprint == "093f2550cadd6e45"
    assert request.started_at == dt.datetime(2026, 11, 30, 0, 11, 42, tzinfo=dt.UTC)
    resolved = json.loads((shared_data / "alertmanager" / "webhook_v4_resolved.json").read_text())
    assert from_alertmanager(resolved) == []  # resolved alerts close, they do not investigate


def test_alert_names_are_read_in_words() -> None:
    assert alert_words("NodeFilesystemAlmostOutOfSpace") == (
        "NodeFilesystemAlmostOutOfSpace (Node Filesystem Almost Out Of Space)"
    )
    assert alert_words("HTTPErrors5xx") == "HTTPErrors5xx (HTTP Errors 5xx)"
    for kept in ("payments-api", "up", "checkout_api", "TargetDown now", "Down"):
        assert alert_words(kept) == kept


def test_bad_alert_payloads() -> None:
    with pytest.raises(InputError, match="version 4"):
        from_alertmanager({"version": "3", "alerts": []})
    with pytest.raises(InputError, match="'alerts'"):
        from_alertmanager([1, 2])
    with pytest.raises(InputError, match="RFC 3339"):
        from_alertmanager(
            {
                "version": "4",
                "alerts": [
                    {"status": "firing", "labels": {"alertname": "X"}, "startsAt": "yesterday"}
                ],
            }
        )
    with pytest.raises(InputError, match="empty"):
        from_text("  ")


def test_anomaly_query_carries_signals() -> None:
    t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    a = Anomaly(
        "a",
        "checkout-api",
        "aws",
        "us-east-1",
        t,
        t,
        0.9,
        deviations=(
            MetricDeviation("db_connections_in_use", "up", 100, 30, 20),
            MetricDeviation("p99_latency", "up", 2000, 250, 30, "ms"),
        ),
    )
    request = from_anomaly(a, {"db_connections_in_use": 100})
    assert request.display.startswith("checkout-api (aws/us-east-1): p99_latency 8x baseline")
    assert request.query == (
        "checkout-api: p99 latency up, slow responses, timeouts; database connections in use at "
        "the pool limit, waiting for a connection"
    )
    assert request.signals == ("db_connections_in_use", "p99_latency")


def one_metric(service: str, deviation: MetricDeviation) -> Anomaly:
    t = dt.datetime(2014, 2, 25, tzinfo=dt.UTC)
    return Anomaly("a", service, "", "", t, t, 1.0, deviations=(deviation,))


def test_a_one_column_series_is_read_by_its_name() -> None:
    # NAB's CSVs and a `timestamp,value` export name the series for its metric: the query said
    # "value up" and the structured signal was "value", which no postmortem records
    a = one_metric("rds_cpu_utilization_cc0c53", MetricDeviation("value", "up", 25.1, 6.0, 9.0))
    request = from_anomaly(a)
    assert request.query == (
        "rds_cpu_utilization_cc0c53: CPU utilization high, CPU pegged, cores saturated"
    )
    assert request.signals == ("cpu_utilization",)
    assert request.signal_strengths == {"cpu_utilization": 9.0}
    # a name that holds no known metric is said in words; a named column is itself
    other = replace(a, service="nyc_taxi")
    assert from_anomaly(other).query == "nyc_taxi: nyc taxi up"
    assert measured("p99_latency", "rds_cpu_utilization_x") == "p99_latency"
    # a named metric stays as named: a postmortem may record node_cpu_utilization itself
    assert measured("node_cpu_utilization", "svc") == "node_cpu_utilization"
    assert measured("value", "rds_cpu_x") == "rds_cpu_x"  # whole metric names only


def test_one_metric_of_another_service_is_possible_not_found() -> None:
    a = one_metric("rds-db", MetricDeviation("cpu_utilization", "up", 95, 30, 9.0))
    request = from_anomaly(a)

    def top(shared: tuple[str, ...]) -> EvidenceItem:
        return EvidenceItem(
            "INC-1", "auth saturated", None, "cpu-saturation", "current", None, "general",
            "sparse", {}, 1.0, "summary", {}, shared, (), (),
        )  # fmt: skip

    def metas(services: list[str]) -> dict[str, Any]:
        pm = SimpleNamespace(services=services)
        return {"INC-1": SimpleNamespace(postmortem=pm)}

    why = uncorroborated(request, top(("cpu_utilization",)), metas(["auth-service"]))
    assert why.startswith("the anomaly is one metric (cpu_utilization) and INC-1 is not of rds-db")
    assert uncorroborated(request, top(("cpu_utilization",)), metas(["rds-db"])) == ""
    # two metrics moving together are evidence of their own, whatever the service
    two = from_anomaly(
        replace(a, deviations=(*a.deviations, MetricDeviation("p99_latency", "up", 900, 90, 8)))
    )
    assert uncorroborated(two, top(("cpu_utilization",)), metas(["auth-service"])) == ""
    assert uncorroborated(from_text("cpu high"), top(()), metas([])) == ""  # text: no such check


def test_evidence_and_offline_draft_cite_the_precedent(kb: KnowledgeBase) -> None:
    t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    anomaly = Anomaly(
        "a",
        "checkout-api",
        "aws",
        "us-east-1",
        t,
        t,
        0.9,
        deviations=(
            MetricDeviation("db_connections_in_use", "up", 100, 30, 20),
            MetricDeviation("queue_depth", "up", 200, 20, 10),
        ),
    )
    evidence = Investigator(kb, tiers=("general",), k=2).investigate(
        from_anomaly(anomaly, {"db_connections_in_use": 100})
    )
    top = evidence.items[0]
    assert top.doc_id == "POOL" and "exhausting the pool" in top.sections["root_cause"]
    assert top.signals_shared == ("db_connections_in_use",)
    assert top.signals_not_in_precedent == ("queue_depth",)
    assert top.signals_only_in_precedent == ("error_rate", "p99_latency")
    assert {"sparse_ms", "evidence_ms"} <= set(evidence.timings)
    draft = OfflineReporter().draft(evidence, today=dt.date(2026, 1, 1))
    assert draft.cited_incidents[0] == "POOL" and not draft.novel
    assert "exhausting the pool" in draft.hypothesis and draft.drafted_by == OFFLINE_LABEL
    assert draft.mitigations == [
        "Restarted the checkout pods to release connections.",
        "Moved the fraud call outside the transaction.",
    ]
    # a signal it recorded is asked about once: a check, or else missing information
    assert any("p99_latency" in m for m in draft.suggested_checks + draft.missing_information)
    assert draft.confidence == evidence.confidence and draft.staleness_note is None
    Draft.model_validate(draft.model_dump())  # the contract round-trips


def test_novel_draft_says_so_and_lists_what_was_searched(kb: KnowledgeBase) -> None:
    evidence = Investigator(kb, tiers=("general",)).investigate(
        from_text("nvidia xid 79 gpu fell off the bus on training nodes")
    )
    draft = OfflineReporter().draft(evidence)
    assert draft.novel and draft.cited_incidents == []
    assert "No postmortem among the 2 visible" in draft.hypothesis and "gpu" in draft.hypothesis
    assert draft.verdict == "no precedent"


def test_an_empty_knowledge_base_is_nothing_to_compare_with_not_a_new_incident(
    tmp_path: Path,
) -> None:
    """On an empty store the draft said "No postmortem among the 0 visible ... Why: p 0.00 is
    at or below 0.17 ... Unless one of the nearest turns out to be the same failure": a
    verdict drawn from nothing, and nearest postmortems that do not exist."""
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as empty:
        evidence = Investigator(empty, tiers=("general",)).investigate(
            from_text("db cpu pegged at 100%")
        )
    draft = OfflineReporter().draft(evidence)
    assert draft.novel and draft.cited_incidents == []
    assert draft.summary.startswith("Nothing to compare with")
    assert "says nothing about whether it happened before" in draft.hypothesis
    assert "seenbefore ingest" in draft.hypothesis and "nearest" not in draft.hypothesis


def test_a_no_precedent_draft_lists_the_nearest_marked_not_matching() -> None:
    from tests.investigation.test_llm_reporter import evidence, item

    found = evidence(item("INC-1"), item("INC-2"), item("INC-3"), item("INC-4"), novel=True)
    draft = OfflineReporter().draft(found)
    assert draft.novel and draft.verdict == "no precedent" and draft.cited_incidents == []
    assert "listed for reference and not scored as matching: INC-1" in draft.hypothesis
    assert "INC-3" in draft.hypothesis and "INC-4" not in draft.hypothesis  # the nearest three


def test_old_precedent_gets_a_staleness_note(kb: KnowledgeBase) -> None:
    evidence = Investigator(kb, tiers=("general",), k=1).investigate(
        from_text("name resolution failed resolver overload")
    )
    if evidence.novel:
        pytest.fail("the resolver precedent should be found")
    draft = OfflineReporter().draft(evidence, today=dt.date(2026, 1, 1))
    assert draft.staleness_note == "DNS is 6 years old; systems may have changed since."


def test_investigate_cli(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    runner = CliRunner()
    alert = tmp_path / "alert.json"
    alert.write_text(
        json.dumps(
            {
                "version": "4",
                "alerts": [
                    {
                        "status": "firing",
                        "labels": {"alertname": "PoolSaturated", "service": "checkout-api"},
                        "annotations": {
                            "summary": "database connections at the pool limit, p99 latency up"
                        },
                        "startsAt": "2026-01-01T00:00:00Z",
                        "fingerprint": "f1",
                    }
                ],
            }
        )
    )
    result = runner.invoke(app, ["investigate", "--alert", str(alert), "--json"])
    assert result.exit_code == 0, result.output
    [draft] = json.loads(result.stdout)["drafts"]
    assert draft["cited_incidents"][0] == "POOL"
    both = runner.invoke(app, ["investigate", "text", "--alert", str(alert)])
    assert both.exit_code == 2


@pytest.mark.llm
def test_investigate_cli_with_a_local_llm_endpoint(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.investigation.fake_openai import FakeOpenAI, chat

    answer = {
        "summary": "Looks like POOL again.",
        "hypothesis": "Connections held during slow calls.",
        "cited_incidents": ["POOL", "INC-INVENTED"],
        "suggested_checks": ["check the pool"],
        "mitigations": ["restart pods"],
        "confidence": 1.0,
        "confidence_label": "high",
        "novel": False,
        "missing_information": [],
        "staleness_note": None,
    }
    with FakeOpenAI([chat(json.dumps(answer))]) as server:
        monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
        monkeypatch.setenv("SEENBEFORE_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("SEENBEFORE_LLM_MODEL", "fake-model")
        monkeypatch.setenv("SEENBEFORE_LLM_API_KEY", "sk-test-secret")
        result = CliRunner().invoke(
            app, ["investigate", "database connections at the pool limit, p99 latency up", "--json"]
        )
    assert result.exit_code == 0, result.output
    [draft] = json.loads(result.stdout)["drafts"]
    assert draft["cited_incidents"] == ["POOL"]  # the invented id is dropped
    assert draft["retrieval_trace"]["invented_citations"] == ["INC-INVENTED"]
    assert draft["confidence"] < 1.0 and "fake-model" in draft["drafted_by"]
    assert "sk-test-secret" not in result.output


def test_two_never_recorded_signals_make_a_new_kind_of_incident(kb: KnowledgeBase) -> None:
    t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    gpu = Anomaly(
        "g",
        "ml-inference",
        "gcp",
        "us-central1",
        t,
        t,
        0.9,
        deviations=(
            MetricDeviation("p99_latency", "up", 1200, 200, 30, "ms"),
            MetricDeviation("gpu_utilization", "down", 0, 70, -40, "%"),
            MetricDeviation("gpu_temperature", "up", 96, 65, 25, "C"),
        ),
    )
    evidence = Investigator(kb, tiers=("general",)).investigate(from_anomaly(gpu))
    assert evidence.novel
    assert "gpu_utilization, gpu_temperature never appears" in evidence.novel_reason
    draft = OfflineReporter().draft(evidence)
    assert draft.novel and "never appears" in draft.hypothesis
    one_unknown = Investigator(kb, tiers=("general",), min_unknown_signals=3).investigate(
        from_anomaly(gpu)
    )
    assert "never appears" not in one_unknown.novel_reason
