"""What an audit record may hold: ids and labels, never free text (security/audit.py checks
every field with these before it appends)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from seenbefore.errors import InputError

MAX_FIELD_CHARS = 200  # strings in detail, session, draft_id, decision: ids and labels, not text
TEXT_KEYS = frozenset({"query", "text", "body", "note", "snippet", "content", "prompt", "summary"})
_ACTION = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")


def check_action(action: str) -> None:
    if not _ACTION.match(action):
        raise InputError(
            f"audit action is {action!r}; expected a lower-case name such as 'search' "
            "(letters, digits, '_', '.', ':', '-'; at most 64)"
        )


def short(value: str | None, name: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise InputError(f"audit {name} is missing; give a non-empty value")
        return None
    if not isinstance(value, str) or (required and not value) or len(value) > MAX_FIELD_CHARS:
        raise InputError(
            f"audit {name} is {str(value)[:40]!r} ({len(str(value))} characters); expected an id "
            f"or label of 1..{MAX_FIELD_CHARS} characters (the audit log keeps no text)"
        )
    return value


def check_detail(value: Any, depth: int = 0) -> None:
    if depth > 4:
        raise InputError("audit detail nests deeper than 4 levels; flatten it")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"audit detail key {key!r} is not a string; use string keys")
            if key.lower() in TEXT_KEYS:
                raise InputError(
                    f"audit detail key {key!r} would store free text; the audit log keeps ids "
                    "and hashes only: pass the query as query=, or store "
                    f"{{'{key}_hash': audit.hash_text(...)}}, or leave it out"
                )
            check_detail(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            check_detail(item, depth + 1)
    elif isinstance(value, str):
        short(value, "detail value")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"audit detail value {value} is not a finite number")
    elif value is not None and not isinstance(value, bool | int | float):
        raise InputError(
            f"audit detail value of type {type(value).__name__} is not JSON; use str, number, "
            "bool, None, list or mapping"
        )
