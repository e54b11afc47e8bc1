"""NAB scoring, standard profile, as numenta/NAB's ``nab/sweeper.py`` computes it.

Pure: standard library and numpy only. One file is a list of rows (timestamp, anomaly score)
and its label windows; a row is a detection when its anomaly score is ``>= threshold``.

- Rows in the probationary period (the first ``min(floor(0.15 * n), 0.15 * 5000)``) are ignored.
- A window scores the best of its detections: ``A_TP * S(y) / S(-1)``, where
  ``y = -(right - i + 1) / width`` and ``S(y) = 2 / (1 + exp(5 * y)) - 1``. NAB divides by
  ``S(-1) = 0.98661`` (its ``maxTP``), so a detection at a window's first row scores exactly A_TP.
  S falls along the window, so the best detection is the first one.
- A window with no detection costs ``A_FN``.
- A detection outside every window costs ``|A_FP| * S(y)`` with ``y = (i - right) / (width - 1)``
  measured from the end of the preceding window (``S = -1`` beyond ``y = 3`` or with no window
  before it), so a detection just after a window costs little and a far one costs the full A_FP.
- The threshold is swept over the distinct anomaly scores of every file scored together (plus
  NAB's starting 1.1, which detects nothing); the best total wins, ties to the higher threshold.
- Normalised score = ``100 * (raw - null) / (perfect - null)``: null never detects
  (``A_FN`` per scorable window), perfect is ``A_TP`` per window (NAB's ``runner.normalize``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from seenbefore.errors import InputError

PROBATION_PERCENT = 0.15
"""NAB's ``probationPercent``: the share of each file that only warms the detector up."""
START_THRESHOLD = 1.1
"""NAB's first threshold in the sweep: above every score, so nothing is detected."""

_OUTSIDE = -1
_PROBATIONARY = -2

Window = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class Profile:
    """Application profile in the NAB paper's notation (signed): ``A_TP``, ``A_FP``, ``A_FN``.

    NAB's ``config/profiles.json`` stores magnitudes (tpWeight, fpWeight, fnWeight)."""

    name: str
    a_tp: float
    a_fp: float
    a_fn: float


STANDARD_PROFILE = Profile(name="standard", a_tp=1.0, a_fp=-0.11, a_fn=-1.0)
REWARD_LOW_FP = Profile(name="reward_low_FP_rate", a_tp=1.0, a_fp=-0.22, a_fn=-1.0)
REWARD_LOW_FN = Profile(name="reward_low_FN_rate", a_tp=1.0, a_fp=-0.11, a_fn=-2.0)
PROFILES: dict[str, Profile] = {p.name: p for p in (STANDARD_PROFILE, REWARD_LOW_FP, REWARD_LOW_FN)}
"""NAB's three application profiles (``config/profiles.json``)."""


@dataclass(frozen=True)
class NabFile:
    """One file to score: its rows' timestamps and anomaly scores, and its label windows."""

    name: str
    timestamps: Sequence[Hashable]
    scores: npt.NDArray[np.float64]
    windows: Sequence[Window]


@dataclass(frozen=True)
class FileScore:
    """A file's score at one threshold. ``tp``/``tn``/``fp``/``fn`` count rows as NAB does
    (probationary rows excluded); ``windows_detected`` counts windows with a detection."""

    name: str
    threshold: float
    score: float
    tp: int
    tn: int
    fp: int
    fn: int
    windows: int
    windows_detected: int


@dataclass(frozen=True)
class ThresholdScore:
    """One row of NAB's sweep: the total score when every score ``>= threshold`` detects."""

    threshold: float
    score: float
    tp: int
    tn: int
    fp: int
    fn: int


def scaled_sigmoid(y: float) -> float:
    """NAB's ``scaledSigmoid``: ``2 / (1 + exp(5 * y)) - 1``, and ``-1`` beyond ``y = 3``."""
    if y > 3.0:
        return -1.0
    return 2.0 / (1.0 + math.exp(5.0 * y)) - 1.0


def probationary_length(n_rows: int, probation_percent: float = PROBATION_PERCENT) -> int:
    """Index of the first scored row: NAB's ``min(floor(p * n), p * 5000)``, rounded up."""
    return math.ceil(min(math.floor(probation_percent * n_rows), probation_percent * 5000))


