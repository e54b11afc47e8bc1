"""``seenbefore mcp`` over stdio: the handshake at once; the SDK server and the knowledge base on
first use.

An agent's client starts this process and waits for ``initialize`` and ``tools/list`` (the MCP
Inspector gives up after 15 s). Importing the MCP SDK takes 1-2 s on a small machine, and loading
MiniLM and the index takes longer (the one-off ONNX export on a cold cache, ~14 s), so neither
happens before those answers:

- The front (this module: the standard library only) owns the process's stdin and stdout. It
  answers the handshake-era ``initialize``, ``ping`` and ``tools/list`` itself, from
  ``handshake.json``: the SDK server's own answers, recorded by ``record_handshake`` and kept
  equal to it by tests/mcpserver/test_stdio.py (after changing a tool, run
  ``python -m seenbefore.mcp.stdio --write-handshake``).
- The first message it does not answer (a tool call, resources, prompts, anything odd, or a client
  that opens with the 2026 per-request envelope instead of ``initialize``) hands the connection to
  the SDK server that ``build`` returns. The front replays the messages it consumed into it first,
  so the SDK's session is in the same state the client believes it is in, and drops the SDK's
  reply to the replayed ``initialize``, which the client already has.
- The knowledge base loads on the first tool call (``server.lazy_caller``), with a note on stderr.

While it serves, fd 1 points at stderr and fd 0 at /dev/null, as the SDK's own stdio transport
arranges, so a stray print from a library never reaches the wire.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

HANDSHAKE_FILE = Path(__file__).with_name("handshake.json")
# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS (the front does not import the SDK; the test
# checks that the two agree)
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
_EOF = b""
# how long requests the server holds may run on once the client has closed its end (a script
# that writes its requests and closes stdin still gets every answer); past it the server stops
DRAIN_S = 120.0

Build = Callable[[], tuple["Server[Any]", Callable[[], None]]]
Note = Callable[[str], None]


class Wire:
    """The protocol's two byte streams, read by one daemon thread into a queue (so no blocked
    read can keep the process alive after the server is done) and written under a lock."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._lines: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._pump, args=(reader,), daemon=True)
        self._thread.start()

    @classmethod
    def claim_stdio(cls) -> Wire:
        """Take the process's stdin/stdout for the protocol: private duplicates carry the wire,
        fd 0 then reads /dev/null and fd 1 writes to stderr."""
        wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
        wire_out = os.fdopen(os.dup(1), "wb")
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        return cls(wire_in, wire_out)

    def _pump(self, reader: IO[bytes]) -> None:
        try:
            with reader:
                for line in iter(reader.readline, b""):
                    self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(_EOF)

    def readline(self) -> bytes:
        """The next line, or b"" at the end of input (and for every call after it)."""
        line = self._lines.get()
        if line == _EOF:
            self._lines.put(_EOF)
        return line

    def close(self) -> None:
        """The server is done: wake any reader still waiting, close the write side."""
        self._lines.put(_EOF)
        with self._lock:
            self._writer.close()

    def write(self, text: str) -> None:
        with self._lock:
            if self._writer.closed:
                return  # the server answers after the client left: nobody to tell
            self._writer.write(text.encode("utf-8"))
            self._writer.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n")


@dataclass
class Handoff:
    """What the front consumed, for the SDK server to see first."""

    replay: list[bytes] = field(default_factory=list)
    drop_id: Any = None  # the id of the replayed initialize, whose second answer is dropped
    dropping: bool = False
    # requests handed to the SDK server and not answered yet (their ids as JSON): when the
    # client closes its end, the server answers these before it stops
    pending: set[str] = field(default_factory=set)


def load_handshake() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(HANDSHAKE_FILE.read_text(encoding="utf-8"))
    return data


