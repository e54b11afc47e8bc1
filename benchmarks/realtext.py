"""Retrieval and confidence on text the project did not write, beside two BM25 peers.

    .venv/bin/python benchmarks/realtext.py --shared ../shared/data [--dense]

Dev sets (every one ranked by our modes and by rank_bm25 / bm25s, same process, same documents):
  * aws: the AWS Health Dashboard events with 2+ updates (../shared/data/README.md): query = the
    event's FIRST update, document = service name + summary (front matter) + LAST update (body).
    ``aws-novelty``: the same queries against a KB holding half the events (seeded): a query whose
    event was left out has no precedent. Its confidence model is the KB's own self-calibration
    (calibration/selfcal.py: fitted on cases the KB makes from itself, no labels from the task).
    ``aws-novelty-seeds``: the sparse default over --novelty-seeds different halves (how much one
    split moves), with how many left-out events have a twin posted within the hour in the KB.
    ``signal_ceiling``: a diagnostic, the AUROC a logistic model over the same signals reaches
    when fitted on the task's own labels (5-fold CV) -- what refitting could give at best.
  * graphrca: category cases as in benchmarks/fit_defaults.py (held-out categories are novel).
  * sample-kb: the packaged golden cases against examples/postmortems.
Peers see each document's whole text (front matter + body, chunk overlaps removed). Our modes:
sparse by whole document (BM25F, the default), by best chunk, by RRF of both; with --dense,
MiniLM dense and the gated hybrid (embeddings cached under --cache). Writes
benchmarks/results/realtext.json with the command, commit and machine.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results
from seenbefore.calibration.runs import CaseRun, timed_search
from seenbefore.config import Settings
from seenbefore.core.confidence import auroc, expected_calibration_error
from seenbefore.evaluation.cases import Case, load_cases
from seenbefore.evaluation.external import category_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.jsonl import FieldMapping
from seenbefore.retrieval.cache import CachingEmbedder
from seenbefore.retrieval.corpus import join_chunks
from seenbefore.retrieval.embedders import load_neural_embedder, neural_failure
from seenbefore.retrieval.hybrid import SearchOptions

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
TIERS = ("general", "restricted", "security")
HELD_OUT = ("Security", "Memory", "Cloud", "CI-CD", "Configuration")  # as fit_defaults.py
console = Console(width=200)  # whole figures in a log, not "Bri…"
Ranker = Callable[[Case], list[str]]


# -- data -------------------------------------------------------------------------------------
def aws_events(path: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [e for e in events if len(e["updates"]) >= 2]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "service"


def aws_markdown(event: dict[str, Any]) -> str:
    date = dt.datetime.fromtimestamp(int(event["date"]), dt.UTC).date().isoformat()
    title = json.dumps(f"{event['service_name']}: {event['summary']}")
    return (
        f"---\nid: {event['id']}\ntitle: {title}\ndate: {date}\n"
        f"services: [{_slug(event['service_name'])}]\n---\n"
        f"## Resolution\n{event['updates'][-1]['text'].strip()}\n"
    )


def aws_cases(events: Sequence[dict[str, Any]], present: set[str]) -> list[Case]:
    return [
        Case(
            id=e["id"],
            query=e["updates"][0]["text"],
            expected=(e["id"],) if e["id"] in present else (),
            expect_novel=e["id"] not in present,
        )
        for e in events
    ]


def build_kb(
    home: Path, paths: list[Path], mapping: str | None, dense: bool, cache: Path
) -> KnowledgeBase:
    explicit = None
    if dense:
        neural = load_neural_embedder()
        if neural is None:
            raise SystemExit(f"MiniLM unavailable: {neural_failure()}")
        explicit = CachingEmbedder(neural, cache)
    settings = Settings(home=home, embedder="minilm" if dense else "none")
    kb = KnowledgeBase(settings, embedder=explicit)
    if explicit is not None:
        kb.query_embedder = CachingEmbedder(explicit.inner, cache)
    kb.ingest(paths, mapping=FieldMapping.parse(mapping) if mapping else None)
    return kb


def document_texts(kb: KnowledgeBase) -> tuple[list[str], list[str]]:
    """(ids, whole texts) of every document: front matter chunk + body without overlaps."""
    rows = kb.store.chunk_rows()
    grouped: dict[str, list[str]] = {}
    for doc, text in zip(rows.doc_ids, rows.texts, strict=True):
        grouped.setdefault(doc, []).append(text)
    ids = sorted(grouped)
    return ids, [grouped[d][0] + " " + join_chunks(grouped[d][1:]) for d in ids]


# -- peers --------------------------------------------------------------------------------------
def _alnum(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def peer_rankers(ids: list[str], texts: list[str], k: int = 10) -> dict[str, Ranker]:
    import bm25s
    import numpy as np
    from rank_bm25 import BM25Okapi

    okapi = BM25Okapi([_alnum(t) for t in texts])
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)

    def top(scores: Any, case: Case) -> list[str]:
        order = np.argsort(-np.asarray(scores), kind="stable")
        out = [ids[i] for i in order if scores[i] > 0 and ids[i] not in case.exclude]
        return out[:k]

    def rank_bm25(case: Case) -> list[str]:
        return top(okapi.get_scores(_alnum(case.query)), case)

    def bm25s_run(case: Case) -> list[str]:
        tokens = bm25s.tokenize([case.query], show_progress=False)
        vocab = {v: i for i, v in tokens.vocab.items()}
        words = [vocab[i] for i in tokens.ids[0]]
        return top(retriever.get_scores(words), case) if words else []

    return {"rank_bm25 (BM25Okapi)": rank_bm25, "bm25s": bm25s_run}


# -- measuring -----------------------------------------------------------------------------------
def ir(cases: Sequence[Case], rankings: dict[str, list[str]]) -> dict[str, Any]:
    scored = [c for c in cases if not c.expect_novel]
    hit1 = hit3 = rr = 0.0
    for c in scored:
        ranking = rankings[c.id][:10]
        first = next((i for i, d in enumerate(ranking, 1) if d in c.relevant), None)
        hit1 += first == 1
        hit3 += first is not None and first <= 3
        rr += 1.0 / first if first else 0.0
    n = max(1, len(scored))
    return {"cases": len(scored), "hit@1": hit1 / n, "hit@3": hit3 / n, "mrr@10": rr / n}


def novelty(cases: Sequence[Case], runs: dict[str, CaseRun]) -> dict[str, Any]:
    has = [int(not c.expect_novel) for c in cases]
    conf = [runs[c.id].confidence for c in cases]
    flagged = [runs[c.id].novel for c in cases]
    truth = [c.expect_novel for c in cases]
    tp = sum(f and t for f, t in zip(flagged, truth, strict=True))
    correct = [runs[c.id].top_correct for c in cases]
    area = auroc(conf, has)
    return {
        "auroc_precedent": None if area != area else round(area, 4),
        "novel_precision": round(tp / sum(flagged), 4) if sum(flagged) else None,
        "novel_recall": round(tp / sum(truth), 4) if sum(truth) else None,
        "novel_rate": round(sum(flagged) / len(cases), 4),
        "ece": round(expected_calibration_error(conf, correct), 4),
        "confidence_range": [round(min(conf), 4), round(max(conf), 4)],
        "high_share": round(sum(p >= 0.75 for p in conf) / len(conf), 4),
    }


def our_modes(dense: bool) -> dict[str, SearchOptions]:
    modes = {
        "ours sparse, whole document (default)": SearchOptions(k=10, mode="sparse"),
        "ours sparse, best chunk": SearchOptions(k=10, mode="sparse", sparse_unit="chunk"),
        "ours sparse, RRF document+chunk": SearchOptions(k=10, mode="sparse", sparse_unit="both"),
    }
    if dense:
        modes["ours dense MiniLM"] = SearchOptions(k=10, mode="dense")
        modes["ours hybrid (gated, default)"] = SearchOptions(k=10, mode="hybrid")
        modes["ours hybrid, best chunk"] = SearchOptions(k=10, mode="hybrid", sparse_unit="chunk")
    return modes


def signal_ceiling(cases: Sequence[Case], runs: dict[str, CaseRun]) -> dict[str, Any]:
    """Diagnostic, not used by seenbefore: the AUROC for "has a precedent" that a logistic model
    over the same confidence signals reaches when fitted WITH THE TASK'S OWN LABELS (5-fold
    cross-validated). It bounds what refitting the confidence on these signals could give."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    names = sorted({k for c in cases for k in runs[c.id].signals})
    x = np.array([[runs[c.id].signals.get(k, 0.0) for k in names] for c in cases])
    y = np.array([int(not c.expect_novel) for c in cases])
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    model = LogisticRegression(max_iter=5000)
    p = cross_val_predict(model, x, y, cv=folds, method="predict_proba")[:, 1]
    # a non-linear model on the same signals: does the ceiling come from the model family?
    trees = HistGradientBoostingClassifier(max_depth=3, learning_rate=0.05, random_state=0)
    q = cross_val_predict(trees, x, y, cv=folds, method="predict_proba")[:, 1]
    return {
        "auroc_precedent_cv_with_task_labels": round(float(roc_auc_score(y, p)), 4),
        "auroc_precedent_cv_with_task_labels_boosted_trees": round(float(roc_auc_score(y, q)), 4),
        "signals": names,
        "note": "diagnostic upper bound: fitted on the task's labels, never shipped",
    }


