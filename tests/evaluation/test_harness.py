import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.evaluation.cases import Case
from seenbefore.evaluation.harness import PipelineOutput, evaluate
from seenbefore.evaluation.metrics import abstention, ir_metrics, token_overlap
from seenbefore.evaluation.report import append_history, regressions
from tests.conftest import postmortem_text

CASES = [
    Case("a", "pool", expected=("A",)),
    Case("b", "dns", expected=("B",), alternates=("C",)),
    Case("c", "leak", expected=("D",)),
    Case("n1", "gpu", expect_novel=True),
    Case("n2", "smtp", expect_novel=True),
]
RANKINGS = {"a": ["A", "X"], "b": ["X", "C"], "c": ["X", "Y", "Z"], "n1": ["Q"], "n2": []}


def test_ir_metrics_on_a_hand_made_run() -> None:
    relevant = {c.id: (frozenset() if c.expect_novel else c.relevant) for c in CASES}
    m = ir_metrics(RANKINGS, relevant)
    assert m["hit@1"] == pytest.approx(1 / 3)  # a only
    assert m["hit@3"] == pytest.approx(2 / 3)  # a and b (alternate C at rank 2)
    assert m["mrr"] == pytest.approx((1 + 0.5 + 0) / 3)


def test_novel_case_scoring() -> None:
    m = abstention([False, False, True, True, False], [c.expect_novel for c in CASES])
    assert m["novel_precision"] == 0.5 and m["novel_recall"] == 0.5
    none_flagged = abstention([False] * 5, [c.expect_novel for c in CASES])
    assert none_flagged["novel_precision"] is None and none_flagged["novel_recall"] == 0.0


def test_evaluate_runs_any_pipeline_and_splits_held_out() -> None:
    def pipeline(case: Case) -> PipelineOutput:
        good = bool(RANKINGS[case.id]) and RANKINGS[case.id][0] in case.relevant
        return PipelineOutput(
            RANKINGS[case.id],
            0.9 if good else 0.1,
            case.id == "n1",
            {"sparse_coverage": 0.9 if good else 0.1},
            tokens=10,
        )

    report = evaluate(CASES, {"mine": pipeline}, seed=1)
    metrics = report.modes["mine"].metrics
    assert metrics["hit@1"] == pytest.approx(1 / 3)
    assert metrics["novel_precision"] == 1.0 and metrics["novel_recall"] == 0.5
    assert metrics["tokens_per_case"] == 10
    assert set(report.fit_ids).isdisjoint(report.held_ids)
    assert sorted(report.fit_ids + report.held_ids) == sorted(c.id for c in CASES)
    assert report.best_mode() == "mine"


def test_token_overlap() -> None:
    assert token_overlap("pool exhausted checkout", "the pool was exhausted") == pytest.approx(
        2 / 3
    )


def test_regression_detector(tmp_path: Path) -> None:
    before = {"metrics": {"sparse": {"hit@1": 0.80, "mrr": 0.85, "shipped_ece": 0.10}}}
    same = {"metrics": {"sparse": {"hit@1": 0.79, "mrr": 0.85, "shipped_ece": 0.11}}}
    assert regressions(before, same, tolerance=0.02) == []
    worse = {"metrics": {"sparse": {"hit@1": 0.70, "mrr": 0.90, "shipped_ece": 0.20}}}
    found = {(r.metric, r.before, r.after) for r in regressions(before, worse, tolerance=0.02)}
    assert found == {("hit@1", 0.80, 0.70), ("shipped_ece", 0.10, 0.20)}  # ECE up is worse
    history = tmp_path / "h.jsonl"
    assert append_history(history, before) is None
    assert append_history(history, worse) == before
    assert len(history.read_text().splitlines()) == 2


