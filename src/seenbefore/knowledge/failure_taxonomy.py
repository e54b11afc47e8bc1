"""The shipped taxonomy of failure modes (failure_modes.yaml): slugs with a one-line description
and characteristic words, the aliases authors write in ``type:``, and the named groups of slugs
that coarser labels (graphrca's categories, danluu's README sections) map to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

TAXONOMY_FILE = "failure_modes.yaml"
# ``type`` values (as slugs) that say no type was given: a collection's catch-all section
# (danluu's README files 119 of its 190 entries under "Uncategorized") or a form's default. Two
# postmortems filed under one of them share no failure mode, so such a type counts as none: the
# validator keeps it only as ``type_as_written`` and the mode is inferred from the words.
NO_TYPE = frozenset(
    {
        "uncategorized",
        "uncategorised",
        "unclassified",
        "unknown",
        "other",
        "others",
        "misc",
        "miscellaneous",
        "none",
        "n-a",
        "na",
        "tbd",
        "todo",
        "untyped",
    }
)
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Mode:
    """One failure mode: its slug, what it means in a line, and words that characterise it."""

    slug: str
    description: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class Taxonomy:
    modes: tuple[Mode, ...]
    aliases: Mapping[str, str]
    groups: Mapping[str, tuple[str, ...]]
    graphrca: Mapping[str, tuple[str, ...]]  # label -> allowed slugs
    danluu: Mapping[str, tuple[str, ...]]

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(m.slug for m in self.modes)

    def mode(self, slug: str) -> Mode | None:
        return next((m for m in self.modes if m.slug == slug), None)

    def canonical(self, text: str) -> str:
        """An author's ``type`` as a slug: lowercased and hyphenated as the validator does, then
        mapped through the aliases. A slug the taxonomy does not know is returned as written:
        the author's word stands."""
        slug = normalise(text)
        return self.aliases.get(slug, slug)


def normalise(text: str) -> str:
    """``type`` text as the validator stores it: lowercase, runs of other characters as '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")


def _problem(what: str) -> ValueError:
    return ValueError(f"{TAXONOMY_FILE}: {what}")


def _allowed(
    name: str, value: Any, slugs: set[str], groups: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """A label's mapping as the slugs it allows: a slug, a group's name, or a list of slugs."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise _problem(f"label {name!r} maps to {value!r}; expected a slug, a group or a list")
    out: list[str] = []
    for item in items:
        if item in groups:
            out.extend(groups[item])
        elif item in slugs:
            out.append(item)
        else:
            raise _problem(
                f"label {name!r} maps to {item!r}, which is neither a slug nor a group; add it "
                "under modes or groups, or fix the spelling"
            )
    return tuple(dict.fromkeys(out))


def parse_taxonomy(data: Any) -> Taxonomy:
    """Check and build a Taxonomy from the YAML's mapping (ValueError naming what is wrong)."""
    if not isinstance(data, dict) or not isinstance(data.get("modes"), dict):
        raise _problem("expected a mapping with a 'modes' mapping of slug -> description, words")
    modes: list[Mode] = []
    for slug, body in data["modes"].items():
        if not isinstance(slug, str) or not _SLUG.match(slug):
            raise _problem(f"mode {slug!r} is not a lowercase hyphenated slug")
        if not isinstance(body, dict) or not body.get("description") or not body.get("words"):
            raise _problem(f"mode {slug!r} needs a description and a non-empty list of words")
        modes.append(Mode(slug, str(body["description"]), tuple(str(w) for w in body["words"])))
    slugs = {m.slug for m in modes}
    aliases: dict[str, str] = {}
    for alias, slug in (data.get("aliases") or {}).items():
        if slug not in slugs:
            raise _problem(f"alias {alias!r} maps to {slug!r}, which is not a mode")
        if alias in slugs:
            raise _problem(f"alias {alias!r} is also a mode's slug; remove the alias")
        aliases[str(alias)] = str(slug)
    groups: dict[str, tuple[str, ...]] = {}
    for name, members in (data.get("groups") or {}).items():
        if name in slugs:
            raise _problem(f"group {name!r} has a mode's name; rename the group")
        groups[str(name)] = _allowed(str(name), members, slugs, {})
    return Taxonomy(
        modes=tuple(modes),
        aliases=aliases,
        groups=groups,
        graphrca={
            str(k): _allowed(str(k), v, slugs, groups)
            for k, v in (data.get("graphrca") or {}).items()
        },
        danluu={
            str(k): _allowed(str(k), v, slugs, groups)
            for k, v in (data.get("danluu") or {}).items()
        },
    )


@lru_cache(maxsize=1)
def taxonomy() -> Taxonomy:
    """The taxonomy shipped in the package."""
    text = resources.files("seenbefore.knowledge").joinpath(TAXONOMY_FILE).read_text("utf-8")
    # libyaml's loader when PyYAML has it: the pure-Python one took a tenth of a second, on
    # every search that reads a failure mode
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return parse_taxonomy(yaml.load(text, Loader=loader))
