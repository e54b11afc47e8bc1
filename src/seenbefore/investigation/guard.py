"""Moved to :mod:`seenbefore.textguard` (pure, below knowledge/ and investigation/, which both
use it); this name stays importable."""

from seenbefore.textguard import (
    EXCERPT_MAX,
    KINDS,
    Finding,
    Kind,
    fence,
    sanitize_for_display,
    scan,
)

__all__ = ["EXCERPT_MAX", "KINDS", "Finding", "Kind", "fence", "sanitize_for_display", "scan"]
