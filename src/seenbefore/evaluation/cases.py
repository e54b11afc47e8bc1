"""Labelled cases: one YAML file per case.

::

    id: pool-checkout            # optional; defaults to the file name
    query: |                     # the alert text or on-call note, as people write it
      checkout-api p99 8x baseline, db connections 100/100
    expected: [INC-2021-006]     # postmortems that are true precedents (empty when novel)
    alternates: [INC-2023-019]   # also accepted as correct
    expect_novel: false          # true: the right answer is "no precedent"
    tags: [origin, connection-pool-exhaustion]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seenbefore.calibration.cases import Case, split
from seenbefore.errors import InputError
from seenbefore.parsing import YAML_MAX_BYTES, YAMLProblem, load_yaml, read_text

PACKAGED_CASES = Path(__file__).with_name("cases")
__all__ = ["PACKAGED_CASES", "Case", "load_cases", "parse_case", "split"]


def _list(path: Path, data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise InputError(f"case {path}: '{key}' is {value!r}, expected a list of ids")
    return tuple(str(v) for v in value)


def parse_case(path: Path, data: Any) -> Case:
    if not isinstance(data, dict):
        raise InputError(f"case {path}: expected a YAML mapping with query/expected/expect_novel")
    query = str(data.get("query") or "").strip()
    if not query:
        raise InputError(f"case {path}: 'query' is missing or empty")
    expected = _list(path, data, "expected")
    novel = bool(data.get("expect_novel", False))
    if novel and expected:
        raise InputError(f"case {path}: expect_novel is true but 'expected' lists {expected}")
    if not novel and not expected:
        raise InputError(f"case {path}: give 'expected' ids, or set expect_novel: true")
    return Case(
        id=str(data.get("id") or path.stem),
        query=query,
        expected=expected,
        alternates=_list(path, data, "alternates"),
        expect_novel=novel,
        tags=_list(path, data, "tags"),
        source=str(path),
    )


def load_cases(directory: Path | None = None) -> list[Case]:
    """Every ``*.yaml`` / ``*.yml`` case under ``directory`` (default: the packaged cases)."""
    directory = directory or PACKAGED_CASES
    if not directory.is_dir():
        raise InputError(f"cases directory {directory} does not exist")
    files = sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")])
    if not files:
        raise InputError(f"no *.yaml case files in {directory}")
    cases = []
    for path in files:
        try:
            data = load_yaml(read_text(path, what="case file", max_bytes=YAML_MAX_BYTES))
        except YAMLProblem as exc:
            raise InputError(f"case {path}: {exc}") from exc
        cases.append(parse_case(path, data))
    ids = [c.id for c in cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise InputError(f"duplicate case ids in {directory}: {dupes}")
    return cases