def _requested_version(params: Any) -> str | None:
    """The protocol version an ``initialize`` of the shape the SDK accepts without an error asks
    for; None for any other shape (the SDK answers those)."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    client = params.get("clientInfo")
    if not isinstance(client, dict):
        return None
    if not isinstance(client.get("name"), str) or not isinstance(client.get("version"), str):
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and MODERN_META_KEY in meta:
        return None
    requested = params.get("protocolVersion")
    return requested if isinstance(requested, str) else None


def front(wire: Wire, handshake: dict[str, Any]) -> Handoff | None:
    """Answer the handshake, pings and tool listings until a message needs the SDK server.
    Returns what to hand over, or None when the input ended first."""
    handoff = Handoff()
    initialized = False
    while True:
        line = wire.readline()
        if not line:
            return None
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            handoff.replay.append(line)
            return handoff
        method, params = message.get("method"), message.get("params")
        is_request = "id" in message
        if not initialized and method == "initialize" and is_request:
            requested = _requested_version(params)
            if requested is None:
                break
            version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            result = {
                "protocolVersion": version,
                "capabilities": handshake["capabilities"],
                "serverInfo": handshake["serverInfo"],
                "instructions": handshake["instructions"],
            }
            wire.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            handoff.replay.append(line)
            handoff.drop_id, handoff.dropping = message["id"], True
            initialized = True
            continue
        if initialized and method == "notifications/initialized" and not is_request:
            handoff.replay.append(line)
            continue
        if initialized and is_request and method == "ping" and not _extra_params(params):
            wire.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            continue
        if initialized and is_request and method == "tools/list" and not _extra_params(params):
            result = {"tools": handshake["tools"]}
            wire.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            continue
        break
    handoff.replay.append(line)
    return handoff


def _extra_params(params: Any) -> bool:
    """Anything but an absent or empty params object (a cursor, say): the SDK answers it."""
    if params is None:
        return False
    return not isinstance(params, dict) or any(key != "_meta" for key in params)


def _messages(text: str | bytes) -> list[dict[str, Any]]:
    """The JSON-RPC objects in one line (a batch is a list of them); [] for anything else."""
    try:
        found = json.loads(text)
    except ValueError:
        return []
    items = found if isinstance(found, list) else [found]
    return [m for m in items if isinstance(m, dict)]


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


class _Inbound:
    """The text stream ``stdio_server`` reads: the replayed lines, then the wire. At the end of
    the input it waits (up to :data:`DRAIN_S`) until every request it passed on is answered:
    the SDK server stops serving when its input ends, and requests it still held went
    unanswered (a script that writes a tool call and closes stdin got nothing back)."""

    def __init__(self, wire: Wire, replay: list[bytes], pending: set[str]) -> None:
        self._wire = wire
        self._replay = list(replay)
        self._pending = pending  # Handoff.pending: _Outbound removes what it answers

    def __aiter__(self) -> _Inbound:
        return self

    async def __anext__(self) -> str:
        import anyio

        if self._replay:
            line = self._replay.pop(0)
        else:
            line = await anyio.to_thread.run_sync(self._wire.readline, abandon_on_cancel=True)
        if not line:
            with anyio.move_on_after(DRAIN_S):
                while self._pending:
                    await anyio.sleep(0.02)
            raise StopAsyncIteration
        for message in _messages(line):
            if "method" in message and "id" in message:
                self._pending.add(_key(message["id"]))
            elif message.get("method") == "notifications/cancelled":  # no answer will come
                params = message.get("params")
                if isinstance(params, dict) and "requestId" in params:
                    self._pending.discard(_key(params["requestId"]))
        return line.decode("utf-8", "replace")


class _Outbound:
    """The text stream ``stdio_server`` writes: the wire, less the SDK's answer to the
    ``initialize`` the front answered already."""

    def __init__(self, wire: Wire, handoff: Handoff) -> None:
        self._wire = wire
        self._handoff = handoff

    async def write(self, text: str) -> None:
        answers = [m for m in _messages(text) if "method" not in m and "id" in m]
        for message in answers:
            self._handoff.pending.discard(_key(message["id"]))
        if self._handoff.dropping and any(m["id"] == self._handoff.drop_id for m in answers):
            self._handoff.dropping = False
            return
        self._wire.write(text)

    async def flush(self) -> None:
        return None


def hand_over(server: Server[Any], wire: Wire, handoff: Handoff) -> None:
    """Serve the rest of the connection with the SDK server, from the replayed messages on."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        inbound = _Inbound(wire, handoff.replay, handoff.pending)
        outbound = _Outbound(wire, handoff)
        # the SDK's own stdio transport, over the front's streams instead of the process's, so
        # the messages the front consumed are seen first
        async with stdio_server(stdin=inbound, stdout=outbound) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def serve(
    build: Build,
    *,
    wire: Wire | None = None,
    note: Note | None = None,
    prepare: Callable[[], None] | None = None,
) -> None:
    """Serve MCP on stdio (or ``wire``): the front first, then, if the client asks for more than
    the handshake and the tool list, the server ``build`` makes (its second value closes what
    it opened). ``prepare`` runs on a background thread while the front answers (importing
    what ``build`` will need: it must open and write nothing); ``build`` waits for it, so the
    two never import at the same time."""
    say = note or (lambda text: print(text, file=sys.stderr, flush=True))
    wire = wire or Wire.claim_stdio()  # first: what prepare's imports print goes to stderr
    early = None
    if prepare is not None:
        early = threading.Thread(target=_quietly, args=(prepare,), name="mcp-prepare", daemon=True)
        early.start()
    try:
        handoff = front(wire, load_handshake())
        if handoff is None:
            return
        say("seenbefore MCP: starting the server for the first request (once, a few seconds)")
        if early is not None:
            early.join()
        server, close = build()
        try:
            hand_over(server, wire, handoff)
        finally:
            close()
    finally:
        wire.close()


