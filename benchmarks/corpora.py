"""Benchmark corpora built from real text: SciFact (BEIR) abstracts as postmortems.

Each SciFact document becomes a postmortem with front matter (id, title, a fixed date, a
service and an access tier) and one ``## Summary`` section. The corpus can be replicated any
number of times; every copy gets its own ids (``sf-<copy>-<_id>``), so its own tiers and
services. Tiers come from a hash of the id: about a third ``general``, the rest ``restricted``
or ``security``, so filtering by ``("general",)`` keeps about a third of the corpus visible.

The data lives outside the repository (``../shared/data/beir/scifact``); nothing is copied in.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.types import Postmortem

TIERS = ("general", "restricted", "security")
SERVICES = ("checkout-api", "payments-api", "orders-db", "auth-service", "search-service")
DATE = "2020-01-01"


@lru_cache(maxsize=4)
def load_corpus(scifact_dir: Path) -> tuple[tuple[str, str, str], ...]:
    """(_id, title, text) for every SciFact document with non-empty text, in file order."""
    docs = []
    with (Path(scifact_dir) / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row.get("text") or "").strip():
                docs.append((str(row["_id"]), str(row.get("title") or ""), str(row["text"])))
    return tuple(docs)


def _bucket(doc_id: str, salt: str, n: int) -> int:
    digest = hashlib.blake2b(f"{salt}:{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % n


def tier_for(doc_id: str) -> str:
    """Deterministic access tier: ``general`` for about 1/3 of ids."""
    return TIERS[_bucket(doc_id, "tier", len(TIERS))]


def service_for(doc_id: str) -> str:
    return SERVICES[_bucket(doc_id, "service", len(SERVICES))]


def markdown(doc_id: str, title: str, text: str) -> str:
    """A postmortem Markdown file for one SciFact document (title JSON-quoted: valid YAML)."""
    return (
        f"---\nid: {doc_id}\ntitle: {json.dumps(title or doc_id)}\ndate: {DATE}\n"
        f"services: [{service_for(doc_id)}]\naccess_tier: {tier_for(doc_id)}\n---\n"
        f"## Summary\n{text.strip()}\n"
    )


def scifact_markdown(
    scifact_dir: Path, copies: int, *, limit: int | None = None
) -> Iterator[tuple[str, str]]:
    """(source, Markdown text) for ``copies`` copies of the corpus, at most ``limit`` documents."""
    docs = load_corpus(scifact_dir)
    count = 0
    for copy in range(copies):
        for sid, title, text in docs:
            if limit is not None and count >= limit:
                return
            doc_id = f"sf-{copy}-{sid}"
            yield f"scifact/{doc_id}.md", markdown(doc_id, title, text)
            count += 1


def scifact_postmortems(
    scifact_dir: Path, copies: int, *, limit: int | None = None
) -> Iterator[Postmortem]:
    """Validated postmortems, through the same parser the ingestor uses for Markdown files."""
    for source, text in scifact_markdown(scifact_dir, copies, limit=limit):
        yield postmortem_from_markdown(source, text)


def chunk_counts(scifact_dir: Path) -> list[int]:
    """Chunks per document of one copy, with the real chunker (metadata chunk + sections)."""
    return [len(chunk_postmortem(pm)) for pm in scifact_postmortems(scifact_dir, 1)]


def plan(counts: list[int], target_chunks: int) -> tuple[int, int]:
    """(copies, documents) whose chunk total first reaches ``target_chunks``."""
    per_copy = sum(counts)
    full, rest = divmod(target_chunks, per_copy)
    docs, total = 0, 0
    while total < rest:
        total += counts[docs]
        docs += 1
    return full + (1 if docs else 0), full * len(counts) + docs


def scifact_queries(scifact_dir: Path, split: str = "test") -> list[str]:
    """Texts of the queries judged in ``qrels/<split>.tsv``, in file order."""
    with (Path(scifact_dir) / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        judged = {row["query-id"] for row in csv.DictReader(fh, delimiter="\t")}
    queries = []
    with (Path(scifact_dir) / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row["_id"]) in judged:
                queries.append(str(row["text"]))
    return queries


def alert_length(queries: list[str], words: int = 30) -> list[str]:
    """One query per input: it and the following queries (cyclically), cut to ``words`` words."""
    out = []
    for i in range(len(queries)):
        acc: list[str] = []
        j = i
        while len(acc) < words and j < i + len(queries):
            acc.extend(queries[j % len(queries)].split())
            j += 1
        out.append(" ".join(acc[:words]))
    return out
