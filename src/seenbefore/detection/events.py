"""The numbers of the confirmation rule (detection/confirm.py runs it, one point at a time, for
every detector and every command): when an event opens and closes, and what confirms it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EventPolicy:
    open_at: float = 0.5  # anomaly score that opens an event (0.5 = beyond anything in training)
    close_below: float = 0.3  # hysteresis
    close_after: int = 10  # points below close_below that close it (and that end an anomaly)
    deviation_z: float = 4.0  # |robust z| for a metric to count as deviated
    normal_z: float = 2.0
    sustain: int = 1  # points at that |z| that confirm an event
