"""`seenbefore eval` on the packaged golden cases against the sample knowledge base, as a user
runs it, kept as benchmarks/results/eval_golden.json (command, commit, machine, date). Figures
only; nothing here asserts.

    python benchmarks/golden.py [--embedders minilm,lsa]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from provenance import RESULTS
from selftest import record_eval


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedders", default="minilm,lsa")
    parser.add_argument("--out", type=Path, default=RESULTS / "eval_golden.json")
    args = parser.parse_args(argv)
    return record_eval(
        ["eval", "--embedders", args.embedders, "--json"], "benchmarks/golden.py", argv, args.out
    )


if __name__ == "__main__":
    sys.exit(main())
