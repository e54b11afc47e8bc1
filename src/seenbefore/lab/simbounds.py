"""Bounds on what the telemetry simulator (:func:`.simulator.simulate`) is asked for, checked
before a single array is allocated: a careless number is an InputError that names the argument,
the value and the range, never an IndexError (a warm-up longer than the run), a ValueError (NaN,
a negative seed), an OverflowError (infinity) or an allocation of hundreds of gigabytes."""

from __future__ import annotations

from seenbefore.errors import InputError
from seenbefore.limits import check_range

MAX_HOURS = 14 * 24  # two weeks of one-minute points: 20,160 per metric and service
MAX_SEED = 2**32 - 1


def simulated_minutes(
    hours: float, warmup_hours: float, seed: int, scenarios: int
) -> tuple[int, int]:
    """(minutes, warm-up minutes) for ``simulate(hours=..., warmup_hours=..., seed=...)`` with
    ``scenarios`` incidents to place after the warm-up; InputError when they do not fit."""
    check_range("hours", hours, 0, MAX_HOURS, what="a number of hours")
    check_range("warmup_hours", warmup_hours, 0, MAX_HOURS, what="a number of hours")
    check_range("seed", seed, 0, MAX_SEED, what="a whole number")
    minutes, warm = int(hours * 60), int(warmup_hours * 60)
    room = max(1, scenarios)
    if minutes - warm < room:
        raise InputError(
            f"hours is {hours:g} with warmup_hours {warmup_hours:g}: {max(0, minutes - warm)} "
            f"minute(s) are left after the warm-up, and {scenarios} scenario(s) need at least "
            f"{room}; simulate more hours or a shorter warm-up"
        )
    return minutes, warm
