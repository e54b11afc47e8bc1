"""Figures the README and the docs pages quote are the ones in the committed results files
(benchmarks/results/), written by the command each file records: a figure changed in one place and
not the other fails.

Each row: the text a page must contain, built from a value read out of a results file, and the page
(README.md or one under docs/) it lives on. When a benchmark is re-run and its JSON committed, the
page has to follow (or this test says which sentence is stale). The README keeps a short guide and
a table of headline figures; the rest lives in docs/, so the README also has a length limit, its
headline rows must say where each figure is explained and which results file holds it, and no
relative link in the README or docs/ may point at a file that is not there."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README_MAX_LINES = 250

# the pages a figure may live on (paths relative to the repository root)
README = "README.md"
RETRIEVAL_PAGE = "docs/retrieval.md"
DETECTION_PAGE = "docs/detection.md"
INVESTIGATION_PAGE = "docs/investigation.md"
SERVICE_PAGE = "docs/service.md"
POSTGRES_PAGE = "docs/postgres.md"
RESULTS_PAGE = "docs/results.md"
FORMAT_PAGE = "docs/postmortem-format.md"


def _read(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def _flat(page: str) -> str:
    # prose wraps: a figure's sentence may break across lines, so compare with runs of whitespace
    # as one
    return " ".join(_read(page).split())


def _load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _detect_history() -> str:
    """docs/detection.md's sentence on benchmarks/detect_history.py."""
    cells = _load("detect_history.json")["cells"]

    def cell(step: int, history: str) -> dict[str, Any]:
        return cells[f"step {step}s, --history {history}"]

    with_day = [cell(s, "1d") for s in (60, 300)]
    alone = [cell(s, "0") for s in (60, 300)]
    assert len({(c["false_anomalies"], c["step_found"], c["steps"]) for c in with_day}) == 1
    first = all(d == 0 for c in with_day for d in c["delays"])
    return (
        f"with the day of history, {with_day[0]['false_anomalies']} false anomalies and the step "
        f"found {with_day[0]['step_found']}/{with_day[0]['steps']}"
        + (" at its first point" if first else "")
        + f", at a 60 s and a 300 s step; `--since` alone, {alone[0]['false_anomalies']} and "
        f"{alone[1]['false_anomalies']} false anomalies, and the step found "
        f"{alone[0]['step_found']}/{alone[0]['steps']} and {alone[1]['step_found']}/{alone[1]['steps']}"
    )


def _history_pair(command: str, family: str, history: str) -> str:
    """detect_history.json's cells for one command, day shape and --history, at a 60 s and a
    300 s step: "1 and 0 false anomalies, the step found 2/8 and 3/8"."""
    cells = _load("detect_history.json")["cells"]
    prefix = "" if (command, family) == ("detect", "sine") else f"{command}, {family}, "
    c = [cells[f"{prefix}step {s}s, --history {history}"] for s in (60, 300)]
    return (
        f"{c[0]['false_anomalies']} and {c[1]['false_anomalies']} false anomalies, the step "
        f"found {c[0]['step_found']}/{c[0]['steps']} and {c[1]['step_found']}/{c[1]['steps']}"
    )


def _runtime(data: Any, runtime: str) -> dict[str, Any]:
    return next(r for r in data["results"] if r["runtime"] == runtime)


def _aws(mode: str, metric: str = "hit@1", split: str = "aws") -> float:
    modes = _load("realtext.json")["sets"][split]["modes"]
    value = modes[mode]
    for key in metric.split("/"):
        value = value[key]
    return float(value)


def _category(mode: str) -> float:
    return float(_load("categories.json")["modes"][mode]["p@1"])


def _injection() -> dict[str, Any]:
    data: dict[str, Any] = _load("injection.json")
    return data


def _stage(embedder: str, stage: str, q: str) -> float:
    return float(_load(f"investigate_{embedder}.json")["stages"][stage][q])


def _beir(configuration: str, key: str = "ndcg@10", results: str = "beir.json") -> float:
    row = next(r for r in _load(results)["results"] if r["configuration"] == configuration)
    return float(row[key])


def _anomaly(ranking: str, kind: str = "all") -> float:
    return float(_load("anomalies.json")["type_hit_at_1"][ranking][kind])


def _anomaly_confidence(key: str) -> float:
    return float(_load("anomalies.json")["confidence"]["held_out_odd_seeds"][key])


def _anomaly_profile() -> str:
    data = _load("anomalies.json")
    chosen, shipped = data["profile"], data["shipped_profile"]
    signals = chosen["signals_choice"]["evidence"]
    dense = chosen["dense_choice"]["evidence"]
    return (
        "| **BM25 + signals (shipped profile: weight {:g}, dense {:g})** | **{:.3f}** "
        "(cpu_saturation {:.2f}) |\n"
        "| BM25 + signals {:g} + MiniLM {:g} (chosen by 5-fold CV now: held out {:.3f} with "
        "signals vs {:.3f} BM25 alone, {:.3f} with MiniLM added) | {:.3f} |"
    ).format(
        shipped["signals"],
        shipped["dense"],
        _anomaly("shipped profile"),
        _anomaly("shipped profile", "cpu_saturation"),
        chosen["signals"],
        chosen["dense"],
        signals["held_out_at_chosen"],
        signals["held_out_sparse_only"],
        dense["held_out_at_chosen"],
        _anomaly("chosen profile"),
    )


def _reported_right() -> str:
    counts = _load("anomalies.json")["reported_right_all_seeds"].values()
    right, total = sum(c["right"] for c in counts), sum(c["cases"] for c in counts)
    return f"over all seeds {right} of {total} anomalies are reported right"


def _ingest(corpus: str) -> dict[str, Any]:
    data: dict[str, Any] = _load("ingest.json")["corpora"][corpus]["ingest"]
    return data


def _selftest(mode: str) -> float:
    return float(_load("selftest.json")["modes"][mode]["mrr"])


NAB_COLUMNS = (
    "artificialWithAnomaly",
    "realAWSCloudwatch",
    "realAdExchange",
    "realTraffic",
    "realTweets",
    "all",
)
# docs/detection.md row label -> nab_loco.json side_by_side key
NAB_DETECTORS = {
    "range (spatial)": "spatial",
    "sequence novelty + likelihood": "sequence",
    "change novelty + likelihood": "delta",
    "relative entropy": "entropy",
    "robust z + likelihood": "robust_z",
    "Isolation Forest + likelihood": "forest",
    "ARTime (causal range)": "artime",
    "range + sequence": "spatial + sequence",
    "range + sequence + change (issue 14's default)": "spatial + sequence + delta",
    "range + entropy + sequence": "spatial + entropy + sequence",
    "range + sequence + forest": "spatial + sequence + forest",
    "all six older members": "all six",
}
SHIPPED = "chosen: spatial + sequence + artime"  # nab_loco.json side_by_side key of the default
STEADY = "ensemble state at steady state: 20 series x 12000 points"  # a detector.json row
WATCH_ROW = "watch series state at its defaults: 5 series x 12000 points"  # a detector.json row


def _nab_row(scope: str) -> str:
    files = sum(f.startswith(scope + "/") for f in _load("nab.json")["per_file"])
    profiles = ("standard", "reward_low_FP_rate", "reward_low_FN_rate")
    scores = " | ".join(f"{_scope(scope, p):.1f}" for p in profiles)
    return f"| {scope} ({files}) | {scores} |"


def _detectors_row(label: str) -> str:
    row = _load("nab_loco.json")["side_by_side"][NAB_DETECTORS[label]]
    return f"| {label} | " + " | ".join(f"{row[c]:.1f}" for c in NAB_COLUMNS) + " |"


def _shipped_detectors_row() -> str:
    row = _load("nab_loco.json")["side_by_side"][SHIPPED]
    cells = [f"{row[c]:.1f}" for c in NAB_COLUMNS[:-1]] + [f"**{row['all']:.1f}**"]
    return "| **range + sequence + ARTime (shipped)** | " + " | ".join(cells) + " |"


def _pipeline_loco() -> str:
    p = _load("nab_loco.json")["pipeline_loco"]
    return f"worst {p['worst']:.1f} ({p['worst_category']}), mean {p['mean']:.1f}"


def _artime_whole_range() -> str:
    row = _load("nab_loco.json")["artime_whole_file_range"]
    return f"ARTime with each file's whole range scores {row['all']:.1f} on our 51 files"


def _detection_totals() -> str:
    t = _load("detection.json")["side_by_side"]["totals"]
    return "{}/{} and {} for the ensemble, {}/{} and {} for the Isolation Forest".format(
        t["ensemble"]["detected"],
        t["ensemble"]["incidents"],
        t["ensemble"]["false_alarms"],
        t["iforest"]["detected"],
        t["iforest"]["incidents"],
        t["iforest"]["false_alarms"],
    )


