"""`seenbefore eval --self-test` on the sample knowledge base, as a user runs it, kept as a record.

Runs the installed CLI in a fresh SEENBEFORE_HOME with no LLM configured (every other
SEENBEFORE_* variable removed), reads its ``--json`` output and writes it to
benchmarks/results/selftest.json with the command, commit, machine and date. Prints the table of
modes. Figures only; nothing here asserts.

    python benchmarks/selftest.py [--kb examples/postmortems] [--embedders minilm,lsa]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results

REPO = Path(__file__).resolve().parents[1]
SEENBEFORE = Path(sys.executable).with_name("seenbefore")
console = Console()


def run_self_test(kb: Path, embedders: str) -> tuple[list[str], dict[str, Any]]:
    args = ["--self-test", "--kb", str(kb), "--embedders", embedders, "--json"]
    cli = [str(SEENBEFORE), "eval", *args]
    with tempfile.TemporaryDirectory(prefix="seenbefore-selftest-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEENBEFORE_")}
        env["SEENBEFORE_HOME"] = home
        done = subprocess.run(cli, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"seenbefore eval exited {done.returncode}; its stderr ends:\n{done.stderr[-2000:]}"
        )
    return ["seenbefore", "eval", *args], dict(json.loads(done.stdout))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, default=Path("examples/postmortems"))
    parser.add_argument("--embedders", default="minilm,lsa")
    parser.add_argument("--out", type=Path, default=RESULTS / "selftest.json")
    args = parser.parse_args(argv)
    if not SEENBEFORE.exists():
        console.print(f"[red]{SEENBEFORE} not found: install the project (make install) first[/]")
        return 2
    cli, payload = run_self_test(args.kb, args.embedders)
    record: dict[str, Any] = {
        **provenance("benchmarks/selftest.py", argv),
        "cli": " ".join(cli) + " (SEENBEFORE_HOME a fresh directory, no LLM)",
        **payload,
    }
    table = Table(title=f"self-test: {payload['header']['cases']} cases")
    for col in ("mode", "Hit@1", "Hit@3", "MRR", "novel P", "novel R"):
        table.add_column(col, justify="left" if col == "mode" else "right")
    for name, m in payload["modes"].items():
        keys = ("hit@1", "hit@3", "mrr", "novel_precision", "novel_recall")
        table.add_row(name, *("-" if m.get(k) is None else f"{m[k]:.3f}" for k in keys))
    console.print(table)
    console.print(f"mean token overlap {payload['mean_token_overlap']:.2f}")
    console.print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
