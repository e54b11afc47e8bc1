"""The dense weight a knowledge base's self-calibration measured (read by ``kb.gate``)."""

from __future__ import annotations

from typing import Any


def self_gate(record: dict[str, Any] | None, family: str) -> dict[str, Any] | None:
    """The dense weight self-calibration measured for ``family`` (None when it did not)."""
    gate = ((record or {}).get("modes") or {}).get("gate")
    if not gate or not gate.get("kept") or record is None or record.get("family") != family:
        return None
    return {"dense": gate["dense"], "source": gate["source"]}
