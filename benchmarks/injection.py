"""Prompt-injection guard: detection on the fixture, false positives on the sample knowledge base.

    .venv/bin/python benchmarks/injection.py

Detection: each injection variant in tests/investigation/injection_fixture.yaml counts as caught
when ``scan`` reports its expected kind (and, separately, when it reports anything); the fixture's
``known_misses`` (documented limits) are counted apart. False
positives: the fixture's benign SRE sentences, and every postmortem in examples/postmortems
scanned as a whole file and chunk by chunk (``postmortem_from_markdown`` + ``chunk_postmortem``,
the chunks retrieval hands to the investigator). Every flagged sample-KB excerpt is listed so a
person can judge it. Also prints scan throughput (a figure only; nothing here asserts on time).

Per language (issue 33): benchmarks/data/injection_eval.yaml (benign and hostile root causes in
English, French, Spanish and German, which the multilingual patterns were written against) and
benchmarks/data/injection_heldout.yaml (written after them, then used to generalise them) and
benchmarks/data/injection_heldout2.yaml (written after that, then used likewise) and
benchmarks/data/injection_heldout3.yaml (written after that): for each, the share of hostile
texts missed and of benign texts flagged, with every miss and false positive listed. A set's
first run against patterns never fitted to it is the honest figure; git keeps each first run
(held_out: commit d96d00c; held_out_2: commit 5c9beb8; held_out_3: the commit that added it).
Prints tables and writes benchmarks/results/injection.json (with the command, commit and machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from provenance import provenance, write_results
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.textguard import KINDS, Finding, scan

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "investigation" / "injection_fixture.yaml"
SAMPLE_KB = ROOT / "examples" / "postmortems"
RESULTS = ROOT / "benchmarks" / "results" / "injection.json"
EVAL_SETS = {
    "dev": ROOT / "benchmarks" / "data" / "injection_eval.yaml",
    "held_out": ROOT / "benchmarks" / "data" / "injection_heldout.yaml",
    "held_out_2": ROOT / "benchmarks" / "data" / "injection_heldout2.yaml",
    "held_out_3": ROOT / "benchmarks" / "data" / "injection_heldout3.yaml",
}

console = Console()
if not console.is_terminal:
    console.width = 120


def rate(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.1%})" if total else "0/0"


def fixture_figures(fixture: dict[str, Any]) -> dict[str, Any]:
    injections: list[dict[str, str]] = fixture["injections"]
    benign: list[str] = fixture["benign"]
    by_kind: dict[str, list[int]] = {kind: [0, 0] for kind in KINDS}
    right_kind = any_kind = 0
    missed: list[dict[str, Any]] = []
    for case in injections:
        kinds = {finding.kind for finding in scan(case["text"])}
        by_kind[case["kind"]][1] += 1
        any_kind += bool(kinds)
        if case["kind"] in kinds:
            right_kind += 1
            by_kind[case["kind"]][0] += 1
        else:
            missed.append({"id": case["id"], "expected": case["kind"], "got": sorted(kinds)})
    flagged_benign = [
        {"text": text, "findings": [f.kind for f in scan(text)]} for text in benign if scan(text)
    ]
    known_misses = fixture.get("known_misses", [])
    now_caught = [c["id"] for c in known_misses if c["kind"] in {f.kind for f in scan(c["text"])}]
    return {
        "known_misses": len(known_misses),
        "known_misses_now_caught": now_caught,
        "variants": len(injections),
        "detected_right_kind": right_kind,
        "detected_any_kind": any_kind,
        "by_kind": {kind: {"hits": h, "total": t} for kind, (h, t) in by_kind.items() if t},
        "missed": missed,
        "benign": len(benign),
        "benign_flagged": flagged_benign,
    }


def sample_kb_figures(folder: Path) -> dict[str, Any]:
    paths = sorted(folder.glob("*.md"))
    flagged_docs: set[str] = set()
    chunks = flagged_chunks = 0
    chars = 0
    seconds = 0.0
    listed: list[dict[str, Any]] = []

    def timed_scan(text: str) -> list[Finding]:
        nonlocal chars, seconds
        start = time.perf_counter()
        found = scan(text)
        seconds += time.perf_counter() - start
        chars += len(text)
        return found

    for path in paths:
        source = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        doc_findings = timed_scan(text)
        pm = postmortem_from_markdown(source, text)
        chunk_findings = []
        for chunk in chunk_postmortem(pm):
            chunks += 1
            found = timed_scan(chunk.text)
            flagged_chunks += bool(found)
            chunk_findings.extend((chunk.position, f) for f in found)
        if doc_findings or chunk_findings:
            flagged_docs.add(source)
        for f in doc_findings:
            listed.append({"source": source, "where": "document", **finding_json(f)})
        for position, f in chunk_findings:
            listed.append({"source": source, "where": f"chunk {position}", **finding_json(f)})
    return {
        "documents": len(paths),
        "documents_flagged": len(flagged_docs),
        "chunks": chunks,
        "chunks_flagged": flagged_chunks,
        "findings": listed,
        "scanned_chars": chars,
        "scan_seconds": seconds,
    }


def language_figures(data: dict[str, Any]) -> dict[str, Any]:
    """Per language: hostile texts missed and benign texts flagged (counts, rates, the texts)."""
    out: dict[str, Any] = {}
    for lang in data["languages"]:
        benign, hostile = data["benign"][lang], data["hostile"][lang]
        flagged = [
            {"text": t, "findings": sorted({f.kind for f in scan(t)})} for t in benign if scan(t)
        ]
        missed = [t for t in hostile if not scan(t)]
        out[lang] = {
            "benign": len(benign),
            "benign_flagged": len(flagged),
            "false_positive_rate": round(len(flagged) / len(benign), 4) if benign else None,
            "hostile": len(hostile),
            "hostile_missed": len(missed),
            "miss_rate": round(len(missed) / len(hostile), 4) if hostile else None,
            "flagged": flagged,
            "missed": missed,
        }
    return out


def finding_json(finding: Finding) -> dict[str, Any]:
    return {"kind": finding.kind, "start": finding.start, "excerpt": finding.excerpt}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument("--kb", type=Path, default=SAMPLE_KB, help="folder of postmortem .md")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not args.kb.is_dir():
        console.print(f"[red]knowledge base folder {args.kb} not found[/red]")
        return 2
    fixture = fixture_figures(yaml.safe_load(args.fixture.read_text(encoding="utf-8")))
    kb = sample_kb_figures(args.kb)
    languages = {
        name: language_figures(yaml.safe_load(path.read_text(encoding="utf-8")))
        for name, path in EVAL_SETS.items()
        if path.is_file()
    }

    table = Table(title="Prompt-injection guard")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row(
        "fixture variants detected (right kind)",
        rate(fixture["detected_right_kind"], fixture["variants"]),
    )
    table.add_row(
        "fixture variants detected (any kind)",
        rate(fixture["detected_any_kind"], fixture["variants"]),
    )
    table.add_row(
        "known misses (documented limits) now caught",
        rate(len(fixture["known_misses_now_caught"]), fixture["known_misses"]),
    )
    table.add_row(
        "fixture benign sentences flagged",
        rate(len(fixture["benign_flagged"]), fixture["benign"]),
    )
    table.add_row("sample KB documents flagged", rate(kb["documents_flagged"], kb["documents"]))
    table.add_row("sample KB chunks flagged", rate(kb["chunks_flagged"], kb["chunks"]))
    mb_per_s = kb["scanned_chars"] / 1e6 / kb["scan_seconds"] if kb["scan_seconds"] else 0.0
    table.add_row("scan throughput (sample KB, single thread)", f"{mb_per_s:.2f} M chars/s")
    console.print(table)

    kinds = Table(title="Detection by expected kind")
    kinds.add_column("kind")
    kinds.add_column("caught", justify="right")
    for kind, counts in fixture["by_kind"].items():
        kinds.add_row(kind, rate(counts["hits"], counts["total"]))
    console.print(kinds)

    for miss in fixture["missed"]:
        console.print(f"missed {miss['id']}: expected {miss['expected']}, got {miss['got']}")
    for item in fixture["benign_flagged"]:
        console.print(f"benign flagged {item['findings']}: {item['text']}")
    if kb["findings"]:
        flagged = Table(title="Flagged sample-KB excerpts (judge these)")
        for column in ("source", "where", "kind", "excerpt"):
            flagged.add_column(column)
        for item in kb["findings"]:
            flagged.add_row(item["source"], item["where"], item["kind"], item["excerpt"])
        console.print(flagged)
    else:
        console.print("No sample-KB document or chunk was flagged.")

    by_language = Table(title="Root causes by language: hostile missed, benign flagged")
    for column in ("set", "language", "hostile missed", "benign flagged"):
        by_language.add_column(column, justify="right" if "ed" in column else "left")
    for name, figures in languages.items():
        for lang, f in figures.items():
            by_language.add_row(
                name,
                lang,
                rate(f["hostile_missed"], f["hostile"]),
                rate(f["benign_flagged"], f["benign"]),
            )
    console.print(by_language)
    for name, figures in languages.items():
        for lang, f in figures.items():
            for text in f["missed"]:
                console.print(f"{name} {lang} missed: {text}")
            for item in f["flagged"]:
                console.print(f"{name} {lang} benign flagged {item['findings']}: {item['text']}")

    record = {
        **provenance("benchmarks/injection.py", argv),
        "fixture": fixture,
        "sample_kb": kb,
        "languages": languages,
    }
    console.print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
