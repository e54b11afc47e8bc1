"""What a caller sees of supersede links: tiers are a wall in derived facts too.

A document D is superseded *for a caller holding tiers T* when D's own front matter says
``status: superseded``, or when a document S with ``status: current`` and ``supersedes: D``
lies in one of T. Its ``superseded_by`` is the newest such S the caller may see (date
descending, undated last, then id), or None. A link from a document outside T is invisible:
D stays current for that caller in search (with or without ``include_superseded``), in
``seenbefore show`` and in ``GET /v1/postmortems/{id}``, exactly as if S did not exist.

The store keeps ``effective_status`` / ``superseded_by`` columns computed over every tier
(ingest reports and maintenance read them); no caller-facing path returns them unfiltered:
``Store.get`` recomputes them for the caller's tiers, and :class:`Supersession` does the same
for the in-memory search path (``KnowledgeBase.search``), once per store generation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from seenbefore.types import Chunk, SearchFilters, Status, StoredDocument


@dataclass(frozen=True)
class SupersedeRow:
    """One document as supersession needs it (every tier: a maintenance read)."""

    id: str
    status: str  # declared in the front matter
    access_tier: str
    supersedes: str | None
    date: str | None  # ISO date


def newest_first(rows: Sequence[SupersedeRow]) -> list[SupersedeRow]:
    """The order both backends pick ``superseded_by`` in: date descending, undated last, id."""
    by_id = sorted(rows, key=lambda r: r.id.encode("utf-8"))
    dated = sorted((r for r in by_id if r.date), key=lambda r: r.date or "", reverse=True)
    return dated + [r for r in by_id if not r.date]


def as_seen(doc: StoredDocument, superseded_by: str | None) -> StoredDocument:
    """``doc`` with the supersession a caller sees (``superseded_by``: the caller's newest
    visible superseder, or None)."""
    status: Status = (
        "superseded"
        if doc.postmortem.status == "superseded" or superseded_by is not None
        else "current"
    )
    if status == doc.effective_status and superseded_by == doc.superseded_by:
        return doc
    return replace(doc, effective_status=status, superseded_by=superseded_by)


@dataclass
class Supersession:
    """Every supersede link in the store, answering per caller (see the module doc)."""

    generation: int
    tier_of: dict[str, str]
    declared_superseded: frozenset[str]
    superseders: dict[str, list[SupersedeRow]]  # superseded id -> current superseders, newest first
    rows: dict[str, SupersedeRow] = field(default_factory=dict, repr=False)  # by id
    _for_tiers: dict[tuple[str, ...], frozenset[str]] = field(default_factory=dict, repr=False)
    _sorted: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, rows: Sequence[SupersedeRow], generation: int) -> Supersession:
        links: dict[str, list[SupersedeRow]] = {}
        for row in rows:
            if row.supersedes and row.status == "current":
                links.setdefault(row.supersedes, []).append(row)
        return cls(
            generation=generation,
            tier_of={r.id: r.access_tier for r in rows},
            declared_superseded=frozenset(r.id for r in rows if r.status == "superseded"),
            superseders={k: newest_first(v) for k, v in links.items()},
            rows={r.id: r for r in rows},
        )

    def updated(
        self, rows: Sequence[SupersedeRow], changed: Collection[str], generation: int
    ) -> Supersession:
        """This view with the documents ``changed`` replaced by ``rows`` (a changed id with no
        row was deleted): what :meth:`build` over every row now gives, reading only those."""
        now = {r.id: r for r in rows}
        changed = set(changed)
        every = dict(self.rows)
        tier_of = dict(self.tier_of)
        declared = set(self.declared_superseded)
        targets: set[str] = set()
        for doc_id in changed:
            for row in (self.rows.get(doc_id), now.get(doc_id)):
                if row is not None and row.supersedes:
                    targets.add(row.supersedes)
            every.pop(doc_id, None)
            tier_of.pop(doc_id, None)
            declared.discard(doc_id)
            row = now.get(doc_id)
            if row is not None:
                every[doc_id], tier_of[doc_id] = row, row.access_tier
                if row.status == "superseded":
                    declared.add(doc_id)
        superseders = dict(self.superseders)
        for target in targets:
            links = [r for r in superseders.pop(target, []) if r.id not in changed]
            links += [r for r in now.values() if r.supersedes == target and r.status == "current"]
            if links:
                superseders[target] = newest_first(links)
        return Supersession(generation, tier_of, frozenset(declared), superseders, every)

    def superseded_by(self, doc_id: str, tiers: Sequence[str]) -> str | None:
        for row in self.superseders.get(doc_id, ()):
            if row.access_tier in tiers:
                return row.id
        return None

    def superseded_for(self, tiers: Sequence[str]) -> frozenset[str]:
        """Documents visible to ``tiers`` that are superseded for a caller holding them."""
        key = tuple(sorted(set(tiers)))
        found = self._for_tiers.get(key)
        if found is None:
            held = set(key)
            candidates = self.declared_superseded | self.superseders.keys()
            found = frozenset(
                d
                for d in candidates
                if self.tier_of.get(d) in held
                and (d in self.declared_superseded or self.superseded_by(d, key) is not None)
            )
            if len(self._for_tiers) > 64:
                self._for_tiers.clear()
                self._sorted.clear()
            self._for_tiers[key] = found
        return found

    def search_filters(self, filters: SearchFilters) -> SearchFilters:
        """Filters that drop exactly what is superseded *for the caller*: the store's own
        current flag counts links from every tier, so it is not used; the caller's superseded
        documents are excluded by id instead."""
        if filters.include_superseded:
            return filters
        key = tuple(sorted(set(filters.tiers)))
        ordered = self._sorted.get(key)
        if ordered is None:
            ordered = self._sorted[key] = tuple(sorted(self.superseded_for(key)))
        excluded = (
            tuple(sorted(set(filters.exclude_ids).union(ordered)))
            if filters.exclude_ids
            else ordered  # the same tuple each time: the index's filter caches stay warm
        )
        return replace(filters, include_superseded=True, exclude_ids=excluded)

    def document(self, doc: StoredDocument, tiers: Sequence[str]) -> StoredDocument:
        return as_seen(doc, self.superseded_by(doc.postmortem.id, tiers))

    def reads(self, store: SearchReads, tiers: Sequence[str]) -> CallerReads:
        return CallerReads(store, self, tuple(tiers))

    def masks(self, index: Any) -> CallerMasks:
        return CallerMasks(index, self)


class CallerMasks:
    """The corpus index's document masks with supersession as the filters' tiers see it (for
    ``seenbefore.limits.empty_reason``: "every postmortem you can see is superseded" must not
    count a superseder the caller cannot see)."""

    def __init__(self, index: Any, view: Supersession) -> None:
        self._index = index
        self._view = view

    def doc_mask(self, filters: SearchFilters) -> npt.NDArray[np.bool_]:
        mask: npt.NDArray[np.bool_] = self._index.doc_mask(self._view.search_filters(filters))
        return mask


class SearchReads(Protocol):
    """What a search reads of the store after ranking: the top candidates' metadata and their
    chunks (the retriever's whole port; the store and :class:`CallerReads` both provide it)."""

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]: ...

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]: ...


class CallerReads:
    """The store's search reads with ``documents_meta`` answering as the caller sees it. Handed to
    the retriever, so candidates carry the caller's status and ``superseded_by`` and are ranked
    current-first by *that* status."""

    def __init__(self, store: SearchReads, view: Supersession, tiers: tuple[str, ...]) -> None:
        self._store = store
        self._view = view
        self._tiers = tiers

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        docs: Mapping[str, StoredDocument] = self._store.documents_meta(doc_ids)
        return {k: self._view.document(v, self._tiers) for k, v in docs.items()}

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        return self._store.chunks_by_id(chunk_ids)
