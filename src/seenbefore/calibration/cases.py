"""A labelled case: a query, the postmortems that are its precedents (or none), and the
documents left out of the index for it. Case files (YAML) are read by evaluation/cases.py; the
calibration subsystem makes its own cases (selfcal.py, selftest.py) of the same type."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    expected: tuple[str, ...] = ()
    alternates: tuple[str, ...] = ()
    expect_novel: bool = False
    tags: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # documents left out of the index for this case (self-test)
    source: str = ""

    @property
    def relevant(self) -> frozenset[str]:
        return frozenset(self.expected) | frozenset(self.alternates)


def split(
    cases: Sequence[Case], *, fraction: float = 0.5, seed: int = 0
) -> tuple[list[Case], list[Case]]:
    """Deterministic split into (fit, held-out), stratified by expect_novel."""
    rng = random.Random(seed)
    fit: list[Case] = []
    held: list[Case] = []
    for novel in (False, True):
        group = sorted((c for c in cases if c.expect_novel == novel), key=lambda c: c.id)
        rng.shuffle(group)
        cut = round(len(group) * fraction)
        fit.extend(group[:cut])
        held.extend(group[cut:])
    return fit, held
