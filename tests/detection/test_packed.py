"""Whole numbers in a saved state, packed (detection/packed.py ``pack_whole``): exact in the
narrowest width, bounded when read back, and an earlier build's JSON list still reads."""

from __future__ import annotations

import base64
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seenbefore.detection.packed import pack, pack_whole, unpack_whole, whole_list
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
