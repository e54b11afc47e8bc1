"""Reading one ``[notify.<name>]`` table: each notifier factory checks its own keys with these.

Messages name the key that is wrong but never repeat a secret's value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from seenbefore.errors import ConfigError


def check_table(
    value: object, section: str, allowed: Iterable[str] | None = None
) -> dict[str, Any]:
    """``value`` as a dict when it is a table with only ``allowed`` keys (None: any keys)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"notify.{section} is a {type(value).__name__}; expected a table")
    if allowed is not None:
        allowed = list(allowed)
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ConfigError(f"notify.{section} has unknown keys {unknown}; allowed: {allowed}")
    return dict(value)


def string(
    table: Mapping[str, Any],
    section: str,
    key: str,
    default: str | None = None,
    *,
    secret: bool = False,
) -> str:
    """A non-empty string option; a secret's value is never shown in the error."""
    value = table.get(key, default)
    if not isinstance(value, str) or not value:
        shown = "a secret, not shown" if secret else repr(value)
        raise ConfigError(f"notify.{section}.{key} is missing or not a string ({shown})")
    return value


def number(table: Mapping[str, Any], section: str, key: str, default: float) -> float:
    """A number option (int or float, not a bool)."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"notify.{section}.{key} is {value!r}; expected a number")
    return float(value)


def strings(
    table: Mapping[str, Any], section: str, key: str, default: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """A list-of-strings option."""
    value = table.get(key, list(default))
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ConfigError(f"notify.{section}.{key} is {value!r}; expected a list of strings")
    if not all(isinstance(v, str) and v for v in value):
        raise ConfigError(
            f"notify.{section}.{key} is {value!r}; expected a list of non-empty strings"
        )
    return tuple(value)
