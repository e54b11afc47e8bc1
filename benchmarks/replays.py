"""Dev sets of benchmarks/verdict.py that replay a knowledge base in date order, as an
organisation meets its own incidents: each incident is searched against only those that came
before it, and its precedents are the earlier ones an on-call engineer would want to read.

* AWS events (``aws-replay``): an event's precedents, by the one definition of a precedent, are
  the events first posted within an hour of it (the same outage under another service); those of
  the same service, its region in brackets aside, whose summary names the same failure (the same
  words once case, plurals, "elevated"/"increased" and region codes are set aside: a recurrence,
  in any region); and the pairs a reader judged to be precedents (``JUDGMENTS``: the top result
  of the default, sparse and dense modes for every replayed query that the rule above left
  unlabelled, 1,439 pairs, each judged from the two events' texts alone -- never from a
  system's verdict -- as the same incident, a recurrence, the same failure mode elsewhere, or
  none, with the reason). In the replay only the ones posted before it count. A pair no one
  judged and the rule does not join is not a precedent: a top result the pool did not meet
  counts as wrong, so the figures err toward "no precedent in KB".
* The sample KB (``sample-replay``): examples/postmortems copied with the ``type:`` line taken
  out of every front matter (the types are kept aside as labels, so neither the ranking, the
  ``type_consensus`` signal nor the KB's self-calibration can read them). Each dated postmortem P
  is searched with ``SearchFilters.date_to`` the day before P's date (the product's ``--until``:
  documents dated strictly before P, so P itself and anything later are out). Its precedents:
  the earlier documents of P's hidden type, plus explicit links (P's ``supersedes`` and earlier
  documents whose id appears in P's body). A document the search hides by default (superseded)
  counts for none.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from seenbefore.knowledge.validate import postmortem_from_markdown
from verdict_cells import Query

HOUR = 3600
AWS_STYLES = ("first-update", "alert-line")
SAMPLE_STYLES = ("summary", "title")
_TYPE_LINE = re.compile(r"^type:")


# -- AWS events ---------------------------------------------------------------------------------
JUDGMENTS = Path(__file__).resolve().parent / "data" / "aws_replay_judgments.jsonl"
_REGION_NAME = re.compile(r"\s*\([^()]*\)\s*$")  # "Amazon EC2 (N. Virginia)" -> "Amazon EC2"
_REGION_CODE = re.compile(r"\b[a-z]{2}(?:-gov)?-[a-z]+-\d\b")
_SAME_WORD = {
    "elevated": "increased",
    "higher": "increased",
    "latencies": "latency",
    "delayed": "delay",
}
_FILLER = frozenset({"a", "and", "for", "in", "of", "on", "some", "the", "to", "with", "region"})


def _service(e: dict[str, Any]) -> str:
    return _REGION_NAME.sub("", e["service_name"]).strip().lower()


def _failure(e: dict[str, Any]) -> frozenset[str]:
    """The words of an event's summary that say what failed."""
    words = re.findall(r"[a-z0-9@]+", _REGION_CODE.sub(" ", e["summary"].lower()))
    out = set()
    for w in words:
        w = _SAME_WORD.get(w, w)
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]  # rates -> rate, errors -> error, issues -> issue
        if w not in _FILLER:
            out.add(w)
    return frozenset(out)


def load_judgments(path: Path = JUDGMENTS) -> dict[frozenset[str], bool]:
    """Each judged pair of event ids (either order) and whether it is a precedent."""
    out: dict[frozenset[str], bool] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row.get("precedent"), bool):
                raise ValueError(f"{path}:{n}: 'precedent' must be true or false, not {row!r}")
            out[frozenset((row["alert"], row["earlier"]))] = row["precedent"]
    return out


def aws_precedents(
    events: Sequence[dict[str, Any]], judged: Mapping[frozenset[str], bool] | None = None
) -> dict[str, set[str]]:
    """Each event's precedents among ``events``: itself, events first posted within an hour of
    it, events of the same service (any region) whose summary names the same failure, and the
    pairs ``judged`` precedents (default: :data:`JUDGMENTS`; {} for none)."""
    judged = load_judgments() if judged is None else judged
    by_time = sorted(events, key=lambda e: int(e["date"]))
    times = [int(e["date"]) for e in by_time]
    by_failure: dict[tuple[str, frozenset[str]], set[str]] = {}
    for e in events:
        by_failure.setdefault((_service(e), _failure(e)), set()).add(e["id"])
    ids = {e["id"] for e in events}
    linked: dict[str, set[str]] = {}
    for pair, yes in judged.items():
        if yes and pair <= ids:
            a, b = sorted(pair)
            linked.setdefault(a, set()).add(b)
            linked.setdefault(b, set()).add(a)
    out: dict[str, set[str]] = {}
    for e in events:
        t = int(e["date"])
        lo, hi = bisect.bisect_left(times, t - HOUR), bisect.bisect_right(times, t + HOUR)
        out[e["id"]] = (
            {e["id"], *(o["id"] for o in by_time[lo:hi])}
            | by_failure[(_service(e), _failure(e))]
            | linked.get(e["id"], set())
        )
    return out


