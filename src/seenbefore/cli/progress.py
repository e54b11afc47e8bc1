"""Progress for long commands: Rich's bar on a terminal; off a terminal (a log, a pipe, CI)
plain lines on stderr, since Rich draws nothing there and a two-minute ingest looked hung.

A line is printed when a task first moves, at most every ``every_s`` seconds after that, and
when it completes; stdout stays for the command's result (and ``--json``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from seenbefore.cli.common import console, err_console

EVERY_S = 5.0


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float = 0.0
    last_line: float | None = None
    done: bool = False


class LineProgress:
    """The part of :class:`rich.progress.Progress` the commands use (``add_task``, ``update``,
    ``advance``), written as lines such as ``ingesting INC-2021-007.md: 12/71 (4 s)``."""

    def __init__(
        self,
        *,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.every_s = every_s
        self.clock = clock
        self.write = write or (lambda line: err_console.print(line, markup=False, soft_wrap=True))
        self.started = clock()
        self.tasks: list[_Task] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, **_: Any) -> TaskID:
        self.tasks.append(_Task(description, total))
        return TaskID(len(self.tasks) - 1)

    def update(
        self,
        task_id: TaskID,
        *,
        completed: float | None = None,
        total: float | None = None,
        description: str | None = None,
        advance: float | None = None,
        **_: Any,
    ) -> None:
        task = self.tasks[task_id]
        if description is not None:
            task.description = description
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if advance is not None:
            task.completed += advance
        now = self.clock()
        finished = task.total is not None and task.total > 0 and task.completed >= task.total
        due = task.last_line is None or now - task.last_line >= self.every_s
        if (finished and not task.done) or (due and not finished):
            task.last_line, task.done = now, finished
            self.write(self._line(task, now))

    def advance(self, task_id: TaskID, advance: float = 1.0) -> None:
        """As Rich's ``Progress.advance``: ``update(task_id, advance=advance)``."""
        self.update(task_id, advance=advance)

    def _line(self, task: _Task, now: float) -> str:
        count = f"{task.completed:g}" + (f"/{task.total:g}" if task.total else "")
        state = "done, " if task.done else ""
        return f"{task.description}: {count} ({state}{now - self.started:.0f} s)"


def progress_bar(
    *,
    disable: bool,
    columns: Sequence[str | ProgressColumn] = (),
    transient: bool = True,
) -> Progress | LineProgress:
    """The progress every long command shows (hidden for --json, ``disable``): Rich's bar on
    a terminal (``columns``, else the description, bar, count and time), else lines on
    stderr."""
    if not disable and not console.is_terminal:
        return LineProgress()
    shown = columns or (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    return Progress(*shown, console=console, transient=transient, disable=disable)
