"""Reading files and text we do not trust: decoding, JSON and YAML, with limits.

Every reader of a user's file goes through here so the failure modes are the same everywhere:
a file that is missing, a directory, not UTF-8 (a binary), not valid JSON or YAML, or YAML that
expands far beyond its size (the "billion laughs" alias bomb: 509 bytes of ``&a [*a, ...]``
nested 8 levels deep is 10^8 list items once a reader walks it). Errors say what was received,
the rule and the fix.

:func:`load_yaml` is the one YAML loader. It composes with PyYAML's safe loader (no Python
objects) and, while composing, counts every node *as if aliases were expanded* and the depth
they reach, refusing the document as soon as either passes its cap; with ``aliases=False``
(postmortem front matter) any anchor or alias is refused outright. Composition stops at the
first offending event, so a bomb costs microseconds and no memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, NodeEvent
from yaml.nodes import Node

from seenbefore.errors import InputError, SeenbeforeError

# Caps for YAML the project reads. Front matter is a few dozen fields; case files and rules
# files are small documents too, but may reuse a block with an anchor.
FRONT_MATTER_MAX_NODES = 2_000
FRONT_MATTER_MAX_DEPTH = 16
DOCUMENT_MAX_NODES = 20_000
DOCUMENT_MAX_DEPTH = 32
TEXT_MAX_BYTES = 50_000_000  # a telemetry export or webhook JSON; /dev/zero stops here
YAML_MAX_BYTES = 1_000_000  # a case or rules file


class YAMLProblem(ValueError):
    """YAML that cannot be read or is refused: ``line`` (1-based, or None), ``cause``, ``fix``."""

    def __init__(self, line: int | None, cause: str, fix: str) -> None:
        self.line = line
        self.cause = cause
        self.fix = fix
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{where}{cause}; {fix}")


class _Refused(Exception):
    def __init__(self, mark: Any, cause: str, fix: str) -> None:
        super().__init__(cause)
        self.mark = mark
        self.cause = cause
        self.fix = fix


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that counts nodes with aliases expanded, and their depth."""

    allow_aliases = True
    max_nodes = DOCUMENT_MAX_NODES
    max_depth = DOCUMENT_MAX_DEPTH

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._total = 0  # nodes so far, aliases counted as the nodes they stand for
        self._depth = 0
        self._peak = 0
        self._anchored: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, height)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            if not self.allow_aliases:
                raise _Refused(event.start_mark, f"alias '*{event.anchor}' is not allowed", _NO)
            info = self._anchored.get(str(event.anchor))
            if info is None and event.anchor in self.anchors:
                raise _Refused(
                    event.start_mark,
                    f"alias '*{event.anchor}' refers to the node that contains it (a cycle)",
                    "write the value out instead of referring to itself",
                )
            if info is not None:
                self._grow(info[0], self._depth + info[1], event.start_mark)
            return super().compose_node(parent, index)
        anchor = event.anchor if isinstance(event, NodeEvent) else None
        if anchor is not None and not self.allow_aliases:
            raise _Refused(event.start_mark, f"anchor '&{anchor}' is not allowed", _NO)
        self._depth += 1
        self._grow(1, self._depth, event.start_mark)
        before, outer_peak = self._total, self._peak
        self._peak = self._depth
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if anchor is not None:
            self._anchored[str(anchor)] = (self._total - before + 1, self._peak - self._depth)
        self._peak = max(outer_peak, self._peak)
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. `date: 2024-13-01`
            shown = f"value {node.value!r}" if isinstance(node.value, str) else "a value"
            raise _Refused(
                node.start_mark,
                f"{shown} cannot be read ({exc})",
                "fix the value, or quote it to keep it as text",
            ) from None

    def _grow(self, nodes: int, depth: int, mark: Any) -> None:
        self._total += nodes
        self._peak = max(self._peak, depth)
        if depth > self.max_depth:
            raise _Refused(
                mark,
                f"values nest deeper than {self.max_depth} levels"
                + (" once aliases are expanded" if self.allow_aliases else ""),
                "flatten the structure",
            )
        if self._total > self.max_nodes:
            raise _Refused(
                mark,
                f"more than {self.max_nodes} values"
                + (" once aliases ('*name') are expanded" if self.allow_aliases else ""),
                "write the values out, shorter; an alias that repeats a list many times is refused"
                if self.allow_aliases
                else "keep long lists and text in the body, not in the fields",
            )


def _refuse_tag(kind: str, fix: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: Node) -> Any:
        raise _Refused(node.start_mark, f"{kind} values ('{node.tag}') are not read", fix)

    return construct


_LimitedLoader.add_constructor(
    "tag:yaml.org,2002:binary", _refuse_tag("binary", "write the value as text")
)
_LimitedLoader.add_constructor("tag:yaml.org,2002:set", _refuse_tag("set", "write a list"))

_NO = "anchors ('&name') and aliases ('*name') are refused here; write the value out in full"

