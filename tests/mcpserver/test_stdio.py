"""``seenbefore mcp`` on stdio: the front answers the handshake and the tool list as the SDK server
would, before anything heavy loads; the first other request hands over to the SDK server with the
consumed messages replayed; a token is checked on every call (mcp/stdio.py, cli/launch.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types.version
import pytest

from seenbefore.cli.launch import mcp_tiers
from seenbefore.mcp import stdio
from seenbefore.mcp.server import build_server, lazy_caller, unloaded
from seenbefore.security.tokens import TokenStore
from seenbefore.service.app import close_state, new_state, open_state
from tests.service.conftest import prepare_home, service_settings

POOL_QUERY = "checkout p99 latency up 8x, database connections at the pool limit"


def initialize(version: str, request_id: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def never_built() -> Any:
    raise AssertionError("the front handed over for a message it should have answered")


def run_mcp(
    messages: list[dict[str, Any]], env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """A real ``seenbefore mcp`` given ``messages`` on stdin, which then closes; it must exit 0."""
    cli = str(Path(sys.executable).with_name("seenbefore"))
    return subprocess.run(
        [cli, "mcp"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )


def test_the_front_knows_the_sdks_handshake_versions() -> None:
    assert stdio.HANDSHAKE_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS


def test_handshake_file_is_what_the_sdk_server_answers() -> None:
    recorded = stdio.record_handshake(build_server(unloaded))
    assert recorded == stdio.load_handshake(), (
        "src/seenbefore/mcp/handshake.json is stale: run "
        "`python -m seenbefore.mcp.stdio --write-handshake`"
    )


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2099-01-01"])
def test_front_answers_the_handshake_as_the_sdk_server_does(version: str) -> None:
    script = [
        initialize(version, "init-1"),
        stdio.INITIALIZED,
        request(2, "tools/list"),
        request(3, "ping"),
        request(4, "tools/list", {"_meta": {"progressToken": 7}}),
    ]
    sdk = stdio.converse(
        lambda wire: stdio.hand_over(build_server(unloaded), wire, stdio.Handoff()), script
    )
    front = stdio.converse(lambda wire: stdio.serve(never_built, wire=wire), script)
    assert front == sdk
    assert front[0]["result"]["protocolVersion"] == (
        version if version in stdio.HANDSHAKE_VERSIONS else stdio.HANDSHAKE_VERSIONS[-1]
    )
    assert {t["name"] for t in front[1]["result"]["tools"]} >= {"find_similar_incidents"}


@pytest.mark.parametrize(
    "script",
    [
        [request(1, "tools/list")],  # before initialize: the SDK's error, not ours
        [initialize("2025-06-18"), request(2, "tools/list", {"cursor": "x"})],
        [initialize("2025-06-18"), request(2, "resources/templates/list")],
        [initialize("2025-06-18"), request(2, "no/such/method")],
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18"},  # no clientInfo: invalid
            }
        ],
    ],
    ids=["list-first", "cursor", "templates", "unknown", "bad-initialize"],
)
def test_what_the_front_does_not_answer_the_sdk_server_does(script: list[dict[str, Any]]) -> None:
    built: list[bool] = []

    def build() -> Any:
        built.append(True)
        return build_server(unloaded), lambda: None

    sdk = stdio.converse(
        lambda wire: stdio.hand_over(build_server(unloaded), wire, stdio.Handoff()), script
    )
    front = stdio.converse(lambda wire: stdio.serve(build, wire=wire, note=lambda _: None), script)
    assert built == [True]
    assert front == sdk  # the replayed initialize is answered once, by the front


def test_prepare_runs_beside_the_front_and_build_waits_for_it() -> None:
    import threading
    import time

    events: list[str] = []

    def prepare() -> None:
        events.append(f"prepare on {threading.current_thread().name}")
        time.sleep(0.2)  # slower than the handshake: build must still wait for it
        events.append("prepared")

    def build() -> Any:
        events.append("build")
        return build_server(unloaded), lambda: None

    script = [initialize("2025-06-18"), stdio.INITIALIZED, request(2, "resources/list")]
    stdio.converse(
        lambda wire: stdio.serve(build, wire=wire, note=lambda _: None, prepare=prepare), script
    )
    assert events == ["prepare on mcp-prepare", "prepared", "build"]


def test_a_failing_prepare_is_left_to_build() -> None:
    def prepare() -> None:
        raise ImportError("no such module")

    def build() -> Any:
        return build_server(unloaded), lambda: None

    script = [initialize("2025-06-18"), stdio.INITIALIZED, request(2, "tools/list")]
    answers = stdio.converse(
        lambda wire: stdio.serve(build, wire=wire, note=lambda _: None, prepare=prepare), script
    )
    assert [a["id"] for a in answers] == [1, 2]


def test_the_prepared_modules_are_what_the_server_imports(tmp_path: Path) -> None:
    # after import_server_modules, building the stdio server imports nothing heavy of its own
    code = (
        "import sys\n"
        "from seenbefore.cli import mcp_stdio\n"
        "mcp_stdio.import_server_modules()\n"
        "before = set(sys.modules)\n"
        "server, close = mcp_stdio.build_stdio_server([])\n"
        "close()\n"
        "new = sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('mcp', 'mcp_types', 'fastapi', 'starlette', 'seenbefore', 'langgraph'))\n"
        "print('NEW', new)\n"
    )
    env = {**os.environ, "SEENBEFORE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "NEW []" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture
def service_home(tmp_path: Path) -> tuple[Any, dict[str, str]]:
    settings = service_settings(tmp_path / "home")
    return settings, prepare_home(tmp_path / "home", tmp_path / "docs", settings)


def test_first_tool_call_loads_the_knowledge_base_once_and_revocation_holds(
    service_home: tuple[Any, dict[str, str]],
) -> None:
    settings, tokens = service_home
    state = new_state(settings)
    loads: list[int] = []

    def load() -> None:
        loads.append(1)
        open_state(state)

    def build() -> Any:
        return build_server(lazy_caller(state, load, tokens["responder"])), lambda: None

    call = {"name": "find_similar_incidents", "arguments": {"query": POOL_QUERY, "k": 3}}
    try:
        answers = stdio.converse(
            lambda wire: stdio.serve(build, wire=wire, note=lambda _: None),
            [
                initialize("2025-06-18"),
                stdio.INITIALIZED,
                request(2, "tools/list"),
                request(3, "tools/call", call),
                request(4, "tools/call", call),
                request(5, "tools/list"),
            ],
        )
        assert [a["id"] for a in answers] == [1, 2, 3, 4, 5]  # initialize answered once
        assert answers[4]["result"] == answers[1]["result"]  # the SDK lists what the front did
        found = answers[2]["result"]["structuredContent"]
        assert found["results"][0]["id"] == "POOL-1"
        assert loads == [1] and state.kb is not None
        # revoke the token between calls: the next call is refused, with no restart
        store = TokenStore(state.kb.store)
        token_id = store.authenticate(tokens["responder"]).token_id
        assert token_id is not None
        store.revoke(token_id)
        refused = stdio.converse(
            lambda wire: stdio.serve(build, wire=wire, note=lambda _: None),
            [initialize("2025-06-18"), request(2, "tools/call", call)],
        )
        assert refused[1]["result"]["isError"] is True
        assert "revoked" in json.dumps(refused[1]["result"]["content"])
    finally:
        close_state(state)


def test_mcp_tiers_takes_only_tier_options() -> None:
    assert mcp_tiers([]) == []
    assert mcp_tiers(["--tier", "general", "--tier=restricted"]) == ["general", "restricted"]
    assert mcp_tiers(["--help"]) is None
    assert mcp_tiers(["--tier"]) is None
    assert mcp_tiers(["--tier", "--help"]) is None
    assert mcp_tiers(["--tiers", "x"]) is None


@pytest.mark.integration
def test_cold_start_answers_before_loading_anything(tmp_path: Path) -> None:
    """A real ``seenbefore mcp`` on an empty model cache and a new home: the handshake and the
    tool list come back, and nothing was exported, opened or loaded to give them."""
    home, models = tmp_path / "home", tmp_path / "models"
    done = run_mcp(
        [initialize("2025-06-18"), stdio.INITIALIZED, request(2, "tools/list")],
        {"SEENBEFORE_HOME": str(home), "SEENBEFORE_MODEL_CACHE": str(models)},
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"] == {"tools": stdio.load_handshake()["tools"]}
    assert "starting the server" not in done.stderr and "loading" not in done.stderr
    assert not models.exists() and not home.exists()  # nothing exported, nothing opened


@pytest.mark.integration
def test_a_stray_print_never_reaches_the_wire(tmp_path: Path) -> None:
    """fd 1 points at stderr while the front serves: output from a library (here, a print in a
    sitecustomize that runs at start) lands on stderr, never between the protocol's lines."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import atexit, os\natexit.register(lambda: os.write(1, b'stray bytes\\n'))\n"
    )
    done = run_mcp(
        [initialize("2025-06-18")],
        {"SEENBEFORE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(site)},
    )
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [1]
    assert "stray bytes" in done.stderr


def test_a_client_that_closes_its_end_still_gets_every_answer(tmp_path: Path) -> None:
    """A script that writes its requests and closes stdin (``printf ... | seenbefore mcp``) got
    the handshake back and nothing for its tool call: the SDK server stops serving when its
    input ends, and the call was still loading the knowledge base."""
    call = {"name": "find_similar_incidents", "arguments": {"query": POOL_QUERY, "k": 3}}
    done = run_mcp(
        [initialize("2025-06-18"), stdio.INITIALIZED, request(3, "tools/call", call)],
        {"SEENBEFORE_HOME": str(tmp_path / "home"), "SEENBEFORE_EMBEDDER": "lsa"},
        timeout=120,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 3], done.stderr
    assert "result" in answers[1] or "error" in answers[1]


def test_a_cancelled_request_is_not_waited_for_at_the_end_of_input() -> None:
    """The client cancelled it, so the SDK server sends no answer: the end of input is passed
    on at once, not after DRAIN_S."""
    import anyio

    class Lines:
        def __init__(self, lines: list[bytes]) -> None:
            self.lines = lines

        def readline(self) -> bytes:
            return self.lines.pop(0) if self.lines else b""

    call = request(7, "tools/call", {"name": "find_similar_incidents", "arguments": {}})
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "user"},
    }
    wire = Lines([json.dumps(m).encode() + b"\n" for m in (call, cancel)])
    pending: set[str] = set()
    inbound = stdio._Inbound(wire, [], pending)  # type: ignore[arg-type]
    seen: list[str] = []

    async def read_all() -> None:
        with anyio.fail_after(5):  # DRAIN_S is 120
            async for line in inbound:
                seen.append(line)

    anyio.run(read_all)
    assert len(seen) == 2 and pending == set()
