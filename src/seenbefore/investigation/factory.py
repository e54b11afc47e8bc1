"""Which reporter and query rewriter the settings ask for: the one place the CLI, the review
workflow and the MCP tools get them from (so none of them imports another door)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seenbefore.config import Settings
from seenbefore.investigation.reporter import OfflineReporter

if TYPE_CHECKING:
    from seenbefore.investigation.llm_reporter import LLMReporter
    from seenbefore.investigation.rewriter import QueryRewriter

__all__ = ["make_reporter", "make_rewriter"]


def make_reporter(cfg: Settings) -> OfflineReporter | LLMReporter:
    """The LLM reporter when an endpoint is configured, else the offline one."""
    from seenbefore.investigation.llm import llm_from_settings

    llm = llm_from_settings(cfg.model_dump())
    if llm is None:
        return OfflineReporter()
    from seenbefore.investigation.llm_reporter import LLMReporter

    return LLMReporter(
        llm, allowed_hosts=cfg.llm_allowed_hosts, local_only_tiers=cfg.llm_local_only_tiers
    )


def make_rewriter(cfg: Settings) -> QueryRewriter | None:
    """The Investigator's LLM query rewriter when enabled and an endpoint is configured."""
    if not cfg.llm_rewrite_queries:
        return None
    from seenbefore.investigation.llm import llm_from_settings
    from seenbefore.investigation.rewriter import QueryRewriter

    llm = llm_from_settings(cfg.model_dump())
    return QueryRewriter(llm) if llm is not None else None
