"""Reading and writing the one calibration record (core/calibration.py) in a store. Only the
calibration subsystem writes it; a fit that was not kept never reaches :func:`keep_model`."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from seenbefore.core.calibration import RECORD, CalibrationRecord, GateWeight, LiveModel
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import FusionWeights

if TYPE_CHECKING:
    from seenbefore.storage.ports import Store


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def load(store: Store) -> CalibrationRecord:
    return CalibrationRecord.from_dict(store.get_json(RECORD))


def save(store: Store, record: CalibrationRecord) -> None:
    store.set_json(RECORD, record.as_dict())


def live(model: ConfidenceModel, *, by: str, line: str) -> LiveModel:
    return LiveModel(model.as_dict(), by, now(), line)


def gate_of(weights: FusionWeights) -> GateWeight:
    return GateWeight(weights.dense, weights.source, dict(weights.evidence))


def keep_model(
    store: Store, key: str, model: ConfidenceModel, *, by: str, line: str, who: str
) -> CalibrationRecord:
    """Make ``model`` the live model for ``key`` (its fit already won the precedence check)."""
    record = load(store).with_model(key, live(model, by=by, line=line), who)
    save(store, record)
    return record


def keep_gate(store: Store, family: str, weights: FusionWeights, *, who: str) -> CalibrationRecord:
    record = load(store).with_gate(family, gate_of(weights), who, now())
    save(store, record)
    return record


def save_run(store: Store, run: dict[str, Any]) -> CalibrationRecord:
    """Record the last self-calibration's summary (what ``stats`` shows), models untouched."""
    rec = replace(load(store), self_run=run)
    save(store, rec)
    return rec
