"""The durable review workflow: investigate, draft, a person approves or dismisses; approved drafts
become postmortems, decisions become calibration labels.

``ReviewWorkflow`` needs LangGraph (the ``server`` extra) and is imported on first use, so the
models, labels and the CLI load without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seenbefore.review.models import DismissReason, DraftEdits, Review, ReviewEvent

if TYPE_CHECKING:
    from seenbefore.review.workflow import ReviewWorkflow

__all__ = ["DismissReason", "DraftEdits", "Review", "ReviewEvent", "ReviewWorkflow"]


def __getattr__(name: str) -> Any:
    if name == "ReviewWorkflow":
        from seenbefore.review.workflow import ReviewWorkflow

        return ReviewWorkflow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
