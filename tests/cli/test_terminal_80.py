"""The terminal at 80 columns: `search --explain` keeps ids whole and says what "(both)" means,
`token list` and `audit` wrap between words, an empty store says it is empty, ingest off a terminal prints
progress lines on stderr, and no help text loses a bracketed word to Rich markup."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from typer.testing import CliRunner

from seenbefore.cli import explain, security
from seenbefore.cli.app import app
from seenbefore.cli.progress import LineProgress
from seenbefore.core.confidence import POSSIBLE
from seenbefore.security.tokens import TokenInfo
from seenbefore.types import Candidate, GateReport, RetrieverHit, SearchResult
from tests.conftest import EXAMPLES

BRACKETED = re.compile(r"\[[A-Za-z][\w.-]*\]")


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    if hasattr(group, "commands"):  # a group (typer's own click or the installed one)
        for name, sub in group.commands.items():
            found += _commands(sub, (*path, name))
    return found


def test_no_help_text_loses_a_bracketed_word() -> None:
    """`detect --help` printed "( config)" for "([notify] config)": Rich read it as markup."""
    root = typer.main.get_command(app)
    checked = 0
    for path in _commands(root):
        command: Any = root
        for name in path:
            command = command.commands[name]
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        wanted = {w for t in texts for w in BRACKETED.findall(t)}
        if not wanted:
            continue
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        flat = " ".join(result.output.replace("│", " ").split())
        for word in wanted:
            assert word in flat, (path, word)
        checked += 1
    assert checked >= 2  # detect --notify, notify's help at least


def test_every_command_helps_in_whole_paragraphs() -> None:
    """`seenbefore --help` listed `restore` as seven lines broken where its docstring's lines
    broke ("a schema exactly as this version's migrations build it, a schema version this
    version reads,"): Rich keeps a help text's own line breaks. Each paragraph is one line for
    Rich to wrap, and a list of commands shows the first paragraph alone."""
    root = typer.main.get_command(app)
    checked = 0
    for path in _commands(root)[1:]:
        command: Any = root
        for name in path:
            command = command.commands[name]
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph, (path, paragraph)
        if command.help and not hasattr(command, "commands"):
            assert command.short_help == command.help.split("\n\n")[0], path
            checked += 1
    assert checked >= 30
    listed = CliRunner().invoke(app, ["--help"], terminal_width=80)
    assert "restore" in listed.output and "It checks the copy" not in listed.output


def _result() -> SearchResult:
    def cand(
        doc_id: str, by: str, sparse: int | None, dense: int | None, score: float
    ) -> Candidate:
        hits = {}
        if sparse is not None:
            hits["sparse"] = RetrieverHit(rank=sparse, score=12.0 / sparse)
        if dense is not None:
            hits["dense"] = RetrieverHit(rank=dense, score=0.9 / dense)
        return Candidate(
            doc_id=doc_id, title="t", date=None, type="", status="current",
            access_tier="general", services=(), score=score, snippet="s",
            section_key="summary", chunk_id=1, matched_by=by, retrievers=hits,
        )  # fmt: skip

    return SearchResult(
        query="q",
        mode="hybrid",
        candidates=(
            cand("INC-2021-004-orders-db", "both", 1, 2, 0.0325),
            cand("INC-2023-128", "sparse", 2, None, 0.0161),
            cand("POSTMORTEM-2024-LONG-ID-77", "dense", None, 1, 0.0160),
        ),
        weights={"sparse": 1.0, "dense": 0.3},
        rrf_k=60,
        gate=GateReport(dense_trusted=True, reason="measured on 71 documents", weights_source="m"),
        confidence=0.4321,
        signals={"sparse_coverage": 1.0, "dense_cosine": 0.61, "agreement": 0.0},
        timings={"sparse_ms": 0.7},
    )


def test_explain_keeps_ids_whole_at_80_columns(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    monkeypatch.setattr(explain, "console", Console(file=out, width=80, color_system=None))
    explain.render_explain(_result())
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    rows = [line.split() for line in text.splitlines()]
    # each row whole: rank, id, by, sparse rank · score, dense rank · score, fused
    assert ["1", "INC-2021-004-orders-db", "both", "1", "·", "12.00", "2", "·", "0.45",
            "0.03250"] in rows  # fmt: skip
    assert ["2", "INC-2023-128", "sparse", "2", "·", "6.00", "-", "0.01610"] in rows
    assert ["3", "POSTMORTEM-2024-LONG-ID-77", "dense", "-", "1", "·", "0.90", "0.01600"] in rows
    assert (
        "matched by: both = keywords and meaning: each retriever ranked it; sparse = keywords "
        "(BM25) only; dense = meaning (embeddings) only"
    ) in " ".join(text.split())
    assert "at 0: agreement" in text and "timings: sparse 0.7 ms" in text


def test_explain_says_why_dense_weighs_nothing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    monkeypatch.setattr(explain, "console", Console(file=out, width=200, color_system=None))
    result = _result()
    untrusted = GateReport(dense_trusted=False, reason="no dense vectors: run `seenbefore reindex`",
                           weights_source="floor")  # fmt: skip
    explain.render_explain(
        SearchResult(**{**result.__dict__, "weights": {"sparse": 1.0, "dense": 0.0}, "gate": untrusted})
    )  # fmt: skip
    assert (
        "fused: sparse 1, dense 0 (reciprocal rank fusion, k = 60); dense weighs 0 because the "
        "gate did not trust it: no dense vectors: run `seenbefore reindex`"
    ) in out.getvalue()


def test_explain_says_when_the_vote_turned_dense_off_and_why_found_was_held(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ "dense weighs 0 because this was a hybrid search" was said when sparse's top stood far
    above its second (the vote), and p 0.71 over "found at p >= 0.5" read "possible" with no
    reason (the top document held one word of the query)."""
    from seenbefore.types import ModelFit

    out = io.StringIO()
    monkeypatch.setattr(explain, "console", Console(file=out, width=300, color_system=None))
    result = _result()
    fit = ModelFit(lo=0.33, hi=0.5, held_out=None, live="", shape="prose")
    signals = {"sparse_gap": 2.69, "shared_words": 1.0}
    explain.render_explain(
        SearchResult(**{**result.__dict__, "weights": {"sparse": 1.0, "dense": 0.0},
                        "signals": signals, "confidence": 0.71, "verdict": POSSIBLE,
                        "confidence_model_fit": fit})
    )  # fmt: skip
    text = out.getvalue()
    assert "sparse's top document stands far above its second (gap 2.69 > 1)" in text
    assert "this was a hybrid search" not in text
    assert "held at possible: the top document holds 1 of the query's words (found needs 2)" in text


def test_token_list_wraps_between_words_at_80_columns() -> None:
    infos = [
        TokenInfo("tok_18ee8474a234", "alertmanager", "responder", ("general", "restricted"),
                  "2026-12-04T16:19:18+00:00", None, "2026-12-04T16:22:03+00:00"),
        TokenInfo("tok_9a18837af4e9", "ops", "admin", ("general",),
                  "2026-12-04T16:19:20+00:00", "2026-12-05T08:01:00+00:00", None),
    ]  # fmt: skip
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(security.token_table(infos, 80))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    words = {w for line in lines for w in line.split()}
    # every id, name, tier and figure whole: nothing folded mid-word
    assert {"tok_18ee8474a234", "tok_9a18837af4e9", "alertmanager", "restricted"} <= words
    assert {"2026-12-05", "08:01", "revoked", "2026-12-04", "16:22", "active", "never"} <= words
    assert "created" not in words  # only from 100 columns
    wide = io.StringIO()
    Console(file=wide, width=120, color_system=None).print(security.token_table(infos, 120))
    assert "created" in wide.getvalue() and "2026-12-04 16:19" in wide.getvalue()


def run(home: Path, *args: str) -> tuple[int, str, str]:
    env = {"SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER": "none", "COLUMNS": "80"}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_an_empty_store_says_so_not_a_permissions_message(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path / "home", "search", "database pool exhausted")
    assert code == 0
    flat = " ".join(out.split())
    assert flat.startswith(
        "no matching postmortems: the knowledge base is empty: ingest postmortems first "
        "(seenbefore ingest PATH"
    )
    assert "tiers you hold" not in flat
    code, out, _ = run(tmp_path / "home", "search", "database pool exhausted", "--json")
    assert '"empty_because": "the knowledge base is empty' in out


def test_ingest_off_a_terminal_prints_progress_lines_on_stderr(tmp_path: Path) -> None:
    code, out, err = run(tmp_path / "home", "ingest", str(EXAMPLES))
    assert code == 0, err
    lines = err.splitlines()
    assert lines and all(re.fullmatch(r".+: \d+(/\d+)? \((done, )?\d+ s\)", ln) for ln in lines)
    assert re.search(r"^ingesting .+: 1/7\d \(0 s\)$", err, re.M)  # the first file
    assert re.search(r": 7\d/7\d \(done, \d+ s\)$", err, re.M)  # and the last
    assert "ingest summary" in out and "ingesting" not in out  # stdout keeps the result
    _, _, quiet = run(tmp_path / "home", "ingest", str(EXAMPLES), "--json")
    assert quiet == ""


def test_line_progress_advances_as_richs_progress_does() -> None:
    """benchmarks/ingest.py stopped with "'LineProgress' object has no attribute 'advance'"
    off a terminal: whatever `progress_bar` returns must take Rich's `advance(task)`."""
    lines: list[str] = []
    bar = LineProgress(every_s=60.0, clock=lambda: 0.0, write=lines.append)
    task = bar.add_task("searching", total=3)
    for _ in range(3):
        bar.advance(task)
    bar.advance(task, 0.0)
    assert lines == ["searching: 1/3 (0 s)", "searching: 3/3 (done, 0 s)"]


def test_line_progress_prints_first_every_interval_and_done() -> None:
    now = [0.0]
    lines: list[str] = []
    bar = LineProgress(every_s=5.0, clock=lambda: now[0], write=lines.append)
    task = bar.add_task("ingesting", total=None)
    for step, t in enumerate([0.5, 1.0, 5.4, 6.0, 10.6, 11.0], 1):
        now[0] = t
        bar.update(task, completed=step, total=6, description=f"ingesting f{step}.md")
    assert lines == [
        "ingesting f1.md: 1/6 (0 s)",  # first move
        "ingesting f4.md: 4/6 (6 s)",  # 5.5 s after the first line (5.4 s was 4.9 s after)
        "ingesting f6.md: 6/6 (done, 11 s)",  # completion, whatever the interval
    ]


def test_audit_reads_at_80_columns(tmp_path: Path) -> None:
    # eight columns cut every value to a few letters ("2026-12…", "local:r…", "INC-20…")
    home = tmp_path / "home"
    assert run(home, "ingest", str(EXAMPLES))[0] == 0
    code, out, _ = run(home, "audit")
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in out
    words = {w.strip(",;") for line in lines for w in line.split()}
    assert {"ingest", "INC-2021-001", "general"} <= words
    text = " ".join(out.replace("│", " ").split())  # the cells' lines, borders aside
    assert re.search(r"and \d+ more \(--json lists them\)", text)


def test_the_watch_frame_keeps_service_names_whole_at_80_columns(tmp_path: Path) -> None:
    # at 80 columns eight columns cut every name ("notificat…", "payments-…"); where each runs
    # and the last hour's p99 come back once the terminal is wide enough
    home = tmp_path / "home"
    for columns, wide in (("80", False), ("130", True)):
        env = {"SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER": "none", "COLUMNS": columns}
        args = ["watch", "--hours", "25", "--speed", "10000", "--scenario", "memory_leak"]
        result = CliRunner().invoke(app, args, env=env)
        assert result.exit_code == 0, result.output
        frame = result.stdout.split("anomalies by severity")[0]
        assert max(len(line) for line in frame.splitlines()) <= int(columns)
        words = {w for line in frame.splitlines() for w in line.split()}
        assert {"notifications-worker", "payments-api", "search-service"} <= words
        assert ("azure/westeurope" in words) is wide and ("where" in words) is wide


def test_stats_counts_the_authors_types_not_the_lack_of_one(tmp_path: Path) -> None:
    from tests.conftest import postmortem_text

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(postmortem_text("A-1", type="dns-failure"))
    (docs / "b.md").write_text(postmortem_text("B-1"))  # no type: its mode is inferred
    home = tmp_path / "home"
    assert run(home, "ingest", str(docs))[0] == 0
    code, out, _ = run(home, "stats")
    assert code == 0
    rows = {
        cells[1].strip(): cells[2].strip()
        for line in out.splitlines()
        if len(cells := line.split("│")) == 4
    }
    assert rows["types"] == "1"  # an untyped KB read "types 1": "(none)" counted as a type
    assert rows["without a type"] == "1 (failure mode inferred from the text)"
    # a catch-all stored before the validator set it aside counts as none, as labels read it
    from seenbefore.cli.admin import type_counts

    assert type_counts({"dns-failure": 2, "uncategorized": 119, "(none)": 3}) == (1, 122)


def test_a_long_snippet_wraps_under_its_result_at_80_columns(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The snippet was wrapped by Rich at column 0 ("...lead to\\nincreased error rates"), out
    of its result's block, and padded with spaces to the edge."""
    from dataclasses import replace

    from seenbefore.cli import search

    out = io.StringIO()
    monkeypatch.setattr(search, "console", Console(file=out, width=80, color_system=None))
    words = "a bug in configuration roll-out to a load balancer lead to increased error rates"
    result = _result()
    first = replace(result.candidates[0], snippet=f"{words} for 22 minutes [/] again.")
    search.render_result(replace(result, candidates=(first,)))
    lines = out.getvalue().splitlines()
    block = lines[lines.index(next(x for x in lines if "summary:" in x)) :][:3]
    assert block[0].startswith("     summary: a bug") and block[1].startswith("     ")
    assert all(len(x) <= 80 and x == x.rstrip() for x in block)
    assert "for 22 minutes [/] again." in " ".join(" ".join(block).split())


def test_no_option_name_is_cut_at_80_columns() -> None:
    """`search --help` showed "--include-superse…  --no-include-sup…" and `eval --help`
    "--no-fail-on-regre…": a flag a person cannot read whole cannot be typed."""
    root = typer.main.get_command(app)
    cut = []
    for path in _commands(root):
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, (path, result.output)
        cut += [(path, m) for m in re.findall(r"--[\w-]+…", result.output)]
    assert cut == []


def test_detects_unconfirmed_fires_wrap_under_their_line_at_80_columns(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An unconfirmed fire's why ("...the largest move was\\nvalue's, |robust z| 3.3") wrapped
    at column 0, out of its block; words with brackets print as written."""
    from seenbefore.cli import detect

    out = io.StringIO()
    monkeypatch.setattr(detect, "console", Console(file=out, width=80, color_system=None))
    why = "the largest move was value's, |robust z| 3.3 (needs |robust z| >= 4 on 2 points)"
    fire = {"start": "2014-02-14T17:20:00", "service": "rds [/] cpu", "score": 1.0, "why": why}
    detect._say_unconfirmed([fire, fire])
    lines = out.getvalue().splitlines()
    assert lines[0] == "2 fires of the detector not confirmed as anomalies:"
    assert len(lines) > 3 and all(x.startswith("     ") and len(x) <= 80 for x in lines[1:])
    assert "rds [/] cpu score 1.00: " + why in " ".join(" ".join(lines[1:3]).split())


def test_a_no_precedent_search_asks_for_a_glance_not_a_ruling(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ "none of them a match" ruled out what the verdict only scored low: on the replays a real
    recurrence ranked first is told "no precedent" 10-15 % of the time (verdict_states.md)."""
    from dataclasses import replace

    from seenbefore.cli import search
    from seenbefore.core.confidence import NONE

    out = io.StringIO()
    monkeypatch.setattr(search, "console", Console(file=out, width=80, color_system=None))
    search.render_result(replace(_result(), verdict=NONE, confidence=0.05))
    said = out.getvalue()
    assert "none scored as a match; read before ruling out" in said
    assert "none of them a match" not in said
    assert all(len(line) <= 80 for line in said.splitlines())
