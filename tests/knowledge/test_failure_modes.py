"""The failure-mode taxonomy and classifier: the author's type wins, an untyped postmortem gets
an inferred mode marked as such, and text that says nothing is "unknown"."""

from __future__ import annotations

import dataclasses
import json
import math
import textwrap
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from seenbefore.knowledge import failure_modes as fm
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.failure_features import features, postmortem_text, stem, words
from seenbefore.knowledge.failure_taxonomy import parse_taxonomy, taxonomy
from seenbefore.knowledge.validate import postmortem_from_markdown
from tests.conftest import EXAMPLES

REQUIRED = [
    "connection-pool-exhaustion",
    "memory-leak",
    "certificate-expiry",
    "dns-failure",
    "bad-deploy",
    "config-push",
    "quota-exhaustion",
    "disk-full",
    "network-partition",
    "dependency-outage",
    "retry-storm",
    "cache-stampede",
    "clock-skew",
    "credential-rotation",
    "schema-migration-lock",
    "rate-limiting",
    "data-corruption",
    "hardware-failure",
    "cpu-saturation",
    "disk-io-contention",
    "thread-pool-deadlock",
    "queue-backlog",
    "load-balancer-misconfiguration",
    "autoscaling-failure",
    "security-incident",
]

TLS_POSTMORTEM = textwrap.dedent(
    """\
    ---
    id: T-1
    title: Partner calls failed after the TLS certificate on the API gateway expired
    date: 2024-05-02
    services: [partner-api]
    ---
    ## Summary
    For two hours every partner request failed the TLS handshake. The gateway's X.509
    certificate had expired at midnight: its automatic renewal had been failing for weeks and
    nobody saw the alert.

    ## Root cause
    The certificate renewal job could not reach the ACME endpoint after a firewall change, so
    the certificate was never renewed and passed its expiry date.

    ## Resolution
    We issued a new certificate by hand and added an alert 21 days before any certificate
    expires.
    """
)


def _pm(text: str, name: str = "t.md"):  # type: ignore[no-untyped-def]
    return postmortem_from_markdown(name, text)


def test_taxonomy_has_every_required_mode_with_words() -> None:
    tax = taxonomy()
    assert set(REQUIRED) <= set(tax.slugs)
    assert len(set(tax.slugs)) == len(tax.slugs)
    for mode in tax.modes:
        assert mode.description and len(mode.words) >= 10, mode.slug
    # every group, graphrca and danluu label resolves to known slugs (parse_taxonomy checks)
    for allowed in [*tax.groups.values(), *tax.graphrca.values(), *tax.danluu.values()]:
        assert allowed and set(allowed) <= set(tax.slugs)
    assert tax.canonical("OOM") == "memory-leak" and tax.canonical("TLS expiry") == (
        "certificate-expiry"
    )


def test_the_format_page_lists_every_slug() -> None:
    page = (Path(EXAMPLES).parents[1] / "docs" / "postmortem-format.md").read_text("utf-8")
    missing = [s for s in taxonomy().slugs if f"`{s}`" not in page]
    assert not missing, f"docs/postmortem-format.md does not list {missing}"


def test_every_sample_kb_type_maps_to_a_mode() -> None:
    tax = taxonomy()
    types = set()
    for path in sorted(Path(EXAMPLES).glob("*.md")):
        pm = postmortem_from_markdown(str(path), path.read_text("utf-8"))
        if pm.type:
            types.add(pm.type)
            assert tax.canonical(pm.type) in tax.slugs, (path.name, pm.type)
    assert len(types) >= 20


def test_a_broken_taxonomy_says_what_is_wrong() -> None:
    good = {"modes": {"a-b": {"description": "d", "words": ["x"]}}}
    assert parse_taxonomy(good).slugs == ("a-b",)
    with pytest.raises(ValueError, match=r"alias 'ab' maps to 'nope', which is not a mode"):
        parse_taxonomy({**good, "aliases": {"ab": "nope"}})
    with pytest.raises(ValueError, match=r"label 'Net' maps to 'c', which is neither"):
        parse_taxonomy({**good, "graphrca": {"Net": "c"}})
    with pytest.raises(ValueError, match=r"mode 'A B' is not a lowercase hyphenated slug"):
        parse_taxonomy({"modes": {"A B": {"description": "d", "words": ["x"]}}})


def test_features_are_stemmed_words_and_adjacent_pairs() -> None:
    assert [stem(w) for w in ("expired", "expires", "expiry", "retries", "pools", "dns")] == [
        "expir",
        "expir",
        "expir",
        "retr",
        "pool",
        "dns",
    ]
    # stopwords and plain numbers go, HTTP status codes stay; x.509 is one word
    assert words("The pool of 2019 returned 503 for x.509 certs") == [
        "pool",
        "return",
        "503",
        "x509",
        "cert",
    ]
    assert features("connection pool exhausted", 2.0) == {
        "connection": 2.0,
        "pool": 2.0,
        "exhaust": 2.0,
        "connection pool": 2.0,
        "pool exhaust": 2.0,
    }


