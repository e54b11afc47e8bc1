"""`seenbefore search --explain` at 80 columns: ids whole, each figure named, and the words a
result line uses ("(both)", "(sparse)") said once in a legend."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.markup import escape
from rich.table import Table

from seenbefore.cli.common import console
from seenbefore.core.confidence import MIN_SHARED_WORDS, POSSIBLE
from seenbefore.retrieval.hybrid import DENSE_VOTE_GAP
from seenbefore.types import Candidate, Downweighted, ModeFirst, QueryWeights, SearchResult

MATCHED_BY = {
    "sparse": "keywords (BM25) only",
    "dense": "meaning (embeddings) only",
    "both": "keywords and meaning: each retriever ranked it",
    "signals": "its recorded signals alone",
}


def legend(candidates: Iterable[Candidate]) -> str:
    """What the ``(sparse)``/``(dense)``/``(both)`` after each result means, for those shown."""
    seen = list(dict.fromkeys(c.matched_by for c in candidates))
    return "matched by: " + "; ".join(f"{m} = {MATCHED_BY.get(m, m)}" for m in seen)


def _figures(values: Mapping[str, float], unit: str = "") -> str:
    return ", ".join(f"{k.removesuffix('_ms')} {v:g}{unit}" for k, v in values.items())


def _weights_line(result: SearchResult) -> str:
    weights = ", ".join(f"{k} {v:g}" for k, v in result.weights.items())
    line = f"[bold]fused[/]: {weights} (reciprocal rank fusion, k = {result.rrf_k})"
    gate = result.gate
    if result.weights.get("dense", 0.0) == 0.0 and gate is not None:
        gap = result.signals.get("sparse_gap", 0.0)
        if not gate.dense_trusted:
            why = f"the gate did not trust it: {gate.reason}"
        elif result.mode != "hybrid":
            why = f"this was a {result.mode} search"
        elif gap > DENSE_VOTE_GAP:  # the vote (retrieval/hybrid.py), not the gate
            why = (
                f"sparse's top document stands far above its second (gap {gap:.2f} > "
                f"{DENSE_VOTE_GAP:g}): dense votes only when sparse is unsure"
            )
        else:
            why = "its weight was 0 (asked for, or measured)"
        line += f"; dense weighs 0 because {why}"
    return line


def _mode_line(first: ModeFirst) -> str:
    """Why documents of one failure mode may stand above ones with more of the query's words."""
    return (
        f"[bold]failure mode[/]: the query reads as {first.mode} (p {first.p:.2f}) and sparse "
        f"was unsure of its top document, so postmortems of that mode among the first "
        f"{first.pool} ({first.documents} of them) moved up by up to {first.weight:g} of a first "
        "place: a precedent is the same failure"
    )


def _signals_line(result: SearchResult) -> str:
    moving = {k: round(v, 4) for k, v in result.signals.items() if v}
    zero = sorted(k for k, v in result.signals.items() if not v)
    text = f"[bold]p_precedent[/] {result.confidence:.4f} from {_figures(moving) or 'no signal'}"
    if zero:
        text += f"; at 0: {', '.join(zero)}"
    return text


def _hit(hit: object) -> str:
    rank, score = getattr(hit, "rank", None), getattr(hit, "score", None)
    return "-" if rank is None else f"{rank} · {score:.2f}"


def _held(result: SearchResult, hi: float) -> str:
    """Why a p at or above "found" gives "possible": the top document shares too few of the
    query's words (core/confidence.verdict)."""
    shared = result.signals.get("shared_words")
    if result.verdict != POSSIBLE or result.confidence < hi or shared is None:
        return ""
    return (
        f"; held at possible: the top document holds {int(shared)} of the query's words "
        f"(found needs {MIN_SHARED_WORDS})"
    )


