from pathlib import Path

import pytest

from seenbefore.errors import MappingError, PostmortemInvalid
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.knowledge.jsonl import FieldMapping, read_jsonl, record_to_postmortem
from seenbefore.storage.sqlite.store import SQLiteStore


def test_mapping_parses_fields_templates_and_literals() -> None:
    mapping = FieldMapping.parse(
        "id=key,title={team}: {what}, with commas,access_tier='restricted'"
    )
    pm = record_to_postmortem(
        "x#L1",
        {"key": "T-1", "team": "db", "what": "pool"} | {"notes": "n"},
        mapping.merged(
            FieldMapping.parse("id=key,title={team}: {what}, with commas,summary=notes")
        ),
    )
    assert pm.id == "T-1" and pm.title == "db: pool, with commas"
    assert [s.key for s in pm.sections] == ["summary"]


def test_bad_mappings_say_what_to_do() -> None:
    with pytest.raises(MappingError, match="must map both 'id' and 'title'"):
        FieldMapping.parse("id=key")
    with pytest.raises(MappingError, match="no '='"):
        FieldMapping.parse("title")
    with pytest.raises(MappingError, match="available"):
        record_to_postmortem("x", {"a": 1}, FieldMapping.parse("id=a,title={missing}"))


def test_bad_lines_become_quarantine_reasons(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"k": "A", "t": "T", "s": "body"}\nnot json\n[1]\n{"k": "B", "t": "", "s": "b"}\n'
    )
    items = list(read_jsonl(path, FieldMapping.parse("id=k,title=t,summary=s")))
    assert items[0].id == "A"  # type: ignore[union-attr]
    errors = [i for i in items if isinstance(i, PostmortemInvalid)]
    assert [e.source.rsplit("#", 1)[1] for e in errors] == ["L2", "L3", "L4"]
    assert "not valid UTF-8 JSON" in errors[0].reason and "expected an object" in errors[1].reason


def test_hostile_lines_and_templates(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    big = '{"k": "C", "t": "T", "s": "' + "x" * 300 + '"}'
    path.write_text('{"k": "A", "t": "T", "s": "body"}\n' + "[" * 100_000 + "\n" + big + "\n")
    items = list(read_jsonl(path, FieldMapping.parse("id=k,title=t,summary=s"), max_bytes=200))
    assert items[0].id == "A"  # type: ignore[union-attr]
    deep, long = items[1], items[2]
    assert isinstance(deep, PostmortemInvalid) and isinstance(long, PostmortemInvalid)
    assert deep.reason == (
        "line 2 is 100001 bytes, over the limit of 200; shorten the record or raise "
        "SEENBEFORE_MAX_FILE_BYTES"
    )
    assert long.reason.startswith("line 3 is 330 bytes, over the limit of 200")
    nested = list(read_jsonl(path, FieldMapping.parse("id=k,title=t,summary=s")))[1]
    assert isinstance(nested, PostmortemInvalid)
    assert nested.reason == "line 2 nests JSON too deeply to read"
    with pytest.raises(MappingError, match=r"template '\{x' cannot be filled \(ValueError"):
        record_to_postmortem("x", {"a": 1}, FieldMapping.parse("id=a,title={x"))


@pytest.mark.integration
@pytest.mark.parametrize(
    ("name", "preset", "expected"),
    [("graphrca_incidents.jsonl", "graphrca", 200), ("danluu_postmortems.jsonl", "danluu", 190)],
)
def test_shared_exports_load(
    shared_data: Path, tmp_path: Path, name: str, preset: str, expected: int
) -> None:
    with SQLiteStore(tmp_path / "kb.sqlite") as store:
        report = Ingestor(store, mapping=FieldMapping.parse(preset)).ingest(
            [shared_data / "postmortems" / name]
        )
        assert report.quarantined == [] and len(report.added) == expected
        assert len(store.list_ids()) == expected
        first = store.get(store.list_ids()[0], ["general"]).postmortem
        assert first.title and first.sections and first.extra.get("url")
        if preset == "graphrca":
            assert first.section("root_cause") is not None and first.date is not None


def test_an_endless_line_is_skipped_in_chunks(tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "x.jsonl"
    with path.open("wb") as fh:
        fh.write(b'{"k": "A", "t": "T", "s": "body"}\n' + b"x" * 5_000_000 + b"\n")
        fh.write(b'{"k": "B", "t": "T", "s": "after the long line"}\n')
    tracemalloc.start()
    items = list(read_jsonl(path, FieldMapping.parse("id=k,title=t,summary=s"), max_bytes=1000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [getattr(i, "id", None) for i in items] == ["A", None, "B"]
    assert items[1].reason.startswith("line 2 is 5000001 bytes, over the limit of 1000")  # type: ignore[union-attr]
    assert peak < 1_000_000  # the 5 MB line was never held whole
