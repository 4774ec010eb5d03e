"""A circuit breaker for the shared cache, so a dead or slow Redis costs almost nothing.

    closed ──N consecutive failures──> open ──cool-down elapsed──> half_open ──probe ok──> closed
                                         ^                             │
                                         └────────probe failed─────────┘

While open every operation is refused without touching the network; half-open lets exactly one probe through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Counts consecutive failures; ``allow()`` says whether an operation may try the network now."""

    def __init__(
        self,
        failures: int = 3,
        cooldown_s: float = 5.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[BreakerState], None] | None = None,
    ) -> None:
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self.clock = clock  # monotonic seconds; tests may swap in a fake clock
        self._on_change = on_change
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._probing or self.clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """True when an operation may go to Redis; in half-open state only one probe at a time."""
        state = self.state
        if state == "closed":
            return True
        if state == "open" or self._probing:
            return False
        self._probing = True
        self._notify("half_open")
        return True

    def success(self) -> None:
        was_closed = self._opened_at is None
        self._failures, self._opened_at, self._probing = 0, None, False
        if not was_closed:
            self._notify("closed")

    def failure(self) -> None:
        self._failures += 1
        if self._probing or (self._opened_at is None and self._failures >= self.threshold):
            self._opened_at, self._probing = self.clock(), False
            self._notify("open")

    def abandon(self) -> None:
        """An operation ended without a verdict (cancelled): a half-open probe slot is freed, nothing counted."""
        self._probing = False

    def _notify(self, state: BreakerState) -> None:
        if self._on_change is not None:
            self._on_change(state)
