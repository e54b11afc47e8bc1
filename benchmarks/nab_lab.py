"""Shared pieces for the NAB benchmarks: load the corpus once (repaired), cache each member's
raw scores per file on disk (benchmarks/results/cache/, ignored by git), and score a
configuration per category and overall with NAB's scorer. Not a benchmark by itself."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seenbefore.detection.ensemble import median_step
from seenbefore.lab import nab, nab_scoring
from seenbefore.lab.members import MEMBERS, LabEnsemble
from seenbefore.lab.nab import learning_period
from seenbefore.lab.nab_io import read_series, read_windows
from seenbefore.lab.nab_scoring import NabFile, Profile

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "benchmarks/results/cache"


@dataclass(frozen=True)
class CorpusFile:
    rel: str
    category: str
    values: np.ndarray
    timestamps: list[Any]
    windows: list[Any]
    probation: int


def load_corpus(data: Path, labels: Path) -> list[CorpusFile]:
    windows = read_windows(labels)
    out = []
    for path in sorted(data.rglob("*.csv")):
        rel = path.relative_to(data).as_posix()
        if rel not in windows or rel.startswith("realKnownCause/"):
            continue
        series = read_series(path, repair=True)
        out.append(
            CorpusFile(
                rel,
                rel.split("/")[0],
                series.values,
                series.timestamps,
                windows[rel],
                learning_period(len(series.values), median_step(series.timestamps)),
            )
        )
    return out


def _key(name: str, params: Mapping[str, Any]) -> str:
    module = inspect.getmodule(MEMBERS[name])  # the module: a member's helpers count too
    code = hashlib.sha1(inspect.getsource(module or MEMBERS[name]).encode()).hexdigest()
    text = json.dumps({"member": name, "code": code, **params}, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def member_raw(f: CorpusFile, name: str, params: Mapping[str, Any]) -> np.ndarray:
    """A member's raw scores on one file, cached on disk by (member, params, file)."""
    cls = MEMBERS[name]
    full = dict(params)
    if "probation" in cls().get_params():
        full.setdefault("probation", f.probation)
    path = CACHE / _key(name, full) / (f.rel.replace("/", "__") + ".npy")
    if path.is_file():
        return np.load(path)
    raw = cls(**full).fit(f.values).scores_
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, raw)
    return raw


def ensemble_scores(f: CorpusFile, config: Mapping[str, Any]) -> np.ndarray:
    """The ensemble's scores on one file, reusing cached member scores."""
    cfg = dict(config)
    member_params = cfg.pop("member_params", {}) or {}
    ens = LabEnsemble(probation=f.probation, member_params=member_params, **cfg)
    calibrated = [
        ens.calibrate(name, member_raw(f, name, member_params.get(name, {})), f.values)
        for name in ens.members
    ]
    from seenbefore.detection.ensemble import COMBINERS, rest_after_fire

    combined = COMBINERS[ens.combine](np.vstack(calibrated))
    rest = int(ens.rest_fraction * ens.probation) if ens.rest is None else ens.rest
    return rest_after_fire(combined, fire=ens.fire, rest=rest, damp=ens.damp)


def score_scope(
    files: Sequence[CorpusFile],
    scores: Mapping[str, np.ndarray],
    profile: Profile = nab_scoring.STANDARD_PROFILE,
    threshold: float | None = None,
) -> tuple[float | None, float, int]:
    """(normalised score or None without windows, threshold, false positives) for files."""
    nab_files = [NabFile(f.rel, f.timestamps, scores[f.rel], f.windows) for f in files]
    scored = nab.score_scope("lab", nab_files, profile, threshold)  # what seenbefore nab scores
    return scored.normalised, scored.threshold, scored.false_positives


def categories(files: Sequence[CorpusFile]) -> list[str]:
    return sorted({f.category for f in files})
