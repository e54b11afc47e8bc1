from seenbefore.knowledge.markdown import parse_markdown, split_sections
from seenbefore.knowledge.sections import canonical_section


def test_template_synonyms_map_to_canonical_keys() -> None:
    cases = {
        "Summary": "summary",
        "Executive Summary": "summary",
        "Customer Impact": "impact",
        "How it was detected": "detection",
        "Symptoms": "detection",
        "What we saw": "detection",
        "Chronology": "timeline",
        "Root Causes": "root_cause",
        "Contributing factors": "root_cause",
        "Why it happened": "root_cause",
        "Mitigation": "resolution",
        "Remediation": "resolution",
        "Recovery": "resolution",
        "Follow-up": "action_items",
        "Corrective actions": "action_items",
        "Where we got lucky": "lessons",
        "What went well": "lessons",
    }
    for heading, key in cases.items():
        assert canonical_section(heading) == key, heading


def test_heading_normalisation_ignores_numbering_case_and_punctuation() -> None:
    assert canonical_section("3. ROOT CAUSE:") == "root_cause"
    assert canonical_section("**Lessons Learned**") == "lessons"
    assert canonical_section("Customer comms plan") == "customer_comms_plan"


def test_document_title_is_not_a_section_and_preamble_is_summary() -> None:
    body = "# Outage of checkout\nIntro text.\n\n## Impact\nUsers saw errors.\n\n### Detail\nmore\n"
    sections = split_sections(body)
    assert [(s.key, s.heading) for s in sections] == [("summary", "Summary"), ("impact", "Impact")]
    assert "### Detail" in sections[1].text  # deeper headings stay inside their section


def test_headings_inside_code_fences_are_ignored() -> None:
    body = "## Root cause\n```\n## not a heading\n```\nthe cause\n## Fix\nrestart\n"
    sections = split_sections(body)
    assert [s.key for s in sections] == ["root_cause", "resolution"]
    assert "## not a heading" in sections[0].text


def test_parse_markdown_returns_front_matter_and_sections() -> None:
    parsed = parse_markdown("---\nid: A\ntitle: T\n---\n## Summary\nhello\n")
    assert parsed.front_matter == {"id": "A", "title": "T"}
    assert [s.text for s in parsed.sections] == ["hello"]
