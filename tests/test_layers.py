"""Imports flow one way: the import-linter contract in pyproject.toml passes, and the edges that
used to run upward or in a circle stay gone (checked directly, so a weakened contract cannot hide
them)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "seenbefore"


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _loaded_after(statement: str) -> set[str]:
    """The seenbefore modules (and jinja2) a fresh interpreter holds after ``statement``."""
    probe = (
        f"import sys\n{statement}\n"
        "print('\\n'.join(sorted(m for m in sys.modules "
        "if m.startswith('seenbefore') or m.split('.')[0] == 'jinja2')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120
    )
    return set(out.stdout.split())


def test_the_import_contract_passes() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail(f"{lint} is missing: install the dev extra (pip install -e '.[dev]')")
    run = subprocess.run(
        [str(lint), "--no-logo", "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (
        "Contracts: 6 kept, 0 broken." in run.stdout
    )  # layers, acyclic, backends, adapters, one-fit, no-lab


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("review", "seenbefore.cli"),
        ("mcp", "seenbefore.cli"),
        ("knowledge", "seenbefore.investigation"),
        ("investigation", "seenbefore.cli"),
        ("investigation", "seenbefore.review"),
    ],
)
def test_no_module_imports_upward(package: str, forbidden: str) -> None:
    offenders = {
        str(path.relative_to(SRC)): sorted(
            m for m in _imports(path) if m == forbidden or m.startswith(forbidden + ".")
        )
        for path in sorted((SRC / package).rglob("*.py"))
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_product_module_imports_the_lab() -> None:
    """The lab (NAB harness, simulator, unshipped members) is for experiments: only the CLI,
    whose demo and NAB commands are experiments, and the lab itself import it."""
    offenders = {
        str(path.relative_to(SRC)): sorted(
            m for m in _imports(path) if m == "seenbefore.lab" or m.startswith("seenbefore.lab.")
        )
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] not in ("cli", "lab")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_investigation_modules_form_no_circle() -> None:
    """investigator -> rewriter -> llm_reporter -> investigator was a circle; the evidence types
    and the prompt rendering now sit below all three."""
    pkg = SRC / "investigation"
    assert "seenbefore.investigation.llm_reporter" not in _imports(pkg / "rewriter.py")
    assert "seenbefore.investigation.investigator" not in _imports(pkg / "reporter.py")
    assert "seenbefore.investigation.investigator" not in _imports(pkg / "llm_reporter.py")
    below = {"evidence.py", "templates.py"}
    for name in below:
        imported = _imports(pkg / name)
        for above in ("investigator", "rewriter", "reporter", "llm_reporter", "factory"):
            assert f"seenbefore.investigation.{above}" not in imported, (name, above)


def test_http_models_do_not_load_the_search_stack() -> None:
    loaded = _loaded_after("import seenbefore.service.models")
    assert "seenbefore.investigation.evidence" in loaded  # the types it needs, and no more:
    assert {m for m in loaded if m.startswith(("seenbefore.retrieval", "seenbefore.kb"))} == set()
    assert "seenbefore.investigation.investigator" not in loaded


def test_ingest_and_the_rewriter_load_no_template_engine() -> None:
    loaded = _loaded_after(
        "import seenbefore.knowledge.ingest, seenbefore.investigation.investigator"
    )
    assert "seenbefore.textguard" in loaded
    assert "jinja2" not in loaded  # imported when a prompt is first rendered


def test_old_names_still_resolve_to_the_moved_objects() -> None:
    from seenbefore import textguard
    from seenbefore.cli import investigate as cli_investigate
    from seenbefore.investigation import (
        evidence,
        factory,
        guard,
        investigator,
        llm_reporter,
        templates,
    )

    assert investigator.Evidence is evidence.Evidence
    assert investigator.EvidenceItem is evidence.EvidenceItem
    assert investigator.EVIDENCE_SECTIONS == ("detection", "root_cause", "resolution")
    assert llm_reporter.render is templates.render
    assert cli_investigate.make_reporter is factory.make_reporter
    assert cli_investigate.make_rewriter is factory.make_rewriter
    assert (guard.scan, guard.fence, guard.KINDS) == (
        textguard.scan,
        textguard.fence,
        textguard.KINDS,
    )