def _loco(category: str) -> str:
    held = _load("nab_loco.json")["loco"][category]
    return f"{category} {held['held_at_others_threshold']:.1f} ({held['held_reoptimised']:.1f})"


def _loco_span() -> str:
    held = [
        v["held_at_others_threshold"]
        for v in _load("nab_loco.json")["loco"].values()
        if v["held_at_others_threshold"] is not None
    ]
    return f"(leave-one-category-out held out: {min(held):.1f}-{max(held):.1f} per category)"


def _detector(what: str, key: str = "points_per_s") -> float:
    return float(_load("detector.json")["results"][what][key])


def _state_at_scale() -> str:
    row = _load("detector.json")["results"]["ensemble streaming: 1000 series round-robin"]
    return (
        "({:,.1f} KB of state file, gzip-compressed from {:,.1f} KB of JSON; writing the 1,000 "
        "series' state file takes {:.2f} s, {:.2f} s of it the JSON)".format(
            row["state_file_bytes_per_series"] / 1000,
            row["json_bytes_per_series"] / 1000,
            row["state_encode_seconds"],
            row["state_json_seconds"],
        )
    )


def _state_levels() -> str:
    """The gzip levels' size and time that chose ``watch_state.STATE_LEVEL``."""
    levels = _load("detector.json")["results"]["ensemble streaming: 1000 series round-robin"][
        "state_gzip_levels"
    ]
    one, six, nine = (levels[k] for k in ("1", "6", "9"))
    return (
        "level 1 gives {:,.1f} KB a series in {:.2f} s, level 6 {:,.1f} KB in {:.2f} s, level 9 "
        "{:,.1f} KB in {:.2f} s (gzip alone), so the smaller file costs {:.2f} s a poll".format(
            one["bytes_per_series"] / 1000,
            one["seconds"],
            six["bytes_per_series"] / 1000,
            six["seconds"],
            nine["bytes_per_series"] / 1000,
            nine["seconds"],
            six["seconds"] - one["seconds"],
        )
    )


def _state_level_chosen() -> str:
    levels = _load("detector.json")["results"]["ensemble streaming: 1000 series round-robin"][
        "state_gzip_levels"
    ]
    one, six = levels["1"]["bytes_per_series"], levels["6"]["bytes_per_series"]
    return (
        f"level 6 is {100 * (1 - six / one):.0f} % smaller than level 1 "
        f"({six / 1000:,.1f} against {one / 1000:,.1f} KB a series)"
    )


def _golden(mode: str, key: str) -> float:
    return float(_load("eval_golden.json")["modes"][mode][key])


def _golden_novel_caught() -> str:
    total = int(_load("eval_golden.json")["header"]["cases"].split("(")[1].split()[0])
    caught = round(_golden("gated (MiniLM)", "novel_recall") * total)
    return f"({caught} of the {total} novel cases caught"


def _short(kind: str) -> dict[str, Any]:
    entry: dict[str, Any] = _load("failure_modes_short.json")["kinds"][kind]
    return entry


def _review_mean(cell: str, when: str, key: str) -> str:
    """A share before or after the refit, as the page writes it ("52" before, "55 %" after)."""
    value = 100 * _load("verdict_reviews.json")["summary"][cell][when][key]
    return f"{value:.0f}" if when == "before" else f"{value:.0f} %"


def _seeds(cell: str, name: str = "verdict_seeds.json") -> dict[str, Any]:
    summary: dict[str, Any] = _load(name)["summary"][cell]
    return summary


def _seed_range(cell: str, key: str) -> str:
    low, high = _seeds(cell)["range"][key]
    return f"{100 * low:.0f}-{100 * high:.0f} %"


def _seed_mean(cell: str, key: str, name: str = "verdict_seeds.json") -> str:
    return f"{100 * _seeds(cell, name)['mean'][key]:.0f} %"


SEED_CELLS = (
    "sample-replay/summary",
    "sample-replay/title",
    "aws-replay/alert-line",
    "aws-replay/first-update",
)
RECURRENCE = (
    "verdict_seeds.json",
    "verdict_seeds_recurrence_0.1.json",
    "verdict_seeds_recurrence_0.15.json",
)


def _ceiling(cell: str, key: str) -> str:
    """A ceiling's range over seeds (verdict_seeds.py): "0.913-0.960" for the AUROC, "70-87 %"
    or "79 %" (one value) for a share."""
    low, high = _seeds(cell)["ceiling"][key]
    if key == "auroc":
        return f"{low:.3f}-{high:.3f}"
    if round(100 * low) == round(100 * high):
        return f"{100 * low:.0f} %"
    return f"{100 * low:.0f}-{100 * high:.0f} %"


def _span(ranges: Iterable[Sequence[float]]) -> str:
    """The span of several (low, high) shares: "0-4 %"."""
    pairs = list(ranges)
    return f"{100 * min(p[0] for p in pairs):.0f}-{100 * max(p[1] for p in pairs):.0f} %"


def _cells_met(name: str) -> int:
    return sum(sum(c["met"].values()) for c in _load(name)["summary"].values())


SMALL = ("small_kb_before_refit.json", "small_kb.json")


def _small(cell: str, group: str, state: str) -> str:
    """A small-KB share before -> after the shipped text models were refitted ("69 -> 3 %")."""
    before, after = (100 * _load(n)["states"][cell][group][state] for n in SMALL)
    return f"{before:.0f} -> {after:.0f} %"


def _never_found(*cells: str) -> str:
    found = [_load(n)["states"][c]["none"]["found"] for n in SMALL for c in cells]
    return 'never "found"' if not any(found) else f'"found" up to {100 * max(found):.0f} %'


def _small_auroc(cell: str) -> str:
    before, after = (_load(n)["states"][cell]["ceiling"]["auroc"] for n in SMALL)
    return f"{before:.2f} -> {after:.2f}"


def _golden_auroc_span() -> str:
    aurocs = [m["shipped_auroc"] for m in _load("eval_golden.json")["modes"].values()]
    return f"AUROC of confidence (precedent vs none) {min(aurocs):.3f}–{max(aurocs):.3f}"


REALTEXT_SETS = ("aws", "graphrca", "sample-kb")


def _realtext_row(label: str, mode: str, bold: bool = False) -> str:
    cells = [f"{_aws(mode, split=split):.3f}" for split in REALTEXT_SETS]
    if bold:
        cells = [f"**{c}**" for c in cells]
    return f"| {label} | " + " | ".join(cells) + " |"


def _peers_row() -> str:
    cells = [
        f"{_aws('rank_bm25 (BM25Okapi)', split=s):.3f} / {_aws('bm25s', split=s):.3f}"
        for s in REALTEXT_SETS
    ]
    return (
        "| rank_bm25 / bm25s, whole documents (peers, same process) | " + " | ".join(cells) + " |"
    )


def _lat(scope: str, what: str, which: str = "p50/p95") -> str:
    """p50/p95 (or p50/p95/p99) of one latency row, as the pages print them."""
    data = _load("latency.json")
    row = data["summary" if what.startswith("kb.search") else "results"][scope][what]
    return "/".join(f"{row[k]:.2f}" for k in which.split("/"))


def _pp(row: dict[str, Any]) -> str:
    return f"{row['p50_ms']:.2f}/{row['p95_ms']:.2f}"


def _index(results: str, backend: str, what: str) -> Any:
    """One figure of benchmarks/index_updates.py (``results``: which run's file)."""
    return _load(results)["results"][backend][what]


BEFORE_CLEANUP = "index_updates_before_pg_cleanup.json"  # index_updates.py before migration 6
SEARCHES = ("in database: full text + HNSW", "in-memory index")


def _writes(arm: str, what: str = "store_write") -> list[Any]:
    """One figure of benchmarks/pg_writes.py for ``arm`` (before / after), round by round."""
    return [r[what] for r in _load("pg_writes.json")["rounds"] if r["arm"] == arm]


VERDICT_ROWS = (
    "sample/golden",
    "sample/off-topic",
    "sample/scifact-claim",
    "aws/first-update",
    "aws/alert-line",
    "aws/off-topic",
    "aws-half/first-update",
    "aws-replay/first-update",
    "graphrca/report",
    "graphrca/off-topic",
    "scifact-kb/first-update",
    "scifact-kb/golden",
)


