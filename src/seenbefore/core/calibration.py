"""The one calibration record a knowledge base keeps, and what retrieval reads from it.

Written only by the calibration subsystem (``seenbefore.calibration``), under one store key
(:data:`RECORD`); read by retrieval (retrieval/context.py) for the trust gate's dense weight per
embedder family and the live confidence model per retrieval key. There is no reconciling at read
time: a fit that wins its precedence check (calibration/fitting.py ``beats``) replaces the entry
for its key when it is written; one that does not leaves the record byte-for-byte as it was.

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

RECORD = "calibration"  # the store's settings key
HISTORY = 50  # the most recent changes kept in the record


@dataclass(frozen=True)
class LiveModel:
    """One live confidence model: its parameters (``ConfidenceModel.as_dict``), who fitted it
    (``self-calibration``, ``cases``, ``reviews``) and one line saying on what, with figures."""

    model: Mapping[str, Any]
    by: str
    fitted_at: str
    line: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": dict(self.model),
            "by": self.by,
            "fitted_at": self.fitted_at,
            "line": self.line,
        }


@dataclass(frozen=True)
class GateWeight:
    """A measured dense weight for one embedder family."""

    dense: float
    source: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"dense": self.dense, "source": self.source, "evidence": dict(self.evidence)}


@dataclass(frozen=True)
class CalibrationRecord:
    """Models per retrieval key, gate weights per family, the last self-calibration's summary
    (documents, fingerprint, figures; what ``stats`` shows) and who changed what, newest last."""

    models: Mapping[str, LiveModel] = field(default_factory=dict)
    gates: Mapping[str, GateWeight] = field(default_factory=dict)
    self_run: Mapping[str, Any] = field(default_factory=dict)
    history: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CalibrationRecord:
        if not data:
            return cls()
        return cls(
            models={
                k: LiveModel(dict(v["model"]), str(v["by"]), str(v["fitted_at"]), str(v["line"]))
                for k, v in (data.get("models") or {}).items()
            },
            gates={
                k: GateWeight(float(v["dense"]), str(v["source"]), dict(v.get("evidence") or {}))
                for k, v in (data.get("gates") or {}).items()
            },
            self_run=dict(data.get("self_run") or {}),
            history=tuple(dict(h) for h in data.get("history") or ()),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "models": {k: v.as_dict() for k, v in sorted(self.models.items())},
            "gates": {k: v.as_dict() for k, v in sorted(self.gates.items())},
            "self_run": dict(self.self_run),
            "history": [dict(h) for h in self.history],
        }

    def with_model(self, key: str, live: LiveModel, who: str) -> CalibrationRecord:
        return replace(
            self,
            models={**self.models, key: live},
            history=self._logged(
                {"at": live.fitted_at, "by": live.by, "who": who, "changed": f"model {key}"}
            ),
        )

    def with_gate(self, family: str, gate: GateWeight, who: str, at: str) -> CalibrationRecord:
        return replace(
            self,
            gates={**self.gates, family: gate},
            history=self._logged({"at": at, "who": who, "changed": f"dense weight {family}"}),
        )

    def _logged(self, entry: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
        return (*self.history, dict(entry))[-HISTORY:]

    def line(self, key: str | None) -> str:
        """One line: which confidence model is live for ``key`` and how it was fitted."""
        if key is not None and key in self.models:
            return self.models[key].line
        if key is None and self.models:
            return next(iter(sorted(self.models.items())))[1].line
        reason = self.self_run.get("reason")
        if reason:
            return f"shipped defaults ({reason})"
        return "shipped defaults (this KB was never self-calibrated: run `seenbefore reindex`)"
