"""Self-made queries in several styles, from what an engineer knows first (evaluation/styles.py)."""

from __future__ import annotations

import random

from seenbefore.calibration import styles
from seenbefore.knowledge.validate import postmortem_from_markdown
from tests.conftest import postmortem_text

BODY = (
    "## Summary\nCheckout failed for twenty minutes during the sale.\n\n"
    "## Detection\nThe checkout-api p99 latency rose to nine seconds and database connections "
    "reached the pool limit of one hundred.\n\n"
    "## Root cause\nA slow migration held every connection.\n\n"
    "## Resolution\nWe killed the migration.\n"
)
PM = postmortem_from_markdown("x.md", postmortem_text("X", body=BODY, services="[checkout-api]"))
DETECTION = set(styles.content_words(PM.section("detection").text))  # type: ignore[union-attr]


def test_each_style_draws_from_what_is_known_first_never_the_cause() -> None:
    cause = {"migration", "slow", "killed"}
    for style in styles.STYLES:
        for seed in range(20):
            query = styles.style_query(PM, style, ["filler words"], random.Random(seed))
            assert query, style
            assert not cause & set(styles.content_words(query)), (style, query)


def test_alert_is_the_service_and_a_few_detection_words() -> None:
    query = styles.style_query(PM, "alert", [], random.Random(1))
    assert query is not None
    words = query.split()
    # a pager line: the service, a colon, what is wrong (retrieval/identity.pager_line)
    assert words[0] == "checkout-api:" and 3 <= len(words) - 1 <= 8
    assert set(words[1:]) <= DETECTION


def test_update_is_a_status_template_around_a_phrase() -> None:
    query = styles.style_query(PM, "update", [], random.Random(3))
    assert query is not None and "checkout-api" in query
    assert any(t.split("{")[0].strip() in query for t in styles.UPDATES)


def test_opening_can_stay_as_written_and_other_is_another_section() -> None:
    clean = styles.style_query(PM, "opening", ["zzz"], random.Random(0), noise=False)
    assert clean is not None and PM.section("detection").text.startswith(clean)  # type: ignore[union-attr]
    other = styles.style_query(PM, "other", [], random.Random(0))
    assert other is not None and other.startswith("Checkout failed")


def test_off_domain_lines_are_packaged() -> None:
    lines = styles.off_domain_lines()
    assert len(lines) >= 60 and not any(line.startswith("#") for line in lines)