def _quietly(prepare: Callable[[], None]) -> None:
    """Run ``prepare``; a failure is left for ``build`` to meet and report."""
    with contextlib.suppress(Exception):  # build imports the same modules and says why
        prepare()


Run = Callable[[Wire], None]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": HANDSHAKE_VERSIONS[-1],
        "capabilities": {},
        "clientInfo": {"name": "seenbefore-handshake", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def converse(run: Run, messages: list[dict[str, Any]], *, timeout: float = 60.0) -> list[Any]:
    """A scripted client over a pipe pair: send each message to the server ``run`` serves (in a
    thread) and, for each request, read one answer. Returns the answers in order."""
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    wire = Wire(os.fdopen(to_server, "rb", buffering=0), os.fdopen(from_server, "wb"))
    worker = threading.Thread(target=run, args=(wire,), daemon=True)
    worker.start()
    answers: list[Any] = []
    with os.fdopen(from_client, "wb") as client_out, os.fdopen(to_client, "rb") as client_in:
        for message in messages:
            client_out.write(json.dumps(message).encode("utf-8") + b"\n")
            client_out.flush()
            if "id" in message:
                line = client_in.readline()
                if not line:
                    raise RuntimeError(f"the server closed the wire before answering {message}")
                answers.append(json.loads(line))
        client_out.close()
        worker.join(timeout)
    wire.close()
    return answers


def record_handshake(server: Server[Any]) -> dict[str, Any]:
    """What the SDK server answers to ``initialize`` and ``tools/list``: the front's script."""
    init, listed = converse(
        lambda wire: hand_over(server, wire, Handoff()), [INITIALIZE, INITIALIZED, LIST_TOOLS]
    )
    result = init["result"]
    return {
        "capabilities": result["capabilities"],
        "serverInfo": result["serverInfo"],
        "instructions": result["instructions"],
        "tools": listed["result"]["tools"],
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m seenbefore.mcp.stdio --write-handshake``: re-record handshake.json."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--write-handshake"]:
        raise SystemExit("usage: python -m seenbefore.mcp.stdio --write-handshake")
    from seenbefore.mcp.server import build_server, unloaded

    recorded = record_handshake(build_server(unloaded))
    HANDSHAKE_FILE.write_text(json.dumps(recorded, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {HANDSHAKE_FILE} ({len(recorded['tools'])} tools)")


if __name__ == "__main__":
    main()
