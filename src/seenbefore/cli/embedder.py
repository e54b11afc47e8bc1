"""`seenbefore embedder`: the MiniLM runtimes (export the ONNX graph once; say which path is live)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from seenbefore.cli.common import console

embedder_app = typer.Typer(
    help="The dense embedder: export MiniLM to ONNX once, show which runtime is used.",
    no_args_is_help=True,
)


@embedder_app.command("export")
def export(
    target: Annotated[
        Path | None,
        typer.Option("--to", help="file to write (default: the model cache, see `embedder info`)"),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="export again even if cached")] = False,
) -> None:
    """Export the shipped all-MiniLM-L6-v2 weights to ONNX (offline; needs the `neural` extra)."""
    from seenbefore.retrieval.onnx_minilm import export_onnx, onnx_path, prepare_session

    path = target or onnx_path()
    if path.exists() and not force:
        console.print(
            f"already exported: {path} ({path.stat().st_size / 1e6:.1f} MB)", soft_wrap=True
        )
    else:
        started = time.perf_counter()
        export_onnx(path)
        console.print(
            f"exported all-MiniLM-L6-v2 to {path} ({path.stat().st_size / 1e6:.1f} MB) "
            f"in {time.perf_counter() - started:.1f} s",
            soft_wrap=True,
        )
    kept = prepare_session(path)
    console.print(f"optimised graph (what searches load): {kept}", soft_wrap=True)


@embedder_app.command("info")
def info() -> None:
    """Which MiniLM runtime a search would use, and where the ONNX export is cached."""
    from seenbefore.retrieval.embedders import RUNTIME_ENV, _runtime
    from seenbefore.retrieval.onnx_minilm import model_cache_dir, onnx_path

    console.print(f"runtime setting ({RUNTIME_ENV}): {_runtime()}")
    console.print(f"model cache: {model_cache_dir()}")
    path = onnx_path()
    state = "present" if path.exists() else "missing (the first search exports it)"
    console.print(f"ONNX export: {path} — {state}", soft_wrap=True)
