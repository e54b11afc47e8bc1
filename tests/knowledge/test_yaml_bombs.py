"""YAML alias bombs ("billion laughs") are refused everywhere we read YAML, at once and in bounded
memory: postmortem front matter (ingest and the API's parser), case files and rules files.

Before the shared loader, the 509-byte 8-level file hung `seenbefore ingest` (3.1 GB after
120 s) and the 416-byte 5-level one was stored, growing kb.sqlite from 200 KB to 15 MB."""

from __future__ import annotations

import signal
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from seenbefore import lifecycle
from seenbefore.config import Settings
from seenbefore.detection.rules import load_rules
from seenbefore.errors import ConfigError, InputError, PostmortemInvalid
from seenbefore.evaluation.cases import load_cases
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.parsing import YAMLProblem, load_yaml
from seenbefore.storage.sqlite.store import SQLiteStore

MAX_SECONDS = 1.0
MAX_PEAK_BYTES = 5_000_000


def bomb_front_matter(levels: int) -> list[str]:
    lines = ["a0: &a0 [x,x,x,x,x,x,x,x,x,x]"]
    for n in range(1, levels + 1):
        lines.append(f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 10) + "]")
    return lines


def bomb(levels: int, size: int) -> bytes:
    """A postmortem whose front matter nests ``levels`` of ``&aN [*aN-1 x10]`` (10^levels list
    items once expanded), padded to exactly ``size`` bytes as in the report."""
    head = "\n".join(["---", f"id: INC-BOMB-{levels}", "title: laughs", *bomb_front_matter(levels)])
    text = head + "\n---\n## Summary\nA document that expands"
    text += "." * (size - len(text.encode()) - 1) + "\n"
    assert len(text.encode()) == size
    return text.encode()


BOMBS = [pytest.param(8, 509, id="8-level-509-bytes"), pytest.param(5, 416, id="5-level-416-bytes")]


@contextmanager
def bounded() -> Iterator[None]:
    """Fail (not hang) if the body runs past 5 s; then check < 1 s and the peak allocation."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError("still parsing after 5 s: the bomb was expanded")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 5.0)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert elapsed < MAX_SECONDS, f"took {elapsed:.2f} s"
    assert peak < MAX_PEAK_BYTES, f"peak allocation {peak} bytes"


@pytest.mark.parametrize(("levels", "size"), BOMBS)
def test_ingest_quarantines_the_bomb_fast(
    levels: int, size: int, ingestor: Ingestor, store: SQLiteStore, kb_dir: Path
) -> None:
    (kb_dir / "bomb.md").write_bytes(bomb(levels, size))
    with bounded():
        report = ingestor.ingest([kb_dir])
    assert report.added == [] and len(report.quarantined) == 1
    assert report.quarantined[0][1] == (
        "front matter: line 4: anchor '&a0' is not allowed; anchors ('&name') and aliases "
        "('*name') are refused here; write the value out in full"
    )
    assert store.list_ids() == []
    assert [e.source for e in store.list_quarantine()] == [str((kb_dir / "bomb.md").resolve())]


@pytest.mark.parametrize(("levels", "size"), BOMBS)
def test_api_parser_refuses_the_bomb_fast(levels: int, size: int, tmp_path: Path) -> None:
    with (
        KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb,
        bounded(),
        pytest.raises(PostmortemInvalid, match="anchor '&a0' is not allowed"),
    ):
        lifecycle.parse_postmortem(kb, bomb(levels, size).decode(), source="api:admin")


def test_a_single_alias_is_refused_in_front_matter() -> None:
    with pytest.raises(YAMLProblem, match=r"^line 3: alias '\*t' is not allowed"):
        load_yaml("a: x\nb: *t\n", aliases=False, first_line=2)


@pytest.mark.parametrize(("levels", "size"), BOMBS)
def test_case_file_bomb_is_refused_fast(levels: int, size: int, tmp_path: Path) -> None:
    lines = bomb_front_matter(levels)
    (tmp_path / "bomb.yaml").write_text(
        "\n".join([*lines, "query: pool exhausted", f"expected: *a{levels}"]) + "\n"
    )
    with bounded(), pytest.raises(InputError) as info:
        load_cases(tmp_path)
    assert "more than 20000 values once aliases ('*name') are expanded" in str(info.value)
    assert str(info.value).startswith(f"case {tmp_path / 'bomb.yaml'}: line 5: ")


@pytest.mark.parametrize(("levels", "size"), BOMBS)
def test_rules_file_bomb_is_refused_fast(levels: int, size: int, tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("\n".join([*bomb_front_matter(levels), f"rules: *a{levels}"]) + "\n")
    with bounded(), pytest.raises(ConfigError, match="once aliases"):
        load_rules(path)


def test_ordinary_anchors_still_work_in_case_and_rules_files(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "base: &base {kind: threshold, metric: cpu_utilization, op: '>', severity: SEV3}\n"
        "rules:\n"
        "  - {<<: *base, name: cpu-high, value: 90}\n"
        "  - {<<: *base, name: cpu-very-high, value: 97, severity: SEV2}\n"
    )
    loaded = load_rules(rules)
    assert [(r.name, r.value, r.severity) for r in loaded] == [
        ("cpu-high", 90.0, "SEV3"),
        ("cpu-very-high", 97.0, "SEV2"),
    ]


def test_expanded_size_and_depth_are_counted_exactly() -> None:
    # a0 is 11 nodes (the list and its 10 items); a1 = 1 + 10 * 11 = 111; the mapping adds
    # itself and 2 keys: 1 + (1 + 11) + (1 + 111) = 125 nodes
    text = "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\na1: [" + ",".join(["*a0"] * 10) + "]\n"
    assert load_yaml(text, max_nodes=125)["a1"][9] == ["x"] * 10
    with pytest.raises(YAMLProblem, match="more than 124 values"):
        load_yaml(text, max_nodes=124)
    # depth: the mapping (1), a1's list (2), a0's list via the alias (3), its items (4)
    assert load_yaml(text, max_depth=4)
    with pytest.raises(YAMLProblem, match="deeper than 3 levels"):
        load_yaml(text, max_depth=3)


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(YAMLProblem, match="refers to the node that contains it"):
        load_yaml("a: &x [1, *x]\n")


def test_front_matter_value_and_depth_caps() -> None:
    many = "k: [" + ",".join(["1"] * 3000) + "]"
    with pytest.raises(YAMLProblem) as info:
        load_yaml(many, aliases=False, max_nodes=2000, max_depth=16, first_line=2)
    assert str(info.value) == (
        "line 2: more than 2000 values; keep long lists and text in the body, not in the fields"
    )
    deep = "x: " + "[" * 100_000
    with pytest.raises(YAMLProblem, match=r"^line 2: values nest deeper than 16 levels; flatten"):
        load_yaml(deep, aliases=False, max_nodes=2000, max_depth=16, first_line=2)
