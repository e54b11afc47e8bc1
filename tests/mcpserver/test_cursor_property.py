"""Property (issue 33): no cursor reaches a traceback. ``list_postmortems`` decodes its cursor
(base64 of JSON); any text, and any JSON value a stranger encodes (floats such as 1e400,
Infinity, NaN, booleans, huge or negative numbers, nesting), gives the offset it names or the
tool's one InputError, never an OverflowError ("Internal server error")."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from seenbefore.errors import InputError
from seenbefore.mcp import browse
from seenbefore.mcp.catalog import ListPostmortems
from tests.depth import examples

MARK = browse._fingerprint(ListPostmortems())
offsets = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
    st.sampled_from(["1e400", "Infinity", "-Infinity", "NaN", "1e9999", "[1]", "{}"]),
)


def encode(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def offset_of(cursor: str) -> int | None:
    try:
        return browse._offset(ListPostmortems.model_construct(cursor=cursor))
    except InputError as exc:
        assert "cursor: not a next_cursor" in str(exc)
        return None


@settings(max_examples=examples(400), deadline=None, database=None, derandomize=True)
@given(offsets)
def test_any_offset_in_a_well_formed_cursor_is_taken_or_refused(offset: object) -> None:
    raw = offset if isinstance(offset, str) and offset[:1] in "1-IN[{" else json.dumps(offset)
    got = offset_of(encode(f'{{"o":{raw},"f":"{MARK}"}}'))
    if type(offset) is int and 0 <= offset <= browse.MAX_OFFSET:
        assert got == offset
    elif got is not None:  # only a whole number in range is ever taken
        assert raw.strip().isdigit() and 0 <= got <= browse.MAX_OFFSET


@settings(max_examples=examples(400), deadline=None, database=None, derandomize=True)
@given(st.text(max_size=400))
def test_any_text_is_a_cursor_or_a_clean_refusal(text: str) -> None:
    got = offset_of(text)
    assert got is None or 0 <= got <= browse.MAX_OFFSET
