"""Ingestion: normalise -> validate -> chunk -> store, one transaction per document.

Nothing is lost: a document that fails validation goes to quarantine with its reason and never
replaces or deletes the previous good version. Re-ingesting an unchanged file does nothing.
Ids are unique regardless of case: ``inc-1`` from another source beside a stored ``INC-1`` is a
clash like ``INC-1`` from another source (quarantined, naming both; ``--replace`` takes it over).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seenbefore.errors import InputError, PostmortemInvalid
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.jsonl import FieldMapping, read_jsonl
from seenbefore.knowledge.validate import content_hash, decode, postmortem_from_markdown
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.ports import DocumentWrites
from seenbefore.textguard import scan
from seenbefore.types import Chunk, Postmortem

MARKDOWN_SUFFIXES = {".md", ".markdown"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}

Progress = Callable[[int, int, str], None]
Vectorize = Callable[[Postmortem, list[Chunk]], EmbeddedVectors | None]


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    quarantined: list[tuple[str, str]] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    flagged: list[tuple[str, list[str]]] = field(default_factory=list)  # (id, injection kinds)
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (id, the source it replaced)
    chunks_written: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "superseded": len(self.superseded),
            "quarantined": len(self.quarantined),
            "pruned": len(self.pruned),
        }


@dataclass(frozen=True)
class ChunkingPolicy:
    max_words: int = 160
    overlap_words: int = 30


def discover(paths: Sequence[Path]) -> list[Path]:
    """Markdown and JSONL files under ``paths`` (files or directories), sorted."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise InputError(f"path {path} does not exist; give a postmortem file or directory")
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and p.suffix.lower() in MARKDOWN_SUFFIXES | JSONL_SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif not path.is_file():
            raise InputError(
                f"{path} is not a regular file (a device, pipe or socket?); give a postmortem "
                "file or directory"
            )
        else:
            found.append(path)
    return found


def same_source(stored: str, incoming: str) -> bool:
    """One source: the same file (a JSONL record may move to another line of its file)."""
    return stored.split("#L", 1)[0] == incoming.split("#L", 1)[0]


