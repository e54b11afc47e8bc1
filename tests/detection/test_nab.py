"""NAB scoring (standard profile) and the NAB runner, against hand-worked values.

Most scoring tests use one 100-row file with integer timestamps 0..99 and one window
[40, 49] (width 10). The probationary period is the first floor(0.15 * 100) = 15 rows.
S(y) = 2 / (1 + exp(5y)) - 1 = -tanh(2.5y); NAB divides a true positive by S(-1) = tanh(2.5).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from seenbefore.errors import InputError
from seenbefore.lab import nab
from seenbefore.lab.nab_scoring import (
    NabFile,
    normalise,
    normalised_score,
    null_score,
    optimise_threshold,
    perfect_score,
    probationary_length,
    scaled_sigmoid,
    score_file,
    sweep_thresholds,
)

N = 100
STAMPS = list(range(N))
WINDOW = [(40, 49)]
MAX_TP = math.tanh(2.5)  # S(-1) = 2/(1+e^-5) - 1 = 0.98661
FP = 0.11  # |A_FP| in the standard profile

SHARED_NAB = Path(__file__).resolve().parents[3] / "shared" / "data" / "nab"


def scores_at(hits: dict[int, float], n: int = N) -> npt.NDArray[np.float64]:
    out = np.zeros(n)
    for i, v in hits.items():
        out[i] = v
    return out


def one(
    hits: dict[int, float], threshold: float = 0.5, windows: Sequence[tuple[int, int]] = WINDOW
) -> float:
    return score_file(STAMPS, scores_at(hits), windows, threshold).score


# --- the scaled sigmoid and the probationary period -------------------------------------------


def test_scaled_sigmoid_values() -> None:
    # y = -1: 2/(1+e^-5) - 1 = 2/1.0067379 - 1 = 0.9866143
    assert scaled_sigmoid(-1.0) == pytest.approx(0.9866142981514305)
    # y = 0 (window end): 2/(1+1) - 1 = 0
    assert scaled_sigmoid(0.0) == 0.0
    # y = 1: 2/(1+e^5) - 1 = -0.9866143
    assert scaled_sigmoid(1.0) == pytest.approx(-0.9866142981514305)
    # beyond y = 3 NAB clamps to -1
    assert scaled_sigmoid(3.5) == -1.0


@pytest.mark.parametrize(
    ("rows", "percent", "expected"),
    [(100, 0.15, 15), (4032, 0.15, 604), (5000, 0.15, 750), (6000, 0.15, 750), (100, 0.1, 10)],
)
def test_probationary_length(rows: int, percent: float, expected: int) -> None:
    # min(floor(p * n), p * 5000): 4032 -> floor(604.8) = 604; 6000 -> capped at 750
    assert probationary_length(rows, percent) == expected


# --- one file, one window -----------------------------------------------------------------------


def test_detection_at_window_start_scores_a_tp() -> None:
    # row 40: y = -(49 - 40 + 1)/10 = -1 -> S = 0.98661; NAB's sweeper divides by
    # maxTP = S(-1), so A_TP * 0.98661 / 0.98661 = 1.0 exactly
    result = score_file(STAMPS, scores_at({40: 1.0}), WINDOW, 0.5)
    assert result.score == pytest.approx(1.0)
    assert (result.tp, result.fp, result.fn, result.tn) == (1, 0, 9, 75)  # rows 15..99 scored
    assert (result.windows, result.windows_detected) == (1, 1)


def test_later_detection_in_window_scores_less() -> None:
    # row 45: y = -(49 - 45 + 1)/10 = -0.5 -> S = tanh(1.25) = 0.84828; / 0.98661 = 0.85979
    assert one({45: 1.0}) == pytest.approx(math.tanh(1.25) / MAX_TP)
    assert one({45: 1.0}) == pytest.approx(0.8597925669)
    # row 49 (last): y = -1/10 -> S = tanh(0.25) = 0.24492; / 0.98661 = 0.24824
    assert one({49: 1.0}) == pytest.approx(0.2482415498)


def test_only_first_detection_in_window_counts() -> None:
    # rows 40 and 45: the window scores max(1.0, 0.85979) = 1.0, not their sum
    assert one({40: 1.0, 45: 1.0}) == pytest.approx(1.0)
    assert one({42: 1.0, 43: 1.0, 48: 1.0}) == pytest.approx(math.tanh(2.5 * 0.8) / MAX_TP)


def test_missed_window_costs_a_fn() -> None:
    result = score_file(STAMPS, scores_at({}), WINDOW, 0.5)
    assert result.score == -1.0
    assert (result.windows, result.windows_detected, result.fn) == (1, 0, 10)


def test_false_positive_after_window_weighted_by_sigmoid() -> None:
    # row 54 alone: window missed (-1) and an FP at y = (54 - 49)/(10 - 1) = 5/9:
    # S(5/9) = -tanh(25/18) = -0.88293, times 0.11 = -0.097122
    assert one({54: 1.0}) == pytest.approx(-1.0 - FP * math.tanh(2.5 * 5 / 9))
    assert one({54: 1.0}) == pytest.approx(-1.0971218814)
    # row 50, right after the window: y = 1/9 -> costs 0.11 * tanh(0.2778) = 0.029793 only
    assert one({40: 1.0, 50: 1.0}) == pytest.approx(1.0 - 0.0297931830)
    # row 79: y = 30/9 = 3.33 > 3 -> S = -1, the full A_FP = -0.11
    assert one({40: 1.0, 79: 1.0}) == pytest.approx(1.0 - FP)


def test_false_positive_before_any_window_costs_full_a_fp() -> None:
    # row 20, after probation and before the window: S = -1 -> -0.11; plus the missed window
    assert one({20: 1.0}) == pytest.approx(-1.11)


def test_false_positive_after_one_row_window() -> None:
    # NAB's sweeper divides by (width - 1) = 0 here; we follow its v1.0 scorer: y = 2
    # -> S(2) = -tanh(5) = -0.99991, times 0.11
    assert one({40: 1.0, 60: 1.0}, windows=[(40, 40)]) == pytest.approx(1.0 - FP * math.tanh(5))


def test_probationary_detections_are_ignored() -> None:
    # row 10 < 15 is probationary: no FP; the window is still missed
    result = score_file(STAMPS, scores_at({10: 1.0}), WINDOW, 0.5)
    assert result.score == -1.0
    assert result.fp == 0
    # a window inside the probationary period is neither a TP nor an FN
    assert one({7: 1.0}, windows=[(5, 9)]) == 0.0
    assert one({}, windows=[(5, 9)]) == 0.0


def test_threshold_is_inclusive() -> None:
    assert one({40: 0.7}, threshold=0.7) == pytest.approx(1.0)
    assert one({40: 0.7}, threshold=0.70001) == -1.0


# --- the threshold sweep --------------------------------------------------------------------------

# File A: FP at row 20 (0.9), TP at the window start (0.8), FP at row 60 (0.6).
FILE_A = NabFile("a", STAMPS, scores_at({20: 0.9, 40: 0.8, 60: 0.6}), WINDOW)
# File B: TP at row 41 (0.9), FP at row 70 (0.8).
FILE_B = NabFile("b", STAMPS, scores_at({41: 0.9, 70: 0.8}), WINDOW)
# Row 60 costs 0.11 * tanh(2.5 * 11/9) = 0.1095131; row 70 costs 0.11 * tanh(2.5 * 21/9) = 0.1099981
COST_60 = 0.1095131013
COST_70 = 0.1099981135
TP_41 = math.tanh(2.5 * 0.9) / MAX_TP  # y = -(49 - 41 + 1)/10 = -0.9 -> 0.9912953


def test_sweep_rows_for_one_file() -> None:
    rows = sweep_thresholds([FILE_A])
    assert [r.threshold for r in rows] == [1.1, 0.9, 0.8, 0.6, 0.0]
    assert rows[0].score == -1.0  # nothing detected: the missed window
    assert rows[1].score == pytest.approx(-1.0 - FP)  # + FP at row 20
    assert rows[2].score == pytest.approx(1.0 - FP)  # + TP at the window start: 0.89
    assert rows[3].score == pytest.approx(1.0 - FP - COST_60)  # 0.7804869
    assert rows[4].score < -5  # every scored row detected: 74 false positives


def test_optimiser_picks_best_threshold() -> None:
    threshold, raw = optimise_threshold([FILE_A])
    assert threshold == 0.8
    assert raw == pytest.approx(0.89)


def test_optimiser_maximises_the_total_over_all_files() -> None:
    # alone, B is best at 0.9 (0.99130 beats 0.99130 - 0.10999 at 0.8) ...
    assert optimise_threshold([FILE_B])[0] == 0.9
    # ... but together: at 0.9 -1.11 + 0.99130 = -0.11870; at 0.8 0.89 + 0.88130 = 1.77130
    threshold, raw = optimise_threshold([FILE_A, FILE_B])
    assert threshold == 0.8
    assert raw == pytest.approx(1.0 - FP + TP_41 - COST_70)
    assert raw == pytest.approx(1.7712971845)


def test_optimiser_breaks_ties_to_the_higher_threshold() -> None:
    # 0.9 at the window start scores 1.0; adding row 41 at 0.5 keeps the window at max(1.0, ..)
    tied = NabFile("t", STAMPS, scores_at({40: 0.9, 41: 0.5}), WINDOW)
    rows = sweep_thresholds([tied])
    assert rows[1].score == rows[2].score == pytest.approx(1.0)
    threshold, raw = optimise_threshold([tied])
    assert threshold == 0.9
    assert raw == pytest.approx(1.0)


# --- normalisation -------------------------------------------------------------------------------


def test_normalise_maps_null_to_0_and_perfect_to_100() -> None:
    assert normalise(-3.0, -3.0, 3.0) == 0.0
    assert normalise(3.0, -3.0, 3.0) == 100.0
    assert normalise(0.0, -3.0, 3.0) == 50.0


def test_normalised_score_hand_worked() -> None:
    never = NabFile("n", STAMPS, np.zeros(N), WINDOW)
    oracle = NabFile("o", STAMPS, scores_at({40: 1.0}), WINDOW)
    assert null_score([FILE_A]) == -1.0
    assert perfect_score([FILE_A]) == 1.0
    assert normalised_score([never]) == 0.0
    assert normalised_score([oracle]) == 100.0
    # A at its best threshold 0.8: 100 * (0.89 - (-1)) / (1 - (-1)) = 94.5
    assert normalised_score([FILE_A]) == pytest.approx(94.5)
    # at a fixed threshold 0.9 instead: 100 * (-1.11 + 1) / 2 = -5.5
    assert normalised_score([FILE_A], threshold=0.9) == pytest.approx(-5.5)


def test_normalise_without_scorable_windows_is_an_error() -> None:
    empty = NabFile("e", STAMPS, np.zeros(N), [])
    with pytest.raises(InputError, match="at least one label window"):
        normalised_score([empty])


# --- bad input to the scorer -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("windows", "message"),
    [
        ([(40, 149)], "not a row timestamp"),
        ([(40, 49), (45, 60)], "overlaps"),
        ([(49, 40)], "reversed"),
        ([(60, 69), (40, 49)], "out of order"),
    ],
)
def test_bad_windows(windows: list[tuple[int, int]], message: str) -> None:
    with pytest.raises(InputError, match=message):
        score_file(STAMPS, np.zeros(N), windows, 0.5)


def test_window_edge_on_repeated_timestamp() -> None:
    stamps = [*range(50), 49, *range(50, 99)]
    with pytest.raises(InputError, match="more than one row"):
        score_file(stamps, np.zeros(N), [(40, 49)], 0.5)


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (np.zeros(N - 1), "shape"),
        (scores_at({50: math.nan}), "row 50 is nan"),
        (scores_at({50: 1.5}), r"within \[0, 1\]"),
        (scores_at({50: -0.1}), r"within \[0, 1\]"),
        (["x"] * N, "not numbers"),
    ],
)
def test_bad_scores(scores: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        score_file(STAMPS, scores, WINDOW, 0.5)  # type: ignore[arg-type]


# --- I/O ------------------------------------------------------------------------------------------

T0 = datetime(2014, 2, 14, 14, 30)


def stamp(i: int) -> str:
    return (T0 + timedelta(minutes=5 * i)).strftime("%Y-%m-%d %H:%M:%S")


def write_csv(path: Path, values: Sequence[float], rows: Sequence[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = rows if rows is not None else [f"{stamp(i)},{v}" for i, v in enumerate(values)]
    path.write_text("timestamp,value\n" + "".join(f"{r}\n" for r in body), encoding="utf-8")
    return path


def test_read_series(tmp_path: Path) -> None:
    series = nab.read_series(write_csv(tmp_path / "a.csv", [0.132, 0.134]))
    assert series.timestamps == [T0, T0 + timedelta(minutes=5)]
    assert series.values.tolist() == [0.132, 0.134]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "file is empty"),
        ("timestamp,value\n", "header only"),
        ("time,value\n2014-02-14 14:30:00,1\n", "header is"),
        ("timestamp,value\n2014-02-14 14:30:00,high\n", "'high' is not a finite number"),
        ("timestamp,value\n2014-02-14 14:30:00,nan\n", "'nan' is not a finite number"),
        ("timestamp,value\n2014-02-14 14:30:00\n", "has no value"),
        ("timestamp,value\n14/02/2014 14:30,1\n", "is not 'YYYY-MM-DD HH:MM:SS"),
        (
            "timestamp,value\n2014-02-14 14:35:00,1\n2014-02-14 14:30:00,2\n",
            "comes before the previous row's",
        ),
        (
            "timestamp,value\n2014-02-14 14:30:00,1\n2014-02-14 14:30:00,2\n",
            "repeats the previous row's",
        ),
    ],
)
def test_read_series_rejects_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        nab.read_series(path)


def test_read_series_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        nab.read_series(tmp_path / "nope.csv")


def test_read_series_keeps_repeated_timestamps_when_asked(tmp_path: Path) -> None:
    rows = ["2014-03-09 03:00:00,1", "2014-03-09 03:00:00,2", "2014-03-09 03:05:00,3"]
    series = nab.read_series(
        write_csv(tmp_path / "dst.csv", [], rows), allow_repeated_timestamps=True
    )
    assert series.values.tolist() == [1.0, 2.0, 3.0]


def test_read_windows(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(
        '{"cat/a.csv": [["2014-02-14 14:30:00.000000", "2014-02-14 15:00:00.000000"]], "cat/b.csv": []}',
        encoding="utf-8",
    )
    assert nab.read_windows(path) == {
        "cat/a.csv": [(T0, T0 + timedelta(minutes=30))],
        "cat/b.csv": [],
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "expected an object"),
        ('{"a.csv": [["2014-02-14 14:30:00"]]}', "list of \\[start, end\\]"),
        ('{"a.csv": [["yesterday", "today"]]}', "'yesterday' is not"),
    ],
)
def test_read_windows_rejects_bad_labels(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        nab.read_windows(path)


def test_read_windows_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        nab.read_windows(tmp_path / "nope.json")


def test_result_path_mirrors_nab_results_tree(tmp_path: Path) -> None:
    path = nab.result_path(tmp_path, "iforest", "realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv")
    assert (
        path
        == tmp_path / "iforest" / "realAWSCloudwatch" / "iforest_ec2_cpu_utilization_24ae8d.csv"
    )


# --- the runner -----------------------------------------------------------------------------------


def spike(values: npt.NDArray[np.float64], timestamps: list[datetime]) -> npt.NDArray[np.float64]:
    return (values > 5).astype(np.float64)


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    """cat/a.csv: window rows 40..49, spike at 40. cat/b.csv: window rows 60..69, spikes at
    30 (before the window) and 65. cat/c.csv: no windows, no spike. 100 rows each."""
    data = tmp_path / "data"
    write_csv(data / "cat" / "a.csv", scores_at({40: 10.0}).tolist())
    write_csv(data / "cat" / "b.csv", scores_at({30: 10.0, 65: 10.0}).tolist())
    write_csv(data / "cat" / "c.csv", np.ones(N).tolist())
    write_csv(data / "other" / "unlabelled.csv", np.ones(N).tolist())
    labels = tmp_path / "combined_windows.json"
    labels.write_text(
        "{"
        f'"cat/a.csv": [["{stamp(40)}.000000", "{stamp(49)}.000000"]], '
        f'"cat/b.csv": [["{stamp(60)}.000000", "{stamp(69)}.000000"]], '
        '"cat/c.csv": [], "realKnownCause/not_here.csv": []}',
        encoding="utf-8",
    )
    return data, labels


def test_run_nab_scores_and_writes_results(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    data, labels = corpus
    out = tmp_path / "results"
    report = nab.run_nab(data, labels, out, spike, "spike")
    assert [f.relative_path for f in report.files] == ["cat/a.csv", "cat/b.csv", "cat/c.csv"]
    # at threshold 1.0: a = 1.0; b = -0.11 (row 30, no window before) + 0.85979 (row 65, y=-0.5)
    b_raw = -FP + math.tanh(1.25) / MAX_TP
    assert report.threshold == 1.0
    assert report.raw_score == pytest.approx(1.0 + b_raw)
    assert (report.null_score, report.perfect_score) == (-2.0, 2.0)
    assert report.normalised == pytest.approx(100 * (1.0 + b_raw + 2) / 4)  # 93.7448
    assert report.normalised == pytest.approx(93.7448141637)
    a, b, c = report.files
    assert a.normalised == 100.0
    assert b.normalised == pytest.approx(100 * (b_raw + 1) / 2)  # 87.4896
    assert c.normalised is None and c.score.score == 0.0
    lines = (out / "spike" / "cat" / "spike_a.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "timestamp,value,anomaly_score,label"
    assert lines[1] == f"{stamp(0)},0.0,0.0,0"
    assert lines[41] == f"{stamp(40)},10.0,1.0,1"
    assert lines[50] == f"{stamp(49)},0.0,0.0,1"
    assert lines[51] == f"{stamp(50)},0.0,0.0,0"
    assert len(lines) == N + 1


@pytest.mark.parametrize(
    ("scorer", "message"),
    [
        (lambda v, t: np.full(len(v), math.nan), "is nan"),
        (lambda v, t: np.full(len(v), 2.0), r"within \[0, 1\]"),
        (lambda v, t: np.zeros(3), "shape"),
    ],
)
def test_run_nab_rejects_bad_scores(
    corpus: tuple[Path, Path], tmp_path: Path, scorer: nab.ScoreStream, message: str
) -> None:
    data, labels = corpus
    with pytest.raises(InputError, match=message):
        nab.run_nab(data, labels, tmp_path / "out", scorer, "bad")


def test_run_nab_missing_inputs(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    data, labels = corpus
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"data directory .* does not exist"):
        nab.run_nab(tmp_path / "nope", labels, out, spike, "spike")
    with pytest.raises(InputError, match=r"labels file .* does not exist"):
        nab.run_nab(data, tmp_path / "nope.json", out, spike, "spike")
    with pytest.raises(InputError, match=r"data file .* does not exist"):
        nab.run_nab(data, labels, out, spike, "spike", files=["realKnownCause/not_here.csv"])
    with pytest.raises(InputError, match="no entry in"):
        nab.run_nab(data, labels, out, spike, "spike", files=["other/unlabelled.csv"])
    with pytest.raises(InputError, match="none of its 1 CSV files"):
        nab.run_nab(data / "other", labels, out, spike, "spike")
    with pytest.raises(InputError, match="detector name"):
        nab.run_nab(data, labels, out, spike, "a/b")


# --- the real NAB files ---------------------------------------------------------------------------


@pytest.mark.integration
def test_real_nab_null_and_perfect(tmp_path: Path) -> None:
    if not (SHARED_NAB / "labels" / "combined_windows.json").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"shared NAB data not found at {SHARED_NAB}; CI must provide it")
        pytest.skip(f"shared NAB data not found at {SHARED_NAB}")
    data, labels = SHARED_NAB / "data", SHARED_NAB / "labels" / "combined_windows.json"
    # the oracle knows each file by its values and fires at that file's window starts
    starts: dict[bytes, set[datetime]] = {}
    for rel, pairs in nab.read_windows(labels).items():
        if (data / rel).is_file():
            series = nab.read_series(data / rel, allow_repeated_timestamps=True)
            starts[series.values.tobytes()] = {start for start, _ in pairs}

    def never(
        values: npt.NDArray[np.float64], timestamps: list[datetime]
    ) -> npt.NDArray[np.float64]:
        return np.zeros(len(values))

    def oracle(
        values: npt.NDArray[np.float64], timestamps: list[datetime]
    ) -> npt.NDArray[np.float64]:
        mine = starts[values.tobytes()]
        return np.array([1.0 if t in mine else 0.0 for t in timestamps])

    # two realAWSCloudwatch files repeat 2014-03-09 03:00:00 (a daylight-saving gap)
    with pytest.raises(InputError, match="repeats the previous row's"):
        nab.run_nab(data, labels, tmp_path, never, "null")
    null = nab.run_nab(data, labels, tmp_path, never, "null", allow_repeated_timestamps=True)
    perfect = nab.run_nab(data, labels, tmp_path, oracle, "perfect", repair=True)
    assert len(null.files) == len(perfect.files) == 51 and not perfect.skipped
    assert (null.null_score, null.perfect_score) == (-97.0, 97.0)  # 97 windows in 51 files
    assert null.normalised == 0.0
    assert perfect.normalised == 100.0
    assert len(list((tmp_path / "perfect" / "realAWSCloudwatch").glob("perfect_*.csv"))) == 17
