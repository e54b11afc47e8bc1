"""Numbers in a saved detector state, packed: a list of floats as one JSON string.

A live watcher rewrites its state file after every poll, for every series; the long arrays in
it (the likelihood's history, ARTime's categories) written as JSON numbers cost about 19
bytes each. Packed, they are their exact little-endian float64 bytes, deflated, in base64: the
values come back bit for bit (a restarted series still scores as one never stopped) in 2-11
bytes each, depending on how much the array repeats itself.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable

import numpy as np

from seenbefore.errors import InputError

PREFIX = "f8z:"


def pack(values: Iterable[float]) -> str:
    data = np.asarray(list(values), dtype="<f8").tobytes()
    return PREFIX + base64.b64encode(zlib.compress(data, 6)).decode("ascii")


def unpack(text: str) -> list[float]:
    if not isinstance(text, str) or not text.startswith(PREFIX):
        raise InputError(
            f"a packed array starts with {PREFIX!r}; got {str(text)[:20]!r}: the state file "
            "is damaged or from another build, start the series afresh"
        )
    try:
        data = zlib.decompress(base64.b64decode(text[len(PREFIX) :], validate=True))
    except (ValueError, zlib.error) as exc:
        raise InputError(f"a packed array does not decode ({exc}); start afresh") from None
    if len(data) % 8:
        raise InputError(f"a packed array holds {len(data)} bytes, not whole float64s")
    values: list[float] = np.frombuffer(data, dtype="<f8").tolist()
    return values
