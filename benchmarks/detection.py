"""`seenbefore detect --scenario all` on the simulator, as a user runs it, kept as a record.

Simulates 48 h of the six services with every scenario injected (seed as given), detects,
triages, and scores event-level precision and recall against the injected ground truth. Writes
benchmarks/results/detection.json (command, commit, machine, date, the CLI's ``--json``
output). Figures only; nothing here asserts.

    python benchmarks/detection.py [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from cli_json import run_cli_json
from provenance import RESULTS, provenance, write_results

console = Console()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "detection.json")
    args = parser.parse_args(argv)
    cli, payload = run_cli_json(["detect", "--scenario", "all", "--seed", str(args.seed), "--json"])
    truth = payload["truth"]
    record: dict[str, Any] = {
        **provenance("benchmarks/detection.py", argv),
        "cli": cli,
        "seed": args.seed,
        "incidents": len(truth),
        "detected": sum(t["detected"] for t in truth),
        "anomalies": len(payload["anomalies"]),
        "precision": payload["precision"],
        "recall": payload["recall"],
        "output": payload,
    }
    console.print(
        f"{record['incidents']} injected incidents, {record['detected']} detected; "
        f"{record['anomalies']} anomalies kept; event-level precision {record['precision']:.2f}, "
        f"recall {record['recall']:.2f}"
    )
    console.print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
