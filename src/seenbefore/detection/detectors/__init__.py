"""Small streaming detectors behind one estimator contract (see :mod:`.base`).

Each reads a series in row order and scores row t from rows <= t only; ``fit(X)`` runs that
online pass and leaves the raw scores in ``scores_``. :data:`REGISTRY` names the shipped
ensemble's members; the members only experiments use are in :mod:`seenbefore.lab.members`.
"""

from __future__ import annotations

from seenbefore.detection.detectors.artime import ARTime
from seenbefore.detection.detectors.base import StreamDetector
from seenbefore.detection.detectors.numeric import SpatialRange
from seenbefore.detection.detectors.symbolic import SequenceNovelty

REGISTRY: dict[str, type[StreamDetector]] = {
    "spatial": SpatialRange,
    "sequence": SequenceNovelty,
    "artime": ARTime,
}

__all__ = [
    "REGISTRY",
    "ARTime",
    "SequenceNovelty",
    "SpatialRange",
    "StreamDetector",
]