@pytest.mark.slow
def test_eval_cli_on_a_directory_it_has_never_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    kb = tmp_path / "team-kb"
    kb.mkdir()
    topics = {
        "pool": "database connections exhausted",
        "dns": "resolver servfail lookups",
        "leak": "memory grew until oomkilled",
        "disk": "iowait high on volume",
    }
    for i in range(3):
        for topic, text in topics.items():
            body = (
                f"## Summary\n{topic} incident {i}.\n\n## Detection\nwe saw {text} on host {i}.\n"
                f"\n## Root cause\n{text} caused by change {i}.\n"
            )
            (kb / f"{topic}-{i}.md").write_text(
                postmortem_text(
                    f"{topic.upper()}-{i}",
                    title=f"{topic} outage {i}",
                    body=body,
                    type=f"{topic}-type",
                )
            )
    cases = tmp_path / "team-cases"
    cases.mkdir()
    (cases / "p.yaml").write_text(
        "query: connections exhausted on the database\nexpected: [POOL-0]\n"
        "alternates: [POOL-1, POOL-2]\n"
    )
    (cases / "d.yaml").write_text(
        "query: servfail from resolver\nexpected: [DNS-1]\nalternates: [DNS-0]\n"
    )
    (cases / "m.yaml").write_text(
        "query: oomkilled memory\nexpected: [LEAK-2]\nalternates: [LEAK-0, LEAK-1]\n"
    )
    (cases / "g.yaml").write_text("query: gpu xid errors thermal\nexpect_novel: true\n")
    runner = CliRunner()
    out = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "eval",
            "--kb",
            str(kb),
            "--cases",
            str(cases),
            "--embedders",
            "lsa",
            "--report-dir",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload["modes"]) == {"sparse", "dense (LSA)", "gated (LSA)"}
    assert payload["modes"]["sparse"]["hit@1"] == 1.0
    assert (out / "report.md").exists() and (out / "reliability.png").stat().st_size > 1000
    assert "Per case" in (out / "report.md").read_text()
    self_test = runner.invoke(
        app,
        [
            "eval",
            "--kb",
            str(kb),
            "--self-test",
            "--embedders",
            "lsa",
            "--json",
            "--compare",
            "--fail-on-regression",
        ],
    )
    assert self_test.exit_code == 0, self_test.output
    assert json.loads(self_test.stdout)["header"]["cases"].startswith("12")
    # a previous run over the same cases that was better makes --fail-on-regression exit 1
    history = tmp_path / "home" / "eval-history.jsonl"
    last = json.loads(history.read_text().splitlines()[-1])
    last["metrics"]["sparse"]["mrr"] = 1.5
    with history.open("a") as fh:
        fh.write(json.dumps(last) + "\n")
    regressed = runner.invoke(
        app,
        [
            "eval",
            "--kb",
            str(kb),
            "--self-test",
            "--embedders",
            "lsa",
            "--json",
            "--compare",
            "--fail-on-regression",
        ],
    )
    assert regressed.exit_code == 1
    assert any("sparse: mrr 1.500" in r for r in json.loads(regressed.stdout)["regressions"])


@pytest.mark.llm
def test_eval_adds_graded_root_cause_and_tokens_with_an_llm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.investigation.fake_openai import FakeOpenAI, chat

    kb = tmp_path / "kb"
    kb.mkdir()
    for name, text in {
        "POOL": "database connections exhausted",
        "DNS": "resolver servfail",
    }.items():
        body = f"## Summary\n{text}.\n\n## Root cause\n{text} because of a change.\n"
        (kb / f"{name}.md").write_text(postmortem_text(name, title=f"{name} outage", body=body))
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "p.yaml").write_text(
        "query: connections exhausted on the database\nexpected: [POOL]\n"
    )
    (cases / "g.yaml").write_text("query: gpu xid errors thermal\nexpect_novel: true\n")
    # one answer that is both a valid draft and a valid grade, for every call
    universal = json.dumps(
        {
            "summary": "s",
            "hypothesis": "h",
            "cited_incidents": ["POOL"],
            "suggested_checks": [],
            "mitigations": [],
            "confidence": 0.5,
            "confidence_label": "medium",
            "novel": False,
            "missing_information": [],
            "staleness_note": None,
            "score": 4,
            "reason": "close",
            "queries": ["database connections exhausted"],
        }
    )
    with FakeOpenAI([chat(universal) for _ in range(10)]) as server:
        monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("SEENBEFORE_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("SEENBEFORE_LLM_MODEL", "fake-model")
        result = CliRunner().invoke(
            app, ["eval", "--kb", str(kb), "--cases", str(cases), "--embedders", "lsa", "--json"]
        )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    row = payload["modes"]["investigation (LLM)"]
    assert row["graded_root_cause"] == 4.0 and row["tokens_per_case"] > 0
    assert payload["modes"]["sparse"]["graded_root_cause"] is None
    # retrieval with and without the LLM's query rewrite, side by side
    rewritten = payload["modes"]["gated + LLM query rewrite"]
    assert rewritten["tokens_per_case"] > 0 and rewritten["hit@1"] is not None
    assert "graded 0-5 by fake-model" in payload["header"]["graded root cause"]
