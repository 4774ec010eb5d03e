"""A circuit breaker for the shared cache, so a dead or slow Redis costs almost nothing, and a burst of transient
errors costs nothing at all.

    closed ──failure rate ≥ R over the last W seconds (≥ N operations)──> open ──cool-down──> half_open ──probe ok──> closed
                                                                            ^                     │
                                                                            └────probe failed─────┘

An operation's outcome is what it ended with after its retries (``RedisCache.run``): a timeout a retry got past is a
success. The breaker opens on a sustained failure rate, never on a few failures in a row: a cold replica whose first
operations in a burst fail would otherwise give up the shared single flight for a whole cool-down. While open every
operation is refused without touching the network; half-open lets exactly one probe through.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]
BUCKETS = 10  # the window is kept as this many buckets of counts: memory stays fixed however busy the replica


class CircuitBreaker:
    """Failure rate over a sliding window; ``allow()`` says whether an operation may try the network now."""

    def __init__(
        self,
        failure_rate: float = 0.5,
        window_s: float = 10.0,
        min_ops: int = 20,
        cooldown_s: float = 5.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[BreakerState], None] | None = None,
    ) -> None:
        self.failure_rate = failure_rate
        self.window_s = window_s
        self.min_ops = min_ops
        self.cooldown_s = cooldown_s
        self.clock = clock  # monotonic seconds; tests may swap in a fake clock
        self.on_change = on_change
        self._bucket_s = window_s / BUCKETS
        self._buckets: deque[list[int]] = deque()  # [bucket number, operations, failures], oldest first
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._probing or self.clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    def counts(self) -> tuple[int, int]:
        """Operations and failures within the window."""
        self._expire(self._bucket())
        return sum(b[1] for b in self._buckets), sum(b[2] for b in self._buckets)

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
        if self._opened_at is None:
            self._count(failed=False)
            return
        if not self._probing:  # an operation sent before the breaker opened: only the probe decides
            return
        self._opened_at, self._probing = None, False
        self._buckets.clear()  # closed afresh: the failures that opened it are history
        self._notify("closed")

    def failure(self) -> None:
        if self._opened_at is not None:
            if self._probing:  # the probe failed: another cool-down
                self._opened_at, self._probing = self.clock(), False
                self._notify("open")
            return
        self._count(failed=True)
        ops, failures = self.counts()
        if ops >= self.min_ops and failures >= self.failure_rate * ops:
            self._opened_at = self.clock()
            self._buckets.clear()
            self._notify("open")

    def abandon(self) -> None:
        """An operation ended without a verdict (cancelled): a half-open probe slot is freed, nothing counted."""
        self._probing = False

    def _bucket(self) -> int:
        return int(self.clock() // self._bucket_s)

    def _expire(self, now: int) -> None:
        while self._buckets and self._buckets[0][0] <= now - BUCKETS:
            self._buckets.popleft()

    def _count(self, *, failed: bool) -> None:
        now = self._bucket()
        self._expire(now)
        if not self._buckets or self._buckets[-1][0] != now:
            self._buckets.append([now, 0, 0])
        self._buckets[-1][1] += 1
        self._buckets[-1][2] += int(failed)

    def _notify(self, state: BreakerState) -> None:
        if self.on_change is not None:
            self.on_change(state)
