"""`seenbefore eval`: the golden (or any) cases through the whole path, with figures and history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from seenbefore.calibration.selftest import self_test_cases
from seenbefore.cli.common import (
    console,
    print_json,
    print_wide,
    settings,
)
from seenbefore.cli.progress import progress_bar
from seenbefore.errors import InputError
from seenbefore.evaluation.cases import Case, load_cases
from seenbefore.evaluation.harness import EvalReport, evaluate
from seenbefore.evaluation.metrics import token_overlap
from seenbefore.evaluation.report import (
    COLUMNS,
    append_history,
    fingerprint,
    fmt,
    history_record,
    markdown,
    regressions,
    reliability_png,
    strict,
    summary,
)
from seenbefore.evaluation.report import (
    per_case as per_case_records,
)
from seenbefore.evaluation.suite import build_suite, default_kb_dir, sample_files
from seenbefore.investigation.llm import llm_from_settings
from seenbefore.kb import KnowledgeBase
from seenbefore.parsing import read_text
from seenbefore.storage.factory import open_vector_cache
from seenbefore.storage.vectorcache import VectorCache


def _overlaps(cases: list[Case], kb: KnowledgeBase, tiers: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for case in cases:
        if case.expect_novel:
            continue
        docs = kb.store.documents_meta(list(case.expected))
        texts = [f"{d.postmortem.title}\n{d.postmortem.body}" for d in docs.values()]
        if texts:
            out[case.id] = max(token_overlap(case.query, t) for t in texts)
    return out


def _print_table(report: EvalReport, title: str) -> None:
    """Two tables (quality, then calibration and latency) so each fits a terminal."""
    rows = summary(report)
    drafted = any(
        m.get("graded_root_cause") is not None or m.get("tokens_per_case") is not None
        for m in rows.values()
    )
    groups = (COLUMNS[:5], COLUMNS[5:12], *((COLUMNS[12:],) if drafted else ()))
    for index, columns in enumerate(groups):
        table = Table(title=title if index == 0 else None)
        table.add_column("mode", no_wrap=True)
        for _, name in columns:
            table.add_column(name, justify="right")
        for name, metrics in summary(report).items():
            table.add_row(name, *(fmt(metrics[k]) for k, _ in columns))
        # in a log (not a terminal) rich would wrap to 80 columns and cut figures ("Bri…")
        print_wide(table)
    console.print(
        "[dim]ECE/Brier/AUROC: confidence as shipped, all cases. ECE*/Brier*: confidence "
        "refitted on the fit split, measured on the held-out split.[/]"
    )


def check_history(path: Path) -> None:
    """InputError unless ``path`` is absent or a JSONL file of objects (as eval appends)."""
    if not path.exists():
        return
    text = read_text(path, what="eval history")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict):
            raise InputError(
                f"eval history {path}, line {number}: not a JSON object as `seenbefore eval` "
                "writes; fix or move the file, or give another with --history"
            )


def eval_command(
    cases_dir: Annotated[Path | None, typer.Option("--cases", help="case YAML directory")] = None,
    kb_dir: Annotated[Path | None, typer.Option("--kb", help="postmortem directory")] = None,
    self_test: Annotated[
        bool, typer.Option("--self-test", help="cases from the KB itself")
    ] = False,
    embedders: Annotated[str, typer.Option(help="comma list of minilm, lsa")] = "minilm,lsa",
    sizes: Annotated[
        str | None,
        typer.Option(help="also re-run self-test on KBs cut to these sizes, e.g. 6,20,50"),
    ] = None,
    report_dir: Annotated[Path | None, typer.Option(help="write report.md/.json/.png here")] = None,
    history: Annotated[
        Path | None, typer.Option(help="history JSONL (default in SEENBEFORE_HOME)")
    ] = None,
    # one name each, no --no- twins: at 80 columns "--no-fail-on-regression" was cut short
    compare: Annotated[
        bool, typer.Option("--compare", help="flag regressions against the last run")
    ] = False,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="exit 1 when --compare flags any")
    ] = False,
    tolerance: Annotated[float, typer.Option(help="allowed drop before a metric regresses")] = 0.02,
    seed: Annotated[int, typer.Option(help="seed of the fit / held-out split")] = 0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Run labelled cases through sparse, dense (MiniLM, LSA), fused and gated retrieval."""
    cfg = settings()
    kb_path = kb_dir or default_kb_dir()
    names = [e.strip() for e in embedders.split(",") if e.strip()]
    quiet = as_json
    say = (lambda msg: None) if quiet else (lambda msg: console.print(f"[dim]{msg}[/]"))
    given = None if self_test else load_cases(cases_dir)  # a bad case file fails before building
    hist = history or cfg.home / "eval-history.jsonl"
    check_history(hist)  # and so does a history file the run could not append to
    # the embedding cache follows the store: a file in the home folder, or the database's table
    cache = open_vector_cache(cfg, cfg.home / "embedding-cache.sqlite")
    try:
        suite = build_suite(kb_path, embedders=names, cache=cache, progress=say)
    except BaseException:
        cache.close()
        raise
    try:
        first = next(iter(suite.kbs.values()))
        cases = given if given is not None else self_test_cases(first.store, suite.tiers)
        known = set(first.store.list_ids())
        unknown = sorted({d for c in cases for d in c.relevant} - known)
        if unknown:
            raise InputError(f"cases name postmortems the knowledge base lacks: {unknown[:5]}")
        with progress_bar(disable=quiet) as bar:
            task = bar.add_task("evaluating", total=len(cases))

            def tick(mode: str, done: int, total: int) -> None:
                bar.update(task, completed=done, total=total, description=mode)

            pipelines = suite.pipelines()
            llm = llm_from_settings(cfg.model_dump())
            if llm is not None:
                pipelines["gated + LLM query rewrite"] = suite.rewrite_pipeline(llm)
                pipelines["investigation (LLM)"] = suite.investigation_pipeline(llm)
            try:
                report = evaluate(cases, pipelines, seed=seed, progress=tick)
            finally:
                if llm is not None and hasattr(llm, "close"):
                    llm.close()
        report.notes = suite.notes + suite.gate_notes()
        overlaps = _overlaps(cases, first, suite.tiers)
        label = "self-test" if self_test else f"cases {cases_dir or 'packaged'}"
        header = {
            "label": label,
            "knowledge base": f"{kb_path} ({len(known)} documents)",
            "cases": f"{len(cases)} ({sum(c.expect_novel for c in cases)} expect no precedent)",
            "held-out split": f"calibration refit on {len(report.fit_ids)} cases, "
            f"reported on {len(report.held_ids)} (seed {seed})",
            "notes": "; ".join(report.notes) or "-",
            "graded root cause": (
                f"graded 0-5 by {cfg.llm_model} against the expected postmortem's root cause "
                "(investigation (LLM) row), with tokens per case"
                if llm is not None
                else "offline: a model-graded score of an extractive draft is not a quality signal, "
                "so it is omitted"
            ),
        }
        payload: dict[str, Any] = {
            "header": header,
            "modes": summary(report),
            "best_mode": report.best_mode(),
            "mean_token_overlap": (sum(overlaps.values()) / len(overlaps)) if overlaps else None,
            "token_overlap": overlaps,
        }
        if sizes:
            payload["sizes"] = _sizes(kb_path, sizes, names, cache, seed, say)
        record = history_record(
            report,
            config={"embedders": names, "seed": seed, "label": label},
            corpus=fingerprint([f"{d}" for d in sorted(known)]),
            cases=fingerprint([c.id + c.query for c in cases]),
        )
        previous = append_history(hist, record)
        found = regressions(previous, record, tolerance) if compare and previous else []
        payload["regressions"] = [str(r) for r in found]
        if report_dir:
            _write_report(report_dir, report, header, overlaps, first, payload)
    finally:
        suite.close()
        cache.close()
    if as_json:
        print_json(payload)
    else:
        for key, value in header.items():
            console.print(f"[bold]{key}[/]: {value}")
        _print_table(report, f"evaluation: {label}")
        console.print(
            f"best mode by MRR: [bold]{payload['best_mode']}[/]; mean token overlap "
            f"query/expected: {fmt(payload['mean_token_overlap'])}"
        )
        for row in payload.get("sizes", []):
            console.print(
                f"KB cut to {row['documents']} docs: best {row['best_mode']} "
                f"(MRR {fmt(row['best_mrr'])}); gate chose {row['gate_mode']} "
                f"(MRR {fmt(row['gate_mrr'])}) -> {'match' if row['match'] else 'MISMATCH'}"
            )
        if compare:
            console.print(
                "no previous run to compare with"
                if previous is None
                else ("regressions: " + "; ".join(payload["regressions"]))
                if found
                else "no regressions against the last run"
            )
        console.print(f"[dim]history appended to {hist}[/]")
    if fail_on_regression and found:
        raise typer.Exit(1)