def _verdict_row(name: str) -> str:
    cell = _load("verdict.json")["cells"][name]

    def pct(v: Any) -> str:
        return "–" if v is None else f"{100 * v:.1f} %"

    def num(v: Any) -> str:
        return "–" if v is None else f"{v:.3f}"

    hit = cell["hit_at_1"]
    single = max((v for m, v in hit.items() if m != "default"), default=None)
    ranking = f"{num(hit.get('default'))} / {num(single)}" if hit else "–"
    naive = cell["naive"]
    return (
        f"| {name} | {cell['queries']} | {ranking} | {pct(cell['false_no_precedent_when_first'])} | "
        f"{pct(cell['no_precedent_when_none'])} | {pct(cell['found_when_none'])} | "
        f"{num(cell['ece'])} | {num(cell['auroc'])} | "
        f"{pct(naive['false_no_precedent_when_first'])} / {pct(naive['no_precedent_when_none'])} / "
        f"{pct(naive['found_when_none'])} |"
    )


def _nab_events() -> str:
    events, rested = _load("nab_events.json"), _load("nab.json")
    assert events["params"]["rest_fraction"] == 0.0 and "--events" in events["command"]
    return (
        "the events' stream **{:.1f}** on the 51 dev files ({} false positives at its optimised"
        "\n  threshold, against {:.1f} and {} with the rest"
    ).format(
        events["normalised_score"],
        events["scopes"]["all"]["standard"]["false_positives"],
        rested["normalised_score"],
        rested["scopes"]["all"]["standard"]["false_positives"],
    )


def _scope(category: str, profile: str = "standard") -> float:
    return float(_load("nab.json")["scopes"][category][profile]["normalised"])


def _headline_golden() -> str:
    cases = _load("eval_golden.json")["header"]["cases"]
    total = int(cases.split("(")[1].split()[0])
    caught = round(_golden("gated (MiniLM)", "novel_recall") * total)
    return (
        "| golden cases ({}, {} with no precedent) | Hit@1 gated MiniLM {:.3f}; {} of the {} "
        "no-precedent cases caught |"
    ).format(cases.split()[0], total, _golden("gated (MiniLM)", "hit@1"), caught, total)


def _headline_nab() -> str:
    p = _load("nab_loco.json")["pipeline_loco"]
    return (
        "| NAB, {} dev files, standard profile | {:.1f} in-sample; design and threshold held out "
        "per category: worst {:.1f}, mean {:.1f} (published HTM {:.1f}) |"
    ).format(
        len(_load("nab.json")["per_file"]),
        _load("nab.json")["normalised_score"],
        p["worst"],
        p["mean"],
        _load("nab.json")["scoreboard_all58"]["numenta HTM"],
    )


# (what the figure is, the text the page must contain, built from the results file, the page)
def _failure_modes() -> str:
    data = _load("failure_modes.json")
    kb, cv = data["sample_kb"], data["graphrca_cv"]
    return (
        "| sample KB, {} typed postmortems, `type` hidden: top-1 / top-3 | {:.3f} / {:.3f} | "
        "{:.3f} |\n"
        "| sample KB at p >= {}: coverage / top-1 among those | {:.3f} / {:.3f} | – |\n"
        "| graphrca, 5-fold CV, {} rows labelled with one mode: top-1 / top-3 | {:.3f} / {:.3f} "
        "| {:.3f} |\n"
        "| graphrca, 5-fold CV, {} mapped rows: top-1 within the label's set ({:.1f} modes on "
        "average) | {:.3f} | {:.3f} |"
    ).format(
        kb["postmortems"],
        kb["top1"],
        kb["top3"],
        kb["majority"],
        data["confident"],
        kb["confident_coverage"],
        kb["confident_accuracy"],
        cv["single_mode_rows"],
        cv["single_top1"],
        cv["single_top3"],
        cv["single_majority"],
        cv["rows"],
        cv["mean_label_set_size"],
        cv["top1_in_label_set"],
        cv["majority_in_label_set"],
    )


