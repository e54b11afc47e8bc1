"""Numbers in a saved detector state, packed: a list of floats as one JSON string.

A live watcher rewrites its state file after every poll, for every series; the long arrays in
it (ARTime's categories, the confirmation rule's windows) written as JSON numbers cost about 19
bytes each. Packed, they are their exact little-endian float64 bytes (``f8z:``, :func:`pack`),
or float32 bytes (``f4z:``, :func:`pack32`) for arrays their owner keeps in float32 precision
in memory too (:func:`single` rounds a value so): deflated, in base64. Either way the values
come back bit for bit (a restarted series still scores as one never stopped), in 2-11 bytes
each (float64) or 2-6 (float32), depending on how much the array repeats itself.

Values in [0, 1] most of which lie on a grid of ``steps`` (ARTime's category weights: minima of
inputs discretised to 80 levels and their complements) pack as one byte a grid value and a
float32 for any other (``g1z:``, :func:`pack_grid`), read back by :func:`unpack` as ``f4z:``
would read them.

Lists of whole numbers (ARTime's category bookkeeping and histogram, the sequence member's
context codes) are packed too (:func:`pack_whole`: ``i1z:`` to ``i8z:``, the narrowest signed
width that holds them all), and an earlier build's JSON list of them still reads
(:func:`whole_list`).

Reading one back is bounded: at most ``max_values`` float64s are ever decompressed (a few
hundred kilobytes of zlib can otherwise expand to gigabytes), and every value must be finite
and within ±1e100 (what :func:`pack` is given always is: the detectors score no value past
:data:`~seenbefore.detection.values.MAX_MAGNITUDE`, and a NaN read back would poison every later
score).
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from seenbefore.detection.values import MAX_MAGNITUDE
from seenbefore.errors import InputError

PREFIX = "f8z:"
PREFIX32 = "f4z:"
PREFIX_GRID = "g1z:"
PREFIXES = (PREFIX, PREFIX32, PREFIX_GRID)
_OFF_GRID = 255  # the code of a value not on the grid (its float32 follows the codes)
_WHOLE_TYPES = {1: "<i1", 2: "<i2", 4: "<i4", 8: "<i8"}
WHOLE_PREFIXES = tuple(f"i{width}z:" for width in _WHOLE_TYPES)
MAX_PACKED_VALUES = 1 << 21  # 16 MiB of float64 per array; the longest this program packs is
# ARTime's probation features (2 x 8 x the trend, about 3,300 values by default) or a day of
# one-second points (86,400)


def pack(values: Iterable[float]) -> str:
    data = np.asarray(list(values), dtype="<f8").tobytes()
    return PREFIX + _deflated(data)


_F32 = np.finfo(np.float32)


def single(value: float) -> float:
    """``value`` rounded to the nearest float32 when float32 holds its magnitude (zero, or
    between float32's smallest normal and largest value), else unchanged: a metric at 1e-50 or
    1e100 (values this program scores) keeps its float64 value rather than becoming 0 or
    infinite."""
    size = abs(value)
    if size == 0.0 or float(_F32.tiny) <= size <= float(_F32.max):
        return float(np.float32(value))
    return float(value)


def _deflated(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 6)).decode("ascii")


def _as_float32(array: npt.NDArray[np.float64]) -> npt.NDArray[np.float32] | None:
    """``array`` in float32 when every value is one float32 holds exactly, else None."""
    narrow = array.astype("<f4") if np.all(np.abs(array) <= _F32.max) else None
    if narrow is None or not np.array_equal(narrow.astype("<f8"), array):
        return None
    return narrow


def pack32(values: Iterable[float]) -> str:
    """Like :func:`pack`, in float32 (``f4z:``) when every value is one float32 holds exactly
    (what :func:`single` returns within float32's range), else in float64: bit for bit either
    way, half the bytes for the arrays a series keeps rounded."""
    array = np.asarray(list(values), dtype="<f8")
    narrow = _as_float32(array)
    if narrow is None:
        return pack(array)
    return PREFIX32 + _deflated(narrow.tobytes())


def pack_grid(values: Iterable[float], steps: int) -> str:
    """Like :func:`pack32` (and falling back to it), with each value that is float32's nearest
    to ``k / steps`` (k in 0..steps) stored as the byte k and any other as code 255 with its
    float32 in a second stream (``g1z:`` CODES ``.`` OFF-GRID, each deflated, in base64):
    exact, as :func:`unpack` reads it. ``steps``: 1 to 254."""
    if not 1 <= steps < _OFF_GRID:
        raise ValueError(f"grid steps {steps}: use 1 to {_OFF_GRID - 1}")
    array = np.asarray(list(values), dtype="<f8")
    narrow = _as_float32(array)
    if narrow is None:
        return pack(array)
    k = np.clip(np.round(array * steps), 0, steps)
    on = (k / steps).astype("<f4") == narrow
    codes = np.where(on, k, _OFF_GRID).astype("<u1")
    head = np.array([steps], dtype="<u1").tobytes() + np.array([array.size], dtype="<u4").tobytes()
    return PREFIX_GRID + _deflated(head + codes.tobytes()) + "." + _deflated(narrow[~on].tobytes())


def _from_grid(body: str, max_values: int) -> npt.NDArray[np.float32]:
    """The float32 values of a ``g1z:`` body, reading at most ``max_values`` of them
    (InputError when its parts do not add up)."""
    parts = body.split(".")
    if len(parts) != 2:
        raise InputError(
            f"a grid-packed array has {len(parts)} parts, not its codes and off-grid values: the "
            "state file is damaged, start the series afresh"
        )
    head = _inflate(parts[0], 1, max_values, header=5)  # five bytes of header, a byte a value
    steps, n = (head[0], int.from_bytes(head[1:5], "little")) if len(head) >= 5 else (0, -1)
    codes = np.frombuffer(head[5:], dtype="<u1")
    if not 1 <= steps < _OFF_GRID or len(codes) != n:
        raise InputError(
            f"a grid-packed array's header (steps {steps}, {n} values) does not match its "
            f"{len(codes)} codes: the state file is damaged, start the series afresh"
        )
    off = codes == _OFF_GRID
    if int(codes[~off].max(initial=0)) > steps:
        raise InputError(f"a grid-packed array holds a code above its {steps} steps; start afresh")
    rest = _inflate(parts[1], 4, max(1, int(off.sum())))
    if len(rest) != 4 * int(off.sum()):
        raise InputError(
            f"a grid-packed array holds {len(rest)} bytes of off-grid values for "
            f"{int(off.sum())} off-grid codes: the state file is damaged, start the series afresh"
        )
    values = (codes.astype(np.float64) / steps).astype("<f4")
    values[off] = np.frombuffer(rest, dtype="<f4")
    return values


def pack_whole(values: Iterable[int]) -> str:
    """Whole numbers in the narrowest signed little-endian width that holds them all
    (``i1z:``, ``i2z:``, ``i4z:`` or ``i8z:``), deflated, in base64: exact, as
    :func:`unpack_whole` reads them."""
    array = np.asarray(list(values), dtype=np.int64)
    width = next(
        w
        for w, kind in _WHOLE_TYPES.items()
        if array.size == 0
        or (np.iinfo(kind).min <= int(array.min()) and int(array.max()) <= np.iinfo(kind).max)
    )
    data = array.astype(_WHOLE_TYPES[width]).tobytes()
    return f"i{width}z:" + _deflated(data)


def unpack_whole(text: str, *, max_values: int = MAX_PACKED_VALUES) -> list[int]:
    """The whole numbers :func:`pack_whole` packed; InputError for anything else or for more
    than ``max_values`` of them (found without decompressing more than that)."""
    if not isinstance(text, str) or not text.startswith(WHOLE_PREFIXES):
        raise InputError(
            f"packed whole numbers start with one of {', '.join(WHOLE_PREFIXES)}; got "
            f"{str(text)[:20]!r}: the state file is damaged or from another build, start the "
            "series afresh"
        )
    width = int(text[1])
    data = _inflate(text[len(WHOLE_PREFIXES[0]) :], width, max_values)
    if len(data) % width:
        raise InputError(
            f"packed whole numbers hold {len(data)} bytes, not whole {width}-byte ints"
        )
    values: list[int] = np.frombuffer(data, dtype=_WHOLE_TYPES[width]).astype(np.int64).tolist()
    return values


def whole_list(value: object, *, max_values: int = MAX_PACKED_VALUES) -> list[int]:
    """A list of whole numbers as a saved state holds it: packed (:func:`pack_whole`) or, as an
    earlier build wrote it, a JSON list."""
    if isinstance(value, str):
        return unpack_whole(value, max_values=max_values)
    if not isinstance(value, list):
        raise InputError(f"a list of whole numbers is {str(value)[:40]!r}; start afresh")
    return [int(v) for v in value]


def _inflate(body: str, size: int, max_values: int, *, header: int = 0) -> bytes:
    """The bytes of a packed array's base64 ``body``, at most ``header`` bytes and
    ``max_values`` items of ``size`` bytes ever decompressed."""
    try:
        inflate = zlib.decompressobj()
        data = inflate.decompress(base64.b64decode(body, validate=True), header + size * max_values)
        over = bool(inflate.unconsumed_tail) or len(inflate.decompress(b"", 1)) > 0
    except (ValueError, zlib.error) as exc:
        raise InputError(f"a packed array does not decode ({exc}); start afresh") from None
    if over:
        raise InputError(
            f"a packed array holds more than {max_values:,} values, more than this program ever "
            "packs there: the state file is damaged or hostile; start the series afresh"
        )
    return data


def unpack(text: str, *, max_values: int = MAX_PACKED_VALUES) -> list[float]:
    """The values :func:`pack` packed; InputError for anything else, for more than
    ``max_values`` values (found without decompressing more than that) or a non-finite one."""
    if not isinstance(text, str) or not text.startswith(PREFIXES):
        raise InputError(
            f"a packed array starts with {PREFIX!r} or {PREFIX32!r}; got {str(text)[:20]!r}: "
            "the state file is damaged or from another build, start the series afresh"
        )
    if text.startswith(PREFIX_GRID):  # a byte a value, four more off the grid, five of header
        return _finite(_from_grid(text[len(PREFIX_GRID) :], max_values).astype(np.float64))
    size = 4 if text.startswith(PREFIX32) else 8
    data = _inflate(text[len(PREFIX) :], size, max_values)
    if len(data) % size:
        kind = "float32" if size == 4 else "float64"
        raise InputError(f"a packed array holds {len(data)} bytes, not whole {kind}s")
    return _finite(np.frombuffer(data, dtype="<f4" if size == 4 else "<f8").astype(np.float64))


def _finite(array: npt.NDArray[np.float64]) -> list[float]:
    """``array`` as a list, each value checked finite and within ±MAX_MAGNITUDE."""
    bad = ~(np.abs(array) <= MAX_MAGNITUDE)  # NaN compares False
    if bad.any():
        raise InputError(
            f"a packed array holds {float(array[bad][0])!r} at index "
            f"{int(np.flatnonzero(bad)[0])}; what is packed is always finite and within "
            f"±{MAX_MAGNITUDE:g}: the state file is damaged, start the series afresh"
        )
    values: list[float] = array.tolist()
    return values
