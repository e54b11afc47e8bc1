"""Issue 12, the CLI side: no traceback for binary input, filters that say what emptied a result,
limits the API also enforces, --replace, ingest's exit code, entry lookup and whole token ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from seenbefore.cli.app import app
from tests.conftest import cli_home, postmortem_text

runner = CliRunner()
BINARY = b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) * 4  # not UTF-8 from byte 8 on


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = cli_home(tmp_path, monkeypatch)
    monkeypatch.setenv("COLUMNS", "80")
    return home


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args))


def clean_failure(result: Result, code: int, message: str) -> None:
    """A clean exit: the error tree's one line on stderr, its exit code, no exception."""
    assert result.exit_code == code, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.output


def write_kb(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    docs = {
        "old.md": postmortem_text(
            "OLD",
            title="Zebra unicorn pool exhaustion",
            body="## Summary\nzebra unicorn pool drained by the zebra batch job.\n",
            services="[checkout-api]",
            date="2021-05-01",
        ),
        "new.md": postmortem_text(
            "NEW",
            title="Pool exhaustion revisited",
            body="## Summary\nThe pool ran dry again; a retry storm this time.\n",
            supersedes="OLD",
            services="[checkout-api]",
            date="2023-05-01",
        ),
    }
    for n in range(4):
        docs[f"other{n}.md"] = postmortem_text(
            f"OTHER-{n}",
            title=f"Other pool incident {n}",
            body=f"## Summary\nA pool limit was reached in service {n}.\n",
            services="[orders-api]",
            date=f"202{n}-02-01",
        )
    for name, text in docs.items():
        (folder / name).write_text(text)
    result = invoke("ingest", str(folder), "--json")
    assert result.exit_code == 0, result.output
    return folder


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["investigate", "--alert", "{bin}"], "Alertmanager webhook JSON"),
        (["investigate", "--anomaly", "{bin}"], "anomaly JSON"),
        (["detect", "--csv", "{bin}"], "telemetry CSV"),
        (["detect", "--prometheus", "{bin}"], "Prometheus query_range JSON"),
        (["detect", "--rules", "{bin}"], "rules file"),
    ],
)
def test_binary_files_are_a_clean_error(args: list[str], what: str, tmp_path: Path) -> None:
    binary = tmp_path / "true"
    binary.write_bytes(BINARY)
    result = invoke(*[a.replace("{bin}", str(binary)) for a in args])
    clean_failure(
        result,
        2,
        f"{what} {binary}: byte 8 (0x80) is not valid UTF-8, so this is not a text file (a "
        "binary?); give a UTF-8 text file",
    )


def test_binary_case_file_is_a_clean_error(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "x.yaml").write_bytes(BINARY)
    clean_failure(invoke("calibrate", str(cases)), 2, "is not valid UTF-8")
    # eval reads the cases before it builds its knowledge bases: the error comes at once
    result = invoke("eval", "--cases", str(cases), "--embedders", "lsa")
    clean_failure(result, 2, "is not valid UTF-8")
    assert "building" not in result.stdout


def test_malformed_json_shapes_are_clean_errors(tmp_path: Path) -> None:
    shapes = {
        "list.json": ("[1, 2]", "not an Alertmanager webhook"),
        "alerts-int.json": ('{"version": "4", "alerts": 5}', "'alerts' is a list"),
        "labels.json": (
            '{"version": "4", "alerts": [{"status": "firing", "labels": [1]}]}',
            "alerts[0].labels must be an object of text values",
        ),
        "truncated.json": ('{"version": "4", "alerts": [', "not valid JSON at line 1 column"),
    }
    for name, (text, message) in shapes.items():
        path = tmp_path / name
        path.write_text(text)
        clean_failure(invoke("investigate", "--alert", str(path)), 2, message)
    anomaly = tmp_path / "anomaly.json"
    anomaly.write_text("[]")
    clean_failure(invoke("investigate", "--anomaly", str(anomaly)), 2, "not an anomaly record")