FIGURES: list[tuple[str, Callable[[], str], str]] = [
    # failure modes, from benchmarks/fit_failure_modes.py
    ("failure-mode classifier, held out", _failure_modes, FORMAT_PAGE),
    (
        "failure-mode confidence on the sample KB",
        lambda: "on the sample KB {:.0f} % of inferred modes reach p >= {}".format(
            100 * _load("failure_modes.json")["sample_kb"]["confident_coverage"],
            _load("failure_modes.json")["confident"],
        ),
        FORMAT_PAGE,
    ),
    # the classifier on short held-out text, from benchmarks/failure_modes_short.py --write
    (
        "failure-mode confidence on short text",
        lambda: (
            "on a graphrca root cause alone (one sentence, median {:.0f} known features) its top "
            "mode is in the label's set {:.0f} % of the time at a mean top p of {:.2f}, and on a "
            "postmortem's heading {:.0f} % at {:.2f}".format(
                _short("root cause, one sentence")["median_evidence"],
                100 * _short("root cause, one sentence")["shipped"]["top1_in_label_set"],
                _short("root cause, one sentence")["shipped"]["mean_top_p"],
                100 * _short("postmortem heading")["shipped"]["top1_in_label_set"],
                _short("postmortem heading")["shipped"]["mean_top_p"],
            )
        ),
        FORMAT_PAGE,
    ),
    (
        "failure-mode short text, sharpened",
        lambda: "(log p of the label set {:.3f} -> {:.3f} on the root causes)".format(
            _short("root cause, one sentence")["shipped"]["log_prob_of_label_set"],
            _short("root cause, one sentence")["best_by_log_prob"]["log_prob_of_label_set"],
        ),
        FORMAT_PAGE,
    ),
    # the first hour, from benchmarks/cli_latency.py --demo
    ("make demo after install", lambda: f"**{_load('cli_latency.json')['demo_s']:.1f} s**", README),
    (
        "search p50, ONNX",
        lambda: f"**{_runtime(_load('cli_latency.json'), 'onnx')['search_wall_p50_s']:.2f} s**",
        README,
    ),
    (
        "search p50, sentence-transformers",
        lambda: f"{_runtime(_load('cli_latency.json'), 'torch')['search_wall_p50_s']:.2f} s on",
        README,
    ),
    (
        "sample ingest, ONNX",
        lambda: f"took {_runtime(_load('cli_latency.json'), 'onnx')['ingest_s']:.1f} s",
        README,
    ),
    # NAB, from seenbefore nab ... --json
    (
        "NAB all 51, standard",
        lambda: f"**{_load('nab.json')['normalised_score']:.1f}**",
        DETECTION_PAGE,
    ),
    # search latency at 100k chunks, from benchmarks/latency.py --backend postgres --sizes 100000
    (
        "latency row, kb.search",
        lambda: (
            "SQLite hybrid {} ms, sparse {} ms; PostgreSQL store hybrid {} ms, sparse {} ms"
        ).format(
            _lat("100000 chunks", "kb.search hybrid"),
            _lat("100000 chunks", "kb.search sparse"),
            _lat("100000 chunks, postgres", "kb.search hybrid"),
            _lat("100000 chunks, postgres", "kb.search sparse"),
        ),
        RESULTS_PAGE,
    ),
    (
        "latency row, FTS5 and query embedding",
        lambda: (
            "FTS5 p95 {:.1f} ms (30-word alerts {:.1f} ms). MiniLM query embedding p50 {:.1f}".format(
                _load("latency.json")["results"]["100000 chunks"]["scifact sparse (FTS5)"]["p95"],
                _load("latency.json")["results"]["100000 chunks"]["alert-30w sparse (FTS5)"]["p95"],
                _load("latency.json")["results"]["query embedding (MiniLM, 1 query)"]["p50"],
            )
        ),
        RESULTS_PAGE,
    ),
    (
        "PostgreSQL latency bullet",
        lambda: (
            "hybrid over the PostgreSQL store {} (SQLite {}); in-database hybrid {} (30-word "
            "alerts {})"
        ).format(
            _lat("100000 chunks, postgres", "kb.search hybrid", "p50/p95/p99"),
            _lat("100000 chunks", "kb.search hybrid", "p50/p95/p99"),
            _lat("100000 chunks, postgres", "scifact hybrid (in database)", "p50/p95/p99"),
            _lat("100000 chunks, postgres", "alert-30w hybrid (in database)", "p50/p95/p99"),
        ),
        POSTGRES_PAGE,
    ),
    # the in-database search against the in-memory index, and what writes cost, from
    # benchmarks/index_updates.py (before and after migration 6) and benchmarks/pg_writes.py
    (
        "in-database hybrid at 100k, before removing it",
        lambda: "in-database hybrid {} ms p50/p95 against {} ms in memory".format(
            *(_pp(_index(BEFORE_CLEANUP, "postgres", f"search hybrid ({w})")) for w in SEARCHES)
        ),
        POSTGRES_PAGE,
    ),
    (
        "PostgreSQL write cost with and without the in-database search",
        lambda: (
            "a single-document write p50/p95 {} then {} ms with the in-database search, {} then {}"
            " ms without it; a deletion {} then {} ms against {} then {} ms; replacing every vector"
            " (re-embedding, with the HNSW build) {} then {} s against {} then {} s"
        ).format(
            *map(_pp, _writes("before")),
            *map(_pp, _writes("after")),
            *map(_pp, _writes("before", "store_write (delete)")),
            *map(_pp, _writes("after", "store_write (delete)")),
            *_writes("before", "vectors_s"),
            *_writes("after", "vectors_s"),
        ),
        POSTGRES_PAGE,
    ),
    (
        "index rebuild, update and compaction at 100k",
        lambda: (
            "a full rebuild, what every write used to cost every replica, {} s on SQLite and {} s"
            " on PostgreSQL; an incremental update p50/p95 {} ms on SQLite and {} ms on"
            " PostgreSQL, and no write rebuilt the index. Compaction (dropping tombstones once"
            " they pass a fifth of the rows) runs in a thread of its own: {} s on SQLite, {} s on"
            " PostgreSQL"
        ).format(
            _index("index_updates.json", "sqlite", "full_rebuild_s"),
            _index("index_updates.json", "postgres", "full_rebuild_s"),
            _pp(_index("index_updates.json", "sqlite", "index_update")),
            _pp(_index("index_updates.json", "postgres", "index_update")),
            _index("index_updates.json", "sqlite", "compaction_s"),
            _index("index_updates.json", "postgres", "compaction_s"),
        ),
        POSTGRES_PAGE,
    ),
    (
        "no write rebuilt the index",
        lambda: (
            "and no write rebuilt the index"
            if all(
                _index("index_updates.json", b, "rebuilds_during_writes") == 0
                for b in ("sqlite", "postgres")
            )
            else "(a write rebuilt the index: the page must not say otherwise)"
        ),
        POSTGRES_PAGE,
    ),
    # the service under load, from benchmarks/service.py --duration 60
    (
        "service load",
        lambda: "{:.2f} req/s, search p50/p95/p99 {} ms, investigate {} ms, {} errors".format(
            _load("service.json")["kinds"]["all"]["throughput_rps"],
            "/".join(
                f"{_load('service.json')['kinds']['search'][f'p{q}_ms']:.2f}" for q in (50, 95, 99)
            ),
            "/".join(
                f"{_load('service.json')['kinds']['investigate'][f'p{q}_ms']:.2f}"
                for q in (50, 95, 99)
            ),
            _load("service.json")["kinds"]["all"]["errors"],
        ),
        SERVICE_PAGE,
    ),
    # PostgreSQL full text against BM25, from benchmarks/beir.py --backend postgres
    (
        "PostgreSQL FTS on SciFact",
        lambda: (
            "SciFact nDCG@10 {:.3f} (`ts_rank_cd`, best normalisation) against BM25's {:.3f}; "
            "in-database FTS + HNSW fused {:.3f} vs the in-memory hybrid's {:.3f}"
        ).format(
            max(
                r["ndcg@10"]
                for r in _load("beir_postgres.json")["results"]
                if r["configuration"].startswith("PG full text")
            ),
            _beir("BM25 unstemmed", results="beir_postgres.json"),
            _beir("PG RRF gated", results="beir_postgres.json"),
            _beir("RRF gated", results="beir_postgres.json"),
        ),
        POSTGRES_PAGE,
    ),
    (
        "NAB run time",
        lambda: f"`benchmarks/results/nab.json`, {_load('nab.json')['seconds']:.1f} s",
        DETECTION_PAGE,
    ),
    ("NAB realAWSCloudwatch", lambda: f"ours {_scope('realAWSCloudwatch'):.1f}", DETECTION_PAGE),
    ("NAB low FP, all", lambda: f"| {_scope('all', 'reward_low_FP_rate'):.1f} |", DETECTION_PAGE),
    ("NAB low FN, all", lambda: f"| {_scope('all', 'reward_low_FN_rate'):.1f} |", DETECTION_PAGE),
    *(
        (f"NAB table, {scope}", lambda scope=scope: _nab_row(scope), DETECTION_PAGE)
        for scope in NAB_COLUMNS[:-1]
    ),
    (
        "NAB table, all 51, low FP / low FN",
        lambda: "| **all 51** | **{:.1f}** | {:.1f} | {:.1f} |".format(
            _scope("all"), _scope("all", "reward_low_FP_rate"), _scope("all", "reward_low_FN_rate")
        ),
        DETECTION_PAGE,
    ),
    # NAB leave-one-category-out and members side by side, from benchmarks/nab_sweep.py
    (
        "NAB LOCO grid size",
        lambda: f"scores {_load('nab_loco.json')['grid_size']} designs",
        DETECTION_PAGE,
    ),
    ("NAB whole-pipeline LOCO", _pipeline_loco, DETECTION_PAGE),
    ("NAB, the events' stream", _nab_events, DETECTION_PAGE),
    ("ARTime with NAB's look-ahead range", _artime_whole_range, DETECTION_PAGE),
    ("simulator, both detectors", _detection_totals, DETECTION_PAGE),
    ("detect --prometheus with and without history", lambda: _detect_history(), DETECTION_PAGE),
    *(
        (
            f"{command} on {family} with --history {history}",
            lambda c=command, f=family, h=history: _history_pair(c, f, h),
            DETECTION_PAGE,
        )
        for command, family, history in (
            ("detect", "opening", "1d"),
            ("detect", "opening", "0"),
            ("watch", "sine", "1d"),
            ("watch", "sine", "18h"),
            ("watch", "opening", "1d"),
            ("watch", "opening", "18h"),
        )
    ),
    *((f"NAB LOCO {c}", lambda c=c: _loco(c), DETECTION_PAGE) for c in NAB_COLUMNS[:-1]),
    (
        "NAB LOCO artificialNoAnomaly false positives",
        lambda: "artificialNoAnomaly {} false positives".format(
            _load("nab_loco.json")["loco"]["artificialNoAnomaly"]["held_fp_at_others_threshold"]
        ),
        DETECTION_PAGE,
    ),
    ("NAB LOCO span, measured row", _loco_span, RESULTS_PAGE),
    *(
        (f"NAB members, {label}", lambda label=label: _detectors_row(label), DETECTION_PAGE)
        for label in NAB_DETECTORS
    ),
    ("NAB members, shipped", _shipped_detectors_row, DETECTION_PAGE),
    # detector throughput, from benchmarks/detector.py --nab-file ...Twitter_volume_AAPL.csv
    (
        "detector streaming and batch",
        lambda: "streaming `update()` {:,.0f} points/s (p99 {:.2f} ms), batch {:,.0f}".format(
            _detector("ensemble streaming: update() per point"),
            _detector("ensemble streaming: update() per point", "p99_ms"),
            _detector("ensemble batch: fit() on the series"),
        ),
        DETECTION_PAGE,
    ),
    (
        "detector forest member alone",
        lambda: (
            f"the Isolation Forest member alone {_detector('member forest alone, batch'):,.0f} points/s"
        ),
        DETECTION_PAGE,
    ),
    (
        "ensemble at scale",
        lambda: (
            "(2,000 points each after a learning period of 750, one core, as a live watcher over "
            "many series is): {:,.0f} points/s, and {:,.0f} KB of Python heap per series".format(
                _detector("ensemble streaming: 1000 series round-robin"),
                _detector("ensemble streaming: 1000 series round-robin", "bytes_per_series") / 1000,
            )
        ),
        DETECTION_PAGE,
    ),
    (
        "ensemble state at steady state",
        lambda: "the state file holds {:,.1f} KB per series".format(
            _load("detector.json")["results"][STEADY]["state_file_bytes_per_series_by_points"][
                "12000"
            ]
            / 1000
        ),
        DETECTION_PAGE,
    ),
    (
        "watch series state at its defaults",
        lambda: (
            "saves {:,.1f} KB: the detector {:,.1f} KB and the confirmation rule {:,.1f} KB".format(
                *(
                    _load("detector.json")["results"][WATCH_ROW][key] / 1000
                    for key in (
                        "state_file_bytes_per_series",
                        "detector_bytes_per_series",
                        "confirmation_bytes_per_series",
                    )
                )
            )
        ),
        DETECTION_PAGE,
    ),
    (
        "watch series state before compression",
        lambda: (
            "({:,.1f} KB of JSON before the file was gzip-compressed: {:,.1f} KB and {:,.1f} KB;".format(
                *(
                    _load("detector.json")["results"][WATCH_ROW][key] / 1000
                    for key in (
                        "json_bytes_per_series",
                        "json_detector_bytes_per_series",
                        "json_confirmation_bytes_per_series",
                    )
                )
            )
        ),
        DETECTION_PAGE,
    ),
    (
        "watch state per poll of 1,000 series",
        lambda: (
            "about {:,.1f} MB written per poll for 1,000 series, within the 8 KB a series and "
            "10 MB a poll the issue asked for ({:,.1f} MB before the file was gzip-compressed)".format(
                *(
                    _load("detector.json")["results"][WATCH_ROW][key] * 1000 / 1e6
                    for key in (
                        "state_file_bytes_per_series",
                        "json_bytes_per_series",
                    )
                )
            )
        ),
        DETECTION_PAGE,
    ),
    (
        "steady state before compression",
        lambda: (
            "holds {:,.1f} KB per series ({:,.1f} KB at 3,000 points; {:,.1f} KB of JSON before "
            "the file was gzip-compressed".format(
                _load("detector.json")["results"][STEADY]["state_file_bytes_per_series_by_points"][
                    "12000"
                ]
                / 1000,
                _load("detector.json")["results"][STEADY]["state_file_bytes_per_series_by_points"][
                    "3000"
                ]
                / 1000,
                _load("detector.json")["results"][STEADY]["json_bytes_per_series_by_points"][
                    "12000"
                ]
                / 1000,
            )
        ),
        DETECTION_PAGE,
    ),
    ("state file at scale", _state_at_scale, DETECTION_PAGE),
    ("state file gzip levels", _state_levels, DETECTION_PAGE),
    ("state file gzip level, decision", _state_level_chosen, "docs/decisions.md"),
    (
        "simulator forest batch",
        lambda: "batch {:,.0f} points/s (its code is unchanged)".format(_detector("forest batch")),
        DETECTION_PAGE,
    ),
    (
        "NAB published peers, all 58",
        lambda: "published on all 58: ARTime {ARTime:.1f}, HTM {HTM:.1f}, CAD OSE {CAD:.1f}".format(
            ARTime=_load("nab.json")["scoreboard_all58"]["ARTime"],
            HTM=_load("nab.json")["scoreboard_all58"]["numenta HTM"],
            CAD=_load("nab.json")["scoreboard_all58"]["CAD OSE"],
        ),
        RESULTS_PAGE,
    ),
    (
        "CLI row: ingest wall time and chunks/s, both runtimes",
        lambda: "ingest of the 71 samples {:.1f} s vs {:.1f} s ({:.0f} and {:.0f} chunks/s".format(
            _runtime(_load("cli_latency.json"), "onnx")["ingest_s"],
            _runtime(_load("cli_latency.json"), "torch")["ingest_s"],
            _runtime(_load("cli_latency.json"), "onnx")["ingest_chunks_per_s"],
            _runtime(_load("cli_latency.json"), "torch")["ingest_chunks_per_s"],
        ),
        RESULTS_PAGE,
    ),
    (
        "CLI row: cold MCP start",
        lambda: (
            "a cold `seenbefore mcp` (new home, empty model cache) answers `initialize` in "
            "{initialize_s:.2f} s and `tools/list` in {tools_list_s:.2f} s; its first tool call, "
            "which exports MiniLM, in {first_call_s:.1f} s"
        ).format(**_load("cli_latency.json")["mcp_cold"]),
        RESULTS_PAGE,
    ),
    (
        "CLI row: MCP with MiniLM exported",
        lambda: (
            "on the sample KB with MiniLM already exported, the first tool call sent back to back "
            "with the handshake is answered {:.2f} s after process start; sent {:.0f} s after "
            "`tools/list`, as a client whose model decides first sends it, it waits {:.2f} s"
        ).format(
            _load("cli_latency.json")["mcp_exported"]["first_call_s"],
            _load("cli_latency.json")["mcp_exported_call_after_pause"]["pause_s"],
            _load("cli_latency.json")["mcp_exported_call_after_pause"]["first_call_wait_s"],
        ),
        RESULTS_PAGE,
    ),
    (
        "CLI row: python floor",
        lambda: "`python -c pass` takes {:.2f} s".format(
            _load("cli_latency.json")["python_pass_s"]
        ),
        RESULTS_PAGE,
    ),
    (
        "CLI row: serve start",
        lambda: (
            "a new `seenbefore serve` answers `/healthz` in {:.2f} s and is ready in {:.2f} s "
            "(with `--sample`, which ingests 71 postmortems behind the socket: {:.2f} s and {:.1f} s)"
        ).format(
            *(
                r[k]
                for r in _load("cli_latency.json")["serve_start"]
                for k in ("healthz_s", "readyz_s")
            )
        ),
        RESULTS_PAGE,
    ),
    # the golden cases, from seenbefore eval --report-dir
    (
        "golden cases, gated MiniLM novel P/R",
        lambda: "gated MiniLM {:.3f}/{:.3f}".format(
            _load("eval_golden.json")["modes"]["gated (MiniLM)"]["novel_precision"],
            _load("eval_golden.json")["modes"]["gated (MiniLM)"]["novel_recall"],
        ),
        RESULTS_PAGE,
    ),
    # BEIR SciFact, from benchmarks/beir.py --data ../shared/data/beir/scifact
    (
        "SciFact test queries",
        lambda: f"nDCG@10 ({_load('beir.json')['test_queries']} test queries)",
        RESULTS_PAGE,
    ),
    (
        "SciFact BM25 and published",
        lambda: "| BM25 {:.3f} (published {:.3f}); ".format(
            _beir("BM25 unstemmed"), _beir("BM25 unstemmed", "published_ndcg@10")
        ),
        RESULTS_PAGE,
    ),
    (
        "SciFact stemmed BM25 and Anserini",
        lambda: "stemmed BM25 {:.3f} (Anserini {:.3f}: ".format(
            _beir("BM25 stemmed"), _beir("BM25 stemmed", "published_ndcg@10")
        ),
        RESULTS_PAGE,
    ),
    (
        "SciFact MiniLM and MTEB",
        lambda: "MiniLM {:.3f} (MTEB {:.3f}); ".format(
            _beir("MiniLM"), _beir("MiniLM", "published_ndcg@10")
        ),
        RESULTS_PAGE,
    ),
    ("SciFact LSA", lambda: f"; LSA {_beir('LSA-128'):.3f}; ", RESULTS_PAGE),
    (
        "SciFact with word pairs",
        lambda: "BM25 + pairs {:.3f}, gated with pairs {:.3f} (dense weight {:g} by".format(
            _beir("BM25 stemmed + word pairs"),
            _beir("RRF gated, word pairs"),
            _load("beir.json")["timings_s"]["word-pair gate dense weight"],
        ),
        RESULTS_PAGE,
    ),
    (
        "SciFact as a KB serves it",
        lambda: (
            "the KB's own gate, dense weight {:g}): sparse {:.3f}, default hybrid {:.3f}".format(
                _load("beir.json")["kb_as_served"]["gate"],
                _beir("KB as served: sparse"),
                _beir("KB as served: default hybrid"),
            )
        ),
        RESULTS_PAGE,
    ),
    (
        "SciFact RRF equal",
        lambda: f"RRF equal weights {_beir('RRF equal w=0.5'):.3f}; ",
        RESULTS_PAGE,
    ),
    ("SciFact gated", lambda: f"**gated {_beir('RRF gated'):.3f}** (dense weight ", RESULTS_PAGE),
    (
        "SciFact gate weight and train queries",
        lambda: "(dense weight {:g} chosen by {}-fold CV on the {} train queries)".format(
            _load("beir.json")["gate"]["dense_weight"],
            _load("beir.json")["gate"]["evidence"]["folds"],
            _load("beir.json")["gate"]["evidence"]["cases"],
        ),
        RESULTS_PAGE,
    ),
    (
        "SciFact LanceDB",
        lambda: f"above LanceDB's hybrid {_beir('RRF gated', 'published_ndcg@10'):.3f}",
        RESULTS_PAGE,
    ),
    # graphrca leave-one-out by cause category, from benchmarks/categories.py
    (
        "graphrca queries and categories",
        lambda: (
            "precision@1 ({} real incidents over {} cause categories, majority class {:.3f}".format(
                _load("categories.json")["queries"],
                _load("categories.json")["categories"],
                _load("categories.json")["majority_share"],
            )
        ),
        RESULTS_PAGE,
    ),
    ("graphrca BM25", lambda: f"| BM25 {_category('sparse (BM25)'):.3f}, MiniLM", RESULTS_PAGE),
    ("graphrca MiniLM", lambda: f", MiniLM {_category('dense (minilm)'):.3f}, LSA", RESULTS_PAGE),
    ("graphrca LSA", lambda: f", LSA {_category('dense (lsa)'):.3f}, RRF", RESULTS_PAGE),
    (
        "graphrca RRF equal",
        lambda: f"RRF equal {_category('RRF equal weights (MiniLM)'):.3f}, ",
        RESULTS_PAGE,
    ),
    (
        "graphrca gated",
        lambda: f"gated {_category('gated'):.3f} (`benchmarks/results/categories.json`)",
        RESULTS_PAGE,
    ),
    # the prompt-injection scanner, from benchmarks/injection.py
    (
        "injection fixture caught",
        lambda: "| {}/{} fixture variants caught with the right kind".format(
            _injection()["fixture"]["detected_right_kind"], _injection()["fixture"]["variants"]
        ),
        RESULTS_PAGE,
    ),
    (
        "injection known misses caught",
        lambda: "; {}/{} documented known misses caught".format(
            len(_injection()["fixture"]["known_misses_now_caught"]),
            _injection()["fixture"]["known_misses"],
        ),
        RESULTS_PAGE,
    ),
    (
        "injection benign flagged",
        lambda: "; {}/{} benign sentences".format(
            len(_injection()["fixture"]["benign_flagged"]), _injection()["fixture"]["benign"]
        ),
        RESULTS_PAGE,
    ),
    (
        "injection benign root causes flagged, all languages",
        lambda: "{}/{} benign ones flagged over four sets".format(
            sum(
                v["benign_flagged"] for s in _injection()["languages"].values() for v in s.values()
            ),
            sum(v["benign"] for s in _injection()["languages"].values() for v in s.values()),
        ),
        RESULTS_PAGE,
    ),
    (
        "injection held_out_3 misses now",
        lambda: (
            ", ".join(
                f"{lang} {v['hostile_missed']}/{v['hostile']}"
                for lang, v in _injection()["languages"]["held_out_3"].items()
            )
            + " on held_out_3"
        ),
        RESULTS_PAGE,
    ),
    (
        "injection sample-KB chunks flagged",
        lambda: "and {}/{} sample-KB chunks flagged".format(
            _injection()["sample_kb"]["chunks_flagged"], _injection()["sample_kb"]["chunks"]
        ),
        RESULTS_PAGE,
    ),
    # offline investigation latency, from benchmarks/investigate.py --embedder lsa|minilm
    (
        "investigation LSA p95",
        lambda: f"LSA KB: p95 {_stage('lsa', 'end_to_end_ms', 'p95'):.1f} ms",
        RESULTS_PAGE,
    ),
    (
        "investigation MiniLM p50/p95/p99",
        lambda: "MiniLM KB: p50 {:.0f} ms, p95 {:.0f} ms, p99 {:.0f} ms".format(
            *(_stage("minilm", "end_to_end_ms", q) for q in ("p50", "p95", "p99"))
        ),
        RESULTS_PAGE,
    ),
    (
        "investigation MiniLM query embedding p50",
        lambda: f"query embedding (p50 {_stage('minilm', 'embed_ms', 'p50'):.0f} ms)",
        RESULTS_PAGE,
    ),
    # anomalies from the detector, from benchmarks/anomalies.py --seeds 16 --fresh
    (
        "anomaly cases",
        lambda: "| ranking, {} detected anomalies of the six origin types ({} seeds) |".format(
            _load("anomalies.json")["precedent_cases"], _load("anomalies.json")["seeds"]
        ),
        INVESTIGATION_PAGE,
    ),
    (
        "anomaly BM25",
        lambda: "| BM25 | {:.3f} (cpu_saturation {:.2f}) |".format(
            _anomaly("BM25"), _anomaly("BM25", "cpu_saturation")
        ),
        INVESTIGATION_PAGE,
    ),
    ("anomaly MiniLM", lambda: f"| MiniLM | {_anomaly('MiniLM'):.3f} |", INVESTIGATION_PAGE),
    (
        "anomaly BM25 + MiniLM",
        lambda: f"weight 0.3) | {_anomaly('BM25 + MiniLM (text default 0.3)'):.3f} |",
        INVESTIGATION_PAGE,
    ),
    (
        "anomaly signals alone",
        lambda: f"| signals alone | {_anomaly('signals'):.3f} |",
        INVESTIGATION_PAGE,
    ),
    ("anomaly profiles, shipped and chosen now", _anomaly_profile, INVESTIGATION_PAGE),
    (
        "anomaly confidence AUROC, ECE",
        lambda: "AUROC {:.2f}, ECE {:.2f}, novelty".format(
            _anomaly_confidence("auroc_precedent_vs_none"), _anomaly_confidence("ece")
        ),
        INVESTIGATION_PAGE,
    ),
    (
        "anomaly novelty P/R and reported right",
        lambda: "precision/recall {:.2f}/{:.2f}; {}".format(
            _anomaly_confidence("novel_precision"),
            _anomaly_confidence("novel_recall"),
            _reported_right(),
        ),
        INVESTIGATION_PAGE,
    ),
    (
        "anomalies, measured row",
        lambda: (
            "BM25 {:.3f}, MiniLM {:.3f}, BM25 + signals (shipped profile) **{:.3f}**; anomaly "
            "confidence AUROC {:.2f} held out"
        ).format(
            _anomaly("BM25"),
            _anomaly("MiniLM"),
            _anomaly("shipped profile"),
            _anomaly_confidence("auroc_precedent_vs_none"),
        ),
        RESULTS_PAGE,
    ),
    # ingest throughput without embedding, from benchmarks/ingest.py --budget 15
    (
        "ingest, sample KB",
        lambda: "{} sample docs ({} chunks) in {:.2f} s".format(
            _ingest("sample KB")["documents"],
            _ingest("sample KB")["chunks"],
            _ingest("sample KB")["seconds"],
        ),
        RESULTS_PAGE,
    ),
    (
        "ingest, SciFact 10k and 100k chunks",
        lambda: "10k chunks at {:,.0f} chunks/s, 100k at {:,.0f} chunks/s".format(
            _ingest("scifact-10k")["chunks_per_s"], _ingest("scifact-100k")["chunks_per_s"]
        ),
        RESULTS_PAGE,
    ),
    # seenbefore eval --self-test on the sample KB, from benchmarks/selftest.py
    (
        "self-test cases and overlap",
        lambda: "sample KB ({} leave-one-out cases, symptom text only, overlap {:.2f})".format(
            _load("selftest.json")["header"]["cases"].split()[0],
            _load("selftest.json")["mean_token_overlap"],
        ),
        RESULTS_PAGE,
    ),
    (
        "self-test MRR per mode",
        lambda: (
            "MRR: sparse {:.3f}, dense MiniLM {:.3f}, dense LSA {:.3f}, gated MiniLM {:.3f}".format(
                _selftest("sparse"),
                _selftest("dense (MiniLM)"),
                _selftest("dense (LSA)"),
                _selftest("gated (MiniLM)"),
            )
        ),
        RESULTS_PAGE,
    ),
    (
        "golden cases, counts and overlap",
        lambda: (
            "| golden cases ({}, {} with no precedent; mean query/postmortem token overlap "
            "{:.2f})".format(
                _load("eval_golden.json")["header"]["cases"].split()[0],
                _load("eval_golden.json")["header"]["cases"].split("(")[1].split()[0],
                _load("eval_golden.json")["mean_token_overlap"],
            )
        ),
        RESULTS_PAGE,
    ),
    (
        "golden cases, Hit@1",
        lambda: "Hit@1: sparse {:.3f}, dense MiniLM {:.3f}, gated MiniLM {:.3f};".format(
            _golden("sparse", "hit@1"),
            _golden("dense (MiniLM)", "hit@1"),
            _golden("gated (MiniLM)", "hit@1"),
        ),
        RESULTS_PAGE,
    ),
    (
        "golden cases, sparse novel P/R",
        lambda: "novel precision/recall: sparse {:.3f}/{:.3f},".format(
            _golden("sparse", "novel_precision"), _golden("sparse", "novel_recall")
        ),
        RESULTS_PAGE,
    ),
    ("golden cases, novel cases caught", _golden_novel_caught, RESULTS_PAGE),
    ("golden cases, AUROC span", _golden_auroc_span, RESULTS_PAGE),
    # the simulator's incidents, from benchmarks/detection.py
    (
        "detection incidents",
        lambda: "| detection, {} injected incidents over 48 h (seed {}) |".format(
            _load("detection.json")["incidents"], _load("detection.json")["seed"]
        ),
        RESULTS_PAGE,
    ),
    (
        "detection precision/recall",
        lambda: (
            "event-level precision {:.2f}, recall {:.2f} (`benchmarks/results/detection.json`)".format(
                _load("detection.json")["precision"], _load("detection.json")["recall"]
            )
        ),
        RESULTS_PAGE,
    ),
    # real incident text, from benchmarks/realtext.py --dense
    (
        "AWS Hit@1, default hybrid",
        lambda: f"**{_aws('ours hybrid (gated, default)'):.3f}**",
        RETRIEVAL_PAGE,
    ),
    (
        "AWS Hit@1, whole document",
        lambda: f"| {_aws('ours sparse, whole document (default)'):.3f} |",
        RETRIEVAL_PAGE,
    ),
    ("AWS Hit@1, best chunk", lambda: f"| {_aws('ours sparse, best chunk'):.3f} |", RETRIEVAL_PAGE),
    ("realtext table, peers", _peers_row, RETRIEVAL_PAGE),
    (
        "realtext table, best chunk",
        lambda: _realtext_row("ours, BM25 best chunk (before)", "ours sparse, best chunk"),
        RETRIEVAL_PAGE,
    ),
    (
        "realtext table, whole document",
        lambda: _realtext_row(
            "ours, BM25F whole document + word pairs", "ours sparse, whole document (default)"
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "realtext table, default hybrid",
        lambda: _realtext_row(
            "**ours, default hybrid (MiniLM, weight 0.3)**", "ours hybrid (gated, default)", True
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "realtext table, set sizes",
        lambda: "| Hit@1 | AWS events | graphrca ({}) | golden cases ({}) |".format(
            _load("realtext.json")["sets"]["graphrca"]["documents"],
            _load("realtext.json")["sets"]["sample-kb"]["cases"],
        ),
        RETRIEVAL_PAGE,
    ),
    # the same replays over six self-calibration seeds, from benchmarks/verdict_seeds.py --write
    (
        "seeds: sample summaries, none in the KB",
        lambda: (
            '"no precedent" for the queries with none in the KB runs {} (mean {}) and "found" '
            "for right tops {} (mean {}); all four Done-when cells hold in {} of {} seeds".format(
                _seed_range("sample-replay/summary", "none_none"),
                _seed_mean("sample-replay/summary", "none_none"),
                _seed_range("sample-replay/summary", "right_found"),
                _seed_mean("sample-replay/summary", "right_found"),
                _seeds("sample-replay/summary")["all_four_met"],
                _seeds("sample-replay/summary")["seeds"],
            )
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "seeds: AWS replay",
        lambda: (
            'AWS pager lines: "no precedent" for none {} (mean {}), "found" for right tops {}; '
            "first updates {} (mean {}) and {}".format(
                _seed_range("aws-replay/alert-line", "none_none"),
                _seed_mean("aws-replay/alert-line", "none_none"),
                _seed_range("aws-replay/alert-line", "right_found"),
                _seed_range("aws-replay/first-update", "none_none"),
                _seed_mean("aws-replay/first-update", "none_none"),
                _seed_range("aws-replay/first-update", "right_found"),
            )
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "seeds: the ranking hardly moves",
        lambda: "sample summaries {}, titles {}, AWS pager lines {}, first updates {}".format(
            *(_ceiling(c, "auroc") for c in SEED_CELLS)
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "seeds: what any thresholds could do",
        lambda: (
            "sample summaries {}, all four cells reachable in {} of 6 seeds; pager lines {}, {} "
            "of 6; titles {}, {} of 6; first updates {}, {} of 6 (at the best `hi`, {} of them "
            'are "found" in every style)'.format(
                *(
                    f(c)
                    for c in (SEED_CELLS[0], SEED_CELLS[2], SEED_CELLS[1], SEED_CELLS[3])
                    for f in (
                        lambda c: _ceiling(c, "none_below"),
                        lambda c: _seeds(c)["ceiling"]["reachable"],
                    )
                ),
                _span(_seeds(c)["ceiling"]["none_at_or_above"] for c in SEED_CELLS),
            )
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "seeds: the recurrence share trades cells",
        lambda: (
            "the sample summaries meet all four cells in {} of 6 seeds instead of {}, and the "
            'pager lines\' "no precedent" for none rises from a mean of {} to {} and {}; but right '
            'tops told "no precedent" rise on first updates from a mean of {} to {} and {}, and '
            "on titles from {} to {} and {}. Over the six seeds and four styles, {}, {} and {} "
            "of the 96 cells are met".format(
                _seeds(SEED_CELLS[0], RECURRENCE[1])["all_four_met"],
                _seeds(SEED_CELLS[0])["all_four_met"],
                *(_seed_mean(SEED_CELLS[2], "none_none", n) for n in RECURRENCE),
                *(_seed_mean(SEED_CELLS[3], "right_none", n) for n in RECURRENCE),
                *(_seed_mean(SEED_CELLS[1], "right_none", n) for n in RECURRENCE),
                *(_cells_met(n) for n in RECURRENCE),
            )
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "seeds: what mode_consistency adds, paired",
        lambda: (
            '"no precedent" for none on the sample replay from a mean of {} to {} (summaries) '
            "and {} to {} (titles), and leaves the AWS replay where it was (pager lines {} -> {}, "
            "first updates {} -> {})".format(
                *(
                    f(cell, "none_none")
                    for cell in (
                        "sample-replay/summary",
                        "sample-replay/title",
                        "aws-replay/alert-line",
                        "aws-replay/first-update",
                    )
                    for f in (
                        lambda c, k: _seed_mean(
                            c, k, "verdict_seeds_without_mode_consistency.json"
                        )[:-2],
                        _seed_mean,
                    )
                )
            )
        ),
        RETRIEVAL_PAGE,
    ),
    # small KBs (under MIN_DOCUMENTS) before and after the shipped text models were refitted,
    # from benchmarks/small_kb.py --write (--name small_kb_before_refit at the commit before)
    (
        "small KBs: what the refit of the shipped text models moved",
        lambda: (
            'right tops told "no precedent": sample summaries {}, titles {}, AWS pager lines {}, '
            'first updates {}, and "found": summaries {}, titles {}, pager lines {}, first '
            'updates {}; queries with none in the KB told "found": pager lines {}, first '
            'updates {}, summaries {}, titles {}; told "no precedent": summaries {}, titles {}, '
            'pager lines {}, first updates {}; off-topic claims "no precedent" {} (sample KB) '
            "and {} (AWS), {}. AUROC of p, right tops against none: summaries {}, "
            "titles {}, pager lines {}, first updates {}".format(
                *(
                    _small(c, g, s)
                    for c, g, s in (
                        ("sample/summary", "right", "none"),
                        ("sample/title", "right", "none"),
                        ("aws/alert-line", "right", "none"),
                        ("aws/first-update", "right", "none"),
                        ("sample/summary", "right", "found"),
                        ("sample/title", "right", "found"),
                        ("aws/alert-line", "right", "found"),
                        ("aws/first-update", "right", "found"),
                        ("aws/alert-line", "none", "found"),
                        ("aws/first-update", "none", "found"),
                        ("sample/summary", "none", "found"),
                        ("sample/title", "none", "found"),
                        ("sample/summary", "none", "none"),
                        ("sample/title", "none", "none"),
                        ("aws/alert-line", "none", "none"),
                        ("aws/first-update", "none", "none"),
                        ("sample/off-topic", "none", "none"),
                        ("aws/off-topic", "none", "none"),
                    )
                ),
                _never_found("sample/off-topic", "aws/off-topic"),
                *(
                    _small_auroc(c)
                    for c in (
                        "sample/summary",
                        "sample/title",
                        "aws/alert-line",
                        "aws/first-update",
                    )
                ),
            )
        ),
        RETRIEVAL_PAGE,
    ),
    # the review loop on the same replays, from benchmarks/verdict_reviews.py --write
    (
        "reviews: what a refit on people's labels moves",
        lambda: (
            '"no precedent" for none {} -> {} (mean), "found" for right tops {} -> {}, for wrong '
            'tops {} -> {}; on the AWS replay\'s pager lines "no precedent" for none {} -> {} and "found" '
            "for right tops {} -> {}. {} of 12 refits were kept on the sample KB, {} of 12".format(
                *(
                    _review_mean(cell, when, key)
                    for cell, key in (
                        ("sample-replay/summary", "none_none"),
                        ("sample-replay/summary", "right_found"),
                        ("sample-replay/summary", "wrong_found"),
                        ("aws-replay/alert-line", "none_none"),
                        ("aws-replay/alert-line", "right_found"),
                    )
                    for when in ("before", "after")
                ),
                _load("verdict_reviews.json")["summary"]["sample-replay/summary"]["refits_kept"],
                _load("verdict_reviews.json")["summary"]["aws-replay/alert-line"]["refits_kept"],
            )
        ),
        RETRIEVAL_PAGE,
    ),
    # what the user is told, from benchmarks/verdict.py --write
    *(
        (f"verdict table: {name}", lambda name=name: _verdict_row(name), RETRIEVAL_PAGE)
        for name in VERDICT_ROWS
    ),
    # the README's first hour and headline table: the same values as above, in the README's words
    (
        "first hour: sample chunks ingested with MiniLM",
        lambda: "Ingesting the {} sample chunks with MiniLM took {:.1f} s ({:.0f} chunks/s)".format(
            _runtime(_load("cli_latency.json"), "onnx")["chunks"],
            _runtime(_load("cli_latency.json"), "onnx")["ingest_s"],
            _runtime(_load("cli_latency.json"), "onnx")["ingest_chunks_per_s"],
        ),
        README,
    ),
    (
        "headline: AWS Hit@1",
        lambda: (
            "| real incident text: {} AWS Health events, Hit@1 | default hybrid {:.3f}, BM25F alone "
            "{:.3f};"
        ).format(
            _load("realtext.json")["sets"]["aws"]["cases"],
            _aws("ours hybrid (gated, default)"),
            _aws("ours sparse, whole document (default)"),
        ),
        README,
    ),
    (
        "headline: the verdict",
        lambda: (
            'off-topic text told "precedent found": {} of {} '
            'queries on every KB; false "no precedent" with the precedent first {:.1f} % (AWS '
            "first updates), {:.1f} % (time-ordered replay) |"
        ).format(
            sum(
                round(c["found_when_none"] * c["queries"])
                for n, c in _load("verdict.json")["cells"].items()
                if n.endswith(("/off-topic", "/scifact-claim"))
            ),
            sum(
                c["queries"]
                for n, c in _load("verdict.json")["cells"].items()
                if n.endswith(("/off-topic", "/scifact-claim"))
            ),
            100
            * _load("verdict.json")["cells"]["aws/first-update"]["false_no_precedent_when_first"],
            100
            * _load("verdict.json")["cells"]["aws-replay/first-update"][
                "false_no_precedent_when_first"
            ],
        ),
        README,
    ),
    (
        "headline: SciFact",
        lambda: "| gated hybrid {:.3f} vs BM25 {:.3f}; as a KB serves it {:.3f} |".format(
            _beir("RRF gated"), _beir("BM25 unstemmed"), _beir("KB as served: default hybrid")
        ),
        README,
    ),
    (
        "headline: graphrca",
        lambda: (
            "({} real incidents), precision@1 by cause category | gated {:.3f} (majority class "
            "{:.3f}) |"
        ).format(
            _load("categories.json")["queries"],
            _category("gated"),
            _load("categories.json")["majority_share"],
        ),
        README,
    ),
    ("headline: golden cases", _headline_golden, README),
    (
        "headline: anomalies",
        lambda: (
            "right incident type first ({} anomalies) | {:.3f} with the anomaly profile (BM25 "
            "alone {:.3f}) |"
        ).format(
            _load("anomalies.json")["precedent_cases"],
            _anomaly("shipped profile"),
            _anomaly("BM25"),
        ),
        README,
    ),
    (
        "headline: detection",
        lambda: (
            "| simulated incidents ({} injected over 48 h) | event-level precision {:.2f}, "
            "recall {:.2f} |"
        ).format(
            _load("detection.json")["incidents"],
            _load("detection.json")["precision"],
            _load("detection.json")["recall"],
        ),
        README,
    ),
    ("headline: NAB", _headline_nab, README),
    (
        "headline: search latency at 100k chunks",
        lambda: "| filtered search at 100k chunks, SQLite | hybrid p50/p95 {} ms |".format(
            _lat("100000 chunks", "kb.search hybrid")
        ),
        README,
    ),
    (
        "headline: service load",
        lambda: "| the service under load ({} clients) | {:.2f} req/s, {} errors |".format(
            _load("service.json")["clients"],
            _load("service.json")["kinds"]["all"]["throughput_rps"],
            _load("service.json")["kinds"]["all"]["errors"],
        ),
        README,
    ),
    (
        "headline: CLI wall time",
        lambda: "| search p50 {:.2f} s (ONNX Runtime); `make demo` {:.1f} s;".format(
            _runtime(_load("cli_latency.json"), "onnx")["search_wall_p50_s"],
            _load("cli_latency.json")["demo_s"],
        ),
        README,
    ),
    # a draft with the real small model, from benchmarks/llm_drafts.py --write
    (
        "headline: real-model drafts",
        lambda: (
            "; 8192-token window: {:.0f} % accepted, {:.0f} % rejected as truncated, {} timed out; "
            "wall median {:.1f} s, max {:.1f} s |"
        ).format(  # the CLI wall-time row's second half
            100 * _load("llm_drafts.json")["runs"][0]["shares"].get("accepted", 0),
            100 * _load("llm_drafts.json")["runs"][0]["shares"].get("rejected: truncated", 0),
            _load("llm_drafts.json")["runs"][0]["timed_out"],
            _load("llm_drafts.json")["runs"][0]["wall_s"]["median"],
            _load("llm_drafts.json")["runs"][0]["wall_s"]["max"],
        ),
        README,
    ),
    # alert lines, from benchmarks/alert_lines.py
    (
        "alert lines, identity weight",
        lambda: (
            "right incident type first for {:.3f} of {} alert lines at weight {:g}, "
            "against {:.3f} with every word at 1".format(
                _alerts(
                    "hybrid w={:g}".format(_load("alert_lines.json")["shipped_identity_weight"])
                ),
                _load("alert_lines.json")["cases"],
                _load("alert_lines.json")["shipped_identity_weight"],
                _alerts("hybrid w=1"),
            )
        ),
        RETRIEVAL_PAGE,
    ),
    (
        "alert lines, weight sweep",
        lambda: (
            "default-mode type Hit@1 "
            + " / ".join(
                f"{_alerts(f'hybrid w={w}'):.3f}" for w in ("1", "0.5", "0.25", "0.1", "0")
            )
        ),
        "docs/decisions.md",
    ),
]


def _alerts(row: str) -> float:
    return float(_load("alert_lines.json")["figures"][row]["type_hit_at_1"])


@pytest.mark.parametrize(
    ("what", "expected", "page"), FIGURES, ids=[f"{w} ({p})" for w, _, p in FIGURES]
)
def test_page_quotes_the_committed_figure(
    what: str, expected: Callable[[], str], page: str
) -> None:
    text = " ".join(expected().split())
    assert text in _flat(page), (
        f"{page} does not say {text!r} ({what}); re-copy it from the results"
    )


def test_readme_is_a_short_guide() -> None:
    lines = _read(README).splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}); move detail into docs/"
    )


FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!\\)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _links(text: str) -> list[str]:
    """Link targets outside fenced code; inline code stays a word, so [`x.json`](...) is a link."""
    return LINK.findall(INLINE_CODE.sub("code", FENCE.sub("", text)))


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats -1, -2."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = "".join(
            c for c in plain.lower() if c in "-_ " or unicodedata.category(c)[0] in "LN"
        ).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


DOC_PAGES = [README, *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", DOC_PAGES)
def test_relative_links_point_at_files_that_exist(page: str) -> None:
    source = ROOT / page
    broken = []
    for target in _links(_read(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # https:, mailto: ...: not a file in the repository
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.exists():
            broken.append(f"{target} (no {os.path.relpath(resolved, ROOT)})")
        elif (
            anchor
            and resolved.suffix == ".md"
            and anchor not in _anchors(resolved.read_text(encoding="utf-8"))
        ):
            broken.append(f"{target} (no heading #{anchor} in {path or page})")
    assert not broken, f"{page} links to what is not there: {broken}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in _links(_read(README))}
    missing = [p for p in DOC_PAGES[1:] if (ROOT / p).resolve() not in linked]
    assert not missing, f"README.md does not link {missing}"


def _headline_rows() -> list[str]:
    text = _read(README)
    start = text.index("\n## Headline figures")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert len(rows) > 2, "README.md's headline figures are not a table"
    return rows[2:]  # past the header and the |---| line


def test_readme_headline_rows_name_their_docs_page_and_results_file() -> None:
    rows = _headline_rows()
    assert len(rows) <= 10, f"{len(rows)} headline rows: keep it to a handful, the rest in docs/"
    for row in rows:
        pages = [t for t in _links(row) if re.match(r"^docs/[\w.-]+\.md(#|$)", t)]
        assert pages, f"headline row links no docs page: {row}"
        for target in pages:
            assert (ROOT / target.partition("#")[0]).is_file(), f"{target} is missing: {row}"
        results = re.findall(r"benchmarks/results/[\w.-]+\.json", row)
        assert results, f"headline row names no benchmarks/results/*.json file: {row}"
        for name in results:
            assert (ROOT / name).is_file(), f"{name} is not committed: {row}"


def test_every_results_file_says_which_command_made_it() -> None:
    files = sorted(RESULTS.glob("*.json"))
    assert files, "no committed results"
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert str(data.get("command", "")).strip(), f"{path.name} does not record its command"