def unjudged_tops(
    tops: Iterable[tuple[str, str]], judged: Mapping[frozenset[str], bool] | None = None
) -> list[tuple[str, str]]:
    """The (query event, top result) pairs among ``tops`` that neither the rule labels a
    precedent nor anyone judged: counted as wrong, they are where the labels need a reader
    again (a ranking that changes meets tops the pool never held). ``tops``' pairs are checked
    against :func:`aws_precedents` by the caller; here only the judgments are read."""
    judged = load_judgments() if judged is None else judged
    return [(q, t) for q, t in tops if frozenset((q, t)) not in judged]


def aws_text(e: dict[str, Any], style: str) -> str:
    """An event as a query: its first update (what is known while it happens) or a pager line
    ``"<service>: <summary>"``."""
    if style == "first-update":
        return str(e["updates"][0]["text"])
    if style == "alert-line":
        return f"{e['service_name']}: {e['summary']}"
    raise ValueError(f"AWS query style {style!r} is not one of {', '.join(AWS_STYLES)}")


def aws_replay_queries(
    events: Sequence[dict[str, Any]],
    styles: Iterable[str] = AWS_STYLES,
    judged: Mapping[frozenset[str], bool] | None = None,
) -> list[Query]:
    """Each event against the events first posted before it (itself and later ones excluded:
    the KB holds every event and AWS dates are to the second, finer than the date filter)."""
    ordered = sorted(events, key=lambda e: (int(e["date"]), e["id"]))
    rule = aws_precedents(events, judged)
    everyone = {o["id"] for o in ordered}
    out = []
    for i, e in enumerate(ordered):
        earlier = {o["id"] for o in ordered[:i] if int(o["date"]) < int(e["date"])}
        later = tuple(sorted(everyone - earlier))
        found = frozenset((rule[e["id"]] - {e["id"]}) & earlier)
        for style in styles:
            out.append(Query(f"{style}:{e['id']}", aws_text(e, style), style, found, later))
    return out


# -- the sample KB, untyped -------------------------------------------------------------------
@dataclass(frozen=True)
class Doc:
    """One postmortem of the replayed KB, with the label the KB no longer holds."""

    id: str
    title: str
    date: dt.date | None
    type: str  # the hidden label
    summary: str
    body: str
    supersedes: str | None
    hidden: bool  # superseded: a default search does not show it


def strip_type(text: str, source: str) -> str:
    """``text`` with the ``type:`` line of its front matter removed, nothing else changed."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise ValueError(f"{source}: no front matter (the first line is not '---')")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise ValueError(f"{source}: the front matter is not closed by a '---' line")
    typed = [i for i in range(1, end) if _TYPE_LINE.match(lines[i])]
    if len(typed) != 1:
        raise ValueError(
            f"{source}: {len(typed)} 'type:' lines in the front matter; the replay hides "
            "exactly one (give every sample postmortem one `type:`)"
        )
    return "".join(lines[: typed[0]] + lines[typed[0] + 1 :])


def untyped_copy(source: Path, dest: Path) -> list[Doc]:
    """Copy every ``*.md`` of ``source`` into ``dest`` (created) with its ``type:`` line removed;
    return the documents as parsed from the originals (their types are the labels)."""
    dest.mkdir(parents=True)
    docs = []
    for path in sorted(source.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        (dest / path.name).write_text(strip_type(text, str(path)), encoding="utf-8")
        pm = postmortem_from_markdown(str(path), text)
        summary = pm.section("summary")
        docs.append(
            Doc(
                pm.id,
                pm.title,
                pm.date,
                pm.type,
                summary.text if summary is not None else "",
                pm.body,
                pm.supersedes,
                pm.status == "superseded",
            )
        )
    replaced = {d.supersedes for d in docs if d.supersedes and not d.hidden}
    return [replace(d, hidden=True) if d.id in replaced else d for d in docs]


def _mentions(body: str, doc_id: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(doc_id)}(?![0-9])", body) is not None


def replay_precedents(p: Doc, earlier: Sequence[Doc]) -> frozenset[str]:
    """``p``'s precedents among ``earlier``: same hidden type, or linked explicitly (``p``
    supersedes it, or ``p``'s body names its id); hidden (superseded) documents never count."""
    return frozenset(
        d.id
        for d in earlier
        if not d.hidden
        and ((p.type and d.type == p.type) or d.id == p.supersedes or _mentions(p.body, d.id))
    )


def sample_replay_queries(
    docs: Sequence[Doc], styles: Iterable[str] = SAMPLE_STYLES
) -> list[Query]:
    """Each dated document in date order, searched until the day before its date."""
    styles = tuple(styles)
    out = []
    for p in sorted((d for d in docs if d.date is not None), key=lambda d: (d.date, d.id)):
        assert p.date is not None
        earlier = [d for d in docs if d.date is not None and d.date < p.date]
        found = replay_precedents(p, earlier)
        until = p.date - dt.timedelta(days=1)
        for style in styles:
            if style == "summary":
                if not p.summary.strip():
                    raise ValueError(
                        f"{p.id} has no Summary section: the 'summary' style needs one "
                        "(add a '## Summary' section to it)"
                    )
                text = p.summary
            elif style == "title":
                text = p.title
            else:
                raise ValueError(
                    f"sample replay style {style!r} is not one of {', '.join(SAMPLE_STYLES)}"
                )
            out.append(Query(f"{style}:{p.id}", text, style, found, (p.id,), until))
    return out
