"""What the in-database search cost each PostgreSQL write (issue 26.1): the same writes, under
the same machine load, by the store as it was before migration 8 (a generated tsvector with its
GIN index, a per-word lexemes upsert, HNSW, filter columns copied onto chunks and vectors) and
as it is after.

Each arm is a git revision of this repository: its src/, benchmarks/ and tests/pg.py are
extracted (``git archive``) into a temporary directory and run in a child process, against a
fresh throwaway server (tests/pg.py), with that revision's own code: load ``--docs`` SciFact
documents one per transaction, copy the corpus ``--replicate`` times inside the database (the
revision's ``pgstore.replicate``), give every chunk a random 384-d vector (``replace_vectors``:
HNSW is built where the revision has it), then time ``--writes`` single-document writes (new
documents, new versions, deletions; the same sequence in every arm). The arms alternate
``--rounds`` times, so both see the same load on a shared machine. Prints p50/p95 per arm and
round and writes JSON with the command that made it; asserts nothing.

    python benchmarks/pg_writes.py --before 2ffdb62 --after HEAD
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import REPO, RESULTS, provenance, write_results

console = Console()

# Run inside each arm's child process with that arm's code first on sys.path; uses only what
# both revisions have (pgstore.server_store and replicate, corpora, the Store's upsert/delete).
CHILD = r"""
import json, random, sys, time
from pathlib import Path
arm, scifact, docs, factor, writes = sys.argv[1], Path(sys.argv[2]), *map(int, sys.argv[3:6])
sys.path[:0] = [f"{arm}/src", f"{arm}/benchmarks", arm]
import numpy as np
from corpora import load_corpus, markdown, scifact_markdown
from pgstore import replicate, server_store
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.retrieval.embedders import MINILM_NAME, normalise
from seenbefore.storage.base import EmbeddedVectors

out = {}
rng = np.random.default_rng(0)
with server_store(None) as store:
    clock = time.perf_counter()
    for source, text in scifact_markdown(scifact, 1, limit=docs):
        pm = postmortem_from_markdown(source, text)
        store.upsert(pm, chunk_postmortem(pm))
    out["load_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    out["chunks"] = replicate(store, factor)
    out["replicate_s"] = time.perf_counter() - clock
    ids = store.chunk_rows().ids
    clock = time.perf_counter()
    store.replace_vectors(MINILM_NAME, ids.tolist(), normalise(rng.standard_normal((len(ids), 384))))
    out["vectors_s"] = time.perf_counter() - clock
    stored = store.list_ids()
    originals = [d for d in stored if "~" not in d]
    corpus = load_corpus(scifact)
    kinds, pick = random.Random(7), random.Random(8)
    ms = {"add": [], "update": [], "delete": []}
    for n in range(writes):
        op = kinds.choices(["add", "update", "delete"], [0.5, 0.3, 0.2])[0]
        sid, title, text = corpus[pick.randrange(len(corpus))]
        clock = time.perf_counter()
        if op == "delete":
            gone = stored.pop(pick.randrange(len(stored)))
            store.delete(gone)
            if gone in originals:
                originals.remove(gone)
        else:
            # a new version keeps its id: one of the loaded ones (copies' ids are not valid ids)
            doc_id = f"new-{n}-{sid}" if op == "add" else originals[pick.randrange(len(originals))]
            pm = postmortem_from_markdown(f"{doc_id}.md", markdown(doc_id, title, text))
            pieces = chunk_postmortem(pm)
            vectors = normalise(rng.standard_normal((len(pieces), 384)))
            store.upsert(pm, pieces, EmbeddedVectors(MINILM_NAME, vectors))
            if op == "add":
                stored.append(doc_id)
        ms[op].append((time.perf_counter() - clock) * 1000)
    out["writes_ms"] = ms
print("RESULT " + json.dumps(out))
"""


def extract(revision: str, into: Path) -> str:
    """The revision's commit id, its src/, benchmarks/ and tests/pg.py under ``into``."""
    commit = subprocess.run(
        ["git", "rev-parse", revision], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", commit, "src", "benchmarks", "tests/__init__.py", "tests/pg.py"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return commit


def pct(ms: list[float]) -> dict[str, Any]:
    if not ms:
        return {"n": 0}
    p50, p95 = np.percentile(ms, [50, 95])
    return {"n": len(ms), "p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2)}


def run_arm(arm: Path, args: argparse.Namespace) -> dict[str, Any]:
    argv = [str(arm), str(args.scifact), str(args.docs), str(args.replicate), str(args.writes)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        capture_output=True,
        text=True,
        timeout=args.timeout,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"arm {arm.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    raw = json.loads(line.removeprefix("RESULT "))
    writes = raw.pop("writes_ms")
    every = [ms for values in writes.values() for ms in values]
    return {
        **{k: round(v, 1) if isinstance(v, float) else v for k, v in raw.items()},
        "store_write": pct(every),
        **{f"store_write ({op})": pct(ms) for op, ms in writes.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default="2ffdb62", help="revision with the in-DB search")
    parser.add_argument("--after", default="HEAD", help="revision without it")
    parser.add_argument("--scifact", type=Path, default=REPO.parent / "shared/data/beir/scifact")
    parser.add_argument("--docs", type=int, default=3600, help="documents loaded one by one")
    parser.add_argument("--replicate", type=int, default=10, help="copies made in the database")
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per arm run")
    parser.add_argument("--out", type=Path, default=RESULTS / "pg_writes.json")
    args = parser.parse_args()
    if not (args.scifact / "corpus.jsonl").exists():
        console.print(f"[red]SciFact not found at {args.scifact}: the shared data is absent[/]")
        return 2
    record: dict[str, Any] = {
        **provenance("benchmarks/pg_writes.py"),
        "note": "each arm is its revision's own code on a fresh throwaway server; arms "
        "alternate so both see the same load; vectors random; wall times",
        "arms": {},
        "rounds": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        arms = {
            "before": (Path(tmp) / "before", args.before),
            "after": (Path(tmp) / "after", args.after),
        }
        for name, (where, revision) in arms.items():
            record["arms"][name] = {"revision": revision, "commit": extract(revision, where)}
        for round_ in range(args.rounds):
            for name, (where, _) in arms.items():
                console.print(f"round {round_ + 1}, {name}")
                clock = time.perf_counter()
                result = run_arm(where, args)
                result["arm_s"] = round(time.perf_counter() - clock, 1)
                record["rounds"].append({"round": round_ + 1, "arm": name, **result})
                write_results(args.out, record)
    for name in record["arms"]:
        pooled: list[float] = []  # p50s of each round, for the summary line
        for row in record["rounds"]:
            if row["arm"] == name:
                pooled.append(row["store_write"]["p50_ms"])
        record["arms"][name]["store_write_p50_ms_by_round"] = pooled
    write_results(args.out, record)
    table = Table(title="PostgreSQL write cost per document, same load (ms)")
    for col in ("round", "arm", "chunks", "write p50/p95", "add", "update", "delete"):
        table.add_column(col)
    for row in record["rounds"]:
        cells = [
            f"{row[k]['p50_ms']}/{row[k]['p95_ms']}" if row[k].get("n") else "-"
            for k in ("store_write", "store_write (add)", "store_write (update)",
                      "store_write (delete)")
        ]  # fmt: skip
        table.add_row(str(row["round"]), row["arm"], str(row["chunks"]), *cells)
    console.print(table)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
