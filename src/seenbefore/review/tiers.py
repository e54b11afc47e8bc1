"""Which access tier is more restrictive.

Elsewhere tiers are a set: a caller sees a document when it holds the document's tier, and no
tier contains another. An approved draft becomes ONE postmortem with ONE tier, so the review
workflow needs an order. It is, from least to most restrictive:

1. ``DEFAULT_TIER`` (``general``): always the least restrictive;
2. the configured tiers (``SEENBEFORE_TIERS``), in the order configured (later = more
   restrictive), e.g. ``SEENBEFORE_TIERS=general,restricted,security``;
3. any tier not configured: more restrictive than every configured one (an unknown tier is never
   treated as less sensitive), ordered among themselves by name so the choice is deterministic.

The approved postmortem takes the most restrictive tier of its evidence, never a lower one. With
tiers that are truly unordered (a reader of ``restricted`` who may not read ``security``), one tier
cannot express "both": the order above picks one, and a reader who holds only the other tier
will not see the postmortem. Configure the order to say which way that should go.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from seenbefore.types import DEFAULT_TIER


def restrictiveness(tier: str, configured: Sequence[str]) -> tuple[int, int, str]:
    """A sort key: larger means more restrictive."""
    if tier == DEFAULT_TIER:
        return (0, 0, "")
    if tier in configured:
        return (1, list(configured).index(tier), "")
    return (2, 0, tier)


def most_restrictive(tiers: Iterable[str], configured: Sequence[str]) -> str:
    """The most restrictive of ``tiers`` (``DEFAULT_TIER`` when there are none)."""
    found = [t for t in tiers if t]
    if not found:
        return DEFAULT_TIER
    return max(found, key=lambda t: restrictiveness(t, configured))
