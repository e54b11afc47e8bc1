"""`seenbefore calibrate`: fit the gate's weight and the confidence models from labelled cases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from seenbefore.cli.common import caller_tiers, console, open_kb, print_json
from seenbefore.cli.search import TierOption
from seenbefore.errors import InputError
from seenbefore.evaluation.calibrate import calibrate as fit
from seenbefore.evaluation.cases import load_cases
from seenbefore.evaluation.selftest import self_test_cases


def calibrate(
    cases: Annotated[Path | None, typer.Argument(help="directory of case YAML files")] = None,
    self_test: Annotated[
        bool, typer.Option("--self-test", help="build cases from the knowledge base itself")
    ] = False,
    tier: TierOption = None,
    seed: Annotated[int, typer.Option(help="seed of the fit / held-out split")] = 0,
    dry_run: Annotated[bool, typer.Option(help="report only; do not persist")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Choose the dense weight and fit confidence on one split of CASES; report the other."""
    if (cases is None) == (not self_test):
        raise InputError("give a CASES directory or --self-test (one of the two)")
    tiers = caller_tiers(tier)
    with open_kb() as kb:
        labelled = self_test_cases(kb.store, tiers) if self_test else load_cases(cases)
        label = "self-test" if self_test else f"cases in {cases}"
        try:
            report = fit(kb, labelled, tiers=tiers, label=label, seed=seed, persist=not dry_run)
        except ValueError as exc:
            raise InputError(f"cannot calibrate from {len(labelled)} cases: {exc}") from exc
        status = kb.status()
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
    for col in ("model", "hit@1", "ECE", "Brier", "AUROC", "novel P", "novel R", "threshold"):
        table.add_column(col)
    for key, model in report["confidence"].items():
        m = model["metrics"]["held_out"]
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
                )
            ),
            str(model["threshold"]),
        )
    console.print(table)
    console.print("persisted with the knowledge base" if not dry_run else "dry run: nothing saved")
