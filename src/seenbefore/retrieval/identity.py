"""Which words of an alert say where it fired, or how much, rather than what failed.

An alert names its service and place before its evidence: ``payments-api (aws/us-east-1):
db_connections_in_use at 100% of pool, p99 latency 8x baseline``. A precedent is the same
failure -- on this service or elsewhere -- so the words that only say where (a service name the
knowledge base knows, a cloud, a region or zone, an environment, the alerting system's own
words) or how much (a measured value: 12%, 8x, 2400 ms) must not outweigh the evidence. In
alert-style text (a metric name, a ``(cloud/region)``, or a pager line headed by a service the
knowledge base knows: ``Amazon CloudWatch (Ireland): Delayed metrics``) they are recognised and
weighed down (``IDENTITY_WEIGHT``) in the sparse query and in the coverage signals that read it
(a pager line's head in the coverage signals only: QueryWeights.ranked); prose (a
status update, a report) names its service and region as part of what happened and keeps every
weight. The dense retriever embeds the text with its metric names split into words
(``db_connections_in_use`` -> ``db connections in use``), as the keyword tokenizer splits them;
it keeps the service and region words, which measured better for it than leaving them out
(docs/decisions.md, "identity words").

A word counts as identity only where every occurrence of it in the query is: ``db`` in
``orders-db`` is the service, but in ``orders-db: db pool exhausted`` it is evidence too. A
query made only of identity words keeps every weight (there is nothing else to rank by).
Pure: no index, no store."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable

from seenbefore.retrieval.tokenize import STOPWORDS, query_terms, tokenize
from seenbefore.types import Downweighted, QueryWeights

# An identity word's weight in the sparse query, against 1 for the evidence (how the value was
# chosen: docs/decisions.md, "identity words").
IDENTITY_WEIGHT = 0.1

_DIRECTIONS = "north|south|east|west|central|northeast|northwest|southeast|southwest"
_B, _E = r"(?<![a-z0-9])", r"(?![a-z0-9])"
REGION_PATTERNS: tuple[re.Pattern[str], ...] = (
    # AWS regions and zones: us-east-1, eu-west-2, ap-southeast-1, us-gov-west-1, us-east-1a
    re.compile(
        _B + rf"(?:us|eu|ap|sa|ca|me|af|il|mx|cn)(?:-gov)?-(?:{_DIRECTIONS})-\d{{1,2}}[a-z]?" + _E
    ),
    # AWS zone IDs: use1-az2
    re.compile(_B + r"[a-z]{3,4}\d-az\d{1,2}" + _E),
    # GCP regions and zones: us-central1, europe-west4, asia-northeast1-b
    re.compile(
        _B
        + rf"(?:us|europe|asia|australia|northamerica|southamerica|me|africa)-(?:{_DIRECTIONS})"
        + r"\d{1,2}(?:-[a-z])?"
        + _E
    ),
    # Azure regions, which are single words: eastus2, westeurope, uksouth
    re.compile(
        _B
        + r"(?:(?:east|west|central|north|south|northcentral|southcentral|westcentral)us\d?"
        + r"|(?:north|west)europe|uk(?:south|west)|(?:east|southeast)asia"
        + r"|japan(?:east|west)|australia(?:east|southeast|central)|canada(?:central|east)"
        + r"|brazilsouth|(?:central|south|west)india|korea(?:central|south)"
        + r"|francecentral|germanywestcentral|swedencentral|switzerlandnorth|norwayeast"
        + r"|uaenorth|southafricanorth|qatarcentral|polandcentral|italynorth)"
        + _E
    ),
)
# A measured value -- 12%, 8x, 2400 ms, 0.4% -- says how much, not what failed. A bare number
# is left alone: 503, errno 110 and Xid 79 are evidence.
MEASUREMENT = re.compile(
    _B + r"\d+(?:\.\d+)?(?:%|\s*(?:x|ms|s|sec|min|h|kb|mb|gb|tb|/s|rps|qps)" + _E + ")"
)
CLOUDS = frozenset({"aws", "gcp", "azure", "oci"})
ENVIRONMENTS = frozenset({"prod", "production", "staging", "stg", "preprod", "uat"})
ALERT_WORDS = frozenset({"alert", "alerts", "alarm", "alarms", "firing", "fired", "triggered"})
ALERT_WORDS |= {"pagerduty", "opsgenie", "sev1", "sev2", "sev3", "sev4"}
# What makes text alert-style: a metric name (lower-case words joined by underscores:
# db_connections_in_use, p99_latency; not a constant such as INSUFFICIENT_DATA, nor part of a
# path or address: /you_broke_reddit, host_name.example.com), or the place an alert fired
# written as ``(cloud/region)``. Prose -- a status update, a report -- names its service and
# region as part of what happened (an outage there), and is left as written.
METRIC_NAME = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-]|[./]\w)")
PLACE = re.compile(r"\(\s*(?:aws|gcp|azure|oci)\s*/[^()]*\)", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class ServiceNames:
    """The service names a knowledge base knows, looked up by their words in a query."""

    def __init__(self, names: Iterable[str]) -> None:
        by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for name in names:
            words = tuple(tokenize(name))
            if words:
                by_first.setdefault(words[0], []).append((words, name))
        for spans in by_first.values():
            spans.sort(key=lambda s: (-len(s[0]), s[1]))  # the longest name first
        self._by_first = by_first

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def names_start(self, words: list[str], visible: Callable[[str], bool]) -> bool:
        """Whether ``words`` are a (visible) known service name or the start of one."""
        n = len(words)
        return any(
            span[:n] == tuple(words) and visible(name)
            for span, name in self._by_first.get(words[0], ())
        )

    def find(self, words: list[str]) -> list[tuple[int, int, str]]:
        """(first word, past the last word, name) of each service name among ``words``, the
        longest at each position, never overlapping."""
        out = []
        i = 0
        while i < len(words):
            for span, name in self._by_first.get(words[i], ()):
                if tuple(words[i : i + len(span)]) == span:
                    out.append((i, i + len(span), name))
                    i += len(span)
                    break
            else:
                i += 1
        return out


def identity_marks(
    text: str,
    services: ServiceNames | None,
    visible: Callable[[str], bool] = lambda _: True,
    head: str = "",
) -> tuple[list[str], list[str | None]]:
    """The query's words (retrieval/tokenize.tokenize) and beside each the reason it is an
    identity word (None: evidence). ``visible``: whether a service name may count (a name only
    documents the caller cannot see is not revealed by being recognised)."""
    lower = text.lower()
    found = list(_WORD.finditer(lower))
    words = [m.group() for m in found]
    starts = [m.start() for m in found]
    why: list[str | None] = [None] * len(words)

    def mark(pattern: re.Pattern[str], reason: Callable[[str], str]) -> None:
        for m in pattern.finditer(lower):
            for i in range(bisect.bisect_left(starts, m.start()), len(words)):
                if starts[i] >= m.end():
                    break
                why[i] = why[i] or reason(m.group())

    for pattern in REGION_PATTERNS:
        mark(pattern, lambda place: f"region {place}")
    mark(MEASUREMENT, lambda _: "measured value")
    for i, word in enumerate(words):
        if why[i] is not None:
            continue
        if word in CLOUDS:
            why[i] = "cloud"
        elif word in ENVIRONMENTS:
            why[i] = "environment"
        elif word in ALERT_WORDS:
            why[i] = "alert word"
    if services:
        for first, past, name in services.find(words):
            if visible(name):
                for i in range(first, past):
                    why[i] = why[i] or f"service {name}"
    if head:  # a pager line's head says where, bracketed place and all
        end = lower.index(head.lower()) + len(head)
        for i in range(bisect.bisect_left(starts, end)):
            why[i] = why[i] or f"service {head}"
    return words, why


def query_weights(
    text: str,
    services: ServiceNames | None = None,
    *,
    weight: float = IDENTITY_WEIGHT,
    visible: Callable[[str], bool] = lambda _: True,
) -> QueryWeights:
    """The weights of ``text``'s query terms (retrieval/tokenize.query_terms): in alert-style
    text, ``weight`` for an identity word and 1 for the rest; all 1 in prose, when the query
    holds nothing but identity words, or when ``weight`` is 1."""
    pager = pager_line(text, services, visible)
    metric = alert_style(text)
    alert = metric or pager
    if not alert:
        return QueryWeights(dense_text=metric_words(text))
    words, why = identity_marks(text, services, visible, pager[0] if pager else "")
    terms = query_terms(text)
    reasons: dict[str, str] = {}
    evidence: set[str] = set()
    for word, reason in zip(words, why, strict=True):
        if reason is None:
            evidence.add(word)
        else:
            reasons.setdefault(word, reason)
    identity = [t for t in terms if t in reasons and t not in evidence]
    marked = [Downweighted(t, weight, reasons[t]) for t in identity]
    has_evidence = any(t not in reasons or t in evidence for t in terms)
    if not identity or weight >= 1.0:
        return QueryWeights(alert, dense_text=metric_words(text))
    if not has_evidence:
        kept = tuple(Downweighted(d.term, 1.0, d.why) for d in marked)
        return QueryWeights(alert, kept=kept, dense_text=metric_words(text))
    return QueryWeights(
        alert,
        weights={d.term: weight for d in marked},
        downweighted=tuple(marked),
        dense_text=metric_words(text),
        ranked=bool(metric),  # a pager line's service still ranks (QueryWeights.ranked)
    )


def alert_style(text: str) -> tuple[str, ...]:
    """What makes ``text`` alert-style: its metric names and ``(cloud/region)`` groups, in
    order (none: prose)."""
    found = [m.group() for m in METRIC_NAME.finditer(text)]
    found += [m.group() for m in PLACE.finditer(text)]
    return tuple(dict.fromkeys(found))


# A pager line names its service first, then what is wrong: ``Amazon CloudWatch (Ireland): Delayed
# metrics``, ``checkout-api: p99 above 2 s``. Its head is the text before the first colon.
_HEAD = re.compile(r"^\s*([^:\n]{1,120}?)\s*:\s+\S")


def pager_line(
    text: str, services: ServiceNames | None, visible: Callable[[str], bool] = lambda _: True
) -> tuple[str, ...]:
    """``(head,)`` when ``text`` is a pager line whose head (before its first colon, a place in
    brackets aside) is a service name the knowledge base knows, or the start of one (``Amazon
    CloudWatch`` of ``amazon-cloudwatch-n-virginia``); () otherwise."""
    m = _HEAD.match(text)
    if m is None or not services:
        return ()
    head = m.group(1)
    words = [w.group() for w in _WORD.finditer(re.sub(r"\([^()]*\)", " ", head).lower())]
    return (head,) if words and services.names_start(words, visible) else ()


def pair_weights(
    pairs: list[str], words: list[str], tokens: list[str], weights: QueryWeights
) -> dict[str, float]:
    """Each word pair's weight (those under 1): the lesser of its two words' (a pair with an
    identity word in it says where, as the word does). ``words`` and ``tokens``: the query's
    words and their index terms (stemmed or not), as bm25.analyse pairs them."""
    if not weights.weights:
        return {}
    out: dict[str, float] = {}
    for i in range(len(words) - 1):
        a, b = words[i], words[i + 1]
        if a in STOPWORDS or b in STOPWORDS:
            continue
        pair = f"{tokens[i]} {tokens[i + 1]}"
        w = min(weights.of(a), weights.of(b))
        out[pair] = max(out.get(pair, 0.0), w)
    return {p: w for p, w in out.items() if w < 1.0 and p in pairs}


def metric_words(text: str) -> str:
    """``db_connections_in_use`` -> ``db connections in use``: a metric name as the words prose
    uses (the keyword tokenizer splits on underscores already; the dense model does not)."""
    return METRIC_NAME.sub(lambda m: m.group().replace("_", " "), text)
