"""When approving a draft needs a person's account of the incident, and what that account is.

A draft may be approved as drafted only when it names a precedent nobody has dismissed: the
reviewer's approval then says "this is a recurrence of X", which is a fact a person stated.
Two kinds of draft cannot be approved as drafted:

- **no precedent** (or a draft citing none): its text is the search's own account ("No postmortem
  among the 59 visible ... the nearest postmortems, listed for reference and not scored as
  matching ..."); stored as a root cause it would rank for other incidents on the strength of
  those words, and its neighbours' ids in a body read as links to them (calibration/labels.py);
- **dismissed, then kept**: the top precedent is one a reviewer dismissed in an earlier round
  (not enough evidence, right precedent but wrong cause): the same account was already judged
  wrong once.

For those, ``root_cause`` (what it was), ``resolution`` (what fixed it) and ``type`` (the failure
mode) must be written by the reviewer; :func:`check` refuses an approval without them with
:class:`~seenbefore.errors.AccountRequired`, whose message names each missing field. The same rule
holds in the API (a 422 whose body lists ``missing``), the web queue (a short form) and the CLI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from seenbefore.errors import AccountRequired
from seenbefore.knowledge.failure_taxonomy import taxonomy
from seenbefore.review.models import DraftEdits, Review

ACCOUNT_FIELDS: tuple[str, ...] = ("root_cause", "resolution", "type")
WHAT = {
    "root_cause": "root_cause (what it was)",
    "resolution": "resolution (what fixed it)",
    "type": "type (the failure mode, e.g. connection-pool-exhaustion; a new one is allowed)",
}
MIN_WORDS = 3  # "dunno" or "n/a" is not an account of an incident
TYPE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def dismissed_tops(review: Review) -> dict[str, int]:
    """The top precedent of every round a reviewer dismissed: doc id -> that round."""
    tops: dict[int, str] = {}
    for event in review.history:
        cited = event.detail.get("cited") if event.action == "drafted" else None
        if cited:
            tops[event.round] = str(cited[0])
    return {
        tops[e.round]: e.round
        for e in review.history
        if e.action == "dismissed" and e.round in tops
    }


def reason(review: Review) -> str | None:
    """Why ``review``'s current draft needs a person's account; None when it may stand."""
    draft = review.draft
    cited = [str(d) for d in draft.get("cited_incidents") or []]
    if draft.get("novel") or draft.get("verdict") == "no precedent":
        return "its draft says no precedent, so nothing in it is an account of this incident"
    if not cited:
        return "its draft cites no precedent, so nothing in it is an account of this incident"
    dismissed = dismissed_tops(review)
    if cited[0] in dismissed:
        return (
            f"its precedent {cited[0]} was dismissed in round {dismissed[cited[0]]}, so the "
            "drafted account was already judged wrong"
        )
    return None


def _words(text: str | None) -> list[str]:
    return re.findall(r"\w+", text or "")


def _flat(text: str | None) -> str:
    return " ".join((text or "").split()).lower()


def check(
    review: Review, edits: DraftEdits | None, *, names: Mapping[str, str] = WHAT
) -> DraftEdits | None:
    """``edits`` with ``type`` as the slug it is stored as, after refusing (AccountRequired) an
    approval whose draft needs an account that ``edits`` does not give in full. A field copied
    from the draft's own summary or hypothesis does not count as written. ``names``: how the
    message names each field (the CLI names its options)."""
    why = reason(review)
    if why is None:
        return edits
    given = edits or DraftEdits()
    drafted = {_flat(review.draft.get("summary")), _flat(review.draft.get("hypothesis"))} - {""}
    missing: list[str] = []
    problems: list[str] = []
    for name in ("root_cause", "resolution"):
        text = getattr(given, name)
        if not text or not text.strip():
            missing.append(name)
        elif any(d in _flat(text) for d in drafted):
            missing.append(name)
            problems.append(f"{name} repeats the draft's wording")
        elif len(_words(text)) < MIN_WORDS:
            missing.append(name)
            problems.append(f"{name} is {text.strip()!r}, under {MIN_WORDS} words")
    slug = taxonomy().canonical(given.type or "")
    if not slug:
        missing.append("type")
    elif not TYPE_PATTERN.match(slug):
        missing.append("type")
        problems.append(f"type {given.type!r} is not a slug of at most 64 letters, digits and '-'")
    if missing:
        raise AccountRequired(
            f"review {review.id} cannot be approved as drafted: {why}. Write "
            + ", ".join(names[m] for m in missing)
            + (f" ({'; '.join(problems)})" if problems else "")
            + " and approve again; only what a person writes is stored",
            tuple(missing),
            why,
        )
    return given.model_copy(update={"type": slug})