def render_explain(result: SearchResult) -> None:
    """Gate, fusion weights, p_precedent and its signals, the verdict's thresholds, and a table
    of each result's rank and score per retriever that fits 80 columns with ids whole."""
    gate = result.gate
    if gate is not None:
        state = "trusted" if gate.dense_trusted else "not trusted"
        console.print(f"\n[bold]gate[/]: dense {state}; {escape(gate.reason)}", soft_wrap=False)
    console.print(_weights_line(result))
    if result.mode_first is not None:
        console.print(_mode_line(result.mode_first))
    console.print(_signals_line(result))
    model = result.confidence_model_key or "-"
    console.print(f"[bold]model[/] {escape(model)}: {escape(str(result.confidence_model or '-'))}")
    fit = result.confidence_model_fit
    if fit is not None:
        console.print(
            f"[bold]verdict[/]: {result.verdict} (no precedent at p <= {fit.lo:g}, found at "
            f"p >= {fit.hi:g}"
            + (f": the thresholds for {fit.shape} queries" if fit.shape else "")
            + ")"
            + _held(result, fit.hi)
        )
        if fit.live:
            console.print(f"[bold]live confidence model[/]: {escape(fit.live)}")
    if result.sparse_unit:
        console.print(f"[bold]sparse[/]: ranked by {result.sparse_unit} (BM25F + word pairs)")
    if result.query_weights is not None:
        for line in describe_weights(result.query_weights, result.query):
            console.print(line, soft_wrap=True)
    widest = max((len(c.doc_id) for c in result.candidates), default=2)
    table = Table(
        title="rank · score per retriever",
        title_justify="left",
        box=None,
        header_style="bold underline",
        padding=(0, 2, 0, 0),
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("id", no_wrap=True, min_width=widest)
    table.add_column("by", no_wrap=True)
    for name in ("sparse", "dense", "fused"):
        table.add_column(name, justify="right", no_wrap=True)
    boosted = bool(result.recency)
    if boosted:
        table.add_column("recency", justify="right", no_wrap=True)
    for rank, c in enumerate(result.candidates, 1):
        boost = [f"x{result.recency[c.doc_id]:g}" if c.doc_id in result.recency else "-"]
        table.add_row(
            str(rank),
            c.doc_id,
            c.matched_by,
            _hit(c.retrievers.get("sparse")),
            _hit(c.retrievers.get("dense")),
            f"{c.score:.5f}",
            *(boost if boosted else []),
        )
    console.print(table)
    if result.candidates:
        console.print(f"[dim]{legend(result.candidates)}[/]")
    console.print(f"[dim]timings: {_figures(result.timings, ' ms')}[/]")


def describe_weights(weights: QueryWeights, query: str) -> list[str]:
    """How the query's words were weighed, for ``--explain``: which words said where the alert
    fired rather than what failed, why, and by how much they were weighed down."""

    def grouped(words: tuple[Downweighted, ...]) -> str:
        by_reason: dict[str, list[str]] = {}
        for d in words:
            by_reason.setdefault(d.why, []).append(d.term)
        return "; ".join(f"{', '.join(t)} ({why})" for why, t in by_reason.items())

    head = "[bold]query words[/]:"
    if not weights.alert:
        return [
            f"{head} prose, every word weighs 1 (service, cloud and region words are weighed "
            "down only in alert-style text: a metric name, a (cloud/region), or a pager line "
            "headed by a known service and a colon)"
        ]
    style = f"alert-style ({escape(', '.join(weights.alert))})"
    if weights.downweighted:
        factor = weights.downweighted[0].weight
        lines = [
            f"{head} {style}; weighed down x{factor:g} as saying where the alert fired or how "
            f"much, not what failed: {escape(grouped(weights.downweighted))}"
        ]
    elif weights.kept:
        lines = [
            f"{head} {style}, but nothing besides where it fired: kept at full weight: "
            f"{escape(grouped(weights.kept))}"
        ]
    else:
        lines = [f"{head} {style}; no service, cloud or region words to weigh down"]
    if weights.dense_text and weights.dense_text != query:
        lines.append(f"[bold]dense embeds[/]: {escape(weights.dense_text)}")
    return lines
