"""A test run never reads or writes the user's model cache (``~/.cache/seenbefore``).

At the start of the run ``SEENBEFORE_MODEL_CACHE`` points at a folder of this run's own (removed
when it ends), so the ONNX export of MiniLM happens there, once, on first use, and every
subprocess a test starts inherits it. A fresh clone on a machine that exported MiniLM before
would otherwise pass on that old export and hide a broken one (the ``onnx`` package missing from
the install, found by a new user).

The user's cache is snapshotted (names, sizes, modification times) before the run and compared
after it: a run that changed it fails, naming what changed. Loaded by ``tests/conftest.py``;
``tests/test_cache_guard.py`` runs a test that writes there and checks that the run fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

CACHE_ENV = "SEENBEFORE_MODEL_CACHE"  # seenbefore.retrieval.onnx_minilm.CACHE_ENV
_STATE = pytest.StashKey[tuple[Path, dict[str, tuple[int, int]], Path, str | None]]()


def user_model_cache() -> Path:
    """Where the user's MiniLM export lives when nothing overrides it."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "seenbefore"


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root`` (and ``root`` itself) with its size and mtime in ns."""
    if not root.exists():
        return {}
    entries = {".": (root.stat().st_mtime_ns, 0)}
    for path in root.rglob("*"):
        stat = path.lstat()
        entries[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size)
    return entries


def pytest_configure(config: pytest.Config) -> None:
    root = user_model_cache()
    run_cache = Path(tempfile.mkdtemp(prefix="seenbefore-test-models-"))
    config.stash[_STATE] = (root, snapshot(root), run_cache, os.environ.get(CACHE_ENV))
    os.environ[CACHE_ENV] = str(run_cache)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    root, before, _, _ = session.config.stash[_STATE]
    after = snapshot(root)
    if after == before:
        return
    changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        f"this test run touched the user's model cache {root} ({', '.join(changed[:5])}); "
        f"tests must use ${CACHE_ENV} (a folder of the run, set by tests/cache_guard.py)"
    )
    if reporter is not None:
        reporter.write_line(f"ERROR: {message}", red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    _, _, run_cache, previous = config.stash[_STATE]
    shutil.rmtree(run_cache, ignore_errors=True)
    if previous is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = previous
