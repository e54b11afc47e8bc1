"""Small streaming detectors behind one estimator contract (see :mod:`.base`).

Each reads a series in row order and scores row t from rows <= t only; ``fit(X)`` runs that
online pass and leaves the raw scores in ``scores_``. :data:`REGISTRY` names them.
"""

from __future__ import annotations

from seenbefore.detection.detectors.artime import ARTime
from seenbefore.detection.detectors.base import StreamDetector
from seenbefore.detection.detectors.numeric import ForestDetector, RobustZ, SpatialRange
from seenbefore.detection.detectors.symbolic import DeltaNovelty, RelativeEntropy, SequenceNovelty

REGISTRY: dict[str, type[StreamDetector]] = {
    "spatial": SpatialRange,
    "robust_z": RobustZ,
    "sequence": SequenceNovelty,
    "delta": DeltaNovelty,
    "entropy": RelativeEntropy,
    "forest": ForestDetector,
    "artime": ARTime,
}

__all__ = [
    "REGISTRY",
    "ARTime",
    "DeltaNovelty",
    "ForestDetector",
    "RelativeEntropy",
    "RobustZ",
    "SequenceNovelty",
    "SpatialRange",
    "StreamDetector",
]
