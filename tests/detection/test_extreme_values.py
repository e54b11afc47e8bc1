"""Finite but extreme values (issue 33): ±1e308 alternating and 1e300·(i mod 7) once crashed
`detect --csv` with a traceback (ARTime rounded a NaN level) and `POST /v1/detect` with a 500.
Now values beyond ±1e100 are refused with where they are and the fix, values within it are
scored without one overflow (the suite runs with warnings as errors), and no series of any
numbers reaches anything but a report or a clean refusal."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.detection.pipeline import DetectionParams, detect
from seenbefore.detection.telemetry import parse_series, read_csv
from seenbefore.detection.values import MAX_MAGNITUDE
from seenbefore.errors import InputError

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
N = 300


def _alternating(size: float) -> list[float]:
    return [size if i % 2 else -size for i in range(N)]


def _mod7(size: float) -> list[float]:
    return [size * (i % 7) for i in range(N)]


def _csv(folder: Path, values: list[float]) -> Path:
    path = folder / "extreme.csv"
    rows = [f"{(START + dt.timedelta(minutes=i)).isoformat()},{v!r}" for i, v in enumerate(values)]
    path.write_text("timestamp,value\n" + "\n".join(rows) + "\n")
    return path


def _stamps(n: int) -> list[dt.datetime]:
    return [START + dt.timedelta(minutes=i) for i in range(n)]


@pytest.mark.parametrize("values", [_alternating(1e308), _mod7(1e300)], ids=["alt", "mod7"])
def test_detect_csv_refuses_values_past_the_limit_with_the_row_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list[float]
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    path = _csv(tmp_path, values)
    result = CliRunner().invoke(app, ["detect", "--csv", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    first = 2 if values[0] else 3  # the header is line 1; 0 (the first mod-7 value) is fine
    assert f"extreme.csv:{first}: value is" in result.output
    assert "±1e+100" in result.output and "rescale" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "values",
    [_alternating(MAX_MAGNITUDE), _mod7(MAX_MAGNITUDE / 7), [5e-324 * (i % 3) for i in range(N)]],
    ids=["alt-1e100", "mod7-1e100", "subnormal"],
)
@pytest.mark.parametrize("detector", ["ensemble", "iforest"])
def test_values_within_the_limit_are_scored_without_an_overflow(
    values: list[float], detector: str
) -> None:
    telemetry = parse_series(_stamps(N), {"m": values}, service="s", source="test")
    report = detect(telemetry, params=DetectionParams(train_minutes=100, detector=detector))
    for scores in report.scores.values():
        assert np.isfinite(scores).all()


def test_the_library_refuses_what_no_reader_let_through() -> None:
    """``detect`` itself refuses (for callers that build Telemetry by hand), naming the metric
    and the first point."""
    telemetry = parse_series(_stamps(N), {"m": [1.0] * N}, service="s", source="test")
    telemetry.series["s"]["m"][17] = -1e200
    with pytest.raises(InputError, match=r"s m: point 17 is -1e\+200 \(1 of 300"):
        detect(telemetry)


# any float (NaN, the infinities, subnormals, ±1e308), a few metrics, lengths around the
# detector's minimum: a report or an InputError, nothing else
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
extreme = st.sampled_from([1e308, -1e308, 1e300, 5e-324, -0.0, 1e100, -1e100, 1.5e100, 0.0])
values = st.one_of(floats, extreme, st.floats(-10, 10))


@settings(max_examples=30, deadline=None, database=None, derandomize=True)
@given(
    st.integers(0, 2).flatmap(
        lambda k: st.lists(
            st.lists(values, min_size=60, max_size=60), min_size=k + 1, max_size=k + 1
        )
    ),
    st.sampled_from(["ensemble", "iforest"]),
)
def test_no_series_of_numbers_reaches_a_traceback(columns: list[list[float]], det: str) -> None:
    metrics = {f"m{i}": [None if v != v else v for v in col] for i, col in enumerate(columns)}
    try:
        telemetry = parse_series(_stamps(60), metrics, service="s", source="test")
        detect(telemetry, params=DetectionParams(train_minutes=30, detector=det))
    except InputError as exc:
        assert "test" in str(exc) or "±1e+100" in str(exc) or "points" in str(exc), str(exc)


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(st.lists(st.one_of(floats, extreme).map(repr), min_size=1, max_size=40))
def test_no_csv_column_of_numbers_reaches_a_traceback(cells: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.csv"
        stamps = _stamps(len(cells))
        rows = [f"{t.isoformat()},{c}" for t, c in zip(stamps, cells, strict=True)]
        path.write_text("timestamp,value\n" + "\n".join(rows) + "\n")
        try:
            read_csv(path)
        except InputError as exc:
            assert "x.csv:" in str(exc)


def test_a_header_without_rows_is_not_called_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "only_header.csv"
    path.write_text("timestamp,value\n")
    with pytest.raises(InputError, match="a header and no rows of data; give at least one row"):
        read_csv(path)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match="empty file; expected a header"):
        read_csv(tmp_path / "empty.csv")
