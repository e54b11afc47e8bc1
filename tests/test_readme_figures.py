"""Figures the README quotes are the ones in the committed results files (benchmarks/results/),
written by the command each file records: a figure changed in one place and not the other fails.

Each row: the text the README must contain, built from a value read out of a results file. When a
benchmark is re-run and its JSON committed, the README has to follow (or this test says which
sentence is stale)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = (ROOT / "README.md").read_text(encoding="utf-8")
# prose wraps: a figure's sentence may break across lines, so compare with runs of whitespace as one
FLAT_README = " ".join(README.split())


def _load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


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
# README row label -> nab_loco.json side_by_side key
NAB_DETECTORS = {
    "range (spatial)": "spatial",
    "sequence novelty + likelihood": "sequence",
    "change novelty + likelihood": "delta",
    "relative entropy": "entropy",
    "robust z + likelihood": "robust_z",
    "Isolation Forest + likelihood": "forest",
    "range + sequence": "spatial + sequence",
    "range + entropy + sequence": "spatial + entropy + sequence",
    "range + sequence + forest": "spatial + sequence + forest",
    "all six": "all six",
}


def _nab_row(scope: str) -> str:
    files = sum(f.startswith(scope + "/") for f in _load("nab.json")["per_file"])
    profiles = ("standard", "reward_low_FP_rate", "reward_low_FN_rate")
    scores = " | ".join(f"{_scope(scope, p):.1f}" for p in profiles)
    return f"| {scope} ({files}) | {scores} |"


def _detectors_row(label: str) -> str:
    row = _load("nab_loco.json")["side_by_side"][NAB_DETECTORS[label]]
    return f"| {label} | " + " | ".join(f"{row[c]:.1f}" for c in NAB_COLUMNS) + " |"


def _shipped_detectors_row() -> str:
    row = _load("nab_loco.json")["side_by_side"]["spatial + sequence + delta"]
    cells = [f"{row[c]:.1f}" for c in NAB_COLUMNS[:-1]] + [f"**{row['all']:.1f}**"]
    return "| **range + sequence + change (shipped)** | " + " | ".join(cells) + " |"


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


def _golden(mode: str, key: str) -> float:
    return float(_load("eval_golden.json")["modes"][mode][key])


def _golden_novel_caught() -> str:
    total = int(_load("eval_golden.json")["header"]["cases"].split("(")[1].split()[0])
    caught = round(_golden("gated (MiniLM)", "novel_recall") * total)
    return f"({caught} of the {total} novel cases caught"


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
    """p50/p95 (or p50/p95/p99) of one latency row, as the README prints them."""
    data = _load("latency.json")
    row = data["summary" if what.startswith("kb.search") else "results"][scope][what]
    return "/".join(f"{row[k]:.2f}" for k in which.split("/"))


def _seeds_sentence() -> str:
    seeds = _load("realtext.json")["sets"]["aws-novelty-seeds"]
    summary = seeds["summary"]
    return "sparse over {} halves: AUROC {:.3f}–{:.3f}, ECE {:.3f}–{:.3f}".format(
        ["one", "two", "three", "four", "five", "six"][len(seeds["seeds"]) - 1],
        summary["auroc_precedent"]["min"],
        summary["auroc_precedent"]["max"],
        summary["ece"]["min"],
        summary["ece"]["max"],
    )


def _realtext_novel(split: str, key: str) -> float:
    return _aws("ours hybrid (gated, default)", f"novelty/{key}", split)


def _scope(category: str, profile: str = "standard") -> float:
    return float(_load("nab.json")["scopes"][category][profile]["normalised"])


# (what the figure is, the text the README must contain, built from the results file)
FIGURES: list[tuple[str, Callable[[], str]]] = [
    # the first hour, from benchmarks/cli_latency.py --demo
    ("make demo after install", lambda: f"**{_load('cli_latency.json')['demo_s']:.1f} s**"),
    (
        "search p50, ONNX",
        lambda: f"**{_runtime(_load('cli_latency.json'), 'onnx')['search_wall_p50_s']:.2f} s**",
    ),
    (
        "search p50, sentence-transformers",
        lambda: f"{_runtime(_load('cli_latency.json'), 'torch')['search_wall_p50_s']:.2f} s on",
    ),
    (
        "sample ingest, ONNX",
        lambda: f"took {_runtime(_load('cli_latency.json'), 'onnx')['ingest_s']:.1f} s",
    ),
    # NAB, from seenbefore nab ... --json
    ("NAB all 51, standard", lambda: f"**{_load('nab.json')['normalised_score']:.1f}**"),
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
    ),
    (
        "NAB run time",
        lambda: f"`benchmarks/results/nab.json`, {_load('nab.json')['seconds']:.1f} s",
    ),
    ("NAB realAWSCloudwatch", lambda: f"ours {_scope('realAWSCloudwatch'):.1f}"),
    ("NAB low FP, all", lambda: f"| {_scope('all', 'reward_low_FP_rate'):.1f} |"),
    ("NAB low FN, all", lambda: f"| {_scope('all', 'reward_low_FN_rate'):.1f} |"),
    *((f"NAB table, {scope}", lambda scope=scope: _nab_row(scope)) for scope in NAB_COLUMNS[:-1]),
    (
        "NAB table, all 51, low FP / low FN",
        lambda: "| **all 51** | **{:.1f}** | {:.1f} | {:.1f} |".format(
            _scope("all"), _scope("all", "reward_low_FP_rate"), _scope("all", "reward_low_FN_rate")
        ),
    ),
    # NAB leave-one-category-out and members side by side, from benchmarks/nab_sweep.py
    (
        "NAB LOCO grid size",
        lambda: f"the best of {_load('nab_loco.json')['grid_size']} configurations",
    ),
    *((f"NAB LOCO {c}", lambda c=c: _loco(c)) for c in NAB_COLUMNS[:-1]),
    (
        "NAB LOCO artificialNoAnomaly false positives",
        lambda: "artificialNoAnomaly {} false positives".format(
            _load("nab_loco.json")["loco"]["artificialNoAnomaly"]["held_fp_at_others_threshold"]
        ),
    ),
    ("NAB LOCO span, measured row", _loco_span),
    *(
        (f"NAB members, {label}", lambda label=label: _detectors_row(label))
        for label in NAB_DETECTORS
    ),
    ("NAB members, shipped", _shipped_detectors_row),
    # detector throughput, from benchmarks/detector.py --nab-file ...Twitter_volume_AAPL.csv
    (
        "detector streaming and batch",
        lambda: "streaming `update()` {:,.0f} points/s (p99 {:.2f} ms), batch {:,.0f}".format(
            _detector("ensemble streaming: update() per point"),
            _detector("ensemble streaming: update() per point", "p99_ms"),
            _detector("ensemble batch: fit() on the series"),
        ),
    ),
    (
        "detector forest member alone",
        lambda: (
            f"the Isolation Forest member alone {_detector('member forest alone, batch'):,.0f} points/s"
        ),
    ),
    (
        "simulator forest batch",
        lambda: "batch {:,.0f} points/s (its code is unchanged)".format(_detector("forest batch")),
    ),
    (
        "NAB published peers, all 58",
        lambda: "published on all 58: ARTime {ARTime:.1f}, HTM {HTM:.1f}, CAD OSE {CAD:.1f}".format(
            ARTime=_load("nab.json")["scoreboard_all58"]["ARTime"],
            HTM=_load("nab.json")["scoreboard_all58"]["numenta HTM"],
            CAD=_load("nab.json")["scoreboard_all58"]["CAD OSE"],
        ),
    ),
    (
        "CLI row: ingest wall time and chunks/s, both runtimes",
        lambda: "ingest of the 71 samples {:.1f} s vs {:.1f} s ({:.0f} chunks/s both".format(
            _runtime(_load("cli_latency.json"), "onnx")["ingest_s"],
            _runtime(_load("cli_latency.json"), "torch")["ingest_s"],
            _runtime(_load("cli_latency.json"), "onnx")["ingest_chunks_per_s"],
        ),
    ),
    # the golden cases, from seenbefore eval --report-dir
    (
        "golden cases, gated MiniLM novel P/R",
        lambda: "gated MiniLM {:.3f}/{:.3f}".format(
            _load("eval_golden.json")["modes"]["gated (MiniLM)"]["novel_precision"],
            _load("eval_golden.json")["modes"]["gated (MiniLM)"]["novel_recall"],
        ),
    ),
    # BEIR SciFact, from benchmarks/beir.py --data ../shared/data/beir/scifact
    (
        "SciFact test queries",
        lambda: f"nDCG@10 ({_load('beir.json')['test_queries']} test queries)",
    ),
    (
        "SciFact BM25 and published",
        lambda: "| BM25 {:.3f} (published {:.3f}); ".format(
            _beir("BM25 unstemmed"), _beir("BM25 unstemmed", "published_ndcg@10")
        ),
    ),
    (
        "SciFact stemmed BM25 and Anserini",
        lambda: "stemmed BM25 {:.3f} (Anserini {:.3f}: ".format(
            _beir("BM25 stemmed"), _beir("BM25 stemmed", "published_ndcg@10")
        ),
    ),
    (
        "SciFact MiniLM and MTEB",
        lambda: "MiniLM {:.3f} (MTEB {:.3f}); ".format(
            _beir("MiniLM"), _beir("MiniLM", "published_ndcg@10")
        ),
    ),
    ("SciFact LSA", lambda: f"; LSA {_beir('LSA-128'):.3f}; "),
    (
        "SciFact with word pairs",
        lambda: "BM25 + pairs {:.3f}, gated with pairs {:.3f} (dense weight {:g} by".format(
            _beir("BM25 stemmed + word pairs"),
            _beir("RRF gated, word pairs"),
            _load("beir.json")["timings_s"]["word-pair gate dense weight"],
        ),
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
    ),
    ("SciFact RRF equal", lambda: f"RRF equal weights {_beir('RRF equal w=0.5'):.3f}; "),
    ("SciFact gated", lambda: f"**gated {_beir('RRF gated'):.3f}** (dense weight "),
    (
        "SciFact gate weight and train queries",
        lambda: "(dense weight {:g} chosen by {}-fold CV on the {} train queries)".format(
            _load("beir.json")["gate"]["dense_weight"],
            _load("beir.json")["gate"]["evidence"]["folds"],
            _load("beir.json")["gate"]["evidence"]["cases"],
        ),
    ),
    (
        "SciFact LanceDB",
        lambda: f"above LanceDB's hybrid {_beir('RRF gated', 'published_ndcg@10'):.3f}",
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
    ),
    ("graphrca BM25", lambda: f"| BM25 {_category('sparse (BM25)'):.3f}, MiniLM"),
    ("graphrca MiniLM", lambda: f", MiniLM {_category('dense (minilm)'):.3f}, LSA"),
    ("graphrca LSA", lambda: f", LSA {_category('dense (lsa)'):.3f}, RRF"),
    ("graphrca RRF equal", lambda: f"RRF equal {_category('RRF equal weights (MiniLM)'):.3f}, "),
    (
        "graphrca gated",
        lambda: f"gated {_category('gated'):.3f} (`benchmarks/results/categories.json`)",
    ),
    # the prompt-injection scanner, from benchmarks/injection.py
    (
        "injection fixture caught",
        lambda: "| {}/{} fixture variants caught with the right kind".format(
            _injection()["fixture"]["detected_right_kind"], _injection()["fixture"]["variants"]
        ),
    ),
    (
        "injection known misses caught",
        lambda: "; {}/{} documented known misses caught".format(
            len(_injection()["fixture"]["known_misses_now_caught"]),
            _injection()["fixture"]["known_misses"],
        ),
    ),
    (
        "injection benign flagged",
        lambda: "; {}/{} benign sentences".format(
            len(_injection()["fixture"]["benign_flagged"]), _injection()["fixture"]["benign"]
        ),
    ),
    (
        "injection sample-KB chunks flagged",
        lambda: "and {}/{} sample-KB chunks flagged".format(
            _injection()["sample_kb"]["chunks_flagged"], _injection()["sample_kb"]["chunks"]
        ),
    ),
    # offline investigation latency, from benchmarks/investigate.py --embedder lsa|minilm
    (
        "investigation LSA p95",
        lambda: f"LSA KB: p95 {_stage('lsa', 'end_to_end_ms', 'p95'):.1f} ms",
    ),
    (
        "investigation MiniLM p50/p95/p99",
        lambda: "MiniLM KB: p50 {:.0f} ms, p95 {:.0f} ms, p99 {:.0f} ms".format(
            *(_stage("minilm", "end_to_end_ms", q) for q in ("p50", "p95", "p99"))
        ),
    ),
    (
        "investigation MiniLM query embedding p50",
        lambda: f"query embedding (p50 {_stage('minilm', 'embed_ms', 'p50'):.0f} ms)",
    ),
    # anomalies from the detector, from benchmarks/anomalies.py --seeds 16 --fresh
    (
        "anomaly cases",
        lambda: "| ranking, {} detected anomalies of the six origin types ({} seeds) |".format(
            _load("anomalies.json")["precedent_cases"], _load("anomalies.json")["seeds"]
        ),
    ),
    (
        "anomaly BM25",
        lambda: "| BM25 | {:.3f} (cpu_saturation {:.2f}) |".format(
            _anomaly("BM25"), _anomaly("BM25", "cpu_saturation")
        ),
    ),
    ("anomaly MiniLM", lambda: f"| MiniLM | {_anomaly('MiniLM'):.3f} |"),
    (
        "anomaly BM25 + MiniLM",
        lambda: f"weight 0.3) | {_anomaly('BM25 + MiniLM (text default 0.3)'):.3f} |",
    ),
    ("anomaly signals alone", lambda: f"| signals alone | {_anomaly('signals'):.3f} |"),
    ("anomaly profiles, shipped and chosen now", _anomaly_profile),
    (
        "anomaly confidence AUROC, ECE",
        lambda: "AUROC {:.2f}, ECE {:.2f}, novelty".format(
            _anomaly_confidence("auroc_precedent_vs_none"), _anomaly_confidence("ece")
        ),
    ),
    (
        "anomaly novelty P/R and reported right",
        lambda: "precision/recall {:.2f}/{:.2f}; {}".format(
            _anomaly_confidence("novel_precision"),
            _anomaly_confidence("novel_recall"),
            _reported_right(),
        ),
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
    ),
    # ingest throughput without embedding, from benchmarks/ingest.py --budget 15
    (
        "ingest, sample KB",
        lambda: "{} sample docs ({} chunks) in {:.2f} s".format(
            _ingest("sample KB")["documents"],
            _ingest("sample KB")["chunks"],
            _ingest("sample KB")["seconds"],
        ),
    ),
    (
        "ingest, SciFact 10k and 100k chunks",
        lambda: "10k chunks at {:,.0f} chunks/s, 100k at {:,.0f} chunks/s".format(
            _ingest("scifact-10k")["chunks_per_s"], _ingest("scifact-100k")["chunks_per_s"]
        ),
    ),
    # seenbefore eval --self-test on the sample KB, from benchmarks/selftest.py
    (
        "self-test cases and overlap",
        lambda: "sample KB ({} leave-one-out cases, symptom text only, overlap {:.2f})".format(
            _load("selftest.json")["header"]["cases"].split()[0],
            _load("selftest.json")["mean_token_overlap"],
        ),
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
    ),
    (
        "golden cases, Hit@1",
        lambda: "Hit@1: sparse {:.3f}, dense MiniLM {:.3f}, gated MiniLM {:.3f};".format(
            _golden("sparse", "hit@1"),
            _golden("dense (MiniLM)", "hit@1"),
            _golden("gated (MiniLM)", "hit@1"),
        ),
    ),
    (
        "golden cases, sparse novel P/R",
        lambda: "novel precision/recall: sparse {:.3f}/{:.3f},".format(
            _golden("sparse", "novel_precision"), _golden("sparse", "novel_recall")
        ),
    ),
    ("golden cases, novel cases caught", _golden_novel_caught),
    ("golden cases, AUROC span", _golden_auroc_span),
    # the simulator's incidents, from benchmarks/detection.py
    (
        "detection incidents",
        lambda: "| detection, {} injected incidents over 48 h (seed {}) |".format(
            _load("detection.json")["incidents"], _load("detection.json")["seed"]
        ),
    ),
    (
        "detection precision/recall",
        lambda: (
            "event-level precision {:.2f}, recall {:.2f} (`benchmarks/results/detection.json`)".format(
                _load("detection.json")["precision"], _load("detection.json")["recall"]
            )
        ),
    ),
    # real incident text, from benchmarks/realtext.py --dense
    ("AWS Hit@1, default hybrid", lambda: f"**{_aws('ours hybrid (gated, default)'):.3f}**"),
    (
        "AWS Hit@1, whole document",
        lambda: f"| {_aws('ours sparse, whole document (default)'):.3f} |",
    ),
    ("AWS Hit@1, best chunk", lambda: f"| {_aws('ours sparse, best chunk'):.3f} |"),
    ("realtext table, peers", _peers_row),
    (
        "realtext table, best chunk",
        lambda: _realtext_row("ours, BM25 best chunk (before)", "ours sparse, best chunk"),
    ),
    (
        "realtext table, whole document",
        lambda: _realtext_row(
            "ours, BM25F whole document + word pairs", "ours sparse, whole document (default)"
        ),
    ),
    (
        "realtext table, default hybrid",
        lambda: _realtext_row(
            "**ours, default hybrid (MiniLM, weight 0.3)**", "ours hybrid (gated, default)", True
        ),
    ),
    (
        "realtext table, set sizes",
        lambda: "| Hit@1 | AWS events | graphrca ({}) | golden cases ({}) |".format(
            _load("realtext.json")["sets"]["graphrca"]["documents"],
            _load("realtext.json")["sets"]["sample-kb"]["cases"],
        ),
    ),
    (
        "AWS novelty: events without precedent",
        lambda: "so that {} of the {} first updates have no precedent".format(
            _load("realtext.json")["sets"]["aws-novelty"]["cases"]
            - _load("realtext.json")["sets"]["aws-novelty"]["documents"],
            _load("realtext.json")["sets"]["aws-novelty"]["cases"],
        ),
    ),
    (
        "AWS novelty P/R",
        lambda: "novel precision {:.2f} and recall {:.2f}".format(
            _realtext_novel("aws-novelty", "novel_precision"),
            _realtext_novel("aws-novelty", "novel_recall"),
        ),
    ),
    (
        "AWS, every event present: share called novel",
        lambda: f"it calls {_realtext_novel('aws', 'novel_rate') * 100:.0f} % of the queries novel",
    ),
    (
        "graphrca: share called novel",
        lambda: f"(it calls {_realtext_novel('graphrca', 'novel_rate') * 100:.0f} % novel)",
    ),
    (
        "AWS Hit@1, rank_bm25 / bm25s",
        lambda: f"{_aws('rank_bm25 (BM25Okapi)'):.3f} / {_aws('bm25s'):.3f}",
    ),
    (
        "AWS novelty AUROC",
        lambda: (
            "AUROC "
            f"{_aws('ours hybrid (gated, default)', 'novelty/auroc_precedent', 'aws-novelty'):.3f}"
        ),
    ),
    (
        "AWS novelty ECE",
        lambda: f"ECE {_aws('ours hybrid (gated, default)', 'novelty/ece', 'aws-novelty'):.3f}",
    ),
    (
        "AWS novelty: ceiling of the signals with the task's labels",
        lambda: "reaches only {:.3f}".format(
            _load("realtext.json")["sets"]["aws-novelty"]["signal_ceiling"][
                "ours hybrid (gated, default)"
            ]["auroc_precedent_cv_with_task_labels"]
        ),
    ),
    (
        "AWS novelty: boosted-trees ceiling",
        lambda: "boosted trees on them {:.3f}".format(
            _load("realtext.json")["sets"]["aws-novelty"]["signal_ceiling"][
                "ours hybrid (gated, default)"
            ]["auroc_precedent_cv_with_task_labels_boosted_trees"]
        ),
    ),
    ("AWS novelty over five halves", lambda: _seeds_sentence()),
    (
        "AWS novelty without the doubtful labels",
        lambda: (
            "{} left-out labels are doubtful; without them the default hybrid's AUROC is "
            "{:.3f} (sparse {:.3f}, over five halves {:.3f}–{:.3f})".format(
                _load("realtext.json")["sets"]["aws-novelty"]["left_out_ambiguous"],
                _aws(
                    "ours hybrid (gated, default)",
                    "novelty_without_ambiguous/auroc_precedent",
                    "aws-novelty",
                ),
                _aws(
                    "ours sparse, whole document (default)",
                    "novelty_without_ambiguous/auroc_precedent",
                    "aws-novelty",
                ),
                _load("realtext.json")["sets"]["aws-novelty-seeds"]["summary"][
                    "auroc_precedent_without_ambiguous"
                ]["min"],
                _load("realtext.json")["sets"]["aws-novelty-seeds"]["summary"][
                    "auroc_precedent_without_ambiguous"
                ]["max"],
            )
        ),
    ),
    (
        "AWS novelty: left-out events with a twin in the KB",
        lambda: "{} of the {} left-out events have a twin posted within the hour".format(
            _load("realtext.json")["sets"]["aws-novelty"]["left_out_cross_posted_within_1h"],
            _load("realtext.json")["sets"]["aws-novelty"]["cases"]
            - _load("realtext.json")["sets"]["aws-novelty"]["documents"],
        ),
    ),
]


@pytest.mark.parametrize(("what", "expected"), FIGURES, ids=[w for w, _ in FIGURES])
def test_readme_quotes_the_committed_figure(what: str, expected: Callable[[], str]) -> None:
    text = " ".join(expected().split())
    assert text in FLAT_README, (
        f"README does not say {text!r} ({what}); re-copy it from the results"
    )


def test_every_results_file_says_which_command_made_it() -> None:
    files = sorted(RESULTS.glob("*.json"))
    assert files, "no committed results"
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert str(data.get("command", "")).strip(), f"{path.name} does not record its command"