def test_since_after_until_is_refused(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    result = invoke("search", "pool", "--since", "2025-01-01", "--until", "2020-01-01")
    clean_failure(
        result,
        2,
        "--since 2025-01-01 is after --until 2020-01-01: no incident can be on or after the "
        "first and on or before the second; swap the dates or drop one",
    )


@pytest.mark.parametrize(
    ("flags", "because"),
    [
        (["--tier", "restricted"], "no postmortem is visible to the tiers you hold (restricted)"),
        (["--service", "nosuch-api"], "no postmortem you can see names the service(s) nosuch-api"),
        (
            ["--service", "orders-api", "--since", "2024-01-01"],
            "no postmortem you can see for the service(s) orders-api is dated on or after "
            "2024-01-01 (undated ones never pass a date filter)",
        ),
        (
            ["--since", "2019-01-01", "--until", "2019-12-31"],
            "no postmortem you can see is dated between 2019-01-01 and 2019-12-31 (undated "
            "ones never pass a date filter)",
        ),
    ],
)
def test_an_empty_result_names_the_filter_that_emptied_it(
    flags: list[str], because: str, tmp_path: Path
) -> None:
    write_kb(tmp_path / "kb")
    result = invoke("search", "pool", *flags)
    assert result.exit_code == 0, result.output
    assert f"no matching postmortems: {because}" in " ".join(result.stdout.split())
    assert "shared enough words" not in result.stdout
    payload = json.loads(invoke("search", "pool", *flags, "--json").stdout)
    assert payload["results"] == [] and payload["empty_because"] == because


def test_an_empty_result_with_open_filters_blames_the_words(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    result = invoke("search", "qqqzzzxxy")
    assert "nothing shared enough words with the query" in result.stdout
    assert json.loads(invoke("search", "qqqzzzxxy", "--json").stdout)["empty_because"] is None


def test_include_superseded_ranks_by_score(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    query = ["search", "zebra unicorn pool", "-k", "6", "--json"]
    current = json.loads(invoke(*query).stdout)["results"]
    assert "OLD" not in [r["id"] for r in current]
    results = json.loads(invoke(*query, "--include-superseded").stdout)["results"]
    # OLD holds every query word (zebra twice): it is the best match, shown first and marked
    assert results[0]["id"] == "OLD"
    assert results[0]["status"] == "superseded" and results[0]["superseded_by"] == "NEW"
    assert {r["id"] for r in results[1:]} == {r["id"] for r in current}


def test_k_and_query_length_follow_the_api_limits(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    for k in ("0", "51"):
        clean_failure(invoke("search", "pool", "-k", k), 2, f"-k is {k}; ask for between 1 and 50")
    assert invoke("search", "pool", "-k", "50").exit_code == 0
    long_text = "pool " * 2000 + "x"  # 10,001 characters
    clean_failure(
        invoke("search", long_text),
        2,
        "search text is 10001 characters, over the limit of 10000",
    )
    clean_failure(invoke("investigate", "pool", "-k", "51"), 2, "-k is 51")
    clean_failure(invoke("investigate", long_text), 2, "query text is 10001 characters")


def test_ingest_exits_non_zero_when_everything_was_quarantined(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "noclose.md").write_text("---\nid: A\ntitle: T\n## Summary\nx\n")
    result = invoke("ingest", str(folder))
    assert result.exit_code == 1
    out = " ".join(result.output.split())
    assert "front matter starts with '---' but has no closing '---' line" in out
    assert "nothing ingested: it was quarantined" in out
    (folder / "good.md").write_text(postmortem_text("GOOD"))
    assert invoke("ingest", str(folder)).exit_code == 0  # one ingested: not a failure
    assert invoke("ingest", str(folder), "--strict").exit_code == 1


def test_goodclash_is_quarantined_then_replaced_on_request(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    good = folder / "good.md"
    good.write_text(postmortem_text("INC-GOOD-001"))
    assert invoke("ingest", str(good)).exit_code == 0
    clash = tmp_path / "goodclash.md"
    clash.write_text(postmortem_text("INC-GOOD-001", title="Another document entirely"))
    refused = invoke("ingest", str(clash), "--json")
    assert refused.exit_code == 1
    [entry] = json.loads(refused.stdout)["quarantined"]
    assert str(good.resolve()) in entry["reason"] and str(clash.resolve()) in entry["reason"]
    shown = json.loads(invoke("show", "INC-GOOD-001", "--json").stdout)
    assert shown["title"] == "Checkout errors from exhausted connection pool"
    # retry by document id (the hint says ID): still refused without --replace, then replaced
    assert invoke("quarantine", "retry", "INC-GOOD-001").exit_code == 1
    replaced = invoke("quarantine", "retry", "INC-GOOD-001", "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert json.loads(invoke("show", "INC-GOOD-001", "--json").stdout)["title"] == (
        "Another document entirely"
    )
    assert json.loads(invoke("quarantine", "--json").stdout)["entries"] == []


def test_quarantine_entries_by_number_id_or_file(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    bad = folder / "bad.md"
    bad.write_text(postmortem_text("A", date="'2024-99-01'"))
    invoke("ingest", str(folder))
    [entry] = json.loads(invoke("quarantine", "--json").stdout)["entries"]
    clean_failure(invoke("quarantine", "retry", "nope"), 3, "no quarantine entry 'nope'")
    assert invoke("quarantine", "retry", str(bad)).exit_code == 1  # by file: found, still bad
    bad.write_text(postmortem_text("A"))
    fixed = invoke("quarantine", "retry", str(bad))
    assert fixed.exit_code == 0 and f"entry {entry['id']} ingested" in fixed.stdout
    bad.write_text(postmortem_text("A", date="'2024-99-01'"))
    invoke("ingest", str(folder))
    [again] = json.loads(invoke("quarantine", "--json").stdout)["entries"]
    dropped = invoke("quarantine", "drop", str(again["id"]))
    assert dropped.exit_code == 0 and f"dropped quarantine entry {again['id']}" in dropped.stdout


def test_token_list_shows_whole_ids_and_revoke_takes_a_unique_prefix() -> None:
    ids = []
    for name in ("first-responder-with-a-long-name", "second-responder-with-a-long-name"):
        made = invoke("token", "create", "--name", name, "--role", "viewer", "--tiers", "general")
        ids.append(json.loads(invoke("token", "list", "--json").stdout)["tokens"][-1]["id"])
        assert made.exit_code == 0
    listing = invoke("token", "list").stdout
    for token_id in ids:
        assert token_id in listing, listing  # whole, not cut to 'tok_…'
    revoked = invoke("token", "revoke", ids[0][:9])
    assert revoked.exit_code == 0 and f"revoked {ids[0]}" in revoked.stdout
    states = {
        t["id"]: t["active"] for t in json.loads(invoke("token", "list", "--json").stdout)["tokens"]
    }
    assert states == {ids[0]: False, ids[1]: True}
    clean_failure(invoke("token", "revoke", "tok_"), 3, "no token with id 'tok_'")


def test_devices_and_endless_streams_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # /dev/zero never ends: ingest refuses what is not a regular file, the other readers stop
    # after their byte limit instead of filling memory
    clean_failure(invoke("ingest", "/dev/zero"), 2, "/dev/zero is not a regular file")
    monkeypatch.setattr("seenbefore.parsing.TEXT_MAX_BYTES", 1000)
    clean_failure(
        invoke("investigate", "--alert", "/dev/zero"),
        2,
        "Alertmanager webhook JSON /dev/zero is larger than the limit of 1000 bytes",
    )
    clean_failure(invoke("detect", "--csv", "/dev/zero"), 2, "larger than the limit of 1000")
    clean_failure(invoke("detect", "--rules", "/dev/zero"), 2, "larger than the limit of 1000000")


def test_a_broken_eval_history_is_reported_before_the_run(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "c.yaml").write_text("query: pool exhausted\nexpected: [INC-1]\n")
    history = tmp_path / "history.jsonl"
    history.write_bytes(BINARY)
    args = ["eval", "--cases", str(cases), "--embedders", "lsa", "--history", str(history)]
    result = invoke(*args)
    clean_failure(result, 2, f"eval history {history}: byte 8 (0x80) is not valid UTF-8")
    assert "building" not in result.stdout
    history.write_text('{"run": 1}\n[1, 2]\n')
    clean_failure(invoke(*args), 2, f"eval history {history}, line 2: not a JSON object")
