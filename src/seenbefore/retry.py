"""One retry policy, on tenacity, for everything that retries: notifier deliveries
(``notify/router.py``) and PostgreSQL transactions (``storage/postgres/pool.py``).

``Backoff`` holds the numbers (attempts, exponential backoff capped at ``max_delay``, part of it
random) and ``Backoff.retrying`` turns them into a ``tenacity.Retrying`` that retries either on a
result (a failed delivery) or on an exception (a dropped connection), with an injectable sleep
and random source. When the attempts run out the last outcome is handed back as it was: the
last result is returned, the last exception raised (never tenacity's ``RetryError``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from seenbefore.errors import ConfigError

if TYPE_CHECKING:
    import tenacity


@dataclass(frozen=True)
class Backoff:
    """Bounded retries: exponential backoff capped at ``max_delay``, part of it random.

    The wait before retry ``n`` (1-based) is ``cap = min(max_delay, base_delay * multiplier **
    (n - 1))`` scaled into ``[cap * (1 - jitter), cap]``; a Retry-After from the receiver raises
    it (never above ``max_delay``). ``jitter=0`` is plain exponential backoff, ``1`` full jitter.
    """

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    label: ClassVar[str] = "retry policy"  # names the policy in its error messages

    def __post_init__(self) -> None:
        problems = []
        if not 1 <= self.attempts <= 20:
            problems.append(f"attempts is {self.attempts!r}, expected 1..20")
        if not 0 <= self.base_delay <= self.max_delay:
            problems.append(
                f"base_delay {self.base_delay!r} and max_delay {self.max_delay!r}: "
                "expected 0 <= base_delay <= max_delay"
            )
        if not self.multiplier >= 1:
            problems.append(f"multiplier is {self.multiplier!r}, expected >= 1")
        if not 0 <= self.jitter <= 1:
            problems.append(f"jitter is {self.jitter!r}, expected 0..1")
        if problems:
            raise ConfigError(f"{self.label}: " + "; ".join(problems))

    def delay(self, retry: int, rand: float, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry``; ``rand`` is uniform in [0, 1)."""
        cap = min(self.max_delay, self.base_delay * self.multiplier ** (retry - 1))
        wait = cap * (1 - self.jitter + self.jitter * rand)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait

    def retrying(
        self,
        *,
        on_result: Callable[[Any], bool] | None = None,
        on_exception: Callable[[BaseException], bool] | None = None,
        sleep: Callable[[float], None],
        rand: Callable[[], float] = lambda: 0.0,
        retry_after: Callable[[Any], float | None] | None = None,
        before_sleep: Callable[[tenacity.RetryCallState], None] | None = None,
        attempts: int | None = None,
    ) -> tenacity.Retrying:
        """A ``tenacity.Retrying`` for this policy: retry while ``on_result(result)`` or
        ``on_exception(exc)`` says so, at most ``attempts`` tries (default: the policy's).
        ``retry_after(result)`` may raise a wait (an HTTP Retry-After)."""
        import tenacity

        conditions: list[tenacity.retry_base] = []
        if on_result is not None:
            conditions.append(tenacity.retry_if_result(on_result))
        if on_exception is not None:
            conditions.append(tenacity.retry_if_exception(on_exception))
        if not conditions:
            raise ValueError("retrying() needs on_result, on_exception or both")

        def wait(state: tenacity.RetryCallState) -> float:
            outcome = state.outcome
            after = None
            if retry_after is not None and outcome is not None and not outcome.failed:
                after = retry_after(outcome.result())
            return self.delay(state.attempt_number, rand(), after)

        def last_outcome(state: tenacity.RetryCallState) -> Any:
            if state.outcome is None:  # tenacity sets it before giving up; never seen
                raise RuntimeError("tenacity gave up without an outcome")
            return state.outcome.result()  # the last result, or raises the last exception

        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts if attempts is None else attempts),
            wait=wait,
            retry=tenacity.retry_any(*conditions),
            sleep=sleep,
            before_sleep=before_sleep,
            retry_error_callback=last_outcome,
        )


def exponential(retries: int, base_delay: float) -> Backoff:
    """``retries`` further tries after the first, waiting ``base_delay * 2 ** (n - 1)`` (no cap,
    no jitter): the PostgreSQL pool's policy."""
    return Backoff(
        attempts=retries + 1, base_delay=base_delay, max_delay=math.inf, multiplier=2.0, jitter=0.0
    )
