"""How hard the property and fuzz tests push: the full number of generated examples in ``make
test`` (CI), a tenth in ``make check`` (``SEENBEFORE_TEST_DEPTH=0.1``), the quick local loop. The
examples are derandomised, so the quick tier runs a prefix of the same inputs the full tier does."""

from __future__ import annotations

import os

DEPTH_ENV = "SEENBEFORE_TEST_DEPTH"


def _depth() -> float:
    raw = os.environ.get(DEPTH_ENV, "1")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise SystemExit(f"{DEPTH_ENV} is {raw!r}; expected a fraction in (0, 1], e.g. 0.1")
    return value


DEPTH = _depth()


def examples(full: int, floor: int = 10) -> int:
    """``full`` examples at full depth; scaled down in the quick tier, but never below ``floor``."""
    return max(min(full, floor), round(full * DEPTH))
