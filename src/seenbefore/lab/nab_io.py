"""Reading NAB data and label files, strictly or with documented repairs.

Strict reading (the default) refuses anything a NAB file should not contain. ``repair=True`` is
what the NAB runner uses on real files: every row is kept, in the file's order, so the output
stays row-aligned with the input (NAB's scorer requires it), and each oddity gets one repair:

- a timestamp that repeats the previous row's, or steps back before it: kept as written (NAB
  keeps such rows and scores them); the detector reads values in row order only;
- a timestamp that cannot be parsed: the previous row's timestamp (the first parseable one
  for leading rows), so the row keeps its place;
- a value that is not a finite number (text, empty, NaN, inf, missing column): the last finite
  value before it is carried forward (the first finite value for leading rows);
- gaps between timestamps are left alone (counted only).

The repairs are summarised in ``NabSeries.repairs`` (one line per file for the runner to print).
A file with no usable header, no rows, no parseable timestamp or no finite value cannot be
repaired and raises :class:`InputError`.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seenbefore.errors import InputError

TIMESTAMP_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")


@dataclass(frozen=True)
class NabSeries:
    """One NAB data file: timestamps and values, one per row, in the file's order.

    ``flagged`` marks rows that were repaired; ``repairs`` says what was done (empty when
    nothing was)."""

    timestamps: list[datetime]
    values: npt.NDArray[np.float64]
    flagged: npt.NDArray[np.bool_] | None = None
    repairs: tuple[str, ...] = ()


def parse_timestamp(text: str, where: str) -> datetime:
    """``YYYY-MM-DD HH:MM:SS`` with optional ``.ffffff``, no timezone, as NAB writes them."""
    for fmt in TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise InputError(
        f"{where}: timestamp {text!r} is not 'YYYY-MM-DD HH:MM:SS[.ffffff]'; "
        "write timestamps the way NAB's data files do"
    )


def _rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise InputError(f"NAB data file {path} does not exist; check the data directory")
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "NAB files are UTF-8 CSV; re-encode the file"
        ) from exc
    except (OSError, csv.Error) as exc:
        raise InputError(f"{path}: cannot be read as CSV ({exc}); fix or remove the file") from exc
    if not rows:
        raise InputError(f"{path}: file is empty; expected a 'timestamp,value' header and rows")
    header = [cell.strip() for cell in rows[0]]
    if header[:2] != ["timestamp", "value"]:
        raise InputError(
            f"{path}: header is {rows[0]!r}; NAB files start with 'timestamp,value'; fix the header"
        )
    if len(rows) == 1:
        raise InputError(f"{path}: header only, no rows; a NAB file needs at least one row")
    return rows[1:]


def _number(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _try_timestamp(text: str) -> datetime | None:
    try:
        return parse_timestamp(text, "")
    except InputError:
        return None


def read_series(
    path: Path, *, allow_repeated_timestamps: bool = False, repair: bool = False
) -> NabSeries:
    """Read a NAB data file. Strict unless ``repair`` (see the module docstring).

    Strict: timestamps must increase; a repeated one is an error unless
    ``allow_repeated_timestamps`` (NAB's corpus repeats ``2014-03-09 03:00:00`` twelve times
    in two realAWSCloudwatch files, a daylight-saving gap, and NAB keeps those rows)."""
    rows = _rows(path)
    if repair:
        return _repaired(path, rows)
    timestamps: list[datetime] = []
    values = np.empty(len(rows), dtype=np.float64)
    for n, row in enumerate(rows):
        where = f"{path}:{n + 2}"
        if len(row) < 2:
            raise InputError(f"{where}: row {row!r} has no value; expected 'timestamp,value'")
        stamp = parse_timestamp(row[0].strip(), where)
        value = _number(row[1])
        if not math.isfinite(value):
            raise InputError(
                f"{where}: value {row[1]!r} is not a finite number; fix or drop the row"
            )
        if timestamps and stamp < timestamps[-1]:
            raise InputError(
                f"{where}: timestamp {row[0]!r} comes before the previous row's; timestamps "
                "must increase; sort the file"
            )
        if timestamps and stamp == timestamps[-1] and not allow_repeated_timestamps:
            raise InputError(
                f"{where}: timestamp {row[0]!r} repeats the previous row's; timestamps must be "
                "unique; drop the duplicate rows, or pass allow_repeated_timestamps=True to "
                "keep them as NAB does"
            )
        timestamps.append(stamp)
        values[n] = value
    return NabSeries(timestamps=timestamps, values=values)


def _repaired(path: Path, rows: list[list[str]]) -> NabSeries:
    n = len(rows)
    stamps: list[datetime | None] = [_try_timestamp(r[0].strip()) if r else None for r in rows]
    raw = np.array([_number(r[1]) if len(r) >= 2 else math.nan for r in rows])
    first_stamp = next((s for s in stamps if s is not None), None)
    finite = np.isfinite(raw)
    if first_stamp is None:
        raise InputError(
            f"{path}: none of its {n} rows has a 'YYYY-MM-DD HH:MM:SS' timestamp; "
            "nothing to align scores with; fix the timestamp column"
        )
    if not finite.any():
        raise InputError(
            f"{path}: none of its {n} rows has a finite number in the value column; "
            "nothing to score; fix the value column"
        )
    # values: carry the last finite value forward (leading rows take the first finite value)
    index = np.where(finite, np.arange(n), -1)
    np.maximum.accumulate(index, out=index)
    index[index < 0] = int(np.flatnonzero(finite)[0])
    values = raw[index]
    # timestamps: an unparseable one takes the previous row's (leading ones: the first found)
    timestamps: list[datetime] = []
    last = first_stamp
    for s in stamps:
        last = s if s is not None else last
        timestamps.append(last)
    bad_stamp = np.array([s is None for s in stamps])
    ordinal = np.array([t.timestamp() for t in timestamps])
    step = np.diff(ordinal)
    repeats = np.zeros(n, dtype=bool)
    back = np.zeros(n, dtype=bool)
    repeats[1:] = (step == 0) & ~bad_stamp[1:]
    back[1:] = step < 0
    positive = step[step > 0]
    gaps = int((positive > 1.5 * np.median(positive)).sum()) if positive.size else 0
    notes = []
    for count, one, many, rest in (
        (int(back.sum()), "timestamp steps back", "timestamps step back", "(kept in file order)"),
        (int(repeats.sum()), "timestamp repeats", "timestamps repeat", "the previous row's (kept)"),
        (int(bad_stamp.sum()), "unparseable timestamp", "unparseable timestamps",
         "(previous row's used)"),
        (int((~finite).sum()), "non-numeric or non-finite value",
         "non-numeric or non-finite values", "(last value carried forward)"),
    ):  # fmt: skip
        if count:
            notes.append(f"{count} {one if count == 1 else many} {rest}")
    flagged = back | bad_stamp | ~finite
    if notes:
        first = np.flatnonzero(flagged | repeats)[:3] + 2
        notes.append("first at line " + ", ".join(str(int(i)) for i in first))
    if gaps:
        gap = "gap" if gaps == 1 else "gaps"
        notes.append(f"{gaps} {gap} longer than 1.5x the usual step (left as they are)")
    return NabSeries(timestamps=timestamps, values=values, flagged=flagged, repairs=tuple(notes))


def read_windows(labels_path: Path) -> dict[str, list[tuple[datetime, datetime]]]:
    """Read ``combined_windows.json``: ``{"<category>/<file>.csv": [[start, end], ...]}``."""
    if not labels_path.is_file():
        raise InputError(
            f"NAB labels file {labels_path} does not exist; pass labels/combined_windows.json"
        )
    try:
        raw = json.loads(labels_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{labels_path}: not valid JSON ({exc}); fix the labels file") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{labels_path}: top level is {type(raw).__name__}, expected an object")
    windows: dict[str, list[tuple[datetime, datetime]]] = {}
    for key, pairs in raw.items():
        where = f"{labels_path} [{key}]"
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(t, str) for t in p)
            for p in pairs
        ):
            raise InputError(f"{where}: expected a list of [start, end] timestamp strings")
        windows[key] = [(parse_timestamp(a, where), parse_timestamp(b, where)) for a, b in pairs]
    return windows
