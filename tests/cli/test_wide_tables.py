"""Tables written to a log or a pipe are printed whole (no "Bri…", no "182…")."""

from __future__ import annotations

import pytest
from rich.table import Table

from seenbefore.cli.common import print_wide


def test_a_wide_table_in_a_log_keeps_every_header_and_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = Table(title="evaluation")
    headers = ["mode", "Hit@1", "Hit@3", "MRR", "novel P", "novel R", "ECE", "Brier", "AUROC"]
    headers += ["ECE held-out", "Brier held-out", "p50 ms", "p95 ms"]
    for name in headers:
        table.add_column(name)
    table.add_row("fused (RRF 0.5, MiniLM)", *[f"{1824.123456 + i:.6f}" for i in range(12)])
    print_wide(table)
    out = capsys.readouterr().out
    assert "…" not in out
    assert "Brier held-out" in out and "1835.123456" in out
