"""`seenbefore detect --scenario all` on the simulator, as a user runs it, kept as a record; and
both detectors side by side, in this process, over several seeds.

Simulates 48 h of the six services with every scenario injected (the first 24 h clean history),
detects, triages, and scores event-level precision and recall against the injected ground truth:
once through the CLI (``--seed``, the default detector, its ``--json`` output kept), then for
seeds 0 .. ``--seeds``-1 with the default streaming ensemble and with the Isolation Forest.
Writes benchmarks/results/detection.json (command, commit, machine, date). Figures only;
nothing here asserts.

    python benchmarks/detection.py [--seed 0] [--seeds 13]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cli_json import run_cli_json
from provenance import RESULTS, provenance, write_results
from seenbefore.detection.pipeline import DetectionParams, detect
from seenbefore.lab.simulator import SCENARIOS, simulate

console = Console()
DETECTORS = ("ensemble", "iforest")
WARMUP_HOURS = 24


def one_run(seed: int, detector: str) -> dict[str, Any]:
    telemetry = simulate(scenarios=list(SCENARIOS), hours=48, seed=seed, warmup_hours=WARMUP_HOURS)
    train = WARMUP_HOURS * 60
    report = detect(
        telemetry,
        params=DetectionParams(train_minutes=train, detector=detector, probation=train),
    )
    kept = report.triage.kept
    found = {m for m in report.matches.values() if m}
    return {
        "seed": seed,
        "incidents": len(report.truth),
        "detected": sum(f"{i.kind}@{i.service}" in found for i in report.truth),
        "kept": len(kept),
        "false_alarms": sum(report.matches[a.id] is None for a in kept),
        "unconfirmed_fires": report.detector.get("unconfirmed_fires"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=13)
    parser.add_argument("--out", type=Path, default=RESULTS / "detection.json")
    args = parser.parse_args(argv)
    cli, payload = run_cli_json(["detect", "--scenario", "all", "--seed", str(args.seed), "--json"])
    truth = payload["truth"]
    runs = {d: [one_run(seed, d) for seed in range(args.seeds)] for d in DETECTORS}
    table = Table(title=f"the simulator, seeds 0-{args.seeds - 1}: detected / false alarms")
    table.add_column("seed")
    for d in DETECTORS:
        table.add_column(d, justify="right")
    for i in range(args.seeds):
        table.add_row(
            str(i),
            *(
                f"{runs[d][i]['detected']}/{runs[d][i]['incidents']} / {runs[d][i]['false_alarms']}"
                for d in DETECTORS
            ),
        )
    totals = {
        d: {
            "detected": sum(r["detected"] for r in runs[d]),
            "incidents": sum(r["incidents"] for r in runs[d]),
            "false_alarms": sum(r["false_alarms"] for r in runs[d]),
            "runs_without_false_alarm": sum(r["false_alarms"] == 0 for r in runs[d]),
        }
        for d in DETECTORS
    }
    table.add_row(
        "all",
        *(f"{t['detected']}/{t['incidents']} / {t['false_alarms']}" for t in totals.values()),
    )
    console.print(table)
    record: dict[str, Any] = {
        **provenance("benchmarks/detection.py", argv),
        "cli": cli,
        "seed": args.seed,
        "detector": payload["detector"]["name"],
        "incidents": len(truth),
        "detected": sum(t["detected"] for t in truth),
        "anomalies": len(payload["anomalies"]),
        "false_alarms": sum(a["truth"] is None for a in payload["anomalies"]),
        "precision": payload["precision"],
        "recall": payload["recall"],
        "seeds": args.seeds,
        "side_by_side": {"totals": totals, "runs": runs},
        "output": payload,
    }
    console.print(
        f"the CLI (seed {args.seed}, {record['detector']}): {record['incidents']} injected "
        f"incidents, {record['detected']} detected; {record['anomalies']} anomalies kept, "
        f"{record['false_alarms']} false alarms; event-level precision "
        f"{record['precision']:.2f}, recall {record['recall']:.2f}"
    )
    console.print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