def measure(
    name: str,
    kb: KnowledgeBase,
    cases: list[Case],
    dense: bool,
    ambiguous: set[str] | None = None,
) -> dict[str, Any]:
    """Every mode of ours and both peers on ``cases``; with ``ambiguous`` (case ids), each
    mode's novelty figures also without those cases (``novelty_without_ambiguous``)."""
    rows: dict[str, Any] = {}
    ids, texts = document_texts(kb)
    ceiling: dict[str, Any] = {}
    for mode, options in our_modes(dense).items():
        started = time.perf_counter()
        runs = {c.id: timed_search(kb, c, c.query, tiers=TIERS, options=options) for c in cases}
        row = ir(cases, {c: r.ranking for c, r in runs.items()})
        if any(c.expect_novel for c in cases) or name.startswith("aws"):
            row["novelty"] = novelty(cases, runs)
        if ambiguous:
            clear = [c for c in cases if c.id not in ambiguous]
            row["novelty_without_ambiguous"] = {"cases": len(clear), **novelty(clear, runs)}
        if "default" in mode and any(c.expect_novel for c in cases):
            ceiling[mode] = signal_ceiling(cases, runs)
        row["seconds"] = round(time.perf_counter() - started, 2)
        rows[mode] = row
    for peer, rank in peer_rankers(ids, texts).items():
        rows[peer] = ir(cases, {c.id: rank(c) for c in cases})
    out: dict[str, Any] = {"documents": len(ids), "cases": len(cases), "modes": rows}
    if ceiling:
        out["signal_ceiling"] = ceiling
    return out


