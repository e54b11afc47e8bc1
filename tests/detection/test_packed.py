"""Whole numbers in a saved state, packed (detection/packed.py ``pack_whole``): exact in the
narrowest width, bounded when read back, and an earlier build's JSON list still reads; values on
a grid (ARTime's weights, ``pack_grid``) come back as float32 holds them."""

from __future__ import annotations

import base64
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from seenbefore.detection.packed import (
    pack,
    pack32,
    pack_grid,
    pack_whole,
    unpack,
    unpack_whole,
    whole_list,
)
from seenbefore.errors import InputError


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=200))
def test_whole_numbers_come_back_exactly(values: list[int]) -> None:
    assert unpack_whole(pack_whole(values)) == values


@pytest.mark.parametrize(
    ("values", "prefix"),
    [
        ([], "i1z:"),
        ([0, 127, -128], "i1z:"),
        ([128], "i2z:"),
        ([70_000], "i4z:"),
        ([2**40], "i8z:"),
    ],
)
def test_the_narrowest_width_that_holds_them(values: list[int], prefix: str) -> None:
    assert pack_whole(values).startswith(prefix)


def test_a_list_as_an_earlier_build_wrote_it_still_reads() -> None:
    assert whole_list([3, 1, 2]) == [3, 1, 2]
    assert whole_list(pack_whole([3, 1, 2])) == [3, 1, 2]
    with pytest.raises(InputError, match="a list of whole numbers"):
        whole_list(3)


def test_anything_else_is_refused_and_reading_is_bounded() -> None:
    with pytest.raises(InputError, match="packed whole numbers start with"):
        unpack_whole(pack([1.0]))
    with pytest.raises(InputError, match="more than 10 values"):
        unpack_whole(pack_whole(range(11)), max_values=10)
    bomb = "i8z:" + base64.b64encode(zlib.compress(bytes(8 * 10**8), 9)).decode()
    with pytest.raises(InputError, match="more than 2,097,152 values"):
        unpack_whole(bomb)
    odd = "i4z:" + base64.b64encode(zlib.compress(b"\x00" * 6)).decode()
    with pytest.raises(InputError, match="not whole 4-byte ints"):
        unpack_whole(odd)


@given(
    st.lists(st.integers(min_value=0, max_value=80), max_size=100),
    st.lists(st.floats(min_value=0.0, max_value=1.0, width=32), max_size=30),
)
def test_grid_values_come_back_as_float32_would_hold_them(
    levels: list[int], off: list[float]
) -> None:
    values = [float(np.float32(k / 80)) for k in levels] + off
    text = pack_grid(values, 80)
    assert text.startswith("g1z:")
    assert unpack(text) == values == unpack(pack32(values))
    # a value float32 does not hold exactly falls back to the float64 packing, still exact
    assert unpack(pack_grid([0.1], 80)) == [0.1] and pack_grid([0.1], 80).startswith("f8z:")


def test_a_grid_packed_array_out_of_shape_or_too_long_is_refused() -> None:
    text = pack_grid([0.5, 0.25, float(np.float32(0.123))], 80)  # one off the grid
    codes = text[len("g1z:") :].split(".")[0]
    with pytest.raises(InputError, match="3 parts"):
        unpack(text + ".AAAA")
    with pytest.raises(InputError, match="off-grid values"):
        unpack("g1z:" + codes + "." + base64.b64encode(zlib.compress(b"")).decode())
    # the bound counts values, not the 5-byte header the codes come after
    with pytest.raises(InputError, match="more than 2 values"):
        unpack(text, max_values=2)
    with pytest.raises(ValueError, match="grid steps 255"):
        pack_grid([0.5], 255)