def check_scores(name: str, n_rows: int, scores: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``scores`` as floats, or InputError unless there is one finite score in [0, 1] per row."""
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: anomaly scores are not numbers ({exc}); return floats") from exc
    if arr.shape != (n_rows,):
        raise InputError(
            f"{name}: anomaly scores of shape {arr.shape} for {n_rows} rows; "
            "expected one score per row; return an array of the series' length"
        )
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0))
    if bad.size:
        i = int(bad[0])
        raise InputError(
            f"{name}: anomaly score at row {i} is {float(arr[i])!r}; NAB scores must be finite "
            "and within [0, 1]; clip or rescale the detector's output"
        )
    return arr


def _window_indices(
    name: str, timestamps: Sequence[Hashable], windows: Sequence[Window]
) -> list[tuple[int, int]]:
    position: dict[Hashable, int] = {}
    repeated: set[Hashable] = set()
    for i, t in enumerate(timestamps):
        if t in position:
            repeated.add(t)
        else:
            position[t] = i
    spans: list[tuple[int, int]] = []
    for start, end in windows:
        for edge in (start, end):
            if edge not in position or edge in repeated:
                what = "is on more than one row" if edge in repeated else "is not a row timestamp"
                raise InputError(
                    f"{name}: window edge {edge!s} {what}; NAB windows start and end on one "
                    "row each; fix the labels or the data file"
                )
        left, right = position[start], position[end]
        if left > right or (spans and left <= spans[-1][1]):
            raise InputError(
                f"{name}: window [{start!s}, {end!s}] is reversed, out of order or overlaps "
                "the one before; windows must be sorted and disjoint; fix the labels"
            )
        spans.append((left, right))
    return spans


def check_windows(name: str, timestamps: Sequence[Hashable], windows: Sequence[Window]) -> None:
    """InputError unless every window edge is on exactly one row and windows are in order."""
    _window_indices(name, timestamps, windows)


def _sweep(
    name: str,
    timestamps: Sequence[Hashable],
    windows: Sequence[Window],
    profile: Profile,
    probation_percent: float,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], int]:
    """NAB's ``calcSweepScore``: each row's weighted score if it were a detection, each row's
    window (or ``_OUTSIDE`` / ``_PROBATIONARY``), and the number of windows."""
    n = len(timestamps)
    spans = _window_indices(name, timestamps, windows)
    sweep = np.empty(n, dtype=np.float64)
    window = np.full(n, _OUTSIDE, dtype=np.int64)
    max_tp = scaled_sigmoid(-1.0)
    prev_right: int | None = None
    prev_width = 0.0
    k = 0  # next window
    i = 0
    while i < n:
        if k < len(spans) and i == spans[k][0]:
            left, right = spans[k]
            width = float(right - left + 1)
            for j in range(left, right + 1):
                sweep[j] = scaled_sigmoid(-(right - j + 1) / width) * profile.a_tp / max_tp
                window[j] = k
            prev_right, prev_width = right, width
            k += 1
            i = right + 1
            continue
        if prev_right is None:
            unweighted = -1.0  # no window before: as far away as can be
        elif prev_width <= 1.0:
            unweighted = scaled_sigmoid(2.0)  # NAB divides by zero here; its v1.0 scorer used 2.0
        else:
            unweighted = scaled_sigmoid(abs(prev_right - i) / (prev_width - 1.0))
        sweep[i] = unweighted * -profile.a_fp
        i += 1
    window[: probationary_length(n, probation_percent)] = _PROBATIONARY
    return sweep, window, len(spans)


def score_file(
    timestamps: Sequence[Hashable],
    scores: npt.ArrayLike,
    windows: Sequence[Window],
    threshold: float,
    profile: Profile = STANDARD_PROFILE,
    *,
    name: str = "file",
    probation_percent: float = PROBATION_PERCENT,
) -> FileScore:
    """Score one file at ``threshold`` (a row detects when its score is ``>= threshold``)."""
    arr = check_scores(name, len(timestamps), scores)
    sweep, window, n_windows = _sweep(name, timestamps, windows, profile, probation_percent)
    scorable = window != _PROBATIONARY
    detected = scorable & (arr >= threshold)
    inside = window >= 0
    total = float(sweep[detected & ~inside].sum())
    found = 0
    for w in np.unique(window[scorable & inside]):
        hits = detected & (window == w)
        if hits.any():
            total += float(sweep[hits].max())
            found += 1
        else:
            total += profile.a_fn
    return FileScore(
        name=name,
        threshold=threshold,
        score=total,
        tp=int((detected & inside).sum()),
        tn=int((scorable & ~inside & ~detected).sum()),
        fp=int((detected & ~inside).sum()),
        fn=int((scorable & inside & ~detected).sum()),
        windows=n_windows,
        windows_detected=found,
    )


def sweep_thresholds(
    files: Sequence[NabFile],
    profile: Profile = STANDARD_PROFILE,
    *,
    probation_percent: float = PROBATION_PERCENT,
) -> list[ThresholdScore]:
    """NAB's ``calcScoreByThreshold`` over all files together, highest threshold first."""
    anomaly: list[npt.NDArray[np.float64]] = []
    sweep: list[npt.NDArray[np.float64]] = []
    window: list[npt.NDArray[np.int64]] = []
    offset = 0
    for f in files:
        arr = check_scores(f.name, len(f.timestamps), f.scores)
        row_sweep, row_window, n_windows = _sweep(
            f.name, f.timestamps, f.windows, profile, probation_percent
        )
        keep = row_window != _PROBATIONARY
        anomaly.append(arr[keep])
        sweep.append(row_sweep[keep])
        window.append(np.where(row_window >= 0, row_window + offset, _OUTSIDE)[keep])
        offset += n_windows
    a = np.concatenate(anomaly) if anomaly else np.empty(0)
    s = np.concatenate(sweep) if sweep else np.empty(0)
    w = np.concatenate(window) if window else np.empty(0, dtype=np.int64)
    order = np.argsort(-a, kind="stable")
    a_sorted, s_sorted, w_sorted = a[order].tolist(), s[order].tolist(), w[order].tolist()
    # NAB's scoreParts: "fp" first, then windows in order of first appearance, each from A_FN.
    parts: dict[object, float] = {"fp": 0.0}
    for win in w_sorted:
        if win != _OUTSIDE and win not in parts:
            parts[win] = profile.a_fn
    tn = sum(1 for win in w_sorted if win == _OUTSIDE)
    fn = len(w_sorted) - tn
    tp = fp = 0
    rows: list[ThresholdScore] = []
    current = START_THRESHOLD
    for score, value, win in zip(a_sorted, s_sorted, w_sorted, strict=True):
        if score != current:
            rows.append(ThresholdScore(current, sum(parts.values()), tp, tn, fp, fn))
            current = score
        if win == _OUTSIDE:
            fp, tn = fp + 1, tn - 1
            parts["fp"] += value
        else:
            tp, fn = tp + 1, fn - 1
            parts[win] = max(parts[win], value)
    rows.append(ThresholdScore(current, sum(parts.values()), tp, tn, fp, fn))
    return rows


def optimise_threshold(
    files: Sequence[NabFile],
    profile: Profile = STANDARD_PROFILE,
    *,
    probation_percent: float = PROBATION_PERCENT,
) -> tuple[float, float]:
    """The threshold with the best total over all ``files``, and that raw total (NAB's
    ``optimizeThreshold``: first of the best rows in sweep order, i.e. the highest threshold)."""
    rows = sweep_thresholds(files, profile, probation_percent=probation_percent)
    best = max(rows, key=lambda r: r.score)  # max keeps the first of equals, as NAB's sort does
    return best.threshold, best.score


def score_files(
    files: Sequence[NabFile],
    threshold: float,
    profile: Profile = STANDARD_PROFILE,
    *,
    probation_percent: float = PROBATION_PERCENT,
) -> list[FileScore]:
    """:func:`score_file` for each file, all at one threshold."""
    p = probation_percent
    return [
        score_file(
            f.timestamps, f.scores, f.windows, threshold, profile, name=f.name, probation_percent=p
        )
        for f in files
    ]


def null_score(
    files: Sequence[NabFile],
    profile: Profile = STANDARD_PROFILE,
    *,
    probation_percent: float = PROBATION_PERCENT,
) -> float:
    """Raw score of a detector that never detects: ``A_FN`` per window with a scorable row."""
    silent = [replace(f, scores=np.zeros(len(f.timestamps))) for f in files]
    return sum(
        r.score for r in score_files(silent, math.inf, profile, probation_percent=probation_percent)
    )


def perfect_score(files: Sequence[NabFile], profile: Profile = STANDARD_PROFILE) -> float:
    """Raw score of detecting every window at its first row: ``A_TP`` per window."""
    return profile.a_tp * sum(len(f.windows) for f in files)


def normalise(raw: float, null: float, perfect: float) -> float:
    """NAB's normalisation: ``100 * (raw - null) / (perfect - null)``."""
    if perfect == null:
        raise InputError(
            f"perfect and null scores are both {perfect}; normalising needs at least one label "
            "window outside the probationary period; score files that have windows"
        )
    return 100.0 * (raw - null) / (perfect - null)


def normalised_score(
    files: Sequence[NabFile],
    profile: Profile = STANDARD_PROFILE,
    *,
    threshold: float | None = None,
    probation_percent: float = PROBATION_PERCENT,
) -> float:
    """The files' NAB score on 0 (null) .. 100 (perfect), at ``threshold`` or at the best one."""
    p = probation_percent
    if threshold is None:
        threshold, _ = optimise_threshold(files, profile, probation_percent=p)
    raw = sum(r.score for r in score_files(files, threshold, profile, probation_percent=p))
    null = null_score(files, profile, probation_percent=p)
    return normalise(raw, null, perfect_score(files, profile))