def novelty_split(events: Sequence[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The events a novelty KB keeps: half of them, shuffled by ``seed``."""
    keep = list(events)
    random.Random(seed).shuffle(keep)
    return keep[: len(keep) // 2]


def _twinned(events: Sequence[dict[str, Any]], keep: Sequence[dict[str, Any]]) -> list[str]:
    """Left-out events with a kept event first posted within an hour of them: often the same
    outage posted under two service names (S3 and "Multiple services", Sign-In and Console),
    so a "no precedent" label that the KB can in fact answer."""
    kept = sorted(int(e["date"]) for e in keep)
    ids = {e["id"] for e in keep}
    out = []
    for e in events:
        if e["id"] in ids:
            continue
        t = int(e["date"])
        i = bisect.bisect_left(kept, t - 3600)
        if i < len(kept) and kept[i] <= t + 3600:
            out.append(e["id"])
    return out


def cross_posted(events: Sequence[dict[str, Any]], keep: Sequence[dict[str, Any]]) -> int:
    return len(_twinned(events, keep))


def ambiguous_left_out(
    events: Sequence[dict[str, Any]], keep: Sequence[dict[str, Any]]
) -> set[str]:
    """Left-out events whose "no precedent" label is doubtful: a twin within the hour
    (``_twinned``), or a kept event of the same service with the same title (a recurrence:
    "Amazon CloudFront: Change Propagation Delays" twice). A diagnostic of label noise."""
    ids = {e["id"] for e in keep}
    titles = {(e["service_name"], e["summary"].strip().lower()) for e in keep}
    recurring = {
        e["id"]
        for e in events
        if e["id"] not in ids and (e["service_name"], e["summary"].strip().lower()) in titles
    }
    return recurring | set(_twinned(events, keep))


def aws_kb(
    root: Path, name: str, keep: Sequence[dict[str, Any]], dense: bool, cache: Path
) -> KnowledgeBase:
    """A KB (under ``root / name``) of the AWS events in ``keep``, one Markdown file each."""
    folder = root / f"{name}-docs"
    folder.mkdir()
    for e in keep:
        (folder / f"{e['id']}.md").write_text(aws_markdown(e), encoding="utf-8")
    return build_kb(root / name, [folder], None, dense, cache)


def novelty_seeds(
    root: Path,
    events: Sequence[dict[str, Any]],
    seeds: int,
    cache: Path,
    first: dict[str, Any],
) -> dict[str, Any]:
    """The sparse default's novelty figures over ``seeds`` different halves (sparse-only KBs,
    each self-calibrated on its own): how much one split's figures move. Half 0 is the
    aws-novelty set already measured (``first``: its row for the sparse default, whose searches
    and self-calibrated sparse model do not depend on dense vectors)."""
    per_seed: dict[str, Any] = {"0": first}
    for seed in range(1, seeds):
        keep = novelty_split(events, seed)
        kb = aws_kb(root, f"seed{seed}", keep, False, cache)
        cases = aws_cases(events, {e["id"] for e in keep})
        options = our_modes(False)["ours sparse, whole document (default)"]
        runs = {c.id: timed_search(kb, c, c.query, tiers=TIERS, options=options) for c in cases}
        row = ir(cases, {c: r.ranking for c, r in runs.items()})
        row["novelty"] = novelty(cases, runs)
        doubtful = ambiguous_left_out(events, keep)
        clear = [c for c in cases if c.id not in doubtful]
        row["novelty_without_ambiguous"] = {"cases": len(clear), **novelty(clear, runs)}
        row["left_out_cross_posted_within_1h"] = cross_posted(events, keep)
        per_seed[str(seed)] = row
        kb.close()
    summary: dict[str, Any] = {}
    keys = [("novelty", k) for k in ("auroc_precedent", "novel_precision", "novel_recall", "ece")]
    for part, key in [*keys, ("novelty_without_ambiguous", "auroc_precedent")]:
        values = [r[part][key] for r in per_seed.values() if r[part][key] is not None]
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1)) ** 0.5
        summary[key if part == "novelty" else f"{key}_without_ambiguous"] = {
            "mean": round(mean, 4),
            "sd": round(sd, 4),
            "min": min(values),
            "max": max(values),
        }
    return {"mode": "ours sparse, whole document (default)", "seeds": per_seed, "summary": summary}


def show(name: str, result: dict[str, Any]) -> None:
    table = Table(title=f"{name}: {result['documents']} documents, {result['cases']} queries")
    for col in (
        "mode",
        "Hit@1",
        "Hit@3",
        "MRR@10",
        "AUROC",
        "novel P",
        "novel R",
        "ECE",
        "conf range",
    ):
        table.add_column(col)
    for mode, row in result["modes"].items():
        nov = row.get("novelty") or {}
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        span = nov.get("confidence_range")
        table.add_row(
            mode,
            fmt(row["hit@1"]),
            fmt(row["hit@3"]),
            fmt(row["mrr@10"]),
            fmt(nov.get("auroc_precedent")),
            fmt(nov.get("novel_precision")),
            fmt(nov.get("novel_recall")),
            fmt(nov.get("ece")),
            f"{span[0]:.2f}-{span[1]:.2f}" if span else "-",
        )
    console.print(table)


def show_unambiguous(name: str, result: dict[str, Any]) -> None:
    console.print(
        f"{name} without the {result['left_out_ambiguous']} left-out events with a twin within "
        "the hour or a kept event of the same service and title (label-noise diagnostic):"
    )
    for mode, row in result["modes"].items():
        nov = row.get("novelty_without_ambiguous")
        if nov:
            console.print(
                f"  {mode}: AUROC {nov['auroc_precedent']}, novel P {nov['novel_precision']} "
                f"R {nov['novel_recall']}, ECE {nov['ece']} on {nov['cases']} cases"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--dense", action="store_true", help="also MiniLM dense and hybrid")
    parser.add_argument("--sets", default="aws,aws-novelty,graphrca,sample-kb")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "seenbefore-emb.sqlite"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "realtext.json")
    parser.add_argument(
        "--novelty-seeds",
        type=int,
        default=5,
        help="also the sparse default's novelty figures over this many halves (1: only seed 0)",
    )
    args = parser.parse_args(argv)
    aws_path = args.shared / "postmortems" / "aws_status_events.jsonl"
    graphrca = args.shared / "postmortems" / "graphrca_incidents.jsonl"
    if not aws_path.exists() or not graphrca.exists():
        console.print(f"[red]shared data not found under {args.shared}; skipping[/]")
        return 2
    wanted = args.sets.split(",")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        events = aws_events(aws_path)
        for name in ("aws", "aws-novelty"):
            if name not in wanted:
                continue
            keep = novelty_split(events, 0) if name == "aws-novelty" else list(events)
            kb = aws_kb(root, name, keep, args.dense, args.cache)
            calibration = kb.store.get_json("calibration")
            cases = aws_cases(events, {e["id"] for e in keep})
            doubtful = ambiguous_left_out(events, keep) if name == "aws-novelty" else None
            results[name] = measure(name, kb, cases, args.dense, doubtful)
            results[name]["self_calibration"] = calibration
            if name == "aws-novelty":
                results[name]["left_out_cross_posted_within_1h"] = cross_posted(events, keep)
                results[name]["left_out_ambiguous"] = len(doubtful or ())
            show(name, results[name])
            if doubtful:
                show_unambiguous(name, results[name])
            kb.close()
        if "aws-novelty" in wanted and args.novelty_seeds > 1:
            measured = results["aws-novelty"]
            first = {
                **measured["modes"]["ours sparse, whole document (default)"],
                "left_out_cross_posted_within_1h": measured["left_out_cross_posted_within_1h"],
            }
            first.pop("seconds", None)
            results["aws-novelty-seeds"] = novelty_seeds(
                root, events, args.novelty_seeds, args.cache, first
            )
            console.print({"aws-novelty over seeds": results["aws-novelty-seeds"]["summary"]})
        if "graphrca" in wanted:
            kb = build_kb(root / "graphrca", [graphrca], "graphrca", args.dense, args.cache)
            results["graphrca"] = measure(
                "graphrca", kb, category_cases(graphrca, held_out=HELD_OUT), args.dense
            )
            results["graphrca"]["self_calibration"] = kb.store.get_json("calibration")
            show("graphrca", results["graphrca"])
            kb.close()
        if "sample-kb" in wanted:
            kb = build_kb(
                root / "sample", [REPO / "examples/postmortems"], None, args.dense, args.cache
            )
            results["sample-kb"] = measure("sample-kb", kb, load_cases(), args.dense)
            results["sample-kb"]["self_calibration"] = kb.store.get_json("calibration")
            show("sample-kb", results["sample-kb"])
            kb.close()
    record = {**provenance("benchmarks/realtext.py", argv), "sets": results}
    console.print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
