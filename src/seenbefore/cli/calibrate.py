"""`seenbefore calibrate`: fit the gate's weight and the confidence model (``p_precedent`` and
its verdict thresholds) from labelled cases, self-made cases or review decisions; a fit is kept
only when it beats the live model on held-out cases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from seenbefore.calibration.labelled import calibrate as fit
from seenbefore.calibration.selftest import self_test_cases
from seenbefore.cli.common import caller_tiers, console, open_kb, print_json, print_wide
from seenbefore.cli.search import TierOption
from seenbefore.errors import InputError
from seenbefore.evaluation.cases import load_cases


def calibrate(
    cases: Annotated[Path | None, typer.Argument(help="directory of case YAML files")] = None,
    self_test: Annotated[
        bool, typer.Option("--self-test", help="build cases from the knowledge base itself")
    ] = False,
    from_reviews: Annotated[
        bool, typer.Option("--from-reviews", help="refit confidence from review decisions")
    ] = False,
    accept_all_roles: Annotated[
        bool,
        typer.Option(
            "--accept-all-roles",
            help="with --from-reviews: fit the labels of principals below the reviewer role too",
        ),
    ] = False,
    tier: TierOption = None,
    seed: Annotated[int, typer.Option(help="seed of the fit / held-out split")] = 0,
    dry_run: Annotated[bool, typer.Option(help="report only; do not persist")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Choose the dense weight and fit confidence on one split of CASES; report the other."""
    if [cases is not None, self_test, from_reviews].count(True) != 1:
        raise InputError("give a CASES directory, --self-test or --from-reviews (one of the three)")
    tiers = caller_tiers(tier)
    if from_reviews:
        _calibrate_from_reviews(persist=not dry_run, as_json=as_json, all_roles=accept_all_roles)
        return
    with open_kb() as kb:
        labelled = self_test_cases(kb.store, tiers) if self_test else load_cases(cases)
        label = "self-test" if self_test else f"cases in {cases}"
        try:
            report = fit(kb, labelled, tiers=tiers, label=label, seed=seed, persist=not dry_run)
        except ValueError as exc:
            raise InputError(f"cannot calibrate from {len(labelled)} cases: {exc}") from exc
        status = kb.status()
        if not dry_run:
            _audit(kb, "self-test" if self_test else "cases", report.get("kept", {}))
    if as_json:
        print_json({"report": report, "status": status})
        return
    console.print(
        f"{report['cases']} cases: fitted on {report['fit_cases']}, "
        f"reported on {report['held_out_cases']} held out (seed {seed})"
    )
    if "weights" in report:
        console.print(
            f"dense weight for {report['family']}: {report['weights']['dense']} — "
            f"{report['weights']['source']}"
        )
    table = Table(title="held-out calibration")
    cols = (
        "model",
        "hit@1",
        "ECE",
        "Brier",
        "AUROC",
        "novel P",
        "novel R",
        "found|none",
        "lo / hi",
    )
    for col in cols:
        table.add_column(col)
    for key, model in report["confidence"].items():
        m = model["metrics"]["calibration"]
        table.add_row(
            key,
            *(
                str(m[k])
                for k in (
                    "hit_at_1",
                    "ece",
                    "brier",
                    "auroc_precedent_vs_none",
                    "novel_precision",
                    "novel_recall",
                    "found_when_none",
                )
            ),
            f"{model['lo']} / {model['hi']}",
        )
    print_wide(table)
    for key, why in report.get("kept", {}).items():
        console.print(f"{key}: {why}")
    console.print("persisted with the knowledge base" if not dry_run else "dry run: nothing saved")


def _calibrate_from_reviews(*, persist: bool, as_json: bool, all_roles: bool) -> None:
    from seenbefore.calibration.people import refit
    from seenbefore.security.tokens import local_principal

    with open_kb() as kb:
        try:
            who = local_principal(()).name
            report = refit(kb, persist=persist, all_roles=all_roles, who=who)
        except ValueError as exc:
            raise InputError(f"cannot calibrate from reviews: {exc}") from exc
        if persist:
            kept = {k: "kept" if m.get("kept") else "not kept" for k, m in report["models"].items()}
            _audit(kb, "reviews", kept)
    if as_json:
        print_json({"report": report})
        return
    console.print(f"{report['labels']} review decisions recorded")
    for note in report["notes"]:
        console.print(f"[yellow]{note}[/]")
    table = Table(title="confidence refitted from reviews")
    cols = ("model", "people's labels", "positive", "self-made cases", "lo / hi", "kept", "weights")
    for col in cols:
        table.add_column(col)
    for key, m in report["models"].items():
        weights = ", ".join(f"{k} {v:.2f}" for k, v in (m.get("weights") or {}).items()) or "-"
        table.add_row(
            key,
            str(m["labels"]),
            str(m["positive"]),
            str(m["self_made_cases"]),
            f"{m.get('lo', '-')} / {m.get('hi', '-')}",
            "yes" if m["kept"] else "no",
            weights,
        )
    print_wide(table)
    for key, m in report["models"].items():
        console.print(f"{key}: {m['precedence']}")
    console.print("persisted with the knowledge base" if persist else "dry run: nothing saved")


def _audit(kb: Any, source: str, kept: Any) -> None:
    """The calibrate command changes the shared model: one audit record, with which models
    were kept (their ids, no text)."""
    from seenbefore.cli.security import record_write

    outcome = {str(k)[:60]: str(v)[:200] for k, v in dict(kept or {}).items()}
    record_write(kb.store, "calibrate", {}, {}, source=source, models=outcome)