def _sizes(
    kb_path: Path, sizes: str, names: list[str], cache: VectorCache, seed: int, say: Any
) -> list[dict[str, Any]]:
    rows = []
    for size in (int(s) for s in sizes.split(",") if s.strip()):
        suite = build_suite(
            kb_path,
            embedders=names,
            cache=cache,
            progress=say,
            files=sample_files(kb_path, size, seed),
        )
        try:
            first = next(iter(suite.kbs.values()))
            cases = self_test_cases(first.store, suite.tiers)
            report = evaluate(cases, suite.pipelines(), seed=seed)
            best = report.best_mode()
            # the configuration a default install runs: MiniLM when it loads, else the LSA fallback
            gate_mode = "gated (MiniLM)" if "gated (MiniLM)" in report.modes else "gated (LSA)"
            mrr = {m: (r.metrics.get("mrr") or 0.0) for m, r in report.modes.items()}
            rows.append(
                {
                    "documents": size,
                    "cases": len(cases),
                    "best_mode": best,
                    "best_mrr": mrr[best],
                    "gate_mode": gate_mode,
                    "gate_mrr": mrr[gate_mode],
                    "match": mrr[gate_mode] >= mrr[best] - 0.005,
                    "mrr": mrr,
                    "gates": suite.gate_notes(),
                }
            )
        finally:
            suite.close()
    return rows


