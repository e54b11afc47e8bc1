"""A small Dockerfile parser for structural tests (no Docker daemon, no base images here).

Covers what the project's Dockerfile uses: parser directives, comments, line continuations,
global and per-stage ARG/ENV with ``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` substitution,
``--flag=value`` options, exec (JSON) and shell forms, and ``.dockerignore`` matching with
Docker's rules (root-anchored patterns, ``*``, ``?``, ``**``, ``!`` exceptions, last match wins,
a pattern that matches a directory excludes everything under it).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z]+)\s*=\s*(.*?)\s*$")
_VAR = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_]\w*)(?::-(?P<default>[^}]*))?\}|(?P<bare>[A-Za-z_]\w*))",
    re.ASCII,
)


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, ...
    args: str  # continuation-joined, flags removed
    flags: tuple[tuple[str, str], ...]
    line: int  # 1-based line where the instruction starts

    def flag(self, name: str) -> str | None:
        return dict(self.flags).get(name)

    @property
    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form instruction, or None for the shell form."""
        text = self.args.strip()
        if not text.startswith("["):
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        return None


@dataclass(frozen=True)
class Stage:
    index: int
    base: str  # after substitution of global ARGs
    name: str | None
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def env(self, global_args: dict[str, str] | None = None) -> dict[str, str]:
        """ENV values in force at the end of the stage (ARGs only substitute, they do not persist)."""
        scope = dict(global_args or {})
        env: dict[str, str] = {}
        for ins in self.instructions:
            if ins.keyword == "ARG":
                name, _, default = ins.args.strip().partition("=")
                scope.setdefault(name.strip(), substitute(default, {**scope, **env}))
            elif ins.keyword == "ENV":
                for key, value in parse_key_values(ins.args):
                    env[key] = substitute(value, {**scope, **env})
        return env


@dataclass(frozen=True)
class Dockerfile:
    directives: dict[str, str]
    global_args: dict[str, str]
    stages: tuple[Stage, ...]
    text: str = field(repr=False)

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    def stage(self, name: str) -> Stage | None:
        for stage in self.stages:
            if stage.name == name or str(stage.index) == name:
                return stage
        return None


def substitute(text: str, scope: dict[str, str]) -> str:
    def repl(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        if name in scope:
            return scope[name]
        default = match.group("default")
        return default if default is not None else ""

    return _VAR.sub(repl, text)


def parse_key_values(args: str) -> list[tuple[str, str]]:
    """ENV/LABEL arguments: ``k=v k2="v 2"`` or the legacy ``k value with spaces``."""
    words = shlex.split(args, posix=True)
    if words and "=" not in words[0]:
        return [(words[0], args.strip().split(None, 1)[1] if len(words) > 1 else "")]
    pairs = []
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise ValueError(f"ENV/LABEL word {word!r} is not key=value; quote values with spaces")
        pairs.append((key, value))
    return pairs


def _logical_lines(text: str) -> tuple[dict[str, str], list[tuple[int, str]]]:
    lines = text.splitlines()
    directives: dict[str, str] = {}
    start = 0
    for start, raw in enumerate(lines):  # noqa: B007 - start is used after the loop
        match = _DIRECTIVE.match(raw)
        if not match:
            break
        directives[match.group(1).lower()] = match.group(2)
    else:
        start = len(lines)
    escape = directives.get("escape", "\\")
    out: list[tuple[int, str]] = []
    buffer: list[str] = []
    first = 0
    for number, raw in enumerate(lines[start:], start=start + 1):
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue  # comments go, even inside a continuation
        if not buffer and not stripped:
            continue
        if not buffer:
            first = number
        if raw.rstrip().endswith(escape):
            buffer.append(raw.rstrip()[: -len(escape)])
            continue
        buffer.append(raw)
        out.append((first, "".join(buffer).strip()))
        buffer = []
    if buffer:
        out.append((first, "".join(buffer).strip()))
    return directives, out


def parse(text: str) -> Dockerfile:
    directives, logical = _logical_lines(text)
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    current: list[Instruction] | None = None
    base = ""
    name: str | None = None

    def close() -> None:
        if current is not None:
            stages.append(Stage(len(stages), base, name, tuple(current)))

    for number, line in logical:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        flags: list[tuple[str, str]] = []
        rest = rest.strip()
        if keyword in {"FROM", "RUN", "COPY", "ADD", "HEALTHCHECK"}:
            while rest.startswith("--"):
                word, _, rest = rest.partition(" ")
                flag_name, _, value = word[2:].partition("=")
                flags.append((flag_name, value))
                rest = rest.strip()
        instruction = Instruction(keyword, rest, tuple(flags), number)
        if keyword == "FROM":
            close()
            words = rest.split()
            base = substitute(words[0], global_args)
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            current = [instruction]
        elif current is None:
            if keyword != "ARG":
                raise ValueError(f"line {number}: {keyword} before the first FROM")
            arg, _, default = rest.partition("=")
            global_args[arg.strip()] = default.strip().strip('"')
        else:
            current.append(instruction)
    close()
    return Dockerfile(directives, global_args, tuple(stages), text)


def shell_words(instruction: Instruction) -> list[str]:
    """Exec form as is; shell form split the way /bin/sh -c would see its words."""
    form = instruction.exec_form
    return form if form is not None else shlex.split(instruction.args)


# --------------------------------------------------------------------------------- .dockerignore


@dataclass(frozen=True)
class IgnoreRule:
    pattern: str
    negate: bool
    regex: re.Pattern[str]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                i += 1
                out.append("(?:.*/)?")  # **/ : zero or more directories
            else:
                out.append(".*")
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out))


def parse_dockerignore(text: str) -> list[IgnoreRule]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:].strip()
        cleaned = str(PurePosixPath(line.lstrip("/"))) if line.strip("/") else "."
        rules.append(IgnoreRule(cleaned, negate, _pattern_regex(cleaned)))
    return rules


def is_ignored(path: str, rules: list[IgnoreRule]) -> bool:
    """Whether ``path`` (relative to the build context, '/'-separated) is left out of it."""
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for rule in rules:
        if any(rule.regex.fullmatch(p) for p in prefixes):
            ignored = not rule.negate
    return ignored
