"""A JSONL mapping's templates take plain ``{field}`` placeholders only (and ``{{`` / ``}}`` for a
literal brace): no format spec, conversion, attribute or index, so nothing in a record can choose
a width, call ``repr`` or reach into a value. Anything else is refused when the mapping is parsed,
before a record is read, saying what was received, the rule and the fix."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.errors import MappingError
from seenbefore.knowledge import ingest as ingest_module
from seenbefore.knowledge.jsonl import PRESETS, FieldMapping, read_jsonl, record_to_postmortem

WIDE = "id=id,title={summary:>{w}},summary=summary"
RULE = "templates take plain field names in braces"


def test_a_width_from_the_data_is_refused_when_the_mapping_is_parsed(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"id": "A-1", "summary": "pool", "w": 100_000_000}) + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(MappingError) as caught:
            list(read_jsonl(export, FieldMapping.parse(WIDE)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000  # the 100 MB string is never built
    assert str(caught.value) == (
        "mapping entry title={summary:>{w}}: placeholder {summary:>{w}} has a format spec "
        f"(':>{{w}}'); {RULE}, with no format spec (':'), conversion ('!'), attribute ('.') or "
        "index ('['), so no record can change how a value is written; write {summary}, and "
        "double a literal brace ({{ or }})"
    )


@pytest.mark.parametrize(
    ("template", "what"),
    [
        ("{a!r}", "a conversion ('!r')"),
        ("{a!s}", "a conversion ('!s')"),
        ("{a.b}", "an attribute ('.b')"),
        ("{a.__class__}", "an attribute ('.__class__')"),
        ("{a[0]}", "an index ('[0]')"),
        ("{a:>10}", "a format spec (':>10')"),
        ("{}", "no field name"),
        ("{0}", "a position, not a field name"),
        ("{ }", "no field name"),
    ],
)
def test_every_other_placeholder_form_is_refused(template: str, what: str) -> None:
    with pytest.raises(MappingError, match=RULE) as caught:
        FieldMapping.parse(f"id=key,title={template}")
    assert f"mapping entry title={template}: placeholder" in str(caught.value)
    assert what in str(caught.value)


@pytest.mark.parametrize("template", ["{x", "{a}}", "{{a}", "{a{b}}", "}{", "{a!}"])
def test_unbalanced_braces_are_refused_at_parse_time(template: str) -> None:
    with pytest.raises(MappingError, match="double a literal brace"):
        FieldMapping.parse(f"id=key,title={template}")


def test_the_cli_refuses_the_mapping_before_reading_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps({"id": "A-1", "summary": "pool", "w": 100_000_000}) + "\n")

    def no_reading(*_: object, **__: object) -> None:
        raise AssertionError("a record was read")

    monkeypatch.setattr(ingest_module, "read_jsonl", no_reading)
    result = CliRunner().invoke(app, ["ingest", str(export), "--map", WIDE])
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stderr.startswith("error: mapping entry title={summary:>{w}}: placeholder")


def test_plain_placeholders_and_escaped_braces_still_fill() -> None:
    mapping = FieldMapping.parse(
        "id=key,title={team}: {what} {{literal}} {{{what}}},summary=notes,"
        "extra_note={missing-dash} {with space}"
    )
    record = {
        "key": "T-1",
        "team": "db",
        "what": "pool",
        "notes": "n",
        "missing-dash": 1.5,
        "with space": None,
    }
    pm = record_to_postmortem("x#L1", record, mapping)
    assert pm.title == "db: pool {literal} {pool}"
    assert pm.extra["extra_note"] == "1.5 "
    # a value is written as it is, braces and all: it is never read as a template
    pm = record_to_postmortem("x#L1", record | {"what": "{team:>99}"}, mapping)
    assert pm.title == "db: {team:>99} {literal} {{team:>99}}"


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_presets_parse(preset: str) -> None:
    mapping = FieldMapping.parse(preset)
    assert dict(mapping.pairs)["title"].startswith("{company}: ")
