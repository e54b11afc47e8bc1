"""Hypothesis strategies for hostile and careless input files: raw bytes, YAML-ish text, JSON
of the right shape with wrong values, and byte-level mutations of a valid document."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.depth import examples

# What every fuzz test here runs under: no deadline (a slow machine is not a failure), no example
# database (nothing written into the tree), fixtures shared across examples on purpose.
FUZZ_BASE = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# The CLI fuzz: 1,000 generated inputs per entry point, the same ones every run.
FUZZ = settings(FUZZ_BASE, max_examples=examples(1000), derandomize=True)

# characters that mean something to YAML, Markdown, CSV or JSON, plus some that break decoders
SYNTAX = [*"-:#&*!|>'\"%@`{}[],?\t\n\r\\ .=+<", "---", "...", "<<", "\x00", "\ufeff"]
WORDS = ["id", "title", "date", "2024-03-14", "2024-13-01", "INC-1", "null", "~", "yes", "1e999"]

atoms = st.one_of(
    st.sampled_from(SYNTAX),
    st.sampled_from(WORDS),
    st.text(min_size=1, max_size=8),
    st.text(alphabet="abc019", min_size=1, max_size=6),
)
yamlish = st.lists(atoms, max_size=40).map("".join)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def mutate(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` with a few bytes inserted, deleted or replaced (keeps most of the structure)."""
    ops = st.lists(
        st.tuples(
            st.sampled_from(["insert", "delete", "replace"]),
            st.integers(min_value=0, max_value=max(0, len(data) - 1)),
            st.binary(min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=4,
    )

    def apply(changes: list[tuple[str, int, bytes]]) -> bytes:
        out = bytearray(data)
        for op, at, chunk in changes:
            at = min(at, len(out))
            if op == "insert":
                out[at:at] = chunk
            elif op == "delete":
                del out[at : at + len(chunk)]
            else:
                out[at : at + len(chunk)] = chunk
        return bytes(out)

    return ops.map(apply)


def documents(valid: bytes, shaped: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Raw bytes, UTF-8 YAML-ish text, ``shaped`` (the right structure, wrong values) and
    mutations of a ``valid`` file."""
    return st.one_of(
        st.binary(max_size=400),
        yamlish.map(lambda t: t.encode("utf-8", "surrogatepass")),
        shaped,
        mutate(valid),
    )


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def mostly(valid: st.SearchStrategy[Any], junk: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` three times in four, so generated files get past the first check (a plain
    one_of would flatten ``junk``'s own branches and pick among all of them)."""
    return st.integers(0, 3).flatmap(lambda n: junk if n == 0 else valid)