def test_model_posterior_by_hand() -> None:
    # two modes, two features; counts [[3, 0], [0, 1]], mu 2: background (4/6, 2/6);
    # P(f0|a) = (3 + 2*4/6) / 5 = 13/15, P(f0|b) = (0 + 4/3) / 3 = 4/9
    # ratios to background: 1.3 and 2/3, so p(a | f0) = 1.3 / (1.3 + 2/3) = 0.66102
    counts = np.array([[3.0, 0.0], [0.0, 1.0]])
    model = fm.build_model(["a", "b"], ["f0", "f1"], counts, mu=2.0, alpha=1.0, max_evidence=100)
    assert model.posterior({"f0": 1.0})[0] == pytest.approx(1.3 / (1.3 + 2 / 3))
    # four counts of f0 capped at two: logits 2 * log(ratio), p = 1.69 / (1.69 + 4/9)
    capped = fm.build_model(["a", "b"], ["f0", "f1"], counts, mu=2.0, alpha=1.0, max_evidence=2)
    assert capped.posterior({"f0": 4.0})[0] == pytest.approx(1.69 / (1.69 + 4 / 9))
    assert list(model.posterior({"unseen": 3.0})) == [0.5, 0.5]  # no evidence: uniform


def test_the_authors_type_wins_mapped_through_aliases() -> None:
    tls = _pm(TLS_POSTMORTEM)
    typed = dataclasses.replace(tls, type="oom")  # the text says certificates; the author rules
    assert fm.failure_mode(typed) == fm.FailureMode("memory-leak", inferred=False, p=1.0)
    own = dataclasses.replace(tls, type="power-grid-brownout")  # not a mode we know: kept
    mode = fm.failure_mode(own)
    assert (mode.slug, mode.inferred, mode.known) == ("power-grid-brownout", False, True)
    assert mode.label() == "power-grid-brownout"
    assert mode.as_dict() == {
        "slug": "power-grid-brownout",
        "inferred": False,
        "p": 1.0,
        "known": True,
    }


def test_an_expired_tls_certificate_is_inferred_as_certificate_expiry() -> None:
    tls = _pm(TLS_POSTMORTEM)
    assert tls.type == ""
    mode = fm.failure_mode(tls)
    assert mode.slug == "certificate-expiry" and mode.inferred
    assert mode.p >= fm.CONFIDENT and mode.known
    assert mode.label() == f"certificate-expiry (inferred, p {mode.p:.2f})"
    ranked = fm.ranked(tls.title, postmortem_text(tls))
    assert ranked[0] == ("certificate-expiry", mode.p)
    assert math.isclose(sum(p for _, p in ranked), 1.0)


def test_gibberish_and_empty_text_are_below_confident() -> None:
    gibberish = fm.classify_text("zxq vlorp", "blarg fnord quux wibble zzyzx plugh xyzzy")
    assert gibberish.inferred and gibberish.p < fm.CONFIDENT and not gibberish.known
    assert gibberish.label().startswith("unknown (inferred; nearest ")
    empty = fm.classify_text("", "")
    assert empty.p == pytest.approx(1 / len(taxonomy().slugs))  # no evidence: the uniform prior
    assert empty.as_dict()["known"] is False


def test_deterministic_and_cached_per_id_and_content_hash() -> None:
    tls = _pm(TLS_POSTMORTEM)
    first = fm.failure_mode(tls)
    assert fm.failure_mode(tls) == first
    assert fm.classify_text(tls.title, postmortem_text(tls)) == first
    assert (tls.id, tls.content_hash) in fm._cache
    # a postmortem built in memory (no content hash) is classified, not cached
    loose = dataclasses.replace(tls, content_hash="")
    before = len(fm._cache)
    assert fm.failure_mode(loose) == first and len(fm._cache) == before


def test_the_shipped_model_matches_the_taxonomy_and_was_not_fitted_on_the_sample_kb() -> None:
    model = fm.shipped_model()
    assert set(model.slugs) == set(taxonomy().slugs)
    assert model.alpha > 0 and model.max_evidence > 0
    data = json.loads(
        resources.files("seenbefore.knowledge").joinpath(fm.MODEL_FILE).read_text("utf-8")
    )
    assert "not examples/postmortems" in data["fitted_on"]
    assert data["made_by"].startswith("python benchmarks/fit_failure_modes.py")


def test_inferred_modes_never_enter_chunk_text() -> None:
    tls = _pm(TLS_POSTMORTEM)
    assert fm.failure_mode(tls).inferred
    assert not any("Incident type" in c.text for c in chunk_postmortem(tls))
    typed = dataclasses.replace(tls, type="certificate-expiry")
    assert any("Incident type: certificate expiry." in c.text for c in chunk_postmortem(typed))


def test_type_filter_matches_the_authors_or_a_confident_inferred_mode() -> None:
    tls = fm.failure_mode(_pm(TLS_POSTMORTEM))
    assert fm.matches(tls, "certificate-expiry") and fm.matches(tls, "cert-expiry")
    assert not fm.matches(tls, "dns-failure")
    unsure = fm.FailureMode("certificate-expiry", inferred=True, p=fm.CONFIDENT - 0.01)
    assert not fm.matches(unsure, "certificate-expiry")
    author = fm.FailureMode("dns-failure", inferred=False, p=1.0)
    assert fm.matches(author, "DNS")  # alias, any case
