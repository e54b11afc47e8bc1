"""Fuzz every other file the CLI reads: case files (eval, calibrate), rules YAML (detect --rules),
telemetry CSV (detect --csv), Prometheus query_range JSON (detect --prometheus), Alertmanager
webhook JSON and anomaly JSON (investigate --alert / --anomaly). 1,000 generated files each go
through the loading function the CLI command calls; each either loads or raises an error of the
tree (which the CLI maps to one line and a non-zero exit, checked in tests/cli) naming the file.
Nothing else may escape: no UnicodeDecodeError, KeyError, AttributeError or TypeError."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from seenbefore.cli.detect import _telemetry
from seenbefore.cli.investigate import requests_from
from seenbefore.detection.rules import load_rules
from seenbefore.errors import SeenbeforeError
from seenbefore.evaluation.cases import load_cases
from tests.fuzz.strategies import FUZZ, atoms, documents, json_bytes, json_values, mostly, scalars

names = itertools.count()


def loads_or_clean_error(load: Callable[[Path], Any], path: Path) -> None:
    try:
        load(path)
    except SeenbeforeError as exc:
        assert exc.exit_code != 0
        assert str(path) in str(exc), str(exc)  # says what was received
    # any other exception fails the test with its traceback: that is the bug


def write(folder: Path, suffix: str, data: bytes) -> Path:
    path = folder / f"f{next(names)}{suffix}"
    path.write_bytes(data)
    return path


def dump_yaml(value: Any) -> bytes:
    text = yaml.dump(value, Dumper=yaml.CSafeDumper, allow_unicode=True)  # C: the fuzz stays fast
    return str(text).encode("utf-8", "surrogatepass")


# -- case files ---------------------------------------------------------------------------------
VALID_CASE = b"id: pool\nquery: checkout p99 8x, db connections 100/100\nexpected: [INC-1]\n"
case_values = st.one_of(scalars, json_values)
ids = st.lists(st.sampled_from(["INC-1", "INC-2"]), max_size=2)
shaped_case = st.fixed_dictionaries(
    {
        "query": mostly(st.text(min_size=1, max_size=30), case_values),
        "expected": mostly(ids, case_values),
    },
    optional={
        "id": mostly(st.text(min_size=1, max_size=8), case_values),
        "alternates": mostly(ids, case_values),
        "expect_novel": mostly(st.booleans(), case_values),
        "tags": mostly(st.lists(st.text(max_size=6), max_size=2), case_values),
    },
).map(dump_yaml)


@FUZZ
@given(data=documents(VALID_CASE, shaped_case))
def test_case_files(tmp_path: Path, data: bytes) -> None:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    path = write(folder, ".yaml", data)
    try:
        loads_or_clean_error(lambda _: load_cases(folder), path)
    finally:
        path.unlink()  # one case file per directory, per example


# -- rules --------------------------------------------------------------------------------------
VALID_RULES = (Path(__file__).parents[2] / "src/seenbefore/detection/rules.yaml").read_bytes()
# wrong types, often: lists and mappings where a rule wants a word or a number
rule_values = st.one_of(
    st.lists(scalars, max_size=2),
    st.dictionaries(st.text(max_size=3), scalars, max_size=2),
    scalars,
)
shaped_rule = st.fixed_dictionaries(
    {
        "name": mostly(st.text(min_size=1, max_size=10), rule_values),
        "metric": mostly(st.sampled_from(["cpu_utilization", "error_rate"]), rule_values),
    },
    optional={
        "kind": mostly(st.sampled_from(["threshold", "rate_of_change", "absence"]), rule_values),
        "severity": mostly(st.sampled_from(["SEV1", "SEV2", "SEV3", "SEV4"]), rule_values),
        "op": mostly(st.sampled_from([">", ">=", "<", "<="]), rule_values),
        "value": mostly(st.floats(), rule_values),
        "for": mostly(st.integers(-5, 10**6), rule_values),
        "factor": mostly(st.floats(), rule_values),
        "over": mostly(st.integers(-5, 10**6), rule_values),
        "relative_to": mostly(st.sampled_from(["pool", None]), rule_values),
    },
)
shaped_rules = mostly(
    st.lists(mostly(shaped_rule, json_values), max_size=3).map(lambda r: {"rules": r}),
    json_values,
).map(dump_yaml)


@FUZZ
@given(data=documents(VALID_RULES, shaped_rules))
def test_rules_files(tmp_path: Path, data: bytes) -> None:
    loads_or_clean_error(load_rules, write(tmp_path, ".yaml", data))


# -- telemetry CSV ------------------------------------------------------------------------------
VALID_CSV = (
    b"timestamp,cpu_utilization,error_rate\n2024-03-14T09:00:00Z,41,0.2\n1710407000,40,0.3\n"
)
cells = st.one_of(
    atoms,
    st.sampled_from(["2024-03-14T09:00:00Z", "1710407000", "1e300", "-1e20", "nan", "inf", ""]),
    st.floats().map(str),
)
epoch = st.integers(1_700_000_000, 1_700_100_000).map(str)
shaped_csv = st.tuples(
    mostly(st.just(["timestamp"]), st.lists(atoms, max_size=1)),
    st.lists(mostly(st.sampled_from(["metric", "value", "cpu", "mem"]), atoms), max_size=3),
    st.lists(
        st.tuples(mostly(epoch, cells), st.lists(mostly(st.floats().map(str), cells), max_size=4)),
        min_size=1,
        max_size=6,
    ),
).map(
    lambda t: "\n".join(
        ",".join(row) for row in [t[0] + t[1], *([when, *values] for when, values in t[2])]
    ).encode("utf-8", "surrogatepass")
)


@FUZZ
@given(data=documents(VALID_CSV, shaped_csv))
def test_telemetry_csv(tmp_path: Path, data: bytes) -> None:
    loads_or_clean_error(lambda p: _telemetry(None, 1.0, 0, p, None), write(tmp_path, ".csv", data))


# -- Prometheus query_range JSON ------------------------------------------------------------------
VALID_PROM = json_bytes(
    {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"__name__": "cpu", "job": "api"}, "values": [[1710407000, "41"]]}
            ],
        },
    }
)
samples = mostly(
    st.tuples(
        mostly(st.integers(0, 2 * 10**9), st.one_of(st.floats(), st.text(max_size=6))),
        mostly(st.floats().map(str), scalars),
    ).map(list),
    json_values,
)
series = st.fixed_dictionaries(
    {
        "metric": mostly(
            st.dictionaries(st.sampled_from(["__name__", "metric", "service", "job"]), scalars),
            json_values,
        ),
        "values": mostly(st.lists(samples, max_size=4), json_values),
    }
)
shaped_prom = st.fixed_dictionaries(
    {
        "status": mostly(st.just("success"), scalars),
        "data": mostly(
            st.fixed_dictionaries(
                {
                    "resultType": mostly(st.just("matrix"), scalars),
                    "result": mostly(st.lists(mostly(series, json_values), max_size=3), scalars),
                }
            ),
            json_values,
        ),
    }
).map(json_bytes)


@FUZZ
@given(data=documents(VALID_PROM, shaped_prom))
def test_prometheus_json(tmp_path: Path, data: bytes) -> None:
    loads_or_clean_error(
        lambda p: _telemetry(None, 1.0, 0, None, str(p)), write(tmp_path, ".json", data)
    )


# -- Alertmanager webhook and anomaly JSON ------------------------------------------------------
VALID_ALERT = json_bytes(
    {
        "version": "4",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "HighLatency", "service": "checkout-api"},
                "annotations": {"summary": "checkout p99 8x baseline"},
                "startsAt": "2024-03-14T09:00:00Z",
                "fingerprint": "abc",
            }
        ],
    }
)
label_maps = mostly(
    st.dictionaries(st.sampled_from(["alertname", "service", "job", "summary"]), scalars),
    json_values,
)
alert = st.fixed_dictionaries(
    {"status": mostly(st.just("firing"), st.one_of(st.just("resolved"), scalars))},
    optional={
        "labels": label_maps,
        "annotations": label_maps,
        "startsAt": mostly(st.just("2024-03-14T09:00:00Z"), scalars),
        "fingerprint": scalars,
    },
)
shaped_alert = st.fixed_dictionaries(
    {
        "version": mostly(st.just("4"), scalars),
        "alerts": mostly(st.lists(mostly(alert, json_values), max_size=3), json_values),
    }
).map(json_bytes)


@FUZZ
@given(data=documents(VALID_ALERT, shaped_alert))
def test_alertmanager_json(tmp_path: Path, data: bytes) -> None:
    loads_or_clean_error(lambda p: requests_from(None, p, None), write(tmp_path, ".json", data))


VALID_ANOMALY = json_bytes(
    {
        "id": "a1",
        "service": "checkout-api",
        "cloud": "aws",
        "region": "us-east-1",
        "start": "2024-03-14T09:00:00+00:00",
        "end": "2024-03-14T09:30:00+00:00",
        "score": 0.9,
        "severity": "SEV2",
        "deviations": [
            {
                "metric": "p99_latency",
                "direction": "up",
                "value": 800.0,
                "baseline": 100.0,
                "zscore": 8.0,
            }
        ],
        "normal": ["cpu_utilization"],
        "rules": [],
    }
)
when = st.sampled_from(["2024-03-14T09:00:00+00:00", "2024-03-14T09:30:00"])
deviation = st.fixed_dictionaries(
    {
        "metric": mostly(st.just("p99_latency"), scalars),
        "direction": mostly(st.sampled_from(["up", "down"]), scalars),
        "value": mostly(st.floats(), scalars),
        "baseline": mostly(st.floats(), scalars),
        "zscore": mostly(st.floats(), scalars),
    }
)
shaped_anomaly = st.fixed_dictionaries(
    {
        "id": mostly(st.text(min_size=1, max_size=8), json_values),
        "service": mostly(st.just("checkout-api"), json_values),
        "cloud": mostly(st.just("aws"), json_values),
        "region": mostly(st.just("us-east-1"), json_values),
        "start": mostly(when, json_values),
        "end": mostly(when, json_values),
        "score": mostly(st.floats(), json_values),
    },
    optional={
        "severity": mostly(st.sampled_from(["SEV1", "SEV2", None]), json_values),
        "deviations": mostly(st.lists(mostly(deviation, json_values), max_size=3), json_values),
        "normal": mostly(st.lists(st.text(max_size=8), max_size=3), json_values),
        "rules": mostly(st.lists(st.text(max_size=8), max_size=3), json_values),
        "truth_kind": scalars,
    },
).map(json_bytes)


@FUZZ
@given(data=documents(VALID_ANOMALY, shaped_anomaly))
def test_anomaly_json(tmp_path: Path, data: bytes) -> None:
    loads_or_clean_error(lambda p: requests_from(None, None, p), write(tmp_path, ".json", data))