def _write_report(
    directory: Path,
    report: EvalReport,
    header: dict[str, Any],
    overlaps: dict[str, float],
    kb: KnowledgeBase,
    payload: dict[str, Any],
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    titles = {
        d: m.postmortem.title for d, m in kb.store.documents_meta(kb.store.list_ids()).items()
    }
    reliability_png(report, directory / "reliability.png")
    text = markdown(report, header, overlaps, titles, "reliability.png")
    per_case = [
        "",
        "## Per case",
        "",
        "| case | overlap | " + " | ".join(report.modes) + " |",
        "|---" * (len(report.modes) + 2) + "|",
    ]
    for case in report.cases:
        cells = []
        for mode in report.modes.values():
            out = mode.outputs[case.id]
            ok = (
                out.novel
                if case.expect_novel
                else bool(out.ranking) and out.ranking[0] in case.relevant
            )
            cells.append("hit" if ok else "miss")
        per_case.append(f"| {case.id} | {fmt(overlaps.get(case.id))} | " + " | ".join(cells) + " |")
    (directory / "report.md").write_text(text + "\n".join(per_case) + "\n", encoding="utf-8")
    record = strict({**payload, "per_case": per_case_records(report)})
    (directory / "report.json").write_text(
        json.dumps(record, indent=2, default=str, allow_nan=False), encoding="utf-8"
    )
