"""Build the knowledge bases and pipelines that `seenbefore eval` compares.

Every mode runs over a fresh knowledge base built from a directory of postmortems: one with
MiniLM vectors, one with LSA vectors, so dense-only (MiniLM), dense-only (LSA), fused and gated
can be compared on the same cases. Embeddings are cached by text, so re-runs are fast.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seenbefore.config import Settings
from seenbefore.errors import InputError
from seenbefore.evaluation.cases import Case
from seenbefore.evaluation.harness import Pipeline, PipelineOutput, kb_pipeline
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.ingest import discover
from seenbefore.retrieval.cache import CachingEmbedder
from seenbefore.retrieval.embedders import (
    Embedder,
    load_neural_embedder,
    lsa_unavailable,
    neural_failure,
)
from seenbefore.storage.vectorcache import VectorCache

EMBEDDERS = ("minilm", "lsa")


@dataclass
class Suite:
    kbs: dict[str, KnowledgeBase]
    tiers: tuple[str, ...]
    workdir: Path
    notes: list[str] = field(default_factory=list)

    def pipelines(self) -> dict[str, Pipeline]:
        out: dict[str, Pipeline] = {}
        first = next(iter(self.kbs.values()))
        out["sparse"] = kb_pipeline(first, "sparse", tiers=self.tiers)
        if "minilm" in self.kbs:
            out["dense (MiniLM)"] = kb_pipeline(self.kbs["minilm"], "dense", tiers=self.tiers)
        if "lsa" in self.kbs:
            out["dense (LSA)"] = kb_pipeline(self.kbs["lsa"], "dense", tiers=self.tiers)
        if "minilm" in self.kbs:
            out["fused (RRF 0.5, MiniLM)"] = kb_pipeline(
                self.kbs["minilm"], "hybrid", tiers=self.tiers, dense_weight=0.5
            )
            out["gated (MiniLM)"] = kb_pipeline(self.kbs["minilm"], "hybrid", tiers=self.tiers)
        if "lsa" in self.kbs:
            out["gated (LSA)"] = kb_pipeline(self.kbs["lsa"], "hybrid", tiers=self.tiers)
        return out

    def investigation_pipeline(self, llm: Any) -> Pipeline:
        """Investigation with the LLM reporter, graded by the same endpoint (judge.j2) against the
        expected postmortem's root cause: the draft-level measures."""
        from seenbefore.investigation.investigator import Investigator
        from seenbefore.investigation.llm_reporter import LLMReporter, judge
        from seenbefore.investigation.query import from_text

        kb = self.kbs.get("minilm") or next(iter(self.kbs.values()))
        reporter = LLMReporter(llm)

        def run(case: Case) -> PipelineOutput:
            investigator = Investigator(kb, tiers=self.tiers, k=3, exclude=case.exclude)
            evidence = investigator.investigate(from_text(case.query))
            draft = reporter.draft(evidence)
            usage = draft.retrieval_trace.get("llm", {})
            tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
            graded = None
            if case.expected:
                metas = kb.store.documents_meta([case.expected[0]])
                section = metas[case.expected[0]].postmortem.section("root_cause")
                if section is not None:
                    graded, judge_tokens = judge(llm, draft, section.text)
                    tokens += judge_tokens
            ranking = list(
                dict.fromkeys([*draft.cited_incidents, *(i.doc_id for i in evidence.items)])
            )
            return PipelineOutput(
                ranking,
                draft.confidence,
                draft.novel,
                {},
                draft=draft,
                graded_score=graded,
                tokens=tokens,
            )

        return run

    def rewrite_pipeline(self, llm: Any) -> Pipeline:
        """Gated retrieval with the Investigator's LLM query rewriting: the same cases with and
        without it, so the rewrite is kept only where it helps."""
        from seenbefore.investigation.investigator import Investigator
        from seenbefore.investigation.query import from_text
        from seenbefore.investigation.rewriter import QueryRewriter

        kb = self.kbs.get("minilm") or next(iter(self.kbs.values()))
        rewriter = QueryRewriter(llm)

        def run(case: Case) -> PipelineOutput:
            investigator = Investigator(
                kb, tiers=self.tiers, k=10, exclude=case.exclude, rewriter=rewriter
            )
            evidence = investigator.investigate(from_text(case.query))
            rewrite = evidence.searched.get("rewrite", {})
            return PipelineOutput(
                [i.doc_id for i in evidence.items],
                evidence.confidence,
                evidence.novel,
                {},
                tokens=int(rewrite.get("prompt_tokens", 0))
                + int(rewrite.get("completion_tokens", 0)),
            )

        return run

    def gate_notes(self) -> list[str]:
        return [f"gate ({name}): {kb.gate().reason}" for name, kb in self.kbs.items()]

    def close(self) -> None:
        for kb in self.kbs.values():
            kb.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def default_kb_dir() -> Path:
    for candidate in (
        Path("examples/postmortems"),
        Path(__file__).resolve().parents[3] / "examples" / "postmortems",
    ):
        if candidate.is_dir():
            return candidate
    raise InputError("no --kb given and examples/postmortems not found; pass --kb DIR")


def build_suite(
    kb_dir: Path,
    *,
    embedders: Sequence[str],
    cache: Path | VectorCache,
    progress: Callable[[str], None] | None = None,
    files: Sequence[Path] | None = None,
) -> Suite:
    unknown = set(embedders) - set(EMBEDDERS)
    if unknown or not embedders:
        raise InputError(
            f"--embedders {','.join(embedders)}: expected some of {','.join(EMBEDDERS)}"
        )
    workdir = Path(tempfile.mkdtemp(prefix="seenbefore-eval-"))
    sources = [workdir / "docs"]
    sources[0].mkdir()
    for path in files if files is not None else discover([kb_dir]):
        shutil.copy(path, sources[0] / path.name)
    suite = Suite({}, (), workdir)
    neural: Embedder | None = None
    for name in embedders:
        explicit: Embedder | None = None
        if name == "minilm":
            neural = neural or load_neural_embedder()
            if neural is None:
                suite.notes.append(f"MiniLM modes skipped: {neural_failure()}")
                continue
            explicit = CachingEmbedder(neural, cache)
        if name == "lsa" and (why := lsa_unavailable()):
            suite.notes.append(f"LSA modes skipped: {why}")
            continue
        if progress:
            progress(f"building the {name} knowledge base")
        kb = KnowledgeBase(
            Settings(home=workdir / name, embedder=name),
            embedder=explicit,
        )
        if name == "minilm":
            kb.query_embedder = neural  # queries are embedded and timed for real, not cached
        report = kb.ingest(sources)
        if report.quarantined:
            suite.notes.append(f"{len(report.quarantined)} documents quarantined while building")
        suite.kbs[name] = kb
    if not suite.kbs:  # no dense embedder is installed (a plain install): sparse modes only
        if progress:
            progress("building a sparse-only knowledge base (no dense embedder installed)")
        kb = KnowledgeBase(Settings(home=workdir / "none", embedder="none"))
        kb.ingest(sources)
        suite.kbs["none"] = kb
    first = next(iter(suite.kbs.values()))
    rows = first.store.document_rows()
    suite.tiers = tuple(sorted(set(rows.tiers))) or ("general",)
    return suite


def sample_files(kb_dir: Path, size: int, seed: int) -> list[Path]:
    """``size`` postmortem files chosen at random (seeded) from ``kb_dir``."""
    files = discover([kb_dir])
    if size > len(files):
        raise InputError(f"--sizes asks for {size} documents but {kb_dir} has {len(files)}")
    return sorted(random.Random(seed).sample(files, size))
