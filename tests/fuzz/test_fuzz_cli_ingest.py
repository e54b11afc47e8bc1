"""Fuzz `seenbefore ingest` with hostile postmortem files: whatever the bytes, ingest never raises,
a file is stored or quarantined with a reason, and a known-good document already in the knowledge
base is byte-identical afterwards (text, hash, source and its file on disk).

1,000 generated files go through the ingest function the CLI calls; a further sample goes
through the CLI itself (typer's CliRunner) to check the exit code and the message."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.errors import MappingError
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.knowledge.jsonl import FieldMapping
from seenbefore.storage.sqlite.store import SQLiteStore
from tests.conftest import postmortem_text
from tests.depth import examples
from tests.fuzz.strategies import FUZZ, atoms, documents, json_values, mostly, yamlish

GOOD_ID = "INC-GOOD-001"
VALID = postmortem_text(
    GOOD_ID,
    services="[checkout-api]",
    tags="[pool, postgres]",
    signals="[p99_latency]",
    severity="SEV2",
).encode()
FIELDS = ["id", "title", "date", "services", "tags", "signals", "status", "supersedes"]
keys = st.one_of(
    st.sampled_from([*FIELDS, "access_tier", "extra", "2024-01-01", "~", "1", ".nan", "? [a]"]),
    yamlish,
)
values = st.one_of(yamlish, st.sampled_from([".nan", "-.inf", "{2024-01-01: x, k: .inf}"]))
front_matter = st.lists(st.tuples(keys, values), max_size=8).map(
    lambda pairs: "\n".join(f"{k}: {v}" for k, v in pairs)
)
shaped = st.tuples(
    front_matter,
    st.sampled_from(["\n---\n", "\n", "\n--- \r\n", "\n...\n"]),
    st.lists(st.one_of(atoms, st.sampled_from(["\n## Summary\n", "\n# T\n", "\n```\n"]))),
).map(lambda t: ("---\n" + t[0] + t[1] + "".join(t[2])).encode("utf-8", "surrogatepass"))
files = documents(VALID, shaped)


@dataclass
class KB:
    store: SQLiteStore
    ingestor: Ingestor
    folder: Path
    good: Path
    names: Iterator[int]

    def check_good_untouched(self) -> None:
        doc = self.store.get(GOOD_ID, ["general"])
        assert doc.postmortem.source == str(self.good.resolve())
        assert doc.postmortem.content_hash == GOOD_HASH
        assert doc.postmortem.body == GOOD_BODY
        assert self.good.read_bytes() == VALID


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KB]:
    root = tmp_path_factory.mktemp("fuzz-ingest")
    folder = root / "files"
    folder.mkdir()
    good = root / "good.md"
    good.write_bytes(VALID)
    with SQLiteStore(root / "home" / "kb.sqlite") as store:
        ingestor = Ingestor(store)
        assert ingestor.ingest([good]).added == [GOOD_ID]
        global GOOD_HASH, GOOD_BODY
        doc = store.get(GOOD_ID, ["general"])
        GOOD_HASH, GOOD_BODY = doc.postmortem.content_hash, doc.postmortem.body
        yield KB(store, ingestor, folder, good, itertools.count())


GOOD_HASH = ""
GOOD_BODY = ""


@FUZZ
@given(data=files)
def test_ingest_never_raises_and_keeps_the_good_document(kb: KB, data: bytes) -> None:
    path = kb.folder / f"f{next(kb.names)}.md"
    path.write_bytes(data)
    report = kb.ingestor.ingest([path])
    stored = report.added + report.updated + report.unchanged
    assert len(stored) + len(report.quarantined) == 1, report
    for source, reason in report.quarantined:
        assert source == str(path.resolve()) and reason.strip()
        assert "Traceback" not in reason
    assert GOOD_ID not in report.updated
    for doc_id in stored:  # what was stored can be served: strict JSON, as the API writes it
        doc = kb.store.documents_meta([doc_id])[doc_id]
        json.dumps(doc.postmortem.extra, allow_nan=False)
    kb.check_good_untouched()


GRAPHRCA = FieldMapping.parse("graphrca")
record_fields = ["id", "title", "company", "subcategory", "date", "severity", "category"]
records = st.dictionaries(
    st.sampled_from([*record_fields, "postmortem", "root_cause", "url"]),
    mostly(st.text(max_size=12), json_values),
).map(lambda r: json.dumps(r, allow_nan=True))
jsonl_files = st.lists(
    st.one_of(records, yamlish, st.sampled_from(["", "[" * 5000, "{}", "null"])), max_size=4
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))


@settings(FUZZ, max_examples=examples(500))
@given(data=st.one_of(jsonl_files, st.binary(max_size=300)))
def test_jsonl_ingest_never_raises_and_keeps_the_good_document(kb: KB, data: bytes) -> None:
    path = kb.folder / f"j{next(kb.names)}.jsonl"
    path.write_bytes(data)
    ingestor = Ingestor(kb.store, mapping=GRAPHRCA)
    try:
        report = ingestor.ingest([path])
    except MappingError as exc:  # the first record lacks a mapped field: the CLI says which
        assert str(path) in str(exc) or "template" in str(exc)
    else:
        for source, reason in report.quarantined:
            assert source.startswith(f"{path.resolve()}#L") and reason.strip()
        assert GOOD_ID not in report.updated
    kb.check_good_untouched()


runner = CliRunner()


@settings(FUZZ, max_examples=examples(50))
@given(data=files)
def test_ingest_cli_exits_cleanly(
    kb: KB, data: bytes, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(kb.store.path.parent))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.delenv("SEENBEFORE_TIERS", raising=False)
    path = kb.folder / f"c{next(kb.names)}.md"
    path.write_bytes(data)
    result = runner.invoke(app, ["ingest", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert result.exit_code == 1
        assert "quarantined" in result.output and "nothing ingested" in result.stderr
    kb.check_good_untouched()
