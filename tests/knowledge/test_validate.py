import datetime as dt

import pytest

from seenbefore.errors import PostmortemInvalid
from seenbefore.knowledge.failure_modes import FailureMode, failure_mode
from seenbefore.knowledge.validate import decode, postmortem_from_markdown
from tests.conftest import postmortem_text


def reason(text: str) -> str:
    with pytest.raises(PostmortemInvalid) as info:
        postmortem_from_markdown("x.md", text)
    return info.value.reason


def test_valid_document_is_normalised() -> None:
    pm = postmortem_from_markdown(
        "x.md",
        postmortem_text(
            services="[checkout-api, checkout-api, orders-db]",
            type="Connection Pool",
            tags="pool, postgres",
            owner="team-a",
        ),
    )
    assert pm.date == dt.date(2024, 3, 14)
    assert pm.services == ("checkout-api", "orders-db")
    assert pm.type == "connection-pool"
    assert pm.tags == ("pool", "postgres")
    assert pm.access_tier == "general" and pm.status == "current"
    assert pm.extra == {"owner": "team-a"}
    assert [s.key for s in pm.sections] == ["summary", "detection", "root_cause", "resolution"]


def test_missing_id_and_title() -> None:
    assert "'id' is missing" in reason(postmortem_text(doc_id=""))
    assert "'title' is missing" in reason(postmortem_text(title=""))


def test_bad_dates() -> None:
    assert "'date' is '2024-13-01', expected YYYY-MM-DD" in reason(
        postmortem_text(date="'2024-13-01'")
    )
    assert "expected YYYY-MM-DD" in reason(postmortem_text(date="yesterday"))


def test_empty_body() -> None:
    assert "body is empty" in reason(postmortem_text(body="\n\n   \n"))
    assert "body is empty" in reason(postmortem_text(body="## Summary\n\n## Impact\n"))


def test_ids_with_path_characters_are_rejected() -> None:
    for bad in ("../etc/passwd", "a/b", "a\\\\b", "has space", ".hidden", "a..b"):
        assert "ids may use letters" in reason(postmortem_text(doc_id=f"'{bad}'")), bad


def test_bad_status_tier_and_self_supersede() -> None:
    assert "'status' is 'draft'" in reason(postmortem_text(status="draft"))
    assert "'access_tier'" in reason(postmortem_text(access_tier="'Top Secret!'"))
    assert "supersedes itself" in reason(postmortem_text(supersedes="INC-1"))


def test_no_or_broken_front_matter() -> None:
    assert "no YAML front matter" in reason("## Summary\nhello\n")
    assert "not valid YAML" in reason("---\nid: [unclosed\n---\n## Summary\nx\n")
    assert "expected a mapping" in reason("---\n- a\n- b\n---\n## Summary\nx\n")
    # an impossible unquoted date is a ValueError inside the YAML loader: quarantined, no crash
    assert reason("---\nid: A\ndate: 2024-13-01\n---\n## Summary\nx\n") == (
        "front matter: line 3: value '2024-13-01' cannot be read (month must be in 1..12); "
        "fix the value, or quote it to keep it as text"
    )


def test_no_closing_line_is_named() -> None:
    # the opening '---' is there: the message must not say the file lacks it
    assert reason("---\nid: A\ntitle: T\n## Summary\nx\n") == (
        "front matter starts with '---' but has no closing '---' line; add a line with only "
        "'---' after the last field"
    )


def test_yaml_errors_give_line_cause_and_fix() -> None:
    tab = reason("---\nid: A\ntitle: T\nservices:\n\t- api\n---\n## Summary\nx\n")
    assert tab.startswith("front matter: line 5: not valid YAML (")
    assert "found character '\\t' that cannot start any token" in tab
    assert tab.endswith("; indent with spaces: YAML does not allow tab characters")
    colon = reason("---\nid: A\ntitle: Pool: exhausted\n---\n## Summary\nx\n")
    assert colon == (
        "front matter: line 3: not valid YAML (mapping values are not allowed here); quote a "
        "value that contains ': ', e.g. title: \"a: b\""
    )


def test_binary_and_tagged_values_are_refused() -> None:
    assert reason("---\nid: A\ntitle: T\nblob: !!binary aGk=\n---\n## Summary\nx\n") == (
        "front matter: line 4: binary values ('tag:yaml.org,2002:binary') are not read; "
        "write the value as text"
    )
    assert "remove the '!tag'" in reason(
        "---\nid: A\ntitle: T\nx: !!python/object:os.system ls\n---\n## Summary\nx\n"
    )


def test_undecodable_and_oversized_bytes() -> None:
    with pytest.raises(PostmortemInvalid, match="not valid UTF-8"):
        decode("x.md", b"---\nid: A\n\xff\xfe", max_bytes=1000)
    with pytest.raises(PostmortemInvalid, match="over the limit of 10"):
        decode("x.md", b"x" * 11, max_bytes=10)


def test_extra_fields_are_plain_json() -> None:
    # a date as a key became a traceback when the extra fields were stored as JSON
    pm = postmortem_from_markdown(
        "x.md", postmortem_text(owner="team-a", **{"2024-01-01": "x", "~": "y"})
    )
    assert pm.extra == {"owner": "team-a", "2024-01-01": "x", "None": "y"}
    assert reason(postmortem_text(cost=".nan")) == (
        "front matter field 'cost' holds nan, which JSON cannot carry; quote it ('.nan') or "
        "write a number"
    )
    assert "holds inf" in reason(postmortem_text(meta="{a: [1, .inf]}"))


@pytest.mark.parametrize("written", ["Uncategorized", "unknown", "Other", "N/A", "misc"])
def test_a_type_that_names_no_failure_mode_counts_as_none(written: str) -> None:
    # danluu's README files 119 of its 190 entries under "Uncategorized": as a type it made
    # them all one failure mode, precedents of each other in self-calibration's labels
    pm = postmortem_from_markdown("x.md", postmortem_text(type=written))
    assert pm.type == ""
    assert pm.extra["type_as_written"] == written
    mode = failure_mode(pm)
    assert mode.inferred and mode.slug == "connection-pool-exhaustion"  # from its words


def test_a_real_type_is_kept_as_the_author_wrote_it() -> None:
    pm = postmortem_from_markdown("x.md", postmortem_text(type="Hardware/Power Failures"))
    assert pm.type == "hardware-power-failures" and "type_as_written" not in pm.extra
    assert failure_mode(pm) == FailureMode("hardware-failure", inferred=False, p=1.0)


def test_a_file_without_front_matter_is_told_the_front_matter_it_needs() -> None:
    """A plain Markdown postmortem (no front matter, as many teams write them) was told only
    that it lacks one; the reason now gives the least it needs, from the file itself."""
    with pytest.raises(PostmortemInvalid) as caught:
        postmortem_from_markdown(
            "/pm/2024 checkout outage.md", "# Checkout outage #\n\n## Summary\nThe pool ran out.\n"
        )
    assert caught.value.reason.endswith(
        "e.g. start it with '--- / id: 2024-checkout-outage / title: Checkout outage / "
        "date: YYYY-MM-DD / ---' (one per line; docs/postmortem-format.md lists the optional "
        "fields)"
    )