class Ingestor:
    """Ingests files into a store; keeps per-run state for duplicate-id detection."""

    def __init__(
        self,
        store: DocumentWrites,
        *,
        policy: ChunkingPolicy | None = None,
        max_file_bytes: int = 1_000_000,
        mapping: FieldMapping | None = None,
        progress: Progress | None = None,
        vectorize: Vectorize | None = None,
    ) -> None:
        self.store = store
        self.policy = policy or ChunkingPolicy()
        self.max_file_bytes = max_file_bytes
        self.mapping = mapping
        self.progress = progress
        self.vectorize = vectorize
        self.replace = False
        self._refused: set[str] = set()  # ids whose claim by another source was refused
        self._spellings: dict[str, list[str]] = {}  # lower-cased id -> stored ids (its spellings)
        self._folded: dict[str, Postmortem] = {}  # lower-cased id -> its document in this run

    def ingest(
        self, paths: Sequence[Path], *, prune: bool = False, replace: bool = False
    ) -> IngestReport:
        """``replace``: a file may take over an id another source holds (see _ingest_one)."""
        self.replace = replace
        self._refused = set()
        files = discover(paths)
        self._check_mapping(files)
        report = IngestReport()
        known = self._known()
        superseded_before = set(self.store.superseded_ids())
        seen: dict[str, Postmortem] = {}
        seen_sources: set[str] = set()
        for index, path in enumerate(files, start=1):
            for item in self._items(path):
                seen_sources.add(item.source)
                self._ingest_one(item, known, seen, report)
            if self.progress:
                self.progress(index, len(files), str(path))
        if prune:
            report.pruned = self._prune(paths, seen, seen_sources, report)
        report.superseded = sorted(set(self.store.superseded_ids()) - superseded_before)
        return report

    def retry(self, source: str, *, replace: bool = False) -> IngestReport:
        """Re-validate one quarantined source after a fix (a file, or one line of a JSONL file)."""
        self.replace = replace
        report = IngestReport()
        file_part, _, line = source.partition("#L")
        path = Path(file_part)
        if not path.exists():
            raise InputError(
                f"quarantined source {file_part} no longer exists; fix and ingest it again, "
                "or drop the entry"
            )
        known = self._known()
        seen: dict[str, Postmortem] = {}
        for item in self._items(path):
            if not line or item.source == source:
                self._ingest_one(item, known, seen, report)
        return report

    def _known(self) -> dict[str, tuple[str, str]]:
        """The store's fingerprints, with the spellings of each id (for this run's checks)."""
        known = self.store.fingerprints()
        self._spellings, self._folded = {}, {}
        for doc_id in known:
            self._spellings.setdefault(doc_id.lower(), []).append(doc_id)
        return known

    def _check_mapping(self, files: Sequence[Path]) -> None:
        """Refuse a run holding JSONL without a field mapping before any file is read (the
        error came after the files before it, whose progress said they were ingested)."""
        if self.mapping is not None:
            return
        jsonl = [str(f) for f in files if f.suffix.lower() in JSONL_SUFFIXES]
        if jsonl:
            more = f" (and {len(jsonl) - 1} more JSONL files)" if len(jsonl) > 1 else ""
            raise InputError(
                f"{jsonl[0]}{more} is JSONL: give a field mapping with --map target=field,... "
                "or a preset (--map graphrca, --map danluu); nothing was ingested"
            )

    def _items(self, path: Path) -> Iterator[Postmortem | PostmortemInvalid]:
        source = str(path.resolve())
        if path.suffix.lower() in JSONL_SUFFIXES:
            self._check_mapping([path])
            assert self.mapping is not None  # _check_mapping refused the file without one
            yield from read_jsonl(path.resolve(), self.mapping, max_bytes=self.max_file_bytes)
            return
        try:
            with path.open("rb") as fh:  # one byte past the limit is enough to refuse it
                raw = fh.read(self.max_file_bytes + 1)
            size = path.stat().st_size if len(raw) > self.max_file_bytes else None
            yield postmortem_from_markdown(
                source, decode(source, raw, max_bytes=self.max_file_bytes, size=size)
            )
        except PostmortemInvalid as exc:
            yield exc
        except OSError as exc:
            yield PostmortemInvalid(source, f"cannot read file ({exc.strerror})")

    def _ingest_one(
        self,
        item: Postmortem | PostmortemInvalid,
        known: dict[str, tuple[str, str]],
        seen: dict[str, Postmortem],
        report: IngestReport,
    ) -> None:
        if isinstance(item, PostmortemInvalid):
            self._quarantine(item.source, item.reason, None, report)
            return
        pm = item
        first = seen.get(pm.id)
        if first is not None:
            if first.content_hash != pm.content_hash:
                self._quarantine(
                    pm.source,
                    f"duplicate id '{pm.id}' with different content: {first.source} defines it "
                    "too in this run; give one of them a new id",
                    pm.id,
                    report,
                    pm.content_hash,
                )
            return
        twin = self._folded.get(pm.id.lower())
        if twin is not None:
            self._quarantine(
                pm.source,
                f"id '{pm.id}' differs only in case from '{twin.id}', which {twin.source} "
                "defines in this run; ids are unique regardless of case: give one of them a new id",
                pm.id,
                report,
                pm.content_hash,
            )
            return
        previous = known.get(pm.id)
        if previous is not None and not same_source(previous[1], pm.source):
            if not self.replace:
                self._quarantine(
                    pm.source,
                    f"id '{pm.id}' already belongs to {previous[1] or 'a document'}; this source "
                    f"({pm.source}) declares it too. Give this one a new id, or ingest it with "
                    "--replace to replace the stored document (a moved file needs --replace once)",
                    pm.id,
                    report,
                    pm.content_hash,
                )
                self._refused.add(pm.id)  # its stored document is kept, even by --prune
                return
            report.replaced.append((pm.id, previous[1]))
        variants = [v for v in self._spellings.get(pm.id.lower(), []) if v != pm.id]
        if not self._may_take(pm, variants, known, report):
            return
        seen[pm.id] = pm
        self._folded[pm.id.lower()] = pm
        kinds: list[str] = sorted({f.kind for f in scan(pm.body)})
        if kinds:  # kept (it may be a genuine write-up of an attack) but flagged, every run
            report.flagged.append((pm.id, kinds))
        if (
            previous is not None
            and previous[0] == pm.content_hash
            and previous[1] == pm.source
            and not variants  # a stored spelling of its own to take over: an update
        ):
            report.unchanged.append(pm.id)
            self.store.clear_quarantine(pm.source)
            return
        chunks = chunk_postmortem(
            pm, max_words=self.policy.max_words, overlap_words=self.policy.overlap_words
        )
        vectors = self.vectorize(pm, chunks) if self.vectorize else None
        outcome = self.store.upsert(pm, chunks, vectors, replaces=variants)
        getattr(report, outcome).append(pm.id)
        if outcome != "unchanged":
            report.chunks_written += len(chunks)
        self.store.clear_quarantine(pm.source)

    def _may_take(
        self,
        pm: Postmortem,
        variants: list[str],
        known: dict[str, tuple[str, str]],
        report: IngestReport,
    ) -> bool:
        """Whether ``pm`` may replace the stored ``variants`` (ids that differ from its own only
        in case): those of its own source it re-spells; another source's only with --replace.
        Otherwise it is quarantined, naming both sources, and the stored one is kept."""
        foreign = [v for v in variants if not same_source(known[v][1], pm.source)]
        if foreign and not self.replace:
            held = foreign[0]
            self._quarantine(
                pm.source,
                f"id '{pm.id}' differs only in case from '{held}', which belongs to "
                f"{known[held][1] or 'a document'}; this source ({pm.source}) declares it. Ids "
                "are unique regardless of case: give this one a new id, or ingest it with "
                "--replace to replace the stored document",
                pm.id,
                report,
                pm.content_hash,
            )
            self._refused.update(foreign)  # the stored documents are kept, even by --prune
            return False
        report.replaced += [(pm.id, known[v][1]) for v in foreign]
        return True

    def _quarantine(
        self,
        source: str,
        reason: str,
        doc_id: str | None,
        report: IngestReport,
        digest: str | None = None,
    ) -> None:
        self.store.quarantine(source, reason, doc_id, digest or content_hash(source + reason))
        report.quarantined.append((source, reason))

    def _prune(
        self,
        roots: Sequence[Path],
        seen: dict[str, Postmortem],
        seen_sources: set[str],
        report: IngestReport,
    ) -> list[str]:
        """Delete documents whose source lies under ``roots`` and was not seen in this run."""
        resolved = [r.resolve() for r in roots]
        pruned = []
        for doc_id, (_, source) in self.store.fingerprints().items():
            if doc_id in seen or doc_id in self._refused or source in seen_sources or not source:
                continue
            file_part = Path(source.split("#L", 1)[0])
            if any(file_part == r or r in file_part.parents for r in resolved):
                self.store.delete(doc_id)
                pruned.append(doc_id)
        return sorted(pruned)
