"""A small schema language for saved detector state: what each field of a state file must be
(its type, its bounds, its length), checked before any of it is used.

A state file is written by this program but read back from disk, where anything can happen to
it (a truncated write, an edit, a file from another build, a hostile copy). Each check names
the field by its path (``series["..."].detector.members.delta.dist[1]``), what it found and
what it expected, and raises :class:`~seenbefore.errors.InputError`: a damaged state is
refused with a message, never a traceback later in the scoring loop.

Numbers are finite (JSON's NaN and Infinity never pass), whole numbers are not floats and not
booleans, lists and mappings have a maximum length, records have exactly their keys, and packed
arrays (:mod:`~seenbefore.detection.packed`) are decoded with a bound on their decompressed size
by the code that reads them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from seenbefore.detection.packed import PREFIX, PREFIXES, unpack_whole
from seenbefore.errors import InputError

Check = Callable[[Any, str], None]
MAX_WHOLE = 2**53  # whole numbers a float64 (and JSON readers elsewhere) keep exactly


def refuse(path: str, value: Any, expected: str, what: str = "the state") -> NoReturn:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise InputError(
        f"{what}: {path} is {shown} ({type(value).__name__}), expected {expected}; the file is "
        "damaged, edited or from another build: give another --state or delete it"
    )


def whole(lo: int = 0, hi: int = MAX_WHOLE) -> Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            refuse(path, value, f"a whole number from {lo} to {hi}")

    return check


def number(lo: float = -math.inf, hi: float = math.inf, *, above: float | None = None) -> Check:
    """A finite number (an int or a float, not a boolean) in [lo, hi], and > ``above`` if given."""

    def check(value: Any, path: str) -> None:
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and lo <= value <= hi
            and (above is None or value > above)
        )
        if not ok:
            bound = f" above {above:g}" if above is not None else ""
            span = f" from {lo:g} to {hi:g}" if math.isfinite(lo) or math.isfinite(hi) else ""
            refuse(path, value, f"a finite number{span}{bound}")

    return check


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        refuse(path, value, "true or false")


def text(max_chars: int) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or len(value) > max_chars:
            refuse(path, value, f"a string of at most {max_chars} characters")

    return check


def packed(max_chars: int) -> Check:
    """A packed array's text (decoded, with its own bound, where it is read)."""

    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or not value.startswith(PREFIXES) or len(value) > max_chars:
            refuse(path, value, f"a packed array ({PREFIX}..., at most {max_chars} characters)")

    return check


def wholes(item: Check, *, max_items: int, min_items: int = 0) -> Check:
    """A list of whole numbers, packed (detection/packed.py ``pack_whole``) or, as an earlier
    build wrote it, a JSON list: either way each one checked by ``item``."""
    written = list_of(item, max_items=max_items, min_items=min_items)

    def check(value: Any, path: str) -> None:
        if not isinstance(value, str):
            written(value, path)
            return
        try:
            values = unpack_whole(value, max_values=max_items)
        except InputError as exc:
            refuse(path, value[:40], f"packed whole numbers ({exc})")
        written(values, path)

    return check


def optional(inner: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

    return check


def list_of(item: Check, *, max_items: int, min_items: int = 0) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or not min_items <= len(value) <= max_items:
            size = f"exactly {max_items}" if min_items == max_items else f"at most {max_items}"
            refuse(path, value, f"a list of {size} items")
        for i, v in enumerate(value):
            item(v, f"{path}[{i}]")

    return check


def pair(first: Check, second: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) != 2:
            refuse(path, value, "a list of two items")
        first(value[0], f"{path}[0]")
        second(value[1], f"{path}[1]")

    return check


def mapping(key: Check, item: Check, *, max_items: int) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict) or len(value) > max_items:
            refuse(path, value, f"an object of at most {max_items} entries")
        for k, v in value.items():
            key(k, f"{path} key")
            item(v, f"{path}[{k[:40]!r}]")

    return check


def record(fields: Mapping[str, Check], *, optional_keys: frozenset[str] = frozenset()) -> Check:
    """An object with exactly ``fields`` (those in ``optional_keys`` may be absent)."""

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            refuse(path, value, f"an object with {', '.join(fields)}")
        missing = [k for k in fields if k not in value and k not in optional_keys]
        extra = [str(k)[:40] for k in value if k not in fields]
        if missing or extra:
            refuse(
                path,
                sorted(value)[:8],
                f"the keys {sorted(fields)}"
                + (f" (missing {missing})" if missing else "")
                + (f" (unknown {extra[:5]})" if extra else ""),
            )
        for k, inner in fields.items():
            if k in value:
                inner(value[k], f"{path}.{k}")

    return check


def equals(expected: Any, what: str) -> Check:
    def check(value: Any, path: str) -> None:
        if value != expected:
            refuse(path, value, what)

    return check