# What PyYAML says, and what to do about it.
_HINTS = (
    ("'\\t'", "indent with spaces: YAML does not allow tab characters"),
    ("mapping values are not allowed", "quote a value that contains ': ', e.g. title: \"a: b\""),
    ("could not find expected ':'", "write each field as 'key: value'; close any open quote"),
    ("expected <block end>", "line the fields up at the same indentation"),
    ("did not find expected key", "line the fields up at the same indentation"),
    ("did not find expected", "close the bracket, brace or quote that was opened"),
    ("expected ','", "close the bracket or brace that was opened; separate items with ','"),
    ("quoted scalar", "close the quote that was opened"),
    ("unhashable key", "use plain text for keys, not lists or mappings"),
    ("could not determine a constructor", "remove the '!tag': only plain YAML values are read"),
    ("found undefined alias", "define the anchor ('&name') before using '*name', or write it out"),
    ("found duplicate anchor", "give each anchor a different name"),
    ("expected a single document", "remove the extra '---' or '...' line"),
    ("special characters are not allowed", "remove control characters from the text"),
    ("control characters are not allowed", "remove control characters from the text"),
    ("unacceptable character", "remove control characters from the text"),
)
_DEFAULT_HINT = "check the indentation and quote values that contain ':', '#', '[', '{' or '&'"


def _hint(cause: str) -> str:
    return next((fix for key, fix in _HINTS if key in cause), _DEFAULT_HINT)


def load_yaml(
    text: str,
    *,
    aliases: bool = True,
    max_nodes: int = DOCUMENT_MAX_NODES,
    max_depth: int = DOCUMENT_MAX_DEPTH,
    first_line: int = 1,
) -> Any:
    """Parse one YAML document safely (plain values only) within the caps; YAMLProblem otherwise.

    ``first_line`` is the file line where ``text`` starts (front matter starts on line 2)."""
    loader_class = type(
        "Loader",
        (_LimitedLoader,),
        {"allow_aliases": aliases, "max_nodes": max_nodes, "max_depth": max_depth},
    )
    loader = None
    try:
        loader = loader_class(text)  # reads the first characters: control characters fail here
        return loader.get_single_data()
    except _Refused as exc:
        raise YAMLProblem(_line(exc.mark, first_line), exc.cause, exc.fix) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        cause = " ".join(str(p) for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise YAMLProblem(
            _line(mark, first_line), f"not valid YAML ({cause})", _hint(cause)
        ) from exc
    except yaml.reader.ReaderError as exc:  # a control character: say where, not an offset
        raise YAMLProblem(
            text.count("\n", 0, exc.position) + first_line,
            f"character #x{exc.character:04x} is not allowed in YAML",
            "remove control characters (NUL, escape codes) from the text",
        ) from None
    except yaml.YAMLError as exc:
        raise YAMLProblem(None, f"not valid YAML ({exc})", _hint(str(exc))) from exc
    except (ValueError, TypeError, OverflowError) as exc:  # a constructor outside a node
        raise YAMLProblem(
            None, f"a value cannot be read ({exc})", "fix the value, or quote it"
        ) from exc
    except RecursionError:
        raise YAMLProblem(None, "values nest too deeply", "flatten the structure") from None
    finally:
        if loader is not None:
            loader.dispose()


def _line(mark: Any, first_line: int) -> int | None:
    return int(mark.line) + first_line if mark is not None else None


def read_text(
    path: Path,
    *,
    what: str,
    max_bytes: int | None = None,
    error: type[SeenbeforeError] = InputError,
) -> str:
    """A UTF-8 text file (a leading BOM is dropped). ``what`` names it in errors ("rules file").
    At most ``max_bytes`` are read, so a device or an endless pipe cannot exhaust memory."""
    limit = TEXT_MAX_BYTES if max_bytes is None else max_bytes
    try:
        with path.open("rb") as fh:
            raw = fh.read(limit + 1)
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory; give a file") from None
    except OSError as exc:
        raise error(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise error(f"{what} {path} is larger than the limit of {limit} bytes; give a smaller file")
    return decode_text(raw, what=f"{what} {path}", error=error)


def decode_text(raw: bytes, *, what: str, error: type[SeenbeforeError] = InputError) -> str:
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what}: byte {exc.start} (0x{raw[exc.start]:02x}) is not valid UTF-8, so this is "
            "not a text file (a binary?); give a UTF-8 text file"
        ) from None


def load_json(
    path: Path,
    *,
    what: str,
    max_bytes: int | None = None,
    error: type[SeenbeforeError] = InputError,
) -> Any:
    """A UTF-8 JSON file, parsed; ``error`` (InputError) says where it is not JSON."""
    text = read_text(path, what=what, max_bytes=max_bytes, error=error)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{what} {path}: not valid JSON at line {exc.lineno} column {exc.colno} "
            f"({exc.msg}); fix the file or give the JSON document itself"
        ) from None
    except RecursionError:
        raise error(f"{what} {path}: JSON nests too deeply to read; flatten it") from None
