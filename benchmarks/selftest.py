"""`seenbefore eval --self-test` on the sample knowledge base, as a user runs it, kept as a record.

Runs the installed CLI in a fresh SEENBEFORE_HOME with no LLM configured (cli_json.py), reads
its ``--json`` output and writes it to
benchmarks/results/selftest.json with the command, commit, machine and date. Prints the table of
modes. Figures only; nothing here asserts.

    python benchmarks/selftest.py [--kb examples/postmortems] [--embedders minilm,lsa]
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

console = Console()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, default=Path("examples/postmortems"))
    parser.add_argument("--embedders", default="minilm,lsa")
    parser.add_argument("--out", type=Path, default=RESULTS / "selftest.json")
    args = parser.parse_args(argv)
    return record_eval(
        ["eval", "--self-test", "--kb", str(args.kb), "--embedders", args.embedders, "--json"],
        "benchmarks/selftest.py",
        argv,
        args.out,
    )


def record_eval(cli_args: list[str], script: str, argv: Sequence[str] | None, out: Path) -> int:
    """Run ``seenbefore eval ... --json``, print its modes and keep it at ``out``."""
    cli, payload = run_cli_json(cli_args)
    record: dict[str, Any] = {**provenance(script, argv), "cli": cli, **payload}
    table = Table(title=f"{script}: {payload['header']['cases']} cases")
    for col in ("mode", "Hit@1", "Hit@3", "MRR", "novel P", "novel R"):
        table.add_column(col, justify="left" if col == "mode" else "right")
    for name, m in payload["modes"].items():
        keys = ("hit@1", "hit@3", "mrr", "novel_precision", "novel_recall")
        table.add_row(name, *("-" if m.get(k) is None else f"{m[k]:.3f}" for k in keys))
    console.print(table)
    console.print(f"mean token overlap {payload['mean_token_overlap']:.2f}")
    console.print(f"wrote {write_results(out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
