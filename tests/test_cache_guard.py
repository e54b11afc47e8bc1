"""The test suite keeps off the user's model cache: it exports MiniLM into a folder of its own,
and a run that writes to ``~/.cache/seenbefore`` fails (tests/cache_guard.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seenbefore.retrieval.onnx_minilm import model_cache_dir
from tests.cache_guard import CACHE_ENV, user_model_cache

REPO = Path(__file__).resolve().parents[1]


def test_this_run_has_its_own_model_cache() -> None:
    ours = Path(os.environ[CACHE_ENV])
    assert model_cache_dir() == ours
    assert ours.name.startswith("seenbefore-test-models-")
    assert not ours.is_relative_to(user_model_cache())


@pytest.mark.parametrize("writes", [True, False])
def test_a_run_that_writes_the_user_cache_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, writes: bool
) -> None:
    # pytester gives the inner run a HOME of its own; the guard must find ~/.cache/seenbefore there
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    cache = pytester.path / ".cache" / "seenbefore"
    cache.mkdir(parents=True)
    (cache / "old.onnx").write_bytes(b"an export from an earlier run")
    pytester.makepyfile(
        test_inner=f"""
        import os, pathlib

        def test_export():
            if {writes!r}:
                root = pathlib.Path(os.environ["HOME"]) / ".cache" / "seenbefore"
                (root / "new.onnx").write_bytes(b"exported by a test")
            # what the code under test would use: the run's folder, not the user's
            assert "seenbefore-test-models-" in os.environ["{CACHE_ENV}"]
        """
    )
    result = pytester.runpytest_subprocess("-p", "tests.cache_guard", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    if writes:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*touched the user's model cache*new.onnx*"])
    else:
        assert result.ret == pytest.ExitCode.OK
    assert (cache / "old.onnx").exists()
